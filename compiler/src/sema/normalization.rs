//! The normalizations of `tf.nn` as composites of primitive ops: `moments`
//! (its two results as `moments_mean` and `moments_variance`, since a
//! binding names one value), `batch_normalization`, `fused_batch_norm`
//! (its three results as `fused_batch_norm`, `fused_batch_norm_mean` and
//! `fused_batch_norm_variance`), `rsqrt` (for layer normalization written
//! out) and `local_response_normalization`.
//!
//! Owns: each lowering, in TF's op order: `moments` takes the variance as
//! the mean of `(x − stop_gradient(mean))²`; `batch_normalization` computes
//! `inv = rsqrt(variance + ε)·scale`, `x·inv + (offset − mean·inv)`;
//! `fused_batch_norm` normalizes with the biased batch variance, returns the
//! unbiased one (×n/(n−1)) and, with `exponential_avg_factor` f ≠ 1,
//! `(1 − f)·old + f·batch`; its gradient flows only through `y` (the mean
//! and variance outputs, and in inference the given statistics, are
//! `stop_gradient`); its `epsilon` is raised to TF's minimum 1.001e-5.
//! `local_response_normalization` sums the squares over the channel window
//! as shifted slices of the zero-padded squares.
//!
//! Invariant: every shape is checked here with a caret diagnostic before
//! a node is built.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use crate::ir::{shape, Dim, NodeId, Shape, UnaryOp};

/// An optional number argument (absent or `None`: the default).
fn number(b: &Bound, i: usize, default: f64) -> R<f64> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => args::eval_number(e),
        _ => Ok(default),
    }
}

/// An optional `true`/`false` argument.
fn boolean(b: &Bound, i: usize, default: bool) -> R<bool> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => args::eval_bool(e),
        _ => Ok(default),
    }
}

/// A number argument that must be finite and at least `min`.
fn at_least(b: &Bound, i: usize, default: f64, min: f64, what: &str) -> R<f32> {
    let v = number(b, i, default)?;
    if !v.is_finite() || v < min {
        let e = b.req(i);
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be a finite number of at least {min}, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v as f32)
}

/// An optional tensor argument (absent or `None`: no tensor).
fn optional_tensor(lw: &mut Lowerer, b: &Bound, i: usize) -> R<Option<NodeId>> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => Ok(Some(lw.float(e)?)),
        _ => Ok(None),
    }
}

/// `1 / sqrt(x)`.
fn rsqrt_of(lw: &mut Lowerer, x: NodeId) -> NodeId {
    let s = lw.g.unary(UnaryOp::Sqrt, x);
    lw.g.unary(UnaryOp::Recip, s)
}

/// `tf.math.rsqrt(x)`.
pub fn rsqrt(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    Ok(rsqrt_of(lw, x))
}

/// The mean and the (biased) variance of `x` over `axes`, both with the
/// reduced axes kept as 1 (TF's `moments` with `keepdims=True`).
fn moments_kept(lw: &mut Lowerer, x: NodeId, axes: &[usize]) -> (NodeId, NodeId) {
    let s = lw.g.shape(x).clone();
    let kept = shape::reduce_keepdims(&s, axes);
    let mean = lw.g.reduce_mean(x, axes);
    let mean = lw.g.reshape(mean, &kept);
    let centred = lw.g.stop_gradient(mean);
    let d = lw.g.sub(x, centred);
    let sq = lw.g.unary(UnaryOp::Square, d);
    let var = lw.g.reduce_mean(sq, axes);
    let var = lw.g.reshape(var, &kept);
    (mean, var)
}

/// `tf.nn.moments(x, axes, shift=None, keepdims=False)`: the mean
/// (`which = 0`) or the variance (`which = 1`).
fn moments(lw: &mut Lowerer, b: &Bound, which: usize) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axes = lw.axes(Some(b.req(1)), s.rank())?;
    if axes.is_empty() {
        return Err(Diagnostic::new(
            Code::BadAxis,
            b.req(1).span,
            "moments needs at least one axis to reduce",
        )
        .with_label("no axes"));
    }
    // `shift` is accepted and unused, as in TF 2.
    let keepdims = boolean(b, 3, false)?;
    let (mean, var) = moments_kept(lw, x, &axes);
    let r = if which == 0 { mean } else { var };
    if keepdims {
        Ok(r)
    } else {
        let out = shape::reduce(&s, &axes);
        Ok(lw.g.reshape(r, &out))
    }
}

pub fn moments_mean(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    moments(lw, b, 0)
}

pub fn moments_variance(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    moments(lw, b, 1)
}

/// Checks that `y` (the argument `ey`) broadcasts to `x`'s shape exactly.
fn check_to(lw: &Lowerer, x: NodeId, y: NodeId, ey: &Expr, what: &str) -> R<()> {
    let (sx, sy) = (lw.g.shape(x), lw.g.shape(y));
    if shape::broadcast(sx, sy).map(|r| &r == sx).unwrap_or(false) {
        return Ok(());
    }
    Err(Diagnostic::new(
        Code::BroadcastShape,
        ey.span,
        format!("the {what} {sy} does not broadcast to the input's shape {sx}"),
    )
    .with_label(format!("this is {sy}"))
    .with_help("broadcasting aligns shapes from the right; each dimension must match or be 1"))
}

/// `tf.nn.batch_normalization(x, mean, variance, offset, scale,
/// variance_epsilon)`: `inv = rsqrt(variance + ε)` (times `scale`), then
/// `x·inv + (offset − mean·inv)`.
pub fn batch_normalization(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let mean = lw.float(b.req(1))?;
    check_to(lw, x, mean, b.req(1), "mean")?;
    let variance = lw.float(b.req(2))?;
    check_to(lw, x, variance, b.req(2), "variance")?;
    let offset = optional_tensor(lw, b, 3)?;
    if let Some(o) = offset {
        check_to(lw, x, o, b.req(3), "offset")?;
    }
    let scale = optional_tensor(lw, b, 4)?;
    if let Some(s) = scale {
        check_to(lw, x, s, b.req(4), "scale")?;
    }
    let eps = at_least(b, 5, 0.0, 0.0, "variance_epsilon")?;
    let eps = lw.g.scalar(eps);
    let ve = lw.g.add(variance, eps);
    let mut inv = rsqrt_of(lw, ve);
    if let Some(s) = scale {
        inv = lw.g.mul(inv, s);
    }
    let mi = lw.g.mul(mean, inv);
    let shift = match offset {
        Some(o) => lw.g.sub(o, mi),
        None => lw.g.neg(mi),
    };
    let xi = lw.g.mul(x, inv);
    Ok(lw.g.add(xi, shift))
}

/// TF's smallest `fused_batch_norm` epsilon: smaller values are raised to it.
const MIN_FUSED_EPSILON: f64 = 1.001e-5;

/// `tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean=None,
/// variance=None, epsilon=0.001, is_training=True,
/// exponential_avg_factor=1.0)` (NHWC: channels last): `y` (`which = 0`),
/// the returned mean (1) or the returned variance (2).
pub(super) fn fused_batch_norm(lw: &mut Lowerer, b: &Bound, c: &Call, which: usize) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    if !(4..=5).contains(&s.rank()) {
        return Err(Diagnostic::new(
            Code::BadShape,
            b.req(0).span,
            format!("fused_batch_norm needs an input of rank 4 or 5 (NHWC), but this is {s}"),
        )
        .with_label(format!("rank {}", s.rank())));
    }
    let channels = match s.0[s.rank() - 1] {
        Dim::Fixed(n) => n,
        Dim::Batch => {
            return Err(Diagnostic::new(
                Code::BadShape,
                b.req(0).span,
                "fused_batch_norm needs a fixed number of channels (the last axis)",
            )
            .with_label(format!("this is {s}")))
        }
    };
    let vector = Shape(vec![Dim::Fixed(channels)]);
    let channel_arg = |lw: &mut Lowerer, i: usize, what: &str| -> R<Option<NodeId>> {
        let Some(e) = b.get(i).filter(|e| !args::is_none(e)) else {
            return Ok(None);
        };
        let t = lw.float(e)?;
        let ts = lw.g.shape(t);
        if ts != &vector {
            return Err(Diagnostic::new(
                Code::BadShape,
                e.span,
                format!("the {what} must be {vector}, one value per channel, but this is {ts}"),
            )
            .with_label(format!("this is {ts}"))
            .with_secondary(b.req(0).span, format!("the input is {s}")));
        }
        Ok(Some(t))
    };
    let scale = channel_arg(lw, 1, "scale")?.expect("required");
    let offset = channel_arg(lw, 2, "offset")?.expect("required");
    let mean_in = channel_arg(lw, 3, "mean")?;
    let var_in = channel_arg(lw, 4, "variance")?;
    let eps = at_least(b, 5, 0.001, 0.0, "epsilon")?.max(MIN_FUSED_EPSILON as f32);
    let training = boolean(b, 6, true)?;
    let factor = number(b, 7, 1.0)?;
    if !(0.0..=1.0).contains(&factor) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(7).span,
            format!("exponential_avg_factor must be in [0, 1], got {factor}"),
        )
        .with_label("out of range"));
    }
    let needs_stats = !training || factor != 1.0;
    let (mean_in, var_in) = match (mean_in, var_in) {
        (Some(m), Some(v)) => (Some(m), Some(v)),
        _ if needs_stats => {
            return Err(Diagnostic::new(
                Code::MissingArgument,
                c.span,
                if training {
                    "fused_batch_norm with exponential_avg_factor != 1 needs `mean` and `variance` (the running statistics)"
                } else {
                    "fused_batch_norm with is_training = false needs `mean` and `variance`"
                },
            )
            .with_label("mean and variance missing"))
        }
        _ => (None, None),
    };
    let axes: Vec<usize> = (0..s.rank() - 1).collect();
    let eps = lw.g.scalar(eps);
    let normalize = |lw: &mut Lowerer, mean: NodeId, var: NodeId| -> NodeId {
        let centred = lw.g.sub(x, mean);
        let ve = lw.g.add(var, eps);
        let inv = rsqrt_of(lw, ve);
        let factor = lw.g.mul(inv, scale);
        let scaled = lw.g.mul(centred, factor);
        lw.g.add(scaled, offset)
    };
    if !training {
        let (m, v) = (mean_in.expect("checked"), var_in.expect("checked"));
        let (m, v) = (lw.g.stop_gradient(m), lw.g.stop_gradient(v));
        return Ok(match which {
            0 => normalize(lw, m, v),
            1 => m,
            _ => v,
        });
    }
    let (mean, var) = moments_kept(lw, x, &axes);
    if which == 0 {
        let mean = lw.g.reshape(mean, &vector);
        let var = lw.g.reshape(var, &vector);
        return Ok(normalize(lw, mean, var));
    }
    let stat = if which == 1 {
        let m = lw.g.reshape(mean, &vector);
        lw.g.stop_gradient(m)
    } else {
        let v = lw.g.reshape(var, &vector);
        let v = lw.g.stop_gradient(v);
        // n / (n − 1) with n the count of each channel's values.
        let n = lw.g.count(&s, &axes);
        let one = lw.g.scalar(1.0);
        let n1 = lw.g.sub(n, one);
        let bessel = lw.g.div(n, n1);
        lw.g.mul(v, bessel)
    };
    if factor == 1.0 {
        return Ok(stat);
    }
    let old = if which == 1 { mean_in } else { var_in }.expect("checked");
    let old = lw.g.stop_gradient(old);
    let kept = lw.g.scale(old, (1.0 - factor) as f32);
    let new = lw.g.scale(stat, factor as f32);
    Ok(lw.g.add(kept, new))
}

pub fn fused_batch_norm_y(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    fused_batch_norm(lw, b, c, 0)
}

pub fn fused_batch_norm_mean(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    fused_batch_norm(lw, b, c, 1)
}

pub fn fused_batch_norm_variance(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    fused_batch_norm(lw, b, c, 2)
}

/// `tf.nn.local_response_normalization(input, depth_radius=5, bias=1,
/// alpha=1, beta=0.5)`: `input / (bias + alpha·sqr_sum)^beta`, `sqr_sum`
/// the sum of squares over channels `d − r ..= d + r` (NHWC).
pub fn local_response_normalization(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    if s.rank() != 4 {
        return Err(Diagnostic::new(
            Code::BadShape,
            b.req(0).span,
            format!("local_response_normalization needs a 4-D input (NHWC), but this is {s}"),
        )
        .with_label(format!("rank {}", s.rank())));
    }
    let Dim::Fixed(channels) = s.0[3] else {
        return Err(Diagnostic::new(
            Code::BadShape,
            b.req(0).span,
            "local_response_normalization needs a fixed number of channels (the last axis)",
        )
        .with_label(format!("this is {s}")));
    };
    let radius = match b.get(1).filter(|e| !args::is_none(e)) {
        Some(e) => {
            let r = args::eval_int(e)?;
            if !(0..=1 << 16).contains(&r) {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("depth_radius must be between 0 and 65536, got {r}"),
                )
                .with_label("out of range"));
            }
            r as u32
        }
        None => 5,
    };
    let bias = number(b, 2, 1.0)? as f32;
    let alpha = number(b, 3, 1.0)? as f32;
    let beta = number(b, 4, 0.5)? as f32;
    for (i, v) in [(2, bias), (3, alpha), (4, beta)] {
        if !v.is_finite() {
            return Err(Diagnostic::new(
                Code::ArgumentOutOfRange,
                b.req(i).span,
                format!("the argument must be a finite float32, got {v}"),
            )
            .with_label("not finite"));
        }
    }
    let sq = lw.g.unary(UnaryOp::Square, x);
    // Only offsets that reach a real channel contribute.
    let reach = radius.min(channels.saturating_sub(1));
    let mut wide = s.clone();
    wide.0[3] = Dim::Fixed(channels + 2 * reach);
    let padded = lw.g.pad(sq, &[0, 0, 0, reach], &wide);
    let mut sum = None;
    for k in 0..=2 * reach {
        let part = lw.g.slice(padded, &[0, 0, 0, k], &s);
        sum = Some(match sum {
            None => part,
            Some(acc) => lw.g.add(acc, part),
        });
    }
    let sum = sum.expect("at least one offset");
    let scaled = lw.g.scale(sum, alpha);
    let bias = lw.g.scalar(bias);
    let base = lw.g.add(bias, scaled);
    let factor = if beta == 0.5 {
        rsqrt_of(lw, base)
    } else if beta == 1.0 {
        lw.g.unary(UnaryOp::Recip, base)
    } else {
        let l = lw.g.unary(UnaryOp::Log, base);
        let e = lw.g.scale(l, -beta);
        lw.g.unary(UnaryOp::Exp, e)
    };
    Ok(lw.g.mul(x, factor))
}

/// `layer_normalization(x, gamma, beta, epsilon=0.001, axis=-1)` (Keras's
/// `LayerNormalization`): the moments of each example over `axis` (an int or
/// a list), then `(x − mean)·rsqrt(variance + ε)·gamma + beta`, written out
/// as TF's layer-normalization case of `conv.json` computes it; `gamma` and
/// `beta` broadcast to `x` (`None` for neither).
pub fn layer_normalization(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let gamma = optional_tensor(lw, b, 1)?;
    if let Some(g) = gamma {
        check_to(lw, x, g, b.req(1), "gamma")?;
    }
    let beta = optional_tensor(lw, b, 2)?;
    if let Some(o) = beta {
        check_to(lw, x, o, b.req(2), "beta")?;
    }
    let eps = at_least(b, 3, 0.001, 0.0, "epsilon")?;
    let axes = match b.get(4).filter(|e| !args::is_none(e)) {
        Some(e) => lw.axes(Some(e), s.rank())?,
        None => vec![s.rank().saturating_sub(1)],
    };
    if axes.is_empty() || s.rank() == 0 {
        return Err(Diagnostic::new(
            Code::BadAxis,
            b.get(4).map_or(b.call_span, |e| e.span),
            "layer_normalization needs an axis to normalize over",
        )
        .with_label("no axis"));
    }
    let (mean, var) = moments_kept(lw, x, &axes);
    let centred = lw.g.sub(x, mean);
    let eps = lw.g.scalar(eps);
    let ve = lw.g.add(var, eps);
    let inv = rsqrt_of(lw, ve);
    let mut y = lw.g.mul(centred, inv);
    if let Some(g) = gamma {
        y = lw.g.mul(y, g);
    }
    if let Some(o) = beta {
        y = lw.g.add(y, o);
    }
    Ok(y)
}
