//! The convolution and pooling cases of `golden/conv.json` (`tf.nn.conv2d`,
//! `convolution`, `conv1d`, `conv2d_transpose`, `atrous_conv2d_transpose`,
//! `depthwise_conv2d`, `separable_conv2d`, `max_pool2d`, `avg_pool2d`,
//! `max_pool_with_argmax`, global pooling with `reduce_mean`/`reduce_max`,
//! `bias_add`) against the JIT-compiled gradient function: each case as its
//! own test (plus one test of any such case the list lacks).
//!
//! The spec of a case has one constant parameter per input (its values from
//! the file), the case's call with its arguments from `args`, and
//! `loss = Σ reduce_sum(out_k * W_k)` over the case's `grad_outputs` with its
//! weights, so each parameter's gradient is TF's `grad.wrt` entry; one probe
//! parameter per output returns the forward outputs. A case whose gradient
//! TF refused (`grad_refused`: conv2d and conv1d with dilations) checks its
//! outputs; its gradient is checked by the `tf.nn.convolution` case TF
//! recorded on the same inputs.
//!
//! Tolerance: 1e-5 relative with a floor of 1e-5 times the tensor's largest
//! magnitude: a convolution sums up to 147 products in another order than
//! TF's kernels. Integer outputs (argmax) are exact.

mod common;

use common::op_cases::{
    arg_text, case_spec, cases_of, check_case, check_case_with, check_others, named,
};
use specc_compiler::driver::{plan_model_with, Functions, Options};
use specc_compiler::ir::WinogradTile;
use specc_compiler::passes::winograd::Winograd;
use specc_compiler::plan::{Kernel, WindowOp, WinogradKernel};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;
const FILE: &str = "conv.json";

/// Each op this file checks, its specc builtin and its tensor inputs in
/// TF's argument order.
const OPS: &[(&str, &str, &[&str])] = &[
    ("tf.nn.conv2d", "conv2d", &["input", "filters"]),
    ("tf.nn.convolution", "convolution", &["input", "filters"]),
    ("tf.nn.conv1d", "conv1d", &["input", "filters"]),
    (
        "tf.nn.conv2d_transpose",
        "conv2d_transpose",
        &["input", "filters"],
    ),
    (
        "tf.nn.atrous_conv2d_transpose",
        "atrous_conv2d_transpose",
        &["value", "filters"],
    ),
    (
        "tf.nn.depthwise_conv2d",
        "depthwise_conv2d",
        &["input", "filter"],
    ),
    (
        "tf.nn.separable_conv2d",
        "separable_conv2d",
        &["input", "depthwise_filter", "pointwise_filter"],
    ),
    ("tf.nn.max_pool2d", "max_pool2d", &["input"]),
    ("tf.nn.avg_pool2d", "avg_pool2d", &["input"]),
    (
        "tf.nn.max_pool_with_argmax",
        "max_pool_with_argmax",
        &["input"],
    ),
    ("tf.reduce_mean", "reduce_mean", &["input"]),
    ("tf.reduce_max", "reduce_max", &["input"]),
    ("tf.nn.bias_add", "bias_add", &["value", "bias"]),
];

fn op_of(
    case: &serde_json::Value,
) -> Option<&'static (&'static str, &'static str, &'static [&'static str])> {
    let op = case["op"].as_str().expect("op");
    OPS.iter().find(|(name, _, _)| *name == op)
}

/// The case's call: its tensor inputs, then every argument but the data
/// format (NHWC, the only layout) as a keyword.
fn call(case: &serde_json::Value) -> String {
    let (_, builtin, inputs) = op_of(case).expect("an op of this file");
    let mut parts: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    for (k, v) in case["args"].as_object().expect("args") {
        if k != "data_format" {
            parts.push(format!("{k} = {}", arg_text(v)));
        }
    }
    format!("{builtin}({})", parts.join(", "))
}

/// The spec bindings of a case: one line per output, named as in the file.
fn bindings(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("name");
    let c = call(case);
    let (f, args) = c.split_at(c.find('(').expect("("));
    case["outputs"]
        .as_object()
        .expect("outputs")
        .keys()
        .map(|k| match k.as_str() {
            "output" => format!("output = {c}\n"),
            // max_pool_with_argmax's second result.
            "argmax" => format!("argmax = {f}_argmax{args}\n"),
            k => panic!("{name}: unknown output {k}"),
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
    conv2d_same,
    conv2d_valid,
    conv2d_same_strided,
    conv2d_valid_strided,
    conv2d_same_even_kernel_strided,
    conv2d_same_unequal_strides,
    conv2d_explicit_padding,
    conv2d_explicit_padding_strided,
    conv2d_dilated_same,
    convolution_dilated_same,
    conv2d_dilated_valid,
    convolution_dilated_valid,
    conv2d_one_channel_same,
    conv2d_one_channel_valid_strided,
    conv2d_pointwise,
    conv2d_kernel_covers_input_valid,
    conv2d_kernel_larger_than_input_same,
    conv2d_transpose_same_strided,
    conv2d_transpose_same_strided_even_output,
    conv2d_transpose_valid_strided,
    conv2d_transpose_valid_strided_extra_row,
    conv2d_transpose_same,
    conv2d_transpose_explicit_padding_strided,
    atrous_conv2d_transpose_dilated_same,
    depthwise_conv2d_same,
    depthwise_conv2d_multiplier2_valid,
    depthwise_conv2d_multiplier2_same_strided,
    depthwise_conv2d_dilated_same,
    separable_conv2d_same,
    separable_conv2d_valid_strided,
    separable_conv2d_dilated_same,
    conv1d_same,
    conv1d_valid_strided,
    conv1d_same_strided_even_kernel,
    conv1d_dilated_same,
    convolution_1d_dilated_same,
    max_pool2d_valid_window_eq_stride,
    max_pool2d_same_window_eq_stride,
    max_pool2d_same_stride1,
    max_pool2d_valid_overlapping,
    max_pool2d_same_overlapping,
    max_pool2d_valid_rectangular,
    avg_pool2d_valid_window_eq_stride,
    avg_pool2d_same_window_eq_stride,
    avg_pool2d_same_stride1,
    avg_pool2d_valid_overlapping,
    avg_pool2d_same_overlapping,
    avg_pool2d_valid_rectangular,
    max_pool_with_argmax,
    global_avg_pool,
    global_avg_pool_keepdims,
    global_max_pool_ties,
    bias_add_nhwc,
);

/// The convolution and pooling cases of the file without a test of their
/// own (a regenerated file with more cases is still checked).
#[test]
fn every_other_convolution_case_in_the_file_matches_tensorflow() {
    check_others(cases(), NAMED, check);
}

/// A golden 3×3 stride-1 case computed by Winograd with `tile`
/// (`passes::winograd`, forced whatever the channels and output size): the
/// plan of its gradient function has every transform, all with `tile`, and
/// its outputs and gradients match TF's within the same tolerance.
fn check_winograd(name: &str, tile: WinogradTile) {
    let all = cases();
    let case = named(&all, FILE, name);
    let options = Options {
        winograd: Winograd::Always,
        winograd_tile: Some(tile),
        ..Options::default()
    };
    let src = SourceFile::new("case.spec", case_spec(case, &bindings(case), None));
    let planned = plan_model_with(&src, Functions::ALL, &options).expect("plans");
    // Each transform runs, unfused or in a kernel of blocks of images
    // (`plan::winofuse`): the forward, the input and the filter gradients.
    for op in [
        WindowOp::WinogradInput,
        WindowOp::WinogradInputGrad,
        WindowOp::WinogradOutput,
        WindowOp::WinogradOutputGrad,
    ] {
        let found = planned
            .plans
            .iter()
            .flat_map(|p| &p.kernels)
            .any(|k| match k {
                Kernel::Window(w) => w.op == op,
                Kernel::Winograd(w) => match op {
                    WindowOp::WinogradInput => w.y.is_some() || w.du.is_some(),
                    WindowOp::WinogradOutput => w.y.is_some(),
                    WindowOp::WinogradOutputGrad => w.dy.is_some(),
                    _ => w.dx.is_some(),
                },
                _ => false,
            });
        assert!(found, "{name}: no {} kernel", op.name());
    }
    let tiles_ok = planned
        .plans
        .iter()
        .flat_map(|p| &p.kernels)
        .all(|k| match k {
            Kernel::Window(w) => w.tile.is_none_or(|t| t == tile),
            Kernel::Winograd(w) => w.tile == tile,
            _ => true,
        });
    assert!(tiles_ok, "{name}: every Winograd kernel has tile {tile:?}");
    let step = &planned.plans[0];
    let blocks = |f: fn(&WinogradKernel) -> bool| {
        step.kernels
            .iter()
            .any(|k| matches!(k, Kernel::Winograd(w) if f(w)))
    };
    assert!(
        blocks(|w| w.y.is_some()) && blocks(|w| w.dx.is_some() && w.du.is_some()),
        "{name}: the step runs its forward and both gradients by blocks of images"
    );
    check_case_with(case, &bindings(case), REL, FLOOR, &options);
}

#[test]
fn winograd_f2x2_conv2d_same_matches_tensorflow() {
    check_winograd("conv2d_same", WinogradTile::F2);
}

#[test]
fn winograd_f4x4_conv2d_same_matches_tensorflow() {
    check_winograd("conv2d_same", WinogradTile::F4);
}

#[test]
fn winograd_f2x2_conv2d_valid_matches_tensorflow() {
    check_winograd("conv2d_valid", WinogradTile::F2);
}

#[test]
fn winograd_f4x4_conv2d_valid_matches_tensorflow() {
    check_winograd("conv2d_valid", WinogradTile::F4);
}

#[test]
fn winograd_f2x2_conv2d_explicit_padding_matches_tensorflow() {
    check_winograd("conv2d_explicit_padding", WinogradTile::F2);
}

#[test]
fn winograd_f4x4_conv2d_explicit_padding_matches_tensorflow() {
    check_winograd("conv2d_explicit_padding", WinogradTile::F4);
}

#[test]
fn winograd_f2x2_conv2d_one_channel_same_matches_tensorflow() {
    check_winograd("conv2d_one_channel_same", WinogradTile::F2);
}

#[test]
fn winograd_f4x4_conv2d_one_channel_same_matches_tensorflow() {
    check_winograd("conv2d_one_channel_same", WinogradTile::F4);
}
