//! `tf.image.crop_and_resize` (bilinear and nearest, `extrapolation_value`)
//! with its gradients w.r.t. the image and the boxes, and
//! `tf.image.resize_with_pad`.
//!
//! Owns: TF's `CropAndResize` sampling — `y = y1·(H−1) + i·(y2−y1)·(H−1)/
//! (crop_h−1)` (for `crop_h = 1`, the box centre), samples outside
//! `[0, H−1]` get `extrapolation_value`, flipped boxes flip the crop — and
//! its two backprop kernels (the box gradient is the bilinear one for both
//! methods, as TF computes it); `resize_with_pad`'s float32 ratio, floor and
//! padding.
//! Invariant: the gradients are the adjoints of the forward sampling at the
//! same sample positions (extrapolated samples have no gradient).

use ndarray::{ArrayD, IxDyn};

use crate::resize::{resize, ResizeMethod};
use crate::tensor::{Image, ImageError, Result};

/// `crop_and_resize`'s sampling method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CropMethod {
    /// `"bilinear"`.
    Bilinear,
    /// `"nearest"`.
    Nearest,
}

/// The checked arguments of a crop: the image as `[N, H, W, C]` f32 values.
struct Crop<'a> {
    x: Vec<f32>,
    dims: [usize; 4],
    boxes: &'a [[f32; 4]],
    box_indices: &'a [i64],
    crop: [usize; 2],
}

fn checked<'a>(
    image: &Image,
    boxes: &'a [[f32; 4]],
    box_indices: &'a [i64],
    crop_size: [usize; 2],
) -> Result<Crop<'a>> {
    let dims = match image.shape() {
        [n, h, w, c] => [*n, *h, *w, *c],
        s => {
            return Err(ImageError::new(format!(
                "crop_and_resize: image must be 4-D, got {s:?}"
            )))
        }
    };
    if boxes.len() != box_indices.len() {
        return Err(ImageError::new(format!(
            "crop_and_resize: {} boxes but {} box indices",
            boxes.len(),
            box_indices.len()
        )));
    }
    if crop_size[0] == 0 || crop_size[1] == 0 {
        return Err(ImageError::new(
            "crop_and_resize: crop dimensions must be positive",
        ));
    }
    if dims[1] == 0 || dims[2] == 0 {
        return Err(ImageError::new(
            "crop_and_resize: image dimensions must be positive",
        ));
    }
    if let Some(b) = box_indices
        .iter()
        .find(|&&b| b < 0 || b as usize >= dims[0])
    {
        return Err(ImageError::new(format!(
            "crop_and_resize: box_index has values outside [0, batch_size): {b}"
        )));
    }
    let values = boxes
        .len()
        .saturating_mul(crop_size[0])
        .saturating_mul(crop_size[1])
        .saturating_mul(dims[3]);
    if values > 1 << 28 {
        return Err(ImageError::new(format!(
            "crop_and_resize: an output of {values} values"
        )));
    }
    Ok(Crop {
        x: image.to_f32().iter().copied().collect(),
        dims,
        boxes,
        box_indices,
        crop: crop_size,
    })
}

/// The forward sample position along an axis (`None`: extrapolated).
fn sample(lo: f32, hi: f32, size: usize, crop: usize, i: usize) -> Option<f32> {
    let last = (size - 1) as f32;
    let v = if crop > 1 {
        let scale = (hi - lo) * last / (crop - 1) as f32;
        lo * last + i as f32 * scale
    } else {
        0.5 * (lo + hi) * last
    };
    (v >= 0.0 && v <= last).then_some(v)
}

/// `tf.image.crop_and_resize(image, boxes, box_indices, crop_size, method,
/// extrapolation_value)`: `[num_boxes, crop_h, crop_w, C]` float32.
pub fn crop_and_resize(
    image: &Image,
    boxes: &[[f32; 4]],
    box_indices: &[i64],
    crop_size: [usize; 2],
    method: CropMethod,
    extrapolation_value: f32,
) -> Result<ArrayD<f32>> {
    let c = checked(image, boxes, box_indices, crop_size)?;
    let [_, h, w, ch] = c.dims;
    let [ch_, cw] = c.crop;
    let mut out = vec![extrapolation_value; boxes.len() * ch_ * cw * ch];
    let at = |b: usize, y: usize, x: usize, d: usize| c.x[((b * h + y) * w + x) * ch + d];
    for (bi, bx) in c.boxes.iter().enumerate() {
        let b = c.box_indices[bi] as usize;
        for i in 0..ch_ {
            let Some(in_y) = sample(bx[0], bx[2], h, ch_, i) else {
                continue;
            };
            for j in 0..cw {
                let Some(in_x) = sample(bx[1], bx[3], w, cw, j) else {
                    continue;
                };
                let o = ((bi * ch_ + i) * cw + j) * ch;
                match method {
                    CropMethod::Bilinear => {
                        let (ty, by) = (in_y.floor() as usize, in_y.ceil() as usize);
                        let (lx, rx) = (in_x.floor() as usize, in_x.ceil() as usize);
                        let (yl, xl) = (in_y - ty as f32, in_x - lx as f32);
                        for d in 0..ch {
                            let top = at(b, ty, lx, d) + (at(b, ty, rx, d) - at(b, ty, lx, d)) * xl;
                            let bottom =
                                at(b, by, lx, d) + (at(b, by, rx, d) - at(b, by, lx, d)) * xl;
                            out[o + d] = top + (bottom - top) * yl;
                        }
                    }
                    CropMethod::Nearest => {
                        let (y, x) = (in_y.round() as usize, in_x.round() as usize);
                        for d in 0..ch {
                            out[o + d] = at(b, y, x, d);
                        }
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[boxes.len(), ch_, cw, ch]), out)
        .map_err(|e| ImageError::new(e.to_string()))
}

fn grad_values(
    grad_output: &ArrayD<f32>,
    n: usize,
    crop: [usize; 2],
    ch: usize,
) -> Result<Vec<f32>> {
    if grad_output.shape() != [n, crop[0], crop[1], ch] {
        return Err(ImageError::new(format!(
            "crop_and_resize: the output gradient must be [{n}, {}, {}, {ch}], got {:?}",
            crop[0],
            crop[1],
            grad_output.shape()
        )));
    }
    Ok(grad_output.iter().copied().collect())
}

/// The gradient of `crop_and_resize` w.r.t. the image (TF's
/// `CropAndResizeGradImage`).
pub fn crop_and_resize_grad_image(
    image: &Image,
    boxes: &[[f32; 4]],
    box_indices: &[i64],
    grad_output: &ArrayD<f32>,
    method: CropMethod,
) -> Result<ArrayD<f32>> {
    let s = grad_output.shape();
    let crop = [
        s.get(1).copied().unwrap_or(0),
        s.get(2).copied().unwrap_or(0),
    ];
    let c = checked(image, boxes, box_indices, crop)?;
    let [n, h, w, ch] = c.dims;
    let g = grad_values(grad_output, boxes.len(), crop, ch)?;
    let mut out = vec![0f32; n * h * w * ch];
    let idx = |b: usize, y: usize, x: usize, d: usize| ((b * h + y) * w + x) * ch + d;
    for (bi, bx) in boxes.iter().enumerate() {
        let b = box_indices[bi] as usize;
        for i in 0..crop[0] {
            let Some(in_y) = sample(bx[0], bx[2], h, crop[0], i) else {
                continue;
            };
            for j in 0..crop[1] {
                let Some(in_x) = sample(bx[1], bx[3], w, crop[1], j) else {
                    continue;
                };
                let o = ((bi * crop[0] + i) * crop[1] + j) * ch;
                match method {
                    CropMethod::Bilinear => {
                        let (ty, by) = (in_y.floor() as usize, in_y.ceil() as usize);
                        let (lx, rx) = (in_x.floor() as usize, in_x.ceil() as usize);
                        let (yl, xl) = (in_y - ty as f32, in_x - lx as f32);
                        for d in 0..ch {
                            let dtop = (1.0 - yl) * g[o + d];
                            out[idx(b, ty, lx, d)] += (1.0 - xl) * dtop;
                            out[idx(b, ty, rx, d)] += xl * dtop;
                            let dbottom = yl * g[o + d];
                            out[idx(b, by, lx, d)] += (1.0 - xl) * dbottom;
                            out[idx(b, by, rx, d)] += xl * dbottom;
                        }
                    }
                    CropMethod::Nearest => {
                        let (y, x) = (in_y.round() as usize, in_x.round() as usize);
                        for d in 0..ch {
                            out[idx(b, y, x, d)] += g[o + d];
                        }
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, h, w, ch]), out).map_err(|e| ImageError::new(e.to_string()))
}

/// The gradient of `crop_and_resize` w.r.t. the boxes (TF's
/// `CropAndResizeGradBoxes`: the bilinear sampling's derivative, whatever
/// the method).
pub fn crop_and_resize_grad_boxes(
    image: &Image,
    boxes: &[[f32; 4]],
    box_indices: &[i64],
    grad_output: &ArrayD<f32>,
) -> Result<Vec<[f32; 4]>> {
    let s = grad_output.shape();
    let crop = [
        s.get(1).copied().unwrap_or(0),
        s.get(2).copied().unwrap_or(0),
    ];
    let c = checked(image, boxes, box_indices, crop)?;
    let [_, h, w, ch] = c.dims;
    let g = grad_values(grad_output, boxes.len(), crop, ch)?;
    let at = |b: usize, y: usize, x: usize, d: usize| c.x[((b * h + y) * w + x) * ch + d];
    let (hl, wl) = ((h - 1) as f32, (w - 1) as f32);
    let height_ratio = if crop[0] > 1 {
        hl / (crop[0] - 1) as f32
    } else {
        0.0
    };
    let width_ratio = if crop[1] > 1 {
        wl / (crop[1] - 1) as f32
    } else {
        0.0
    };
    let mut out = vec![[0f32; 4]; boxes.len()];
    for (bi, bx) in boxes.iter().enumerate() {
        let b = box_indices[bi] as usize;
        let [y1, x1, y2, x2] = *bx;
        let height_scale = if crop[0] > 1 {
            (y2 - y1) * height_ratio
        } else {
            0.0
        };
        let width_scale = if crop[1] > 1 {
            (x2 - x1) * width_ratio
        } else {
            0.0
        };
        for i in 0..crop[0] {
            let in_y = if crop[0] > 1 {
                y1 * hl + i as f32 * height_scale
            } else {
                0.5 * (y1 + y2) * hl
            };
            if in_y < 0.0 || in_y > hl {
                continue;
            }
            let (ty, by) = (in_y.floor() as usize, in_y.ceil() as usize);
            let yl = in_y - ty as f32;
            for j in 0..crop[1] {
                let in_x = if crop[1] > 1 {
                    x1 * wl + j as f32 * width_scale
                } else {
                    0.5 * (x1 + x2) * wl
                };
                if in_x < 0.0 || in_x > wl {
                    continue;
                }
                let (lx, rx) = (in_x.floor() as usize, in_x.ceil() as usize);
                let xl = in_x - lx as f32;
                for d in 0..ch {
                    let (tl, tr) = (at(b, ty, lx, d), at(b, ty, rx, d));
                    let (bl, br) = (at(b, by, lx, d), at(b, by, rx, d));
                    let top_grad = g[((bi * crop[0] + i) * crop[1] + j) * ch + d];
                    let gy = ((1.0 - xl) * (bl - tl) + xl * (br - tr)) * top_grad;
                    let gx = ((1.0 - yl) * (tr - tl) + yl * (br - bl)) * top_grad;
                    if crop[0] > 1 {
                        out[bi][0] += gy * (hl - i as f32 * height_ratio);
                        out[bi][2] += gy * (i as f32 * height_ratio);
                    } else {
                        out[bi][0] += gy * 0.5 * hl;
                        out[bi][2] += gy * 0.5 * hl;
                    }
                    if crop[1] > 1 {
                        out[bi][1] += gx * (wl - j as f32 * width_ratio);
                        out[bi][3] += gx * (j as f32 * width_ratio);
                    } else {
                        out[bi][1] += gx * 0.5 * wl;
                        out[bi][3] += gx * 0.5 * wl;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// `tf.image.resize_with_pad(image, target_height, target_width, method,
/// antialias)`: resized to fit with its aspect ratio (TF's float32 ratio
/// and floors), then zero padded to the target, centred.
pub fn resize_with_pad(
    image: &Image,
    target_height: usize,
    target_width: usize,
    method: ResizeMethod,
    antialias: bool,
) -> Result<Image> {
    let s = image.shape();
    if s.len() != 3 && s.len() != 4 {
        return Err(ImageError::new(format!(
            "resize_with_pad: 'image' must have either 3 or 4 dimensions, got {s:?}"
        )));
    }
    if target_height == 0 || target_width == 0 {
        return Err(ImageError::new(
            "resize_with_pad: target_height and target_width must be > 0",
        ));
    }
    let (size, [pad_h, pad_w]) = resize_with_pad_layout(
        [s[s.len() - 3], s[s.len() - 2]],
        [target_height, target_width],
    );
    let resized = resize(image, size, method, antialias, false)?;
    crate::geometry::pad_to_bounding_box(
        &resized,
        pad_h as i64,
        pad_w as i64,
        target_height as i64,
        target_width as i64,
    )
}

/// `resize_with_pad`'s layout of an `image_hw` image in a `target` (both
/// positive): the size it is resized to and the padding above and left of
/// it (TF's float32 ratio and floors).
pub fn resize_with_pad_layout(
    image_hw: [usize; 2],
    target: [usize; 2],
) -> ([usize; 2], [usize; 2]) {
    let (h, w) = (image_hw[0] as f32, image_hw[1] as f32);
    let (th, tw) = (target[0] as f32, target[1] as f32);
    let ratio = (w / tw).max(h / th);
    let (rh, rw) = (h / ratio, w / ratio);
    let size = [rh.floor() as usize, rw.floor() as usize];
    let pad_h = ((th - rh) / 2.0).floor().max(0.0) as usize;
    let pad_w = ((tw - rw) / 2.0).floor().max(0.0) as usize;
    (size, [pad_h, pad_w])
}
