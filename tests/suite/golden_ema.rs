//! TF's `ExponentialMovingAverage` (`golden/ema.json`) against specc's compiled
//! step: the dense problem of `optimizers.json` trained with gradient descent,
//! every variable and shadow after each step, and the shadows' TF names.
//!
//! TF runs the moving-average op after the training op, in a separate
//! `Session.run`, so `num_updates` reads the incremented global step; specc
//! updates the shadows inside the same step, from the new values and the
//! incremented step, which is the same computation (`num_updates_at_apply`
//! is compared with specc's global step).
//!
//! A case's `ema.apply([w, b])` is also run as `apply([v])` for each of its
//! variables `v` (the `ema` item's `var_list = "v"`): `v`'s shadow follows
//! only `v`, so it takes the file's values, and the other variables have no
//! shadow (the file's variable list without theirs).
//!
//! Every case is its own test, plus one test of any case the list lacks; the
//! decay, the options and the problem come from the files, the learning rate
//! from TF's first step (see [`learning_rate`]; the file states it only in
//! prose). Tolerance: 1e-6 relative plus 1e-6 times the quantity's
//! trajectory scale (the error model of `golden_optimizers.rs`, the same
//! dense problem; measured at most 7.5e-8 of the scale on four draws, and
//! 1.5e-7 on a draw with another learning rate, read off its first step).

use crate::common;

use common::dense_problem::{dataset, dense_spec};
use common::{array, assert_all_close, golden, int, scale, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const REL: f64 = 1e-6;
const FLOOR: f64 = 1e-6;

/// REL relative, with a floor of FLOOR times the largest magnitude the
/// quantity takes over all states.
fn tol(states: &[serde_json::Value], f: impl Fn(&serde_json::Value) -> Vec<f64>) -> Tol<'static> {
    let trajectory = states.iter().map(|st| scale(&f(st))).fold(0.0, f64::max);
    Tol::scaled(REL, FLOOR, trajectory)
}

/// The learning rate of the training the file records. `_meta.procedure`
/// states it only in prose (`GradientDescentOptimizer(0.1)`), so it is read
/// off TF's first step instead: plain gradient descent moves every element
/// of every variable by `lr * g`, g the gradient at the initial state
/// (specc's `grad` function on the same problem), so lr is the least-squares
/// fit of `w0 - w1 = lr * g` over all elements, in float64, rounded to
/// float32 as the step's constant. Its error is the rounding of `w1` (a few
/// ulps of the variables over the step `lr * g`, ~1e-7 relative): the
/// trajectory it gives stays within the tolerance, and a step that is not
/// plain gradient descent fails the fit's check.
fn learning_rate(case: &serde_json::Value, problem: &serde_json::Value) -> f32 {
    let text = dense_spec(problem, "optimizer gradient_descent(learning_rate = 1)");
    let program = compile(&SourceFile::new("lr.spec", text), Functions::ALL).expect("compiles");
    let data = dataset(problem);
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    let rows: Vec<u32> = (0..data.rows as u32).collect();
    s.gather(&data, &rows).unwrap();
    let grad = s.function_index("grad").unwrap();
    s.call(grad, rows.len()).unwrap();
    let states = case["states"].as_array().expect("states");
    let (mut num, mut den) = (0.0, 0.0);
    let mut pairs = Vec::new();
    for (var, w0) in states[0]["variables"].as_object().unwrap() {
        let (_, w0) = array(w0);
        let (_, w1) = array(&states[1]["variables"][var]);
        let g = s.output(grad, &format!("grad/{var}"), rows.len()).unwrap();
        for ((a, b), &g) in w0.iter().zip(&w1).zip(g) {
            let g = f64::from(g);
            num += (a - b) * g;
            den += g * g;
            pairs.push((a - b, g));
        }
    }
    assert!(den > 0.0, "no gradient to read the learning rate from");
    let lr = num / den;
    let worst = pairs
        .iter()
        .map(|&(d, g)| (d - lr * g).abs())
        .fold(0.0, f64::max);
    let step = pairs.iter().map(|&(d, _)| d.abs()).fold(0.0, f64::max);
    assert!(
        worst <= 1e-5 * step,
        "TF's first step is not gradient descent with one learning rate ({lr}): off by {worst}"
    );
    lr as f32
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
    check_averaging(name, case, None);
}

/// Each variable of the case averaged alone (`apply([v])`).
fn check_var_lists(name: &str, case: &serde_json::Value) {
    let vars: Vec<&String> = case["average_name"].as_object().unwrap().keys().collect();
    assert!(vars.len() > 1, "{name}: one variable: no subset to choose");
    for v in vars {
        check_averaging(&format!("{name} var_list {v}"), case, Some(v));
    }
}

/// The case with the shadows of `only`'s variable (`None`: of every
/// variable the case averages).
fn check_averaging(name: &str, case: &serde_json::Value, only: Option<&str>) {
    let opt = golden("optimizers.json");
    let problem = &opt["_meta"]["problem_dense"];
    let lr = learning_rate(case, problem);
    let var_list = only.map_or_else(String::new, |v| format!(", var_list = \"{v}\""));
    let items = format!(
        "optimizer gradient_descent(learning_rate = {lr:e})\n{}{var_list}",
        ema_item(&case["kwargs"])
    );
    let averaged = |var: &str| only.is_none_or(|o| o == var);
    let text = dense_spec(problem, &items);
    let src = SourceFile::new(format!("{}.spec", name.replace(' ', "_")), text.clone());
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

    // The variables TF creates, by name (specc keeps the global step apart),
    // without the shadows of variables not averaged.
    let not_averaged: Vec<&str> = case["average_name"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(var, _)| !averaged(var))
        .map(|(_, shadow)| shadow.as_str().unwrap())
        .collect();
    let mut want_vars: Vec<String> = case["all_global_variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .filter(|v| v != "global_step" && !not_averaged.contains(&v.as_str()))
        .collect();
    let mut got_vars: Vec<String> = s.layout.vars.iter().map(|v| v.name.clone()).collect();
    want_vars.sort();
    got_vars.sort();
    assert_eq!(got_vars, want_vars, "{name}: variables");

    let states = case["states"].as_array().unwrap();
    for (k, state) in states.iter().enumerate() {
        let at = format!("{name} step {k}");
        if let Some(step_no) = state.get("step") {
            assert_eq!(int(step_no), k as i64, "{at}: states in order");
        }
        if k > 0 {
            s.call(step, rows.len()).unwrap();
        }
        assert_eq!(s.global_step, k as i64, "{at}: global_step");
        if let Some(g) = state.get("global_step") {
            assert_eq!(int(g), s.global_step, "{at}: global_step");
        }
        // With num_updates, TF's shadows read the incremented global step.
        match state.get("num_updates_at_apply") {
            Some(n) if !n.is_null() => assert_eq!(int(n), s.global_step, "{at}: num_updates"),
            _ => {}
        }
        for (var, want) in state["variables"].as_object().unwrap() {
            let got = s.var(var).unwrap_or_else(|| panic!("{name}: no {var}"));
            let (_, want) = array(want);
            let t = tol(states, |st| array(&st["variables"][var]).1);
            assert_all_close(&format!("{at} {var}"), got, &want, t);
        }
        for (var, want) in state["shadow"].as_object().unwrap() {
            if !averaged(var) {
                continue;
            }
            let shadow = case["average_name"][var].as_str().unwrap();
            let got = s
                .var(shadow)
                .unwrap_or_else(|| panic!("{name}: no shadow {shadow}"));
            let (_, want) = array(want);
            let t = tol(states, |st| array(&st["shadow"][var]).1);
            assert_all_close(&format!("{at} {shadow}"), got, &want, t);
        }
    }
}

fn run(case_name: &str) {
    let g = golden("ema.json");
    let case = &g["cases"][case_name];
    assert!(!case.is_null(), "no ema case {case_name}");
    check_case(case_name, case);
}

/// The case with each of its variables averaged alone.
fn run_var_lists(case_name: &str) {
    let g = golden("ema.json");
    let case = &g["cases"][case_name];
    assert!(!case.is_null(), "no ema case {case_name}");
    check_var_lists(case_name, case);
}

#[test]
fn var_list_decay() {
    run_var_lists("decay0.9");
}

#[test]
fn var_list_decay_with_num_updates() {
    run_var_lists("decay0.9_num_updates");
}

/// The cases of the file without a test of their own (a regenerated file
/// with more cases is still checked); every named case must be in the file.
#[test]
fn every_other_case_in_the_file() {
    let g = golden("ema.json");
    let all = g["cases"].as_object().unwrap();
    let others = all
        .iter()
        .filter(|(name, _)| !NAMED.contains(&name.as_str()))
        .map(|(name, case)| (name.clone(), case));
    common::check_all(others, check_case);
    for name in NAMED {
        assert!(all.contains_key(*name), "no ema case {name}");
    }
}

macro_rules! cases {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The cases with a test of their own.
        const NAMED: &[&str] = &[$($name),*];
        $( #[test] fn $test() { run($name); } )*
    };
}

cases! {
    decay => "decay0.9",
    decay_with_num_updates => "decay0.9_num_updates",
    zero_debias_has_no_effect_on_variables => "decay0.9_zero_debias_extra",
}
