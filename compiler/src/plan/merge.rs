//! Horizontal fusion of the variable updates: one loop per arena.
//!
//! Owns: merging the update loops of several parameters into one loop over
//! their contiguous memory. Parameters sit back to back in the `params`
//! arena and every slot and moving-average arena mirrors those offsets, so
//! when the update loops of adjacent parameters compute the same thing (the
//! same ops on the same scalars: one optimizer rule), one loop over the whole
//! span does them all: Adam's update of every parameter of an MLP is one
//! vectorized pass per arena instead of one loop (and one scalar tail) per
//! tensor. The gradients those loops read are placed by the memory planner in
//! one scratch block with the same relative offsets (a [`Chain`]).
//!
//! Invariants: a merged loop computes exactly what its members computed
//! (the same ops per element, each element of each variable once); the
//! padding between variables is computed on but belongs to no variable; a
//! member moves later only past kernels that do not read what it writes; a
//! buffer is accessed by one member of one run at most, once (a chain
//! gives each scratch buffer one offset, and the merged loop reads every
//! member through the first).

use std::collections::{HashMap, HashSet};

use super::view::{Lin, View};
use super::{BufId, Buffer, Kernel, Loc, LoopKernel, Source};
use crate::ir::{DType, Graph, NodeId, Op, Shape};
use crate::layout::ALIGN;

/// Scratch buffers that must be laid out back to back: `(buffer, element
/// offset from the first)`, spanning `len` elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub members: Vec<(BufId, u64)>,
    pub len: u64,
}

/// What a loop computes, with node ids replaced by positions, so two
/// parameters' update loops compare equal.
#[derive(Clone, Debug, PartialEq)]
struct Signature {
    sources: Vec<Operand>,
    body: Vec<(Op, Vec<usize>)>,
    stores: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Load(DType),
    Scalar(NodeId),
    Const(u32),
}

/// A candidate: an elementwise loop over a fixed shape whose every access is
/// the whole of a buffer (all its elements), row-major, and whose every
/// store is a variable.
struct Candidate {
    index: usize,
    sig: Signature,
    numel: u64,
    /// Buffers of the loads, then of the stores.
    bufs: Vec<BufId>,
}

fn candidate(g: &Graph, buffers: &[Buffer], index: usize, k: &LoopKernel) -> Option<Candidate> {
    if !k.reductions.is_empty() || k.domain.has_batch() {
        return None;
    }
    // The whole buffer, not a leading part of a larger one (a slice of a
    // concatenated gradient): a chain places each member in its variable's
    // span only.
    let whole = |v: &View| {
        v.offset.is_zero()
            && v.is_row_major(&k.domain)
            && buffers[v.buf.0 as usize].shape.fixed_numel() == k.domain.fixed_numel()
    };
    let mut local: HashMap<NodeId, usize> = HashMap::new();
    let mut sources = Vec::new();
    let mut bufs = Vec::new();
    for (n, s) in &k.sources {
        let op = match s {
            Source::Load(v, dt) if whole(v) => {
                bufs.push(v.buf);
                Operand::Load(*dt)
            }
            Source::Scalar(x) => Operand::Scalar(*x),
            Source::Const(c) => Operand::Const(c.to_bits()),
            _ => return None,
        };
        local.insert(*n, sources.len());
        sources.push(op);
    }
    let mut body = Vec::new();
    for &n in &k.body {
        let inputs = g
            .inputs_of(n)
            .iter()
            .map(|i| local.get(i).copied())
            .collect::<Option<Vec<usize>>>()?;
        local.insert(n, sources.len() + body.len());
        body.push((g.op(n).clone(), inputs));
    }
    let mut stores = Vec::new();
    for (n, v) in &k.stores {
        if !whole(v) || !matches!(buffers[v.buf.0 as usize].loc, Loc::Arena { .. }) {
            return None;
        }
        stores.push(*local.get(n)?);
        bufs.push(v.buf);
    }
    // A buffer accessed twice would be two members of the chain (or a
    // member of two chains) at one offset.
    let distinct: HashSet<BufId> = bufs.iter().copied().collect();
    if stores.is_empty() || distinct.len() < bufs.len() {
        return None;
    }
    Some(Candidate {
        index,
        sig: Signature {
            sources,
            body,
            stores,
        },
        numel: k.domain.fixed_numel(),
        bufs,
    })
}

fn arena(buffers: &[Buffer], b: BufId) -> Option<(u32, u64)> {
    match buffers[b.0 as usize].loc {
        Loc::Arena { arena, offset } => Some((arena, offset)),
        _ => None,
    }
}

fn is_scratch(buffers: &[Buffer], b: BufId) -> bool {
    matches!(buffers[b.0 as usize].loc, Loc::Scratch { .. })
}

/// Whether `next` continues `prev` in memory at every access: arena accesses
/// one aligned parameter further in the same arena, scratch accesses anywhere
/// (the chain will place them).
fn adjacent(buffers: &[Buffer], prev: &Candidate, next: &Candidate) -> bool {
    let step = (prev.numel as usize).div_ceil(ALIGN) * ALIGN;
    prev.bufs.iter().zip(&next.bufs).all(|(&a, &b)| {
        if a == b {
            return false;
        }
        match (arena(buffers, a), arena(buffers, b)) {
            (Some((aa, ao)), Some((ba, bo))) => aa == ba && bo == ao + step as u64,
            (None, None) => is_scratch(buffers, a) && is_scratch(buffers, b),
            _ => false,
        }
    })
}

/// The arena ranges `(arena, lo, hi)` kernel `k` reads or writes.
fn arena_ranges(buffers: &[Buffer], k: &Kernel) -> Vec<(u32, u64, u64)> {
    super::memory::touched(k)
        .iter()
        .filter_map(|&b| {
            let buf = &buffers[b.0 as usize];
            match buf.loc {
                Loc::Arena { arena, offset } => {
                    Some((arena, offset, offset + buf.shape.fixed_numel().max(1)))
                }
                _ => None,
            }
        })
        .collect()
}

/// Whether any of `touched` overlaps any of `ranges` (both `(arena, lo, hi)`).
fn overlaps(touched: &[(u32, u64, u64)], ranges: &[(u32, u64, u64)]) -> bool {
    touched.iter().any(|&(ta, tlo, thi)| {
        ranges
            .iter()
            .any(|&(a, lo, hi)| a == ta && tlo < hi && lo < thi)
    })
}

/// Ends the run being built: kept when it merges two members or more, else
/// its buffers are free again.
fn end_run<'c>(
    run: &mut Vec<&'c Candidate>,
    runs: &mut Vec<Vec<&'c Candidate>>,
    used: &mut HashSet<BufId>,
) {
    if run.len() > 1 {
        runs.push(std::mem::take(run));
    } else {
        for c in run.drain(..) {
            for b in &c.bufs {
                used.remove(b);
            }
        }
    }
}

/// Merges runs of adjacent, identical update loops; returns the scratch
/// chains the memory planner must honor.
pub fn merge_updates(g: &Graph, buffers: &[Buffer], kernels: &mut Vec<Kernel>) -> Vec<Chain> {
    let cands: Vec<Candidate> = kernels
        .iter()
        .enumerate()
        .filter_map(|(i, k)| match k {
            Kernel::Loop(l) => candidate(g, buffers, i, l),
            _ => None,
        })
        .collect();
    // Group by signature, members in arena order of their first store.
    let mut groups: Vec<Vec<&Candidate>> = Vec::new();
    for c in &cands {
        match groups.iter_mut().find(|gr| gr[0].sig == c.sig) {
            Some(gr) => gr.push(c),
            None => groups.push(vec![c]),
        }
    }
    let store0 = |c: &Candidate| arena(buffers, c.bufs[c.bufs.len() - c.sig.stores.len()]);
    // Runs of adjacent members. A buffer is in one run at most, once: a
    // chain gives each of its scratch buffers one offset, so a gradient that
    // two members read (the biases of one sum: one node, hash-consed) would
    // be placed twice and the merged loop would read it from the wrong
    // bytes. `used`: the buffers of the runs so far and of the run built.
    let mut runs: Vec<Vec<&Candidate>> = Vec::new();
    let mut used: HashSet<BufId> = HashSet::new();
    for mut gr in groups {
        gr.sort_by_key(|c| store0(c));
        let mut run: Vec<&Candidate> = Vec::new();
        for c in gr {
            let free = |used: &HashSet<BufId>| c.bufs.iter().all(|b| !used.contains(b));
            if !(free(&used) && run.last().is_some_and(|p| adjacent(buffers, p, c))) {
                end_run(&mut run, &mut runs, &mut used);
                if !free(&used) {
                    continue;
                }
            }
            used.extend(c.bufs.iter().copied());
            run.push(c);
        }
        end_run(&mut run, &mut runs, &mut used);
    }
    // What each kernel touches in the arenas, computed once for the checks below.
    let touched: Vec<Vec<(u32, u64, u64)>> =
        kernels.iter().map(|k| arena_ranges(buffers, k)).collect();
    let mut chains = Vec::new();
    let mut replace: HashMap<usize, Option<Kernel>> = HashMap::new();
    for run in runs {
        let (first, last) = (run[0], run[run.len() - 1]);
        let (_, base) = store0(first).expect("stores are arena variables");
        let (_, end) = store0(last).expect("stores are arena variables");
        let span = end - base + last.numel;
        // Members move to the latest member's place: nothing in between may
        // read or write what a member writes.
        let hi = run.iter().map(|c| c.index).max().expect("run");
        let members: Vec<usize> = run.iter().map(|c| c.index).collect();
        let is_member: HashSet<usize> = members.iter().copied().collect();
        let stores_from = first.bufs.len() - first.sig.stores.len();
        let blocked = run.iter().any(|m| {
            let written: Vec<(u32, u64, u64)> = m.bufs[stores_from..]
                .iter()
                .map(|&b| {
                    let (a, o) = arena(buffers, b).expect("arena store");
                    (a, o, o + m.numel)
                })
                .collect();
            (m.index + 1..hi)
                .filter(|i| !is_member.contains(i))
                .any(|i| overlaps(&touched[i], &written))
        });
        if blocked {
            continue;
        }
        // Scratch accesses become a chain mirroring the arena offsets.
        for p in 0..first.bufs.len() {
            if is_scratch(buffers, first.bufs[p]) {
                chains.push(Chain {
                    members: run
                        .iter()
                        .map(|c| {
                            let (_, o) = store0(c).expect("arena store");
                            (c.bufs[p], o - base)
                        })
                        .collect(),
                    len: span,
                });
            }
        }
        let Kernel::Loop(k) = &kernels[first.index] else {
            unreachable!("candidates are loops")
        };
        let domain = Shape::fixed(&[span as u32]);
        let flat = |v: &View| View {
            buf: v.buf,
            offset: Lin::ZERO,
            strides: vec![Lin::constant(1)],
        };
        let merged = LoopKernel {
            domain,
            reduce_axes: vec![],
            body: k.body.clone(),
            sources: k
                .sources
                .iter()
                .map(|(n, s)| {
                    let s = match s {
                        Source::Load(v, dt) => Source::Load(flat(v), *dt),
                        other => other.clone(),
                    };
                    (*n, s)
                })
                .collect(),
            stores: k.stores.iter().map(|(n, v)| (*n, flat(v))).collect(),
            reductions: vec![],
        };
        for &m in &members {
            replace.insert(m, None);
        }
        replace.insert(hi, Some(Kernel::Loop(merged)));
    }
    let old = std::mem::take(kernels);
    for (i, k) in old.into_iter().enumerate() {
        match replace.remove(&i) {
            None => kernels.push(k),
            Some(Some(m)) => kernels.push(m),
            Some(None) => {}
        }
    }
    chains
}
