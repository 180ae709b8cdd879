//! `tf.image.ssim` (with `return_index_map`), its gradient w.r.t. the first
//! image, and `tf.image.ssim_multiscale`.
//!
//! Owns: TF's definitions. The window is a `filter_size`² Gaussian of
//! `filter_sigma` (TF's `_fspecial_gauss`: a softmax of `−(i² + j²)/(2σ²)`
//! over centred coordinates), applied per channel as a VALID depthwise
//! convolution (the "reducer"); `c1 = (k1·max)²`, `c2 = (k2·max)²`;
//! luminance `(2μ₁μ₂ + c1)/(μ₁² + μ₂² + c1)`, contrast-structure
//! `(2σ₁₂ + c2)/(σ₁² + σ₂² + c2)` written with TF's expressions; SSIM is the
//! mean of their product over the positions, then over the channels.
//! MS-SSIM downsamples by 2×2 average pooling (SYMMETRIC padding of an odd
//! size first), keeps the relu of each scale's contrast-structure and of
//! the last scale's SSIM, and takes their product with `power_factors` as
//! exponents. Images are converted to float32 (`convert_image_dtype`) and
//! `max_val` with them.
//! Invariant: the statistics are computed in f64 from the float32 pixels;
//! the gradient is the exact adjoint of that computation.

use ndarray::{ArrayD, IxDyn};

use crate::convert::convert_image_dtype;
use crate::tensor::{DType, Image, ImageError, Result};

/// SSIM's constants (TF's arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SsimOptions {
    /// The images' dynamic range, in their dtype (255 for uint8 in 0..255).
    pub max_val: f64,
    /// The Gaussian window's side (11).
    pub filter_size: usize,
    /// Its standard deviation (1.5).
    pub filter_sigma: f32,
    /// 0.01.
    pub k1: f64,
    /// 0.03.
    pub k2: f64,
}

impl Default for SsimOptions {
    fn default() -> Self {
        SsimOptions {
            max_val: 1.0,
            filter_size: 11,
            filter_sigma: 1.5,
            k1: 0.01,
            k2: 0.03,
        }
    }
}

/// A float32 image as `[N, H, W, C]` f64 values.
struct Planes {
    v: Vec<f64>,
    n: usize,
    h: usize,
    w: usize,
    c: usize,
}

fn planes(image: &Image, op: &str) -> Result<Planes> {
    let s = image.shape().to_vec();
    let (n, h, w, c) = match s[..] {
        [h, w, c] => (1, h, w, c),
        [n, h, w, c] => (n, h, w, c),
        _ => {
            return Err(ImageError::new(format!(
                "{op}: the images must be [H, W, C] or [N, H, W, C], got {s:?}"
            )))
        }
    };
    let f = convert_image_dtype(image, DType::F32, false)?.to_f32();
    Ok(Planes {
        v: f.iter().map(|&x| f64::from(x)).collect(),
        n,
        h,
        w,
        c,
    })
}

/// `max_val` cast to the images' dtype and converted to float32, as TF does.
fn max_value(dtype: DType, max_val: f64) -> Result<f64> {
    let m = match dtype {
        DType::U8 => Image::U8(ArrayD::from_elem(IxDyn(&[]), max_val as u8)),
        DType::U16 => Image::U16(ArrayD::from_elem(IxDyn(&[]), max_val as u16)),
        DType::I16 => Image::I16(ArrayD::from_elem(IxDyn(&[]), max_val as i16)),
        DType::I32 => Image::I32(ArrayD::from_elem(IxDyn(&[]), max_val as i32)),
        _ => Image::F32(ArrayD::from_elem(IxDyn(&[]), max_val as f32)),
    };
    let f = convert_image_dtype(&m, DType::F32, false)?.to_f32();
    Ok(f64::from(f.iter().next().copied().unwrap_or(1.0)))
}

/// TF's `_fspecial_gauss`: `size × size` weights summing to 1 (a softmax of
/// `−(i² + j²)/(2σ²)` over centred coordinates), row-major.
pub fn gaussian(size: usize, sigma: f32) -> Vec<f64> {
    let half = (size as f32 - 1.0) / 2.0;
    let g: Vec<f32> = (0..size)
        .map(|i| {
            let x = i as f32 - half;
            x * x * (-0.5 / (sigma * sigma))
        })
        .collect();
    let logits: Vec<f64> = (0..size * size)
        .map(|k| f64::from(g[k / size] + g[k % size]))
        .collect();
    let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

/// The VALID Gaussian filter of one channel plane (`h × w` → `oh × ow`).
fn filter(x: &[f64], h: usize, w: usize, k: &[f64], size: usize) -> Vec<f64> {
    let (oh, ow) = (h - size + 1, w - size + 1);
    let mut out = vec![0f64; oh * ow];
    for i in 0..oh {
        for j in 0..ow {
            let mut acc = 0f64;
            for a in 0..size {
                for b in 0..size {
                    acc += k[a * size + b] * x[(i + a) * w + j + b];
                }
            }
            out[i * ow + j] = acc;
        }
    }
    out
}

/// The transposed filter: scatters `g` (`oh × ow`) back to `h × w`.
fn filter_t(g: &[f64], h: usize, w: usize, k: &[f64], size: usize) -> Vec<f64> {
    let (oh, ow) = (h - size + 1, w - size + 1);
    let mut out = vec![0f64; h * w];
    for i in 0..oh {
        for j in 0..ow {
            let v = g[i * ow + j];
            for a in 0..size {
                for b in 0..size {
                    out[(i + a) * w + j + b] += k[a * size + b] * v;
                }
            }
        }
    }
    out
}

/// The statistics maps of one channel plane of each image.
struct Maps {
    m0: Vec<f64>,
    m1: Vec<f64>,
    sxy: Vec<f64>,
    s2: Vec<f64>,
}

fn channel(planes: (&Planes, &Planes), b: usize, ch: usize) -> (Vec<f64>, Vec<f64>) {
    let (p, q) = planes;
    let (h, w, c) = (p.h, p.w, p.c);
    let x = (0..h * w).map(|i| p.v[(b * h * w + i) * c + ch]).collect();
    let y = (0..h * w).map(|i| q.v[(b * h * w + i) * c + ch]).collect();
    (x, y)
}

fn maps(x: &[f64], y: &[f64], h: usize, w: usize, k: &[f64], size: usize) -> Maps {
    let xy: Vec<f64> = x.iter().zip(y).map(|(a, b)| a * b).collect();
    let sq: Vec<f64> = x.iter().zip(y).map(|(a, b)| a * a + b * b).collect();
    Maps {
        m0: filter(x, h, w, k, size),
        m1: filter(y, h, w, k, size),
        sxy: filter(&xy, h, w, k, size),
        s2: filter(&sq, h, w, k, size),
    }
}

/// Luminance and contrast-structure at each position.
fn lum_cs(m: &Maps, c1: f64, c2: f64) -> (Vec<f64>, Vec<f64>) {
    let mut lum = Vec::with_capacity(m.m0.len());
    let mut cs = Vec::with_capacity(m.m0.len());
    for i in 0..m.m0.len() {
        let num0 = m.m0[i] * m.m1[i] * 2.0;
        let den0 = m.m0[i] * m.m0[i] + m.m1[i] * m.m1[i];
        lum.push((num0 + c1) / (den0 + c1));
        let num1 = m.sxy[i] * 2.0;
        cs.push((num1 - num0 + c2) / (m.s2[i] - den0 + c2));
    }
    (lum, cs)
}

fn check_pair(p: &Planes, q: &Planes, size: usize, op: &str) -> Result<()> {
    if (p.n, p.h, p.w, p.c) != (q.n, q.h, q.w, q.c) {
        return Err(ImageError::new(format!(
            "{op}: the two images must have the same shape"
        )));
    }
    if size == 0 || p.h < size || p.w < size {
        return Err(ImageError::new(format!(
            "{op}: the images ({}x{}) must be at least filter_size ({size}) in height and width",
            p.h, p.w
        )));
    }
    Ok(())
}

/// Per image and channel: (mean SSIM, mean cs) and the SSIM maps.
fn per_channel(
    p: &Planes,
    q: &Planes,
    o: &SsimOptions,
    max: f64,
) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
    let k = gaussian(o.filter_size, o.filter_sigma);
    let (c1, c2) = ((o.k1 * max).powi(2), (o.k2 * max).powi(2));
    let mut ssim = Vec::new();
    let mut css = Vec::new();
    let mut maps_out = Vec::new();
    for b in 0..p.n {
        for ch in 0..p.c {
            let (x, y) = channel((p, q), b, ch);
            let m = maps(&x, &y, p.h, p.w, &k, o.filter_size);
            let (lum, cs) = lum_cs(&m, c1, c2);
            let map: Vec<f64> = lum.iter().zip(&cs).map(|(l, s)| l * s).collect();
            let n = map.len() as f64;
            ssim.push(map.iter().sum::<f64>() / n);
            css.push(cs.iter().sum::<f64>() / n);
            maps_out.push(map);
        }
    }
    (ssim, css, maps_out)
}

/// `tf.image.ssim(img1, img2, max_val, filter_size, filter_sigma, k1, k2)`:
/// one value per image (a scalar for `[H, W, C]` images).
pub fn ssim(img1: &Image, img2: &Image, o: &SsimOptions) -> Result<ArrayD<f32>> {
    let (p, q) = (planes(img1, "ssim")?, planes(img2, "ssim")?);
    check_pair(&p, &q, o.filter_size, "ssim")?;
    let max = max_value(img1.dtype(), o.max_val)?;
    let (s, _, _) = per_channel(&p, &q, o, max);
    let out: Vec<f32> = s
        .chunks(p.c)
        .map(|ch| (ch.iter().sum::<f64>() / p.c as f64) as f32)
        .collect();
    let dims: Vec<usize> = if img1.shape().len() == 4 {
        vec![p.n]
    } else {
        vec![]
    };
    ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| ImageError::new(e.to_string()))
}

/// `tf.image.ssim(..., return_index_map=True)`: the SSIM at each VALID
/// window position, averaged over the channels (`[OH, OW]` per image).
pub fn ssim_index_map(img1: &Image, img2: &Image, o: &SsimOptions) -> Result<ArrayD<f32>> {
    let (p, q) = (planes(img1, "ssim")?, planes(img2, "ssim")?);
    check_pair(&p, &q, o.filter_size, "ssim")?;
    let max = max_value(img1.dtype(), o.max_val)?;
    let (_, _, maps) = per_channel(&p, &q, o, max);
    let (oh, ow) = (p.h - o.filter_size + 1, p.w - o.filter_size + 1);
    let mut out = Vec::with_capacity(p.n * oh * ow);
    for image in maps.chunks(p.c) {
        let mut sum = vec![0f64; oh * ow];
        for map in image {
            sum.iter_mut().zip(map).for_each(|(s, v)| *s += v);
        }
        out.extend(sum.iter().map(|s| (s / p.c as f64) as f32));
    }
    let dims: Vec<usize> = if img1.shape().len() == 4 {
        vec![p.n, oh, ow]
    } else {
        vec![oh, ow]
    };
    ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| ImageError::new(e.to_string()))
}

/// The gradient of [`ssim`] w.r.t. `img1` (float images), given the
/// gradient of its output (one value per image).
pub fn ssim_grad_img1(
    img1: &Image,
    img2: &Image,
    o: &SsimOptions,
    grad_output: &ArrayD<f32>,
) -> Result<ArrayD<f32>> {
    let (p, q) = (planes(img1, "ssim")?, planes(img2, "ssim")?);
    check_pair(&p, &q, o.filter_size, "ssim")?;
    if !img1.dtype().is_float() {
        return Err(ImageError::new("ssim: the gradient needs float images"));
    }
    if grad_output.len() != p.n {
        return Err(ImageError::new(format!(
            "ssim: {} output gradients for {} images",
            grad_output.len(),
            p.n
        )));
    }
    let max = max_value(img1.dtype(), o.max_val)?;
    let k = gaussian(o.filter_size, o.filter_sigma);
    let (c1, c2) = ((o.k1 * max).powi(2), (o.k2 * max).powi(2));
    let size = o.filter_size;
    let (oh, ow) = (p.h - size + 1, p.w - size + 1);
    let per = (oh * ow) as f64;
    let mut out = vec![0f64; p.v.len()];
    for (b, &gout) in grad_output.iter().enumerate() {
        let g = f64::from(gout) / (p.c as f64 * per);
        for ch in 0..p.c {
            let (x, y) = channel((&p, &q), b, ch);
            let m = maps(&x, &y, p.h, p.w, &k, size);
            let mut da = vec![0f64; oh * ow];
            let mut dxy = vec![0f64; oh * ow];
            let mut d2 = vec![0f64; oh * ow];
            for i in 0..oh * ow {
                let (m0, m1) = (m.m0[i], m.m1[i]);
                let num0 = 2.0 * m0 * m1;
                let den0 = m0 * m0 + m1 * m1;
                let lden = den0 + c1;
                let lum = (num0 + c1) / lden;
                let cnum = 2.0 * m.sxy[i] - num0 + c2;
                let cden = m.s2[i] - den0 + c2;
                let cs = cnum / cden;
                let dlum = (2.0 * m1 * lden - (num0 + c1) * 2.0 * m0) / (lden * lden);
                let dcs = (-2.0 * m1 * cden + cnum * 2.0 * m0) / (cden * cden);
                da[i] = g * (dlum * cs + lum * dcs);
                dxy[i] = g * lum * 2.0 / cden;
                d2[i] = g * lum * (-cnum / (cden * cden));
            }
            let ta = filter_t(&da, p.h, p.w, &k, size);
            let txy = filter_t(&dxy, p.h, p.w, &k, size);
            let t2 = filter_t(&d2, p.h, p.w, &k, size);
            for i in 0..p.h * p.w {
                out[(b * p.h * p.w + i) * p.c + ch] = ta[i] + y[i] * txy[i] + 2.0 * x[i] * t2[i];
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(img1.shape()), out.iter().map(|&v| v as f32).collect())
        .map_err(|e| ImageError::new(e.to_string()))
}

/// 2×2 average pooling, VALID, after SYMMETRIC padding of an odd height or
/// width by one row/column at the end (TF's `ssim_multiscale`).
fn downscale(p: &Planes) -> Planes {
    let (h2, w2) = (p.h + p.h % 2, p.w + p.w % 2);
    let at = |b: usize, i: usize, j: usize, ch: usize| {
        // SYMMETRIC: index h (one past the end) mirrors to h − 1.
        let (i, j) = (i.min(p.h - 1), j.min(p.w - 1));
        p.v[((b * p.h + i) * p.w + j) * p.c + ch]
    };
    let (oh, ow) = (h2 / 2, w2 / 2);
    let mut v = Vec::with_capacity(p.n * oh * ow * p.c);
    for b in 0..p.n {
        for i in 0..oh {
            for j in 0..ow {
                for ch in 0..p.c {
                    let s = at(b, 2 * i, 2 * j, ch)
                        + at(b, 2 * i, 2 * j + 1, ch)
                        + at(b, 2 * i + 1, 2 * j, ch)
                        + at(b, 2 * i + 1, 2 * j + 1, ch);
                    v.push(f64::from((s / 4.0) as f32));
                }
            }
        }
    }
    Planes {
        v,
        n: p.n,
        h: oh,
        w: ow,
        c: p.c,
    }
}

/// `tf.image.ssim_multiscale(img1, img2, max_val, power_factors,
/// filter_size, filter_sigma, k1, k2)`: one value per image.
pub fn ssim_multiscale(
    img1: &Image,
    img2: &Image,
    power_factors: &[f64],
    o: &SsimOptions,
) -> Result<ArrayD<f32>> {
    if power_factors.is_empty() {
        return Err(ImageError::new(
            "ssim_multiscale: power_factors must not be empty",
        ));
    }
    let (mut p, mut q) = (
        planes(img1, "ssim_multiscale")?,
        planes(img2, "ssim_multiscale")?,
    );
    let max = max_value(img1.dtype(), o.max_val)?;
    let scales = power_factors.len();
    // One row per image and channel: the relu'd cs of each scale but the
    // last, then the last scale's relu'd SSIM.
    let mut factors: Vec<Vec<f64>> = vec![Vec::new(); p.n * p.c];
    for s in 0..scales {
        if s > 0 {
            p = downscale(&p);
            q = downscale(&q);
        }
        check_pair(&p, &q, o.filter_size, "ssim_multiscale")?;
        let (ssim, cs, _) = per_channel(&p, &q, o, max);
        for (i, f) in factors.iter_mut().enumerate() {
            f.push(if s + 1 < scales {
                cs[i].max(0.0)
            } else {
                ssim[i].max(0.0)
            });
        }
    }
    let out: Vec<f32> = factors
        .chunks(p.c)
        .map(|image| {
            let per_channel: Vec<f64> = image
                .iter()
                .map(|f| {
                    f.iter()
                        .zip(power_factors)
                        .map(|(v, e)| v.powf(*e))
                        .product()
                })
                .collect();
            (per_channel.iter().sum::<f64>() / p.c as f64) as f32
        })
        .collect();
    let dims: Vec<usize> = if img1.shape().len() == 4 {
        vec![p.n]
    } else {
        vec![]
    };
    ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| ImageError::new(e.to_string()))
}
