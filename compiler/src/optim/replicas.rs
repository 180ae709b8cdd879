//! Synchronous data-parallel training: the step split at the gradient exchange.
//!
//! Owns: [`split`], which, for a model trained by `replicas` processes that
//! each compute part of the global batch (`train { batch }`), makes the
//! gradients, the loss and the layers' state updates *exchange variables*
//! ([`VarKind::Exchange`]) and builds the function that fills them,
//! `replica_grad` (forward and backward on this replica's rows, TF's
//! `SyncReplicasOptimizer` accumulators). The runtime sums the `Sum`
//! exchange arena over the replicas (one allreduce of contiguous memory) and
//! gathers the `Gather` variables (an `IndexedSlices`'s ids and rows, in
//! replica order); the `step` built by [`super::build`] then reads them in
//! place of the gradients: clipping, the global norm, the optimizer and the
//! moving averages see the global batch's gradient.
//!
//! How replicas combine: a loss that is a mean over the batch (or anything
//! that is not a plain sum over it, such as a mean plus a weight penalty) is
//! the rows-weighted average of the replicas' losses (Horovod's `Average`):
//! with equal shares the `step` scales the sum by `1 / replicas`, fused into
//! the update; with unequal ones each replica scales its values by `rows /
//! global_batch` before the sum. A loss whose last op is a sum over the batch
//! axis is summed.
//! With a shared exchange ([`Model::shared_exchange`]: the replicas run on
//! one node and share memory), there is no allreduce: each summed exchange
//! variable `v` also has one read-only view per replica, `v@r`
//! ([`VarKind::ExchangePeer`], arena `exchange/peer/<r>`, laid out as
//! `exchange/sum`), which the runtime points at replica r's `exchange/sum`;
//! the `step` reads them all and sums them in replica order (`((v@0 +
//! v@1) + v@2) ..`), fused into the update: every replica computes the same
//! bits.
//! A sparse gradient is not scaled-and-summed but gathered: the replicas' ids
//! and rows, concatenated in replica order, are exactly the `IndexedSlices`
//! one process would compute for the global batch (each replica holds a
//! contiguous slice of it), and the optimizer sums their duplicates as TF does.
//!
//! Invariants: `replica_grad` reads no variable that `step` writes before it
//! runs and updates only exchange variables; `step` reads no input (it is
//! called after the exchange, its inputs are the exchange variables); every
//! exchange variable is written by `replica_grad` and read by `step`.

use specc_runtime::init::Initializer;

use crate::ir::{Function, NodeId, Op, Output, ReduceKind, Shape};
use crate::model::{Model, VarKind};

pub use specc_runtime::abi::REPLICA_GRAD;

/// What [`split`] leaves for the step.
pub struct Split {
    /// The replicas' combined loss (an exchange variable).
    pub loss: NodeId,
    /// The layers' state updates, each the replicas' combined new value.
    pub state_updates: Vec<(u32, NodeId)>,
}

/// Moves the gradients (`grads`, with the ids of the sparse ones in
/// `sparse_ids`) behind exchange variables, adds `replica_grad` to the model,
/// and returns what the step reads instead of the loss and state updates.
pub fn split(
    model: &mut Model,
    params: &[u32],
    grads: &mut [NodeId],
    sparse_ids: &mut [Option<NodeId>],
    state_updates: &[(u32, NodeId)],
) -> Split {
    let global_batch = model.train.batch as u64;
    let replicas = u64::from(model.replicas.unwrap_or(1).max(1));
    let mut f = Function::new(REPLICA_GRAD);
    let g = &mut model.graph;
    g.current_span = None;
    // The weight of each replica's values in the sum over replicas: `rows /
    // global batch` for a mean. With equal shares that is `1 / replicas` for
    // all, applied once to the sum in `step` (fused into the update) rather
    // than by each replica (a pass over every gradient).
    let (before, after) = if is_batch_sum(g, model.loss) {
        (None, None)
    } else if global_batch.is_multiple_of(replicas) {
        (None, Some(g.scalar(1.0 / replicas as f32)))
    } else {
        let rows = g.batch_size();
        let all = g.scalar(global_batch as f32);
        (Some(g.div(rows, all)), None)
    };
    let weighed = move |g: &mut crate::ir::Graph, value: NodeId, w: Option<NodeId>| match w {
        Some(w) => g.mul(value, w),
        None => value,
    };
    let loss = model.loss;
    let mut exchanged = Vec::new();
    let summed = |model: &mut Model, f: &mut Function, name: String, value: NodeId| {
        let scaled = weighed(&mut model.graph, value, before);
        let shape = model.graph.shape(value).clone();
        let v = model.add_var(
            &name,
            shape,
            VarKind::Exchange { gather: false },
            Initializer::Zeros,
        );
        f.updates.push((v, scaled));
        let read = if model.shared_exchange {
            // Every replica's value, summed in replica order by the step
            // itself: ((v0 + v1) + v2) .., the same bits on every replica.
            let shape = model.graph.shape(value).clone();
            let mut sum = None;
            for r in 0..replicas as u32 {
                let peer = model.add_var(
                    &format!("{name}@{r}"),
                    shape.clone(),
                    VarKind::ExchangePeer { replica: r },
                    Initializer::Zeros,
                );
                let read = model.graph.var(peer);
                sum = Some(match sum {
                    None => read,
                    Some(acc) => model.graph.add(acc, read),
                });
            }
            sum.unwrap_or_else(|| model.graph.var(v))
        } else {
            model.graph.var(v)
        };
        weighed(&mut model.graph, read, after)
    };
    let loss = summed(model, &mut f, "replica/loss".into(), loss);
    for (k, &p) in params.iter().enumerate() {
        let name = model.var_name(p).to_string();
        match sparse_ids[k] {
            None => {
                grads[k] = summed(model, &mut f, format!("replica/grad/{name}"), grads[k]);
            }
            Some(ids) => {
                let values = weighed(&mut model.graph, grads[k], before);
                let ids_read = gathered(
                    model,
                    &mut f,
                    format!("replica/ids/{name}"),
                    ids,
                    global_batch,
                );
                let values_read = gathered(
                    model,
                    &mut f,
                    format!("replica/values/{name}"),
                    values,
                    global_batch,
                );
                sparse_ids[k] = Some(ids_read);
                grads[k] = weighed(&mut model.graph, values_read, after);
            }
        }
    }
    for &(var, value) in state_updates {
        let name = format!("replica/update/{}", model.var_name(var));
        let read = summed(model, &mut f, name, value);
        exchanged.push((var, read));
    }
    // The runtime checks look at this replica's batch.
    for (i, a) in model.assertions.iter().enumerate() {
        f.outputs.push(Output {
            name: specc_runtime::abi::assertion_output(i),
            node: a.node,
        });
    }
    model.functions.replica_grad = Some(f);
    Split {
        loss,
        state_updates: exchanged,
    }
}

/// An exchange variable gathered over the replicas: `value` (`[rows, ..]` of
/// this replica's rows) is also an output of `replica_grad` under the
/// variable's name; the variable holds `global_batch` rows.
fn gathered(
    model: &mut Model,
    f: &mut Function,
    name: String,
    value: NodeId,
    global_batch: u64,
) -> NodeId {
    let g = &model.graph;
    let dtype = g.dtype(value);
    let dims: Vec<u32> = g
        .shape(value)
        .concrete(global_batch)
        .iter()
        .map(|&d| d as u32)
        .collect();
    let v = model.graph.add_var(&name, dtype, Shape::fixed(&dims));
    model.vars.push(crate::model::VarInfo {
        kind: VarKind::Exchange { gather: true },
        init: Initializer::Zeros,
        span: None,
        partitions: Vec::new(),
    });
    f.outputs.push(Output { name, node: value });
    model.graph.var(v)
}

/// Whether the loss's last op sums over the batch axis (`reduce_sum` of a
/// per-example value): replicas' losses then add up.
fn is_batch_sum(g: &crate::ir::Graph, loss: NodeId) -> bool {
    match g.op(loss) {
        Op::Reduce {
            kind: ReduceKind::Sum,
            axes,
        } => {
            let x = g.inputs_of(loss)[0];
            g.shape(x).has_batch() && axes.contains(&0)
        }
        _ => false,
    }
}
