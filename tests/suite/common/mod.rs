//! The suite's shared helpers that build on the specc crates: TF op cases
//! through the JIT (`op_cases`), the dense problem of the optimizer tests,
//! `tf.feature_column` calls (`tf_call`), Example features, the digits as
//! PNGs, TFLite export and prediction, and the interpreter's finite
//! differences. The golden readers, tolerances and spec text come from
//! `specc-testkit` (re-exported here, so a test says `common::golden`).
#![allow(dead_code)]

pub use specc_testkit::golden::{
    array, check_all, golden, golden_dir, golden_extra, int, ints, num,
};
pub use specc_testkit::spec::{literal, shape_text};
pub use specc_testkit::tol::{assert_all_close, assert_close, scale, Tol};

pub mod dense_problem;
pub mod digit_pngs;
pub mod example_features;
pub mod op_cases;
pub mod tf_call;
pub mod tflite_digits;

/// The compiler's interpreter leaves for a finite-difference check: the
/// model's inputs as `batch` rows of `ds` (shapes from the graph, the batch
/// dimension set to `batch`) and its variables as the session holds them.
pub fn interp_leaves(
    model: &specc_compiler::model::Model,
    ds: &specc_runtime::data::Dataset,
    session: &specc_runtime::session::Session,
    batch: usize,
) -> (
    Vec<specc_compiler::interp::Tensor>,
    Vec<specc_compiler::interp::Tensor>,
) {
    use specc_compiler::interp::Tensor;
    use specc_runtime::data::Values;
    let dims = |shape: &specc_compiler::ir::Shape, batch: usize| -> Vec<usize> {
        shape
            .concrete(batch as u64)
            .iter()
            .map(|&d| d as usize)
            .collect()
    };
    let inputs = model
        .graph
        .inputs
        .iter()
        .map(|leaf| {
            let d = ds.input(&leaf.name).expect("the dataset has every input");
            let data: Vec<f64> = match &d.values {
                Values::F32(v) => v[..batch * d.width].iter().map(|&x| x as f64).collect(),
                Values::I32(v) => v[..batch * d.width].iter().map(|&x| x as f64).collect(),
            };
            Tensor::new(dims(&leaf.shape, batch), data)
        })
        .collect();
    let vars = model
        .graph
        .vars
        .iter()
        .map(|leaf| {
            let v = session
                .var(&leaf.name)
                .expect("the session has every variable");
            Tensor::new(dims(&leaf.shape, 1), v.iter().map(|&x| x as f64).collect())
        })
        .collect();
    (inputs, vars)
}

/// The model's loss by the compiler's interpreter, at `vars`.
pub fn interp_loss(
    model: &specc_compiler::model::Model,
    inputs: &[specc_compiler::interp::Tensor],
    vars: &[specc_compiler::interp::Tensor],
    batch: usize,
) -> f64 {
    let env = specc_compiler::interp::Env {
        inputs,
        vars,
        batch,
        global_step: 0.0,
    };
    specc_compiler::interp::eval(&model.graph, &env, &[model.loss])[0].data[0]
}

/// The central finite difference of [`interp_loss`] in element `i` of
/// variable `p`, with step `1e-6 * max(|w|, 1)`; `vars` is left as it was.
pub fn central_difference(
    model: &specc_compiler::model::Model,
    inputs: &[specc_compiler::interp::Tensor],
    vars: &mut [specc_compiler::interp::Tensor],
    batch: usize,
    p: usize,
    i: usize,
) -> f64 {
    let w = vars[p].data[i];
    let h = 1e-6 * w.abs().max(1.0);
    vars[p].data[i] = w + h;
    let lp = interp_loss(model, inputs, vars, batch);
    vars[p].data[i] = w - h;
    let lm = interp_loss(model, inputs, vars, batch);
    vars[p].data[i] = w;
    (lp - lm) / (2.0 * h)
}

/// Each pair's variables, `a`'s by its first name and `b`'s by its second,
/// have one shape and the same bits (a model written with blocks against
/// the same model written out).
pub fn same_variables(a: &specc::Model, b: &specc::Model, pairs: &[(&str, &str)]) {
    for (in_a, in_b) in pairs {
        let (pa, pb) = (a.parameter(in_a).unwrap(), b.parameter(in_b).unwrap());
        assert_eq!(pa.shape(), pb.shape(), "{in_a}");
        assert!(
            pa.iter()
                .zip(pb.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{in_a} differs from {in_b}"
        );
    }
}
