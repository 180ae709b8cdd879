//! The activation functions of `tf.nn` that are not primitive ops:
//! `leaky_relu`, `elu`, `selu`, `gelu` (exact and tanh forms), `silu`,
//! `swish`, `softsign`, `relu6`.
//!
//! Owns: each activation's lowering to primitive ops (select, comparisons,
//! exp, tanh, sigmoid, abs), written so that the primitives' VJP rules give
//! TF's gradient, including at the kinks: a kink is a `select` whose branch
//! at the kink is the one TF's gradient kernel takes there (`EluGrad` and
//! `SeluGrad` test `features < 0`, `LeakyReluGrad` and `Relu6Grad`
//! `features > 0`, `Relu6Grad` also `features < 6`).
//!
//! Invariant: the forward values are TF's kernels' float32 expressions
//! (`exp(x) − 1` as Eigen's `Elu`/`Selu`, not `expm1`); `gelu`'s exact form
//! uses an erfc of relative error below 1.2e-7 (Numerical Recipes' Chebyshev
//! fit), since the IR has no `erf`.

use specc_grammar::ast::Call;

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use crate::ir::{BinaryOp, NodeId, UnaryOp};

/// An optional number argument, or its default.
fn number(b: &Bound, i: usize, default: f64) -> R<f32> {
    match b.get(i) {
        Some(e) if !args::is_none(e) => Ok(args::eval_number(e)? as f32),
        _ => Ok(default as f32),
    }
}

/// `tf.nn.leaky_relu(features, alpha=0.2)`: `x > 0 ? x : alpha·x`.
pub fn leaky_relu(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let alpha = number(b, 1, 0.2)?;
    let zero = lw.g.scalar(0.0);
    let positive = lw.g.binary(BinaryOp::Gt, x, zero);
    let scaled = lw.g.scale(x, alpha);
    Ok(lw.g.select(positive, x, scaled))
}

/// `exp(x) − 1` for the negative side of ELU and SELU.
fn exp_minus_one(lw: &mut Lowerer, x: NodeId) -> NodeId {
    let e = lw.g.unary(UnaryOp::Exp, x);
    let one = lw.g.scalar(1.0);
    lw.g.sub(e, one)
}

/// `tf.nn.elu(features)`: `x < 0 ? exp(x) − 1 : x`.
pub fn elu(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let zero = lw.g.scalar(0.0);
    let negative = lw.g.binary(BinaryOp::Lt, x, zero);
    let e = exp_minus_one(lw, x);
    Ok(lw.g.select(negative, e, x))
}

/// `tf.nn.selu(features)`: `x < 0 ? scale·alpha·(exp(x) − 1) : scale·x`,
/// with TF's constants.
pub fn selu(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    const SCALE: f32 = 1.050_701;
    const SCALE_ALPHA: f32 = 1.758_099_3;
    let x = lw.float(b.req(0))?;
    let zero = lw.g.scalar(0.0);
    let negative = lw.g.binary(BinaryOp::Lt, x, zero);
    let e = exp_minus_one(lw, x);
    let neg = lw.g.scale(e, SCALE_ALPHA);
    let pos = lw.g.scale(x, SCALE);
    Ok(lw.g.select(negative, neg, pos))
}

/// `erfc(z)` for `z ≥ 0` (Numerical Recipes' `erfcc`, relative error below
/// 1.2e-7): `t·exp(−z² + P(t))`, `t = 1 / (1 + z/2)`.
fn erfc_nonnegative(lw: &mut Lowerer, z: NodeId) -> NodeId {
    // Numerical Recipes' coefficients, digit for digit.
    #[allow(clippy::excessive_precision)]
    const P: [f32; 10] = [
        -1.265_512_2,
        1.000_023_7,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_9,
        1.488_515_9,
        -0.822_152_23,
        0.170_872_77,
    ];
    let one = lw.g.scalar(1.0);
    let half_z = lw.g.scale(z, 0.5);
    let denom = lw.g.add(one, half_z);
    let t = lw.g.div(one, denom);
    // Horner from the highest coefficient.
    let mut p = lw.g.scalar(P[9]);
    for &c in P[..9].iter().rev() {
        let pt = lw.g.mul(p, t);
        let c = lw.g.scalar(c);
        p = lw.g.add(pt, c);
    }
    let z2 = lw.g.mul(z, z);
    let arg = lw.g.sub(p, z2);
    let e = lw.g.unary(UnaryOp::Exp, arg);
    lw.g.mul(t, e)
}

/// `tf.nn.gelu(features, approximate=False)`: `0.5·x·(1 + erf(x/√2))`;
/// with `approximate = true`, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let approximate = match b.get(1) {
        Some(e) if !args::is_none(e) => args::eval_bool(e)?,
        _ => false,
    };
    let half_x = lw.g.scale(x, 0.5);
    let one = lw.g.scalar(1.0);
    let factor = if approximate {
        let x2 = lw.g.mul(x, x);
        let x3 = lw.g.mul(x2, x);
        let cubic = lw.g.scale(x3, 0.044_715);
        let inner = lw.g.add(x, cubic);
        let inner = lw.g.scale(inner, 0.797_884_6);
        let th = lw.g.unary(UnaryOp::Tanh, inner);
        lw.g.add(one, th)
    } else {
        // 1 + erf(z) = erfc(−z): erfc(|z|) for z < 0, 2 − erfc(|z|) otherwise.
        let z = lw.g.scale(x, std::f32::consts::FRAC_1_SQRT_2);
        let az = lw.g.unary(UnaryOp::Abs, z);
        let q = erfc_nonnegative(lw, az);
        let two = lw.g.scalar(2.0);
        let upper = lw.g.sub(two, q);
        let zero = lw.g.scalar(0.0);
        let negative = lw.g.binary(BinaryOp::Lt, x, zero);
        lw.g.select(negative, q, upper)
    };
    Ok(lw.g.mul(half_x, factor))
}

/// `x·sigmoid(beta·x)`.
fn swish_of(lw: &mut Lowerer, x: NodeId, beta: f32) -> NodeId {
    let bx = if beta == 1.0 { x } else { lw.g.scale(x, beta) };
    let s = lw.g.unary(UnaryOp::Sigmoid, bx);
    lw.g.mul(x, s)
}

/// `tf.nn.silu(features)` = `tf.nn.swish(features)`: `x·sigmoid(x)`.
pub fn silu(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    Ok(swish_of(lw, x, 1.0))
}

/// `tf.nn.swish(features, beta=1.0)`: `x·sigmoid(beta·x)`.
pub fn swish(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let beta = number(b, 1, 1.0)?;
    Ok(swish_of(lw, x, beta))
}

/// `tf.nn.softsign(features)`: `x / (1 + |x|)`.
pub fn softsign(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let a = lw.g.unary(UnaryOp::Abs, x);
    let one = lw.g.scalar(1.0);
    let d = lw.g.add(one, a);
    Ok(lw.g.div(x, d))
}

/// `tf.nn.relu6(features)`: `min(max(x, 0), 6)` with the gradient 1 only
/// on `0 < x < 6` (TF's `Relu6Grad`).
pub fn relu6(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let zero = lw.g.scalar(0.0);
    let six = lw.g.scalar(6.0);
    let below_six = lw.g.binary(BinaryOp::Lt, x, six);
    let capped = lw.g.select(below_six, x, six);
    let positive = lw.g.binary(BinaryOp::Gt, x, zero);
    Ok(lw.g.select(positive, capped, zero))
}
