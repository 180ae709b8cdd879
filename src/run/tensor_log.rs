//! The hook a run adds that prints the spec's tensors: TF's
//! `LoggingTensorHook` over the spec's names (`logging { tensors = [...] }`).
//!
//! Owns: [`TensorLogHook`] and how its lines look (a table sharded across
//! the replicas as the logical table, the leader's first rows of it).
//! Invariants: between two lines it reads nothing and allocates nothing; a
//! line is printed through the caller's `print` (above a progress bar).

use specc_runtime::abi::{ElemType, OUTPUT_LEARNING_RATE, OUTPUT_LOSS};
use specc_runtime::metrics::{Metric, MetricOutput};
use specc_runtime::train::{Hook, RunContext, StepValues, Timer, TrainError};

/// Elements of a tensor printed before `...` (numpy's `summarize`).
const SUMMARIZE: usize = 6;

/// Prints the named tensors of the spec whenever its timer is due and after
/// the last step (TF's `LoggingTensorHook(tensors, every_n_iter,
/// every_n_secs, at_end = True)`): bindings, features and labels from the
/// step's outputs (the compiler adds them when `logging` names them),
/// parameters from the session, metrics as their batch value, and
/// `loss`, `learning_rate`, `global_step`.
pub struct TensorLogHook<'m, P: FnMut(&str)> {
    names: Vec<String>,
    metrics: &'m [Metric],
    timer: Timer,
    print: P,
    /// The timer was due before this step: it runs the summary step, whose
    /// outputs hold the logged tensors.
    pending: bool,
    /// The global step the run ends at, logged too (`at_end`).
    last_global_step: i64,
}

impl<'m, P: FnMut(&str)> TensorLogHook<'m, P> {
    /// Logs `names` whenever `timer` is due and at `last_global_step`.
    pub fn new(
        names: Vec<String>,
        metrics: &'m [Metric],
        timer: Timer,
        last_global_step: i64,
        print: P,
    ) -> Self {
        TensorLogHook {
            names,
            metrics,
            timer,
            print,
            pending: false,
            last_global_step,
        }
    }

    fn log(&mut self, ctx: &RunContext<'_>, v: &StepValues) {
        let mut line = format!("step {}:", v.global_step);
        for (k, name) in self.names.iter().enumerate() {
            let value = tensor_text(ctx, v, name, self.metrics);
            line.push_str(if k == 0 { " " } else { ", " });
            line.push_str(&format!("{name} = {value}"));
        }
        (self.print)(&line);
    }
}

impl<P: FnMut(&str)> Hook for TensorLogHook<'_, P> {
    #[inline]
    fn before_run(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        let next = ctx.last_step().map_or(1, |v| v.step + 1);
        self.pending =
            self.timer.due(next) || ctx.global_step().saturating_add(1) == self.last_global_step;
        if self.pending {
            ctx.request_summary_outputs();
        }
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.pending {
            self.timer.triggered(v.step);
            self.log(ctx, v);
        }
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        // The last step is logged (`at_end`); a run that stopped before its
        // last global step (a hook's request) logs what its last step has.
        if let Some(v) = ctx.last_step().copied() {
            if self.timer.last_step() != Some(v.step) {
                self.log(ctx, &v);
            }
        }
        Ok(())
    }
}

/// One logged tensor's value as text: a scalar, or `[shape] [v0 v1 ... vn]`.
fn tensor_text(ctx: &RunContext<'_>, v: &StepValues, name: &str, metrics: &[Metric]) -> String {
    match name {
        OUTPUT_LOSS => return v.loss.to_string(),
        OUTPUT_LEARNING_RATE if v.learning_rate.is_some() => {
            return v.learning_rate.map(|x| x.to_string()).unwrap_or_default()
        }
        "global_step" => return v.global_step.to_string(),
        _ => {}
    }
    if let Some(m) = metrics.iter().find(|m| m.name == name) {
        let sum = ctx.step_output(&MetricOutput::Sum.name(&m.name));
        return match sum.and_then(|s| s.first()) {
            Some(&s) => {
                (f64::from(s) / (m.per_example as f64 * v.rows as f64).max(1.0)).to_string()
            }
            None => "(evaluated on rows only)".into(),
        };
    }
    if let Some(text) = sharded_table_text(ctx, name) {
        return text;
    }
    if let Some(p) = ctx.variable(name) {
        let shape: Vec<usize> = p.shape().to_vec();
        let values: Vec<String> = p
            .iter()
            .take(SUMMARIZE + 1)
            .map(|x| x.to_string())
            .collect();
        return array_text(&shape, p.len(), &values);
    }
    let session = ctx.session();
    let f = v.function;
    let Some(k) = session.output_index(f, name) else {
        return "(not computed at this step)".into();
    };
    let layout = &session.function_layout(f).outputs[k];
    let (n, per) = (layout.len(v.rows), layout.per_example);
    let shape = if layout.batched {
        vec![v.rows, per]
    } else {
        vec![per]
    };
    let values: Vec<String> = match layout.elem {
        ElemType::F32 => first_values(session.output_at(f, k, v.rows)),
        ElemType::I32 => first_values(session.output_i32(f, name, v.rows)),
    };
    if n == 1 {
        return values.into_iter().next().unwrap_or_default();
    }
    array_text(&shape, n, &values)
}

/// A table sharded across the replicas (or its slot or moving average),
/// as the leader logs it: the logical table's shape and its first values,
/// which are the leader's (partition 0 is replica 0's, first in its rows),
/// as many as partition 0 holds.
fn sharded_table_text(ctx: &RunContext<'_>, name: &str) -> Option<String> {
    let session = ctx.session();
    let layout = &session.layout;
    let v = layout.var(name)?;
    let t = layout.shard_of(v)?;
    let mut shape = v.shape.clone();
    *shape.first_mut()? = t.rows;
    let row_len: usize = shape[1..].iter().product();
    let own = specc_runtime::train::sharded::Ownership::new(&v.partitions, t.replicas);
    let first_rows = own.ranges(0).first().map_or(0, |&(_, rows)| rows);
    let values = session.var(name)?;
    let values = &values[..(first_rows * row_len).min(values.len())];
    let first = first_values(Some(values));
    Some(array_text(&shape, shape.iter().product(), &first))
}

/// The first values of an output as text, enough to summarize it.
fn first_values<T: ToString>(values: Option<&[T]>) -> Vec<String> {
    values
        .map(|o| o.iter().take(SUMMARIZE + 1).map(T::to_string).collect())
        .unwrap_or_default()
}

fn array_text(shape: &[usize], n: usize, first: &[String]) -> String {
    if shape.is_empty() {
        return first.first().cloned().unwrap_or_default();
    }
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let mut s = format!("[{}] [", dims.join(", "));
    s.push_str(&first[..first.len().min(SUMMARIZE)].join(" "));
    if n > SUMMARIZE {
        s.push_str(" ...");
    }
    s.push(']');
    s
}
