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

use crate::common;

use common::op_cases::{
    arg_text, case_spec, check_case, check_case_with, check_others, conv_cases, named,
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

/// The cases of this file's ops ([`common::op_cases::CONV_JSON_OPS`]);
/// each must be one [`OPS`] knows how to call.
fn cases() -> Vec<serde_json::Value> {
    let cases = conv_cases("golden_conv");
    for c in &cases {
        assert!(
            op_of(c).is_some(),
            "{}: no call for op {}",
            c["name"],
            c["op"]
        );
    }
    cases
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

/// Whether `passes::winograd` can take a case (`Window::winograd_fits`):
/// a `conv2d` (or `convolution`) with a 3×3 kernel, stride 1 and dilation 1
/// (any zero padding), read from the case's filter shape and arguments; the
/// reason when it cannot.
fn winograd_eligible(case: &serde_json::Value) -> Result<(), String> {
    let op = case["op"].as_str().expect("op");
    if op != "tf.nn.conv2d" && op != "tf.nn.convolution" {
        return Err(format!("{op} is not a 2-D convolution"));
    }
    let filters = common::ints(&case["inputs"]["filters"]["shape"]);
    if filters.len() != 4 || filters[..2] != [3, 3] {
        return Err(format!("its filter is {filters:?}, not 3×3"));
    }
    // A scalar or a list (conv2d's two or four entries): every entry 1.
    let ones = |key: &str| {
        let v = &case["args"][key];
        let all: Vec<i64> = match v {
            serde_json::Value::Null => vec![1],
            serde_json::Value::Array(_) => common::ints(v),
            v => vec![common::int(v)],
        };
        all.iter().all(|&x| x == 1)
    };
    if !ones("strides") {
        return Err(format!("its strides are {}", case["args"]["strides"]));
    }
    if !ones("dilations") {
        return Err(format!("its dilations are {}", case["args"]["dilations"]));
    }
    Ok(())
}

/// The gradients TF recorded for a case (`grad.wrt`, non-null entries).
fn recorded_gradients(case: &serde_json::Value) -> Vec<String> {
    case["grad"]["wrt"]
        .as_object()
        .map(|w| {
            w.iter()
                .filter(|(_, g)| !g.is_null())
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A golden convolution case compiled with every Winograd-eligible
/// convolution as Winograd with `tile` (`passes::winograd`, forced whatever
/// the channels and output size), its outputs and gradients against TF's
/// within the same tolerance. Whether the case is eligible is read from its
/// data ([`winograd_eligible`]): an eligible case's gradient function has
/// the forward transforms and the transforms of each gradient TF recorded,
/// all with `tile`, run by blocks of images; a case that is not has no
/// Winograd kernel at all (the direct path) and is still compared with TF.
/// The test prints which path it checked.
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
    let kernels = || planned.plans.iter().flat_map(|p| &p.kernels);
    let eligible = winograd_eligible(case);
    match &eligible {
        Ok(()) => {
            let grads = recorded_gradients(case);
            let (dx, du) = (
                grads.iter().any(|g| g == "input"),
                grads.iter().any(|g| g == "filters"),
            );
            // Each transform runs, unfused or in a kernel of blocks of
            // images (`plan::winofuse`): the forward, and those of the
            // input gradient (dx) and of the filter gradient (dU).
            let mut want = vec![WindowOp::WinogradInput, WindowOp::WinogradOutput];
            if dx || du {
                want.push(WindowOp::WinogradOutputGrad);
            }
            if dx {
                want.push(WindowOp::WinogradInputGrad);
            }
            for op in want {
                let found = kernels().any(|k| match k {
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
            let tiles_ok = kernels().all(|k| match k {
                Kernel::Window(w) => w.tile.is_none_or(|t| t == tile),
                Kernel::Winograd(w) => w.tile == tile,
                _ => true,
            });
            assert!(tiles_ok, "{name}: every Winograd kernel has tile {tile:?}");
            let step = &planned.plans[0];
            let blocks = |f: &dyn Fn(&WinogradKernel) -> bool| {
                step.kernels
                    .iter()
                    .any(|k| matches!(k, Kernel::Winograd(w) if f(w)))
            };
            assert!(
                blocks(&|w| w.y.is_some())
                    && blocks(&|w| (!dx || w.dx.is_some()) && (!du || w.du.is_some())),
                "{name}: the step runs its forward and its gradients by blocks of images"
            );
        }
        Err(_) => {
            let winograd = kernels().any(|k| match k {
                Kernel::Window(w) => matches!(
                    w.op,
                    WindowOp::WinogradInput
                        | WindowOp::WinogradInputGrad
                        | WindowOp::WinogradOutput
                        | WindowOp::WinogradOutputGrad
                ),
                Kernel::Winograd(_) => true,
                _ => false,
            });
            assert!(
                !winograd,
                "{name}: not Winograd-eligible, yet planned as Winograd"
            );
        }
    }
    check_case_with(case, &bindings(case), REL, FLOOR, &options);
    match eligible {
        Ok(()) => eprintln!("{name}: checked through Winograd {tile:?}"),
        Err(why) => {
            eprintln!("{name}: not Winograd-eligible ({why}): checked through the direct path")
        }
    }
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

/// `refused`: the calls TF would not make, without numbers to compare. Each
/// must be of an op this file checks and a refusal specc knows it does not
/// share: TF's CPU kernels refuse `conv2d_transpose` with dilations > 1,
/// which specc computes (TF records no numbers for it). Another refusal
/// fails, to be looked at.
#[test]
fn tensorflows_refusals_are_known() {
    let file = common::golden(FILE);
    let refused = file["refused"].as_array().expect("refused");
    for r in refused {
        let name = r["name"].as_str().expect("name");
        assert!(op_of(r).is_some(), "{name}: refused call of another op");
        let dilated = match &r["args"]["dilations"] {
            serde_json::Value::Array(_) => common::ints(&r["args"]["dilations"]),
            v if v.is_i64() => vec![common::int(v)],
            _ => vec![],
        }
        .iter()
        .any(|&d| d > 1);
        assert!(
            r["op"] == "tf.nn.conv2d_transpose" && dilated,
            "{name}: a refusal of TF's this test does not know: {}",
            r["error"]
        );
    }
}
