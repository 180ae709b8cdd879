//! `specc._specc`: the extension module under specc's Python package (the
//! pure-Python `specc/` package wraps it; users import `specc`).
//!
//! Owns: `compile` (a spec file or text, with `--set`-style overrides,
//! into a `model::Model`), the module's contents, and the conversions at
//! the boundary (`errors`: specc's errors as Python exceptions; `model`:
//! numpy arrays in and out, the GIL released while compiled code runs).
//!
//! Invariants: nothing panics across the boundary (every error is a Python
//! exception); the numbers are the library's (`specc::Model`,
//! `specc::run`), bit for bit: this crate converts, it does not compute.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use specc::run::settings::{self, ConfigError, Flags};
use specc_grammar::SourceFile;

mod errors;
mod export;
mod model;
mod observe;

/// Compiles a spec into a `Model`: the file at `path`, or `text` (named
/// `name` in diagnostics, its relative paths from the current directory),
/// with the `--set KEY=VALUE` overrides `sets` written into it as `specc
/// run --set` writes them (the spec is checked as written, then with them).
#[pyfunction]
#[pyo3(signature = (path=None, text=None, name="<string>".to_string(), sets=Vec::new()))]
fn compile(
    py: Python<'_>,
    path: Option<PathBuf>,
    text: Option<String>,
    name: String,
    sets: Vec<String>,
) -> PyResult<model::Model> {
    let (source, spec_path, spec_text) = match (path, text) {
        (Some(p), None) => {
            let src = specc::spec::read_spec(&p).map_err(PyOSError::new_err)?;
            (src, p, None)
        }
        (None, Some(t)) => (
            SourceFile::new(name.clone(), t.clone()),
            PathBuf::from(name),
            Some(t),
        ),
        _ => {
            return Err(PyValueError::new_err(
                "compile takes a spec path or a spec text, one of them",
            ))
        }
    };
    let resolved = settings::resolve(&source, &spec_path, None, &sets, &Flags::default()).map_err(
        |e| match e {
            ConfigError::Spec {
                source,
                diagnostics,
            } => errors::spec_error(py, &diagnostics, &source),
            ConfigError::Other(m) => PyValueError::new_err(m),
        },
    )?;
    let compiled = py
        .detach(|| {
            specc::Model::from_source(&resolved.source.path, &resolved.source.text)
                .map(model::Owned)
        })
        .map_err(|e| errors::model_error(py, e))?;
    Ok(model::Model::new(compiled, spec_path, spec_text, sets))
}

/// The extension module.
#[pymodule]
fn _specc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<model::Model>()?;
    m.add_function(wrap_pyfunction!(export::export_tflite, m)?)?;
    m.add_function(wrap_pyfunction!(export::export_object, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
