//! How a model's data becomes batches: the one way `specc run`,
//! `gradcheck`, `bench`, `predict` and evaluations open data.
//!
//! Owns: where the data is ([`data_source`]: `--data`, else the spec's
//! `data` item, its paths relative to the spec; [`eval_data_source`]:
//! `--eval-data`, else the spec's `eval_data`; for an image source the
//! path that replaces its directory, CSV or TFRecord files,
//! [`image_source_at`]); loading it ([`load_data`], and for training
//! [`TrainingData::open`]: in memory with the augmenter of an image input's
//! random transforms, or streamed by the input pipeline); the training
//! batches ([`TrainingData::batches`]: shuffled in-memory rows, a replica's
//! shard of them, or the stream, as one [`Batches`] source that can say and
//! restore its position); the evaluation data ([`EvalData`]); and the rows
//! to predict ([`prediction_stream`], [`open_prediction_source`]: a CSV or
//! TFRecord file streamed in file order, reading only the inputs asked
//! for).
//!
//! Invariants: nothing here reads data it is not asked to (a source is
//! described before it is opened; a streamed source is read as batches are
//! taken); the same request gives the same batches in the same order (the
//! spec's `batch`, `shuffle` and `seed`), so a replay or a resume sees what
//! the run saw; every error names the file or the flag.

use std::path::Path;

use specc_compiler::model::Model;
use specc_runtime::abi::Layout;
use specc_runtime::data::images::{Augmenter, IMAGE_COLUMN};
use specc_runtime::data::{self, DataError, Dataset, InputSpec, Source, ValuesMut};
use specc_runtime::io::tfrecord::Compression;
use specc_runtime::pipeline::{
    BadRecords, Format, ImageFormat, ImageRecords, Shard, StreamSpec, StreamingBatches,
};
use specc_runtime::source::{BatchBuffers, BatchSource, ShuffledBatches};
use specc_runtime::train::TrainConfig;

use super::Error;

/// Where a model's data comes from: `--data`, else the spec's source (relative to the spec).
/// For an image source `--data` replaces the source's directory, CSV or
/// TFRecord path or pattern and keeps its options ([`image_source_at`]);
/// for a streamed source (TFRecord, or CSV with `stream = true`) it
/// replaces the files, read as the spec's `data` item says; for any other
/// source it is a CSV file, loaded into memory and read with the spec's
/// CSV options (`column_names`, `column_defaults`, `filter`...) when its
/// `data` is CSV.
pub fn data_source(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<Source, Error> {
    let source = model.data_source(spec.parent().unwrap_or(Path::new(".")));
    let Some(p) = data_override else {
        return Ok(source);
    };
    let options = source.csv_options().cloned().unwrap_or_default();
    if let Some(stream) = records_at(&source, p) {
        return Ok(stream);
    }
    Ok(
        image_source_at(source, p, "--data")?.unwrap_or_else(|| Source::Csv {
            path: p.to_path_buf(),
            options,
        }),
    )
}

/// A streamed source of records (TFRecord, or CSV with `stream = true`)
/// reading `path` instead of its files, its format and every option kept:
/// `--data` and `--eval-data` read a file as the spec's item says. `None`
/// for any other source (in memory, images).
fn records_at(source: &Source, path: &Path) -> Option<Source> {
    match source {
        Source::Stream(st) if !matches!(st.format, Format::Images(_)) => {
            let mut st = st.clone();
            st.paths = vec![path.to_path_buf()];
            Some(Source::Stream(st))
        }
        _ => None,
    }
}

/// What evaluations read: `--eval-data`, else the spec's `eval_data`. For
/// an image model `--eval-data` replaces the path of the spec's image
/// `eval_data`, else of its data source in the evaluation form (streamed,
/// without the random transforms, as an image `eval_data` always is); it
/// replaces the files of a streamed `eval_data` (TFRecord, streamed CSV);
/// otherwise it is a CSV file, read with the CSV options of the
/// spec's `eval_data`, else with the `data` item's but its `filter` (the
/// training rows' selection).
pub fn eval_data_source(
    model: &Model,
    spec: &Path,
    eval_override: Option<&Path>,
) -> Result<Option<Source>, Error> {
    let dir = spec.parent().unwrap_or(Path::new("."));
    let Some(p) = eval_override else {
        return Ok(model.eval_data_source(dir));
    };
    if let Some(stream) = model.eval_data_source(dir).and_then(|e| records_at(&e, p)) {
        return Ok(Some(stream));
    }
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
    let options = match model.eval_data_source(dir) {
        Some(e) => e.csv_options().cloned(),
        None => model.data.source.csv_options().map(|o| o.without_filter()),
    }
    .unwrap_or_default();
    let image = match base {
        Some(b) => image_source_at(b, p, "--eval-data")?,
        None => None,
    };
    Ok(Some(image.unwrap_or_else(|| Source::Csv {
        path: p.to_path_buf(),
        options,
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
pub fn image_source_at(source: Source, path: &Path, flag: &str) -> Result<Option<Source>, Error> {
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
fn fits_image_kind(kind: ImageKind, path: &Path, flag: &str) -> Result<bool, Error> {
    let shown = path.display();
    let fail = |what: String| Err(Error::Data(format!("{flag} {shown}: {what}")));
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

/// Loads the model's inputs from its data source (`data_override`, else
/// the spec's), in memory; the source's name for messages.
pub fn load_data(
    model: &Model,
    spec: &Path,
    data_override: Option<&Path>,
) -> Result<(Dataset, String), Error> {
    let source = data_source(model, spec, data_override)?;
    let d = data::load(&source, &model.input_specs()).map_err(|e| Error::Data(e.to_string()))?;
    Ok((d, source_name(&source)))
}

/// How a streaming source is named in messages: its path or pattern.
pub fn stream_name(s: &StreamSpec) -> String {
    s.paths
        .iter()
        .map(|p| display_path(p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn display_path(p: &Path) -> String {
    p.display().to_string()
}

/// The training data, opened: rows in memory (with the augmenter of an
/// image input whose transforms draw random numbers, and that input's
/// name), or a stream the input pipeline reads as training goes.
pub enum TrainingData {
    /// Loaded rows.
    Memory {
        /// The rows.
        dataset: Dataset,
        /// Redraws the image input's random transforms for each batch.
        augmenter: Option<Augmenter>,
        /// The image input the augmenter fills.
        image_input: Option<String>,
    },
    /// A streaming source (TFRecord, a glob pattern, pipeline options).
    Stream(StreamSpec),
}

impl TrainingData {
    /// Opens `source` for `model`: a stream is described, not read; any
    /// other source is loaded into memory (an image source with the
    /// augmenter of its random transforms when `augment`).
    pub fn open(model: &Model, source: Source, augment: bool) -> Result<TrainingData, Error> {
        let inputs = model.input_specs();
        let (dataset, augmenter) = match source {
            Source::Stream(s) => return Ok(TrainingData::Stream(s)),
            Source::Images(s) if augment => {
                let (d, report) = data::load_images_with_report(&s, &inputs)
                    .map_err(|e| Error::Data(e.to_string()))?;
                let augmenter =
                    Augmenter::new(&s.source, &s.pipeline, &report.kept, s.seed, s.threads)
                        .map_err(|e| Error::Data(e.to_string()))?;
                (d, augmenter)
            }
            source => (
                data::load(&source, &inputs).map_err(|e| Error::Data(e.to_string()))?,
                None,
            ),
        };
        let image_input = model
            .inputs
            .iter()
            .find(|i| i.spec.columns == [IMAGE_COLUMN])
            .map(|i| i.spec.name.clone());
        Ok(TrainingData::Memory {
            dataset,
            augmenter,
            image_input,
        })
    }

    /// The rows in memory (none for a stream).
    pub fn dataset(&self) -> Option<&Dataset> {
        match self {
            TrainingData::Memory { dataset, .. } => Some(dataset),
            TrainingData::Stream(_) => None,
        }
    }

    /// The batches of `rows` (in memory; a stream reads all of its own) for
    /// a session of `layout`, in the order `cfg` says; for a replica, its
    /// shard of every batch.
    pub fn batches(
        &self,
        layout: &Layout,
        inputs: &[InputSpec],
        rows: Vec<u32>,
        cfg: &TrainConfig,
        shard: Option<Shard>,
    ) -> Result<Batches<'_>, Error> {
        match self {
            TrainingData::Memory {
                dataset,
                augmenter,
                image_input,
            } => {
                let b =
                    ShuffledBatches::new(dataset, layout, rows, cfg.batch, cfg.shuffle, cfg.seed)
                        .map_err(Error::Data)?;
                let b = match shard {
                    Some(s) => b.shard(s.index, s.count),
                    None => b,
                };
                let augment = augmenter.as_ref().and_then(|a| {
                    let name = image_input.as_deref()?;
                    let i = layout.inputs.iter().position(|l| l.name == name)?;
                    Some((a, i))
                });
                Ok(Batches::Memory(b, augment))
            }
            TrainingData::Stream(s) => {
                let Some(shard) = shard else {
                    let b =
                        StreamingBatches::new(s, inputs, layout, cfg.batch, cfg.shuffle, cfg.seed)
                            .map_err(|e| Error::Data(e.to_string()))?;
                    return Ok(Batches::Stream(Box::new(b)));
                };
                // Its own files, or every N-th record (`tf.data`'s shard).
                let mut s = s.clone();
                s.shard = shard;
                let rows = specc_runtime::train::replicas::shard_rows(cfg.batch, shard.count);
                let b = StreamingBatches::new(
                    &s,
                    inputs,
                    layout,
                    rows[shard.index],
                    cfg.shuffle,
                    cfg.seed,
                )
                .map_err(|e| Error::Data(e.to_string()))?;
                Ok(Batches::Sharded(Box::new(b)))
            }
        }
    }
}

/// The evaluation data (`eval_data`, `--eval-data`): loaded whole (a single
/// CSV) or streamed, one pass per evaluation.
pub enum EvalData {
    /// Every row of the file, in memory.
    Memory(Dataset),
    /// A stream of one pass.
    Stream(StreamSpec),
}

impl EvalData {
    /// Opens `source` for `model`'s evaluations.
    pub fn open(model: &Model, source: &Source) -> Result<EvalData, Error> {
        match source {
            Source::Stream(s) => {
                let mut s = s.clone();
                s.num_epochs = Some(1);
                Ok(EvalData::Stream(s))
            }
            Source::Csv { .. } | Source::Synthetic(_) => Ok(EvalData::Memory(
                data::load(source, &model.input_specs())
                    .map_err(|e| Error::Data(format!("eval data: {e}")))?,
            )),
            Source::Images(_) => Err(Error::Data(
                "eval data: images are evaluated streamed (`eval_data` of an image source)".into(),
            )),
        }
    }
}

/// How a source is named in messages: its file, pattern or directory.
pub fn source_name(source: &Source) -> String {
    match source {
        Source::Csv { path, .. } => display_path(path),
        Source::Synthetic(s) => format!("synthetic({} x {})", s.rows, s.features),
        Source::Stream(s) => stream_name(s),
        Source::Images(s) => s.source.display(),
    }
}

/// The training batches: in memory, or streamed by the input pipeline.
// One per run: the size of the in-memory variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Batches<'d> {
    /// In-memory rows, and the augmenter of the image input (its index in
    /// the layout) when its transforms draw random numbers.
    Memory(ShuffledBatches<'d>, Option<(&'d Augmenter, usize)>),
    /// The stream.
    Stream(Box<StreamingBatches>),
    /// A replica's shard of a stream: it keeps no position (each replica's
    /// differs, and only replica 0 saves); a resumed job reads past the
    /// shares of the steps done.
    Sharded(Box<StreamingBatches>),
}

impl Batches<'_> {
    /// Epochs begun (a stream: of its files).
    pub fn epochs_started(&self) -> u64 {
        match self {
            Batches::Memory(b, _) => b.epochs_started() as u64,
            Batches::Stream(b) | Batches::Sharded(b) => b.epochs_started(),
        }
    }

    /// The streamed source's skipped records.
    pub fn bad_records(&self) -> Option<BadRecords> {
        match self {
            Batches::Memory(..) => None,
            Batches::Stream(b) | Batches::Sharded(b) => Some(b.bad_records().clone()),
        }
    }
}

impl BatchSource for Batches<'_> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        match self {
            Batches::Memory(b, augment) => {
                let n = b.next_batch(buffers)?;
                if let Some((a, i)) = augment {
                    // The epoch the batch ends in keys its draws.
                    let epoch = (b.epochs_started() as u64).saturating_sub(1);
                    if let ValuesMut::F32(dst) = buffers.input_mut(*i) {
                        a.fill(b.last_batch_rows(), epoch, dst)?;
                    }
                }
                Ok(n)
            }
            Batches::Stream(b) | Batches::Sharded(b) => b.next_batch(buffers),
        }
    }

    fn position(&self) -> Option<Vec<i64>> {
        match self {
            Batches::Memory(b, _) => b.position(),
            Batches::Stream(b) => b.position(),
            Batches::Sharded(_) => None,
        }
    }

    fn seek(&mut self, position: &[i64]) -> Result<(), String> {
        match self {
            Batches::Memory(b, _) => b.seek(position),
            Batches::Stream(b) => b.seek(position),
            Batches::Sharded(_) => Ok(()),
        }
    }
}

/// The compression of a TFRecord file, from its first bytes; `None` when
/// they are neither gzip, zlib nor a TFRecord frame.
pub fn looks_like_tfrecord(path: &Path) -> Option<Compression> {
    use std::io::Read;
    let mut head = [0u8; 12];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    match head[..n] {
        [0x1f, 0x8b, ..] => Some(Compression::Gzip),
        // A zlib header: deflate, and the check bits of RFC 1950.
        [0x78, b, ..] if (0x7800u16 | u16::from(b)).is_multiple_of(31) => Some(Compression::Zlib),
        [..] if n == 12 => {
            let crc = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
            (specc_runtime::io::crc::masked_crc32c(&head[..8]) == crc).then_some(Compression::None)
        }
        _ => None,
    }
}

/// How rows to predict (`specc predict --data`, calibration rows) are read:
/// CSV (with the CSV options of the spec's `data` — `na_value`,
/// `column_names`, `column_defaults`... — but its `filter`, so there is one
/// prediction per row), or TFRecord of Examples when the file is not named
/// `.csv`/`.csv.gz` and begins like one; one pass in file order, bad
/// records are errors.
pub fn prediction_stream(model: &Model, data: &Path) -> StreamSpec {
    let name = data.to_string_lossy().to_ascii_lowercase();
    let named_csv = name.ends_with(".csv") || name.ends_with(".csv.gz");
    let tfrecord = if named_csv {
        None
    } else {
        looks_like_tfrecord(data)
    };
    let format = match tfrecord {
        Some(compression) => Format::TfRecord {
            compression,
            feature_lists: model.feature_lists(),
        },
        None => Format::Csv(Box::new(
            model
                .data
                .source
                .csv_options()
                .map(|o| o.without_filter())
                .unwrap_or_default(),
        )),
    };
    let mut s = StreamSpec::new(format, vec![data.to_path_buf()]);
    s.num_epochs = Some(1);
    s
}

/// The rows to predict from `data` ([`prediction_stream`]) through the
/// spec's feature columns, in batches of `batch` rows, reading the session
/// inputs `reads` marks (`layout`'s order).
pub fn open_prediction_source(
    model: &Model,
    layout: &Layout,
    reads: &[bool],
    data: &Path,
    batch: u32,
) -> Result<StreamingBatches, Error> {
    let inputs: Vec<_> = model
        .input_specs()
        .into_iter()
        .filter(|i| {
            layout
                .inputs
                .iter()
                .zip(reads)
                .any(|(l, r)| *r && l.name == i.name)
        })
        .collect();
    let stream = prediction_stream(model, data);
    StreamingBatches::reading(&stream, &inputs, layout, reads, batch as usize, 0, 0)
        .map_err(|e| Error::Data(e.to_string()))
}
