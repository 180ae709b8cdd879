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
