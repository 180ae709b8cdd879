//! Recurrent layers (docs/language.md, "Recurrent layers"): `dynamic_rnn`'s
//! variables under TF's names and scopes, the shapes of its outputs and
//! states, and its caret errors. (Its numbers are checked against TF in
//! `interop/test_dynamic_rnn.py`, by finite differences in `gradcheck`,
//! and by training in `training`.)

use crate::cli;

use specc::Model;

const SUITE: &str = "recurrent";

/// Four features as two steps of two values.
const HEAD: &str = "data synthetic(rows = 8, features = 4, classes = 3)
label label: int
features { x = numeric(x0..x3) }
seq = reshape(x, [B, 2, 2])
";

fn model(body: &str) -> Model {
    let text = format!(
        "{HEAD}{body}
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train {{ batch = 8, steps = 1 }}
"
    );
    Model::from_source("recurrent", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn an_lstm_is_named_and_shaped_as_tfs() {
    let m = model(
        "outputs, c, h = dynamic_rnn(lstm_cell(5), seq)
assert_shape(outputs, [B, 2, 5])
assert_shape(c, [B, 5])
assert_shape(h, [B, 5])
params { W: [5, 3] = zeros }
logits = h @ W",
    );
    assert_eq!(
        m.parameter_names(),
        ["rnn/lstm_cell/kernel", "rnn/lstm_cell/bias", "W"]
    );
    let shape = |name: &str| {
        m.variables()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    // kernel [D + H, 4H] over concat([x, h]).
    assert_eq!(shape("rnn/lstm_cell/kernel"), [2 + 5, 20]);
    assert_eq!(shape("rnn/lstm_cell/bias"), [20]);
    assert_eq!(shape("rnn/lstm_cell/kernel/Adam"), [7, 20]);
}

#[test]
fn peepholes_and_a_projection_add_tfs_variables() {
    let m = model(
        "outputs, c, h = dynamic_rnn(lstm_cell(6, use_peepholes = true, cell_clip = 3, num_proj = 4, proj_clip = 2, forget_bias = 0.5), seq)
assert_shape(outputs, [B, 2, 4])
assert_shape(c, [B, 6])
assert_shape(h, [B, 4])
params { W: [4, 3] = zeros }
logits = h @ W",
    );
    let vars: Vec<(String, Vec<usize>)> = m
        .variables()
        .into_iter()
        .filter(|(n, _)| n.starts_with("rnn/") && !n.contains("/Adam"))
        .collect();
    let want: Vec<(String, Vec<usize>)> = [
        ("rnn/lstm_cell/kernel", vec![2 + 4, 24]),
        ("rnn/lstm_cell/bias", vec![24]),
        ("rnn/lstm_cell/w_i_diag", vec![6]),
        ("rnn/lstm_cell/w_f_diag", vec![6]),
        ("rnn/lstm_cell/w_o_diag", vec![6]),
        ("rnn/lstm_cell/projection/kernel", vec![6, 4]),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), s))
    .collect();
    assert_eq!(vars, want);
}

#[test]
fn gru_basic_and_stacked_cells_are_named_as_tfs() {
    let m = model(
        "o1, h1 = dynamic_rnn(gru_cell(3), seq, scope = \"encoder\")
o2, h2 = dynamic_rnn(basic_rnn_cell(4, activation = relu), o1, scope = \"decoder\")
o3, c30, h30, h31 = dynamic_rnn(multi_rnn_cell([lstm_cell(2), gru_cell(3)]), o2)
assert_shape(o1, [B, 2, 3])
assert_shape(o2, [B, 2, 4])
assert_shape(o3, [B, 2, 3])
assert_shape(c30, [B, 2])
assert_shape(h31, [B, 3])
logits = h31",
    );
    assert_eq!(
        m.parameter_names(),
        [
            "encoder/gru_cell/gates/kernel",
            "encoder/gru_cell/gates/bias",
            "encoder/gru_cell/candidate/kernel",
            "encoder/gru_cell/candidate/bias",
            "decoder/basic_rnn_cell/kernel",
            "decoder/basic_rnn_cell/bias",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias",
        ]
    );
}

#[test]
fn a_bidirectional_layer_is_named_as_tfs() {
    let m = model(
        "of, ob, cf, hf, hb = bidirectional_dynamic_rnn(lstm_cell(3), gru_cell(4), seq, sequence_length = reduce_sum(seq[:, :, 0] * 0 + 2, axis = 1))
assert_shape(of, [B, 2, 3])
assert_shape(ob, [B, 2, 4])
assert_shape(cf, [B, 3])
assert_shape(hb, [B, 4])
params { W: [7, 3] = zeros }
logits = concat([hf, hb], 1) @ W",
    );
    assert_eq!(
        m.parameter_names(),
        [
            "bidirectional_rnn/fw/lstm_cell/kernel",
            "bidirectional_rnn/fw/lstm_cell/bias",
            "bidirectional_rnn/bw/gru_cell/gates/kernel",
            "bidirectional_rnn/bw/gru_cell/gates/bias",
            "bidirectional_rnn/bw/gru_cell/candidate/kernel",
            "bidirectional_rnn/bw/gru_cell/candidate/bias",
            "W",
        ]
    );
}

/// Inside a block the layer's scope is under the call's; named cells keep
/// their names; lengths, an initial state and time-major inputs compile.
#[test]
fn scopes_nest_and_the_optional_arguments_compile() {
    let m = model(
        "block encoder(s, n) {
  o, c, h = dynamic_rnn(lstm_cell(n, name = \"cell\"), s, sequence_length = reduce_sum(s[:, :, 0] * 0 + 1, axis = 1))
  return h
}
h = encoder(seq, 3)
t = transpose(seq, [1, 0, 2])
o2, h2 = dynamic_rnn(gru_cell(3), t, initial_state = h, time_major = true, scope = \"tm\")
assert_shape(o2, [2, B, 3])
logits = h2",
    );
    assert_eq!(
        m.parameter_names(),
        [
            "encoder/rnn/cell/kernel",
            "encoder/rnn/cell/bias",
            "tm/gru_cell/gates/kernel",
            "tm/gru_cell/gates/bias",
            "tm/gru_cell/candidate/kernel",
            "tm/gru_cell/candidate/bias",
        ]
    );
}

/// The spec with `body` (which must fail with `code`) in place of the
/// base spec's hidden layer.
fn rnn_spec(body: &str) -> String {
    cli::replace(
        "h      = relu(x @ W1 + b1)",
        &format!("seq = reshape(x, [B, 2, 2])\n{body}\nh      = relu(x @ W1 + b1)"),
    )
}

macro_rules! error_case {
    ($name:ident, $body:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &rnn_spec($body), $code);
            insta::assert_snapshot!(err);
        }
    };
}

error_case!(
    a_second_unscoped_layer_is_tfs_already_exists,
    "o1, c1, h1 = dynamic_rnn(lstm_cell(3), seq)\no2, c2, h2 = dynamic_rnn(lstm_cell(3), seq)",
    "variable-scope"
);
error_case!(
    the_cell_is_a_cell_call,
    "o, s = dynamic_rnn(seq, seq)",
    "argument-type"
);
error_case!(
    an_lstm_returns_outputs_c_and_h,
    "o, s = dynamic_rnn(lstm_cell(3), seq)",
    "block-return"
);
error_case!(
    dynamic_rnn_is_not_an_expression,
    "o = dynamic_rnn(gru_cell(3), seq)",
    "block-return"
);
error_case!(a_cell_is_not_a_tensor, "o = lstm_cell(3)", "argument-type");
error_case!(
    inputs_are_batches_of_sequences,
    "o, s = dynamic_rnn(gru_cell(3), x)",
    "bad-shape"
);
error_case!(
    sequence_length_is_one_per_row,
    "o, s = dynamic_rnn(gru_cell(3), seq, sequence_length = x)",
    "shape-mismatch"
);
error_case!(
    an_initial_state_has_the_cells_parts,
    "o, cs, hs = dynamic_rnn(lstm_cell(3), seq, initial_state = x)",
    "shape-mismatch"
);
error_case!(
    proj_clip_needs_num_proj,
    "o, cs, hs = dynamic_rnn(lstm_cell(3, proj_clip = 1), seq)",
    "conflicting-arguments"
);
error_case!(
    an_unknown_activation,
    "o, s = dynamic_rnn(basic_rnn_cell(3, activation = softmax), seq)",
    "unknown-choice"
);
