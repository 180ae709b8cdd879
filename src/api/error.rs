//! The library's error type.
//!
//! Owns: [`Error`], one variant per kind of failure, each carrying a
//! message that names what was wrong (the input, the parameter, the file).

use std::fmt;

/// What went wrong in a [`Model`](crate::Model) call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The spec has errors: the diagnostics as `specc check` prints them
    /// (file:line:column and a caret under the spec).
    Spec(String),
    /// An input array: unknown or missing, a wrong shape, a value that is not
    /// a valid id, more rows than a step takes.
    Input(String),
    /// A parameter: an unknown name or a value of the wrong shape.
    Parameter(String),
    /// A checkpoint could not be read or written.
    Checkpoint(String),
    /// The compiled code could not run (memory, a function the spec does not
    /// have, such as `predict` without an `outputs` item).
    Session(String),
    /// The spec file could not be read.
    Io(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, m) = match self {
            Error::Spec(m) => ("spec", m),
            Error::Input(m) => ("input", m),
            Error::Parameter(m) => ("parameter", m),
            Error::Checkpoint(m) => ("checkpoint", m),
            Error::Session(m) => ("session", m),
            Error::Io(m) => ("io", m),
        };
        write!(f, "{what}: {}", m.trim_end())
    }
}

impl std::error::Error for Error {}
