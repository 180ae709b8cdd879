//! The `tf.nn` activations of `golden/conv.json` (`leaky_relu`, `elu`,
//! `selu`, `gelu` both forms, `silu`, `swish`, `softsign`, `relu6`, `relu`)
//! against the JIT-compiled gradient function (`common::op_cases`): each
//! case as its own test (plus one test of any activation case the list
//! lacks), the case's call with its arguments from `args` on a constant
//! parameter of its input.
//! The inputs hit every kink (0, 6) and both tails.
//!
//! Tolerance: 1e-5 relative with a floor of 1e-6 times the tensor's largest
//! magnitude: specc's exp, tanh and sigmoid are its own polynomials, and
//! `gelu`'s exact form uses an erfc of relative error 1.2e-7.

use crate::common;

use common::op_cases::{arg_text, check_case, check_others, conv_cases, named};

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-6;
const FILE: &str = "conv.json";

/// The ops this file checks (`op` of a conv.json case).
const ACTIVATIONS: &[&str] = &[
    "tf.nn.leaky_relu",
    "tf.nn.elu",
    "tf.nn.selu",
    "tf.nn.gelu",
    "tf.nn.silu",
    "tf.nn.swish",
    "tf.nn.softsign",
    "tf.nn.relu6",
    "tf.nn.relu",
];

/// The case's binding: `tf.nn.NAME(features, k=v, ...)` becomes
/// `output = NAME(features, k = v, ...)` with the case's `args`.
fn bindings(case: &serde_json::Value) -> String {
    let op = case["op"].as_str().expect("op");
    let name = op.strip_prefix("tf.nn.").expect("a tf.nn op");
    let mut text = format!("output = {name}(features");
    for (k, v) in case["args"].as_object().expect("args") {
        text += &format!(", {k} = {}", arg_text(v));
    }
    text + ")\n"
}

/// The cases of this file's ops ([`common::op_cases::CONV_JSON_OPS`]);
/// each must be a `tf.nn` activation.
fn cases() -> Vec<serde_json::Value> {
    let cases = conv_cases("golden_activations");
    for c in &cases {
        assert!(
            ACTIVATIONS.contains(&c["op"].as_str().expect("op")),
            "{}: not an activation",
            c["name"]
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
    leaky_relu,
    leaky_relu_alpha_small,
    elu,
    selu,
    gelu_exact,
    gelu_tanh,
    silu,
    swish_beta,
    softsign,
    relu6,
    relu,
);

/// The activation cases of the file without a test of their own (a
/// regenerated file with more cases is still checked).
#[test]
fn every_other_activation_case_in_the_file_matches_tensorflow() {
    check_others(cases(), NAMED, check);
}
