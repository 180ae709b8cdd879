//! Image sources through the streaming pipeline: `image_dataset_from_directory`,
//! `image_csv` and `image_tfrecord` with `stream = true` (or a glob
//! pattern, or a streaming-only option), read, decoded and transformed a
//! chunk at a time on the worker threads.
//!
//! Owns: [`ImageFormat`] (which records: a directory listing, CSV rows of
//! paths and labels, or TFRecord Examples of encoded bytes and labels; the
//! image input's [`ImagePipeline`], its seed, and whether the random
//! transforms apply), the model inputs it fills (`ImageInputs`), and
//! `ImageRows`, a worker's per-chunk work: each record's bytes (the file
//! read into a reused buffer, or the Example's feature), its label, then
//! [`ImagePipeline::apply`] straight into the chunk's row.
//!
//! Invariants:
//! - A record's random draws are keyed by `(seed, epoch, index)`: the epoch
//!   of the pass the reader is making (from 0, as the in-memory
//!   [`Augmenter`](crate::data::images::Augmenter) counts), and the record's
//!   place in that epoch's stream (bad records included, so a skipped image
//!   does not shift the others' draws). Both are stamped on the chunk by the
//!   reader, so the bits do not depend on which worker runs it. Without bad
//!   images and with one file (a directory, one CSV or TFRecord) read in
//!   order, index `i` is the in-memory data set's row `i`. A replica's
//!   record shard (`Shard`, files read one at a time) keys a record by its
//!   place in the unsharded stream (its file's first record's place plus
//!   its record number, `Chunk::index_base`), so replicas draw what one
//!   process draws for each image.
//! - Only the listing of a directory (paths and labels, never pixels) is
//!   held; pixels exist only in the chunks in flight and the shuffle buffer.
//! - A bad image (unreadable, undecodable, a transform that cannot take it,
//!   a label out of range or not an integer) is a bad record naming the file:
//!   the image file for a directory; the CSV file, its line and the image
//!   path for `image_csv`; the TFRecord file and record for `image_tfrecord`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::abi::ElemType;
use crate::data::images::{
    take_image_and_label, ImageExample, ImagePipeline, ImageSource, IMAGE_COLUMN, LABEL_COLUMN,
};
use crate::data::{DataError, InputKind, InputSpec, Values};
use crate::io::example::Example;
use crate::io::tfrecord::Compression;

/// Which records an image stream reads (the paths are the stream's).
#[derive(Clone, Debug, PartialEq)]
pub enum ImageRecords {
    /// `image_dataset_from_directory(dir)`: the stream's one path is the
    /// directory; its listing (class directories sorted = label ids, files
    /// sorted) is made once when the source is built.
    Directory,
    /// `image_csv(files)`: CSV files with a header, a path column (relative
    /// to the CSV's directory) and an integer label column.
    Csv {
        path_column: String,
        label_column: String,
    },
    /// `image_tfrecord(files)`: Examples with the encoded image as one
    /// bytes value and the label as one int64.
    TfRecord {
        compression: Compression,
        image_key: String,
        label_key: String,
    },
}

/// The format of a streamed image source.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageFormat {
    pub records: ImageRecords,
    /// The image input's transforms (filled in by sema after the features).
    pub pipeline: ImagePipeline,
    /// The seed of the random transforms.
    pub seed: u64,
    /// Apply the random transforms (training) or skip them (evaluation:
    /// `random_crop` is a central crop).
    pub training: bool,
}

impl ImageFormat {
    /// The in-memory [`ImageSource`] of the same records at `paths` (for
    /// `specc predict`, which lists unlabeled images like the source).
    pub fn source(&self, paths: &[PathBuf]) -> ImageSource {
        let first = paths.first().cloned().unwrap_or_default();
        match &self.records {
            ImageRecords::Directory => ImageSource::Directory { dir: first },
            ImageRecords::Csv {
                path_column,
                label_column,
            } => ImageSource::Csv {
                path: first,
                path_column: path_column.clone(),
                label_column: label_column.clone(),
            },
            ImageRecords::TfRecord {
                compression,
                image_key,
                label_key,
            } => ImageSource::TfRecord {
                paths: paths.to_vec(),
                compression: *compression,
                image_key: image_key.clone(),
                label_key: label_key.clone(),
            },
        }
    }

    /// The streamed form of an in-memory image source: its records, the
    /// same pipeline, seed, threads and bad-image policy, read from
    /// `paths`, with the random transforms (`training`) or their
    /// evaluation form. The other stream options are the defaults.
    pub fn stream_of(spec: &crate::data::ImagesSpec, training: bool) -> super::StreamSpec {
        let (records, paths) = match &spec.source {
            ImageSource::Directory { dir } => (ImageRecords::Directory, vec![dir.clone()]),
            ImageSource::Csv {
                path,
                path_column,
                label_column,
            } => (
                ImageRecords::Csv {
                    path_column: path_column.clone(),
                    label_column: label_column.clone(),
                },
                vec![path.clone()],
            ),
            ImageSource::TfRecord {
                paths,
                compression,
                image_key,
                label_key,
            } => (
                ImageRecords::TfRecord {
                    compression: *compression,
                    image_key: image_key.clone(),
                    label_key: label_key.clone(),
                },
                paths.clone(),
            ),
        };
        let mut s = super::StreamSpec::new(
            super::Format::Images(Box::new(ImageFormat {
                records,
                pipeline: spec.pipeline.clone(),
                seed: spec.seed,
                training,
            })),
            paths,
        );
        s.threads = spec.threads;
        s.on_bad_record = spec.on_bad_record;
        s
    }

    /// Each input's element type and width: the image input
    /// (`[H·W·C]` float32) and the label (int32 class ids, or float32).
    /// Refuses inputs an image source cannot give.
    pub(crate) fn shapes(
        &self,
        inputs: &[InputSpec],
    ) -> Result<(Vec<ElemType>, Vec<usize>), String> {
        let [h, w, c] = self.pipeline.output_shape().map_err(|(_, m)| m)?;
        let mut elems = Vec::with_capacity(inputs.len());
        let mut widths = Vec::with_capacity(inputs.len());
        let mut images = 0;
        for i in inputs {
            match i.columns.as_slice() {
                [c0] if c0 == IMAGE_COLUMN => {
                    images += 1;
                    elems.push(ElemType::F32);
                    widths.push(h * w * c);
                }
                [c0] if c0 == LABEL_COLUMN => {
                    elems.push(match i.kind {
                        InputKind::ClassId { .. } => ElemType::I32,
                        _ => ElemType::F32,
                    });
                    widths.push(1);
                }
                other => {
                    return Err(format!(
                        "an image source has the columns `{IMAGE_COLUMN}` and `{LABEL_COLUMN}` \
                         only; input `{}` reads {other:?}",
                        i.name
                    ))
                }
            }
        }
        if images != 1 {
            return Err(
                "an image source needs one image input (`features { x = image(...) }`)".into(),
            );
        }
        Ok((elems, widths))
    }

    /// The columns of the CSV files the reader checks against the header
    /// (path, then label); none for the other records.
    pub(crate) fn csv_columns(&self) -> Vec<Vec<String>> {
        match &self.records {
            ImageRecords::Csv {
                path_column,
                label_column,
            } => vec![vec![path_column.clone()], vec![label_column.clone()]],
            _ => Vec::new(),
        }
    }
}

/// The examples of a directory (paths and labels, no pixels).
pub(crate) fn list_directory(dir: &Path) -> Result<Vec<ImageExample>, DataError> {
    crate::data::images::list_examples(&ImageSource::Directory {
        dir: dir.to_path_buf(),
    })
    .map(|(e, _)| e)
}

/// One record of a chunk as the worker sees it.
pub(crate) enum Record<'a> {
    /// A listed image file (directory source).
    Listed(&'a ImageExample),
    /// A CSV row's path and label cells, in the CSV file `file`.
    Csv {
        file: &'a str,
        line: usize,
        path: &'a [u8],
        label: &'a [u8],
    },
    /// A serialized Example, record `record` of `file`.
    Example {
        file: &'a str,
        record: usize,
        payload: &'a [u8],
    },
}

/// Which model inputs an image stream fills.
#[derive(Clone, Debug)]
pub(crate) struct ImageInputs {
    image: usize,
    label: Option<usize>,
    /// The label's id range (`None`: any).
    num_classes: Option<u32>,
}

impl ImageInputs {
    pub(crate) fn new(inputs: &[InputSpec], num_classes: &[Option<u32>]) -> ImageInputs {
        let by = |c: &str| {
            inputs
                .iter()
                .position(|i| i.columns.len() == 1 && i.columns[0] == c)
        };
        let label = by(LABEL_COLUMN);
        ImageInputs {
            image: by(IMAGE_COLUMN).unwrap_or(0),
            label,
            num_classes: label.and_then(|l| num_classes.get(l).copied().flatten()),
        }
    }
}

/// A worker's image transform: the format, the inputs, and the buffer files
/// are read into.
pub(crate) struct ImageRows {
    format: ImageFormat,
    inputs: ImageInputs,
    bytes: Vec<u8>,
}

impl ImageRows {
    pub(crate) fn new(format: ImageFormat, inputs: ImageInputs) -> ImageRows {
        ImageRows {
            format,
            inputs,
            bytes: Vec::new(),
        }
    }

    /// The index of the image input.
    pub(crate) fn image_input(&self) -> usize {
        self.inputs.image
    }

    /// Reads, decodes and transforms `record` into row `row` of `values`
    /// (the image input `width` values a row), its draws keyed by
    /// `(seed, epoch, index)`.
    pub(crate) fn row(
        &mut self,
        record: Record<'_>,
        epoch: u64,
        index: u64,
        values: &mut [Values],
        width: usize,
        row: usize,
    ) -> Result<(), DataError> {
        // The label, and the error naming this image (its bytes are then in
        // `self.bytes`).
        type Named<'e> = Box<dyn Fn(String) -> DataError + 'e>;
        let (label, err): (i64, Named<'_>) = match record {
            Record::Listed(ex) => {
                let err: Named<'_> = Box::new(move |m| {
                    DataError::at(&ex.file.display().to_string(), None, Some(IMAGE_COLUMN), m)
                });
                read_file(&ex.file, &mut self.bytes)
                    .map_err(|e| err(format!("cannot read: {e}")))?;
                (ex.label, err)
            }
            Record::Csv {
                file,
                line,
                path,
                label,
            } => {
                let (path_column, label_column) = match &self.format.records {
                    ImageRecords::Csv {
                        path_column,
                        label_column,
                    } => (path_column.clone(), label_column.clone()),
                    _ => (IMAGE_COLUMN.to_string(), LABEL_COLUMN.to_string()),
                };
                let text = String::from_utf8_lossy(label);
                let label: i64 = text.trim().parse().map_err(|_| {
                    DataError::at(
                        file,
                        Some(line),
                        Some(&label_column),
                        format!("`{}` is not an integer label", text.trim()),
                    )
                })?;
                let rel = String::from_utf8_lossy(path);
                let rel = rel.trim();
                if rel.is_empty() {
                    return Err(DataError::at(
                        file,
                        Some(line),
                        Some(&path_column),
                        "empty path",
                    ));
                }
                let image = Path::new(file).parent().unwrap_or(Path::new(".")).join(rel);
                let shown = image.display().to_string();
                let err: Named<'_> = Box::new(move |m| {
                    DataError::at(
                        file,
                        Some(line),
                        Some(&path_column),
                        format!("{shown}: {m}"),
                    )
                });
                read_file(&image, &mut self.bytes).map_err(|e| err(format!("cannot read: {e}")))?;
                (label, err)
            }
            Record::Example {
                file,
                record,
                payload,
            } => {
                let (image_key, label_key) = match &self.format.records {
                    ImageRecords::TfRecord {
                        image_key,
                        label_key,
                        ..
                    } => (image_key.clone(), label_key.clone()),
                    _ => (IMAGE_COLUMN.to_string(), LABEL_COLUMN.to_string()),
                };
                let at = move |key: Option<&str>, m: String| {
                    let what = match key {
                        Some(k) => format!("record {record}, feature `{k}`: {m}"),
                        None => format!("record {record}: {m}"),
                    };
                    DataError::at(file, None, None, what)
                };
                let mut ex = Example::decode(payload, record)
                    .map_err(|e| at(None, format!("not a tf.train.Example: {}", e.what)))?;
                let (bytes, label) = take_image_and_label(&mut ex, &image_key, &label_key)
                    .map_err(|(key, m)| at(Some(key), m))?;
                self.bytes = bytes;
                let err: Named<'_> = Box::new(move |m| at(Some(&image_key), m));
                (label, err)
            }
        };
        if let Some(n) = self.inputs.num_classes {
            if label < 0 || label >= n as i64 {
                return Err(err(format!("label {label} is not in [0, {n})")));
            }
        }
        if let Some(Values::F32(px)) = values.get_mut(self.inputs.image) {
            let dst = px
                .get_mut(row * width..(row + 1) * width)
                .ok_or_else(|| err("the chunk has no room for the image".into()))?;
            self.format
                .pipeline
                .apply(
                    &self.bytes,
                    self.format.training,
                    (self.format.seed, epoch, index),
                    dst,
                )
                .map_err(&err)?;
        }
        if let Some(l) = self.inputs.label {
            match values.get_mut(l) {
                Some(Values::I32(v)) => v[row] = label as i32,
                Some(Values::F32(v)) => v[row] = label as f32,
                None => {}
            }
        }
        Ok(())
    }
}

/// Reads `path` into `buf` (cleared, its allocation kept).
fn read_file(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    std::fs::File::open(path)?.read_to_end(buf).map(|_| ())
}

/// The shared listing of a directory stream.
pub(crate) type Listing = Arc<Vec<ImageExample>>;
