//! How specc's errors reach Python: each as the exception class of
//! `specc/_errors.py` that fits it (a bad spec: `specc.SpecError`, with the
//! caret text the CLI prints and the first diagnostic's code and position;
//! bad data or input: `specc.DataError`; a checkpoint: `specc.CheckpointError`;
//! a failed training: `specc.TrainingError`; a setting: `ValueError`).
//!
//! Invariants: every error of a call becomes a Python exception (nothing
//! panics across the boundary); the classes are looked up in
//! `specc._errors` when raised, so the Python package owns them.

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use specc_grammar::{Diagnostic, SourceFile};

/// An exception of `specc._errors` (`class_name`), made with `args`.
fn specc_error<'py, A>(py: Python<'py>, class_name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made = py
        .import("specc._errors")
        .and_then(|m| m.getattr(class_name))
        .and_then(|c| c.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A spec's diagnostics (against the text they point into) as
/// `specc.SpecError`: its text is the caret diagnostics `specc check`
/// prints (without color) and the CLI's `error:` line; `code`, `line`,
/// `column` and `path` are the first diagnostic's; `diagnostics` all of
/// them as `(code, message, line, column)`.
pub fn spec_error(py: Python<'_>, diagnostics: &[Diagnostic], source: &SourceFile) -> PyErr {
    let n = diagnostics.len();
    let text = format!(
        "{}error: specc found {n} error{} in {}",
        specc_grammar::diag::render_all(diagnostics, source, false),
        if n == 1 { "" } else { "s" },
        source.path
    );
    let all: Vec<(String, String, usize, usize)> = diagnostics
        .iter()
        .map(|d| {
            let (line, column) = source.line_col(d.span.start);
            (d.code.as_str().to_string(), d.message.clone(), line, column)
        })
        .collect();
    let (code, _, line, column) =
        all.first()
            .cloned()
            .unwrap_or((String::new(), String::new(), 0, 0));
    specc_error(
        py,
        "SpecError",
        (text, code, line, column, source.path.clone(), all),
    )
}

/// A library call's error (`specc::Error`).
pub fn model_error(py: Python<'_>, e: specc::Error) -> PyErr {
    match e {
        specc::Error::Spec {
            diagnostics,
            rendered,
        } => {
            // The façade rendered them already; its source is gone (a
            // diagnostic past the checks `compile` runs first: no position).
            let n = diagnostics.len();
            let text = format!(
                "{rendered}error: specc found {n} error{}",
                if n == 1 { "" } else { "s" }
            );
            let first = diagnostics.first();
            specc_error(
                py,
                "SpecError",
                (
                    text,
                    first.map_or(String::new(), |d| d.code.as_str().to_string()),
                    None::<usize>,
                    None::<usize>,
                    None::<String>,
                    Vec::<(String, String, usize, usize)>::new(),
                ),
            )
        }
        specc::Error::Input(m) => specc_error(py, "DataError", (m,)),
        specc::Error::Parameter(m) => PyErr::new::<pyo3::exceptions::PyKeyError, _>(m),
        specc::Error::Checkpoint(c) => specc_error(py, "CheckpointError", (c.to_string(),)),
        specc::Error::Session(m) => PyRuntimeError::new_err(m),
        specc::Error::Io(m) => PyOSError::new_err(m),
    }
}

/// A run's error (`specc::run::Error`).
pub fn run_error(py: Python<'_>, e: specc::run::Error) -> PyErr {
    use specc::run::Error;
    match e {
        Error::Spec {
            source,
            diagnostics,
        } => spec_error(py, &diagnostics, &source),
        Error::Settings(m) => PyValueError::new_err(m),
        Error::Data(m) => specc_error(py, "DataError", (m,)),
        Error::Checkpoint(m) => specc_error(py, "CheckpointError", (m,)),
        Error::Io(m) => PyOSError::new_err(m),
        Error::Session(m) | Error::Replicas(m) => PyRuntimeError::new_err(m),
        Error::Training(t) => {
            let mut text = match &t.diagnostic {
                Some(d) => {
                    specc_grammar::diag::render_all(std::slice::from_ref(d), &t.source, false)
                }
                None => String::new(),
            };
            text.push_str(&Error::Training(t).to_string());
            specc_error(py, "TrainingError", (text,))
        }
    }
}
