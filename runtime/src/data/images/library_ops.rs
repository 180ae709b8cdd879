//! The transforms an image pipeline runs through `specc_image` on the
//! materialized `[H, W, C]` float32 image (values 0..255): the colour
//! conversions, the deterministic adjustments, the crops and pads by box,
//! the flips and rotations, the JPEG re-encoding, and the Inception-style
//! crop of `sample_distorted_bounding_box`.
//!
//! Invariants: each is the library's `tf.image` function (checked against
//! TF's numbers in `image/tests`); on the pipeline's 0..255 scale the ones
//! TF defines on [0, 1] images (`adjust_jpeg_quality`) see the image
//! divided by 255 and give their result times 255; a random one uses its
//! draws as `specc_image::random` does, only in training.

use specc_image::random::{self, Draws};
use specc_image::{adjust, codec, color, crop_resize, geometry, Image, ImageError};

use super::transforms::{ColorConversion, ImageOp};

/// Whether this module runs `op`.
pub(super) fn handles(op: &ImageOp) -> bool {
    matches!(
        op,
        ImageOp::Color(_)
            | ImageOp::CropToBoundingBox { .. }
            | ImageOp::PadToBoundingBox { .. }
            | ImageOp::ResizeWithCropOrPad { .. }
            | ImageOp::ResizeWithPad { .. }
            | ImageOp::FlipLeftRight
            | ImageOp::FlipUpDown
            | ImageOp::Transpose
            | ImageOp::Rot90 { .. }
            | ImageOp::AdjustBrightness { .. }
            | ImageOp::AdjustContrast { .. }
            | ImageOp::AdjustGamma { .. }
            | ImageOp::AdjustHue { .. }
            | ImageOp::AdjustSaturation { .. }
            | ImageOp::AdjustJpegQuality { .. }
            | ImageOp::RandomJpegQuality { .. }
            | ImageOp::SampleDistortedBoundingBox(_)
    )
}

/// `image` through `op`, or `None` for an op this module does not run
/// (see [`handles`]).
pub(super) fn run(
    op: &ImageOp,
    image: &Image,
    training: bool,
    draws: &mut impl Draws,
) -> Option<specc_image::Result<Image>> {
    Some(match op {
        ImageOp::Color(c) => match c {
            ColorConversion::RgbToGrayscale => color::rgb_to_grayscale(image),
            ColorConversion::GrayscaleToRgb => color::grayscale_to_rgb(image),
            ColorConversion::RgbToHsv => color::rgb_to_hsv(image),
            ColorConversion::HsvToRgb => color::hsv_to_rgb(image),
            ColorConversion::RgbToYiq => color::rgb_to_yiq(image),
            ColorConversion::YiqToRgb => color::yiq_to_rgb(image),
            ColorConversion::RgbToYuv => color::rgb_to_yuv(image),
            ColorConversion::YuvToRgb => color::yuv_to_rgb(image),
        },
        ImageOp::CropToBoundingBox { offset, size } => geometry::crop_to_bounding_box(
            image,
            offset[0] as i64,
            offset[1] as i64,
            size[0] as i64,
            size[1] as i64,
        ),
        ImageOp::PadToBoundingBox { offset, size } => geometry::pad_to_bounding_box(
            image,
            offset[0] as i64,
            offset[1] as i64,
            size[0] as i64,
            size[1] as i64,
        ),
        ImageOp::ResizeWithCropOrPad { size } => {
            geometry::resize_with_crop_or_pad(image, size[0] as i64, size[1] as i64)
        }
        ImageOp::ResizeWithPad {
            size,
            method,
            antialias,
        } => crop_resize::resize_with_pad(image, size[0], size[1], *method, *antialias),
        ImageOp::FlipLeftRight => geometry::flip_left_right(image),
        ImageOp::FlipUpDown => geometry::flip_up_down(image),
        ImageOp::Transpose => geometry::transpose(image),
        ImageOp::Rot90 { k } => geometry::rot90(image, *k),
        ImageOp::AdjustBrightness { delta } => adjust::adjust_brightness(image, *delta),
        ImageOp::AdjustContrast { factor } => adjust::adjust_contrast(image, *factor),
        ImageOp::AdjustGamma { gamma, gain } => adjust::adjust_gamma(image, *gamma, *gain),
        ImageOp::AdjustHue { delta } => adjust::adjust_hue(image, *delta),
        ImageOp::AdjustSaturation { factor } => adjust::adjust_saturation(image, *factor),
        ImageOp::AdjustJpegQuality { quality } => jpeg_quality(image, *quality),
        ImageOp::RandomJpegQuality { min, max } => {
            if !training {
                return Some(Ok(image.clone()));
            }
            // TF: a quality uniform among the integers [min, max).
            let q = *min + draws.below((*max - *min) as usize) as i32;
            jpeg_quality(image, q)
        }
        ImageOp::SampleDistortedBoundingBox(options) => {
            if !training {
                return Some(Ok(image.clone()));
            }
            distorted_crop(image, options, draws)
        }
        _ => return None,
    })
}

/// `tf.image.adjust_jpeg_quality` of the 0..255 image: TF's image in
/// [0, 1] is this one over 255, converted to uint8 with saturation
/// (`trunc(clip(x, 0, 1) · 255.5)`), JPEG-encoded at `quality`, decoded,
/// and back to float (`· 1/255`), here times 255.
fn jpeg_quality(image: &Image, quality: i32) -> specc_image::Result<Image> {
    let x = image.to_f32();
    let u8s = x.mapv(|v| ((v / 255.0).clamp(0.0, 1.0) * 255.5) as u8);
    let channels = x.shape()[2];
    let bytes = codec::encode_jpeg(&Image::U8(u8s), quality)?;
    let decoded = codec::decode_jpeg(&bytes, channels)?;
    Ok(Image::F32(decoded.to_f32()))
}

/// The Inception-style random crop: TF's `sample_distorted_bounding_box`
/// of the whole image (`use_image_if_no_bounding_boxes`, no boxes), then
/// the image sliced to the box (`tf.slice(image, begin, size)`).
fn distorted_crop(
    image: &Image,
    options: &random::DistortedBoxOptions,
    draws: &mut impl Draws,
) -> specc_image::Result<Image> {
    let s = image.shape().to_vec();
    let b = random::sample_distorted_bounding_box(&s, &[], options, draws)?;
    let [h, w, _] = b.size;
    if h <= 0 || w <= 0 {
        return Err(ImageError::new(
            "sample_distorted_bounding_box: an empty crop",
        ));
    }
    geometry::crop_to_bounding_box(image, b.begin[0] as i64, b.begin[1] as i64, h, w)
}
