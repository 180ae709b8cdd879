//! The dense Adam update (TF1 `ApplyAdam` as specc's optimizer table writes
//! it), called by generated code (`specc_adam`) for a step's update loop.
//!
//! Owns: the update of a range of elements of one flat update loop (the
//! parameters of one or more variables merged, `plan::merge`), 16 lanes in
//! AVX-512 registers or 8 in AVX2 registers, with a scalar tail (and a
//! scalar path on other CPUs); the instruction set is the GEMM's
//! ([`Isa::active`], so `SPECC_GEMM_ISA` forces it here too). Cranelift's
//! x64 backend has only 128-bit vectors, and the update is bound by the
//! divider and the square root: wider vectors do more lanes per division.
//!
//! Invariant: every element is computed by the same IEEE operations in the
//! same order as the compiler's CLIF loop (`codegen::adam` recognises the
//! loop; `optim::table::adam` writes the rule), no FMA contraction:
//!
//! ```text
//! g     = grad            (or grad * scale, with SCALE_GRAD: global-norm clipping)
//! m'    = m + (g - m) * omb1
//! v'    = v + (g*g - v) * omb2
//! var'  = var - (m' * alpha) / (sqrt(v') + eps)
//! s'    = s - (s - var') * decay    (with MOVING_AVERAGE: the variable's
//!                                     ExponentialMovingAverage shadow)
//! ```
//!
//! so the results are the same bits whichever runs (a lane is an
//! independent element, `sqrt` and `/` are correctly rounded).

use crate::lanes::Lane;
use crate::sgemm::Isa;

/// `flags` bit: the gradient is multiplied by `scale` first.
pub const SCALE_GRAD: i64 = 1;
/// `flags` bit: the moving average `shadow` follows the new variable.
pub const MOVING_AVERAGE: i64 = 2;

/// The update's pointers: the gradient, the old `m`, `v` and variable, and
/// where the new ones go (each the element-0 address; an in-place update
/// passes the same address twice).
#[derive(Clone, Copy)]
pub struct Ptrs {
    pub grad: *const f32,
    pub m: *const f32,
    pub v: *const f32,
    pub var: *const f32,
    pub m_out: *mut f32,
    pub v_out: *mut f32,
    pub var_out: *mut f32,
    /// The moving average and where its new value goes (with
    /// [`MOVING_AVERAGE`]; otherwise unused, may be null).
    pub shadow: *const f32,
    pub shadow_out: *mut f32,
}

/// The update's scalars, as the step computes them: the gradient's scale
/// (used with [`SCALE_GRAD`]), `1 - beta1`, `1 - beta2`, the bias-corrected
/// rate, epsilon and the moving average's decay (with [`MOVING_AVERAGE`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalars {
    pub scale: f32,
    pub omb1: f32,
    pub omb2: f32,
    pub alpha: f32,
    pub eps: f32,
    pub decay: f32,
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use crate::lanes::Avx512 as V;

    /// # Safety
    /// As [`super::specc_adam`], on a CPU with AVX-512F.
    #[target_feature(enable = "avx512f,avx2")]
    pub unsafe fn run<const F: i64>(p: super::Ptrs, s: super::Scalars, lo: usize, hi: usize) {
        unsafe {
            let i = super::run::<V, F>(p, s, lo, hi);
            let i = super::run::<crate::lanes::Avx2, F>(p, s, i, hi);
            super::run::<f32, F>(p, s, i, hi);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::lanes::Avx2 as V;

    /// # Safety
    /// As [`super::specc_adam`], on a CPU with AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn run<const F: i64>(p: super::Ptrs, s: super::Scalars, lo: usize, hi: usize) {
        unsafe {
            let i = super::run::<V, F>(p, s, lo, hi);
            super::run::<f32, F>(p, s, i, hi);
        }
    }
}

/// Updates whole lanes of `L::N` elements from `lo` while they fit below
/// `hi`; returns where it stopped.
#[inline(always)]
unsafe fn run<L: Lane, const F: i64>(p: Ptrs, s: Scalars, lo: usize, hi: usize) -> usize {
    let (scale, omb1, omb2) = (L::splat(s.scale), L::splat(s.omb1), L::splat(s.omb2));
    let (alpha, eps, decay) = (L::splat(s.alpha), L::splat(s.eps), L::splat(s.decay));
    let mut i = lo;
    while i + L::N <= hi {
        // SAFETY: the caller guarantees elements lo..hi of every pointer.
        unsafe {
            let mut g = L::load(p.grad.add(i));
            if F & SCALE_GRAD != 0 {
                g = g.mul(scale);
            }
            let m = L::load(p.m.add(i));
            let v = L::load(p.v.add(i));
            let var = L::load(p.var.add(i));
            // Every load before the first store, as the CLIF loop does.
            let sh = if F & MOVING_AVERAGE != 0 {
                L::load(p.shadow.add(i))
            } else {
                L::splat(0.0)
            };
            let m_new = m.add(g.sub(m).mul(omb1));
            let v_new = v.add(g.mul(g).sub(v).mul(omb2));
            let step = m_new.mul(alpha).div(v_new.sqrt().add(eps));
            let var_new = var.sub(step);
            m_new.store(p.m_out.add(i));
            v_new.store(p.v_out.add(i));
            var_new.store(p.var_out.add(i));
            if F & MOVING_AVERAGE != 0 {
                sh.sub(sh.sub(var_new).mul(decay))
                    .store(p.shadow_out.add(i));
            }
        }
        i += L::N;
    }
    i
}

/// The Adam update of elements `lo..hi` (see the module doc for the rule
/// and [`SCALE_GRAD`], [`MOVING_AVERAGE`] for `flags`).
///
/// # Safety
/// Elements `lo..hi` of every pointer must be valid (the outputs
/// writable; `shadow` and `shadow_out` only with [`MOVING_AVERAGE`]); an output may be the same address as an input, otherwise the
/// ranges must not overlap.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_adam(
    grad: *const f32,
    m: *const f32,
    v: *const f32,
    var: *const f32,
    m_out: *mut f32,
    v_out: *mut f32,
    var_out: *mut f32,
    shadow: *const f32,
    shadow_out: *mut f32,
    scale: f32,
    omb1: f32,
    omb2: f32,
    alpha: f32,
    eps: f32,
    decay: f32,
    flags: i64,
    lo: i64,
    hi: i64,
) {
    let p = Ptrs {
        grad,
        m,
        v,
        var,
        m_out,
        v_out,
        var_out,
        shadow,
        shadow_out,
    };
    let s = Scalars {
        scale,
        omb1,
        omb2,
        alpha,
        eps,
        decay,
    };
    // SAFETY: the caller guarantees the pointers.
    unsafe { specc_adam_with(Isa::active(), p, s, flags, lo, hi) }
}

/// [`specc_adam`] with the instruction set `isa` (one this CPU lacks falls
/// back to scalar code): every instruction set gives the same bits (tested).
///
/// # Safety
/// As [`specc_adam`].
pub unsafe fn specc_adam_with(isa: Isa, p: Ptrs, s: Scalars, flags: i64, lo: i64, hi: i64) {
    let (lo, hi) = (lo.max(0) as usize, hi.max(0) as usize);
    // One monomorphized loop per combination of the flags.
    macro_rules! by_flags {
        ($($f:ident)::+ $(, $x:ty)?) => {
            match flags & (SCALE_GRAD | MOVING_AVERAGE) {
                0 => { $($f)::+::<$($x,)? 0>(p, s, lo, hi); }
                SCALE_GRAD => { $($f)::+::<$($x,)? SCALE_GRAD>(p, s, lo, hi); }
                MOVING_AVERAGE => { $($f)::+::<$($x,)? MOVING_AVERAGE>(p, s, lo, hi); }
                _ => { $($f)::+::<$($x,)? { SCALE_GRAD | MOVING_AVERAGE }>(p, s, lo, hi); }
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    {
        if isa == Isa::Avx512 && isa.is_available() {
            // SAFETY: AVX-512F is present; the caller guarantees the rest.
            unsafe { by_flags!(avx512::run) };
            return;
        }
        if isa == Isa::Avx2 && isa.is_available() {
            // SAFETY: AVX2 is present; the caller guarantees the rest.
            unsafe { by_flags!(avx2::run) };
            return;
        }
    }
    let _ = isa;
    // SAFETY: the caller guarantees the pointers.
    unsafe { by_flags!(run, f32) };
}
