//! The arithmetic of TFLite's int8 quantization, as TF's converter and
//! TFLite's reference kernels compute it.
//!
//! Owns: choosing quantization parameters — [`symmetric_per_channel`]
//! (weights: `scale = max|w| / 127` per output channel, zero point 0, values
//! in [-127, 127]; [`symmetric_per_axis`] along any dimension, for the
//! convolutions' filters), [`asymmetric_params`] (activations from a calibrated
//! range: the range widened to contain 0, `scale = (max - min) / 255`, the
//! zero point nudged to an integer in [-128, 127]), [`quantize_bias`] (int32,
//! `scale = input_scale * weight_scale`) — and the integer kernels' helpers:
//! [`quantize_multiplier`] (a real multiplier as a Q31 integer and a shift),
//! [`multiply_by_quantized_multiplier`] (`x * m * 2^shift` rounded once, as
//! LiteRT's reference FULLY_CONNECTED computes it with its inlined
//! single-rounding copy; gemmlowp's double rounding, the common
//! `MultiplyByQuantizedMultiplier` of LiteRT's default build that its
//! convolution kernels call, is [`multiply_double_rounding`]),
//! [`asymmetric_quantize_row`] and [`symmetric_quantize_row`] (the hybrid
//! kernels' input quantization, as LiteRT's x86 build computes it),
//! [`round_half_away`].
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

/// How many leading values of a row LiteRT's quantization loops handle
/// eight at a time (`RoundDownVectors<8>`): those round with
/// [`round_vector_lane`], the rest with [`round_half_away`].
fn vector_part(len: usize) -> usize {
    len & !7
}

/// Each product `f(v)` of `values` rounded as LiteRT's quantization loops
/// round it ([`round_vector_lane`] in the [`vector_part`], then
/// [`round_half_away`]), and made an int8 by `clamp`, into `out`.
fn round_row(values: &[f32], out: &mut [i8], f: impl Fn(f32) -> f32, clamp: impl Fn(i64) -> i8) {
    let vector = vector_part(values.len());
    for (k, (q, &v)) in out.iter_mut().zip(values).enumerate() {
        let p = f(v);
        let r = if k < vector {
            i64::from(round_vector_lane(p))
        } else {
            round_half_away(f64::from(p)) as i64
        };
        *q = clamp(r);
    }
}

/// LiteRT's `RoundToNearest` of a vector lane as its x86 build computes it
/// (NEON intrinsics through `NEON_2_SSE`, no `vcvtaq`): `x ± 0.5` in f32
/// (the sign of `x`), then truncated toward zero. It differs from rounding
/// half away from zero only when the f32 addition rounds up to the next
/// integer (`0.49999997 + 0.5 = 1`).
pub fn round_vector_lane(x: f32) -> i32 {
    let half = if x < 0.0 { -0.5f32 } else { 0.5 };
    (x + half).trunc() as i32
}

/// The hybrid kernels' input quantization of one row or image
/// (`tensor_utils::AsymmetricQuantizeFloats`): returns the scale and zero
/// point and fills `out`. It is LiteRT's x86 build, which compiles the NEON
/// version through `NEON_2_SSE` (`NeonAsymmetricQuantizeFloats`): the range
/// `[min(0, min), max(0, max)]` in f32, its width `max - min` subtracted in
/// f32 and divided by 255 in f64 (the portable version subtracts in f64: its
/// scale can be one ulp apart), the zero point from the end with the smaller
/// error (f64) rounded half away from zero; each value `round(x · (1 /
/// scale)) + zero_point`, clamped, the product rounded by
/// [`round_vector_lane`] in the row's first multiple of 8 values and half
/// away from zero after. A row of zeros gets scale 1, zero point 0 and zeros.
pub fn asymmetric_quantize_row(values: &[f32], out: &mut [i8]) -> (f32, i32) {
    let (mn, mx) = values
        .iter()
        .fold((0f32, 0f32), |(a, b), &v| (a.min(v), b.max(v)));
    if mn == mx {
        out.iter_mut().for_each(|q| *q = 0);
        return (1.0, 0);
    }
    let (qmin, qmax) = (f64::from(QMIN), f64::from(QMAX));
    let scale = f64::from(mx - mn) / (qmax - qmin);
    let (rmin, rmax) = (f64::from(mn), f64::from(mx));
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
    // `const float scaling_factor_inv = 1.0 / *scaling_factor;` (f64).
    let inv = (1.0 / f64::from(scale)) as f32;
    round_row(
        values,
        out,
        |v| v * inv,
        |r| (r + i64::from(nudged)).clamp(i64::from(QMIN), i64::from(QMAX)) as i8,
    );
    (scale, nudged)
}

/// The hybrid kernels' symmetric input quantization of one image
/// (`tensor_utils::SymmetricQuantizeFloats`, the x86 build's NEON version,
/// used by the per-tensor hybrid CONV_2D): `range = max(|min|, |max|)`,
/// scale `range / 127` and each value `round(x · (127 / range))` (both in
/// f32; rounded as [`asymmetric_quantize_row`] rounds) clamped to
/// [-127, 127]. Returns the scale; a row of zeros gets scale 1 and zeros.
pub fn symmetric_quantize_row(values: &[f32], out: &mut [i8]) -> f32 {
    let (mn, mx) = values
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let range = mn.abs().max(mx.abs());
    if values.is_empty() || range == 0.0 {
        out.iter_mut().for_each(|q| *q = 0);
        return 1.0;
    }
    let scale = range / 127.0;
    let inv = 127.0 / range;
    round_row(values, out, |v| inv * v, |r| r.clamp(-127, 127) as i8);
    scale
}

/// TFLite's `MultiplyByQuantizedMultiplier` built with `TFLITE_SINGLE_ROUNDING`:
/// one rounding of `x * multiplier / 2^(31 - shift)`, halves up.
pub fn multiply_single_rounding(x: i32, multiplier: i32, shift: i32) -> i32 {
    let total_shift = 31 - shift;
    let round = 1i64 << (total_shift - 1);
    ((i64::from(x) * i64::from(multiplier) + round) >> total_shift) as i32
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>` (a left shift
/// saturating at the int32 limits for a positive exponent, a rounding right
/// shift for a negative one).
pub fn saturating_rounding_multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent <= 0 {
        return rounding_divide_by_pot(x, -exponent);
    }
    let threshold = (1i32 << (31 - exponent)) - 1;
    if x > threshold {
        i32::MAX
    } else if x < -threshold {
        i32::MIN
    } else {
        x.wrapping_shl(exponent as u32)
    }
}

/// gemmlowp's `exp_on_interval_between_negative_one_quarter_and_0_excl`
/// (Q0.31 in and out).
fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    let mul = saturating_rounding_doubling_high_mul;
    let constant_term: i32 = 1_895_147_668; // exp(-1/8)
    let constant_1_over_3 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = mul(x, x);
    let x3 = mul(x2, x);
    let x4 = mul(x2, x2);
    let x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2);
    let poly = saturating_rounding_multiply_by_pot(
        mul(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2),
        -1,
    );
    constant_term.wrapping_add(mul(constant_term, x.wrapping_add(poly)))
}

/// gemmlowp's `exp_on_negative_values` of a fixed-point number with
/// `integer_bits` integer bits (raw `a <= 0`), as Q0.31.
pub fn exp_on_negative_values(a: i32, integer_bits: i32) -> i32 {
    let fractional_bits = 31 - integer_bits;
    let one_quarter = 1i32 << (fractional_bits - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_one_quarter, integer_bits),
    );
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    for (exponent, multiplier) in [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ] {
        if integer_bits > exponent {
            let shift = fractional_bits + exponent;
            if remainder & (1i32 << shift) != 0 {
                result = saturating_rounding_doubling_high_mul(result, multiplier);
            }
        }
    }
    if integer_bits > 5 {
        let clamp = -(1i32 << (36 - integer_bits).min(30));
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 {
        i32::MAX
    } else {
        result
    }
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1` (Q0.31 in and out).
fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let mul = saturating_rounding_doubling_high_mul;
    let half_denominator = ((i64::from(a) + i64::from(i32::MAX) + 1) / 2) as i32;
    let constant_48_over_17: i32 = 1_515_870_810; // Q2.29
    let constant_neg_32_over_17 = -1_010_580_540;
    let mut x = constant_48_over_17.wrapping_add(mul(half_denominator, constant_neg_32_over_17));
    let one_q2 = 1i32 << 29;
    for _ in 0..3 {
        let half_denominator_times_x = mul(half_denominator, x);
        let one_minus = one_q2.wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(saturating_rounding_multiply_by_pot(mul(x, one_minus), 2));
    }
    saturating_rounding_multiply_by_pot(x, 1)
}

/// TFLite's `GetReciprocal`: `1 / x` of a fixed-point `x` with
/// `x_integer_digits` integer bits, as Q0.31 and the bits it is above 1.
pub fn get_reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros() as i32;
    let num_bits_over_unit = x_integer_digits - headroom_plus_one;
    let shifted_sum_minus_one =
        ((x as u32).wrapping_shl(headroom_plus_one as u32)).wrapping_sub(1u32 << 31) as i32;
    (
        one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
        num_bits_over_unit,
    )
}

/// The integer bits of the scaled input differences of TFLite's int8
/// softmax (`kScaledDiffIntegerBits`).
pub const SOFTMAX_SCALED_DIFF_INTEGER_BITS: i32 = 5;

/// TFLite's int8 SOFTMAX preparation (`PreprocessSoftmaxScaling` as LiteRT
/// is built, `CalculateInputRadius`): the input multiplier, its left shift
/// and `diff_min`.
pub fn softmax_params(beta: f64, input_scale: f64) -> (i32, i32, i32) {
    let max_real_multiplier = ((1i64 << 30) - 1) as f64;
    let bits = SOFTMAX_SCALED_DIFF_INTEGER_BITS;
    let real = (beta * input_scale * (1i64 << (31 - bits)) as f64).min(max_real_multiplier);
    let (multiplier, left_shift) = quantize_multiplier(real);
    let max_input_rescaled =
        f64::from((1 << bits) - 1) * (1i64 << (31 - bits)) as f64 / (1i64 << left_shift) as f64;
    (multiplier, left_shift, -(max_input_rescaled.floor() as i32))
}

/// One row of TFLite's reference int8 SOFTMAX (output scale 1/256, zero
/// point -128), from [`softmax_params`].
pub fn softmax_row_int8(input: &[i8], output: &mut [i8], params: (i32, i32, i32)) {
    let (multiplier, left_shift, diff_min) = params;
    let max = input.iter().copied().max().unwrap_or(0);
    let scaled = |q: i8| {
        let diff = i32::from(q) - i32::from(max);
        (diff >= diff_min).then(|| {
            exp_on_negative_values(
                multiply_by_quantized_multiplier(diff, multiplier, left_shift),
                SOFTMAX_SCALED_DIFF_INTEGER_BITS,
            )
        })
    };
    let mut sum: i32 = 0;
    for &q in input {
        if let Some(e) = scaled(q) {
            // Rescale<12> of a Q0.31 value.
            sum = sum.wrapping_add(rounding_divide_by_pot(e, 12));
        }
    }
    let (shifted_scale, num_bits_over_unit) = get_reciprocal(sum, 12);
    for (o, &q) in output.iter_mut().zip(input) {
        *o = match scaled(q) {
            Some(e) => {
                let unsat = rounding_divide_by_pot(
                    saturating_rounding_doubling_high_mul(shifted_scale, e),
                    num_bits_over_unit + 31 - 8,
                );
                (unsat - 128).clamp(QMIN, QMAX) as i8
            }
            None => QMIN as i8,
        };
    }
}
