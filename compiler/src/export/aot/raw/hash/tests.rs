//! The emitted hashing against the runtime's (`specc_runtime::hash`, itself
//! checked against TensorFlow's numbers in `tests/golden/hashing`): the
//! emitters JIT-compiled into functions and called on many inputs.

use cranelift_codegen::ir::{types, AbiParam, InstBuilder, UserFuncName};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use specc_runtime::hash as rt;

use super::{bucket, decimal, define_fingerprint64, fingerprint_cat64};

type Fp64 = extern "C" fn(*const u8, u64) -> u64;
type Unary = extern "C" fn(u64) -> u64;
type Binary = extern "C" fn(u64, u64) -> u64;

/// Defines `name(params...) -> u64` with `body(b, params, fp64)`.
fn define(
    module: &mut JITModule,
    name: &str,
    params: usize,
    fp64: FuncId,
    body: &dyn Fn(
        &mut FunctionBuilder,
        &[cranelift_codegen::ir::Value],
        cranelift_codegen::ir::FuncRef,
    ) -> cranelift_codegen::ir::Value,
) -> FuncId {
    let mut sig = module.make_signature();
    for _ in 0..params {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.returns.push(AbiParam::new(types::I64));
    let id = module
        .declare_function(name, Linkage::Export, &sig)
        .unwrap();
    let mut ctx = Context::new();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    {
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let fr = module.declare_func_in_func(fp64, b.func);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let p = b.block_params(entry).to_vec();
        let r = body(&mut b, &p, fr);
        b.ins().return_(&[r]);
        b.finalize(module.isa().frontend_config());
    }
    module.define_function(id, &mut ctx).unwrap();
    id
}

struct Jit {
    fp64: Fp64,
    fp64_i64: Unary,
    cat64: Binary,
    bucket_pow2: Unary,
    bucket_odd: Unary,
    _module: JITModule,
}

fn jit() -> Jit {
    let mut module = JITModule::new(crate::codegen::jit_builder().unwrap());
    let fp = define_fingerprint64(&mut module, "fp64", Linkage::Export).unwrap();
    let fpi = define(&mut module, "fp64_i64", 1, fp, &|b, p, fr| {
        let (ptr, len) = decimal(b, p[0]);
        let c = b.ins().call(fr, &[ptr, len]);
        b.inst_results(c)[0]
    });
    let cat = define(&mut module, "cat64", 2, fp, &|b, p, _| {
        fingerprint_cat64(b, p[0], p[1])
    });
    let b2 = define(&mut module, "bucket_pow2", 1, fp, &|b, p, _| {
        bucket(b, p[0], 1 << 18)
    });
    let b3 = define(&mut module, "bucket_odd", 1, fp, &|b, p, _| {
        bucket(b, p[0], 1000003)
    });
    module.finalize_definitions().unwrap();
    // SAFETY: each pointer is a function just compiled with that signature;
    // the module is kept alive in the returned value.
    unsafe {
        Jit {
            fp64: std::mem::transmute::<*const u8, Fp64>(module.get_finalized_function(fp)),
            fp64_i64: std::mem::transmute::<*const u8, Unary>(module.get_finalized_function(fpi)),
            cat64: std::mem::transmute::<*const u8, Binary>(module.get_finalized_function(cat)),
            bucket_pow2: std::mem::transmute::<*const u8, Unary>(module.get_finalized_function(b2)),
            bucket_odd: std::mem::transmute::<*const u8, Unary>(module.get_finalized_function(b3)),
            _module: module,
        }
    }
}

/// Deterministic bytes (a 64-bit LCG's high bytes).
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

#[test]
fn fingerprint64_matches_the_runtime_at_every_length_and_alignment() {
    let j = jit();
    let data = bytes(4096 + 64, 1);
    let mut checked = 0;
    // Every length to 300 (all four cases and the 65+ loop's block edges),
    // at eight alignments; then long inputs.
    for len in (0..=300).chain([511, 512, 513, 1000, 4095, 4096]) {
        for at in 0..8 {
            let s = &data[at..at + len];
            let got = (j.fp64)(s.as_ptr(), len as u64);
            assert_eq!(got, rt::fingerprint64(s), "length {len} at offset {at}");
            checked += 1;
        }
    }
    assert_eq!(checked, 307 * 8);
}

#[test]
fn fingerprint64_matches_the_runtime_on_text() {
    let j = jit();
    let words = [
        "",
        "a",
        "ab",
        "abc",
        "paris",
        "female",
        "1st",
        "Allen, Miss. Elisabeth Walton",
        "Ünïcödé — ≠ ASCII",
        "日本語のテキスト、長めの文字列です。これは六十五バイトを超える長さのはずです。",
        "🙂🙃 emoji",
        " leading and trailing spaces ",
        "\0embedded\0nul",
    ];
    for w in words {
        let got = (j.fp64)(w.as_ptr(), w.len() as u64);
        assert_eq!(got, rt::fingerprint64(w.as_bytes()), "{w:?}");
    }
    // Random byte strings of random lengths, invalid UTF-8 included.
    for seed in 0..2000u64 {
        let len = (bytes(1, seed)[0] as usize) % 200;
        let s = bytes(len, seed + 7);
        assert_eq!(
            (j.fp64)(s.as_ptr(), len as u64),
            rt::fingerprint64(&s),
            "seed {seed}"
        );
    }
}

#[test]
fn integer_ids_hash_through_their_decimal_string() {
    let j = jit();
    let mut values = vec![
        0i64,
        1,
        -1,
        9,
        10,
        -10,
        99,
        100,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
    ];
    for p in 0..19 {
        let t = 10i64.pow(p);
        values.extend([t - 1, t, t + 1, -t, 1 - t]);
    }
    for seed in 0..500u64 {
        let b = bytes(8, seed);
        values.push(i64::from_le_bytes(b.try_into().unwrap()) >> (seed % 60));
    }
    for v in values {
        assert_eq!((j.fp64_i64)(v as u64), rt::fingerprint64_i64(v), "{v}");
    }
}

#[test]
fn crosses_and_buckets_match_the_runtime() {
    let j = jit();
    let pow2 = std::num::NonZeroU64::new(1 << 18).unwrap();
    let odd = std::num::NonZeroU64::new(1000003).unwrap();
    for seed in 0..1000u64 {
        let a = u64::from_le_bytes(bytes(8, seed).try_into().unwrap());
        let b = u64::from_le_bytes(bytes(8, seed + 5000).try_into().unwrap());
        assert_eq!((j.cat64)(a, b), rt::fingerprint_cat64(a, b), "{a} {b}");
        assert_eq!((j.bucket_pow2)(a), rt::bucket(a, pow2));
        assert_eq!((j.bucket_odd)(a), rt::bucket(a, odd));
    }
    // A whole cross: the default key, a string and an id.
    let s = b"female";
    let h = (j.cat64)(rt::DEFAULT_HASH_KEY, (j.fp64)(s.as_ptr(), 6));
    let h = (j.cat64)(h, 2);
    let want = rt::cross_hash([rt::CrossValue::Bytes(s), rt::CrossValue::Int(2)], 0);
    assert_eq!(h, want);
}
