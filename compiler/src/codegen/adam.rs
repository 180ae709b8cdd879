//! A dense Adam update loop as one call of the runtime's `specc_adam`.
//!
//! Owns: the call for a loop kernel that `plan::adam::recognise` accepts
//! (the JIT only, when `Options::runtime_adam`; `SPECC_RUNTIME_ADAM=never`
//! keeps the CLIF loop, as does an object file, which has no runtime to
//! call). The arguments are the views' element-0 addresses (the moving
//! average's null when the loop has none), the flags, the scalar
//! sources computed on the spine exactly as the loop computes them, and
//! the range: the whole loop, or with two threads and a split kernel this
//! thread's part as `loops::emit_loop` cuts a flat loop (`thread_range`,
//! multiples of 16), on thread 0 alone otherwise. Invariant:
//! `specc_adam` does the loop's operations in its order on every element,
//! so the swap changes no bit and the thread count changes none either.

use cranelift_codegen::ir::{types, AbiParam, FuncRef, InstBuilder, Signature, Value};
use cranelift_codegen::isa::CallConv;
use specc_runtime::adam::{MOVING_AVERAGE, SCALE_GRAD};

use super::emit::{Emitter, PTR};
use crate::ir::NodeId;
use crate::plan::adam::AdamUpdate;
use crate::plan::{LoopKernel, Mode, Source};

/// Whether generated code may call `specc_adam`: `SPECC_RUNTIME_ADAM`
/// `never` (or `off`) keeps Cranelift's loops; unset, empty or `auto` means
/// yes; anything else means yes here (the CLI refuses it first, through
/// [`runtime_adam_setting`]).
pub fn runtime_adam_from_env() -> bool {
    runtime_adam_setting().unwrap_or(true)
}

/// `SPECC_RUNTIME_ADAM` read strictly: whether the runtime update is used,
/// or an error naming the accepted values.
pub fn runtime_adam_setting() -> Result<bool, String> {
    specc_runtime::settings::runtime_adam()
}

/// The signature of `specc_adam`: nine pointers, six f32 scalars, the
/// flags and the range.
pub fn signature(cc: CallConv) -> Signature {
    let mut s = Signature::new(cc);
    for _ in 0..9 {
        s.params.push(AbiParam::new(PTR));
    }
    for _ in 0..6 {
        s.params.push(AbiParam::new(types::F32));
    }
    for _ in 0..3 {
        s.params.push(AbiParam::new(types::I64));
    }
    s
}

/// Emits `k` (recognised as `a`) as a call of `f`.
pub fn emit(e: &mut Emitter, k: &LoopKernel, a: &AdamUpdate, f: FuncRef, mode: Mode) {
    let mut args: Vec<Value> = [&a.grad, &a.m, &a.v, &a.var, &a.m_out, &a.v_out, &a.var_out]
        .into_iter()
        .map(|v| e.view_ptr(v))
        .collect();
    match &a.average {
        Some((shadow, shadow_out, _)) => {
            let (s, o) = (e.view_ptr(shadow), e.view_ptr(shadow_out));
            args.extend([s, o]);
        }
        None => {
            let null = e.b.ins().iconst(PTR, 0);
            args.extend([null, null]);
        }
    }
    let scalar = |e: &mut Emitter, n: NodeId| -> Value {
        match k.sources.iter().find(|(s, _)| *s == n).map(|(_, s)| s) {
            Some(Source::Scalar(x)) => e.scalar(*x),
            Some(Source::Const(c)) => e.b.ins().f32const(*c),
            _ => unreachable!("plan::adam::recognise checked the scalar sources"),
        }
    };
    let scale = match a.scale {
        Some(n) => scalar(e, n),
        None => e.b.ins().f32const(1.0),
    };
    args.push(scale);
    for n in [a.omb1, a.omb2, a.alpha, a.eps] {
        let v = scalar(e, n);
        args.push(v);
    }
    let decay = match &a.average {
        Some((_, _, n)) => scalar(e, *n),
        None => e.b.ins().f32const(0.0),
    };
    args.push(decay);
    let mut flags = 0;
    if a.scale.is_some() {
        flags |= SCALE_GRAD;
    }
    if a.average.is_some() {
        flags |= MOVING_AVERAGE;
    }
    args.push(e.b.ins().iconst(types::I64, flags));
    let count = e.b.ins().iconst(types::I64, a.count as i64);
    if e.threads > 1 && mode == Mode::Split {
        let (lo, hi) = e.thread_range(count, 16);
        args.extend([lo, hi]);
        e.b.ins().call(f, &args);
    } else {
        let zero = e.b.ins().iconst(types::I64, 0);
        args.extend([zero, count]);
        e.only_thread0(|e| {
            e.b.ins().call(f, &args);
        });
    }
}
