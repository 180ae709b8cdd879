//! A trained model as a relocatable object file with its C header (`specc
//! export --format object`, `Model.export_object` in Python).
//!
//! Owns: compiling the spec's inference functions, putting the trained
//! values into their session ([`super::Weights`]: each averaged parameter
//! from its moving average with the averages, `crate::averages`),
//! [`specc_compiler::export::aot::export_object`], and writing `model.o`
//! and its header (the object's path with the extension `.h`) and
//! `<file>.features.json`, each to a temporary file renamed into place, so
//! a failure leaves neither half-written.
//!
//! Invariant: every error names the file or the option it is about.

use std::io::Write;
use std::path::{Path, PathBuf};

use specc_compiler::driver::{compile, Functions};
use specc_compiler::export::aot::{export_object, ExportOptions};
use specc_grammar::SourceFile;
use specc_runtime::io::atomic::write_atomic;

use super::{cannot_write, features::write_features, Values, Weights};
use crate::averages::Serving;
use crate::run::Error;

/// What to export and how.
#[derive(Clone, Copy, Debug)]
pub struct ObjectOptions<'a> {
    /// The spec's bindings to export (`--fetch`; empty: the spec's
    /// `outputs` item).
    pub fetch: &'a [String],
    /// The C function's name.
    pub symbol: &'a str,
    /// Whether to use the moving averages (`None`: the spec's `ema ...,
    /// use_averages`).
    pub use_averages: Option<bool>,
}

impl Default for ObjectOptions<'_> {
    fn default() -> Self {
        ObjectOptions {
            fetch: &[],
            symbol: "specc_predict",
            use_averages: None,
        }
    }
}

/// What [`object()`] wrote.
#[derive(Clone, Debug)]
pub struct ObjectExport {
    /// The object file.
    pub path: PathBuf,
    /// Its C header.
    pub header: PathBuf,
    /// Its `<file>.features.json`.
    pub features: PathBuf,
    /// The object's size.
    pub bytes: usize,
    /// The C function's name.
    pub symbol: String,
    /// Floats per row of the function's `in` array.
    pub in_width: usize,
    /// Floats per row of its `out` array.
    pub out_width: usize,
    /// Rows per call of the compiled function (larger calls are chunked).
    pub max_batch: usize,
    /// The raw keys `SYMBOL_raw` takes, one cell each per row, in order;
    /// or why the object has no raw entry point.
    pub raw_keys: Result<Vec<String>, String>,
    /// Where the parameters came from (the moving averages or not).
    pub serving: Serving,
}

/// The header written next to the object: its path with the extension `.h`.
pub fn header_path(object: &Path) -> PathBuf {
    object.with_extension("h")
}

/// The model of `src` with `weights`' values, written to `output`, its
/// header and `<output>.features.json`.
pub fn object(
    src: &SourceFile,
    weights: Weights<'_>,
    output: &Path,
    o: &ObjectOptions<'_>,
) -> Result<ObjectExport, Error> {
    let written = export(src, Some(weights), output, o)?;
    written.ok_or_else(|| Error::Session("the export wrote nothing".into()))
}

/// Whether [`object()`] would refuse `src` with these options, before
/// anything is trained: the initial values, nothing written.
pub fn check(src: &SourceFile, o: &ObjectOptions<'_>) -> Result<(), Error> {
    export(src, None, Path::new("model.o"), o).map(|_| ())
}

/// The export; `weights` `None`: a dry run.
fn export(
    src: &SourceFile,
    weights: Option<Weights<'_>>,
    output: &Path,
    o: &ObjectOptions<'_>,
) -> Result<Option<ObjectExport>, Error> {
    let spec = Path::new(&src.path);
    let which = Functions {
        step: false,
        eval: true,
        grad: false,
        check: false,
        predict: true,
    };
    let program = compile(src, which).map_err(|diagnostics| Error::Spec {
        source: src.clone(),
        diagnostics,
    })?;
    let serving =
        Serving::resolve(&program.model, o.use_averages, spec).map_err(Error::Settings)?;
    let mut session = program.session().map_err(Error::Session)?;
    let values = weights.map(|w| Values::open(w, &serving)).transpose()?;
    if let Some(values) = &values {
        values.restore(&mut session, &serving)?;
    }
    let spec_name = spec.file_name().map_or_else(
        || spec.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let exported = export_object(
        &program.model,
        &program.placement,
        &session,
        &ExportOptions {
            outputs: o.fetch,
            symbol: o.symbol,
            spec_name: &spec_name,
        },
    )
    .map_err(|e| Error::Settings(format!("{}: {e}", spec.display())))?;
    if values.is_none() {
        return Ok(None);
    }
    let header = header_path(output);
    if header == output {
        return Err(Error::Settings(format!(
            "-o {}: the object's name must not end in .h (the header is written there)",
            output.display()
        )));
    }
    write_atomically(output, &exported.object)?;
    write_atomically(&header, exported.header.as_bytes())?;
    let inputs: Vec<String> = exported.inputs.iter().map(|f| f.name.clone()).collect();
    let features = write_features(&program.model, spec, &inputs, output, None)?;
    Ok(Some(ObjectExport {
        path: output.to_path_buf(),
        header,
        features,
        bytes: exported.object.len(),
        symbol: o.symbol.to_string(),
        in_width: exported.in_width,
        out_width: exported.out_width,
        max_batch: exported.max_batch,
        raw_keys: exported.raw_keys,
        serving,
    }))
}

/// Writes `bytes` to `path` atomically (the runtime's `io::atomic`).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_atomic(path, |f| {
        f.write_all(bytes).map_err(|e| cannot_write(path, e))
    })
    .map_err(Error::Io)
}
