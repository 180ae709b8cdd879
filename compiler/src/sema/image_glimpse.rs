//! `tf.image.extract_glimpse` (and `tf.compat.v1.image.extract_glimpse`,
//! `extract_glimpse_v1`) as a graph op: a window of each image at its own
//! offset, the offsets a tensor (a model's attention, a data column).
//!
//! Owns: TF's `ExtractGlimpse` offset arithmetic in float32
//! (`specc_image::glimpse`: normalized offsets times the image size,
//! centred ones moved by half the image and, v2 normalized or v1, back by
//! half the glimpse; truncated toward zero) written with IR ops, and the
//! window as two batched products by 0/1 selection matrices
//! `S_h[n] · x[n] · S_w[n]ᵀ` (`S_h[n, i, r] = [r = y_n + i]`), so rows and
//! columns outside the image give zeros (`noise = "zero"`).
//! Invariant: the input is float `[N, H, W, C]` with fixed `H, W, C`;
//! offsets `[N, 2]` (`[y, x]`); the gradient flows to the input (the
//! transposed selections, TF's glimpse has none registered) and never to
//! the offsets (comparisons). Only the zero fill is an op: TF's uniform
//! and Gaussian noise are random draws, refused with a caret.

use specc_grammar::ast::{Call, Expr, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, UnaryOp};

/// `v` truncated toward zero.
fn trunc(lw: &mut Lowerer, v: NodeId) -> NodeId {
    let zero = lw.g.scalar(0.0);
    let ge = lw.g.binary(BinaryOp::Ge, v, zero);
    let f = lw.g.unary(UnaryOp::Floor, v);
    let c = lw.g.unary(UnaryOp::Ceil, v);
    lw.g.select(ge, f, c)
}

fn flag(b: &Bound, i: usize, default: bool) -> R<bool> {
    match b.get(i).filter(|e| !args::is_none(e)) {
        Some(e) => args::eval_bool(e),
        None => Ok(default),
    }
}

fn random_noise(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnknownChoice,
        span,
        format!("extract_glimpse as an op fills outside the image with zeros only; {what} draws random noise"),
    )
    .with_label("random noise")
    .with_help("pass `noise = \"zero\"` (`uniform_noise = false` for `extract_glimpse_v1`)")
}

/// The glimpse size `[h, w]`.
fn glimpse_size(e: &Expr) -> R<[u32; 2]> {
    let v = args::eval_int_list(e)?;
    match v[..] {
        [h, w] if (1..=1 << 20).contains(&h) && (1..=1 << 20).contains(&w) => {
            Ok([h as u32, w as u32])
        }
        _ => Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("`size` is [glimpse_height, glimpse_width], two positive sizes, got {v:?}"),
        )
        .with_label("expected 2 positive sizes")),
    }
}

/// The 0/1 selection `[N, g, n]`: `[r = o_n + i]` for glimpse cell `i`
/// and image cell `r`, with `o` `[N, 1, 1]`.
fn selection(lw: &mut Lowerer, o: NodeId, g: u32, n: u32) -> NodeId {
    let cells: Vec<f32> = (0..g).map(|i| i as f32).collect();
    let image: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let cells = lw.g.tensor(DType::F32, Shape::fixed(&[1, g, 1]), cells);
    let image = lw.g.tensor(DType::F32, Shape::fixed(&[1, 1, n]), image);
    let at = lw.g.add(o, cells);
    lw.g.binary(BinaryOp::Eq, image, at)
}

fn lower(lw: &mut Lowerer, b: &Bound, version: u8) -> R<NodeId> {
    let e = b.req(0);
    let (x, h_axis, [h, w, c]) = image_operand(lw, e, "extract_glimpse")?;
    let xs = lw.g.shape(x).clone();
    if h_axis != 1 {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("extract_glimpse needs input [N, H, W, C], but this is {xs}"),
        )
        .with_label(format!("this is {xs}")));
    }
    let [gh, gw] = glimpse_size(b.req(1))?;
    let eo = b.req(2);
    let offsets = lw.float(eo)?;
    let os = lw.g.shape(offsets).clone();
    let nn = xs.0[0];
    if os.0[..] != [nn, Dim::Fixed(2)] {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            eo.span,
            format!("offsets must be [N, 2] ([y, x] per image) for input {xs}, but this is {os}"),
        )
        .with_label(format!("this is {os}")));
    }
    let centered = flag(b, 3, true)?;
    let normalized = flag(b, 4, true)?;
    if version == 2 {
        match b.get(5).filter(|e| !args::is_none(e)) {
            Some(en) => {
                let noise = args::eval_string(en)?;
                match noise {
                    "zero" => {}
                    "uniform" | "gaussian" => {
                        return Err(random_noise(en.span, &format!("noise = \"{noise}\"")))
                    }
                    _ => {
                        return Err(Diagnostic::new(
                            Code::UnknownChoice,
                            en.span,
                            format!("unknown glimpse noise \"{noise}\""),
                        )
                        .with_label("not uniform, gaussian or zero"))
                    }
                }
            }
            None => return Err(random_noise(b.call_span, "TF's default noise \"uniform\"")),
        }
    } else {
        let uniform = b.get(5).filter(|e| !args::is_none(e));
        match uniform {
            Some(eu) if !args::eval_bool(eu)? => {}
            Some(eu) => return Err(random_noise(eu.span, "uniform_noise = true")),
            None => {
                return Err(random_noise(
                    b.call_span,
                    "TF's default uniform_noise = true",
                ))
            }
        }
    }
    // Offset j ([y, x]) of each image as [N, 1, 1], in TF's float32 order.
    let (fh, fw) = (h as f32, w as f32);
    let one = Dim::Fixed(1);
    let at = |lw: &mut Lowerer, j: u32, size: f32, g: u32| {
        let v = lw.g.slice(offsets, &[0, j], &Shape(vec![nn, one]));
        let mut v = lw.g.reshape(v, &Shape(vec![nn, one, one]));
        let half_g = g as f32 / 2.0;
        if version == 1 {
            if normalized {
                v = lw.g.scale(v, size);
            }
            if centered {
                v = lw.g.scale(v, 0.5);
                let s = lw.g.scalar(size / 2.0);
                v = lw.g.add(v, s);
            }
            let s = lw.g.scalar(half_g);
            v = lw.g.sub(v, s);
        } else if normalized {
            v = lw.g.scale(v, size);
            if centered {
                v = lw.g.scale(v, 0.5);
                let s = lw.g.scalar(size / 2.0);
                v = lw.g.add(v, s);
                let s = lw.g.scalar(half_g);
                v = lw.g.sub(v, s);
            }
        } else if centered {
            let s = lw.g.scalar(size / 2.0);
            v = lw.g.add(v, s);
        }
        trunc(lw, v)
    };
    let oy = at(lw, 0, fh, gh);
    let ox = at(lw, 1, fw, gw);
    let sh = selection(lw, oy, gh, h);
    let sw = selection(lw, ox, gw, w);
    let span = e.span;
    // [N, gh, H] @ [N, H, W·C] = [N, gh, W·C].
    let flat =
        lw.g.reshape(x, &Shape(vec![nn, Dim::Fixed(h), Dim::Fixed(w * c)]));
    let t = lw.matmul(sh, flat, false, false, span, span, span)?;
    // [N, gh, C, W] @ [N, 1, W, gw] (S_w transposed) = [N, gh, C, gw].
    let t = lw.g.reshape(
        t,
        &Shape(vec![nn, Dim::Fixed(gh), Dim::Fixed(w), Dim::Fixed(c)]),
    );
    let t = lw.g.transpose(t, &[0, 1, 3, 2]);
    let sw = lw.g.reshape(
        sw,
        &Shape(vec![nn, Dim::Fixed(1), Dim::Fixed(gw), Dim::Fixed(w)]),
    );
    let t = lw.matmul(t, sw, false, true, span, span, span)?;
    Ok(lw.g.transpose(t, &[0, 1, 3, 2]))
}

/// `tf.image.extract_glimpse(input, size, offsets, centered = true,
/// normalized = true, noise = "uniform")`: `noise = "zero"` only.
pub fn extract_glimpse(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    lower(lw, b, 2)
}

/// `tf.compat.v1.image.extract_glimpse(input, size, offsets, centered =
/// true, normalized = true, uniform_noise = true)`: `uniform_noise = false`
/// only.
pub fn extract_glimpse_v1(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    lower(lw, b, 1)
}
