//! `ProximalGradientDescentOptimizer` (`ApplyProximalGradientDescent`): a
//! gradient step, then l1/l2 shrinkage (`proximal`, shared with
//! ProximalAdagrad).
//!
//! Sparse: lazy; `SparseApplyProximalGradientDescent` rounds as the dense kernel.

use super::{
    no_finish, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B, L1, L2, LEARNING_RATE,
};
use crate::ir::{Graph, NodeId};
use crate::model::OptimizerSpec;

pub static PROXIMAL_GRADIENT_DESCENT: OptimizerDef = OptimizerDef {
    name: "proximal_gradient_descent",
    class: "ProximalGradientDescentOptimizer",
    args: &[LEARNING_RATE, L1, L2],
    slots: &[],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(|g, o, u, _row_len| dense(g, o, u)),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // v = var - grad * lr; shrink with lr
    let b = &mut B { g };
    let gl = b.mul(u.grad, u.lr);
    let prox = b.sub(u.param, gl);
    UpdateOutputs {
        param: proximal(b.g, o, prox, u.lr),
        slots: vec![],
    }
}

/// ProximalGradientDescent/ProximalAdagrad's shrinkage of `prox` with
/// per-element step `step` (lr, or the Adagrad learning rate), dense and
/// sparse alike: `sign(v) * max(|v| - step * l1, 0) / (1 + l2 * step)`, or
/// `v / (1 + l2 * step)` without l1.
pub(super) fn proximal(g: &mut Graph, o: &OptimizerSpec, prox: NodeId, step: NodeId) -> NodeId {
    let l1 = o.number("l1_regularization_strength");
    let l2 = o.number("l2_regularization_strength");
    let b = &mut B { g };
    let one = b.c(1.0);
    let l2c = b.c(l2);
    if l1 > 0.0 {
        let l1c = b.c(l1);
        let s = b.sign(prox);
        let a = b.abs(prox);
        let t = b.mul(step, l1c);
        let d = b.sub(a, t);
        let zero = b.c(0.0);
        let m = b.max(d, zero);
        let num = b.mul(s, m);
        let sl2 = b.mul(l2c, step);
        let den = b.add(one, sl2);
        b.div(num, den)
    } else {
        let sl2 = b.mul(l2c, step);
        let den = b.add(one, sl2);
        b.div(prox, den)
    }
}
