//! `tf.image`'s colour conversions and pixel adjustments as graph ops, so a
//! model can compute them on its tensors and differentiate through them:
//! `rgb_to_grayscale`, `grayscale_to_rgb`, `rgb_to_yiq`, `yiq_to_rgb`,
//! `rgb_to_yuv`, `yuv_to_rgb`, `per_image_standardization`,
//! `adjust_brightness`, `adjust_gamma`.
//!
//! Owns: their lowerings as composites of existing ops in TF's order —
//! the linear colour spaces as TF's `tensordot` over the channel axis
//! (`out_j = x_0·K_0j + x_1·K_1j + x_2·K_2j`, TF's kernels from
//! `specc_image::color`), standardization as `(x − mean) / max(std, 1/√N)`
//! over each image's `H·W·C` values — so autodiff needs no rule of its own.
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
