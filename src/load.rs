//! Shared plumbing of the commands: reading specs (at most
//! [`MAX_SPEC_BYTES`]), reporting diagnostics, loading the data a model
//! declares, and turning runtime errors into command failures.

use std::io::{IsTerminal, Read};
use std::path::Path;

use specc_compiler::config::{ConfigError, Flags, Resolved};
use specc_compiler::model::Model;
use specc_grammar::{Diagnostic, SourceFile};
use specc_runtime::data::{self, Dataset, Source};
use specc_runtime::pipeline::{Format, ImageFormat, ImageRecords};
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
/// For an image source `--data` replaces the source's directory, CSV or
/// TFRecord path or pattern and keeps its options ([`image_source_at`]);
/// for any other source it is a CSV file.
pub fn data_source(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<Source, Failure> {
    let source = model.data_source(spec.parent().unwrap_or(Path::new(".")));
    let Some(p) = data_override else {
        return Ok(source);
    };
    Ok(
        image_source_at(source, p, "--data")?.unwrap_or_else(|| Source::Csv {
            path: p.to_path_buf(),
        }),
    )
}

/// What evaluations read: `--eval-data`, else the spec's `eval_data`. For
/// an image model `--eval-data` replaces the path of the spec's image
/// `eval_data`, else of its data source in the evaluation form (streamed,
/// without the random transforms, as an image `eval_data` always is); for
/// any other model it is a CSV file.
pub fn eval_data_source(
    model: &Model,
    spec: &Path,
    eval_override: Option<&Path>,
) -> Result<Option<Source>, Failure> {
    let dir = spec.parent().unwrap_or(Path::new("."));
    let Some(p) = eval_override else {
        return Ok(model.eval_data_source(dir));
    };
    let base = model
        .eval_data_source(dir)
        .or_else(|| match model.data_source(dir) {
            Source::Images(s) => Some(Source::Stream(ImageFormat::stream_of(&s, false))),
            Source::Stream(mut st) => match &mut st.format {
                Format::Images(f) => {
                    f.training = false;
                    st.num_epochs = None;
                    Some(Source::Stream(st))
                }
                _ => None,
            },
            _ => None,
        });
    let image = match base {
        Some(b) => image_source_at(b, p, "--eval-data")?,
        None => None,
    };
    Ok(Some(image.unwrap_or_else(|| Source::Csv {
        path: p.to_path_buf(),
    })))
}

/// The kinds of image records, as the spec names their source.
#[derive(Clone, Copy)]
enum ImageKind {
    Directory,
    Csv,
    TfRecord,
}

/// An image `source` reading `path` instead of the spec's directory, CSV or
/// TFRecord files, every other option kept; `None` when `source` is not
/// an image source. A glob pattern for an in-memory `image_csv` or
/// `image_tfrecord` streams it, as the same pattern in the spec would. A
/// path that does not fit the source's kind (a file for a directory
/// source, a directory for a CSV or TFRecord source, a path that does not
/// exist) is an error naming `flag`.
pub fn image_source_at(source: Source, path: &Path, flag: &str) -> Result<Option<Source>, Failure> {
    use specc_runtime::data::images::ImageSource;
    match source {
        Source::Images(mut s) => {
            let kind = match &s.source {
                ImageSource::Directory { .. } => ImageKind::Directory,
                ImageSource::Csv { .. } => ImageKind::Csv,
                ImageSource::TfRecord { .. } => ImageKind::TfRecord,
            };
            if fits_image_kind(kind, path, flag)? {
                let mut st = ImageFormat::stream_of(&s, s.training);
                st.paths = vec![path.to_path_buf()];
                return Ok(Some(Source::Stream(st)));
            }
            match &mut s.source {
                ImageSource::Directory { dir } => *dir = path.to_path_buf(),
                ImageSource::Csv { path: p, .. } => *p = path.to_path_buf(),
                ImageSource::TfRecord { paths, .. } => *paths = vec![path.to_path_buf()],
            }
            Ok(Some(Source::Images(s)))
        }
        Source::Stream(mut st) => {
            let Format::Images(f) = &st.format else {
                return Ok(None);
            };
            let kind = match f.records {
                ImageRecords::Directory => ImageKind::Directory,
                ImageRecords::Csv { .. } => ImageKind::Csv,
                ImageRecords::TfRecord { .. } => ImageKind::TfRecord,
            };
            fits_image_kind(kind, path, flag)?;
            st.paths = vec![path.to_path_buf()];
            Ok(Some(Source::Stream(st)))
        }
        _ => Ok(None),
    }
}

/// Whether `path` fits an image source of `kind` (an error if not), and
/// whether it is a glob pattern.
fn fits_image_kind(kind: ImageKind, path: &Path, flag: &str) -> Result<bool, Failure> {
    let shown = path.display();
    let fail = |what: String| Err(Failure::Other(format!("{flag} {shown}: {what}")));
    let pattern = specc_runtime::pipeline::files::is_pattern(&path.to_string_lossy());
    match kind {
        ImageKind::Directory => {
            let spec = "the spec's image_dataset_from_directory reads a directory with one sub-directory of images per class";
            if pattern {
                return fail(format!("a glob pattern, but {spec}"));
            }
            if path.is_file() {
                return fail(format!("a file, but {spec}"));
            }
            if !path.is_dir() {
                return fail(format!("no such directory ({spec})"));
            }
        }
        ImageKind::Csv | ImageKind::TfRecord => {
            let spec = match kind {
                ImageKind::Csv => "the spec's image_csv reads a CSV file of image paths and labels",
                _ => "the spec's image_tfrecord reads TFRecord files of encoded images and labels",
            };
            if path.is_dir() {
                return fail(format!(
                    "a directory, but {spec} (a file or a glob pattern of files)"
                ));
            }
            if !pattern && !path.exists() {
                return fail(format!("no such file ({spec})"));
            }
        }
    }
    Ok(pattern)
}

/// Loads the model's inputs from its data source.
pub fn load_data(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<(Dataset, String), Failure> {
    let source = data_source(model, spec, data_override)?;
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
    let source = data_source(model, spec, data_override)?;
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
