//! Quantization-aware training: TF's fake quantization
//! (`tf.quantization.fake_quant_with_min_max_vars`, `..._per_channel`,
//! `..._args`) and its straight-through gradient, as primitive IR ops.
//!
//! The forward is TF 2.21's kernels (`fake_quant_ops_functor.h`), in their
//! float32 order: the range `[min, max]` nudged so that 0 is a quantized
//! value (`scale = (max − min) / (qmax − qmin)`, `inv_scale = (qmax − qmin)
//! / (max − min)`, the zero point `round(qmin − min / scale)` clamped to
//! `[qmin, qmax]`, `nudged_min = (qmin − zp) · scale`, `nudged_max = (qmax
//! − zp) · scale`, `quant_zero = floor(−nudged_min · inv_scale + 0.5)`),
//! then `floor(s − quant_zero + 0.5) · scale` with `s` the clamped value
//! minus `nudged_min`, divided by `scale` (`_vars`) or times `inv_scale`
//! (`_args`, `_per_channel`); `qmin = narrow_range ? 1 : 0`, `qmax =
//! 2^num_bits − 1`. The outputs are TF's bit for bit.
//!
//! The gradient is TF's (`FakeQuantWithMinMaxVarsGradient`): the upstream
//! gradient passes to `x` where `nudged_min ≤ x ≤ nudged_max`, its sum
//! where `x < nudged_min` goes to `min` and where `x > nudged_max` to
//! `max` (per channel for the per-channel form). It comes from the
//! composition: the quantized value and the nudged bounds enter as
//! `stop_gradient(v) + (u − stop_gradient(u))`, which is `v` exactly and
//! differentiates as `u` (the clamp, `min`, `max`); `minimum` and
//! `maximum` send ties to `x`, as TF's masks do.
//!
//! TF's special case of `min = max = 0` (per channel: of a channel's) is
//! reproduced: the output is 0 and the upstream gradient goes to `inputs`
//! whole, none to the range.
//!
//! Each fake quantization is recorded in the graph (`ir::FakeQuant`: its
//! input, range and output), so an export can write TF Lite's
//! QUANTIZE/DEQUANTIZE boundary there instead of the arithmetic.
//!
//! Invariants: `num_bits` in 2..=16; `min`, `max` scalars (per channel:
//! `[d]`, `d` the last axis of `inputs`).

use specc_grammar::ast::Call;
use specc_grammar::{Code, Diagnostic};

use crate::ir::{BinaryOp, Dim, FakeQuant, NodeId, Shape, UnaryOp};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{Lowerer, R};

/// The integer range of a fake quantization: `num_bits` and
/// `narrow_range`, and `qmin = narrow_range ? 1 : 0`, `qmax = 2^num_bits − 1`.
#[derive(Clone, Copy)]
struct QuantRange {
    bits: u32,
    narrow: bool,
    qmin: f32,
    qmax: f32,
}

/// The [`QuantRange`] of `num_bits` (argument `bits_at`) and
/// `narrow_range` (argument `narrow_at`).
fn quant_range(b: &Bound, bits_at: usize, narrow_at: usize) -> R<QuantRange> {
    let bits = match b.get(bits_at) {
        Some(e) => {
            let n = args::eval_int(e)?;
            if !(2..=16).contains(&n) {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("num_bits must be between 2 and 16, got {n}"),
                )
                .with_label("out of range"));
            }
            n as u32
        }
        None => 8,
    };
    let narrow = b.flag(narrow_at)?;
    Ok(QuantRange {
        bits,
        narrow,
        qmin: if narrow { 1.0 } else { 0.0 },
        qmax: ((1u32 << bits) - 1) as f32,
    })
}

/// `stop_gradient(value) + (wrt − stop_gradient(wrt))`: `value` exactly,
/// with `wrt`'s gradient.
fn straight_through(lw: &mut Lowerer, value: NodeId, wrt: NodeId) -> NodeId {
    let v = lw.g.stop_gradient(value);
    let w = lw.g.stop_gradient(wrt);
    let zero = lw.g.sub(wrt, w);
    lw.g.add(v, zero)
}

/// How TF's kernel scales the clamped value into steps: `_vars` divides by
/// the scale, `_args` and `_per_channel` multiply by the inverse scale.
#[derive(Clone, Copy, PartialEq)]
enum Steps {
    DivideByScale,
    TimesInverse,
}

/// The fake quantization of `x` to `[min, max]` (scalars, or per channel
/// `[d]` over `x`'s last axis), as TF's kernel computes it.
fn fake_quant(
    lw: &mut Lowerer,
    x: NodeId,
    min: NodeId,
    max: NodeId,
    q: QuantRange,
    steps: Steps,
) -> NodeId {
    let (qmin, qmax) = (lw.g.scalar(q.qmin), lw.g.scalar(q.qmax));
    let levels = lw.g.scalar(q.qmax - q.qmin);
    let half = lw.g.scalar(0.5);
    // Nudge (on the stopped range; the bounds' gradients are min's and max's).
    let (smin, smax) = (lw.g.stop_gradient(min), lw.g.stop_gradient(max));
    let width = lw.g.sub(smax, smin);
    let scale = lw.g.div(width, levels);
    // TF recomputes the inverse rather than taking 1 / scale.
    let inv_scale = lw.g.div(levels, width);
    let min_over = lw.g.div(smin, scale);
    let zp_from_min = lw.g.sub(qmin, min_over);
    let shifted = lw.g.add(zp_from_min, half);
    let rounded = lw.g.unary(UnaryOp::Floor, shifted);
    let above = lw.g.binary(BinaryOp::Max, rounded, qmin);
    let zp = lw.g.binary(BinaryOp::Min, above, qmax);
    let lo = lw.g.sub(qmin, zp);
    let nudged_min = lw.g.mul(lo, scale);
    let hi = lw.g.sub(qmax, zp);
    let nudged_max = lw.g.mul(hi, scale);
    // quant_zero = floor(-nudged_min · inv_scale + 0.5).
    let neg_min = lw.g.unary(UnaryOp::Neg, nudged_min);
    let zero_steps = lw.g.mul(neg_min, inv_scale);
    let zero_half = lw.g.add(zero_steps, half);
    let quant_zero = lw.g.unary(UnaryOp::Floor, zero_half);
    let nmin = straight_through(lw, nudged_min, min);
    let nmax = straight_through(lw, nudged_max, max);
    // Clamp: ties go to x (TF's masks include the bounds).
    let below = lw.g.binary(BinaryOp::Min, x, nmax);
    let clamped = lw.g.binary(BinaryOp::Max, below, nmin);
    // floor(shifted / scale (or · inv_scale) − quant_zero + 0.5) · scale,
    // on the stopped value, in TF's order.
    let c = lw.g.stop_gradient(clamped);
    let cs = lw.g.sub(c, nudged_min);
    let scaled = match steps {
        Steps::DivideByScale => lw.g.div(cs, scale),
        Steps::TimesInverse => lw.g.mul(cs, inv_scale),
    };
    let centered = lw.g.sub(scaled, quant_zero);
    let rounded = lw.g.add(centered, half);
    let level = lw.g.unary(UnaryOp::Floor, rounded);
    let quantized = lw.g.mul(level, scale);
    let fake = straight_through(lw, quantized, clamped);
    // TF's special case: `min = max = 0` gives 0, and the whole gradient to
    // `inputs` (none to the range): `x − stop_gradient(x)`.
    let zero = lw.g.scalar(0.0);
    let min_zero = lw.g.binary(BinaryOp::Eq, smin, zero);
    let max_zero = lw.g.binary(BinaryOp::Eq, smax, zero);
    let both_zero = lw.g.mul(min_zero, max_zero);
    let stopped = lw.g.stop_gradient(x);
    let zeros = lw.g.sub(x, stopped);
    let output = lw.g.select(both_zero, zeros, fake);
    lw.g.fake_quants.push(FakeQuant {
        input: x,
        min,
        max,
        output,
        num_bits: q.bits,
        narrow_range: q.narrow,
        per_channel: lw.g.shape(min).rank() == 1,
    });
    output
}

/// `min` or `max` of the per-tensor forms: a scalar.
fn scalar_bound(lw: &mut Lowerer, e: &specc_grammar::ast::Expr, what: &str) -> R<NodeId> {
    let v = lw.float(e)?;
    if !lw.g.shape(v).is_scalar() {
        let s = lw.g.shape(v).clone();
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            e.span,
            format!("`{what}` of a per-tensor fake quantization is a scalar, got {s}"),
        )
        .with_label(format!("this is {s}"))
        .with_help("per-channel ranges: fake_quant_with_min_max_vars_per_channel"));
    }
    Ok(v)
}

/// `fake_quant_with_min_max_vars(inputs, min, max, num_bits = 8,
/// narrow_range = false)`: `min`, `max` scalars (variables, trained).
pub(super) fn with_min_max_vars(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let min = scalar_bound(lw, b.req(1), "min")?;
    let max = scalar_bound(lw, b.req(2), "max")?;
    let q = quant_range(b, 3, 4)?;
    Ok(fake_quant(lw, x, min, max, q, Steps::DivideByScale))
}

/// `fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits =
/// 8, narrow_range = false)`: `min`, `max` `[d]`, `d` the last axis.
pub(super) fn with_min_max_vars_per_channel(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let xs = lw.g.shape(x).clone();
    let d = match xs.0.last() {
        Some(Dim::Fixed(d)) => *d,
        _ => {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                b.req(0).span,
                format!("per-channel fake quantization needs a fixed last axis, got {xs}"),
            )
            .with_label(format!("this is {xs}")))
        }
    };
    let mut bounds = Vec::new();
    for (k, what) in [(1, "min"), (2, "max")] {
        let v = lw.float(b.req(k))?;
        let s = lw.g.shape(v).clone();
        if s != Shape(vec![Dim::Fixed(d)]) {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                b.req(k).span,
                format!("`{what}` must be [{d}], one per channel of the last axis, got {s}"),
            )
            .with_label(format!("this is {s}"))
            .with_secondary(c.span, format!("inputs are {xs}")));
        }
        bounds.push(v);
    }
    let q = quant_range(b, 3, 4)?;
    Ok(fake_quant(
        lw,
        x,
        bounds[0],
        bounds[1],
        q,
        Steps::TimesInverse,
    ))
}

/// `fake_quant_with_min_max_args(inputs, min = -6, max = 6, num_bits = 8,
/// narrow_range = false)`: a constant range (only `inputs` has a gradient).
pub(super) fn with_min_max_args(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let bound = |k: usize, default: f64| -> R<f32> {
        Ok(b.get(k)
            .map(args::eval_number)
            .transpose()?
            .unwrap_or(default) as f32)
    };
    let (lo, hi) = (bound(1, -6.0)?, bound(2, 6.0)?);
    if lo > hi || (lo == 0.0 && hi == 0.0) {
        let span = b.get(1).or(b.get(2)).map_or(b.call_span, |e| e.span);
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            span,
            format!("the range [{lo}, {hi}] is empty: min must be below max"),
        )
        .with_label("not a range"));
    }
    let min = lw.g.scalar(lo);
    let max = lw.g.scalar(hi);
    let q = quant_range(b, 3, 4)?;
    Ok(fake_quant(lw, x, min, max, q, Steps::TimesInverse))
}
