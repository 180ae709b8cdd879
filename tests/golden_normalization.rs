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

mod common;

use common::{array, assert_all_close, check_all, golden, literal, scale, shape_text, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;

/// The ops this file checks (`op` of a conv.json case; layer normalization
/// by its prefix).
const OPS: &[&str] = &[
    "tf.nn.moments",
    "tf.nn.batch_normalization",
    "tf.compat.v1.nn.fused_batch_norm",
    "tf.nn.local_response_normalization",
];

fn is_normalization(case: &serde_json::Value) -> bool {
    let op = case["op"].as_str().expect("op");
    OPS.contains(&op) || op.starts_with("layer normalization")
}

/// An `args` value as spec text: a bool, an integer, a float or a list.
fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) if n.is_i64() => n.to_string(),
        serde_json::Value::Number(n) => format!("{:e}", n.as_f64().expect("a number")),
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value).collect();
            format!("[{}]", parts.join(", "))
        }
        other => panic!("argument {other}: not a number, a bool or a list"),
    }
}

/// `, k = v` for each of the case's `args` named in `keys` that it has.
fn keywords(case: &serde_json::Value, keys: &[&str]) -> String {
    let args = case["args"].as_object().expect("args");
    keys.iter()
        .filter_map(|k| args.get(*k).map(|v| format!(", {k} = {}", value(v))))
        .collect()
}

/// A required argument of the case.
fn arg(case: &serde_json::Value, key: &str) -> String {
    let name = case["name"].as_str().expect("name");
    value(
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
        _ if op.starts_with("layer normalization") => {
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

/// The probe parameter of output `k`.
fn probe(k: &str) -> String {
    format!("probe_{k}")
}

/// The case's spec with `bindings` computing its outputs; the inputs with a gradient in `wrt` (and `trainable`,
/// if given) are trainable parameters, the others constants.
fn spec_with(case: &serde_json::Value, trainable: Option<&str>, bindings: &str) -> String {
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
        loss += &format!(" + reduce_sum({} * stop_gradient({k}))", probe(k));
    }
    for k in case["grad"]["grad_outputs"]
        .as_array()
        .expect("grad_outputs")
    {
        let k = k.as_str().expect("an output name");
        let w = &case["grad"]["weights"][k]["values"];
        loss += &format!(" + reduce_sum({k} * {})", literal(w));
    }
    format!(
        "model normalization\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\n{}{loss}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
        bindings
    )
}

fn check(case: &serde_json::Value) {
    check_with(case, &bindings(case));
}

/// Checks a case computed by `bindings`.
fn check_with(case: &serde_json::Value, bindings: &str) {
    let name = case["name"].as_str().expect("name");
    let outputs = case["outputs"].as_object().expect("outputs");
    let text = spec_with(case, None, bindings);
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
    for (k, g) in case["grad"]["wrt"].as_object().expect("wrt") {
        if g.is_null() {
            // TF's None: made trainable, the input gets no gradient in specc.
            let src = SourceFile::new("case.spec", spec_with(case, Some(k), bindings));
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
        .filter(|c| is_normalization(c))
        .cloned()
        .collect()
}

fn named(name: &str) {
    let all = cases();
    let case = all
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("conv.json has no normalization case {name}"));
    check(case);
}

macro_rules! normalization_tests {
    ($($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { super::named(stringify!($name)); } )*
        }
    };
}

normalization_tests!(
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
    let others = cases()
        .into_iter()
        .filter(|c| !NAMED.contains(&c["name"].as_str().expect("name")))
        .map(|c| (c["name"].as_str().expect("name").to_string(), c));
    check_all(others, |_, c| check(&c));
}

/// The layer-normalization cases computed by the `layer_normalization`
/// builtin (Keras's layer) instead of written out.
fn layer_normalization_builtin(name: &str) {
    let all = cases();
    let case = all
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("conv.json has no case {name}"));
    let b = format!(
        "output = layer_normalization(x, gamma, beta, epsilon = {}, axis = {})\n",
        arg(case, "epsilon"),
        arg(case, "axes")
    );
    check_with(case, &b);
}

#[test]
fn layer_normalization_builtin_matches_layer_norm_written_out() {
    layer_normalization_builtin("layer_norm_written_out");
}

#[test]
fn layer_normalization_builtin_matches_layer_norm_via_batch_normalization() {
    layer_normalization_builtin("layer_norm_via_batch_normalization");
}
