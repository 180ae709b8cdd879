//! `tf.image.extract_patches`: every `sizes` window of a `[N, H, W, C]`
//! batch, `strides` apart, its taps `rates` apart, as the last axis
//! `[N, OH, OW, KH·KW·C]` (patch row, patch column, channel; row-major).
//!
//! Owns: TF's output sizes and padding. `VALID`: `OH = ⌈(H − (KH − 1)·RH) /
//! SH⌉`; `SAME`: `OH = ⌈H / SH⌉`, padded with zeros by `max((OH − 1)·SH +
//! (KH − 1)·RH + 1 − H, 0)` rows, the smaller half on top (the odd row goes
//! to the bottom), likewise for columns.
//! Invariant: every output value is an input value or 0 (a padding tap).

use ndarray::{ArrayD, IxDyn};

use crate::tensor::{each_dtype, Image, ImageError, Result};

/// TF's padding of a window op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Only windows inside the image.
    Valid,
    /// `⌈in / stride⌉` windows, zero padded.
    Same,
}

impl Padding {
    /// `"VALID"` or `"SAME"`.
    pub fn from_name(name: &str) -> Option<Padding> {
        match name {
            "VALID" => Some(Padding::Valid),
            "SAME" => Some(Padding::Same),
            _ => None,
        }
    }
}

/// The output size and the padding before, along an axis of `n`, for a
/// window of `k` taps `rate` apart, `stride` apart.
pub fn window_axis(
    n: usize,
    k: usize,
    stride: usize,
    rate: usize,
    padding: Padding,
) -> (usize, usize) {
    let span = (k - 1) * rate + 1;
    match padding {
        Padding::Valid => (
            if n >= span {
                (n - span) / stride + 1
            } else {
                0
            },
            0,
        ),
        Padding::Same => {
            let out = n.div_ceil(stride);
            let total = ((out.max(1) - 1) * stride + span).saturating_sub(n);
            (out, total / 2)
        }
    }
}

/// The `[1, a, b, 1]` argument of TF as `(a, b)`, each ≥ 1.
fn pair(v: &[i64], what: &str) -> Result<(usize, usize)> {
    match v {
        [1, a, b, 1] if *a >= 1 && *b >= 1 => Ok((*a as usize, *b as usize)),
        _ => Err(ImageError::new(format!(
            "extract_patches: `{what}` must be [1, rows, cols, 1] with rows, cols >= 1, got {v:?}"
        ))),
    }
}

fn patches<T: Copy + Default>(
    a: &ArrayD<T>,
    out_dims: [usize; 4],
    k: (usize, usize),
    s: (usize, usize),
    r: (usize, usize),
    pad: (usize, usize),
) -> ArrayD<T> {
    let (h, w, c) = (a.shape()[1], a.shape()[2], a.shape()[3]);
    let src = a.as_standard_layout();
    let src = src.as_slice().expect("standard layout");
    let [n, oh, ow, depth] = out_dims;
    let mut out = Vec::with_capacity(n * oh * ow * depth);
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                for di in 0..k.0 {
                    for dj in 0..k.1 {
                        let y = (i * s.0 + di * r.0) as isize - pad.0 as isize;
                        let x = (j * s.1 + dj * r.1) as isize - pad.1 as isize;
                        if y < 0 || x < 0 || y as usize >= h || x as usize >= w {
                            out.extend(std::iter::repeat_n(T::default(), c));
                        } else {
                            let at = ((b * h + y as usize) * w + x as usize) * c;
                            out.extend_from_slice(&src[at..at + c]);
                        }
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&out_dims), out).expect("sizes computed above")
}

/// `tf.image.extract_patches(images, sizes, strides, rates, padding)`.
pub fn extract_patches(
    images: &Image,
    sizes: &[i64],
    strides: &[i64],
    rates: &[i64],
    padding: Padding,
) -> Result<Image> {
    let s = images.shape();
    if s.len() != 4 {
        return Err(ImageError::new(format!(
            "extract_patches: `images` must be 4-D [batch, height, width, channels], got {s:?}"
        )));
    }
    let k = pair(sizes, "sizes")?;
    let st = pair(strides, "strides")?;
    let r = pair(rates, "rates")?;
    let (oh, pt) = window_axis(s[1], k.0, st.0, r.0, padding);
    let (ow, pl) = window_axis(s[2], k.1, st.1, r.1, padding);
    let depth = k.0 * k.1 * s[3];
    let total = s[0]
        .saturating_mul(oh)
        .saturating_mul(ow)
        .saturating_mul(depth);
    if total > 1 << 30 {
        return Err(ImageError::new(format!(
            "extract_patches: the output would hold {total} values"
        )));
    }
    let dims = [s[0], oh, ow, depth];
    Ok(each_dtype!(images, a => patches(a, dims, k, st, r, (pt, pl))))
}
