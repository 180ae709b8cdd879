//! `MomentumOptimizer` (`ApplyMomentum`), with Nesterov's variant.
//!
//! Sparse: lazy; `SparseApplyMomentum` rounds the Nesterov step differently
//! (`(lr * g) + ((lr * momentum) * a)`), the plain step like the dense kernel.

use super::{
    flag, no_finish, schedule, slot, Init, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B,
    LEARNING_RATE,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static MOMENTUM: OptimizerDef = OptimizerDef {
    name: "momentum",
    class: "MomentumOptimizer",
    args: &[
        LEARNING_RATE,
        schedule("momentum", None),
        flag("use_nesterov"),
    ],
    slots: &[slot("momentum", Init::Value(0.0))],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // accum = accum * momentum + grad
    // var -= grad * lr + accum * momentum * lr   (nesterov)
    // var -= accum * lr
    let b = &mut B { g };
    let (gr, lr) = (u.grad, u.lr);
    let mom = o.hyper("momentum");
    let am = b.mul(u.slots[0], mom);
    let accum = b.add(am, gr);
    let step = if o.flag("use_nesterov") {
        let gl = b.mul(gr, lr);
        let a2 = b.mul(accum, mom);
        let a2 = b.mul(a2, lr);
        b.add(gl, a2)
    } else {
        b.mul(accum, lr)
    };
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![accum],
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, _row_len: u64) -> UpdateOutputs {
    if !o.flag("use_nesterov") {
        return dense(g, o, u);
    }
    // a = a * momentum + g; v -= (lr * g) + ((lr * momentum) * a)
    let b = &mut B { g };
    let (gr, lr) = (u.grad, u.lr);
    let mom = o.hyper("momentum");
    let am = b.mul(u.slots[0], mom);
    let a = b.add(am, gr);
    let lg = b.mul(lr, gr);
    let lm = b.mul(lr, mom);
    let lma = b.mul(lm, a);
    let step = b.add(lg, lma);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![a],
    }
}
