//! `tf.image`'s resizes, colour conversions, adjustments, crops, pads,
//! flips and rotations as graph ops (`rgb_to_grayscale`, `rgb_to_yiq`,
//! `crop_to_bounding_box`, `rot90`, ...) against their cases of
//! `golden/images.json`, outputs and (where TF recorded them) gradients,
//! through the JIT-compiled gradient function, each case its own test;
//! their gradients are also checked by finite differences
//! (`finite_differences.rs`).
//!
//! The spec of a case is `common::op_cases::case_spec`'s: one constant
//! parameter per input (values from the file), the case's call with its
//! `args` by name. A spec's tensors are float32: a case on a uint8 image is
//! checked where TF's op gives the same numbers on the image's values as
//! float32 (the crops, pads, flips and rotations move values;
//! `per_image_standardization` casts without rescaling); the colour
//! conversions and adjustments of uint8 images convert to [0, 1] and back
//! (TF's `convert_image_dtype`), which is the input pipeline's business
//! (`image_transforms_golden.rs`), not a float tensor's.
//!
//! Tolerance: 1e-6 relative with a floor of 1e-6 times the tensor's largest
//! magnitude (the ops are sums of three products at most, or move values);
//! `resize` and `resize_with_pad` (every method, as products by the
//! separable map's matrices) 2e-6, as the library's resizes.

use crate::common;

use common::op_cases::{arg_text, assert_fails, cases_of, check_case, check_others, named};
use specc_grammar::Code;

/// Relative, and the floor as a fraction of the tensor's largest magnitude.
const REL: f64 = 1e-6;
const RESIZE: f64 = 2e-6;
const FILE: &str = "images.json";

/// Each op this file checks (TF's name), its specc builtin, and whether it
/// computes the same on an integer image's values as on float32 ones.
const OPS: &[(&str, &str, bool)] = &[
    ("tf.image.rgb_to_grayscale", "rgb_to_grayscale", false),
    ("tf.image.grayscale_to_rgb", "grayscale_to_rgb", true),
    ("tf.image.rgb_to_hsv", "rgb_to_hsv", false),
    ("tf.image.hsv_to_rgb", "hsv_to_rgb", false),
    ("tf.image.rgb_to_yiq", "rgb_to_yiq", false),
    ("tf.image.yiq_to_rgb", "yiq_to_rgb", false),
    ("tf.image.rgb_to_yuv", "rgb_to_yuv", false),
    ("tf.image.yuv_to_rgb", "yuv_to_rgb", false),
    (
        "tf.image.per_image_standardization",
        "per_image_standardization",
        true,
    ),
    ("tf.image.adjust_brightness", "adjust_brightness", false),
    ("tf.image.adjust_gamma", "adjust_gamma", false),
    ("tf.image.resize", "resize", true),
    ("tf.image.resize_with_pad", "resize_with_pad", false),
    (
        "tf.image.crop_to_bounding_box",
        "crop_to_bounding_box",
        true,
    ),
    ("tf.image.pad_to_bounding_box", "pad_to_bounding_box", true),
    ("tf.image.central_crop", "central_crop", true),
    (
        "tf.image.resize_with_crop_or_pad",
        "resize_with_crop_or_pad",
        true,
    ),
    ("tf.image.flip_left_right", "flip_left_right", true),
    ("tf.image.flip_up_down", "flip_up_down", true),
    ("tf.image.transpose", "transpose_image", true),
    ("tf.image.rot90", "rot90", true),
    ("tf.image.extract_patches", "extract_patches", true),
    ("tf.image.draw_bounding_boxes", "draw_bounding_boxes", false),
    (
        "tf.compat.v1.image.draw_bounding_boxes",
        "draw_bounding_boxes",
        false,
    ),
    ("tf.image.extract_glimpse", "extract_glimpse", false),
    ("tf.image.crop_and_resize", "crop_and_resize", false),
    (
        "tf.compat.v1.image.resize_bilinear",
        "resize_bilinear",
        false,
    ),
    (
        "tf.compat.v1.image.resize_nearest_neighbor",
        "resize_nearest_neighbor",
        true,
    ),
    ("tf.compat.v1.image.resize_bicubic", "resize_bicubic", false),
    ("tf.compat.v1.image.resize_area", "resize_area", false),
    (
        "tf.compat.v1.image.extract_glimpse",
        "extract_glimpse_v1",
        false,
    ),
];

fn op_of(case: &serde_json::Value) -> Option<&'static (&'static str, &'static str, bool)> {
    let op = case["op"].as_str().expect("op");
    // The image's dtype (the first input but `crop_and_resize`'s ids).
    let (_, input) = case["inputs"]
        .as_object()
        .expect("inputs")
        .iter()
        .find(|(k, _)| *k != "box_indices")
        .expect("an input");
    let float = input["dtype"]
        .as_str()
        .is_some_and(|d| d.starts_with("float"));
    OPS.iter()
        .find(|(name, _, any_dtype)| *name == op && (float || *any_dtype))
}

/// The case's binding: `output = f(image, name = value, ...)`.
fn bindings(case: &serde_json::Value) -> String {
    let (_, f, _) = op_of(case).expect("an op of this file");
    // One input by position (TF's first argument); several by name (the
    // file's keys are sorted, TF's names are the builtin's).
    let inputs = case["inputs"].as_object().expect("inputs");
    let mut args: Vec<String> = if inputs.len() == 1 {
        inputs.keys().cloned().collect()
    } else {
        inputs.keys().map(|k| format!("{k} = {k}")).collect()
    };
    for (k, v) in case["args"].as_object().expect("args") {
        args.push(format!("{k} = {}", arg_text(v)));
    }
    if *f == "extract_glimpse_v1" {
        // The v1 op's default `uniform_noise = True` draws; as an op, specc
        // fills with zeros only (the case's glimpses lie inside, where TF
        // draws no noise either).
        args.push("uniform_noise = false".to_string());
    }
    format!("output = {f}({})\n", args.join(", "))
}

fn cases() -> Vec<serde_json::Value> {
    cases_of(FILE, |c| op_of(c).is_some())
}

fn check(case: &serde_json::Value) {
    let (_, f, _) = op_of(case).expect("an op of this file");
    // A resize sums its taps in another order than TF's kernels (products
    // by the map's matrices): as the library's resizes, 2e-6.
    let tol = if f.starts_with("resize") || *f == "crop_and_resize" {
        RESIZE
    } else {
        REL
    };
    check_case(case, &bindings(case), tol, tol);
}

fn check_named(name: &str) {
    check(named(&cases(), FILE, name));
}

crate::op_case_tests!(super::check_named;
    rgb_to_grayscale,
    grayscale_to_rgb,
    rgb_to_hsv,
    hsv_to_rgb,
    rgb_to_yiq,
    yiq_to_rgb,
    rgb_to_yuv,
    yuv_to_rgb,
    per_image_standardization_image,
    per_image_standardization_uint8,
    per_image_standardization_batch,
    per_image_standardization_constant_image,
    adjust_brightness_0,
    adjust_brightness_1,
    adjust_gamma_0,
    adjust_gamma_1,
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
    extract_patches_valid_strided,
    extract_patches_same_stride1,
    extract_patches_valid_rates,
    extract_patches_same_rates_strided,
    draw_bounding_boxes,
    draw_bounding_boxes_v1_default_colors,
    resize_bilinear_up_antialias_false,
    resize_bilinear_up_antialias_true,
    resize_bilinear_down_antialias_false,
    resize_bilinear_down_antialias_true,
    resize_nearest_up_antialias_false,
    resize_nearest_up_antialias_true,
    resize_nearest_down_antialias_false,
    resize_nearest_down_antialias_true,
    resize_bicubic_up_antialias_false,
    resize_bicubic_up_antialias_true,
    resize_bicubic_down_antialias_false,
    resize_bicubic_down_antialias_true,
    resize_area_up_antialias_false,
    resize_area_up_antialias_true,
    resize_area_down_antialias_false,
    resize_area_down_antialias_true,
    resize_lanczos3_up_antialias_false,
    resize_lanczos3_up_antialias_true,
    resize_lanczos3_down_antialias_false,
    resize_lanczos3_down_antialias_true,
    resize_lanczos5_up_antialias_false,
    resize_lanczos5_up_antialias_true,
    resize_lanczos5_down_antialias_false,
    resize_lanczos5_down_antialias_true,
    resize_gaussian_up_antialias_false,
    resize_gaussian_up_antialias_true,
    resize_gaussian_down_antialias_false,
    resize_gaussian_down_antialias_true,
    resize_mitchellcubic_up_antialias_false,
    resize_mitchellcubic_up_antialias_true,
    resize_mitchellcubic_down_antialias_false,
    resize_mitchellcubic_down_antialias_true,
    resize_bilinear_preserve_aspect_ratio_0,
    resize_nearest_preserve_aspect_ratio_0,
    resize_bilinear_preserve_aspect_ratio_1,
    resize_nearest_preserve_aspect_ratio_1,
    resize_bilinear_uint8_input,
    resize_nearest_uint8_input,
    resize_bicubic_batch_down,
    resize_lanczos3_one_channel_up,
    resize_with_pad_bilinear_0,
    resize_with_pad_nearest_0,
    resize_with_pad_bilinear_1,
    resize_with_pad_nearest_1,
    resize_with_pad_bilinear_antialias_batch,
    extract_glimpse_centered_normalized,
    extract_glimpse_centered_pixels,
    extract_glimpse_corner_normalized,
    extract_glimpse_corner_pixels,
    v1_extract_glimpse_inside,
    crop_and_resize_bilinear,
    crop_and_resize_nearest,
    crop_and_resize_bilinear_extrapolation,
    crop_and_resize_nearest_extrapolation,
    crop_and_resize_bilinear_crop_size_one,
    crop_and_resize_nearest_crop_size_one,
    v1_resize_bilinear_up_legacy,
    v1_resize_bilinear_up_align_corners,
    v1_resize_bilinear_up_half_pixel_centers,
    v1_resize_bilinear_down_legacy,
    v1_resize_bilinear_down_align_corners,
    v1_resize_bilinear_down_half_pixel_centers,
    v1_resize_nearest_neighbor_up_legacy,
    v1_resize_nearest_neighbor_up_align_corners,
    v1_resize_nearest_neighbor_up_half_pixel_centers,
    v1_resize_nearest_neighbor_down_legacy,
    v1_resize_nearest_neighbor_down_align_corners,
    v1_resize_nearest_neighbor_down_half_pixel_centers,
    v1_resize_bicubic_up_legacy,
    v1_resize_bicubic_up_align_corners,
    v1_resize_bicubic_up_half_pixel_centers,
    v1_resize_bicubic_down_legacy,
    v1_resize_bicubic_down_align_corners,
    v1_resize_bicubic_down_half_pixel_centers,
    v1_resize_area_up_legacy,
    v1_resize_area_up_align_corners,
    v1_resize_area_down_legacy,
    v1_resize_area_down_align_corners,
);

/// The cases of these ops without a test of their own (a regenerated file
/// with more cases is still checked).
#[test]
fn every_other_image_op_case_in_the_file_matches_tensorflow() {
    check_others(cases(), NAMED, check);
}

/// A spec computing `expr` of a `[5, 7, 3]` parameter `a`.
fn spec_of(expr: &str) -> String {
    format!(
        "model m\ndata synthetic(rows = 4, features = 1)\nparams {{\n  a: [5, 7, 3] = zeros\n  v: [2, 3] = zeros\n}}\ny = {expr}\nloss = reduce_sum(y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// Bad arguments and shapes are errors with a caret under what is wrong,
/// in TF's words where TF has some.
#[test]
fn bad_image_op_arguments_have_carets() {
    let cases = [
        (
            "crop_to_bounding_box(a, 1, 2, 5, 4)",
            Code::ArgumentOutOfRange,
            "5",
        ),
        (
            "crop_to_bounding_box(a, -1, 2, 2, 4)",
            Code::ArgumentOutOfRange,
            "-1",
        ),
        (
            "pad_to_bounding_box(a, 1, 2, 5, 9)",
            Code::ArgumentOutOfRange,
            "5",
        ),
        ("grayscale_to_rgb(a)", Code::BadShape, "a"),
        ("rgb_to_yiq(v)", Code::BadShape, "v"),
        ("rot90(v)", Code::BadShape, "v"),
        ("central_crop(a, 1.5)", Code::ArgumentOutOfRange, "1.5"),
        ("resize(a, [0, 4])", Code::ArgumentOutOfRange, "[0, 4]"),
        (
            "resize(a, [3, 4], method = \"cubic\")",
            Code::UnknownChoice,
            "\"cubic\"",
        ),
        (
            "adjust_gamma(a, gamma = -2.0)",
            Code::ArgumentOutOfRange,
            "-2.0",
        ),
        (
            "extract_glimpse(reshape(a, [3, 5, 7, 1]), [3, 3], reshape(v, [3, 2]))",
            Code::UnknownChoice,
            "extract_glimpse(reshape(a, [3, 5, 7, 1]), [3, 3], reshape(v, [3, 2]))",
        ),
        (
            "extract_glimpse(reshape(a, [3, 5, 7, 1]), [3, 3], reshape(v, [3, 2]), noise = \"gaussian\")",
            Code::UnknownChoice,
            "\"gaussian\"",
        ),
        (
            "extract_glimpse(reshape(a, [1, 5, 7, 3]), [3, 3], v, noise = \"zero\")",
            Code::ShapeMismatch,
            "v",
        ),
        (
            "crop_and_resize(reshape(a, [1, 5, 7, 3]), v, [0.0, 0.0], [2, 2])",
            Code::ShapeMismatch,
            "v",
        ),
        (
            "crop_and_resize(reshape(a, [1, 5, 7, 3]), [[0.1, 0.2, 0.8, 0.7]], [0.0], [2, 2], method = \"cubic\")",
            Code::UnknownChoice,
            "\"cubic\"",
        ),
    ];
    for (expr, code, under) in cases {
        assert_fails(&spec_of(expr), code, under);
    }
}

/// The file's refused v1 resizes (`align_corners` and `half_pixel_centers`
/// both true) are errors in TF's words, under `half_pixel_centers`.
#[test]
fn refused_v1_resizes_are_errors_in_tf_s_words() {
    let all = common::golden(FILE);
    let refused = all["refused"].as_array().expect("refused");
    assert!(!refused.is_empty());
    for case in refused {
        let op = case["op"].as_str().expect("op");
        let f = op.rsplit('.').next().expect("a name");
        let args: Vec<String> = case["args"]
            .as_object()
            .expect("args")
            .iter()
            .map(|(k, v)| format!("{k} = {}", arg_text(v)))
            .collect();
        let text = spec_of(&format!(
            "{f}(reshape(a, [1, 5, 7, 3]), {})",
            args.join(", ")
        ));
        assert_fails(&text, Code::ArgumentOutOfRange, "true");
        let want = case["error"].as_str().expect("error");
        let src = specc_grammar::SourceFile::new("case.spec", text.clone());
        let errors = specc_compiler::driver::compile(&src, specc_compiler::driver::Functions::ALL)
            .err()
            .expect("refused");
        assert!(
            errors.iter().any(|d| want.contains(&d.message)),
            "{}: {:?} is not TF's {want}",
            case["name"],
            errors.iter().map(|d| &d.message).collect::<Vec<_>>()
        );
    }
}
