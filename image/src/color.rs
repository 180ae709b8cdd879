//! `tf.image`'s colour-space conversions: `rgb_to_grayscale`,
//! `grayscale_to_rgb`, `rgb_to_hsv`, `hsv_to_rgb`, `rgb_to_yiq`,
//! `yiq_to_rgb`, `rgb_to_yuv`, `yuv_to_rgb`.
//!
//! Owns: TF's constants (the ITU-R 601 grey weights, the YIQ and YUV
//! matrices) and the float32 order of operations of TF's kernels.
//! Invariant: the last axis is the channel axis; YIQ/YUV/HSV take float
//! images, grayscale conversion any dtype (through `convert_image_dtype`).

use ndarray::{ArrayD, Axis, IxDyn};

use crate::convert::convert_image_dtype;
use crate::tensor::{DType, Image, ImageError, Result};

fn channels(image: &Image, want: usize, op: &str) -> Result<()> {
    let s = image.shape();
    match s.last() {
        Some(&c) if c == want => Ok(()),
        _ => Err(ImageError::new(format!(
            "{op}: the last dimension of 'images' must be {want}, got shape {s:?}"
        ))),
    }
}

fn float_input(image: &Image, op: &str) -> Result<ArrayD<f32>> {
    match image {
        Image::F32(a) | Image::F16(a) => Ok(a.clone()),
        Image::F64(a) => Ok(a.mapv(|v| v as f32)),
        other => Err(ImageError::new(format!(
            "{op}: the image must be float, got {}",
            other.dtype().name()
        ))),
    }
}

/// `out[.., j] = Σ_i x[.., i] · kernel[i][j]` (TF's `tensordot` over the
/// channel axis), in float32, in increasing `i`.
fn tensordot3(x: &ArrayD<f32>, kernel: &[[f32; 3]; 3]) -> ArrayD<f32> {
    let mut out = x.clone();
    for (src, dst) in x
        .lanes(Axis(x.ndim() - 1))
        .into_iter()
        .zip(out.lanes_mut(Axis(x.ndim() - 1)))
    {
        let mut dst = dst;
        for j in 0..3 {
            dst[j] = src[0] * kernel[0][j] + src[1] * kernel[1][j] + src[2] * kernel[2][j];
        }
    }
    out
}

/// TF's RGB to YIQ kernel, digit for digit: `out[j] = Σ_i x[i] · K[i][j]`.
#[allow(clippy::excessive_precision)]
pub const RGB_TO_YIQ: [[f32; 3]; 3] = [
    [0.299, 0.595_900_6, 0.2115],
    [0.587, -0.274_556_67, -0.522_736_17],
    [0.114, -0.321_343_92, 0.311_199_55],
];
/// TF's YIQ to RGB kernel, digit for digit: `out[j] = Σ_i x[i] · K[i][j]`.
#[allow(clippy::excessive_precision)]
pub const YIQ_TO_RGB: [[f32; 3]; 3] = [
    [1.0, 1.0, 1.0],
    [0.955_986_34, -0.272_012_83, -1.106_740_2],
    [0.620_824_8, -0.647_204_24, 1.704_230_5],
];
/// TF's RGB to YUV kernel, digit for digit: `out[j] = Σ_i x[i] · K[i][j]`.
#[allow(clippy::excessive_precision)]
pub const RGB_TO_YUV: [[f32; 3]; 3] = [
    [0.299, -0.147_141_19, 0.614_975_4],
    [0.587, -0.288_869_16, -0.514_965_1],
    [0.114, 0.436_010_35, -0.100_010_26],
];
/// TF's YUV to RGB kernel, digit for digit: `out[j] = Σ_i x[i] · K[i][j]`.
#[allow(clippy::excessive_precision)]
pub const YUV_TO_RGB: [[f32; 3]; 3] = [
    [1.0, 1.0, 1.0],
    [0.0, -0.394_642_33, 2.032_061_8],
    [1.139_883, -0.580_621_85, 0.0],
];

fn linear(image: &Image, kernel: &[[f32; 3]; 3], op: &str) -> Result<Image> {
    channels(image, 3, op)?;
    let x = float_input(image, op)?;
    Ok(Image::F32(tensordot3(&x, kernel)))
}

/// `tf.image.rgb_to_yiq(images)`.
pub fn rgb_to_yiq(image: &Image) -> Result<Image> {
    linear(image, &RGB_TO_YIQ, "rgb_to_yiq")
}
/// `tf.image.yiq_to_rgb(images)`.
pub fn yiq_to_rgb(image: &Image) -> Result<Image> {
    linear(image, &YIQ_TO_RGB, "yiq_to_rgb")
}
/// `tf.image.rgb_to_yuv(images)`.
pub fn rgb_to_yuv(image: &Image) -> Result<Image> {
    linear(image, &RGB_TO_YUV, "rgb_to_yuv")
}
/// `tf.image.yuv_to_rgb(images)`.
pub fn yuv_to_rgb(image: &Image) -> Result<Image> {
    linear(image, &YUV_TO_RGB, "yuv_to_rgb")
}

/// TF's `rgb_to_grayscale` weights (ITU-R 601-2 luma).
pub const GRAYSCALE_WEIGHTS: [f32; 3] = [0.2989, 0.5870, 0.1140];

/// `tf.image.rgb_to_grayscale(images)`: the weights 0.2989, 0.5870, 0.1140
/// on the float image (`convert_image_dtype`), converted back to the
/// input's dtype; the channel axis becomes 1.
pub fn rgb_to_grayscale(image: &Image) -> Result<Image> {
    channels(image, 3, "rgb_to_grayscale")?;
    let dtype = image.dtype();
    let Image::F32(x) = convert_image_dtype(image, DType::F32, false)? else {
        return Err(ImageError::new(
            "rgb_to_grayscale: the float image is not float32",
        ));
    };
    let w = GRAYSCALE_WEIGHTS;
    let gray: ArrayD<f32> = x
        .lanes(Axis(x.ndim() - 1))
        .into_iter()
        .map(|p| p[0] * w[0] + p[1] * w[1] + p[2] * w[2])
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<ndarray::Array1<f32>>()
        .into_dyn();
    let mut dims = image.shape().to_vec();
    *dims.last_mut().expect("rank ≥ 1") = 1;
    let gray = gray
        .into_shape_with_order(IxDyn(&dims))
        .map_err(|e| ImageError::new(e.to_string()))?;
    convert_image_dtype(&Image::F32(gray), dtype, false)
}

/// `tf.image.grayscale_to_rgb(images)`: the one channel repeated three times.
pub fn grayscale_to_rgb(image: &Image) -> Result<Image> {
    channels(image, 1, "grayscale_to_rgb")?;
    let axis = Axis(image.shape().len() - 1);
    Ok(
        crate::tensor::each_dtype!(image, a => ndarray::concatenate(axis, &[a.view(), a.view(), a.view()])
        .expect("equal shapes")),
    )
}

/// One pixel's (h, s, v), h in [0, 1), as TF's `RGBToHSV` and
/// `AdjustSaturation` kernels compute it.
pub(crate) fn hsv_of(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let v = r.max(g).max(b);
    let range = v - r.min(g).min(b);
    let s = if v > 0.0 { range / v } else { 0.0 };
    let norm = 1.0f32 / (6.0f32 * range);
    let mut h = if r == v {
        norm * (g - b)
    } else if g == v {
        norm * (b - r) + 2.0 / 6.0
    } else {
        norm * (r - g) + 4.0 / 6.0
    };
    if range <= 0.0 {
        h = 0.0;
    }
    if h < 0.0 {
        h += 1.0;
    }
    (h, s, v)
}

/// `tf.image.rgb_to_hsv(images)` (TF's `RGBToHSV` kernel).
pub fn rgb_to_hsv(image: &Image) -> Result<Image> {
    channels(image, 3, "rgb_to_hsv")?;
    let x = float_input(image, "rgb_to_hsv")?;
    let mut out = x.clone();
    for (p, mut o) in x
        .lanes(Axis(x.ndim() - 1))
        .into_iter()
        .zip(out.lanes_mut(Axis(x.ndim() - 1)))
    {
        let (h, s, v) = hsv_of(p[0], p[1], p[2]);
        o[0] = h;
        o[1] = s;
        o[2] = v;
    }
    Ok(Image::F32(out))
}

/// `tf.image.hsv_to_rgb(images)` (TF's `HSVToRGB` kernel).
pub fn hsv_to_rgb(image: &Image) -> Result<Image> {
    channels(image, 3, "hsv_to_rgb")?;
    let x = float_input(image, "hsv_to_rgb")?;
    let mut out = x.clone();
    for (p, mut o) in x
        .lanes(Axis(x.ndim() - 1))
        .into_iter()
        .zip(out.lanes_mut(Axis(x.ndim() - 1)))
    {
        let (h, s, v) = (p[0], p[1], p[2]);
        // TF's HSVToRGB: each channel a clipped piecewise-linear function
        // of 6·h, mixed with grey by the saturation.
        let dh = h * 6.0;
        let dr = ((dh - 3.0).abs() - 1.0).clamp(0.0, 1.0);
        let dg = (-(dh - 2.0).abs() + 2.0).clamp(0.0, 1.0);
        let db = (-(dh - 4.0).abs() + 2.0).clamp(0.0, 1.0);
        let one_s = -s + 1.0;
        o[0] = (one_s + s * dr) * v;
        o[1] = (one_s + s * dg) * v;
        o[2] = (one_s + s * db) * v;
    }
    Ok(Image::F32(out))
}
