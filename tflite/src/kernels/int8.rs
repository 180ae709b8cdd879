//! The quantized kernels of specc's interpreter: int8 and hybrid (int8
//! weights, float activations) operators.
//!
//! Owns: [`fully_connected_hybrid`] (TFLite's `EvalHybrid` with
//! asymmetrically quantized inputs and per-channel or per-tensor weight
//! scales), [`fully_connected_int8`] (the reference integer kernel:
//! int32 accumulation of `(x - x_zp) * w`, the int32 bias, then
//! `MultiplyByQuantizedMultiplier` per channel, the output zero point and
//! the activation's clamp), [`quantize`], [`dequantize`] (per tensor or
//! per channel; and their uint8
//! forms and [`requantize`], int8 ↔ uint8, for a model's uint8 boundary),
//! [`softmax_int8`] (TFLite's reference integer kernel in gemmlowp fixed
//! point, `crate::quantize::softmax_row_int8`), [`logistic_int8`] (the
//! sigmoid of the dequantized input in float, requantized: TFLite's
//! reference kernel uses fixed point, so a value on a rounding boundary can
//! differ by one step) and [`argmax_int8`].
//!
//! Invariants: QUANTIZE, DEQUANTIZE, FULLY_CONNECTED, SOFTMAX and ARG_MAX
//! compute TFLite's reference values exactly (the arithmetic is `crate::quantize`'s); a tensor without the quantization
//! parameters a kernel needs is an error, never a panic.

use ndarray::{ArrayD, Axis, IxDyn};

use crate::model::{Quantization, Tensor};
use crate::quantize::{
    asymmetric_quantize_row, dequantize_int, dequantize_value, multiply_by_quantized_multiplier,
    multiply_double_rounding, quantize_multiplier, quantize_value, quantize_value_uint8,
    round_half_away, softmax_params, softmax_row_int8,
};
use crate::schema::ActivationFunctionType;

type Result<T> = std::result::Result<T, String>;

/// A tensor's per-tensor `(scale, zero_point)`.
pub fn per_tensor(t: &Tensor) -> Result<(f32, i32)> {
    match &t.quantization {
        Some(Quantization {
            scale, zero_point, ..
        }) if scale.len() == 1 => Ok((scale[0], zero_point.first().copied().unwrap_or(0) as i32)),
        _ => Err(format!(
            "tensor `{}` has no per-tensor quantization parameters",
            t.name
        )),
    }
}

/// A weight tensor's scales: one per output channel (or one for all).
fn channel_scales(t: &Tensor, units: usize) -> Result<Vec<f32>> {
    match &t.quantization {
        Some(q) if q.scale.len() == units && q.quantized_dimension == 0 => Ok(q.scale.clone()),
        Some(q) if q.scale.len() == 1 => Ok(vec![q.scale[0]; units]),
        _ => Err(format!(
            "weights `{}` need one scale, or one per output channel along dimension 0",
            t.name
        )),
    }
}

fn rows_of(x_len: usize, depth: usize, shape: &[usize]) -> Result<usize> {
    if depth == 0 || !x_len.is_multiple_of(depth) {
        return Err(format!("input of shape {shape:?} for a depth of {depth}"));
    }
    Ok(x_len / depth)
}

/// The hybrid FULLY_CONNECTED: each input row quantized to int8
/// asymmetrically, int32 dot products with the int8 weights, corrected for
/// the row's zero point, scaled by the row's and the channel's scales and
/// added to the float bias.
pub fn fully_connected_hybrid(
    x: &ArrayD<f32>,
    w: &ArrayD<i8>,
    w_tensor: &Tensor,
    bias: Option<&ArrayD<f32>>,
) -> Result<ArrayD<f32>> {
    let [units, depth] = w.shape()[..] else {
        return Err(format!("weights of shape {:?}", w.shape()));
    };
    let scales = channel_scales(w_tensor, units)?;
    let rows = rows_of(x.len(), depth, x.shape())?;
    let x = x.as_standard_layout();
    let xs = x.as_slice().expect("standard layout");
    let w = w.as_standard_layout();
    let ws = w.as_slice().expect("standard layout");
    let row_sums: Vec<i32> = (0..units)
        .map(|u| {
            ws[u * depth..(u + 1) * depth]
                .iter()
                .map(|&v| i32::from(v))
                .sum()
        })
        .collect();
    let b: Vec<f32> = match bias {
        Some(b) if b.len() == units => b.iter().copied().collect(),
        Some(b) => return Err(format!("bias of shape {:?} for {units} units", b.shape())),
        None => vec![0.0; units],
    };
    let mut y = Vec::with_capacity(rows * units);
    let mut q = vec![0i8; depth];
    for r in 0..rows {
        let (scale, offset) = asymmetric_quantize_row(&xs[r * depth..(r + 1) * depth], &mut q);
        for u in 0..units {
            let wr = &ws[u * depth..(u + 1) * depth];
            let mut dot: i32 = wr
                .iter()
                .zip(&q)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
            dot -= row_sums[u] * offset;
            let s = scale * scales[u];
            y.push(b[u] + dot as f32 * s);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[rows, units]), y).map_err(|e| e.to_string())
}

/// The int8 FULLY_CONNECTED (TFLite's reference integer kernel, per-channel).
pub fn fully_connected_int8(
    x: &ArrayD<i8>,
    x_tensor: &Tensor,
    w: &ArrayD<i8>,
    w_tensor: &Tensor,
    bias: Option<&ArrayD<i32>>,
    out_tensor: &Tensor,
    activation: ActivationFunctionType,
) -> Result<ArrayD<i8>> {
    let [units, depth] = w.shape()[..] else {
        return Err(format!("weights of shape {:?}", w.shape()));
    };
    let (x_scale, x_zp) = per_tensor(x_tensor)?;
    let (y_scale, y_zp) = per_tensor(out_tensor)?;
    let scales = channel_scales(w_tensor, units)?;
    let multipliers: Vec<(i32, i32)> = scales
        .iter()
        .map(|&s| quantize_multiplier(f64::from(x_scale) * f64::from(s) / f64::from(y_scale)))
        .collect();
    let (act_min, act_max) = activation_range(activation, y_scale, y_zp)?;
    let rows = rows_of(x.len(), depth, x.shape())?;
    let x = x.as_standard_layout();
    let xs = x.as_slice().expect("standard layout");
    let w = w.as_standard_layout();
    let ws = w.as_slice().expect("standard layout");
    let bias: Vec<i32> = match bias {
        Some(b) if b.len() == units => b.iter().copied().collect(),
        Some(b) => return Err(format!("bias of shape {:?} for {units} units", b.shape())),
        None => vec![0; units],
    };
    let mut y = Vec::with_capacity(rows * units);
    for r in 0..rows {
        let xr = &xs[r * depth..(r + 1) * depth];
        for u in 0..units {
            let wr = &ws[u * depth..(u + 1) * depth];
            let mut acc: i32 = wr
                .iter()
                .zip(xr)
                .map(|(&a, &b)| i32::from(a) * (i32::from(b) - x_zp))
                .sum();
            acc = acc.wrapping_add(bias[u]);
            let (m, shift) = multipliers[u];
            let v = multiply_by_quantized_multiplier(acc, m, shift) + y_zp;
            y.push(v.clamp(act_min, act_max) as i8);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[rows, units]), y).map_err(|e| e.to_string())
}

/// TFLite's `CalculateActivationRangeQuantized` for int8.
pub fn activation_range(a: ActivationFunctionType, scale: f32, zp: i32) -> Result<(i32, i32)> {
    let q = |v: f32| zp + round_half_away(f64::from(v / scale)) as i32;
    let (lo, hi) = match a {
        ActivationFunctionType::None => (-128, 127),
        ActivationFunctionType::Relu => (q(0.0).max(-128), 127),
        ActivationFunctionType::Relu6 => (q(0.0).max(-128), q(6.0).min(127)),
        ActivationFunctionType::ReluN1To1 => (q(-1.0).max(-128), q(1.0).min(127)),
        other => return Err(format!("fused activation {other} on int8 is not supported")),
    };
    Ok((lo, hi))
}

/// Per-channel parameters: the scales, the zero points and the dimension.
type PerAxis = (Vec<f32>, Vec<i32>, usize);

/// A tensor's per-channel parameters along its `quantized_dimension`
/// (`None` when it has one scale), checked against `x`'s shape.
fn per_axis(t: &Tensor, shape: &[usize]) -> Result<Option<PerAxis>> {
    let Some(q) = t.quantization.as_ref().filter(|q| q.scale.len() > 1) else {
        return Ok(None);
    };
    let axis = q.quantized_dimension as usize;
    if shape.get(axis) != Some(&q.scale.len()) || q.zero_point.len() != q.scale.len() {
        return Err(format!(
            "tensor `{}` has {} scales along dimension {axis} of a {shape:?} value",
            t.name,
            q.scale.len()
        ));
    }
    let zps = q.zero_point.iter().map(|&z| z as i32).collect();
    Ok(Some((q.scale.clone(), zps, axis)))
}

/// QUANTIZE float to int8 with the output's parameters (per tensor, or per
/// channel along its quantized dimension: TFLite's `PerChannelQuantize`).
pub fn quantize(x: &ArrayD<f32>, out: &Tensor) -> Result<ArrayD<i8>> {
    if let Some((s, zp, axis)) = per_axis(out, x.shape())? {
        let mut y = ArrayD::zeros(x.raw_dim());
        for (i, &v) in x.indexed_iter() {
            let c = i[axis];
            y[&i] = quantize_value(v, s[c], zp[c]);
        }
        return Ok(y);
    }
    let (s, zp) = per_tensor(out)?;
    Ok(x.mapv(|v| quantize_value(v, s, zp)))
}

/// DEQUANTIZE int8 to float with the input's parameters (per tensor, or
/// per channel: TFLite's `PerChannelDequantize`).
pub fn dequantize(x: &ArrayD<i8>, input: &Tensor) -> Result<ArrayD<f32>> {
    if let Some((s, zp, axis)) = per_axis(input, x.shape())? {
        let mut y = ArrayD::zeros(x.raw_dim());
        for (i, &q) in x.indexed_iter() {
            let c = i[axis];
            y[&i] = dequantize_value(q, s[c], zp[c]);
        }
        return Ok(y);
    }
    let (s, zp) = per_tensor(input)?;
    Ok(x.mapv(|q| dequantize_value(q, s, zp)))
}

/// QUANTIZE float to uint8 with the output's parameters.
pub fn quantize_uint8(x: &ArrayD<f32>, out: &Tensor) -> Result<ArrayD<u8>> {
    let (s, zp) = per_tensor(out)?;
    Ok(x.mapv(|v| quantize_value_uint8(v, s, zp)))
}

/// DEQUANTIZE uint8 to float with the input's parameters.
pub fn dequantize_uint8(x: &ArrayD<u8>, input: &Tensor) -> Result<ArrayD<f32>> {
    let (s, zp) = per_tensor(input)?;
    Ok(x.mapv(|q| dequantize_int(i32::from(q), s, zp)))
}

/// QUANTIZE of 8-bit integers to 8-bit integers (int8 ↔ uint8 at a
/// model's boundary): TFLite's reference `Requantize`,
/// `MultiplyByQuantizedMultiplier(q - input_zp, input_scale / output_scale)
/// + output_zp` clamped to `range` (the output type's), with the common
/// `MultiplyByQuantizedMultiplier` LiteRT's build compiles (double
/// rounding, as its convolutions); with equal scales this is `q - input_zp
/// + output_zp` exactly (the multiplier 2^30, shift 1), which TFLite's
/// fast path for a zero point moved by 128 (`q ^ 0x80`) computes too.
/// (With other scales LiteRT's optimized kernel rounds otherwise; its
/// reference kernel, `BUILTIN_REF`, is this one bit for bit.)
pub fn requantize<I: Copy + Into<i32>>(
    x: &ArrayD<I>,
    input: &Tensor,
    out: &Tensor,
    range: (i32, i32),
) -> Result<ArrayD<i32>> {
    let (si, zi) = per_tensor(input)?;
    let (so, zo) = per_tensor(out)?;
    let (m, shift) = quantize_multiplier(f64::from(si) / f64::from(so));
    Ok(
        x.mapv(|q| {
            (multiply_double_rounding(q.into() - zi, m, shift) + zo).clamp(range.0, range.1)
        }),
    )
}

/// SOFTMAX on int8 along the last axis: TFLite's reference integer kernel
/// (gemmlowp fixed point) for the output parameters TFLite requires (scale
/// 1/256, zero point -128); for others, `exp(beta * scale * (q - max))` in
/// float, normalized and quantized.
pub fn softmax_int8(x: &ArrayD<i8>, input: &Tensor, out: &Tensor, beta: f32) -> Result<ArrayD<i8>> {
    let (s, _) = per_tensor(input)?;
    let (os, ozp) = per_tensor(out)?;
    let last = x.ndim().checked_sub(1).ok_or("softmax of a scalar")?;
    let reference = os == 1.0 / 256.0 && ozp == -128;
    let params = softmax_params(f64::from(beta), f64::from(s));
    let mut y = ArrayD::<i8>::zeros(x.raw_dim());
    let mut row_in = Vec::new();
    let mut row_out = Vec::new();
    for (lane, mut out_lane) in x.lanes(Axis(last)).into_iter().zip(y.lanes_mut(Axis(last))) {
        if reference {
            row_in.clear();
            row_in.extend(lane.iter().copied());
            row_out.resize(row_in.len(), 0);
            softmax_row_int8(&row_in, &mut row_out, params);
            out_lane.iter_mut().zip(&row_out).for_each(|(o, &v)| *o = v);
            continue;
        }
        let max = lane.iter().copied().max().unwrap_or(0);
        let e: Vec<f32> = lane
            .iter()
            .map(|&q| (beta * s * (i32::from(q) - i32::from(max)) as f32).exp())
            .collect();
        let sum: f32 = e.iter().sum();
        for (o, v) in out_lane.iter_mut().zip(&e) {
            *o = quantize_value(v / sum, os, ozp);
        }
    }
    Ok(y)
}

/// LOGISTIC on int8: the sigmoid of the dequantized input, quantized.
pub fn logistic_int8(x: &ArrayD<i8>, input: &Tensor, out: &Tensor) -> Result<ArrayD<i8>> {
    let (s, zp) = per_tensor(input)?;
    let (os, ozp) = per_tensor(out)?;
    Ok(x.mapv(|q| {
        let v = dequantize_value(q, s, zp);
        quantize_value(1.0 / (1.0 + (-v).exp()), os, ozp)
    }))
}

/// ARG_MAX of int8 values along `axis` (the first maximum).
pub fn argmax_int8(x: &ArrayD<i8>, axis: usize) -> ArrayD<i64> {
    x.map_axis(Axis(axis), |lane| {
        let mut best = 0;
        for (i, &v) in lane.iter().enumerate() {
            if v > lane[best] {
                best = i;
            }
        }
        best as i64
    })
}
