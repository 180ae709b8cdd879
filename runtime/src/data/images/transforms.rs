//! The transform chain of an image input: `tf.image`'s transforms with
//! TF's names and arguments ([`ImageOp`]), the pipeline ([`ImagePipeline`],
//! `decode_image` first) and its static shapes, checked before anything
//! runs (what sema puts carets under).
//!
//! Invariants: a pipeline whose [`shapes`](ImagePipeline::shapes) are `Ok`
//! starts with `decode_image` and ends in a static `[H, W, C]`, the shape
//! [`apply`](ImagePipeline::apply) writes; every argument is in the range
//! TF accepts (an error names the transform by index).

use specc_image::resize::ResizeMethod;

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
}

fn fmt_shape(s: &StaticShape) -> String {
    s.iter()
        .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `central_crop`'s start and size along a dimension of `n`: start
/// `int((n − n·fraction) / 2)` in float64, size `n − 2·start`.
pub(super) fn central(n: usize, fraction: f64) -> (usize, usize) {
    if fraction >= 1.0 {
        return (0, n);
    }
    let start = ((n as f64 - n as f64 * fraction) / 2.0) as usize;
    (start, n - 2 * start)
}
