//! Dynamic-range quantization (`tf.lite.Optimize.DEFAULT` without
//! representative data): FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D and
//! TRANSPOSE_CONV weights of at least [`MIN_ELEMENTS_FOR_WEIGHTS`] values
//! to int8, symmetric per output channel — CONV_2D's and TRANSPOSE_CONV's
//! `[O, KH, KW, I]` along 0, DEPTHWISE_CONV_2D's `[1, KH, KW, O]` along 3,
//! as TF's converter writes them; activations and biases stay float; the
//! hybrid kernels quantize their inputs asymmetrically per row or image.
//!
//! Invariants: the float model is not changed; the operators' versions are
//! those TF's converter writes for the hybrid kernels (FULLY_CONNECTED 12,
//! CONV_2D 5, DEPTHWISE_CONV_2D 6, TRANSPOSE_CONV 2).

use super::rewrite::{constant_f32, op_name, opcode, prune_opcodes, quantize_weights, uses};
use super::Result;
use crate::model::{BuiltinOptions, Model, Operator};
use crate::schema::BuiltinOperator as B;

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

/// Dynamic-range quantization: each FULLY_CONNECTED, CONV_2D,
/// DEPTHWISE_CONV_2D and TRANSPOSE_CONV whose weights are a float constant
/// of at least [`MIN_ELEMENTS_FOR_WEIGHTS`] values read by no other
/// operator gets int8 weights, symmetric per output channel (see
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
    for k in 0..model.subgraphs[0].operators.len() {
        let op = model.subgraphs[0].operators[k].clone();
        let Some(b) = model.builtin(&op) else {
            continue;
        };
        let Some((input, axis, version)) = hybrid(&op, b) else {
            continue;
        };
        let Some(&w) = op.inputs.get(input) else {
            continue;
        };
        let Some(values) = constant_f32(&model, w) else {
            continue;
        };
        if values.len() < MIN_ELEMENTS_FOR_WEIGHTS || uses[w as usize] != 1 {
            continue;
        }
        quantize_weights(&mut model, w, &op_name(float, k, &op), axis)?;
        quantized += 1;
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
