//! The math builtins: elementwise binaries (`maximum`, `minimum`, `pow`),
//! the predicates `is_nan`, `is_inf`, `is_finite` and `zero_fraction`,
//! `where`, `matmul`, `bias_add`, the reductions (`reduce_sum`,
//! `reduce_mean`, `reduce_max`), `argmax`, and `softmax` (with Keras's
//! mask) / `log_softmax`.
//!
//! Invariants: operands broadcast as TF's do (checked before any node is
//! built); both softmax forms subtract the `stop_gradient` of the row's
//! maximum first (TF's stable form), so autodiff sees only primitive ops; a
//! mask is two selects around the softmax, which fuse into its loops.

use specc_grammar::ast::Call;
use specc_grammar::{Code, Diagnostic};

use crate::ir::{shape, BinaryOp, DType, NodeId, ReduceKind, UnaryOp};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{Lowerer, R};

pub(super) fn elementwise2(lw: &mut Lowerer, b: &Bound, c: &Call, op: BinaryOp) -> R<NodeId> {
    let (ea, eb) = (b.req(0), b.req(1));
    let x = lw.float(ea)?;
    let y = lw.float(eb)?;
    lw.check_broadcast(x, y, ea.span, eb.span, c.span, c.func.name.as_str())?;
    Ok(lw.g.binary(op, x, y))
}

/// `tf.math.is_nan(x)`: 1 where `x` is NaN (`x != x`, the only value
/// unequal to itself), else 0 — as float, like the comparisons.
pub(super) fn is_nan(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    Ok(lw.g.binary(BinaryOp::Ne, x, x))
}

/// `tf.math.is_inf(x)`: 1 where `|x|` is infinite.
pub(super) fn is_inf(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let a = lw.g.unary(UnaryOp::Abs, x);
    let inf = lw.g.scalar(f32::INFINITY);
    Ok(lw.g.binary(BinaryOp::Eq, a, inf))
}

/// `tf.math.is_finite(x)`: 1 where `|x| < ∞` (0 for NaN, which compares
/// false).
pub(super) fn is_finite(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let a = lw.g.unary(UnaryOp::Abs, x);
    let inf = lw.g.scalar(f32::INFINITY);
    Ok(lw.g.binary(BinaryOp::Lt, a, inf))
}

/// `tf.math.zero_fraction(value)`: the fraction of its elements equal to
/// 0, a scalar (the mean of `value == 0` over every axis, the batch's too).
pub(super) fn zero_fraction(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let zero = lw.g.scalar(0.0);
    let is_zero = lw.g.binary(BinaryOp::Eq, x, zero);
    let axes: Vec<usize> = (0..lw.g.shape(x).rank()).collect();
    Ok(lw.g.reduce_mean(is_zero, &axes))
}

pub(super) fn lower_where(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let cond = lw.lower(b.req(0))?;
    let cond = lw.g.cast(cond, DType::F32);
    let (ex, ey) = (b.req(1), b.req(2));
    let x = lw.float(ex)?;
    let y = lw.float(ey)?;
    let s = lw.check_broadcast(x, y, ex.span, ey.span, c.span, "where")?;
    let cs = lw.g.shape(cond).clone();
    if shape::broadcast(&s, &cs).map(|r| r != s).unwrap_or(true) {
        return Err(Diagnostic::new(
            Code::BroadcastShape,
            b.req(0).span,
            format!("the condition {cs} does not broadcast to the values' shape {s}"),
        )
        .with_label(format!("this is {cs}")));
    }
    Ok(lw.g.select(cond, x, y))
}

pub(super) fn lower_matmul(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ea, eb) = (b.req(0), b.req(1));
    let x = lw.float(ea)?;
    let y = lw.float(eb)?;
    let ta = b.flag(2)?;
    let tb = b.flag(3)?;
    lw.matmul(x, y, ta, tb, ea.span, eb.span, c.span)
}

pub(super) fn lower_bias_add(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ev, eb) = (b.req(0), b.req(1));
    let v = lw.float(ev)?;
    let bias = lw.float(eb)?;
    let (vs, bs) = (lw.g.shape(v).clone(), lw.g.shape(bias).clone());
    if bs.rank() != 1 || vs.rank() < 2 || vs.0.last() != bs.0.first() {
        return Err(Diagnostic::new(
            Code::BroadcastShape,
            c.span,
            format!("bias_add needs a rank-1 bias matching the last dimension of the value: {vs} and {bs}"),
        )
        .with_secondary(ev.span, format!("this is {vs}"))
        .with_secondary(eb.span, format!("this is {bs}")));
    }
    Ok(lw.g.add(v, bias))
}

#[derive(Clone, Copy)]
pub(super) enum Reduction {
    Sum,
    Mean,
    Max,
}

pub(super) fn lower_reduce(lw: &mut Lowerer, b: &Bound, _c: &Call, kind: Reduction) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axes = lw.axes(b.get(1), s.rank())?;
    let keepdims = b.flag(2)?;
    let r = match kind {
        Reduction::Sum => lw.g.reduce_sum(x, &axes),
        Reduction::Mean => lw.g.reduce_mean(x, &axes),
        Reduction::Max => lw.g.reduce(ReduceKind::Max, x, &axes),
    };
    if keepdims {
        let kept = shape::reduce_keepdims(&s, &axes);
        Ok(lw.g.reshape(r, &kept))
    } else {
        Ok(r)
    }
}

pub(super) fn logits_axis(lw: &mut Lowerer, b: &Bound) -> R<(NodeId, usize)> {
    let x = lw.float(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    if rank == 0 {
        return Err(Diagnostic::new(
            Code::BadAxis,
            b.req(0).span,
            "softmax needs at least one axis, but this is a scalar",
        )
        .with_label("scalar"));
    }
    let axis = match b.get(1) {
        Some(e) => lw.axis(e, rank)?,
        None => rank - 1,
    };
    Ok((x, axis))
}

/// The logit Keras's `Softmax` layer puts where the mask is false (float32;
/// -3e4 is float16's, which specc has not).
const MASKED_LOGIT: f32 = -1e9;

/// `softmax(logits, axis = -1, mask = None)`. With a mask, Keras 3's
/// `Softmax` layer (`keras.layers.Softmax()(logits, mask)`): where the mask
/// is false (a float mask: not above 0.5) the logit is replaced by -1e9
/// before the softmax, and the result there is 0 (a row masked whole gives
/// zeros, not a uniform distribution). The mask broadcasts to the logits
/// (each dimension 1 or the logits', rank at most theirs), e.g. a `[B, 1, T]`
/// mask over `[B, T, T]` attention scores.
pub(super) fn lower_softmax(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let (x, axis) = logits_axis(lw, b)?;
    let Some(me) = b.get(2).filter(|e| !args::is_none(e)) else {
        return Ok(softmax(lw, x, axis));
    };
    let m = lw.lower(me)?;
    let m = lw.g.cast(m, DType::F32);
    let (xs, ms) = (lw.g.shape(x).clone(), lw.g.shape(m).clone());
    if !shape::broadcasts_to(&ms, &xs) {
        return Err(Diagnostic::new(
            Code::BroadcastShape,
            me.span,
            format!("the mask {ms} does not broadcast to the logits {xs}"),
        )
        .with_label(format!("this is {ms}"))
        .with_secondary(b.req(0).span, format!("the logits are {xs}"))
        .with_help("each dimension of the mask is 1 or the logits' (e.g. a [B, 1, T] mask for [B, T, T] scores)"));
    }
    let half = lw.g.scalar(0.5);
    let keep = lw.g.binary(BinaryOp::Gt, m, half);
    let low = lw.g.scalar(MASKED_LOGIT);
    let masked = lw.g.select(keep, x, low);
    let y = softmax(lw, masked, axis);
    let zero = lw.g.scalar(0.0);
    Ok(lw.g.select(keep, y, zero))
}

/// `x - stop_gradient(max(x, axis))`, the shift both softmax forms start from.
pub(super) fn shifted(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let m = lw.g.reduce(ReduceKind::Max, x, &[axis]);
    let m = lw.g.stop_gradient(m);
    let m = lw.g.reshape(m, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.sub(x, m)
}

pub fn softmax(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let z = shifted(lw, x, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let sum = lw.g.reshape(sum, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.div(e, sum)
}

pub fn log_softmax(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let z = shifted(lw, x, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let lse = lw.g.unary(UnaryOp::Log, sum);
    let lse = lw.g.reshape(lse, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.sub(z, lse)
}

pub(super) fn lower_argmax(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    if rank == 0 {
        return Err(
            Diagnostic::new(Code::BadAxis, b.req(0).span, "argmax of a scalar")
                .with_label("scalar"),
        );
    }
    let axis = match b.get(1) {
        Some(e) => lw.axis(e, rank)?,
        None => rank - 1,
    };
    Ok(lw.g.argmax(x, axis))
}
