//! `tf.image.resize` (every method, with and without `antialias`,
//! `preserve_aspect_ratio`, uint8 input, a batch) and the v1
//! `resize_bilinear`, `resize_nearest_neighbor`, `resize_bicubic`,
//! `resize_area` (legacy, `align_corners`, `half_pixel_centers`) against
//! every case of `golden/images.json` for them: one test per case (looked
//! up by name at test time), plus one test of any case of these ops the
//! list lacks, and TF's refusals. Outputs, and the recorded gradients
//! through `resize_grad`.
//!
//! Tolerance: 2e-6 relative with a floor of 2e-6 times the tensor's largest
//! magnitude (the taps' weights are products TF forms in another order);
//! nearest is exact.

use crate::support;

use ndarray::{ArrayD, IxDyn};
use specc_image::resize::{self, Centers, ResizeMethod};
use specc_image::Image;
use support::{assert_close, golden_file, image_of, tensor};

const OPS: &[&str] = support::ops::RESIZE;

const REL: f64 = 2e-6;

fn size(args: &serde_json::Value) -> [usize; 2] {
    let s = args["size"].as_array().expect("size");
    [
        s[0].as_u64().expect("height") as usize,
        s[1].as_u64().expect("width") as usize,
    ]
}

/// The method, antialias and centres of a case.
fn how(case: &serde_json::Value) -> (ResizeMethod, bool, Centers) {
    let args = &case["args"];
    let flag = |k: &str| args[k].as_bool().unwrap_or(false);
    match case["op"].as_str().expect("op") {
        "tf.image.resize" => (
            ResizeMethod::from_name(args["method"].as_str().expect("method")).expect("a method"),
            flag("antialias"),
            Centers::V2,
        ),
        op => {
            let method = match op {
                "tf.compat.v1.image.resize_bilinear" => ResizeMethod::Bilinear,
                "tf.compat.v1.image.resize_nearest_neighbor" => ResizeMethod::Nearest,
                "tf.compat.v1.image.resize_bicubic" => ResizeMethod::Bicubic,
                _ => ResizeMethod::Area,
            };
            let centers = Centers {
                align_corners: flag("align_corners"),
                half_pixel_centers: flag("half_pixel_centers"),
            };
            (method, false, centers)
        }
    }
}

fn run(case: &serde_json::Value, image: &Image) -> specc_image::Result<Image> {
    let args = &case["args"];
    let (method, antialias, centers) = how(case);
    match case["op"].as_str().expect("op") {
        "tf.image.resize" => resize::resize(
            image,
            size(args),
            method,
            antialias,
            args["preserve_aspect_ratio"].as_bool().unwrap_or(false),
        ),
        "tf.compat.v1.image.resize_bilinear" => resize::resize_bilinear(image, size(args), centers),
        "tf.compat.v1.image.resize_nearest_neighbor" => {
            resize::resize_nearest_neighbor(image, size(args), centers)
        }
        "tf.compat.v1.image.resize_bicubic" => resize::resize_bicubic(image, size(args), centers),
        _ => resize::resize_area(image, size(args), centers.align_corners),
    }
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let inputs = case["inputs"].as_object().expect("inputs");
    let (_, input) = inputs.iter().next().expect("one input");
    let image = image_of(input);
    let out = run(case, &image).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (dtype, shape, want) = tensor(&case["outputs"]["output"]);
    assert_eq!(out.dtype(), dtype, "{name}: dtype");
    assert_eq!(out.shape(), &shape[..], "{name}: shape");
    let got: Vec<f64> = out.to_f64().iter().copied().collect();
    let (method, antialias, centers) = how(case);
    assert_close(name, &got, &want, method == ResizeMethod::Nearest, REL);
    if case["grad"].is_object() {
        let (_, wshape, w) = tensor(&case["grad"]["weights"]["output"]);
        let w = ArrayD::from_shape_vec(IxDyn(&wshape), w.iter().map(|&v| v as f32).collect())
            .expect("weights");
        let g = resize::resize_grad(image.shape(), &w, method, antialias, centers)
            .unwrap_or_else(|e| panic!("{name} gradient: {e}"));
        let key = inputs.keys().next().expect("the input's name");
        let (_, _, want_g) = tensor(&case["grad"]["wrt"][key]);
        let got_g: Vec<f64> = g.iter().map(|&v| f64::from(v)).collect();
        assert_close(&format!("{name} gradient"), &got_g, &want_g, false, REL);
    }
}

case_tests!(
    super::OPS, super::check;
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

#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Every call TF refused (`refused` in the file, all of them resizes) is
/// refused.
#[test]
fn tensorflow_s_refusals_are_refused() {
    let file = golden_file();
    let image = Image::F32(ArrayD::zeros(IxDyn(&[1, 5, 7, 3])));
    let mut n = 0;
    for r in file["refused"].as_array().expect("refused") {
        // Only resizes are refused in the file: another refusal has no test.
        assert!(
            OPS.contains(&r["op"].as_str().expect("op")),
            "{}: a refused call of {}, not a resize",
            r["name"],
            r["op"]
        );
        n += 1;
        let err = run(r, &image).expect_err(r["name"].as_str().expect("name"));
        assert!(
            err.message.contains("align_corners"),
            "{}: {}",
            r["name"],
            err.message
        );
    }
    assert!(n > 0, "no refused resize in the file");
}

/// Bad sizes are errors, never panics or huge allocations.
#[test]
fn bad_sizes_are_errors() {
    let image = Image::F32(ArrayD::zeros(IxDyn(&[5, 7, 3])));
    assert!(resize::resize(&image, [0, 3], ResizeMethod::Bilinear, false, false).is_err());
    assert!(resize::resize(
        &image,
        [1 << 20, 1 << 20],
        ResizeMethod::Bilinear,
        false,
        false
    )
    .is_err());
    let empty = Image::F32(ArrayD::zeros(IxDyn(&[0, 7, 3])));
    assert!(resize::resize(&empty, [3, 3], ResizeMethod::Bicubic, false, false).is_err());
    assert!(resize::resize(
        &Image::F32(ArrayD::zeros(IxDyn(&[5, 7]))),
        [3, 3],
        ResizeMethod::Area,
        false,
        false
    )
    .is_err());
}

/// Nearest selects in the image's own dtype: int32 values beyond 2^24
/// (which float32 cannot hold) come out exactly.
#[test]
fn nearest_keeps_large_int32_values_exactly() {
    let values: Vec<i32> = (0..4 * 6).map(|i| (1 << 30) + 2 * i + 1).collect();
    let image =
        Image::I32(ArrayD::from_shape_vec(IxDyn(&[4, 6, 1]), values.clone()).expect("shape"));
    let out = resize::resize(&image, [2, 3], ResizeMethod::Nearest, false, false).expect("nearest");
    let Image::I32(out) = out else {
        panic!("nearest keeps int32")
    };
    // Half-pixel centres: rows ⌊(i + 0.5)·2⌋ = 1, 3; columns 1, 3, 5.
    let want: Vec<i32> = [1usize, 3]
        .iter()
        .flat_map(|&y| [1usize, 3, 5].map(|x| values[y * 6 + x]))
        .collect();
    assert_eq!(out.iter().copied().collect::<Vec<_>>(), want);
}
