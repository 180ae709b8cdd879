//! Rewrite rules: local simplifications, one per row.
//!
//! Each rule looks at an op and its (already rewritten) inputs and may return
//! an equivalent existing or new node. Rules are IEEE-exact: they never change
//! a result bit of what the compiled step would compute (no `x * 0 -> 0`, no
//! `x + 0 -> x`).
//!
//! Constant folding ([`fold`]) evaluates an op at compile time only where the
//! compiled code computes the same IEEE operation on the same bits:
//!
//! | op | folded | why |
//! |---|---|---|
//! | neg, abs, square, sqrt, recip, add, sub, mul, div | yes | one correctly rounded IEEE operation at run time (`fneg`, `fabs`, `x*x`, `sqrt`, `1/x`, ...) |
//! | maximum, minimum, comparisons, select | yes | the same comparison (`x >= y ? x : y`, ties to the first operand) |
//! | exp, log, log1p, sigmoid, tanh, softplus, pow, sin, cos | no | the step computes them with specc's own polynomials (`codegen::math`, `codegen::trig`), not libm |
//! | floor, ceil | no | the step goes through int32 and gives `+0` where IEEE gives `-0` |
//! | sign, relu, cast | no | not needed; left to the step |
//!
//! and never where an operand or the result is subnormal: the step runs with
//! denormals flushed to zero (as TF does), the compiler does not.
//! A fold that turns finite constants into inf or NaN is reported by sema
//! (`non-finite-constant`) before it gets here.

use crate::ir::{BinaryOp, Graph, NodeId, Op, Shape, UnaryOp};

/// The scalar value of a constant, looking through a broadcast.
pub fn constant(g: &Graph, x: NodeId) -> Option<f32> {
    let mut x = x;
    loop {
        match g.op(x) {
            Op::Scalar(b) => return Some(f32::from_bits(*b)),
            Op::BroadcastTo(_) => x = g.inputs_of(x)[0],
            _ => return None,
        }
    }
}

fn fold_unary(u: UnaryOp, a: f32) -> Option<f32> {
    Some(match u {
        UnaryOp::Neg => -a,
        UnaryOp::Abs => a.abs(),
        UnaryOp::Square => a * a,
        UnaryOp::Sqrt => a.sqrt(),
        UnaryOp::Recip => 1.0 / a,
        UnaryOp::Exp
        | UnaryOp::Log
        | UnaryOp::Log1p
        | UnaryOp::Sigmoid
        | UnaryOp::Tanh
        | UnaryOp::Softplus
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Sign
        | UnaryOp::Relu => return None,
    })
}

fn fold_binary(b: BinaryOp, a: f32, c: f32) -> Option<f32> {
    let t = |x: bool| if x { 1.0 } else { 0.0 };
    Some(match b {
        BinaryOp::Add => a + c,
        BinaryOp::Sub => a - c,
        BinaryOp::Mul => a * c,
        BinaryOp::Div => a / c,
        BinaryOp::Max => {
            if a >= c {
                a
            } else {
                c
            }
        }
        BinaryOp::Min => {
            if a <= c {
                a
            } else {
                c
            }
        }
        BinaryOp::Pow => return None,
        BinaryOp::Gt => t(a > c),
        BinaryOp::Ge => t(a >= c),
        BinaryOp::Lt => t(a < c),
        BinaryOp::Le => t(a <= c),
        BinaryOp::Eq => t(a == c),
        BinaryOp::Ne => t(a != c),
    })
}

/// The value of `op` applied to the constants `args`, when it is folded
/// (see the table above); `None` leaves the node to the step.
pub fn fold(op: &Op, args: &[f32]) -> Option<f32> {
    if args.iter().any(|a| a.is_subnormal()) {
        return None;
    }
    let v = match (op, args) {
        (Op::Unary(u), &[a]) => fold_unary(*u, a)?,
        (Op::Binary(b), &[a, c]) => fold_binary(*b, a, c)?,
        _ => return None,
    };
    (!v.is_subnormal()).then_some(v)
}

/// The folded value of an elementwise node whose operands are all constants.
pub fn folded_value(g: &Graph, op: &Op, inputs: &[NodeId]) -> Option<f32> {
    let args: Option<Vec<f32>> = inputs.iter().map(|&i| constant(g, i)).collect();
    fold(op, &args?)
}

/// A constant `v` of `shape` (a scalar, broadcast when needed).
fn filled(g: &mut Graph, v: f32, shape: &Shape) -> NodeId {
    g.fill(v, shape)
}

/// The scalar under a broadcast, if `x` is a broadcast scalar.
fn broadcast_scalar(g: &Graph, x: NodeId) -> Option<NodeId> {
    match g.op(x) {
        Op::BroadcastTo(_) if g.shape(g.inputs_of(x)[0]).is_scalar() => Some(g.inputs_of(x)[0]),
        _ => None,
    }
}

/// Tries every rule; `None` keeps the node as it is.
pub fn simplify(g: &mut Graph, op: &Op, inputs: &[NodeId], shape: &Shape) -> Option<NodeId> {
    // Elementwise ops on broadcast scalars compute the scalar once, then broadcast:
    // f(broadcast(a), broadcast(b)) = broadcast(f(a, b)).
    if op.is_elementwise() && !shape.is_scalar() {
        let scalars: Option<Vec<NodeId>> = inputs.iter().map(|&i| broadcast_scalar(g, i)).collect();
        if let Some(scalars) = scalars {
            let dt = match op {
                Op::Cast(t) => *t,
                _ => crate::ir::DType::F32,
            };
            let s = g.intern(op.clone(), scalars, dt, Shape::scalar());
            return Some(g.broadcast_to(s, shape));
        }
    }
    // Any view of a broadcast scalar is a broadcast of that scalar.
    if matches!(op, Op::Slice { .. } | Op::Transpose(_) | Op::Reshape(_)) {
        if let Some(sc) = broadcast_scalar(g, inputs[0]) {
            return Some(g.broadcast_to(sc, shape));
        }
    }
    match op {
        // stop_gradient has done its job once autodiff has run.
        Op::StopGradient => Some(inputs[0]),

        Op::Unary(u) => {
            let x = inputs[0];
            if let Some(c) = folded_value(g, op, inputs) {
                return Some(filled(g, c, shape));
            }
            // neg(neg(x)) = x
            if *u == UnaryOp::Neg {
                if let Op::Unary(UnaryOp::Neg) = g.op(x) {
                    return Some(g.inputs_of(x)[0]);
                }
            }
            None
        }

        Op::Binary(b) => {
            let (x, y) = (inputs[0], inputs[1]);
            if let Some(c) = folded_value(g, op, inputs) {
                return Some(filled(g, c, shape));
            }
            let (cx, cy) = (constant(g, x), constant(g, y));
            match (b, cx, cy) {
                // x * 1 = x, 1 * x = x, x / 1 = x, x - 0 = x
                (BinaryOp::Mul, _, Some(1.0)) => Some(x),
                (BinaryOp::Mul, Some(1.0), _) => Some(y),
                (BinaryOp::Div, _, Some(1.0)) => Some(x),
                (BinaryOp::Sub, _, Some(v)) if v == 0.0 && v.is_sign_positive() => Some(x),
                // x * -1 = -x
                (BinaryOp::Mul, _, Some(-1.0)) => Some(g.neg(x)),
                (BinaryOp::Mul, Some(-1.0), _) => Some(g.neg(y)),
                // x - (-y) = x + y ; x + (-y) = x - y
                (BinaryOp::Sub, _, _) if matches!(g.op(y), Op::Unary(UnaryOp::Neg)) => {
                    let inner = g.inputs_of(y)[0];
                    Some(g.add(x, inner))
                }
                (BinaryOp::Add, _, _) if matches!(g.op(y), Op::Unary(UnaryOp::Neg)) => {
                    let inner = g.inputs_of(y)[0];
                    Some(g.sub(x, inner))
                }
                _ => None,
            }
        }

        Op::Select => {
            let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
            if a == b {
                return Some(a);
            }
            match constant(g, c) {
                // A subnormal condition is 0 in the step (denormals are zero).
                Some(v) if v.is_subnormal() => None,
                Some(v) if v != 0.0 => Some(a),
                Some(_) => Some(b),
                None => None,
            }
        }

        Op::BroadcastTo(to) => {
            let x = inputs[0];
            if g.shape(x) == to {
                return Some(x);
            }
            // broadcast(broadcast(x)) = broadcast(x); broadcast(reshape(scalar)) = broadcast(scalar)
            let reshaped_scalar =
                matches!(g.op(x), Op::Reshape(_)) && g.shape(g.inputs_of(x)[0]).is_scalar();
            if matches!(g.op(x), Op::BroadcastTo(_)) || reshaped_scalar {
                let inner = g.inputs_of(x)[0];
                return Some(g.broadcast_to(inner, to));
            }
            None
        }

        Op::Reshape(to) => {
            let x = inputs[0];
            match g.op(x) {
                // reshape(reshape(x)) = reshape(x)
                Op::Reshape(_) => {
                    let inner = g.inputs_of(x)[0];
                    Some(g.reshape(inner, to))
                }
                // A reshaped constant stays a constant.
                Op::Scalar(_) => None,
                _ if g.shape(x) == to => Some(x),
                _ => None,
            }
        }

        Op::Transpose(perm) => {
            let x = inputs[0];
            if let Op::Transpose(inner_perm) = g.op(x) {
                let composed: Vec<usize> = perm
                    .iter()
                    .map(|&p| inner_perm[p as usize] as usize)
                    .collect();
                let inner = g.inputs_of(x)[0];
                return Some(g.transpose(inner, &composed));
            }
            None
        }

        // A slice that is exactly one part of a concatenation: the part.
        // A slice of a zero padding: the padded value (re-padded to the
        // slice) when the slice holds all of it; a slice of a sum of such
        // paddings, the sum of their slices. (The cotangent of a tape a
        // recurrence's backward loop reads only the state fields of.)
        Op::Slice { begin, .. } => {
            let x = inputs[0];
            match g.op(x) {
                Op::Pad { .. } => slice_of_pad(g, x, begin, shape),
                Op::Concat { axis } => part_of_concat(g, x, usize::from(*axis), begin, shape),
                Op::Binary(BinaryOp::Add) => {
                    let (a, b) = (g.inputs_of(x)[0], g.inputs_of(x)[1]);
                    let sa = slice_of_pad(g, a, begin, shape)?;
                    let sb = slice_of_pad(g, b, begin, shape)?;
                    Some(g.add(sa, sb))
                }
                _ => None,
            }
        }

        // Reducing only size-1 axes is a reshape.
        Op::Reduce { axes, .. } => {
            let x = inputs[0];
            let xs = g.shape(x).clone();
            if axes
                .iter()
                .all(|&a| xs.0[a as usize] == crate::ir::Dim::Fixed(1))
            {
                return Some(g.reshape(x, shape));
            }
            None
        }

        _ => None,
    }
}

/// `slice(pad(v))` over `begin`/`shape` as a padding of `v` itself (or `v`),
/// when `pad` is a zero padding whose value lies inside the slice on every
/// axis; `None` otherwise. Exact: the slice reads `v`'s elements and zeros.
fn slice_of_pad(g: &mut Graph, pad: NodeId, begin: &[u32], shape: &Shape) -> Option<NodeId> {
    let Op::Pad { before, .. } = g.op(pad).clone() else {
        return None;
    };
    let v = g.inputs_of(pad)[0];
    let vs = g.shape(v).clone();
    let mut inner = Vec::with_capacity(before.len());
    for (axis, (&b, &at)) in before.iter().zip(begin).enumerate() {
        let (d, out) = (vs.0[axis], shape.0[axis]);
        match (d, out) {
            (crate::ir::Dim::Fixed(d), crate::ir::Dim::Fixed(out)) => {
                if b < at || b + d > at + out {
                    return None;
                }
                inner.push(b - at);
            }
            (crate::ir::Dim::Batch, crate::ir::Dim::Batch) if b == 0 && at == 0 => inner.push(0),
            _ => return None,
        }
    }
    Some(g.pad(v, &inner, shape))
}

/// `slice(concat(parts))` that is exactly one of the parts: that part.
fn part_of_concat(
    g: &Graph,
    concat: NodeId,
    axis: usize,
    begin: &[u32],
    shape: &Shape,
) -> Option<NodeId> {
    let whole = g.shape(concat);
    let others_whole = (0..whole.rank())
        .filter(|&a| a != axis)
        .all(|a| begin[a] == 0 && shape.0[a] == whole.0[a]);
    if !others_whole {
        return None;
    }
    let mut at = 0u32;
    for &part in g.inputs_of(concat) {
        let ps = g.shape(part);
        let len = ps.0[axis].fixed()?;
        if at == begin[axis] && ps == shape {
            return Some(part);
        }
        at += len;
    }
    None
}
