//! `tf.image.draw_bounding_boxes(images, boxes, colors)` as a graph op, so
//! a spec can draw its boxes (targets, predictions) on its images and log
//! them as image summaries (`summaries { image_tensors = [drawn] }`).
//!
//! Owns: TF's `DrawBoundingBoxes` kernel written with comparisons and
//! selects: box `k` of an image in colour `k mod colours` (TF's 10-colour
//! table without `colors`, first component 1 for grey images), corners
//! `f32(coordinate) · f32(size − 1)` truncated toward zero, an inverted
//! box or one wholly outside skipped, the four one-pixel lines where they
//! fall inside the image, later boxes over earlier ones.
//! Invariant: pixels off the outlines are the input's (their gradient
//! passes through); the boxes get no gradient (comparisons), as TF has
//! none for them.

use specc_grammar::ast::Call;
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, UnaryOp};

/// TF's colour table when no colours are given (RGBA).
const DEFAULT_COLORS: [[f32; 4]; 10] = [
    [1.0, 1.0, 0.0, 1.0],
    [0.0, 0.0, 1.0, 1.0],
    [1.0, 0.0, 0.0, 1.0],
    [0.0, 1.0, 0.0, 1.0],
    [0.5, 0.0, 0.5, 1.0],
    [0.5, 0.5, 0.0, 1.0],
    [0.5, 0.0, 0.0, 1.0],
    [0.0, 0.0, 0.5, 1.0],
    [0.0, 1.0, 1.0, 1.0],
    [1.0, 0.0, 1.0, 1.0],
];

/// `v` truncated toward zero.
fn trunc(lw: &mut Lowerer, v: NodeId) -> NodeId {
    let zero = lw.g.scalar(0.0);
    let ge = lw.g.binary(BinaryOp::Ge, v, zero);
    let f = lw.g.unary(UnaryOp::Floor, v);
    let c = lw.g.unary(UnaryOp::Ceil, v);
    lw.g.select(ge, f, c)
}

/// `tf.image.draw_bounding_boxes(images, boxes, colors = None)`.
pub fn draw_bounding_boxes(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let e = b.req(0);
    let (x, h_axis, [h, w, depth]) = image_operand(lw, e, "draw_bounding_boxes")?;
    let xs = lw.g.shape(x).clone();
    if h_axis != 1 || ![1, 3, 4].contains(&depth) {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("draw_bounding_boxes needs images [N, H, W, C] with 1, 3 or 4 channels, but this is {xs}"),
        )
        .with_label(format!("this is {xs}")));
    }
    let eb = b.req(1);
    let boxes = lw.float(eb)?;
    let bs = lw.g.shape(boxes).clone();
    let k_boxes = match bs.0[..] {
        [n, Dim::Fixed(k), Dim::Fixed(4)] if n == xs.0[0] => k,
        _ => {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                eb.span,
                format!("boxes must be [N, K, 4] for images {xs}, but this is {bs}"),
            )
            .with_label(format!("this is {bs}")))
        }
    };
    // The colour table as [M, C] (a tensor, or TF's default).
    let (table, m) = match b.get(2).filter(|e| !args::is_none(e)) {
        Some(ec) => {
            let c = lw.float(ec)?;
            let cs = lw.g.shape(c).clone();
            match cs.0[..] {
                [Dim::Fixed(m), Dim::Fixed(cc)] if m > 0 && cc >= depth => {
                    let part = Shape::fixed(&[m, depth]);
                    (lw.g.slice(c, &[0, 0], &part), m)
                }
                _ => {
                    return Err(Diagnostic::new(
                        Code::ShapeMismatch,
                        ec.span,
                        format!("colors must be [M, ≥ {depth}] (a colour per row, at least as many channels as the images), but this is {cs}"),
                    )
                    .with_label(format!("this is {cs}")))
                }
            }
        }
        None => {
            let mut v = Vec::new();
            for c in DEFAULT_COLORS {
                let mut row = c[..depth as usize].to_vec();
                if depth == 1 {
                    row[0] = 1.0;
                }
                v.extend(row);
            }
            (lw.g.tensor(DType::F32, Shape::fixed(&[10, depth]), v), 10)
        }
    };
    let n = xs.0[0];
    let one = Dim::Fixed(1);
    let rows: Vec<f32> = (0..h).map(|i| i as f32).collect();
    let cols: Vec<f32> = (0..w).map(|i| i as f32).collect();
    let ys = lw.g.tensor(DType::F32, Shape::fixed(&[h, 1, 1]), rows);
    let xs_ = lw.g.tensor(DType::F32, Shape::fixed(&[1, w, 1]), cols);
    let mut out = x;
    for k in 0..k_boxes {
        // Coordinate j of box k of each image, as [N, 1, 1, 1].
        let coord = |lw: &mut Lowerer, j: u32, size: u32| {
            let v = lw.g.slice(boxes, &[0, k, j], &Shape(vec![n, one, one]));
            let v = lw.g.reshape(v, &Shape(vec![n, one, one, one]));
            let v = lw.g.scale(v, (size - 1) as f32);
            trunc(lw, v)
        };
        let (r0, c0) = (coord(lw, 0, h), coord(lw, 1, w));
        let (r1, c1) = (coord(lw, 2, h), coord(lw, 3, w));
        let all = |lw: &mut Lowerer, masks: &[NodeId]| {
            let mut m = masks[0];
            for &t in &masks[1..] {
                m = lw.g.mul(m, t);
            }
            m
        };
        let (hh, ww, zero) = (
            lw.g.scalar(h as f32),
            lw.g.scalar(w as f32),
            lw.g.scalar(0.0),
        );
        let valid = [
            lw.g.binary(BinaryOp::Le, r0, r1),
            lw.g.binary(BinaryOp::Le, c0, c1),
            lw.g.binary(BinaryOp::Lt, r0, hh),
            lw.g.binary(BinaryOp::Ge, r1, zero),
            lw.g.binary(BinaryOp::Lt, c0, ww),
            lw.g.binary(BinaryOp::Ge, c1, zero),
        ];
        let valid = all(lw, &valid);
        let in_rows = [
            lw.g.binary(BinaryOp::Ge, ys, r0),
            lw.g.binary(BinaryOp::Le, ys, r1),
        ];
        let in_rows = all(lw, &in_rows);
        let in_cols = [
            lw.g.binary(BinaryOp::Ge, xs_, c0),
            lw.g.binary(BinaryOp::Le, xs_, c1),
        ];
        let in_cols = all(lw, &in_cols);
        let lines = [
            (ys, r0, in_cols),
            (ys, r1, in_cols),
            (xs_, c0, in_rows),
            (xs_, c1, in_rows),
        ];
        let mut outline = None;
        for (pos, at, span) in lines {
            let on = lw.g.binary(BinaryOp::Eq, pos, at);
            let line = lw.g.mul(on, span);
            outline = Some(match outline {
                Some(o) => lw.g.binary(BinaryOp::Max, o, line),
                None => line,
            });
        }
        let mask = lw.g.mul(outline.expect("four lines"), valid);
        let color = lw.g.slice(table, &[k % m, 0], &Shape::fixed(&[1, depth]));
        let color = lw.g.reshape(color, &Shape::fixed(&[depth]));
        out = lw.g.select(mask, color, out);
    }
    Ok(out)
}
