//! The ops whose value depends on whether the function trains: `dropout`
//! and `batch_norm` (a batch normalization layer with moving statistics).
//!
//! Owns: their lowerings as a `select` on `Op::Training` between the
//! training and the inference value (`passes::optimize` keeps one branch
//! per function), and `batch_norm`'s updates of its moving statistics,
//! recorded as [`crate::model::StateUpdate`]s that only the step applies.
//! - `dropout(x, rate, noise_shape, seed)`: in training TF's
//!   `x · 1/(1 − rate) · (u ≥ rate)` with `u` uniform in `[0, 1)`, drawn anew
//!   every step by specc's counter-based generator (keyed by the seed, the
//!   global step and the element: the same bits on any thread count, not
//!   TF's Philox numbers); identity in eval and predict, as Keras's layer.
//! - `batch_norm(x, scale, offset, moving_mean, moving_variance, momentum,
//!   epsilon)`: TF1's `layers.batch_normalization` (fused, NHWC) with its
//!   variables passed in: in training `fused_batch_norm` with the batch
//!   statistics, and the step assigns each moving statistic TF's
//!   `assign_moving_average`, `v − (v − batch)·(1 − momentum)`, of the batch
//!   mean and the unbiased batch variance; in eval and predict the moving
//!   statistics normalize.
//!
//! Invariant: the moving statistics are variables (checked here) declared
//! `trainable = false` and updated once (checked in `sema::mod`).

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::normalization;
use crate::ir::{BinaryOp, Dim, NodeId, Op, Shape};
use crate::model::StateUpdate;

/// `tf.nn.dropout(x, rate, noise_shape=None, seed=None)`, off outside training.
pub fn dropout(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let rate = args::eval_number(b.req(1))?;
    if !(0.0..1.0).contains(&rate) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(1).span,
            format!("rate must be in [0, 1), got {rate}"),
        )
        .with_label("out of range"));
    }
    let s = lw.g.shape(x).clone();
    let noise = match b.get(2).filter(|e| !args::is_none(e)) {
        None => s.clone(),
        Some(e) => noise_shape(e, &s)?,
    };
    let seed = match b.get(3).filter(|e| !args::is_none(e)) {
        Some(e) => args::eval_int(e)? as u32,
        // Reproducible without a seed: the call's place in the spec.
        None => 0x5EED_0000 ^ c.span.start,
    };
    if rate == 0.0 {
        return Ok(x);
    }
    let u = lw.g.random_uniform(seed, &noise);
    let r = lw.g.scalar(rate as f32);
    let keep = lw.g.binary(BinaryOp::Ge, u, r);
    let scaled = lw.g.scale(x, (1.0 / (1.0 - rate)) as f32);
    let dropped = lw.g.mul(scaled, keep);
    let training = lw.g.training();
    Ok(lw.g.select(training, dropped, x))
}

/// `noise_shape`: a list of sizes (or `B`) that broadcasts to `x`'s shape.
fn noise_shape(e: &Expr, x: &Shape) -> R<Shape> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            "noise_shape is a list of sizes like [B, 1, 1, 64]",
        )
        .with_label("not a list"));
    };
    let dims = items
        .iter()
        .map(|it| match &it.kind {
            ExprKind::Ident(n) if n == "B" => Ok(Dim::Batch),
            _ => match args::eval_int(it)? {
                v if v >= 1 && v <= i64::from(u32::MAX) => Ok(Dim::Fixed(v as u32)),
                v => Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    it.span,
                    format!("a size must be positive, got {v}"),
                )
                .with_label("not a size")),
            },
        })
        .collect::<R<Vec<Dim>>>()?;
    let s = Shape(dims);
    let ok = s.rank() == x.rank()
        && s.0
            .iter()
            .zip(&x.0)
            .all(|(a, b)| a == b || *a == Dim::Fixed(1));
    if !ok {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("noise_shape {s} does not broadcast to the input's {x}"),
        )
        .with_label(format!("this is {s}"))
        .with_help("each size must equal the input's or be 1"));
    }
    Ok(s)
}

/// The variable an argument names (a moving statistic), or a caret at it.
fn variable(lw: &mut Lowerer, e: &Expr, what: &str) -> R<(NodeId, u32)> {
    let n = lw.float(e)?;
    match lw.g.op(n) {
        Op::Var(v) => Ok((n, *v)),
        _ => Err(Diagnostic::new(
            Code::NotAVariable,
            e.span,
            format!("the {what} must be a parameter (declared `trainable = false`), which the step updates"),
        )
        .with_label("not a parameter")),
    }
}

/// `batch_norm(x, scale, offset, moving_mean, moving_variance,
/// momentum=0.99, epsilon=0.001)`.
pub fn batch_norm(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (mm, mm_var) = variable(lw, b.req(3), "moving_mean")?;
    let (mv, mv_var) = variable(lw, b.req(4), "moving_variance")?;
    let momentum = match b.get(5).filter(|e| !args::is_none(e)) {
        Some(e) => args::eval_number(e)?,
        None => 0.99,
    };
    if !(0.0..=1.0).contains(&momentum) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(5).span,
            format!("momentum must be in [0, 1], got {momentum}"),
        )
        .with_label("out of range"));
    }
    // fused_batch_norm's arguments: x, scale, offset, mean, variance,
    // epsilon, is_training, exponential_avg_factor.
    let eps = b.get(6);
    let no = Expr::new(ExprKind::Bool(false), c.span);
    let train = Bound {
        args: vec![b.get(0), b.get(1), b.get(2), None, None, eps, None, None],
        call_span: b.call_span,
    };
    let infer = Bound {
        args: vec![
            b.get(0),
            b.get(1),
            b.get(2),
            b.get(3),
            b.get(4),
            eps,
            Some(&no),
            None,
        ],
        call_span: b.call_span,
    };
    let y_train = normalization::fused_batch_norm(lw, &train, c, 0)?;
    let batch_mean = normalization::fused_batch_norm(lw, &train, c, 1)?;
    let batch_var = normalization::fused_batch_norm(lw, &train, c, 2)?;
    let y_infer = normalization::fused_batch_norm(lw, &infer, c, 0)?;
    // TF's assign_moving_average: v − (v − value)·(1 − momentum).
    let decay = (1.0 - momentum) as f32;
    for (v, node, stat) in [(mm_var, mm, batch_mean), (mv_var, mv, batch_var)] {
        let d = lw.g.sub(node, stat);
        let delta = lw.g.scale(d, decay);
        let value = lw.g.sub(node, delta);
        lw.state_updates.push(StateUpdate {
            var: v,
            value,
            span: c.span,
        });
    }
    let training = lw.g.training();
    Ok(lw.g.select(training, y_train, y_infer))
}
