//! Image summaries: TF's `ImageSummary` op (`tf.compat.v1.summary.image`)
//! over float images `[H, W, C]`, C in {1, 3, 4}.
//!
//! Owns: [`normalize`] (TF's `NormalizeFloatImage`: one affine map per
//! image into uint8, non-finite pixels a bad color) and [`image_values`]
//! (the first `max_images` images of a batch as PNG `Summary.Image`s under
//! TF's tags).
//!
//! Invariants: the tags are TF's (`<name>/image` when `max_images` is 1,
//! else `<name>/image/<i>`); the pixels are what TF's kernel computes:
//! with every finite value non-negative `v · 255 / max` (0 when the max is
//! below 1e-6), else `v · 127 / max|v| + 128`, truncated to uint8; a pixel
//! with a non-finite channel is red (`255, 0, 0, 255` cut to C).

use ndarray::{ArrayD, IxDyn};

use super::event::{Image, SummaryValue, ValueKind};

/// Below this the image is taken as all zeros (TF's `kZeroThreshold`).
const ZERO_THRESHOLD: f32 = 1e-6;

/// One image's pixels `[H·W, C]` (row-major) to uint8, as TF's
/// `NormalizeFloatImage`.
pub fn normalize(pixels: &[f32], channels: usize) -> Vec<u8> {
    let c = channels.max(1);
    let finite = |p: &[f32]| p.iter().all(|v| v.is_finite());
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for p in pixels.chunks(c).filter(|p| finite(p)) {
        for &v in p {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let (scale, offset) = if lo < 0.0 {
        let m = lo.abs().max(hi.abs());
        (if m < ZERO_THRESHOLD { 0.0 } else { 127.0 / m }, 128.0)
    } else {
        (if hi < ZERO_THRESHOLD { 0.0 } else { 255.0 / hi }, 0.0)
    };
    let bad = [255u8, 0, 0, 255];
    let mut out = Vec::with_capacity(pixels.len());
    for p in pixels.chunks(c) {
        if finite(p) {
            // TF's cast<uint8> of a value in [0, 255]: truncation.
            out.extend(p.iter().map(|&v| (v * scale + offset) as u8));
        } else {
            out.extend((0..c).map(|k| bad[k.min(3)]));
        }
    }
    out
}

/// The first `max_images` images of `batch` (`rows` images `[H, W, C]`,
/// row-major) as TF's `ImageSummary` values under `name`.
pub fn image_values(
    name: &str,
    batch: &[f32],
    rows: usize,
    hwc: [usize; 3],
    max_images: usize,
) -> Result<Vec<SummaryValue>, String> {
    let [h, w, c] = hwc;
    let per = h * w * c;
    let n = rows.min(max_images).min(batch.len() / per.max(1));
    (0..n)
        .map(|i| {
            let pixels = normalize(&batch[i * per..(i + 1) * per], c);
            let image =
                ArrayD::from_shape_vec(IxDyn(&[h, w, c]), pixels).map_err(|e| e.to_string())?;
            let encoded = specc_image::codec::encode_png(&specc_image::Image::U8(image), -1)
                .map_err(|e| format!("image summary `{name}`: {e}"))?;
            let tag = if max_images == 1 {
                format!("{name}/image")
            } else {
                format!("{name}/image/{i}")
            };
            Ok(SummaryValue {
                tag,
                plugin_name: None,
                kind: ValueKind::Image(Image {
                    height: h as i32,
                    width: w as i32,
                    colorspace: c as i32,
                    encoded,
                }),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_negative_images_scale_their_maximum_to_255() {
        assert_eq!(normalize(&[0.0, 0.5, 1.0, 0.25], 1), [0, 127, 255, 63]);
        // All (near) zero: black.
        assert_eq!(normalize(&[0.0, 1e-7], 1), [0, 0]);
    }

    #[test]
    fn signed_images_center_zero_at_128() {
        // max |v| = 2: v · 63.5 + 128, truncated.
        assert_eq!(normalize(&[-2.0, 0.0, 1.0, 2.0], 1), [1, 128, 191, 255]);
    }

    #[test]
    fn a_pixel_with_a_non_finite_channel_is_red_and_ignored_by_the_range() {
        let px = [1.0, 2.0, 4.0, f32::NAN, 0.0, 0.0];
        assert_eq!(normalize(&px, 3), [63, 127, 255, 255, 0, 0]);
    }
}
