//! The hooks a run installs around its steps (TF's `SessionRunHook`s of a
//! `MonitoredTrainingSession`), in their order: stop at the last step, tell
//! the [`Observer`] ([`ObserverHook`]), warn of a
//! diverging loss, stop on a non-finite loss, log the spec's tensors
//! ([`TensorLogHook`], TF's `LoggingTensorHook` over `logging { tensors }`),
//! write summaries and the step rate, evaluate periodically, and save
//! checkpoints — last, so a failing hook before it ends the run without a
//! checkpoint of its step.
//!
//! Owns: [`RunHooks`] (that set, built from the run's settings),
//! [`ObserverHook`] and [`Watch`], the observer shared by the hooks that
//! report; the logged tensors' hook is [`TensorLogHook`].
//! Invariants: only the leader of a data-parallel job (or a lone process)
//! writes (summaries, checkpoints) or reports; between two reports the
//! hooks read nothing and allocate nothing.

use std::cell::RefCell;
use std::path::Path;

use specc_runtime::config::RunConfig;
use specc_runtime::metrics::Metric;
use specc_runtime::summary::hooks::{
    create_eval_writer, EvaluationSummaryHook, StepCounterHook, SummarySaverHook,
};
use specc_runtime::summary::sharded::{ShardedHistogramHook, ShardedHistograms};
use specc_runtime::summary::SummaryWriter;
use specc_runtime::train::replicas::Collective;
use specc_runtime::train::sharded_checkpoint::{Leader, Report, ShardedSaverHook};
use specc_runtime::train::{
    CheckpointSaverHook, DivergenceHook, EvalSet, Evaluation, EvaluationHook, Hook, NanTensorHook,
    RunContext, StepValues, StopAtStepHook, Timer, TrainError, DIVERGENCE_FACTOR,
};

use super::observer::Observer;
pub use super::tensor_log::TensorLogHook;
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
/// ([`Observer::end`]), and stops the run when it asks
/// ([`Observer::stop_requested`]).
pub struct ObserverHook<'a, 'o> {
    watch: &'a Watch<'o>,
}

impl Hook for ObserverHook<'_, '_> {
    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.watch.with(|o| {
            o.step(v);
            o.stop_requested()
        }) {
            ctx.request_stop();
        }
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

/// Where [`TensorLogHook`] prints a line.
type Print<'a> = Box<dyn FnMut(&str) + 'a>;

/// What the summaries need from the run besides its settings.
#[derive(Default)]
pub struct SummaryExtras {
    /// `(tag, Markdown)` for TensorBoard's Text tab, written once.
    pub texts: Vec<(String, String)>,
    /// Each of `image_tensors` with its images' `[H, W, C]`.
    pub images: Vec<(String, [usize; 3])>,
}

/// The hooks of a run (see the module doc), built for its settings.
pub struct RunHooks<'a, 'o> {
    stop: StopAtStepHook,
    observe: ObserverHook<'a, 'o>,
    divergence: DivergenceHook<Diverging<'a>>,
    nan: NanTensorHook,
    tensor_log: Option<TensorLogHook<'a, Print<'a>>>,
    summaries: Option<(SummarySaverHook, StepCounterHook)>,
    writer: Option<SummaryWriter>,
    /// Every how many global steps the parameters' histograms are written
    /// (on the leader), when they are.
    histograms_every: Option<u64>,
    /// With tables sharded across the replicas, a replica other than the
    /// leader's part in their histograms ([`RunHooks::share_histograms`]).
    sharded_histograms: Option<ShardedHistogramHook>,
    /// The held-out evaluation (periodic, and at the end), when there is
    /// an evaluation set.
    pub evaluation: Option<EvaluationSummaryHook<'a>>,
    /// The checkpoint saver, with a checkpoint directory (the leader's).
    pub saver: Option<CheckpointSaverHook<'a>>,
    /// With tables sharded across the replicas: every replica's part in
    /// the saves (the leader's saver moves in, [`RunHooks::share_saves`]).
    pub sharded_saver: Option<ShardedSaverHook<'a>>,
}

impl<'a, 'o> RunHooks<'a, 'o> {
    /// The hooks of a run that ends at global step `last_step` with the
    /// settings `config`, the model's `metrics`, the evaluation set `eval`
    /// and the checkpoint saver `saver`; `leader`: this process writes and
    /// reports; `extras` are what the summaries need besides the settings.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &RunConfig,
        metrics: &'a [Metric],
        last_step: i64,
        eval: Option<EvalSet<'a>>,
        saver: Option<CheckpointSaverHook<'a>>,
        leader: bool,
        watch: &'a Watch<'o>,
        extras: SummaryExtras,
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
        // The leader's summary hook's period, which the other replicas'
        // part in the histograms must follow step for step.
        let histograms_every = sc.dir.as_ref().map(|_| every).filter(|_| sc.histograms);
        let summaries = writer.as_ref().map(|w| {
            (
                SummarySaverHook::new(w.clone(), every, sc.histograms)
                    .with_metrics(metrics)
                    .with_texts(extras.texts)
                    .with_images(extras.images, sc.max_images as usize),
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
                // Only the leader reports (with sharded tables every
                // replica evaluates).
                Some(match (periodic, leader) {
                    (Some(_), true) => hook.reporting(move |step: i64, e: &Evaluation| {
                        watch.with(|o| o.evaluation(step, e))
                    }),
                    _ => hook,
                })
            }
            None => None,
        };
        // `logging { tensors }`: the named tensors (TF's LoggingTensorHook).
        let lc = &config.logging;
        let tensor_log = (!lc.tensors.is_empty() && leader).then(|| {
            let print: Print<'a> = Box::new(move |l: &str| watch.with(|o| o.tensors(l)));
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
            histograms_every,
            sharded_histograms: None,
            evaluation,
            saver,
            sharded_saver: None,
        })
    }

    /// The run's tables are sharded across the replicas of `comm`: every
    /// replica writes its rows of each checkpoint into its checkpoint
    /// directory `dir` (its machine's); the leader (with its manager and
    /// timer, `leader`) lists them, and every replica deletes its files of
    /// the checkpoints the leader sweeps.
    pub fn share_saves(
        &mut self,
        comm: std::rc::Rc<dyn Collective>,
        dir: &Path,
        leader: Option<(specc_runtime::checkpoint::CheckpointManager, Timer)>,
    ) {
        let watch = self.observe.watch;
        let leader = leader.map(|(manager, timer)| Leader {
            manager,
            timer,
            report: Some(Box::new(move |p: &Path| watch.with(|o| o.checkpoint(p))) as Report<'a>),
        });
        self.sharded_saver = Some(ShardedSaverHook::new(comm, leader).with_directory(dir));
    }

    /// The run's tables are sharded across the replicas of `comm`: the
    /// histograms of the parameters (when the run writes them) show each
    /// whole table, which every replica counts its rows of and the leader
    /// writes.
    pub fn share_histograms(
        &mut self,
        comm: std::rc::Rc<dyn Collective>,
        session: &specc_runtime::session::Session,
    ) {
        let Some(every) = self.histograms_every else {
            return;
        };
        let leader = comm.rank() == 0;
        let Some(histograms) = ShardedHistograms::new(session, comm) else {
            return;
        };
        match self.summaries.take() {
            Some((saver, counter)) if leader => {
                self.summaries = Some((saver.with_sharded(Some(histograms)), counter));
            }
            summaries => {
                self.summaries = summaries;
                self.sharded_histograms = Some(ShardedHistogramHook::new(histograms, every));
            }
        }
    }

    /// The last checkpoint written.
    pub fn last_saved(&self) -> Option<std::path::PathBuf> {
        match (&self.saver, &self.sharded_saver) {
            (Some(s), _) => s.last_saved.clone(),
            (None, Some(s)) => s.last_saved.clone(),
            (None, None) => None,
        }
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
        if let Some(h) = self.sharded_histograms.as_mut() {
            hooks.push(h);
        }
        if let Some(e) = self.evaluation.as_mut() {
            hooks.push(e);
        }
        // Checkpoints last: a failing hook before it ends the run without a
        // checkpoint of its step.
        if let Some(s) = self.saver.as_mut() {
            hooks.push(s);
        }
        if let Some(s) = self.sharded_saver.as_mut() {
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
