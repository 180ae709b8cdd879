//! Choosing quantization parameters, as TF's converter does: the int8
//! range, TFLite's rounding ([`round_half_away`]), symmetric per-channel
//! weights ([`symmetric_per_channel`]: `scale = max|w| / 127` per output
//! channel, zero point 0, values in [-127, 127]; [`symmetric_per_axis`]
//! along any dimension, for the convolutions' filters), asymmetric
//! activations from a calibrated range ([`asymmetric_params`]: the range
//! widened to contain 0, `scale = (max - min) / 255`, the zero point nudged
//! to an integer in [-128, 127]), int32 biases ([`quantize_bias`]: `scale
//! = input_scale * weight_scale`), the parameters of a trained fake
//! quantization's range ([`fake_quant_params`]: TF's converter's, uint8),
//! and one value quantized and dequantized (QUANTIZE, DEQUANTIZE).
//!
//! Invariants: rounding is TFLite's (`TfLiteRound`: half away from zero);
//! every intermediate has TFLite's type (f32 where TFLite computes in
//! float, f64 where it computes in double).

/// The int8 range.
pub const QMIN: i32 = -128;
pub const QMAX: i32 = 127;

/// TfLiteRound: to nearest, halves away from zero.
pub fn round_half_away(x: f64) -> f64 {
    x.round()
}

/// Per-channel symmetric int8 weights along dimension 0 of a `[channels,
/// depth]` matrix (row-major `w`): the scale of each channel and the values.
/// A channel of zeros gets scale 1 (TF's converter's choice) and zeros.
pub fn symmetric_per_channel(w: &[f32], channels: usize) -> (Vec<f32>, Vec<i8>) {
    let depth = w.len().checked_div(channels).unwrap_or(0);
    let mut scales = Vec::with_capacity(channels);
    let mut q = Vec::with_capacity(w.len());
    for c in 0..channels {
        let row = &w[c * depth..(c + 1) * depth];
        let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        let scale = if max == 0.0 { 1.0 } else { max / 127.0 };
        let inv = 1.0 / scale;
        q.extend(
            row.iter()
                .map(|&v| round_half_away(f64::from(v * inv)).clamp(-127.0, 127.0) as i8),
        );
        scales.push(scale);
    }
    (scales, q)
}

/// Per-channel symmetric int8 weights along `axis` of a row-major tensor of
/// `shape` (CONV_2D's `[O, KH, KW, I]` along 0, DEPTHWISE_CONV_2D's
/// `[1, KH, KW, O]` along 3): the scale of each channel and the values, in
/// the tensor's order. The numbers are [`symmetric_per_channel`]'s; `None`
/// when `axis` is not a dimension of `shape` or `w` does not fit it.
pub fn symmetric_per_axis(w: &[f32], shape: &[usize], axis: usize) -> Option<(Vec<f32>, Vec<i8>)> {
    let channels = *shape.get(axis)?;
    if shape.iter().product::<usize>() != w.len() {
        return None;
    }
    let inner: usize = shape[axis + 1..].iter().product();
    let channel = |k: usize| (k / inner) % channels;
    let mut max = vec![0f32; channels];
    for (k, v) in w.iter().enumerate() {
        let m = &mut max[channel(k)];
        *m = m.max(v.abs());
    }
    let scales: Vec<f32> = max
        .iter()
        .map(|&m| if m == 0.0 { 1.0 } else { m / 127.0 })
        .collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let inv = 1.0 / scales[channel(k)];
            round_half_away(f64::from(v * inv)).clamp(-127.0, 127.0) as i8
        })
        .collect();
    Some((scales, q))
}

/// Asymmetric int8 parameters `(scale, zero_point)` of a calibrated range
/// `[min, max]`: the range is widened to contain 0; an empty range (all
/// zeros) gets scale 1 and zero point 0; else `scale = (max - min) / 255`
/// and the zero point `qmin - min / scale` rounded and clamped.
pub fn asymmetric_params(min: f32, max: f32) -> (f32, i32) {
    let rmin = f64::from(min.min(0.0));
    let rmax = f64::from(max.max(0.0));
    if rmin == rmax {
        return (1.0, 0);
    }
    let scale = (rmax - rmin) / f64::from(QMAX - QMIN);
    let zero_point_from_min = f64::from(QMIN) - rmin / scale;
    let zp = if zero_point_from_min <= f64::from(QMIN) {
        QMIN
    } else if zero_point_from_min >= f64::from(QMAX) {
        QMAX
    } else {
        round_half_away(zero_point_from_min) as i32
    };
    (scale as f32, zp)
}

/// The uint8 `(scale, zero_point)` TF's converter gives a fake
/// quantization's range `[min, max]` with 8 bits (`FakeQuantWithMinMaxVars`
/// → a QUANTIZE/DEQUANTIZE pair, `fakeQuantAttrsToType`, unsigned): in
/// double, `qmin = narrow_range ? 1 : 0`, `qmax = 255`, `scale = (max −
/// min) / (qmax − qmin)`, the zero point `qmin − min / scale` rounded
/// (half away from zero) and clamped to `[qmin, qmax]`; a range narrower
/// than double's epsilon gets scale 1 and zero point `qmin`. The int8 zero
/// point of the same values is this one − 128. These are the nudged range
/// of TF's fake-quant kernel: `nudged_min = (qmin − zero_point) · scale`
/// (a range that does not contain 0 too: its zero point clamps to an end,
/// as the kernel's does).
pub fn fake_quant_params(min: f32, max: f32, narrow_range: bool) -> (f32, i32) {
    let (rmin, rmax) = (f64::from(min), f64::from(max));
    let qmin = if narrow_range { 1.0 } else { 0.0 };
    let qmax = 255.0;
    if (rmax - rmin).abs() < f64::EPSILON {
        return (1.0, qmin as i32);
    }
    let scale = (rmax - rmin) / (qmax - qmin);
    let from_min = qmin - rmin / scale;
    let zp = if from_min < qmin {
        qmin
    } else if from_min > qmax {
        qmax
    } else {
        round_half_away(from_min)
    };
    (scale as f32, zp as i32)
}

/// A float as int8 with `scale` and `zero_point` (TFLite's QUANTIZE:
/// `round(x / scale) + zero_point`, clamped).
pub fn quantize_value(x: f32, scale: f32, zero_point: i32) -> i8 {
    let q = round_half_away(f64::from(x / scale)) as i64 + i64::from(zero_point);
    q.clamp(i64::from(QMIN), i64::from(QMAX)) as i8
}

/// A float as uint8 with `scale` and `zero_point` (QUANTIZE to UINT8: the
/// same rounding, clamped to [0, 255]).
pub fn quantize_value_uint8(x: f32, scale: f32, zero_point: i32) -> u8 {
    let q = round_half_away(f64::from(x / scale)) as i64 + i64::from(zero_point);
    q.clamp(0, 255) as u8
}

/// An int8 value as float (DEQUANTIZE: `scale * (q - zero_point)`).
pub fn dequantize_value(q: i8, scale: f32, zero_point: i32) -> f32 {
    dequantize_int(i32::from(q), scale, zero_point)
}

/// An int8 or uint8 value (as i32) as float.
pub fn dequantize_int(q: i32, scale: f32, zero_point: i32) -> f32 {
    // TFLite's DEQUANTIZE computes in double.
    (f64::from(scale) * f64::from(q - zero_point)) as f32
}

/// A float bias as int32 with scale `input_scale * weight_scale[c]` per
/// channel, zero point 0. Returns the scales and the values.
pub fn quantize_bias(
    bias: &[f32],
    input_scale: f32,
    weight_scales: &[f32],
) -> (Vec<f32>, Vec<i32>) {
    let scales: Vec<f32> = weight_scales.iter().map(|&w| input_scale * w).collect();
    let q = bias
        .iter()
        .zip(&scales)
        .map(|(&b, &s)| {
            round_half_away(f64::from(b) / f64::from(s))
                .clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
        })
        .collect();
    (scales, q)
}
