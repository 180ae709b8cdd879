//! One optimizer per part (docs/optimizers.md, "One optimizer per part"):
//! groups chosen by `var_list`, each with its slots and TF's unique names for
//! a second optimizer's variables, one `global_step` increment per step, the
//! same bits as one optimizer when the groups are the same, a group's
//! schedule and clipping its own; the `var-list` errors.

use crate::cli;

use ndarray::{ArrayD, IxDyn};
use specc::Model;

const SUITE: &str = "optimizer_groups";

const HEAD: &str = r#"data synthetic(rows = 8, features = 4, classes = 3)
label label: int
features { x = numeric(x0..x3) }
block dense(x, units, seed, activation = None) {
  params {
    kernel: [shape(x)[-1], units] = glorot_uniform(seed = seed)
    bias: [units] = zeros
  }
  return activation(x @ kernel + bias)
}
logits = dense(dense(x, 6, 1, activation = relu, name = "deep"), 3, 2, name = "head") + dense(x, 3, 3, name = "wide")
loss = mean(sparse_softmax_cross_entropy(label, logits))
train { batch = 8, steps = 1 }
"#;

fn model(optimizers: &str) -> Model {
    let text = format!("{HEAD}{optimizers}");
    Model::from_source("groups", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn batch() -> (ArrayD<f32>, ArrayD<f32>) {
    let x: Vec<f32> = (0..32).map(|i| ((i * 5) % 13) as f32 / 6.0 - 1.0).collect();
    let y: Vec<f32> = (0..8).map(|i| ((i * 2) % 3) as f32).collect();
    (
        ArrayD::from_shape_vec(IxDyn(&[8, 4]), x).unwrap(),
        ArrayD::from_shape_vec(IxDyn(&[8]), y).unwrap(),
    )
}

fn train(m: &mut Model, steps: usize) -> Vec<f32> {
    let (x, y) = batch();
    (0..steps)
        .map(|_| {
            m.train_step(&[("x", x.view()), ("label", y.view())])
                .unwrap()
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

const PARAMS: [&str; 6] = [
    "deep/kernel",
    "deep/bias",
    "head/kernel",
    "head/bias",
    "wide/kernel",
    "wide/bias",
];

#[test]
fn groups_of_the_same_optimizer_train_as_one() {
    let mut one = model("optimizer adam(learning_rate = 0.01)\n");
    let mut two = model(
        "optimizer adam(learning_rate = 0.01, var_list = \"wide/*\")\n\
         optimizer adam(learning_rate = 0.01, var_list = [\"deep/*\", \"head/*\"])\n",
    );
    assert_eq!(train(&mut one, 6), train(&mut two, 6));
    for p in PARAMS {
        assert_eq!(bits(&one, p), bits(&two, p), "{p}");
    }
    // The second Adam's non-slot variables take TF's unique names.
    let names: Vec<String> = two.variables().into_iter().map(|(n, _)| n).collect();
    for n in [
        "beta1_power",
        "beta2_power",
        "beta1_power_1",
        "beta2_power_1",
    ] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    assert_eq!(two.global_step(), 6, "one increment per step");
}

#[test]
fn each_group_has_its_optimizer_and_slots() {
    let mut m = model(
        "optimizer ftrl(learning_rate = 0.2, var_list = \"wide/*\")\n\
         optimizer adagrad(learning_rate = 0.05, var_list = [\"deep/*\", \"head/*\"])\n",
    );
    let names: Vec<String> = m.variables().into_iter().map(|(n, _)| n).collect();
    for n in [
        "wide/kernel/Ftrl",
        "wide/kernel/Ftrl_1",
        "deep/kernel/Adagrad",
        "head/bias/Adagrad",
    ] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    assert!(!names
        .iter()
        .any(|n| n == "wide/kernel/Adagrad" || n == "deep/kernel/Ftrl"));
    let before: Vec<Vec<u32>> = PARAMS.iter().map(|p| bits(&m, p)).collect();
    train(&mut m, 1);
    for (p, b) in PARAMS.iter().zip(&before) {
        assert_ne!(&bits(&m, p), b, "{p} moved");
    }
    let mut other_wide = model(
        "optimizer ftrl(learning_rate = 0.7, var_list = \"wide/*\")\n\
         optimizer adagrad(learning_rate = 0.05, var_list = [\"deep/*\", \"head/*\"])\n",
    );
    let mut other_deep = model(
        "optimizer ftrl(learning_rate = 0.2, var_list = \"wide/*\")\n\
         optimizer adagrad(learning_rate = 0.3, var_list = [\"deep/*\", \"head/*\"])\n",
    );
    train(&mut other_wide, 1);
    train(&mut other_deep, 1);
    // One step from the same initial parameters: each group's update reads
    // only its own optimizer's arguments, so the deep part of `m` is that of
    // `other_wide` (another FTRL rate), and its wide part that of
    // `other_deep` (another Adagrad rate).
    for p in ["deep/kernel", "deep/bias", "head/kernel", "head/bias"] {
        assert_eq!(bits(&m, p), bits(&other_wide, p), "{p}");
    }
    for p in ["wide/kernel", "wide/bias"] {
        assert_eq!(bits(&m, p), bits(&other_deep, p), "{p}");
    }
}

#[test]
fn a_clip_with_a_var_list_clips_only_its_gradients() {
    // Clipping the deep part to a tiny global norm leaves the wide part's
    // step as it is without the clip.
    let mut clipped = model(
        "optimizer gradient_descent(learning_rate = 0.5)\nclip global_norm(1e-6, var_list = [\"deep/*\", \"head/*\"])\n",
    );
    let mut plain = model("optimizer gradient_descent(learning_rate = 0.5)\n");
    train(&mut clipped, 1);
    train(&mut plain, 1);
    for p in ["wide/kernel", "wide/bias"] {
        assert_eq!(bits(&clipped, p), bits(&plain, p), "{p}");
    }
    assert_ne!(bits(&clipped, "deep/kernel"), bits(&plain, "deep/kernel"));
}

/// The spec with `optimizers`, which must fail with `var-list`.
fn error(name: &str, optimizers: &str) -> String {
    let spec = format!("{HEAD}{optimizers}");
    cli::fails(SUITE, name, &spec, "var-list")
}

macro_rules! error_case {
    ($name:ident, $optimizers:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(error(stringify!($name), $optimizers));
        }
    };
}

error_case!(
    a_variable_in_no_var_list,
    "optimizer ftrl(learning_rate = 0.2, var_list = \"wide/*\")\noptimizer adagrad(learning_rate = 0.05, var_list = \"deep/*\")\n"
);
error_case!(
    a_variable_in_two_var_lists,
    "optimizer ftrl(learning_rate = 0.2, var_list = [\"wide/*\", \"head/bias\"])\noptimizer adagrad(learning_rate = 0.05, var_list = [\"deep/*\", \"head/*\"])\n"
);
error_case!(
    a_pattern_that_matches_nothing,
    "optimizer ftrl(learning_rate = 0.2, var_list = \"wide/*\")\noptimizer adagrad(learning_rate = 0.05, var_list = [\"dep/*\", \"head/*\"])\n"
);
error_case!(
    several_optimizers_without_var_lists,
    "optimizer ftrl(learning_rate = 0.2)\noptimizer adagrad(learning_rate = 0.05)\n"
);
error_case!(
    a_clip_pattern_that_matches_nothing,
    "optimizer adam(learning_rate = 0.01)\nclip global_norm(1.0, var_list = \"tower/*\")\n"
);
