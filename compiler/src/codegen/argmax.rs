//! The argmax kernel: the index of the first maximum along one axis.
//!
//! Owns: the loop nest of a `Kernel::ArgMax` — one counted loop per outer
//! (kept) dimension of the source, then a scalar scan along the reduced axis
//! that keeps the running maximum and its index in variables. It runs on
//! thread 0 alone (the plan never splits it).
//!
//! Invariants: the scan compares with a strict `>`, so ties keep the first
//! index and a NaN after the first element is never selected; the index is
//! stored as i32.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};

use super::emit::{trusted, Emitter};
use super::loops::{counted_loop, tail_loop};
use crate::ir::Shape;
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
}

/// Prepares an argmax of `src` (over `shape`) along `axis` into `dst` (i32).
pub fn prepare(e: &mut Emitter, src: &View, shape: &Shape, axis: usize, dst: &View) -> ArgMaxPrep {
    let rank = shape.rank();
    let outer: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    ArgMaxPrep {
        sizes: outer
            .iter()
            .map(|&a| e.lin(Lin::of_dim(shape.0[a])))
            .collect(),
        sstr: outer
            .iter()
            .map(|&a| e.lin(src.strides[a].scale(4)))
            .collect(),
        dstr: (0..outer.len())
            .map(|i| e.lin(dst.strides[i].scale(4)))
            .collect(),
        n: e.lin(Lin::of_dim(shape.0[axis])),
        astr: e.lin(src.strides[axis].scale(4)),
        sp: e.view_ptr(src),
        dp: e.view_ptr(dst),
    }
}

/// Index of the first maximum along the axis, as i32, for every outer position.
pub fn emit(e: &mut Emitter, p: &ArgMaxPrep) {
    e.region += 1;
    argmax_level(e, 0, &p.sizes, &p.sstr, &p.dstr, p.n, p.astr, p.sp, p.dp);
    e.region -= 1;
}

#[allow(clippy::too_many_arguments)]
fn argmax_level(
    e: &mut Emitter,
    l: usize,
    sizes: &[Value],
    sstr: &[Value],
    dstr: &[Value],
    n: Value,
    astr: Value,
    sp: Value,
    dp: Value,
) {
    if l < sizes.len() {
        let zero = e.b.ins().iconst(types::I64, 0);
        counted_loop(e, zero, sizes[l], 1, &mut |e, i| {
            let so = e.b.ins().imul(i, sstr[l]);
            let s2 = e.b.ins().iadd(sp, so);
            let d0 = e.b.ins().imul(i, dstr[l]);
            let d2 = e.b.ins().iadd(dp, d0);
            argmax_level(e, l + 1, sizes, sstr, dstr, n, astr, s2, d2);
        });
        return;
    }
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
