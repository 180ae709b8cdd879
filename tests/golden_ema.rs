//! TF's `ExponentialMovingAverage` (`golden/ema.json`) against specc's compiled
//! step: the dense problem of `optimizers.json` trained with gradient descent,
//! every variable and shadow after each step, and the shadows' TF names.
//!
//! TF runs the moving-average op after the training op, in a separate
//! `Session.run`, so `num_updates` reads the incremented global step; specc
//! updates the shadows inside the same step, from the new values and the
//! incremented step, which is the same computation.

mod common;

use common::dense_problem::{dataset, dense_spec};
use common::{array, close, golden};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-5;
const ABS: f64 = 1e-6;

/// The learning rate of `GradientDescentOptimizer(lr)` in the file's procedure.
fn learning_rate(procedure: &str) -> String {
    let start = procedure
        .find("GradientDescentOptimizer(")
        .expect("the procedure names the optimizer")
        + "GradientDescentOptimizer(".len();
    let end = start + procedure[start..].find(')').unwrap();
    procedure[start..end].to_string()
}

/// The spec's `ema` item for a case's constructor arguments.
fn ema_item(kwargs: &serde_json::Value) -> String {
    let mut item = format!("ema {}", kwargs["decay"]);
    for (k, v) in kwargs.as_object().unwrap() {
        match k.as_str() {
            "decay" => {}
            // The golden run passes the global step variable.
            "num_updates" => item += ", num_updates = true",
            "zero_debias" => item += &format!(", zero_debias = {v}"),
            other => panic!("unknown ExponentialMovingAverage argument {other}"),
        }
    }
    item
}

fn check_case(name: &str, case: &serde_json::Value) {
    let g = golden("ema.json");
    let lr = learning_rate(g["_meta"]["procedure"].as_str().unwrap());
    let opt = golden("optimizers.json");
    let problem = &opt["_meta"]["problem_dense"];
    let items = format!(
        "optimizer gradient_descent(learning_rate = {lr})\n{}",
        ema_item(&case["kwargs"])
    );
    let text = dense_spec(problem, &items);
    let src = SourceFile::new(format!("{name}.spec"), text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let data = dataset(problem);
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    let rows: Vec<u32> = (0..data.rows as u32).collect();
    s.gather(&data, &rows).unwrap();
    let step = s.function_index("step").unwrap();

    // The variables TF creates, by name (specc keeps the global step apart).
    let mut want_vars: Vec<String> = case["all_global_variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .filter(|v| v != "global_step")
        .collect();
    let mut got_vars: Vec<String> = s.layout.vars.iter().map(|v| v.name.clone()).collect();
    want_vars.sort();
    got_vars.sort();
    assert_eq!(got_vars, want_vars, "{name}: variables");

    for (k, state) in case["states"].as_array().unwrap().iter().enumerate() {
        if k > 0 {
            s.call(step, rows.len()).unwrap();
        }
        assert_eq!(s.global_step, k as i64, "{name} global_step");
        for (var, want) in state["variables"].as_object().unwrap() {
            let got = s.var(var).unwrap_or_else(|| panic!("{name}: no {var}"));
            let (_, want) = array(want);
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                close(
                    &format!("{name} step {k} {var}[{i}]"),
                    g as f64,
                    w,
                    REL,
                    ABS,
                );
            }
        }
        for (var, want) in state["shadow"].as_object().unwrap() {
            let shadow = case["average_name"][var].as_str().unwrap();
            let got = s
                .var(shadow)
                .unwrap_or_else(|| panic!("{name}: no shadow {shadow}"));
            let (_, want) = array(want);
            assert_eq!(got.len(), want.len());
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                close(
                    &format!("{name} step {k} {shadow}[{i}]"),
                    g as f64,
                    w,
                    REL,
                    ABS,
                );
            }
        }
    }
}

fn run(case_name: &str) {
    let g = golden("ema.json");
    let case = &g["cases"][case_name];
    assert!(!case.is_null(), "no ema case {case_name}");
    check_case(case_name, case);
}

/// Every case the golden file holds.
#[test]
fn every_case_in_the_file() {
    let g = golden("ema.json");
    for (name, case) in g["cases"].as_object().unwrap() {
        check_case(name, case);
    }
}

#[test]
fn decay() {
    run("decay0.9");
}

#[test]
fn decay_with_num_updates() {
    run("decay0.9_num_updates");
}

#[test]
fn zero_debias_has_no_effect_on_variables() {
    run("decay0.9_zero_debias_extra");
}
