//! Why a run (or an export, `crate::export`) failed.
//!
//! Owns: [`Error`], one variant per kind of failure — the spec's
//! diagnostics, the run's settings, the data, a checkpoint, files, the
//! compiled program's session, training itself, the replicas of a
//! data-parallel job — and [`TrainingFailure`], a failed training with what
//! it means for the spec.
//!
//! Invariants: every variant but [`Error::Spec`] carries the message
//! `specc run` prints after `error: ` (its [`Display`](std::fmt::Display));
//! a spec's diagnostics are rendered by whoever shows them, against the
//! source they point into (the spec as written, or with the run's
//! overrides written into it). The CLI exits with 2 for [`Error::Spec`] and
//! 1 for the others.

use std::fmt;

use specc_grammar::{Diagnostic, SourceFile};
use specc_runtime::train::TrainError;

/// What went wrong in a run.
#[derive(Debug)]
pub enum Error {
    /// The spec has errors: `diagnostics`, to render against `source` (the
    /// spec as written, or with the run's overrides written into it; a
    /// diagnostic in an overridden value says where the value came from).
    Spec {
        /// The text the diagnostics point into.
        source: SourceFile,
        /// The errors, in order.
        diagnostics: Vec<Diagnostic>,
    },
    /// A run setting: a config file, a `--set`, a flag, or a setting the
    /// spec cannot take (`--eval-with-averages` without `ema`, nothing to
    /// train).
    Settings(String),
    /// The data: a file that cannot be read, a bad row or cell, a path that
    /// does not fit the source.
    Data(String),
    /// A checkpoint: resuming (a changed spec, a variable of another
    /// shape), warm starting, or the run directory's record.
    Checkpoint(String),
    /// A file the run writes or reads besides the data and checkpoints (the
    /// spec, event files).
    Io(String),
    /// The compiled program: its session (memory) or a function it lacks.
    Session(String),
    /// Training stopped (see [`TrainingFailure`]).
    Training(Box<TrainingFailure>),
    /// The replicas of a data-parallel job: MPI, or replicas that run
    /// different specs, settings or data, or end with different models.
    Replicas(String),
}

/// A training run that stopped, and what it means for the spec.
#[derive(Debug)]
pub struct TrainingFailure {
    /// The runtime's error.
    pub error: TrainError,
    /// The spec the run compiled (with its overrides), which `diagnostic`
    /// points into.
    pub source: SourceFile,
    /// A failed runtime check (`check_numerics`, `assert_*`) with a caret
    /// under it and the step; or, for a non-finite loss, the first value of
    /// the spec that became non-finite in that step (`run::replay`).
    pub diagnostic: Option<Diagnostic>,
    /// For a non-finite loss whose origin the replay could not name: why.
    pub origin_unknown: Option<String>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spec {
                source,
                diagnostics,
            } => {
                let n = diagnostics.len();
                write!(
                    f,
                    "specc found {n} error{} in {}",
                    if n == 1 { "" } else { "s" },
                    source.path
                )
            }
            Error::Settings(m)
            | Error::Data(m)
            | Error::Checkpoint(m)
            | Error::Io(m)
            | Error::Session(m)
            | Error::Replicas(m) => f.write_str(m),
            Error::Training(t) => match &t.error {
                TrainError::Assertion { step, .. } => write!(
                    f,
                    "training stopped at step {step}: a runtime check of {} failed",
                    t.source.path
                ),
                e => write!(f, "{e}"),
            },
        }
    }
}

impl std::error::Error for Error {}
