//! `tf.image`'s crops, pads, flips and rotations as graph ops, so a model
//! can compute them on its tensors and differentiate through them:
//! `crop_to_bounding_box`, `pad_to_bounding_box`, `central_crop`,
//! `resize_with_crop_or_pad`, `flip_left_right`, `flip_up_down`,
//! `transpose_image` (`tf.image.transpose`, whose short name is
//! `tf.transpose`'s here), `rot90`, `extract_patches`.
//!
//! Owns: their lowerings to slices, zero pads, concatenations of reversed
//! rows or columns, transposes and the convolutions' `Patches` (whose
//! gradients autodiff has), with
//! TF's arithmetic for the offsets (`central_crop`: `int((n − n·f)/2)` in
//! float64; `resize_with_crop_or_pad`: Python's floor division) and TF's
//! argument errors, with a caret under the argument.
//! Invariant: an image is a float `[H, W, C]` or `[N, H, W, C]` tensor with
//! fixed `H, W, C`; every box lies inside (a crop) or around (a pad) the
//! image before any node is built; the result keeps the operand's rank.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::convolution::{self, Padding};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{Dim, NodeId, Shape};

/// Integer argument `i` (with a default when optional).
fn int_arg<'a>(b: &Bound<'a>, i: usize, default: Option<i64>) -> R<(i64, &'a Expr)> {
    match (b.get(i), default) {
        (Some(e), _) if !args::is_none(e) => Ok((args::eval_int(e)?, e)),
        (_, Some(d)) => Ok((d, b.req(0))),
        _ => Ok((args::eval_int(b.req(i))?, b.req(i))),
    }
}

fn out_of_range(e: &Expr, msg: String, label: &str) -> Diagnostic {
    Diagnostic::new(Code::ArgumentOutOfRange, e.span, msg).with_label(label.to_string())
}

/// `v ≥ 0` (`positive`: `v > 0`), in TF's words.
fn checked(v: (i64, &Expr), what: &str, positive: bool) -> R<u32> {
    let (n, e) = v;
    let ok = if positive { n > 0 } else { n >= 0 };
    if !ok || n > i64::from(u32::MAX) {
        let rule = if positive { "> 0" } else { ">= 0" };
        return Err(out_of_range(
            e,
            format!("{what} must be {rule}, got {n}"),
            "out of range",
        ));
    }
    Ok(n as u32)
}

/// `x` with its `H, W` axes replaced by `h, w`.
fn with_hw(lw: &Lowerer, x: NodeId, h_axis: usize, h: u32, w: u32) -> Shape {
    let mut s = lw.g.shape(x).clone();
    s.0[h_axis] = Dim::Fixed(h);
    s.0[h_axis + 1] = Dim::Fixed(w);
    s
}

/// The `h × w` window of `x` at `(top, left)`.
fn window(lw: &mut Lowerer, x: NodeId, h_axis: usize, at: [u32; 2], h: u32, w: u32) -> NodeId {
    let s = with_hw(lw, x, h_axis, h, w);
    let mut begin = vec![0u32; s.rank()];
    begin[h_axis] = at[0];
    begin[h_axis + 1] = at[1];
    lw.g.slice(x, &begin, &s)
}

/// `x` zero-padded to `h × w`, placed at `(top, left)`.
fn padded(lw: &mut Lowerer, x: NodeId, h_axis: usize, at: [u32; 2], h: u32, w: u32) -> NodeId {
    let s = with_hw(lw, x, h_axis, h, w);
    let mut before = vec![0u32; s.rank()];
    before[h_axis] = at[0];
    before[h_axis + 1] = at[1];
    lw.g.pad(x, &before, &s)
}

/// `tf.image.crop_to_bounding_box(image, offset_height, offset_width,
/// target_height, target_width)`.
pub fn crop_to_bounding_box(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "crop_to_bounding_box")?;
    let top = checked(int_arg(b, 1, None)?, "offset_height", false)?;
    let left = checked(int_arg(b, 2, None)?, "offset_width", false)?;
    let th = checked(int_arg(b, 3, None)?, "target_height", true)?;
    let tw = checked(int_arg(b, 4, None)?, "target_width", true)?;
    if u64::from(w) < u64::from(tw) + u64::from(left) {
        return Err(out_of_range(
            b.req(4),
            format!(
                "width must be >= target + offset: the image is {w} wide, the box ends at {}",
                u64::from(tw) + u64::from(left)
            ),
            "box outside the image",
        ));
    }
    if u64::from(h) < u64::from(th) + u64::from(top) {
        return Err(out_of_range(
            b.req(3),
            format!(
                "height must be >= target + offset: the image is {h} high, the box ends at {}",
                u64::from(th) + u64::from(top)
            ),
            "box outside the image",
        ));
    }
    Ok(window(lw, x, h_axis, [top, left], th, tw))
}

/// `tf.image.pad_to_bounding_box(image, offset_height, offset_width,
/// target_height, target_width)`: zeros around the image.
pub fn pad_to_bounding_box(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "pad_to_bounding_box")?;
    let top = checked(int_arg(b, 1, None)?, "offset_height", false)?;
    let left = checked(int_arg(b, 2, None)?, "offset_width", false)?;
    let th = checked(int_arg(b, 3, None)?, "target_height", false)?;
    let tw = checked(int_arg(b, 4, None)?, "target_width", false)?;
    if u64::from(th) < u64::from(h) + u64::from(top) {
        return Err(out_of_range(
            b.req(3),
            format!("height must be <= target - offset: the image is {h} high at offset {top}"),
            "target too small",
        ));
    }
    if u64::from(tw) < u64::from(w) + u64::from(left) {
        return Err(out_of_range(
            b.req(4),
            format!("width must be <= target - offset: the image is {w} wide at offset {left}"),
            "target too small",
        ));
    }
    Ok(padded(lw, x, h_axis, [top, left], th, tw))
}

/// `tf.image.central_crop(image, central_fraction)`: start
/// `int((n − n·f)/2)` in float64 along `H` and `W`.
pub fn central_crop(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "central_crop")?;
    let e = b.req(1);
    let f = args::eval_number(e)?;
    if !(f > 0.0 && f <= 1.0) {
        return Err(out_of_range(
            e,
            format!("central_fraction must be within (0, 1], got {f}"),
            "out of range",
        ));
    }
    if f == 1.0 {
        return Ok(x);
    }
    let start = |n: u32| ((f64::from(n) - f64::from(n) * f) / 2.0) as u32;
    let (top, left) = (start(h), start(w));
    Ok(window(
        lw,
        x,
        h_axis,
        [top, left],
        h - 2 * top,
        w - 2 * left,
    ))
}

/// `tf.image.resize_with_crop_or_pad(image, target_height, target_width)`:
/// a central crop where the image is larger, zero padding (the odd pixel
/// at the end) where it is smaller.
pub fn resize_with_crop_or_pad(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "resize_with_crop_or_pad")?;
    let th = checked(int_arg(b, 1, None)?, "target_height", true)?;
    let tw = checked(int_arg(b, 2, None)?, "target_width", true)?;
    let (dh, dw) = (i64::from(th) - i64::from(h), i64::from(tw) - i64::from(w));
    let crop_top = (-dh).div_euclid(2).max(0) as u32;
    let crop_left = (-dw).div_euclid(2).max(0) as u32;
    let pad_top = dh.div_euclid(2).max(0) as u32;
    let pad_left = dw.div_euclid(2).max(0) as u32;
    let cropped = window(lw, x, h_axis, [crop_top, crop_left], th.min(h), tw.min(w));
    Ok(padded(lw, cropped, h_axis, [pad_top, pad_left], th, tw))
}

/// `x` reversed along `axis` (of fixed size `n`): its unit slices
/// concatenated last to first.
fn reverse(lw: &mut Lowerer, x: NodeId, axis: usize, n: u32) -> NodeId {
    if n == 1 {
        return x;
    }
    let mut s = lw.g.shape(x).clone();
    s.0[axis] = Dim::Fixed(1);
    let parts: Vec<NodeId> = (0..n)
        .rev()
        .map(|i| {
            let mut begin = vec![0u32; s.rank()];
            begin[axis] = i;
            lw.g.slice(x, &begin, &s)
        })
        .collect();
    lw.g.concat(&parts, axis)
}

/// `x` with its `H` and `W` axes swapped.
fn swap_hw(lw: &mut Lowerer, x: NodeId, h_axis: usize) -> NodeId {
    let mut perm: Vec<usize> = (0..lw.g.shape(x).rank()).collect();
    perm.swap(h_axis, h_axis + 1);
    lw.g.transpose(x, &perm)
}

/// `tf.image.flip_left_right(image)`.
pub fn flip_left_right(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [_, w, _]) = image_operand(lw, b.req(0), "flip_left_right")?;
    Ok(reverse(lw, x, h_axis + 1, w))
}

/// `tf.image.flip_up_down(image)`.
pub fn flip_up_down(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, _, _]) = image_operand(lw, b.req(0), "flip_up_down")?;
    Ok(reverse(lw, x, h_axis, h))
}

/// `tf.image.transpose(image)` (`tf.compat.v1.image.transpose_image`):
/// height and width swapped.
pub fn transpose_image(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, _) = image_operand(lw, b.req(0), "transpose_image")?;
    Ok(swap_hw(lw, x, h_axis))
}

/// `tf.image.rot90(image, k = 1)`: `k` quarter turns counter-clockwise
/// (`k` modulo 4), in TF's order of reverses and transposes.
pub fn rot90(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "rot90")?;
    let (k, _) = int_arg(b, 1, Some(1))?;
    Ok(match k.rem_euclid(4) {
        0 => x,
        1 => {
            let r = reverse(lw, x, h_axis + 1, w);
            swap_hw(lw, r, h_axis)
        }
        2 => {
            let r = reverse(lw, x, h_axis, h);
            reverse(lw, r, h_axis + 1, w)
        }
        _ => {
            let t = swap_hw(lw, x, h_axis);
            reverse(lw, t, h_axis + 1, h)
        }
    })
}

/// A `[1, h, w, 1]` argument of `extract_patches` (positive `h`, `w`).
fn nhwc_pair(b: &Bound, i: usize, what: &str) -> R<[u32; 2]> {
    let e = b.req(i);
    let v = args::eval_int_list(e)?;
    let ok = v.len() == 4
        && v[0] == 1
        && v[3] == 1
        && v[1..3].iter().all(|&d| (1..=1 << 16).contains(&d));
    if !ok {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!(
                "`{what}` must be [1, {what}_rows, {what}_cols, 1] with positive sizes, got {v:?}"
            ),
        )
        .with_label("expected [1, h, w, 1]"));
    }
    Ok([v[1] as u32, v[2] as u32])
}

/// `tf.image.extract_patches(images, sizes, strides, rates, padding)`: the
/// `[N, OH, OW, KH·KW·C]` patches (rows, then columns, then channels) of
/// NHWC images, `SAME` with the odd padding row or column at the end, as
/// the convolutions' `Patches` (whose gradient is col2im).
pub fn extract_patches(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let e = b.req(0);
    let (x, h_axis, [h, w, c]) = image_operand(lw, e, "extract_patches")?;
    if h_axis != 1 {
        let s = lw.g.shape(x).clone();
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("extract_patches needs images [N, H, W, C], but this is {s}"),
        )
        .with_label("not a batch of images"));
    }
    let kernel = nhwc_pair(b, 1, "sizes")?;
    let strides = nhwc_pair(b, 2, "strides")?;
    let rates = nhwc_pair(b, 3, "rates")?;
    let pe = b.req(4);
    let padding = match args::eval_string(pe)? {
        "SAME" => Padding::Same,
        "VALID" => Padding::Valid,
        other => {
            return Err(Diagnostic::new(
                Code::UnknownChoice,
                pe.span,
                format!("padding must be \"SAME\" or \"VALID\", got \"{other}\""),
            )
            .with_label("unknown padding"))
        }
    };
    let win = convolution::window([h, w], c, kernel, strides, rates, padding, b.req(1))?;
    Ok(lw.g.patches(x, win, 0.0))
}
