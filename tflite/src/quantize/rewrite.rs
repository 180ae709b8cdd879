//! The edits of a float model that both quantizations make: weights
//! replaced by their per-channel int8 values and biases by their int32
//! ones (with their `Quantization`), operator codes added at the versions
//! asked and pruned when no operator uses them, tensors added and
//! removed, and an operator named in an error.
//!
//! Invariants: a tensor's buffer and its type and quantization change
//! together; operator code indices stay valid after pruning.

use super::params::{quantize_bias, round_half_away, symmetric_per_axis};
use super::Result;
use crate::model::{i32_bytes, Model, Operator, OperatorCode, Quantization, Tensor};
use crate::schema::{BuiltinOperator as B, TensorType};

/// The index of operator code `(op, version)`, added when missing.
pub(super) fn opcode(model: &mut Model, op: B, version: i32) -> u32 {
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
pub(super) fn prune_opcodes(model: &mut Model) {
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
pub(super) fn uses(model: &Model) -> Vec<usize> {
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

pub(super) fn constant_f32(model: &Model, t: i32) -> Option<Vec<f32>> {
    let t = model.subgraphs[0].tensors.get(usize::try_from(t).ok()?)?;
    if t.tensor_type != TensorType::Float32 || t.buffer == 0 {
        return None;
    }
    crate::model::f32_values(&model.buffers[t.buffer as usize].data)
}

/// Replaces float weights `w` by their per-channel int8 values along
/// dimension `axis` (FULLY_CONNECTED's `[units, depth]` and CONV_2D's
/// `[O, KH, KW, I]` along 0, DEPTHWISE_CONV_2D's `[1, KH, KW, O]` along 3);
/// returns the channel scales.
pub(super) fn quantize_weights(
    model: &mut Model,
    w: i32,
    name: &str,
    axis: usize,
) -> Result<Vec<f32>> {
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

/// Replaces float weights `w` by int8 values with trained parameters `q`
/// (a fake quantization's, int8 zero points): per channel along dimension
/// `axis`, or per tensor (one scale, as TF's converter writes a QAT model's
/// per-tensor weights); each value `round(v / scale)`
/// (half away from zero, in double) clamped to int8. TFLite's int8 kernels
/// need the weights' zero point 0 (a symmetric range): any other is an
/// error. Returns the channel scales.
pub(super) fn quantize_weights_trained(
    model: &mut Model,
    w: i32,
    name: &str,
    axis: usize,
    q: &Quantization,
) -> Result<Vec<f32>> {
    let values = constant_f32(model, w)
        .ok_or_else(|| format!("the weights of `{name}` are not a float32 constant"))?;
    let t = &model.subgraphs[0].tensors[w as usize];
    let shape: Vec<usize> = t.shape.iter().map(|&d| d.max(0) as usize).collect();
    let Some(&channels) = shape.get(axis) else {
        return Err(format!(
            "the weights of `{name}` of shape {:?} have no dimension {axis}",
            t.shape
        ));
    };
    if let Some(z) = q.zero_point.iter().find(|&&z| z != 0) {
        return Err(format!(
            "the weights of `{name}` have a fake-quantization range with zero point {z}; TFLite's int8 kernels need weights with zero point 0: a symmetric range (min = -max) with narrow_range = true"
        ));
    }
    let per_channel: Vec<f32> = match q.scale[..] {
        [s] => vec![s; channels],
        _ if q.scale.len() == channels && q.quantized_dimension as usize == axis => q.scale.clone(),
        _ => {
            return Err(format!(
                "the weights of `{name}` have {} fake-quantization ranges for {channels} channels along dimension {axis}",
                q.scale.len()
            ))
        }
    };
    let inner: usize = shape[axis + 1..].iter().product();
    let data: Vec<u8> = values
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let s = f64::from(per_channel[(k / inner.max(1)) % channels]);
            round_half_away(f64::from(v) / s).clamp(-128.0, 127.0) as i8 as u8
        })
        .collect();
    let buffer = t.buffer as usize;
    model.buffers[buffer].data = data;
    let t = &mut model.subgraphs[0].tensors[w as usize];
    t.tensor_type = TensorType::Int8;
    // A per-tensor range stays per tensor, as TF's converter writes it.
    let scales = if q.scale.len() == 1 {
        q.scale.clone()
    } else {
        per_channel
    };
    t.quantization = Some(Quantization {
        zero_point: vec![0; scales.len()],
        scale: scales.clone(),
        quantized_dimension: if scales.len() == 1 { 0 } else { axis as i32 },
        ..Quantization::default()
    });
    Ok(scales)
}

/// Replaces the float bias `bias` of an operator whose input has scale
/// `in_scale` and whose weights have `scales` by its int32 values (scale
/// `in_scale * scales[c]`, zero point 0; one scale `in_scale * scale` for
/// per-tensor weights).
pub(super) fn quantize_bias_tensor(
    model: &mut Model,
    float: &Model,
    bias: i32,
    in_scale: f32,
    scales: &[f32],
    name: &str,
) -> Result<()> {
    let values = constant_f32(float, bias)
        .ok_or_else(|| format!("{name}: the bias is not a float32 constant"))?;
    // Per-tensor weights (a trained range): one bias scale for all.
    if let [scale] = scales[..] {
        let (bscales, q) = quantize_bias(&values, in_scale, &vec![scale; values.len()]);
        let t = &model.subgraphs[0].tensors[bias as usize];
        let buffer = t.buffer as usize;
        model.buffers[buffer].data = i32_bytes(&q);
        let t = &mut model.subgraphs[0].tensors[bias as usize];
        t.tensor_type = TensorType::Int32;
        t.quantization = Some(per_tensor(bscales.first().copied().unwrap_or(1.0), 0));
        return Ok(());
    }
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

pub(super) fn op_name(model: &Model, k: usize, op: &Operator) -> String {
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

pub(super) fn per_tensor(scale: f32, zero_point: i32) -> Quantization {
    Quantization {
        scale: vec![scale],
        zero_point: vec![i64::from(zero_point)],
        ..Quantization::default()
    }
}

pub(super) fn push_tensor(model: &mut Model, t: Tensor) -> i32 {
    let g = &mut model.subgraphs[0];
    g.tensors.push(t);
    (g.tensors.len() - 1) as i32
}

/// Removes the tensors marked `dead` (no operator reads or writes them) of
/// the first subgraph, renumbering every reference to the others.
pub(super) fn remove_tensors(model: &mut Model, dead: &[bool]) {
    let mut map = vec![-1i32; dead.len()];
    let mut next = 0;
    for (t, &d) in dead.iter().enumerate() {
        if !d {
            map[t] = next;
            next += 1;
        }
    }
    let renumber = |i: &mut i32| {
        if *i >= 0 {
            *i = map[*i as usize];
        }
    };
    let g = &mut model.subgraphs[0];
    let mut t = 0;
    g.tensors.retain(|_| {
        t += 1;
        !dead[t - 1]
    });
    for o in &mut g.operators {
        o.inputs.iter_mut().for_each(renumber);
        o.outputs.iter_mut().for_each(renumber);
    }
    g.inputs.iter_mut().for_each(renumber);
    g.outputs.iter_mut().for_each(renumber);
    for sig in &mut model.signature_defs {
        for m in sig.inputs.iter_mut().chain(sig.outputs.iter_mut()) {
            m.tensor_index = map[m.tensor_index as usize] as u32;
        }
    }
}
