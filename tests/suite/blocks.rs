//! Blocks, loops and tuples (docs/language.md, "Blocks"): each call's
//! variables under TF 1.x variable-scope names, sharing with `reuse`, static
//! arithmetic and shapes, and a model written with blocks training to the
//! same bits as the same model written out; the caret errors with a mark at
//! the call and inside the body.

use crate::cli;

use ndarray::{ArrayD, IxDyn};
use specc::Model;

const SUITE: &str = "blocks";

/// `tf.compat.v1.layers.dense` as a block (seeded, so a written-out spec
/// can make the same initial values).
const DENSE: &str = r#"
block dense(x, units, seed, activation = None, use_bias = true) {
  params { kernel: [shape(x)[-1], units] = glorot_uniform(seed = seed) }
  y = x @ kernel
  if use_bias {
    params { bias: [units] = zeros }
    y = y + bias
  }
  return activation(y)
}
"#;

const HEAD: &str = "data synthetic(rows = 8, features = 4, classes = 3)
label label: int
features { x = numeric(x0..x3) }
";
const TAIL: &str = "optimizer adam(learning_rate = 0.01)\ntrain { batch = 8, steps = 1 }\n";

fn model(text: &str) -> Model {
    Model::from_source("blocks", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A fixed batch of the synthetic data's shape: 8 rows of 4 features, labels 0..2.
fn batch() -> (ArrayD<f32>, ArrayD<f32>) {
    let x: Vec<f32> = (0..32).map(|i| ((i * 7) % 11) as f32 / 5.0 - 1.0).collect();
    let y: Vec<f32> = (0..8).map(|i| (i % 3) as f32).collect();
    (
        ArrayD::from_shape_vec(IxDyn(&[8, 4]), x).unwrap(),
        ArrayD::from_shape_vec(IxDyn(&[8]), y).unwrap(),
    )
}

/// Trains `steps` steps on [`batch`]; the losses.
fn train(m: &mut Model, steps: usize) -> Vec<f32> {
    let (x, y) = batch();
    let names: Vec<String> = m.inputs().into_iter().map(|i| i.name).collect();
    let feature = names.iter().find(|n| *n != "label").expect("a feature");
    (0..steps)
        .map(|_| {
            m.train_step(&[(feature, x.view()), ("label", y.view())])
                .expect("step")
        })
        .collect()
}

#[test]
fn calls_are_named_as_tf_variable_scopes() {
    let spec = format!(
        "{HEAD}{DENSE}
block tower(x) {{
  a = dense(x, 5, 1, activation = relu)
  return dense(a, 5, 2, activation = relu)
}}
h = dense(x, 6, 3)
t = tower(h)
u = tower(t)
logits = dense(u, 3, 4, name = \"logits\", use_bias = false)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let m = model(&spec);
    assert_eq!(
        m.parameter_names(),
        [
            "dense/kernel",
            "dense/bias",
            "tower/dense/kernel",
            "tower/dense/bias",
            "tower/dense_1/kernel",
            "tower/dense_1/bias",
            "tower_1/dense/kernel",
            "tower_1/dense/bias",
            "tower_1/dense_1/kernel",
            "tower_1/dense_1/bias",
            "logits/kernel",
        ]
    );
    let shapes: Vec<Vec<usize>> = m.variables().into_iter().map(|(_, s)| s).collect();
    assert!(shapes.contains(&vec![4, 6]) && shapes.contains(&vec![5, 3]));
    // Adam's slots follow the scoped names, as TF's do.
    assert!(m
        .variables()
        .iter()
        .any(|(n, _)| n == "tower_1/dense_1/kernel/Adam_1"));
}

/// `scope "conv2d"`: a block named otherwise (the `conv2d` op has the name)
/// scopes its calls as TF's `conv2d` layer: `conv2d/kernel`, `conv2d_1/kernel`.
#[test]
fn a_block_scope_names_calls_after_the_tf_layer() {
    let spec = format!(
        "{HEAD}
block conv2d_layer(x, filters) scope \"conv2d\" {{
  params {{ kernel: [3, 3, shape(x)[-1], filters] = glorot_uniform(seed = 1) }}
  return relu(conv2d(x, kernel, strides = 1, padding = \"SAME\"))
}}
img = reshape(x, [B, 2, 2, 1])
h = conv2d_layer(conv2d_layer(img, 4), 3)
logits = reduce_mean(h, axis = [1, 2])
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    assert_eq!(
        model(&spec).parameter_names(),
        ["conv2d/kernel", "conv2d_1/kernel"]
    );
}

#[test]
fn a_block_stack_trains_to_the_bits_of_the_model_written_out() {
    let blocks = format!(
        "{HEAD}{DENSE}
h = x
for i in range(3) {{
  h = dense(h, 8 // (i + 1) + 2, i + 1, activation = relu)
}}
logits = dense(h, 3, 9)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    // 8 // 1 + 2 = 10, 8 // 2 + 2 = 6, 8 // 3 + 2 = 4 units.
    let written = format!(
        "{HEAD}params {{
  W0: [4, 10] = glorot_uniform(seed = 1)
  b0: [10] = zeros
  W1: [10, 6] = glorot_uniform(seed = 2)
  b1: [6] = zeros
  W2: [6, 4] = glorot_uniform(seed = 3)
  b2: [4] = zeros
  W3: [4, 3] = glorot_uniform(seed = 9)
  b3: [3] = zeros
}}
h0 = relu(x @ W0 + b0)
h1 = relu(h0 @ W1 + b1)
h2 = relu(h1 @ W2 + b2)
logits = h2 @ W3 + b3
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let (mut a, mut b) = (model(&blocks), model(&written));
    let (la, lb) = (train(&mut a, 5), train(&mut b, 5));
    assert_eq!(la, lb, "losses");
    assert!(la[4] < la[0], "it trains: {la:?}");
    let pairs = [
        ("dense/kernel", "W0"),
        ("dense_1/bias", "b1"),
        ("dense_2/kernel", "W2"),
        ("dense_3/kernel", "W3"),
        ("dense_3/bias", "b3"),
    ];
    crate::common::same_variables(&a, &b, &pairs);
}

#[test]
fn reuse_shares_one_set_of_variables() {
    let shared = format!(
        "{HEAD}{DENSE}
a = dense(x, 3, 1, name = \"shared\")
b = dense(x * 2, 3, 1, name = \"shared\", reuse = true)
loss = mean(sparse_softmax_cross_entropy(label, a + b))
{TAIL}"
    );
    let written = format!(
        "{HEAD}params {{
  W: [4, 3] = glorot_uniform(seed = 1)
  c: [3] = zeros
}}
loss = mean(sparse_softmax_cross_entropy(label, (x @ W + c) + ((x * 2) @ W + c)))
{TAIL}"
    );
    let (mut a, mut b) = (model(&shared), model(&written));
    assert_eq!(a.parameter_names(), ["shared/kernel", "shared/bias"]);
    assert_eq!(train(&mut a, 4), train(&mut b, 4));
    let (pa, pb) = (
        a.parameter("shared/kernel").unwrap(),
        b.parameter("W").unwrap(),
    );
    assert!(pa
        .iter()
        .zip(pb.iter())
        .all(|(x, y)| x.to_bits() == y.to_bits()));
}

#[test]
fn tuples_ifs_and_static_sizes() {
    let spec = format!(
        "{HEAD}
block split_heads(x, heads, even) {{
  d = shape(x)[-1]
  params {{ W: [d, d // heads * heads + d % heads] = ones }}
  if even % 2 == 0 {{
    return x @ W, x
  }} else {{
    return x, x @ W
  }}
}}
a, b = split_heads(x, 3, 4)
c, e = split_heads(x, 3, 5)
loss = mean(sparse_softmax_cross_entropy(label, a[:, 0:3] + b[:, 0:3] + c[:, 0:3] + e[:, 0:3]))
{TAIL}"
    );
    let m = model(&spec);
    // 4 // 3 * 3 + 4 % 3 = 4.
    assert_eq!(
        m.variables()
            .into_iter()
            .filter(|(n, _)| !n.contains("Adam") && !n.contains("power") && n != "global_step")
            .collect::<Vec<_>>(),
        [
            ("split_heads/W".to_string(), vec![4, 4]),
            ("split_heads_1/W".to_string(), vec![4, 4]),
        ]
    );
}

/// `and` / `or` join static conditions: each block call takes the branch
/// its arguments select (the variables' shapes say which).
#[test]
fn static_conditions_join_with_and_and_or() {
    let spec = format!(
        "{HEAD}
block pick(x, a, b) {{
  if a > 1 and b > 1 or a == 0 {{
    params {{ W: [4, 5] = ones }}
  }} else {{
    params {{ W: [4, 6] = ones }}
  }}
  return x @ W
}}
p = pick(x, 2, 2)
q = pick(x, 2, 1)
r = pick(x, 0, 1)
loss = mean(sparse_softmax_cross_entropy(label, p[:, 0:3] + q[:, 0:3] + r[:, 0:3]))
{TAIL}"
    );
    let m = model(&spec);
    let shapes: Vec<_> = m
        .variables()
        .into_iter()
        .filter(|(n, _)| n.ends_with("/W"))
        .collect();
    assert_eq!(
        shapes,
        [
            ("pick/W".to_string(), vec![4, 5]),
            ("pick_1/W".to_string(), vec![4, 6]),
            ("pick_2/W".to_string(), vec![4, 5]),
        ]
    );
}

/// An optional tensor argument (`y = None`) is tested with `y != None`
/// (Python's `is not None`): given, the block adds it; not given, it does
/// not; the same bits as the model written out.
#[test]
fn an_optional_argument_is_compared_with_none() {
    let blocks = format!(
        "{HEAD}{DENSE}
block residual(x, y = None, scale = None) {{
  if y != None {{
    x = x + y
  }}
  if scale == None {{
    return x
  }}
  return x * scale
}}
logits = dense(residual(x, x) + residual(x, scale = 3.0), 3, 1)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let written = format!(
        "{HEAD}{DENSE}
logits = dense((x + x) + x * 3.0, 3, 1)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let (mut a, mut b) = (model(&blocks), model(&written));
    assert_eq!(train(&mut a, 3), train(&mut b, 3));
}

#[test]
fn moments_binds_mean_and_variance_as_its_two_builtins() {
    let tuple = format!(
        "{HEAD}{DENSE}
m, v = moments(x, [0])
logits = dense((x - m) * rsqrt(v + 0.001), 3, 1)
loss = mean(sparse_softmax_cross_entropy(label, logits))
{TAIL}"
    );
    let apart = tuple.replace(
        "m, v = moments(x, [0])",
        "m = moments_mean(x, [0])\nv = moments_variance(x, [0])",
    );
    assert_ne!(tuple, apart);
    let (mut a, mut b) = (model(&tuple), model(&apart));
    assert_eq!(train(&mut a, 4), train(&mut b, 4));
}

#[test]
fn a_metric_can_call_a_block() {
    let dir = cli::workdir(SUITE, "metric_block");
    let spec = block_spec("").replace(
        "metrics { accuracy(y, argmax(logits)) }",
        "metrics { accuracy(y, argmax(dense(h, 3, 7, name = \"probe\"))) }",
    );
    assert!(spec.contains("probe"), "{spec}");
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, out, err) = cli::specc(&dir, &["compile", "--emit", "ir", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("probe/kernel"), "{out}");
}

#[test]
fn an_output_can_call_a_block() {
    let dir = cli::workdir(SUITE, "output_block");
    let spec = block_spec("").replace(
        "metrics {",
        "outputs { probs = softmax(dense(h, 3, 7, name = \"head\")) }\nmetrics {",
    );
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, out, err) = cli::specc(&dir, &["compile", "--emit", "ir", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("head/kernel"), "{out}");
}

/// A spec with the dense block and `body` (which must fail with `code`).
fn block_spec(body: &str) -> String {
    let base = cli::BASE.replace(
        "h      = relu(x @ W1 + b1)",
        &format!("{DENSE}\nh      = relu(x @ W1 + b1)\n{body}"),
    );
    assert_ne!(base, cli::BASE);
    base
}

macro_rules! error_case {
    ($name:ident, $body:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &block_spec($body), $code);
            insta::assert_snapshot!(err);
        }
    };
}

error_case!(
    a_shape_error_inside_marks_the_call,
    "block project(t) {\n  params { V: [3, 2] = zeros }\n  return t @ V\n}\nz = project(x)",
    "matmul-shape"
);
error_case!(
    a_condition_that_is_not_a_boolean,
    "bad = dense(x, 5, 1, activation = relu, use_bias = [1, 2])",
    "argument-type"
);
error_case!(
    name_is_a_keyword_argument,
    "z = dense(x, 5, 1, relu, true, \"top\")",
    "wrong-arity"
);
error_case!(
    a_block_calling_itself,
    "block deep(t) {\n  return deep(t)\n}\nz = deep(x)",
    "recursive-block"
);
error_case!(
    a_call_with_too_many_arguments,
    "z = dense(x, 5, 1, relu, true, 7)",
    "wrong-arity"
);
error_case!(
    an_unknown_argument_of_a_block,
    "z = dense(x, 5, 1, activaton = relu)",
    "unknown-argument"
);
error_case!(
    two_calls_of_one_name,
    "z1 = dense(x, 5, 1, name = \"same\")\nz2 = dense(x, 5, 1, name = \"same\")",
    "variable-scope"
);
error_case!(
    reuse_of_a_scope_never_made,
    "z = dense(x, 5, 1, name = \"nothing\", reuse = true)",
    "variable-scope"
);
error_case!(
    reuse_with_another_shape,
    "z1 = dense(x, 5, 1, name = \"s\")\nz2 = dense(x, 6, 1, name = \"s\", reuse = true)",
    "variable-scope"
);
error_case!(
    reuse_without_a_name,
    "z = dense(x, 5, 1, reuse = true)",
    "variable-scope"
);
error_case!(
    a_tuple_of_the_wrong_length,
    "p, q = dense(x, 5, 1)",
    "block-return"
);
error_case!(
    moments_bound_to_three_names,
    "p, q, r = moments(x, [0])",
    "block-return"
);
error_case!(a_tuple_from_a_builtin, "p, q = relu(x)", "block-return");
error_case!(
    split_into_parts_that_do_not_divide,
    "p, q, r = split(x, 3, axis = 1)",
    "argument-out-of-range"
);
error_case!(split_the_batch, "p, q = split(x, 2)", "bad-axis");
error_case!(
    unstack_bound_to_too_few_names,
    "p, q = unstack(x, axis = 1)",
    "block-return"
);
error_case!(
    return_at_the_top_level,
    "for i in range(2) {\n  return x\n}",
    "block-return"
);
error_case!(
    a_block_named_as_a_builtin,
    "block relu(t) {\n  return t\n}",
    "duplicate-name"
);
error_case!(
    params_in_a_top_level_loop,
    "for i in range(2) {\n  params { V: [4, 4] = zeros }\n}",
    "variable-scope"
);
error_case!(
    a_condition_on_a_tensor,
    "block pick(t) {\n  if t > 0 {\n    return t\n  }\n  return t\n}\nz = pick(x)",
    "argument-type"
);
error_case!(
    a_loop_over_a_tensor,
    "for i in range(x) {\n  z = x\n}",
    "argument-type"
);
error_case!(floor_division_of_tensors, "z = x // 2", "dtype-mismatch");
error_case!(
    rebinding_outside_a_loop,
    "z = x\nz = x * 2",
    "duplicate-name"
);
error_case!(
    binding_a_loop_variable,
    "for i in range(2) {\n  i = x\n}",
    "duplicate-name"
);
error_case!(
    the_batch_size_is_not_static,
    "block wide(t) {\n  params { V: [shape(t)[0], 2] = zeros }\n  return V\n}\nz = wide(x)",
    "bad-shape"
);
error_case!(
    a_block_sees_only_its_arguments,
    "block leak(t) {\n  return t @ W1\n}\nz = leak(x)",
    "unknown-name"
);
error_case!(
    loops_nested_too_deep,
    "z = x\nfor i in range(1000) {\n  for j in range(1000) {\n    z = z * 1.0\n  }\n}",
    "expansion-too-large"
);

#[test]
fn loops_and_blocks_print_in_the_ast() {
    let dir = cli::workdir(SUITE, "emit_ast");
    let spec = block_spec(
        "block pair(t, n = 2) {\n  if n > 1 {\n    return t, t * 2\n  } else {\n    return t, t\n  }\n}\nfor i in range(2) {\n  z = dense(h, 4, i, activation = relu)\n}\np, q = pair(x)",
    );
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, out, err) = cli::specc(&dir, &["compile", "--emit", "ast", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
    insta::assert_snapshot!(out);
}
