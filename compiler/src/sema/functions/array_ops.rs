//! The array builtins: `reshape` (with `B` and one `-1`), `transpose`,
//! `concat`, `cast` and `one_hot` (`gather` / `embedding_lookup` are
//! `gather`'s).
//!
//! Invariants: a reshape keeps the number of elements (the batch dimension
//! included) and the elements before `B` (`shape::reshape`), so a
//! transpose is the only way B moves; class ids are int32 (an integral
//! float constant is taken as ids).

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use crate::ir::{shape, DType, Dim, NodeId, Op, Shape};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{Lowerer, R};

pub(super) fn lower_reshape(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let from = lw.g.shape(x).clone();
    let se = b.req(1);
    let ExprKind::List(items) = &se.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            se.span,
            format!(
                "expected a shape like [B, 64], found {}",
                args::describe(se)
            ),
        )
        .with_label("expected a list of dimensions"));
    };
    let mut dims = Vec::new();
    let mut infer: Option<usize> = None;
    for (i, it) in items.iter().enumerate() {
        match &it.kind {
            ExprKind::Ident(n) if n == "B" => dims.push(Dim::Batch),
            _ => {
                let v = args::eval_int(it)?;
                if v == -1 {
                    if infer.is_some() {
                        return Err(Diagnostic::new(
                            Code::ReshapeShape,
                            it.span,
                            "only one dimension can be -1",
                        )
                        .with_label("second -1"));
                    }
                    infer = Some(i);
                    dims.push(Dim::Fixed(1));
                } else if v <= 0 {
                    return Err(Diagnostic::new(
                        Code::ReshapeShape,
                        it.span,
                        format!("dimension {v} must be positive"),
                    )
                    .with_label("not a size"));
                } else {
                    dims.push(Dim::Fixed(v as u32));
                }
            }
        }
    }
    if let Some(i) = infer {
        // -1 takes the batch dimension if the target has none, else the fixed remainder.
        let mut partial = Shape(dims.clone());
        if from.has_batch() && !partial.has_batch() {
            partial.0[i] = Dim::Batch;
            dims[i] = Dim::Batch;
            if partial.fixed_numel() != from.fixed_numel() {
                return Err(reshape_error(c, &from, &Shape(dims)));
            }
        } else {
            let rest = partial.fixed_numel();
            if rest == 0 || !from.fixed_numel().is_multiple_of(rest) {
                return Err(reshape_error(c, &from, &Shape(dims)));
            }
            dims[i] = Dim::Fixed((from.fixed_numel() / rest) as u32);
        }
    }
    let to = Shape(dims);
    if shape::reshape(&from, &to).is_err() {
        return Err(reshape_error(c, &from, &to));
    }
    Ok(lw.g.reshape(x, &to))
}

fn reshape_error(c: &Call, from: &Shape, to: &Shape) -> Diagnostic {
    let msg = shape::reshape(from, to)
        .err()
        .unwrap_or_else(|| format!("cannot reshape {from} to {to}"));
    let d = Diagnostic::new(Code::ReshapeShape, c.span, msg);
    if from.has_batch() == to.has_batch() && from.fixed_numel() == to.fixed_numel() {
        // The counts agree: B moves in the element order.
        return d.with_label("B would move").with_help(
            "a reshape keeps B where it is in the element order; move it with transpose first",
        );
    }
    d.with_label(format!("{from} has a different number of elements"))
}

/// `tf.transpose(a, perm = reversed axes)`: any permutation, the batch
/// axis's included (time-major `[T, B, D]` and back); the planner reads a
/// transpose as a strided view of its operand.
pub(super) fn lower_transpose(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    let perm: Vec<usize> = match b.get(1) {
        None => (0..rank).rev().collect(),
        Some(e) => {
            let list = args::eval_int_list(e)?;
            let mut perm = Vec::new();
            for a in list {
                perm.push(shape::axis(a, rank).map_err(|m| {
                    Diagnostic::new(Code::BadAxis, e.span, m).with_label("bad permutation")
                })?);
            }
            if let Err(m) = shape::transpose(lw.g.shape(x), &perm) {
                return Err(Diagnostic::new(Code::BadAxis, e.span, m).with_label("bad permutation"));
            }
            perm
        }
    };
    Ok(lw.g.transpose(x, &perm))
}

pub(super) fn lower_concat(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let ve = b.req(0);
    let ExprKind::List(items) = &ve.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            ve.span,
            format!(
                "expected a list of tensors like [a, b], found {}",
                args::describe(ve)
            ),
        )
        .with_label("expected a list"));
    };
    if items.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, ve.span, "concat of an empty list")
                .with_label("nothing to concatenate"),
        );
    }
    let mut parts = Vec::new();
    for it in items {
        parts.push(lw.float(it)?);
    }
    let rank = lw.g.shape(parts[0]).rank();
    let axis = lw.axis(b.req(1), rank)?;
    let shapes: Vec<Shape> = parts.iter().map(|&p| lw.g.shape(p).clone()).collect();
    let refs: Vec<&Shape> = shapes.iter().collect();
    if let Err(m) = shape::concat(&refs, axis) {
        return Err(
            Diagnostic::new(Code::BroadcastShape, c.span, m).with_label("cannot concatenate")
        );
    }
    Ok(lw.g.concat(&parts, axis))
}

pub(super) fn lower_cast(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let de = b.req(1);
    let to = match args::eval_ident(de)? {
        "float32" | "float" => DType::F32,
        "int32" | "int" => DType::I32,
        other => {
            return Err(Diagnostic::new(
                Code::UnknownChoice,
                de.span,
                format!("unknown dtype `{other}`"),
            )
            .with_label("expected float32 or int32"))
        }
    };
    if to == DType::I32 && lw.g.dtype(x) == DType::F32 {
        // TF truncates toward zero; no gradient.
        return Ok(lw.g.cast(x, DType::I32));
    }
    Ok(lw.g.cast(x, to))
}

/// Int class ids: an int32 tensor, or an integral float constant like `[2, 0]`.
pub(super) fn class_ids(lw: &mut Lowerer, e: &Expr, what: &str) -> R<NodeId> {
    let v = lw.lower(e)?;
    if lw.g.dtype(v) == DType::I32 {
        return Ok(v);
    }
    if let Op::Tensor(i) = lw.g.op(v) {
        let c = lw.g.consts[*i as usize].clone();
        if c.values.iter().all(|x| x.fract() == 0.0 && *x >= 0.0) {
            return Ok(lw.g.tensor(DType::I32, c.shape, c.values));
        }
    }
    Err(Diagnostic::new(
        Code::LabelKind,
        e.span,
        format!("{what} needs int32 class ids as labels, but this is float32"),
    )
    .with_label("float32 labels")
    .with_help("declare the label column as `label NAME: int`, or use softmax_cross_entropy for one-hot or soft labels"))
}

pub(super) fn lower_one_hot(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let ids = class_ids(lw, b.req(0), "one_hot")?;
    let depth = args::eval_count(b.req(1), "depth")?;
    if depth == 0 || depth > u32::MAX as u64 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(1).span,
            "depth must be positive",
        )
        .with_label("bad depth"));
    }
    Ok(lw.g.one_hot(ids, depth as u32))
}
