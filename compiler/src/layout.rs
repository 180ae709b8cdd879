//! Memory layout of variables, constants and inputs.
//!
//! Owns: the assignment of every variable to an arena and offset, producing
//! the runtime's [`Layout`]. Parameters live in the `params` arena; each
//! optimizer slot kind has an arena of its own that mirrors `params` (a
//! parameter's slot sits at the parameter's own offset), so a dense update is
//! one pass over contiguous memory per arena; non-slot optimizer variables
//! live in `optimizer`; constant tensors in `consts`.
//!
//! Invariant: offsets are multiples of 16 elements (64 bytes) and the layout
//! is a pure function of the model (deterministic).

use specc_runtime::abi::{
    ArenaLayout, ElemType, InputLayout, Layout, VarLayout, VarRole, EXCHANGE_GATHER, EXCHANGE_SUM,
};
use specc_runtime::data::InputKind;
use specc_runtime::init::Initializer;

use crate::ir::DType;
use crate::model::{Model, VarKind};

pub const ALIGN: usize = 16;

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// The arena and offset of each graph variable, and of each constant tensor.
#[derive(Clone, Debug)]
pub struct VarPlacement {
    pub layout: Layout,
    /// Per graph var: (arena, offset).
    pub vars: Vec<(usize, usize)>,
    /// Per graph constant tensor: (arena, offset).
    pub consts: Vec<(usize, usize)>,
}

/// Packs the variables whose kind `holds` into a new arena `name`, in
/// variable order (none: no arena).
fn pack(
    model: &Model,
    arenas: &mut Vec<ArenaLayout>,
    vars: &mut [(usize, usize)],
    name: String,
    holds: impl Fn(&VarKind) -> bool,
) {
    let arena = arenas.len();
    let mut off = 0;
    for (i, v) in model.vars.iter().enumerate() {
        if holds(&v.kind) {
            vars[i] = (arena, off);
            off += align(model.graph.vars[i].shape.fixed_numel() as usize);
        }
    }
    if off > 0 {
        arenas.push(ArenaLayout { name, len: off });
    }
}

pub fn place(model: &Model) -> VarPlacement {
    let g = &model.graph;
    let numel = |v: usize| g.vars[v].shape.fixed_numel() as usize;
    let mut arenas = vec![ArenaLayout {
        name: "params".into(),
        len: 0,
    }];
    let mut vars: Vec<(usize, usize)> = vec![(usize::MAX, 0); g.vars.len()];
    // Parameters first, in declaration order.
    let mut offset = 0;
    for (i, v) in model.vars.iter().enumerate() {
        if let VarKind::Param { .. } = v.kind {
            vars[i] = (0, offset);
            offset += align(numel(i));
        }
    }
    arenas[0].len = offset;
    // One mirrored arena per slot name, in order of first appearance.
    let mut slot_arena: Vec<(String, usize)> = Vec::new();
    for (i, v) in model.vars.iter().enumerate() {
        if let VarKind::Slot { param, slot } = &v.kind {
            let a = match slot_arena.iter().find(|(s, _)| s == slot) {
                Some((_, a)) => *a,
                None => {
                    arenas.push(ArenaLayout {
                        name: format!("slot/{slot}"),
                        len: arenas[0].len,
                    });
                    slot_arena.push((slot.clone(), arenas.len() - 1));
                    arenas.len() - 1
                }
            };
            vars[i] = (a, vars[*param as usize].1);
        }
    }
    // Moving averages, mirroring params like slots.
    let mut avg_arena = None;
    for (i, v) in model.vars.iter().enumerate() {
        if let VarKind::Average { param } = &v.kind {
            let a = *avg_arena.get_or_insert_with(|| {
                arenas.push(ArenaLayout {
                    name: "average".into(),
                    len: arenas[0].len,
                });
                arenas.len() - 1
            });
            vars[i] = (a, vars[*param as usize].1);
        }
    }
    // Non-slot optimizer variables.
    let mut off = 0;
    let opt_arena = arenas.len();
    for (i, v) in model.vars.iter().enumerate() {
        if let VarKind::Optimizer = v.kind {
            vars[i] = (opt_arena, off);
            off += align(numel(i));
        }
    }
    arenas.push(ArenaLayout {
        name: "optimizer".into(),
        len: off,
    });
    // What replicas exchange: one arena summed over the replicas (packed,
    // so the allreduce is one call over contiguous memory), one gathered.
    for (gather, name) in [(false, EXCHANGE_SUM), (true, EXCHANGE_GATHER)] {
        pack(model, &mut arenas, &mut vars, name.into(), |k| {
            *k == VarKind::Exchange { gather }
        });
    }
    // The rows of sharded tables a replica's batch looks up.
    pack(model, &mut arenas, &mut vars, "fetched".into(), |k| {
        matches!(k, VarKind::Fetched { .. })
    });
    // A shared exchange: each replica's summed values, as `step` reads them,
    // laid out as the `exchange/sum` arena (the same variables in the same
    // order), so the runtime can point these arenas at the replicas' own.
    if model.shared_exchange {
        for r in 0..model.replicas.unwrap_or(1) {
            let name = specc_runtime::abi::exchange_peer_arena(r as usize);
            pack(model, &mut arenas, &mut vars, name, |k| {
                *k == VarKind::ExchangePeer { replica: r }
            });
        }
    }
    // Constant tensors.
    let const_arena = arenas.len();
    let mut consts = Vec::new();
    let mut off = 0;
    for c in &g.consts {
        consts.push((const_arena, off));
        off += align(c.values.len());
    }
    arenas.push(ArenaLayout {
        name: "consts".into(),
        len: off,
    });

    let mut layout_vars = Vec::new();
    for (i, v) in model.vars.iter().enumerate() {
        let leaf = &g.vars[i];
        layout_vars.push(VarLayout {
            name: leaf.name.clone(),
            shape: leaf.shape.concrete(1).iter().map(|&d| d as usize).collect(),
            arena: vars[i].0,
            offset: vars[i].1,
            init: v.init.clone(),
            kind: match &v.kind {
                VarKind::Param { trainable } => VarRole::Param {
                    trainable: *trainable,
                },
                VarKind::Slot { param, slot } => VarRole::Slot {
                    param: g.vars[*param as usize].name.clone(),
                    slot: slot.clone(),
                },
                VarKind::Optimizer => VarRole::Optimizer,
                VarKind::Average { param } => VarRole::Average {
                    param: g.vars[*param as usize].name.clone(),
                },
                VarKind::Exchange { gather } => VarRole::Exchange { gather: *gather },
                VarKind::ExchangePeer { replica } => VarRole::ExchangePeer { replica: *replica },
                VarKind::Fetched { table } => VarRole::Fetched {
                    table: g.vars[*table as usize].name.clone(),
                },
            },
            partitions: model.partitions_of(i as u32),
        });
    }
    for (k, c) in g.consts.iter().enumerate() {
        layout_vars.push(VarLayout {
            name: format!("const#{k}"),
            shape: c.shape.concrete(1).iter().map(|&d| d as usize).collect(),
            arena: consts[k].0,
            offset: consts[k].1,
            // Int constants hold their i32 bit patterns (arenas are raw 4-byte slots).
            init: Initializer::Constant(match c.dtype {
                DType::F32 => c.values.clone(),
                DType::I32 => c
                    .values
                    .iter()
                    .map(|&v| f32::from_bits(v as i32 as u32))
                    .collect(),
            }),
            kind: VarRole::Constant,
            partitions: Vec::new(),
        });
    }
    let inputs = g
        .inputs
        .iter()
        .zip(&model.inputs)
        .map(|(leaf, info)| InputLayout {
            name: leaf.name.clone(),
            elem: match leaf.dtype {
                DType::F32 => ElemType::F32,
                DType::I32 => ElemType::I32,
            },
            per_example: leaf.shape.fixed_numel() as usize,
            num_classes: match info.spec.kind {
                InputKind::ClassId { num_classes } => num_classes,
                InputKind::Float => None,
            },
            padding: matches!(
                info.spec.feature,
                Some(specc_runtime::feature_column::FeatureInput::Ids { .. })
            ),
        })
        .collect();
    VarPlacement {
        layout: Layout {
            arenas,
            vars: layout_vars,
            inputs,
            max_batch: model.train.batch as usize,
            sharded: model
                .sharded
                .iter()
                .map(|s| {
                    let table = g.vars[s.table as usize].name.clone();
                    specc_runtime::abi::ShardedLayout {
                        rows: s.rows as usize,
                        replicas: model.replicas.unwrap_or(1).max(1) as usize,
                        fetched: g.vars[s.fetched as usize].name.clone(),
                        ids: s
                            .ids
                            .iter()
                            .map(|&i| g.inputs[i as usize].name.clone())
                            .collect(),
                        grad_ids: format!("replica/ids/{table}"),
                        grad_values: format!("replica/values/{table}"),
                        table,
                    }
                })
                .collect(),
        },
        vars,
        consts,
    }
}
