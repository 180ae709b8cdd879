//! The normalization cases of `golden/conv.json` (`tf.nn.moments`,
//! `tf.nn.batch_normalization`, `tf.compat.v1.nn.fused_batch_norm` in
//! training, with `exponential_avg_factor` and in inference, layer
//! normalization written out two ways, `tf.nn.local_response_normalization`)
//! against the JIT-compiled gradient function: each case as its own test
//! (plus one test of any normalization case the list lacks).
//!
//! The spec of a case has one constant parameter per input (its values from
//! the file), the case's expression with its arguments from `args`, and
//! `loss = Σ reduce_sum(out_k * W_k)` over the case's `grad_outputs` with its
//! weights, so each parameter's gradient is TF's `grad.wrt` entry (a `null`
//! entry, TF's "no gradient path", must be an all-zero gradient); one probe
//! parameter per output returns the forward outputs.
//!
//! Tolerance: 1e-5 relative with a floor of 1e-5 times the tensor's largest
//! magnitude: the reductions sum 70 values in another order than TF's
//! kernels, and the gradient w.r.t. `x` of a batch normalization is a
//! difference of such sums.

use crate::common;

use common::op_cases::{arg_text, check_case, check_others, conv_cases, named};

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;
const FILE: &str = "conv.json";

/// `, k = v` for each of the case's `args` named in `keys` that it has.
fn keywords(case: &serde_json::Value, keys: &[&str]) -> String {
    let args = case["args"].as_object().expect("args");
    keys.iter()
        .filter_map(|k| args.get(*k).map(|v| format!(", {k} = {}", arg_text(v))))
        .collect()
}

/// A required argument of the case.
fn arg(case: &serde_json::Value, key: &str) -> String {
    let name = case["name"].as_str().expect("name");
    arg_text(
        case["args"]
            .get(key)
            .unwrap_or_else(|| panic!("{name}: no argument {key}")),
    )
}

/// The spec bindings of a case: one `name = expression` line per output
/// (named as the case's outputs), plus any intermediate bindings.
fn bindings(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("name");
    let op = case["op"].as_str().expect("op");
    let inputs = case["inputs"].as_object().expect("inputs");
    let outputs = case["outputs"].as_object().expect("outputs");
    let has = |k: &str| inputs.contains_key(k);
    match op {
        "tf.nn.moments" => {
            let kw = format!("axes = {}{}", arg(case, "axes"), keywords(case, &["keepdims"]));
            format!(
                "mean = moments_mean(x, {kw})\nvariance = moments_variance(x, {kw})\n"
            )
        }
        "tf.nn.batch_normalization" if case["args"].get("axes").is_some() => {
            // mean, variance = tf.nn.moments(x, axes); y = batch_normalization(..)
            let axes = arg(case, "axes");
            format!(
                "mean = moments_mean(x, axes = {axes})\nvariance = moments_variance(x, axes = {axes})\ny = batch_normalization(x, mean, variance, offset, scale, variance_epsilon = {})\n",
                arg(case, "variance_epsilon")
            )
        }
        "tf.nn.batch_normalization" => format!(
            "output = batch_normalization(x, mean, variance, offset, scale, variance_epsilon = {})\n",
            arg(case, "variance_epsilon")
        ),
        "tf.compat.v1.nn.fused_batch_norm" => {
            let mut call = "(x, scale, offset".to_string();
            if has("mean") {
                call += ", mean = mean, variance = variance";
            }
            call += &keywords(case, &["epsilon", "is_training", "exponential_avg_factor"]);
            call += ")";
            // The outputs in TF's order: y, the mean, the variance.
            let mut keys: Vec<&String> = outputs.keys().collect();
            keys.sort_by_key(|k| match k.as_str() {
                "y" => 0,
                k if k.contains("mean") => 1,
                k if k.contains("variance") => 2,
                k => panic!("{name}: unknown fused_batch_norm output {k}"),
            });
            let names = ["fused_batch_norm", "fused_batch_norm_mean", "fused_batch_norm_variance"];
            keys.iter()
                .zip(names)
                .map(|(k, f)| format!("{k} = {f}{call}\n"))
                .collect()
        }
        "tf.nn.local_response_normalization" => format!(
            "output = local_response_normalization(input{})\n",
            keywords(case, &["depth_radius", "bias", "alpha", "beta"])
        ),
        "layer normalization (tf.nn.moments over the last axis)" => {
            let tf = case["expression"].as_str().expect("expression");
            let axes = arg(case, "axes");
            let eps = arg(case, "epsilon");
            let stats = format!(
                "m = moments_mean(x, axes = {axes}, keepdims = true)\nv = moments_variance(x, axes = {axes}, keepdims = true)\n"
            );
            let y = if tf.contains("batch_normalization") {
                format!("output = batch_normalization(x, m, v, beta, gamma, {eps})\n")
            } else {
                format!("output = (x - m) * rsqrt(v + {eps}) * gamma + beta\n")
            };
            stats + &y
        }
        _ => panic!("{name}: no spec expression for {op}"),
    }
}

/// The cases of this file's ops ([`common::op_cases::CONV_JSON_OPS`]);
/// [`bindings`] fails on an op it has no expression for.
fn cases() -> Vec<serde_json::Value> {
    conv_cases("golden_normalization")
}

fn check(case: &serde_json::Value) {
    check_case(case, &bindings(case), REL, FLOOR);
}

fn check_named(name: &str) {
    check(named(&cases(), FILE, name));
}

crate::op_case_tests!(super::check_named;
    moments,
    moments_batch_normalization,
    batch_normalization_given_stats,
    fused_batch_norm_training,
    fused_batch_norm_training_exponential_avg,
    fused_batch_norm_inference,
    layer_norm_written_out,
    layer_norm_via_batch_normalization,
    local_response_normalization_0,
    local_response_normalization_1,
);

/// The normalization cases of the file without a test of their own (a
/// regenerated file with more cases is still checked).
#[test]
fn every_other_normalization_case_in_the_file_matches_tensorflow() {
    check_others(cases(), NAMED, check);
}

/// The layer-normalization cases computed by the `layer_normalization`
/// builtin (Keras's layer) instead of written out.
fn layer_normalization_builtin(name: &str) {
    let all = cases();
    let case = named(&all, FILE, name);
    let b = format!(
        "output = layer_normalization(x, gamma, beta, epsilon = {}, axis = {})\n",
        arg(case, "epsilon"),
        arg(case, "axes")
    );
    check_case(case, &b, REL, FLOOR);
}

#[test]
fn layer_normalization_builtin_matches_layer_norm_written_out() {
    layer_normalization_builtin("layer_norm_written_out");
}

#[test]
fn layer_normalization_builtin_matches_layer_norm_via_batch_normalization() {
    layer_normalization_builtin("layer_norm_via_batch_normalization");
}
