//! Dynamic-range quantization (`tf.lite.Optimize.DEFAULT` without
//! representative data): FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D and
//! TRANSPOSE_CONV weights of at least [`MIN_ELEMENTS_FOR_WEIGHTS`] values
//! to int8, symmetric per output channel — CONV_2D's and TRANSPOSE_CONV's
//! `[O, KH, KW, I]` along 0, DEPTHWISE_CONV_2D's `[1, KH, KW, O]` along 3,
//! as TF's converter writes them; activations and biases stay float; the
//! hybrid kernels quantize their inputs asymmetrically per row or image.
//! The recurrent operators (UNIDIRECTIONAL_SEQUENCE_LSTM, _RNN) get every
//! weight int8 per tensor, as their hybrid kernels read one scale each.
//!
//! Invariants: the float model is not changed; the operators' versions are
//! those TF's converter writes for the hybrid kernels (FULLY_CONNECTED 12,
//! CONV_2D 5, DEPTHWISE_CONV_2D 6, TRANSPOSE_CONV 2).

use super::params::symmetric_per_channel;
use super::rewrite::{constant_f32, op_name, opcode, prune_opcodes, quantize_weights, uses};
use super::Result;
use crate::model::{BuiltinOptions, Model, Operator, Quantization};
use crate::schema::BuiltinOperator as B;
use crate::schema::TensorType;

/// TF's converter leaves smaller weights in float (`min_elements_for_weights`).
pub const MIN_ELEMENTS_FOR_WEIGHTS: usize = 1024;

/// The weights input, the dimension of its output channels and the hybrid
/// operator version of an operator dynamic-range quantization covers (TF's
/// `DynamicRangeQuantizedOpInterface` ops specc exports, versions as TF's
/// `op_version.cc` gives them for int8 per-channel weights and float
/// activations): FULLY_CONNECTED `[units, depth]` along 0, version 12 (with
/// `asymmetric_quantize_inputs`); CONV_2D `[O, KH, KW, I]` along 0, version
/// 5; DEPTHWISE_CONV_2D `[1, KH, KW, C·M]` along 3, version 6;
/// TRANSPOSE_CONV `[O, KH, KW, I]` along 0, version 2 (3 with a bias, 4
/// with a fused activation).
fn hybrid(op: &Operator, b: B) -> Option<(usize, usize, i32)> {
    match b {
        B::FullyConnected => Some((1, 0, 12)),
        B::Conv2d => Some((1, 0, 5)),
        B::DepthwiseConv2d => Some((1, 3, 6)),
        B::TransposeConv => {
            let version = match op.options {
                BuiltinOptions::TransposeConv {
                    fused_activation_function,
                    ..
                } if fused_activation_function != crate::ActivationFunctionType::None => 4,
                _ if op.inputs.get(3).is_some_and(|&t| t >= 0) => 3,
                _ => 2,
            };
            Some((1, 0, version))
        }
        _ => None,
    }
}

/// The weight inputs of a recurrent operator and its hybrid version:
/// UNIDIRECTIONAL_SEQUENCE_LSTM's input and recurrent matrices, peepholes
/// and projection (its hybrid kernel takes all of them int8, per tensor),
/// version 4 (`asymmetric_quantize_inputs`); UNIDIRECTIONAL_SEQUENCE_RNN's
/// two matrices, version 3.
fn sequence_weights(b: B) -> Option<(&'static [usize], i32)> {
    match b {
        B::UnidirectionalSequenceLstm => Some((&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16], 4)),
        B::UnidirectionalSequenceRnn => Some((&[1, 2], 3)),
        _ => None,
    }
}

/// Quantizes every weight of the recurrent operator `k` to int8 per
/// tensor (symmetric), all or none: none when no weight matrix has
/// [`MIN_ELEMENTS_FOR_WEIGHTS`] values or one is shared. Returns how many
/// tensors were quantized.
fn quantize_sequence(
    model: &mut Model,
    uses: &[usize],
    k: usize,
    weights: &[usize],
    version: i32,
) -> Result<usize> {
    let op = model.subgraphs[0].operators[k].clone();
    let present: Vec<i32> = weights
        .iter()
        .filter_map(|&i| op.inputs.get(i).copied())
        .filter(|&t| t >= 0)
        .collect();
    let values: Vec<Option<Vec<f32>>> = present.iter().map(|&t| constant_f32(model, t)).collect();
    let large = values.iter().any(|v| {
        v.as_ref()
            .is_some_and(|v| v.len() >= MIN_ELEMENTS_FOR_WEIGHTS)
    });
    let quantizable =
        values.iter().all(Option::is_some) && present.iter().all(|&t| uses[t as usize] == 1);
    if !large || !quantizable {
        return Ok(0);
    }
    for (&t, v) in present.iter().zip(values.into_iter().flatten()) {
        let (scales, q) = symmetric_per_channel(&v, 1);
        let buffer = model.subgraphs[0].tensors[t as usize].buffer as usize;
        model.buffers[buffer].data = q.iter().map(|&v| v as u8).collect();
        let tensor = &mut model.subgraphs[0].tensors[t as usize];
        tensor.tensor_type = TensorType::Int8;
        tensor.quantization = Some(Quantization {
            scale: scales,
            zero_point: vec![0],
            ..Quantization::default()
        });
    }
    let b = model.builtin(&op).ok_or("bad opcode index")?;
    let code = opcode(model, b, version);
    let o = &mut model.subgraphs[0].operators[k];
    o.opcode_index = code;
    match &mut o.options {
        BuiltinOptions::SequenceLstm {
            asymmetric_quantize_inputs,
            ..
        }
        | BuiltinOptions::SequenceRnn {
            asymmetric_quantize_inputs,
            ..
        } => *asymmetric_quantize_inputs = true,
        _ => {}
    }
    Ok(present.len())
}

/// Whether every operator reading tensor `w` is a FULLY_CONNECTED reading
/// it as its weights (an unrolled GRU's steps share their weights): then
/// it is quantized once, for all of them.
fn read_as_fc_weights(model: &Model, w: i32) -> bool {
    model.subgraphs[0]
        .operators
        .iter()
        .filter(|o| o.inputs.contains(&w))
        .all(|o| {
            model.builtin(o) == Some(B::FullyConnected)
                && o.inputs.iter().position(|&t| t == w) == Some(1)
                && o.inputs.iter().filter(|&&t| t == w).count() == 1
        })
}

/// Dynamic-range quantization: each FULLY_CONNECTED, CONV_2D,
/// DEPTHWISE_CONV_2D and TRANSPOSE_CONV whose weights are a float constant
/// of at least [`MIN_ELEMENTS_FOR_WEIGHTS`] values read by no other
/// operator (or only by other FULLY_CONNECTEDs as their weights, quantized
/// once) gets int8 weights, symmetric per output channel (see
/// `hybrid`), and TFLite's hybrid kernel: its version, and for
/// FULLY_CONNECTED `asymmetric_quantize_inputs` (the convolutions' hybrid
/// kernels always quantize their inputs asymmetrically, per image, when the
/// channels' scales differ). Biases and activations stay float. Returns the
/// model and how many weight tensors were quantized.
pub fn quantize_dynamic(float: &Model) -> Result<(Model, usize)> {
    float.validate()?;
    let mut model = float.clone();
    let uses = uses(&model);
    let mut quantized = 0;
    // Weights already quantized, for the other FULLY_CONNECTEDs reading them.
    let mut shared = std::collections::HashSet::new();
    for k in 0..model.subgraphs[0].operators.len() {
        let op = model.subgraphs[0].operators[k].clone();
        let Some(b) = model.builtin(&op) else {
            continue;
        };
        if let Some((weights, version)) = sequence_weights(b) {
            quantized += quantize_sequence(&mut model, &uses, k, weights, version)?;
            continue;
        }
        let Some((input, axis, version)) = hybrid(&op, b) else {
            continue;
        };
        let Some(&w) = op.inputs.get(input) else {
            continue;
        };
        if !shared.contains(&w) {
            let Some(values) = constant_f32(&model, w) else {
                continue;
            };
            let fc_weights_only = b == B::FullyConnected && read_as_fc_weights(float, w);
            if values.len() < MIN_ELEMENTS_FOR_WEIGHTS
                || (uses[w as usize] != 1 && !fc_weights_only)
            {
                continue;
            }
            quantize_weights(&mut model, w, &op_name(float, k, &op), axis)?;
            quantized += 1;
            shared.insert(w);
        }
        let code = opcode(&mut model, b, version);
        let o = &mut model.subgraphs[0].operators[k];
        o.opcode_index = code;
        if let BuiltinOptions::FullyConnected {
            asymmetric_quantize_inputs,
            ..
        } = &mut o.options
        {
            *asymmetric_quantize_inputs = true;
        }
    }
    prune_opcodes(&mut model);
    model.validate()?;
    Ok((model, quantized))
}
