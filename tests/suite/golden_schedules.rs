//! TF's learning-rate schedules against specc's, computed inside the compiled
//! step: each case becomes the learning rate of a tiny model, the global step
//! is set to each recorded step, and the step's `learning_rate` output is
//! compared with TF's float32 value.
//!
//! - `golden/schedules.json`: every case, each as its own test (named by its
//!   function and position), plus one test of the cases the list lacks (a
//!   regenerated file with more cases is still checked). Every recorded
//!   float32 value is compared (the count is asserted); a case without values
//!   fails. The
//!   `values_float64_learning_rate` variants are not compared: specc computes
//!   schedules in float32, as TF does for a Python-float learning rate.
//! - `golden/extra/schedule_boundaries.json` (`tools/schedule_boundaries.py`):
//!   TF's values at and around every floor, ceil and restart boundary, where
//!   TF's graph rewrites decide on which side a step lands (see
//!   `compiler/src/sema/schedules.rs`).
//!
//! Tolerance: 1e-6 relative, with a floor of 4 float32 ulps (4 * 2^-24) of the
//! case's scale, the largest value it records. The floor is for the ends of
//! cosine periods: `1 + cos(x)` near `x = pi` is computed to an ulp of 1,
//! not of its (small) result, in TF as in specc, so there the schedule is
//! accurate to ulps of its scale (the initial learning rate), not of itself.
//! For `cosine_decay_restarts` with `t_mul != 1` the floor is divided by
//! `|1 - t_mul|`: the fraction of the period is `(f - sum_r) / t_mul^i` with
//! `sum_r = (1 - t_mul^i) / (1 - t_mul)`, so the last-ulp difference between
//! two correct `pow`s (TF's C library, specc's `exp(i * log(t_mul))`) is
//! amplified by `1 / |1 - t_mul|` (10 for `t_mul = 1.1`).

use crate::common;

use common::{assert_all_close, golden, golden_extra, num, scale, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

/// Relative tolerance of every schedule value.
const REL: f64 = 1e-6;
/// The absolute floor, as a fraction of the case's scale: 4 float32 ulps.
const FLOOR: f64 = 4.0 / 16_777_216.0;

/// The spec call for a case: TF's function name and arguments as keywords.
fn call(case: &serde_json::Value) -> String {
    let function = case["function"].as_str().expect("a function name");
    let name = function.rsplit('.').next().unwrap().to_string();
    let args = case["args"].as_object().expect("args");
    let mut parts: Vec<String> = Vec::new();
    if name == "piecewise_constant" {
        parts.push("x = global_step".into());
    }
    for (k, v) in args {
        let text = match v {
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Array(items) => {
                let xs: Vec<String> = items.iter().map(|x| format!("{:e}", num(x))).collect();
                format!("[{}]", xs.join(", "))
            }
            v => format!("{:e}", num(v)),
        };
        parts.push(format!("{k} = {text}"));
    }
    format!("{name}({})", parts.join(", "))
}

fn spec(lr: &str) -> String {
    format!(
        "model schedule\ndata synthetic(rows = 4, features = 2)\nfeatures {{ x = numeric(x0, x1) }}\n\
         params {{ w: [2] = ones }}\nloss = reduce_sum(x * w)\n\
         optimizer gradient_descent(learning_rate = {lr})\ntrain {{ batch = 4, steps = 1 }}\n"
    )
}

/// Compares every value of one case; returns how many it compared.
fn check_case(case: &serde_json::Value) -> usize {
    let lr = call(case);
    assert_eq!(
        case["output_dtype"].as_str(),
        Some("float32"),
        "{lr}: a float32 schedule"
    );
    let values = case["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{lr}: the case records no values"));
    assert!(!values.is_empty(), "{lr}: the case records no values");
    let text = spec(&lr);
    let program = compile(&SourceFile::new("s.spec", text), Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{lr}: {:?}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let mut s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    let mut got = Vec::new();
    let mut want = Vec::new();
    for v in values {
        s.global_step = v["global_step"].as_i64().expect("an integer step");
        s.call(step, 4).unwrap();
        got.push(s.output(step, "learning_rate", 4).unwrap()[0]);
        want.push(num(&v["value"]));
    }
    let steps: Vec<i64> = values
        .iter()
        .map(|v| v["global_step"].as_i64().unwrap())
        .collect();
    let tol = Tol::scaled(REL, FLOOR * amplification(case), scale(&want));
    assert_all_close(&format!("{lr} at steps {steps:?}"), &got, &want, tol);
    got.len()
}

/// How much a case amplifies last-ulp differences (see the module doc).
fn amplification(case: &serde_json::Value) -> f64 {
    let function = case["function"].as_str().unwrap_or_default();
    match case["args"].get("t_mul").map(num) {
        Some(t) if function.ends_with("cosine_decay_restarts") && t != 1.0 => {
            (1.0 / (1.0 - t).abs()).max(1.0)
        }
        _ => 1.0,
    }
}

fn cases(file: &serde_json::Value) -> &Vec<serde_json::Value> {
    file["cases"].as_array().expect("a list of cases")
}

/// A case's function without its module path.
fn function_name(case: &serde_json::Value) -> Option<&str> {
    case["function"].as_str().and_then(|f| f.rsplit('.').next())
}

/// Case `index` of schedules.json, which must be a `function` case.
fn run(index: usize, function: &str) {
    let g = golden("schedules.json");
    let case = &cases(&g)[index];
    assert_eq!(
        function_name(case),
        Some(function),
        "case {index} of schedules.json"
    );
    check_case(case);
}

/// The cases of a file that `skip` does not exclude, all checked before
/// failing; every value they record is compared.
fn check_file(file: &serde_json::Value, skip: impl Fn(usize, &serde_json::Value) -> bool) {
    let chosen: Vec<(usize, &serde_json::Value)> = cases(file)
        .iter()
        .enumerate()
        .filter(|(i, c)| !skip(*i, c))
        .collect();
    let recorded: usize = chosen
        .iter()
        .map(|(_, c)| c["values"].as_array().map_or(0, Vec::len))
        .sum();
    let compared = std::sync::atomic::AtomicUsize::new(0);
    common::check_all(
        chosen.iter().map(|(i, c)| (format!("case {i}"), *c)),
        |_, c| {
            let n = check_case(c);
            compared.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        },
    );
    assert_eq!(compared.into_inner(), recorded, "values compared");
}

/// The cases of schedules.json without a test of their own below.
#[test]
fn every_other_schedule_in_the_file_matches_tensorflow() {
    let g = golden("schedules.json");
    check_file(&g, |i, c| {
        NAMED
            .iter()
            .any(|&(index, function)| index == i && function_name(c) == Some(function))
    });
}

/// TF's values at and around every boundary of every schedule family.
#[test]
fn schedules_match_tensorflow_at_every_boundary() {
    let g = golden_extra("schedule_boundaries.json");
    assert_eq!(cases(&g).len(), 141, "cases in schedule_boundaries.json");
    check_file(&g, |_, _| false);
}

macro_rules! cases {
    ($($test:ident => ($index:literal, $function:literal)),* $(,)?) => {
        /// The cases with a test of their own: (position, function).
        const NAMED: &[(usize, &str)] = &[$(($index, $function)),*];
        $( #[test] fn $test() { run($index, $function); } )*
    };
}

cases! {
    exponential_decay_0 => (0, "exponential_decay"),
    exponential_decay_1 => (1, "exponential_decay"),
    exponential_decay_2 => (2, "exponential_decay"),
    piecewise_constant_3 => (3, "piecewise_constant"),
    piecewise_constant_4 => (4, "piecewise_constant"),
    polynomial_decay_5 => (5, "polynomial_decay"),
    polynomial_decay_6 => (6, "polynomial_decay"),
    polynomial_decay_7 => (7, "polynomial_decay"),
    polynomial_decay_8 => (8, "polynomial_decay"),
    polynomial_decay_9 => (9, "polynomial_decay"),
    natural_exp_decay_10 => (10, "natural_exp_decay"),
    natural_exp_decay_11 => (11, "natural_exp_decay"),
    inverse_time_decay_12 => (12, "inverse_time_decay"),
    inverse_time_decay_13 => (13, "inverse_time_decay"),
    cosine_decay_14 => (14, "cosine_decay"),
    cosine_decay_15 => (15, "cosine_decay"),
    cosine_decay_restarts_16 => (16, "cosine_decay_restarts"),
    cosine_decay_restarts_17 => (17, "cosine_decay_restarts"),
    cosine_decay_restarts_18 => (18, "cosine_decay_restarts"),
    linear_cosine_decay_19 => (19, "linear_cosine_decay"),
    linear_cosine_decay_20 => (20, "linear_cosine_decay"),
}

#[test]
fn noisy_linear_cosine_decay_is_seeded_noise_around_linear_cosine() {
    let run = |seed: u64| -> Vec<f32> {
        let lr = format!("noisy_linear_cosine_decay(0.1, decay_steps = 100, seed = {seed})");
        let program = compile(&SourceFile::new("n.spec", spec(&lr)), Functions::TRAIN).unwrap();
        let mut s = program.session().unwrap();
        let step = s.function_index("step").unwrap();
        (0..200)
            .map(|gs| {
                s.global_step = gs;
                s.call(step, 4).unwrap();
                s.output(step, "learning_rate", 4).unwrap()[0]
            })
            .collect()
    };
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(a, b, "the same seed gives the same schedule");
    assert_ne!(a, c, "another seed gives other noise");
    assert!(a.iter().all(|v| v.is_finite()));
    // Past decay_steps the linear and cosine parts are 0: lr * (noise * cos_part + beta) = lr * beta.
    assert!((a[150] - 0.1 * 0.001).abs() < 1e-6, "{}", a[150]);
}

#[test]
fn linear_warmup_ramps_to_the_schedule() {
    let lr = "linear_warmup(exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5), warmup_steps = 4)";
    let program = compile(&SourceFile::new("w.spec", spec(lr)), Functions::TRAIN).unwrap();
    let mut s = program.session().unwrap();
    let step = s.function_index("step").unwrap();
    let at = |s: &mut specc_compiler::driver::ProgramSession, gs: i64| {
        s.global_step = gs;
        s.call(step, 4).unwrap();
        s.output(step, "learning_rate", 4).unwrap()[0] as f64
    };
    let target = 0.1 * 0.5f64.powf(0.4);
    let tol = Tol::scaled(1e-5, FLOOR, 0.1);
    common::assert_close("warmup start", at(&mut s, 0), 0.0, tol);
    common::assert_close("warmup middle", at(&mut s, 2), target / 2.0, tol);
    common::assert_close("after warmup", at(&mut s, 4), target, tol);
    common::assert_close("schedule", at(&mut s, 20), 0.1 * 0.25, tol);
}
