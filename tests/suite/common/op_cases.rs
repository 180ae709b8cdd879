//! TF op cases (`conv.json`, `images.json`) checked through the JIT-compiled
//! gradient function, shared by `golden_conv`, `golden_normalization`,
//! `golden_activations` and `golden_image_graph`.
//!
//! A case's spec has one constant parameter per input (its values from the
//! file; trainable when the case records a gradient w.r.t. it), the caller's
//! bindings computing each output under its own name, and
//! `loss = Σ reduce_sum(probe_k · stop_gradient(out_k)) + Σ reduce_sum(out_k · W_k)`
//! over the case's `grad_outputs` with its weights: each input's gradient is
//! TF's `grad.wrt` entry, and a probe parameter per output (zero, so it adds
//! nothing) returns that output through its gradient. A `null` gradient
//! (TF's "no gradient path") must be specc's `no-gradient` error when the
//! input is made trainable. A case TF refused to differentiate
//! (`grad_refused`) checks its outputs only.

use specc_compiler::driver::{compile, compile_with, Functions, Options};
use specc_grammar::diag::render_all;
use specc_grammar::{Code, SourceFile};

use super::{array, assert_all_close, check_all, golden, literal, scale, shape_text, Tol};

/// An `args` value as spec text: a bool, an integer, a float, a string or a list.
pub fn arg_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) if n.is_i64() => n.to_string(),
        serde_json::Value::Number(n) => format!("{:e}", n.as_f64().expect("a number")),
        serde_json::Value::String(s) => format!("\"{s}\""),
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(arg_text).collect();
            format!("[{}]", parts.join(", "))
        }
        other => panic!("argument {other}: not a number, a bool, a string or a list"),
    }
}

/// The probe parameter of output `k`.
fn probe(k: &str) -> String {
    format!("probe_{k}")
}

/// The case's spec with `bindings` computing its outputs; the inputs with
/// a gradient in `wrt` (and `trainable`, if given) are trainable.
pub fn case_spec(case: &serde_json::Value, bindings: &str, trainable: Option<&str>) -> String {
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
    let mut loss = "loss = 0.0".to_string();
    for (k, out) in case["outputs"].as_object().expect("outputs") {
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
        "model case\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\n{bindings}{loss}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// Checks a case's outputs and gradients, computed by `bindings`, within
/// `rel` relative with a floor of `floor` times each tensor's largest magnitude.
pub fn check_case(case: &serde_json::Value, bindings: &str, rel: f64, floor: f64) {
    check_case_with(case, bindings, rel, floor, &Options::default());
}

/// [`check_case`] compiled with `options`.
pub fn check_case_with(
    case: &serde_json::Value,
    bindings: &str,
    rel: f64,
    floor: f64,
    options: &Options,
) {
    let name = case["name"].as_str().expect("name");
    let text = case_spec(case, bindings, None);
    let src = SourceFile::new("case.spec", text.clone());
    let program = compile_with(&src, Functions::ALL, options).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().expect("session");
    let f = s.function_index("grad").expect("grad");
    s.call(f, 1).expect("call");
    for (k, out) in case["outputs"].as_object().expect("outputs") {
        let (_, want) = array(&out["values"]);
        let got = s
            .output(f, &format!("grad/{}", probe(k)), 1)
            .expect("output");
        assert_all_close(
            &format!("{name} output {k}"),
            got,
            &want,
            Tol::scaled(rel, floor, scale(&want)),
        );
    }
    let wrt = case["grad"]["wrt"].as_object().cloned().unwrap_or_default();
    for (k, g) in &wrt {
        if g.is_null() {
            // TF's None: made trainable, the input gets no gradient in specc.
            let src = SourceFile::new("case.spec", case_spec(case, bindings, Some(k.as_str())));
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
            Tol::scaled(rel, floor, scale(&want)),
        );
    }
}

/// The test that checks each op of `conv.json` (a case's `op`): every op of
/// the file must be here, so a case of an op no test knows fails every test
/// that reads the file instead of going unchecked.
pub const CONV_JSON_OPS: &[(&str, &str)] = &[
    ("tf.nn.conv2d", "golden_conv"),
    ("tf.nn.convolution", "golden_conv"),
    ("tf.nn.conv1d", "golden_conv"),
    ("tf.nn.conv2d_transpose", "golden_conv"),
    ("tf.nn.atrous_conv2d_transpose", "golden_conv"),
    ("tf.nn.depthwise_conv2d", "golden_conv"),
    ("tf.nn.separable_conv2d", "golden_conv"),
    ("tf.nn.max_pool2d", "golden_conv"),
    ("tf.nn.avg_pool2d", "golden_conv"),
    ("tf.nn.max_pool_with_argmax", "golden_conv"),
    ("tf.reduce_mean", "golden_conv"),
    ("tf.reduce_max", "golden_conv"),
    ("tf.nn.bias_add", "golden_conv"),
    ("tf.nn.moments", "golden_normalization"),
    ("tf.nn.batch_normalization", "golden_normalization"),
    ("tf.compat.v1.nn.fused_batch_norm", "golden_normalization"),
    (
        "layer normalization (tf.nn.moments over the last axis)",
        "golden_normalization",
    ),
    ("tf.nn.local_response_normalization", "golden_normalization"),
    ("tf.nn.leaky_relu", "golden_activations"),
    ("tf.nn.elu", "golden_activations"),
    ("tf.nn.selu", "golden_activations"),
    ("tf.nn.gelu", "golden_activations"),
    ("tf.nn.silu", "golden_activations"),
    ("tf.nn.swish", "golden_activations"),
    ("tf.nn.softsign", "golden_activations"),
    ("tf.nn.relu6", "golden_activations"),
    ("tf.nn.relu", "golden_activations"),
];

/// The cases of `conv.json` that `test` checks ([`CONV_JSON_OPS`]); a case
/// of an op the table lacks fails.
pub fn conv_cases(test: &str) -> Vec<serde_json::Value> {
    let all = cases_of("conv.json", |_| true);
    let unknown: Vec<String> = all
        .iter()
        .filter(|c| !CONV_JSON_OPS.iter().any(|(op, _)| c["op"] == *op))
        .map(|c| format!("{} ({})", c["name"], c["op"]))
        .collect();
    assert!(
        unknown.is_empty(),
        "conv.json: cases of ops no test checks: {unknown:?}"
    );
    all.into_iter()
        .filter(|c| CONV_JSON_OPS.contains(&(c["op"].as_str().expect("op"), test)))
        .collect()
}

/// The cases of golden `file` that `keep` selects.
pub fn cases_of(file: &str, keep: impl Fn(&serde_json::Value) -> bool) -> Vec<serde_json::Value> {
    golden(file)["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| keep(c))
        .cloned()
        .collect()
}

/// The case `name` among `cases`.
pub fn named<'a>(cases: &'a [serde_json::Value], file: &str, name: &str) -> &'a serde_json::Value {
    cases
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{file} has no case {name} of this test"))
}

/// Checks every case of `cases` not named in `named` (a regenerated file
/// with more cases is still checked).
pub fn check_others(
    cases: Vec<serde_json::Value>,
    named: &[&str],
    check: impl Fn(&serde_json::Value),
) {
    let others = cases
        .into_iter()
        .filter(|c| !named.contains(&c["name"].as_str().expect("name")))
        .map(|c| (c["name"].as_str().expect("name").to_string(), c));
    check_all(others, |_, c| check(&c));
}

/// Compiles spec `text`, which must fail with `code` as its first
/// diagnostic and a caret under exactly `under`.
pub fn assert_fails(text: &str, code: Code, under: &str) {
    let src = SourceFile::new("case.spec", text.to_string());
    let diags = match compile(&src, Functions::ALL) {
        Ok(_) => panic!("compiled:\n{text}"),
        Err(d) => d,
    };
    let rendered = render_all(&diags, &src, false);
    let d = &diags[0];
    assert_eq!(d.code, code, "{rendered}");
    assert_eq!(
        &text[d.span.start as usize..d.span.end as usize],
        under,
        "{rendered}"
    );
    let carets = "^".repeat(under.chars().count());
    assert!(rendered.contains(&carets), "{rendered}");
}

/// One `#[test]` per named case (`mod case`), and `NAMED`, the names.
#[macro_export]
macro_rules! op_case_tests {
    ($check:path; $($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { $check(stringify!($name)); } )*
        }
    };
}
