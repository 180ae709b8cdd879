//! Training failures against the spec, like compile diagnostics, and the
//! replay that finds where a non-finite loss came from.
//!
//! Owns: [`explain`], turning a [`TrainError`] into a run [`Error`]: a
//! failed runtime check (`check_numerics`, `assert_*`) as a diagnostic with
//! a caret under the check and the step it failed in
//! ([`assertion_diagnostic`]); a non-finite loss with the first value of the
//! spec that became NaN or infinite in that step, found by
//! [`find_nan_origin`]. Other errors pass through unchanged.
//!
//! How the replay works: specc's training is reproducible to the bit, so
//! [`find_nan_origin`] compiles the spec again with the `check` function
//! beside the `step` (the compiler's `debug`: compiling takes milliseconds;
//! the step's code is the same), starts a fresh session from the same
//! initial variables (the initializers, or what `restore` writes, e.g. a
//! checkpoint), replays the run's batches up to the step before the failing
//! one with the normal step, and runs the failing step's forward pass with
//! checking on. Nothing of this runs while training: the happy path pays
//! nothing.
//!
//! Invariants: a replay that does not reproduce the failure (a finite loss
//! at the failing step, or a non-finite one earlier) is an error, never a
//! wrong answer; the error's message is the failure's own one-line message
//! (the CLI prints it last, and exits with 1).

use std::path::Path;

use specc_compiler::debug::{first_non_finite, NanOrigin, CHECK_FUNCTION};
use specc_compiler::driver::{compile_with, Functions, Options};
use specc_grammar::ast::Span;
use specc_grammar::{Code, Diagnostic, SourceFile};
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::session::Session;
use specc_runtime::source::BatchSource;
use specc_runtime::train::{TrainError, Trainer};

use super::error::{Error, TrainingFailure};

/// The diagnostic of a failed runtime check (`None` for other errors).
pub fn assertion_diagnostic(e: &TrainError) -> Option<Diagnostic> {
    let TrainError::Assertion {
        step,
        global_step,
        assertion,
        value,
    } = e
    else {
        return None;
    };
    let (start, end) = assertion.span;
    let mut what = assertion.describe(*value);
    if !assertion.message.is_empty() {
        what = format!("{} : {what}", assertion.message);
    }
    let d = Diagnostic::new(
        Code::AssertionFailed,
        Span::new(start, end),
        format!(
            "`{}` failed at step {step} (global_step {global_step}): {what}",
            assertion.kind
        ),
    )
    .with_label(format!("failed in step {step}"));
    Some(d)
}

/// The failure of a training run, explained: a failed check gets its
/// diagnostic; for a non-finite loss, `replay` gives a new source of the
/// run's batches from its first step (or from `resumed_from`, the
/// checkpoint it resumed from), and the value that became non-finite first
/// is the diagnostic. A data error is an [`Error::Data`].
pub fn explain<'a>(
    e: TrainError,
    src: &SourceFile,
    resumed_from: Option<&Path>,
    replay: impl FnOnce() -> Result<Box<dyn BatchSource + 'a>, String>,
) -> Error {
    let mut failure = TrainingFailure {
        diagnostic: assertion_diagnostic(&e),
        error: e,
        source: src.clone(),
        origin_unknown: None,
    };
    if let TrainError::Data(d) = &failure.error {
        return Error::Data(d.to_string());
    }
    if let TrainError::NanLoss { step, .. } = failure.error {
        // A resumed run replays from its checkpoint: the replay's source
        // starts at the checkpoint's position, its session at its variables.
        let mut restore = |s: &mut Session| -> Result<(), String> {
            let Some(prefix) = resumed_from else {
                return Ok(());
            };
            let reader = BundleReader::open(prefix).map_err(|e| e.to_string())?;
            s.restore(&reader).map_err(|e| e.to_string())
        };
        let found = replay().and_then(|mut source| {
            let restore = resumed_from
                .is_some()
                .then_some(&mut restore as Restore<'_>);
            find_nan_origin(src, &Options::default(), step, &mut *source, restore)
                .map_err(|e| e.to_string())
        });
        match found {
            Ok(origin) => failure.diagnostic = Some(origin.diagnostic()),
            Err(why) => failure.origin_unknown = Some(why),
        }
    }
    Error::Training(Box::new(failure))
}

/// Why the search could not name an origin.
#[derive(Debug)]
pub enum SearchError {
    /// The spec does not compile (it compiled for training, so this is an
    /// internal error).
    Compile(Vec<Diagnostic>),
    /// The session, the source or the replay failed (in words).
    Replay(String),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Compile(d) => {
                let first = d.first().map(|d| d.message.as_str()).unwrap_or("");
                write!(f, "cannot compile the check function: {first}")
            }
            SearchError::Replay(m) => write!(f, "{m}"),
        }
    }
}

/// Sets a fresh session's variables (and global step) to where a run
/// started, e.g. from a checkpoint.
pub type Restore<'a> = &'a mut dyn FnMut(&mut Session) -> Result<(), String>;

/// Finds the first value of the spec (in evaluation order) that is not finite
/// in step `failed_step` (1-based, in the run) of a run whose loss became
/// NaN or infinite there (`TrainError::NanLoss`'s `step`).
///
/// - `restore` sets the variables (and the global step) to a state the run
///   went through, e.g. its last checkpoint; `None`: the initializers, the
///   start of a fresh run. `failed_step` counts from that state (the failing
///   global step minus the restored one).
/// - `source` must give the run's batches again from that state on (a new
///   source built as the run built its own: same rows, batch, order,
///   advanced to the restored step).
/// - `options` should be the run's (the thread count does not change results).
///
/// Costs one compile and `failed_step - 1` steps; nothing while training.
pub fn find_nan_origin(
    src: &SourceFile,
    options: &Options,
    failed_step: u64,
    source: &mut dyn BatchSource,
    restore: Option<Restore<'_>>,
) -> Result<NanOrigin, SearchError> {
    if failed_step == 0 {
        return Err(SearchError::Replay(
            "steps are counted from 1: there is no step 0".into(),
        ));
    }
    let which = Functions {
        step: true,
        eval: false,
        grad: false,
        check: true,
        predict: false,
    };
    let program = compile_with(src, which, options).map_err(SearchError::Compile)?;
    let mut session = program.session().map_err(SearchError::Replay)?;
    if let Some(r) = restore {
        r(&mut session).map_err(SearchError::Replay)?;
    }
    let replay = |m: String| SearchError::Replay(format!("replaying the run: {m}"));
    let mut trainer = Trainer::new(&session).map_err(replay)?;
    for k in 1..failed_step {
        let values = match trainer.step(&mut session, source) {
            Ok(Some(v)) => v,
            Ok(None) => {
                return Err(replay(format!(
                    "the batches ran out after {} steps, before step {failed_step}",
                    k - 1
                )))
            }
            Err(e) => return Err(replay(e.to_string())),
        };
        if !values.loss.is_finite() {
            return Err(replay(format!(
                "the loss is already {} at step {k}, not at step {failed_step}: the replay does not reproduce the run",
                values.loss
            )));
        }
    }
    let global_step = session.global_step;
    let check = session
        .function_index(CHECK_FUNCTION)
        .ok_or_else(|| replay("no check function".into()))?;
    let rows = session.fill(source).map_err(|e| replay(e.to_string()))?;
    if rows == 0 {
        return Err(replay(format!(
            "the batches ran out before step {failed_step}"
        )));
    }
    session.call(check, rows).map_err(replay)?;
    first_non_finite(
        &program.model,
        &session,
        check,
        rows,
        failed_step,
        global_step,
    )
    .ok_or_else(|| {
        replay(format!(
            "every value of the spec is finite in the replay of step {failed_step}: the replay does not reproduce the run"
        ))
    })
}
