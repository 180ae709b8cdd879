//! `AdagradDAOptimizer` (`ApplyAdagradDA`): dual averaging with l1/l2, using
//! the global step (TF's `global_step_on_worker`, plus one).
//!
//! Sparse: lazy, with `SparseApplyAdagradDA`'s formula (TF's `inner_dim == 1`
//! path computes it in double; specc in float).

use super::{
    no_finish, number, slot, Check, Init, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B, L1,
    L2, LEARNING_RATE,
};
use crate::ir::Graph;
use crate::model::OptimizerSpec;

pub static ADAGRAD_DA: OptimizerDef = OptimizerDef {
    name: "adagrad_da",
    class: "AdagradDAOptimizer",
    args: &[
        LEARNING_RATE,
        number(
            "initial_gradient_squared_accumulator_value",
            0.1,
            Check::Positive,
        ),
        L1,
        L2,
    ],
    slots: &[
        slot("gradient_accumulator", Init::Value(0.0)),
        slot(
            "gradient_squared_accumulator",
            Init::Arg("initial_gradient_squared_accumulator_value"),
        ),
    ],
    globals: &[],
    dense,
    sparse: Sparse::Lazy(rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // g += grad; gg += grad^2; T = global_step + 1 (TF's global_step_on_worker)
    // var = -lr * sign(g) * max(|g| - T*l1, 0) / (l2*(T*lr) + sqrt(gg))   (l1 > 0)
    // var = -lr * g / (l2*(T*lr) + sqrt(gg))
    let l1 = o.number("l1_regularization_strength");
    let l2 = o.number("l2_regularization_strength");
    let b = &mut B { g };
    let (gr, lr) = (u.grad, u.lr);
    let gacc = b.add(u.slots[0], gr);
    let sq = b.square(gr);
    let gsq = b.add(u.slots[1], sq);
    let one = b.c(1.0);
    let t = b.add(u.step, one);
    let l2c = b.c(l2);
    let tl = b.mul(t, lr);
    let l2t = b.mul(l2c, tl);
    let sg = b.sqrt(gsq);
    let den = b.add(l2t, sg);
    let neg_one = b.c(-1.0);
    let num = if l1 > 0.0 {
        let l1c = b.c(l1);
        let lrm = b.mul(lr, neg_one);
        let s = b.sign(gacc);
        let lrs = b.mul(lrm, s);
        let a = b.abs(gacc);
        let tl1 = b.mul(t, l1c);
        let d = b.sub(a, tl1);
        let zero = b.c(0.0);
        let m = b.max(d, zero);
        b.mul(lrs, m)
    } else {
        let lg = b.mul(lr, gacc);
        b.mul(lg, neg_one)
    };
    UpdateOutputs {
        param: b.div(num, den),
        slots: vec![gacc, gsq],
    }
}

fn rows(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, _row_len: u64) -> UpdateOutputs {
    // T = global_step + 1; ga += g; da += g * g
    // v = (-sign(ga) * max(|ga| / T - l1, 0)) / (l2 + sqrt(da) / (T * lr))
    let l1 = o.number("l1_regularization_strength");
    let l2 = o.number("l2_regularization_strength");
    let b = &mut B { g };
    let (gr, lr) = (u.grad, u.lr);
    let one = b.c(1.0);
    let t = b.add(u.step, one);
    let gs_lr = b.mul(t, lr);
    let ga = b.add(u.slots[0], gr);
    let gg = b.mul(gr, gr);
    let da = b.add(u.slots[1], gg);
    let sd = b.sqrt(da);
    let q = b.div(sd, gs_lr);
    let l2c = b.c(l2);
    let den = b.add(l2c, q);
    let neg_one = b.c(-1.0);
    let num = if l1 > 0.0 {
        let s = b.sign(ga);
        let ns = b.mul(neg_one, s);
        let a = b.abs(ga);
        let at = b.div(a, t);
        let l1c = b.c(l1);
        let d = b.sub(at, l1c);
        let zero = b.c(0.0);
        let m = b.max(d, zero);
        b.mul(ns, m)
    } else {
        let gt = b.div(ga, t);
        b.mul(neg_one, gt)
    };
    UpdateOutputs {
        param: b.div(num, den),
        slots: vec![ga, da],
    }
}
