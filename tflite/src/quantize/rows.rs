//! The hybrid kernels' quantization of their float inputs, one row or image
//! at a time, as LiteRT's x86 build computes it: asymmetric
//! ([`asymmetric_quantize_row`]) and symmetric ([`symmetric_quantize_row`]),
//! the products rounded eight lanes at a time as its vector loops round
//! them ([`round_vector_lane`]) and half away from zero after.
//!
//! Invariants: the same row gives LiteRT's scale, zero point and values
//! bit for bit (`interop/test_tflite_cnn_dynamic.py`).

use super::params::{round_half_away, QMAX, QMIN};

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
