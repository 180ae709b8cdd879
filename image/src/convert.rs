//! `tf.image.convert_image_dtype`: between TF's image dtypes with TF's
//! scaling, and `float16` rounding.
//!
//! Rules (TF's `convert_image_dtype`, visible in `golden/images.json`):
//! - float → float: a cast (to float16: round to nearest even);
//! - int → float: `cast(x) · (1 / max)` with the factor in the target
//!   float type;
//! - float → int: `cast(x · (max + 0.5))` in the source float type, with
//!   `saturate` clipping to the target's range first; without it an
//!   out-of-range value converts as TF's C++ cast does on x86-64 (`1.0` to
//!   int32 is `−2^31`, as `golden/images.json` records);
//! - int → int: narrowing floor-divides by the power-of-two ratio of the
//!   ranges (then a wrapping cast, as TF: negative int16 → uint8 wraps),
//!   widening multiplies by it.

use ndarray::ArrayD;

use crate::tensor::{DType, Image, ImageError, Result};

/// The largest value of an integer dtype.
fn int_max(d: DType) -> Option<i64> {
    Some(match d {
        DType::U8 => u8::MAX as i64,
        DType::U16 => u16::MAX as i64,
        DType::I16 => i16::MAX as i64,
        DType::I32 => i32::MAX as i64,
        _ => return None,
    })
}

fn int_min(d: DType) -> i64 {
    match d {
        DType::I16 => i16::MIN as i64,
        DType::I32 => i32::MIN as i64,
        _ => 0,
    }
}

/// C++'s float → integer conversion as TF's kernels run it on x86-64
/// (`cvttss2si`): truncation when the value fits an int32, otherwise (and
/// for NaN) the "integer indefinite" `i32::MIN`; a narrower target then
/// wraps (`int_image`'s casts).
fn x86_float_to_int(v: f64) -> i64 {
    let t = v.trunc();
    if (-2_147_483_648.0..2_147_483_648.0).contains(&t) {
        t as i64
    } else {
        i32::MIN as i64
    }
}

/// `x` rounded to float16 (nearest, ties to even), as an f32.
pub fn round_to_f16(x: f32) -> f32 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    const MAX: f32 = 65504.0;
    let a = x.abs();
    // The quantum of float16 at |x|: 2^(e − 10), subnormals below 2^-14.
    let e = (a.log2().floor() as i32).max(-14);
    let quantum = 2f32.powi(e - 10);
    let r = (a / quantum).round_ties_even() * quantum;
    let r = if r > MAX {
        // Rounds to infinity above the midpoint to the next power.
        if a >= 65520.0 {
            f32::INFINITY
        } else {
            MAX
        }
    } else {
        r
    };
    r.copysign(x)
}

fn ints_of(image: &Image) -> Option<ArrayD<i64>> {
    Some(match image {
        Image::U8(a) => a.mapv(i64::from),
        Image::U16(a) => a.mapv(i64::from),
        Image::I16(a) => a.mapv(i64::from),
        Image::I32(a) => a.mapv(i64::from),
        _ => return None,
    })
}

/// Wrapping casts of i64 values to an integer dtype (C++'s conversion).
fn int_image(values: ArrayD<i64>, to: DType) -> Image {
    match to {
        DType::U8 => Image::U8(values.mapv(|v| v as u8)),
        DType::U16 => Image::U16(values.mapv(|v| v as u16)),
        DType::I16 => Image::I16(values.mapv(|v| v as i16)),
        _ => Image::I32(values.mapv(|v| v as i32)),
    }
}

/// `tf.image.convert_image_dtype(image, dtype, saturate)`.
pub fn convert_image_dtype(image: &Image, dtype: DType, saturate: bool) -> Result<Image> {
    let from = image.dtype();
    if from == dtype {
        return Ok(image.clone());
    }
    match (int_max(from), int_max(dtype)) {
        // int → int
        (Some(fmax), Some(tmax)) => {
            let x = ints_of(image).expect("an integer image");
            let v = if fmax > tmax {
                let scale = (fmax + 1) / (tmax + 1);
                x.mapv(|v| v.div_euclid(scale))
            } else {
                let scale = (tmax + 1) / (fmax + 1);
                x.mapv(|v| v * scale)
            };
            Ok(int_image(v, dtype))
        }
        // int → float
        (Some(fmax), None) => {
            let x = ints_of(image).expect("an integer image");
            Ok(match dtype {
                DType::F64 => {
                    let s = 1.0 / fmax as f64;
                    Image::F64(x.mapv(|v| v as f64 * s))
                }
                DType::F16 => {
                    let s = round_to_f16((1.0 / fmax as f64) as f32);
                    Image::F16(x.mapv(|v| round_to_f16(round_to_f16(v as f32) * s)))
                }
                _ => {
                    let s = (1.0 / fmax as f64) as f32;
                    Image::F32(x.mapv(|v| v as f32 * s))
                }
            })
        }
        // float → int
        (None, Some(tmax)) => {
            let (lo, hi) = (int_min(dtype) as f64, tmax as f64);
            // The product in the source float type.
            let scaled: ArrayD<f64> = match image {
                Image::F64(a) => a.mapv(|v| v * (tmax as f64 + 0.5)),
                other => {
                    let s = (tmax as f64 + 0.5) as f32;
                    other.to_f32().mapv(|v| f64::from(v * s))
                }
            };
            let mut out = Vec::with_capacity(scaled.len());
            for &v in scaled.iter() {
                if saturate {
                    // TF's saturate_cast clips in the source type to the
                    // target's range (its max as that float type, which for
                    // int32 rounds up to 2^31: that value saturates to max).
                    if v.is_nan() {
                        out.push(0);
                        continue;
                    }
                    let t = v.trunc();
                    out.push(if t >= hi {
                        hi as i64
                    } else if t <= lo {
                        lo as i64
                    } else {
                        t as i64
                    });
                } else {
                    out.push(x86_float_to_int(v));
                }
            }
            let values = ArrayD::from_shape_vec(scaled.raw_dim(), out)
                .map_err(|e| ImageError::new(e.to_string()))?;
            Ok(int_image(values, dtype))
        }
        // float → float
        (None, None) => Ok(match dtype {
            DType::F64 => Image::F64(image.to_f64()),
            DType::F16 => Image::F16(image.to_f32().mapv(round_to_f16)),
            _ => Image::F32(image.to_f32()),
        }),
    }
}
