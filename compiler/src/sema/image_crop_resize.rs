//! `tf.image.crop_and_resize(image, boxes, box_indices, crop_size, method,
//! extrapolation_value)` as a graph op: a crop of a box of an image,
//! resized, per box (the second stage of a detector, ROI pooling).
//!
//! Owns: TF's `CropAndResize` kernel (`specc_image::crop_resize`) written
//! with IR ops: each box's sample positions in float32 in TF's order
//! (`y1·(H − 1) + i·((y2 − y1)·(H − 1)/(crop − 1))`, the centre for a crop
//! of one), the image of each box picked by a 0/1 matrix of
//! `box_indices`, and the crop as two batched products by the box's
//! interpolation matrices (bilinear: `1 − lerp` at `floor`, `lerp` at
//! `ceil`; nearest: 1 at the position rounded half away from zero); a
//! sample outside the image gets `extrapolation_value`.
//! Invariant: image float `[N, H, W, C]` with fixed `N, H, W, C`; boxes
//! `[B, 4]` (`[y1, x1, y2, x2]`, normalized), `box_indices` `[B]` (whole
//! numbers in `[0, N)`; another value selects no image and gives zeros);
//! the gradient flows to the image (TF's `CropAndResizeGradImage`: the
//! transposed products) and to the boxes (TF's `CropAndResizeGradBoxes`:
//! through the sample positions of the bilinear crop, for both methods as
//! in TF; none for samples outside the image), never to `box_indices`.

use specc_grammar::ast::{Call, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, UnaryOp};

/// Column `j` of the `[B, 4]` boxes as `[B, 1, 1]`.
fn column(lw: &mut Lowerer, boxes: NodeId, nb: Dim, j: u32) -> NodeId {
    let one = Dim::Fixed(1);
    let v = lw.g.slice(boxes, &[0, j], &Shape(vec![nb, one]));
    lw.g.reshape(v, &Shape(vec![nb, one, one]))
}

/// One axis: the interpolation matrix `[B, crop, size]` and whether each
/// sample lies inside the image (`[B, crop, 1]`, 0/1).
fn axis(
    lw: &mut Lowerer,
    (lo, hi): (NodeId, NodeId),
    size: u32,
    crop: u32,
    nearest: bool,
) -> (NodeId, NodeId) {
    let last = (size - 1) as f32;
    let v = if crop > 1 {
        let d = lw.g.sub(hi, lo);
        let d = lw.g.scale(d, last);
        let k = lw.g.scalar((crop - 1) as f32);
        let step = lw.g.binary(BinaryOp::Div, d, k);
        let at = lw.g.scale(lo, last);
        let cells: Vec<f32> = (0..crop).map(|i| i as f32).collect();
        let cells = lw.g.tensor(DType::F32, Shape::fixed(&[1, crop, 1]), cells);
        let moved = lw.g.mul(cells, step);
        lw.g.add(at, moved)
    } else {
        let s = lw.g.add(lo, hi);
        let s = lw.g.scale(s, 0.5);
        lw.g.scale(s, last)
    };
    // The positions' comparisons and roundings carry no gradient; the
    // gradient reaches the boxes through `lerp` only.
    let held = lw.g.stop_gradient(v);
    let (zero, end) = (lw.g.scalar(0.0), lw.g.scalar(last));
    let ge = lw.g.binary(BinaryOp::Ge, held, zero);
    let le = lw.g.binary(BinaryOp::Le, held, end);
    let valid = lw.g.mul(ge, le);
    let cells: Vec<f32> = (0..size).map(|i| i as f32).collect();
    let cells = lw.g.tensor(DType::F32, Shape::fixed(&[1, 1, size]), cells);
    let top = lw.g.unary(UnaryOp::Floor, held);
    let lerp = lw.g.sub(v, top);
    let m = if nearest {
        let half = lw.g.scalar(0.5);
        let frac = lw.g.sub(held, top);
        let up = lw.g.binary(BinaryOp::Ge, frac, half);
        let r = lw.g.add(top, up);
        lw.g.binary(BinaryOp::Eq, cells, r)
    } else {
        let bottom = lw.g.unary(UnaryOp::Ceil, held);
        let at_top = lw.g.binary(BinaryOp::Eq, cells, top);
        let at_bottom = lw.g.binary(BinaryOp::Eq, cells, bottom);
        let one = lw.g.scalar(1.0);
        let keep = lw.g.sub(one, lerp);
        let a = lw.g.mul(at_top, keep);
        let b = lw.g.mul(at_bottom, lerp);
        lw.g.add(a, b)
    };
    (lw.g.mul(m, valid), valid)
}

/// The sizes of a crop: boxes, image, crop.
#[derive(Clone, Copy)]
struct Dims {
    nb: Dim,
    h: u32,
    w: u32,
    c: u32,
    ch: u32,
    cw: u32,
}

/// The crops `[B, ch, cw, C]` of the boxes' images `xb` (`[B, H, W·C]`),
/// zero where a sample lies outside, and where they lie inside
/// (`[B, ch, cw, 1]`, 0/1).
fn crop(
    lw: &mut Lowerer,
    xb: NodeId,
    boxes: NodeId,
    d: Dims,
    nearest: bool,
    span: Span,
) -> R<(NodeId, NodeId)> {
    let Dims {
        nb,
        h,
        w,
        c,
        ch,
        cw,
    } = d;
    let ys = (column(lw, boxes, nb, 0), column(lw, boxes, nb, 2));
    let xs = (column(lw, boxes, nb, 1), column(lw, boxes, nb, 3));
    let (my, vy) = axis(lw, ys, h, ch, nearest);
    let (mx, vx) = axis(lw, xs, w, cw, nearest);
    // [B, ch, H] @ [B, H, W·C] = [B, ch, W·C].
    let t = lw.matmul(my, xb, false, false, span, span, span)?;
    // [B, ch, C, W] @ [B, 1, W, cw] = [B, ch, C, cw].
    let t = lw.g.reshape(
        t,
        &Shape(vec![nb, Dim::Fixed(ch), Dim::Fixed(w), Dim::Fixed(c)]),
    );
    let t = lw.g.transpose(t, &[0, 1, 3, 2]);
    let mx = lw.g.reshape(
        mx,
        &Shape(vec![nb, Dim::Fixed(1), Dim::Fixed(cw), Dim::Fixed(w)]),
    );
    let t = lw.matmul(t, mx, false, true, span, span, span)?;
    let out = lw.g.transpose(t, &[0, 1, 3, 2]);
    let one = Dim::Fixed(1);
    let vy = lw.g.reshape(vy, &Shape(vec![nb, Dim::Fixed(ch), one, one]));
    let vx = lw.g.reshape(vx, &Shape(vec![nb, one, Dim::Fixed(cw), one]));
    Ok((out, lw.g.mul(vy, vx)))
}

/// `tf.image.crop_and_resize(image, boxes, box_indices, crop_size, method
/// = "bilinear", extrapolation_value = 0)`.
pub fn crop_and_resize(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let e = b.req(0);
    let (x, h_axis, [h, w, c]) = image_operand(lw, e, "crop_and_resize")?;
    let xs = lw.g.shape(x).clone();
    let n = match (h_axis, xs.0[0]) {
        (1, Dim::Fixed(n)) => n,
        _ => {
            return Err(Diagnostic::new(
                Code::BadShape,
                e.span,
                format!(
                    "crop_and_resize needs image [N, H, W, C] with a fixed N, but this is {xs}"
                ),
            )
            .with_label(format!("this is {xs}")))
        }
    };
    let eb = b.req(1);
    let boxes = lw.float(eb)?;
    let bs = lw.g.shape(boxes).clone();
    let nb = match bs.0[..] {
        [nb, Dim::Fixed(4)] => nb,
        _ => {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                eb.span,
                format!("boxes must be [num_boxes, 4] ([y1, x1, y2, x2]), but this is {bs}"),
            )
            .with_label(format!("this is {bs}")))
        }
    };
    let ei = b.req(2);
    let ids = lw.float(ei)?;
    let is = lw.g.shape(ids).clone();
    if is.0[..] != [nb] {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            ei.span,
            format!("box_indices must be [num_boxes] for boxes {bs}, but this is {is}"),
        )
        .with_label(format!("this is {is}")));
    }
    let ec = b.req(3);
    let cs = args::eval_int_list(ec)?;
    let [ch, cw] = match cs[..] {
        [a, b] if (1..=1 << 20).contains(&a) && (1..=1 << 20).contains(&b) => [a as u32, b as u32],
        _ => {
            return Err(Diagnostic::new(
                Code::ArgumentOutOfRange,
                ec.span,
                format!("crop_size is [crop_height, crop_width], two positive sizes, got {cs:?}"),
            )
            .with_label("expected 2 positive sizes"))
        }
    };
    let nearest = match b.get(4).filter(|e| !args::is_none(e)) {
        None => false,
        Some(em) => match args::eval_string(em)? {
            "bilinear" => false,
            "nearest" => true,
            m => {
                return Err(Diagnostic::new(
                    Code::UnknownChoice,
                    em.span,
                    format!("crop_and_resize's method is \"bilinear\" or \"nearest\", got \"{m}\""),
                )
                .with_label("not bilinear or nearest"))
            }
        },
    };
    let extrapolation = match b.get(5).filter(|e| !args::is_none(e)) {
        Some(ee) => args::eval_number(ee)? as f32,
        None => 0.0,
    };
    let span = e.span;
    // The image of each box: [B, N] 0/1 @ [N, H·W·C].
    let ids = lw.g.stop_gradient(ids);
    let ids = lw.g.reshape(ids, &Shape(vec![nb, Dim::Fixed(1)]));
    let images: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let images = lw.g.tensor(DType::F32, Shape::fixed(&[1, n]), images);
    let pick = lw.g.binary(BinaryOp::Eq, ids, images);
    let flat = lw.g.reshape(x, &Shape::fixed(&[n, h * w * c]));
    let xb = lw.matmul(pick, flat, false, false, span, span, span)?;
    let xb =
        lw.g.reshape(xb, &Shape(vec![nb, Dim::Fixed(h), Dim::Fixed(w * c)]));
    let dims = Dims {
        nb,
        h,
        w,
        c,
        ch,
        cw,
    };
    let (out, inside) = if nearest {
        // TF's box gradient is the bilinear one for both methods: the
        // nearest crop's value and image gradient, the bilinear crop's
        // box gradient (its value added and taken away).
        let fixed = lw.g.stop_gradient(boxes);
        let (near, inside) = crop(lw, xb, fixed, dims, true, span)?;
        let still = lw.g.stop_gradient(xb);
        let (moving, _) = crop(lw, still, boxes, dims, false, span)?;
        let held = lw.g.stop_gradient(moving);
        let d = lw.g.sub(moving, held);
        (lw.g.add(near, d), inside)
    } else {
        crop(lw, xb, boxes, dims, false, span)?
    };
    if extrapolation == 0.0 {
        return Ok(out);
    }
    let fill = lw.g.scalar(extrapolation);
    Ok(lw.g.select(inside, out, fill))
}
