//! The data-movement ops of `tf.image`: flips, `transpose`, `rot90`,
//! `crop_to_bounding_box`, `pad_to_bounding_box`, `central_crop`,
//! `resize_with_crop_or_pad`.
//!
//! Owns: their argument checks (TF's messages) and their values, for
//! `[H, W, C]` images and `[N, H, W, C]` batches of every dtype.
//! Invariant: the ops only move and zero-fill pixels, so the output dtype is
//! the input's and every value is exactly an input value or 0.

use ndarray::{ArrayD, Axis, IxDyn, Slice};

use crate::tensor::{each_dtype, Image, ImageError, Result};

/// The height and width axes of an image or batch, and their sizes.
struct Hw {
    h_axis: usize,
    h: usize,
    w: usize,
}

fn hw(image: &Image, op: &str) -> Result<Hw> {
    let s = image.shape();
    match s.len() {
        3 | 4 => {
            let h_axis = s.len() - 3;
            Ok(Hw {
                h_axis,
                h: s[h_axis],
                w: s[h_axis + 1],
            })
        }
        r => Err(ImageError::new(format!(
            "{op}: 'image' (shape {s:?}) must have either 3 or 4 dimensions, got {r}"
        ))),
    }
}

fn reversed<T: Clone>(a: &ArrayD<T>, axis: usize) -> ArrayD<T> {
    a.slice_axis(Axis(axis), Slice::new(0, None, -1))
        .as_standard_layout()
        .into_owned()
}

fn swapped<T: Clone>(a: &ArrayD<T>, h_axis: usize) -> ArrayD<T> {
    let mut v = a.view();
    v.swap_axes(h_axis, h_axis + 1);
    v.as_standard_layout().into_owned()
}

fn window<T: Clone>(
    a: &ArrayD<T>,
    h_axis: usize,
    top: usize,
    left: usize,
    h: usize,
    w: usize,
) -> ArrayD<T> {
    a.slice_axis(Axis(h_axis), Slice::from(top..top + h))
        .slice_axis(Axis(h_axis + 1), Slice::from(left..left + w))
        .as_standard_layout()
        .into_owned()
}

fn padded<T: Clone + Default>(
    a: &ArrayD<T>,
    h_axis: usize,
    top: usize,
    left: usize,
    th: usize,
    tw: usize,
) -> ArrayD<T> {
    let mut dims = a.shape().to_vec();
    let (h, w) = (dims[h_axis], dims[h_axis + 1]);
    dims[h_axis] = th;
    dims[h_axis + 1] = tw;
    let mut out = ArrayD::from_elem(IxDyn(&dims), T::default());
    out.slice_axis_mut(Axis(h_axis), Slice::from(top..top + h))
        .slice_axis_mut(Axis(h_axis + 1), Slice::from(left..left + w))
        .assign(a);
    out
}

/// `tf.image.flip_left_right(image)`.
pub fn flip_left_right(image: &Image) -> Result<Image> {
    let d = hw(image, "flip_left_right")?;
    Ok(each_dtype!(image, a => reversed(a, d.h_axis + 1)))
}

/// `tf.image.flip_up_down(image)`.
pub fn flip_up_down(image: &Image) -> Result<Image> {
    let d = hw(image, "flip_up_down")?;
    Ok(each_dtype!(image, a => reversed(a, d.h_axis)))
}

/// `tf.image.transpose(image)`: rows become columns.
pub fn transpose(image: &Image) -> Result<Image> {
    let d = hw(image, "transpose")?;
    Ok(each_dtype!(image, a => swapped(a, d.h_axis)))
}

/// `tf.image.rot90(image, k)`: `k` quarter turns counter-clockwise (any
/// integer; taken modulo 4 as TF does).
pub fn rot90(image: &Image, k: i64) -> Result<Image> {
    hw(image, "rot90")?;
    match k.rem_euclid(4) {
        0 => Ok(image.clone()),
        1 => transpose(&flip_left_right(image)?),
        2 => flip_left_right(&flip_up_down(image)?),
        _ => flip_left_right(&transpose(image)?),
    }
}

fn non_negative(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| ImageError::new(format!("{what} must be >= 0.")))
}

fn positive(v: i64, what: &str) -> Result<usize> {
    match usize::try_from(v) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(ImageError::new(format!("{what} must be > 0."))),
    }
}

/// `tf.image.crop_to_bounding_box(image, offset_height, offset_width,
/// target_height, target_width)`.
pub fn crop_to_bounding_box(
    image: &Image,
    offset_height: i64,
    offset_width: i64,
    target_height: i64,
    target_width: i64,
) -> Result<Image> {
    let d = hw(image, "crop_to_bounding_box")?;
    let top = non_negative(offset_height, "offset_height")?;
    let left = non_negative(offset_width, "offset_width")?;
    let th = positive(target_height, "target_height")?;
    let tw = positive(target_width, "target_width")?;
    if d.w < tw.saturating_add(left) {
        return Err(ImageError::new("width must be >= target + offset."));
    }
    if d.h < th.saturating_add(top) {
        return Err(ImageError::new("height must be >= target + offset."));
    }
    Ok(each_dtype!(image, a => window(a, d.h_axis, top, left, th, tw)))
}

/// The largest image a padding may produce (2^28 pixels a channel), so a
/// bad target is an error rather than an allocation failure.
const MAX_PIXELS: usize = 1 << 28;

/// `tf.image.pad_to_bounding_box(image, offset_height, offset_width,
/// target_height, target_width)`: zeros around the image.
pub fn pad_to_bounding_box(
    image: &Image,
    offset_height: i64,
    offset_width: i64,
    target_height: i64,
    target_width: i64,
) -> Result<Image> {
    let d = hw(image, "pad_to_bounding_box")?;
    let top = non_negative(offset_height, "offset_height")?;
    let left = non_negative(offset_width, "offset_width")?;
    let th = non_negative(target_height, "target_height")?;
    let tw = non_negative(target_width, "target_width")?;
    if th.checked_sub(top).is_none_or(|room| room < d.h) {
        return Err(ImageError::new("height must be <= target - offset"));
    }
    if tw.checked_sub(left).is_none_or(|room| room < d.w) {
        return Err(ImageError::new("width must be <= target - offset"));
    }
    if th.saturating_mul(tw) > MAX_PIXELS {
        return Err(ImageError::new(format!(
            "pad_to_bounding_box: a target of {th}x{tw} is larger than {MAX_PIXELS} pixels"
        )));
    }
    Ok(each_dtype!(image, a => padded(a, d.h_axis, top, left, th, tw)))
}

/// `central_crop`'s start along a dimension of `n`: `int((n − n·fraction) /
/// 2)` in float64, as TF computes it.
fn central_start(n: usize, fraction: f64) -> usize {
    ((n as f64 - n as f64 * fraction) / 2.0) as usize
}

/// `tf.image.central_crop(image, central_fraction)`.
pub fn central_crop(image: &Image, central_fraction: f64) -> Result<Image> {
    let d = hw(image, "central_crop")?;
    if !(central_fraction > 0.0 && central_fraction <= 1.0) {
        return Err(ImageError::new("central_fraction must be within (0, 1]"));
    }
    if central_fraction == 1.0 {
        return Ok(image.clone());
    }
    let top = central_start(d.h, central_fraction);
    let left = central_start(d.w, central_fraction);
    let (h, w) = (d.h - 2 * top, d.w - 2 * left);
    Ok(each_dtype!(image, a => window(a, d.h_axis, top, left, h, w)))
}

/// `tf.image.resize_with_crop_or_pad(image, target_height, target_width)`:
/// a central crop where the image is larger, zero padding (the odd pixel
/// at the end) where it is smaller.
pub fn resize_with_crop_or_pad(
    image: &Image,
    target_height: i64,
    target_width: i64,
) -> Result<Image> {
    let d = hw(image, "resize_with_crop_or_pad")?;
    let th = positive(target_height, "target_height")?;
    let tw = positive(target_width, "target_width")?;
    let (h, w) = (d.h as i64, d.w as i64);
    let (dh, dw) = (th as i64 - h, tw as i64 - w);
    // Python's floor division, as TF writes it.
    let crop_top = (-dh).div_euclid(2).max(0);
    let crop_left = (-dw).div_euclid(2).max(0);
    let pad_top = dh.div_euclid(2).max(0);
    let pad_left = dw.div_euclid(2).max(0);
    let cropped = crop_to_bounding_box(
        image,
        crop_top,
        crop_left,
        (th as i64).min(h),
        (tw as i64).min(w),
    )?;
    pad_to_bounding_box(&cropped, pad_top, pad_left, th as i64, tw as i64)
}
