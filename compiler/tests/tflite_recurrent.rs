//! Recurrent layers exported to TF Lite (UNIDIRECTIONAL_SEQUENCE_LSTM and
//! _RNN, a GRU unrolled into builtins) and run by specc's TF Lite
//! interpreter, against the reference interpreter of the IR
//! (`specc_compiler::interp`, float64) with the same weights and inputs:
//! 1e-5 relative. Every case reads `x [B, T·D]` as `[B, T, D]` and the
//! lengths `n [B, 1]` (0 and T among them); the refusals are errors at the
//! layer's call. (LiteRT runs the same exports in
//! `interop/test_tflite_rnn.py`.)

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use specc_compiler::export::tflite::{export_tflite, TfliteExport};
use specc_compiler::interp::{self, Tensor};
use specc_grammar::{Code, Diagnostic, SourceFile};
use specc_tflite::BuiltinOperator as B;

use crate::tflite_export::{builtins, param_tensors, values};

const BATCH: usize = 6;
const STEPS: usize = 4;
const DEPTH: usize = 3;
/// Each row's length: 0 and T among them.
const LENGTHS: [f32; BATCH] = [2.0, 0.0, 4.0, 1.0, 3.0, 4.0];

struct Case {
    text: String,
    model: specc_compiler::Model,
    params: HashMap<String, ArrayD<f32>>,
}

/// A spec whose `body` binds the exported names from `seq [B, T, D]` and
/// `len [B]`; every variable gets deterministic values in ±0.8.
fn case(body: &str) -> Case {
    case_scaled(body, 0.8)
}

/// [`case`] with the variables' values in ±`scale`.
fn case_scaled(body: &str, scale: f32) -> Case {
    let x = STEPS * DEPTH;
    let text = format!(
        "model t\ndata synthetic(rows = 8, features = {})\nlabel label: int\n\
         features {{\n  x = numeric(x0..x{})\n  n = numeric(x{x})\n}}\n\
         seq = reshape(x, [B, {STEPS}, {DEPTH}])\nlen = cast(reshape(n, [B]), int)\n\
         {body}\nloss = mean(reduce_sum(logits, 1))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 4, steps = 1 }}\n",
        x + 1,
        x - 1
    );
    let model =
        specc_compiler::check(&SourceFile::new("t.spec", text.clone())).unwrap_or_else(|d| {
            panic!(
                "{:?}\n{text}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    let params = model
        .graph
        .vars
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let dims: Vec<usize> = l.shape.concrete(1).iter().map(|&d| d as usize).collect();
            let len = dims.iter().product();
            let v = values(len, k as u64 + 11)
                .iter()
                .map(|v| v * scale)
                .collect();
            (
                l.name.clone(),
                ArrayD::from_shape_vec(IxDyn(&dims), v).unwrap(),
            )
        })
        .collect();
    Case {
        text,
        model,
        params,
    }
}

fn node(c: &Case, name: &str) -> specc_compiler::ir::NodeId {
    c.model
        .bindings
        .iter()
        .find(|b| b.0 == name)
        .unwrap_or_else(|| panic!("no binding {name}"))
        .1
}

fn export(
    c: &Case,
    outputs: &[&str],
    batch: Option<u32>,
) -> Result<specc_tflite::Model, Diagnostic> {
    let outs: Vec<(String, specc_compiler::ir::NodeId)> = outputs
        .iter()
        .map(|&o| (o.to_string(), node(c, o)))
        .collect();
    let inputs: Vec<String> = c
        .model
        .graph
        .inputs
        .iter()
        .map(|l| l.name.clone())
        .collect();
    let inputs: Vec<String> = inputs.into_iter().filter(|n| n != "label").collect();
    export_tflite(&TfliteExport {
        graph: &c.model.graph,
        params: &c.params,
        inputs: &inputs,
        outputs: &outs,
        batch,
    })
}

/// Exports `outputs` with a fixed batch, runs both interpreters on one
/// batch, compares every value; the model (read back from its bytes).
fn check(c: &Case, outputs: &[&str]) -> specc_tflite::Model {
    let model = export(c, outputs, Some(BATCH as u32)).unwrap_or_else(|d| panic!("{}", d.message));
    let model = specc_tflite::from_bytes(&specc_tflite::to_bytes(&model)).expect("reads back");
    let x = values(BATCH * STEPS * DEPTH, 99);
    let g = &c.model.graph;
    let mut feeds = Vec::new();
    let mut inputs = Vec::new();
    for l in &g.inputs {
        let (dims, data): (Vec<usize>, Vec<f32>) = match l.name.as_str() {
            "x" => (vec![BATCH, STEPS * DEPTH], x.clone()),
            "n" => (vec![BATCH, 1], LENGTHS.to_vec()),
            _ => (vec![BATCH], vec![0.0; BATCH]),
        };
        inputs.push(Tensor::new(
            dims.clone(),
            data.iter().map(|&v| v as f64).collect(),
        ));
        if l.name != "label" {
            feeds.push(ArrayD::from_shape_vec(IxDyn(&dims), data).unwrap());
        }
    }
    let views: Vec<_> = feeds.iter().map(|f| f.view()).collect();
    let got = specc_tflite::run(&model, &views).expect("runs");
    let vars = param_tensors(g, &c.params);
    let env = interp::Env {
        inputs: &inputs,
        vars: &vars,
        batch: BATCH,
        global_step: 0.0,
    };
    let roots: Vec<_> = outputs.iter().map(|o| node(c, o)).collect();
    let want = interp::eval(g, &env, &roots);
    for (name, (got, want)) in outputs.iter().zip(got.iter().zip(&want)) {
        assert_eq!(got.shape(), want.dims.as_slice(), "{name}: shape");
        let scale = want
            .data
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(1e-3);
        for (i, (&a, &b)) in got.iter().zip(&want.data).enumerate() {
            let tol = 1e-5 * b.abs().max(scale);
            assert!(
                (a as f64 - b).abs() <= tol,
                "{name}[{i}]: tflite {a} vs reference {b}\n{}",
                c.text
            );
        }
    }
    model
}

fn count(m: &specc_tflite::Model, op: B) -> usize {
    builtins(m).into_iter().filter(|&b| b == op).count()
}

#[test]
fn an_lstm_is_one_unidirectional_sequence_lstm() {
    let c = case("outputs, c, h = dynamic_rnn(lstm_cell(5), seq)\nlogits = h");
    let m = check(&c, &["outputs", "h"]);
    assert_eq!(count(&m, B::UnidirectionalSequenceLstm), 1);
    let g = &m.subgraphs[0];
    let op = g
        .operators
        .iter()
        .find(|o| m.builtin(o) == Some(B::UnidirectionalSequenceLstm))
        .unwrap();
    // x, then the input weights of the input, forget, cell and output gates.
    assert_eq!(g.tensors[op.inputs[1] as usize].shape, [5, DEPTH as i32]);
    assert_eq!(g.tensors[op.inputs[5] as usize].shape, [5, 5]);
    // The state: variable tensors of the fixed batch.
    for i in [18, 19] {
        let t = &g.tensors[op.inputs[i] as usize];
        assert!(t.is_variable, "input {i} is a variable tensor");
        assert_eq!(t.shape, [BATCH as i32, 5]);
    }
}

#[test]
fn an_lstm_with_every_option_and_lengths() {
    let c = case(
        "outputs, c, h = dynamic_rnn(lstm_cell(6, use_peepholes = true, cell_clip = 0.4, num_proj = 4, proj_clip = 0.3, forget_bias = 0.5, activation = relu), seq, sequence_length = len)\nlogits = h",
    );
    let m = check(&c, &["outputs", "h"]);
    assert_eq!(count(&m, B::UnidirectionalSequenceLstm), 1);
    assert_eq!(count(&m, B::BatchMatmul), 2, "the lengths' one-hot steps");
}

#[test]
fn a_time_major_stack_of_lstms() {
    let c = case(
        "outputs, c0, h0, c1, h1 = dynamic_rnn(multi_rnn_cell([lstm_cell(5), lstm_cell(3, use_peepholes = true)]), transpose(seq, [1, 0, 2]), sequence_length = len, time_major = true)\nlogits = h1",
    );
    let m = check(&c, &["outputs", "h0", "h1"]);
    assert_eq!(count(&m, B::UnidirectionalSequenceLstm), 2);
}

#[test]
fn a_basic_cell_is_one_unidirectional_sequence_rnn() {
    for (act, lengths) in [("tanh", ""), ("relu", ", sequence_length = len")] {
        let c = case(&format!(
            "outputs, h = dynamic_rnn(basic_rnn_cell(5, activation = {act}), seq{lengths})\nlogits = h"
        ));
        let m = check(&c, &["outputs", "h"]);
        assert_eq!(count(&m, B::UnidirectionalSequenceRnn), 1, "{act}");
    }
}

#[test]
fn a_gru_is_unrolled_into_builtins() {
    let c = case(
        "outputs, h = dynamic_rnn(gru_cell(5, bias_initializer = random_uniform(minval = -0.5, maxval = 0.5)), seq, sequence_length = len)\nlogits = h",
    );
    let m = check(&c, &["outputs", "h"]);
    // The input projection (the gates', the candidate's), then two products a step.
    assert_eq!(
        count(&m, B::FullyConnected),
        2 + 2 * STEPS,
        "{:?}",
        builtins(&m)
    );
    assert_eq!(count(&m, B::SelectV2), STEPS, "the lengths' copy-through");
}

#[test]
fn a_gru_with_an_initial_state_and_every_activation() {
    for act in ["tanh", "relu", "sigmoid", "linear"] {
        let c = case(&format!(
            "params {{ Ws: [{}, 4] = zeros }}\nstart = tanh(x @ Ws)\noutputs, h = dynamic_rnn(gru_cell(4, activation = {act}), seq, initial_state = [start])\nlogits = h",
            STEPS * DEPTH
        ));
        check(&c, &["outputs", "h"]);
    }
}

#[test]
fn a_bidirectional_layer_is_two_directions() {
    let c = case(
        "fo, bo, fc, fh, bh = bidirectional_dynamic_rnn(lstm_cell(4), gru_cell(3), seq, sequence_length = len)\nlogits = concat([fh, bh], 1)",
    );
    let m = check(&c, &["fo", "bo", "logits"]);
    assert_eq!(count(&m, B::UnidirectionalSequenceLstm), 1);
}

/// The exported text under the error's span.
fn refused(c: &Case, outputs: &[&str], batch: Option<u32>) -> (String, String) {
    let e = export(c, outputs, batch).map(|_| ()).unwrap_err();
    assert_eq!(e.code, Code::TfliteUnsupported, "{}", e.message);
    (
        c.text[e.span.start as usize..e.span.end as usize].to_string(),
        e.message,
    )
}

#[test]
fn the_fused_operators_need_a_fixed_batch() {
    let c = case("outputs, c, h = dynamic_rnn(lstm_cell(4), seq)\nlogits = h");
    let (at, message) = refused(&c, &["logits"], None);
    assert_eq!(at, "dynamic_rnn(lstm_cell(4), seq)");
    assert!(message.contains("fixed batch size"), "{message}");
}

#[test]
fn what_tf_lite_cannot_express_is_refused_at_the_call() {
    let cases = [
        (
            "params { Ws: [12, 4] = zeros }\nst = tanh(x @ Ws)\noutputs, c, h = dynamic_rnn(lstm_cell(4), seq, initial_state = [st, st])\nlogits = h",
            "logits",
            "initial_state",
        ),
        (
            "outputs, c, h = dynamic_rnn(lstm_cell(4), seq)\nlogits = c",
            "logits",
            "cell state `c`",
        ),
        (
            "outputs, h = dynamic_rnn(basic_rnn_cell(4, activation = sigmoid), seq)\nlogits = h",
            "logits",
            "not a sigmoid",
        ),
    ];
    for (body, out, why) in cases {
        let c = case(body);
        let (at, message) = refused(&c, &[out], Some(BATCH as u32));
        assert!(at.starts_with("dynamic_rnn("), "{at}: {message}");
        assert!(message.contains(why), "{message}");
    }
}

#[test]
fn dynamic_range_quantization_makes_the_sequence_operators_hybrid() {
    // Weights of glorot's size, so the layers neither saturate nor explode.
    let c = case_scaled(
        "outputs, c, h = dynamic_rnn(lstm_cell(40, use_peepholes = true, num_proj = 30), seq)\no2, h2 = dynamic_rnn(basic_rnn_cell(40), outputs, scope = \"second\")\nlogits = h2",
        0.2,
    );
    let float = check(&c, &["logits"]);
    let (q, n) = specc_tflite::quantize::quantize_dynamic(&float).expect("quantizes");
    // LSTM: 8 matrices, 3 peepholes, the projection; RNN: 2 matrices.
    assert_eq!(n, 12 + 2);
    let g = &q.subgraphs[0];
    for op in &g.operators {
        let b = q.builtin(op).unwrap();
        let version = q.operator_codes[op.opcode_index as usize].version;
        match b {
            B::UnidirectionalSequenceLstm => assert_eq!(version, 4),
            B::UnidirectionalSequenceRnn => assert_eq!(version, 3),
            _ => continue,
        }
        let weights = &g.tensors[op.inputs[1] as usize];
        assert_eq!(weights.tensor_type, specc_tflite::TensorType::Int8);
        assert_eq!(
            weights.quantization.as_ref().unwrap().scale.len(),
            1,
            "per tensor"
        );
    }
    // The hybrid model computes what the float one does, to int8 precision.
    let x = values(BATCH * STEPS * DEPTH, 99);
    let feeds = [
        ArrayD::from_shape_vec(IxDyn(&[BATCH, STEPS * DEPTH]), x).unwrap(),
        ArrayD::from_shape_vec(IxDyn(&[BATCH, 1]), LENGTHS.to_vec()).unwrap(),
    ];
    let n_inputs = float.subgraphs[0].inputs.len();
    let views: Vec<_> = feeds[..n_inputs].iter().map(|f| f.view()).collect();
    let a = specc_tflite::run(&float, &views).unwrap();
    let b = specc_tflite::run(&q, &views).unwrap();
    let scale = a[0].iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let worst = a[0]
        .iter()
        .zip(b[0].iter())
        .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
    assert!(
        worst <= 0.02 * scale,
        "float and hybrid differ by {worst} of {scale}"
    );
    assert_ne!(a[0], b[0], "the weights were quantized");
}
