//! The golden gradient cases of `gradients.json` written in the spec language,
//! shared by the interpreter test (compiler crate) and the JIT test (workspace).
//!
//! Everything a case's values depend on comes from the file: the inputs, the
//! `embedding_lookup` ids (`ids`), the sparse cross-entropy labels (from the
//! case's TF expression), the reshape target (`output_shape`) and the weights.
//! A case specc has no expression for fails.

use crate::golden::{array, check_all, golden, ints};
use crate::spec::{literal, shape_text};

/// A list of ints as spec text: `[0, 2, 2, 4]`.
fn int_list(v: &[i64]) -> String {
    let parts: Vec<String> = v.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The integer list that follows `key=` in a TF expression (`labels=[2,0]`).
fn list_argument(expression: &str, key: &str) -> Vec<i64> {
    let start = expression
        .find(&format!("{key}=["))
        .unwrap_or_else(|| panic!("no {key}=[..] in {expression}"))
        + key.len()
        + 2;
    let end = start + expression[start..].find(']').expect("a closing ]");
    expression[start..end]
        .split(',')
        .map(|x| x.trim().parse().expect("an integer"))
        .collect()
}

/// The spec expression of a golden case, with its ids, labels and shapes
/// taken from the case.
pub fn expression(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("a case name");
    let tf = case["expression"]
        .as_str()
        .expect("the case's TF expression");
    let dims =
        |v: &serde_json::Value| -> Vec<usize> { ints(v).iter().map(|&d| d as usize).collect() };
    match name {
        "matmul" => "a @ b".into(),
        "matmul_transpose_a" => "matmul(a, b, transpose_a = true)".into(),
        "multiply" => "a * b".into(),
        "divide" => "a / b".into(),
        "relu" => "relu(a) * b".into(),
        "sigmoid" => "sigmoid(a) * b".into(),
        "tanh" => "tanh(a) * b".into(),
        "softplus" => "softplus(a) * b".into(),
        "softmax" => "softmax(a) * b".into(),
        "softmax_cross_entropy_with_logits_v2" => "softmax_cross_entropy(b, a)".into(),
        "softmax_cross_entropy_with_logits_v1" => {
            "softmax_cross_entropy(stop_gradient(b), a)".into()
        }
        "sigmoid_cross_entropy_with_logits" => "sigmoid_cross_entropy(b, a)".into(),
        "log" => "log(a) * b".into(),
        "exp" => "exp(a) * b".into(),
        "sqrt" => "sqrt(a) * b".into(),
        "square" => "square(a) * b".into(),
        "abs" => "abs(a) * b".into(),
        "reduce_sum_axis1" => "reduce_sum(a * b, axis = 1)".into(),
        "reduce_sum_axis0_keepdims" => "reduce_sum(a * b, axis = 0, keepdims = true)".into(),
        "reduce_mean" => "reduce_mean(a * b)".into(),
        "reduce_mean_axis0" => "reduce_mean(a * b, axis = 0)".into(),
        "bias_add_broadcast" => "a + b".into(),
        "nn_bias_add" => "bias_add(a, b)".into(),
        "stop_gradient" => "a * stop_gradient(b)".into(),
        "maximum_ties" => "maximum(a, b)".into(),
        "minimum_ties" => "minimum(a, b)".into(),
        "concat_axis0" => "concat([a, b], axis = 0)".into(),
        "concat_axis1" => "concat([a, b], axis = 1)".into(),
        // tf.reshape(a, shape) * b: the target is the output's shape.
        "reshape" => format!(
            "reshape(a, {}) * b",
            shape_text(&dims(&case["output_shape"]))
        ),
        "transpose" => "transpose(a) * b".into(),
        "l2_loss" => "l2_loss(a) * b[0, 0]".into(),
        "embedding_lookup" => format!("embedding_lookup(a, {}) * b", int_list(&ints(&case["ids"]))),
        "sparse_softmax_cross_entropy_with_logits" => format!(
            "sparse_softmax_cross_entropy({}, a) * b[:, 0]",
            int_list(&list_argument(tf, "labels"))
        ),
        other => panic!("gradients.json case {other} ({tf}): specc has no expression for it"),
    }
}

/// The name of the parameter whose gradient is the forward output (see [`case_spec`]).
pub const OUTPUT_PROBE: &str = "y_probe";

/// A spec with params `a`, `b` (non-trainable where TF's gradient is None)
/// and `loss = sum(y)` or `sum(y * W)`. With `probe`, a zero parameter
/// `y_probe` of the output's shape adds `sum(y_probe * stop_gradient(y))`,
/// which is 0 and leaves the other gradients alone, and whose gradient is
/// exactly `y`: the compiled `grad` function then returns the forward output.
pub fn case_spec(case: &serde_json::Value, weighted: bool, probe: bool) -> String {
    let param = |n: &str| {
        let (dims, _) = array(&case[n]);
        let grads = &case["grad_of_sum"];
        let trainable = if grads[n].is_null() {
            ", trainable = false"
        } else {
            ""
        };
        format!(
            "  {n}: {} = constant(value = {}){trainable}\n",
            shape_text(&dims),
            literal(&case[n])
        )
    };
    let out_dims: Vec<usize> = ints(&case["output_shape"])
        .iter()
        .map(|&d| d as usize)
        .collect();
    let mut loss = if weighted {
        format!(
            "reduce_sum(y * {})",
            literal(&case["weights_for_weighted_sum"])
        )
    } else {
        "reduce_sum(y)".to_string()
    };
    let mut params = format!("{}{}", param("a"), param("b"));
    if probe {
        params += &format!("  {OUTPUT_PROBE}: {} = zeros\n", shape_text(&out_dims));
        loss += &format!(" + reduce_sum({OUTPUT_PROBE} * stop_gradient(y))");
    }
    format!(
        "model grad_case\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\ny = {}\nloss = {loss}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
        expression(case)
    )
}

/// The golden gradient of a case (`grad_of_sum` or `grad_of_weighted_sum`)
/// with respect to `var`, as dense values; `None` where TF returns None. An
/// `IndexedSlices` is compared by its dense value, after checking that its
/// indices are the case's ids.
pub fn golden_gradient(case: &serde_json::Value, weighted: bool, var: &str) -> Option<Vec<f64>> {
    let key = if weighted {
        "grad_of_weighted_sum"
    } else {
        "grad_of_sum"
    };
    let want = &case[key][var];
    if want.is_null() {
        return None;
    }
    if let Some(dense) = want.get("densified") {
        assert_eq!(
            ints(&want["indices"]),
            ints(&case["ids"]),
            "{}: the IndexedSlices indices are the ids",
            case["name"]
        );
        return Some(array(dense).1);
    }
    Some(array(want).1)
}

/// The loss a case's spec computes, from TF's forward output (float64).
pub fn golden_loss(case: &serde_json::Value, weighted: bool) -> f64 {
    let (_, out) = array(&case["output"]);
    if !weighted {
        return out.iter().sum();
    }
    let (_, w) = array(&case["weights_for_weighted_sum"]);
    assert_eq!(
        out.len(),
        w.len(),
        "{}: one weight per output",
        case["name"]
    );
    out.iter().zip(&w).map(|(a, b)| a * b).sum()
}

/// Every case name `gradients.json` holds, each with a test of its own in
/// both gradient tests: `gradient_case_tests!(check_case)` defines `const
/// NAMED` (the names), in `mod case` one test per name running
/// `check_case` on that case, and a test running it on every case of the
/// file not named (see [`check_unnamed_cases`]).
#[macro_export]
macro_rules! gradient_case_tests {
    ($check_case:ident) => {
        $crate::gradient_case_tests!(@names $check_case;
            matmul, matmul_transpose_a, multiply, divide, relu, sigmoid, tanh, softplus,
            softmax, softmax_cross_entropy_with_logits_v2, softmax_cross_entropy_with_logits_v1,
            sigmoid_cross_entropy_with_logits, log, exp, sqrt, square, abs, reduce_sum_axis1,
            reduce_sum_axis0_keepdims, reduce_mean, reduce_mean_axis0, bias_add_broadcast,
            nn_bias_add, stop_gradient, maximum_ties, minimum_ties, concat_axis0, concat_axis1,
            reshape, transpose, embedding_lookup, l2_loss,
            sparse_softmax_cross_entropy_with_logits);
    };
    (@names $check_case:ident; $($name:ident),* $(,)?) => {
        /// The cases with a test of their own.
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() {
                $crate::gradient_cases::check_named_case(stringify!($name), super::$check_case);
            } )*
        }
        /// The cases of the file without a test of their own (a regenerated
        /// file with more cases is still checked); every named case must be
        /// in the file.
        #[test]
        fn every_other_case_in_the_file_matches_tensorflow() {
            $crate::gradient_cases::check_unnamed_cases(NAMED, $check_case);
        }
    };
}
pub use crate::gradient_case_tests;

/// Runs `check_case` on the case `name` of `gradients.json`.
pub fn check_named_case(name: &str, check_case: fn(&serde_json::Value)) {
    let g = golden("gradients.json");
    check_case(find_case(&g, name));
}

/// Runs `check_case` on every case of `gradients.json` not in `named`, all
/// of them before failing ([`check_all`]); every name in `named` must be in
/// the file.
pub fn check_unnamed_cases(named: &[&str], check_case: fn(&serde_json::Value)) {
    let g = golden("gradients.json");
    let others = g["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| !named.contains(&c["name"].as_str().expect("a case name")))
        .map(|c| (c["name"].as_str().unwrap().to_string(), c));
    check_all(others, |_, c| check_case(c));
    for name in named {
        find_case(&g, name);
    }
}

/// A case of `gradients.json` by name.
pub fn find_case<'a>(file: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    file["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("gradients.json has no case {name}"))
}
