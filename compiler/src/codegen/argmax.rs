//! The argmax kernel: the index of the first maximum along one axis.
//!
//! Owns: the loop nest of a `Kernel::ArgMax` — one counted loop per outer
//! (kept) dimension of the source, then a scan along the reduced axis that
//! keeps the running maximum and its index in variables: four adjacent
//! positions at once (f32x4 and i32x4 lanes) when the last axis is kept and
//! contiguous (max pooling's argmax over the taps, channels last), else one
//! at a time. Split between two threads, each takes its part of the first
//! outer loop (max pooling: images); otherwise thread 0 runs it.
//!
//! Invariants: the scan compares with a strict `>`, so ties keep the first
//! index and a NaN after the first element is never selected; the index is
//! stored as i32; every position is scanned whole by one thread, so the
//! results do not depend on the split.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};

use super::emit::{trusted, Emitter};
use super::loops::{counted_loop, tail_loop};
use super::math::bitcast_flags;
use crate::ir::{Dim, Shape};
use crate::plan::{Lin, View};

/// An argmax kernel's spine values (sizes, byte strides, pointers).
pub struct ArgMaxPrep {
    sizes: Vec<Value>,
    sstr: Vec<Value>,
    dstr: Vec<Value>,
    n: Value,
    astr: Value,
    sp: Value,
    dp: Value,
    /// The size of the last axis when it is kept and contiguous in both
    /// views (at least 4): scanned four positions at a time.
    lanes: Option<i64>,
}

/// Prepares an argmax of `src` (over `shape`) along `axis` into `dst` (i32).
pub fn prepare(e: &mut Emitter, src: &View, shape: &Shape, axis: usize, dst: &View) -> ArgMaxPrep {
    let rank = shape.rank();
    let outer: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    let last = rank - 1;
    let unit = |l: Lin| l == Lin::constant(1);
    let lanes = match shape.0[last] {
        Dim::Fixed(n)
            if axis != last
                && n >= 4
                && unit(src.strides[last])
                && unit(dst.strides[outer.len() - 1]) =>
        {
            Some(i64::from(n))
        }
        _ => None,
    };
    let outer_sizes = if lanes.is_some() {
        &outer[..outer.len() - 1]
    } else {
        &outer[..]
    };
    ArgMaxPrep {
        lanes,
        sizes: outer_sizes
            .iter()
            .map(|&a| e.lin(Lin::of_dim(shape.0[a])))
            .collect(),
        sstr: outer
            .iter()
            .map(|&a| e.lin(src.strides[a].scale(4)))
            .collect(),
        dstr: (0..outer_sizes.len())
            .map(|i| e.lin(dst.strides[i].scale(4)))
            .collect(),
        n: e.lin(Lin::of_dim(shape.0[axis])),
        astr: e.lin(src.strides[axis].scale(4)),
        sp: e.view_ptr(src),
        dp: e.view_ptr(dst),
    }
}

impl ArgMaxPrep {
    /// Whether it has an outer loop for two threads to share.
    pub fn splittable(&self) -> bool {
        !self.sizes.is_empty()
    }
}

/// Index of the first maximum along the axis, as i32, for every outer
/// position; with `split`, this thread's part of the first outer loop
/// ([`ArgMaxPrep::splittable`] must hold).
pub fn emit(e: &mut Emitter, p: &ArgMaxPrep, split: bool) {
    e.region += 1;
    argmax_level(e, 0, p, p.sp, p.dp, split);
    e.region -= 1;
}

fn argmax_level(e: &mut Emitter, l: usize, p: &ArgMaxPrep, sp: Value, dp: Value, split: bool) {
    if l < p.sizes.len() {
        let (lo, hi) = if split && l == 0 {
            e.thread_range(p.sizes[0], 1)
        } else {
            (e.b.ins().iconst(types::I64, 0), p.sizes[l])
        };
        counted_loop(e, lo, hi, 1, &mut |e, i| {
            let so = e.b.ins().imul(i, p.sstr[l]);
            let s2 = e.b.ins().iadd(sp, so);
            let d0 = e.b.ins().imul(i, p.dstr[l]);
            let d2 = e.b.ins().iadd(dp, d0);
            argmax_level(e, l + 1, p, s2, d2, split);
        });
        return;
    }
    match p.lanes {
        Some(lanes) => {
            for c in 0..lanes / 4 {
                let s = e.b.ins().iadd_imm_s(sp, c * 16);
                let d = e.b.ins().iadd_imm_s(dp, c * 16);
                scan4(e, p.n, p.astr, s, d);
            }
            for t in (lanes / 4) * 4..lanes {
                let s = e.b.ins().iadd_imm_s(sp, t * 4);
                let d = e.b.ins().iadd_imm_s(dp, t * 4);
                scan(e, p.n, p.astr, s, d);
            }
        }
        None => scan(e, p.n, p.astr, sp, dp),
    }
}

/// The scan of four adjacent positions at once: lane by lane the same
/// strict `>` as [`scan`], so ties keep the first index.
fn scan4(e: &mut Emitter, n: Value, astr: Value, sp: Value, dp: Value) {
    let best = e.var(types::F32X4);
    let besti = e.var(types::I32X4);
    let first = e.b.ins().load(types::F32X4, trusted(), sp, 0);
    e.b.def_var(best, first);
    let z = e.b.ins().iconst(types::I32, 0);
    let zv = e.b.ins().splat(types::I32X4, z);
    e.b.def_var(besti, zv);
    let one = e.b.ins().iconst(types::I64, 1);
    let jv = e.var(types::I64);
    e.b.def_var(jv, one);
    tail_loop(e, jv, n, &mut |e, j| {
        let off = e.b.ins().imul(j, astr);
        let p = e.b.ins().iadd(sp, off);
        let x = e.b.ins().load(types::F32X4, trusted(), p, 0);
        let bv = e.b.use_var(best);
        let bi = e.b.use_var(besti);
        let gt = e.b.ins().fcmp(FloatCC::GreaterThan, x, bv);
        let j32 = e.b.ins().ireduce(types::I32, j);
        let jv = e.b.ins().splat(types::I32X4, j32);
        // A vector compare gives an i32x4 mask; the values select bitwise.
        let gtf = e.b.ins().bitcast(types::F32X4, bitcast_flags(), gt);
        let nb = e.b.ins().bitselect(gtf, x, bv);
        let ni = e.b.ins().bitselect(gt, jv, bi);
        e.b.def_var(best, nb);
        e.b.def_var(besti, ni);
    });
    let bi = e.b.use_var(besti);
    e.b.ins().store(trusted(), bi, dp, 0);
}

/// The scalar scan along the axis from `sp`, storing the index at `dp`.
fn scan(e: &mut Emitter, n: Value, astr: Value, sp: Value, dp: Value) {
    let best = e.var(types::F32);
    let besti = e.var(types::I64);
    let first = e.b.ins().load(types::F32, trusted(), sp, 0);
    e.b.def_var(best, first);
    let z = e.b.ins().iconst(types::I64, 0);
    e.b.def_var(besti, z);
    let one = e.b.ins().iconst(types::I64, 1);
    let jv = e.var(types::I64);
    e.b.def_var(jv, one);
    tail_loop(e, jv, n, &mut |e, j| {
        let off = e.b.ins().imul(j, astr);
        let p = e.b.ins().iadd(sp, off);
        let x = e.b.ins().load(types::F32, trusted(), p, 0);
        let bv = e.b.use_var(best);
        let bi = e.b.use_var(besti);
        let gt = e.b.ins().fcmp(FloatCC::GreaterThan, x, bv);
        let nb = e.b.ins().select(gt, x, bv);
        let ni = e.b.ins().select(gt, j, bi);
        e.b.def_var(best, nb);
        e.b.def_var(besti, ni);
    });
    let bi = e.b.use_var(besti);
    let b32 = e.b.ins().ireduce(types::I32, bi);
    e.b.ins().store(trusted(), b32, dp, 0);
}
