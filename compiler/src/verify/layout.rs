//! The invariants of a model's memory layout (`layout`'s module doc; kept
//! by `layout::place`), and their check, [`placement`]:
//!
//! | invariant | what holds |
//! |---|---|
//! | `every-variable-placed` | every graph variable and constant tensor has an arena that exists, and the runtime's `Layout` lists each at the placement's arena and offset, its inputs parallel to the graph's |
//! | `aligned-offsets` | offsets are multiples of `layout::ALIGN` (16 elements, 64 bytes) |
//! | `inside-arena` | a variable's or constant's elements lie inside its arena |
//! | `no-shared-bytes` | two variables or constants of one arena share no element (a slot mirrors its parameter's offset in an arena of its own) |
//! | `slots-at-parameter-offsets` | a slot or moving average sits at its parameter's offset (its arena mirrors `params`) |
//! | `batch-sized` | the layout's `max_batch` is the model's `train { batch }`, at least 1 |

use super::{require, Verdict};
use crate::layout::{VarPlacement, ALIGN};
use crate::model::{Model, VarKind};

/// Checks the layout's invariants for `model`.
pub fn placement(model: &Model, p: &VarPlacement) -> Verdict {
    let g = &model.graph;
    let layout = &p.layout;
    require(
        p.vars.len() == g.vars.len()
            && p.consts.len() == g.consts.len()
            && layout.vars.len() == g.vars.len() + g.consts.len()
            && layout.inputs.len() == g.inputs.len(),
        "every-variable-placed",
        || {
            format!(
                "{} placements for {} variables, {} for {} constants, {} layout entries, {} inputs for {}",
                p.vars.len(),
                g.vars.len(),
                p.consts.len(),
                g.consts.len(),
                layout.vars.len(),
                layout.inputs.len(),
                g.inputs.len()
            )
        },
    )?;
    require(
        layout.max_batch >= 1 && layout.max_batch == model.train.batch as usize,
        "batch-sized",
        || {
            format!(
                "max_batch {} for batch {}",
                layout.max_batch, model.train.batch
            )
        },
    )?;
    // (name, arena, offset, elements) of everything placed.
    let items = g
        .vars
        .iter()
        .zip(&p.vars)
        .map(|(v, &(a, o))| (v.name.clone(), a, o, v.shape.fixed_numel() as usize))
        .chain(
            g.consts
                .iter()
                .zip(&p.consts)
                .enumerate()
                .map(|(k, (c, &(a, o)))| (format!("const#{k}"), a, o, c.values.len())),
        );
    let mut per_arena: Vec<Vec<(usize, usize, String)>> = vec![Vec::new(); layout.arenas.len()];
    for (i, (name, a, o, n)) in items.enumerate() {
        let Some(arena) = layout.arenas.get(a) else {
            return Err(super::broken(
                "every-variable-placed",
                format!("`{name}` is in arena {a} of {}", layout.arenas.len()),
            ));
        };
        let entry = &layout.vars[i];
        require(
            entry.name == name && entry.arena == a && entry.offset == o,
            "every-variable-placed",
            || {
                format!(
                    "layout entry {i} is `{}` at {}+{}, the placement has `{name}` at {a}+{o}",
                    entry.name, entry.arena, entry.offset
                )
            },
        )?;
        require(o % ALIGN == 0, "aligned-offsets", || {
            format!("`{name}` at offset {o} of `{}`", arena.name)
        })?;
        require(o + n <= arena.len, "inside-arena", || {
            format!(
                "`{name}` ({n} elements at {o}) in `{}` of {}",
                arena.name, arena.len
            )
        })?;
        per_arena[a].push((o, o + n, name));
    }
    for (a, items) in per_arena.iter_mut().enumerate() {
        items.sort();
        for w in items.windows(2) {
            require(w[0].1 <= w[1].0, "no-shared-bytes", || {
                format!(
                    "`{}` [{}, {}) and `{}` [{}, {}) in `{}`",
                    w[0].2, w[0].0, w[0].1, w[1].2, w[1].0, w[1].1, layout.arenas[a].name
                )
            })?;
        }
    }
    for (i, v) in model.vars.iter().enumerate() {
        if let VarKind::Slot { param, .. } | VarKind::Average { param } = &v.kind {
            let at = p.vars.get(*param as usize).map(|&(_, o)| o);
            require(
                at == Some(p.vars[i].1),
                "slots-at-parameter-offsets",
                || {
                    format!(
                        "`{}` at offset {}, its parameter at {at:?}",
                        g.vars[i].name, p.vars[i].1
                    )
                },
            )?;
        }
    }
    Ok(())
}
