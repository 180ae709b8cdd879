//! `tf.image.resize` (every method, `antialias`, `preserve_aspect_ratio`)
//! and the v1 ops `resize_bilinear`, `resize_nearest_neighbor`,
//! `resize_bicubic`, `resize_area` (`align_corners`, `half_pixel_centers`),
//! with their gradients.
//!
//! Owns: the kernels TF dispatches to — `ResizeBilinear`,
//! `ResizeNearestNeighbor`, `ResizeBicubic` (its 1024-entry coefficient
//! table; Keys' a = −0.5 with out-of-image taps dropped and the weights
//! renormalized for half-pixel centres, a = −0.75 with clamped taps
//! otherwise), `ResizeArea`, and `ScaleAndTranslate` (triangle, Keys cubic,
//! Lanczos 3/5, Gaussian, Mitchell cubic; with `antialias` the kernel is
//! widened by the downscale factor) — each as per-axis taps (source index,
//! weight).
//! Invariant: a resize is the separable linear map of its taps, so its
//! gradient is the transposed map ([`resize_grad`]) and the two are
//! computed from the same taps.

use ndarray::{ArrayD, IxDyn};

use crate::tensor::{each_dtype, Image, ImageError, Result};

/// `tf.image.ResizeMethod`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeMethod {
    /// `"bilinear"`.
    Bilinear,
    /// `"nearest"`.
    Nearest,
    /// `"bicubic"`.
    Bicubic,
    /// `"area"`.
    Area,
    /// `"lanczos3"`.
    Lanczos3,
    /// `"lanczos5"`.
    Lanczos5,
    /// `"gaussian"`.
    Gaussian,
    /// `"mitchellcubic"`.
    MitchellCubic,
}

impl ResizeMethod {
    /// The method of TF's name.
    pub fn from_name(name: &str) -> Option<ResizeMethod> {
        Some(match name {
            "bilinear" => ResizeMethod::Bilinear,
            "nearest" => ResizeMethod::Nearest,
            "bicubic" => ResizeMethod::Bicubic,
            "area" => ResizeMethod::Area,
            "lanczos3" => ResizeMethod::Lanczos3,
            "lanczos5" => ResizeMethod::Lanczos5,
            "gaussian" => ResizeMethod::Gaussian,
            "mitchellcubic" => ResizeMethod::MitchellCubic,
            _ => return None,
        })
    }
}

/// The taps of one output coordinate: (source index, weight).
type Taps = Vec<(usize, f32)>;

/// How a v1 op maps output to input coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Centers {
    /// `align_corners`: the corner pixels' centres are aligned.
    pub align_corners: bool,
    /// `half_pixel_centers`: pixel centres at `+ 0.5`.
    pub half_pixel_centers: bool,
}

impl Centers {
    /// TF 2's `tf.image.resize`.
    pub const V2: Centers = Centers {
        align_corners: false,
        half_pixel_centers: true,
    };

    fn check(self, op: &str) -> Result<()> {
        if self.align_corners && self.half_pixel_centers {
            return Err(ImageError::new(format!(
                "{op}: If half_pixel_centers is True, align_corners must be False."
            )));
        }
        Ok(())
    }

    /// TF's `CalculateResizeScale`.
    fn scale(self, input: usize, output: usize) -> f32 {
        if self.align_corners && output > 1 {
            (input as f32 - 1.0) / (output as f32 - 1.0)
        } else {
            input as f32 / output as f32
        }
    }
}

/// The two source indices and the weight of the second for output
/// coordinate `o` of a bilinear resize (TF's `compute_interpolation_weights`:
/// indices clamped to the axis, `lerp = x − ⌊x⌋`).
pub fn bilinear_tap(o: usize, input: usize, output: usize, c: Centers) -> (usize, usize, f32) {
    let scale = c.scale(input, output);
    let x = if c.half_pixel_centers {
        (o as f32 + 0.5) * scale - 0.5
    } else {
        o as f32 * scale
    };
    let f = x.floor();
    let lo = (f.max(0.0) as usize).min(input - 1);
    let hi = (x.ceil().max(0.0) as usize).min(input - 1);
    (lo, hi, x - f)
}

fn bilinear_taps(input: usize, output: usize, c: Centers) -> Vec<Taps> {
    (0..output)
        .map(|o| {
            let (lo, hi, lerp) = bilinear_tap(o, input, output, c);
            vec![(lo, 1.0 - lerp), (hi, lerp)]
        })
        .collect()
}

fn nearest_taps(input: usize, output: usize, c: Centers) -> Vec<Taps> {
    let scale = c.scale(input, output);
    (0..output)
        .map(|i| {
            let x = if c.half_pixel_centers {
                (i as f32 + 0.5) * scale
            } else {
                i as f32 * scale
            };
            let x = if c.align_corners {
                x.round()
            } else {
                x.floor()
            };
            vec![((x.max(0.0) as usize).min(input - 1), 1.0)]
        })
        .collect()
}

const BICUBIC_TABLE: usize = 1024;

fn bicubic_table(a: f64) -> Vec<f32> {
    let mut t = vec![0f32; (BICUBIC_TABLE + 1) * 2];
    for i in 0..=BICUBIC_TABLE {
        let x = f64::from((i as f64 / BICUBIC_TABLE as f64) as f32);
        t[i * 2] = (((a + 2.0) * x - (a + 3.0)) * x * x + 1.0) as f32;
        let x = x + 1.0;
        t[i * 2 + 1] = (((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a) as f32;
    }
    t
}

fn bicubic_taps(input: usize, output: usize, c: Centers) -> Vec<Taps> {
    let keys = c.half_pixel_centers;
    let table = bicubic_table(if keys { -0.5 } else { -0.75 });
    let scale = c.scale(input, output);
    let bound = |v: i64| v.clamp(0, input as i64 - 1) as usize;
    (0..output)
        .map(|i| {
            let x = if keys {
                (i as f32 + 0.5) * scale - 0.5
            } else {
                i as f32 * scale
            };
            let loc = x.floor() as i64;
            let delta = x - loc as f32;
            let off =
                ((delta * BICUBIC_TABLE as f32).round_ties_even() as usize).min(BICUBIC_TABLE);
            let w = [
                table[off * 2 + 1],
                table[off * 2],
                table[(BICUBIC_TABLE - off) * 2],
                table[(BICUBIC_TABLE - off) * 2 + 1],
            ];
            let mut taps: Taps = (0..4)
                .map(|k| {
                    let want = loc - 1 + k as i64;
                    let idx = bound(want);
                    let weight = if keys && idx as i64 != want {
                        0.0
                    } else {
                        w[k]
                    };
                    (idx, weight)
                })
                .collect();
            if keys {
                let sum: f32 = taps.iter().map(|t| t.1).sum();
                if sum.abs() >= 1000.0 * f32::MIN_POSITIVE {
                    let inv = 1.0 / sum;
                    taps.iter_mut().for_each(|t| t.1 *= inv);
                }
            }
            taps
        })
        .collect()
}

fn area_taps(input: usize, output: usize, c: Centers) -> Vec<Taps> {
    let scale = c.scale(input, output);
    (0..output)
        .map(|i| {
            let start = i as f32 * scale;
            let end = (i + 1) as f32 * scale;
            let mut taps = Taps::new();
            let mut k = start.floor() as i64;
            while (k as f32) < end {
                let lo = (k as f32).max(start);
                let hi = ((k + 1) as f32).min(end);
                let idx = k.clamp(0, input as i64 - 1) as usize;
                taps.push((idx, (hi - lo) / scale));
                k += 1;
            }
            taps
        })
        .collect()
}

/// A `ScaleAndTranslate` kernel: its radius and value.
fn kernel(method: ResizeMethod, x: f32) -> f32 {
    let x = x.abs();
    match method {
        ResizeMethod::Bilinear => (1.0 - x).max(0.0),
        ResizeMethod::Bicubic => {
            // Keys cubic, a = −0.5.
            if x >= 2.0 {
                0.0
            } else if x >= 1.0 {
                ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
            } else {
                ((1.5 * x - 2.5) * x) * x + 1.0
            }
        }
        ResizeMethod::Lanczos3 | ResizeMethod::Lanczos5 => {
            let r = if method == ResizeMethod::Lanczos3 {
                3.0
            } else {
                5.0
            };
            if x > r {
                0.0
            } else if x < 1e-6 {
                1.0
            } else {
                let px = std::f32::consts::PI * x;
                r * px.sin() * (px / r).sin() / (px * px)
            }
        }
        ResizeMethod::Gaussian => {
            const RADIUS: f32 = 1.5;
            const SIGMA: f32 = RADIUS / 3.0;
            if x >= RADIUS {
                0.0
            } else {
                (-x * x / (2.0 * SIGMA * SIGMA)).exp()
            }
        }
        ResizeMethod::MitchellCubic => {
            if x >= 2.0 {
                0.0
            } else if x >= 1.0 {
                (((-7.0 / 18.0) * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0
            } else {
                ((7.0 / 6.0) * x - 2.0) * x * x + 8.0 / 9.0
            }
        }
        ResizeMethod::Nearest | ResizeMethod::Area => 0.0,
    }
}

fn radius(method: ResizeMethod) -> f32 {
    match method {
        ResizeMethod::Bilinear => 1.0,
        ResizeMethod::Bicubic | ResizeMethod::MitchellCubic => 2.0,
        ResizeMethod::Lanczos3 => 3.0,
        ResizeMethod::Lanczos5 => 5.0,
        ResizeMethod::Gaussian => 1.5,
        ResizeMethod::Nearest | ResizeMethod::Area => 0.0,
    }
}

fn scale_and_translate_taps(
    input: usize,
    output: usize,
    method: ResizeMethod,
    antialias: bool,
) -> Vec<Taps> {
    let scale = output as f32 / input as f32;
    let inv_scale = 1.0 / scale;
    let kernel_scale = if antialias { inv_scale.max(1.0) } else { 1.0 };
    let r = radius(method) * kernel_scale;
    (0..output)
        .map(|i| {
            let sample = (i as f32 + 0.5) * inv_scale;
            if sample < 0.0 || sample > input as f32 {
                return Taps::new();
            }
            let start = ((sample - r - 0.5).ceil() as i64).clamp(0, input as i64 - 1);
            let end = ((sample + r - 0.5).floor() as i64).clamp(0, input as i64 - 1) + 1;
            let mut taps: Taps = (start..end)
                .map(|s| {
                    let pos = s as f32 + 0.5 - sample;
                    (s as usize, kernel(method, (pos / kernel_scale).abs()))
                })
                .collect();
            let sum: f32 = taps.iter().map(|t| t.1).sum();
            if sum.abs() >= 1000.0 * f32::MIN_POSITIVE {
                let inv = 1.0 / sum;
                taps.iter_mut().for_each(|t| t.1 *= inv);
            }
            taps
        })
        .collect()
}

/// The `[N, H, W, C]` dims of an image or batch.
fn nhwc(shape: &[usize], op: &str) -> Result<[usize; 4]> {
    match shape {
        [h, w, c] => Ok([1, *h, *w, *c]),
        [n, h, w, c] => Ok([*n, *h, *w, *c]),
        _ => Err(ImageError::new(format!(
            "{op}: 'images' must have either 3 or 4 dimensions, got {shape:?}"
        ))),
    }
}

/// The largest output a resize may produce (2^28 values).
const MAX_VALUES: usize = 1 << 28;

fn check_size(op: &str, dims: [usize; 4], size: [usize; 2]) -> Result<()> {
    if size[0] == 0 || size[1] == 0 {
        return Err(ImageError::new(format!(
            "{op}: `size` must be two positive integers, got {size:?}"
        )));
    }
    if dims[1] == 0 || dims[2] == 0 {
        return Err(ImageError::new(format!("{op}: the image is empty")));
    }
    let values = dims[0]
        .saturating_mul(size[0])
        .saturating_mul(size[1])
        .saturating_mul(dims[3]);
    if values > MAX_VALUES {
        return Err(ImageError::new(format!(
            "{op}: an output of {values} values is larger than {MAX_VALUES}"
        )));
    }
    Ok(())
}

/// Applies per-axis taps to `x` (`[N, H, W, C]` row-major) in f32.
fn apply(x: &[f32], d: [usize; 4], ys: &[Taps], xs: &[Taps]) -> Vec<f32> {
    let [n, h, w, c] = d;
    let (oh, ow) = (ys.len(), xs.len());
    let mut out = vec![0f32; n * oh * ow * c];
    for b in 0..n {
        for (i, ty) in ys.iter().enumerate() {
            for (j, tx) in xs.iter().enumerate() {
                let o = ((b * oh + i) * ow + j) * c;
                for &(yi, wy) in ty {
                    for &(xj, wx) in tx {
                        let s = ((b * h + yi) * w + xj) * c;
                        let wgt = wy * wx;
                        for k in 0..c {
                            out[o + k] += wgt * x[s + k];
                        }
                    }
                }
            }
        }
    }
    out
}

/// The taps of a resize along both axes.
fn taps(
    method: ResizeMethod,
    antialias: bool,
    centers: Centers,
    d: [usize; 4],
    size: [usize; 2],
) -> (Vec<Taps>, Vec<Taps>) {
    let axis = |input: usize, output: usize| match method {
        ResizeMethod::Bilinear if !antialias || centers != Centers::V2 => {
            bilinear_taps(input, output, centers)
        }
        ResizeMethod::Nearest => nearest_taps(input, output, centers),
        ResizeMethod::Bicubic if !antialias || centers != Centers::V2 => {
            bicubic_taps(input, output, centers)
        }
        ResizeMethod::Area => area_taps(input, output, centers),
        m => scale_and_translate_taps(input, output, m, antialias),
    };
    (axis(d[1], size[0]), axis(d[2], size[1]))
}

fn reshaped(values: Vec<f32>, dims: &[usize]) -> Result<ArrayD<f32>> {
    ArrayD::from_shape_vec(IxDyn(dims), values).map_err(|e| ImageError::new(e.to_string()))
}

fn out_dims(rank: usize, d: [usize; 4], size: [usize; 2]) -> Vec<usize> {
    if rank == 3 {
        vec![size[0], size[1], d[3]]
    } else {
        vec![d[0], size[0], size[1], d[3]]
    }
}

/// The resize of an image by explicit taps: float32 output, except nearest,
/// which keeps the dtype (it only selects).
fn resize_with(
    image: &Image,
    op: &str,
    method: ResizeMethod,
    antialias: bool,
    centers: Centers,
    size: [usize; 2],
) -> Result<Image> {
    centers.check(op)?;
    let d = nhwc(image.shape(), op)?;
    check_size(op, d, size)?;
    let (ys, xs) = taps(method, antialias, centers, d, size);
    let dims = out_dims(image.shape().len(), d, size);
    if method == ResizeMethod::Nearest {
        // A selection in the image's own dtype: every value is an input
        // value, exactly (an int32 beyond 2^24 too).
        let rows: Vec<usize> = ys.iter().map(|t| t[0].0).collect();
        let cols: Vec<usize> = xs.iter().map(|t| t[0].0).collect();
        return Ok(each_dtype!(image, a => select(a, d, &rows, &cols, &dims)));
    }
    let x: Vec<f32> = image.to_f32().iter().copied().collect();
    Ok(Image::F32(reshaped(apply(&x, d, &ys, &xs), &dims)?))
}

/// Pixel `(rows[i], cols[j])` of each image of `a` (`[N, H, W, C]` dims
/// `d`) at `(i, j)`: nearest-neighbour sampling.
fn select<T: Copy>(
    a: &ArrayD<T>,
    d: [usize; 4],
    rows: &[usize],
    cols: &[usize],
    dims: &[usize],
) -> ArrayD<T> {
    let [n, h, w, c] = d;
    let src = a.as_standard_layout();
    let src = src.as_slice().expect("standard layout");
    let mut out = Vec::with_capacity(n * rows.len() * cols.len() * c);
    for b in 0..n {
        for &y in rows {
            for &x in cols {
                let at = ((b * h + y) * w + x) * c;
                out.extend_from_slice(&src[at..at + c]);
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(dims), out).expect("sizes computed above")
}

/// The size `tf.image.resize` resizes to: `size`, or with
/// `preserve_aspect_ratio` the largest size within it of the image's aspect
/// (float32, rounded half to even as TF's `round`).
pub fn target_size(
    image_hw: [usize; 2],
    size: [usize; 2],
    preserve_aspect_ratio: bool,
) -> [usize; 2] {
    if !preserve_aspect_ratio {
        return size;
    }
    let (h, w) = (image_hw[0] as f32, image_hw[1] as f32);
    let s = (size[0] as f32 / h).min(size[1] as f32 / w);
    [
        (s * h).round_ties_even() as usize,
        (s * w).round_ties_even() as usize,
    ]
}

/// `tf.image.resize(images, size, method, preserve_aspect_ratio, antialias)`.
pub fn resize(
    image: &Image,
    size: [usize; 2],
    method: ResizeMethod,
    antialias: bool,
    preserve_aspect_ratio: bool,
) -> Result<Image> {
    let d = nhwc(image.shape(), "resize")?;
    let size = target_size([d[1], d[2]], size, preserve_aspect_ratio);
    resize_with(image, "resize", method, antialias, Centers::V2, size)
}

/// `tf.image.resize`'s map along one axis as a row-major `[output, input]`
/// matrix `A` (every method is separable: the resize of an image is
/// `A_h · x · A_wᵀ` per channel), from the resize of the `input` unit
/// impulses. The compiler lowers a differentiable resize to products by
/// these matrices.
pub fn resize_matrix(
    input: usize,
    output: usize,
    method: ResizeMethod,
    antialias: bool,
) -> Result<Vec<f32>> {
    // [input, 1, input]: channel k is the impulse at row k.
    let mut impulses = ArrayD::<f32>::zeros(IxDyn(&[input, 1, input]));
    for k in 0..input {
        impulses[[k, 0, k]] = 1.0;
    }
    let out = resize(&Image::F32(impulses), [output, 1], method, antialias, false)?;
    // [output, 1, input] is A itself.
    Ok(out.to_f32().as_standard_layout().iter().copied().collect())
}

/// `tf.compat.v1.image.resize_bilinear(images, size, align_corners,
/// half_pixel_centers)`.
pub fn resize_bilinear(image: &Image, size: [usize; 2], centers: Centers) -> Result<Image> {
    resize_with(
        image,
        "resize_bilinear",
        ResizeMethod::Bilinear,
        false,
        centers,
        size,
    )
}

/// `tf.compat.v1.image.resize_nearest_neighbor(...)`.
pub fn resize_nearest_neighbor(image: &Image, size: [usize; 2], centers: Centers) -> Result<Image> {
    resize_with(
        image,
        "resize_nearest_neighbor",
        ResizeMethod::Nearest,
        false,
        centers,
        size,
    )
}

/// `tf.compat.v1.image.resize_bicubic(...)`.
pub fn resize_bicubic(image: &Image, size: [usize; 2], centers: Centers) -> Result<Image> {
    resize_with(
        image,
        "resize_bicubic",
        ResizeMethod::Bicubic,
        false,
        centers,
        size,
    )
}

/// `tf.compat.v1.image.resize_area(images, size, align_corners)`.
pub fn resize_area(image: &Image, size: [usize; 2], align_corners: bool) -> Result<Image> {
    let centers = Centers {
        align_corners,
        half_pixel_centers: false,
    };
    resize_with(
        image,
        "resize_area",
        ResizeMethod::Area,
        false,
        centers,
        size,
    )
}

/// The gradient of a resize w.r.t. its float input, given the gradient of
/// its output: the transposed map of the same taps.
pub fn resize_grad(
    input_shape: &[usize],
    grad_output: &ArrayD<f32>,
    method: ResizeMethod,
    antialias: bool,
    centers: Centers,
) -> Result<ArrayD<f32>> {
    centers.check("resize")?;
    let d = nhwc(input_shape, "resize")?;
    let g = nhwc(grad_output.shape(), "resize")?;
    if g[0] != d[0] || g[3] != d[3] {
        return Err(ImageError::new(
            "resize: the output gradient's batch or channels differ from the input's",
        ));
    }
    let size = [g[1], g[2]];
    check_size("resize", d, size)?;
    let (ys, xs) = taps(method, antialias, centers, d, size);
    let [n, h, w, c] = d;
    let gv: Vec<f32> = grad_output.iter().copied().collect();
    let mut out = vec![0f32; n * h * w * c];
    for b in 0..n {
        for (i, ty) in ys.iter().enumerate() {
            for (j, tx) in xs.iter().enumerate() {
                let o = ((b * size[0] + i) * size[1] + j) * c;
                for &(yi, wy) in ty {
                    for &(xj, wx) in tx {
                        let s = ((b * h + yi) * w + xj) * c;
                        for k in 0..c {
                            out[s + k] += wy * wx * gv[o + k];
                        }
                    }
                }
            }
        }
    }
    reshaped(out, input_shape)
}
