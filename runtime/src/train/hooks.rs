//! Hooks around the training loop, modelled on TF's `SessionRunHook`.
//!
//! Owns: the [`Hook`] trait (`begin`, `before_run` / `after_run` around each
//! step, `end`), the [`RunContext`] a hook acts through (request a stop, see
//! the global step and the last step's outputs, read and write variables by
//! TF name, use the session, e.g. to evaluate), [`StepValues`] (a step's
//! scalar outputs), and the built-in hooks: [`StopAtStepHook`],
//! [`NanTensorHook`], [`LoggingHook`] and [`EvaluationHook`]. Checkpoints and
//! summaries are hooks of the same kind.
//!
//! Invariants: the built-in hooks allocate nothing in `before_run` or
//! `after_run` except when they act (an evaluation, a log call); a hook sees
//! the session between steps only, never during one.

use ndarray::{ArrayViewD, ArrayViewMutD};

use super::eval::{EvalSet, Evaluation};
use super::timer::Timer;
use super::TrainError;
use crate::data::Dataset;
use crate::metrics::Metric;
use crate::session::Session;
use crate::source::BatchSource;

/// The scalar outputs of one training step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepValues {
    /// Steps run in this run, this one included (1-based).
    pub step: u64,
    /// TF's `global_step` after the step.
    pub global_step: i64,
    /// Rows in the step's batch.
    pub rows: usize,
    pub loss: f32,
    /// The learning rate the step used (after its schedule).
    pub learning_rate: Option<f32>,
    /// The gradients' global norm (the `global_norm` metric).
    pub global_norm: Option<f32>,
    /// The session function that ran: the step, or the summary step when a
    /// hook asked for its outputs ([`RunContext::request_summary_outputs`]).
    pub function: usize,
}

/// What a hook can see and do during a run.
pub struct RunContext<'s> {
    session: &'s mut Session,
    source: &'s mut dyn BatchSource,
    step_fn: usize,
    summary_fn: usize,
    summary_requested: bool,
    stop: bool,
    last: Option<StepValues>,
}

impl<'s> RunContext<'s> {
    pub(crate) fn new(
        session: &'s mut Session,
        source: &'s mut dyn BatchSource,
        step_fn: usize,
        summary_fn: usize,
    ) -> RunContext<'s> {
        RunContext {
            session,
            source,
            step_fn,
            summary_fn,
            summary_requested: false,
            stop: false,
            last: None,
        }
    }

    /// The session and the batch source, to run a step.
    pub(crate) fn parts(&mut self) -> (&mut Session, &mut dyn BatchSource) {
        (self.session, self.source)
    }

    /// The session's plain training step function.
    pub fn step_function(&self) -> usize {
        self.step_fn
    }

    /// Asks for the summary step's outputs at the next step (call it in
    /// `before_run`; TF's `SessionRunArgs` fetches): the metric sums and the
    /// logged tensors the run's `summaries` and `logging` read. The step's
    /// updates are the same either way.
    pub fn request_summary_outputs(&mut self) {
        self.summary_requested = true;
    }

    pub(crate) fn take_summary_request(&mut self) -> bool {
        std::mem::take(&mut self.summary_requested)
    }

    /// The function whose outputs a hook that asked for summary outputs
    /// reads (the summary step, or the step when the program has none).
    pub fn summary_function(&self) -> usize {
        self.summary_fn
    }

    /// The batch source's position now ([`BatchSource::position`]), for a checkpoint.
    pub fn source_position(&self) -> Option<Vec<i64>> {
        self.source.position()
    }

    pub(crate) fn set_last(&mut self, v: StepValues) {
        self.last = Some(v);
    }

    /// Ends the run after the current step (TF's `request_stop`).
    pub fn request_stop(&mut self) {
        self.stop = true;
    }

    /// True once some hook has requested a stop.
    pub fn stop_requested(&self) -> bool {
        self.stop
    }

    /// TF's `global_step` now.
    pub fn global_step(&self) -> i64 {
        self.session.global_step
    }

    /// The values of the last step run (`None` before the first).
    pub fn last_step(&self) -> Option<&StepValues> {
        self.last.as_ref()
    }

    /// Any output of the last step, by name (`loss`, `learning_rate`,
    /// `global_norm`, ...).
    pub fn step_output(&self, name: &str) -> Option<&[f32]> {
        let last = self.last?;
        self.session.output(last.function, name, last.rows)
    }

    /// A variable by TF name (`W1`, `W1/Adam`, `beta1_power`), shaped.
    pub fn variable(&self, name: &str) -> Option<ArrayViewD<'_, f32>> {
        self.session.variable(name)
    }

    /// A variable by TF name, for writing.
    pub fn variable_mut(&mut self, name: &str) -> Option<ArrayViewMutD<'_, f32>> {
        self.session.variable_mut(name)
    }

    /// The session (to evaluate, swap in moving averages, save).
    pub fn session(&self) -> &Session {
        self.session
    }

    /// The session, mutable.
    pub fn session_mut(&mut self) -> &mut Session {
        self.session
    }
}

/// Code run around the steps of [`super::fit`] (TF's `SessionRunHook`).
/// Every method does nothing by default; an error ends the run.
pub trait Hook {
    /// Before the first step.
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        let _ = ctx;
        Ok(())
    }
    /// Before each step.
    fn before_run(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        let _ = ctx;
        Ok(())
    }
    /// After each step, with its values.
    fn after_run(&mut self, ctx: &mut RunContext<'_>, step: &StepValues) -> Result<(), TrainError> {
        let _ = (ctx, step);
        Ok(())
    }
    /// After the last step (when no hook failed).
    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        let _ = ctx;
        Ok(())
    }
}

/// Stops the run after a number of steps, or at a global step (TF's
/// `StopAtStepHook(num_steps, last_step)`). `num_steps` counts the steps of
/// this run (TF counts from the global step at `begin`; the same when every
/// step increments it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopAtStepHook {
    num_steps: Option<u64>,
    last_step: Option<i64>,
}

impl StopAtStepHook {
    /// Stop after `n` steps of this run (none when `n` is 0).
    pub fn num_steps(n: u64) -> StopAtStepHook {
        StopAtStepHook {
            num_steps: Some(n),
            last_step: None,
        }
    }

    /// Stop once `global_step` reaches `last_step` (none if it already has).
    pub fn last_step(last_step: i64) -> StopAtStepHook {
        StopAtStepHook {
            num_steps: None,
            last_step: Some(last_step),
        }
    }
}

impl Hook for StopAtStepHook {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        if self.num_steps == Some(0) || self.last_step.is_some_and(|l| ctx.global_step() >= l) {
            ctx.request_stop();
        }
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.num_steps.is_some_and(|n| v.step >= n)
            || self.last_step.is_some_and(|l| v.global_step >= l)
        {
            ctx.request_stop();
        }
        Ok(())
    }
}

/// Fails the run when the loss is NaN or infinite (TF's `NanTensorHook` with
/// `fail_on_nan_loss = True`: [`TrainError::NanLoss`]); with
/// `fail_on_nan_loss = false` it only stops the run, and records the step.
#[derive(Clone, Debug, PartialEq)]
pub struct NanTensorHook {
    pub fail_on_nan_loss: bool,
    /// The step that stopped the run (when not failing).
    pub stopped_at: Option<StepValues>,
}

impl Default for NanTensorHook {
    fn default() -> NanTensorHook {
        NanTensorHook {
            fail_on_nan_loss: true,
            stopped_at: None,
        }
    }
}

impl Hook for NanTensorHook {
    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if v.loss.is_finite() {
            return Ok(());
        }
        if self.fail_on_nan_loss {
            return Err(TrainError::NanLoss {
                step: v.step,
                global_step: v.global_step,
                loss: v.loss,
            });
        }
        self.stopped_at = Some(*v);
        ctx.request_stop();
        Ok(())
    }
}

/// Calls `log` with the step's values at the first step, then whenever its
/// [`Timer`] is due (every N steps and/or S seconds), and at the end for the
/// last step if it was not logged (TF's `LoggingTensorHook(every_n_iter,
/// every_n_secs)`, `at_end = True`).
pub struct LoggingHook<F: FnMut(&StepValues)> {
    timer: Timer,
    log: F,
}

impl<F: FnMut(&StepValues)> LoggingHook<F> {
    /// Every `every_steps` steps; 0 logs the first and the last step only.
    pub fn new(every_steps: u64, log: F) -> LoggingHook<F> {
        LoggingHook::with_timer(Timer::every_steps(every_steps), log)
    }

    /// Whenever `timer` is due.
    pub fn with_timer(timer: Timer, log: F) -> LoggingHook<F> {
        LoggingHook { timer, log }
    }
}

impl<F: FnMut(&StepValues)> Hook for LoggingHook<F> {
    #[inline]
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.timer.due(v.step) {
            (self.log)(v);
            self.timer.triggered(v.step);
        }
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        if let Some(v) = ctx.last_step().copied() {
            if self.timer.last_step() != Some(v.step) {
                (self.log)(&v);
                self.timer.triggered(v.step);
            }
        }
        Ok(())
    }
}

/// Warns, once, when the loss has grown by orders of magnitude: a run that
/// diverges without becoming NaN (a learning rate far too large) otherwise
/// ends with a huge loss and success. `warn(first, now)` gets the first
/// step's values and the step where the loss reached `factor` times the
/// first step's (in absolute value).
pub struct DivergenceHook<F: FnMut(&StepValues, &StepValues)> {
    factor: f32,
    first: Option<StepValues>,
    warned: bool,
    warn: F,
}

impl<F: FnMut(&StepValues, &StepValues)> DivergenceHook<F> {
    /// [`DIVERGENCE_FACTOR`] is the CLI's `factor`.
    pub fn new(factor: f32, warn: F) -> DivergenceHook<F> {
        DivergenceHook {
            factor,
            first: None,
            warned: false,
            warn,
        }
    }

    /// True once the hook has warned.
    pub fn warned(&self) -> bool {
        self.warned
    }
}

/// How much the loss must grow over the first step's to count as diverging:
/// two orders of magnitude (a loss that starts at 2.3 and passes 230).
pub const DIVERGENCE_FACTOR: f32 = 100.0;

impl<F: FnMut(&StepValues, &StepValues)> Hook for DivergenceHook<F> {
    #[inline]
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.warned || !v.loss.is_finite() {
            return Ok(());
        }
        let Some(first) = self.first else {
            self.first = Some(*v);
            return Ok(());
        };
        // A first loss of 0 gives no scale to grow from.
        if first.loss != 0.0 && v.loss.abs() >= self.factor * first.loss.abs() {
            self.warned = true;
            (self.warn)(&first, v);
        }
        Ok(())
    }
}

/// Evaluates the model on rows of an in-memory dataset every `every_steps`
/// steps, and at the end if the last step was not evaluated (periodic
/// held-out evaluation, as Estimator's `train_and_evaluate`). The results,
/// with the global step of each, are in [`EvaluationHook::results`].
pub struct EvaluationHook<'d> {
    every_steps: u64,
    set: EvalSet<'d>,
    metrics: &'d [Metric],
    /// `(global_step, evaluation)`, in order.
    pub results: Vec<(i64, Evaluation)>,
    evaluated: Option<u64>,
}

impl<'d> EvaluationHook<'d> {
    /// Evaluates `rows` of `data`.
    pub fn new(
        every_steps: u64,
        data: &'d Dataset,
        rows: &'d [u32],
        metrics: &'d [Metric],
    ) -> EvaluationHook<'d> {
        EvaluationHook::over(every_steps, EvalSet::Rows { data, rows }, metrics)
    }

    /// Evaluates `set` (in-memory rows or a source made afresh each time).
    pub fn over(every_steps: u64, set: EvalSet<'d>, metrics: &'d [Metric]) -> EvaluationHook<'d> {
        EvaluationHook {
            every_steps,
            set,
            metrics,
            results: Vec::new(),
            evaluated: None,
        }
    }

    /// What the hook evaluates (for a last evaluation outside the loop,
    /// e.g. with the moving averages).
    pub fn set_mut(&mut self) -> &mut EvalSet<'d> {
        &mut self.set
    }

    fn evaluate(&mut self, ctx: &mut RunContext<'_>, step: u64) -> Result<(), TrainError> {
        let e = self.set.evaluate(ctx.session_mut(), self.metrics)?;
        self.results.push((ctx.global_step(), e));
        self.evaluated = Some(step);
        Ok(())
    }
}

impl Hook for EvaluationHook<'_> {
    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.every_steps > 0 && v.step.is_multiple_of(self.every_steps) {
            self.evaluate(ctx, v.step)?;
        }
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        match ctx.last_step().map(|v| v.step) {
            Some(step) if self.evaluated != Some(step) => self.evaluate(ctx, step),
            _ => Ok(()),
        }
    }
}
