//! Post-training quantization of an exported TFLite model, as
//! `tf.lite.Optimize.DEFAULT` does it.
//!
//! Owns: [`quantize_dynamic`] (dynamic-range quantization: FULLY_CONNECTED,
//! CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV weights of at least
//! [`MIN_ELEMENTS_FOR_WEIGHTS`] values to int8, symmetric per output
//! channel — CONV_2D's and TRANSPOSE_CONV's `[O, KH, KW, I]` along 0,
//! DEPTHWISE_CONV_2D's `[1, KH, KW, O]` along 3, as TF's converter writes
//! them; activations and biases stay float; the hybrid kernels quantize
//! their inputs asymmetrically per row or image),
//! [`Calibration`] (the min/max of every float activation over
//! representative rows, run in specc's float interpreter) and
//! [`quantize_int8`] (full-integer quantization: int8 activations with
//! asymmetric per-tensor parameters from the calibrated ranges, per-channel
//! symmetric int8 weights, int32 biases of scale `input_scale *
//! weight_scale`, a QUANTIZE after each float input and a DEQUANTIZE before
//! each float output; SOFTMAX and LOGISTIC outputs with scale 1/256 and zero
//! point -128; CONV_2D filters `[O, KH, KW, I]` per channel along dimension
//! 0 and DEPTHWISE_CONV_2D filters `[1, KH, KW, O]` along dimension 3, their
//! biases int32 per channel; MAX_POOL_2D, AVERAGE_POOL_2D, PAD and RESHAPE
//! keeping their input's scale and zero point, as TFLite requires;
//! TRANSPOSE_CONV refused). The numbers are `specc_tflite::quantize`'s.
//!
//! Invariants: the float model is not changed; the quantized model keeps the
//! float model's signature (names, float inputs and outputs), its operators'
//! versions are those TF's converter writes for the same kernels (hybrid
//! FULLY_CONNECTED 12, CONV_2D 5, DEPTHWISE_CONV_2D 6, TRANSPOSE_CONV 2;
//! int8 FULLY_CONNECTED 4, CONV_2D and DEPTHWISE_CONV_2D
//! 3, MAX_POOL_2D, AVERAGE_POOL_2D, PAD, SOFTMAX, LOGISTIC, ARG_MAX,
//! DEQUANTIZE 2); an operator full-integer quantization does not cover is
//! an error naming it, never a silently float operator in an int8 model.

use specc_tflite::interpreter::{Interpreter, Value};
use specc_tflite::model::{
    i32_bytes, BuiltinOptions, Model, Operator, OperatorCode, Quantization, Tensor,
};
use specc_tflite::quantize::{asymmetric_params, quantize_bias, symmetric_per_axis};
use specc_tflite::{BuiltinOperator as B, TensorType};

/// TF's converter leaves smaller weights in float (`min_elements_for_weights`).
pub const MIN_ELEMENTS_FOR_WEIGHTS: usize = 1024;

type Result<T> = std::result::Result<T, String>;

/// The index of operator code `(op, version)`, added when missing.
fn opcode(model: &mut Model, op: B, version: i32) -> u32 {
    let codes = &mut model.operator_codes;
    match codes
        .iter()
        .position(|c| c.builtin_code == op && c.version == version)
    {
        Some(i) => i as u32,
        None => {
            codes.push(OperatorCode {
                builtin_code: op,
                custom_code: None,
                version,
            });
            (codes.len() - 1) as u32
        }
    }
}

/// Drops operator codes no operator uses, renumbering the operators'.
fn prune_opcodes(model: &mut Model) {
    let used: Vec<bool> = (0..model.operator_codes.len())
        .map(|i| {
            model
                .subgraphs
                .iter()
                .any(|g| g.operators.iter().any(|o| o.opcode_index as usize == i))
        })
        .collect();
    let mut map = vec![0u32; used.len()];
    let mut next = 0;
    for (i, &u) in used.iter().enumerate() {
        map[i] = next;
        if u {
            next += 1;
        }
    }
    let mut i = 0;
    model.operator_codes.retain(|_| {
        i += 1;
        used[i - 1]
    });
    for g in &mut model.subgraphs {
        for o in &mut g.operators {
            o.opcode_index = map[o.opcode_index as usize];
        }
    }
}

/// How many operator inputs read each tensor.
fn uses(model: &Model) -> Vec<usize> {
    let g = &model.subgraphs[0];
    let mut n = vec![0; g.tensors.len()];
    for o in &g.operators {
        for &i in &o.inputs {
            if i >= 0 {
                n[i as usize] += 1;
            }
        }
    }
    n
}

fn constant_f32(model: &Model, t: i32) -> Option<Vec<f32>> {
    let t = model.subgraphs[0].tensors.get(usize::try_from(t).ok()?)?;
    if t.tensor_type != TensorType::Float32 || t.buffer == 0 {
        return None;
    }
    specc_tflite::model::f32_values(&model.buffers[t.buffer as usize].data)
}

/// Replaces float weights `w` by their per-channel int8 values along
/// dimension `axis` (FULLY_CONNECTED's `[units, depth]` and CONV_2D's
/// `[O, KH, KW, I]` along 0, DEPTHWISE_CONV_2D's `[1, KH, KW, O]` along 3);
/// returns the channel scales.
fn quantize_weights(model: &mut Model, w: i32, name: &str, axis: usize) -> Result<Vec<f32>> {
    let values = constant_f32(model, w).ok_or_else(|| {
        format!(
            "the weights of `{name}` are not a float32 constant (read by more than one operator?)"
        )
    })?;
    let t = &model.subgraphs[0].tensors[w as usize];
    let shape: Vec<usize> = t.shape.iter().map(|&d| d.max(0) as usize).collect();
    let (scales, q) = symmetric_per_axis(&values, &shape, axis).ok_or_else(|| {
        format!(
            "the weights of `{name}` of shape {:?} have no dimension {axis} to quantize along",
            t.shape
        )
    })?;
    let buffer = t.buffer as usize;
    model.buffers[buffer].data = q.iter().map(|&v| v as u8).collect();
    let t = &mut model.subgraphs[0].tensors[w as usize];
    t.tensor_type = TensorType::Int8;
    t.quantization = Some(Quantization {
        scale: scales.clone(),
        zero_point: vec![0; scales.len()],
        quantized_dimension: axis as i32,
        ..Quantization::default()
    });
    Ok(scales)
}

/// Replaces the float bias `bias` of an operator whose input has scale
/// `in_scale` and whose weights have `scales` by its int32 values (scale
/// `in_scale * scales[c]`, zero point 0).
fn quantize_bias_tensor(
    model: &mut Model,
    float: &Model,
    bias: i32,
    in_scale: f32,
    scales: &[f32],
    name: &str,
) -> Result<()> {
    let values = constant_f32(float, bias)
        .ok_or_else(|| format!("{name}: the bias is not a float32 constant"))?;
    if values.len() != scales.len() {
        return Err(format!(
            "{name}: a bias of {} values for {} output channels",
            values.len(),
            scales.len()
        ));
    }
    let (bscales, q) = quantize_bias(&values, in_scale, scales);
    let t = &model.subgraphs[0].tensors[bias as usize];
    let buffer = t.buffer as usize;
    model.buffers[buffer].data = i32_bytes(&q);
    let t = &mut model.subgraphs[0].tensors[bias as usize];
    t.tensor_type = TensorType::Int32;
    t.quantization = Some(Quantization {
        zero_point: vec![0; bscales.len()],
        scale: bscales,
        quantized_dimension: 0,
        ..Quantization::default()
    });
    Ok(())
}

fn op_name(model: &Model, k: usize, op: &Operator) -> String {
    let b = model
        .builtin(op)
        .map_or("?".into(), |b| b.name().into_owned());
    let out = op
        .outputs
        .first()
        .and_then(|&t| model.subgraphs[0].tensors.get(t as usize))
        .map_or(String::new(), |t| format!(" computing `{}`", t.name));
    format!("operator {k} ({b}{out})")
}

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
                } if fused_activation_function != specc_tflite::ActivationFunctionType::None => 4,
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

/// The range of every float tensor the model computes or reads as an input,
/// over the rows run so far.
pub struct Calibration {
    ranges: Vec<Option<(f32, f32)>>,
    rows: usize,
}

impl Calibration {
    pub fn new(model: &Model) -> Calibration {
        Calibration {
            ranges: vec![None; model.subgraphs.first().map_or(0, |g| g.tensors.len())],
            rows: 0,
        }
    }

    /// Runs `inputs` (in the subgraph's input order) through the float model
    /// and widens the ranges with the first `rows` rows of every tensor (a
    /// fixed-batch model's padding rows are not calibrated on).
    pub fn run(
        &mut self,
        interpreter: &Interpreter<'_>,
        inputs: Vec<Value>,
        rows: usize,
    ) -> Result<()> {
        let ranges = &mut self.ranges;
        interpreter.invoke_observed(inputs, &mut |t, v| {
            if let (Value::F32(a), Some(r)) = (v, ranges.get_mut(t)) {
                let a = a.as_standard_layout();
                let take = match a.shape().first() {
                    Some(&b) if b > rows => rows * (a.len() / b),
                    _ => a.len(),
                };
                for &x in a.iter().take(take).filter(|x| x.is_finite()) {
                    *r = Some(match *r {
                        None => (x, x),
                        Some((lo, hi)) => (lo.min(x), hi.max(x)),
                    });
                }
            }
        })?;
        self.rows += rows;
        Ok(())
    }

    /// Rows calibrated on.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The calibrated `[min, max]` of tensor `t`.
    pub fn range(&self, t: usize) -> Option<(f32, f32)> {
        self.ranges.get(t).copied().flatten()
    }
}

fn per_tensor(scale: f32, zero_point: i32) -> Quantization {
    Quantization {
        scale: vec![scale],
        zero_point: vec![i64::from(zero_point)],
        ..Quantization::default()
    }
}

/// The operators [`quantize_int8`] covers, as its refusal names them.
pub const COVERED: &str = "FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D, PAD, RESHAPE, SOFTMAX, LOGISTIC and ARG_MAX";

/// Full-integer quantization with the calibrated ranges (see the module
/// documentation). The float inputs and outputs stay float.
pub fn quantize_int8(float: &Model, calibration: &Calibration) -> Result<Model> {
    float.validate()?;
    if calibration.rows() == 0 {
        return Err("no representative rows to calibrate on".into());
    }
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
    for t in 0..n {
        if consts[t] || fixed[t] || g0.tensors[t].tensor_type != TensorType::Float32 {
            continue;
        }
        let (lo, hi) = calibration.range(t).ok_or_else(|| {
            format!(
                "tensor `{}` was not computed on the representative rows",
                g0.tensors[t].name
            )
        })?;
        params[t] = Some(asymmetric_params(lo, hi));
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
                let scales = quantize_weights(&mut model, w, &name, axis)?;
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

fn push_tensor(model: &mut Model, t: Tensor) -> i32 {
    let g = &mut model.subgraphs[0];
    g.tensors.push(t);
    (g.tensors.len() - 1) as i32
}
