//! `specc export SPEC --checkpoint DIR --format object -o model.o`: a trained
//! model as a relocatable object file with its C header.
//!
//! Owns: the command's side of the export — reading the spec, and the line
//! it prints about what was written (the C functions, their row widths).
//! The export itself is the library's (`specc::export::object`), which the
//! Python package calls too.

use std::path::Path;

use specc::export::{self, ObjectOptions as Options, Weights};
use specc::spec::read_spec;

use crate::Failure;

/// `specc export --format object`'s options.
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

pub fn run(spec: &Path, opts: &ObjectOptions) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let options = Options {
        fetch: opts.fetch,
        symbol: opts.symbol,
        use_averages: opts.use_averages,
    };
    let Some(checkpoint) = opts.checkpoint else {
        return Ok(export::object::check(&src, &options)?);
    };
    let written = export::object(&src, Weights::Checkpoint(checkpoint), opts.output, &options)?;
    let raw = match &written.raw_keys {
        Ok(keys) => format!(
            " and {}_raw(cells[rows][{}], out[rows][{}], rows)",
            written.symbol,
            keys.len(),
            written.out_width
        ),
        Err(why) => format!(" (no raw-features entry point: {why})"),
    };
    println!(
        "wrote {} ({} bytes) and {}: {}(in[rows][{}], out[rows][{}], rows){raw}, {} rows per chunk{}",
        written.path.display(),
        written.bytes,
        written.header.display(),
        written.symbol,
        written.in_width,
        written.out_width,
        written.max_batch,
        written.serving.note()
    );
    Ok(())
}
