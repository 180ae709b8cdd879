//! The training loop: one compiled `step` per batch of a [`BatchSource`], with
//! hooks around every step — TF's `MonitoredSession` and `SessionRunHook`.
//!
//! Owns: [`Trainer`] (one step: fill the inputs from the source, call the
//! step, read its scalar outputs into [`StepValues`]), [`fit`] (the loop:
//! every hook's `begin`; then `before_run`, a step, `after_run` until a hook
//! requests a stop or the source is exhausted; then `end`), [`Duration`]
//! (epochs to steps), [`TrainConfig`] and [`TrainError`]. The hooks
//! (stopping, NaN detection, divergence warnings, logging, periodic
//! evaluation) are in [`hooks`], checkpoints and resuming in
//! [`checkpoint_saver`], their every-N-steps-or-S-seconds [`Timer`]
//! in [`timer`], evaluation in [`eval`].
//!
//! Invariants: a step allocates nothing (the step's outputs are looked up by
//! position once; the runtime's sources and hooks allocate nothing per step);
//! the loop ends only when a hook asks (`StopAtStepHook`), the source is
//! exhausted, or something fails — a non-finite loss is `NanTensorHook`'s
//! error, a bad batch the source's [`DataError`], a failed runtime check of
//! the spec (`check_numerics`, `assert_*`: one scalar output each, read by
//! [`Trainer::step`] after the step, before the hooks) [`TrainError::Assertion`]. Hooks run in the order
//! given, and a failing hook ends the run at once (no `end`).

pub mod checkpoint_saver;
pub mod eval;
pub mod hooks;
pub mod replicas;
pub mod sharded;
pub mod sharded_checkpoint;
pub mod timer;

use std::fmt;

use crate::abi::{
    AssertionLayout, OUTPUT_GLOBAL_NORM, OUTPUT_LEARNING_RATE, OUTPUT_LOSS, SUMMARY_STEP,
};
use crate::data::DataError;
use crate::session::Session;
use crate::source::BatchSource;

pub use checkpoint_saver::{
    restore, restore_latest, seek, CheckpointSaverHook, Restored, BATCH_ORDER,
};
pub use eval::{evaluate, evaluate_rows, EvalSet, Evaluation, MakeSource};
pub use hooks::{
    DivergenceHook, EvaluationHook, Hook, LoggingHook, NanTensorHook, RunContext, StepValues,
    StopAtStepHook, DIVERGENCE_FACTOR,
};
pub use timer::Timer;

/// How long to train, as a spec says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duration {
    Steps(u64),
    Epochs(u64),
}

impl Duration {
    /// The number of steps: `steps`, or `ceil(epochs * train_rows / batch)`.
    pub fn steps(self, train_rows: usize, batch: usize) -> u64 {
        match self {
            Duration::Steps(s) => s,
            Duration::Epochs(e) => e
                .saturating_mul(train_rows as u64)
                .div_ceil(batch.max(1) as u64),
        }
    }
}

/// How to train: batches of `batch` rows drawn in the batch order of
/// `shuffle` and `seed` ([`crate::batches::BatchOrder`]), for `steps` steps.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    pub batch: usize,
    pub steps: u64,
    /// Shuffle buffer (0: data order).
    pub shuffle: usize,
    pub seed: u64,
}

/// Why training stopped early.
#[derive(Clone, Debug, PartialEq)]
pub enum TrainError {
    /// The batch source failed (file, row, column).
    Data(DataError),
    /// [`NanTensorHook`]: the loss of step `step` (1-based, in this run) is
    /// not finite.
    NanLoss {
        step: u64,
        global_step: i64,
        loss: f32,
    },
    /// A runtime check of the spec (`check_numerics`, `assert_less`, ...)
    /// failed in step `step` (1-based, in this run; `global_step` after it).
    /// The step ran to its end: the variables hold its updates.
    Assertion {
        step: u64,
        global_step: i64,
        assertion: Box<AssertionLayout>,
        /// The check's value (see [`AssertionLayout::value`]).
        value: f32,
    },
    /// The program or session cannot do what was asked (no step function, a
    /// batch larger than the compiled maximum).
    Session(String),
    /// A hook failed.
    Hook(String),
}

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::Data(e) => write!(f, "{e}"),
            TrainError::NanLoss {
                step,
                global_step,
                loss,
            } => write!(
                f,
                "the loss became {loss} at step {step} (global_step {global_step}); \
                 lower the learning rate or check the data"
            ),
            TrainError::Assertion {
                step,
                global_step,
                assertion,
                value,
            } => {
                write!(
                    f,
                    "`{}` failed at step {step} (global_step {global_step}): ",
                    assertion.kind
                )?;
                if !assertion.message.is_empty() {
                    write!(f, "{}: ", assertion.message)?;
                }
                write!(f, "{}", assertion.describe(*value))
            }
            TrainError::Session(m) | TrainError::Hook(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for TrainError {}

impl From<DataError> for TrainError {
    fn from(e: DataError) -> TrainError {
        TrainError::Data(e)
    }
}

/// Runs the compiled `step` function one batch at a time (replicated: see
/// [`replicas`]).
#[derive(Debug)]
pub struct Trainer {
    step: StepFunction,
    /// The step that also returns what hooks read, when the program has one.
    summary: Option<StepFunction>,
    steps: u64,
    /// Data-parallel: `replica_grad` and the exchange before each step.
    replica: Option<replicas::ReplicaStep>,
    /// Data-parallel: ends a replica waiting too long in an exchange.
    watchdog: Option<replicas::Watchdog>,
}

/// A compiled training step and the positions of the outputs the trainer
/// reads after each call.
#[derive(Clone, Debug)]
struct StepFunction {
    index: usize,
    loss: Option<usize>,
    learning_rate: Option<usize>,
    global_norm: Option<usize>,
    /// Output positions of the step's runtime checks, parallel to its
    /// layout's `assertions` (empty for a spec without checks).
    assertions: Vec<usize>,
}

impl StepFunction {
    fn new(session: &Session, index: usize) -> Result<StepFunction, String> {
        let assertions = assertion_positions(session, index)?;
        Ok(StepFunction {
            index,
            assertions,
            loss: session.output_index(index, OUTPUT_LOSS),
            learning_rate: session.output_index(index, OUTPUT_LEARNING_RATE),
            global_norm: session.output_index(index, OUTPUT_GLOBAL_NORM),
        })
    }
}

impl Trainer {
    /// A trainer for the session's `step` function (and its `summary_step`).
    pub fn new(session: &Session) -> Result<Trainer, String> {
        let step = session
            .function_index("step")
            .ok_or("the program has no step function")?;
        let summary = session
            .function_index(SUMMARY_STEP)
            .map(|f| StepFunction::new(session, f))
            .transpose()?;
        Ok(Trainer {
            step: StepFunction::new(session, step)?,
            summary,
            steps: 0,
            replica: None,
            watchdog: None,
        })
    }

    /// A trainer for one replica of a data-parallel run: each step runs
    /// `replica_grad` on this replica's rows, exchanges over `comm`, then
    /// runs `step` (see [`replicas`]).
    /// `source_may_end`: the batch source can run out (a stream with a last
    /// epoch); the replicas then agree before each step that all of them have
    /// their full share, and stop together when one has not.
    pub fn replicated(
        session: &Session,
        comm: std::rc::Rc<dyn replicas::Collective>,
        source_may_end: bool,
    ) -> Result<Trainer, String> {
        let mut t = Trainer::new(session)?;
        t.replica = Some(replicas::ReplicaStep::new(session, comm, source_may_end)?);
        Ok(t)
    }

    /// Runs one step on the next batch of `source`; `None` when the source
    /// is exhausted (nothing ran).
    #[inline]
    pub fn step(
        &mut self,
        session: &mut Session,
        source: &mut (impl BatchSource + ?Sized),
    ) -> Result<Option<StepValues>, TrainError> {
        self.step_with(session, source, false)
    }

    /// [`Trainer::step`], calling the summary step (the same updates, more
    /// outputs) when `summaries` is asked and the program has one.
    #[inline]
    pub fn step_with(
        &mut self,
        session: &mut Session,
        source: &mut (impl BatchSource + ?Sized),
        summaries: bool,
    ) -> Result<Option<StepValues>, TrainError> {
        let rows = session.fill(source)?;
        let exchange = Exchanging::enter(self.watchdog.as_ref(), self.steps + 1);
        let have_rows = match self.replica.as_mut() {
            Some(r) => r.all_have_rows(rows),
            None => rows > 0,
        };
        if !have_rows {
            return Ok(None);
        }
        let func = match &self.summary {
            Some(s) if summaries => s,
            _ => &self.step,
        };
        let f = func.index;
        if let Some(r) = self.replica.as_mut() {
            r.exchange(session, rows).map_err(TrainError::Session)?;
            check_assertions(session, r.grad, &r.assertions, rows, self.steps + 1)?;
            r.combine(session).map_err(TrainError::Session)?;
        }
        drop(exchange);
        session.call(f, rows).map_err(TrainError::Session)?;
        self.steps += 1;
        let scalar = |k: Option<usize>| {
            k.and_then(|k| session.output_at(f, k, rows))
                .and_then(|v| v.first().copied())
        };
        check_assertions(session, f, &func.assertions, rows, self.steps)?;
        Ok(Some(StepValues {
            step: self.steps,
            global_step: session.global_step,
            rows,
            loss: scalar(func.loss).unwrap_or(f32::NAN),
            learning_rate: scalar(func.learning_rate),
            global_norm: scalar(func.global_norm),
            function: f,
        }))
    }

    /// Watches every step's exchange with the other replicas: one that lasts
    /// longer than `limit` calls `on_timeout` (see [`replicas::Watchdog`]).
    pub fn watch_exchanges(
        &mut self,
        limit: std::time::Duration,
        on_timeout: Box<dyn FnOnce(String) + Send>,
    ) {
        self.watchdog = Some(replicas::Watchdog::start(limit, on_timeout));
    }

    /// The replicated step, in a data-parallel run.
    pub fn replica(&self) -> Option<&replicas::ReplicaStep> {
        self.replica.as_ref()
    }

    /// Steps run so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The index of the step function in the session.
    pub fn step_function(&self) -> usize {
        self.step.index
    }

    /// The index of the summary step, or of the step without one.
    pub fn summary_function(&self) -> usize {
        self.summary.as_ref().unwrap_or(&self.step).index
    }
}

/// The span of a step spent exchanging with the other replicas, for the
/// watchdog (nothing without one).
struct Exchanging<'w>(Option<&'w replicas::Watchdog>);

impl<'w> Exchanging<'w> {
    fn enter(w: Option<&'w replicas::Watchdog>, step: u64) -> Exchanging<'w> {
        if let Some(w) = w {
            w.enter(step);
        }
        Exchanging(w)
    }
}

impl Drop for Exchanging<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.0 {
            w.leave();
        }
    }
}

/// The output positions of function `f`'s runtime checks, parallel to its
/// layout's `assertions`.
fn assertion_positions(session: &Session, f: usize) -> Result<Vec<usize>, String> {
    let layout = session.function_layout(f);
    layout
        .assertions
        .iter()
        .map(|a| {
            session
                .output_index(f, &a.output)
                .ok_or_else(|| format!("`{}` has no output `{}`", layout.name, a.output))
        })
        .collect()
}

/// The runtime checks of function `f` after a call (outputs `positions`):
/// one load and compare each, none without them.
fn check_assertions(
    session: &Session,
    f: usize,
    positions: &[usize],
    rows: usize,
    step: u64,
) -> Result<(), TrainError> {
    for (i, &k) in positions.iter().enumerate() {
        let value = session
            .output_at(f, k, rows)
            .and_then(|v| v.first().copied())
            .unwrap_or(0.0);
        if value != 0.0 {
            return Err(TrainError::Assertion {
                step,
                global_step: session.global_step,
                assertion: Box::new(session.function_layout(f).assertions[i].clone()),
                value,
            });
        }
    }
    Ok(())
}

/// How a [`fit`] ended.
#[derive(Clone, Debug, PartialEq)]
pub struct FitSummary {
    /// Steps run.
    pub steps: u64,
    /// The last step's values (`None` if no step ran).
    pub last: Option<StepValues>,
    /// True when the source ran out (rather than a hook stopping the run).
    pub exhausted: bool,
    /// Seconds this replica spent moving the rows of sharded tables (their
    /// fetch and their gradient's routing); `None` without sharded tables.
    pub sharded_exchange_s: Option<f64>,
}

/// Trains: calls every hook's `begin`, then runs steps on batches of
/// `source` — each between the hooks' `before_run` and `after_run` — until a
/// hook requests a stop (e.g. [`StopAtStepHook`]) or the source is exhausted,
/// then calls every hook's `end`.
pub fn fit(
    session: &mut Session,
    source: &mut dyn BatchSource,
    hooks: &mut [&mut dyn Hook],
) -> Result<FitSummary, TrainError> {
    let trainer = Trainer::new(session).map_err(TrainError::Session)?;
    fit_with(trainer, session, source, hooks)
}

/// [`fit`] with a given trainer (a replica's, [`Trainer::replicated`]).
pub fn fit_with(
    mut trainer: Trainer,
    session: &mut Session,
    source: &mut dyn BatchSource,
    hooks: &mut [&mut dyn Hook],
) -> Result<FitSummary, TrainError> {
    let summary_fn = trainer.summary_function();
    let mut ctx = RunContext::new(session, source, trainer.step_function(), summary_fn);
    for h in hooks.iter_mut() {
        h.begin(&mut ctx)?;
    }
    let mut exhausted = false;
    while !ctx.stop_requested() {
        for h in hooks.iter_mut() {
            h.before_run(&mut ctx)?;
        }
        let summaries = ctx.take_summary_request();
        let (session, source) = ctx.parts();
        let Some(values) = trainer.step_with(session, source, summaries)? else {
            exhausted = true;
            break;
        };
        ctx.set_last(values);
        for h in hooks.iter_mut() {
            h.after_run(&mut ctx, &values)?;
        }
    }
    for h in hooks.iter_mut() {
        h.end(&mut ctx)?;
    }
    Ok(FitSummary {
        steps: trainer.steps,
        last: ctx.last_step().copied(),
        exhausted,
        sharded_exchange_s: trainer.replica().and_then(|r| r.sharded_seconds()),
    })
}
