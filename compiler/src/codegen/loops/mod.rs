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

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, Type, Value};
use cranelift_frontend::Variable;

use super::emit::{trusted, Emitter};
use super::ops;
use crate::ir::{DType, NodeId, Op, ReduceKind};
use crate::plan::nest::{AccessKind, Nest};
use crate::plan::{Lin, LoopKernel, Mode, Source};

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

fn identity(kind: ReduceKind) -> f32 {
    match kind {
        ReduceKind::Sum => 0.0,
        ReduceKind::Max => f32::NEG_INFINITY,
    }
}

fn combine(e: &mut Emitter, ty: Type, kind: ReduceKind, acc: Value, x: Value) -> Value {
    match kind {
        ReduceKind::Sum => e.b.ins().fadd(acc, x),
        ReduceKind::Max => ops::binary(e.b, ty, crate::ir::BinaryOp::Max, acc, x),
    }
}

/// Horizontal reduction of an f32x4.
fn hreduce(e: &mut Emitter, kind: ReduceKind, v: Value) -> Value {
    let l: Vec<Value> = (0..4u8).map(|i| e.b.ins().extractlane(v, i)).collect();
    let a = combine(e, types::F32, kind, l[0], l[1]);
    let b = combine(e, types::F32, kind, l[2], l[3]);
    combine(e, types::F32, kind, a, b)
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

fn innermost_single(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], j: Value, idx: &[Value]) {
    let vals = body(e, c, types::F32, ptrs, j, idx, 1, &HashMap::new());
    store_all(e, c, types::F32, ptrs, j, &vals, false);
    for (ri, r) in c.k.reductions.iter().enumerate() {
        let x = vals[&r.input];
        let first = e.b.ins().iconst(types::I8, 1);
        accumulate_scalar(e, c, ri, r.kind, ptrs, x, first);
    }
}

/// Whether every reduced level outside the innermost is at its first index
/// (the iteration that initializes a memory destination). An i8 0/1.
fn first_iteration(e: &mut Emitter, c: &KernelCtx, idx: &[Value]) -> Value {
    let mut first = e.b.ins().iconst(types::I8, 1);
    for (l, &i) in idx.iter().enumerate() {
        if c.nest.levels[l].reduced {
            let z = e.b.ins().icmp_imm_s(IntCC::Equal, i, 0);
            first = e.b.ins().band(first, z);
        }
    }
    first
}

/// Adds a finished per-row value into its destination (memory or SSA
/// total); `first` (an i8) says the memory destination starts from `x`.
#[allow(clippy::too_many_arguments)]
fn accumulate_scalar(
    e: &mut Emitter,
    c: &KernelCtx,
    ri: usize,
    kind: ReduceKind,
    ptrs: &[Value],
    x: Value,
    first: Value,
) {
    match (c.totals[ri], c.map.dest[ri]) {
        (Some(t), _) => {
            let acc = e.b.use_var(t);
            let n = combine(e, types::F32, kind, acc, x);
            e.b.def_var(t, n);
        }
        (None, Some(a)) => {
            let p = ptrs[a];
            let old = e.b.ins().load(types::F32, trusted(), p, 0);
            let n = combine(e, types::F32, kind, old, x);
            let v = e.b.ins().select(first, x, n);
            e.b.ins().store(trusted(), v, p, 0);
        }
        (None, None) => {}
    }
}

fn innermost(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], idx: &[Value]) {
    let nl = c.nest.levels.len();
    let inner_reduced = c.nest.levels[nl - 1].reduced;
    let (start, n) = match c.prep.split {
        Some((sl, lo, hi)) if sl == nl - 1 => (lo, hi),
        _ => (e.b.ins().iconst(types::I64, 0), c.prep.sizes[nl - 1]),
    };
    let first = if c.k.reductions.is_empty() {
        None
    } else {
        Some(first_iteration(e, c, idx))
    };
    // Broadcast loads along the innermost level are loaded once per row.
    let mut hoisted: HashMap<NodeId, (Value, Option<Value>)> = HashMap::new();
    for (node, s) in &c.k.sources {
        if let Source::Load(_, dt) = s {
            let a = c.map.source[node];
            if c.prep.inner_stride[a].is_zero() {
                let v = e.load_scalar(ptrs[a], *dt);
                let splat = c.prep.ty_vector.then(|| e.b.ins().splat(types::F32X4, v));
                hoisted.insert(*node, (v, splat));
            }
        }
    }
    // Register accumulators when the innermost level is reduced.
    let mut vaccs = Vec::new();
    let mut saccs = Vec::new();
    if inner_reduced {
        for r in &c.k.reductions {
            let id = e.b.ins().f32const(identity(r.kind));
            let sv = e.var(types::F32);
            e.b.def_var(sv, id);
            saccs.push(sv);
            if c.prep.ty_vector {
                let vv = e.var(types::F32X4);
                let splat = e.b.ins().splat(types::F32X4, id);
                e.b.def_var(vv, splat);
                vaccs.push(vv);
            }
        }
    }
    let steps = Steps {
        ptrs,
        idx,
        hoisted: &hoisted,
        vaccs: &vaccs,
        saccs: &saccs,
        first,
        inner_reduced,
    };
    // A short constant trip count is unrolled into straight-line code
    // (Cranelift does not unroll); otherwise a vector loop and a scalar tail.
    let constant_trip = match (c.nest.levels[nl - 1].size, c.prep.split) {
        (Lin { c: trip, b: 0 }, split) if trip <= 16 && split.is_none_or(|s| s.0 != nl - 1) => {
            Some(trip)
        }
        _ => None,
    };
    if let Some(trip) = constant_trip {
        let mut j = 0;
        if c.prep.ty_vector {
            while j + 4 <= trip {
                let jj = e.b.ins().iconst(types::I64, j);
                step(e, c, &steps, jj, true);
                j += 4;
            }
        }
        // A remainder of 2 or 3 elements is one partial vector when that
        // gives the same operations per element in the same order (no
        // reduction, or one over this level, combined lane by lane).
        if c.prep.ty_vector
            && (2..4).contains(&(trip - j))
            && (c.k.reductions.is_empty() || inner_reduced)
        {
            let jj = e.b.ins().iconst(types::I64, j);
            partial_step(e, c, &steps, jj, (trip - j) as u8);
            j = trip;
        }
        while j < trip {
            let jj = e.b.ins().iconst(types::I64, j);
            step(e, c, &steps, jj, false);
            j += 1;
        }
    } else {
        let jv = e.var(types::I64);
        e.b.def_var(jv, start);
        if c.prep.ty_vector {
            // UNROLL vectors an iteration (the same operations in the same order
            // as one at a time, so results do not change), then one, then scalars.
            counted_loop(e, start, n, 4 * UNROLL, &mut |e, j| {
                if c.k.reductions.is_empty() {
                    // Every load of the group before any store: elementwise
                    // kernels only read the elements they write (in-place
                    // updates are same-element), so this is the same result
                    // with more memory accesses in flight.
                    let mut groups = Vec::new();
                    for u in 0..UNROLL {
                        let ju = e.b.ins().iadd_imm_s(j, 4 * u);
                        let p = inner_ptrs(e, c, steps.ptrs, ju);
                        let vals = body(e, c, types::F32X4, &p, ju, steps.idx, 4, steps.hoisted);
                        groups.push((p, ju, vals));
                    }
                    for (p, ju, vals) in &groups {
                        store_all(e, c, types::F32X4, p, *ju, vals, true);
                    }
                } else {
                    for u in 0..UNROLL {
                        let ju = e.b.ins().iadd_imm_s(j, 4 * u);
                        step(e, c, &steps, ju, true);
                    }
                }
                let next = e.b.ins().iadd_imm_s(j, 4 * UNROLL);
                e.b.def_var(jv, next);
            });
            let from = e.b.use_var(jv);
            counted_loop(e, from, n, 4, &mut |e, j| {
                step(e, c, &steps, j, true);
                let j4 = e.b.ins().iadd_imm_s(j, 4);
                e.b.def_var(jv, j4);
            });
        }
        tail_loop(e, jv, n, &mut |e, j| step(e, c, &steps, j, false));
    }
    if inner_reduced {
        for (ri, r) in c.k.reductions.iter().enumerate() {
            let s = e.b.use_var(saccs[ri]);
            let total = if c.prep.ty_vector {
                let v = e.b.use_var(vaccs[ri]);
                let h = hreduce(e, r.kind, v);
                combine(e, types::F32, r.kind, h, s)
            } else {
                s
            };
            accumulate_scalar(e, c, ri, r.kind, ptrs, total, first.expect("reduction"));
        }
    }
}

/// Vectors an iteration of a long innermost loop.
const UNROLL: i64 = 2;

/// Vectors per column block of an interchanged reduction (their partial
/// results live in registers across the rows).
const COLUMN_BLOCK: i64 = 4;

/// The last two levels of a kernel whose next-to-last level is reduced into
/// its kept last level (`reduce axes=[0] over [B, N]`): for each block of
/// columns, every row in order, accumulating in registers, then one store per
/// output. Each output is still its first row's value combined with rows
/// 1, 2, ... in increasing order, as in the row-outside order, so the results
/// are the same bits; stores of elementwise values happen per element as
/// before. A short constant column count is one block (vectors and scalars);
/// otherwise blocks of [`COLUMN_BLOCK`] vectors, then single vectors, then
/// single scalar columns.
fn interchanged(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], idx: &mut Vec<Value>) {
    let nl = c.nest.levels.len();
    let kl = nl - 1;
    let (start, n) = match c.prep.split {
        Some((sl, lo, hi)) if sl == kl => (lo, hi),
        _ => (e.b.ins().iconst(types::I64, 0), c.prep.sizes[kl]),
    };
    // No rows: no output is written (as in the row-outside order).
    let rows = c.prep.sizes[nl - 2];
    let body_blk = e.b.create_block();
    let exit = e.b.create_block();
    let any = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rows, 0);
    e.b.ins().brif(any, body_blk, &[], exit, &[]);
    e.b.switch_to_block(body_blk);
    e.b.seal_block(body_blk);
    let constant_trip = match (c.nest.levels[kl].size, c.prep.split) {
        (Lin { c: trip, b: 0 }, split) if trip <= 16 && split.is_none_or(|s| s.0 != kl) => {
            Some(trip)
        }
        _ => None,
    };
    if let Some(trip) = constant_trip {
        let mut elems = Vec::new();
        let mut j = 0;
        if c.prep.ty_vector {
            while j + 4 <= trip {
                elems.push((j, true));
                j += 4;
            }
        }
        elems.extend((j..trip).map(|j| (j, false)));
        let zero = e.b.ins().iconst(types::I64, 0);
        column_block(e, c, ptrs, idx, zero, &elems);
    } else {
        let jv = e.var(types::I64);
        e.b.def_var(jv, start);
        if c.prep.ty_vector {
            let block: Vec<(i64, bool)> = (0..COLUMN_BLOCK).map(|u| (4 * u, true)).collect();
            counted_loop(e, start, n, 4 * COLUMN_BLOCK, &mut |e, j| {
                column_block(e, c, ptrs, idx, j, &block);
                let next = e.b.ins().iadd_imm_s(j, 4 * COLUMN_BLOCK);
                e.b.def_var(jv, next);
            });
            let from = e.b.use_var(jv);
            counted_loop(e, from, n, 4, &mut |e, j| {
                column_block(e, c, ptrs, idx, j, &[(0, true)]);
                let next = e.b.ins().iadd_imm_s(j, 4);
                e.b.def_var(jv, next);
            });
        }
        tail_loop(e, jv, n, &mut |e, j| {
            column_block(e, c, ptrs, idx, j, &[(0, false)])
        });
    }
    e.b.ins().jump(exit, &[]);
    e.b.switch_to_block(exit);
    e.b.seal_block(exit);
}

/// One block of columns of [`interchanged`]: `elems` are (offset from `j`,
/// vector?) columns; row 0 starts the accumulators, rows 1.. combine into
/// them in order, and each output is stored once at the end.
fn column_block(
    e: &mut Emitter,
    c: &KernelCtx,
    ptrs: &[Value],
    idx: &mut Vec<Value>,
    j: Value,
    elems: &[(i64, bool)],
) {
    let nl = c.nest.levels.len();
    let rl = nl - 2;
    // Addresses at column `j`; a column of the block adds a constant (folded
    // into the addressing), so few registers stay live across the rows.
    let at_j = inner_ptrs(e, c, ptrs, j);
    let col_ptrs = |e: &mut Emitter, base: &[Value], off: i64| -> Vec<Value> {
        base.iter()
            .enumerate()
            .map(|(a, &p)| {
                if off == 0 || c.prep.inner_stride[a].is_zero() {
                    p
                } else {
                    let o = e.b.ins().iconst(types::I64, off);
                    let o = e.b.ins().imul(o, c.prep.bstrides[a][nl - 1]);
                    e.b.ins().iadd(p, o)
                }
            })
            .collect()
    };
    let cols: Vec<(Value, i64, bool)> = elems
        .iter()
        .map(|&(off, vector)| (e.b.ins().iadd_imm_s(j, off), off, vector))
        .collect();
    // The values of row `r` for every column and reduction.
    let row = |e: &mut Emitter, idx: &mut Vec<Value>, r: Value| -> Vec<Vec<Value>> {
        let offs: Vec<Value> = (0..ptrs.len())
            .map(|a| e.b.ins().imul(r, c.prep.bstrides[a][rl]))
            .collect();
        let row_ptrs: Vec<Value> = at_j
            .iter()
            .zip(&offs)
            .map(|(&p, &o)| e.b.ins().iadd(p, o))
            .collect();
        idx.push(r);
        let mut hoisted: HashMap<NodeId, (Value, Option<Value>)> = HashMap::new();
        for (node, s) in &c.k.sources {
            if let Source::Load(_, dt) = s {
                let a = c.map.source[node];
                if c.prep.inner_stride[a].is_zero() {
                    let p = row_ptrs[a];
                    let v = e.load_scalar(p, *dt);
                    let splat = c.prep.ty_vector.then(|| e.b.ins().splat(types::F32X4, v));
                    hoisted.insert(*node, (v, splat));
                }
            }
        }
        let mut out = Vec::new();
        for &(jj, off, vector) in &cols {
            let ty = if vector { types::F32X4 } else { types::F32 };
            let p = col_ptrs(e, &row_ptrs, off);
            let vals = body(e, c, ty, &p, jj, idx, if vector { 4 } else { 1 }, &hoisted);
            store_all(e, c, ty, &p, jj, &vals, vector);
            out.push(c.k.reductions.iter().map(|r| vals[&r.input]).collect());
        }
        idx.pop();
        out
    };
    let zero = e.b.ins().iconst(types::I64, 0);
    let first = row(e, idx, zero);
    let accs: Vec<Vec<Variable>> = first
        .iter()
        .zip(&cols)
        .map(|(xs, (_, _, vector))| {
            let ty = if *vector { types::F32X4 } else { types::F32 };
            xs.iter()
                .map(|&x| {
                    let v = e.var(ty);
                    e.b.def_var(v, x);
                    v
                })
                .collect()
        })
        .collect();
    let one = e.b.ins().iconst(types::I64, 1);
    let rows = c.prep.sizes[rl];
    counted_loop(e, one, rows, 1, &mut |e, r| {
        let xs = row(e, idx, r);
        for ((xs, acc), (_, _, vector)) in xs.iter().zip(&accs).zip(&cols) {
            let ty = if *vector { types::F32X4 } else { types::F32 };
            for ((&x, &a), red) in xs.iter().zip(acc).zip(&c.k.reductions) {
                let old = e.b.use_var(a);
                let nv = combine(e, ty, red.kind, old, x);
                e.b.def_var(a, nv);
            }
        }
    });
    for (acc, &(_, off, _)) in accs.iter().zip(&cols) {
        let cp = col_ptrs(e, &at_j, off);
        for (ri, &a) in acc.iter().enumerate() {
            let d = c.map.dest[ri].expect("memory destination");
            let v = e.b.use_var(a);
            e.b.ins().store(trusted(), v, cp[d], 0);
        }
    }
}

/// What the innermost loop body needs besides the kernel.
struct Steps<'a> {
    ptrs: &'a [Value],
    idx: &'a [Value],
    hoisted: &'a HashMap<NodeId, (Value, Option<Value>)>,
    vaccs: &'a [Variable],
    saccs: &'a [Variable],
    first: Option<Value>,
    inner_reduced: bool,
}

/// Elements `j..j+4` (`vector`) or element `j` of the innermost level.
fn step(e: &mut Emitter, c: &KernelCtx, s: &Steps, j: Value, vector: bool) {
    let (ty, accs) = if vector {
        (types::F32X4, s.vaccs)
    } else {
        (types::F32, s.saccs)
    };
    let p = inner_ptrs(e, c, s.ptrs, j);
    let vals = body(
        e,
        c,
        ty,
        &p,
        j,
        s.idx,
        if vector { 4 } else { 1 },
        s.hoisted,
    );
    store_all(e, c, ty, &p, j, &vals, vector);
    for (ri, r) in c.k.reductions.iter().enumerate() {
        let x = vals[&r.input];
        if s.inner_reduced {
            let acc = e.b.use_var(accs[ri]);
            let nv = combine(e, ty, r.kind, acc, x);
            e.b.def_var(accs[ri], nv);
        } else if let Some(a) = c.map.dest[ri] {
            let old = e.b.ins().load(ty, trusted(), p[a], 0);
            let nv = combine(e, ty, r.kind, old, x);
            let v = e.b.ins().select(s.first.expect("reduction"), x, nv);
            e.b.ins().store(trusted(), v, p[a], 0);
        }
    }
}

/// Elements `j..j+lanes` (2 or 3, the end of a short constant innermost
/// level) as the first lanes of one vector: each element goes through the
/// same operations as a scalar step (lanes are independent), is stored on
/// its own, and is combined into the scalar accumulators in increasing
/// order, as the scalar steps would.
fn partial_step(e: &mut Emitter, c: &KernelCtx, s: &Steps, j: Value, lanes: u8) {
    let ty = types::F32X4;
    let p = inner_ptrs(e, c, s.ptrs, j);
    let vals = body(e, c, ty, &p, j, s.idx, lanes, s.hoisted);
    for (si, (n, _)) in c.k.stores.iter().enumerate() {
        let base = p[c.map.store[si]];
        let v = vals[n];
        let int = e.g.dtype(*n) == DType::I32;
        let v = if int {
            e.b.ins().fcvt_to_sint_sat(types::I32X4, v)
        } else {
            v
        };
        for l in 0..lanes {
            let x = e.b.ins().extractlane(v, l);
            e.b.ins().store(trusted(), x, base, 4 * i32::from(l));
        }
    }
    for (ri, r) in c.k.reductions.iter().enumerate() {
        let x = vals[&r.input];
        for l in 0..lanes {
            let xl = e.b.ins().extractlane(x, l);
            let acc = e.b.use_var(s.saccs[ri]);
            let nv = combine(e, types::F32, r.kind, acc, xl);
            e.b.def_var(s.saccs[ri], nv);
        }
    }
}

/// Access addresses at innermost index `j`.
fn inner_ptrs(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], j: Value) -> Vec<Value> {
    let nl = c.nest.levels.len();
    ptrs.iter()
        .enumerate()
        .map(|(a, &p)| {
            let s = c.prep.inner_stride[a];
            if s.is_zero() {
                p
            } else {
                let off = e.b.ins().imul(j, c.prep.bstrides[a][nl - 1]);
                e.b.ins().iadd(p, off)
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn body(
    e: &mut Emitter,
    c: &KernelCtx,
    ty: Type,
    ptrs: &[Value],
    j: Value,
    idx: &[Value],
    lanes: u8,
    hoisted: &HashMap<NodeId, (Value, Option<Value>)>,
) -> HashMap<NodeId, Value> {
    // `lanes`: 1 scalar, 4 a full vector, 2 or 3 the first lanes of a vector
    // (loaded one element at a time; the other lanes hold 0).
    let vector = lanes > 1;
    let mut vals: HashMap<NodeId, Value> = HashMap::new();
    let nl = c.nest.levels.len();
    for (n, s) in &c.k.sources {
        let v = match s {
            Source::Load(_, dt) => {
                if let Some((sv, vv)) = hoisted.get(n) {
                    if vector {
                        vv.expect("vector splat")
                    } else {
                        *sv
                    }
                } else {
                    let p = ptrs[c.map.source[n]];
                    if lanes == 1 || lanes == 4 {
                        load(e, ty, p, *dt)
                    } else {
                        let mut v = ops::constant(e.b, ty, 0.0);
                        for l in 0..lanes {
                            let x = e.b.ins().iadd_imm_s(p, 4 * i64::from(l));
                            let x = e.load_scalar(x, *dt);
                            v = e.b.ins().insertlane(v, x, l);
                        }
                        v
                    }
                }
            }
            Source::Scalar(_) | Source::Const(_) => {
                let (sv, vv) = c.prep.scalars[n];
                if vector {
                    vv.expect("vector splat")
                } else {
                    sv
                }
            }
            Source::Iota { axis } => {
                let lvl = c.nest.levels.iter().position(|l| l.axes.contains(axis));
                match lvl {
                    None => ops::constant(e.b, ty, 0.0),
                    Some(l) if l + 1 == nl => {
                        let f = e.b.ins().fcvt_from_sint(types::F32, j);
                        if vector {
                            let s = e.b.ins().splat(types::F32X4, f);
                            e.b.ins().fadd(s, c.prep.lane_iota.expect("lane iota"))
                        } else {
                            f
                        }
                    }
                    Some(l) => {
                        let f = e.b.ins().fcvt_from_sint(types::F32, idx[l]);
                        if vector {
                            e.b.ins().splat(types::F32X4, f)
                        } else {
                            f
                        }
                    }
                }
            }
        };
        vals.insert(*n, v);
    }
    // Comparisons of this body: a `select` on one picks with the comparison
    // itself (`p cc q ? x : y`, the same result as testing its 1.0 / 0.0
    // against zero, without materializing it).
    let mut compares: HashMap<NodeId, (FloatCC, Value, Value)> = HashMap::new();
    for &n in &c.k.body {
        let inputs = e.g.inputs_of(n).to_vec();
        let arg = |i: usize| vals[&inputs[i]];
        let v = match e.g.op(n).clone() {
            Op::Unary(u) => ops::unary(e.b, ty, u, arg(0)),
            Op::Binary(b) => {
                if let Some(cc) = ops::compare_cc(b) {
                    compares.insert(n, (cc, arg(0), arg(1)));
                }
                ops::binary(e.b, ty, b, arg(0), arg(1))
            }
            Op::Select => match compares.get(&inputs[0]) {
                Some(&(cc, p, q)) => ops::select_cmp(e.b, ty, cc, p, q, arg(1), arg(2)),
                None => ops::select(e.b, ty, arg(0), arg(1), arg(2)),
            },
            Op::Cast(DType::I32) => ops::truncate(e.b, arg(0)),
            Op::Cast(DType::F32) => arg(0),
            Op::UniformHash { seed } => ops::uniform_hash(e.b, ty, seed, arg(0), arg(1)),
            other => panic!("internal compiler error: {other:?} in a loop body"),
        };
        vals.insert(n, v);
    }
    vals
}

fn load(e: &mut Emitter, ty: Type, p: Value, dt: DType) -> Value {
    match dt {
        DType::F32 => e.b.ins().load(ty, trusted(), p, 0),
        DType::I32 => {
            let it = ops::int_type(ty);
            let i = e.b.ins().load(it, trusted(), p, 0);
            e.b.ins().fcvt_from_sint(ty, i)
        }
    }
}

fn store_all(
    e: &mut Emitter,
    c: &KernelCtx,
    ty: Type,
    ptrs: &[Value],
    _j: Value,
    vals: &HashMap<NodeId, Value>,
    _vector: bool,
) {
    for (si, (n, _)) in c.k.stores.iter().enumerate() {
        let p = ptrs[c.map.store[si]];
        let v = vals[n];
        if e.g.dtype(*n) == DType::I32 {
            let iv = e.b.ins().fcvt_to_sint_sat(ops::int_type(ty), v);
            e.b.ins().store(trusted(), iv, p, 0);
        } else {
            e.b.ins().store(trusted(), v, p, 0);
        }
    }
}
