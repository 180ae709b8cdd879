//! The hooks a run installs around its steps (TF's `SessionRunHook`s of a
//! `MonitoredTrainingSession`), in their order: stop at the last step, tell
//! the [`Observer`](super::Observer) ([`ObserverHook`]), warn of a
//! diverging loss, stop on a non-finite loss, log the spec's tensors
//! ([`TensorLogHook`], TF's `LoggingTensorHook` over `logging { tensors }`),
//! write summaries and the step rate, evaluate periodically, and save
//! checkpoints — last, so a failing hook before it ends the run without a
//! checkpoint of its step.
//!
//! Owns: [`RunHooks`] (that set, built from the run's settings), the hooks
//! specific to a run ([`ObserverHook`], [`TensorLogHook`] and how its lines
//! look) and [`Watch`], the observer shared by the hooks that report.
//! Invariants: only the leader of a data-parallel job (or a lone process)
//! writes (summaries, checkpoints) or reports; between two reports the
//! hooks read nothing and allocate nothing.

use std::cell::RefCell;
use std::path::Path;

use specc_runtime::abi::{ElemType, OUTPUT_LEARNING_RATE, OUTPUT_LOSS};
use specc_runtime::config::RunConfig;
use specc_runtime::metrics::{Metric, MetricOutput};
use specc_runtime::summary::hooks::{
    create_eval_writer, EvaluationSummaryHook, StepCounterHook, SummarySaverHook,
};
use specc_runtime::summary::SummaryWriter;
use specc_runtime::train::{
    CheckpointSaverHook, DivergenceHook, EvalSet, Evaluation, EvaluationHook, Hook, NanTensorHook,
    RunContext, StepValues, StopAtStepHook, Timer, TrainError, DIVERGENCE_FACTOR,
};

use super::observer::Observer;
use super::Error;

/// The run's observer, shared by the hooks that report (one at a time: the
/// hooks run one after another on the training thread).
pub struct Watch<'o>(RefCell<&'o mut (dyn Observer + 'o)>);

impl<'o> Watch<'o> {
    /// Shares `observer`.
    pub fn new(observer: &'o mut (dyn Observer + 'o)) -> Watch<'o> {
        Watch(RefCell::new(observer))
    }

    /// Calls `f` with the observer.
    pub fn with<T>(&self, f: impl FnOnce(&mut dyn Observer) -> T) -> T {
        f(&mut **self.0.borrow_mut())
    }

    /// [`Observer::note`].
    pub fn note(&self, text: &str) {
        self.with(|o| o.note(text))
    }

    /// [`Observer::warning`].
    pub fn warning(&self, text: &str) {
        self.with(|o| o.warning(text))
    }
}

/// Tells the observer every step ([`Observer::step`]) and the end
/// ([`Observer::end`]).
pub struct ObserverHook<'a, 'o> {
    watch: &'a Watch<'o>,
}

impl Hook for ObserverHook<'_, '_> {
    #[inline]
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        self.watch.with(|o| o.step(v));
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        let last = ctx.last_step().copied();
        self.watch.with(|o| o.end(last.as_ref()));
        Ok(())
    }
}

/// A warning from [`DivergenceHook`].
type Diverging<'a> = Box<dyn FnMut(&StepValues, &StepValues) + 'a>;

/// The hooks of a run (see the module doc), built for its settings.
pub struct RunHooks<'a, 'o> {
    stop: StopAtStepHook,
    observe: ObserverHook<'a, 'o>,
    divergence: DivergenceHook<Diverging<'a>>,
    nan: NanTensorHook,
    tensor_log: Option<TensorLogHook<'a, Box<dyn FnMut(&str) + 'a>>>,
    summaries: Option<(SummarySaverHook, StepCounterHook)>,
    writer: Option<SummaryWriter>,
    /// The held-out evaluation (periodic, and at the end), when there is
    /// an evaluation set.
    pub evaluation: Option<EvaluationSummaryHook<'a>>,
    /// The checkpoint saver, with a checkpoint directory (the leader's).
    pub saver: Option<CheckpointSaverHook<'a>>,
}

impl<'a, 'o> RunHooks<'a, 'o> {
    /// The hooks of a run that ends at global step `last_step` with the
    /// settings `config`, the model's `metrics`, the evaluation set `eval`
    /// and the checkpoint saver `saver`; `leader`: this process writes and
    /// reports.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &RunConfig,
        metrics: &'a [Metric],
        last_step: i64,
        eval: Option<EvalSet<'a>>,
        saver: Option<CheckpointSaverHook<'a>>,
        leader: bool,
        watch: &'a Watch<'o>,
    ) -> Result<RunHooks<'a, 'o>, Error> {
        let divergence: Diverging<'a> = Box::new(move |first, now| {
            if leader {
                watch.warning(&format!(
                    "the loss grew from {:.4e} at step {} to {:.4e} at step {}: \
                     training is diverging; lower the learning rate",
                    first.loss, first.step, now.loss, now.step
                ))
            }
        });
        // Summaries for TensorBoard: the step's scalars (and opt-in
        // histograms of the parameters) and global_step/sec in DIR,
        // evaluations in DIR/eval.
        let sc = &config.summaries;
        let summary_dir = sc
            .dir
            .as_ref()
            .filter(|_| sc.every_steps.is_some() && leader);
        let writer = summary_dir
            .map(SummaryWriter::create)
            .transpose()
            .map_err(|e| Error::Io(e.to_string()))?;
        let every = sc.every_steps.unwrap_or(1);
        let summaries = writer.as_ref().map(|w| {
            (
                SummarySaverHook::new(w.clone(), every, sc.histograms).with_metrics(metrics),
                StepCounterHook::new(w.clone(), every),
            )
        });
        // Held-out evaluation: every N steps when asked, and at the end
        // (the run's final held-out numbers).
        let evaluation = match eval {
            Some(set) => {
                let eval_writer = summary_dir
                    .map(create_eval_writer)
                    .transpose()
                    .map_err(|e| Error::Io(e.to_string()))?;
                let periodic = config.evaluate.every_steps;
                let hook = EvaluationSummaryHook::new(
                    EvaluationHook::over(periodic.unwrap_or(0), set, metrics),
                    eval_writer,
                );
                Some(match periodic {
                    Some(_) => hook.reporting(move |step: i64, e: &Evaluation| {
                        watch.with(|o| o.evaluation(step, e))
                    }),
                    None => hook,
                })
            }
            None => None,
        };
        // `logging { tensors }`: the named tensors (TF's LoggingTensorHook).
        let lc = &config.logging;
        let tensor_log = (!lc.tensors.is_empty() && leader).then(|| {
            let print: Box<dyn FnMut(&str) + 'a> =
                Box::new(move |l: &str| watch.with(|o| o.tensors(l)));
            TensorLogHook::new(
                lc.tensors.clone(),
                metrics,
                Timer::new(lc.every_steps, lc.every_secs),
                last_step,
                print,
            )
        });
        let saver = saver.map(|s| s.reporting(move |p: &Path| watch.with(|o| o.checkpoint(p))));
        Ok(RunHooks {
            // `last_step` is the global step training ends at (TF's
            // `last_step`), so a resumed run does the rest.
            stop: StopAtStepHook::last_step(last_step),
            observe: ObserverHook { watch },
            divergence: DivergenceHook::new(DIVERGENCE_FACTOR, divergence),
            nan: NanTensorHook::default(),
            tensor_log,
            summaries,
            writer,
            evaluation,
            saver,
        })
    }

    /// Every hook, in the order they run.
    pub fn all(&mut self) -> Vec<&mut dyn Hook> {
        let mut hooks: Vec<&mut dyn Hook> = vec![
            &mut self.stop,
            &mut self.observe,
            &mut self.divergence,
            &mut self.nan,
        ];
        if let Some(h) = self.tensor_log.as_mut() {
            hooks.push(h);
        }
        if let Some((saver, counter)) = self.summaries.as_mut() {
            hooks.push(saver);
            hooks.push(counter);
        }
        if let Some(e) = self.evaluation.as_mut() {
            hooks.push(e);
        }
        // Checkpoints last: a failing hook before it ends the run without a
        // checkpoint of its step.
        if let Some(s) = self.saver.as_mut() {
            hooks.push(s);
        }
        hooks
    }

    /// Closes the summary writer (flushed and fsynced), if there is one.
    pub fn close_summaries(&mut self) -> Result<(), Error> {
        match self.writer.take() {
            Some(w) => w.close().map_err(|e| Error::Io(e.to_string())),
            None => Ok(()),
        }
    }
}

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
