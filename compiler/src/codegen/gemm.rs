//! The SGEMM as Cranelift IR, for code that must not call specc's runtime.
//!
//! Owns: `build`, the body of a `specc_sgemm` with the runtime's signature
//! ([`super::emit::gemm_signature`]: `C = alpha * A @ B` with arbitrary
//! strides in elements), which the ahead-of-time object
//! ([`crate::export::aot::object`]) defines instead of importing the runtime's; and
//! `step_loop`, the counted loop it and the object's wrapper are built from.
//! (An object has no `specc_sgemm_batched`: its batched products are loops
//! of calls of this `specc_sgemm`, one per group, which give the batched
//! entry's bits.)
//!
//! Loops: k blocks outermost, then rows of C in register blocks (`LEVELS`:
//! 4 rows at a time, then 2, then 1), then columns: when B and C have unit
//! column strides, 8 columns at a time for 4-row blocks (8 `f32x4`
//! accumulators, B loaded once per step for all the rows, A broadcast) and
//! 16 for the narrower ones, then 4, then single columns with scalar
//! accumulators over the same rows (the only path for other strides); `p`
//! innermost (two steps per iteration for single rows). `fma` lowers to
//! `vfmadd` on hosts with FMA (the object's ISA is the host's,
//! `crate::export::aot::object`); no kernel spills vector registers.
//!
//! Invariants: every element of C is computed by the runtime SGEMM's recipe
//! (`specc_runtime::sgemm`, "Determinism"): `k` cut into `ceil(k / 512)`
//! blocks of nearly equal length (the first `k % nb` one longer), in each
//! `acc = 0; acc = fma(a[i,p], b[p,j], acc)` for increasing `p`, the first
//! block stored as `alpha * acc`, later ones as `fma(alpha, acc, c)`; so its
//! results are the JIT's bit for bit. `beta` is not read: generated code
//! always passes 0 (C is not read before the first block writes it; `k == 0`
//! stores zeros). Nothing outside the `m x n` view of C is written.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::{FunctionBuilder, Variable};

use super::emit::{trusted, PTR};
use specc_runtime::sgemm::KC_MAX;

/// `while iv + step <= end { body(iv); iv += step }` over the i64 variable
/// `iv`, which holds the next index afterwards (so a narrower loop can take
/// over the tail).
pub(crate) fn step_loop(
    b: &mut FunctionBuilder,
    iv: Variable,
    end: Value,
    step: i64,
    body: &mut dyn FnMut(&mut FunctionBuilder, Value),
) {
    let header = b.create_block();
    let blk = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);
    b.switch_to_block(header);
    let i = b.use_var(iv);
    let next = b.ins().iadd_imm_s(i, step);
    let cond = b.ins().icmp(IntCC::SignedLessThanOrEqual, next, end);
    b.ins().brif(cond, blk, &[], exit, &[]);
    b.switch_to_block(blk);
    b.seal_block(blk);
    body(b, i);
    let i2 = b.use_var(iv);
    let n2 = b.ins().iadd_imm_s(i2, step);
    b.def_var(iv, n2);
    b.ins().jump(header, &[]);
    b.seal_block(header);
    b.switch_to_block(exit);
    b.seal_block(exit);
}

/// A fresh i64 variable holding `v`.
pub(crate) fn counter(b: &mut FunctionBuilder, v: Value) -> Variable {
    let iv = b.declare_var(types::I64);
    b.def_var(iv, v);
    iv
}

/// The operands of one call, as SSA values of the function's parameters.
struct Args {
    m: Value,
    n: Value,
    alpha: Value,
    rsa4: Value,
    csa4: Value,
    b: Value,
    rsb4: Value,
    csb4: Value,
    c: Value,
    rsc4: Value,
    csc4: Value,
}

/// Builds the body of `specc_sgemm` into `b`, whose function has the
/// signature of [`super::emit::gemm_signature`] and an empty entry block
/// switched to.
pub(crate) fn build(b: &mut FunctionBuilder, params: &[Value]) {
    let [m, k, n, alpha, a, rsa, csa, bm, rsb, csb, _beta, c, rsc, csc] = params else {
        panic!("specc_sgemm has 14 parameters, got {}", params.len());
    };
    let (m, k, n, alpha, a, rsa, csa, bm, rsb, csb, c, rsc, csc) = (
        *m, *k, *n, *alpha, *a, *rsa, *csa, *bm, *rsb, *csb, *c, *rsc, *csc,
    );
    let ret = b.create_block();
    // Nothing to do without rows or columns.
    let zero = b.ins().iconst(types::I64, 0);
    let no_m = b.ins().icmp(IntCC::SignedLessThanOrEqual, m, zero);
    let no_n = b.ins().icmp(IntCC::SignedLessThanOrEqual, n, zero);
    let empty = b.ins().bor(no_m, no_n);
    let go = b.create_block();
    b.ins().brif(empty, ret, &[], go, &[]);
    b.switch_to_block(go);
    b.seal_block(go);
    let bytes = |b: &mut FunctionBuilder, s: Value| b.ins().imul_imm_s(s, 4);
    let rsa4 = bytes(b, rsa);
    let csa4 = bytes(b, csa);
    let rsb4 = bytes(b, rsb);
    let csb4 = bytes(b, csb);
    let rsc4 = bytes(b, rsc);
    let csc4 = bytes(b, csc);
    let args = Args {
        m,
        n,
        alpha,
        rsa4,
        csa4,
        b: bm,
        rsb4,
        csb4,
        c,
        rsc4,
        csc4,
    };

    // k == 0: C = 0.
    let no_k = b.ins().icmp(IntCC::SignedLessThanOrEqual, k, zero);
    let zero_c = b.create_block();
    let blocks = b.create_block();
    b.ins().brif(no_k, zero_c, &[], blocks, &[]);
    b.switch_to_block(zero_c);
    b.seal_block(zero_c);
    {
        let iv = counter(b, zero);
        step_loop(b, iv, m, 1, &mut |b, i| {
            let row = b.ins().imul(i, rsc4);
            let crow = b.ins().iadd(c, row);
            let z = b.ins().iconst(types::I64, 0);
            let jv = counter(b, z);
            step_loop(b, jv, n, 1, &mut |b, j| {
                let off = b.ins().imul(j, csc4);
                let p = b.ins().iadd(crow, off);
                let f0 = b.ins().f32const(0.0);
                b.ins().store(trusted(), f0, p, 0);
            });
        });
    }
    b.ins().jump(ret, &[]);

    // The k blocks: nb = ceil(k / KC_MAX), lengths base + (blk < rem).
    b.switch_to_block(blocks);
    b.seal_block(blocks);
    let k_up = b.ins().iadd_imm_s(k, KC_MAX as i64 - 1);
    let kc_max = b.ins().iconst(types::I64, KC_MAX as i64);
    let nb = b.ins().sdiv(k_up, kc_max);
    let base = b.ins().sdiv(k, nb);
    let used = b.ins().imul(base, nb);
    let rem = b.ins().isub(k, used);
    // Vector paths need unit column strides of B and C.
    let unit_b = b.ins().icmp_imm_s(IntCC::Equal, csb, 1);
    let unit_c = b.ins().icmp_imm_s(IntCC::Equal, csc, 1);
    let vec_ok = b.ins().band(unit_b, unit_c);
    let p0v = counter(b, zero);
    let blkv = counter(b, zero);
    step_loop(b, blkv, nb, 1, &mut |b, blk| {
        let longer = b.ins().icmp(IntCC::SignedLessThan, blk, rem);
        let longer = b.ins().uextend(types::I64, longer);
        let kc = b.ins().iadd(base, longer);
        let first = b.ins().icmp_imm_s(IntCC::Equal, blk, 0);
        let p0 = b.use_var(p0v);
        let a_off = b.ins().imul(p0, csa4);
        let a0 = b.ins().iadd(a, a_off);
        let b_off = b.ins().imul(p0, rsb4);
        let b0 = b.ins().iadd(args.b, b_off);
        let z = b.ins().iconst(types::I64, 0);
        let iv = counter(b, z);
        for &(mr, widths) in LEVELS {
            step_loop(b, iv, args.m, mr as i64, &mut |b, i| {
                let ra = b.ins().imul(i, args.rsa4);
                let arow = b.ins().iadd(a0, ra);
                let rc = b.ins().imul(i, args.rsc4);
                let crow = b.ins().iadd(args.c, rc);
                let rows = Rows {
                    arow,
                    brow: b0,
                    crow,
                    kc,
                    first,
                    mr,
                };
                let z = b.ins().iconst(types::I64, 0);
                let jv = counter(b, z);
                let vector = b.create_block();
                let scalar = b.create_block();
                b.ins().brif(vec_ok, vector, &[], scalar, &[]);
                b.switch_to_block(vector);
                b.seal_block(vector);
                for &vecs in widths {
                    step_loop(b, jv, args.n, 4 * vecs as i64, &mut |b, j| {
                        kernel(b, &args, &rows, j, vecs)
                    });
                }
                b.ins().jump(scalar, &[]);
                b.switch_to_block(scalar);
                b.seal_block(scalar);
                step_loop(b, jv, args.n, 1, &mut |b, j| kernel(b, &args, &rows, j, 0));
            });
        }
        let p0 = b.use_var(p0v);
        let p1 = b.ins().iadd(p0, kc);
        b.def_var(p0v, p1);
    });
    b.ins().jump(ret, &[]);
    b.switch_to_block(ret);
    b.seal_block(ret);
    b.ins().return_(&[]);
}

/// The register blocking, tried in order over the remaining rows of C:
/// `(rows, widths)` runs the microkernel over `rows` rows at a time, first
/// `4 * w` columns at a time for each `w` of `widths` (`w` `f32x4`
/// accumulators per row, unit column strides only), then one column at a
/// time (scalar accumulators, any strides). Sized for x86-64's 16 vector
/// registers: Cranelift's `vfmadd213ps` ties its result to a multiplicand,
/// so every fma also needs a copy of the broadcast of A, and the loads of A
/// are scheduled ahead of the fmas; 4 x 8 (8 accumulators, 2 vectors of B)
/// runs without spills where 6 x 8 spilled 6 vectors per step.
const LEVELS: &[(usize, &[usize])] = &[(4, &[2, 1]), (2, &[4, 1]), (1, &[4, 1])];

/// `mr` rows of C, from row `i`, within one k block.
struct Rows {
    /// `&A[i, p0]`, `&B[p0, 0]`, `&C[i, 0]`.
    arow: Value,
    brow: Value,
    crow: Value,
    /// The block's length, and whether it is the first block.
    kc: Value,
    first: Value,
    /// How many rows.
    mr: usize,
}

/// `C[i .. i + mr, j .. j + 4 * vecs]` (unit column strides) over one k
/// block, or `C[i .. i + mr, j]` (any strides) when `vecs == 0`: `mr x vecs`
/// `f32x4` accumulators (or `mr` scalar ones) for the whole block, each fed
/// one `fma` per `p` in increasing order (the recipe of every element is
/// unchanged by the blocking).
fn kernel(b: &mut FunctionBuilder, args: &Args, rows: &Rows, j: Value, vecs: usize) {
    let scalar = vecs == 0;
    let (ty, lanes) = if scalar {
        (types::F32, 1)
    } else {
        (types::F32X4, vecs)
    };
    let mr = rows.mr;
    let f0 = b.ins().f32const(0.0);
    let zero = if scalar { f0 } else { b.ins().splat(ty, f0) };
    let accs: Vec<Variable> = (0..mr * lanes)
        .map(|_| {
            let v = b.declare_var(ty);
            b.def_var(v, zero);
            v
        })
        .collect();
    // Byte offsets of row r of A and C from row i.
    let a_rows: Vec<Option<Value>> = (0..mr)
        .map(|r| (r > 0).then(|| b.ins().imul_imm_s(args.rsa4, r as i64)))
        .collect();
    let jb = if scalar {
        b.ins().imul(j, args.csb4)
    } else {
        b.ins().imul_imm_s(j, 4)
    };
    let bp = b.ins().iadd(rows.brow, jb);
    let ap = b.declare_var(PTR);
    b.def_var(ap, rows.arow);
    let bpv = b.declare_var(PTR);
    b.def_var(bpv, bp);
    let z = b.ins().iconst(types::I64, 0);
    let pv = counter(b, z);
    // One step of p: every accumulator gets its fma, A and B advance.
    let step = |b: &mut FunctionBuilder| {
        let a_ptr = b.use_var(ap);
        let b_ptr = b.use_var(bpv);
        let ys: Vec<Value> = (0..lanes)
            .map(|q| b.ins().load(ty, trusted(), b_ptr, (q * 16) as i32))
            .collect();
        for (r, off) in a_rows.iter().enumerate() {
            let addr = match off {
                Some(off) => b.ins().iadd(a_ptr, *off),
                None => a_ptr,
            };
            let x = b.ins().load(types::F32, trusted(), addr, 0);
            let xs = if scalar { x } else { b.ins().splat(ty, x) };
            for (q, &y) in ys.iter().enumerate() {
                let acc = accs[r * lanes + q];
                let s = b.use_var(acc);
                let s = b.ins().fma(xs, y, s);
                b.def_var(acc, s);
            }
        }
        let a2 = b.ins().iadd(a_ptr, args.csa4);
        b.def_var(ap, a2);
        let b2 = b.ins().iadd(b_ptr, args.rsb4);
        b.def_var(bpv, b2);
    };
    // Single rows take two steps per iteration (less loop overhead: one row
    // of digits runs ~10% faster); more rows would spill (the second step's
    // loads are scheduled ahead of the first step's fmas). Then the odd one;
    // p still increases one at a time.
    if rows.mr == 1 {
        step_loop(b, pv, rows.kc, 2, &mut |b, _| {
            step(b);
            step(b);
        });
    }
    step_loop(b, pv, rows.kc, 1, &mut |b, _| step(b));
    let jc = if scalar {
        b.ins().imul(j, args.csc4)
    } else {
        b.ins().imul_imm_s(j, 4)
    };
    let cp = b.ins().iadd(rows.crow, jc);
    let alpha = if scalar {
        args.alpha
    } else {
        b.ins().splat(ty, args.alpha)
    };
    let c_rows: Vec<Value> = (0..mr)
        .map(|r| {
            if r == 0 {
                cp
            } else {
                let off = b.ins().imul_imm_s(args.rsc4, r as i64);
                b.ins().iadd(cp, off)
            }
        })
        .collect();
    let sums: Vec<Value> = accs.iter().map(|acc| b.use_var(*acc)).collect();
    store(b, rows.first, &mut |b, first| {
        for (r, &crow) in c_rows.iter().enumerate() {
            for q in 0..lanes {
                let s = sums[r * lanes + q];
                let off = (q * 16) as i32;
                let v = if first {
                    b.ins().fmul(alpha, s)
                } else {
                    let old = b.ins().load(ty, trusted(), crow, off);
                    b.ins().fma(alpha, s, old)
                };
                b.ins().store(trusted(), v, crow, off);
            }
        }
    });
}

/// `emit(true)` when `first` holds, else `emit(false)`, then joins.
fn store(b: &mut FunctionBuilder, first: Value, emit: &mut dyn FnMut(&mut FunctionBuilder, bool)) {
    let yes = b.create_block();
    let no = b.create_block();
    let done = b.create_block();
    b.ins().brif(first, yes, &[], no, &[]);
    for (blk, is_first) in [(yes, true), (no, false)] {
        b.switch_to_block(blk);
        b.seal_block(blk);
        emit(b, is_first);
        b.ins().jump(done, &[]);
    }
    b.switch_to_block(done);
    b.seal_block(done);
}
