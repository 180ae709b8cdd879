//! Tables sharded across replicas: each replica holds only its partitions'
//! rows of a partitioned table (TF's partitioned variables on parameter
//! servers; TorchRec's row-wise sharding over an all-to-all).
//!
//! Owns: [`shard`], which, for a model trained by `replicas` processes,
//! picks the tables to shard (those the spec partitions, and without a
//! `partitioner` every lookup table of at least [`AUTO_MIN_SLICE_BYTES`]
//! bytes, partitioned as TF's `min_max_variable_partitioner(max_partitions =
//! replicas)` would, unless `SPECC_SHARD_TABLES=0`), and rewrites each:
//! - the parameter's variable keeps its name, kind and partitions but holds
//!   this replica's rows: its partitions `p` with `p % replicas == rank`
//!   (round robin, as `replica_device_setter` places partitions on parameter
//!   servers), back to back in partition order, padded to the largest
//!   replica's share, then one spare row that the padding of the routed
//!   gradient updates ([`local_rows`]); its slots and moving average are
//!   shaped alike;
//! - the lookups (any number: `shared_embeddings`, several `gather`s) read
//!   a new `Fetched` variable instead, `shard/fetched/W`, one row per id
//!   slot of the batch's inputs in the table's id group: before
//!   `replica_grad` the runtime gathers the batch's distinct ids' rows there
//!   from their owners and rewrites the id inputs into positions in it (so
//!   the forward and backward are the unsharded ones, on the fetched rows);
//! - the gradient is taken with respect to the fetched rows
//!   ([`differentiated`]), the lookups' `IndexedSlices` as one
//!   (`sparse::summed_slices`, as in one process); it goes to the rows' owners (an all-to-all), each
//!   of which applies the optimizer's sparse update to its rows with the ids
//!   it received, in replica order.
//!
//! An id group (`id_groups`): the id inputs linked by the sharded tables
//! reading them (a table read by several inputs, an input read by several
//! tables, as a column in `shared_embeddings` and in `linear_model`). The
//! runtime numbers the distinct ids of a group's inputs together, so one
//! rewritten input is a position in each of its tables' fetched rows, and
//! each table's fetched rows have a slot for every id of its group.
//!
//! Which rows a replica owns: TF's partitions are contiguous ranges (the
//! `div` strategy of feature columns' lookups, so a checkpoint's logical
//! table is in id order and TF reads it as its own); hashed ids spread
//! evenly over them.
//!
//! Invariants: a sharded table is read only by lookups (`gather`) of id
//! inputs; the distinct ids of one replica's batch over a group's inputs,
//! and so the fetched rows, number at most the fetched variable's rows; the
//! program is the same on every replica (a replica's rows are where the
//! runtime puts them).

use specc_grammar::{Code, Diagnostic};
use specc_runtime::init::Initializer;

use crate::ir::{NodeId, Op, Shape};
use crate::model::{Model, ShardedTable, VarKind};

/// The smallest table sharded without a `partitioner`: TF's
/// `min_max_variable_partitioner` default `min_slice_size` (256 KiB).
pub const AUTO_MIN_SLICE_BYTES: u64 = 256 << 10;

/// TF's `min_max_variable_partitioner(max_partitions, min_slice_size)`: the
/// partitions of a table of `rows` rows of `row_bytes` bytes each.
pub fn min_max_partitions(rows: u64, row_bytes: u64, max_partitions: u64, min_slice: u64) -> u64 {
    let total = rows.saturating_mul(row_bytes);
    let wanted = total.div_ceil(min_slice.max(1));
    wanted.min(rows).min(max_partitions).max(1)
}

/// TF's `_iter_slices`: `rows` cut into `n` contiguous partitions, the first
/// `rows % n` one row longer.
pub fn partition_rows(rows: u64, n: u64) -> Vec<u64> {
    let n = n.clamp(1, rows.max(1));
    (0..n).map(|p| rows / n + u64::from(p < rows % n)).collect()
}

/// The rows a replica's variable holds for a table of `partitions` sharded
/// over `replicas`: the largest replica's share, plus the spare row.
pub fn local_rows(partitions: &[u64], replicas: u64) -> u64 {
    let n = replicas.max(1);
    (0..n)
        .map(|r| {
            partitions
                .iter()
                .enumerate()
                .filter(|(p, _)| *p as u64 % n == r)
                .map(|(_, &rows)| rows)
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
        + 1
}

/// The variable whose gradient trains parameter `p`: its fetched rows when
/// it is sharded, else itself.
pub fn differentiated(model: &Model, p: u32) -> u32 {
    model
        .sharded
        .iter()
        .find(|s| s.table == p)
        .map_or(p, |s| s.fetched)
}

/// Shards the model's partitioned tables over its replicas (see the module
/// doc); nothing for one process.
pub fn shard(model: &mut Model) -> Result<(), Vec<Diagnostic>> {
    let Some(replicas) = model.replicas else {
        return Ok(());
    };
    let replicas = u64::from(replicas.max(1));
    let batch = model.train.batch as u64;
    let mut errors = Vec::new();
    // The tables to shard and the id inputs their lookups read.
    let mut chosen: Vec<(u32, Vec<NodeId>)> = Vec::new();
    for p in model.trainable_params() {
        let explicit = !model.vars[p as usize].partitions.is_empty();
        let shape = model.graph.vars[p as usize].shape.clone();
        let Some(rows) = shape.0.first().and_then(|d| d.fixed()).map(u64::from) else {
            continue;
        };
        let row_len: u64 = shape.fixed_numel() / rows.max(1);
        let ids = match lookups_of(model, p).map(|(ids, _)| ids) {
            Ok(l) => l,
            Err(why) => {
                if explicit && replicas > 1 {
                    let name = model.var_name(p).to_string();
                    let span = model.vars[p as usize].span.unwrap_or_default();
                    errors.push(
                        Diagnostic::new(
                            Code::ShapeMismatch,
                            span,
                            format!(
                                "`{name}` is partitioned, and {replicas} replicas hold its rows \
                                 apart, so only lookups may read it: {why}"
                            ),
                        )
                        .with_label("partitioned here")
                        .with_help(
                            "read it with embedding_column, shared_embeddings, linear_model or \
                             gather(W, ids) of an id input (several lookups: with \
                             gradient_descent, adagrad or adam), or train it in one process",
                        ),
                    );
                }
                continue;
            }
        };
        if !explicit {
            let auto = specc_runtime::settings::shard_tables();
            if !auto || replicas == 1 || rows.saturating_mul(row_len * 4) < AUTO_MIN_SLICE_BYTES {
                continue;
            }
            let n = min_max_partitions(rows, row_len * 4, replicas, AUTO_MIN_SLICE_BYTES);
            model.vars[p as usize].partitions = partition_rows(rows, n);
        }
        chosen.push((p, ids));
    }
    // Tables whose lookups share an id input share its positions, so the
    // fetched rows of each hold a slot for every id of the group's inputs.
    let groups = id_groups(&chosen);
    for (k, (p, ids)) in chosen.iter().enumerate() {
        let p = *p;
        let shape = model.graph.vars[p as usize].shape.clone();
        let rows = shape.0.first().and_then(|d| d.fixed()).map_or(0, u64::from);
        let partitions = model.vars[p as usize].partitions.clone();
        let local = local_rows(&partitions, replicas);
        let ids_per_row: u64 = groups[k]
            .iter()
            .map(|&i| model.graph.shape(i).concrete(1).iter().product::<u64>())
            .sum();
        let name = model.var_name(p).to_string();
        let mut fetched_dims = vec![u32::try_from(batch * ids_per_row).unwrap_or(u32::MAX)];
        let mut shard_dims = vec![u32::try_from(local).unwrap_or(u32::MAX)];
        for d in &shape.0[1..] {
            let d = d.fixed().unwrap_or(1);
            fetched_dims.push(d);
            shard_dims.push(d);
        }
        // The lookups' variable becomes the fetched rows; the parameter is
        // a new variable of the same name holding this replica's rows.
        let fetched = p;
        let dtype = model.graph.vars[p as usize].dtype;
        model
            .graph
            .set_var_shape(fetched, Shape::fixed(&fetched_dims));
        model.graph.vars[fetched as usize].name = format!("shard/fetched/{name}");
        let info = model.vars[p as usize].clone();
        let table = model.graph.add_var(&name, dtype, Shape::fixed(&shard_dims));
        model.vars.push(info);
        model.vars[fetched as usize].kind = VarKind::Fetched { table };
        model.vars[fetched as usize].init = Initializer::Zeros;
        model.vars[fetched as usize].partitions = Vec::new();
        let ids = ids
            .iter()
            .filter_map(|&i| match model.graph.op(i) {
                Op::Input(i) => Some(*i),
                _ => None,
            })
            .collect();
        model.sharded.push(ShardedTable {
            table,
            fetched,
            ids,
            rows,
        });
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// For each table of `tables` (a parameter and its lookups' id inputs), the
/// id inputs of its group: the tables linked by shared id inputs, whose
/// inputs the runtime rewrites into positions among their distinct ids.
fn id_groups(tables: &[(u32, Vec<NodeId>)]) -> Vec<Vec<NodeId>> {
    let inputs: Vec<Vec<NodeId>> = tables.iter().map(|(_, i)| i.clone()).collect();
    // The runtime's grouping, so both number the same groups.
    let (of_table, groups) = specc_runtime::train::sharded::id_groups(&inputs);
    of_table.into_iter().map(|g| groups[g].clone()).collect()
}

/// The id inputs of the lookups reading parameter `p` (each once, however
/// many lookups read it), and the number of lookups; why not when something
/// else reads it.
fn lookups_of(model: &Model, p: u32) -> Result<(Vec<NodeId>, usize), String> {
    let g = &model.graph;
    let Some(var) = g
        .nodes()
        .find(|(_, n)| n.op == Op::Var(p))
        .map(|(id, _)| id)
    else {
        return Err("nothing reads it".into());
    };
    // What the model computes: the loss, the outputs, the hooks' values,
    // the checks and the layers' state updates.
    let f = &model.functions;
    let outputs: Vec<NodeId> = f
        .eval
        .outputs
        .iter()
        .chain(f.predict.iter().flat_map(|p| &p.outputs))
        .chain(&model.step_outputs)
        .map(|o| o.node)
        .collect();
    if outputs.contains(&var) {
        return Err("an output or summary reads it whole".into());
    }
    let mut roots = outputs;
    roots.push(model.loss);
    roots.extend(model.assertions.iter().map(|a| a.node));
    roots.extend(model.state_updates.iter().map(|u| u.value));
    let live = g.reachable(&roots);
    let mut lookups = Vec::new();
    let mut count = 0;
    for (_, n) in g.nodes().filter(|(id, _)| live[id.index()]) {
        let Some(at) = n.inputs.iter().position(|&i| i == var) else {
            continue;
        };
        if n.op != Op::Gather || at != 0 || n.inputs[1..].contains(&var) {
            let text = crate::ir::print::op_text(g, &n.op);
            let name = text.split(' ').next().unwrap_or_default();
            return Err(format!("`{name}` reads it whole"));
        }
        let ids = n.inputs[1];
        if !matches!(g.op(ids), Op::Input(_)) {
            return Err("a lookup's ids are computed, not an id input".into());
        }
        count += 1;
        if !lookups.contains(&ids) {
            lookups.push(ids);
        }
    }
    if lookups.is_empty() {
        return Err("no lookup reads it".into());
    }
    Ok((lookups, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_tf_iter_slices() {
        assert_eq!(partition_rows(10, 3), vec![4, 3, 3]);
        assert_eq!(partition_rows(2, 5), vec![1, 1]);
        assert_eq!(partition_rows(8, 1), vec![8]);
    }

    #[test]
    fn min_max_follows_tf() {
        // 262144 x 1 floats = 1 MiB: four 256 KiB slices, at most the replicas.
        assert_eq!(min_max_partitions(262_144, 4, 8, 256 << 10), 4);
        assert_eq!(min_max_partitions(262_144, 4, 3, 256 << 10), 3);
        assert_eq!(min_max_partitions(100, 4, 8, 256 << 10), 1);
    }

    #[test]
    fn tables_sharing_an_id_input_share_its_group() {
        let n = NodeId;
        // W reads a and b, V reads b, U reads c: {a, b} for W and V.
        let tables = [(0, vec![n(1), n(2)]), (1, vec![n(2)]), (2, vec![n(3)])];
        let groups = id_groups(&tables);
        assert_eq!(groups[0], vec![n(1), n(2)]);
        assert_eq!(groups[1], vec![n(1), n(2)]);
        assert_eq!(groups[2], vec![n(3)]);
        // A chain joins all three.
        let tables = [
            (0, vec![n(1)]),
            (1, vec![n(2), n(3)]),
            (2, vec![n(3), n(1)]),
        ];
        assert!(id_groups(&tables).iter().all(|g| g.len() == 3));
    }

    #[test]
    fn a_replica_holds_its_round_robin_partitions_and_a_spare() {
        // Partitions 0 and 2 on replica 0 (4 + 3 rows), 1 on replica 1.
        assert_eq!(local_rows(&[4, 3, 3], 2), 8);
        assert_eq!(local_rows(&[5, 5, 5, 5], 4), 6);
        assert_eq!(local_rows(&[7], 1), 8);
    }
}
