//! Full-integer quantization with trained or calibrated ranges
//! (`tf.lite.Optimize.DEFAULT`, of a quantization-aware trained model or
//! with a representative dataset): int8 activations with the parameters of
//! their fake quantization (the float model's QUANTIZE/DEQUANTIZE pairs,
//! `trained`, which are removed), else asymmetric per-tensor parameters
//! from the calibrated ranges (an activation with neither is an error
//! naming it); weights read through a pair with its scales (per channel
//! along dimension 0, or per tensor with a per-tensor bias scale, as TF's
//! converter writes them; zero point 0 required), else per-channel symmetric int8
//! weights; int32 biases of scale
//! `input_scale * weight_scale`, a QUANTIZE after each float input and a
//! DEQUANTIZE before each float output; SOFTMAX and LOGISTIC outputs with
//! scale 1/256 and zero point -128; CONV_2D filters `[O, KH, KW, I]` per
//! channel along dimension 0 and DEPTHWISE_CONV_2D filters `[1, KH, KW, O]`
//! along dimension 3, their biases int32 per channel; MAX_POOL_2D,
//! AVERAGE_POOL_2D, PAD and RESHAPE keeping their input's scale and zero
//! point, as TFLite requires; TRANSPOSE_CONV refused.
//!
//! Invariants: the float model is not changed; the quantized model keeps
//! its signature (names, float inputs and outputs); the operators' versions
//! are those TF's converter writes for the int8 kernels (FULLY_CONNECTED 4,
//! CONV_2D and DEPTHWISE_CONV_2D 3, MAX_POOL_2D, AVERAGE_POOL_2D, PAD,
//! SOFTMAX, LOGISTIC, ARG_MAX, DEQUANTIZE 2); an operator it does not cover
//! is an error naming it, never a silently float operator in an int8 model.

use super::calibration::Calibration;
use super::params::asymmetric_params;
use super::rewrite::{
    op_name, opcode, per_tensor, prune_opcodes, push_tensor, quantize_bias_tensor,
    quantize_weights, quantize_weights_trained,
};
use super::trained::{per_tensor_of, take_pairs};
use super::Result;
use crate::model::{BuiltinOptions, Model, Operator, Tensor};
use crate::schema::{BuiltinOperator as B, TensorType};

/// The operators [`quantize_int8`] covers, as its refusal names them.
pub const COVERED: &str = "FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D, PAD, RESHAPE, SOFTMAX, LOGISTIC and ARG_MAX";

/// Full-integer quantization with the calibrated ranges (see the module
/// documentation). The float inputs and outputs stay float.
pub fn quantize_int8(float: &Model, calibration: Option<&Calibration>) -> Result<Model> {
    float.validate()?;
    if calibration.is_some_and(|c| c.rows() == 0) {
        return Err("no representative rows to calibrate on".into());
    }
    let trained = take_pairs(float)?;
    let float = &trained.model;
    let mut model = float.clone();
    let g0 = &float.subgraphs[0];
    let n = g0.tensors.len();
    let consts: Vec<bool> = g0.tensors.iter().map(|t| t.buffer != 0).collect();
    // Activation parameters: calibrated, except the fixed outputs of SOFTMAX
    // and LOGISTIC.
    let mut params: Vec<Option<(f32, i32)>> = vec![None; n];
    let mut fixed = vec![false; n];
    for (k, op) in g0.operators.iter().enumerate() {
        let b = float.builtin(op).ok_or("bad opcode index")?;
        match b {
            B::FullyConnected
            | B::Softmax
            | B::Logistic
            | B::ArgMax
            | B::Reshape
            | B::Conv2d
            | B::DepthwiseConv2d
            | B::MaxPool2d
            | B::AveragePool2d
            | B::Pad => {}
            B::TransposeConv => {
                return Err(format!(
                    "{}: full-integer quantization does not cover TRANSPOSE_CONV (conv2d_transpose); export with --quantize dynamic, or without --quantize",
                    op_name(float, k, op)
                ))
            }
            _ => {
                return Err(format!(
                    "{}: full-integer quantization covers {COVERED}; export with --quantize dynamic, or without --quantize",
                    op_name(float, k, op)
                ))
            }
        }
        if matches!(b, B::Softmax | B::Logistic) {
            params[op.outputs[0] as usize] = Some((1.0 / 256.0, -128));
            fixed[op.outputs[0] as usize] = true;
        }
    }
    // Outputs that keep their input's parameters (below).
    let mut inherits = vec![false; n];
    for op in &g0.operators {
        if matches!(
            float.builtin(op),
            Some(B::Reshape | B::Pad | B::MaxPool2d | B::AveragePool2d)
        ) {
            inherits[op.outputs[0] as usize] = true;
        }
    }
    // Trained (fake-quantization) ranges first, then calibrated ones.
    for t in 0..n {
        if consts[t] || fixed[t] || g0.tensors[t].tensor_type != TensorType::Float32 {
            continue;
        }
        let name = &g0.tensors[t].name;
        if let Some(q) = &trained.params[t] {
            params[t] = Some(per_tensor_of(q).ok_or_else(|| {
                format!("tensor `{name}` has a per-channel fake-quantization range; an int8 activation has one scale")
            })?);
            continue;
        }
        let range = match calibration {
            Some(c) => c.range(trained.source[t]).ok_or_else(|| {
                format!("tensor `{name}` was not computed on the representative rows")
            })?,
            None if inherits[t] => continue,
            None => {
                return Err(format!(
                    "tensor `{name}` has no range: no fake quantization gives it one; fake-quantize it in the spec, or pass --representative-data FILE to calibrate it"
                ))
            }
        };
        params[t] = Some(asymmetric_params(range.0, range.1));
    }
    // RESHAPE, PAD and the pools keep their input's parameters (TFLite
    // requires them equal; PAD pads with the zero point). In file order, so
    // a chain of them shares one pair.
    for op in &g0.operators {
        if matches!(
            float.builtin(op),
            Some(B::Reshape | B::Pad | B::MaxPool2d | B::AveragePool2d)
        ) {
            let (i, o) = (op.inputs[0] as usize, op.outputs[0] as usize);
            params[o] = params[i];
        }
    }
    // Activations to int8 (the float inputs get an int8 copy below).
    for (t, p) in params.iter().enumerate() {
        if let (Some((s, zp)), false) = (*p, g0.inputs.contains(&(t as i32))) {
            let tensor = &mut model.subgraphs[0].tensors[t];
            tensor.tensor_type = TensorType::Int8;
            tensor.quantization = Some(per_tensor(s, zp));
        }
    }
    // Weights and biases.
    for k in 0..g0.operators.len() {
        let op = g0.operators[k].clone();
        let b = float.builtin(&op).ok_or("bad opcode index")?;
        let version = match b {
            B::FullyConnected | B::Conv2d | B::DepthwiseConv2d => {
                let name = op_name(float, k, &op);
                let w = op.inputs[1];
                if w < 0 || !consts[w as usize] {
                    return Err(format!("{name}: the weights are not a constant"));
                }
                if b == B::FullyConnected && g0.tensors[w as usize].shape.len() != 2 {
                    return Err(format!("{name}: the weights are not a matrix"));
                }
                let axis = if b == B::DepthwiseConv2d { 3 } else { 0 };
                let scales = match &trained.params[w as usize] {
                    Some(q) => quantize_weights_trained(&mut model, w, &name, axis, q)?,
                    None => quantize_weights(&mut model, w, &name, axis)?,
                };
                if let Some(&bias) = op.inputs.get(2).filter(|&&b| b >= 0) {
                    let (in_scale, _) = params[op.inputs[0] as usize]
                        .ok_or_else(|| format!("{name}: the input has no quantization"))?;
                    quantize_bias_tensor(&mut model, float, bias, in_scale, &scales, &name)?;
                }
                if b == B::FullyConnected {
                    4
                } else {
                    3
                }
            }
            B::MaxPool2d | B::AveragePool2d | B::Pad => 2,
            B::Softmax | B::Logistic | B::ArgMax => 2,
            _ => 1,
        };
        let code = opcode(&mut model, b, version);
        model.subgraphs[0].operators[k].opcode_index = code;
    }
    // A QUANTIZE after each float input.
    let mut head = Vec::new();
    for &input in &g0.inputs {
        let t = input as usize;
        let Some((s, zp)) = params[t] else { continue };
        let src = &g0.tensors[t];
        let q = push_tensor(
            &mut model,
            Tensor {
                name: format!("{}/quantize", src.name),
                tensor_type: TensorType::Int8,
                buffer: 0,
                quantization: Some(per_tensor(s, zp)),
                ..src.clone()
            },
        );
        for o in &mut model.subgraphs[0].operators {
            for i in &mut o.inputs {
                if *i == input {
                    *i = q;
                }
            }
        }
        let code = opcode(&mut model, B::Quantize, 1);
        head.push(Operator {
            opcode_index: code,
            inputs: vec![input],
            outputs: vec![q],
            options: BuiltinOptions::None,
        });
    }
    // A DEQUANTIZE before each float output: the int8 tensor is renamed, the
    // float output keeps the name.
    let mut tail = Vec::new();
    for k in 0..g0.outputs.len() {
        let out = g0.outputs[k];
        let t = out as usize;
        if params[t].is_none() {
            continue;
        }
        let src = g0.tensors[t].clone();
        model.subgraphs[0].tensors[t].name = format!("{}/int8", src.name);
        let f = push_tensor(
            &mut model,
            Tensor {
                quantization: None,
                buffer: 0,
                ..src
            },
        );
        model.subgraphs[0].outputs[k] = f;
        for sig in &mut model.signature_defs {
            for m in &mut sig.outputs {
                if m.tensor_index == out as u32 {
                    m.tensor_index = f as u32;
                }
            }
        }
        let code = opcode(&mut model, B::Dequantize, 2);
        tail.push(Operator {
            opcode_index: code,
            inputs: vec![out],
            outputs: vec![f],
            options: BuiltinOptions::None,
        });
    }
    let ops = &mut model.subgraphs[0].operators;
    let body = std::mem::take(ops);
    ops.extend(head);
    ops.extend(body);
    ops.extend(tail);
    prune_opcodes(&mut model);
    model.validate()?;
    Ok(model)
}
