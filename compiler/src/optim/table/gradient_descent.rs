//! `GradientDescentOptimizer`: `var -= grad * lr`.
//!
//! Sparse: TF scatter-adds `-grad * lr` into the variable, one id at a time.

use super::{no_finish, OptimizerDef, Sparse, UpdateInputs, UpdateOutputs, B, LEARNING_RATE};
use crate::ir::{Graph, NodeId};
use crate::model::OptimizerSpec;

pub static GRADIENT_DESCENT: OptimizerDef = OptimizerDef {
    name: "gradient_descent",
    class: "GradientDescentOptimizer",
    args: &[LEARNING_RATE],
    slots: &[],
    globals: &[],
    dense,
    sparse: Sparse::ScatterAdd(sparse_rows),
    finish: no_finish,
};

fn dense(g: &mut Graph, _: &OptimizerSpec, u: &UpdateInputs) -> UpdateOutputs {
    // var -= grad * lr
    let b = &mut B { g };
    let step = b.mul(u.grad, u.lr);
    UpdateOutputs {
        param: b.sub(u.param, step),
        slots: vec![],
    }
}

/// The rows `resource_scatter_add` adds: `-grad * lr`.
fn sparse_rows(g: &mut Graph, _: &OptimizerSpec, u: &UpdateInputs) -> NodeId {
    let neg = g.neg(u.grad);
    g.mul(neg, u.lr)
}
