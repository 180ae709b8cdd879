//! The differentiable `tf.image` measures as graph ops, so a loss can use
//! them: `total_variation`, `image_gradients` (as `image_gradients_dy` and
//! `image_gradients_dx`), `sobel_edges`, `psnr` and `ssim`.
//!
//! Owns: their lowerings as composites in TF's op order (slices and
//! differences; REFLECT padding as concatenated slices; the Gaussian and
//! Sobel windows as depthwise convolutions over `Patches`), so autodiff
//! differentiates them with no rule of its own, as TF does.
//! - `ssim`: TF's `_ssim_helper` — `c1 = (k1·max)²`, `c2 = (k2·max)²`,
//!   luminance `(2μ₀μ₁ + c1)/(μ₀² + μ₁² + c1)`, contrast-structure
//!   `(2·E[xy] − 2μ₀μ₁ + c2)/(E[x² + y²] − μ₀² − μ₁² + c2)` with `E` the
//!   VALID Gaussian filter (TF's `_fspecial_gauss`, a softmax), averaged over
//!   the positions, then the channels.
//! - `psnr`: `20·log(max)/log(10) − 10/log(10)·log(mse)` per image.
//!
//! Invariant: images are float tensors `[H, W, C]` or `[N, H, W, C]` with
//! fixed `H, W, C` (checked with a caret); a `[H, W, C]` image gives a scalar.
//! The library versions (`specc_image`) compute the same values for the
//! input pipeline and as metrics.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::convolution::{self, Padding};
use super::expr::{Lowerer, R};
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, UnaryOp};

/// An image operand as `[N, H, W, C]` (a rank-3 image gets N = 1), with
/// whether it was rank 3.
fn images(lw: &mut Lowerer, e: &Expr, what: &str) -> R<(NodeId, [u32; 3], bool)> {
    let x = lw.float(e)?;
    let s = lw.g.shape(x).clone();
    let bad = |msg: String| {
        Diagnostic::new(Code::BadShape, e.span, msg).with_label(format!("this is {s}"))
    };
    let (n, rest) = match s.rank() {
        3 => (Dim::Fixed(1), &s.0[..]),
        4 => (s.0[0], &s.0[1..]),
        r => {
            return Err(bad(format!(
                "{what} needs images [H, W, C] or [N, H, W, C], not rank {r}"
            )))
        }
    };
    let mut hwc = [0u32; 3];
    for (k, d) in rest.iter().enumerate() {
        hwc[k] = d
            .fixed()
            .ok_or_else(|| bad(format!("{what} needs fixed heights, widths and channels")))?;
    }
    let x4 = lw.g.reshape(
        x,
        &Shape(vec![
            n,
            Dim::Fixed(hwc[0]),
            Dim::Fixed(hwc[1]),
            Dim::Fixed(hwc[2]),
        ]),
    );
    Ok((x4, hwc, s.rank() == 3))
}

/// `[N, ..]` per image back to a scalar for a rank-3 input.
fn per_image(lw: &mut Lowerer, v: NodeId, single: bool) -> NodeId {
    if single {
        lw.g.reshape(v, &Shape::scalar())
    } else {
        v
    }
}

/// `x[:, a..a+len]` along `axis` (1: rows, 2: columns).
fn take(lw: &mut Lowerer, x: NodeId, axis: usize, a: u32, len: u32) -> NodeId {
    let mut s = lw.g.shape(x).clone();
    s.0[axis] = Dim::Fixed(len);
    let mut begin = vec![0u32; 4];
    begin[axis] = a;
    lw.g.slice(x, &begin, &s)
}

/// `x[1:] − x[:-1]` along `axis`.
fn difference(lw: &mut Lowerer, x: NodeId, axis: usize, size: u32) -> NodeId {
    let hi = take(lw, x, axis, 1, size - 1);
    let lo = take(lw, x, axis, 0, size - 1);
    lw.g.sub(hi, lo)
}

/// `tf.image.total_variation(images)`: per image, the sum of the absolute
/// differences of neighbouring pixels down and across.
pub fn total_variation(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, [h, w, _], single) = images(lw, b.req(0), "total_variation")?;
    let mut sum = None;
    for (axis, size) in [(1, h), (2, w)] {
        if size < 2 {
            continue;
        }
        let d = difference(lw, x, axis, size);
        let a = lw.g.unary(UnaryOp::Abs, d);
        let s = lw.g.reduce_sum(a, &[1, 2, 3]);
        sum = Some(match sum {
            Some(t) => lw.g.add(t, s),
            None => s,
        });
    }
    let n = lw.g.shape(x).0[0];
    let total = match sum {
        Some(t) => t,
        None => {
            let z = lw.g.scalar(0.0);
            lw.g.broadcast_to(z, &Shape(vec![n]))
        }
    };
    Ok(per_image(lw, total, single))
}

/// `tf.image.image_gradients(image)`: `dy` (`axis` 1) or `dx` (`axis` 2),
/// the forward difference with a zero last row (column).
fn image_gradients(lw: &mut Lowerer, b: &Bound, axis: usize) -> R<NodeId> {
    let e = b.req(0);
    let x = lw.float(e)?;
    if lw.g.shape(x).rank() != 4 {
        let s = lw.g.shape(x).clone();
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("image_gradients needs images [N, H, W, C], but this is {s}"),
        )
        .with_label(format!("rank {}", s.rank())));
    }
    let (x, [h, w, _], _) = images(lw, e, "image_gradients")?;
    let size = if axis == 1 { h } else { w };
    let s = lw.g.shape(x).clone();
    if size < 2 {
        let z = lw.g.scalar(0.0);
        return Ok(lw.g.broadcast_to(z, &s));
    }
    let d = difference(lw, x, axis, size);
    Ok(lw.g.pad(d, &[0, 0, 0, 0], &s))
}

pub fn image_gradients_dy(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    image_gradients(lw, b, 1)
}

pub fn image_gradients_dx(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    image_gradients(lw, b, 2)
}

/// `x` padded by one cell on each side of `axis` with TF's REFLECT mode
/// (row −1 is row 1, row H is row H − 2).
fn reflect1(lw: &mut Lowerer, x: NodeId, axis: usize, size: u32) -> NodeId {
    let first = take(lw, x, axis, 1, 1);
    let last = take(lw, x, axis, size - 2, 1);
    lw.g.concat(&[first, x, last], axis)
}

/// `tf.image.sobel_edges(image)`: `[N, H, W, C, 2]`, the vertical then the
/// horizontal Sobel response of each channel over the REFLECT-padded image.
pub fn sobel_edges(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let e = b.req(0);
    let (x, [h, w, c], single) = images(lw, e, "sobel_edges")?;
    if single || h < 2 || w < 2 {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            "sobel_edges needs images [N, H, W, C] at least 2×2",
        )
        .with_label("too small or not a batch"));
    }
    let p = reflect1(lw, x, 1, h);
    let p = reflect1(lw, p, 2, w);
    const KY: [f32; 9] = [-1.0, -2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0];
    const KX: [f32; 9] = [-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0];
    // [3, 3, C, 2]: the two kernels for every channel.
    let mut k = Vec::with_capacity(9 * c as usize * 2);
    for t in 0..9 {
        for _ in 0..c {
            k.push(KY[t]);
            k.push(KX[t]);
        }
    }
    let kd = [3, 3, c, 2];
    let kernel = lw.g.tensor(DType::F32, Shape::fixed(&kd), k);
    let win = convolution::window([h + 2, w + 2], c, [3, 3], [1, 1], [1, 1], Padding::Valid, e)?;
    let y = convolution::depthwise(lw, p, kernel, &kd, win);
    let n = lw.g.shape(x).0[0];
    Ok(lw.g.reshape(
        y,
        &Shape(vec![
            n,
            Dim::Fixed(h),
            Dim::Fixed(w),
            Dim::Fixed(c),
            Dim::Fixed(2),
        ]),
    ))
}

/// A number argument, or its default.
fn number(b: &Bound, i: usize, default: f64) -> R<f64> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => args::eval_number(e),
        _ => Ok(default),
    }
}

/// A positive number argument.
fn positive(b: &Bound, i: usize, default: f64, what: &str) -> R<f64> {
    let v = number(b, i, default)?;
    if !(v.is_finite() && v > 0.0) {
        let span = b.get(i).map_or(b.call_span, |e| e.span);
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            span,
            format!("{what} must be a positive number, got {v}"),
        )
        .with_label("not positive"));
    }
    Ok(v)
}

/// Two images of one shape.
fn pair(lw: &mut Lowerer, b: &Bound, what: &str) -> R<(NodeId, NodeId, [u32; 3], bool)> {
    let (x, hwc, single) = images(lw, b.req(0), what)?;
    let (y, _, _) = images(lw, b.req(1), what)?;
    let (sx, sy) = (lw.g.shape(x).clone(), lw.g.shape(y).clone());
    if sx != sy {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            b.req(1).span,
            format!("{what} compares images of one shape, but these are {sx} and {sy}"),
        )
        .with_label(format!("this is {sy}")));
    }
    Ok((x, y, hwc, single))
}

/// `tf.image.psnr(a, b, max_val)`: per image, `20·log(max)/log(10) −
/// 10/log(10)·log(mse)`.
pub fn psnr(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, y, _, single) = pair(lw, b, "psnr")?;
    let max = positive(b, 2, 1.0, "max_val")?;
    let d = lw.g.sub(x, y);
    let sq = lw.g.unary(UnaryOp::Square, d);
    let mse = lw.g.reduce_mean(sq, &[1, 2, 3]);
    let log_mse = lw.g.unary(UnaryOp::Log, mse);
    let k = (10.0 / std::f64::consts::LN_10) as f32;
    let scaled = lw.g.scale(log_mse, k);
    let top =
        lw.g.scalar((20.0 * (max as f32).ln() / std::f32::consts::LN_10) as f32);
    let v = lw.g.sub(top, scaled);
    Ok(per_image(lw, v, single))
}

/// SSIM's arguments after the images: `max_val` (argument `max`), then
/// `filter_size`, `filter_sigma`, `k1`, `k2` from argument `first` on.
#[derive(Clone, Copy)]
struct SsimArgs {
    max: f64,
    size: f64,
    sigma: f64,
    k1: f64,
    k2: f64,
}

fn ssim_args(b: &Bound, max: usize, first: usize) -> R<SsimArgs> {
    Ok(SsimArgs {
        max: positive(b, max, 1.0, "max_val")?,
        size: number(b, first, 11.0)?,
        sigma: positive(b, first + 1, 1.5, "filter_sigma")?,
        k1: number(b, first + 2, 0.01)?,
        k2: number(b, first + 3, 0.03)?,
    })
}

/// TF's `_ssim_per_channel` maps of `[N, H, W, C]` images: the SSIM map
/// (luminance · contrast-structure) and the contrast-structure map, both
/// `[N, H − f + 1, W − f + 1, C]` (VALID filtering by the Gaussian window).
fn ssim_maps(
    lw: &mut Lowerer,
    (x, y): (NodeId, NodeId),
    [h, w, c]: [u32; 3],
    a: SsimArgs,
    at: &Expr,
) -> R<(NodeId, NodeId)> {
    let size = a.size;
    if size.fract() != 0.0 || size < 1.0 || size > f64::from(h.min(w)) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            at.span,
            format!("filter_size must be a whole number from 1 to the images' {h}×{w}, got {size}"),
        )
        .with_label("bad filter_size"));
    }
    let size = size as u32;
    let g: Vec<f32> = specc_image::ssim::gaussian(size as usize, a.sigma as f32)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut k = Vec::with_capacity(g.len() * c as usize);
    for v in &g {
        k.extend(std::iter::repeat_n(*v, c as usize));
    }
    let kd = [size, size, c, 1];
    let kernel = lw.g.tensor(DType::F32, Shape::fixed(&kd), k);
    let win = convolution::window([h, w], c, [size, size], [1, 1], [1, 1], Padding::Valid, at)?;
    let filter = |lw: &mut Lowerer, v: NodeId| convolution::depthwise(lw, v, kernel, &kd, win);
    let (max, k1, k2) = (a.max, a.k1, a.k2);
    let c1 = lw.g.scalar(((k1 * max) * (k1 * max)) as f32);
    let c2 = lw.g.scalar(((k2 * max) * (k2 * max)) as f32);
    let mean0 = filter(lw, x);
    let mean1 = filter(lw, y);
    let m01 = lw.g.mul(mean0, mean1);
    let num0 = lw.g.scale(m01, 2.0);
    let sq0 = lw.g.unary(UnaryOp::Square, mean0);
    let sq1 = lw.g.unary(UnaryOp::Square, mean1);
    let den0 = lw.g.add(sq0, sq1);
    let ln = lw.g.add(num0, c1);
    let ld = lw.g.add(den0, c1);
    let luminance = lw.g.div(ln, ld);
    let xy = lw.g.mul(x, y);
    let fxy = filter(lw, xy);
    let num1 = lw.g.scale(fxy, 2.0);
    let xx = lw.g.unary(UnaryOp::Square, x);
    let yy = lw.g.unary(UnaryOp::Square, y);
    let sq = lw.g.add(xx, yy);
    let den1 = filter(lw, sq);
    let cn = lw.g.binary(BinaryOp::Sub, num1, num0);
    let cn = lw.g.add(cn, c2);
    let cd = lw.g.sub(den1, den0);
    let cd = lw.g.add(cd, c2);
    let cs = lw.g.div(cn, cd);
    Ok((lw.g.mul(luminance, cs), cs))
}

/// `tf.image.ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5,
/// k1=0.01, k2=0.03, return_index_map=False)`: the mean SSIM of each image,
/// or (`return_index_map`) its map `[H − f + 1, W − f + 1]`, the mean over
/// the channels.
pub fn ssim(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, y, hwc, single) = pair(lw, b, "ssim")?;
    let a = ssim_args(b, 2, 3)?;
    let at = b.get(3).unwrap_or(b.req(0));
    let (map, _) = ssim_maps(lw, (x, y), hwc, a, at)?;
    let index_map = match b.get(7).filter(|e| !args::is_none(e)) {
        Some(e) => args::eval_bool(e)?,
        None => false,
    };
    if index_map {
        let m = lw.g.reduce_mean(map, &[3]);
        if !single {
            return Ok(m);
        }
        let mut s = lw.g.shape(m).clone();
        s.0.remove(0);
        return Ok(lw.g.reshape(m, &s));
    }
    let per_channel = lw.g.reduce_mean(map, &[1, 2]);
    let v = lw.g.reduce_mean(per_channel, &[1]);
    Ok(per_image(lw, v, single))
}

/// TF's default `power_factors` of `ssim_multiscale`.
const POWER_FACTORS: [f64; 5] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];

/// `x` (`[N, H, W, C]`) zero-padded to even sides and 2×2 average pooled
/// (TF's `ssim_multiscale` downscaling).
fn downscale(lw: &mut Lowerer, x: NodeId, [h, w, c]: [u32; 3], at: &Expr) -> R<(NodeId, [u32; 3])> {
    let (ph, pw) = (h + h % 2, w + w % 2);
    let mut s = lw.g.shape(x).clone();
    s.0[1] = Dim::Fixed(ph);
    s.0[2] = Dim::Fixed(pw);
    let x = lw.g.pad(x, &[0, 0, 0, 0], &s);
    let kd = [2, 2, c, 1];
    let kernel =
        lw.g.tensor(DType::F32, Shape::fixed(&kd), vec![0.25; 4 * c as usize]);
    let win = convolution::window([ph, pw], c, [2, 2], [2, 2], [1, 1], Padding::Valid, at)?;
    Ok((
        convolution::depthwise(lw, x, kernel, &kd, win),
        [ph / 2, pw / 2, c],
    ))
}

/// `tf.image.ssim_multiscale(img1, img2, max_val, power_factors=(0.0448,
/// 0.2856, 0.3001, 0.2363, 0.1333), filter_size=11, filter_sigma=1.5,
/// k1=0.01, k2=0.03)`: per image, `Π relu(cs_k)^p_k` over the scales but
/// the last, times `relu(ssim)^p` at the last, averaged over the channels.
pub fn ssim_multiscale(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (mut x, mut y, mut hwc, single) = pair(lw, b, "ssim_multiscale")?;
    let powers = match b.get(3).filter(|e| !args::is_none(e)) {
        Some(e) => {
            let v = match &e.kind {
                ExprKind::List(items) => items
                    .iter()
                    .map(args::eval_number)
                    .collect::<R<Vec<f64>>>()?,
                _ => vec![args::eval_number(e)?],
            };
            if v.is_empty() {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    "power_factors needs one factor per scale, got none",
                )
                .with_label("empty"));
            }
            v
        }
        None => POWER_FACTORS.to_vec(),
    };
    // `filter_size` and the rest follow `power_factors` in TF's order.
    let a = ssim_args(b, 2, 4)?;
    let at = b.get(4).unwrap_or(b.req(0));
    let mut product: Option<NodeId> = None;
    for (k, &p) in powers.iter().enumerate() {
        if k > 0 {
            let (nx, next) = downscale(lw, x, hwc, at)?;
            let (ny, _) = downscale(lw, y, hwc, at)?;
            (x, y, hwc) = (nx, ny, next);
        }
        let (map, cs) = ssim_maps(lw, (x, y), hwc, a, at)?;
        let last = k + 1 == powers.len();
        let v = lw.g.reduce_mean(if last { map } else { cs }, &[1, 2]);
        let v = lw.g.unary(UnaryOp::Relu, v);
        let e = lw.g.scalar(p as f32);
        let v = lw.g.binary(BinaryOp::Pow, v, e);
        product = Some(match product {
            Some(q) => lw.g.mul(q, v),
            None => v,
        });
    }
    let v = lw.g.reduce_mean(product.expect("a scale"), &[1]);
    Ok(per_image(lw, v, single))
}

/// An image operand of any of TF's image ops that keep the rank: `[H, W, C]`
/// or `[N, H, W, C]` with fixed `H, W, C`. Returns the node, the axis of
/// `H` (0 or 1) and `[H, W, C]`.
pub(super) fn image_operand(
    lw: &mut Lowerer,
    e: &Expr,
    what: &str,
) -> R<(NodeId, usize, [u32; 3])> {
    let x = lw.float(e)?;
    let s = lw.g.shape(x).clone();
    let bad = |msg: String| {
        Diagnostic::new(Code::BadShape, e.span, msg).with_label(format!("this is {s}"))
    };
    let r = s.rank();
    if r != 3 && r != 4 {
        return Err(bad(format!(
            "{what} needs images [H, W, C] or [N, H, W, C], not rank {r}"
        )));
    }
    let mut hwc = [0u32; 3];
    for (k, d) in s.0[r - 3..].iter().enumerate() {
        hwc[k] = d
            .fixed()
            .ok_or_else(|| bad(format!("{what} needs fixed heights, widths and channels")))?;
    }
    Ok((x, r - 3, hwc))
}
