//! The float types the time loops run in: [`Real`] (f32, the compiled
//! step's, and f64, the compiler's reference interpreter's), and the
//! activations as types ([`Act`]) so each pointwise loop is compiled once
//! per activation, without a branch per element.
//!
//! # Invariants
//! - f32: `exp`, `tanh`, `σ` are specc's polynomials ([`super::math`]), the
//!   compiled step's bits on every CPU; the GEMM is [`crate::sgemm`] (its
//!   fixed recipe of fused multiply-adds: the bits do not depend on the
//!   kernel, the CPU or the split of the rows).
//! - f64: `exp` and `tanh` are std's, `σ(x) = 1/(1 + e^-x)` as the
//!   interpreter computes it; the GEMM is plain loops in a fixed order
//!   (`acc = 0; acc = acc + a·b` over increasing `p`, then `+ c` when
//!   accumulating), separately rounded.
//! - The derivatives of the activations are taken from their *outputs*:
//!   tanh `1 − y²`, σ `y(1 − y)`, relu `y > 0 ? 1 : 0`, linear `1`.
//! - `relu(x) = x > 0 ? x : 0` (the compiled step's select: NaN gives 0).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use super::Activation;
use crate::sgemm::{sgemm_with, Isa};

/// A float the time loops run in: f32 or f64.
pub trait Real:
    Copy
    + Debug
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;

    /// The value of an f32 (exact).
    fn from_f32(x: f32) -> Self;

    /// The value as f64 (exact).
    fn to_f64(self) -> f64;

    /// An f64 in this type (f32: rounded to nearest).
    fn from_f64(x: f64) -> Self;

    /// e^x.
    fn exp(self) -> Self;

    /// tanh x.
    fn tanh(self) -> Self;

    /// σ(x) = 1/(1 + e^-x).
    fn sigmoid(self) -> Self;

    /// `act(x)`.
    #[inline(always)]
    fn activate(self, act: Activation) -> Self {
        match act {
            Activation::Tanh => Tanh::f(self),
            Activation::Relu => Relu::f(self),
            Activation::Sigmoid => Sigmoid::f(self),
            Activation::Linear => Linear::f(self),
        }
    }

    /// `act'(x)` from `y = act(x)`.
    #[inline(always)]
    fn activation_grad(act: Activation, y: Self) -> Self {
        match act {
            Activation::Tanh => Tanh::d(y),
            Activation::Relu => Relu::d(y),
            Activation::Sigmoid => Sigmoid::d(y),
            Activation::Linear => Linear::d(y),
        }
    }

    /// `C[m,n] = A[m,k] @ B[k,n]`, or `A @ B + C` with `accumulate`;
    /// strides in elements (row, column). f32: [`sgemm_with`] with `isa`
    /// (`alpha = 1`, `beta` 0 or 1); f64: plain loops (`isa` unused). With
    /// `accumulate` false, C is not read.
    ///
    /// # Safety
    /// As for [`crate::sgemm::sgemm`]: every addressed element of A and B
    /// readable, of C readable and writable, C not overlapping A or B;
    /// `isa` available on this CPU.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        isa: Isa,
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        accumulate: bool,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;

    #[inline(always)]
    fn from_f32(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        super::math::exp(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        super::math::tanh(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        super::math::sigmoid(self)
    }

    unsafe fn gemm(
        isa: Isa,
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        accumulate: bool,
        c: *mut f32,
        rsc: isize,
        csc: isize,
    ) {
        let beta = if accumulate { 1.0 } else { 0.0 };
        // SAFETY: the caller's contract is sgemm's.
        unsafe {
            sgemm_with(
                isa, m, k, n, 1.0, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc,
            )
        }
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;

    #[inline(always)]
    fn from_f32(x: f32) -> f64 {
        f64::from(x)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    #[inline(always)]
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + f64::exp(-self))
    }

    unsafe fn gemm(
        _isa: Isa,
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        accumulate: bool,
        c: *mut f64,
        rsc: isize,
        csc: isize,
    ) {
        for i in 0..m as isize {
            for j in 0..n as isize {
                let mut acc = 0.0;
                for p in 0..k as isize {
                    // SAFETY: inside the views the caller guarantees.
                    acc += unsafe { *a.offset(i * rsa + p * csa) * *b.offset(p * rsb + j * csb) };
                }
                // SAFETY: as above.
                unsafe {
                    let c = c.offset(i * rsc + j * csc);
                    *c = if accumulate { acc + *c } else { acc };
                }
            }
        }
    }
}

/// An activation as a type: `f` the function, `d` its derivative from its
/// output.
pub(crate) trait Act {
    fn f<R: Real>(x: R) -> R;
    fn d<R: Real>(y: R) -> R;
}

pub(crate) struct Tanh;
pub(crate) struct Relu;
pub(crate) struct Sigmoid;
pub(crate) struct Linear;

impl Act for Tanh {
    #[inline(always)]
    fn f<R: Real>(x: R) -> R {
        x.tanh()
    }
    #[inline(always)]
    fn d<R: Real>(y: R) -> R {
        R::ONE - y * y
    }
}

impl Act for Relu {
    #[inline(always)]
    fn f<R: Real>(x: R) -> R {
        if x > R::ZERO {
            x
        } else {
            R::ZERO
        }
    }
    #[inline(always)]
    fn d<R: Real>(y: R) -> R {
        if y > R::ZERO {
            R::ONE
        } else {
            R::ZERO
        }
    }
}

impl Act for Sigmoid {
    #[inline(always)]
    fn f<R: Real>(x: R) -> R {
        x.sigmoid()
    }
    #[inline(always)]
    fn d<R: Real>(y: R) -> R {
        y * (R::ONE - y)
    }
}

impl Act for Linear {
    #[inline(always)]
    fn f<R: Real>(x: R) -> R {
        x
    }
    #[inline(always)]
    fn d<R: Real>(_y: R) -> R {
        R::ONE
    }
}

/// Runs `$body` with `$A` the [`Act`] type of the [`Activation`] `$act`.
macro_rules! with_act {
    ($act:expr, $A:ident => $body:expr) => {
        match $act {
            $crate::rnn::Activation::Tanh => {
                type $A = $crate::rnn::real::Tanh;
                $body
            }
            $crate::rnn::Activation::Relu => {
                type $A = $crate::rnn::real::Relu;
                $body
            }
            $crate::rnn::Activation::Sigmoid => {
                type $A = $crate::rnn::real::Sigmoid;
                $body
            }
            $crate::rnn::Activation::Linear => {
                type $A = $crate::rnn::real::Linear;
                $body
            }
        }
    };
}
pub(crate) use with_act;
