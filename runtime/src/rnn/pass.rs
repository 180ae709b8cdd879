//! A pointwise pass of the time loops and the instruction set it is
//! compiled for.
//!
//! Owns [`Pass`] (a loop over the rows of one step, plain Rust that LLVM
//! vectorizes), [`run`] (the same code compiled for AVX-512F or AVX2 and
//! chosen by the [`Isa`] the call runs the GEMM with, else baseline), and
//! the raw-slice helpers the passes read the tapes with.
//!
//! Invariants: every variant performs the same IEEE operations per element
//! (Rust neither reassociates nor contracts to FMA, and the vector
//! instructions are the scalar ones lane by lane), so the ISA changes
//! speed only, never bits.

use crate::sgemm::Isa;

/// One pointwise pass; `run` is `#[inline(always)]` in every
/// implementation, so it is compiled inside each ISA's entry below.
pub(super) trait Pass {
    fn run(&self);
}

/// Runs `p` compiled for `isa`'s vector width (`Scalar`: baseline x86-64
/// or the target's default).
///
/// # Safety
/// `isa` is available on this CPU ([`Isa::is_available`]); `p.run()`'s own
/// requirements hold.
#[inline]
pub(super) unsafe fn run<P: Pass>(isa: Isa, p: &P) {
    match isa {
        // SAFETY: the caller checked the CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { run_avx512(p) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { run_avx2(p) },
        _ => p.run(),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2")]
unsafe fn run_avx512<P: Pass>(p: &P) {
    p.run()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<P: Pass>(p: &P) {
    p.run()
}

/// `n` elements at `p`.
///
/// # Safety
/// `p` valid for `n` reads, not written through while the slice lives.
#[inline(always)]
pub(super) unsafe fn rd<'a, R>(p: *const R, n: usize) -> &'a [R] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// `n` elements at `p`, writable.
///
/// # Safety
/// `p` valid for `n` reads and writes, accessed through nothing else while
/// the slice lives.
#[inline(always)]
pub(super) unsafe fn wr<'a, R>(p: *mut R, n: usize) -> &'a mut [R] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(p, n) }
}
