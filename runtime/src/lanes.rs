//! Float lanes for the runtime's elementwise kernels (`adam`, `winograd`):
//! one trait, [`Lane`], over a scalar `f32`, an AVX2 register of 8 and an
//! AVX-512 register of 16, so a kernel is written once and instantiated per
//! instruction set.
//!
//! Invariants: every operation is the IEEE single-precision operation on
//! each lane (no fused multiply-add, no approximate reciprocal or square
//! root), so one kernel gives the same bits on every instruction set and as
//! Cranelift's loops; `neg` flips the sign bit, as CLIF's `fneg`. The vector
//! types are only used inside functions compiled for their instruction set
//! (`#[target_feature]`), after the caller checked the CPU.

/// One lane type: `N` floats, loaded and stored unaligned.
pub(crate) trait Lane: Copy {
    const N: usize;
    /// # Safety
    /// `p` is valid for `N` reads.
    unsafe fn load(p: *const f32) -> Self;
    /// # Safety
    /// `p` is valid for `N` writes.
    unsafe fn store(self, p: *mut f32);
    fn splat(x: f32) -> Self;
    fn zero() -> Self {
        Self::splat(0.0)
    }
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn sqrt(self) -> Self;
    fn neg(self) -> Self;
}

impl Lane for f32 {
    const N: usize = 1;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        unsafe { p.read() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        unsafe { p.write(self) }
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        x
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self / o
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
}

/// 16 floats in an AVX-512 register.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx512(std::arch::x86_64::__m512);

#[cfg(target_arch = "x86_64")]
impl Lane for Avx512 {
    const N: usize = 16;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        unsafe { std::arch::x86_64::_mm512_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_set1_ps(x)) }
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_add_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_sub_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_mul_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_div_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        unsafe { Avx512(std::arch::x86_64::_mm512_sqrt_ps(self.0)) }
    }
    #[inline(always)]
    fn neg(self) -> Self {
        use std::arch::x86_64::*;
        // Flip the sign bit, as CLIF's fneg.
        unsafe {
            Avx512(_mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_castps_si512(self.0),
                _mm512_set1_epi32(i32::MIN),
            )))
        }
    }
}

/// 8 floats in an AVX2 register.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(std::arch::x86_64::__m256);

#[cfg(target_arch = "x86_64")]
impl Lane for Avx2 {
    const N: usize = 8;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        unsafe { std::arch::x86_64::_mm256_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_set1_ps(x)) }
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_add_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_sub_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_mul_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_div_ps(self.0, o.0)) }
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_sqrt_ps(self.0)) }
    }
    #[inline(always)]
    fn neg(self) -> Self {
        use std::arch::x86_64::*;
        // Flip the sign bit, as CLIF's fneg.
        unsafe { Avx2(_mm256_xor_ps(self.0, _mm256_set1_ps(-0.0))) }
    }
}
