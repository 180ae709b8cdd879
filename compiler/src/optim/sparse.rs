//! Sparse updates: applying an `IndexedSlices` gradient (row ids and rows, the
//! gradient of `embedding_lookup`) with TF's semantics for each optimizer.
//!
//! Owns the three ways TF's `tf.compat.v1.train` applies them to resource
//! variables; each optimizer's entry in [`super::table`] says which, and
//! supplies the formula ([`Sparse`]):
//! - scatter-add: the rows of `-grad * lr` are added one id at a time
//!   (GradientDescent, `_resource_apply_sparse_duplicate_indices`);
//! - not lazy: the rule runs on the dense value of the slices (Adam's
//!   `_apply_sparse_shared`: every row of `m` and `v` decays and every row of
//!   the variable moves; its step is dense);
//! - lazy (the others): duplicate ids are summed first (TF's `unique` +
//!   `unsorted_segment_sum`), then only the touched rows of the variable and
//!   its slots are read, updated by the entry's row rule (`SparseApply*`
//!   kernels) and written back. Untouched rows stay frozen and the work is
//!   proportional to the ids, not the table.
//!
//! Where TF's float arithmetic cannot be mirrored: its vectorized `rsqrt` in
//! rows of 8 or more elements is an approximation (CPU-dependent), and some
//! `inner_dim == 1` paths compute in double; specc uses `1 / sqrt(x)` and
//! float throughout, within an ulp or two of TF.
//!
//! Invariant: the result has the same variables and slot order as the dense
//! rule; only the parameter and slot values differ.

use super::table::{RowRule, Sparse, UpdateInputs, UpdateOutputs};
use crate::ir::{Graph, NodeId};
use crate::model::OptimizerSpec;

/// The update of one parameter from rows `u.grad` at `ids`.
pub fn update(g: &mut Graph, o: &OptimizerSpec, u: &UpdateInputs, ids: NodeId) -> UpdateOutputs {
    let how = match &o.defined {
        Some(b) => super::defined::sparse_handling(b),
        None => o.def.sparse,
    };
    match how {
        Sparse::ScatterAdd(rows) => {
            let delta = rows(g, o, u);
            UpdateOutputs {
                param: g.scatter_add(u.param, ids, delta),
                slots: vec![],
            }
        }
        Sparse::NonLazy(rule) => {
            // The summed gradient as a dense tensor (zero in untouched rows).
            let shape = g.shape(u.param).clone();
            let zero = g.scalar(0.0);
            let zeros = g.broadcast_to(zero, &shape);
            let dense = g.scatter_add(zeros, ids, u.grad);
            rule(g, o, &UpdateInputs { grad: dense, ..*u })
        }
        Sparse::Lazy(row_rule) => lazy(g, o, u, ids, row_rule),
    }
}

/// Dedupes, gathers the touched rows, applies the row rule, scatters them back.
fn lazy(
    g: &mut Graph,
    o: &OptimizerSpec,
    u: &UpdateInputs,
    ids: NodeId,
    row_rule: RowRule,
) -> UpdateOutputs {
    let shape = g.shape(u.param).clone();
    let rows = shape.0[0].fixed().unwrap_or(1);
    let row_len = shape.fixed_numel() / u64::from(rows.max(1));
    let first = g.first_occurrence(ids, rows);
    let grad = g.sum_duplicates(u.grad, first);
    let param_rows = g.gather(u.param, ids);
    let slot_rows: Vec<NodeId> = u.slots.iter().map(|&s| g.gather(s, ids)).collect();
    let rows_in = UpdateInputs {
        param: param_rows,
        grad,
        slots: &slot_rows,
        ..*u
    };
    let out = row_rule(g, o, &rows_in, row_len);
    UpdateOutputs {
        param: g.scatter_rows(u.param, ids, first, out.param),
        slots: u
            .slots
            .iter()
            .zip(&out.slots)
            .map(|(&s, &new)| g.scatter_rows(s, ids, first, new))
            .collect(),
    }
}
