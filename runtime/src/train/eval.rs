//! Evaluation: the compiled `eval` function over every batch of a source,
//! reduced to the mean loss and the model's metrics.
//!
//! Owns: [`evaluate`] (any [`BatchSource`], one pass), [`evaluate_rows`]
//! (given rows of an in-memory dataset, in batches of the compiled maximum,
//! the last one short), [`EvalSet`] (either, as an evaluation's input) and
//! [`Evaluation`].
//!
//! Invariants: every row the source yields counts once; the loss is the mean
//! of the per-batch means weighted by their rows (`tf.compat.v1.metrics.mean`);
//! accuracy and mean metrics likewise by their element counts; AUC streams
//! every prediction into TF's bucketed accumulator.

use super::TrainError;
use crate::abi::OUTPUT_LOSS;
use crate::data::Dataset;
use crate::metrics::{Auc, MeanMetric, Metric, MetricKind, MetricOutput};
use crate::session::Session;
use crate::source::{BatchSource, SequentialBatches};

/// Loss and metrics over a set of rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub rows: usize,
    pub loss: f64,
    /// `(metric name, value)` in the model's order.
    pub metrics: Vec<(String, f64)>,
}

/// One metric's accumulator and the positions of the outputs it reads.
enum Accumulator {
    Mean {
        sum: usize,
        mean: MeanMetric,
    },
    Auc {
        labels: usize,
        predictions: usize,
        auc: Auc,
    },
}

/// Evaluates the session's `eval` function on every batch of `source`.
pub fn evaluate(
    session: &mut Session,
    source: &mut (impl BatchSource + ?Sized),
    metrics: &[Metric],
) -> Result<Evaluation, TrainError> {
    let f = session
        .function_index("eval")
        .ok_or_else(|| TrainError::Session("the program has no eval function".into()))?;
    let output = |m: &Metric, part: MetricOutput| {
        session.output_index(f, &m.output(part)).ok_or_else(|| {
            TrainError::Session(format!(
                "the eval function has no output `{}`",
                m.output(part)
            ))
        })
    };
    let mut accumulators = metrics
        .iter()
        .map(|m| {
            Ok(match m.kind {
                MetricKind::Accuracy | MetricKind::Mean => Accumulator::Mean {
                    sum: output(m, MetricOutput::Sum)?,
                    mean: MeanMetric::new(),
                },
                MetricKind::Auc { num_thresholds } => Accumulator::Auc {
                    labels: output(m, MetricOutput::Labels)?,
                    predictions: output(m, MetricOutput::Predictions)?,
                    auc: Auc::new(num_thresholds as usize)
                        .map_err(|e| TrainError::Session(format!("metric `{}`: {e}", m.name)))?,
                },
            })
        })
        .collect::<Result<Vec<_>, TrainError>>()?;
    let loss_at = session
        .output_index(f, OUTPUT_LOSS)
        .ok_or_else(|| TrainError::Session("eval has no loss".into()))?;
    let mut loss = MeanMetric::new();
    let mut rows = 0usize;
    loop {
        let b = session.fill(source)?;
        if b == 0 {
            break;
        }
        session.call(f, b).map_err(TrainError::Session)?;
        rows += b;
        let scalar = |k: usize| {
            session
                .output_at(f, k, b)
                .map_or(f64::NAN, |v| f64::from(v[0]))
        };
        loss.update(scalar(loss_at), b as f64);
        for (m, acc) in metrics.iter().zip(&mut accumulators) {
            match acc {
                Accumulator::Mean { sum, mean } => {
                    let count = (m.per_example as f64) * b as f64;
                    mean.update(scalar(*sum) / count.max(1.0), count);
                }
                Accumulator::Auc {
                    labels,
                    predictions,
                    auc,
                } => {
                    let (Some(l), Some(p)) = (
                        session.output_at(f, *labels, b),
                        session.output_at(f, *predictions, b),
                    ) else {
                        return Err(TrainError::Session("missing metric output".into()));
                    };
                    auc.update(l, p)
                        .map_err(|e| TrainError::Session(format!("metric `{}`: {e}", m.name)))?;
                }
            }
        }
    }
    let values = metrics
        .iter()
        .zip(&accumulators)
        .map(|(m, acc)| {
            let v = match acc {
                Accumulator::Mean { mean, .. } => mean.value(),
                Accumulator::Auc { auc, .. } => auc.value(),
            };
            (m.name.clone(), v)
        })
        .collect();
    Ok(Evaluation {
        rows,
        loss: loss.value(),
        metrics: values,
    })
}

/// A fresh one-pass source of the evaluation rows (a streamed `eval_data`
/// starts over each time).
pub type MakeSource<'d> = Box<dyn FnMut() -> Result<Box<dyn BatchSource + 'd>, String> + 'd>;

/// What an evaluation reads: rows of an in-memory dataset (a held-out split,
/// or `eval_data` loaded whole), or one pass of a source made afresh each
/// time (a streamed `eval_data`).
pub enum EvalSet<'d> {
    Rows { data: &'d Dataset, rows: &'d [u32] },
    Source(MakeSource<'d>),
}

impl EvalSet<'_> {
    /// Evaluates the set (see [`evaluate`]).
    pub fn evaluate(
        &mut self,
        session: &mut Session,
        metrics: &[Metric],
    ) -> Result<Evaluation, TrainError> {
        match self {
            EvalSet::Rows { data, rows } => evaluate_rows(session, data, rows, metrics),
            EvalSet::Source(make) => {
                let mut source = make().map_err(TrainError::Session)?;
                evaluate(session, source.as_mut(), metrics)
            }
        }
    }
}

/// Evaluates `rows` of `data`, in batches of the compiled maximum.
pub fn evaluate_rows(
    session: &mut Session,
    data: &Dataset,
    rows: &[u32],
    metrics: &[Metric],
) -> Result<Evaluation, TrainError> {
    let mut source = SequentialBatches::new(data, &session.layout, rows, session.max_batch())
        .map_err(TrainError::Session)?;
    evaluate(session, &mut source, metrics)
}
