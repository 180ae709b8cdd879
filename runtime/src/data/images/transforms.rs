//! The transform chain of an image input: `tf.image`'s transforms with
//! TF's names and arguments ([`ImageOp`]), the pipeline ([`ImagePipeline`],
//! `decode_image` first) and its static shapes, checked before anything
//! runs (what sema puts carets under).
//!
//! Invariants: a pipeline whose [`shapes`](ImagePipeline::shapes) are `Ok`
//! starts with `decode_image` and ends in a static `[H, W, C]`, the shape
//! [`apply`](ImagePipeline::apply) writes; every argument is in the range
//! TF accepts (an error names the transform by index).

use specc_image::crop_resize::CropMethod;
use specc_image::glimpse::GlimpseNoise;
use specc_image::patches::{window_axis, Padding};
use specc_image::random::DistortedBoxOptions;
use specc_image::resize::{Centers, ResizeMethod};
use specc_image::DType;

/// A colour-space conversion of `tf.image` (`specc_image::color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorConversion {
    RgbToGrayscale,
    GrayscaleToRgb,
    RgbToHsv,
    HsvToRgb,
    RgbToYiq,
    YiqToRgb,
    RgbToYuv,
    YuvToRgb,
}

impl ColorConversion {
    /// Every conversion, with TF's name.
    pub const ALL: [(&'static str, ColorConversion); 8] = [
        ("rgb_to_grayscale", ColorConversion::RgbToGrayscale),
        ("grayscale_to_rgb", ColorConversion::GrayscaleToRgb),
        ("rgb_to_hsv", ColorConversion::RgbToHsv),
        ("hsv_to_rgb", ColorConversion::HsvToRgb),
        ("rgb_to_yiq", ColorConversion::RgbToYiq),
        ("yiq_to_rgb", ColorConversion::YiqToRgb),
        ("rgb_to_yuv", ColorConversion::RgbToYuv),
        ("yuv_to_rgb", ColorConversion::YuvToRgb),
    ];

    /// The conversion TF names `name`.
    pub fn from_name(name: &str) -> Option<ColorConversion> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// TF's name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("", |(n, _)| n)
    }

    /// The channels the conversion takes and gives.
    pub fn channels(self) -> (usize, usize) {
        match self {
            ColorConversion::RgbToGrayscale => (3, 1),
            ColorConversion::GrayscaleToRgb => (1, 3),
            _ => (3, 3),
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
    /// A colour conversion (`tf.image.rgb_to_grayscale`, ...).
    Color(ColorConversion),
    /// `tf.image.crop_to_bounding_box(image, offset_height, offset_width,
    /// target_height, target_width)`.
    CropToBoundingBox {
        offset: [usize; 2],
        size: [usize; 2],
    },
    /// `tf.image.pad_to_bounding_box(image, offset_height, offset_width,
    /// target_height, target_width)`.
    PadToBoundingBox {
        offset: [usize; 2],
        size: [usize; 2],
    },
    /// `tf.image.resize_with_crop_or_pad(image, target_height, target_width)`.
    ResizeWithCropOrPad { size: [usize; 2] },
    /// `tf.image.resize_with_pad(image, target_height, target_width,
    /// method, antialias)`.
    ResizeWithPad {
        size: [usize; 2],
        method: ResizeMethod,
        antialias: bool,
    },
    /// `tf.image.convert_image_dtype(image, dtype, saturate)` of the
    /// decoded uint8 image, held as float32 values: to float32 its 0..255
    /// values times `1/255` (float32), into [0, 1]; to another dtype the
    /// image's values cast to uint8 (the decoded pixels) through
    /// `specc_image::convert`.
    ConvertImageDtype { dtype: DType, saturate: bool },
    /// `tf.image.flip_left_right(image)`.
    FlipLeftRight,
    /// `tf.image.flip_up_down(image)`.
    FlipUpDown,
    /// `tf.image.transpose(image)`.
    Transpose,
    /// `tf.image.rot90(image, k)`.
    Rot90 { k: i64 },
    /// `tf.image.adjust_brightness(image, delta)` (0..255 units).
    AdjustBrightness { delta: f32 },
    /// `tf.image.adjust_contrast(image, contrast_factor)`.
    AdjustContrast { factor: f32 },
    /// `tf.image.adjust_gamma(image, gamma, gain)`.
    AdjustGamma { gamma: f32, gain: f32 },
    /// `tf.image.adjust_hue(image, delta)`.
    AdjustHue { delta: f32 },
    /// `tf.image.adjust_saturation(image, saturation_factor)`.
    AdjustSaturation { factor: f32 },
    /// `tf.image.adjust_jpeg_quality(image, jpeg_quality)`.
    AdjustJpegQuality { quality: i32 },
    /// `tf.image.random_jpeg_quality(image, min_jpeg_quality,
    /// max_jpeg_quality)`: a quality uniform in `[min, max)`.
    RandomJpegQuality { min: i32, max: i32 },
    /// The Inception-style random crop: `tf.image.sample_distorted_bounding_box`
    /// of the whole image, then the image sliced to the box (skipped in
    /// evaluation; the size depends on the draw, so a resize follows).
    SampleDistortedBoundingBox(DistortedBoxOptions),
    /// `tf.image.extract_glimpse(image[None], size, [offsets], centered,
    /// normalized, noise)[0]`: one glimpse per image at the same offsets;
    /// `uniform`/`gaussian` noise outside the image from the example's draws.
    ExtractGlimpse {
        size: [usize; 2],
        offsets: [f32; 2],
        centered: bool,
        normalized: bool,
        noise: GlimpseNoise,
    },
    /// `tf.image.crop_and_resize(image[None], [boxes], [0], crop_size,
    /// method, extrapolation_value)[0]`: one box per image.
    CropAndResize {
        boxes: [f32; 4],
        crop_size: [usize; 2],
        method: CropMethod,
        extrapolation_value: f32,
    },
    /// `tf.image.extract_patches(image[None], [1, kh, kw, 1], [1, sh, sw,
    /// 1], [1, rh, rw, 1], padding)[0]`: `[out_h, out_w, kh·kw·C]`.
    ExtractPatches {
        sizes: [usize; 2],
        strides: [usize; 2],
        rates: [usize; 2],
        padding: Padding,
    },
    /// `tf.compat.v1.image.resize_bilinear`, `resize_nearest_neighbor`,
    /// `resize_bicubic` (`method` bilinear, nearest, bicubic) and
    /// `resize_area` (`area`) with `align_corners` and
    /// `half_pixel_centers`.
    ResizeV1 {
        size: [usize; 2],
        method: ResizeMethod,
        centers: Centers,
    },
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
            ImageOp::Color(c) => c.name(),
            ImageOp::CropToBoundingBox { .. } => "crop_to_bounding_box",
            ImageOp::PadToBoundingBox { .. } => "pad_to_bounding_box",
            ImageOp::ResizeWithCropOrPad { .. } => "resize_with_crop_or_pad",
            ImageOp::ResizeWithPad { .. } => "resize_with_pad",
            ImageOp::ConvertImageDtype { .. } => "convert_image_dtype",
            ImageOp::FlipLeftRight => "flip_left_right",
            ImageOp::FlipUpDown => "flip_up_down",
            ImageOp::Transpose => "transpose",
            ImageOp::Rot90 { .. } => "rot90",
            ImageOp::AdjustBrightness { .. } => "adjust_brightness",
            ImageOp::AdjustContrast { .. } => "adjust_contrast",
            ImageOp::AdjustGamma { .. } => "adjust_gamma",
            ImageOp::AdjustHue { .. } => "adjust_hue",
            ImageOp::AdjustSaturation { .. } => "adjust_saturation",
            ImageOp::AdjustJpegQuality { .. } => "adjust_jpeg_quality",
            ImageOp::RandomJpegQuality { .. } => "random_jpeg_quality",
            ImageOp::SampleDistortedBoundingBox(_) => "sample_distorted_bounding_box",
            ImageOp::ExtractGlimpse { .. } => "extract_glimpse",
            ImageOp::CropAndResize { .. } => "crop_and_resize",
            ImageOp::ExtractPatches { .. } => "extract_patches",
            ImageOp::ResizeV1 { method, .. } => match method {
                ResizeMethod::Nearest => "resize_nearest_neighbor",
                ResizeMethod::Bicubic => "resize_bicubic",
                ResizeMethod::Area => "resize_area",
                _ => "resize_bilinear",
            },
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
                | ImageOp::RandomJpegQuality { .. }
                | ImageOp::SampleDistortedBoundingBox(_)
        ) || matches!(self, ImageOp::ExtractGlimpse { noise, .. } if *noise != GlimpseNoise::Zero)
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
    "rgb_to_grayscale",
    "grayscale_to_rgb",
    "rgb_to_hsv",
    "hsv_to_rgb",
    "rgb_to_yiq",
    "yiq_to_rgb",
    "rgb_to_yuv",
    "yuv_to_rgb",
    "crop_to_bounding_box",
    "pad_to_bounding_box",
    "resize_with_crop_or_pad",
    "resize_with_pad",
    "convert_image_dtype",
    "flip_left_right",
    "flip_up_down",
    "transpose",
    "rot90",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_saturation",
    "adjust_jpeg_quality",
    "random_jpeg_quality",
    "sample_distorted_bounding_box",
    "extract_glimpse",
    "crop_and_resize",
    "extract_patches",
    "resize_bilinear",
    "resize_nearest_neighbor",
    "resize_bicubic",
    "resize_area",
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
                | ImageOp::PerImageStandardization
                | ImageOp::ConvertImageDtype { .. }
                | ImageOp::FlipLeftRight
                | ImageOp::FlipUpDown
                | ImageOp::AdjustBrightness { .. }
                | ImageOp::AdjustContrast { .. } => {}
                other => s = library_shape(other, s).map_err(|m| (i, m))?,
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

/// The shape after a transform `specc_image` runs (`library_ops`), with
/// its arguments checked as TF does.
fn library_shape(op: &ImageOp, s: StaticShape) -> Result<StaticShape, String> {
    let channels = |want: &[usize], what: &str| -> Result<(), String> {
        match s[2] {
            Some(c) if !want.contains(&c) => Err(format!(
                "`{}` needs {what} images, but they have {c} channels",
                op.name()
            )),
            _ => Ok(()),
        }
    };
    Ok(match op {
        ImageOp::Color(c) => {
            let (from, to) = c.channels();
            channels(
                &[from],
                if from == 3 {
                    "3-channel (RGB)"
                } else {
                    "1-channel"
                },
            )?;
            [s[0], s[1], Some(to)]
        }
        ImageOp::CropToBoundingBox { offset, size } => {
            if size.contains(&0) {
                return Err(format!(
                    "target_height and target_width must be > 0, got {size:?}"
                ));
            }
            for (k, what) in [(0, "height"), (1, "width")] {
                if s[k].is_some_and(|d| d < offset[k] + size[k]) {
                    return Err(format!(
                        "{what} must be >= target + offset: the image is [{}], the box ends at {}",
                        fmt_shape(&s),
                        offset[k] + size[k]
                    ));
                }
            }
            [Some(size[0]), Some(size[1]), s[2]]
        }
        ImageOp::PadToBoundingBox { offset, size } => {
            for (k, what) in [(0, "height"), (1, "width")] {
                if s[k].is_some_and(|d| d + offset[k] > size[k]) {
                    return Err(format!(
                        "{what} must be <= target - offset: the image is [{}], the target {} at offset {}",
                        fmt_shape(&s),
                        size[k],
                        offset[k]
                    ));
                }
            }
            [Some(size[0]), Some(size[1]), s[2]]
        }
        ImageOp::ResizeWithCropOrPad { size }
        | ImageOp::ResizeWithPad { size, .. }
        | ImageOp::ExtractGlimpse { size, .. }
        | ImageOp::ResizeV1 { size, .. }
        | ImageOp::CropAndResize {
            crop_size: size, ..
        } => {
            if size.contains(&0) {
                return Err(format!("the target size must be positive, got {size:?}"));
            }
            [Some(size[0]), Some(size[1]), s[2]]
        }
        ImageOp::ExtractPatches {
            sizes,
            strides,
            rates,
            padding,
        } => {
            if [sizes, strides, rates].iter().any(|v| v.contains(&0)) {
                return Err(format!(
                    "sizes, strides and rates must be >= 1, got {sizes:?}, {strides:?}, {rates:?}"
                ));
            }
            let (Some(h), Some(w)) = (s[0], s[1]) else {
                return Err(format!(
                    "extract_patches needs the image's size, but it is [{}]: resize before it",
                    fmt_shape(&s)
                ));
            };
            let (oh, _) = window_axis(h, sizes[0], strides[0], rates[0], *padding);
            let (ow, _) = window_axis(w, sizes[1], strides[1], rates[1], *padding);
            if oh == 0 || ow == 0 {
                return Err(format!(
                    "the patches {sizes:?} at rates {rates:?} do not fit in the image [{}]",
                    fmt_shape(&s)
                ));
            }
            [Some(oh), Some(ow), s[2].map(|c| c * sizes[0] * sizes[1])]
        }
        ImageOp::Transpose => [s[1], s[0], s[2]],
        ImageOp::Rot90 { k } if k.rem_euclid(2) == 1 => [s[1], s[0], s[2]],
        ImageOp::AdjustGamma { gamma, .. } if gamma.is_nan() || *gamma < 0.0 => {
            return Err(format!(
                "Gamma should be a non-negative real number, got {gamma}"
            ))
        }
        ImageOp::AdjustHue { delta } if !(-1.0..=1.0).contains(delta) => {
            return Err(format!("`delta` must be in [-1, 1], got {delta}"))
        }
        ImageOp::AdjustHue { .. } | ImageOp::AdjustSaturation { .. } => {
            channels(&[3], "RGB")?;
            s
        }
        ImageOp::AdjustJpegQuality { quality } => {
            if !(0..=100).contains(quality) {
                return Err(format!("`jpeg_quality` must be in [0, 100], got {quality}"));
            }
            channels(&[1, 3], "1- or 3-channel")?;
            s
        }
        ImageOp::RandomJpegQuality { min, max } => {
            if *min < 0 || *max > 100 || min >= max {
                return Err(format!(
                    "needs 0 <= min_jpeg_quality < max_jpeg_quality <= 100, got {min} and {max}"
                ));
            }
            channels(&[1, 3], "1- or 3-channel")?;
            s
        }
        ImageOp::SampleDistortedBoundingBox(o) => {
            let [alo, ahi] = o.aspect_ratio_range;
            let [lo, hi] = o.area_range;
            if !(alo > 0.0 && alo <= ahi && lo > 0.0 && lo <= hi && hi <= 1.0) {
                return Err(format!(
                    "needs 0 < aspect_ratio_range[0] <= [1] and 0 < area_range[0] <= [1] <= 1, got {:?} and {:?}",
                    o.aspect_ratio_range, o.area_range
                ));
            }
            if !(0.0..=1.0).contains(&o.min_object_covered) || o.max_attempts == 0 {
                return Err("needs min_object_covered in [0, 1] and max_attempts >= 1".to_string());
            }
            [None, None, s[2]]
        }
        _ => s,
    })
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
