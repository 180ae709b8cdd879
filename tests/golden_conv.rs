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

use common::{array, assert_all_close, check_all, golden, literal, scale, shape_text, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;

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

/// An `args` value as spec text: a bool, an integer, a float, a string or a list.
fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) if n.is_i64() => n.to_string(),
        serde_json::Value::Number(n) => format!("{:e}", n.as_f64().expect("a number")),
        serde_json::Value::String(s) => format!("\"{s}\""),
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value).collect();
            format!("[{}]", parts.join(", "))
        }
        other => panic!("argument {other}: not a number, a bool, a string or a list"),
    }
}

/// The case's call: its tensor inputs, then every argument but the data
/// format (NHWC, the only layout) as a keyword.
fn call(case: &serde_json::Value) -> String {
    let (_, builtin, inputs) = op_of(case).expect("an op of this file");
    let mut parts: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    for (k, v) in case["args"].as_object().expect("args") {
        if k != "data_format" {
            parts.push(format!("{k} = {}", value(v)));
        }
    }
    format!("{builtin}({})", parts.join(", "))
}

/// The spec bindings of a case: one line per output, named as in the file.
fn bindings(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("name");
    let c = call(case);
    case["outputs"]
        .as_object()
        .expect("outputs")
        .keys()
        .map(|k| match k.as_str() {
            "output" => format!("output = {c}\n"),
            // max_pool_with_argmax's second result.
            "argmax" => format!(
                "argmax = {}_argmax{}\n",
                &c[..c.find('(').expect("(")],
                &c[c.find('(').expect("(")..]
            ),
            k => panic!("{name}: unknown output {k}"),
        })
        .collect()
}

/// The probe parameter of output `k`.
fn probe(k: &str) -> String {
    format!("probe_{k}")
}

/// The case's spec; the inputs with a gradient in `wrt` (and `trainable`,
/// if given) are trainable parameters, the others constants.
fn spec(case: &serde_json::Value, trainable: Option<&str>) -> String {
    let wrt = &case["grad"]["wrt"];
    let mut params = String::new();
    for (k, input) in case["inputs"].as_object().expect("inputs") {
        let (dims, _) = array(&input["values"]);
        let fixed = if wrt[k].is_object() || trainable == Some(k.as_str()) {
            ""
        } else {
            ", trainable = false"
        };
        params += &format!(
            "  {k}: {} = constant(value = {}){fixed}\n",
            shape_text(&dims),
            literal(&input["values"])
        );
    }
    let outputs = case["outputs"].as_object().expect("outputs");
    let mut loss = "loss = 0.0".to_string();
    for (k, out) in outputs {
        let (dims, _) = array(&out["values"]);
        params += &format!("  {}: {} = zeros\n", probe(k), shape_text(&dims));
        let v = if out["dtype"].as_str().is_some_and(|d| d.starts_with("int")) {
            format!("cast({k}, float32)")
        } else {
            k.to_string()
        };
        loss += &format!(" + reduce_sum({} * stop_gradient({v}))", probe(k));
    }
    let grad_outputs = case["grad"]["grad_outputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for k in &grad_outputs {
        let k = k.as_str().expect("an output name");
        let w = &case["grad"]["weights"][k]["values"];
        loss += &format!(" + reduce_sum({k} * {})", literal(w));
    }
    format!(
        "model convolution\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\n{}{loss}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
        bindings(case)
    )
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let outputs = case["outputs"].as_object().expect("outputs");
    let text = spec(case, None);
    let src = SourceFile::new("case.spec", text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().expect("session");
    let f = s.function_index("grad").expect("grad");
    s.call(f, 1).expect("call");

    for (k, out) in outputs {
        let (_, want) = array(&out["values"]);
        let got = s
            .output(f, &format!("grad/{}", probe(k)), 1)
            .expect("output");
        assert_all_close(
            &format!("{name} output {k}"),
            got,
            &want,
            Tol::scaled(REL, FLOOR, scale(&want)),
        );
    }
    let wrt = case["grad"]["wrt"].as_object().cloned().unwrap_or_default();
    for (k, g) in &wrt {
        if g.is_null() {
            // TF's None: made trainable, the input gets no gradient in specc.
            let src = SourceFile::new("case.spec", spec(case, Some(k.as_str())));
            let errors = match compile(&src, Functions::ALL) {
                Ok(_) => Vec::new(),
                Err(d) => d.iter().map(|d| d.message.clone()).collect(),
            };
            let want = format!("parameter `{k}` gets no gradient");
            assert!(
                errors.iter().any(|e| e.starts_with(&want)),
                "{name}: TF has no gradient w.r.t. {k}, specc's errors: {errors:?}"
            );
            continue;
        }
        let got = s.output(f, &format!("grad/{k}"), 1).expect("gradient");
        let (_, want) = array(&g["values"]);
        assert_all_close(
            &format!("{name} gradient w.r.t. {k}"),
            got,
            &want,
            Tol::scaled(REL, FLOOR, scale(&want)),
        );
    }
}

fn cases() -> Vec<serde_json::Value> {
    golden("conv.json")["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| op_of(c).is_some())
        .cloned()
        .collect()
}

fn named(name: &str) {
    let all = cases();
    let case = all
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("conv.json has no convolution or pooling case {name}"));
    check(case);
}

macro_rules! conv_tests {
    ($($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { super::named(stringify!($name)); } )*
        }
    };
}

conv_tests!(
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
    let others = cases()
        .into_iter()
        .filter(|c| !NAMED.contains(&c["name"].as_str().expect("name")))
        .map(|c| (c["name"].as_str().expect("name").to_string(), c));
    check_all(others, |_, c| check(&c));
}
