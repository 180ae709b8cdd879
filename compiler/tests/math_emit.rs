//! What the math module emits: the CLIF text of `exp`, portability of the
//! lowering (no calls, SSE2/SSE4.1-only targets give bit-identical results),
//! and an ignored micro-benchmark.

use crate::jit;

use std::time::Instant;

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, Signature, UserFuncName};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use jit::{run, Emit, Jit, Mode, Target, XorShift};
use specc_compiler::codegen::math;

const ALL: [(&str, Emit); 6] = [
    ("exp", math::exp),
    ("log", math::log),
    ("log1p", math::log1p),
    ("tanh", math::tanh),
    ("sigmoid", math::sigmoid),
    ("softplus", math::softplus),
];

/// `fn(f32x4) -> f32x4 { exp(x) }` as a standalone CLIF function.
fn exp_function(frontend: cranelift_codegen::isa::TargetFrontendConfig) -> Function {
    let mut sig = Signature::new(CallConv::SystemV);
    sig.params.push(AbiParam::new(types::F32X4));
    sig.returns.push(AbiParam::new(types::F32X4));
    let mut func = Function::with_name_signature(UserFuncName::testcase("exp_f32x4"), sig);
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let x = b.block_params(entry)[0];
    let y = math::exp(&mut b, types::F32X4, x);
    b.ins().return_(&[y]);
    b.finalize(frontend);
    func
}

#[test]
fn print_exp_clif() {
    let isa = jit::make_isa(Target::Native);
    let func = exp_function(isa.frontend_config());
    println!(
        "=== exp over f32x4: CLIF as emitted ===\n{}",
        func.display()
    );
    let insts = func
        .layout
        .block_insts(func.layout.entry_block().expect("entry"))
        .count();

    let mut ctx = Context::for_function(func);
    ctx.set_disasm(true);
    ctx.compile(&*isa, &mut ControlPlane::default())
        .unwrap_or_else(|e| panic!("compile: {:?}", e.inner));
    println!(
        "=== after the egraph pass (opt_level=speed) ===\n{}",
        ctx.func.display()
    );
    let code = ctx.compiled_code().expect("compiled");
    if let Some(vcode) = &code.vcode {
        println!("=== x86-64 machine code (VCode, native ISA) ===\n{vcode}");
    }
    println!(
        "{insts} CLIF instructions emitted, {} bytes of machine code",
        code.code_buffer().len()
    );
}

fn test_inputs() -> Vec<f32> {
    let mut rng = XorShift(12345);
    let mut xs: Vec<f32> = (0..100_000)
        .map(|_| f32::from_bits(rng.next_u32()))
        .collect();
    xs.extend((0..100_000).map(|i| -110.0 + 220.0 * (i as f32) / 100_000.0));
    xs.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::from_bits(1),
    ]);
    xs
}

/// Every function compiles without calls for plain SSE2, SSE4.1 and the
/// native ISA (AVX-512 here), and all three give bit-identical results.
#[test]
fn portable_lowering_is_call_free_and_bit_identical() {
    let targets = [
        ("native", Target::Native),
        ("sse2", Target::Baseline(&[])),
        (
            "sse4.1",
            Target::Baseline(&["has_sse3", "has_ssse3", "has_sse41"]),
        ),
    ];
    let xs = test_inputs();
    for (name, emit) in ALL {
        let mut reference: Option<Vec<f32>> = None;
        for (tname, target) in targets {
            let mut jit = Jit::new(target);
            for mode in [Mode::Vector, Mode::ScalarOnly] {
                let f = jit.compile_map(&format!("{name}_{mode:?}"), emit, mode);
                let vcode = jit.last_vcode.clone().expect("vcode listing");
                let has_call = vcode
                    .lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .any(|op| op.starts_with("call") || op.contains("libcall"));
                assert!(
                    !has_call,
                    "{name} ({tname}, {mode:?}) contains a call:\n{vcode}"
                );
                let ys = run(f, &xs);
                match &reference {
                    None => reference = Some(ys),
                    Some(r) => {
                        for ((x, a), b) in xs.iter().zip(r).zip(&ys) {
                            assert!(
                                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                                "{name} differs on {tname}/{mode:?} at x={x:e}: {a:e} vs {b:e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

type RustFn = fn(f32) -> f32;

fn best_ns_per_elem(iters: usize, n: usize, mut body: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..iters {
        let t = Instant::now();
        body();
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    best
}

/// A timing, not a test (speed lives in benchmarks): run it with
/// `cargo test --release -p specc-compiler --test math_emit -- --ignored --nocapture bench`.
#[test]
#[ignore]
fn bench_ns_per_element() {
    if cfg!(debug_assertions) {
        println!("note: debug build; the Rust baseline loops are unoptimized (use --release)");
    }
    const N: usize = 1 << 20;
    let src: Vec<f32> = (0..N)
        .map(|i| -20.0 + 40.0 * (i as f32) / N as f32)
        .collect();
    let pos: Vec<f32> = src.iter().map(|x| x.abs() + 1e-3).collect();
    let mut dst = vec![0.0f32; N];
    // In-cache working set: 16 Ki elements (128 KiB of src + dst) swept 64x.
    const SMALL: usize = 1 << 14;
    let mut jit = Jit::native();
    for (name, emit) in ALL {
        let f = jit.compile_map(name, emit, Mode::Vector);
        let input = if name == "log" { &pos } else { &src };
        let ns = best_ns_per_elem(20, N, || {
            // SAFETY: both buffers hold N f32s.
            unsafe { f(input.as_ptr(), dst.as_mut_ptr(), N as i64) };
            std::hint::black_box(&mut dst);
        });
        let ns_cached = best_ns_per_elem(20, 64 * SMALL, || {
            for _ in 0..64 {
                // SAFETY: both buffers hold at least SMALL f32s.
                unsafe { f(input.as_ptr(), dst.as_mut_ptr(), SMALL as i64) };
                std::hint::black_box(&mut dst);
            }
        });
        println!(
            "jit {name:<9} f32x4 + scalar tail: {ns:.3} ns/element over 1M ({ns_cached:.3} in cache)"
        );
    }
    let f = jit.compile_map("exp_scalar", math::exp, Mode::ScalarOnly);
    let ns = best_ns_per_elem(20, N, || {
        // SAFETY: both buffers hold N f32s.
        unsafe { f(src.as_ptr(), dst.as_mut_ptr(), N as i64) };
        std::hint::black_box(&mut dst);
    });
    println!("jit exp       scalar path only:    {ns:.3} ns/element");
    let rust: [(&str, RustFn, &[f32]); 3] = [
        ("exp", f32::exp, &src),
        ("ln", f32::ln, &pos),
        ("tanh", f32::tanh, &src),
    ];
    for (name, func, input) in rust {
        let ns = best_ns_per_elem(20, N, || {
            for (d, s) in dst.iter_mut().zip(input.iter()) {
                *d = func(std::hint::black_box(*s));
            }
            std::hint::black_box(&mut dst);
        });
        let ns_cached = best_ns_per_elem(20, 64 * SMALL, || {
            for _ in 0..64 {
                for (d, s) in dst[..SMALL].iter_mut().zip(&input[..SMALL]) {
                    *d = func(std::hint::black_box(*s));
                }
                std::hint::black_box(&mut dst);
            }
        });
        println!(
            "rust f32::{name:<5} scalar loop:       {ns:.3} ns/element over 1M ({ns_cached:.3} in cache)"
        );
    }
}
