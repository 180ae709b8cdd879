//! `tf.image`'s measures: `total_variation`, `image_gradients`,
//! `sobel_edges`, `psnr`, and the gradients TF defines for the first three
//! (the adjoint of each, given the gradient of its output).
//!
//! Owns: TF's definitions (forward differences, zero-padded at the last row
//! and column for `image_gradients`; the 3×3 Sobel kernels on a
//! REFLECT-padded image, last axis `[dy, dx]`; PSNR from the mean squared
//! error of the images converted to float32 in `[0, 1]`).
//! Invariant: a gradient has the image's shape and is exactly the adjoint of
//! the forward op (`|·|`'s derivative at 0 is 0, TF's `sign`).

use ndarray::{ArrayD, IxDyn};

use crate::convert::convert_image_dtype;
use crate::tensor::{DType, Image, ImageError, Result};

fn float32(image: &Image, op: &str) -> Result<ArrayD<f32>> {
    match image {
        Image::F32(a) | Image::F16(a) => Ok(a.as_standard_layout().into_owned()),
        Image::F64(a) => Ok(a.mapv(|v| v as f32)),
        other => Err(ImageError::new(format!(
            "{op}: the image must be float, got {}",
            other.dtype().name()
        ))),
    }
}

/// `[N, H, W, C]` dims of a rank-3 (N = 1) or rank-4 array.
fn nhwc(shape: &[usize], op: &str, four_only: bool) -> Result<[usize; 4]> {
    match shape.len() {
        4 => Ok([shape[0], shape[1], shape[2], shape[3]]),
        3 if !four_only => Ok([1, shape[0], shape[1], shape[2]]),
        _ => Err(ImageError::new(format!(
            "{op}: the image must be {}, got shape {shape:?}",
            if four_only {
                "4-D [batch, height, width, channels]"
            } else {
                "3-D or 4-D"
            }
        ))),
    }
}

fn sign(v: f32) -> f32 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// `tf.image.total_variation(images)`: per image, the sum of the absolute
/// differences of vertically and horizontally adjacent pixels (a scalar for
/// one image, `[N]` for a batch).
pub fn total_variation(image: &Image) -> Result<ArrayD<f32>> {
    let x = float32(image, "total_variation")?;
    let [n, h, w, c] = nhwc(x.shape(), "total_variation", false)?;
    let px = x.as_slice().expect("standard layout");
    let at = |b: usize, i: usize, j: usize, k: usize| px[((b * h + i) * w + j) * c + k];
    let mut out = Vec::with_capacity(n);
    for b in 0..n {
        let mut dy = 0f64;
        let mut dx = 0f64;
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    if i + 1 < h {
                        dy += f64::from((at(b, i + 1, j, k) - at(b, i, j, k)).abs());
                    }
                    if j + 1 < w {
                        dx += f64::from((at(b, i, j + 1, k) - at(b, i, j, k)).abs());
                    }
                }
            }
        }
        out.push((dy as f32) + (dx as f32));
    }
    let dims: Vec<usize> = if x.ndim() == 4 { vec![n] } else { vec![] };
    ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| ImageError::new(e.to_string()))
}

/// The gradient of `total_variation` w.r.t. the image, given the gradient
/// of its output (a scalar, or one value per image).
pub fn total_variation_grad(image: &Image, grad_output: &ArrayD<f32>) -> Result<ArrayD<f32>> {
    let x = float32(image, "total_variation")?;
    let [n, h, w, c] = nhwc(x.shape(), "total_variation", false)?;
    if grad_output.len() != n {
        return Err(ImageError::new(format!(
            "total_variation: {} output gradients for {n} images",
            grad_output.len()
        )));
    }
    let g: Vec<f32> = grad_output.iter().copied().collect();
    let px = x.as_slice().expect("standard layout");
    let idx = |b: usize, i: usize, j: usize, k: usize| ((b * h + i) * w + j) * c + k;
    let mut out = vec![0f32; px.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    if i + 1 < h {
                        let s = g[b] * sign(px[idx(b, i + 1, j, k)] - px[idx(b, i, j, k)]);
                        out[idx(b, i + 1, j, k)] += s;
                        out[idx(b, i, j, k)] -= s;
                    }
                    if j + 1 < w {
                        let s = g[b] * sign(px[idx(b, i, j + 1, k)] - px[idx(b, i, j, k)]);
                        out[idx(b, i, j + 1, k)] += s;
                        out[idx(b, i, j, k)] -= s;
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(x.raw_dim(), out).map_err(|e| ImageError::new(e.to_string()))
}

/// `tf.image.image_gradients(image)` of a `[N, H, W, C]` batch: `(dy, dx)`,
/// forward differences with zeros in the last row (`dy`) and column (`dx`).
pub fn image_gradients(image: &Image) -> Result<(ArrayD<f32>, ArrayD<f32>)> {
    let x = float32(image, "image_gradients")?;
    let [n, h, w, c] = nhwc(x.shape(), "image_gradients", true)?;
    let px = x.as_slice().expect("standard layout");
    let idx = |b: usize, i: usize, j: usize, k: usize| ((b * h + i) * w + j) * c + k;
    let mut dy = vec![0f32; px.len()];
    let mut dx = vec![0f32; px.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    if i + 1 < h {
                        dy[idx(b, i, j, k)] = px[idx(b, i + 1, j, k)] - px[idx(b, i, j, k)];
                    }
                    if j + 1 < w {
                        dx[idx(b, i, j, k)] = px[idx(b, i, j + 1, k)] - px[idx(b, i, j, k)];
                    }
                }
            }
        }
    }
    let shape = x.raw_dim();
    Ok((
        ArrayD::from_shape_vec(shape.clone(), dy).map_err(|e| ImageError::new(e.to_string()))?,
        ArrayD::from_shape_vec(shape, dx).map_err(|e| ImageError::new(e.to_string()))?,
    ))
}

/// The gradient of `image_gradients` w.r.t. the image, given the gradients
/// of `dy` and `dx`.
pub fn image_gradients_grad(
    image: &Image,
    grad_dy: &ArrayD<f32>,
    grad_dx: &ArrayD<f32>,
) -> Result<ArrayD<f32>> {
    let x = float32(image, "image_gradients")?;
    let [n, h, w, c] = nhwc(x.shape(), "image_gradients", true)?;
    if grad_dy.shape() != x.shape() || grad_dx.shape() != x.shape() {
        return Err(ImageError::new(
            "image_gradients: the output gradients must have the image's shape",
        ));
    }
    let gy: Vec<f32> = grad_dy.iter().copied().collect();
    let gx: Vec<f32> = grad_dx.iter().copied().collect();
    let idx = |b: usize, i: usize, j: usize, k: usize| ((b * h + i) * w + j) * c + k;
    let mut out = vec![0f32; x.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    let at = idx(b, i, j, k);
                    if i + 1 < h {
                        out[idx(b, i + 1, j, k)] += gy[at];
                        out[at] -= gy[at];
                    }
                    if j + 1 < w {
                        out[idx(b, i, j + 1, k)] += gx[at];
                        out[at] -= gx[at];
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(x.raw_dim(), out).map_err(|e| ImageError::new(e.to_string()))
}

/// The Sobel kernels `[dy, dx]`, `kernel[d][a][b]` at row offset `a`,
/// column offset `b`.
const SOBEL: [[[f32; 3]; 3]; 2] = [
    [[-1.0, -2.0, -1.0], [0.0, 0.0, 0.0], [1.0, 2.0, 1.0]],
    [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]],
];

/// The source index of padded index `p` (REFLECT padding by one, edge not
/// repeated) along an axis of `n ≥ 2`.
fn reflect(p: usize, n: usize) -> usize {
    if p == 0 {
        1
    } else if p == n + 1 {
        n - 2
    } else {
        p - 1
    }
}

fn sobel_dims(x: &ArrayD<f32>) -> Result<[usize; 4]> {
    let d = nhwc(x.shape(), "sobel_edges", true)?;
    if d[1] < 2 || d[2] < 2 {
        return Err(ImageError::new(format!(
            "sobel_edges: REFLECT padding needs a height and width of at least 2, got {}x{}",
            d[1], d[2]
        )));
    }
    Ok(d)
}

/// `tf.image.sobel_edges(image)` of a `[N, H, W, C]` batch:
/// `[N, H, W, C, 2]`, the last axis `[dy, dx]`.
pub fn sobel_edges(image: &Image) -> Result<ArrayD<f32>> {
    let x = float32(image, "sobel_edges")?;
    let [n, h, w, c] = sobel_dims(&x)?;
    let px = x.as_slice().expect("standard layout");
    let mut out = vec![0f32; px.len() * 2];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    for (d, kernel) in SOBEL.iter().enumerate() {
                        let mut acc = 0f32;
                        for (a, row) in kernel.iter().enumerate() {
                            for (e, &kv) in row.iter().enumerate() {
                                let si = reflect(i + a, h);
                                let sj = reflect(j + e, w);
                                acc += kv * px[((b * h + si) * w + sj) * c + k];
                            }
                        }
                        out[(((b * h + i) * w + j) * c + k) * 2 + d] = acc;
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, h, w, c, 2]), out).map_err(|e| ImageError::new(e.to_string()))
}

/// The gradient of `sobel_edges` w.r.t. the image, given the gradient of its
/// `[N, H, W, C, 2]` output.
pub fn sobel_edges_grad(image: &Image, grad_output: &ArrayD<f32>) -> Result<ArrayD<f32>> {
    let x = float32(image, "sobel_edges")?;
    let [n, h, w, c] = sobel_dims(&x)?;
    if grad_output.shape() != [n, h, w, c, 2] {
        return Err(ImageError::new(
            "sobel_edges: the output gradient must be [N, H, W, C, 2]",
        ));
    }
    let g: Vec<f32> = grad_output.iter().copied().collect();
    let mut out = vec![0f32; x.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    for (d, kernel) in SOBEL.iter().enumerate() {
                        let gv = g[(((b * h + i) * w + j) * c + k) * 2 + d];
                        for (a, row) in kernel.iter().enumerate() {
                            for (e, &kv) in row.iter().enumerate() {
                                let si = reflect(i + a, h);
                                let sj = reflect(j + e, w);
                                out[((b * h + si) * w + sj) * c + k] += kv * gv;
                            }
                        }
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(x.raw_dim(), out).map_err(|e| ImageError::new(e.to_string()))
}

/// `tf.image.psnr(a, b, max_val)`: `20·log10(max) − 10·log10(mse)` per
/// image, on the images converted to float32 (`max_val` in the images'
/// dtype, converted likewise); identical images give +inf.
pub fn psnr(a: &Image, b: &Image, max_val: f64) -> Result<ArrayD<f32>> {
    if a.shape() != b.shape() || a.dtype() != b.dtype() {
        return Err(ImageError::new(format!(
            "psnr: the images must have the same shape and dtype, got {:?} {} and {:?} {}",
            a.shape(),
            a.dtype().name(),
            b.shape(),
            b.dtype().name()
        )));
    }
    let rank = a.shape().len();
    if rank < 3 {
        return Err(ImageError::new(
            "psnr: the images must be at least three-dimensional",
        ));
    }
    // max_val cast to the images' dtype, then converted to float32.
    let max_image = match a.dtype() {
        DType::U8 => Image::U8(ArrayD::from_elem(IxDyn(&[]), max_val as u8)),
        DType::U16 => Image::U16(ArrayD::from_elem(IxDyn(&[]), max_val as u16)),
        DType::I16 => Image::I16(ArrayD::from_elem(IxDyn(&[]), max_val as i16)),
        DType::I32 => Image::I32(ArrayD::from_elem(IxDyn(&[]), max_val as i32)),
        _ => Image::F32(ArrayD::from_elem(IxDyn(&[]), max_val as f32)),
    };
    let max = convert_image_dtype(&max_image, DType::F32, false)?.to_f32();
    let max = max.iter().next().copied().unwrap_or(1.0);
    let x = convert_image_dtype(a, DType::F32, false)?.to_f32();
    let y = convert_image_dtype(b, DType::F32, false)?.to_f32();
    let per: usize = a.shape()[rank - 3..].iter().product();
    let images = x.len() / per.max(1);
    let xs: Vec<f32> = x.iter().copied().collect();
    let ys: Vec<f32> = y.iter().copied().collect();
    let mut out = Vec::with_capacity(images);
    let ln10 = 10f32.ln();
    let factor = (10.0 / std::f64::consts::LN_10) as f32;
    for m in 0..images {
        let s = m * per;
        let mse = (xs[s..s + per]
            .iter()
            .zip(&ys[s..s + per])
            .map(|(p, q)| {
                let d = f64::from(p - q);
                d * d
            })
            .sum::<f64>()
            / per as f64) as f32;
        out.push(20.0 * max.ln() / ln10 - factor * mse.ln());
    }
    let dims = &a.shape()[..rank - 3];
    ArrayD::from_shape_vec(IxDyn(dims), out).map_err(|e| ImageError::new(e.to_string()))
}
