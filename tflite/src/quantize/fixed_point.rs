//! The integer kernels' fixed-point arithmetic: a real multiplier as a Q31
//! integer and a shift ([`quantize_multiplier`]), the product by it rounded
//! once ([`multiply_by_quantized_multiplier`], as LiteRT's reference
//! FULLY_CONNECTED computes it with its inlined single-rounding copy) or
//! twice ([`multiply_double_rounding`]: gemmlowp's, the common
//! `MultiplyByQuantizedMultiplier` of LiteRT's default build that its
//! convolution kernels call), gemmlowp's rounding primitives, and the int8
//! SOFTMAX's fixed-point exponential and reciprocal ([`softmax_params`],
//! [`softmax_row_int8`]).
//!
//! Invariants: each function computes its C++ namesake's bits (int32 and
//! int64 intermediates as there, wrapping and saturating where it does).

use super::params::{round_half_away, QMAX, QMIN};

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
