//! TF's `tf.gradients` on fixed inputs (`golden/gradients.json`) against the
//! JIT-compiled gradient function: for every case whose ops specc has, the
//! gradients of `sum(y)` and `sum(y * W)` with respect to both inputs, and the
//! loss (which checks the forward values).

mod common;

use common::gradient_cases::{case_spec, expression};
use common::{array, close, golden};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

fn check(case: &serde_json::Value, weighted: bool) -> bool {
    let name = case["name"].as_str().unwrap();
    let Some(expr) = expression(name) else {
        return false;
    };
    let text = case_spec(case, expr, weighted);
    let src = SourceFile::new(format!("{name}.spec"), text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().unwrap();
    let f = s.function_index("grad").unwrap();
    s.call(f, 1).unwrap();
    let (_, out) = array(&case["output"]);
    let (_, w) = array(&case["weights_for_weighted_sum"]);
    let want_loss: f64 = if weighted {
        out.iter().zip(w.iter().cycle()).map(|(a, b)| a * b).sum()
    } else {
        out.iter().sum()
    };
    let loss = s.output(f, "loss", 1).unwrap()[0] as f64;
    close(&format!("{name} loss"), loss, want_loss, 1e-5, 1e-5);
    let key = if weighted {
        "grad_of_weighted_sum"
    } else {
        "grad_of_sum"
    };
    for var in ["a", "b"] {
        let want = &case[key][var];
        if want.is_null() {
            // TF: no gradient path; specc's spec declares it non-trainable.
            assert!(
                s.output(f, &format!("grad/{var}"), 1).is_none(),
                "{name}: grad/{var} should not exist"
            );
            continue;
        }
        // An IndexedSlices gradient is compared by its dense value.
        let want = want.get("densified").unwrap_or(want);
        let (_, want) = array(want);
        let got = s.output(f, &format!("grad/{var}"), 1).unwrap();
        assert_eq!(got.len(), want.len(), "{name} grad/{var} size");
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            close(&format!("{name} {key} {var}[{i}]"), g as f64, w, 1e-5, 1e-6);
        }
    }
    true
}

#[test]
fn golden_gradients_match_tensorflow_in_compiled_code() {
    let g = golden("gradients.json");
    let mut checked = 0;
    for case in g["cases"].as_array().unwrap() {
        for weighted in [false, true] {
            if check(case, weighted) {
                checked += 1;
            }
        }
    }
    assert!(checked >= 64, "only {checked} golden gradient checks ran");
}

#[test]
fn a_parameter_without_a_gradient_path_is_rejected_as_tf_returns_none() {
    // TF returns None for d(a * stop_gradient(b))/db; specc refuses to train `b`.
    let g = golden("gradients.json");
    let case = g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "stop_gradient")
        .unwrap();
    let text = case_spec(case, "a * stop_gradient(b)", false).replace(", trainable = false", "");
    let d = compile(&SourceFile::new("sg.spec", text), Functions::ALL)
        .err()
        .expect("must fail");
    assert_eq!(d[0].code, "no-gradient");
    assert!(d[0].message.contains("`b`"));
}
