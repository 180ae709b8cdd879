//! Row kernels: embedding lookups and sparse updates (see `plan::RowOp`).
//!
//! Owns: the loops over ids that move or combine whole rows. Each id is
//! loaded as i32; a negative id is a padding slot (the feature columns' id
//! -1) and names no row; any other id is clamped into `[0, rows)` so no id
//! can address memory outside its table. A row is processed in f32x4 chunks
//! plus a scalar tail (unrolled for short rows).
//!
//! Invariants: rows are handled strictly in id order, so repeated ids
//! accumulate in the order TF's CPU kernels use; a negative id touches no
//! row of any table (gather gives zeros, scatter-add and scatter-rows skip
//! it, its first occurrence is -1 and its summed row 0); the
//! first-occurrence marker table is all zero again when the kernel ends.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};

use super::emit::{trusted, Emitter};
use super::loops::counted_loop;
use crate::plan::{RowKernel, RowOp};

/// Pointers and sizes of a row kernel, computed on the spine.
pub struct RowsPrep {
    op: RowOp,
    n: Value,
    rows: i64,
    row_len: i64,
    ids: Value,
    src: Option<Value>,
    first: Option<Value>,
    dst: Value,
}

pub fn prepare(e: &mut Emitter, k: &RowKernel) -> RowsPrep {
    RowsPrep {
        op: k.op,
        n: e.lin(k.n),
        rows: k.rows as i64,
        row_len: k.row_len as i64,
        ids: e.view_ptr(&k.ids),
        src: k.src.as_ref().map(|v| e.view_ptr(v)),
        first: k.first.as_ref().map(|v| e.view_ptr(v)),
        dst: e.view_ptr(&k.dst),
    }
}

pub fn emit(e: &mut Emitter, p: &RowsPrep) {
    e.region += 1;
    let zero = e.b.ins().iconst(types::I64, 0);
    match p.op {
        RowOp::Gather => counted_loop(e, zero, p.n, 1, &mut |e, i| {
            let id = load_index(e, p.ids, i);
            let to = row_ptr(e, p.dst, i, p.row_len);
            let pad = is_padding(e, id);
            // A padding slot reads zeros (not a row times weight 0: 0 × inf
            // would be NaN).
            if_else(
                e,
                pad,
                &mut |e| {
                    for_row(e, p.row_len, &mut |e, ty, d, off| {
                        let z = zero_of(e, ty);
                        st(e, z, to, d, off);
                    });
                },
                &mut |e| {
                    let r = clamp_row(e, p, id);
                    let from = row_ptr(e, p.src.expect("gather source"), r, p.row_len);
                    for_row(e, p.row_len, &mut |e, ty, d, off| {
                        let x = ld(e, ty, from, d, off);
                        st(e, x, to, d, off);
                    });
                },
            );
        }),
        RowOp::ScatterAdd => counted_loop(e, zero, p.n, 1, &mut |e, i| {
            let id = load_index(e, p.ids, i);
            let named = is_row(e, id);
            if_then(e, named, &mut |e| {
                let r = clamp_row(e, p, id);
                let from = row_ptr(e, p.src.expect("scatter source"), i, p.row_len);
                let to = row_ptr(e, p.dst, r, p.row_len);
                for_row(e, p.row_len, &mut |e, ty, d, off| {
                    let a = ld(e, ty, to, d, off);
                    let x = ld(e, ty, from, d, off);
                    let s = e.b.ins().fadd(a, x);
                    st(e, s, to, d, off);
                });
            });
        }),
        RowOp::ScatterRows => counted_loop(e, zero, p.n, 1, &mut |e, i| {
            let f = load_index(e, p.first.expect("first occurrences"), i);
            let is_first = e.b.ins().icmp(IntCC::Equal, f, i);
            if_then(e, is_first, &mut |e| {
                let r = row_id(e, p, p.ids, i);
                let from = row_ptr(e, p.src.expect("rows"), i, p.row_len);
                let to = row_ptr(e, p.dst, r, p.row_len);
                for_row(e, p.row_len, &mut |e, ty, d, off| {
                    let x = ld(e, ty, from, d, off);
                    st(e, x, to, d, off);
                });
            });
        }),
        RowOp::FirstOccurrence => {
            let marker = p.src.expect("marker table");
            counted_loop(e, zero, p.n, 1, &mut |e, i| {
                let id = load_index(e, p.ids, i);
                let fp = row_ptr(e, p.dst, i, 1);
                let pad = is_padding(e, id);
                if_else(
                    e,
                    pad,
                    &mut |e| {
                        // A padding slot is never a first occurrence.
                        let none = e.b.ins().iconst(types::I32, -1);
                        e.b.ins().store(trusted(), none, fp, 0);
                    },
                    &mut |e| {
                        // marker[r] = 1 + the first position of r, or 0 when unseen.
                        let r = clamp_row(e, p, id);
                        let mp = row_ptr(e, marker, r, 1);
                        let m = e.b.ins().load(types::I32, trusted(), mp, 0);
                        let m = e.b.ins().sextend(types::I64, m);
                        let unseen = e.b.ins().icmp_imm_s(IntCC::Equal, m, 0);
                        let before = e.b.ins().iadd_imm_s(m, -1);
                        let f = e.b.ins().select(unseen, i, before);
                        let i1 = e.b.ins().iadd_imm_s(i, 1);
                        let m2 = e.b.ins().select(unseen, i1, m);
                        let m2 = e.b.ins().ireduce(types::I32, m2);
                        e.b.ins().store(trusted(), m2, mp, 0);
                        let f = e.b.ins().ireduce(types::I32, f);
                        e.b.ins().store(trusted(), f, fp, 0);
                    },
                );
            });
            counted_loop(e, zero, p.n, 1, &mut |e, i| {
                let id = load_index(e, p.ids, i);
                let named = is_row(e, id);
                if_then(e, named, &mut |e| {
                    let r = clamp_row(e, p, id);
                    let mp = row_ptr(e, marker, r, 1);
                    let z = e.b.ins().iconst(types::I32, 0);
                    e.b.ins().store(trusted(), z, mp, 0);
                });
            });
        }
        RowOp::FirstOccurrenceHashed { capacity } => {
            first_occurrence_hashed(e, p, capacity);
        }
        RowOp::SumDuplicates => counted_loop(e, zero, p.n, 1, &mut |e, i| {
            let f = load_index(e, p.first.expect("first occurrences"), i);
            let src = p.src.expect("values");
            let from = row_ptr(e, src, i, p.row_len);
            let own = row_ptr(e, p.dst, i, p.row_len);
            let is_first = e.b.ins().icmp(IntCC::Equal, f, i);
            let then = e.b.create_block();
            let other = e.b.create_block();
            let done = e.b.create_block();
            e.b.ins().brif(is_first, then, &[], other, &[]);
            e.b.switch_to_block(then);
            e.b.seal_block(then);
            // TF sums into zeros: 0 + v (which also turns -0 into +0).
            for_row(e, p.row_len, &mut |e, ty, d, off| {
                let x = ld(e, ty, from, d, off);
                let z = zero_of(e, ty);
                let s = e.b.ins().fadd(z, x);
                st(e, s, own, d, off);
            });
            e.b.ins().jump(done, &[]);
            e.b.switch_to_block(other);
            e.b.seal_block(other);
            // A padding slot (first -1) adds nowhere; its own row is 0.
            let named = is_row(e, f);
            if_then(e, named, &mut |e| {
                let to = row_ptr(e, p.dst, f, p.row_len);
                for_row(e, p.row_len, &mut |e, ty, d, off| {
                    let a = ld(e, ty, to, d, off);
                    let x = ld(e, ty, from, d, off);
                    let s = e.b.ins().fadd(a, x);
                    st(e, s, to, d, off);
                });
            });
            for_row(e, p.row_len, &mut |e, ty, d, off| {
                let z = zero_of(e, ty);
                st(e, z, own, d, off);
            });
            e.b.ins().jump(done, &[]);
            e.b.switch_to_block(done);
            e.b.seal_block(done);
        }),
    }
    e.region -= 1;
}

/// First occurrences through an open-addressing hash table of `capacity`
/// entries (a power of two, at least twice the ids): entry j is the i32 pair
/// `[row + 1, first position]` at `src + 8j`, `row + 1 == 0` when empty. A
/// row is looked up at `(row + 1) * 0x9E3779B1 >> (32 - log2 capacity)` and
/// the entries after it (linear probing). The table stays in L1 whatever the
/// size of the indexed table; it is all zero again when the kernel ends.
fn first_occurrence_hashed(e: &mut Emitter, p: &RowsPrep, capacity: u32) {
    let table = p.src.expect("hash table");
    let zero = e.b.ins().iconst(types::I64, 0);
    let shift = 32 - i64::from(capacity.trailing_zeros());
    let mask = i64::from(capacity) - 1;
    let slot = e.var(types::I64);
    counted_loop(e, zero, p.n, 1, &mut |e, i| {
        let id = load_index(e, p.ids, i);
        let fp = row_ptr(e, p.dst, i, 1);
        let pad = is_padding(e, id);
        if_else(
            e,
            pad,
            &mut |e| {
                let none = e.b.ins().iconst(types::I32, -1);
                e.b.ins().store(trusted(), none, fp, 0);
            },
            &mut |e| {
                let r = clamp_row(e, p, id);
                let key = e.b.ins().iadd_imm_s(r, 1);
                let key = e.b.ins().ireduce(types::I32, key);
                let h = e.b.ins().imul_imm_s(key, 0x9E37_79B1u32 as i32 as i64);
                let h = e.b.ins().ushr_imm_s(h, shift);
                let h = e.b.ins().uextend(types::I64, h);
                e.b.def_var(slot, h);
                let probe = e.b.create_block();
                let check_empty = e.b.create_block();
                let next = e.b.create_block();
                let found = e.b.create_block();
                let insert = e.b.create_block();
                let done = e.b.create_block();
                e.b.ins().jump(probe, &[]);
                e.b.switch_to_block(probe);
                let j = e.b.use_var(slot);
                let ep = row_ptr(e, table, j, 2);
                let k = e.b.ins().load(types::I32, trusted(), ep, 0);
                let hit = e.b.ins().icmp(IntCC::Equal, k, key);
                e.b.ins().brif(hit, found, &[], check_empty, &[]);
                e.b.switch_to_block(check_empty);
                e.b.seal_block(check_empty);
                let empty = e.b.ins().icmp_imm_s(IntCC::Equal, k, 0);
                e.b.ins().brif(empty, insert, &[], next, &[]);
                e.b.switch_to_block(next);
                e.b.seal_block(next);
                let j1 = e.b.ins().iadd_imm_s(j, 1);
                let j1 = e.b.ins().band_imm_s(j1, mask);
                e.b.def_var(slot, j1);
                e.b.ins().jump(probe, &[]);
                e.b.seal_block(probe);
                e.b.switch_to_block(found);
                e.b.seal_block(found);
                let f = e.b.ins().load(types::I32, trusted(), ep, 4);
                e.b.ins().store(trusted(), f, fp, 0);
                e.b.ins().jump(done, &[]);
                e.b.switch_to_block(insert);
                e.b.seal_block(insert);
                let pos = e.b.ins().ireduce(types::I32, i);
                e.b.ins().store(trusted(), key, ep, 0);
                e.b.ins().store(trusted(), pos, ep, 4);
                e.b.ins().store(trusted(), pos, fp, 0);
                e.b.ins().jump(done, &[]);
                e.b.switch_to_block(done);
                e.b.seal_block(done);
            },
        );
    });
    // Clear the table: capacity pairs of i32, 16 bytes a store.
    let end = e.b.ins().iconst(types::I64, i64::from(capacity) * 8);
    counted_loop(e, zero, end, 16, &mut |e, off| {
        let z = zero_of(e, types::F32X4);
        st(e, z, table, Some(off), 0);
    });
}

/// `ids[i]` as an i64 clamped into `[0, rows)`; for ScatterRows, whose
/// padding slots are already skipped (their first occurrence is -1).
fn row_id(e: &mut Emitter, p: &RowsPrep, ids: Value, i: Value) -> Value {
    let r = load_index(e, ids, i);
    clamp_row(e, p, r)
}

/// An id (i64) clamped into `[0, rows)`.
fn clamp_row(e: &mut Emitter, p: &RowsPrep, r: Value) -> Value {
    let zero = e.b.ins().iconst(types::I64, 0);
    let neg = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
    let r = e.b.ins().select(neg, zero, r);
    let last = e.b.ins().iconst(types::I64, (p.rows - 1).max(0));
    let over = e.b.ins().icmp(IntCC::SignedGreaterThan, r, last);
    e.b.ins().select(over, last, r)
}

/// Whether an id (i64) is a padding slot: negative.
fn is_padding(e: &mut Emitter, id: Value) -> Value {
    e.b.ins().icmp_imm_s(IntCC::SignedLessThan, id, 0)
}

/// Whether an id (i64) names a row: not negative.
fn is_row(e: &mut Emitter, id: Value) -> Value {
    e.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, id, 0)
}

/// The i32 at `base[i]`, sign-extended to i64.
fn load_index(e: &mut Emitter, base: Value, i: Value) -> Value {
    let p = row_ptr(e, base, i, 1);
    let x = e.b.ins().load(types::I32, trusted(), p, 0);
    e.b.ins().sextend(types::I64, x)
}

/// The address of row `r` of `row_len` 4-byte elements at `base`.
pub(super) fn row_ptr(e: &mut Emitter, base: Value, r: Value, row_len: i64) -> Value {
    let off = e.b.ins().imul_imm_s(r, row_len * 4);
    e.b.ins().iadd(base, off)
}

fn zero_of(e: &mut Emitter, ty: types::Type) -> Value {
    let z = e.b.ins().f32const(0.0);
    if ty == types::F32 {
        z
    } else {
        e.b.ins().splat(ty, z)
    }
}

/// Calls `f(type, delta, byte offset)` over a row: f32x4 chunks, then
/// scalars; an element is at `row + delta + offset` (`delta` is `None` for
/// short rows, which are unrolled, and the chunk offset of a loop otherwise).
pub(super) fn for_row(e: &mut Emitter, row_len: i64, f: &mut RowBody<'_>) {
    let chunks = row_len / 4;
    if chunks <= 8 {
        for c in 0..chunks {
            f(e, types::F32X4, None, (c * 16) as i32);
        }
    } else {
        let zero = e.b.ins().iconst(types::I64, 0);
        let end = e.b.ins().iconst(types::I64, chunks * 16);
        counted_loop(e, zero, end, 16, &mut |e, off| {
            f(e, types::F32X4, Some(off), 0);
        });
    }
    for t in 0..row_len % 4 {
        f(e, types::F32, None, (chunks * 16 + t * 4) as i32);
    }
}

/// The per-chunk body of [`for_row`]: `(emitter, type, delta, byte offset)`.
pub(super) type RowBody<'a> = dyn FnMut(&mut Emitter, types::Type, Option<Value>, i32) + 'a;

/// `base + delta`.
fn at(e: &mut Emitter, base: Value, delta: Option<Value>) -> Value {
    match delta {
        Some(d) => e.b.ins().iadd(base, d),
        None => base,
    }
}

/// Loads a `ty` at `base + delta + off`.
pub(super) fn ld(
    e: &mut Emitter,
    ty: types::Type,
    base: Value,
    delta: Option<Value>,
    off: i32,
) -> Value {
    let p = at(e, base, delta);
    e.b.ins().load(ty, trusted(), p, off)
}

/// Stores `v` at `base + delta + off`.
pub(super) fn st(e: &mut Emitter, v: Value, base: Value, delta: Option<Value>, off: i32) {
    let p = at(e, base, delta);
    e.b.ins().store(trusted(), v, p, off);
}

/// Runs `then` when `cond` holds, else `other`.
pub(super) fn if_else(
    e: &mut Emitter,
    cond: Value,
    then: &mut dyn FnMut(&mut Emitter),
    other: &mut dyn FnMut(&mut Emitter),
) {
    let t = e.b.create_block();
    let o = e.b.create_block();
    let done = e.b.create_block();
    e.b.ins().brif(cond, t, &[], o, &[]);
    e.b.switch_to_block(t);
    e.b.seal_block(t);
    then(e);
    e.b.ins().jump(done, &[]);
    e.b.switch_to_block(o);
    e.b.seal_block(o);
    other(e);
    e.b.ins().jump(done, &[]);
    e.b.switch_to_block(done);
    e.b.seal_block(done);
}

/// Runs `f` when `cond` holds.
fn if_then(e: &mut Emitter, cond: Value, f: &mut dyn FnMut(&mut Emitter)) {
    let then = e.b.create_block();
    let done = e.b.create_block();
    e.b.ins().brif(cond, then, &[], done, &[]);
    e.b.switch_to_block(then);
    e.b.seal_block(then);
    f(e);
    e.b.ins().jump(done, &[]);
    e.b.switch_to_block(done);
    e.b.seal_block(done);
}
