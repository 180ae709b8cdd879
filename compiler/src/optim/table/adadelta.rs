//! `AdadeltaOptimizer` (`ApplyAdadelta`), with a schedulable `rho`.
//!
//! Sparse: lazy; `SparseApplyAdadelta` rounds as the dense kernel.

use super::{
    learning_rate, no_finish, number, schedule, slot, Check, Init, OptimizerDef, Sparse,
    UpdateInputs, UpdateOutputs, B,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static ADADELTA: OptimizerDef = OptimizerDef {
    name: "adadelta",
    class: "AdadeltaOptimizer",
    args: &[
        learning_rate(Some(0.001)),
        schedule("rho", Some(0.95)),
        number("epsilon", 1e-8, Check::NonNegative),
    ],
    slots: &[
        slot("accum", Init::Value(0.0)),
        slot("accum_update", Init::Value(0.0)),
    ],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(|g, o, u, _row_len| dense(g, o, u)),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // accum = accum * rho + grad^2 * (1 - rho)
    // update = sqrt(accum_update + eps) * rsqrt(accum + eps) * grad
    // var -= update * lr
    // accum_update = accum_update * rho + update^2 * (1 - rho)
    let epsilon = o.number("epsilon");
    let b = &mut B { g };
    let gr = u.grad;
    let (acc, upd) = (u.slots[0], u.slots[1]);
    let rho_c = o.hyper("rho");
    let one = b.c(1.0);
    let omr = b.sub(one, rho_c);
    let eps = b.c(epsilon);
    let ar = b.mul(acc, rho_c);
    let sq = b.square(gr);
    let sq = b.mul(sq, omr);
    let accum = b.add(ar, sq);
    let ue = b.add(upd, eps);
    let su = b.sqrt(ue);
    let ae = b.add(accum, eps);
    let ra = b.rsqrt(ae);
    let update = b.mul(su, ra);
    let update = b.mul(update, gr);
    let step = b.mul(update, u.lr);
    let ur = b.mul(upd, rho_c);
    let u2 = b.square(update);
    let u2 = b.mul(u2, omr);
    let accum_update = b.add(ur, u2);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![accum, accum_update],
    }
}
