//! Shared JIT harness for the math tests: builds
//! `extern "C" fn(src: *const f32, dst: *mut f32, n: i64)` kernels that map an
//! emitter over an array, 4 lanes at a time with the `f32x4` path and the
//! tail with the scalar path (the same loop shape the compiler emits).
#![allow(dead_code)] // each test binary uses a different subset

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, Type, Value};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

/// Signature shared by all `specc_compiler::codegen::math` emitters.
pub type Emit = fn(&mut FunctionBuilder, types::Type, Value) -> Value;

/// A compiled map kernel.
pub type MapFn = unsafe extern "C" fn(*const f32, *mut f32, i64);

/// Which loops the kernel contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `f32x4` main loop plus scalar tail loop (the production shape).
    Vector,
    /// Only the scalar loop (used to test the scalar path on every element).
    ScalarOnly,
}

/// Emits `for i in 0..n { dst[i] = f(src[i]) }` starting in the builder's
/// current block, which must be filled up to this point but not terminated.
/// On return the builder is positioned in a fresh (sealed) exit block.
///
/// `src`, `dst` are pointers (`ptr_ty`), `n` an element count of type `ptr_ty`.
pub fn emit_map_loop(
    b: &mut FunctionBuilder,
    ptr_ty: Type,
    src: Value,
    dst: Value,
    n: Value,
    mode: Mode,
    f: Emit,
) {
    let flags = MemFlagsData::new().with_notrap();
    let zero = b.ins().iconst(ptr_ty, 0);

    let tail_head = b.create_block();
    b.append_block_param(tail_head, ptr_ty);
    let tail_body = b.create_block();
    let exit = b.create_block();

    if mode == Mode::Vector {
        // n_vec = n & !3
        let n_vec = b.ins().band_imm_s(n, -4);
        let head = b.create_block();
        b.append_block_param(head, ptr_ty);
        let body = b.create_block();
        b.ins().jump(head, &[zero.into()]);

        b.switch_to_block(head);
        let i = b.block_params(head)[0];
        let more = b.ins().icmp(IntCC::SignedLessThan, i, n_vec);
        b.ins().brif(more, body, &[], tail_head, &[i.into()]);

        b.switch_to_block(body);
        b.seal_block(body);
        let off = b.ins().ishl_imm_u(i, 2);
        let ps = b.ins().iadd(src, off);
        let pd = b.ins().iadd(dst, off);
        let x = b.ins().load(types::F32X4, flags, ps, 0);
        let y = f(b, types::F32X4, x);
        b.ins().store(flags, y, pd, 0);
        let next = b.ins().iadd_imm_s(i, 4);
        b.ins().jump(head, &[next.into()]);
        b.seal_block(head);
    } else {
        b.ins().jump(tail_head, &[zero.into()]);
    }

    b.switch_to_block(tail_head);
    let i = b.block_params(tail_head)[0];
    let more = b.ins().icmp(IntCC::SignedLessThan, i, n);
    b.ins().brif(more, tail_body, &[], exit, &[]);

    b.switch_to_block(tail_body);
    b.seal_block(tail_body);
    let off = b.ins().ishl_imm_u(i, 2);
    let ps = b.ins().iadd(src, off);
    let pd = b.ins().iadd(dst, off);
    let x = b.ins().load(types::F32, flags, ps, 0);
    let y = f(b, types::F32, x);
    b.ins().store(flags, y, pd, 0);
    let next = b.ins().iadd_imm_s(i, 1);
    b.ins().jump(tail_head, &[next.into()]);
    b.seal_block(tail_head);

    b.switch_to_block(exit);
    b.seal_block(exit);
}

/// ISA feature set to compile for.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// `cranelift_native::builder()` (AVX-512 on the dev machine).
    Native,
    /// x86-64 baseline (SSE2) plus the named extra `has_*` flags.
    Baseline(&'static [&'static str]),
}

pub fn make_isa(target: Target) -> OwnedTargetIsa {
    let mut fb = settings::builder();
    fb.set("opt_level", "speed").expect("opt_level flag");
    fb.set("use_colocated_libcalls", "false")
        .expect("use_colocated_libcalls flag");
    fb.set("is_pic", "false").expect("is_pic flag");
    let ib = match target {
        Target::Native => cranelift_native::builder().expect("host ISA"),
        Target::Baseline(extra) => {
            let mut ib = cranelift_native::builder_with_options(false).expect("host ISA");
            for flag in extra {
                ib.enable(flag).expect("ISA flag");
            }
            ib
        }
    };
    ib.finish(settings::Flags::new(fb)).expect("ISA")
}

/// A JIT module holding compiled kernels (which live as long as it does).
pub struct Jit {
    module: JITModule,
    fctx: FunctionBuilderContext,
    /// VCode (machine-instruction) listing of the last compiled function.
    pub last_vcode: Option<String>,
}

impl Jit {
    pub fn new(target: Target) -> Self {
        let jb = JITBuilder::with_isa(make_isa(target), default_libcall_names());
        Jit {
            module: JITModule::new(jb),
            fctx: FunctionBuilderContext::new(),
            last_vcode: None,
        }
    }

    pub fn native() -> Self {
        Self::new(Target::Native)
    }

    /// Compiles a map kernel applying `f` elementwise.
    pub fn compile_map(&mut self, name: &str, f: Emit, mode: Mode) -> MapFn {
        let ptr = self.module.target_config().pointer_type();
        let mut ctx = self.module.make_context();
        ctx.set_disasm(true);
        for _ in 0..3 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        let frontend_config = self.module.target_config();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut self.fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            b.seal_block(entry);
            let [src, dst, n] = [0, 1, 2].map(|k| b.block_params(entry)[k]);
            emit_map_loop(&mut b, ptr, src, dst, n, mode, f);
            b.ins().return_(&[]);
            b.finalize(frontend_config);
        }
        let id = self
            .module
            .declare_function(name, Linkage::Local, &ctx.func.signature)
            .expect("declare");
        self.module
            .define_function(id, &mut ctx)
            .unwrap_or_else(|e| panic!("compiling {name}: {e:?}\n{}", ctx.func.display()));
        self.last_vcode = ctx.compiled_code().and_then(|c| c.vcode.clone());
        self.module.clear_context(&mut ctx);
        self.module.finalize_definitions().expect("finalize");
        let code = self.module.get_finalized_function(id);
        // SAFETY: the function was built with exactly this signature
        // (three pointer-sized integer params, no returns, default call conv).
        unsafe { std::mem::transmute::<*const u8, MapFn>(code) }
    }
}

/// Runs a kernel over `src`.
pub fn run(f: MapFn, src: &[f32]) -> Vec<f32> {
    let mut dst = vec![0.0f32; src.len()];
    let n = i64::try_from(src.len()).expect("length fits i64");
    // SAFETY: both buffers hold `n` f32s; the kernel touches exactly [0, n).
    unsafe { f(src.as_ptr(), dst.as_mut_ptr(), n) };
    dst
}

/// Deterministic xorshift32 stream.
pub struct XorShift(pub u32);

impl XorShift {
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

/// f32 inputs that probe a function everywhere it can go wrong: dense
/// sweeps (`lo`, `hi`, `n` points, both ends included), every power of two
/// and its negative, special values, every f32 within `walk` steps of each
/// threshold, and `random` random bit patterns from `seed`.
pub fn sweep(
    dense: &[(f64, f64, usize)],
    thresholds: &[f32],
    walk: usize,
    random: usize,
    seed: u32,
) -> Vec<f32> {
    let mut v = Vec::new();
    for &(lo, hi, n) in dense {
        for i in 0..n {
            v.push((lo + (hi - lo) * (i as f64 / (n - 1) as f64)) as f32);
        }
    }
    for k in -149..=127 {
        let p = 2f64.powi(k) as f32;
        v.extend([p, -p]);
    }
    v.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
    ]);
    for &t in thresholds {
        let (mut up, mut down) = (t, t);
        v.push(t);
        for _ in 0..walk {
            up = up.next_up();
            down = down.next_down();
            v.extend([up, down]);
        }
    }
    let mut rng = XorShift(seed);
    v.extend((0..random).map(|_| f32::from_bits(rng.next_u32())));
    v
}

/// The same bits, or both NaN.
pub fn same_bits(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}
