//! Shared plumbing of the commands: reading specs (at most
//! [`MAX_SPEC_BYTES`]), reporting diagnostics, loading the data a model
//! declares, and turning runtime errors into command failures.

use std::io::{IsTerminal, Read};
use std::path::Path;

use specc_compiler::config::{ConfigError, Flags, Resolved};
use specc_compiler::model::Model;
use specc_grammar::{Diagnostic, SourceFile};
use specc_runtime::data::{self, Dataset, Source};
use specc_runtime::train::TrainError;

use crate::Failure;

/// The largest spec file specc reads: 16 MiB (the biggest shipped spec is a
/// few KiB), so a file that never ends (`/dev/zero`) is an error, not a
/// process that grows until it is killed.
pub const MAX_SPEC_BYTES: u64 = 16 << 20;

/// Reads a spec file (UTF-8, at most [`MAX_SPEC_BYTES`]).
pub fn read_spec(path: &Path) -> Result<SourceFile, Failure> {
    let cannot = |e: std::io::Error| Failure::Other(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(Failure::Other(format!(
            "cannot read {}: the file is larger than 16 MiB ({MAX_SPEC_BYTES} bytes), the limit for a spec",
            path.display()
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Failure::Other(format!(
            "cannot read {}: stream did not contain valid UTF-8",
            path.display()
        ))
    })?;
    Ok(SourceFile::new(path.display().to_string(), text))
}

/// `specc run`'s configuration: the spec at `spec`, then `config`, `sets`
/// and `flags` ([`specc_compiler::config::resolve`]); errors are reported.
pub fn resolve_run(
    spec: &Path,
    config: Option<&Path>,
    sets: &[String],
    flags: &Flags,
) -> Result<Resolved, Failure> {
    // The flag's own range check (exit 1), before it reaches the spec.
    if let Some(f) = flags.eval_fraction {
        if !(0.0..1.0).contains(&f) {
            return Err(Failure::Other(format!(
                "--eval-fraction must be in [0, 1), got {f}"
            )));
        }
    }
    let src = read_spec(spec)?;
    match specc_compiler::config::resolve(&src, spec, config, sets, flags) {
        Ok(r) => Ok(r),
        Err(ConfigError::Spec {
            source,
            diagnostics,
        }) => Err(report(&diagnostics, &source)),
        Err(ConfigError::Other(msg)) => Err(Failure::Other(msg)),
    }
}

/// Prints diagnostics to stderr (in color on a terminal, unless NO_COLOR is set).
pub fn report(diags: &[Diagnostic], src: &SourceFile) -> Failure {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    eprint!("{}", specc_grammar::diag::render_all(diags, src, color));
    let n = diags.len();
    eprintln!(
        "error: specc found {n} error{} in {}",
        if n == 1 { "" } else { "s" },
        src.path
    );
    Failure::Spec
}

/// Where a model's data comes from: `--data`, else the spec's source (relative to the spec).
pub fn data_source(model: &Model, spec: &Path, data_override: Option<&Path>) -> Source {
    if let Some(p) = data_override {
        return Source::Csv {
            path: p.to_path_buf(),
        };
    }
    model.data_source(spec.parent().unwrap_or(Path::new(".")))
}

/// Loads the model's inputs from its data source.
pub fn load_data(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<(Dataset, String), Failure> {
    let source = data_source(model, spec, data_override);
    let what = match &source {
        Source::Csv { path } => display_path(path),
        Source::Synthetic(s) => format!("synthetic({} x {})", s.rows, s.features),
        Source::Stream(s) => stream_name(s),
        Source::Images(s) => s.source.display(),
    };
    let d = data::load(&source, &model.input_specs()).map_err(|e| Failure::Other(e.to_string()))?;
    Ok((d, what))
}

/// [`load_data`], and for an image source whose transforms draw random
/// numbers, the augmenter of its training batches.
pub fn load_data_for_training(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<
    (
        Dataset,
        String,
        Option<specc_runtime::data::images::Augmenter>,
    ),
    Failure,
> {
    let source = data_source(model, spec, data_override);
    let Source::Images(s) = &source else {
        return load_data(model, spec, data_override).map(|(d, w)| (d, w, None));
    };
    let (d, report) = data::load_images_with_report(s, &model.input_specs())
        .map_err(|e| Failure::Other(e.to_string()))?;
    let augmenter = specc_runtime::data::images::Augmenter::new(
        &s.source,
        &s.pipeline,
        &report.kept,
        s.seed,
        s.threads,
    )
    .map_err(|e| Failure::Other(e.to_string()))?;
    Ok((d, s.source.display(), augmenter))
}

/// How a streaming source is named in messages: its path or pattern.
pub fn stream_name(s: &specc_runtime::pipeline::StreamSpec) -> String {
    s.paths
        .iter()
        .map(|p| display_path(p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn display_path(p: &Path) -> String {
    p.display().to_string()
}

impl From<TrainError> for Failure {
    fn from(e: TrainError) -> Failure {
        Failure::Other(e.to_string())
    }
}
