//! `FtrlOptimizer` (`ApplyFtrlV2`): l1, l2, l2 shrinkage, any
//! `learning_rate_power` (a square root for -0.5), and `beta`.
//!
//! Sparse: lazy; rows of one element take `SparseApplyFtrl`'s scalar path
//! (`lin = (lin + gws) - sigma * v`, a clamp for l1), longer rows round as
//! the dense kernel.

use super::{
    no_finish, number, slot, Check, Init, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B, L1,
    L2, LEARNING_RATE,
};
use crate::ir::{Graph, NodeId};
use crate::model::OptimizerSpec;

pub static FTRL: OptimizerDef = OptimizerDef {
    name: "ftrl",
    class: "FtrlOptimizer",
    args: &[
        LEARNING_RATE,
        number("learning_rate_power", -0.5, Check::NonPositive),
        number("initial_accumulator_value", 0.1, Check::NonNegative),
        L1,
        L2,
        number(
            "l2_shrinkage_regularization_strength",
            0.0,
            Check::NonNegative,
        ),
        number("beta", 0.0, Check::NonNegative),
    ],
    slots: &[
        slot("accum", Init::Arg("initial_accumulator_value")),
        slot("linear", Init::Value(0.0)),
    ],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    let l1 = o.number("l1_regularization_strength");
    let lin = u.slots[1];
    let Terms {
        l2,
        gws,
        new_accum,
        pn,
        po,
    } = terms(g, o, u);
    let b = &mut B { g };
    let (p, lr) = (u.param, u.lr);
    // linear += gws - (new_accum^-p - accum^-p) / lr * var
    let d = b.sub(pn, po);
    let d = b.div(d, lr);
    let dv = b.mul(d, p);
    let gd = b.sub(gws, dv);
    let linear = b.add(lin, gd);
    // x = l1 * sign(linear) - linear; y = new_accum^-p / lr + 2 * l2
    let l1c = b.c(l1);
    let s = b.sign(linear);
    let ls = b.mul(l1c, s);
    let x = b.sub(ls, linear);
    let pl = b.div(pn, lr);
    let two = b.c(2.0);
    let l2x2 = b.mul(two, l2);
    let y = b.add(pl, l2x2);
    let pre = b.div(x, y);
    let al = b.abs(linear);
    let keep = b.gt(al, l1c);
    let zero = b.c(0.0);
    let var = b.select(keep, pre, zero);
    UpdateOutputs {
        param: var,
        slots: vec![new_accum, linear],
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, row_len: u64) -> UpdateOutputs {
    if row_len != 1 {
        return dense(g, o, u);
    }
    // The scalar path: lin = (lin + gws) - sigma * v.
    let l1 = o.number("l1_regularization_strength");
    let lin = u.slots[1];
    let Terms {
        l2,
        gws,
        new_accum: na,
        pn,
        po,
    } = terms(g, o, u);
    let b = &mut B { g };
    let (v, lr) = (u.param, u.lr);
    let d = b.sub(pn, po);
    let sigma = b.div(d, lr);
    let lg = b.add(lin, gws);
    let sv = b.mul(sigma, v);
    let lin = b.sub(lg, sv);
    // v = (clamp(lin, -l1, l1) - lin) / (pn / lr + 2 * l2)
    let l1c = b.c(l1);
    let nl1 = b.c(-l1);
    let lo = b.min(lin, l1c);
    let adj = b.max(lo, nl1);
    let x = b.sub(adj, lin);
    let pl = b.div(pn, lr);
    let two = b.c(2.0);
    let l2x2 = b.mul(two, l2);
    let y = b.add(pl, l2x2);
    UpdateOutputs {
        param: b.div(x, y),
        slots: vec![na, lin],
    }
}

/// What every FTRL kernel computes first (dense `ApplyFtrl(V2)` and the
/// sparse paths): `l2` with TF's `beta / (2 lr)` folded in, the gradient with
/// shrinkage `grad + 2 * l2_shrinkage * var`, the new accumulator
/// `accum + grad^2`, and the new and old accumulators to the power
/// `-learning_rate_power` (a square root for -0.5).
struct Terms {
    l2: NodeId,
    gws: NodeId,
    new_accum: NodeId,
    pn: NodeId,
    po: NodeId,
}

fn terms(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> Terms {
    let learning_rate_power = o.number("learning_rate_power");
    let l2 = o.number("l2_regularization_strength");
    let l2s = o.number("l2_shrinkage_regularization_strength");
    let beta = o.number("beta");
    let b = &mut B { g };
    let (p, gr, lr, acc) = (u.param, u.grad, u.lr, u.slots[0]);
    let two = b.c(2.0);
    let beta_c = b.c(beta);
    let two_lr = b.mul(two, lr);
    let bl = b.div(beta_c, two_lr);
    let l2c = b.c(l2);
    let l2 = b.add(l2c, bl);
    let gws = if l2s > 0.0 {
        let k = b.c(2.0 * l2s);
        let kv = b.mul(k, p);
        b.add(gr, kv)
    } else {
        gr
    };
    let sq = b.square(gr);
    let new_accum = b.add(acc, sq);
    let (pn, po) = if learning_rate_power == -0.5 {
        (b.sqrt(new_accum), b.sqrt(acc))
    } else {
        let e = b.c(-learning_rate_power);
        (b.pow(new_accum, e), b.pow(acc, e))
    };
    Terms {
        l2,
        gws,
        new_accum,
        pn,
        po,
    }
}
