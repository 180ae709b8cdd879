//! The `tf.nn` activations of `golden/conv.json` (`leaky_relu`, `elu`,
//! `selu`, `gelu` both forms, `silu`, `swish`, `softsign`, `relu6`, `relu`)
//! against the JIT-compiled gradient function: each case as its own test
//! (plus one test of any activation case the list lacks). The spec is the
//! case's call with its arguments from `args`, on a constant parameter of the
//! case's input; `loss = sum(y * W)` with the case's weights, so the
//! parameter's gradient is TF's `grad.wrt.features`, and a probe parameter
//! returns the forward output (`common::gradient_cases::OUTPUT_PROBE`).
//! The inputs hit every kink (0, 6) and both tails.
//!
//! Tolerance: 1e-5 relative with a floor of 1e-6 times the tensor's largest
//! magnitude: specc's exp, tanh and sigmoid are its own polynomials, and
//! `gelu`'s exact form uses an erfc of relative error 1.2e-7.

mod common;

use common::gradient_cases::OUTPUT_PROBE;
use common::{array, assert_all_close, check_all, golden, literal, scale, shape_text, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-6;

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

/// The case's call in the spec language: `tf.nn.NAME(features, k=v, ...)`
/// becomes `NAME(x, k = v, ...)` with the case's `args`.
fn call(case: &serde_json::Value) -> String {
    let op = case["op"].as_str().expect("op");
    let name = op.strip_prefix("tf.nn.").expect("a tf.nn op");
    let mut text = format!("{name}(x");
    for (k, v) in case["args"].as_object().expect("args") {
        let value = match v {
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Number(n) => format!("{:e}", n.as_f64().expect("a number")),
            other => panic!("argument {k} = {other}: not a number or a bool"),
        };
        text += &format!(", {k} = {value}");
    }
    text + ")"
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let input = &case["inputs"]["features"];
    let (dims, _) = array(&input["values"]);
    let weights = &case["grad"]["weights"]["output"]["values"];
    let text = format!(
        "model activation\ndata synthetic(rows = 4, features = 1)\nparams {{\n  x: {} = constant(value = {})\n  {OUTPUT_PROBE}: {} = zeros\n}}\ny = {}\nloss = reduce_sum(y * {}) + reduce_sum({OUTPUT_PROBE} * stop_gradient(y))\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
        shape_text(&dims),
        literal(&input["values"]),
        shape_text(&dims),
        call(case),
        literal(weights),
    );
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

    let (_, want_y) = array(&case["outputs"]["output"]["values"]);
    let y = s.output(f, &format!("grad/{OUTPUT_PROBE}"), 1).expect("y");
    assert_all_close(
        &format!("{name} output"),
        y,
        &want_y,
        Tol::scaled(REL, FLOOR, scale(&want_y)),
    );
    let (_, want_g) = array(&case["grad"]["wrt"]["features"]["values"]);
    let g = s.output(f, "grad/x", 1).expect("grad");
    assert_all_close(
        &format!("{name} gradient"),
        g,
        &want_g,
        Tol::scaled(REL, FLOOR, scale(&want_g)),
    );
}

fn cases() -> Vec<serde_json::Value> {
    golden("conv.json")["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| ACTIVATIONS.contains(&c["op"].as_str().expect("op")))
        .cloned()
        .collect()
}

fn named(name: &str) {
    let all = cases();
    let case = all
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("conv.json has no activation case {name}"));
    check(case);
}

macro_rules! activation_tests {
    ($($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { super::named(stringify!($name)); } )*
        }
    };
}

activation_tests!(
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
    let others = cases()
        .into_iter()
        .filter(|c| !NAMED.contains(&c["name"].as_str().expect("name")))
        .map(|c| (c["name"].as_str().expect("name").to_string(), c));
    check_all(others, |_, c| check(&c));
}
