//! The threads of a finished plan, and what the function writes.
//!
//! | invariant | what holds | checked by |
//! |---|---|---|
//! | `thread-modes` | one mode and one barrier flag per kernel; a one-thread plan runs every kernel `Single` with no barrier; row kernels run whole, an argmax splits only with two kept axes, a split loop has a kept level to cut (`plan::threads`) | [`threads`] |
//! | `barriers-current` | the barriers are the ones `plan::threads` derives for the final kernels and scratch offsets (nothing changed the plan after they were placed) | [`threads`] |
//! | `buffers-placed` | leaves are where the layout put them (inputs at their slot, variables and constants at their arena offsets); arena buffers lie inside their arena; output buffers name an output; a buffer has its node's dtype and shape (a marker table excepted) (`plan::placement`) | [`function`] |
//! | `outputs-written` | the output layouts are the function's outputs; a tensor output is written by a kernel into its output buffer, a scalar one is among the scalar outputs (`Planner::finish`) | [`function`] |
//! | `updates-written` | every tensor variable update is written over the whole variable by some kernel; a scalar one is among the scalar updates at the variable's place; `var_locs` is the layout's | [`function`] |
//!
//! What is not re-derived here: that no two threads touch the same bytes
//! between barriers is what `plan::threads::syncs` proves; the verifier
//! checks that its barriers are the ones of the final plan.

use specc_runtime::abi::ElemType;

use super::super::{broken, require, Verdict};
use super::access::{accesses, reach_at};
use super::Parts;
use crate::ir::{DType, Function, Graph, Op};
use crate::layout::VarPlacement;
use crate::plan::{BufId, Kernel, Loc, Mode, Plan};

/// `thread-modes` and `barriers-current` of plan `pl`.
pub fn threads(g: &Graph, pl: &Plan) -> Verdict {
    let n = pl.kernels.len();
    require(
        pl.modes.len() == n && pl.syncs.before.len() == n && (1..=2).contains(&pl.threads),
        "thread-modes",
        || {
            format!(
                "{} modes and {} barrier flags for {n} kernels, {} threads",
                pl.modes.len(),
                pl.syncs.before.len(),
                pl.threads
            )
        },
    )?;
    for (i, (k, mode)) in pl.kernels.iter().zip(&pl.modes).enumerate() {
        if *mode == Mode::Single {
            continue;
        }
        let why = if pl.threads == 1 {
            Some("a one-thread plan splits it")
        } else {
            match k {
                Kernel::Rows(_) => Some("a row kernel is split"),
                Kernel::ArgMax { shape, .. } if shape.rank() < 3 => {
                    Some("an argmax with one kept axis is split")
                }
                Kernel::Loop(l) if l.nest().split().is_none() => {
                    Some("a loop without a kept level is split")
                }
                _ => None,
            }
        };
        if let Some(why) = why {
            return Err(broken("thread-modes", format!("k{i}: {why}")));
        }
    }
    require(
        pl.threads > 1 || pl.syncs.count() == 0,
        "thread-modes",
        || format!("a one-thread plan with {} barriers", pl.syncs.count()),
    )?;
    let derived = crate::plan::threads_syncs(g, pl);
    require(derived == pl.syncs, "barriers-current", || {
        let at = |s: &crate::plan::Syncs| {
            s.before
                .iter()
                .enumerate()
                .filter(|(_, b)| **b)
                .map(|(i, _)| format!("k{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "the plan has barriers before [{}] (scalars: {}), its kernels need [{}] (scalars: {})",
            at(&pl.syncs),
            pl.syncs.before_scalars,
            at(&derived),
            derived.before_scalars
        )
    })
}

/// `buffers-placed`, `outputs-written` and `updates-written` of plan `pl`
/// of function `f`.
pub fn function(g: &Graph, f: &Function, place: &VarPlacement, pl: &Plan) -> Verdict {
    let layout = &place.layout;
    let arena_loc = |(a, o): (usize, usize)| Loc::Arena {
        arena: a as u32,
        offset: o as u64,
    };
    for (j, buf) in pl.buffers.iter().enumerate() {
        let b = BufId(j as u32);
        // A leaf's own buffer is where the layout put it (a copy of it into
        // an output or scratch is not its own).
        let copy = matches!(buf.loc, Loc::Output(_) | Loc::Scratch { .. });
        let want = match g.op(buf.node) {
            _ if copy => None,
            Op::Input(i) => Some(Loc::Input(*i)),
            Op::Var(v) => place.vars.get(*v as usize).map(|&x| arena_loc(x)),
            Op::Tensor(c) => place.consts.get(*c as usize).map(|&x| arena_loc(x)),
            _ => None,
        };
        let marker = matches!(g.op(buf.node), Op::FirstOccurrence { .. })
            && matches!(buf.loc, Loc::Scratch { .. })
            && buf.shape != *g.shape(buf.node);
        let fits = match buf.loc {
            Loc::Input(i) => {
                (i as usize) < layout.inputs.len()
                    && matches!(g.op(buf.node), Op::Input(k) if *k == i)
            }
            Loc::Output(k) => (k as usize) < f.outputs.len(),
            Loc::Arena { arena, offset } => layout.arenas.get(arena as usize).is_some_and(|a| {
                offset + buf.shape.fixed_numel() <= a.len as u64 && !buf.shape.has_batch()
            }),
            Loc::Scratch { .. } => true,
        };
        require(
            fits && want.as_ref().is_none_or(|w| *w == buf.loc)
                && (marker || (buf.shape == *g.shape(buf.node) && buf.dtype == g.dtype(buf.node))),
            "buffers-placed",
            || {
                format!(
                    "{b} = {} ({}{}) at {:?}",
                    buf.node, buf.dtype, buf.shape, buf.loc
                )
            },
        )?;
    }
    require(pl.var_locs == place.vars, "updates-written", || {
        "the plan's variable places are not the layout's".into()
    })?;
    // Outputs.
    require(
        pl.outputs.len() == f.outputs.len(),
        "outputs-written",
        || {
            format!(
                "{} output layouts for {} outputs",
                pl.outputs.len(),
                f.outputs.len()
            )
        },
    )?;
    let m = pl.max_batch.max(1) as i64;
    let parts = Parts::of(g, place, pl);
    // (buffer, use) of every write.
    let writes: Vec<(BufId, Option<(i128, i128)>)> = pl
        .kernels
        .iter()
        .flat_map(|k| {
            accesses(&parts, k)
                .into_iter()
                .filter(|a| a.usage.writes())
                .map(|a| (a.view.buf, reach_at(&a, m)))
                .collect::<Vec<_>>()
        })
        .collect();
    for (k, (o, lay)) in f.outputs.iter().zip(&pl.outputs).enumerate() {
        let s = g.shape(o.node);
        let elem = match g.dtype(o.node) {
            DType::F32 => ElemType::F32,
            DType::I32 => ElemType::I32,
        };
        require(
            lay.name == o.name
                && lay.elem == elem
                && lay.per_example as u64 == s.fixed_numel()
                && lay.batched == s.has_batch(),
            "outputs-written",
            || format!("output `{}` {} laid out as {lay:?}", o.name, s),
        )?;
        let done = if s.is_scalar() {
            pl.scalar_outputs.contains(&(k as u32, o.node))
        } else {
            writes
                .iter()
                .any(|(b, _)| pl.buffer(*b).loc == Loc::Output(k as u32))
        };
        require(done, "outputs-written", || {
            format!("no kernel writes output `{}` ({})", o.name, o.node)
        })?;
    }
    for &(v, n) in &f.updates {
        let (a, off) = place.vars[v as usize];
        let s = g.shape(n);
        let done = if s.is_scalar() {
            pl.scalar_updates.contains(&(a as u32, off as u64, n))
        } else {
            let (lo, hi) = (off as i128, off as i128 + i128::from(s.fixed_numel()));
            writes
                .iter()
                .any(|(b, r)| match (pl.buffer(*b).loc.clone(), r) {
                    (Loc::Arena { arena, offset }, Some((l, h))) => {
                        arena as usize == a
                            && l + i128::from(offset) <= lo
                            && hi <= h + i128::from(offset)
                    }
                    _ => false,
                })
        };
        require(done, "updates-written", || {
            format!(
                "no kernel writes all of `{}` ({n})",
                g.vars[v as usize].name
            )
        })?;
    }
    Ok(())
}
