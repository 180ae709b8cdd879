//! `ProximalAdagradOptimizer` (`ApplyProximalAdagrad`): an Adagrad step,
//! then l1/l2 shrinkage with the Adagrad learning rate.
//!
//! Sparse: lazy; rows of one element take `SparseApplyProximalAdagrad`'s
//! scalar path `lr / sqrt(a)` (TF then divides in double; specc in float),
//! longer rows round as the dense kernel.

use super::proximal_gradient_descent::proximal;
use super::{
    no_finish, number, slot, Check, Init, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B, L1,
    L2, LEARNING_RATE,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static PROXIMAL_ADAGRAD: OptimizerDef = OptimizerDef {
    name: "proximal_adagrad",
    class: "ProximalAdagradOptimizer",
    args: &[
        LEARNING_RATE,
        number("initial_accumulator_value", 0.1, Check::Positive),
        L1,
        L2,
    ],
    slots: &[slot("accumulator", Init::Arg("initial_accumulator_value"))],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // accum += grad^2; rate = lr * rsqrt(accum); v = var - grad * rate
    let b = &mut B { g };
    let sq = b.square(u.grad);
    let accum = b.add(u.slots[0], sq);
    let r = b.rsqrt(accum);
    let rate = b.mul(u.lr, r);
    let gl = b.mul(u.grad, rate);
    let prox = b.sub(u.param, gl);
    UpdateOutputs {
        param: proximal(b.g, o, prox, rate),
        slots: vec![accum],
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, row_len: u64) -> UpdateOutputs {
    if row_len != 1 {
        return dense(g, o, u);
    }
    // t = lr / sqrt(a)
    let b = &mut B { g };
    let gg = b.mul(u.grad, u.grad);
    let a = b.add(u.slots[0], gg);
    let sa = b.sqrt(a);
    let t = b.div(u.lr, sa);
    let gt = b.mul(u.grad, t);
    let p = b.sub(u.param, gt);
    UpdateOutputs {
        param: proximal(b.g, o, p, t),
        slots: vec![a],
    }
}
