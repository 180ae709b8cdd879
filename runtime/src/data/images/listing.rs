//! Image data: the sources (a directory of one sub-directory per class,
//! Keras's `image_dataset_from_directory`; a CSV of paths and labels;
//! TFRecord Examples with encoded image bytes), the per-example pipeline of
//! `tf.image` transforms ([`ImagePipeline`]), and loading into a
//! [`Dataset`] of a float32 `[N, H·W·C]` image input and int32 labels.
//! A streamed image source (`stream = true`) is the input pipeline's
//! ([`crate::pipeline::images`]), which lists directories with
//! [`list_examples`] and transforms with [`ImagePipeline::apply`], so a
//! record gets the same pixels streamed or loaded.
//!
//! Invariants:
//! - The examples are in a fixed order: class directories sorted by name
//!   (their position is the label id, Keras's `labels="inferred"`), files
//!   sorted within each (only `.png .jpg .jpeg .gif .bmp`, any case); CSV rows
//!   in file order; TFRecord records in file order.
//! - Transforms run on `threads` worker threads, each example independent;
//!   results are delivered in example order, so a load is the same bits
//!   whatever the thread count. A random transform's draws come from specc's
//!   one generator ([`crate::prng`]) keyed by `(seed, epoch, example index)`
//!   ([`ImagePipeline::apply`]): the same example in the same epoch gets the
//!   same augmentation whichever thread runs it.
//! - Evaluation and prediction (`training = false`) skip the random
//!   transforms, as Keras's preprocessing layers do at inference, except
//!   `random_crop`, which becomes a central crop of the same size so the
//!   shape stays static.
//! - A bad image (an unreadable file, bytes that do not decode, a size the
//!   pipeline cannot take, a label out of range) is a [`DataError`] naming
//!   the file, and the CSV line or TFRecord record; with
//!   [`OnBadRecord::Skip`] it is skipped and its location kept.
//! - Nothing panics on user data; decoders refuse oversized headers before
//!   allocating (`specc_image::codec::MAX_PIXELS`).

use std::path::{Path, PathBuf};

use specc_image::codec::{self, DecodeDType, Format};
use specc_image::random::{self, Draws};
pub use specc_image::resize::ResizeMethod;
use specc_image::resize::{self, Centers};
use specc_image::Image;

use crate::data::{DataError, Dataset, InputData, Values};
use crate::io::example::{Example, Feature};
use crate::io::tfrecord::{self, Compression};
use crate::pipeline::OnBadRecord;
use crate::prng::{mix, SplitMix64};

/// The column name of the image input in a [`Source::Images`](crate::data::Source) data set.
pub const IMAGE_COLUMN: &str = "image";
/// The column name of the label in a [`Source::Images`](crate::data::Source) data set.
pub const LABEL_COLUMN: &str = "label";

/// Where the images come from.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// `image_dataset_from_directory(dir, labels="inferred")`: one
    /// sub-directory per class.
    Directory { dir: PathBuf },
    /// A CSV file with a header, a column of image paths (relative to the
    /// CSV's directory) and a column of int labels.
    Csv {
        path: PathBuf,
        path_column: String,
        label_column: String,
    },
    /// TFRecord files of `tf.train.Example`s: a bytes feature with the
    /// encoded image and an int64 label.
    TfRecord {
        paths: Vec<PathBuf>,
        compression: Compression,
        image_key: String,
        label_key: String,
    },
}

impl ImageSource {
    /// How the source is named in messages: its directory, CSV or files.
    pub fn display(&self) -> String {
        match self {
            ImageSource::Directory { dir } => dir.display().to_string(),
            ImageSource::Csv { path, .. } => path.display().to_string(),
            ImageSource::TfRecord { paths, .. } => paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// One per-example transform, with TF's name and arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageOp {
    /// `tf.io.decode_image(contents, channels, expand_animations=False)`,
    /// then `tf.cast(…, tf.float32)` (values 0..255, Keras's convention).
    DecodeImage { channels: usize },
    /// `tf.image.resize(image, size)` (bilinear, half-pixel centres, no
    /// antialias: TF 2's default).
    Resize { size: [usize; 2] },
    /// `tf.image.resize(image, size, method, antialias)` with another
    /// method than bilinear, or with `antialias` (`specc_image::resize`).
    ResizeKernel {
        size: [usize; 2],
        method: ResizeMethod,
        antialias: bool,
    },
    /// `tf.image.central_crop(image, central_fraction)`.
    CentralCrop { fraction: f64 },
    /// `tf.image.random_crop(image, size)`.
    RandomCrop { size: [usize; 3] },
    /// `tf.image.random_flip_left_right(image)`.
    RandomFlipLeftRight,
    /// `tf.image.random_flip_up_down(image)`.
    RandomFlipUpDown,
    /// `tf.image.random_brightness(image, max_delta)` (on 0..255 floats the
    /// delta is in the same units).
    RandomBrightness { max_delta: f32 },
    /// `tf.image.random_contrast(image, lower, upper)`.
    RandomContrast { lower: f32, upper: f32 },
    /// `tf.image.random_hue(image, max_delta)`.
    RandomHue { max_delta: f32 },
    /// `tf.image.random_saturation(image, lower, upper)`.
    RandomSaturation { lower: f32, upper: f32 },
    /// `tf.image.per_image_standardization(image)` (also in evaluation).
    PerImageStandardization,
}

impl ImageOp {
    /// TF's name of the transform.
    pub fn name(&self) -> &'static str {
        match self {
            ImageOp::DecodeImage { .. } => "decode_image",
            ImageOp::Resize { .. } => "resize",
            ImageOp::CentralCrop { .. } => "central_crop",
            ImageOp::RandomCrop { .. } => "random_crop",
            ImageOp::RandomFlipLeftRight => "random_flip_left_right",
            ImageOp::RandomFlipUpDown => "random_flip_up_down",
            ImageOp::RandomBrightness { .. } => "random_brightness",
            ImageOp::ResizeKernel { .. } => "resize",
            ImageOp::RandomContrast { .. } => "random_contrast",
            ImageOp::RandomHue { .. } => "random_hue",
            ImageOp::RandomSaturation { .. } => "random_saturation",
            ImageOp::PerImageStandardization => "per_image_standardization",
        }
    }

    /// Whether the transform draws random numbers.
    pub fn is_random(&self) -> bool {
        matches!(
            self,
            ImageOp::RandomCrop { .. }
                | ImageOp::RandomFlipLeftRight
                | ImageOp::RandomFlipUpDown
                | ImageOp::RandomBrightness { .. }
                | ImageOp::RandomContrast { .. }
                | ImageOp::RandomHue { .. }
                | ImageOp::RandomSaturation { .. }
        )
    }
}

/// The names of the transforms an image pipeline accepts (for "did you
/// mean" suggestions).
pub const TRANSFORM_NAMES: &[&str] = &[
    "decode_image",
    "resize",
    "central_crop",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "random_brightness",
    "random_contrast",
    "random_hue",
    "random_saturation",
    "per_image_standardization",
];

/// An image input's transforms, `decode_image` first.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePipeline {
    pub ops: Vec<ImageOp>,
}

/// A shape known when the pipeline is checked: `None` for a dimension that
/// depends on the image.
pub type StaticShape = [Option<usize>; 3];

impl ImagePipeline {
    /// The shape after each transform, and the final shape, which must be
    /// static: the error names the transform (by index) that cannot apply.
    pub fn shapes(&self) -> Result<Vec<StaticShape>, (usize, String)> {
        let mut shapes = Vec::with_capacity(self.ops.len());
        let mut s: StaticShape = [None, None, None];
        for (i, op) in self.ops.iter().enumerate() {
            match op {
                ImageOp::DecodeImage { channels } => {
                    if i != 0 {
                        return Err((i, "`decode_image` must be the first transform".into()));
                    }
                    s = [None, None, (*channels != 0).then_some(*channels)];
                }
                _ if i == 0 => {
                    return Err((
                        i,
                        "an image pipeline starts with `decode_image(channels = C)`".into(),
                    ))
                }
                ImageOp::Resize { size } | ImageOp::ResizeKernel { size, .. } => {
                    if size.contains(&0) {
                        return Err((i, format!("`size` must be positive, got {size:?}")));
                    }
                    s = [Some(size[0]), Some(size[1]), s[2]];
                }
                ImageOp::CentralCrop { fraction } => {
                    if !(*fraction > 0.0 && *fraction <= 1.0) {
                        return Err((
                            i,
                            format!("`central_fraction` must be in (0, 1], got {fraction}"),
                        ));
                    }
                    if *fraction < 1.0 {
                        s = [
                            s[0].map(|h| central(h, *fraction).1),
                            s[1].map(|w| central(w, *fraction).1),
                            s[2],
                        ];
                    }
                }
                ImageOp::RandomCrop { size } => {
                    if size.contains(&0) {
                        return Err((i, format!("`size` must be positive, got {size:?}")));
                    }
                    for k in 0..3 {
                        if let Some(d) = s[k] {
                            if size[k] > d {
                                return Err((
                                    i,
                                    format!(
                                        "`size` {size:?} is larger than the image [{}]",
                                        fmt_shape(&s)
                                    ),
                                ));
                            }
                        }
                    }
                    s = [Some(size[0]), Some(size[1]), Some(size[2])];
                }
                ImageOp::RandomBrightness { max_delta } => {
                    if max_delta.is_nan() || *max_delta < 0.0 {
                        return Err((
                            i,
                            format!("`max_delta` must be non-negative, got {max_delta}"),
                        ));
                    }
                }
                ImageOp::RandomHue { .. } | ImageOp::RandomSaturation { .. } if s[2] != Some(3) => {
                    return Err((
                        i,
                        "hue and saturation need RGB images: `decode_image(channels = 3)`".into(),
                    ));
                }
                ImageOp::RandomContrast { lower, upper }
                | ImageOp::RandomSaturation { lower, upper } => {
                    if lower.is_nan() || upper.is_nan() || upper <= lower || *lower < 0.0 {
                        return Err((
                            i,
                            format!("needs 0 <= lower < upper, got lower {lower}, upper {upper}"),
                        ));
                    }
                }
                ImageOp::RandomHue { max_delta } => {
                    if !(0.0..=0.5).contains(max_delta) {
                        return Err((
                            i,
                            format!("`max_delta` must be in [0, 0.5], got {max_delta}"),
                        ));
                    }
                }
                ImageOp::RandomFlipLeftRight
                | ImageOp::RandomFlipUpDown
                | ImageOp::PerImageStandardization => {}
            }
            shapes.push(s);
        }
        if self.ops.is_empty() {
            return Err((
                0,
                "an image pipeline needs `decode_image(channels = C)`".into(),
            ));
        }
        if s.iter().any(Option::is_none) {
            return Err((
                self.ops.len() - 1,
                format!(
                    "the image's shape [{}] is not static: give `decode_image` a `channels` and `resize` (or `random_crop`) to a fixed size",
                    fmt_shape(&s)
                ),
            ));
        }
        Ok(shapes)
    }

    /// The final `[H, W, C]` (see [`shapes`](Self::shapes)).
    pub fn output_shape(&self) -> Result<[usize; 3], (usize, String)> {
        let s = *self.shapes()?.last().expect("checked non-empty");
        Ok([s[0].unwrap_or(0), s[1].unwrap_or(0), s[2].unwrap_or(0)])
    }

    /// Decodes `bytes` and applies every transform: the random ones with
    /// draws keyed by `(seed, epoch, index)` when `training`, skipped (a
    /// central crop for `random_crop`) otherwise. Writes the float32 pixels,
    /// `[H, W, C]` row-major, into `out`.
    ///
    /// The transforms run on a flat `[H, W, C]` float32 buffer; the random
    /// ones use their draws exactly as `specc_image::random` does (a flip
    /// when the uniform draw is below 0.5; crop offsets `⌊u·(d − s + 1)⌋`
    /// for height, width and channels in that order; a brightness delta
    /// `−max_delta + u·2·max_delta`), which `tests` below check.
    pub fn apply(
        &self,
        bytes: &[u8],
        training: bool,
        key: (u64, u64, u64),
        out: &mut [f32],
    ) -> Result<(), String> {
        let (seed, epoch, index) = key;
        let mut stream = SplitMix64::new(mix(seed ^ mix(epoch ^ mix(index.wrapping_add(1)))));
        let mut draws = move || stream.uniform01_f32();
        let mut view: Option<View> = None;
        for op in &self.ops {
            let next = match (op, view.take()) {
                (ImageOp::DecodeImage { channels }, None)
                    if Format::sniff(bytes) == Some(Format::Jpeg) =>
                {
                    // Into this thread's pixel buffer (given back below):
                    // no allocation or clearing per example.
                    let mut raw = DECODED.with(|d| std::mem::take(&mut *d.borrow_mut()));
                    let [h, w, c] = codec::decode_jpeg_into(bytes, *channels, &mut raw)
                        .map_err(|e| e.message)?;
                    View::of(Pixels::U8(raw), h, w, c)
                }
                (ImageOp::DecodeImage { channels }, None) => {
                    let decoded = codec::decode_image(bytes, *channels, DecodeDType::U8, false)
                        .map_err(|e| e.message)?;
                    let s = decoded.shape().to_vec();
                    let Image::U8(a) = decoded else {
                        return Err("decode_image returned a non-uint8 image".into());
                    };
                    let (raw, _) = a.into_raw_vec_and_offset();
                    View::of(Pixels::U8(raw), s[0], s[1], s[2])
                }
                (_, None) => return Err("the pipeline does not start with decode_image".into()),
                (ImageOp::DecodeImage { .. }, Some(_)) => {
                    return Err("decode_image after the first transform".into())
                }
                (ImageOp::Resize { size }, Some(v)) => v.resize(*size),
                (
                    ImageOp::ResizeKernel {
                        size,
                        method,
                        antialias,
                    },
                    Some(v),
                ) => v.through(|im| resize::resize(&im, *size, *method, *antialias, false))?,
                (ImageOp::PerImageStandardization, Some(v)) => {
                    v.through(|im| specc_image::adjust::per_image_standardization(&im))?
                }
                (ImageOp::RandomContrast { lower, upper }, Some(v)) if training => {
                    v.through(|im| random::random_contrast(&im, *lower, *upper, &mut draws))?
                }
                (ImageOp::RandomHue { max_delta }, Some(v)) if training => {
                    v.through(|im| random::random_hue(&im, *max_delta, &mut draws))?
                }
                (ImageOp::RandomSaturation { lower, upper }, Some(v)) if training => {
                    v.through(|im| random::random_saturation(&im, *lower, *upper, &mut draws))?
                }
                (ImageOp::CentralCrop { fraction }, Some(v)) => {
                    let (top, h) = central(v.h, *fraction);
                    let (left, w) = central(v.w, *fraction);
                    v.crop(top, left, h, w)
                }
                (ImageOp::RandomCrop { size }, Some(v)) => {
                    if size[0] > v.h || size[1] > v.w || size[2] != v.c {
                        return Err(format!(
                            "random_crop: Need value.shape >= size, got value.shape [{}, {}, {}] and size {size:?}",
                            v.h, v.w, v.c
                        ));
                    }
                    let (top, left) = if training {
                        let top = draws.below(v.h - size[0] + 1);
                        let left = draws.below(v.w - size[1] + 1);
                        draws.below(1);
                        (top, left)
                    } else {
                        ((v.h - size[0]) / 2, (v.w - size[1]) / 2)
                    };
                    v.crop(top, left, size[0], size[1])
                }
                (ImageOp::RandomFlipLeftRight, Some(mut v)) if training => {
                    if draws.uniform() < 0.5 {
                        v.flip_lr = !v.flip_lr;
                    }
                    v
                }
                (ImageOp::RandomFlipUpDown, Some(mut v)) if training => {
                    if draws.uniform() < 0.5 {
                        v.flip_ud = !v.flip_ud;
                    }
                    v
                }
                (ImageOp::RandomBrightness { max_delta }, Some(v)) if training => {
                    let delta = -max_delta + draws.uniform() * (2.0 * max_delta);
                    let (h, w, c) = (v.h, v.w, v.c);
                    let mut px = vec![0f32; h * w * c];
                    v.materialize(&mut px);
                    px.iter_mut().for_each(|p| *p += delta);
                    View::of(Pixels::F32(px), h, w, c)
                }
                (_, Some(v)) => v,
            };
            view = Some(next);
        }
        let v = view.ok_or("an empty image pipeline")?;
        if v.h * v.w * v.c != out.len() {
            return Err(format!(
                "the image is [{}, {}, {}] after the transforms, the input needs {} values",
                v.h,
                v.w,
                v.c,
                out.len()
            ));
        }
        v.materialize(out);
        if let Pixels::U8(raw) = v.src {
            DECODED.with(|d| *d.borrow_mut() = raw);
        }
        Ok(())
    }
}

thread_local! {
    /// The pixel buffer JPEGs are decoded into, reused by the thread's
    /// next example.
    static DECODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decoded or materialized pixels, `[h, w, c]` row-major.
enum Pixels {
    U8(Vec<u8>),
    F32(Vec<f32>),
}

/// An image in the pipeline, kept lazy: a source image, an optional
/// bilinear resize of it, a crop window of the (resized) image and flips.
/// Geometric transforms only change the view; the pixels are computed once,
/// straight into their destination, and only those the window keeps (a
/// crop of a resize samples 224×224 pixels, not 256×256). A brightness
/// change materializes the view into a new float source. The values are
/// those of applying the transforms one by one: a resized pixel is the same
/// float32 expression whichever pixels are kept, crops and flips only
/// select.
struct View {
    src: Pixels,
    /// Source dims.
    sh: usize,
    sw: usize,
    /// Channels.
    c: usize,
    /// The resized dims (the source's when there is no resize).
    rh: usize,
    rw: usize,
    resized: bool,
    /// The window of the (resized) image, before flips.
    top: usize,
    left: usize,
    /// The visible dims (the window's).
    h: usize,
    w: usize,
    flip_lr: bool,
    flip_ud: bool,
}

impl View {
    fn of(src: Pixels, h: usize, w: usize, c: usize) -> View {
        View {
            src,
            sh: h,
            sw: w,
            c,
            rh: h,
            rw: w,
            resized: false,
            top: 0,
            left: 0,
            h,
            w,
            flip_lr: false,
            flip_ud: false,
        }
    }

    /// The view materialized as a float32 `[h, w, c]` image, transformed by
    /// a `specc_image` function, as a new view (its error is the example's).
    fn through(self, f: impl FnOnce(Image) -> specc_image::Result<Image>) -> Result<View, String> {
        let (h, w, c) = (self.h, self.w, self.c);
        let mut px = vec![0f32; h * w * c];
        self.materialize(&mut px);
        let image = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[h, w, c]), px)
            .map_err(|e| e.to_string())?;
        let out = f(Image::F32(image)).map_err(|e| e.message)?;
        let s = out.shape().to_vec();
        let (raw, _) = out.to_f32().into_raw_vec_and_offset();
        Ok(View::of(Pixels::F32(raw), s[0], s[1], s[2]))
    }

    /// Whether the view shows the (resized) image whole and unflipped.
    fn is_whole(&self) -> bool {
        self.top == 0
            && self.left == 0
            && self.h == self.rh
            && self.w == self.rw
            && !self.flip_lr
            && !self.flip_ud
    }

    /// `tf.image.resize(image, size, "bilinear", antialias=False)`.
    fn resize(self, size: [usize; 2]) -> View {
        if size == [self.h, self.w] {
            return self;
        }
        // A resize of a resize, or of a crop or flip, resamples the
        // materialized image.
        let base = if self.is_whole() && !self.resized {
            self
        } else {
            let (h, w, c) = (self.h, self.w, self.c);
            let mut px = vec![0f32; h * w * c];
            self.materialize(&mut px);
            View::of(Pixels::F32(px), h, w, c)
        };
        View {
            rh: size[0],
            rw: size[1],
            resized: true,
            h: size[0],
            w: size[1],
            ..base
        }
    }

    /// The crop `[top, top + h) × [left, left + w)` of the visible image.
    fn crop(self, top: usize, left: usize, h: usize, w: usize) -> View {
        let top = if self.flip_ud {
            self.top + (self.h - top - h)
        } else {
            self.top + top
        };
        let left = if self.flip_lr {
            self.left + (self.w - left - w)
        } else {
            self.left + left
        };
        View {
            top,
            left,
            h,
            w,
            ..self
        }
    }

    /// Writes the visible pixels into `dst` (`h·w·c` values).
    fn materialize(&self, dst: &mut [f32]) {
        match &self.src {
            Pixels::U8(px) => self.sample(px, dst),
            Pixels::F32(px) => self.sample(px, dst),
        }
    }

    fn sample<T: Copy + Into<f32>>(&self, src: &[T], dst: &mut [f32]) {
        let (c, w) = (self.c, self.w);
        let row_len = self.sw * c;
        // The source column of each visible column (its taps when resized).
        let cols: Vec<(usize, usize, f32)> = (0..w)
            .map(|x| {
                let vx = if self.flip_lr { w - 1 - x } else { x };
                let rx = self.left + vx;
                if self.resized {
                    resize::bilinear_tap(rx, self.sw, self.rw, Centers::V2)
                } else {
                    (rx, rx, 0.0)
                }
            })
            .collect();
        let mut rows = LerpedRows::new(if self.resized { w * c } else { 0 });
        for (y, out) in dst.chunks_exact_mut(w * c).enumerate().take(self.h) {
            let vy = if self.flip_ud { self.h - 1 - y } else { y };
            let ry = self.top + vy;
            if !self.resized {
                let r = &src[ry * row_len..(ry + 1) * row_len];
                for (o, &(x0, _, _)) in out.chunks_exact_mut(c).zip(&cols) {
                    for (d, s) in o.iter_mut().zip(&r[x0 * c..(x0 + 1) * c]) {
                        *d = (*s).into();
                    }
                }
                continue;
            }
            let (y0, y1, dy) = resize::bilinear_tap(ry, self.sh, self.rh, Centers::V2);
            // TF's lerp order: across first (top and bottom rows), then down.
            // A source row's horizontal lerp is shared by the output rows
            // that read it (two are kept), so each is computed once.
            let top = rows.row(y0, src, row_len, &cols, c);
            let bottom = rows.row(y1, src, row_len, &cols, c);
            let (top, bottom) = (&rows.bufs[top], &rows.bufs[bottom]);
            for ((d, &t), &b) in out.iter_mut().zip(top).zip(bottom) {
                *d = t + (b - t) * dy;
            }
        }
    }
}

/// The horizontally interpolated source rows of a resized view: two slots,
/// each the lerp across of one source row at every visible column.
struct LerpedRows {
    bufs: [Vec<f32>; 2],
    which: [Option<usize>; 2],
    next: usize,
    /// The source row being interpolated, as float32.
    row_f32: Vec<f32>,
}

impl LerpedRows {
    fn new(len: usize) -> LerpedRows {
        LerpedRows {
            bufs: [vec![0.0; len], vec![0.0; len]],
            which: [None, None],
            next: 0,
            row_f32: Vec::new(),
        }
    }

    /// The slot holding source row `y` across, computing it when absent.
    fn row<T: Copy + Into<f32>>(
        &mut self,
        y: usize,
        src: &[T],
        row_len: usize,
        cols: &[(usize, usize, f32)],
        c: usize,
    ) -> usize {
        if let Some(k) = self.which.iter().position(|w| *w == Some(y)) {
            return k;
        }
        let k = self.next;
        self.next = 1 - k;
        self.which[k] = Some(y);
        // The source row as float32 once (each value is read by about two
        // taps), then the lerps across.
        self.row_f32.clear();
        self.row_f32.extend(
            src[y * row_len..(y + 1) * row_len]
                .iter()
                .map(|&v| v.into()),
        );
        let r = &self.row_f32[..];
        let out = &mut self.bufs[k];
        match c {
            1 => lerp_across::<1>(r, cols, out),
            3 => lerp_across::<3>(r, cols, out),
            4 => lerp_across::<4>(r, cols, out),
            _ => {
                for (o, &(x0, x1, dx)) in out.chunks_exact_mut(c).zip(cols) {
                    let (a, b) = (&r[x0 * c..(x0 + 1) * c], &r[x1 * c..(x1 + 1) * c]);
                    for ((d, &a), &b) in o.iter_mut().zip(a).zip(b) {
                        *d = a + (b - a) * dx;
                    }
                }
            }
        }
        k
    }
}

/// `out[x][k] = a + (b − a)·dx` for the taps `(x0, x1, dx)` of each visible
/// column of source row `r`, with `C` channels known at compile time.
fn lerp_across<const C: usize>(r: &[f32], cols: &[(usize, usize, f32)], out: &mut [f32]) {
    for (o, &(x0, x1, dx)) in out.chunks_exact_mut(C).zip(cols) {
        let a: &[f32; C] = r[x0 * C..x0 * C + C].try_into().expect("C channels");
        let b: &[f32; C] = r[x1 * C..x1 * C + C].try_into().expect("C channels");
        for k in 0..C {
            o[k] = a[k] + (b[k] - a[k]) * dx;
        }
    }
}

fn fmt_shape(s: &StaticShape) -> String {
    s.iter()
        .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `central_crop`'s start and size along a dimension of `n`: start
/// `int((n − n·fraction) / 2)` in float64, size `n − 2·start`.
fn central(n: usize, fraction: f64) -> (usize, usize) {
    if fraction >= 1.0 {
        return (0, n);
    }
    let start = ((n as f64 - n as f64 * fraction) / 2.0) as usize;
    (start, n - 2 * start)
}

/// One example: where its bytes are, and its label.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageExample {
    /// The file the bytes come from (the image file, or the TFRecord file).
    pub file: PathBuf,
    /// The CSV line (1-based) or TFRecord record (0-based), when there is one.
    pub row: Option<usize>,
    /// The encoded bytes, for TFRecord sources (`None`: read `file`).
    pub bytes: Option<Vec<u8>>,
    /// The label id.
    pub label: i64,
}

/// The encoded image (one bytes value under `image_key`) and the label (one
/// int64 under `label_key`) of an image `tf.train.Example`, the image taken
/// out of it; an error names the feature (image first) and what is wrong.
pub(crate) fn take_image_and_label<'k>(
    example: &mut Example,
    image_key: &'k str,
    label_key: &'k str,
) -> Result<(Vec<u8>, i64), (&'k str, String)> {
    let bytes = match example.features.remove(image_key) {
        Some(Feature::BytesList(mut b)) if b.len() == 1 => b.swap_remove(0),
        Some(f) => {
            return Err((
                image_key,
                format!(
                    "expected one bytes value (the encoded image), found {}",
                    f.kind()
                ),
            ))
        }
        None => return Err((image_key, "missing feature".into())),
    };
    let label = match example.features.get(label_key) {
        Some(Feature::Int64List(v)) if v.len() == 1 => v[0],
        Some(f) => {
            return Err((
                label_key,
                format!("expected one int64 label, found {}", f.kind()),
            ))
        }
        None => return Err((label_key, "missing feature".into())),
    };
    Ok((bytes, label))
}

impl ImageExample {
    fn error(&self, message: impl Into<String>) -> DataError {
        DataError::at(
            &self.file.display().to_string(),
            self.row,
            Some(IMAGE_COLUMN),
            message,
        )
    }
}

/// The examples of a source, in order, and the class names (a directory's
/// sub-directories; empty for the other sources).
pub fn list_examples(source: &ImageSource) -> Result<(Vec<ImageExample>, Vec<String>), DataError> {
    match source {
        ImageSource::Directory { dir } => list_directory(dir),
        ImageSource::Csv {
            path,
            path_column,
            label_column,
        } => list_csv(path, path_column, Some(label_column)).map(|e| (e, Vec::new())),
        ImageSource::TfRecord {
            paths,
            compression,
            image_key,
            label_key,
        } => list_tfrecord(paths, *compression, image_key, label_key).map(|e| (e, Vec::new())),
    }
}

/// The examples `specc predict` reads from `data` for a spec whose source is
/// `like`: a directory's image files (any depth, sorted by path), a CSV's
/// path column (`like`'s, else `path`), or TFRecord Examples' encoded image
/// (`like`'s key, else `image/encoded`). No label is read (labels are 0).
pub fn list_unlabeled(data: &Path, like: &ImageSource) -> Result<Vec<ImageExample>, DataError> {
    let file = data.display().to_string();
    if data.is_dir() {
        let files = image_files_under(data)?;
        if files.is_empty() {
            return Err(DataError::new(
                &file,
                "no image files (.png, .jpg, .jpeg, .gif, .bmp) in the directory",
            ));
        }
        return Ok(files
            .into_iter()
            .map(|f| ImageExample {
                file: f,
                row: None,
                bytes: None,
                label: 0,
            })
            .collect());
    }
    let name = file.to_ascii_lowercase();
    if name.ends_with(".csv") {
        let column = match like {
            ImageSource::Csv { path_column, .. } => path_column.as_str(),
            _ => "path",
        };
        return list_csv(data, column, None);
    }
    let (image_key, compression) = match like {
        ImageSource::TfRecord {
            image_key,
            compression,
            ..
        } => (image_key.as_str(), *compression),
        _ => ("image/encoded", Compression::None),
    };
    let records =
        tfrecord::read_file(data, compression).map_err(|e| DataError::new(&file, e.to_string()))?;
    let mut out = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let example = Example::decode(r, i)
            .map_err(|e| DataError::at(&file, Some(i), None, e.to_string()))?;
        match example.features.get(image_key) {
            Some(Feature::BytesList(b)) if b.len() == 1 => out.push(ImageExample {
                file: data.to_path_buf(),
                row: Some(i),
                bytes: Some(b[0].clone()),
                label: 0,
            }),
            _ => {
                return Err(DataError::at(
                    &file,
                    Some(i),
                    Some(image_key),
                    "expected one bytes value (the encoded image)",
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(DataError::new(&file, "no records"));
    }
    Ok(out)
}

/// The image files below `dir` (any depth), sorted by path: how Keras
/// walks a class directory.
fn image_files_under(dir: &Path) -> Result<Vec<PathBuf>, DataError> {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for (name, path, is_dir) in sorted_entries(&d)? {
            if is_dir {
                stack.push(path);
            } else if Format::from_extension(&name).is_some() {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn sorted_entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, DataError> {
    let file = dir.display().to_string();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| DataError::new(&file, format!("cannot read the directory: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataError::new(&file, e.to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let is_dir = path.is_dir();
        out.push((name, path, is_dir));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn list_directory(dir: &Path) -> Result<(Vec<ImageExample>, Vec<String>), DataError> {
    let file = dir.display().to_string();
    let classes: Vec<(String, PathBuf)> = sorted_entries(dir)?
        .into_iter()
        .filter(|e| e.2)
        .map(|e| (e.0, e.1))
        .collect();
    if classes.is_empty() {
        return Err(DataError::new(
            &file,
            "no class sub-directories (image_dataset_from_directory expects one directory per class)",
        ));
    }
    let mut examples = Vec::new();
    for (label, (_, class_dir)) in classes.iter().enumerate() {
        let files = image_files_under(class_dir)?;
        examples.extend(files.into_iter().map(|f| ImageExample {
            file: f,
            row: None,
            bytes: None,
            label: label as i64,
        }));
    }
    if examples.is_empty() {
        return Err(DataError::new(
            &file,
            "no image files (.png, .jpg, .jpeg, .gif, .bmp) in the class directories",
        ));
    }
    Ok((examples, classes.into_iter().map(|c| c.0).collect()))
}

/// The examples of an image CSV: each row's path (relative to the CSV's
/// directory) and, with `label_column`, its integer label (else 0). Read by
/// the one CSV reader ([`crate::data::csv_file::CsvFile`]: header, quoting, gzip,
/// row limit, line numbers as for every CSV source).
fn list_csv(
    path: &Path,
    path_column: &str,
    label_column: Option<&str>,
) -> Result<Vec<ImageExample>, DataError> {
    let file = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new("."));
    let mut csv = crate::data::csv_file::CsvFile::open(path, &file)?;
    let columns: Vec<String> = std::iter::once(path_column)
        .chain(label_column)
        .map(str::to_string)
        .collect();
    let plan = csv.plan(&file, [columns.as_slice()])?;
    let (pi, li) = (plan[0][0], plan[0].get(1).copied());
    let fields = csv.header.len();
    let mut record = crate::data::csv_file::ByteRecord::new();
    let mut out = Vec::new();
    while let Some(line) = csv.read(&file, &mut record)? {
        if record.len() != fields {
            return Err(crate::data::csv_file::wrong_field_count(
                &file,
                line,
                record.len(),
                fields,
            ));
        }
        let text = |i: usize| String::from_utf8_lossy(record.get(i).unwrap_or(b"")).into_owned();
        let p = text(pi);
        let p = p.trim();
        if p.is_empty() {
            return Err(DataError::at(
                &file,
                Some(line),
                Some(path_column),
                "empty path",
            ));
        }
        let label: i64 = match (li, label_column) {
            (Some(li), Some(label_column)) => {
                let label_text = text(li);
                let label_text = label_text.trim();
                label_text.parse().map_err(|_| {
                    DataError::at(
                        &file,
                        Some(line),
                        Some(label_column),
                        format!("`{label_text}` is not an integer label"),
                    )
                })?
            }
            _ => 0,
        };
        out.push(ImageExample {
            file: base.join(p),
            row: Some(line),
            bytes: None,
            label,
        });
    }
    if out.is_empty() {
        return Err(DataError::new(&file, "no rows"));
    }
    Ok(out)
}

fn list_tfrecord(
    paths: &[PathBuf],
    compression: Compression,
    image_key: &str,
    label_key: &str,
) -> Result<Vec<ImageExample>, DataError> {
    let mut out = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let records = tfrecord::read_file(path, compression)
            .map_err(|e| DataError::new(&file, e.to_string()))?;
        for (i, r) in records.iter().enumerate() {
            let mut example = Example::decode(r, i)
                .map_err(|e| DataError::at(&file, Some(i), None, e.to_string()))?;
            let (bytes, label) = take_image_and_label(&mut example, image_key, label_key)
                .map_err(|(key, m)| DataError::at(&file, Some(i), Some(key), m))?;
            out.push(ImageExample {
                file: path.clone(),
                row: Some(i),
                bytes: Some(bytes),
                label,
            });
        }
    }
    if out.is_empty() {
        return Err(DataError::new(
            &paths
                .first()
                .map_or_else(String::new, |p| p.display().to_string()),
            "no records",
        ));
    }
    Ok(out)
}

impl ImageExample {
    /// The encoded bytes: held (a TFRecord's), or read from the file.
    pub fn read(&self) -> Result<std::borrow::Cow<'_, [u8]>, DataError> {
        match &self.bytes {
            Some(b) => Ok(std::borrow::Cow::Borrowed(b)),
            None => std::fs::read(&self.file)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| self.error(format!("cannot read: {e}"))),
        }
    }

    /// The example as `specc predict` names it: its file, and for a
    /// TFRecord its record (`images.tfrecord#12`).
    pub fn key(&self) -> String {
        match (&self.bytes, self.row) {
            (Some(_), Some(r)) => format!("{}#{r}", self.file.display()),
            _ => self.file.display().to_string(),
        }
    }
}

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

/// A batch source of images decoded batch by batch (`specc predict`): each
/// batch's examples go through `pipeline` without its random transforms,
/// on `threads` threads, straight into the image input's buffer; every
/// other input (a label `predict` does not read) is zeros. Memory: one
/// batch, whatever the number of images.
pub struct ImageBatches {
    examples: Vec<ImageExample>,
    pipeline: ImagePipeline,
    image_input: String,
    threads: usize,
    pos: usize,
}

impl ImageBatches {
    /// The batches of `examples` for the model input `image_input`.
    pub fn new(
        examples: Vec<ImageExample>,
        pipeline: ImagePipeline,
        image_input: &str,
        threads: usize,
    ) -> ImageBatches {
        ImageBatches {
            examples,
            pipeline,
            image_input: image_input.to_string(),
            threads,
            pos: 0,
        }
    }
}

impl crate::source::BatchSource for ImageBatches {
    fn next_batch(
        &mut self,
        buffers: &mut crate::source::BatchBuffers<'_>,
    ) -> Result<usize, DataError> {
        let n = buffers.max_batch().min(self.examples.len() - self.pos);
        if n == 0 {
            return Ok(0);
        }
        let examples = &self.examples[self.pos..self.pos + n];
        let base = self.pos;
        for i in 0..buffers.inputs().len() {
            let (name, width) = {
                let l = &buffers.inputs()[i];
                (l.name.clone(), l.per_example)
            };
            match buffers.input_mut(i) {
                crate::data::ValuesMut::F32(dst) if name == self.image_input => {
                    let pipeline = &self.pipeline;
                    let results =
                        fill_in_order(&mut dst[..n * width], width, self.threads, |k, px| {
                            let ex = &examples[k];
                            let bytes = &*ex.read()?;
                            pipeline
                                .apply(bytes, false, (0, 0, (base + k) as u64), px)
                                .map_err(|m| ex.error(m))
                        });
                    results.into_iter().collect::<Result<(), DataError>>()?;
                }
                crate::data::ValuesMut::F32(dst) => dst[..n * width].fill(0.0),
                crate::data::ValuesMut::I32(dst) => dst[..n * width].fill(0),
            }
        }
        self.pos += n;
        Ok(n)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use specc_image::random;

    /// `tf.image.resize(image, size, "bilinear")` of an `[h, w, c]` float
    /// image, one pixel at a time in TF's lerp form (the library's
    /// `resize` sums weighted taps instead, within an ulp of this): the
    /// reference the lazy view must equal bit for bit.
    fn resize_reference(im: &Image, size: [usize; 2]) -> Image {
        let a = im.to_f32();
        let (ih, iw, c) = (a.shape()[0], a.shape()[1], a.shape()[2]);
        let mut out = ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[size[0], size[1], c]));
        for y in 0..size[0] {
            let (y0, y1, dy) = resize::bilinear_tap(y, ih, size[0], Centers::V2);
            for x in 0..size[1] {
                let (x0, x1, dx) = resize::bilinear_tap(x, iw, size[1], Centers::V2);
                for k in 0..c {
                    let top = a[[y0, x0, k]] + (a[[y0, x1, k]] - a[[y0, x0, k]]) * dx;
                    let bottom = a[[y1, x0, k]] + (a[[y1, x1, k]] - a[[y1, x0, k]]) * dx;
                    out[[y, x, k]] = top + (bottom - top) * dy;
                }
            }
        }
        Image::F32(out)
    }

    /// Resizes, crops and flips composed lazily (only the kept pixels
    /// sampled, straight into the destination) equal the transforms applied
    /// one after the other, for every draw: a resize after a crop, a crop
    /// of a flipped image, a brightness change between geometric ones.
    #[test]
    fn the_lazy_view_equals_the_transforms_one_by_one() {
        let px: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 53 % 251) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[9, 11, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::Resize { size: [13, 12] },
                ImageOp::RandomFlipLeftRight,
                ImageOp::RandomCrop { size: [10, 9, 3] },
                ImageOp::RandomFlipUpDown,
                ImageOp::RandomBrightness { max_delta: 7.0 },
                ImageOp::RandomCrop { size: [8, 8, 3] },
                ImageOp::Resize { size: [5, 6] },
                ImageOp::RandomFlipLeftRight,
            ],
        };
        for index in 0..40u64 {
            let key = (3, 1, index);
            let mut got = vec![0f32; 5 * 6 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im = resize_reference(&Image::F32(image.to_f32()), [13, 12]);
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let im = random::random_crop(&im, &[10, 9, 3], &mut d).expect("crop");
            let im = random::random_flip_up_down(&im, &mut d).expect("flip");
            let im = random::random_brightness(&im, 7.0, &mut d).expect("brightness");
            let im = random::random_crop(&im, &[8, 8, 3], &mut d).expect("crop");
            let im = resize_reference(&im, [5, 6]);
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
    }

    /// The transforms that go through `specc_image` (a resize with another
    /// method or antialias, hue, saturation, contrast, standardization)
    /// equal the library's functions with the same draws, and in
    /// evaluation the random ones are skipped while standardization stays.
    #[test]
    fn library_transforms_equal_specc_image_with_the_same_draws() {
        let px: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 29 % 253) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[9, 11, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::ResizeKernel {
                    size: [6, 5],
                    method: ResizeMethod::Area,
                    antialias: false,
                },
                ImageOp::RandomHue { max_delta: 0.3 },
                ImageOp::RandomSaturation {
                    lower: 0.5,
                    upper: 1.5,
                },
                ImageOp::RandomContrast {
                    lower: 0.2,
                    upper: 1.8,
                },
                ImageOp::ResizeKernel {
                    size: [4, 4],
                    method: ResizeMethod::Lanczos3,
                    antialias: true,
                },
                ImageOp::PerImageStandardization,
            ],
        };
        assert_eq!(pipeline.output_shape(), Ok([4, 4, 3]));
        let float = Image::F32(image.to_f32());
        for index in 0..10u64 {
            let key = (9, 0, index);
            let mut got = vec![0f32; 4 * 4 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im =
                resize::resize(&float, [6, 5], ResizeMethod::Area, false, false).expect("area");
            let im = random::random_hue(&im, 0.3, &mut d).expect("hue");
            let im = random::random_saturation(&im, 0.5, 1.5, &mut d).expect("saturation");
            let im = random::random_contrast(&im, 0.2, 1.8, &mut d).expect("contrast");
            let im =
                resize::resize(&im, [4, 4], ResizeMethod::Lanczos3, true, false).expect("lanczos");
            let im = specc_image::adjust::per_image_standardization(&im).expect("standardize");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
        // Evaluation: no random transform, standardization still applied.
        let mut got = vec![0f32; 4 * 4 * 3];
        pipeline
            .apply(&png, false, (9, 0, 0), &mut got)
            .expect("apply");
        let im = resize::resize(&float, [6, 5], ResizeMethod::Area, false, false).expect("area");
        let im = resize::resize(&im, [4, 4], ResizeMethod::Lanczos3, true, false).expect("lanczos");
        let im = specc_image::adjust::per_image_standardization(&im).expect("standardize");
        let want: Vec<f32> = im.to_f32().iter().copied().collect();
        assert_eq!(got, want, "evaluation");
    }

    /// The pipeline's flat-buffer transforms use their draws as
    /// `specc_image::random` does: the same stream gives the same pixels.
    #[test]
    fn the_pipeline_draws_as_specc_image_random_does() {
        let px: Vec<u8> = (0..6 * 7 * 3).map(|i| (i * 37 % 251) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[6, 7, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::RandomCrop { size: [4, 5, 3] },
                ImageOp::RandomFlipLeftRight,
                ImageOp::RandomFlipUpDown,
                ImageOp::RandomBrightness { max_delta: 10.0 },
            ],
        };
        for index in 0..20u64 {
            let key = (5, 2, index);
            let mut got = vec![0f32; 4 * 5 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut stream = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
            let mut d = move || stream.uniform01_f32();
            let im = Image::F32(image.to_f32());
            let im = random::random_crop(&im, &[4, 5, 3], &mut d).expect("crop");
            let im = random::random_flip_left_right(&im, &mut d).expect("flip");
            let im = random::random_flip_up_down(&im, &mut d).expect("flip");
            let im = random::random_brightness(&im, 10.0, &mut d).expect("brightness");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
        }
    }
}
