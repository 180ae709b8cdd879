//! The run's configuration: what a run saves, logs and evaluates besides
//! training, typed and defaulted.
//!
//! Owns: [`RunConfig`] and its parts ([`CheckpointConfig`],
//! [`SummaryConfig`], [`LoggingConfig`], [`EvaluateConfig`], [`WarmStart`]),
//! TF's defaults for them (`MonitoredTrainingSession`: checkpoints every 600
//! seconds when only a directory is given, `max_to_keep = 5`, summaries every
//! 100 steps into the checkpoint directory; `LoggingTensorHook` every 100
//! steps), the YAML reader they are configured with ([`yaml`]), the run
//! directory's record ([`record`], `run.yaml`) and the resolution of
//! `init_from_checkpoint`'s assignment map ([`warm_start`]) and of
//! `warm_start`'s settings ([`warm_start_settings`]).
//!
//! Where the values come from (the spec's items, a YAML file, `--set`, flags)
//! is `specc::run::settings::resolve`; this module only holds the result.
//!
//! Invariants: a resolved config is complete (every default applied, every
//! path usable from the current directory); a period of 0 never appears
//! (`Some(0)` is normalized to `None`, "never"); seconds are finite and
//! positive.

pub mod record;
pub mod warm_start;
pub mod warm_start_settings;
pub mod yaml;

use std::path::PathBuf;

/// TF's `MonitoredTrainingSession` default `save_checkpoint_secs`.
pub const DEFAULT_CHECKPOINT_SECS: f64 = 600.0;
/// TF's `Saver` default `max_to_keep`.
pub const DEFAULT_KEEP: u32 = 5;
/// TF's `MonitoredTrainingSession` default `save_summaries_steps`.
pub const DEFAULT_SUMMARY_STEPS: u64 = 100;
/// TF's `MonitoredTrainingSession` default `log_step_count_steps`, used for
/// the log line of a run nobody watches.
pub const DEFAULT_LOG_STEPS: u64 = 100;

/// `checkpoint { .. }`: TF's `CheckpointSaverHook` and `Saver`.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointConfig {
    /// Where checkpoints go; `None`: the run saves none.
    pub dir: Option<PathBuf>,
    /// Save every N steps (`save_steps`); `None`: not by steps.
    pub every_steps: Option<u64>,
    /// Save every S seconds (`save_secs`); `None`: not by time. With a
    /// directory and neither period given, 600 seconds (TF's default).
    pub every_secs: Option<f64>,
    /// How many recent checkpoints to keep (`max_to_keep`); 0 keeps all.
    pub keep: u32,
    /// Also keep one checkpoint every this many hours
    /// (`keep_checkpoint_every_n_hours`); `None`: none kept that way.
    pub keep_every_n_hours: Option<f64>,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            dir: None,
            every_steps: None,
            every_secs: None,
            keep: DEFAULT_KEEP,
            keep_every_n_hours: None,
        }
    }
}

/// `summaries { .. }`: TF's `SummarySaverHook` (event files for TensorBoard).
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryConfig {
    /// Where event files go (held-out evaluation under `DIR/eval`); the
    /// checkpoint directory when not given; `None`: the run writes none.
    pub dir: Option<PathBuf>,
    /// Write every N steps (`save_summaries_steps`, default 100); `None`: never.
    pub every_steps: Option<u64>,
    /// Histograms of the parameters too.
    pub histograms: bool,
    /// Histograms of every trainable parameter's gradient too
    /// (`gradients/<name>`, as `optimize_loss(summaries=["gradients"])`).
    pub gradient_histograms: bool,
    /// Histograms of these tensors of the step (bindings, features) by
    /// their names: activations.
    pub histogram_tensors: Vec<String>,
    /// Image summaries of these batches of images `[B, H, W, C]` by name
    /// (the input after augmentation): TF's `summary.image`.
    pub image_tensors: Vec<String>,
    /// Images per write of each (`max_outputs`, TF's default 3).
    pub max_images: u32,
}

impl Default for SummaryConfig {
    fn default() -> Self {
        SummaryConfig {
            dir: None,
            every_steps: Some(DEFAULT_SUMMARY_STEPS),
            histograms: false,
            gradient_histograms: false,
            histogram_tensors: Vec::new(),
            image_tensors: Vec::new(),
            max_images: 3,
        }
    }
}

/// `logging { .. }`: TF's `LoggingTensorHook` (and `StepCounterHook`'s rate).
#[derive(Clone, Debug, PartialEq)]
pub struct LoggingConfig {
    /// Log every N steps (`every_n_iter`); 100 when neither period is given.
    pub every_steps: Option<u64>,
    /// Log every S seconds (`every_n_secs`).
    pub every_secs: Option<f64>,
    /// The tensors to print, by the spec's names (bindings, features,
    /// labels, parameters, metrics, `global_step`, `learning_rate`); empty:
    /// the step, the loss, steps/s and the learning rate.
    pub tensors: Vec<String>,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig {
            every_steps: Some(DEFAULT_LOG_STEPS),
            every_secs: None,
            tensors: Vec::new(),
        }
    }
}

/// `evaluate { .. }`: periodic evaluation on the held-out rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluateConfig {
    /// Evaluate every N steps; `None`: only at the end.
    pub every_steps: Option<u64>,
}

/// `init_from_checkpoint(PATH, MAP)` or `warm_start(PATH, ..)`: initial
/// values of variables from a checkpoint (TF's
/// `tf.compat.v1.train.init_from_checkpoint`, `tf.compat.v1.train.warm_start`).
#[derive(Clone, Debug, PartialEq)]
pub struct WarmStart {
    /// The checkpoint: a prefix, or a directory (its latest checkpoint).
    pub path: PathBuf,
    /// The assignment map in the spec's order: (checkpoint name or scope,
    /// parameter name or scope). [`warm_start::resolve`] turns it into pairs.
    pub assignment_map: Vec<(String, String)>,
    /// `warm_start(..)`'s settings (then `assignment_map` is empty); `None`
    /// for `init_from_checkpoint`.
    pub settings: Option<warm_start_settings::WarmStartSettings>,
}

/// Everything about a run besides the compiled model, resolved: the spec's
/// items, then the YAML config, then `--set`, then dedicated flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunConfig {
    /// The data file when it does not come from the spec (`data:` in the
    /// config, `--set data=`, `--data`), usable from the current directory.
    pub data: Option<PathBuf>,
    pub checkpoint: CheckpointConfig,
    pub summaries: SummaryConfig,
    pub logging: LoggingConfig,
    pub evaluate: EvaluateConfig,
    pub warm_start: Option<WarmStart>,
    /// Every override applied, as `key = value` in the order of precedence
    /// they were applied (for `run.yaml` and messages).
    pub overrides: Vec<(String, String)>,
}
