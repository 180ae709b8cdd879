//! `tf.image.non_max_suppression`, `non_max_suppression_with_scores`
//! (Soft-NMS) and `combined_non_max_suppression`, as TF's
//! `NonMaxSuppressionV3`/`V5` and `CombinedNonMaxSuppression` kernels do them.
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

/// `tf.image.non_max_suppression_with_scores(boxes, scores, max_output_size,
/// iou_threshold, score_threshold, soft_nms_sigma)`: the selected indices
/// and their (decayed) scores, as TF's `NonMaxSuppressionV5` kernel computes
/// them. With `soft_nms_sigma > 0` (Soft-NMS, Bodla et al.) a candidate's
/// score is multiplied by `exp(−0.5·iou²/σ)` for each selected box it was
/// not yet compared with, and it goes back into the queue while its score
/// stays above `score_threshold`; with σ = 0 it is hard NMS.
pub fn non_max_suppression_with_scores(
    boxes: &[[f32; 4]],
    scores: &[f32],
    max_output_size: usize,
    iou_threshold: f32,
    score_threshold: f32,
    soft_nms_sigma: f32,
) -> Result<(Vec<i32>, Vec<f32>)> {
    if boxes.len() != scores.len() {
        return Err(ImageError::new(format!(
            "non_max_suppression_with_scores: {} boxes but {} scores",
            boxes.len(),
            scores.len()
        )));
    }
    if !(0.0..=1.0).contains(&iou_threshold) {
        return Err(ImageError::new(
            "non_max_suppression_with_scores: iou_threshold must be in [0, 1]",
        ));
    }
    if soft_nms_sigma.is_nan() || soft_nms_sigma < 0.0 {
        return Err(ImageError::new(
            "non_max_suppression_with_scores: soft_nms_sigma must be non-negative",
        ));
    }
    if boxes.len() > i32::MAX as usize {
        return Err(ImageError::new(
            "non_max_suppression_with_scores: too many boxes",
        ));
    }
    #[derive(Clone, Copy)]
    struct Candidate {
        index: usize,
        score: f32,
        suppress_begin: usize,
    }
    // TF's priority queue: the highest score first, ties by lower index.
    let before = |a: &Candidate, b: &Candidate| {
        a.score > b.score || (a.score == b.score && a.index < b.index)
    };
    let mut queue: Vec<Candidate> = (0..boxes.len())
        .filter(|&i| scores[i] > score_threshold)
        .map(|i| Candidate {
            index: i,
            score: scores[i],
            suppress_begin: 0,
        })
        .collect();
    let soft = soft_nms_sigma > 0.0;
    let scale = if soft { -0.5 / soft_nms_sigma } else { 0.0 };
    let weight = |sim: f32| {
        let w = (scale * sim * sim).exp();
        if soft || sim <= iou_threshold {
            w
        } else {
            0.0
        }
    };
    let mut selected: Vec<usize> = Vec::new();
    let mut selected_scores: Vec<f32> = Vec::new();
    while selected.len() < max_output_size && !queue.is_empty() {
        let top = (0..queue.len())
            .reduce(|a, b| if before(&queue[b], &queue[a]) { b } else { a })
            .expect("not empty");
        let mut c = queue.swap_remove(top);
        let original = c.score;
        let mut hard = false;
        for j in (c.suppress_begin..selected.len()).rev() {
            let sim = iou(&boxes[c.index], &boxes[selected[j]]);
            c.score *= weight(sim);
            if !soft && sim > iou_threshold {
                hard = true;
                break;
            }
            if c.score <= score_threshold {
                break;
            }
        }
        c.suppress_begin = selected.len();
        if !hard {
            if c.score == original {
                selected.push(c.index);
                selected_scores.push(c.score);
                continue;
            }
            if c.score > score_threshold {
                queue.push(c);
            }
        }
    }
    Ok((
        selected.into_iter().map(|i| i as i32).collect(),
        selected_scores,
    ))
}

/// What `combined_non_max_suppression` returns for each image.
#[derive(Clone, Debug, PartialEq)]
pub struct CombinedNms {
    /// `[max_total_size, 4]` per image (zeros after the valid detections).
    pub boxes: Vec<[f32; 4]>,
    /// The score of each detection (zeros after the valid ones).
    pub scores: Vec<f32>,
    /// The class of each detection, as a float (TF's output dtype).
    pub classes: Vec<f32>,
    /// How many of the rows are detections.
    pub valid_detections: i32,
}

/// `tf.image.combined_non_max_suppression(boxes, scores,
/// max_output_size_per_class, max_total_size, iou_threshold,
/// score_threshold, pad_per_class, clip_boxes)` for one image: `boxes`
/// `[num_boxes][q]` (q = 1: shared by every class, else one per class),
/// `scores` `[num_boxes][num_classes]`. Hard NMS per class (at most
/// `min(max_output_size_per_class, num_boxes)` each), then every class's
/// detections by decreasing score, the first `max_total_size` (or, with
/// `pad_per_class`, `min(max_total_size, per_class · classes)`) kept;
/// `clip_boxes` clips the coordinates to [0, 1].
// `class` indexes each anchor's row of scores, not `scores` itself.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub fn combined_non_max_suppression(
    boxes: &[Vec<[f32; 4]>],
    scores: &[Vec<f32>],
    max_output_size_per_class: usize,
    max_total_size: usize,
    iou_threshold: f32,
    score_threshold: f32,
    pad_per_class: bool,
    clip_boxes: bool,
) -> Result<CombinedNms> {
    let n = boxes.len();
    if scores.len() != n {
        return Err(ImageError::new(format!(
            "combined_non_max_suppression: {n} boxes but {} score rows",
            scores.len()
        )));
    }
    let classes = scores.first().map_or(0, Vec::len);
    let q = boxes.first().map_or(1, Vec::len);
    if boxes.iter().any(|b| b.len() != q) || scores.iter().any(|s| s.len() != classes) {
        return Err(ImageError::new(
            "combined_non_max_suppression: ragged boxes or scores",
        ));
    }
    if q != 1 && q != classes {
        return Err(ImageError::new(format!(
            "combined_non_max_suppression: {q} boxes per anchor for {classes} classes (need 1 or {classes})"
        )));
    }
    if !(0.0..=1.0).contains(&iou_threshold) {
        return Err(ImageError::new(
            "combined_non_max_suppression: iou_threshold must be in [0, 1]",
        ));
    }
    let per_class = max_output_size_per_class.min(n);
    // (box index, score, class, box) of every class's selections.
    let mut found: Vec<(usize, f32, usize, [f32; 4])> = Vec::new();
    for class in 0..classes {
        let b = if q > 1 { class } else { 0 };
        // By decreasing score; TF's heap breaks ties its own way, these take
        // the lower index.
        let mut order: Vec<usize> = (0..n)
            .filter(|&i| scores[i][class] > score_threshold)
            .collect();
        order.sort_by(|&i, &j| {
            scores[j][class]
                .total_cmp(&scores[i][class])
                .then(i.cmp(&j))
        });
        let mut selected: Vec<usize> = Vec::new();
        for i in order {
            if selected.len() >= per_class {
                break;
            }
            if selected
                .iter()
                .rev()
                .all(|&s| iou(&boxes[i][b], &boxes[s][b]) <= iou_threshold)
            {
                selected.push(i);
                found.push((i, scores[i][class], class, boxes[i][b]));
            }
        }
    }
    // Stable by decreasing score: equal scores keep class order.
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    let max_total = max_output_size_per_class.saturating_mul(classes);
    let size = if pad_per_class {
        max_total_size.min(max_total)
    } else {
        max_total_size
    };
    let valid = if pad_per_class {
        size.min(found.len())
    } else {
        found.len().min(max_total_size)
    };
    let mut out = CombinedNms {
        boxes: vec![[0.0; 4]; size],
        scores: vec![0.0; size],
        classes: vec![0.0; size],
        valid_detections: valid as i32,
    };
    for (k, &(_, score, class, bx)) in found.iter().take(valid).enumerate() {
        out.boxes[k] = if clip_boxes {
            bx.map(|v| v.clamp(0.0, 1.0))
        } else {
            bx
        };
        out.scores[k] = score;
        out.classes[k] = class as f32;
    }
    Ok(out)
}
