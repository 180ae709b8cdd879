//! The random augmentations of `tf.image` as deterministic functions of an
//! image and the uniform draws the caller passes ([`Draws`]):
//! `random_flip_left_right`, `random_flip_up_down`, `random_crop`,
//! `random_brightness` and `sample_distorted_bounding_box` (TF's algorithm of
//! `sample_distorted_bounding_box_op.cc`).
//!
//! Invariants:
//! - Each function uses its draws in TF's order and in TF's way (a flip when
//!   the draw is below 0.5; a crop offset `⌊u · (dim − size + 1)⌋` per
//!   dimension; a brightness delta `−max_delta + u · 2·max_delta`), so the
//!   same draws give the same result whatever thread runs it. TF's own
//!   random streams (Philox, stateful or stateless seeds) are not
//!   reproduced: a spec's run is reproducible within specc, not draw for
//!   draw against TF.
//! - `random_contrast`, `random_hue` and `random_saturation` are TF's
//!   `adjust_*` with a uniform factor; they live with the `adjust` functions.

use crate::tensor::{each_dtype, Image, ImageError, Result};
use ndarray::{ArrayD, Axis, Slice};

/// A source of uniform draws in `[0, 1)`: the caller's generator (the
/// pipeline's is specc's one PRNG keyed by seed, epoch and example).
pub trait Draws {
    /// The next uniform float in `[0, 1)`.
    fn uniform(&mut self) -> f32;

    /// A uniform integer in `[0, n)` (`n` > 0): `⌊u · n⌋`, TF's
    /// `random.Uniform(n)`.
    fn below(&mut self, n: usize) -> usize {
        ((self.uniform() as f64 * n as f64) as usize).min(n.saturating_sub(1))
    }
}

impl<F: FnMut() -> f32> Draws for F {
    fn uniform(&mut self) -> f32 {
        self()
    }
}

fn image_rank(op: &str, image: &Image) -> Result<usize> {
    let r = image.shape().len();
    if r == 3 || r == 4 {
        Ok(r)
    } else {
        Err(ImageError::new(format!(
            "{op}: `image` must be [height, width, channels] or [batch, height, width, channels], got shape {:?}",
            image.shape()
        )))
    }
}

fn flip(image: &Image, axis: usize) -> Image {
    fn rev<T: Clone>(a: &ArrayD<T>, axis: usize) -> ArrayD<T> {
        a.slice_axis(Axis(axis), Slice::new(0, None, -1))
            .as_standard_layout()
            .into_owned()
    }
    each_dtype!(image, a => rev(a, axis))
}

/// `tf.image.random_flip_left_right(image)`: flips the width when the draw
/// is below 0.5; a batch draws once per image, as TF 2 does.
pub fn random_flip_left_right(image: &Image, draws: &mut impl Draws) -> Result<Image> {
    random_flip(image, draws, "random_flip_left_right", 1)
}

/// `tf.image.random_flip_up_down(image)`: flips the height when the draw
/// is below 0.5; a batch draws once per image.
pub fn random_flip_up_down(image: &Image, draws: &mut impl Draws) -> Result<Image> {
    random_flip(image, draws, "random_flip_up_down", 0)
}

fn random_flip(image: &Image, draws: &mut impl Draws, op: &str, axis: usize) -> Result<Image> {
    let rank = image_rank(op, image)?;
    if rank == 3 {
        return Ok(if draws.uniform() < 0.5 {
            flip(image, axis)
        } else {
            image.clone()
        });
    }
    let n = image.shape()[0];
    let mut out = image.clone();
    for i in 0..n {
        if draws.uniform() < 0.5 {
            fn flip_one<T: Clone>(a: &mut ArrayD<T>, i: usize, axis: usize) {
                let one = a.index_axis(Axis(0), i);
                let flipped = one
                    .slice_axis(Axis(axis), Slice::new(0, None, -1))
                    .to_owned();
                a.index_axis_mut(Axis(0), i).assign(&flipped);
            }
            match &mut out {
                Image::U8(a) => flip_one(a, i, axis),
                Image::U16(a) => flip_one(a, i, axis),
                Image::I16(a) => flip_one(a, i, axis),
                Image::I32(a) => flip_one(a, i, axis),
                Image::F16(a) | Image::F32(a) => flip_one(a, i, axis),
                Image::F64(a) => flip_one(a, i, axis),
            }
        }
    }
    Ok(out)
}

/// `tf.image.random_crop(value, size)`: a `size` slice of `value` (one
/// entry per dimension, each at most the dimension) at a uniform offset
/// `⌊u · (dim − size + 1)⌋` per dimension, drawn in dimension order.
pub fn random_crop(value: &Image, size: &[usize], draws: &mut impl Draws) -> Result<Image> {
    let shape = value.shape().to_vec();
    if size.len() != shape.len() {
        return Err(ImageError::new(format!(
            "random_crop: `size` must have one entry per dimension of `value` ({}), got {size:?}",
            shape.len()
        )));
    }
    if size.iter().zip(&shape).any(|(s, d)| s > d) || size.contains(&0) {
        return Err(ImageError::new(format!(
            "random_crop: Need value.shape >= size, got value.shape {shape:?} and size {size:?}"
        )));
    }
    let offsets: Vec<usize> = size
        .iter()
        .zip(&shape)
        .map(|(s, d)| draws.below(d - s + 1))
        .collect();
    fn cut<T: Clone>(a: &ArrayD<T>, offsets: &[usize], size: &[usize]) -> ArrayD<T> {
        let mut v = a.view();
        for (k, (&o, &s)) in offsets.iter().zip(size).enumerate() {
            v.slice_axis_inplace(Axis(k), Slice::from(o..o + s));
        }
        v.as_standard_layout().into_owned()
    }
    Ok(each_dtype!(value, a => cut(a, &offsets, size)))
}

/// `tf.image.random_brightness(image, max_delta)`: `adjust_brightness` by
/// a delta uniform in `[−max_delta, max_delta)`. Float images get the delta
/// added; integer images go through float32 and back as TF's
/// `convert_image_dtype` does (`x / max`, add, clip to [0, 1],
/// `trunc(x · (max + 0.5))`).
pub fn random_brightness(image: &Image, max_delta: f32, draws: &mut impl Draws) -> Result<Image> {
    if max_delta.is_nan() || max_delta < 0.0 || !max_delta.is_finite() {
        return Err(ImageError::new(format!(
            "random_brightness: `max_delta` must be non-negative, got {max_delta}"
        )));
    }
    let delta = -max_delta + draws.uniform() * (2.0 * max_delta);
    crate::adjust::adjust_brightness(image, delta)
}

/// A factor uniform in `[lower, upper)` after TF's checks (`upper > lower`,
/// `lower >= 0`), for `random_contrast` and `random_saturation`.
fn factor_between(op: &str, lower: f32, upper: f32, draws: &mut impl Draws) -> Result<f32> {
    if upper.is_nan() || lower.is_nan() || upper <= lower {
        return Err(ImageError::new(format!("{op}: upper must be > lower.")));
    }
    if lower < 0.0 {
        return Err(ImageError::new(format!(
            "{op}: lower must be non-negative."
        )));
    }
    Ok(lower + draws.uniform() * (upper - lower))
}

/// `tf.image.random_hue(image, max_delta)`: `adjust_hue` by a delta
/// uniform in `[−max_delta, max_delta)`; TF's check: `0 ≤ max_delta ≤ 0.5`.
pub fn random_hue(image: &Image, max_delta: f32, draws: &mut impl Draws) -> Result<Image> {
    if !(0.0..=0.5).contains(&max_delta) {
        return Err(ImageError::new(
            "random_hue: max_delta must be in [0, 0.5].",
        ));
    }
    let delta = -max_delta + draws.uniform() * (2.0 * max_delta);
    crate::adjust::adjust_hue(image, delta)
}

/// `tf.image.random_saturation(image, lower, upper)`: `adjust_saturation`
/// by a factor uniform in `[lower, upper)`; TF's checks: `upper > lower`,
/// `lower >= 0`.
pub fn random_saturation(
    image: &Image,
    lower: f32,
    upper: f32,
    draws: &mut impl Draws,
) -> Result<Image> {
    let factor = factor_between("random_saturation", lower, upper, draws)?;
    crate::adjust::adjust_saturation(image, factor)
}

/// `tf.image.random_contrast(image, lower, upper)`: `adjust_contrast` by a
/// factor uniform in `[lower, upper)`; TF's checks: `upper > lower`,
/// `lower >= 0`.
pub fn random_contrast(
    image: &Image,
    lower: f32,
    upper: f32,
    draws: &mut impl Draws,
) -> Result<Image> {
    let factor = factor_between("random_contrast", lower, upper, draws)?;
    crate::adjust::adjust_contrast(image, factor)
}

/// The arguments of [`sample_distorted_bounding_box`], with TF 2's
/// defaults (`Default`).
#[derive(Clone, Debug, PartialEq)]
pub struct DistortedBoxOptions {
    /// `min_object_covered` (0.1): the fraction of some bounding box the
    /// crop must contain.
    pub min_object_covered: f32,
    /// `aspect_ratio_range` ((0.75, 1.33)): width / height of the crop.
    pub aspect_ratio_range: [f32; 2],
    /// `area_range` ((0.05, 1.0)): the crop's fraction of the image area.
    pub area_range: [f32; 2],
    /// `max_attempts` (100): tries before the whole image is returned.
    pub max_attempts: usize,
    /// `use_image_if_no_bounding_boxes` (false): with no boxes, the whole
    /// image is the box to cover (otherwise no boxes is an error).
    pub use_image_if_no_bounding_boxes: bool,
}

impl Default for DistortedBoxOptions {
    fn default() -> Self {
        DistortedBoxOptions {
            min_object_covered: 0.1,
            aspect_ratio_range: [0.75, 1.33],
            area_range: [0.05, 1.0],
            max_attempts: 100,
            use_image_if_no_bounding_boxes: false,
        }
    }
}

/// The result of [`sample_distorted_bounding_box`]: TF's three outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct DistortedBox {
    /// `begin`: `[offset_y, offset_x, 0]`.
    pub begin: [usize; 3],
    /// `size`: `[target_height, target_width, -1]`.
    pub size: [i64; 3],
    /// `bboxes`: `[y_min, x_min, y_max, x_max]` of the crop, normalized.
    pub bbox: [f32; 4],
}

#[derive(Clone, Copy, Debug)]
struct Rect {
    min_x: i64,
    min_y: i64,
    max_x: i64,
    max_y: i64,
}

impl Rect {
    fn area(&self) -> i64 {
        if self.max_x <= self.min_x || self.max_y <= self.min_y {
            0
        } else {
            (self.max_x - self.min_x) * (self.max_y - self.min_y)
        }
    }

    fn intersect(&self, o: &Rect) -> Rect {
        Rect {
            min_x: self.min_x.max(o.min_x),
            min_y: self.min_y.max(o.min_y),
            max_x: self.max_x.min(o.max_x),
            max_y: self.max_y.min(o.max_y),
        }
    }
}

/// C's `lrintf`: round half to even.
fn lrint(x: f32) -> i64 {
    x.round_ties_even() as i64
}

/// TF's `GenerateRandomCrop`: a crop of the aspect ratio with an area in
/// the range, or `None` when the attempt fails.
fn generate_random_crop(
    width: i64,
    height: i64,
    min_rel: f32,
    max_rel: f32,
    aspect: f32,
    draws: &mut impl Draws,
) -> Option<Rect> {
    let min_area = min_rel * width as f32 * height as f32;
    let max_area = max_rel * width as f32 * height as f32;
    let mut h = lrint((min_area / aspect).sqrt());
    let mut max_h = lrint((max_area / aspect).sqrt());
    if lrint(max_h as f32 * aspect) > width {
        let eps = 0.000_000_1f32;
        max_h = ((width as f32 + 0.5 - eps) / aspect) as i64;
        if lrint(max_h as f32 * aspect) > width {
            max_h -= 1;
        }
    }
    if max_h > height {
        max_h = height;
    }
    if h >= max_h {
        h = max_h;
    }
    if h < max_h {
        h += draws.below((max_h - h + 1) as usize) as i64;
    }
    let mut w = lrint(h as f32 * aspect);
    let mut area = (w * h) as f32;
    if area < min_area {
        h += 1;
        w = lrint(h as f32 * aspect);
        area = (w * h) as f32;
    }
    if area < min_area {
        return None;
    }
    if area > max_area {
        h -= 1;
        w = lrint(h as f32 * aspect);
        area = (w * h) as f32;
    }
    if area < min_area || area > max_area || w > width || h > height || w <= 0 || h <= 0 {
        return None;
    }
    let y = if h < height {
        draws.below((height - h) as usize) as i64
    } else {
        0
    };
    let x = if w < width {
        draws.below((width - w) as usize) as i64
    } else {
        0
    };
    Some(Rect {
        min_x: x,
        min_y: y,
        max_x: x + w,
        max_y: y + h,
    })
}

/// `tf.image.sample_distorted_bounding_box(image_size, bounding_boxes, ...)`:
/// TF's algorithm. Up to `max_attempts` times: an aspect ratio uniform in
/// the range, a crop of it (`GenerateRandomCrop`: a height between those of
/// the smallest and largest areas, uniform, then a uniform position), kept
/// when it covers at least `min_object_covered` of some box. When every
/// attempt fails, the whole image. `image_size` is `[height, width, ...]`;
/// `boxes` are `[y_min, x_min, y_max, x_max]` in [0, 1].
pub fn sample_distorted_bounding_box(
    image_size: &[usize],
    boxes: &[[f32; 4]],
    options: &DistortedBoxOptions,
    draws: &mut impl Draws,
) -> Result<DistortedBox> {
    let op = "sample_distorted_bounding_box";
    if image_size.len() < 2 || image_size[0] == 0 || image_size[1] == 0 {
        return Err(ImageError::new(format!(
            "{op}: `image_size` must be [height, width, channels] with a positive height and width, got {image_size:?}"
        )));
    }
    let [alo, ahi] = options.aspect_ratio_range;
    if !(alo > 0.0 && alo <= ahi && ahi.is_finite()) {
        return Err(ImageError::new(format!(
            "{op}: `aspect_ratio_range` must be two positive increasing values, got [{alo}, {ahi}]"
        )));
    }
    let [lo, hi] = options.area_range;
    if !(lo > 0.0 && lo <= hi && hi <= 1.0) {
        return Err(ImageError::new(format!(
            "{op}: `area_range` must be in (0, 1] and increasing, got [{lo}, {hi}]"
        )));
    }
    if options.max_attempts == 0 {
        return Err(ImageError::new(format!(
            "{op}: `max_attempts` must be positive, got 0"
        )));
    }
    if options.min_object_covered.is_nan() || options.min_object_covered < 0.0 {
        return Err(ImageError::new(format!(
            "{op}: `min_object_covered` must be non-negative, got {}",
            options.min_object_covered
        )));
    }
    let (height, width) = (image_size[0] as i64, image_size[1] as i64);
    let mut rects = Vec::with_capacity(boxes.len().max(1));
    for b in boxes {
        if b.iter().any(|v| !(0.0..=1.0).contains(v)) {
            return Err(ImageError::new(format!(
                "{op}: All bounding box coordinates must be in [0.0, 1.0], got {b:?}"
            )));
        }
        rects.push(Rect {
            min_x: (b[1] * width as f32) as i64,
            min_y: (b[0] * height as f32) as i64,
            max_x: (b[3] * width as f32) as i64,
            max_y: (b[2] * height as f32) as i64,
        });
    }
    if rects.is_empty() {
        if !options.use_image_if_no_bounding_boxes {
            return Err(ImageError::new(format!(
                "{op}: No bounding boxes provided as input. One must enable use_image_if_no_bounding_boxes if you wish to not provide any bounding boxes."
            )));
        }
        rects.push(Rect {
            min_x: 0,
            min_y: 0,
            max_x: width,
            max_y: height,
        });
    }
    let mut crop = Rect {
        min_x: 0,
        min_y: 0,
        max_x: width,
        max_y: height,
    };
    for _ in 0..options.max_attempts {
        let aspect = draws.uniform() * (ahi - alo) + alo;
        if let Some(c) = generate_random_crop(width, height, lo, hi, aspect, draws) {
            let covered = rects.iter().any(|r| {
                let area = r.area();
                area > 0 && c.intersect(r).area() as f32 / area as f32 >= options.min_object_covered
            });
            if covered {
                crop = c;
                break;
            }
        }
    }
    let (ch, cw) = (crop.max_y - crop.min_y, crop.max_x - crop.min_x);
    Ok(DistortedBox {
        begin: [crop.min_y as usize, crop.min_x as usize, 0],
        size: [ch, cw, -1],
        bbox: [
            crop.min_y as f32 / height as f32,
            crop.min_x as f32 / width as f32,
            crop.max_y as f32 / height as f32,
            crop.max_x as f32 / width as f32,
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    fn image(h: usize, w: usize, c: usize) -> Image {
        Image::F32(ArrayD::from_shape_fn(IxDyn(&[h, w, c]), |i| {
            (i[0] * 100 + i[1] * 10 + i[2]) as f32
        }))
    }

    fn fixed(values: Vec<f32>) -> impl FnMut() -> f32 {
        let mut i = 0;
        move || {
            let v = values[i % values.len()];
            i += 1;
            v
        }
    }

    #[test]
    fn flips_below_one_half() {
        let im = image(2, 3, 1);
        let same = random_flip_left_right(&im, &mut fixed(vec![0.5])).unwrap();
        assert_eq!(same, im);
        let flipped = random_flip_left_right(&im, &mut fixed(vec![0.49])).unwrap();
        assert_eq!(flipped.to_f32()[[0, 0, 0]], 2.0 * 10.0);
        let ud = random_flip_up_down(&im, &mut fixed(vec![0.0])).unwrap();
        assert_eq!(ud.to_f32()[[0, 2, 0]], 100.0 + 20.0);
    }

    #[test]
    fn crop_offsets_follow_the_draws() {
        let im = image(5, 7, 3);
        let c = random_crop(&im, &[2, 3, 3], &mut fixed(vec![0.99, 0.0, 0.5])).unwrap();
        assert_eq!(c.shape(), &[2, 3, 3]);
        // offsets: floor(0.99 * 4) = 3, 0, floor(0.5 * 1) = 0
        assert_eq!(c.to_f32()[[0, 0, 0]], 300.0);
        assert!(random_crop(&im, &[6, 3, 3], &mut fixed(vec![0.0])).is_err());
        assert!(random_crop(&im, &[2, 3], &mut fixed(vec![0.0])).is_err());
    }

    #[test]
    fn brightness_saturates_integers() {
        let im = Image::U8(ArrayD::from_elem(IxDyn(&[1, 1, 1]), 250u8));
        let b = random_brightness(&im, 0.5, &mut fixed(vec![0.99])).unwrap();
        assert_eq!(b.to_f32()[[0, 0, 0]], 255.0);
        assert!(random_brightness(&im, -1.0, &mut fixed(vec![0.0])).is_err());
    }

    #[test]
    fn distorted_boxes_meet_their_constraints() {
        let opts = DistortedBoxOptions {
            min_object_covered: 0.5,
            area_range: [0.3, 0.9],
            ..Default::default()
        };
        let mut state = 12345u64;
        let mut draws = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let boxes = [[0.2, 0.3, 0.6, 0.9]];
        for _ in 0..200 {
            let b = sample_distorted_bounding_box(&[40, 60, 3], &boxes, &opts, &mut draws).unwrap();
            let (y, x) = (b.begin[0] as i64, b.begin[1] as i64);
            let (h, w) = (b.size[0], b.size[1]);
            assert!(y + h <= 40 && x + w <= 60 && h > 0 && w > 0);
            let area = (h * w) as f32 / 2400.0;
            let whole = h == 40 && w == 60;
            assert!(
                whole || (0.3 - 1e-6..=0.9 + 1e-6).contains(&area),
                "area {area}"
            );
        }
        // No boxes: refused unless the whole image may stand in.
        assert!(
            sample_distorted_bounding_box(&[4, 4, 1], &[], &opts, &mut fixed(vec![0.3])).is_err()
        );
        let o = DistortedBoxOptions {
            use_image_if_no_bounding_boxes: true,
            ..opts
        };
        assert!(sample_distorted_bounding_box(&[4, 4, 1], &[], &o, &mut fixed(vec![0.3])).is_ok());
        assert!(sample_distorted_bounding_box(
            &[4, 4, 1],
            &[[0.0, 0.0, 1.5, 1.0]],
            &o,
            &mut fixed(vec![0.3])
        )
        .is_err());
    }
}
