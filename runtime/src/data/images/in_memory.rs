//! Images into memory: every example through the pipeline on worker
//! threads ([`map_in_order`], [`fill_in_order`]) into a [`Dataset`] of a
//! float32 `[N, H·W·C]` image input and int32 labels ([`load`], the
//! evaluation form), and the training form, redrawn batch by batch
//! ([`Augmenter`]).
//!
//! Invariants: results are delivered in example order, so a load is the
//! same bits whatever the thread count; a bad image (unreadable, not
//! decodable, a size the pipeline cannot take, a label out of range) is a
//! [`DataError`], or skipped and kept in the [`LoadReport`] with
//! [`OnBadRecord::Skip`].

use super::listing::{list_examples, ImageExample, ImageSource};
use super::transforms::{ImageOp, ImagePipeline};
use super::{IMAGE_COLUMN, LABEL_COLUMN};
use crate::data::{DataError, Dataset, InputData, Values};
use crate::pipeline::OnBadRecord;

/// Runs `f` over `0..n` on `threads` threads (contiguous ranges), results
/// in index order: the same output whatever the thread count.
pub fn map_in_order<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let per = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * per).min(n)..((t + 1) * per).min(n);
                s.spawn(move || range.map(f).collect::<Vec<T>>())
            })
            .collect();
        // A worker's panic (a bug, never user data) is the caller's.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Runs `f(i, row_i)` for each `width`-long row of `dst` on `threads`
/// threads (contiguous ranges of rows), writing straight into `dst`: the
/// same bytes whatever the thread count. Returns each row's result in order.
pub fn fill_in_order<E: Send>(
    dst: &mut [f32],
    width: usize,
    threads: usize,
    f: impl Fn(usize, &mut [f32]) -> Result<(), E> + Sync,
) -> Vec<Result<(), E>> {
    let n = dst.len() / width.max(1);
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 || width == 0 {
        return dst
            .chunks_exact_mut(width.max(1))
            .take(n)
            .enumerate()
            .map(|(i, row)| f(i, row))
            .collect();
    }
    let per = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = dst[..n * width]
            .chunks_mut(per * width)
            .enumerate()
            .map(|(t, part)| {
                s.spawn(move || {
                    part.chunks_exact_mut(width)
                        .enumerate()
                        .map(|(k, row)| f(t * per + k, row))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        // A worker's panic (a bug, never user data) is the caller's.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// What [`load`] produced besides the data set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadReport {
    /// The class names (directory sources), label id order.
    pub class_names: Vec<String>,
    /// Skipped bad images: their error, in example order.
    pub skipped: Vec<DataError>,
    /// The example index of each row of the data set.
    pub kept: Vec<u32>,
}

/// Options of [`load`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// Worker threads decoding and transforming.
    pub threads: usize,
    /// What a bad image does.
    pub on_bad_record: OnBadRecord,
    /// Apply the random transforms (training) or skip them (evaluation).
    pub training: bool,
    /// The seed of the random transforms, and the epoch.
    pub seed: u64,
    pub epoch: u64,
    /// Labels must lie in `[0, num_classes)` when given.
    pub num_classes: Option<u32>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            threads: 1,
            on_bad_record: OnBadRecord::Error,
            training: false,
            seed: 0,
            epoch: 0,
            num_classes: None,
        }
    }
}

/// Loads every example of `source` through `pipeline` into a [`Dataset`]
/// with the inputs [`IMAGE_COLUMN`] (`image_input`, float32
/// `[N, H·W·C]`) and [`LABEL_COLUMN`] (`label_input`, int32 `[N]`).
pub fn load(
    source: &ImageSource,
    pipeline: &ImagePipeline,
    image_input: &str,
    label_input: Option<&str>,
    options: &LoadOptions,
) -> Result<(Dataset, LoadReport), DataError> {
    let (examples, class_names) = list_examples(source)?;
    load_listed(
        &examples,
        class_names,
        pipeline,
        image_input,
        label_input,
        options,
    )
}

/// [`load`] of listed examples (`class_names` is passed through to the report).
pub fn load_listed(
    examples: &[ImageExample],
    class_names: Vec<String>,
    pipeline: &ImagePipeline,
    image_input: &str,
    label_input: Option<&str>,
    options: &LoadOptions,
) -> Result<(Dataset, LoadReport), DataError> {
    let [h, w, c] = pipeline
        .output_shape()
        .map_err(|(_, m)| DataError::new(image_input, m))?;
    let width = h * w * c;
    let results = map_in_order(examples.len(), options.threads, |i| {
        let ex = &examples[i];
        let bytes = &*ex.read()?;
        if let Some(n) = options.num_classes {
            if ex.label < 0 || ex.label >= n as i64 {
                return Err(DataError::at(
                    &ex.file.display().to_string(),
                    ex.row,
                    Some(LABEL_COLUMN),
                    format!("label {} is not in [0, {n})", ex.label),
                ));
            }
        }
        let mut px = vec![0f32; width];
        pipeline
            .apply(
                bytes,
                options.training,
                (options.seed, options.epoch, i as u64),
                &mut px,
            )
            .map_err(|m| ex.error(m))?;
        Ok((px, ex.label))
    });
    let mut pixels = Vec::new();
    pixels
        .try_reserve_exact(examples.len() * width)
        .map_err(|_| DataError::new(image_input, "not enough memory for the images"))?;
    let mut labels = Vec::with_capacity(examples.len());
    let mut report = LoadReport {
        class_names,
        skipped: Vec::new(),
        kept: Vec::new(),
    };
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok((px, label)) => {
                pixels.extend_from_slice(&px);
                labels.push(label as i32);
                report.kept.push(i as u32);
            }
            Err(e) => match options.on_bad_record {
                OnBadRecord::Error => return Err(e),
                OnBadRecord::Skip => report.skipped.push(e),
            },
        }
    }
    if labels.is_empty() {
        return Err(DataError::new(image_input, "every image was bad"));
    }
    let rows = labels.len();
    let mut inputs = vec![InputData::new(image_input, width, Values::F32(pixels))];
    if let Some(l) = label_input {
        inputs.push(InputData::new(l, 1, Values::I32(labels)));
    }
    let ds = Dataset::from_inputs(rows, inputs).map_err(|m| DataError::new(image_input, m))?;
    Ok((ds, report))
}

/// The training form of an image input: the random transforms redrawn for
/// every batch, keyed by `(seed, epoch, example index)`, over the examples
/// a load kept. The in-memory batch sources gather every input as usual and
/// then overwrite the image input's rows with [`fill`](Self::fill).
#[derive(Debug, Clone)]
pub struct Augmenter {
    examples: Vec<ImageExample>,
    pipeline: ImagePipeline,
    seed: u64,
    threads: usize,
    width: usize,
}

impl Augmenter {
    /// The augmenter of `source` through `pipeline`, for the rows of a load
    /// whose report kept `kept`; `None` when the pipeline draws nothing.
    pub fn new(
        source: &ImageSource,
        pipeline: &ImagePipeline,
        kept: &[u32],
        seed: u64,
        threads: usize,
    ) -> Result<Option<Augmenter>, DataError> {
        if !pipeline.ops.iter().any(ImageOp::is_random) {
            return Ok(None);
        }
        let [h, w, c] = pipeline
            .output_shape()
            .map_err(|(_, m)| DataError::new(&source.display(), m))?;
        let (all, _) = list_examples(source)?;
        let mut examples = Vec::with_capacity(kept.len());
        for &k in kept {
            let ex = all.get(k as usize).ok_or_else(|| {
                DataError::new(
                    &source.display(),
                    "the images changed since they were loaded",
                )
            })?;
            examples.push(ex.clone());
        }
        Ok(Some(Augmenter {
            examples,
            pipeline: pipeline.clone(),
            seed,
            threads,
            width: h * w * c,
        }))
    }

    /// Writes the training form of data-set rows `rows` (epoch `epoch`)
    /// into `dst`, row after row, on the augmenter's threads.
    pub fn fill(&self, rows: &[u32], epoch: u64, dst: &mut [f32]) -> Result<(), DataError> {
        let width = self.width;
        if dst.len() < rows.len() * width {
            return Err(DataError::new(
                IMAGE_COLUMN,
                "the image input's buffer is smaller than the batch",
            ));
        }
        let dst = &mut dst[..rows.len() * width];
        let results = fill_in_order(dst, width, self.threads, |i, px| {
            let row = rows[i] as usize;
            let ex = self
                .examples
                .get(row)
                .ok_or_else(|| DataError::new(IMAGE_COLUMN, format!("row {row} out of range")))?;
            let bytes = &*ex.read()?;
            self.pipeline
                .apply(bytes, true, (self.seed, epoch, row as u64), px)
                .map_err(|m| ex.error(m))
        });
        results.into_iter().collect()
    }
}
