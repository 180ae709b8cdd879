//! `ssim` (with `return_index_map`, uint8 images, custom filters), its
//! gradient w.r.t. `img1`, and `ssim_multiscale` against every case of
//! `golden/images.json` for them: one test per case (looked up by name at
//! test time), plus one test of any case of these ops the list lacks.
//! Arguments a case does not record take TF's defaults (filter 11, σ 1.5,
//! k1 0.01, k2 0.03).
//!
//! Tolerance: 1e-5 relative with a floor of 1e-5 times the tensor's largest
//! magnitude (the statistics are in f64 here, f32 in TF, and the Gaussian
//! window's softmax uses another exp).

use crate::support;

use ndarray::{ArrayD, IxDyn};
use specc_image::ssim::{self, SsimOptions};
use support::{assert_close, image_of, tensor};

const OPS: &[&str] = support::ops::SSIM;

const REL: f64 = 1e-5;

fn options(args: &serde_json::Value) -> SsimOptions {
    let d = SsimOptions::default();
    SsimOptions {
        max_val: args["max_val"].as_f64().expect("max_val"),
        filter_size: args["filter_size"]
            .as_u64()
            .map_or(d.filter_size, |v| v as usize),
        filter_sigma: args["filter_sigma"]
            .as_f64()
            .map_or(d.filter_sigma, |v| v as f32),
        k1: args["k1"].as_f64().unwrap_or(d.k1),
        k2: args["k2"].as_f64().unwrap_or(d.k2),
    }
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let args = &case["args"];
    let img1 = image_of(&case["inputs"]["img1"]);
    let img2 = image_of(&case["inputs"]["img2"]);
    let o = options(args);
    let (_, want_shape, want) = tensor(&case["outputs"]["output"]);
    let out = match case["op"].as_str().expect("op") {
        "tf.image.ssim" if args["return_index_map"].as_bool().unwrap_or(false) => {
            ssim::ssim_index_map(&img1, &img2, &o)
        }
        "tf.image.ssim" => ssim::ssim(&img1, &img2, &o),
        _ => {
            let powers: Vec<f64> = args["power_factors"]
                .as_array()
                .expect("power_factors")
                .iter()
                .map(|v| v.as_f64().expect("a number"))
                .collect();
            ssim::ssim_multiscale(&img1, &img2, &powers, &o)
        }
    }
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(out.shape(), &want_shape[..], "{name}: shape");
    let got: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
    assert_close(name, &got, &want, false, REL);
    if case["grad"].is_object() {
        let (_, wshape, w) = tensor(&case["grad"]["weights"]["output"]);
        let w = ArrayD::from_shape_vec(IxDyn(&wshape), w.iter().map(|&v| v as f32).collect())
            .expect("weights");
        let g = ssim::ssim_grad_img1(&img1, &img2, &o, &w).expect("gradient");
        let got: Vec<f64> = g.iter().map(|&v| f64::from(v)).collect();
        assert_close(
            &format!("{name} gradient"),
            &got,
            &tensor(&case["grad"]["wrt"]["img1"]).2,
            false,
            REL,
        );
    }
}

case_tests!(
    super::OPS, super::check;
    ssim,
    ssim_custom_filter,
    ssim_index_map,
    ssim_uint8,
    ssim_multiscale,
    ssim_multiscale_small_filter,
);

#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Images smaller than the window, or of different shapes, are errors.
#[test]
fn bad_arguments_are_errors() {
    let small = specc_image::Image::F32(ArrayD::zeros(IxDyn(&[5, 5, 3])));
    let big = specc_image::Image::F32(ArrayD::zeros(IxDyn(&[24, 24, 3])));
    let o = SsimOptions::default();
    assert!(ssim::ssim(&small, &small, &o).is_err());
    assert!(ssim::ssim(&small, &big, &o).is_err());
    assert!(ssim::ssim_multiscale(&big, &big, &[0.5, 0.5, 0.5], &o).is_err()); // 24 → 6 < 11
    assert!(ssim::ssim_multiscale(&big, &big, &[], &o).is_err());
}
