//! Optimizers written in the spec (docs/optimizers.md, "Writing your own
//! optimizer"): TF's Adam and Momentum written as `optimizer_def`s train to
//! the same bits as the built-in `adam` and `momentum`, dense and sparse
//! (an embedding's `IndexedSlices` gradient with duplicate ids: Adam's
//! `sparse densify` rule, Momentum's `sparse rows`); the library's `adamw`
//! and `lamb` stay finite with sparse gradients and a zero variable (LAMB's
//! trust ratio); slots are `W/NAME` in the model's variables and in a
//! checkpoint; the definition errors, each with a caret (snapshots), never
//! a panic. (optax's numbers: `interop/test_spec_optimizers.py`.)

use crate::cli;

use ndarray::{ArrayD, IxDyn};
use specc::Model;
use specc_runtime::checkpoint::BundleReader;

const SUITE: &str = "spec_optimizers";

/// An embedding `E` (sparse gradient, duplicate ids) and a dense `W`.
const HEAD: &str = r#"model custom
data synthetic(rows = 6, features = 4)
features {
  ids = integer(x0, num_buckets = 5)
  x = numeric(x1, x2)
}
label t: float from x3
params {
  E: [5, 2] = random_uniform(minval = -0.5, maxval = 0.5, seed = 1)
  W: [2, 2] = glorot_uniform(seed = 2)
  b: [2] = zeros
}
loss = reduce_mean(square(embedding_lookup(E, ids) + x @ W + b - t))
train { batch = 6, steps = 1 }
"#;

/// TF's `AdamOptimizer` (`ApplyAdam`, and `_apply_sparse_shared` on the
/// dense value of the slices), operation for operation.
const ADAM: &str = r#"
optimizer_def my_adam(learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8) {
  slot m = zeros
  slot v = zeros
  global beta1_power = beta1
  global beta2_power = beta2
  update {
    alpha = learning_rate * sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (square(grad) - v) * (1 - beta2)
    var = var - m * alpha / (sqrt(v) + epsilon)
  }
  sparse densify {
    lr = learning_rate * sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m * beta1 + grad * (1 - beta1)
    v = v * beta2 + grad * (1 - beta2) * grad
    var = var - lr * m / (sqrt(v) + epsilon)
  }
  finish {
    beta1_power = beta1_power * beta1
    beta2_power = beta2_power * beta2
  }
}
"#;

/// TF's `MomentumOptimizer` (`ApplyMomentum`; `SparseApplyMomentum` on the
/// touched rows).
const MOMENTUM: &str = r#"
optimizer_def my_momentum(learning_rate, momentum) {
  slot accum = zeros
  update {
    accum = accum * momentum + grad
    var = var - accum * learning_rate
  }
  sparse rows
}
"#;

fn model(tail: &str) -> Model {
    let text = format!("{HEAD}{tail}");
    Model::from_source("custom", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Step `k`'s batch: ids with duplicates, changing from step to step.
fn batch(k: usize) -> Vec<(&'static str, ArrayD<f32>)> {
    let ids: Vec<f32> = (0..6).map(|i| ((i * 3 + k) % 4) as f32).collect();
    let x: Vec<f32> = (0..12)
        .map(|i| ((i * 7 + k) % 11) as f32 / 5.0 - 1.0)
        .collect();
    let t: Vec<f32> = (0..6).map(|i| ((i + 2 * k) % 5) as f32 / 4.0).collect();
    vec![
        ("ids", ArrayD::from_shape_vec(IxDyn(&[6]), ids).unwrap()),
        ("x", ArrayD::from_shape_vec(IxDyn(&[6, 2]), x).unwrap()),
        ("t", ArrayD::from_shape_vec(IxDyn(&[6, 1]), t).unwrap()),
    ]
}

fn train(m: &mut Model, steps: usize) -> Vec<f32> {
    (0..steps)
        .map(|k| {
            let b = batch(k);
            let feeds: Vec<(&str, ndarray::ArrayViewD<f32>)> =
                b.iter().map(|(n, a)| (*n, a.view())).collect();
            m.train_step(&feeds).unwrap()
        })
        .collect()
}

fn bits(m: &Model, name: &str) -> Vec<u32> {
    m.parameter(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Every variable of `ours` (by name) has the bits of `theirs`' variable
/// `pairs` maps it to, and both changed from their initial values.
fn same_bits(ours: &Model, theirs: &Model, pairs: &[(&str, &str)]) {
    for (a, b) in pairs {
        assert_eq!(bits(ours, a), bits(theirs, b), "{a} vs {b}");
    }
}

#[test]
fn adam_written_in_the_spec_is_the_builtin_to_the_bit() {
    let args = "(learning_rate = 0.05, beta1 = 0.8, beta2 = 0.99, epsilon = 1e-7)";
    let mut ours = model(&format!("{ADAM}optimizer my_adam{args}\n"));
    let mut theirs = model(&format!("optimizer adam{args}\n"));
    let before = bits(&ours, "E");
    assert_eq!(train(&mut ours, 5), train(&mut theirs, 5));
    assert_ne!(bits(&ours, "E"), before, "the embedding trained");
    let mut pairs = vec![
        ("beta1_power", "beta1_power"),
        ("beta2_power", "beta2_power"),
    ];
    let names: Vec<(String, String, String)> = ["E", "W", "b"]
        .iter()
        .map(|p| (p.to_string(), format!("{p}/m"), format!("{p}/v")))
        .collect();
    let theirs_names: Vec<(String, String)> = ["E", "W", "b"]
        .iter()
        .map(|p| (format!("{p}/Adam"), format!("{p}/Adam_1")))
        .collect();
    for ((p, m, v), (tm, tv)) in names.iter().zip(&theirs_names) {
        pairs.push((p, p));
        pairs.push((m, tm));
        pairs.push((v, tv));
    }
    same_bits(&ours, &theirs, &pairs);
}

#[test]
fn momentum_written_in_the_spec_is_the_builtin_to_the_bit_on_rows() {
    let args = "(learning_rate = 0.1, momentum = 0.9)";
    let mut ours = model(&format!("{MOMENTUM}optimizer my_momentum{args}\n"));
    let mut theirs = model(&format!("optimizer momentum{args}\n"));
    assert_eq!(train(&mut ours, 5), train(&mut theirs, 5));
    same_bits(
        &ours,
        &theirs,
        &[
            ("E", "E"),
            ("E/accum", "E/Momentum"),
            ("W", "W"),
            ("W/accum", "W/Momentum"),
        ],
    );
    // Rows no batch touched stay frozen (ids 0..3 only: row 4 never moves).
    let e = ours.parameter("E/accum").unwrap();
    assert!(e.iter().skip(8).all(|&v| v == 0.0), "{e}");
}

#[test]
fn the_library_optimizers_stay_finite_with_sparse_gradients_and_a_zero_variable() {
    for opt in [
        "adamw(learning_rate = 0.05, weight_decay = 0.1)",
        "lamb(learning_rate = cosine_decay(0.05, decay_steps = 10), weight_decay = 0.01)",
    ] {
        let mut m = model(&format!("optimizer {opt}\n"));
        let b0 = m.parameter("b").unwrap();
        assert!(b0.iter().all(|&v| v == 0.0));
        let (e0, w0) = (bits(&m, "E"), bits(&m, "W"));
        let losses = train(&mut m, 8);
        assert!(losses.iter().all(|l| l.is_finite()), "{opt}: {losses:?}");
        assert_ne!(bits(&m, "E"), e0, "{opt}: the embedding trains");
        assert_ne!(bits(&m, "W"), w0, "{opt}: W trains");
        for (name, _) in m.variables() {
            let v = m.parameter(&name).unwrap();
            assert!(v.iter().all(|x| x.is_finite()), "{opt}: {name} = {v}");
        }
        // `b` starts at 0: LAMB's trust ratio is 1 there, and it moves.
        assert!(m.parameter("b").unwrap().iter().any(|&v| v != 0.0), "{opt}");
    }
}

#[test]
fn slots_are_named_w_slot_in_the_variables_and_the_checkpoint() {
    let mut m = model("optimizer adamw(learning_rate = 0.01)\n");
    train(&mut m, 2);
    let names: Vec<String> = m.variables().into_iter().map(|(n, _)| n).collect();
    for n in ["E", "E/mu", "E/nu", "W", "W/mu", "W/nu", "b/mu", "b/nu"] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    let dir = cli::workdir(SUITE, "checkpoint");
    let prefix = m.save_checkpoint(&dir).unwrap();
    let r = BundleReader::open(&prefix).unwrap();
    let listed: Vec<(String, Vec<usize>)> = r
        .list_variables()
        .into_iter()
        .map(|(n, _, s)| (n, s))
        .collect();
    for (n, shape) in [
        ("W/mu", vec![2, 2]),
        ("W/nu", vec![2, 2]),
        ("E/mu", vec![5, 2]),
    ] {
        assert!(
            listed.contains(&(n.to_string(), shape)),
            "{n} in {listed:?}"
        );
        let mut got = vec![0f32; if n == "E/mu" { 10 } else { 4 }];
        r.load_f32_into(n, &mut got).unwrap();
        let want: Vec<f32> = m.parameter(n).unwrap().iter().copied().collect();
        assert_eq!(got, want, "{n}");
    }
}

/// A spec whose optimizer is defined by `def` and used as `use_`.
fn with_def(def: &str, use_: &str) -> String {
    format!("{HEAD}{def}\noptimizer {use_}\n")
}

macro_rules! error_case {
    ($name:ident, $def:expr, $use_:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &with_def($def, $use_), $code);
            insta::assert_snapshot!(err);
        }
    };
}

error_case!(
    missing_update,
    "optimizer_def sgd(learning_rate) {\n  slot m = zeros\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    update_never_assigns_var,
    "optimizer_def sgd(learning_rate) {\n  update { step_size = learning_rate * grad }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    unknown_name_in_update,
    "optimizer_def sgd(learning_rate) {\n  update { var = var - learning_rat * grad }\n}",
    "sgd(learning_rate = 0.1)",
    "unknown-name"
);
error_case!(
    assigning_the_gradient,
    "optimizer_def sgd(learning_rate) {\n  update {\n    grad = grad * learning_rate\n    var = var - grad\n  }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    assigning_a_global_in_the_update,
    "optimizer_def sgd(learning_rate) {\n  global count = 0\n  update {\n    count = count + 1\n    var = var - learning_rate * grad\n  }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    a_scalar_into_a_slot,
    "optimizer_def sgd(learning_rate) {\n  slot m = zeros\n  update {\n    m = learning_rate * 2\n    var = var - m * grad\n  }\n}",
    "sgd(learning_rate = 0.1)",
    "shape-mismatch"
);
error_case!(
    finish_twice,
    "optimizer_def sgd(learning_rate) {\n  global g = 0\n  update { var = var - learning_rate * grad }\n  finish { g = g + learning_rate * step }\n  finish { g = 0 }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    the_variable_in_finish,
    "optimizer_def sgd(learning_rate) {\n  global g = 0\n  update { var = var - learning_rate * grad }\n  finish { g = norm(var) }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    a_norm_under_sparse_rows,
    "optimizer_def clipped(learning_rate) {\n  update { var = var - learning_rate * grad / norm(grad) }\n}",
    "clipped(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    unknown_function,
    "optimizer_def sgd(learning_rate) {\n  update { var = var - learning_rate * sqr(grad) }\n}",
    "sgd(learning_rate = 0.1)",
    "unknown-function"
);
error_case!(
    unknown_sparse_mode,
    "optimizer_def sgd(learning_rate) {\n  update { var = var - learning_rate * grad }\n  sparse lazy\n}",
    "sgd(learning_rate = 0.1)",
    "unknown-choice"
);
error_case!(
    slot_named_like_a_hyperparameter,
    "optimizer_def mom(learning_rate, momentum = 0.9) {\n  slot momentum = zeros\n  update { var = var - learning_rate * grad }\n}",
    "mom(learning_rate = 0.1)",
    "duplicate-name"
);
error_case!(
    defining_a_builtin,
    "optimizer_def adam(learning_rate) {\n  update { var = var - learning_rate * grad }\n}",
    "adam(learning_rate = 0.1)",
    "duplicate-name"
);
error_case!(
    a_schedule_as_an_initial_value,
    "optimizer_def sgd(learning_rate, start = 0.5) {\n  slot m = start\n  update {\n    m = m + grad\n    var = var - learning_rate * m\n  }\n}",
    "sgd(learning_rate = 0.1, start = cosine_decay(0.5, decay_steps = 10))",
    "argument-type"
);
error_case!(
    missing_hyperparameter,
    "optimizer_def sgd(learning_rate) {\n  update { var = var - learning_rate * grad }\n}",
    "sgd()",
    "missing-argument"
);
error_case!(
    matmul_in_a_rule,
    "optimizer_def sgd(learning_rate) {\n  update { var = var - learning_rate * (grad @ var) }\n}",
    "sgd(learning_rate = 0.1)",
    "optimizer-def"
);
error_case!(
    a_hyperparameter_named_var_list,
    "optimizer_def sgd(learning_rate, var_list = 1) {\n  update { var = var - learning_rate * grad }\n}",
    "sgd(learning_rate = 0.1)",
    "duplicate-name"
);
