//! specc's layer library (`layers.dense`, `layers.conv2d`, ...;
//! `grammar/library/layers.spec`): each layer's variables named as TF's
//! layers name them, each layer computing to the bits of the same model
//! written out with builtins, and errors inside a layer rendered against
//! the library's text with a mark at the spec's call.

use crate::cli;
use crate::common::same_variables;

use ndarray::{ArrayD, IxDyn};
use specc::Model;

const SUITE: &str = "layer_library";

const HEAD: &str = "data synthetic(rows = 8, features = 4, classes = 3)
label label: int
features { x = numeric(x0..x3) }
";
const TAIL: &str = "optimizer adam(learning_rate = 0.01)\ntrain { batch = 8, steps = 1 }\n";

fn model(text: &str) -> Model {
    Model::from_source("layer_library", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Trains `steps` steps on a fixed batch of 8 rows of 4 features; the losses.
fn train(m: &mut Model, steps: usize) -> Vec<f32> {
    let x: Vec<f32> = (0..32).map(|i| ((i * 7) % 11) as f32 / 5.0 - 1.0).collect();
    let y: Vec<f32> = (0..8).map(|i| (i % 3) as f32).collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[8, 4]), x).unwrap();
    let y = ArrayD::from_shape_vec(IxDyn(&[8]), y).unwrap();
    (0..steps)
        .map(|_| {
            m.train_step(&[("x", x.view()), ("label", y.view())])
                .expect("step")
        })
        .collect()
}

#[test]
fn every_layer_names_its_variables_as_tf_does() {
    let spec = format!(
        "{HEAD}img = reshape(x, [B, 2, 2, 1])
c = layers.conv2d(img, 4, 3, padding = \"same\", activation = relu)
n = layers.batch_normalization(c)
p = layers.max_pooling2d(n, 2, 2)
q = layers.average_pooling2d(layers.conv2d(n, 2, [1, 2], use_bias = false), 1, 1)
f = layers.layer_normalization(layers.flatten(p))
e = layers.embedding(label, 3, 2)
h = layers.dropout(layers.dense(f, 5, activation = relu), rate = 0.1)
logits = layers.dense(concat([h, e, layers.flatten(q)], 1), 3, name = \"logits\")
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let m = model(&spec);
    let shapes: Vec<(String, Vec<usize>)> = m
        .variables()
        .into_iter()
        .filter(|(n, _)| !n.contains("Adam") && !n.contains("power"))
        .collect();
    let expected: Vec<(&str, Vec<usize>)> = vec![
        ("conv2d/kernel", vec![3, 3, 1, 4]),
        ("conv2d/bias", vec![4]),
        ("batch_normalization/gamma", vec![4]),
        ("batch_normalization/beta", vec![4]),
        ("batch_normalization/moving_mean", vec![4]),
        ("batch_normalization/moving_variance", vec![4]),
        ("conv2d_1/kernel", vec![1, 2, 4, 2]),
        ("layer_normalization/gamma", vec![4]),
        ("layer_normalization/beta", vec![4]),
        ("embedding/embeddings", vec![3, 2]),
        ("dense/kernel", vec![4, 5]),
        ("dense/bias", vec![5]),
        ("logits/kernel", vec![5 + 2 + 4, 3]),
        ("logits/bias", vec![3]),
    ];
    let got: Vec<(&str, Vec<usize>)> = shapes
        .iter()
        .map(|(n, s)| (n.as_str(), s.clone()))
        .collect();
    assert_eq!(got, expected);
    // The moving statistics are not trainable (TF's batch_normalization).
    let trainable = m.parameter_names();
    assert!(
        !trainable.iter().any(|n| n.contains("moving")),
        "{trainable:?}"
    );
    assert!(trainable.contains(&"batch_normalization/gamma".to_string()));
    // Keras's Embedding initializer: uniform in [-0.05, 0.05].
    let emb = m.parameter("embedding/embeddings").unwrap();
    assert!(emb.iter().all(|v| v.abs() <= 0.05) && emb.iter().any(|v| *v != 0.0));
}

/// `layers.multi_head_attention` makes Keras's variables: an EinsumDense
/// per projection under `query`, `key`, `value` and `attention_output`.
#[test]
fn multi_head_attention_names_its_variables_as_keras_does() {
    let spec = format!(
        "{HEAD}seq = reshape(x, [B, 2, 2])
a = layers.multi_head_attention(seq, seq, 3, 5, value_dim = 4)
b = layers.multi_head_attention(a, seq, 2, 3, use_bias = false, name = \"cross\")
logits = layers.dense(reshape(b, [B, 4]), 3)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let m = model(&spec);
    let got: Vec<(String, Vec<usize>)> = m
        .variables()
        .into_iter()
        .filter(|(n, _)| !n.contains("Adam") && !n.contains("power"))
        .collect();
    let mha = "multi_head_attention";
    let expected: Vec<(String, Vec<usize>)> = vec![
        (format!("{mha}/query/kernel"), vec![2, 3, 5]),
        (format!("{mha}/query/bias"), vec![3, 5]),
        (format!("{mha}/key/kernel"), vec![2, 3, 5]),
        (format!("{mha}/key/bias"), vec![3, 5]),
        (format!("{mha}/value/kernel"), vec![2, 3, 4]),
        (format!("{mha}/value/bias"), vec![3, 4]),
        (format!("{mha}/attention_output/kernel"), vec![3, 4, 2]),
        (format!("{mha}/attention_output/bias"), vec![2]),
        ("cross/query/kernel".into(), vec![2, 2, 3]),
        ("cross/key/kernel".into(), vec![2, 2, 3]),
        ("cross/value/kernel".into(), vec![2, 2, 3]),
        ("cross/attention_output/kernel".into(), vec![2, 3, 2]),
        ("dense/kernel".into(), vec![4, 3]),
        ("dense/bias".into(), vec![3]),
    ];
    assert_eq!(got, expected);
}

#[test]
fn dense_layers_train_to_the_bits_of_the_dense_written_out() {
    let layers = format!(
        "{HEAD}h = layers.dense(x, 6, activation = relu, kernel_initializer = glorot_uniform(seed = 1))
logits = layers.dense(h, 3, kernel_initializer = glorot_normal(seed = 2), bias_initializer = ones)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let written = format!(
        "{HEAD}params {{
  W1: [4, 6] = glorot_uniform(seed = 1)
  b1: [6] = zeros
  W2: [6, 3] = glorot_normal(seed = 2)
  b2: [3] = ones
}}
h = relu(x @ W1 + b1)
logits = h @ W2 + b2
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let (mut a, mut b) = (model(&layers), model(&written));
    let (la, lb) = (train(&mut a, 5), train(&mut b, 5));
    assert_eq!(la, lb, "losses");
    assert!(la[4] < la[0], "it trains: {la:?}");
    same_variables(
        &a,
        &b,
        &[
            ("dense/kernel", "W1"),
            ("dense/bias", "b1"),
            ("dense_1/kernel", "W2"),
            ("dense_1/bias", "b2"),
        ],
    );
}

#[test]
fn conv_norm_and_pooling_layers_train_to_the_bits_written_out() {
    let layers = format!(
        "{HEAD}img = reshape(x, [B, 2, 2, 1])
c = layers.conv2d(img, 4, [3, 3], strides = 1, padding = \"same\", activation = relu, kernel_initializer = glorot_uniform(seed = 1))
n = layers.batch_normalization(c, momentum = 0.9)
p = layers.max_pooling2d(n, 2, 2)
f = layers.layer_normalization(layers.flatten(p), epsilon = 0.01)
logits = layers.dense(f, 3, kernel_initializer = glorot_uniform(seed = 2))
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let written = format!(
        "{HEAD}params {{
  K: [3, 3, 1, 4] = glorot_uniform(seed = 1)
  cb: [4] = zeros
  gamma: [4] = ones
  beta: [4] = zeros
  mean: [4] = zeros, trainable = false
  variance: [4] = ones, trainable = false
  lg: [4] = ones
  lb: [4] = zeros
  W: [4, 3] = glorot_uniform(seed = 2)
  b: [3] = zeros
}}
img = reshape(x, [B, 2, 2, 1])
c = relu(bias_add(conv2d(img, K, strides = 1, padding = \"SAME\"), cb))
n = batch_norm(c, gamma, beta, mean, variance, momentum = 0.9, epsilon = 0.001)
p = max_pool2d(n, 2, strides = 2, padding = \"VALID\")
f = layer_normalization(reshape(p, [B, 4]), lg, lb, epsilon = 0.01)
logits = f @ W + b
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let (mut a, mut b) = (model(&layers), model(&written));
    let (la, lb) = (train(&mut a, 5), train(&mut b, 5));
    assert_eq!(la, lb, "losses");
    assert!(la[4] < la[0], "it trains: {la:?}");
    same_variables(
        &a,
        &b,
        &[
            ("conv2d/kernel", "K"),
            ("conv2d/bias", "cb"),
            ("batch_normalization/gamma", "gamma"),
            ("batch_normalization/moving_mean", "mean"),
            ("batch_normalization/moving_variance", "variance"),
            ("layer_normalization/gamma", "lg"),
            ("layer_normalization/beta", "lb"),
            ("dense/kernel", "W"),
        ],
    );
}

#[test]
fn the_library_prints_whole_or_by_block() {
    let dir = cli::workdir(SUITE, "prints");
    let (status, out, err) = cli::specc(&dir, &["library"]);
    assert_eq!(status, 0, "{err}");
    let whole: String = specc_grammar::library::FILES
        .iter()
        .map(|f| f.text)
        .collect();
    assert_eq!(out, whole);
    let (status, out, _) = cli::specc(&dir, &["library", "optimizers"]);
    assert_eq!(status, 0);
    assert_eq!(
        out,
        specc_grammar::library::file("optimizers").unwrap().text
    );
    let (status, out, _) = cli::specc(&dir, &["library", "optimizers.lamb"]);
    assert_eq!(status, 0);
    assert!(
        out.starts_with("# optax.lamb") && out.contains("optimizer_def lamb("),
        "{out}"
    );
    assert!(!out.contains("optimizer_def adamw("), "{out}");
    let (status, out, _) = cli::specc(&dir, &["library", "layers.conv2d"]);
    assert_eq!(status, 0);
    assert!(out.starts_with("# tf.compat.v1.layers.conv2d"), "{out}");
    assert!(out.contains("block conv2d(") && !out.contains("block dense("));
    let (status, _, err) = cli::specc(&dir, &["library", "conv2"]);
    assert_ne!(status, 0);
    assert!(err.contains("did you mean `conv2d`?"), "{err}");
}

fn spec_with(body: &str) -> String {
    format!("{HEAD}{body}\nloss = mean(sparse_softmax_cross_entropy(label, logits))\n{TAIL}")
}

macro_rules! error_case {
    ($name:ident, $body:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &spec_with($body), $code);
            insta::assert_snapshot!(err);
        }
    };
}

error_case!(
    an_error_inside_a_layer_points_into_the_library_and_at_the_call,
    "logits = layers.conv2d(x, 3, 3)",
    "bad-shape"
);
error_case!(
    an_unknown_layer_suggests_the_closest,
    "logits = layers.dens(x, 3)",
    "unknown-function"
);
error_case!(
    an_unknown_library,
    "logits = layer.dense(x, 3)",
    "unknown-function"
);
error_case!(
    a_layer_without_its_required_argument,
    "logits = layers.dense(x)",
    "missing-argument"
);
error_case!(
    a_kernel_size_of_the_wrong_length,
    "img = reshape(x, [B, 2, 2, 1])\nc = layers.conv2d(img, 3, [1, 2, 3])\nlogits = layers.dense(layers.flatten(c), 3)",
    "argument-type"
);
