//! `specc export SPEC --checkpoint DIR --format object -o model.o`: a trained
//! model as a relocatable object file with its C header.
//!
//! Owns: the command's plumbing — compiling the spec, restoring the
//! checkpoint into a session (each averaged parameter from its moving
//! average with `--use-averages`, `specc::averages`), [`specc_compiler::export::aot::export_object`], and
//! writing `model.o` and its header (`-o` with the extension `.h`), each to a
//! temporary file renamed into place, so a failure leaves neither half-written.
//! Invariant: every error names the file or the flag it is about.

use std::io::Write;
use std::path::{Path, PathBuf};

use specc_compiler::driver::{compile, Functions};
use specc_compiler::export::aot::{export_object, ExportOptions};
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::io::atomic::write_atomic;

use super::report;
use crate::Failure;
use specc::spec::read_spec;

pub struct ObjectOptions<'a> {
    /// The trained variables; `None`: a dry run (the initial values,
    /// nothing written) that says whether the export would be refused.
    pub checkpoint: Option<&'a Path>,
    pub output: &'a Path,
    /// The spec's bindings to export (`--fetch`).
    pub fetch: &'a [String],
    /// The C function's name.
    pub symbol: &'a str,
    /// `--use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
}

/// The header written next to the object: `-o`'s path with the extension `.h`.
pub fn header_path(object: &Path) -> PathBuf {
    object.with_extension("h")
}

pub fn run(spec: &Path, opts: &ObjectOptions) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let which = Functions {
        step: false,
        eval: true,
        grad: false,
        check: false,
        predict: true,
    };
    let program = compile(&src, which).map_err(|d| report(&d, &src))?;
    let serving = specc::averages::Serving::resolve(&program.model, opts.use_averages, spec)?;
    let mut session = program.session()?;
    if let Some(checkpoint) = opts.checkpoint {
        let prefix = specc::run::restore::checkpoint_prefix(checkpoint)?;
        let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
        if serving.uses_averages() {
            serving.restore(&mut session, &reader)?;
        } else {
            session.restore(&reader).map_err(|e| e.to_string())?;
        }
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
            outputs: opts.fetch,
            symbol: opts.symbol,
            spec_name: &spec_name,
        },
    )
    .map_err(|e| format!("{}: {e}", spec.display()))?;
    if opts.checkpoint.is_none() {
        return Ok(());
    }
    let header = header_path(opts.output);
    if header == opts.output {
        return Err(Failure::Other(format!(
            "-o {}: the object's name must not end in .h (the header is written there)",
            opts.output.display()
        )));
    }
    write_atomically(opts.output, &exported.object)?;
    write_atomically(&header, exported.header.as_bytes())?;
    let inputs: Vec<String> = exported.inputs.iter().map(|f| f.name.clone()).collect();
    super::export::write_features(&program.model, spec, &inputs, opts.output, None)?;
    let raw = match &exported.raw_keys {
        Ok(keys) => format!(
            " and {}_raw(cells[rows][{}], out[rows][{}], rows)",
            opts.symbol,
            keys.len(),
            exported.out_width
        ),
        Err(why) => format!(" (no raw-features entry point: {why})"),
    };
    println!(
        "wrote {} ({} bytes) and {}: {}(in[rows][{}], out[rows][{}], rows){raw}, {} rows per chunk{}",
        opts.output.display(),
        exported.object.len(),
        header.display(),
        opts.symbol,
        exported.in_width,
        exported.out_width,
        exported.max_batch,
        serving.note()
    );
    Ok(())
}

/// Writes `bytes` to `path` atomically (the runtime's `io::atomic`).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    write_atomic(path, |f| {
        f.write_all(bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    })
    .map_err(Failure::Other)
}
