//! The library's error type.
//!
//! Owns: [`Error`], one variant per kind of failure, each carrying a
//! message that names what was wrong (the input, the parameter, the file);
//! a spec's errors keep their diagnostics (each with its
//! [`Code`](specc_grammar::Code)), a checkpoint's its
//! [`CheckpointError`] (whose kind tells a missing checkpoint from a
//! damaged or mismatched one).

use std::fmt;

use specc_grammar::Diagnostic;
use specc_runtime::checkpoint::CheckpointError;

/// What went wrong in a [`Model`](crate::Model) call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The spec has errors: its diagnostics (each with a
    /// [`Code`](specc_grammar::Code) to branch on), and the text `specc
    /// check` prints for them (file:line:column and a caret under the spec).
    Spec {
        /// The diagnostics, in source order.
        diagnostics: Vec<Diagnostic>,
        /// The diagnostics rendered without color.
        rendered: String,
    },
    /// An input array: unknown or missing, a wrong shape, a value that is not
    /// a valid id, more rows than a step takes.
    Input(String),
    /// A parameter: an unknown name or a value of the wrong shape.
    Parameter(String),
    /// A checkpoint could not be read or written; its
    /// [`kind`](CheckpointError::kind) says whether it is not there, damaged,
    /// or does not fit the model.
    Checkpoint(CheckpointError),
    /// The compiled code could not run (memory, a function the spec does not
    /// have, such as `predict` without an `outputs` item).
    Session(String),
    /// The spec file could not be read.
    Io(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, m) = match self {
            Error::Spec { rendered, .. } => ("spec", rendered.clone()),
            Error::Input(m) => ("input", m.clone()),
            Error::Parameter(m) => ("parameter", m.clone()),
            Error::Checkpoint(e) => ("checkpoint", e.to_string()),
            Error::Session(m) => ("session", m.clone()),
            Error::Io(m) => ("io", m.clone()),
        };
        write!(f, "{what}: {}", m.trim_end())
    }
}

impl std::error::Error for Error {}
