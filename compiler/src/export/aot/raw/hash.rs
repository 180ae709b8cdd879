//! TensorFlow's feature hashing as Cranelift IR: the code the raw entry
//! point of an object runs for hash buckets, vocabulary OOV buckets and
//! crosses, the same algorithms as the runtime's `specc_runtime::hash`.
//!
//! Owns: [`define_fingerprint64`] (a function `fp64(ptr, len) -> u64`:
//! FarmHash's `farmhashna::Hash64`, TF's `Fingerprint64`, over bytes read
//! little-endian and unaligned), and the inline emitters
//! [`fingerprint_cat64`] (TF's `FingerprintCat64`), [`bucket`] (`h % n`, a
//! mask for a power of two) and [`decimal`] (an int64's decimal string on
//! the stack, as `tf.strings.as_string` writes it, whose fingerprint hashes
//! an integer id).
//!
//! Invariants: every result is bit-identical to the runtime's (the unit
//! tests JIT-compile these emitters and compare them with
//! `specc_runtime::hash` on many strings); arithmetic wraps modulo 2^64;
//! the code reads only `len` bytes from `ptr` (any alignment) and needs a
//! little-endian target (checked where the object is made).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, UserFuncName, Value,
};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};

use crate::codegen::emit::PTR;

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;
const I64: types::Type = types::I64;

/// Loads of the caller's bytes: any alignment, never trapping (`len` bytes
/// from `ptr` are readable).
fn bytes_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

fn k(b: &mut FunctionBuilder, c: u64) -> Value {
    b.ins().iconst(I64, c as i64)
}

fn fetch64(b: &mut FunctionBuilder, s: Value, at: Value) -> Value {
    let p = b.ins().iadd(s, at);
    b.ins().load(I64, bytes_flags(), p, 0)
}

fn fetch64c(b: &mut FunctionBuilder, s: Value, at: i32) -> Value {
    b.ins().load(I64, bytes_flags(), s, at)
}

fn fetch32(b: &mut FunctionBuilder, s: Value, at: Value) -> Value {
    let p = b.ins().iadd(s, at);
    b.ins().uload32(bytes_flags(), p, 0)
}

fn shift_mix(b: &mut FunctionBuilder, v: Value) -> Value {
    let s = b.ins().ushr_imm_s(v, 47);
    b.ins().bxor(v, s)
}

fn rotr(b: &mut FunctionBuilder, v: Value, n: i64) -> Value {
    b.ins().rotr_imm_s(v, n)
}

fn mulk(b: &mut FunctionBuilder, v: Value, c: u64) -> Value {
    let kc = k(b, c);
    b.ins().imul(v, kc)
}

/// FarmHash's `HashLen16(u, v, mul)`.
fn hash_len16(b: &mut FunctionBuilder, u: Value, v: Value, mul: Value) -> Value {
    let x = b.ins().bxor(u, v);
    let x = b.ins().imul(x, mul);
    let a = shift_mix(b, x);
    let y = b.ins().bxor(v, a);
    let y = b.ins().imul(y, mul);
    let bb = shift_mix(b, y);
    b.ins().imul(bb, mul)
}

/// `K2 + len * 2`.
fn len_mul(b: &mut FunctionBuilder, len: Value) -> Value {
    let l2 = b.ins().ishl_imm_s(len, 1);
    b.ins().iadd_imm_s(l2, K2 as i64)
}

/// `WeakHashLen32WithSeeds` of the 32 bytes at `s + at`.
fn weak32(b: &mut FunctionBuilder, s: Value, at: Value, a: Value, bb: Value) -> (Value, Value) {
    let p = b.ins().iadd(s, at);
    let w = fetch64c(b, p, 0);
    let x = fetch64c(b, p, 8);
    let y = fetch64c(b, p, 16);
    let z = fetch64c(b, p, 24);
    let a = b.ins().iadd(a, w);
    let t = b.ins().iadd(bb, a);
    let t = b.ins().iadd(t, z);
    let bb = rotr(b, t, 21);
    let c = a;
    let a = b.ins().iadd(a, x);
    let a = b.ins().iadd(a, y);
    let r = rotr(b, a, 44);
    let bb = b.ins().iadd(bb, r);
    (b.ins().iadd(a, z), b.ins().iadd(bb, c))
}

fn len0to16(b: &mut FunctionBuilder, s: Value, len: Value, done: cranelift_codegen::ir::Block) {
    let ge8 = b.create_block();
    let lt8 = b.create_block();
    let ge4 = b.create_block();
    let lt4 = b.create_block();
    let nonempty = b.create_block();
    let empty = b.create_block();
    let c = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 8);
    b.ins().brif(c, ge8, &[], lt8, &[]);

    b.switch_to_block(ge8);
    b.seal_block(ge8);
    let mul = len_mul(b, len);
    let z = b.ins().iconst(I64, 0);
    let a = fetch64(b, s, z);
    let a = b.ins().iadd_imm_s(a, K2 as i64);
    let at = b.ins().iadd_imm_s(len, -8);
    let bb = fetch64(b, s, at);
    let c = rotr(b, bb, 37);
    let c = b.ins().imul(c, mul);
    let c = b.ins().iadd(c, a);
    let d = rotr(b, a, 25);
    let d = b.ins().iadd(d, bb);
    let d = b.ins().imul(d, mul);
    let h = hash_len16(b, c, d, mul);
    b.ins().jump(done, &[h.into()]);

    b.switch_to_block(lt8);
    b.seal_block(lt8);
    let c = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 4);
    b.ins().brif(c, ge4, &[], lt4, &[]);

    b.switch_to_block(ge4);
    b.seal_block(ge4);
    let mul = len_mul(b, len);
    let z = b.ins().iconst(I64, 0);
    let a = fetch32(b, s, z);
    let a3 = b.ins().ishl_imm_s(a, 3);
    let u = b.ins().iadd(len, a3);
    let at = b.ins().iadd_imm_s(len, -4);
    let v = fetch32(b, s, at);
    let h = hash_len16(b, u, v, mul);
    b.ins().jump(done, &[h.into()]);

    b.switch_to_block(lt4);
    b.seal_block(lt4);
    let c = b.ins().icmp_imm_u(IntCC::NotEqual, len, 0);
    b.ins().brif(c, nonempty, &[], empty, &[]);

    b.switch_to_block(nonempty);
    b.seal_block(nonempty);
    let a = b.ins().uload8(types::I64, bytes_flags(), s, 0);
    let half = b.ins().ushr_imm_s(len, 1);
    let p = b.ins().iadd(s, half);
    let bb = b.ins().uload8(types::I64, bytes_flags(), p, 0);
    let p = b.ins().iadd(s, len);
    let c = b.ins().uload8(types::I64, bytes_flags(), p, -1);
    let b8 = b.ins().ishl_imm_s(bb, 8);
    let y = b.ins().iadd(a, b8);
    let c2 = b.ins().ishl_imm_s(c, 2);
    let z = b.ins().iadd(len, c2);
    let y = mulk(b, y, K2);
    let z = mulk(b, z, K0);
    let x = b.ins().bxor(y, z);
    let x = shift_mix(b, x);
    let h = mulk(b, x, K2);
    b.ins().jump(done, &[h.into()]);

    b.switch_to_block(empty);
    b.seal_block(empty);
    let h = k(b, K2);
    b.ins().jump(done, &[h.into()]);
}

/// The common head of the 17..32 and 33..64 cases: `(a, b, c, d, mul)`.
fn head(b: &mut FunctionBuilder, s: Value, len: Value, a_mul: u64) -> [Value; 5] {
    let mul = len_mul(b, len);
    let a = fetch64c(b, s, 0);
    let a = mulk(b, a, a_mul);
    let bb = fetch64c(b, s, 8);
    let at = b.ins().iadd_imm_s(len, -8);
    let c = fetch64(b, s, at);
    let c = b.ins().imul(c, mul);
    let at = b.ins().iadd_imm_s(len, -16);
    let d = fetch64(b, s, at);
    let d = mulk(b, d, K2);
    [a, bb, c, d, mul]
}

/// `rotr(a + b, 43) + rotr(c, 30) + d` and `a + rotr(b + K2, 18) + c`.
fn mix_pair(b: &mut FunctionBuilder, a: Value, bb: Value, c: Value, d: Value) -> (Value, Value) {
    let ab = b.ins().iadd(a, bb);
    let y = rotr(b, ab, 43);
    let c30 = rotr(b, c, 30);
    let y = b.ins().iadd(y, c30);
    let y = b.ins().iadd(y, d);
    let bk = b.ins().iadd_imm_s(bb, K2 as i64);
    let r = rotr(b, bk, 18);
    let z = b.ins().iadd(a, r);
    let z = b.ins().iadd(z, c);
    (y, z)
}

fn len17to32(b: &mut FunctionBuilder, s: Value, len: Value) -> Value {
    let [a, bb, c, d, mul] = head(b, s, len, K1);
    let (y, z) = mix_pair(b, a, bb, c, d);
    hash_len16(b, y, z, mul)
}

fn len33to64(b: &mut FunctionBuilder, s: Value, len: Value) -> Value {
    let [a, bb, c, d, mul] = head(b, s, len, K2);
    let (y, z0) = mix_pair(b, a, bb, c, d);
    let z = hash_len16(b, y, z0, mul);
    let e = fetch64c(b, s, 16);
    let e = b.ins().imul(e, mul);
    let f = fetch64c(b, s, 24);
    let at = b.ins().iadd_imm_s(len, -32);
    let g = fetch64(b, s, at);
    let g = b.ins().iadd(y, g);
    let g = b.ins().imul(g, mul);
    let at = b.ins().iadd_imm_s(len, -24);
    let h = fetch64(b, s, at);
    let h = b.ins().iadd(z, h);
    let h = b.ins().imul(h, mul);
    let ef = b.ins().iadd(e, f);
    let u = rotr(b, ef, 43);
    let g30 = rotr(b, g, 30);
    let u = b.ins().iadd(u, g30);
    let u = b.ins().iadd(u, h);
    let fa = b.ins().iadd(f, a);
    let r = rotr(b, fa, 18);
    let v = b.ins().iadd(e, r);
    let v = b.ins().iadd(v, g);
    hash_len16(b, u, v, mul)
}

struct State {
    x: Variable,
    y: Variable,
    z: Variable,
    v0: Variable,
    v1: Variable,
    w0: Variable,
    w1: Variable,
}

/// One 64-byte round at `s + at` with multiplier `mul` (`K1` in the loop;
/// the length-dependent one, with the extra `* 9`s, for the last block).
fn round64(b: &mut FunctionBuilder, st: &State, s: Value, at: Value, mul: Value, last: bool) {
    let p = b.ins().iadd(s, at);
    let (x, y, z) = (b.use_var(st.x), b.use_var(st.y), b.use_var(st.z));
    let (v0, v1, w0, w1) = (
        b.use_var(st.v0),
        b.use_var(st.v1),
        b.use_var(st.w0),
        b.use_var(st.w1),
    );
    let f8 = fetch64c(b, p, 8);
    let x = b.ins().iadd(x, y);
    let x = b.ins().iadd(x, v0);
    let x = b.ins().iadd(x, f8);
    let x = rotr(b, x, 37);
    let x = b.ins().imul(x, mul);
    let f48 = fetch64c(b, p, 48);
    let y = b.ins().iadd(y, v1);
    let y = b.ins().iadd(y, f48);
    let y = rotr(b, y, 42);
    let y = b.ins().imul(y, mul);
    let f40 = fetch64c(b, p, 40);
    let (x, y) = if last {
        let w9 = b.ins().imul_imm_s(w1, 9);
        let x = b.ins().bxor(x, w9);
        let v9 = b.ins().imul_imm_s(v0, 9);
        let y = b.ins().iadd(y, v9);
        (x, b.ins().iadd(y, f40))
    } else {
        let x = b.ins().bxor(x, w1);
        let y = b.ins().iadd(y, v0);
        (x, b.ins().iadd(y, f40))
    };
    let z = b.ins().iadd(z, w0);
    let z = rotr(b, z, 33);
    let z = b.ins().imul(z, mul);
    let sa = b.ins().imul(v1, mul);
    let sb = b.ins().iadd(x, w0);
    let (nv0, nv1) = weak32(b, s, at, sa, sb);
    let at32 = b.ins().iadd_imm_s(at, 32);
    let ta = b.ins().iadd(z, w1);
    let f16 = fetch64c(b, p, 16);
    let tb = b.ins().iadd(y, f16);
    let (nw0, nw1) = weak32(b, s, at32, ta, tb);
    b.def_var(st.v0, nv0);
    b.def_var(st.v1, nv1);
    b.def_var(st.w0, nw0);
    b.def_var(st.w1, nw1);
    // swap(z, x)
    b.def_var(st.x, z);
    b.def_var(st.z, x);
    b.def_var(st.y, y);
}

fn len65plus(b: &mut FunctionBuilder, s: Value, len: Value) -> Value {
    const SEED: u64 = 81;
    let y0 = SEED.wrapping_mul(K1).wrapping_add(113);
    let z0 = {
        let t = y0.wrapping_mul(K2).wrapping_add(113);
        (t ^ (t >> 47)).wrapping_mul(K2)
    };
    let var = |b: &mut FunctionBuilder, v: Value| {
        let x = b.declare_var(I64);
        b.def_var(x, v);
        x
    };
    let f0 = fetch64c(b, s, 0);
    let x0 = b.ins().iadd_imm_s(f0, SEED.wrapping_mul(K2) as i64);
    let y0 = k(b, y0);
    let z0 = k(b, z0);
    let zero = b.ins().iconst(I64, 0);
    let st = State {
        x: var(b, x0),
        y: var(b, y0),
        z: var(b, z0),
        v0: var(b, zero),
        v1: var(b, zero),
        w0: var(b, zero),
        w1: var(b, zero),
    };
    let at = var(b, zero);
    // end = ((len - 1) / 64) * 64
    let lm1 = b.ins().iadd_imm_s(len, -1);
    let end = b.ins().band_imm_s(lm1, !63);
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);
    b.switch_to_block(header);
    let a = b.use_var(at);
    let more = b.ins().icmp(IntCC::NotEqual, a, end);
    b.ins().brif(more, body, &[], exit, &[]);
    b.switch_to_block(body);
    b.seal_block(body);
    let k1 = k(b, K1);
    round64(b, &st, s, a, k1, false);
    let a2 = b.ins().iadd_imm_s(a, 64);
    b.def_var(at, a2);
    b.ins().jump(header, &[]);
    b.seal_block(header);
    b.switch_to_block(exit);
    b.seal_block(exit);

    let z = b.use_var(st.z);
    let zl = b.ins().band_imm_s(z, 0xff);
    let zl = b.ins().ishl_imm_s(zl, 1);
    let mul = b.ins().iadd_imm_s(zl, K1 as i64);
    let last = b.ins().iadd_imm_s(len, -64);
    let w0 = b.use_var(st.w0);
    let l63 = b.ins().band_imm_s(lm1, 63);
    let w0 = b.ins().iadd(w0, l63);
    let v0 = b.use_var(st.v0);
    let v0 = b.ins().iadd(v0, w0);
    let w0 = b.ins().iadd(w0, v0);
    b.def_var(st.w0, w0);
    b.def_var(st.v0, v0);
    round64(b, &st, s, last, mul, true);
    let (x, y, z) = (b.use_var(st.x), b.use_var(st.y), b.use_var(st.z));
    let (v0, v1, w0, w1) = (
        b.use_var(st.v0),
        b.use_var(st.v1),
        b.use_var(st.w0),
        b.use_var(st.w1),
    );
    let h1 = hash_len16(b, v0, w0, mul);
    let sy = shift_mix(b, y);
    let sy = mulk(b, sy, K0);
    let h1 = b.ins().iadd(h1, sy);
    let h1 = b.ins().iadd(h1, z);
    let h2 = hash_len16(b, v1, w1, mul);
    let h2 = b.ins().iadd(h2, x);
    hash_len16(b, h1, h2, mul)
}

/// Defines `name(ptr, len) -> u64`, TF's `Fingerprint64` of `len` bytes at
/// `ptr`, in `module`.
pub fn define_fingerprint64<M: Module>(
    module: &mut M,
    name: &str,
    linkage: Linkage,
) -> Result<FuncId, String> {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(PTR));
    sig.params.push(AbiParam::new(I64));
    sig.returns.push(AbiParam::new(I64));
    let id = module
        .declare_function(name, linkage, &sig)
        .map_err(|e| e.to_string())?;
    let mut ctx = Context::new();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    {
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let p = b.block_params(entry).to_vec();
        let (s, len) = (p[0], p[1]);
        let done = b.create_block();
        b.append_block_param(done, I64);
        let small = b.create_block();
        let big = b.create_block();
        let c = b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 16);
        b.ins().brif(c, small, &[], big, &[]);
        b.switch_to_block(small);
        b.seal_block(small);
        len0to16(&mut b, s, len, done);

        b.switch_to_block(big);
        b.seal_block(big);
        let le32 = b.create_block();
        let gt32 = b.create_block();
        let c = b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 32);
        b.ins().brif(c, le32, &[], gt32, &[]);
        b.switch_to_block(le32);
        b.seal_block(le32);
        let h = len17to32(&mut b, s, len);
        b.ins().jump(done, &[h.into()]);

        b.switch_to_block(gt32);
        b.seal_block(gt32);
        let le64 = b.create_block();
        let gt64 = b.create_block();
        let c = b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 64);
        b.ins().brif(c, le64, &[], gt64, &[]);
        b.switch_to_block(le64);
        b.seal_block(le64);
        let h = len33to64(&mut b, s, len);
        b.ins().jump(done, &[h.into()]);

        b.switch_to_block(gt64);
        b.seal_block(gt64);
        let h = len65plus(&mut b, s, len);
        b.ins().jump(done, &[h.into()]);

        b.switch_to_block(done);
        b.seal_block(done);
        let h = b.block_params(done)[0];
        b.ins().return_(&[h]);
        b.finalize(module.isa().frontend_config());
    }
    module
        .define_function(id, &mut ctx)
        .map_err(|e| format!("cranelift rejected {name}: {e:?}"))?;
    Ok(id)
}

/// TF's `FingerprintCat64(fp1, fp2)`.
pub fn fingerprint_cat64(b: &mut FunctionBuilder, fp1: Value, fp2: Value) -> Value {
    const MUL: u64 = 0xc6a4_a793_5bd1_e995;
    let r = b.ins().bxor_imm_s(fp1, MUL as i64);
    let t = mulk(b, fp2, MUL);
    let t = shift_mix(b, t);
    let t = mulk(b, t, MUL);
    let r = b.ins().bxor(r, t);
    let r = mulk(b, r, MUL);
    let r = shift_mix(b, r);
    let r = mulk(b, r, MUL);
    shift_mix(b, r)
}

/// `h % n` (unsigned), a mask when `n` is a power of two; `n > 0`.
pub fn bucket(b: &mut FunctionBuilder, h: Value, n: u64) -> Value {
    assert!(n > 0, "a bucket count is positive");
    if n.is_power_of_two() {
        b.ins().band_imm_s(h, (n - 1) as i64)
    } else {
        let nv = k(b, n);
        b.ins().urem(h, nv)
    }
}

/// The decimal string of the int64 `v` in a fresh 24-byte stack slot:
/// `(ptr, len)`, as the runtime's `hash::decimal` writes it (a `-` and the
/// digits of the magnitude, no leading zeros).
pub fn decimal(b: &mut FunctionBuilder, v: Value) -> (Value, Value) {
    let slot = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 24, 3));
    let base = b.ins().stack_addr(PTR, slot, 0);
    let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, v, 0);
    let negv = b.ins().ineg(v);
    // |i64::MIN| wraps to itself, which is 2^63 as an unsigned magnitude.
    let mag = b.ins().select(neg, negv, v);
    let at = b.declare_var(I64);
    let n = b.declare_var(I64);
    let end = b.ins().iconst(I64, 24);
    b.def_var(at, end);
    b.def_var(n, mag);
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(body, &[]);
    b.switch_to_block(body);
    let a = b.use_var(at);
    let m = b.use_var(n);
    let a = b.ins().iadd_imm_s(a, -1);
    let q = b.ins().udiv_imm_s(m, 10);
    let q10 = b.ins().imul_imm_s(q, 10);
    let d = b.ins().isub(m, q10);
    let d = b.ins().iadd_imm_s(d, i64::from(b'0'));
    let p = b.ins().iadd(base, a);
    let d8 = b.ins().ireduce(types::I8, d);
    b.ins().store(bytes_flags(), d8, p, 0);
    b.def_var(at, a);
    b.def_var(n, q);
    let more = b.ins().icmp_imm_u(IntCC::NotEqual, q, 0);
    b.ins().brif(more, body, &[], exit, &[]);
    b.seal_block(body);
    b.switch_to_block(exit);
    b.seal_block(exit);
    let a = b.use_var(at);
    let a1 = b.ins().iadd_imm_s(a, -1);
    let minus = b.ins().iconst(types::I8, i64::from(b'-'));
    let p = b.ins().iadd(base, a1);
    // The sign byte is written either way; the start says whether it counts.
    b.ins().store(bytes_flags(), minus, p, 0);
    let start = b.ins().select(neg, a1, a);
    let ptr = b.ins().iadd(base, start);
    let len = b.ins().isub(end, start);
    (ptr, len)
}

#[cfg(test)]
mod tests;
