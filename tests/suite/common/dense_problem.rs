//! The dense problem of `golden/optimizers.json` (`_meta.problem_dense`): a
//! linear model `x @ w + b` with squared loss on a fixed batch, shared by the
//! optimizer and moving-average tests.
#![allow(dead_code)]

use super::{array, literal};
use specc_runtime::data::{Dataset, InputData, Values};

/// The spec of the dense problem, with `items` (optimizer, ema, ..) added.
pub fn dense_spec(problem: &serde_json::Value, items: &str) -> String {
    let (xd, _) = array(&problem["x"]);
    let (yd, _) = array(&problem["y"]);
    let (wd, _) = array(&problem["w_init"]);
    format!(
        "model dense\n\
         data synthetic(rows = {rows}, features = {xf})\n\
         features {{ x = numeric(x0..x{xl}) }}\n\
         label y: float from y0..y{yl}\n\
         params {{\n  w: [{w0}, {w1}] = constant(value = {w})\n  b: [{w1}] = constant(value = {b})\n}}\n\
         loss = reduce_mean(square(x @ w + b - y))\n\
         {items}\n\
         train {{ batch = {rows}, steps = 20 }}\n",
        rows = xd[0],
        xf = xd[1],
        xl = xd[1] - 1,
        yl = yd[1] - 1,
        w0 = wd[0],
        w1 = wd[1],
        w = literal(&problem["w_init"]),
        b = literal(&problem["b_init"]),
    )
}

/// The problem's data.
pub fn dataset(problem: &serde_json::Value) -> Dataset {
    let (xd, x) = array(&problem["x"]);
    let (yd, y) = array(&problem["y"]);
    let f32s = |v: &[f64]| Values::F32(v.iter().map(|&a| a as f32).collect());
    Dataset::from_inputs(
        xd[0],
        vec![
            InputData::new("x", xd[1], f32s(&x)),
            InputData::new("y", yd[1], f32s(&y)),
        ],
    )
    .unwrap()
}
