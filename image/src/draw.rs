//! `tf.image.draw_bounding_boxes` (v2, with colours) and the v1 op (TF's
//! default colour table).
//!
//! Owns: TF's `DrawBoundingBoxes` kernel: box `b` of an image is drawn in
//! colour `b mod colours`; each corner is `f32(coordinate) · f32(size − 1)`
//! truncated toward zero; an inverted box or one wholly outside is skipped;
//! the four one-pixel lines are drawn where they fall inside the image,
//! clamped to it; with one channel the default colours' first component is 1.
//!
//! Invariant: pixels off the boxes' outlines are the input's, unchanged.

use ndarray::ArrayD;

use crate::tensor::{ImageError, Result};

/// TF's colour table when no colours are given (RGBA).
const DEFAULT_COLORS: [[f32; 4]; 10] = [
    [1.0, 1.0, 0.0, 1.0],
    [0.0, 0.0, 1.0, 1.0],
    [1.0, 0.0, 0.0, 1.0],
    [0.0, 1.0, 0.0, 1.0],
    [0.5, 0.0, 0.5, 1.0],
    [0.5, 0.5, 0.0, 1.0],
    [0.5, 0.0, 0.0, 1.0],
    [0.0, 0.0, 0.5, 1.0],
    [0.0, 1.0, 1.0, 1.0],
    [1.0, 0.0, 1.0, 1.0],
];

/// `draw_bounding_boxes(images [N, H, W, C] float32, boxes [N][B][y1, x1, y2, x2],
/// colors [K][≥ C] or None)`.
pub fn draw_bounding_boxes(
    images: &ArrayD<f32>,
    boxes: &[Vec<[f32; 4]>],
    colors: Option<&[Vec<f32>]>,
) -> Result<ArrayD<f32>> {
    let s = images.shape().to_vec();
    let [n, h, w, depth] = s[..] else {
        return Err(ImageError::new(format!(
            "draw_bounding_boxes: images must be [N, H, W, C], got {s:?}"
        )));
    };
    if ![1, 3, 4].contains(&depth) {
        return Err(ImageError::new(
            "draw_bounding_boxes: channel depth must be 1 (grey), 3 (RGB) or 4 (RGBA)",
        ));
    }
    if boxes.len() != n {
        return Err(ImageError::new(format!(
            "draw_bounding_boxes: boxes for {} images, images {n}",
            boxes.len()
        )));
    }
    let mut table: Vec<Vec<f32>> = match colors {
        Some(c) if !c.is_empty() => {
            if c.iter().any(|row| row.len() < depth) {
                return Err(ImageError::new(
                    "draw_bounding_boxes: colors must have at least as many channels as the images",
                ));
            }
            c.iter().map(|row| row[..depth].to_vec()).collect()
        }
        _ => DEFAULT_COLORS.iter().map(|c| c[..depth].to_vec()).collect(),
    };
    if colors.is_none_or(|c| c.is_empty()) && depth == 1 {
        for c in &mut table {
            c[0] = 1.0;
        }
    }
    let mut out = images.as_standard_layout().to_owned();
    let px = out.as_slice_mut().expect("standard layout");
    let (hi, wi) = (h as i64, w as i64);
    for (b, image_boxes) in boxes.iter().enumerate() {
        for (k, bx) in image_boxes.iter().enumerate() {
            let color = &table[k % table.len()];
            let corner = |v: f32, size: i64| (v * (size - 1) as f32) as i64;
            let (r0, c0) = (corner(bx[0], hi), corner(bx[1], wi));
            let (r1, c1) = (corner(bx[2], hi), corner(bx[3], wi));
            if r0 > r1 || c0 > c1 || r0 >= hi || r1 < 0 || c0 >= wi || c1 < 0 {
                continue;
            }
            let (r0c, r1c) = (r0.max(0), r1.min(hi - 1));
            let (c0c, c1c) = (c0.max(0), c1.min(wi - 1));
            let mut put = |r: i64, c: i64| {
                let at = ((b * h + r as usize) * w + c as usize) * depth;
                px[at..at + depth].copy_from_slice(color);
            };
            if r0 >= 0 {
                (c0c..=c1c).for_each(|c| put(r0, c));
            }
            if r1 < hi {
                (c0c..=c1c).for_each(|c| put(r1, c));
            }
            if c0 >= 0 {
                (r0c..=r1c).for_each(|r| put(r, c0));
            }
            if c1 < wi {
                (r0c..=r1c).for_each(|r| put(r, c1));
            }
        }
    }
    Ok(out)
}
