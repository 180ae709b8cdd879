//! `tf.image`'s colour conversions and pixel adjustments as graph ops, so a
//! model can compute them on its tensors and differentiate through them:
//! `rgb_to_grayscale`, `grayscale_to_rgb`, `rgb_to_yiq`, `yiq_to_rgb`,
//! `rgb_to_yuv`, `yuv_to_rgb`, `rgb_to_hsv`, `hsv_to_rgb`,
//! `per_image_standardization`,
//! `adjust_brightness`, `adjust_gamma`.
//!
//! Owns: their lowerings as composites of existing ops in TF's order —
//! the linear colour spaces as TF's `tensordot` over the channel axis
//! (`out_j = x_0·K_0j + x_1·K_1j + x_2·K_2j`, TF's kernels from
//! `specc_image::color`), standardization as `(x − mean) / max(std, 1/√N)`
//! over each image's `H·W·C` values, HSV as TF's kernels written with
//! selects, maxima and clips — so autodiff needs no rule of its own.
//! Invariant: an image is a float `[H, W, C]` or `[N, H, W, C]` tensor with
//! fixed `H, W, C` (a caret otherwise); the channel count each op needs is
//! checked with a caret; the result keeps the operand's rank.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{BinaryOp, Dim, NodeId, Shape, UnaryOp};
use specc_image::color;

/// An image operand with `want` channels.
fn with_channels(
    lw: &mut Lowerer,
    e: &Expr,
    want: u32,
    what: &str,
) -> R<(NodeId, usize, [u32; 3])> {
    let (x, h_axis, hwc) = image_operand(lw, e, what)?;
    if hwc[2] != want {
        let s = lw.g.shape(x).clone();
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("{what} needs images with {want} channels (the last axis), but this is {s}"),
        )
        .with_label(format!("{} channels", hwc[2])));
    }
    Ok((x, h_axis, hwc))
}

/// The channel `k` of `x` as `[.., 1]`.
fn channel(lw: &mut Lowerer, x: NodeId, k: u32) -> NodeId {
    let mut s = lw.g.shape(x).clone();
    let last = s.rank() - 1;
    s.0[last] = Dim::Fixed(1);
    let mut begin = vec![0u32; s.rank()];
    begin[last] = k;
    lw.g.slice(x, &begin, &s)
}

/// `Σ_i x_i · w_i` over the three channels, as `[.., 1]`.
fn weighted(lw: &mut Lowerer, parts: &[NodeId; 3], w: [f32; 3]) -> NodeId {
    let mut sum = lw.g.scale(parts[0], w[0]);
    for i in 1..3 {
        let t = lw.g.scale(parts[i], w[i]);
        sum = lw.g.add(sum, t);
    }
    sum
}

/// TF's `tensordot(images, kernel, [[-1], [0]])` of a 3-channel image.
fn linear(lw: &mut Lowerer, b: &Bound, kernel: &[[f32; 3]; 3], what: &str) -> R<NodeId> {
    let (x, _, _) = with_channels(lw, b.req(0), 3, what)?;
    let parts = [channel(lw, x, 0), channel(lw, x, 1), channel(lw, x, 2)];
    let outs: Vec<NodeId> = (0..3)
        .map(|j| weighted(lw, &parts, [kernel[0][j], kernel[1][j], kernel[2][j]]))
        .collect();
    let last = lw.g.shape(x).rank() - 1;
    Ok(lw.g.concat(&outs, last))
}

/// `tf.image.rgb_to_yiq(images)`.
pub fn rgb_to_yiq(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    linear(lw, b, &color::RGB_TO_YIQ, "rgb_to_yiq")
}

/// `tf.image.yiq_to_rgb(images)`.
pub fn yiq_to_rgb(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    linear(lw, b, &color::YIQ_TO_RGB, "yiq_to_rgb")
}

/// `tf.image.rgb_to_yuv(images)`.
pub fn rgb_to_yuv(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    linear(lw, b, &color::RGB_TO_YUV, "rgb_to_yuv")
}

/// `tf.image.yuv_to_rgb(images)`.
pub fn yuv_to_rgb(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    linear(lw, b, &color::YUV_TO_RGB, "yuv_to_rgb")
}

/// `tf.image.rgb_to_grayscale(images)`: TF's weights over the channels,
/// one channel out.
pub fn rgb_to_grayscale(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = with_channels(lw, b.req(0), 3, "rgb_to_grayscale")?;
    let parts = [channel(lw, x, 0), channel(lw, x, 1), channel(lw, x, 2)];
    Ok(weighted(lw, &parts, color::GRAYSCALE_WEIGHTS))
}

/// `tf.image.grayscale_to_rgb(images)`: the one channel three times.
pub fn grayscale_to_rgb(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = with_channels(lw, b.req(0), 1, "grayscale_to_rgb")?;
    let last = lw.g.shape(x).rank() - 1;
    Ok(lw.g.concat(&[x, x, x], last))
}

/// `x`'s per-image statistic `v` (`[]` or `[N]`) shaped to broadcast
/// against `x`.
fn per_image(lw: &mut Lowerer, v: NodeId, x: NodeId, h_axis: usize) -> NodeId {
    if h_axis == 0 {
        return v;
    }
    let n = lw.g.shape(x).0[0];
    let one = Dim::Fixed(1);
    lw.g.reshape(v, &Shape(vec![n, one, one, one]))
}

/// `tf.image.per_image_standardization(image)`: per image, `(x − mean) /
/// max(stddev, 1/√N)` over its `N = H·W·C` values.
pub fn per_image_standardization(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, c]) = image_operand(lw, b.req(0), "per_image_standardization")?;
    let axes: Vec<usize> = (h_axis..h_axis + 3).collect();
    let mean = lw.g.reduce_mean(x, &axes);
    let mean = per_image(lw, mean, x, h_axis);
    let centred = lw.g.sub(x, mean);
    let sq = lw.g.unary(UnaryOp::Square, centred);
    let var = lw.g.reduce_mean(sq, &axes);
    let std = lw.g.unary(UnaryOp::Sqrt, var);
    let n = (h as f32) * (w as f32) * (c as f32);
    let min_std = lw.g.scalar(1.0 / n.sqrt());
    let adjusted = lw.g.binary(BinaryOp::Max, std, min_std);
    let adjusted = per_image(lw, adjusted, x, h_axis);
    Ok(lw.g.div(centred, adjusted))
}

/// A number argument, or its default.
fn number(b: &Bound, i: usize, default: f64) -> R<f64> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => args::eval_number(e),
        _ => Ok(default),
    }
}

/// `tf.image.adjust_brightness(image, delta)`: `x + delta`.
pub fn adjust_brightness(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = image_operand(lw, b.req(0), "adjust_brightness")?;
    let delta = lw.float(b.req(1))?;
    if lw.g.shape(delta).rank() != 0 {
        let s = lw.g.shape(delta).clone();
        return Err(Diagnostic::new(
            Code::BadShape,
            b.req(1).span,
            format!("adjust_brightness's delta is a scalar, but this is {s}"),
        )
        .with_label("not a scalar"));
    }
    Ok(lw.g.add(x, delta))
}

/// `tf.image.adjust_gamma(image, gamma = 1, gain = 1)`: `gain · x^gamma`.
pub fn adjust_gamma(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = image_operand(lw, b.req(0), "adjust_gamma")?;
    let gamma = number(b, 1, 1.0)?;
    if gamma.is_nan() || gamma < 0.0 {
        let span = b.get(1).map_or(b.call_span, |e| e.span);
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            span,
            format!("Gamma should be a non-negative real number, got {gamma}"),
        )
        .with_label("negative gamma"));
    }
    let gain = number(b, 2, 1.0)? as f32;
    let g = lw.g.scalar(gamma as f32);
    let p = lw.g.binary(BinaryOp::Pow, x, g);
    Ok(lw.g.scale(p, gain))
}

/// `a` where `cond` (1.0), else `b`: TF's `where`.
fn pick(lw: &mut Lowerer, cond: NodeId, a: NodeId, b: NodeId) -> NodeId {
    lw.g.select(cond, a, b)
}

/// `tf.image.rgb_to_hsv(images)`: TF's `RGBToHSV` kernel as selects —
/// `v = max`, `s = range / v` (0 where `v = 0`), `h` from the channel that
/// is the maximum (red first, then green), 0 for grey, wrapped into
/// [0, 1). Each division's denominator is replaced by 1 where its select
/// does not take it, so the gradient stays finite.
pub fn rgb_to_hsv(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = with_channels(lw, b.req(0), 3, "rgb_to_hsv")?;
    let [r, g, bl] = [channel(lw, x, 0), channel(lw, x, 1), channel(lw, x, 2)];
    let rg = lw.g.binary(BinaryOp::Max, r, g);
    let v = lw.g.binary(BinaryOp::Max, rg, bl);
    let rg = lw.g.binary(BinaryOp::Min, r, g);
    let mn = lw.g.binary(BinaryOp::Min, rg, bl);
    let range = lw.g.sub(v, mn);
    let (zero, one) = (lw.g.scalar(0.0), lw.g.scalar(1.0));
    let v_pos = lw.g.binary(BinaryOp::Gt, v, zero);
    let safe_v = pick(lw, v_pos, v, one);
    let s = lw.g.div(range, safe_v);
    let s = pick(lw, v_pos, s, zero);
    let range_pos = lw.g.binary(BinaryOp::Gt, range, zero);
    let safe_range = pick(lw, range_pos, range, one);
    let six = lw.g.scale(safe_range, 6.0);
    let norm = lw.g.unary(UnaryOp::Recip, six);
    let gb = lw.g.sub(g, bl);
    let h_r = lw.g.mul(norm, gb);
    let br = lw.g.sub(bl, r);
    let h_g = lw.g.mul(norm, br);
    let third = lw.g.scalar(2.0 / 6.0);
    let h_g = lw.g.add(h_g, third);
    let rg = lw.g.sub(r, g);
    let h_b = lw.g.mul(norm, rg);
    let two_thirds = lw.g.scalar(4.0 / 6.0);
    let h_b = lw.g.add(h_b, two_thirds);
    let g_max = lw.g.binary(BinaryOp::Eq, g, v);
    let h = pick(lw, g_max, h_g, h_b);
    let r_max = lw.g.binary(BinaryOp::Eq, r, v);
    let h = pick(lw, r_max, h_r, h);
    let h = pick(lw, range_pos, h, zero);
    let negative = lw.g.binary(BinaryOp::Lt, h, zero);
    let wrapped = lw.g.add(h, one);
    let h = pick(lw, negative, wrapped, h);
    let last = lw.g.shape(x).rank() - 1;
    Ok(lw.g.concat(&[h, s, v], last))
}

/// `tf.image.hsv_to_rgb(images)`: TF's `HSVToRGB` kernel — each channel a
/// clipped piecewise-linear function of `6·h`, mixed with grey by `s`,
/// times `v`.
pub fn hsv_to_rgb(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, _) = with_channels(lw, b.req(0), 3, "hsv_to_rgb")?;
    let [h, s, v] = [channel(lw, x, 0), channel(lw, x, 1), channel(lw, x, 2)];
    let dh = lw.g.scale(h, 6.0);
    let (zero, one) = (lw.g.scalar(0.0), lw.g.scalar(1.0));
    let clip = |lw: &mut Lowerer, t: NodeId| {
        let t = lw.g.binary(BinaryOp::Max, t, zero);
        lw.g.binary(BinaryOp::Min, t, one)
    };
    // (|6h − centre| − 1) for red, (2 − |6h − centre|) for green and blue.
    let tri = |lw: &mut Lowerer, centre: f32, rising: bool| {
        let c = lw.g.scalar(centre);
        let d = lw.g.sub(dh, c);
        let a = lw.g.unary(UnaryOp::Abs, d);
        let t = if rising {
            lw.g.sub(a, one)
        } else {
            let two = lw.g.scalar(2.0);
            lw.g.sub(two, a)
        };
        clip(lw, t)
    };
    let parts = [tri(lw, 3.0, true), tri(lw, 2.0, false), tri(lw, 4.0, false)];
    let one_s = lw.g.sub(one, s);
    let outs: Vec<NodeId> = parts
        .iter()
        .map(|&d| {
            let sd = lw.g.mul(s, d);
            let m = lw.g.add(one_s, sd);
            lw.g.mul(m, v)
        })
        .collect();
    let last = lw.g.shape(x).rank() - 1;
    Ok(lw.g.concat(&outs, last))
}
