//! The arithmetic of TFLite's int8 quantization, as TF's converter and
//! TFLite's reference kernels compute it.
//!
//! Owns: choosing quantization parameters — [`symmetric_per_channel`]
//! (weights: `scale = max|w| / 127` per output channel, zero point 0, values
//! in [-127, 127]), [`asymmetric_params`] (activations from a calibrated
//! range: the range widened to contain 0, `scale = (max - min) / 255`, the
//! zero point nudged to an integer in [-128, 127]), [`quantize_bias`] (int32,
//! `scale = input_scale * weight_scale`) — and the integer kernels' helpers:
//! [`quantize_multiplier`] (a real multiplier as a Q31 integer and a shift),
//! [`multiply_by_quantized_multiplier`] (`x * m * 2^shift` rounded once, as
//! LiteRT's builds (`TFLITE_SINGLE_ROUNDING`) compute it; gemmlowp's double
//! rounding is [`multiply_double_rounding`]),
//! [`asymmetric_quantize_row`] (the hybrid kernels' per-row input
//! quantization), [`round_half_away`].
//!
//! Invariants: rounding is TFLite's (`TfLiteRound`: half away from zero) and
//! every intermediate has TFLite's type (f32 where TFLite computes in float,
//! f64 where it computes in double), so the same inputs give the same bits.

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

/// A float as int8 with `scale` and `zero_point` (TFLite's QUANTIZE:
/// `round(x / scale) + zero_point`, clamped).
pub fn quantize_value(x: f32, scale: f32, zero_point: i32) -> i8 {
    let q = round_half_away(f64::from(x / scale)) as i64 + i64::from(zero_point);
    q.clamp(i64::from(QMIN), i64::from(QMAX)) as i8
}

/// An int8 value as float (DEQUANTIZE: `scale * (q - zero_point)`).
pub fn dequantize_value(q: i8, scale: f32, zero_point: i32) -> f32 {
    // TFLite's DEQUANTIZE computes in double.
    (f64::from(scale) * f64::from(i32::from(q) - zero_point)) as f32
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

/// TFLite's `QuantizeMultiplier`: `m = q * 2^shift` with `q` in [0.5, 1) as
/// a Q31 integer; 0 for 0, and 0 when the shift is below -31.
pub fn quantize_multiplier(m: f64) -> (i32, i32) {
    if m == 0.0 {
        return (0, 0);
    }
    let (q, mut shift) = frexp(m);
    let mut q_fixed = round_half_away(q * (1i64 << 31) as f64) as i64;
    if q_fixed == 1i64 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return (0, 0);
    }
    (q_fixed as i32, shift)
}

/// `x = q * 2^e` with `|q|` in [0.5, 1) (C's `frexp`), for finite non-zero `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale up first.
        let (q, e) = frexp(x * (1u64 << 54) as f64);
        return (q, e - 54);
    }
    let e = exp - 1022;
    let q = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (q, e)
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`.
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == b && a == i32::MIN {
        return i32::MAX;
    }
    let ab = i64::from(a) * i64::from(b);
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent`, halves away from zero.
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> exponent) + i32::from(remainder > threshold)
}

/// TFLite's `MultiplyByQuantizedMultiplier` as LiteRT is built
/// (`TFLITE_SINGLE_ROUNDING`): `x * multiplier * 2^shift` rounded once.
pub fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    multiply_single_rounding(x, multiplier, shift)
}

/// `MultiplyByQuantizedMultiplier` without `TFLITE_SINGLE_ROUNDING`
/// (gemmlowp's double rounding: a rounding doubling high multiply, then a
/// rounding right shift).
pub fn multiply_double_rounding(x: i32, multiplier: i32, shift: i32) -> i32 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(x.wrapping_mul(1 << left), multiplier),
        right,
    )
}

/// The hybrid kernels' input quantization of one row
/// (`AsymmetricQuantizeFloats`): returns the scale and zero point and fills
/// `out`. A row of zeros (or of one value range collapsed to 0) gets scale
/// 1, zero point 0 and zeros.
pub fn asymmetric_quantize_row(values: &[f32], out: &mut [i8]) -> (f32, i32) {
    let (mn, mx) = values
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let rmin = f64::from(mn.min(0.0));
    let rmax = f64::from(mx.max(0.0));
    if rmin == rmax {
        out.iter_mut().for_each(|q| *q = 0);
        return (1.0, 0);
    }
    let (qmin, qmax) = (f64::from(QMIN), f64::from(QMAX));
    let scale = (rmax - rmin) / (qmax - qmin);
    let zp_from_min = qmin - rmin / scale;
    let zp_from_max = qmax - rmax / scale;
    let err_min = qmin.abs() + (rmin / scale).abs();
    let err_max = qmax.abs() + (rmax / scale).abs();
    let zp = if err_min < err_max {
        zp_from_min
    } else {
        zp_from_max
    };
    let nudged = if zp <= qmin {
        QMIN
    } else if zp >= qmax {
        QMAX
    } else {
        round_half_away(zp) as i32
    };
    let scale = scale as f32;
    // TFLite: `const float scaling_factor_inv = 1.0 / *scaling_factor;`
    let inv = (1.0 / f64::from(scale)) as f32;
    for (q, &v) in out.iter_mut().zip(values) {
        let r = round_half_away(f64::from(nudged as f32 + v * inv)) as i64;
        *q = r.clamp(i64::from(QMIN), i64::from(QMAX)) as i8;
    }
    (scale, nudged)
}

/// TFLite's `MultiplyByQuantizedMultiplier` built with `TFLITE_SINGLE_ROUNDING`:
/// one rounding of `x * multiplier / 2^(31 - shift)`, halves up.
pub fn multiply_single_rounding(x: i32, multiplier: i32, shift: i32) -> i32 {
    let total_shift = 31 - shift;
    let round = 1i64 << (total_shift - 1);
    ((i64::from(x) * i64::from(multiplier) + round) >> total_shift) as i32
}
