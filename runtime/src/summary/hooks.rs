//! The training hooks that write summaries (TF's `SummarySaverHook`,
//! `StepCounterHook`, and Estimator's evaluation summaries).
//!
//! Owns: [`SummarySaverHook`] (every scalar output of the step — `loss`,
//! `learning_rate`, `global_norm`, metrics — under its name, and opt-in a
//! histogram of every trainable parameter under its TF name, a table
//! sharded across replicas whole),
//! [`StepCounterHook`] (`global_step/sec`), [`EvaluationSummaryHook`] and
//! [`write_evaluation`] (an [`Evaluation`] under the training tags, in the
//! run's `eval/` directory, so TensorBoard overlays the two runs).
//!
//! Invariants: the hooks follow TF's `SecondOrStepTimer` by steps — a write
//! at the first step of the run, then at the first global step at least
//! `every_steps` past the last write — at the global step the step reached;
//! between writes `after_run` compares two integers and allocates nothing;
//! at a write the training thread copies values into a [`SummaryBatch`] and
//! the writer thread does the rest.

use std::path::Path;
use std::time::Instant;

use super::sharded::ShardedHistograms;
use super::writer::{ImageBatch, SummaryBatch, SummaryWriter};
use super::SummaryError;
use crate::abi::{ElemType, VarRole};
use crate::metrics::{Metric, MetricOutput};
use crate::train::{Evaluation, EvaluationHook, Hook, RunContext, StepValues, TrainError};

/// The subdirectory of a summary directory that holds evaluation summaries
/// (Estimator's `eval`).
pub const EVAL_DIR: &str = "eval";

/// The tag of [`StepCounterHook`]'s summary (`global_step` op name + `/sec`).
pub const STEPS_PER_SEC_TAG: &str = "global_step/sec";

fn hook_error(e: SummaryError) -> TrainError {
    TrainError::Hook(e.to_string())
}

/// TF's `SecondOrStepTimer` by steps: due at the first step, then at the
/// first global step at least `every` past the last trigger.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StepTimer {
    every: u64,
    pub(crate) last: Option<i64>,
}

impl StepTimer {
    /// Due every `every` global steps (0 counts as 1).
    pub(crate) fn new(every: u64) -> StepTimer {
        StepTimer {
            every: every.max(1),
            last: None,
        }
    }

    #[inline]
    pub(crate) fn due(&self, global_step: i64) -> bool {
        match self.last {
            None => true,
            Some(last) => {
                global_step != last && global_step >= last.saturating_add(self.every as i64)
            }
        }
    }
}

/// A scalar output of the step and the tag it is written under.
#[derive(Clone, Debug)]
struct ScalarOutput {
    tag: String,
    index: usize,
    /// For a metric's `sum`: elements per example (the value is the sum
    /// divided by this times the batch's rows).
    per_example: Option<u64>,
}

/// Writes the step's scalar outputs (and opt-in the parameters' histograms)
/// every `every_steps` global steps: TF's `SummarySaverHook(save_steps)`
/// over `tf.compat.v1.summary.scalar` of each output and
/// `tf.compat.v1.summary.histogram(var.op.name, var)` of each parameter;
/// and a histogram of each `histogram/<tag>` output of the summary step
/// (named activations, gradients) under `<tag>`.
pub struct SummarySaverHook {
    writer: SummaryWriter,
    timer: StepTimer,
    histograms: bool,
    metrics: Vec<Metric>,
    step_fn: usize,
    scalars: Vec<ScalarOutput>,
    params: Vec<String>,
    /// `(tag, output index)` of the summary step's `histogram/<tag>`
    /// outputs (named tensors, gradients).
    output_histograms: Vec<(String, usize)>,
    /// The image batches to write: `(name, [H, W, C])`, given by the
    /// run, and each one's output index (found in `begin`).
    images: Vec<(String, [usize; 3])>,
    image_outputs: Vec<(usize, usize)>,
    max_images: usize,
    started: bool,
    /// `(tag, Markdown)` written once as `tf.summary.text`, with the first
    /// summaries (after the session's START, which would purge them).
    texts: Vec<(String, String)>,
    /// The tables sharded across the replicas, whose histograms the
    /// replicas combine ([`ShardedHistograms`]).
    sharded: Option<ShardedHistograms>,
}

impl SummarySaverHook {
    /// Writes to `writer` every `every_steps` global steps (0 counts as 1);
    /// with `histograms`, also a histogram of every trainable parameter.
    pub fn new(writer: SummaryWriter, every_steps: u64, histograms: bool) -> SummarySaverHook {
        SummarySaverHook {
            writer,
            timer: StepTimer::new(every_steps),
            histograms,
            sharded: None,
            metrics: Vec::new(),
            step_fn: 0,
            scalars: Vec::new(),
            params: Vec::new(),
            output_histograms: Vec::new(),
            images: Vec::new(),
            image_outputs: Vec::new(),
            max_images: 3,
            started: false,
            texts: Vec::new(),
        }
    }

    /// Image summaries of the summary step's `image/<name>` outputs, each
    /// a batch of images `[H, W, C]` (`(name, [H, W, C])`), up to
    /// `max_images` of each per write (TF's `summary.image(max_outputs)`).
    pub fn with_images(mut self, images: Vec<(String, [usize; 3])>, max_images: usize) -> Self {
        self.images = images;
        self.max_images = max_images.max(1);
        self
    }

    /// Texts (`(tag, Markdown)`, TensorBoard's Text tab) written once, at
    /// the first write of the run: the spec, the run's configuration.
    pub fn with_texts(mut self, texts: Vec<(String, String)>) -> SummarySaverHook {
        self.texts = texts;
        self
    }

    /// With `histograms`, the histogram of each table sharded across the
    /// replicas is the whole table's ([`ShardedHistograms`]): every other
    /// replica runs a [`ShardedHistogramHook`](super::sharded::ShardedHistogramHook)
    /// with the same `every_steps`.
    pub fn with_sharded(mut self, sharded: Option<ShardedHistograms>) -> SummarySaverHook {
        self.sharded = sharded;
        self
    }

    /// The model's metrics: a step output `metric/<m>/sum` is written as the
    /// mean under the tag `<m>` (without them, under its output name).
    pub fn with_metrics(mut self, metrics: &[Metric]) -> SummarySaverHook {
        self.metrics = metrics.to_vec();
        self
    }

    /// The tags written for scalars, in order (known after `begin`).
    pub fn scalar_tags(&self) -> impl Iterator<Item = &str> {
        self.scalars.iter().map(|s| s.tag.as_str())
    }

    /// TF's "Nan in summary histogram" for a non-finite value of `tag`.
    fn check_finite(&self, tag: &str, values: &[f32], step: i64) -> Result<(), TrainError> {
        match values.iter().position(|x| !x.is_finite()) {
            None => Ok(()),
            Some(i) => Err(TrainError::Hook(format!(
                "NaN in summary histogram for: {tag} (element {i} is {}) at global step {step}; \
                 event file {}",
                values[i],
                self.writer.path().display()
            ))),
        }
    }

    fn write(&mut self, ctx: &RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        let session = ctx.session();
        // The collective first, so no other failure leaves the replicas
        // waiting in it.
        let combined = match self.sharded.as_mut().filter(|_| self.histograms) {
            Some(s) => s.combine(session).map_err(|e| {
                TrainError::Hook(format!(
                    "NaN in summary histogram for: {} (element {} is {}) at global step {}; \
                     event file {}",
                    e.tag,
                    e.element,
                    e.value,
                    v.global_step,
                    self.writer.path().display()
                ))
            })?,
            None => Vec::new(),
        };
        let mut batch = SummaryBatch::new(v.global_step);
        batch.scalars.reserve(self.scalars.len());
        for s in &self.scalars {
            let Some(&x) = session
                .output_at(self.step_fn, s.index, v.rows)
                .and_then(|o| o.first())
            else {
                continue;
            };
            let x = match s.per_example {
                Some(n) => (f64::from(x) / (n as f64 * v.rows as f64).max(1.0)) as f32,
                None => x,
            };
            batch.scalars.push((s.tag.clone(), x));
        }
        for (tag, index) in &self.output_histograms {
            let Some(values) = session.output_at(self.step_fn, *index, v.rows) else {
                continue;
            };
            self.check_finite(tag, values, v.global_step)?;
            batch.histograms.push((tag.clone(), values.to_vec()));
        }
        for &(k, index) in &self.image_outputs {
            let Some(values) = session.output_at(self.step_fn, index, v.rows) else {
                continue;
            };
            let (name, hwc) = &self.images[k];
            let per: usize = hwc.iter().product();
            let rows = v.rows.min(self.max_images);
            batch.images.push(ImageBatch {
                name: name.clone(),
                values: values[..(rows * per).min(values.len())].to_vec(),
                rows,
                hwc: *hwc,
                max_images: self.max_images,
            });
        }
        for p in &self.params {
            let Some(values) = session.var(p) else {
                continue;
            };
            self.check_finite(p, values, v.global_step)?;
            batch.histograms.push((p.clone(), values.to_vec()));
        }
        batch.counted = combined;
        self.writer.add(batch).map_err(hook_error)
    }
}

impl Hook for SummarySaverHook {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        // The summary step returns the metric sums; it runs on the steps this
        // hook writes (it asks in `before_run`).
        self.step_fn = ctx.summary_function();
        let session = ctx.session();
        self.scalars.clear();
        self.output_histograms.clear();
        self.image_outputs.clear();
        for (index, o) in session
            .function_layout(self.step_fn)
            .outputs
            .iter()
            .enumerate()
        {
            if let Some(name) = o.name.strip_prefix(crate::abi::IMAGE_OUTPUT_PREFIX) {
                if let Some(k) = self.images.iter().position(|(n, _)| n == name) {
                    self.image_outputs.push((k, index));
                }
                continue;
            }
            if let Some(tag) = o.name.strip_prefix(crate::abi::HISTOGRAM_OUTPUT_PREFIX) {
                if o.elem == ElemType::F32 {
                    self.output_histograms.push((tag.to_string(), index));
                }
                continue;
            }
            if o.elem != ElemType::F32 || o.batched || o.per_example != 1 {
                continue;
            }
            let metric = self
                .metrics
                .iter()
                .find(|m| MetricOutput::Sum.name(&m.name) == o.name);
            self.scalars.push(match metric {
                Some(m) => ScalarOutput {
                    tag: m.name.clone(),
                    index,
                    per_example: Some(m.per_example.max(1)),
                },
                None => ScalarOutput {
                    tag: o.name.clone(),
                    index,
                    per_example: None,
                },
            });
        }
        self.params = if self.histograms {
            session
                .layout
                .vars
                .iter()
                .filter(|v| matches!(v.kind, VarRole::Param { .. }))
                .filter(|v| !self.sharded.as_ref().is_some_and(|s| s.contains(&v.name)))
                .map(|v| v.name.clone())
                .collect()
        } else {
            Vec::new()
        };
        self.timer.last = None;
        self.started = false;
        Ok(())
    }

    #[inline]
    fn before_run(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        // A step adds one to the global step.
        if self.timer.due(ctx.global_step().saturating_add(1)) {
            ctx.request_summary_outputs();
        }
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if !self.timer.due(v.global_step) {
            return Ok(());
        }
        if !self.started {
            self.writer
                .add_session_start(v.global_step)
                .map_err(hook_error)?;
            if !self.texts.is_empty() {
                let texts: Vec<(&str, &str)> = self
                    .texts
                    .iter()
                    .map(|(t, x)| (t.as_str(), x.as_str()))
                    .collect();
                self.writer
                    .add_texts(v.global_step, &texts)
                    .map_err(hook_error)?;
            }
            self.started = true;
        }
        self.timer.last = Some(v.global_step);
        self.write(ctx, v)
    }

    fn end(&mut self, _ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.writer.flush().map_err(hook_error)
    }
}

/// Measures and writes `global_step/sec` every `every_steps` global steps:
/// TF's `StepCounterHook` (the global steps since the last measurement over
/// the wall time since it; the first step only starts the clock).
pub struct StepCounterHook {
    writer: Option<SummaryWriter>,
    timer: StepTimer,
    started: Option<Instant>,
    rate: Option<f64>,
}

impl StepCounterHook {
    /// Writes to `writer` every `every_steps` global steps (0 counts as 1).
    pub fn new(writer: SummaryWriter, every_steps: u64) -> StepCounterHook {
        StepCounterHook {
            writer: Some(writer),
            ..StepCounterHook::without_writer(every_steps)
        }
    }

    /// Measures only ([`StepCounterHook::steps_per_sec`]), for a log line.
    pub fn without_writer(every_steps: u64) -> StepCounterHook {
        StepCounterHook {
            writer: None,
            timer: StepTimer {
                every: every_steps.max(1),
                last: None,
            },
            started: None,
            rate: None,
        }
    }

    /// The last measurement of global steps per second.
    pub fn steps_per_sec(&self) -> Option<f64> {
        self.rate
    }
}

impl Hook for StepCounterHook {
    fn begin(&mut self, _ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.timer.last = None;
        self.started = None;
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if !self.timer.due(v.global_step) {
            return Ok(());
        }
        let now = Instant::now();
        if let (Some(last), Some(t)) = (self.timer.last, self.started) {
            let secs = now.duration_since(t).as_secs_f64();
            if secs > 0.0 {
                let rate = (v.global_step - last) as f64 / secs;
                self.rate = Some(rate);
                if let Some(w) = &self.writer {
                    w.add_scalars(v.global_step, &[(STEPS_PER_SEC_TAG, rate as f32)])
                        .map_err(hook_error)?;
                }
            }
        }
        self.timer.last = Some(v.global_step);
        self.started = Some(now);
        Ok(())
    }
}

/// Writes an evaluation at `global_step`: `loss` and every metric under its
/// name, the tags the training summaries use (Estimator's
/// `_write_dict_to_summary`). Use a writer of the summary directory's
/// [`EVAL_DIR`].
pub fn write_evaluation(
    writer: &SummaryWriter,
    global_step: i64,
    evaluation: &Evaluation,
) -> Result<(), SummaryError> {
    let mut b = SummaryBatch::new(global_step);
    b.scalars.push(("loss".to_string(), evaluation.loss as f32));
    for (name, value) in &evaluation.metrics {
        b.scalars.push((name.clone(), *value as f32));
    }
    writer.add(b)
}

/// A writer of `summary_dir/eval` (Estimator's evaluation directory).
pub fn create_eval_writer(summary_dir: impl AsRef<Path>) -> Result<SummaryWriter, SummaryError> {
    SummaryWriter::create(summary_dir.as_ref().join(EVAL_DIR))
}

/// What [`EvaluationSummaryHook::reporting`] calls: `(global_step, evaluation)`.
type Report<'d> = Box<dyn FnMut(i64, &Evaluation) + 'd>;

/// An [`EvaluationHook`] whose every result is also written with
/// [`write_evaluation`] when it has a writer (periodic held-out evaluation
/// in TensorBoard) and handed to its `report` callback when it has one
/// (the periodic evaluations, not the one `end` adds: the caller reports the
/// final result with the training one).
pub struct EvaluationSummaryHook<'d> {
    /// The evaluations run so far are in `evaluation.results`.
    pub evaluation: EvaluationHook<'d>,
    writer: Option<SummaryWriter>,
    report: Option<Report<'d>>,
    written: usize,
}

impl<'d> EvaluationSummaryHook<'d> {
    pub fn new(
        evaluation: EvaluationHook<'d>,
        writer: Option<SummaryWriter>,
    ) -> EvaluationSummaryHook<'d> {
        EvaluationSummaryHook {
            evaluation,
            writer,
            report: None,
            written: 0,
        }
    }

    /// Also hands every periodic result to `report` (e.g. to print it).
    pub fn reporting(mut self, report: impl FnMut(i64, &Evaluation) + 'd) -> Self {
        self.report = Some(Box::new(report));
        self
    }

    fn write_new(&mut self, report: bool) -> Result<(), TrainError> {
        while let Some((step, e)) = self.evaluation.results.get(self.written) {
            if let (true, Some(r)) = (report, self.report.as_mut()) {
                r(*step, e);
            }
            if let Some(w) = &self.writer {
                write_evaluation(w, *step, e).map_err(hook_error)?;
            }
            self.written += 1;
        }
        Ok(())
    }

    /// Closes the writer (flushed and fsynced), if there is one.
    pub fn close(&mut self) -> Result<(), SummaryError> {
        match self.writer.take() {
            Some(w) => w.close(),
            None => Ok(()),
        }
    }
}

impl Hook for EvaluationSummaryHook<'_> {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.evaluation.begin(ctx)
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        self.evaluation.after_run(ctx, v)?;
        if self.written < self.evaluation.results.len() {
            self.write_new(true)?;
        }
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.evaluation.end(ctx)?;
        self.write_new(false)?;
        match &self.writer {
            Some(w) => w.flush().map_err(hook_error),
            None => Ok(()),
        }
    }
}
