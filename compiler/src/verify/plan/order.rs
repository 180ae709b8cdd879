//! The order of the kernels: what each reads was written before it, and a
//! variable's old value is read before it is overwritten.
//!
//! Of the order (`plan::order`, `plan::merge`, `plan::winofuse`,
//! `plan::epilogue`), checked by [`order`]:
//!
//! | invariant | what holds |
//! |---|---|
//! | `reads-after-writes` | a kernel reads a buffer only after an earlier kernel wrote it, unless it is a leaf's own memory (input, variable, constant) or a persistent marker table; a scatter into a variable's own memory reads that variable |
//! | `variables-read-before-overwritten` | no kernel reads a variable's old value (its leaf buffer) after an earlier kernel wrote any of its elements (the same loop may, element by element) |

use std::collections::HashSet;

use super::super::{broken, require, Verdict};
use super::access::{accesses, reach_at, reads_writes};
use super::Parts;
use crate::ir::{Graph, NodeId, Op};
use crate::plan::{BufId, Buffer, Kernel, Loc, RowOp};

/// Whether `buf` is a leaf's own memory (an input, a variable's value at
/// the start of the step, a constant), where the leaf's value is when the
/// function starts (a copy of a leaf into an output is not).
pub(super) fn leaf_home(p: &Parts, buf: &Buffer) -> bool {
    let arena = |(a, o): (usize, usize)| Loc::Arena {
        arena: a as u32,
        offset: o as u64,
    };
    match p.g.op(buf.node) {
        Op::Input(i) => buf.loc == Loc::Input(*i),
        Op::Var(v) => p.place.vars.get(*v as usize).map(|&x| arena(x)) == Some(buf.loc.clone()),
        Op::Tensor(c) => {
            p.place.consts.get(*c as usize).map(|&x| arena(x)) == Some(buf.loc.clone())
        }
        _ => false,
    }
}

/// The persistent marker tables: the tables of the first-occurrence kernels.
pub(super) fn persistent(p: &Parts) -> HashSet<BufId> {
    p.kernels
        .iter()
        .filter_map(|k| match k {
            Kernel::Rows(r)
                if matches!(
                    r.op,
                    RowOp::FirstOccurrence | RowOp::FirstOccurrenceHashed { .. }
                ) =>
            {
                r.src.as_ref().map(|v| v.buf)
            }
            _ => None,
        })
        .collect()
}

/// `reads-after-writes` and `variables-read-before-overwritten` for the
/// kernels in their order.
pub fn order(p: &Parts) -> Verdict {
    let g = p.g;
    let persistent = persistent(p);
    let mut written: HashSet<BufId> = HashSet::new();
    // (arena, [lo, hi) elements, kernel) written so far.
    let mut arena_writes: Vec<(u32, i128, i128, usize)> = Vec::new();
    let m = p.max_batch.max(1) as i64;
    for (i, k) in p.kernels.iter().enumerate() {
        let (reads, writes) = reads_writes(p, k);
        for b in reads {
            let buf = p.buffer(b);
            let leaf = leaf_home(p, buf);
            // A scatter into a variable's own memory starts from the variable.
            let own_base = match k {
                Kernel::Rows(r) if r.dst.buf == b => match g.op(g.inputs_of(r.node)[0]) {
                    Op::Var(v) => {
                        let (a, o) = p.place.vars[*v as usize];
                        buf.loc
                            == Loc::Arena {
                                arena: a as u32,
                                offset: o as u64,
                            }
                    }
                    _ => false,
                },
                _ => false,
            };
            require(
                leaf || own_base || persistent.contains(&b) || written.contains(&b),
                "reads-after-writes",
                || {
                    format!(
                        "k{i} reads {b} ({}, {:?}) before any kernel writes it",
                        buf.node, buf.loc
                    )
                },
            )?;
        }
        // Old values of variables read here, against what earlier kernels wrote.
        for a in accesses(p, k) {
            let buf = p.buffer(a.view.buf);
            let Loc::Arena { arena, offset } = buf.loc else {
                continue;
            };
            let Some((lo, hi)) = reach_at(&a, m) else {
                continue;
            };
            let (lo, hi) = (lo + i128::from(offset), hi + i128::from(offset));
            if a.usage.reads() && matches!(g.op(buf.node), Op::Var(_)) && leaf_home(p, buf) {
                if let Some(&(_, _, _, j)) = arena_writes
                    .iter()
                    .find(|&&(wa, wl, wh, _)| wa == arena && wl < hi && lo < wh)
                {
                    return Err(broken(
                        "variables-read-before-overwritten",
                        format!(
                            "k{i} reads `{}` ({}) after k{j} wrote it",
                            var_name(g, buf.node),
                            buf.node
                        ),
                    ));
                }
            }
        }
        for a in accesses(p, k) {
            let buf = p.buffer(a.view.buf);
            if let (Loc::Arena { arena, offset }, true) = (&buf.loc, a.usage.writes()) {
                if let Some((lo, hi)) = reach_at(&a, m) {
                    let o = i128::from(*offset);
                    arena_writes.push((*arena, lo + o, hi + o, i));
                }
            }
        }
        written.extend(writes);
    }
    Ok(())
}

fn var_name(g: &Graph, n: NodeId) -> &str {
    match g.op(n) {
        Op::Var(v) => &g.vars[*v as usize].name,
        _ => "?",
    }
}
