//! `crop_and_resize` (outputs, and the gradients w.r.t. the image and the
//! boxes) and `resize_with_pad` against every case of `golden/images.json`
//! for them: one test per case (looked up by name at test time), plus one
//! test of any case of these ops the list lacks.
//!
//! Tolerance: 2e-6 relative with a floor of 2e-6 times the tensor's
//! largest magnitude; nearest crops are exact.

use crate::support;

use ndarray::{ArrayD, IxDyn};
use specc_image::crop_resize::{self, CropMethod};
use specc_image::resize::ResizeMethod;
use specc_image::Image;
use support::{assert_close, image_of, tensor};

const OPS: &[&str] = support::ops::CROP_RESIZE;

const REL: f64 = 2e-6;

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let args = &case["args"];
    let inputs = &case["inputs"];
    let (_, want_shape, want) = tensor(&case["outputs"]["output"]);
    match case["op"].as_str().expect("op") {
        "tf.image.crop_and_resize" => {
            let image = image_of(&inputs["image"]);
            let (_, _, b) = tensor(&inputs["boxes"]);
            let boxes: Vec<[f32; 4]> = b
                .chunks_exact(4)
                .map(|c| [c[0] as f32, c[1] as f32, c[2] as f32, c[3] as f32])
                .collect();
            let (_, _, ix) = tensor(&inputs["box_indices"]);
            let indices: Vec<i64> = ix.iter().map(|&v| v as i64).collect();
            let crop = args["crop_size"].as_array().expect("crop_size");
            let crop = [
                crop[0].as_u64().expect("crop height") as usize,
                crop[1].as_u64().expect("crop width") as usize,
            ];
            let method = match args["method"].as_str().expect("method") {
                "bilinear" => CropMethod::Bilinear,
                _ => CropMethod::Nearest,
            };
            let extrapolation = args["extrapolation_value"]
                .as_f64()
                .expect("extrapolation_value") as f32;
            let out =
                crop_resize::crop_and_resize(&image, &boxes, &indices, crop, method, extrapolation)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out.shape(), &want_shape[..], "{name}: shape");
            let got: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
            assert_close(name, &got, &want, method == CropMethod::Nearest, REL);
            let (_, wshape, w) = tensor(&case["grad"]["weights"]["output"]);
            let w = ArrayD::from_shape_vec(IxDyn(&wshape), w.iter().map(|&v| v as f32).collect())
                .expect("weights");
            let gi = crop_resize::crop_and_resize_grad_image(&image, &boxes, &indices, &w, method)
                .expect("image gradient");
            let got: Vec<f64> = gi.iter().map(|&v| f64::from(v)).collect();
            assert_close(
                &format!("{name} image gradient"),
                &got,
                &tensor(&case["grad"]["wrt"]["image"]).2,
                false,
                REL,
            );
            let gb = crop_resize::crop_and_resize_grad_boxes(&image, &boxes, &indices, &w)
                .expect("box gradient");
            let got: Vec<f64> = gb.iter().flatten().map(|&v| f64::from(v)).collect();
            assert_close(
                &format!("{name} box gradient"),
                &got,
                &tensor(&case["grad"]["wrt"]["boxes"]).2,
                false,
                1e-5,
            );
        }
        _ => {
            let image = image_of(&inputs["image"]);
            let method = ResizeMethod::from_name(args["method"].as_str().expect("method"))
                .expect("a method");
            let out = crop_resize::resize_with_pad(
                &image,
                args["target_height"].as_u64().expect("target_height") as usize,
                args["target_width"].as_u64().expect("target_width") as usize,
                method,
                args["antialias"].as_bool().unwrap_or(false),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out.shape(), &want_shape[..], "{name}: shape");
            let got: Vec<f64> = out.to_f64().iter().copied().collect();
            assert_close(name, &got, &want, method == ResizeMethod::Nearest, REL);
        }
    }
}

case_tests!(
    super::OPS, super::check;
    crop_and_resize_bilinear,
    crop_and_resize_nearest,
    crop_and_resize_bilinear_extrapolation,
    crop_and_resize_nearest_extrapolation,
    crop_and_resize_bilinear_crop_size_one,
    crop_and_resize_nearest_crop_size_one,
    resize_with_pad_bilinear_0,
    resize_with_pad_nearest_0,
    resize_with_pad_bilinear_1,
    resize_with_pad_nearest_1,
    resize_with_pad_bilinear_antialias_batch,
);

#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Bad arguments are errors, never panics.
#[test]
fn bad_arguments_are_errors() {
    let image = Image::F32(ArrayD::zeros(IxDyn(&[2, 5, 7, 3])));
    let b = [[0.0, 0.0, 1.0, 1.0]];
    assert!(
        crop_resize::crop_and_resize(&image, &b, &[2], [3, 3], CropMethod::Bilinear, 0.0).is_err()
    );
    assert!(
        crop_resize::crop_and_resize(&image, &b, &[-1], [3, 3], CropMethod::Bilinear, 0.0).is_err()
    );
    assert!(
        crop_resize::crop_and_resize(&image, &b, &[0, 1], [3, 3], CropMethod::Bilinear, 0.0)
            .is_err()
    );
    assert!(
        crop_resize::crop_and_resize(&image, &b, &[0], [0, 3], CropMethod::Nearest, 0.0).is_err()
    );
    // NaN boxes sample nothing: every value is the extrapolation value.
    let nan = [[f32::NAN; 4]];
    let out = crop_resize::crop_and_resize(&image, &nan, &[0], [2, 2], CropMethod::Bilinear, 7.0)
        .expect("crop");
    assert!(out.iter().all(|&v| v == 7.0));
    assert!(crop_resize::resize_with_pad(&image, 0, 3, ResizeMethod::Bilinear, false).is_err());
}
