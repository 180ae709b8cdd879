//! The innermost loop level of a kernel: 4 lanes at a time (`f32x4`) when
//! every access allows it, [`UNROLL`] vectors an iteration on long loops,
//! then single vectors, then a scalar tail; a short constant level
//! unrolled into straight-line code (ending in a partial vector of 2 or 3
//! lanes where that keeps the operations and their order); reductions over
//! this level accumulate in registers (vector and scalar) and are combined
//! into their destination once per row.
//!
//! Invariants: the vector steps and the scalar steps evaluate the same ops
//! per element in the same order, so results do not depend on where a row
//! splits between them; a memory destination starts from the value of its
//! first reduced iteration.

use std::collections::HashMap;

use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::Variable;

use super::body::{
    accumulate_scalar, body, combine, first_iteration, hreduce, identity, inner_ptrs, store_all,
};
use super::{counted_loop, tail_loop, KernelCtx};
use crate::codegen::emit::{trusted, Emitter};
use crate::ir::{DType, NodeId};
use crate::plan::{Lin, Source};

pub(super) fn innermost_single(
    e: &mut Emitter,
    c: &KernelCtx,
    ptrs: &[Value],
    j: Value,
    idx: &[Value],
) {
    let vals = body(e, c, types::F32, ptrs, j, idx, 1, &HashMap::new());
    store_all(e, c, types::F32, ptrs, j, &vals, false);
    for (ri, r) in c.k.reductions.iter().enumerate() {
        let x = vals[&r.input];
        let first = e.b.ins().iconst(types::I8, 1);
        accumulate_scalar(e, c, ri, r.kind, ptrs, x, first);
    }
}

pub(super) fn innermost(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], idx: &[Value]) {
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
