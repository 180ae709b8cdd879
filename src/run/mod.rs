//! A training run: everything `specc run` does, as a library.
//!
//! A run goes request → prepare → fit → outcome:
//!
//! - a [`Request`]: the spec, a YAML run configuration, `--set`
//!   overrides, the dedicated flags ([`Flags`]), evaluation data;
//! - [`prepare`]: the settings resolved in their precedence (the spec <
//!   the config file < `--set` < flags, [`settings`]), the spec compiled
//!   with every override written into it, the session made, the data
//!   opened ([`data`]) and split into training and held-out rows;
//! - [`Prepared::fit`]: the training batches, the warm start and the
//!   resume from the checkpoint directory ([`restore`]), the hooks a run
//!   installs ([`hooks`]: stopping, NaN detection, divergence warnings,
//!   logged tensors, summaries, periodic evaluation, checkpoints), the
//!   training loop with an [`Observer`] told every step, evaluation and
//!   checkpoint, a failure explained against the spec ([`replay`]: a failed
//!   runtime check, or the first value of the spec a non-finite loss came
//!   from), and the evaluations after training;
//! - an [`Outcome`]: the trained model, the training summary, the
//!   evaluations, the skipped records, the last checkpoint and the timings.
//!
//! [`run`] does all of it for one process; a data-parallel job
//! ([`replicas`], the `mpi` feature) passes its [`Replicas`] to
//! [`prepare`].
//!
//! ```no_run
//! use specc::run::{self, Flags, Quiet, Request};
//!
//! let request = Request {
//!     flags: Flags {
//!         steps: Some(500),
//!         checkpoint_dir: Some("runs/digits".into()),
//!         ..Flags::default()
//!     },
//!     ..Request::new("specs/digits_mlp.spec")
//! };
//! let outcome = run::run(&request, &mut Quiet)?;
//! println!("held-out {:?}", outcome.held_out);
//! # Ok::<(), specc::run::Error>(())
//! ```
//!
//! Owns: the run's stages and its types ([`Request`], [`Prepared`],
//! [`Outcome`], [`Observer`], [`Error`]). The CLI (`specc run`) keeps its
//! flags, its progress bar and log lines (an observer) and its printing.
//!
//! Invariants: a run's numbers depend on its request alone, never on its
//! observer; the same request trains to the same bits, and a resumed run to
//! the same bits as one that never stopped; only the leader of a
//! data-parallel job writes (checkpoints, summaries, `run.yaml`) or
//! reports; nothing reads the data before the spec and the settings are
//! checked and the session fits in memory.

pub mod checkpoints_iterator;
pub mod data;
mod error;
mod fit;
pub mod hooks;
mod observer;
mod outcome;
mod prepare;
pub mod replay;
pub mod replicas;
pub mod restore;
pub mod settings;
mod tensor_log;

use std::path::PathBuf;

pub use error::{Error, TrainingFailure};
pub use observer::{Observer, Quiet};
pub use outcome::{peak_rss_bytes, Outcome, ReplicaInfo};
pub use prepare::{prepare, prepare_given, Given, Prepared};
pub use replicas::{Launch, Replicas};
pub use settings::Flags;

/// What to run (what `specc run`'s command line says).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The spec file.
    pub spec: PathBuf,
    /// A YAML run configuration (`--config`).
    pub config: Option<PathBuf>,
    /// `KEY=VALUE` overrides in order (`--set`), over the config file.
    pub sets: Vec<String>,
    /// The dedicated flags (`--steps`, `--data`, `--checkpoint-dir`, ...),
    /// over everything else.
    pub flags: Flags,
    /// Also evaluate with every parameter replaced by its moving average
    /// (the spec's `ema`).
    pub eval_with_averages: bool,
    /// Evaluate on this file instead of a held-out split (the spec's
    /// `eval_data`; for an image model, a directory, CSV or TFRecord file
    /// of images).
    pub eval_data: Option<PathBuf>,
    /// For a replica: seconds it waits for the others in one step's
    /// exchange before it ends the job (0: forever).
    pub exchange_timeout: f64,
}

impl Request {
    /// A run of the spec at `spec` as it is written.
    pub fn new(spec: impl Into<PathBuf>) -> Request {
        Request {
            spec: spec.into(),
            config: None,
            sets: Vec::new(),
            flags: Flags::default(),
            eval_with_averages: false,
            eval_data: None,
            exchange_timeout: 600.0,
        }
    }
}

/// Runs `request` in this process: [`prepare`], then [`Prepared::fit`].
pub fn run(request: &Request, observer: &mut dyn Observer) -> Result<Outcome, Error> {
    prepare(request, None, observer)?.fit(observer)
}
