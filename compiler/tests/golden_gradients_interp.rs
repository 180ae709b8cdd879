//! TF's `tf.gradients` on fixed inputs (`golden/gradients.json`) against specc's
//! sema + autodiff, evaluated by the float64 reference interpreter. This checks
//! the derivative rules independently of code generation (the JIT is checked
//! against the same data in the workspace's `golden_gradients.rs`). For every
//! case, each as its own test (plus one test of any case the list lacks), with
//! `loss = sum(y)` and `loss = sum(y * W)`: the forward output and the
//! gradients with respect to both inputs (a gradient TF returns as None must
//! not be computed).
//!
//! Tolerance: 1e-6 relative, with a floor of 1e-6 times the tensor's largest
//! magnitude: the interpreter computes in float64 from TF's float32 inputs, so
//! it differs from TF's float32 results by their rounding (a few float32 ulps,
//! of the tensor's scale where an element is a difference of larger terms).

use specc_compiler::interp::{self, Tensor};
use specc_grammar::SourceFile;
use specc_testkit::golden::array;
use specc_testkit::gradient_cases::{case_spec, golden_gradient, gradient_case_tests};
use specc_testkit::tol::{assert_all_close_f64, scale, Tol};

const REL: f64 = 1e-6;
const FLOOR: f64 = 1e-6;

fn tol(want: &[f64]) -> Tol<'static> {
    Tol::scaled(REL, FLOOR, scale(want))
}

fn check(case: &serde_json::Value, weighted: bool) {
    let name = format!(
        "{}{}",
        case["name"].as_str().unwrap(),
        if weighted { " (weighted)" } else { "" }
    );
    let text = case_spec(case, weighted, false);
    let src = SourceFile::new("case.spec", text.clone());
    let model = specc_compiler::build(&src).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let vars: Vec<Tensor> = model
        .graph
        .vars
        .iter()
        .map(|v| match v.name.as_str() {
            "a" | "b" => {
                let (dims, data) = array(&case[v.name.as_str()]);
                Tensor::new(dims, data)
            }
            // Optimizer state: not read by the gradient.
            _ => Tensor::scalar(0.0),
        })
        .collect();
    let env = interp::Env {
        inputs: &[],
        vars: &vars,
        batch: 1,
        global_step: 0.0,
    };
    let grad_fn = model.functions.grad.as_ref().unwrap();
    let y = model
        .bindings
        .iter()
        .find(|(n, _)| n == "y")
        .expect("the spec binds y")
        .1;
    let mut roots = vec![y];
    let mut names = vec![];
    for o in &grad_fn.outputs {
        if let Some(var) = o.name.strip_prefix("grad/") {
            roots.push(o.node);
            names.push(var.to_string());
        }
    }
    let vals = interp::eval(&model.graph, &env, &roots);

    let (_, want_y) = array(&case["output"]);
    assert_all_close_f64(
        &format!("{name} output"),
        &vals[0].data,
        &want_y,
        tol(&want_y),
    );

    for var in ["a", "b"] {
        let got = names.iter().position(|n| n == var).map(|k| &vals[k + 1]);
        match golden_gradient(case, weighted, var) {
            None => assert!(got.is_none(), "{name}: grad/{var} should not exist"),
            Some(want) => {
                let got = got.unwrap_or_else(|| panic!("{name}: no gradient of {var}"));
                assert_all_close_f64(
                    &format!("{name} gradient of {var}"),
                    &got.data,
                    &want,
                    tol(&want),
                );
            }
        }
    }
    assert_eq!(
        names.len(),
        ["a", "b"]
            .iter()
            .filter(|v| golden_gradient(case, weighted, v).is_some())
            .count(),
        "{name}: gradients computed"
    );
}

fn check_case(case: &serde_json::Value) {
    check(case, false);
    check(case, true);
}

gradient_case_tests!(check_case);
