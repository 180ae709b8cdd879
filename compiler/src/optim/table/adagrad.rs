//! `AdagradOptimizer` (`ApplyAdagrad`): `accum += grad^2; var -= grad * lr * rsqrt(accum)`.
//!
//! Sparse: lazy; rows of one element take `SparseApplyAdagrad`'s scalar path
//! `(lr * g) / sqrt(a)`, longer rows round as the dense kernel.

use super::{
    no_finish, number, slot, Check, Init, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B,
    LEARNING_RATE,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static ADAGRAD: OptimizerDef = OptimizerDef {
    name: "adagrad",
    class: "AdagradOptimizer",
    args: &[
        LEARNING_RATE,
        number("initial_accumulator_value", 0.1, Check::Positive),
    ],
    slots: &[slot("accumulator", Init::Arg("initial_accumulator_value"))],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, _: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // accum += grad^2; var -= grad * lr * rsqrt(accum)
    let b = &mut B { g };
    let sq = b.square(u.grad);
    let accum = b.add(u.slots[0], sq);
    let gl = b.mul(u.grad, u.lr);
    let r = b.rsqrt(accum);
    let step = b.mul(gl, r);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![accum],
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, row_len: u64) -> UpdateOutputs {
    if row_len != 1 {
        return dense(g, o, u);
    }
    // a += g * g; v -= (lr * g) / sqrt(a)
    let b = &mut B { g };
    let gg = b.mul(u.grad, u.grad);
    let a = b.add(u.slots[0], gg);
    let lg = b.mul(u.lr, u.grad);
    let sa = b.sqrt(a);
    let step = b.div(lg, sa);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![a],
    }
}
