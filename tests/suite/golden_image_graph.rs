//! The differentiable `tf.image` measures as graph ops (`total_variation`,
//! `image_gradients`, `sobel_edges`, `psnr`, `ssim`, `ssim_multiscale`) against their cases of
//! `golden/images.json`, outputs and gradients, through the JIT-compiled
//! gradient function: each case as its own test (plus one test of any such
//! case the list lacks), `ssim` with `return_index_map` and
//! `ssim_multiscale` included.
//!
//! The spec of a case has one constant parameter per input (its values from
//! the file), the case's call with its arguments from `args`, and
//! `loss = Σ reduce_sum(out_k * W_k)` over the case's `grad_outputs` with its
//! weights, so each parameter's gradient is TF's `grad.wrt` entry; one probe
//! parameter per output returns the forward outputs. Images stored as uint8
//! are float32 tensors of the same values here (`psnr` and `ssim` are
//! invariant to the scale of the pixels and `max_val` together).
//!
//! Tolerance: 1e-5 relative with a floor of 1e-5 times the tensor's largest
//! magnitude; an infinite PSNR (identical images) is exact.

use crate::common;

use common::op_cases::{arg_text, cases_of, check_case, check_others, named};

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;
const FILE: &str = "images.json";

/// An op: its TF name, its specc builtin per output, its tensor inputs.
type Op = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

/// Each op this file checks, its specc builtins (one per output) and its
/// tensor inputs in TF's argument order.
const OPS: &[Op] = &[
    (
        "tf.image.total_variation",
        &[("output", "total_variation")],
        &["image"],
    ),
    (
        "tf.image.image_gradients",
        &[("dy", "image_gradients_dy"), ("dx", "image_gradients_dx")],
        &["image"],
    ),
    (
        "tf.image.sobel_edges",
        &[("output", "sobel_edges")],
        &["image"],
    ),
    ("tf.image.psnr", &[("output", "psnr")], &["a", "b"]),
    ("tf.image.ssim", &[("output", "ssim")], &["img1", "img2"]),
    (
        "tf.image.ssim_multiscale",
        &[("output", "ssim_multiscale")],
        &["img1", "img2"],
    ),
];

fn op_of(case: &serde_json::Value) -> Option<&'static Op> {
    let op = case["op"].as_str().expect("op");
    OPS.iter().find(|(name, _, _)| *name == op)
}

/// The spec bindings of a case: one line per output, named as in the file.
fn bindings(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("name");
    let (_, builtins, inputs) = op_of(case).expect("an op of this file");
    let mut args: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    for (k, v) in case["args"].as_object().expect("args") {
        args.push(format!("{k} = {}", arg_text(v)));
    }
    case["outputs"]
        .as_object()
        .expect("outputs")
        .keys()
        .map(|k| {
            let (_, f) = builtins
                .iter()
                .find(|(o, _)| o == k)
                .unwrap_or_else(|| panic!("{name}: unknown output {k}"));
            format!("{k} = {f}({})\n", args.join(", "))
        })
        .collect()
}

fn cases() -> Vec<serde_json::Value> {
    cases_of(FILE, |c| op_of(c).is_some())
}

fn check(case: &serde_json::Value) {
    check_case(case, &bindings(case), REL, FLOOR);
}

fn check_named(name: &str) {
    check(named(&cases(), FILE, name));
}

crate::op_case_tests!(super::check_named;
    total_variation_image,
    total_variation_batch,
    image_gradients,
    sobel_edges,
    psnr,
    psnr_uint8,
    psnr_identical,
    ssim,
    ssim_custom_filter,
    ssim_uint8,
    ssim_index_map,
    ssim_multiscale,
    ssim_multiscale_small_filter,
);

/// The graph-op cases of the file without a test of their own (a
/// regenerated file with more cases is still checked).
#[test]
fn every_other_image_op_case_in_the_file_matches_tensorflow() {
    check_others(cases(), NAMED, check);
}
