//! One module per subcommand, and how a command reports a failure:
//! [`report`] (a spec's diagnostics) and [`From<specc::run::Error>`] for
//! [`Failure`].
pub mod bench;
pub mod bench_adam;
pub mod check;
pub mod compile;
pub mod convert;
pub mod evaluate;
pub mod explain;
pub mod export;
pub mod export_object;
pub mod export_on_save;
pub mod gradcheck;
pub mod inspect;
pub mod inspect_tflite;
pub mod inspect_tfrecord;
pub mod library;
pub mod predict;
pub mod predict_raw;
pub mod run;

use std::io::IsTerminal;

use specc::run::Error;
use specc_grammar::{Diagnostic, SourceFile};
use specc_runtime::train::TrainError;

use crate::Failure;

/// Whether stderr gets color: a terminal, unless NO_COLOR is set.
fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Prints diagnostics to stderr (in color on a terminal, unless NO_COLOR is set).
pub fn report(diags: &[Diagnostic], src: &SourceFile) -> Failure {
    eprint!("{}", specc_grammar::diag::render_all(diags, src, color()));
    let n = diags.len();
    eprintln!(
        "error: specc found {n} error{} in {}",
        if n == 1 { "" } else { "s" },
        src.path
    );
    Failure::Spec
}

/// A run's failure as a command's: a spec's diagnostics are printed (exit
/// 2); a training failure's diagnostic (a failed check, the origin of a
/// non-finite loss) is printed before its message (exit 1).
impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Spec {
                source,
                diagnostics,
            } => report(&diagnostics, &source),
            Error::Training(t) => {
                if let Some(d) = &t.diagnostic {
                    eprint!("{}", d.render(&t.source, color()));
                }
                if let Some(why) = &t.origin_unknown {
                    eprintln!("note: cannot tell where the non-finite value came from: {why}");
                }
                Failure::Other(Error::Training(t).to_string())
            }
            other => Failure::Other(other.to_string()),
        }
    }
}

impl From<specc_runtime::checkpoint::CheckpointError> for Failure {
    fn from(e: specc_runtime::checkpoint::CheckpointError) -> Failure {
        Failure::Other(e.to_string())
    }
}

impl From<TrainError> for Failure {
    fn from(e: TrainError) -> Failure {
        Failure::Other(e.to_string())
    }
}
