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
//! The gradient of a table read by several lookups is first made one
//! `IndexedSlices` (`summed_slices`, TF's `aggregate_indexed_slices_gradients`),
//! so it is applied sparsely as TF applies it.
//!
//! Where TF's float arithmetic cannot be mirrored: its vectorized `rsqrt` in
//! rows of 8 or more elements is an approximation (CPU-dependent), and some
//! `inner_dim == 1` paths compute in double; specc uses `1 / sqrt(x)` and
//! float throughout, within an ulp or two of TF.
//!
//! Invariant: the result has the same variables and slot order as the dense
//! rule; only the parameter and slot values differ.

use super::table::{RowRule, Sparse, UpdateInputs, UpdateOutputs};
use crate::ir::{BinaryOp, Dim, Graph, NodeId, Op, Shape};
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

/// The gradient `grad` of a table read by several lookups, the sum of their
/// `IndexedSlices`, as one `IndexedSlices`: the lookups' ids and rows side by
/// side per example (`[B, slots]`, `[B, slots, ..]`). TF's
/// `aggregate_indexed_slices_gradients` concatenates them lookup after
/// lookup; per example, a replica's share of the batch is contiguous, so
/// replicas sending their entries in turn keep one process's order. Either
/// way a row's duplicates are summed, and only the rounding differs. `None`
/// when it is not such a sum.
pub fn summed_slices(g: &mut Graph, grad: NodeId) -> Option<NodeId> {
    fn terms(g: &Graph, n: NodeId, out: &mut Vec<NodeId>) -> bool {
        if let Op::Binary(BinaryOp::Add) = g.op(n) {
            let [a, b] = g.inputs_of(n) else {
                return false;
            };
            let (a, b) = (*a, *b);
            g.shape(a) == g.shape(n) && g.shape(b) == g.shape(n) && {
                terms(g, a, out) && terms(g, b, out)
            }
        } else {
            out.push(n);
            super::indexed_slices(g, n).is_some()
        }
    }
    let mut parts = Vec::new();
    if !terms(g, grad, &mut parts) || parts.len() < 2 {
        return None;
    }
    let row = g.shape(grad).0[1..].to_vec();
    let (mut ids, mut values) = (Vec::new(), Vec::new());
    for &part in &parts {
        let (i, v) = super::indexed_slices(g, part)?;
        let s = g.shape(i).clone();
        if s.0.first() != Some(&Dim::Batch) || s.0[1..].contains(&Dim::Batch) {
            return None;
        }
        let slots = u32::try_from(s.fixed_numel()).ok()?;
        let mut dims = vec![Dim::Batch, Dim::Fixed(slots)];
        ids.push(g.reshape(i, &Shape(dims.clone())));
        dims.extend(row.iter().copied());
        values.push(g.reshape(v, &Shape(dims)));
    }
    let base = g.inputs_of(parts[0])[0];
    let (ids, values) = (g.concat(&ids, 1), g.concat(&values, 1));
    Some(g.scatter_add(base, ids, values))
}
