//! The data-movement, colour and dtype ops of `specc_image` against every
//! case of `golden/images.json` for them (flips, `transpose`, `rot90`,
//! `crop_to_bounding_box`, `pad_to_bounding_box`, `central_crop`,
//! `resize_with_crop_or_pad`, the colour-space conversions and
//! `convert_image_dtype`): one test per case, looked up by name in the file
//! at test time (`SPECC_GOLDEN_DIR` points at another draw), plus one test
//! of any case of these ops the list lacks. Inputs, arguments and outputs
//! all come from the case.
//!
//! Tolerance: integer outputs exact; float outputs 1e-6 relative with a
//! floor of 1e-6 times the tensor's largest magnitude (TF's kernels may
//! contract the colour matrices' products into FMAs).

use crate::support;

use specc_image::{color, convert, geometry, DType, Image};
use support::{image_of, tensor};

/// The ops this file checks (`op` of an images.json case).
const OPS: &[&str] = support::ops::IMAGE_OPS;

fn arg_i64(case: &serde_json::Value, key: &str) -> i64 {
    case["args"][key]
        .as_i64()
        .unwrap_or_else(|| panic!("{}: no integer argument {key}", case["name"]))
}

/// The op of the case applied to its input, with its arguments.
fn run(case: &serde_json::Value) -> Image {
    let inputs = case["inputs"].as_object().expect("inputs");
    let (_, input) = inputs.iter().next().expect("one input");
    let image = image_of(input);
    let op = case["op"].as_str().expect("op");
    let out = match op {
        "tf.image.flip_left_right" => geometry::flip_left_right(&image),
        "tf.image.flip_up_down" => geometry::flip_up_down(&image),
        "tf.image.transpose" => geometry::transpose(&image),
        "tf.image.rot90" => geometry::rot90(&image, arg_i64(case, "k")),
        "tf.image.crop_to_bounding_box" => geometry::crop_to_bounding_box(
            &image,
            arg_i64(case, "offset_height"),
            arg_i64(case, "offset_width"),
            arg_i64(case, "target_height"),
            arg_i64(case, "target_width"),
        ),
        "tf.image.pad_to_bounding_box" => geometry::pad_to_bounding_box(
            &image,
            arg_i64(case, "offset_height"),
            arg_i64(case, "offset_width"),
            arg_i64(case, "target_height"),
            arg_i64(case, "target_width"),
        ),
        "tf.image.central_crop" => geometry::central_crop(
            &image,
            case["args"]["central_fraction"]
                .as_f64()
                .expect("central_fraction"),
        ),
        "tf.image.resize_with_crop_or_pad" => geometry::resize_with_crop_or_pad(
            &image,
            arg_i64(case, "target_height"),
            arg_i64(case, "target_width"),
        ),
        "tf.image.rgb_to_grayscale" => color::rgb_to_grayscale(&image),
        "tf.image.grayscale_to_rgb" => color::grayscale_to_rgb(&image),
        "tf.image.rgb_to_hsv" => color::rgb_to_hsv(&image),
        "tf.image.hsv_to_rgb" => color::hsv_to_rgb(&image),
        "tf.image.rgb_to_yiq" => color::rgb_to_yiq(&image),
        "tf.image.yiq_to_rgb" => color::yiq_to_rgb(&image),
        "tf.image.rgb_to_yuv" => color::rgb_to_yuv(&image),
        "tf.image.yuv_to_rgb" => color::yuv_to_rgb(&image),
        "tf.image.convert_image_dtype" => {
            let dtype =
                DType::from_name(case["args"]["dtype"].as_str().expect("dtype")).expect("a dtype");
            let saturate = case["args"]["saturate"].as_bool().unwrap_or(false);
            convert::convert_image_dtype(&image, dtype, saturate)
        }
        other => panic!("no op {other}"),
    };
    out.unwrap_or_else(|e| panic!("{}: {e}", case["name"]))
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let got = run(case);
    let (dtype, shape, want) = tensor(&case["outputs"]["output"]);
    assert_eq!(got.dtype(), dtype, "{name}: dtype");
    assert_eq!(got.shape(), &shape[..], "{name}: shape");
    let got: Vec<f64> = got.to_f64().iter().copied().collect();
    let scale = want
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f64, |m, v| m.max(v.abs()));
    let mut bad = Vec::new();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = if dtype.is_float() {
            (g - w).abs() <= 1e-6 * w.abs() + 1e-6 * scale || (g.is_nan() && w.is_nan())
        } else {
            g == w
        };
        if !ok {
            bad.push(format!("[{i}] got {g}, TF {w}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{name}: {} of {} values differ: {}",
        bad.len(),
        want.len(),
        bad.join("; ")
    );
}

case_tests!(
    super::OPS, super::check;
    crop_to_bounding_box_image,
    crop_to_bounding_box_batch,
    pad_to_bounding_box_image,
    pad_to_bounding_box_uint8,
    pad_to_bounding_box_batch,
    central_crop_0,
    central_crop_1,
    central_crop_2,
    central_crop_batch,
    resize_with_crop_or_pad_0,
    resize_with_crop_or_pad_1,
    flip_left_right_image,
    flip_up_down_image,
    transpose_image,
    flip_left_right_batch,
    flip_up_down_batch,
    transpose_batch,
    rot90_k1,
    rot90_k2,
    rot90_k3,
    rot90_k1_batch,
    rgb_to_grayscale,
    rgb_to_grayscale_uint8,
    grayscale_to_rgb,
    rgb_to_hsv,
    hsv_to_rgb,
    rgb_to_yiq,
    yiq_to_rgb,
    rgb_to_yuv,
    yuv_to_rgb,
    convert_image_dtype_uint8_to_float32,
    convert_image_dtype_float32_to_uint8,
    convert_image_dtype_float32_to_uint8_saturate,
    convert_image_dtype_float32_to_int16,
    convert_image_dtype_float32_to_int16_saturate,
    convert_image_dtype_float32_to_int32,
    convert_image_dtype_uint8_to_int16,
    convert_image_dtype_uint8_to_int32,
    convert_image_dtype_int16_to_uint8,
    convert_image_dtype_int16_to_float32,
    convert_image_dtype_uint8_to_float64,
    convert_image_dtype_float32_to_float16,
    convert_image_dtype_uint8_to_uint8,
);

/// The cases of these ops without a test of their own (a regenerated file
/// with more cases is still checked), every one before failing.
#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Bad arguments are errors with TF's words, never panics.
#[test]
fn bad_arguments_are_errors() {
    let image = Image::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[5, 7, 3])));
    let flat = Image::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[5, 7])));
    let e = |r: specc_image::Result<Image>| r.expect_err("an error").message;
    assert!(e(geometry::flip_left_right(&flat)).contains("3 or 4 dimensions"));
    assert_eq!(
        e(geometry::crop_to_bounding_box(&image, -1, 0, 1, 1)),
        "offset_height must be >= 0."
    );
    assert_eq!(
        e(geometry::crop_to_bounding_box(&image, 0, 0, 0, 1)),
        "target_height must be > 0."
    );
    assert_eq!(
        e(geometry::crop_to_bounding_box(&image, 3, 0, 3, 1)),
        "height must be >= target + offset."
    );
    assert_eq!(
        e(geometry::pad_to_bounding_box(&image, 4, 0, 8, 8)),
        "height must be <= target - offset"
    );
    assert!(e(geometry::pad_to_bounding_box(
        &image,
        0,
        0,
        1 << 20,
        1 << 20
    ))
    .contains("larger than"));
    assert_eq!(
        e(geometry::central_crop(&image, 0.0)),
        "central_fraction must be within (0, 1]"
    );
    assert_eq!(
        e(geometry::central_crop(&image, f64::NAN)),
        "central_fraction must be within (0, 1]"
    );
    assert!(e(color::rgb_to_yiq(&flat)).contains("must be 3"));
    let big = Image::F32(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[1, 1, 1]), 3.0));
    // Without saturate, out of range converts as TF's x86-64 cast: 3.0·255.5
    // truncates to 766, which wraps to 254 in uint8.
    assert_eq!(
        convert::convert_image_dtype(&big, DType::U8, false)
            .expect("converted")
            .to_f64()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![254.0]
    );
    assert_eq!(
        convert::convert_image_dtype(&big, DType::U8, true)
            .expect("saturated")
            .to_f64()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![255.0]
    );
}

/// float16 rounding is round-to-nearest-even at half precision.
#[test]
fn float16_rounding() {
    assert_eq!(convert::round_to_f16(1.0 + 1.0 / 4096.0), 1.0); // a tie rounds to even
    assert_eq!(
        convert::round_to_f16(1.0 + 3.0 / 4096.0),
        1.0 + 1.0 / 1024.0
    );
    assert_eq!(convert::round_to_f16(65520.0), f32::INFINITY);
    assert_eq!(convert::round_to_f16(2f32.powi(-24)), 2f32.powi(-24));
    assert_eq!(convert::round_to_f16(-0.1), -1638.0 / 16384.0);
}
