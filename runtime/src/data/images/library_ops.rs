//! The transforms an image pipeline runs through `specc_image` on the
//! materialized `[H, W, C]` float32 image (values 0..255): the colour
//! conversions, `convert_image_dtype` to float32, the deterministic
//! adjustments, the crops and pads by box,
//! the flips and rotations, the JPEG re-encoding, and the Inception-style
//! crop of `sample_distorted_bounding_box`, `crop_and_resize` of one box,
//! `extract_patches` (the patches' values as the channels), the v1
//! resizes,
//! and `extract_glimpse` (its
//! noise from the example's draws, in training and evaluation alike).
//!
//! Invariants: each is the library's `tf.image` function (checked against
//! TF's numbers in `image/tests`); on the pipeline's 0..255 scale the ones
//! TF defines on [0, 1] images (`adjust_jpeg_quality`) see the image
//! divided by 255 and give their result times 255; a random one uses its
//! draws as `specc_image::random` does, only in training.

use specc_image::glimpse::{self, GlimpseOptions};
use specc_image::patches;
use specc_image::random::{self, Draws};
use specc_image::resize::{self, ResizeMethod};
use specc_image::{adjust, codec, color, convert, crop_resize, geometry, DType, Image, ImageError};

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
            | ImageOp::ConvertImageDtype { .. }
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
            | ImageOp::ExtractGlimpse { .. }
            | ImageOp::CropAndResize { .. }
            | ImageOp::ExtractPatches { .. }
            | ImageOp::ResizeV1 { .. }
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
        ImageOp::ConvertImageDtype {
            dtype: DType::F32, ..
        } => {
            // TF's int→float conversion: `x · (1 / max)`, the scale a
            // float32 constant.
            let scale = (1.0 / 255.0f64) as f32;
            Ok(Image::F32(image.to_f32().mapv(|v| v * scale)))
        }
        ImageOp::ConvertImageDtype { dtype, saturate } => {
            let decoded = Image::U8(image.to_f32().mapv(|v| v as u8));
            convert::convert_image_dtype(&decoded, *dtype, *saturate)
                .map(|c| Image::F32(c.to_f32()))
        }
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
        ImageOp::ExtractGlimpse {
            size,
            offsets,
            centered,
            normalized,
            noise,
        } => {
            let x = image.to_f32();
            let batch = x.insert_axis(ndarray::Axis(0));
            let options = GlimpseOptions {
                centered: *centered,
                normalized: *normalized,
                noise: *noise,
                version: 2,
            };
            glimpse::extract_glimpse(&batch, *size, &[*offsets], options, draws)
                .map(|g| Image::F32(g.index_axis_move(ndarray::Axis(0), 0)))
        }
        ImageOp::CropAndResize {
            boxes,
            crop_size,
            method,
            extrapolation_value,
        } => {
            let batch = Image::F32(image.to_f32().insert_axis(ndarray::Axis(0)));
            crop_resize::crop_and_resize(
                &batch,
                &[*boxes],
                &[0],
                *crop_size,
                *method,
                *extrapolation_value,
            )
            .map(|g| Image::F32(g.index_axis_move(ndarray::Axis(0), 0)))
        }
        ImageOp::ExtractPatches {
            sizes,
            strides,
            rates,
            padding,
        } => {
            let tf = |v: &[usize; 2]| [1, v[0] as i64, v[1] as i64, 1];
            let batch = Image::F32(image.to_f32().insert_axis(ndarray::Axis(0)));
            patches::extract_patches(&batch, &tf(sizes), &tf(strides), &tf(rates), *padding)
                .map(|p| Image::F32(p.to_f32().index_axis_move(ndarray::Axis(0), 0)))
        }
        ImageOp::ResizeV1 {
            size,
            method,
            centers,
        } => {
            let im = Image::F32(image.to_f32());
            match method {
                ResizeMethod::Nearest => resize::resize_nearest_neighbor(&im, *size, *centers),
                ResizeMethod::Bicubic => resize::resize_bicubic(&im, *size, *centers),
                ResizeMethod::Area => resize::resize_area(&im, *size, centers.align_corners),
                _ => resize::resize_bilinear(&im, *size, *centers),
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::images::ImagePipeline;
    use crate::prng::{mix, SplitMix64};
    use specc_image::glimpse::GlimpseNoise;
    use specc_image::random::DistortedBoxOptions;
    use specc_image::resize::{self, ResizeMethod};

    fn png() -> (Image, Vec<u8>) {
        let px: Vec<u8> = (0..12 * 10 * 3).map(|i| (i * 41 % 249) as u8).collect();
        let image = Image::U8(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[12, 10, 3]), px).expect("shape"),
        );
        let png = codec::encode_png(&image, -1).expect("png");
        (image, png)
    }

    fn stream(key: (u64, u64, u64)) -> impl FnMut() -> f32 {
        let mut s = SplitMix64::new(mix(key.0 ^ mix(key.1 ^ mix(key.2 + 1))));
        move || s.uniform01_f32()
    }

    /// The Inception-style crop and the random JPEG quality use the
    /// example's draws as `specc_image::random` does: the same pixels as
    /// the library's functions with the same stream, the same bits for the
    /// same `(seed, epoch, index)`, other crops for other examples; in
    /// evaluation both are skipped.
    #[test]
    fn random_crops_and_jpeg_qualities_are_the_library_s_with_the_example_s_draws() {
        let (image, png) = png();
        let options = DistortedBoxOptions {
            min_object_covered: 0.1,
            aspect_ratio_range: [0.5, 2.0],
            area_range: [0.1, 1.0],
            max_attempts: 100,
            use_image_if_no_bounding_boxes: true,
        };
        let pipeline = ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::SampleDistortedBoundingBox(options.clone()),
                ImageOp::ResizeKernel {
                    size: [6, 6],
                    method: ResizeMethod::Bilinear,
                    antialias: true,
                },
                ImageOp::RandomJpegQuality { min: 40, max: 95 },
            ],
        };
        assert_eq!(pipeline.output_shape(), Ok([6, 6, 3]));
        let mut outputs = Vec::new();
        for index in 0..12u64 {
            let key = (4, 1, index);
            let mut got = vec![0f32; 6 * 6 * 3];
            pipeline.apply(&png, true, key, &mut got).expect("apply");
            let mut again = vec![0f32; 6 * 6 * 3];
            pipeline.apply(&png, true, key, &mut again).expect("apply");
            assert_eq!(got, again, "example {index}: the same bits");
            let mut d = stream(key);
            let im = Image::F32(image.to_f32());
            let b = random::sample_distorted_bounding_box(&[12, 10, 3], &[], &options, &mut d)
                .expect("box");
            let im = geometry::crop_to_bounding_box(
                &im,
                b.begin[0] as i64,
                b.begin[1] as i64,
                b.size[0],
                b.size[1],
            )
            .expect("crop");
            let im =
                resize::resize(&im, [6, 6], ResizeMethod::Bilinear, true, false).expect("resize");
            let q = 40 + d.below(55) as i32;
            let im = jpeg_quality(&im, q).expect("jpeg");
            let want: Vec<f32> = im.to_f32().iter().copied().collect();
            assert_eq!(got, want, "example {index}");
            outputs.push(got);
        }
        outputs.dedup();
        assert!(outputs.len() > 1, "every example got the same crop");
        // Evaluation: the whole image resized, no re-encoding.
        let mut got = vec![0f32; 6 * 6 * 3];
        pipeline
            .apply(&png, false, (4, 1, 0), &mut got)
            .expect("apply");
        let im = resize::resize(
            &Image::F32(image.to_f32()),
            [6, 6],
            ResizeMethod::Bilinear,
            true,
            false,
        )
        .expect("resize");
        let want: Vec<f32> = im.to_f32().iter().copied().collect();
        assert_eq!(got, want, "evaluation");
    }

    /// A crop of the image's own size is what `sample_distorted_bounding_box`
    /// gives when it must cover the whole image; the shape rules refuse a
    /// static pipeline without a resize after it, and bad arguments.
    #[test]
    fn the_shape_rules_of_the_library_transforms() {
        let decode = ImageOp::DecodeImage { channels: 3 };
        let shape = |ops: Vec<ImageOp>| ImagePipeline { ops }.output_shape();
        let crop = ImageOp::SampleDistortedBoundingBox(DistortedBoxOptions {
            use_image_if_no_bounding_boxes: true,
            ..DistortedBoxOptions::default()
        });
        assert!(shape(vec![decode.clone(), crop.clone()]).is_err());
        let fixed = ImageOp::Resize { size: [8, 9] };
        assert_eq!(
            shape(vec![decode.clone(), fixed.clone(), ImageOp::Rot90 { k: 3 }]),
            Ok([9, 8, 3])
        );
        assert_eq!(
            shape(vec![
                decode.clone(),
                fixed.clone(),
                ImageOp::Color(ColorConversion::RgbToGrayscale)
            ]),
            Ok([8, 9, 1])
        );
        let err = shape(vec![
            decode.clone(),
            fixed.clone(),
            ImageOp::CropToBoundingBox {
                offset: [2, 0],
                size: [7, 9],
            },
        ])
        .expect_err("box outside");
        assert_eq!(err.0, 2);
        assert!(
            err.1.contains("height must be >= target + offset"),
            "{}",
            err.1
        );
        let err = shape(vec![
            decode.clone(),
            fixed.clone(),
            ImageOp::Color(ColorConversion::GrayscaleToRgb),
        ])
        .expect_err("3 channels");
        assert!(err.1.contains("1-channel"), "{}", err.1);
        let err = shape(vec![
            decode,
            fixed,
            ImageOp::RandomJpegQuality { min: 90, max: 90 },
        ])
        .expect_err("empty range");
        assert!(err.1.contains("min_jpeg_quality"), "{}", err.1);
    }

    /// `extract_glimpse` with uniform noise: the cells inside the image are
    /// the image's, the ones outside drawn between the image's minimum and
    /// maximum from the example's stream (the same bits for the same key,
    /// other noise for another example); zero noise fills zeros.
    #[test]
    fn glimpse_noise_comes_from_the_example_s_draws() {
        let (image, png) = png();
        let glimpse = |noise| ImagePipeline {
            ops: vec![
                ImageOp::DecodeImage { channels: 3 },
                ImageOp::ExtractGlimpse {
                    size: [4, 5],
                    offsets: [-2.0, 7.0],
                    centered: false,
                    normalized: false,
                    noise,
                },
            ],
        };
        let uniform = glimpse(GlimpseNoise::Uniform);
        assert!(ImageOp::is_random(&uniform.ops[1]));
        assert!(!ImageOp::is_random(&glimpse(GlimpseNoise::Zero).ops[1]));
        assert_eq!(uniform.output_shape(), Ok([4, 5, 3]));
        let run = |p: &ImagePipeline, index| {
            let mut out = vec![0f32; 4 * 5 * 3];
            p.apply(&png, true, (3, 0, index), &mut out).expect("apply");
            out
        };
        let (a, again, other) = (run(&uniform, 0), run(&uniform, 0), run(&uniform, 1));
        assert_eq!(a, again);
        assert_ne!(a, other);
        let zero = run(&glimpse(GlimpseNoise::Zero), 0);
        let px = image.to_f32();
        let (lo, hi) = px
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        for r in 0..4 {
            for c in 0..5 {
                for k in 0..3 {
                    let (y, x) = (r as i64 - 2, c as i64 + 7);
                    let i = (r * 5 + c) * 3 + k;
                    if (0..12).contains(&y) && (0..10).contains(&x) {
                        let want = px[[y as usize, x as usize, k]];
                        assert_eq!((a[i], zero[i]), (want, want), "inside at {r}, {c}");
                    } else {
                        assert_eq!(zero[i], 0.0, "zero fill at {r}, {c}");
                        assert!((lo..=hi).contains(&a[i]), "noise {} at {r}, {c}", a[i]);
                    }
                }
            }
        }
    }
}
