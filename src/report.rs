//! Training failures rendered against the spec, like compile diagnostics.
//!
//! Owns: turning a [`TrainError`] into what the user reads: a failed runtime
//! check (`check_numerics`, `assert_*`) as a diagnostic with the line and a
//! caret under the check and the step it failed in; a non-finite loss with
//! the first value of the spec that became NaN or infinite in that step
//! (found by replaying the run, [`specc_compiler::debug::find_nan_origin`]),
//! then the loss's own message. Other errors pass through unchanged.
//!
//! Invariant: the last line is always the one-line `error: ...` of the
//! failure (the command's exit code is 1, a training failure).

use std::io::IsTerminal;
use std::path::Path;

use specc_compiler::debug::{self, find_nan_origin};
use specc_compiler::driver::Options;
use specc_grammar::ast::Span;
use specc_grammar::{Code, Diagnostic, SourceFile};
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::session::Session;
use specc_runtime::source::BatchSource;
use specc_runtime::train::TrainError;

use crate::Failure;

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

fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The failure of a training run, reported: a failed check is rendered with
/// its caret; for a non-finite loss, `replay` gives a new source of the
/// run's batches from its first step, and the value that became non-finite
/// first is rendered before the loss's message.
pub fn train_failure<'a>(
    e: TrainError,
    src: &SourceFile,
    resumed_from: Option<&Path>,
    replay: impl FnOnce() -> Result<Box<dyn BatchSource + 'a>, String>,
) -> Failure {
    if let Some(d) = assertion_diagnostic(&e) {
        eprint!("{}", d.render(src, color()));
        let TrainError::Assertion { step, .. } = e else {
            return Failure::from(e);
        };
        return Failure::Other(format!(
            "training stopped at step {step}: a runtime check of {} failed",
            src.path
        ));
    }
    if let TrainError::NanLoss { step, .. } = e {
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
                .then_some(&mut restore as debug::Restore<'_>);
            find_nan_origin(src, &Options::default(), step, &mut *source, restore)
                .map_err(|e| e.to_string())
        });
        match found {
            Ok(origin) => eprint!("{}", origin.diagnostic().render(src, color())),
            Err(why) => eprintln!("note: cannot tell where the non-finite value came from: {why}"),
        }
    }
    Failure::from(e)
}
