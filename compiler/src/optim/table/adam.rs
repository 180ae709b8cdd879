//! `AdamOptimizer` (`ApplyAdam`), with the non-slot `beta1_power` and
//! `beta2_power` that `_finish` advances.
//!
//! Sparse: not lazy. TF's `_apply_sparse_shared` decays every row of `m` and
//! `v` (`m * beta1`, then a scatter-add of `grad * (1 - beta1)`) and moves
//! every row of the variable, so specc runs that formula on the dense value
//! of the slices.

use super::{
    learning_rate, number, slot, Check, GlobalDef, Init, OptimizerDef, Sparse, UpdateInputs,
    UpdateOutputs, B,
};
use crate::ir::{Graph, NodeId};
use crate::model::OptimizerSpec;

pub static ADAM: OptimizerDef = OptimizerDef {
    name: "adam",
    class: "AdamOptimizer",
    args: &[
        learning_rate(Some(0.001)),
        number("beta1", 0.9, Check::UnitInterval),
        number("beta2", 0.999, Check::UnitInterval),
        number("epsilon", 1e-8, Check::NonNegative),
    ],
    slots: &[slot("m", Init::Value(0.0)), slot("v", Init::Value(0.0))],
    globals: &[
        GlobalDef {
            name: "beta1_power",
            init: Init::Arg("beta1"),
        },
        GlobalDef {
            name: "beta2_power",
            init: Init::Arg("beta2"),
        },
    ],
    dense,
    sparse: Sparse::NonLazy(sparse_dense_value),
    finish,
};

fn dense(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    // m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2)
    // var -= (m * alpha) / (sqrt(v) + epsilon)
    let (beta1, beta2) = (o.number("beta1"), o.number("beta2"));
    let epsilon = o.number("epsilon");
    let b = &mut B { g };
    let gr = u.grad;
    let (m, v) = (u.slots[0], u.slots[1]);
    let (b1p, b2p) = (u.globals[0], u.globals[1]);
    let one = b.c(1.0);
    let one_m_b2p = b.sub(one, b2p);
    let sq = b.sqrt(one_m_b2p);
    let num = b.mul(u.lr, sq);
    let one_m_b1p = b.sub(one, b1p);
    let alpha = b.div(num, one_m_b1p);
    let omb1 = b.one_minus(beta1);
    let omb2 = b.one_minus(beta2);
    let gm = b.sub(gr, m);
    let dm = b.mul(gm, omb1);
    let m_new = b.add(m, dm);
    let gg = b.square(gr);
    let gv = b.sub(gg, v);
    let dv = b.mul(gv, omb2);
    let v_new = b.add(v, dv);
    let ma = b.mul(m_new, alpha);
    let sv = b.sqrt(v_new);
    let eps = b.c(epsilon);
    let den = b.add(sv, eps);
    let step = b.div(ma, den);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![m_new, v_new],
    }
}

/// `_apply_sparse_shared` on `u.grad`, the dense value of the slices (zero in
/// untouched rows, where `m * beta1 + g * (1 - beta1)` is `m * beta1` exactly,
/// as TF's assign then scatter_add).
fn sparse_dense_value(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    let (beta1, beta2) = (o.number("beta1"), o.number("beta2"));
    let epsilon = o.number("epsilon");
    let b = &mut B { g };
    let grad = u.grad;
    let (m, v) = (u.slots[0], u.slots[1]);
    let (b1p, b2p) = (u.globals[0], u.globals[1]);
    // lr = lr_t * sqrt(1 - beta2_power) / (1 - beta1_power)
    let one = b.c(1.0);
    let omb2p = b.sub(one, b2p);
    let sq = b.sqrt(omb2p);
    let num = b.mul(u.lr, sq);
    let omb1p = b.sub(one, b1p);
    let lr = b.div(num, omb1p);
    // m_t = m * beta1 + grad * (1 - beta1)
    let (b1, b2) = (b.c(beta1), b.c(beta2));
    let omb1 = b.sub(one, b1);
    let mb = b.mul(m, b1);
    let gs = b.mul(grad, omb1);
    let m_t = b.add(mb, gs);
    // v_t = v * beta2 + (grad * (1 - beta2)) * grad: the source's
    // (grad * grad) * (1 - beta2), as Grappler reassociates it in a TF session.
    let omb2 = b.sub(one, b2);
    let vb = b.mul(v, b2);
    let gc = b.mul(grad, omb2);
    let gs2 = b.mul(gc, grad);
    let v_t = b.add(vb, gs2);
    // var -= lr * m_t / (sqrt(v_t) + epsilon)
    let vs = b.sqrt(v_t);
    let eps = b.c(epsilon);
    let den = b.add(vs, eps);
    let lm = b.mul(lr, m_t);
    let step = b.div(lm, den);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![m_t, v_t],
    }
}

/// `_finish`: beta1_power *= beta1; beta2_power *= beta2.
fn finish(g: &mut Graph, o: &OptimizerSpec, globals: &[NodeId]) -> Vec<NodeId> {
    let b1 = g.scalar(o.number("beta1"));
    let b2 = g.scalar(o.number("beta2"));
    vec![g.mul(globals[0], b1), g.mul(globals[1], b2)]
}
