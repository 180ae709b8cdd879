//! `RMSPropOptimizer` (`ApplyRMSProp`, `ApplyCenteredRMSProp`), with
//! schedulable `decay` and `momentum`; `centered` adds the `mg` slot.
//!
//! Sparse: lazy, with `SparseApply(Centered)RMSProp`'s formula
//! (`rsqrt(den) * lr * g`, and `(ms + eps) - mg^2` when centered).

use super::{
    flag, no_finish, number, schedule, Check, Init, OptimizerDef, SlotDef, Sparse, UpdateInputs,
    UpdateOutputs, B, LEARNING_RATE,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static RMSPROP: OptimizerDef = OptimizerDef {
    name: "rmsprop",
    class: "RMSPropOptimizer",
    args: &[
        LEARNING_RATE,
        schedule("decay", Some(0.9)),
        schedule("momentum", Some(0.0)),
        number("epsilon", 1e-10, Check::NonNegative),
        flag("centered"),
    ],
    slots: &[
        SlotDef {
            name: "rms",
            init: Init::Value(1.0),
            only_if: None,
        },
        SlotDef {
            name: "mg",
            init: Init::Value(0.0),
            only_if: Some("centered"),
        },
        SlotDef {
            name: "momentum",
            init: Init::Value(0.0),
            only_if: None,
        },
    ],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // ms += (grad^2 - ms) * (1 - rho)
    // [mg += (grad - mg) * (1 - rho); denom = (ms - mg^2) + eps]  (centered)
    // mom = mom * momentum + (grad * lr) / sqrt(ms + eps | denom)
    // var -= mom
    let epsilon = o.number("epsilon");
    let b = &mut B { g };
    let gr = u.grad;
    let ms = u.slots[0];
    let one = b.c(1.0);
    let decay = o.hyper("decay");
    let omr = b.sub(one, decay);
    let sq = b.square(gr);
    let d = b.sub(sq, ms);
    let d = b.mul(d, omr);
    let ms_new = b.add(ms, d);
    let eps = b.c(epsilon);
    let (den, mg_new, mom) = if o.flag("centered") {
        let mg = u.slots[1];
        let gm = b.sub(gr, mg);
        let gm = b.mul(gm, omr);
        let mg_new = b.add(mg, gm);
        let mg2 = b.square(mg_new);
        let dd = b.sub(ms_new, mg2);
        (b.add(dd, eps), Some(mg_new), u.slots[2])
    } else {
        (b.add(ms_new, eps), None, u.slots[1])
    };
    let mc = o.hyper("momentum");
    let mm = b.mul(mom, mc);
    let gl = b.mul(gr, u.lr);
    let sd = b.sqrt(den);
    let q = b.div(gl, sd);
    let mom_new = b.add(mm, q);
    let mut slots = vec![ms_new];
    slots.extend(mg_new);
    slots.push(mom_new);
    UpdateOutputs {
        param: b.sub(u.param, mom_new),
        slots,
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, _row_len: u64) -> UpdateOutputs {
    // ms = ms * rho + (g * g) * (1 - rho)
    // centered: mg = mg * rho + g * (1 - rho); den = (ms + eps) - mg * mg
    // mom = mom * momentum + (rsqrt(den) * lr) * g; v -= mom
    let epsilon = o.number("epsilon");
    let b = &mut B { g };
    let gr = u.grad;
    let rho = o.hyper("decay");
    let one = b.c(1.0);
    let omr = b.sub(one, rho);
    let msr = b.mul(u.slots[0], rho);
    let gg = b.mul(gr, gr);
    let ggr = b.mul(gg, omr);
    let ms = b.add(msr, ggr);
    let eps = b.c(epsilon);
    let mse = b.add(ms, eps);
    let (den, mg, mom) = if o.flag("centered") {
        let mgr = b.mul(u.slots[1], rho);
        let gr1 = b.mul(gr, omr);
        let mg = b.add(mgr, gr1);
        let mg2 = b.mul(mg, mg);
        (b.sub(mse, mg2), Some(mg), u.slots[2])
    } else {
        (mse, None, u.slots[1])
    };
    let mc = o.hyper("momentum");
    let mm = b.mul(mom, mc);
    let r = b.rsqrt(den);
    let rl = b.mul(r, u.lr);
    let rlg = b.mul(rl, gr);
    let mom = b.add(mm, rlg);
    let mut slots = vec![ms];
    slots.extend(mg);
    slots.push(mom);
    UpdateOutputs {
        param: b.sub(u.param, mom),
        slots,
    }
}
