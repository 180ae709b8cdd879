//! TF's `tf.gradients` on fixed inputs (`golden/gradients.json`) against the
//! JIT-compiled gradient function. For every case, each as its own test (plus
//! one test of any case the list lacks), with `loss = sum(y)` and
//! `loss = sum(y * W)`: the forward output `y` element by element (read
//! through a probe parameter whose gradient is `y`, see
//! `common::gradient_cases::case_spec`), the loss, and the gradients with
//! respect to both inputs (a gradient TF returns as None must not exist).
//!
//! Tolerance: 1e-6 relative, with a floor of 1e-6 times the largest magnitude
//! of the tensor. specc's GEMM uses FMA (TF's kernels do not) and its
//! transcendental functions are its own, so elements computed as differences
//! (a softmax gradient, a cross-entropy near its minimum) keep an absolute
//! error of the tensor's scale.

use crate::common;

use common::{array, assert_all_close, golden, scale, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::{Code, SourceFile};
use specc_testkit::gradient_cases::{
    case_spec, find_case, golden_gradient, golden_loss, gradient_case_tests, OUTPUT_PROBE,
};

const REL: f64 = 1e-6;
const FLOOR: f64 = 1e-6;

fn tol(want: &[f64]) -> Tol<'static> {
    Tol::scaled(REL, FLOOR, scale(want))
}

/// Checks one case with one loss.
fn check(case: &serde_json::Value, weighted: bool) {
    let name = format!(
        "{}{}",
        case["name"].as_str().unwrap(),
        if weighted { " (weighted)" } else { "" }
    );
    let text = case_spec(case, weighted, true);
    let src = SourceFile::new("case.spec", text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().unwrap();
    let f = s.function_index("grad").unwrap();
    s.call(f, 1).unwrap();

    let (_, want_y) = array(&case["output"]);
    let y = s.output(f, &format!("grad/{OUTPUT_PROBE}"), 1).unwrap();
    assert_all_close(&format!("{name} output"), y, &want_y, tol(&want_y));

    // The loss, from TF's output, to the terms' scale.
    let want_loss = golden_loss(case, weighted);
    let loss = s.output(f, "loss", 1).unwrap();
    let terms = if weighted {
        let (_, w) = array(&case["weights_for_weighted_sum"]);
        want_y.iter().zip(&w).map(|(a, b)| a * b).collect()
    } else {
        want_y.clone()
    };
    assert_all_close(
        &format!("{name} loss"),
        loss,
        &[want_loss],
        Tol::scaled(REL, FLOOR * terms.len() as f64, scale(&terms)),
    );

    for var in ["a", "b"] {
        let got = s.output(f, &format!("grad/{var}"), 1);
        match golden_gradient(case, weighted, var) {
            // TF: no gradient path; specc's spec declares it non-trainable.
            None => assert!(got.is_none(), "{name}: grad/{var} should not exist"),
            Some(want) => {
                let got = got.unwrap_or_else(|| panic!("{name}: no grad/{var}"));
                assert_all_close(&format!("{name} gradient of {var}"), got, &want, tol(&want));
            }
        }
    }
}

/// Both losses of one case.
fn check_case(case: &serde_json::Value) {
    check(case, false);
    check(case, true);
}

gradient_case_tests!(check_case);

#[test]
fn a_parameter_without_a_gradient_path_is_rejected_as_tf_returns_none() {
    // TF returns None for d(a * stop_gradient(b))/db; specc refuses to train `b`.
    let g = golden("gradients.json");
    let case = find_case(&g, "stop_gradient");
    assert!(case["grad_of_sum"]["b"].is_null());
    let text = case_spec(case, false, false).replace(", trainable = false", "");
    let d = compile(&SourceFile::new("sg.spec", text), Functions::ALL)
        .err()
        .expect("must fail");
    assert_eq!(d[0].code, Code::NoGradient);
    assert!(d[0].message.contains("`b`"));
}
