//! Interchanged reductions: the last two levels of a kernel whose
//! next-to-last level is reduced into its kept last level (a bias gradient,
//! `reduce axes=[0] over [B, N]`), emitted with blocks of columns outside
//! and the rows inside, the block's partial results in registers.
//!
//! Invariants: each output is its first row's value combined with rows 1,
//! 2, ... in increasing order, as in the row-outside order, so the results
//! are the same bits; with no rows no output is written.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::Variable;

use super::body::{body, combine, inner_ptrs, store_all};
use super::{counted_loop, tail_loop, KernelCtx};
use crate::codegen::emit::{trusted, Emitter};
use crate::ir::NodeId;
use crate::plan::{Lin, Source};

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
pub(super) fn interchanged(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], idx: &mut Vec<Value>) {
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
