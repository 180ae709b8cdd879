//! The layers whose value depends on training: `batch_norm` (moving
//! statistics updated by the step, TF's fused batch norm + assign moving
//! average, checked against `golden/conv.json`) and `dropout` (kept values
//! scaled by 1/(1 − rate), about `rate` of them dropped, new draws each step,
//! off in eval), and their diagnostics.

use crate::common;

use common::{array, assert_all_close, golden, literal, scale, shape_text, Tol};
use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::diag::render_all;
use specc_grammar::{Code, SourceFile};

const REL: f64 = 1e-5;
const FLOOR: f64 = 1e-5;

fn case(name: &str) -> serde_json::Value {
    golden("conv.json")["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("conv.json has no case {name}"))
        .clone()
}

fn build(text: &str) -> Program {
    let src = SourceFile::new("layers.spec", text.to_string());
    compile(&src, Functions::ALL)
        .unwrap_or_else(|d| panic!("{}\n{text}", render_all(&d, &src, false)))
}

/// A parameter line with the values of a case's input.
fn param(c: &serde_json::Value, input: &str, name: &str, trainable: bool) -> String {
    let v = &c["inputs"][input]["values"];
    let (dims, _) = array(v);
    let t = if trainable { "" } else { ", trainable = false" };
    format!(
        "  {name}: {} = constant(value = {}){t}\n",
        shape_text(&dims),
        literal(v)
    )
}

/// The spec of `batch_norm` over a case's inputs (x, scale and offset
/// trainable; the moving statistics from its `mean` and `variance`), with
/// `loss = reduce_sum(y * W)` for the case's weights of `y`, and a probe
/// parameter whose gradient is `y` as the step computes it.
fn batch_norm_spec(c: &serde_json::Value, momentum: f64) -> String {
    let (ydims, _) = array(&c["outputs"]["y"]["values"]);
    let w = &c["grad"]["weights"]["y"]["values"];
    let mut params = String::new();
    params += &param(c, "x", "x", true);
    params += &param(c, "scale", "scale", true);
    params += &param(c, "offset", "offset", true);
    params += &param(c, "mean", "moving_mean", false);
    params += &param(c, "variance", "moving_variance", false);
    params += &format!("  probe: {} = zeros\n", shape_text(&ydims));
    format!(
        "model layers\ndata synthetic(rows = 4, features = 1)\nparams {{\n{params}}}\n\
         y = batch_norm(x, scale, offset, moving_mean, moving_variance, momentum = {momentum:e}, epsilon = {:e})\n\
         loss = reduce_sum(y * {}) + reduce_sum(probe * stop_gradient(y))\n\
         optimizer gradient_descent(learning_rate = 1e-9)\ntrain {{ batch = 1, steps = 1 }}\n",
        c["args"]["epsilon"].as_f64().expect("epsilon"),
        literal(w)
    )
}

/// In training, `batch_norm` is TF's fused batch norm with the batch
/// statistics (its `y` and gradients), and the step moves the moving
/// statistics as `fused_batch_norm(.., exponential_avg_factor = 1 −
/// momentum)` returns them.
#[test]
fn batch_norm_trains_on_batch_statistics_and_updates_the_moving_ones_as_tf() {
    let c = case("fused_batch_norm_training_exponential_avg");
    let factor = c["args"]["exponential_avg_factor"]
        .as_f64()
        .expect("factor");
    let program = build(&batch_norm_spec(&c, 1.0 - factor));
    let mut s = program.session().expect("session");
    let grad = s.function_index("grad").expect("grad");
    s.call(grad, 1).expect("grad");
    let (_, y) = array(&c["outputs"]["y"]["values"]);
    let got = s.output(grad, "grad/probe", 1).expect("y");
    assert_all_close("y", got, &y, Tol::scaled(REL, FLOOR, scale(&y)));
    for (k, g) in c["grad"]["wrt"].as_object().expect("wrt") {
        if g.is_null() {
            continue;
        }
        let (_, want) = array(&g["values"]);
        let got = s.output(grad, &format!("grad/{k}"), 1).expect("gradient");
        assert_all_close(
            &format!("gradient w.r.t. {k}"),
            got,
            &want,
            Tol::scaled(REL, FLOOR, scale(&want)),
        );
    }
    let step = s.function_index("step").expect("step");
    s.call(step, 1).expect("step");
    for (var, out) in [
        ("moving_mean", "running_mean"),
        ("moving_variance", "running_variance"),
    ] {
        let (_, want) = array(&c["outputs"][out]["values"]);
        let got = s.var(var).expect("variable");
        // f = 1 − momentum is rounded to f32 once more than in TF.
        assert_all_close(var, got, &want, Tol::scaled(1e-5, FLOOR, scale(&want)));
    }
}

/// Outside training (`eval`), `batch_norm` normalizes with the moving
/// statistics: TF's fused batch norm with `is_training = false`.
#[test]
fn batch_norm_evaluates_with_the_moving_statistics_as_tf() {
    let c = case("fused_batch_norm_inference");
    let program = build(&batch_norm_spec(&c, 0.99));
    let mut s = program.session().expect("session");
    let eval = s.function_index("eval").expect("eval");
    s.call(eval, 1).expect("eval");
    let loss = f64::from(s.output(eval, "loss", 1).expect("loss")[0]);
    // Σ y·W with TF's y (the probe term is 0: the probe is zero).
    let (_, y) = array(&c["outputs"]["y"]["values"]);
    let (_, w) = array(&c["grad"]["weights"]["y"]["values"]);
    let want: f64 = y.iter().zip(&w).map(|(a, b)| a * b).sum();
    let size: f64 = y.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum();
    assert!(
        (loss - want).abs() <= 1e-5 * size,
        "eval loss {loss}, TF's y gives {want}"
    );
}

const DROPOUT: &str = "model dropout\ndata synthetic(rows = 4, features = 1)\nparams {\n  x: [64, 64] = ones\n}\ny = dropout(x, 0.25, NOISE seed = 7)\nloss = reduce_sum(y)\noptimizer gradient_descent(learning_rate = 1e-9)\ntrain { batch = 1, steps = 1 }\n";

fn dropout_program(noise: &str) -> Program {
    build(&DROPOUT.replace("NOISE", noise))
}

/// The gradient of `reduce_sum(dropout(x))` w.r.t. `x` is the step's mask
/// times 1/(1 − rate).
fn mask(s: &mut specc_runtime::session::Session) -> Vec<f32> {
    let grad = s.function_index("grad").expect("grad");
    s.call(grad, 1).expect("grad");
    s.output(grad, "grad/x", 1).expect("gradient").to_vec()
}

#[test]
fn dropout_keeps_three_quarters_scaled_and_redraws_each_step() {
    let program = dropout_program("");
    let mut s = program.session().expect("session");
    let m = mask(&mut s);
    let kept = m.iter().filter(|&&v| v != 0.0).count();
    assert!(
        m.iter().all(|&v| v == 0.0 || v == 1.0 / 0.75_f32),
        "every element is dropped or scaled by 1/(1 − rate)"
    );
    // 4096 draws: the kept fraction is 0.75 ± 3 standard deviations.
    let frac = kept as f64 / m.len() as f64;
    let sd = (0.75f64 * 0.25 / m.len() as f64).sqrt();
    assert!((frac - 0.75).abs() < 3.0 * sd, "kept fraction {frac}");
    // The same step draws the same mask; the next step another one.
    assert_eq!(m, mask(&mut s));
    let step = s.function_index("step").expect("step");
    s.call(step, 1).expect("step");
    let next = mask(&mut s);
    assert_ne!(m, next, "a new step draws a new mask");
    // Eval does not drop.
    let eval = s.function_index("eval").expect("eval");
    s.call(eval, 1).expect("eval");
    assert_eq!(s.output(eval, "loss", 1).expect("loss")[0], 4096.0);
}

#[test]
fn dropout_with_a_noise_shape_drops_whole_rows() {
    let program = dropout_program("noise_shape = [64, 1],");
    let mut s = program.session().expect("session");
    let m = mask(&mut s);
    for row in m.chunks(64) {
        assert!(
            row.iter().all(|&v| v == row[0]),
            "a row is kept or dropped whole"
        );
    }
    assert!(m.chunks(64).any(|r| r[0] == 0.0) && m.chunks(64).any(|r| r[0] != 0.0));
}

/// Compiles a spec with `y = EXPR` (over `x: [2, 4, 4, 3]`, trainable
/// `g`, `o` and fixed `mm`, `mv` of shape `[3]`), which must fail with
/// `code` and a caret under `under`.
fn fails(expr: &str, code: Code, under: &str) {
    let text = format!(
        "model errors\ndata synthetic(rows = 4, features = 1)\nparams {{\n  x: [2, 4, 4, 3] = ones\n  g: [3] = ones\n  o: [3] = zeros\n  mm: [3] = zeros, trainable = false\n  mv: [3] = ones, trainable = false\n  t: [3] = ones\n}}\ny = {expr}\nloss = reduce_sum(y * y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    );
    common::op_cases::assert_fails(&text, code, under);
}

#[test]
fn dropout_rate_of_one_is_an_error() {
    fails("dropout(x, 1.0)", Code::ArgumentOutOfRange, "1.0");
}

#[test]
fn dropout_noise_shape_that_does_not_broadcast() {
    fails(
        "dropout(x, 0.5, noise_shape = [2, 4, 2, 3])",
        Code::BadShape,
        "[2, 4, 2, 3]",
    );
}

#[test]
fn batch_norm_moving_statistic_that_is_trained() {
    fails(
        "batch_norm(x, g, o, mm, t) + 0 * t",
        Code::TrainableStatistic,
        "batch_norm(x, g, o, mm, t)",
    );
}

#[test]
fn batch_norm_moving_statistic_that_is_not_a_variable() {
    fails(
        "batch_norm(x, g, o, mm * 2, mv)",
        Code::NotAVariable,
        "mm * 2",
    );
}

#[test]
fn batch_norm_statistics_updated_twice() {
    fails(
        "batch_norm(x, g, o, mm, mv) + batch_norm(x * 2, g, o, mm, mv)",
        Code::UpdatedTwice,
        "batch_norm(x * 2, g, o, mm, mv)",
    );
}
