//! The differentiable `tf.image` measures as graph ops (`total_variation`,
//! `image_gradients`, `sobel_edges`, `psnr`, `ssim`) against their cases of
//! `golden/images.json`, outputs and gradients, through the JIT-compiled
//! gradient function: each case as its own test (plus one test of any such
//! case the list lacks; `ssim` with `return_index_map` and `ssim_multiscale`
//! are library functions, checked in `image/tests`).
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

mod common;

use common::{array, assert_all_close, check_all, golden, literal, scale, shape_text, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;

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
];

fn op_of(case: &serde_json::Value) -> Option<&'static Op> {
    let op = case["op"].as_str().expect("op");
    let index_map = case["args"]["return_index_map"].as_bool() == Some(true);
    OPS.iter().find(|(name, _, _)| *name == op && !index_map)
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

/// The spec bindings of a case: one line per output, named as in the file.
fn bindings(case: &serde_json::Value) -> String {
    let name = case["name"].as_str().expect("name");
    let (_, builtins, inputs) = op_of(case).expect("an op of this file");
    let mut args: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    for (k, v) in case["args"].as_object().expect("args") {
        args.push(format!("{k} = {}", value(v)));
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
        "model image_ops\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\n{}{loss}\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n",
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
    golden("images.json")["cases"]
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
        .unwrap_or_else(|| panic!("images.json has no graph-op case {name}"));
    check(case);
}

macro_rules! image_op_tests {
    ($($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { super::named(stringify!($name)); } )*
        }
    };
}

image_op_tests!(
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
);

/// The graph-op cases of the file without a test of their own (a regenerated file with more cases is still checked).
#[test]
fn every_other_image_op_case_in_the_file_matches_tensorflow() {
    let others = cases()
        .into_iter()
        .filter(|c| !NAMED.contains(&c["name"].as_str().expect("name")))
        .map(|c| (c["name"].as_str().expect("name").to_string(), c));
    check_all(others, |_, c| check(&c));
}
