//! `extract_patches` and `non_max_suppression` against every case of
//! `golden/images.json` for them: one test per case (looked up by name at
//! test time), plus one test of any case of these ops the list lacks.
//! Patches only move values, so they are compared exactly; NMS gives
//! indices, compared exactly.

use crate::support;

use specc_image::detection::non_max_suppression;
use specc_image::patches::{extract_patches, Padding};
use support::{assert_close, image_of, number, tensor};

const OPS: &[&str] = support::ops::PATCHES_NMS;

fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_i64().expect("an integer"))
        .collect()
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let args = &case["args"];
    let (_, want_shape, want) = tensor(&case["outputs"]["output"]);
    match case["op"].as_str().expect("op") {
        "tf.image.extract_patches" => {
            let images = image_of(&case["inputs"]["images"]);
            let padding = Padding::from_name(args["padding"].as_str().expect("padding"))
                .expect("VALID or SAME");
            let out = extract_patches(
                &images,
                &ints(&args["sizes"]),
                &ints(&args["strides"]),
                &ints(&args["rates"]),
                padding,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out.shape(), &want_shape[..], "{name}: shape");
            let got: Vec<f64> = out.to_f64().iter().copied().collect();
            assert_close(name, &got, &want, true, 0.0);
        }
        "tf.image.non_max_suppression" => {
            let (_, _, b) = tensor(&case["inputs"]["boxes"]);
            let boxes: Vec<[f32; 4]> = b
                .chunks_exact(4)
                .map(|c| [c[0] as f32, c[1] as f32, c[2] as f32, c[3] as f32])
                .collect();
            let (_, _, s) = tensor(&case["inputs"]["scores"]);
            let scores: Vec<f32> = s.iter().map(|&x| x as f32).collect();
            let got = non_max_suppression(
                &boxes,
                &scores,
                args["max_output_size"].as_u64().expect("max_output_size") as usize,
                number(&args["iou_threshold"]) as f32,
                number(&args["score_threshold"]) as f32,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let got: Vec<f64> = got.iter().map(|&i| f64::from(i)).collect();
            assert_close(name, &got, &want, true, 0.0);
        }
        other => panic!("no op {other}"),
    }
}

case_tests!(
    super::OPS, super::check;
    extract_patches_valid_strided,
    extract_patches_same_stride1,
    extract_patches_valid_rates,
    extract_patches_same_rates_strided,
    non_max_suppression,
    non_max_suppression_score_threshold,
    non_max_suppression_max_output,
);

#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Bad arguments are errors, never panics.
#[test]
fn bad_arguments_are_errors() {
    let images = specc_image::Image::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[1, 5, 7, 3])));
    assert!(extract_patches(
        &images,
        &[1, 0, 2, 1],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        Padding::Same
    )
    .is_err());
    assert!(extract_patches(
        &images,
        &[2, 2, 2, 1],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        Padding::Same
    )
    .is_err());
    let image3 = specc_image::Image::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[5, 7, 3])));
    assert!(extract_patches(
        &image3,
        &[1, 2, 2, 1],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        Padding::Valid
    )
    .is_err());
    // A window larger than the image: no VALID patches, not a panic.
    let out = extract_patches(
        &images,
        &[1, 9, 2, 1],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        Padding::Valid,
    )
    .expect("empty");
    assert_eq!(out.shape(), &[1, 0, 6, 9 * 2 * 3]);
    assert!(non_max_suppression(&[[0.0; 4]], &[], 1, 0.5, 0.0).is_err());
    assert!(non_max_suppression(&[[0.0; 4]], &[1.0], 1, f32::NAN, 0.0).is_err());
}
