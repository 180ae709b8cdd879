//! The loss builtins: `sigmoid_cross_entropy`,
//! `softmax_cross_entropy`, `sparse_softmax_cross_entropy` (and their
//! `_with_logits` names) and `mean_squared_error`, per example, in TF's
//! numerically stable forms.
//!
//! Invariants: labels are float for the dense losses and int32 class ids
//! for the sparse one (a clear error names the other kind); labels and
//! logits (or predictions) have the same shape, or `[N]` and
//! `[N, classes]`; the class ids of an input are recorded as a
//! [`ClassUse`] (exactly `classes`), so the runtime range-checks them.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use super::array_ops::class_ids;
use super::math::{log_softmax, shifted};
use crate::ir::{BinaryOp, DType, NodeId, Op, UnaryOp};
use crate::sema::args::Bound;
use crate::sema::expr::{ClassUse, Lowerer, R};

fn same_shape(lw: &Lowerer, le: &Expr, l: NodeId, xe: &Expr, x: NodeId, c: &Call) -> R<()> {
    let (ls, xs) = (lw.g.shape(l), lw.g.shape(x));
    if ls != xs {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!(
                "`{}` needs labels and {} of the same shape, got {ls} and {xs}",
                c.func.name,
                if c.func.name == "mean_squared_error" {
                    "predictions"
                } else {
                    "logits"
                }
            ),
        )
        .with_secondary(le.span, format!("this is {ls}"))
        .with_secondary(xe.span, format!("this is {xs}"))
        .with_help(if ls.rank() + 1 == xs.rank() {
            format!("reshape one of them, e.g. reshape(x, {ls})")
        } else {
            "reshape one of them so the shapes agree".to_string()
        }));
    }
    Ok(())
}

fn float_labels(lw: &mut Lowerer, e: &Expr, what: &str) -> R<NodeId> {
    let v = lw.lower(e)?;
    if lw.g.dtype(v) != DType::F32 {
        return Err(Diagnostic::new(
            Code::LabelKind,
            e.span,
            format!("{what} needs float labels, but this is int32"),
        )
        .with_label("int32 labels")
        .with_help(if what == "softmax_cross_entropy" {
            "for class ids use sparse_softmax_cross_entropy".to_string()
        } else {
            "declare the label as `label NAME: float`".to_string()
        }));
    }
    Ok(v)
}

pub(super) fn lower_sigmoid_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "sigmoid_cross_entropy")?;
    let logits = lw.float(xe)?;
    same_shape(lw, le, labels, xe, logits, c)?;
    // TF: relu_logits - logits * labels + log1p(exp(neg_abs_logits)),
    // with cond = logits >= 0 selecting both pieces.
    let g = &mut *lw.g;
    let zero = g.scalar(0.0);
    let cond = g.binary(BinaryOp::Ge, logits, zero);
    let relu_logits = g.select(cond, logits, zero);
    let neg = g.neg(logits);
    let neg_abs = g.select(cond, neg, logits);
    let xy = g.mul(logits, labels);
    let a = g.sub(relu_logits, xy);
    let e = g.unary(UnaryOp::Exp, neg_abs);
    let l = g.unary(UnaryOp::Log1p, e);
    Ok(g.add(a, l))
}

pub(super) fn lower_softmax_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "softmax_cross_entropy")?;
    let logits = lw.float(xe)?;
    same_shape(lw, le, labels, xe, logits, c)?;
    let rank = lw.g.shape(logits).rank();
    if rank == 0 {
        return Err(
            Diagnostic::new(Code::BadAxis, xe.span, "logits must have a class axis")
                .with_label("scalar"),
        );
    }
    let ls = log_softmax(lw, logits, rank - 1);
    let p = lw.g.mul(labels, ls);
    let s = lw.g.reduce_sum(p, &[rank - 1]);
    Ok(lw.g.neg(s))
}

pub(super) fn lower_sparse_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = class_ids(lw, le, "sparse_softmax_cross_entropy")?;
    let logits = lw.float(xe)?;
    let (ls, xs) = (lw.g.shape(labels).clone(), lw.g.shape(logits).clone());
    let ok = xs.rank() == ls.rank() + 1 && xs.0[..ls.rank()] == ls.0[..];
    let classes = xs.0.last().and_then(|d| d.fixed());
    if !ok || classes.is_none() {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!("sparse_softmax_cross_entropy needs labels [N] and logits [N, classes], got {ls} and {xs}"),
        )
        .with_secondary(le.span, format!("this is {ls}"))
        .with_secondary(xe.span, format!("this is {xs}")));
    }
    let classes = classes.unwrap_or(1);
    if let Op::Input(i) = lw.g.op(labels) {
        lw.class_uses.push(ClassUse {
            input: *i,
            classes,
            span: c.span,
            at_most: false,
        });
    }
    // loss = logsumexp(logits) - logits[label], with the max shift of TF's kernel.
    let axis = xs.rank() - 1;
    let z = shifted(lw, logits, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let lse = lw.g.unary(UnaryOp::Log, sum);
    let onehot = lw.g.one_hot(labels, classes);
    let picked = lw.g.mul(z, onehot);
    let picked = lw.g.reduce_sum(picked, &[axis]);
    Ok(lw.g.sub(lse, picked))
}

pub(super) fn lower_mse(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, pe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "mean_squared_error")?;
    let preds = lw.float(pe)?;
    same_shape(lw, le, labels, pe, preds, c)?;
    let d = lw.g.sub(preds, labels);
    let sq = lw.g.unary(UnaryOp::Square, d);
    let rank = lw.g.shape(sq).rank();
    if rank == 0 {
        return Ok(sq);
    }
    Ok(lw.g.reduce_mean(sq, &[rank - 1]))
}
