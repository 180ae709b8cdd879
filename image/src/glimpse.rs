//! `tf.image.extract_glimpse` (v2) and `tf.compat.v1.image.extract_glimpse`.
//!
//! Owns: TF's `ExtractGlimpse` kernel arithmetic (Eigen's
//! `ExtractGlimpses`): the offset of each glimpse in float32 — normalized
//! coordinates are multiplied by the image size; centered ones are moved by
//! half the image (and, normalized, halved first and moved back by half the
//! glimpse; v1 always moves back by half the glimpse) — then truncated
//! toward zero; the part of the glimpse inside the image is copied, the rest
//! filled by the noise mode. `Zero` fills zeros, as TF does; `Uniform`
//! (between each image's minimum and maximum) and `Gaussian` (each
//! channel's mean and standard deviation, clipped to its range) take their
//! draws from the caller, so they follow TF's distributions, not its
//! numbers.
//!
//! Invariant: a glimpse wholly inside the image is an exact copy (no noise).

use ndarray::{ArrayD, IxDyn};

use crate::random::Draws;
use crate::tensor::{ImageError, Result};

/// What fills the parts of a glimpse outside the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlimpseNoise {
    /// Zeros (`noise='zero'`).
    Zero,
    /// Uniform between the image's minimum and maximum (`'uniform'`, TF's default).
    Uniform,
    /// Each channel's mean plus its standard deviation times a normal draw,
    /// clipped to the channel's range (`'gaussian'`).
    Gaussian,
}

impl GlimpseNoise {
    /// TF's names: `"uniform"`, `"gaussian"`, `"zero"`.
    pub fn from_name(name: &str) -> Option<GlimpseNoise> {
        match name {
            "uniform" => Some(GlimpseNoise::Uniform),
            "gaussian" => Some(GlimpseNoise::Gaussian),
            "zero" => Some(GlimpseNoise::Zero),
            _ => None,
        }
    }
}

/// The glimpse options: TF's arguments and the op version (1:
/// `tf.compat.v1.image.extract_glimpse`, 2: `tf.image.extract_glimpse`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlimpseOptions {
    /// Offsets relative to the image centre (−1 and 1 the edges when normalized).
    pub centered: bool,
    /// Offsets in [0, 1] (or [−1, 1] centred) rather than pixels.
    pub normalized: bool,
    /// What fills the glimpse outside the image.
    pub noise: GlimpseNoise,
    /// 1: `tf.compat.v1.image.extract_glimpse`; 2: `tf.image.extract_glimpse`.
    pub version: u8,
}

/// A standard normal draw from two uniforms (Box–Muller).
fn normal(draws: &mut impl Draws) -> f32 {
    let u1 = (1.0 - draws.uniform()).max(f32::MIN_POSITIVE);
    let u2 = draws.uniform();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
}

/// `extract_glimpse(input [N, H, W, C] float32, size [h, w], offsets [N][y, x])`:
/// `[N, h, w, C]`.
pub fn extract_glimpse(
    input: &ArrayD<f32>,
    size: [usize; 2],
    offsets: &[[f32; 2]],
    options: GlimpseOptions,
    draws: &mut impl Draws,
) -> Result<ArrayD<f32>> {
    let s = input.shape().to_vec();
    let [n, ih, iw, c] = s[..] else {
        return Err(ImageError::new(format!(
            "extract_glimpse: input must be [N, H, W, C], got {s:?}"
        )));
    };
    if offsets.len() != n {
        return Err(ImageError::new(format!(
            "extract_glimpse: {} offsets for {n} images",
            offsets.len()
        )));
    }
    if ih == 0 || iw == 0 {
        return Err(ImageError::new("extract_glimpse: an empty image"));
    }
    let [gh, gw] = size;
    let px = input.as_standard_layout();
    let px = px.as_slice().expect("standard layout");
    let mut out = vec![0f32; n * gh * gw * c];
    for b in 0..n {
        let [mut y, mut x] = offsets[b];
        let (fw, fh) = (iw as f32, ih as f32);
        if options.version == 1 {
            if options.normalized {
                x *= fw;
                y *= fh;
            }
            if options.centered {
                x = x / 2.0 + fw / 2.0;
                y = y / 2.0 + fh / 2.0;
            }
            x -= gw as f32 / 2.0;
            y -= gh as f32 / 2.0;
        } else if options.normalized {
            x *= fw;
            y *= fh;
            if options.centered {
                x = x / 2.0 + fw / 2.0 - gw as f32 / 2.0;
                y = y / 2.0 + fh / 2.0 - gh as f32 / 2.0;
            }
        } else if options.centered {
            x += fw / 2.0;
            y += fh / 2.0;
        }
        // Truncated toward zero, as the kernel's cast.
        let (ox, oy) = (x as i64, y as i64);
        let image = &px[b * ih * iw * c..(b + 1) * ih * iw * c];
        let glimpse = &mut out[b * gh * gw * c..(b + 1) * gh * gw * c];
        // Per axis: (first image cell, extent, first glimpse cell, partial).
        let axis = |o: i64, g: usize, i: usize| -> (usize, usize, usize, bool) {
            let (g, i) = (g as i64, i as i64);
            let (from, mut extent, to, partial) = if o < 0 {
                let e = (g + o).max(0);
                (0, e, g - e, true)
            } else if o + g >= i {
                (o, (i - o).max(0), 0, true)
            } else {
                (o, g, 0, false)
            };
            extent = extent.min(i);
            (from as usize, extent as usize, to as usize, partial)
        };
        let (fy, ey, ty, py) = axis(oy, gh, ih);
        let (fx, ex, tx, px_) = axis(ox, gw, iw);
        if py || px_ {
            fill_noise(glimpse, image, c, options.noise, draws);
        }
        for r in 0..ey {
            for col in 0..ex {
                let src = ((fy + r) * iw + fx + col) * c;
                let dst = ((ty + r) * gw + tx + col) * c;
                if src + c <= image.len() && dst + c <= glimpse.len() {
                    glimpse[dst..dst + c].copy_from_slice(&image[src..src + c]);
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, gh, gw, c]), out).map_err(|e| ImageError::new(e.to_string()))
}

/// Fills a glimpse before its in-image part is copied.
fn fill_noise(
    glimpse: &mut [f32],
    image: &[f32],
    c: usize,
    noise: GlimpseNoise,
    draws: &mut impl Draws,
) {
    match noise {
        GlimpseNoise::Zero => glimpse.fill(0.0),
        GlimpseNoise::Uniform => {
            let lo = image.iter().cloned().fold(f32::INFINITY, f32::min);
            let hi = image.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            for v in glimpse.iter_mut() {
                *v = lo + draws.uniform() * (hi - lo);
            }
        }
        GlimpseNoise::Gaussian => {
            for ch in 0..c {
                let vals: Vec<f32> = image.iter().skip(ch).step_by(c).copied().collect();
                let mean = vals.iter().sum::<f32>() / vals.len() as f32;
                let sigma = (vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>()
                    / vals.len() as f32)
                    .sqrt();
                let lo = vals.iter().cloned().fold(f32::INFINITY, f32::min);
                let hi = vals.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                for v in glimpse.iter_mut().skip(ch).step_by(c) {
                    *v = (mean + normal(draws) * sigma).min(hi).max(lo);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The noise modes TF fills with random numbers (which the golden file
    //! cannot record): where the values come from and what range they keep.
    use super::*;

    /// A `[1, 4, 5, 2]` image of distinct positive values, channel 1 ten
    /// times channel 0.
    fn image() -> ArrayD<f32> {
        ArrayD::from_shape_fn(IxDyn(&[1, 4, 5, 2]), |i| {
            (1 + i[1] * 5 + i[2]) as f32 * if i[3] == 0 { 1.0 } else { 10.0 }
        })
    }

    fn options(noise: GlimpseNoise) -> GlimpseOptions {
        GlimpseOptions {
            centered: false,
            normalized: false,
            noise,
            version: 2,
        }
    }

    /// A fixed sequence of draws in [0, 1), counted.
    fn counting(count: &mut usize) -> impl FnMut() -> f32 + '_ {
        move || {
            *count += 1;
            (*count % 7) as f32 / 7.0
        }
    }

    #[test]
    fn a_glimpse_inside_the_image_is_a_copy_and_draws_nothing() {
        let mut count = 0;
        let got = extract_glimpse(
            &image(),
            [2, 3],
            &[[1.0, 1.0]],
            options(GlimpseNoise::Uniform),
            &mut counting(&mut count),
        )
        .unwrap();
        assert_eq!(count, 0);
        let want = image().slice(ndarray::s![.., 1..3, 1..4, ..]).to_owned();
        assert_eq!(got, want.into_dyn());
    }

    #[test]
    fn noise_fills_only_the_cells_outside_within_the_image_range() {
        let input = image();
        // Offset (−1, 3): one row above the image, the last two columns past it.
        let at = [[-1.0, 3.0]];
        let zero = extract_glimpse(
            &input,
            [3, 4],
            &at,
            options(GlimpseNoise::Zero),
            &mut || panic!("zero noise draws nothing"),
        )
        .unwrap();
        let inside = zero.iter().filter(|&&v| v != 0.0).count();
        assert_eq!(inside, 2 * 2 * 2, "rows 0..2, columns 3..5 of the image");
        for noise in [GlimpseNoise::Uniform, GlimpseNoise::Gaussian] {
            let mut count = 0;
            let got = extract_glimpse(
                &input,
                [3, 4],
                &at,
                options(noise),
                &mut counting(&mut count),
            )
            .unwrap();
            assert!(count > 0, "{noise:?} draws");
            for (i, (&g, &z)) in got.iter().zip(zero.iter()).enumerate() {
                let ch = i % 2;
                let (lo, hi) = match noise {
                    // Uniform: the whole image's range.
                    GlimpseNoise::Uniform => (1.0, 200.0),
                    // Gaussian: clipped to the channel's range.
                    _ if ch == 0 => (1.0, 20.0),
                    _ => (10.0, 200.0),
                };
                if z != 0.0 {
                    assert_eq!(g, z, "{noise:?} [{i}]: the image's value");
                } else {
                    assert!(
                        (lo..=hi).contains(&g),
                        "{noise:?} [{i}]: {g} outside [{lo}, {hi}]"
                    );
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let none = &mut || 0.0;
        let flat = ArrayD::<f32>::zeros(IxDyn(&[4, 5, 2]));
        assert!(extract_glimpse(
            &flat,
            [1, 1],
            &[[0.0, 0.0]],
            options(GlimpseNoise::Zero),
            none
        )
        .is_err());
        assert!(extract_glimpse(&image(), [1, 1], &[], options(GlimpseNoise::Zero), none).is_err());
        let empty = ArrayD::<f32>::zeros(IxDyn(&[1, 0, 5, 2]));
        assert!(extract_glimpse(
            &empty,
            [1, 1],
            &[[0.0, 0.0]],
            options(GlimpseNoise::Zero),
            none
        )
        .is_err());
    }
}
