//! The invariants of a plan (`plan`'s module doc and its submodules'), and
//! their checks, one submodule per stage of the planner that keeps them,
//! each with the table of its invariants:
//! - the kernels ([`kernels`], here; bounds in `access`), once ordered
//!   (a violation there is `plan::lower`'s) and after each pass that
//!   rewrites the kernel list (`plan::merge`, `plan::winofuse`,
//!   `plan::epilogue`);
//! - their order ([`order()`](order::order)), after `plan::order` and the
//!   same passes;
//! - the scratch chains of the merged updates ([`memory::chains`]), with
//!   the kernels (a chain is what `plan::merge` tells `plan::memory`);
//! - the scratch offsets ([`memory::scratch`]), after `plan::memory`;
//! - the threads ([`finish::threads`]), after `plan::threads`;
//! - what the function writes and where its buffers are
//!   ([`finish::function`]), last.
//!
//! [`plan()`] runs them all on a finished plan.
//!
//! Of the kernels (`plan::kernel`, `plan::lower`, `plan::resolve`,
//! `plan::merge`, `plan::epilogue`, `plan::winofuse`), checked by
//! [`kernels`]:
//!
//! | invariant | what holds |
//! |---|---|
//! | `views-address-buffers` | every view names a buffer of the plan and has one stride per dimension it is indexed over |
//! | `loop-structure` | a loop's body is in dependency order: each body node reads earlier body nodes or the loop's sources; stores and reductions name body or source nodes; a reduction is its node's `Reduce` over exactly the loop's `reduce_axes` (sorted, in the domain), which a loop has exactly when it has reductions; an iota numbers an axis of the domain |
//! | `loop-shapes` | the body nodes, stored nodes and reduced inputs of a loop have its domain's shape, except in a merged update run (`plan::merge`): a flat `[span]` domain, no reductions, flat views, over members no larger than the span |
//! | `gemm-geometry` | a GEMM's `m`, `k`, `n` (and groups) multiply to its operands' and result's element counts |
//! | `row-geometry` | a row kernel's ids, rows and row length match its node's operands: tables are `rows × row_len`, per-id tensors `n × row_len`, a marker table has a slot per row (or twice the hash capacity) |
//! | `accesses-in-bounds` | stated in `access`, next to the arithmetic that checks it |
//! | `leaves-read-only` | no kernel writes an input, a constant, or a variable's value at the start of the step (its leaf buffer) |

mod access;
pub mod finish;
pub mod memory;
pub mod order;

use super::{broken, require, Verdict};
use crate::ir::{Dim, Function, Graph, NodeId, Op, Shape};
use crate::layout::VarPlacement;
use crate::plan::merge::Chain;
use crate::plan::{BufId, Buffer, Kernel, Lin, Loc, LoopKernel, Plan, RowOp, Source, View};
use access::{accesses, bounds, numel, same_count};
pub use finish::{function, threads};
pub use memory::scratch;
use order::leaf_home;
pub use order::order;

/// A plan's kernels and buffers as a phase leaves them.
#[derive(Clone, Copy)]
pub struct Parts<'a> {
    pub g: &'a Graph,
    pub place: &'a VarPlacement,
    pub buffers: &'a [Buffer],
    pub kernels: &'a [Kernel],
    /// The scratch chains of the merged update runs (`plan::merge`).
    pub chains: &'a [Chain],
    pub max_batch: u64,
}

impl<'a> Parts<'a> {
    /// The parts of a finished plan.
    pub fn of(g: &'a Graph, place: &'a VarPlacement, p: &'a Plan) -> Parts<'a> {
        Parts {
            g,
            place,
            buffers: &p.buffers,
            kernels: &p.kernels,
            chains: &p.chains,
            max_batch: p.max_batch,
        }
    }

    pub(super) fn buffer(&self, b: BufId) -> &'a Buffer {
        &self.buffers[b.0 as usize]
    }
}

/// Runs every check on a finished plan of `f`.
pub fn plan(g: &Graph, f: &Function, place: &VarPlacement, p: &Plan) -> Verdict {
    let parts = Parts::of(g, place, p);
    kernels(&parts)?;
    order(&parts)?;
    scratch(&parts, p)?;
    threads(g, p)?;
    function(g, f, place, p)
}

// ----------------------------------------------------------------- kernels

/// `views-address-buffers`, `loop-structure`, `loop-shapes`,
/// `gemm-geometry`, `row-geometry`, `accesses-in-bounds` and
/// `leaves-read-only` for every kernel (in any order), and
/// `scratch-chains` ([`memory::chains`]).
pub fn kernels(p: &Parts) -> Verdict {
    memory::chains(p)?;
    // Per node, the last kernel (plus one) in which it is available:
    // loaded, or computed so far (no hashing: loops of 100,000 nodes).
    let mut available = vec![0u32; p.g.len()];
    for (i, k) in p.kernels.iter().enumerate() {
        let at = |e: super::Violation| broken(e.invariant, format!("k{i}: {}", e.detail));
        views_address_buffers(p, k).map_err(at)?;
        let merged = match k {
            Kernel::Loop(l) => {
                loop_structure(p.g, l, &mut available, i as u32 + 1).map_err(at)?;
                loop_shapes(p.g, l).map_err(at)?
            }
            Kernel::Gemm { .. } => {
                gemm_geometry(p.g, k).map_err(at)?;
                false
            }
            Kernel::Rows(_) => {
                row_geometry(p, k).map_err(at)?;
                false
            }
            _ => false,
        };
        bounds(p, k, merged).map_err(at)?;
        for a in accesses(p, k) {
            let buf = p.buffer(a.view.buf);
            let leaf = leaf_home(p, buf) || matches!(buf.loc, Loc::Input(_));
            let consts = p
                .place
                .layout
                .arenas
                .iter()
                .position(|a| a.name == "consts")
                .map(|a| a as u32);
            let in_consts = matches!(buf.loc, Loc::Arena { arena, .. } if Some(arena) == consts);
            require(
                !a.usage.writes() || !(leaf || in_consts),
                "leaves-read-only",
                || {
                    format!(
                        "{} writes {} ({}, {:?})",
                        a.what, a.view.buf, buf.node, buf.loc
                    )
                },
            )
            .map_err(at)?;
        }
    }
    Ok(())
}

fn views_address_buffers(p: &Parts, k: &Kernel) -> Verdict {
    let mut views: Vec<&View> = Vec::new();
    match k {
        Kernel::Loop(l) => {
            views.extend(l.sources.iter().filter_map(|(_, s)| match s {
                Source::Load(v, _) => Some(v),
                _ => None,
            }));
            views.extend(l.stores.iter().map(|(_, v)| v));
            views.extend(l.reductions.iter().filter_map(|r| r.dest.as_ref()));
        }
        Kernel::Gemm {
            a, b, c, epilogue, ..
        } => {
            views.extend([a, b, c]);
            views.extend(epilogue.as_ref().and_then(|e| e.bias.as_ref()));
        }
        Kernel::ArgMax { src, dst, .. } => views.extend([src, dst]),
        Kernel::Window(w) => views.extend([&w.src, &w.dst]),
        Kernel::Recurrence(r) => {
            views.extend(r.inputs.iter());
            views.push(&r.dst);
        }
        Kernel::Rows(r) => {
            views.extend(
                [Some(&r.ids), r.src.as_ref(), r.first.as_ref(), Some(&r.dst)]
                    .into_iter()
                    .flatten(),
            );
        }
        Kernel::Winograd(w) => {
            views.push(&w.x);
            views.extend(
                [&w.u, &w.y, &w.v, &w.dy, &w.dx, &w.du]
                    .into_iter()
                    .flatten(),
            );
        }
    }
    for v in views {
        require(
            (v.buf.0 as usize) < p.buffers.len(),
            "views-address-buffers",
            || {
                format!(
                    "a view of {} in a plan of {} buffers",
                    v.buf,
                    p.buffers.len()
                )
            },
        )?;
    }
    // One stride per indexed dimension (flat runs index one).
    for a in accesses(p, k) {
        require(
            a.strides.len() == a.dims.len(),
            "views-address-buffers",
            || {
                format!(
                    "{} of {} has {} strides over {} dimensions",
                    a.what,
                    a.view.buf,
                    a.view.strides.len(),
                    a.dims.len()
                )
            },
        )?;
    }
    Ok(())
}

/// `loop-structure` of loop `l`; `available[n] == stamp` marks what the
/// loop has at hand so far.
fn loop_structure(g: &Graph, l: &LoopKernel, available: &mut [u32], stamp: u32) -> Verdict {
    let rank = l.domain.rank();
    let bad = |why: String| broken("loop-structure", why);
    let sorted = l.reduce_axes.windows(2).all(|w| w[0] < w[1]);
    if !sorted || l.reduce_axes.iter().any(|&a| a >= rank) {
        return Err(bad(format!(
            "reduce axes {:?} over {}",
            l.reduce_axes, l.domain
        )));
    }
    if l.reductions.is_empty() != l.reduce_axes.is_empty() {
        return Err(bad(format!(
            "{} reductions with reduce axes {:?}",
            l.reductions.len(),
            l.reduce_axes
        )));
    }
    let kept = rank - l.reduce_axes.len();
    let mark = |n: NodeId, available: &mut [u32]| {
        if let Some(a) = available.get_mut(n.index()) {
            *a = stamp;
        }
    };
    for (n, s) in &l.sources {
        mark(*n, available);
        match s {
            Source::Load(v, _) if v.strides.len() != rank => {
                return Err(bad(format!(
                    "the load of {n} has {} strides over {}",
                    v.strides.len(),
                    l.domain
                )));
            }
            Source::Iota { axis } if *axis >= rank => {
                return Err(bad(format!("an iota of axis {axis} over {}", l.domain)));
            }
            _ => {}
        }
    }
    for &m in &l.body {
        for &x in g.inputs_of(m) {
            if available.get(x.index()) != Some(&stamp) {
                return Err(bad(format!(
                    "{m} reads {x}, which the loop neither computes before it nor loads"
                )));
            }
        }
        mark(m, available);
    }
    let known = |n: &NodeId| available.get(n.index()) == Some(&stamp);
    for (n, v) in &l.stores {
        if !known(n) {
            return Err(bad(format!(
                "a store of {n}, which the loop neither computes nor loads"
            )));
        }
        if v.strides.len() != rank {
            return Err(bad(format!(
                "the store of {n} has {} strides over {}",
                v.strides.len(),
                l.domain
            )));
        }
    }
    for r in &l.reductions {
        let ok_op = matches!(g.op(r.node), Op::Reduce { kind, axes }
            if *kind == r.kind && axes.iter().map(|&a| usize::from(a)).eq(l.reduce_axes.iter().copied()));
        if !ok_op || g.inputs_of(r.node).first() != Some(&r.input) || !known(&r.input) {
            return Err(bad(format!(
                "reduction {} of {} over axes {:?} is {:?} of {:?}",
                r.node,
                r.input,
                l.reduce_axes,
                g.op(r.node),
                g.inputs_of(r.node)
            )));
        }
        if let Some(v) = &r.dest {
            if v.strides.len() != kept {
                return Err(bad(format!(
                    "reduction {}'s destination has {} strides for {kept} kept axes",
                    r.node,
                    v.strides.len()
                )));
            }
        }
    }
    Ok(())
}

/// `loop-shapes`; returns whether the loop is a merged update run.
fn loop_shapes(g: &Graph, l: &LoopKernel) -> Result<bool, super::Violation> {
    let members: Vec<NodeId> = l
        .body
        .iter()
        .copied()
        .chain(l.stores.iter().map(|(n, _)| *n))
        .chain(l.reductions.iter().map(|r| r.input))
        .collect();
    let Some(odd) = members.iter().find(|&&n| g.shape(n) != &l.domain) else {
        return Ok(false);
    };
    // A merged update run: a flat span over members no larger than it.
    let flat = |v: &View| v.offset == Lin::ZERO && v.strides == [Lin::constant(1)];
    let span = match l.domain.0.as_slice() {
        [Dim::Fixed(n)] => u64::from(*n),
        _ => 0,
    };
    let merged = span > 0
        && l.reductions.is_empty()
        && l.sources.iter().all(|(_, s)| match s {
            Source::Load(v, _) => flat(v),
            Source::Iota { .. } => false,
            _ => true,
        })
        && l.stores.iter().all(|(_, v)| flat(v))
        && members.iter().all(|&n| {
            let s = g.shape(n);
            !s.has_batch() && s.fixed_numel() <= span
        });
    require(merged, "loop-shapes", || {
        format!("{odd} is {} in a loop over {}", g.shape(*odd), l.domain)
    })?;
    Ok(true)
}

fn gemm_geometry(g: &Graph, k: &Kernel) -> Verdict {
    let Kernel::Gemm {
        node,
        m,
        k: kk,
        n,
        groups,
        ..
    } = k
    else {
        return Ok(());
    };
    let ins = g.inputs_of(*node);
    let count = groups.map_or(Lin::constant(1), |gr| gr.count);
    // An operand's elements per group: a fixed count divides both terms; a
    // count of B (one product per example) takes the batch term's factor.
    let per = |s: &Shape| {
        let l = numel(s);
        match count {
            Lin { c, b: 0 } if c > 0 => Lin {
                c: l.c / c,
                b: l.b / c,
            },
            Lin { c: 0, b } if b > 0 && l.c == 0 => Lin::constant(l.b / b),
            _ => Lin { c: -1, b: -1 },
        }
    };
    let ok = matches!(g.op(*node), Op::MatMul { .. } | Op::BatchMatMul { .. })
        && ins.len() == 2
        && same_count(*m, *kk, per(g.shape(ins[0])))
        && same_count(*kk, *n, per(g.shape(ins[1])))
        && same_count(*m, *n, per(g.shape(*node)));
    require(ok, "gemm-geometry", || {
        format!(
            "{node} = {:?} of {:?} as m={m} k={kk} n={n} in {count} groups",
            g.op(*node),
            ins.iter()
                .map(|&i| g.shape(i).to_string())
                .collect::<Vec<_>>()
        )
    })
}

fn row_geometry(p: &Parts, k: &Kernel) -> Verdict {
    let Kernel::Rows(r) = k else { return Ok(()) };
    let g = p.g;
    let ins = g.inputs_of(r.node);
    let table = |s: &Shape| {
        s.0.first().and_then(|d| d.fixed()).map(u64::from) == Some(r.rows)
            && s.fixed_numel() == r.rows * r.row_len
    };
    let per_id = |s: &Shape| same_count(r.n, Lin::constant(r.row_len as i64), numel(s));
    let ids = |i: usize| same_count(r.n, Lin::constant(1), numel(g.shape(ins[i])));
    let ok = match r.op {
        RowOp::Gather => ids(1) && table(g.shape(ins[0])) && per_id(g.shape(r.node)),
        RowOp::ScatterAdd => ids(1) && table(g.shape(r.node)) && per_id(g.shape(ins[2])),
        RowOp::ScatterRows => ids(1) && ids(2) && table(g.shape(r.node)) && per_id(g.shape(ins[3])),
        RowOp::FirstOccurrence | RowOp::FirstOccurrenceHashed { .. } => {
            let slots = match r.op {
                RowOp::FirstOccurrenceHashed { capacity } => 2 * u64::from(capacity),
                _ => r.rows,
            };
            let marker = r.src.as_ref().map(|v| p.buffer(v.buf).shape.fixed_numel());
            ids(0) && r.row_len == 1 && marker == Some(slots)
        }
        RowOp::SumDuplicates => ids(1) && per_id(g.shape(ins[0])) && per_id(g.shape(r.node)),
    };
    require(ok, "row-geometry", || {
        format!(
            "{:?} {} over {} ids, {} rows of {}",
            r.op, r.node, r.n, r.rows, r.row_len
        )
    })
}
