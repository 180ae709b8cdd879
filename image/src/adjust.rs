//! `tf.image`'s pixel adjustments: `adjust_brightness`, `adjust_contrast`,
//! `adjust_gamma`, `per_image_standardization`.
//!
//! Owns: TF's dtype round trip (an integer image is converted to float32
//! with `convert_image_dtype`, adjusted, and converted back with
//! `saturate = true`; float16 and float32 images are adjusted in float32)
//! and each adjustment's float32 expression.
//! Invariant: the output dtype is the input's, except
//! `per_image_standardization`, which returns float32 (TF 2 casts an
//! integer image without rescaling it).

use ndarray::ArrayD;

use crate::convert::convert_image_dtype;
use crate::tensor::{DType, Image, ImageError, Result};

/// The float32 pixels of an image (`convert_image_dtype` for integers).
fn float_pixels(image: &Image) -> Result<ArrayD<f32>> {
    match convert_image_dtype(image, DType::F32, false)? {
        Image::F32(a) => Ok(a),
        _ => Err(ImageError::new("the float image is not float32")),
    }
}

/// Back to the input's dtype, saturating (TF's last step).
fn back(adjusted: ArrayD<f32>, dtype: DType) -> Result<Image> {
    convert_image_dtype(&Image::F32(adjusted), dtype, true)
}

fn at_least_3d(image: &Image, op: &str) -> Result<()> {
    let s = image.shape();
    if s.len() < 3 {
        return Err(ImageError::new(format!(
            "{op}: 'image' (shape {s:?}) must be at least three-dimensional."
        )));
    }
    Ok(())
}

/// `tf.image.adjust_brightness(image, delta)`: `x + delta` on the float
/// image.
pub fn adjust_brightness(image: &Image, delta: f32) -> Result<Image> {
    let x = float_pixels(image)?;
    back(x.mapv(|v| v + delta), image.dtype())
}

/// The gradient of `adjust_brightness` on a float image: the identity.
pub fn adjust_brightness_grad(grad_output: &ArrayD<f32>) -> ArrayD<f32> {
    grad_output.clone()
}

/// `tf.image.adjust_contrast(images, contrast_factor)`: per image and
/// channel, `(x − mean) · factor + mean`, the mean over height and width
/// (TF's `AdjustContrastv2`).
pub fn adjust_contrast(image: &Image, contrast_factor: f32) -> Result<Image> {
    at_least_3d(image, "adjust_contrast")?;
    let mut x = float_pixels(image)?;
    let rank = x.ndim();
    let (h, w, c) = (
        x.shape()[rank - 3],
        x.shape()[rank - 2],
        x.shape()[rank - 1],
    );
    let images = x.len() / (h * w * c).max(1);
    let flat = x
        .as_slice_mut()
        .ok_or_else(|| ImageError::new("adjust_contrast: a non-contiguous image"))?;
    for img in flat.chunks_exact_mut((h * w * c).max(1)).take(images) {
        for k in 0..c {
            let sum: f64 = img.iter().skip(k).step_by(c).map(|&v| f64::from(v)).sum();
            let mean = (sum as f32) / (h * w) as f32;
            for v in img.iter_mut().skip(k).step_by(c) {
                *v = (*v - mean) * contrast_factor + mean;
            }
        }
    }
    back(x, image.dtype())
}

/// `tf.image.adjust_gamma(image, gamma, gain)`: `gain · x^gamma` on the
/// float image; `gamma` must be ≥ 0.
pub fn adjust_gamma(image: &Image, gamma: f32, gain: f32) -> Result<Image> {
    if gamma.is_nan() || gamma < 0.0 {
        return Err(ImageError::new(
            "adjust_gamma: Gamma should be a non-negative real number.",
        ));
    }
    let x = float_pixels(image)?;
    back(x.mapv(|v| gain * v.powf(gamma)), image.dtype())
}

/// `tf.image.per_image_standardization(image)`: per image, `(x − mean) /
/// max(stddev, 1/√N)` over its `N = H·W·C` values, as float32 (an integer
/// image is cast, not rescaled); a constant image gives 0.
pub fn per_image_standardization(image: &Image) -> Result<Image> {
    at_least_3d(image, "per_image_standardization")?;
    let mut x = image.to_f32().as_standard_layout().into_owned();
    let rank = x.ndim();
    let n: usize = x.shape()[rank - 3..].iter().product();
    if n == 0 {
        return Ok(Image::F32(x));
    }
    let min_stddev = 1.0 / (n as f32).sqrt();
    let flat = x
        .as_slice_mut()
        .ok_or_else(|| ImageError::new("per_image_standardization: a non-contiguous image"))?;
    for img in flat.chunks_exact_mut(n) {
        let mean = (img.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64) as f32;
        let var = (img
            .iter()
            .map(|&v| {
                let d = f64::from(v - mean);
                d * d
            })
            .sum::<f64>()
            / n as f64) as f32;
        let stddev = var.sqrt().max(min_stddev);
        for v in img.iter_mut() {
            *v = (*v - mean) / stddev;
        }
    }
    Ok(Image::F32(x))
}

/// The float32 `[.., 3]` RGB pixels of an image, for the hue and saturation
/// kernels.
fn rgb_pixels(image: &Image, op: &str) -> Result<ArrayD<f32>> {
    if image.shape().last() != Some(&3) {
        return Err(ImageError::new(format!(
            "{op}: the last dimension of 'image' must be 3 (RGB), got shape {:?}",
            image.shape()
        )));
    }
    Ok(float_pixels(image)?.as_standard_layout().into_owned())
}

/// Back to the input's dtype without saturation (TF's hue and saturation
/// keep values in [0, 1]).
fn back_unsaturated(adjusted: ArrayD<f32>, dtype: DType) -> Result<Image> {
    convert_image_dtype(&Image::F32(adjusted), dtype, false)
}

/// TF's `AdjustHue` kernel: RGB to (hue in [0, 6), min, max), the hue
/// shifted by `6·delta` and wrapped, back to RGB.
fn shift_hue(p: &mut [f32], delta: f32) {
    let (r, g, b) = (p[0], p[1], p[2]);
    let (v_max, v_mid, v_min, category) = if r < g {
        if b < r {
            (g, r, b, 1)
        } else if b > g {
            (b, g, r, 3)
        } else {
            (g, b, r, 2)
        }
    } else if b < g {
        (r, g, b, 0)
    } else if b > r {
        (b, r, g, 4)
    } else {
        (r, b, g, 5)
    };
    let mut h = if v_max == v_min {
        0.0
    } else {
        let ratio = (v_mid - v_min) / (v_max - v_min);
        category as f32
            + if category % 2 == 0 {
                ratio
            } else {
                1.0 - ratio
            }
    };
    h += delta * 6.0;
    while h < 0.0 {
        h += 6.0;
    }
    while h >= 6.0 {
        h -= 6.0;
    }
    let category = h as i32;
    let mut ratio = h - category as f32;
    if category % 2 != 0 {
        ratio = 1.0 - ratio;
    }
    let v_mid = v_min + ratio * (v_max - v_min);
    let (r, g, b) = match category {
        0 => (v_max, v_mid, v_min),
        1 => (v_mid, v_max, v_min),
        2 => (v_min, v_max, v_mid),
        3 => (v_min, v_mid, v_max),
        4 => (v_mid, v_min, v_max),
        _ => (v_max, v_min, v_mid),
    };
    p[0] = r;
    p[1] = g;
    p[2] = b;
}

/// `tf.image.adjust_hue(image, delta)`: the hue rotated by `delta` turns
/// (`delta` in [−1, 1]).
pub fn adjust_hue(image: &Image, delta: f32) -> Result<Image> {
    if !(-1.0..=1.0).contains(&delta) {
        return Err(ImageError::new(
            "adjust_hue: delta must be in the interval [-1, 1]",
        ));
    }
    let mut x = rgb_pixels(image, "adjust_hue")?;
    if let Some(flat) = x.as_slice_mut() {
        flat.chunks_exact_mut(3).for_each(|p| shift_hue(p, delta));
    }
    back_unsaturated(x, image.dtype())
}

/// TF's `AdjustSaturation` kernel on one pixel: to HSV, `s` scaled and
/// clipped to [0, 1], back to RGB.
fn scale_saturation(p: &mut [f32], factor: f32) {
    let (h, s, v) = crate::color::hsv_of(p[0], p[1], p[2]);
    let s = (s * factor).clamp(0.0, 1.0);
    let c = s * v;
    let m = v - c;
    let dh = h * 6.0;
    let category = dh as i32;
    let mut fmodu = dh;
    while fmodu <= 0.0 {
        fmodu += 2.0;
    }
    while fmodu >= 2.0 {
        fmodu -= 2.0;
    }
    let x = c * (1.0 - (fmodu - 1.0).abs());
    let (rr, gg, bb) = match category {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        5 => (c, 0.0, x),
        _ => (0.0, 0.0, 0.0),
    };
    p[0] = rr + m;
    p[1] = gg + m;
    p[2] = bb + m;
}

/// `tf.image.adjust_saturation(image, saturation_factor)`.
pub fn adjust_saturation(image: &Image, factor: f32) -> Result<Image> {
    let mut x = rgb_pixels(image, "adjust_saturation")?;
    if let Some(flat) = x.as_slice_mut() {
        flat.chunks_exact_mut(3)
            .for_each(|p| scale_saturation(p, factor));
    }
    back_unsaturated(x, image.dtype())
}
