//! Loop kernels: one fused loop nest per planned loop.
//!
//! Owns: turning a [`LoopKernel`] into Cranelift loops, over the levels
//! `plan::nest` gives it (dimensions of size 1 dropped, adjacent dimensions
//! that every access walks contiguously merged), so most kernels become one
//! or two loops. The innermost loop
//! runs 4 lanes at a time (`f32x4`) with a scalar tail when every access is
//! contiguous or broadcast along it; otherwise it runs scalar. Reductions
//! accumulate in registers when the innermost dimension is reduced, in
//! memory (one vector load/add/store) when it is kept — except when the
//! reduced level is the one just outside the kept innermost level and no
//! other level is reduced (bias gradients, `reduce axes=[0] over [B, N]`):
//! then blocks of columns run outside and the rows inside, with the partial
//! results in registers (`interchanged`; same order per output). A short
//! constant innermost level ends in a partial vector when 2 or 3 elements
//! remain and that keeps the per-element operations and their order.
//!
//! With two threads a kernel is either split — each thread runs its side of
//! the cut `Nest::split` puts in the first kept (non-reduced) loop level
//! ([`Emitter::thread_range`]; the barrier analysis reasons about the same
//! cut) — or run by thread 0 alone. Reductions are never split along a
//! reduced dimension, and each output starts from the value of its first
//! reduced iteration (no separate initialization pass), so every element is
//! computed by one thread in one fixed order: results are the same bits for
//! any thread count.
//!
//! Invariants: the vector body and the scalar tail evaluate the same ops
//! (bit-identical per element); values computed inside a loop never escape
//! it except through stores and reduction accumulators; everything a loop
//! needs from the spine is prepared before the loop's region begins.
//!
//! This module prepares a kernel on the spine and emits its outer levels
//! ([`emit_loop`], with the counted loops every kernel uses); `innermost`
//! emits the innermost level (vector body, unrolling, scalar tail, register
//! reductions), `interchange` the reduced-then-kept pair of last levels, and
//! `body` one iteration's loads, operations, stores and reduction combines.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::Variable;

use super::emit::Emitter;
use crate::ir::NodeId;
use crate::plan::nest::{AccessKind, Nest};
use crate::plan::{Lin, LoopKernel, Mode, Source};

mod body;
mod innermost;
mod interchange;

use body::identity;
use innermost::{innermost, innermost_single};
use interchange::interchanged;

/// What the loop body needs, prepared on the spine.
struct Prepared {
    ty_vector: bool,
    /// Base address per access.
    bases: Vec<Value>,
    /// Byte stride per access per level.
    bstrides: Vec<Vec<Value>>,
    /// Element stride per access on the innermost level (for the vector test).
    inner_stride: Vec<Lin>,
    sizes: Vec<Value>,
    /// Scalar source values (f32) and their vector splats.
    scalars: HashMap<NodeId, (Value, Option<Value>)>,
    lane_iota: Option<Value>,
    /// The level split across threads and this thread's `[lo, hi)` of it.
    split: Option<(usize, Value, Value)>,
    /// Whether the last two levels (reduced, then kept) are emitted with the
    /// kept level outside (see [`interchanged`]).
    interchange: bool,
}

/// Indices of accesses: sources (loads), stores, reduction destinations.
struct AccessMap {
    source: HashMap<NodeId, usize>,
    store: Vec<usize>,
    dest: Vec<Option<usize>>,
}

/// A counted loop `for i in (start..end).step_by(step)` (the last step must fit entirely).
pub(crate) fn counted_loop(
    e: &mut Emitter,
    start: Value,
    end: Value,
    step: i64,
    body: &mut dyn FnMut(&mut Emitter, Value),
) {
    let iv = e.var(types::I64);
    e.b.def_var(iv, start);
    let header = e.b.create_block();
    let blk = e.b.create_block();
    let exit = e.b.create_block();
    e.b.ins().jump(header, &[]);
    e.b.switch_to_block(header);
    let i = e.b.use_var(iv);
    let next = e.b.ins().iadd_imm_s(i, step);
    let cond = e.b.ins().icmp(IntCC::SignedLessThanOrEqual, next, end);
    e.b.ins().brif(cond, blk, &[], exit, &[]);
    e.b.switch_to_block(blk);
    e.b.seal_block(blk);
    body(e, i);
    let i2 = e.b.use_var(iv);
    let n2 = e.b.ins().iadd_imm_s(i2, step);
    e.b.def_var(iv, n2);
    e.b.ins().jump(header, &[]);
    e.b.seal_block(header);
    e.b.switch_to_block(exit);
    e.b.seal_block(exit);
}

/// A counted loop that continues from the value a variable already holds.
pub(crate) fn tail_loop(
    e: &mut Emitter,
    iv: Variable,
    end: Value,
    body: &mut dyn FnMut(&mut Emitter, Value),
) {
    let header = e.b.create_block();
    let blk = e.b.create_block();
    let exit = e.b.create_block();
    e.b.ins().jump(header, &[]);
    e.b.switch_to_block(header);
    let i = e.b.use_var(iv);
    let cond = e.b.ins().icmp(IntCC::SignedLessThan, i, end);
    e.b.ins().brif(cond, blk, &[], exit, &[]);
    e.b.switch_to_block(blk);
    e.b.seal_block(blk);
    body(e, i);
    let i2 = e.b.use_var(iv);
    let n2 = e.b.ins().iadd_imm_s(i2, 1);
    e.b.def_var(iv, n2);
    e.b.ins().jump(header, &[]);
    e.b.seal_block(header);
    e.b.switch_to_block(exit);
    e.b.seal_block(exit);
}

pub fn emit_loop(e: &mut Emitter, k: &LoopKernel, mode: Mode) {
    // Accesses: loads, stores, reduction destinations (expanded over the domain).
    let accesses = k.accesses();
    let mut map = AccessMap {
        source: HashMap::new(),
        store: Vec::new(),
        dest: Vec::new(),
    };
    let mut loads = k
        .sources
        .iter()
        .filter(|(_, s)| matches!(s, Source::Load(..)))
        .map(|(n, _)| *n);
    let mut dests = Vec::new();
    for (i, a) in accesses.iter().enumerate() {
        match a.kind {
            AccessKind::Load => {
                map.source
                    .insert(loads.next().expect("one load per access"), i);
            }
            AccessKind::Store => map.store.push(i),
            AccessKind::Accumulate => dests.push(i),
        }
    }
    // `accesses` lists the destinations of the reductions that have one, in order.
    let mut dests = dests.into_iter();
    for r in &k.reductions {
        map.dest.push(
            r.dest
                .as_ref()
                .map(|_| dests.next().expect("one access per destination")),
        );
    }
    let iota_axes = k.iota_axes();
    let nest = k.nest();
    let nl = nest.levels.len();
    let one = Lin::constant(1);
    let inner_ok = |s: Lin| s.is_zero() || s == one;
    let vector = nl > 0
        && nest.strides.iter().enumerate().all(|(a, s)| {
            let inner = s[nl - 1];
            if map.store.contains(&a) {
                inner == one
            } else {
                inner_ok(inner)
            }
        });

    // Spine: sizes, bases, strides, scalars.
    let sizes: Vec<Value> = nest.levels.iter().map(|l| e.lin(l.size)).collect();
    let bases: Vec<Value> = accesses.iter().map(|a| e.view_ptr(a.view)).collect();
    let bstrides: Vec<Vec<Value>> = nest
        .strides
        .iter()
        .map(|s| s.iter().map(|&l| e.lin(l.scale(4))).collect())
        .collect();
    let vty = types::F32X4;
    let mut scalars = HashMap::new();
    for (n, s) in &k.sources {
        let v = match s {
            Source::Scalar(x) => e.scalar(*x),
            Source::Const(c) => e.b.ins().f32const(*c),
            _ => continue,
        };
        let splat = vector.then(|| e.b.ins().splat(vty, v));
        // Cranelift's mid-end would otherwise rebuild a scalar computed from
        // constants (Adam's bias-corrected rate: a sqrt and a divide) inside the
        // loop, as it rematerializes constants at their uses.
        let v = e.opaque(v);
        let splat = splat.map(|x| e.opaque(x));
        scalars.insert(*n, (v, splat));
    }
    let lane_iota = if vector && !iota_axes.is_empty() {
        let z = e.b.ins().f32const(0.0);
        let mut v = e.b.ins().splat(vty, z);
        for i in 1..4u8 {
            let c = e.b.ins().f32const(f32::from(i));
            v = e.b.ins().insertlane(v, c, i);
        }
        Some(v)
    } else {
        None
    };
    // Split the first kept level between threads (a kernel with none runs on
    // thread 0), where `Nest::split` cuts it.
    let split = match nest.split() {
        Some((l, cut)) if e.threads > 1 && mode == Mode::Split => {
            let (lo, hi) = e.thread_range(sizes[l], cut.align);
            Some((l, lo, hi))
        }
        _ => None,
    };
    let split_mode = split.is_some();
    // A reduction over the next-to-last level into the kept last level (a
    // bias gradient: sum over the batch) runs column blocks outside and rows
    // inside, with the block's partial sums in registers.
    let interchange = nl >= 2
        && nest.levels[nl - 2].reduced
        && !nest.levels[nl - 1].reduced
        && nest.levels[..nl - 2].iter().all(|l| !l.reduced)
        && k.reductions.iter().all(|r| r.dest.is_some());
    let prep = Prepared {
        interchange,
        ty_vector: vector,
        bases,
        bstrides,
        inner_stride: nest
            .strides
            .iter()
            .map(|s| s.last().copied().unwrap_or(Lin::ZERO))
            .collect(),
        sizes,
        scalars,
        lane_iota,
        split,
    };
    // SSA reductions accumulate in a variable; memory destinations take the
    // value of their first reduced iteration.
    let mut totals: Vec<Option<Variable>> = Vec::new();
    for r in &k.reductions {
        match &r.dest {
            Some(_) => totals.push(None),
            None => {
                let t = e.var(types::F32);
                let init = e.b.ins().f32const(identity(r.kind));
                e.b.def_var(t, init);
                totals.push(Some(t));
            }
        }
    }
    let ctx = KernelCtx {
        k,
        nest: &nest,
        map: &map,
        prep: &prep,
        totals: &totals,
    };
    let bases = prep.bases.clone();
    let run = |e: &mut Emitter| {
        let mut idx = Vec::new();
        e.region += 1;
        level(e, &ctx, 0, bases, &mut idx);
        e.region -= 1;
    };
    if split_mode || e.threads == 1 {
        run(e);
    } else {
        e.only_thread0(run);
    }
    for (r, t) in k.reductions.iter().zip(&totals) {
        if let Some(t) = t {
            let v = e.b.use_var(*t);
            e.scalars.insert(r.node, v);
        }
    }
}

struct KernelCtx<'a> {
    k: &'a LoopKernel,
    nest: &'a Nest,
    map: &'a AccessMap,
    prep: &'a Prepared,
    totals: &'a [Option<Variable>],
}

/// Emits loop level `l` given the access addresses at the enclosing level.
fn level(e: &mut Emitter, c: &KernelCtx, l: usize, ptrs: Vec<Value>, idx: &mut Vec<Value>) {
    let nl = c.nest.levels.len();
    if nl == 0 {
        // A single element.
        let zero = e.b.ins().iconst(types::I64, 0);
        innermost_single(e, c, &ptrs, zero, idx);
        return;
    }
    if l + 2 == nl && c.prep.interchange {
        interchanged(e, c, &ptrs, idx);
        return;
    }
    if l + 1 < nl {
        let (start, end) = match c.prep.split {
            Some((sl, lo, hi)) if sl == l => (lo, hi),
            _ => (e.b.ins().iconst(types::I64, 0), c.prep.sizes[l]),
        };
        counted_loop(e, start, end, 1, &mut |e, i| {
            let p: Vec<Value> = ptrs
                .iter()
                .enumerate()
                .map(|(a, &p)| {
                    let off = e.b.ins().imul(i, c.prep.bstrides[a][l]);
                    e.b.ins().iadd(p, off)
                })
                .collect();
            idx.push(i);
            level(e, c, l + 1, p, idx);
            idx.pop();
        });
        return;
    }
    innermost(e, c, &ptrs, idx);
}
