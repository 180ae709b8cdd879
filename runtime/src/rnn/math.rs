//! `exp`, `tanh` and `σ` in single precision, the compiled step's bits.
//!
//! Owns the scalar Rust ports of the algorithms that
//! `compiler/src/codegen/math.rs` emits as Cranelift IR (its module docs
//! describe them and their accuracy: `exp` within 1 ulp, `tanh` 1, `σ` 2).
//!
//! # Invariants
//! - Each function performs exactly the sequence of IEEE single-precision
//!   operations the CLIF emitter does, constant for constant and in the
//!   same order: additions, multiplications, divisions, `|x|`, sign-bit
//!   `or`s, compare-and-select, and integer operations on the bits. Rust
//!   never contracts `a * b + c` into a fused multiply-add, and nothing here
//!   calls libm, so the results are the compiled step's bit for bit on every
//!   CPU (checked over many inputs by the compiler's `runtime_math` test).
//! - Everything is branch-free (selects), so the loops that call these
//!   functions vectorize; vector lanes give the scalar bits.

/// 1.5 · 2^23: adding it to |v| < 2^22 rounds v to an integer (ties to even)
/// and leaves that integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
const ROUND_MAGIC_BITS: i32 = 0x4B40_0000;
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// Cody–Waite split of ln 2 (Cephes): C1 has 9 significant bits.
const EXP_C1: f32 = f32::from_bits(0x3F31_8000);
const EXP_C2: f32 = f32::from_bits(0xB95E_8083);
/// Cephes `expf` polynomial: e^r ≈ 1 + r + r²·P(r), |r| ≤ ln2/2.
const EXP_P: [f32; 6] = [
    f32::from_bits(0x3950_6967),
    f32::from_bits(0x3AB7_43CE),
    f32::from_bits(0x3C08_8908),
    f32::from_bits(0x3D2A_A9C1),
    f32::from_bits(0x3E2A_AAAA),
    0.5,
];
/// exp clamp: below LO the result is +0, above HI it is +inf.
const EXP_LO: f32 = -104.0;
const EXP_HI: f32 = f32::from_bits(0x42B1_851F);
/// Cephes `tanhf` polynomial: tanh(a) ≈ a + a·s·Q(s), s = a², a < 0.625.
const TANH_Q: [f32; 5] = [
    f32::from_bits(0xBBBA_F0EA),
    f32::from_bits(0x3CA9_134F),
    f32::from_bits(0xBD5C_1E2D),
    f32::from_bits(0x3E08_8393),
    f32::from_bits(0xBEAA_AA99),
];
const TANH_POLY_LIMIT: f32 = 0.625;
const SIGN: u32 = 0x8000_0000;

/// `mask ? t : f`, as CLIF's `select` on an `fcmp`.
#[inline(always)]
fn sel(mask: bool, t: f32, f: f32) -> f32 {
    if mask {
        t
    } else {
        f
    }
}

/// Horner evaluation `((c0·x + c1)·x + c2)·x + …` (no FMA).
#[inline(always)]
fn horner(x: f32, coeffs: &[f32]) -> f32 {
    let mut acc = coeffs[0];
    for &c in &coeffs[1..] {
        acc = acc * x + c;
    }
    acc
}

/// 2^n for an integer n in [-126, 127], built in the exponent field
/// (wrapping, as CLIF's `iadd`/`ishl`, for the NaN path's garbage `n`).
#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32).wrapping_shl(23))
}

/// e^x: within 1 ulp; subnormal results are produced (not flushed);
/// `+inf` for `x > 88.7228`, `+0` for `x < -103.972`, NaN for NaN.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Clamp; a NaN fails both compares and passes through.
    let x = sel(x < EXP_LO, EXP_LO, x);
    let x = sel(EXP_HI < x, EXP_HI, x);

    // n = round_ne(x·log2e), as float and as integer.
    let t = x * LOG2E;
    let kf = t + ROUND_MAGIC;
    let nf = kf + -ROUND_MAGIC;
    let n = (kf.to_bits() as i32).wrapping_add(-ROUND_MAGIC_BITS);

    // r = x - n·ln2 (Cody–Waite; the first step is exact).
    let r = x - nf * EXP_C1;
    let r = r - nf * EXP_C2;

    // e^r ≈ 1 + r + r²·P(r)
    let z = r * r;
    let p = horner(r, &EXP_P);
    let p = p * z;
    let p = p + r;
    let p = p + 1.0;

    // · 2^n as 2^(n>>1) · 2^(n-(n>>1)).
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let p = p * pow2i(n1);
    p * pow2i(n2)
}

/// tanh x: within 1 ulp, exactly odd, saturating to exactly ±1.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let a = x.abs();

    // a < 0.625: a + a·s·Q(s)
    let s = a * a;
    let q = horner(s, &TANH_Q);
    let q = q * s;
    let q = q * a;
    let small = q + a;

    // otherwise: 1 - 2/(e^{2a} + 1)
    let e = exp(a + a);
    let d = e + 1.0;
    let q = 2.0 / d;
    let large = 1.0 - q;

    let r = sel(a < TANH_POLY_LIMIT, small, large);
    f32::from_bits(r.to_bits() | (x.to_bits() & SIGN))
}

/// σ(x) = 1/(1+e^-x): within 2 ulps, relatively accurate for large
/// negative x.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = exp(f32::from_bits(x.to_bits() | SIGN)); // e^{-|x|}
    let d = e + 1.0;
    let pos = 1.0 / d;
    let neg = e / d;
    sel(x < 0.0, neg, pos)
}
