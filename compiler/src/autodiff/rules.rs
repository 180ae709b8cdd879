//! The vector-Jacobian product of every op, in one table.
//!
//! Given a node `y = op(x0, x1, ..)` and the cotangent `ct` of `y`, each rule
//! returns one optional cotangent per input (`None`: no contribution). The
//! formulas follow TensorFlow's registered gradients (`math_grad.py`,
//! `nn_grad.py`, `array_grad.py`) so results agree with `tf.gradients`.
//!
//! Invariant: [`rule`] is the single source: an op is differentiable exactly
//! when it has an entry there; [`vjp`] builds that entry and
//! [`is_not_differentiable`] only looks it up.

use crate::ir::{shape, BinaryOp, DType, Graph, Node, NodeId, Op, ReduceKind, Shape, UnaryOp};

pub enum Rule {
    /// One entry per input.
    Cotangents(Vec<Option<NodeId>>),
    /// The op has no gradient (argmax, comparisons, casts from int).
    NotDifferentiable,
}

/// A VJP ready to build: given the graph, the node's value `y` and its
/// cotangent `ct`, one optional cotangent per input.
pub type Vjp<'n> = Box<dyn FnOnce(&mut Graph, NodeId, NodeId) -> Vec<Option<NodeId>> + 'n>;

fn vjp_of<'n>(
    f: impl FnOnce(&mut Graph, NodeId, NodeId) -> Vec<Option<NodeId>> + 'n,
) -> Option<Vjp<'n>> {
    Some(Box::new(f))
}

/// The VJP of node `y` given its cotangent `ct`.
pub fn vjp(g: &mut Graph, y: NodeId, ct: NodeId) -> Rule {
    let node = g.node(y).clone();
    let Some(build) = rule(&node) else {
        return Rule::NotDifferentiable;
    };
    Rule::Cotangents(build(g, y, ct))
}

/// Whether the op at `n` has no gradient rule.
pub fn is_not_differentiable(g: &Graph, n: NodeId) -> bool {
    rule(g.node(n)).is_none()
}

/// The table: the VJP of `node`'s op, or `None` for the ops without a
/// gradient (TF registers none, or `NotDifferentiable`).
pub fn rule(node: &Node) -> Option<Vjp<'_>> {
    let x = |i: usize| node.inputs[i];
    let one = |v: NodeId| vec![Some(v)];
    match &node.op {
        Op::Input(_)
        | Op::Var(_)
        | Op::Scalar(_)
        | Op::Tensor(_)
        | Op::Iota { .. }
        | Op::BatchSize
        | Op::GlobalStep
        | Op::FirstRow
        | Op::Training => vjp_of(|_, _, _| vec![]),

        // The ops without a gradient.
        Op::Binary(
            BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Eq | BinaryOp::Ne,
        )
        | Op::Cast(_)
        | Op::UniformHash { .. }
        | Op::ArgMax { .. }
        // Only the optimizer stage builds these, after differentiation.
        | Op::FirstOccurrence { .. }
        | Op::SumDuplicates
        | Op::ScatterRows
        // No second derivatives through the backward time loop.
        | Op::RecurrenceGrad { .. } => None,

        Op::Recurrence { .. } => vjp_of(move |g, y, ct| super::recurrence::vjp(g, node, y, ct)),

        Op::Unary(u) => vjp_of(move |g, y, ct| {
            let x0 = x(0);
            let d = match u {
                UnaryOp::Neg => g.neg(ct),
                UnaryOp::Exp => g.mul(ct, y),
                UnaryOp::Log => {
                    let r = g.unary(UnaryOp::Recip, x0);
                    g.mul(ct, r)
                }
                UnaryOp::Log1p => {
                    let one = g.scalar(1.0);
                    let xp1 = g.add(one, x0);
                    let r = g.unary(UnaryOp::Recip, xp1);
                    g.mul(ct, r)
                }
                UnaryOp::Sqrt => {
                    // TF SqrtGrad: dy * 0.5 / y
                    let half = g.scale(ct, 0.5);
                    g.div(half, y)
                }
                UnaryOp::Square => {
                    let two_x = g.scale(x0, 2.0);
                    g.mul(ct, two_x)
                }
                UnaryOp::Abs => {
                    let s = g.unary(UnaryOp::Sign, x0);
                    g.mul(ct, s)
                }
                // TF registers None for these: piecewise constant.
                UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil => return vec![None],
                UnaryOp::Sin => {
                    let c = g.unary(UnaryOp::Cos, x0);
                    g.mul(ct, c)
                }
                UnaryOp::Cos => {
                    // TF _CosGrad: -grad * sin(x)
                    let s = g.unary(UnaryOp::Sin, x0);
                    let n = g.neg(ct);
                    g.mul(n, s)
                }
                UnaryOp::Relu => {
                    // TF ReluGrad: dy where y > 0, else 0 (so 0 at x == 0).
                    let zero = g.scalar(0.0);
                    let pos = g.binary(BinaryOp::Gt, y, zero);
                    g.select(pos, ct, zero)
                }
                UnaryOp::Sigmoid => {
                    // TF SigmoidGrad: dy * y * (1 - y)
                    let one = g.scalar(1.0);
                    let om = g.sub(one, y);
                    let t = g.mul(ct, y);
                    g.mul(t, om)
                }
                UnaryOp::Tanh => {
                    // TF TanhGrad: dy * (1 - y * y)
                    let one = g.scalar(1.0);
                    let yy = g.mul(y, y);
                    let om = g.sub(one, yy);
                    g.mul(ct, om)
                }
                UnaryOp::Softplus => {
                    let s = g.unary(UnaryOp::Sigmoid, x0);
                    g.mul(ct, s)
                }
                UnaryOp::Recip => {
                    // d(1/x) = -1/x^2
                    let yy = g.mul(y, y);
                    let t = g.mul(ct, yy);
                    g.neg(t)
                }
            };
            one(d)
        }),

        Op::Binary(BinaryOp::Add) => vjp_of(|_, _, ct| vec![Some(ct), Some(ct)]),
        Op::Binary(BinaryOp::Sub) => vjp_of(|g, _, ct| {
            let n = g.neg(ct);
            vec![Some(ct), Some(n)]
        }),
        Op::Binary(BinaryOp::Mul) => vjp_of(move |g, _, ct| {
            let da = g.mul(ct, x(1));
            let db = g.mul(x(0), ct);
            vec![Some(da), Some(db)]
        }),
        Op::Binary(BinaryOp::Div) => vjp_of(move |g, _, ct| {
            // TF _RealDivGrad: (grad / y, grad * ((-x / y) / y))
            let (a, bb) = (x(0), x(1));
            let da = g.div(ct, bb);
            let na = g.neg(a);
            let q = g.div(na, bb);
            let q = g.div(q, bb);
            let db = g.mul(ct, q);
            vec![Some(da), Some(db)]
        }),
        Op::Binary(BinaryOp::Pow) => vjp_of(move |g, y, ct| {
            // TF _PowGrad: dx = grad * y * x^(y-1); dy = grad * z * log(x) where x > 0
            let (a, bb) = (x(0), x(1));
            let one = g.scalar(1.0);
            let ym1 = g.sub(bb, one);
            let p = g.binary(BinaryOp::Pow, a, ym1);
            let yp = g.mul(bb, p);
            let da = g.mul(ct, yp);
            let zero = g.scalar(0.0);
            let pos = g.binary(BinaryOp::Gt, a, zero);
            let l = g.unary(UnaryOp::Log, a);
            let l = g.select(pos, l, zero);
            let zl = g.mul(y, l);
            let db = g.mul(ct, zl);
            vec![Some(da), Some(db)]
        }),
        Op::Binary(b @ (BinaryOp::Max | BinaryOp::Min)) => vjp_of(move |g, _, ct| {
            // TF _MaximumGrad / _MinimumGrad: ties go to the first operand.
            let cmp = if *b == BinaryOp::Max {
                BinaryOp::Ge
            } else {
                BinaryOp::Le
            };
            let mask = g.binary(cmp, x(0), x(1));
            let zero = g.scalar(0.0);
            let da = g.select(mask, ct, zero);
            let db = g.select(mask, zero, ct);
            vec![Some(da), Some(db)]
        }),

        Op::Select => vjp_of(move |g, _, ct| {
            let c = x(0);
            let zero = g.scalar(0.0);
            let da = g.select(c, ct, zero);
            let db = g.select(c, zero, ct);
            vec![None, Some(da), Some(db)]
        }),

        Op::BroadcastTo(_) => vjp_of(move |g, _, ct| {
            let s = g.shape(x(0)).clone();
            one(g.sum_to(ct, &s))
        }),

        Op::Reduce { kind, axes } => vjp_of(move |g, y, ct| {
            let x0 = x(0);
            let xs = g.shape(x0).clone();
            let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
            let kept = shape::reduce_keepdims(&xs, &axes);
            let ct_k = g.reshape(ct, &kept);
            let ct_b = g.broadcast_to(ct_k, &xs);
            match kind {
                ReduceKind::Sum => one(ct_b),
                ReduceKind::Max => {
                    // TF _MaxGrad: grad * indicators / num_selected
                    let y_k = g.reshape(y, &kept);
                    let ind = g.binary(BinaryOp::Eq, y_k, x0);
                    let num = g.reduce_sum(ind, &axes);
                    let num_k = g.reshape(num, &kept);
                    let share = g.div(ind, num_k);
                    one(g.mul(share, ct_b))
                }
            }
        }),

        Op::MatMul { ta, tb } => vjp_of(move |g, _, ct| {
            let (a, b) = (x(0), x(1));
            let (da, db) = match (ta, tb) {
                (false, false) => (g.matmul(ct, b, false, true), g.matmul(a, ct, true, false)),
                (false, true) => (g.matmul(ct, b, false, false), g.matmul(ct, a, true, false)),
                (true, false) => (g.matmul(b, ct, false, true), g.matmul(a, ct, false, false)),
                (true, true) => (g.matmul(b, ct, true, true), g.matmul(ct, a, true, true)),
            };
            vec![Some(da), Some(db)]
        }),

        // The same rules per group.
        Op::BatchMatMul { ta, tb, groups } => vjp_of(move |g, _, ct| {
            let groups = *groups;
            let (a, b) = (x(0), x(1));
            let (da, db) = match (ta, tb) {
                (false, false) => (
                    g.grouped_matmul(ct, b, false, true, groups),
                    g.grouped_matmul(a, ct, true, false, groups),
                ),
                (false, true) => (
                    g.grouped_matmul(ct, b, false, false, groups),
                    g.grouped_matmul(ct, a, true, false, groups),
                ),
                (true, false) => (
                    g.grouped_matmul(b, ct, false, true, groups),
                    g.grouped_matmul(a, ct, false, false, groups),
                ),
                (true, true) => (
                    g.grouped_matmul(b, ct, true, true, groups),
                    g.grouped_matmul(ct, a, true, true, groups),
                ),
            };
            vec![Some(da), Some(db)]
        }),

        Op::Reshape(_) => vjp_of(move |g, _, ct| {
            let s = g.shape(x(0)).clone();
            one(g.reshape(ct, &s))
        }),

        Op::Transpose(perm) => vjp_of(move |g, _, ct| {
            let mut inv = vec![0usize; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p as usize] = i;
            }
            one(g.transpose(ct, &inv))
        }),

        Op::Concat { axis } => vjp_of(move |g, _, ct| {
            let axis = *axis as usize;
            let mut offset = 0u32;
            let mut out = Vec::new();
            for &part in &node.inputs {
                let ps = g.shape(part).clone();
                let mut begin = vec![0u32; ps.rank()];
                begin[axis] = offset;
                offset += ps.0[axis].fixed().unwrap_or(0);
                out.push(Some(g.slice(ct, &begin, &ps)));
            }
            out
        }),

        Op::Slice { begin, .. } => vjp_of(move |g, _, ct| {
            let s = g.shape(x(0)).clone();
            one(g.pad(ct, begin, &s))
        }),

        Op::Pad { before, .. } => vjp_of(move |g, _, ct| {
            let s: Shape = g.shape(x(0)).clone();
            one(g.slice(ct, before, &s))
        }),

        Op::StopGradient | Op::NormalNoise { .. } => vjp_of(|_, _, _| vec![None]),

        // im2col and col2im are each other's adjoints.
        Op::Patches { window, .. } => vjp_of(move |g, _, ct| one(g.patches_grad(ct, *window))),
        Op::PatchesGrad(window) => vjp_of(move |g, _, ct| one(g.patches(ct, *window, 0.0))),
        // The Winograd transforms are linear; each pair are adjoints.
        Op::WinogradInput(window, tile) => {
            vjp_of(move |g, _, ct| one(g.winograd_input_grad(ct, *window, *tile)))
        }
        Op::WinogradInputGrad(window, tile) => {
            vjp_of(move |g, _, ct| one(g.winograd_input(ct, *window, *tile)))
        }
        Op::WinogradOutput(window, tile) => {
            vjp_of(move |g, _, ct| one(g.winograd_output_grad(ct, *window, *tile)))
        }
        Op::WinogradOutputGrad(window, tile) => {
            vjp_of(move |g, _, ct| one(g.winograd_output(ct, *window, *tile)))
        }

        // TF _GatherGrad: an IndexedSlices (ids, ct), whose dense value is
        // unsorted_segment_sum(ct, ids, rows); the optimizer stage recognizes the
        // form and applies it sparsely.
        Op::Gather => vjp_of(move |g, _, ct| {
            let params = x(0);
            let zero = g.scalar(0.0);
            let s = g.shape(params).clone();
            let zeros = g.broadcast_to(zero, &s);
            vec![Some(g.scatter_add(zeros, x(1), ct)), None]
        }),
        Op::ScatterAdd => vjp_of(move |g, _, ct| {
            let d_updates = g.gather(ct, x(1));
            vec![Some(ct), None, Some(d_updates)]
        }),
    }
}

/// Whether an input of this dtype can carry a gradient at all.
pub fn differentiable_dtype(dt: DType) -> bool {
    dt == DType::F32
}
