//! `tf.image.non_max_suppression`: greedy hard NMS as TF's
//! `NonMaxSuppressionV3` kernel does it.
//!
//! Owns: TF's order and tests. Candidates are the boxes whose score is
//! strictly above `score_threshold`, taken by decreasing score (ties by
//! lower index); a candidate is dropped when its IoU with a selected box is
//! strictly above `iou_threshold`; selection stops at `max_output_size`.
//! Boxes are `[y1, x1, y2, x2]` in any corner order; a box of zero area
//! overlaps nothing. IoU is computed in float32, as TF's kernel does.

use crate::tensor::{ImageError, Result};

/// The IoU of two boxes (0 when either has no area).
pub fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let (ay0, ay1) = (a[0].min(a[2]), a[0].max(a[2]));
    let (ax0, ax1) = (a[1].min(a[3]), a[1].max(a[3]));
    let (by0, by1) = (b[0].min(b[2]), b[0].max(b[2]));
    let (bx0, bx1) = (b[1].min(b[3]), b[1].max(b[3]));
    let area_a = (ay1 - ay0) * (ax1 - ax0);
    let area_b = (by1 - by0) * (bx1 - bx0);
    if area_a <= 0.0 || area_b <= 0.0 {
        return 0.0;
    }
    let ih = (ay1.min(by1) - ay0.max(by0)).max(0.0);
    let iw = (ax1.min(bx1) - ax0.max(bx0)).max(0.0);
    let inter = ih * iw;
    inter / (area_a + area_b - inter)
}

/// `tf.image.non_max_suppression(boxes, scores, max_output_size,
/// iou_threshold, score_threshold)`: the indices of the selected boxes, in
/// selection order.
pub fn non_max_suppression(
    boxes: &[[f32; 4]],
    scores: &[f32],
    max_output_size: usize,
    iou_threshold: f32,
    score_threshold: f32,
) -> Result<Vec<i32>> {
    if boxes.len() != scores.len() {
        return Err(ImageError::new(format!(
            "non_max_suppression: {} boxes but {} scores",
            boxes.len(),
            scores.len()
        )));
    }
    if !(0.0..=1.0).contains(&iou_threshold) {
        return Err(ImageError::new(
            "non_max_suppression: iou_threshold must be in [0, 1]",
        ));
    }
    if boxes.len() > i32::MAX as usize {
        return Err(ImageError::new("non_max_suppression: too many boxes"));
    }
    let mut order: Vec<usize> = (0..boxes.len())
        .filter(|&i| scores[i] > score_threshold)
        .collect();
    order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
    let mut selected: Vec<usize> = Vec::new();
    for i in order {
        if selected.len() >= max_output_size {
            break;
        }
        if selected
            .iter()
            .all(|&s| iou(&boxes[i], &boxes[s]) <= iou_threshold)
        {
            selected.push(i);
        }
    }
    Ok(selected.into_iter().map(|i| i as i32).collect())
}
