//! The entry points and the dispatch: which kernel runs a product.
//!
//! Owns [`Isa`] (the instruction sets with a kernel, detected once, or
//! forced by `SPECC_GEMM_ISA`), the public functions ([`sgemm`],
//! [`sgemm_with`], [`sgemm_ep`], [`sgemm_ep_with`], and the strided batch
//! [`sgemm_batched`], [`sgemm_batched_with`] with its [`Batch`]) and
//! [`Problem`], one
//! product after the public checks, in the orientation the kernels prefer
//! (`C^T = B^T A^T` for a column-major or narrow C).
//!
//! Invariants: the orientation and the ISA change only speed, never the
//! per-element arithmetic (the k recipe of the [module docs](super));
//! `m == 0` or `n == 0` touches nothing, `k == 0` only scales C (and
//! applies the epilogue).

use std::sync::OnceLock;

use super::epilogue::{apply_ep, Ep, Epilogue};
use super::kernel::CTile;
use super::kernel_scalar;
#[cfg(target_arch = "x86_64")]
use super::{kernel_avx2, kernel_avx512};

/// The instruction sets with a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AVX-512F (with AVX2 and FMA) kernels: 6x64, 8x48, 12x32 or 16x16
    /// tiles.
    Avx512,
    /// AVX2 + FMA kernel: 6x16 tiles (5x16 for a C of 7 to 10 rows).
    Avx2,
    /// Portable scalar kernel (any target).
    Scalar,
}

impl Isa {
    /// The best kernel this CPU supports (what [`sgemm`] uses unless
    /// `SPECC_GEMM_ISA` says otherwise).
    pub fn detect() -> Isa {
        if Isa::Avx512.is_available() {
            Isa::Avx512
        } else if Isa::Avx2.is_available() {
            Isa::Avx2
        } else {
            Isa::Scalar
        }
    }

    /// The kernel [`sgemm`] uses: `SPECC_GEMM_ISA` when it names a kernel
    /// this CPU runs ([`gemm_isa_from_env`]), else [`Isa::detect`]. Read
    /// once per process. Every kernel gives the same bits, so this only
    /// changes speed (it is how the AVX2 path is measured on AVX-512 CPUs).
    pub fn active() -> Isa {
        static ACTIVE: OnceLock<Isa> = OnceLock::new();
        *ACTIVE.get_or_init(|| {
            gemm_isa_from_env()
                .ok()
                .flatten()
                .unwrap_or_else(Isa::detect)
        })
    }

    /// The kernel's name as `SPECC_GEMM_ISA` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Scalar => "scalar",
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512 | Isa::Avx2 => false,
            Isa::Scalar => true,
        }
    }
}

/// `SPECC_GEMM_ISA` read strictly ([`crate::settings::gemm_isa`]): `None`
/// when unset or empty, the kernel when it is `avx512`, `avx2` or `scalar`
/// and this CPU runs it, an error saying why otherwise (the CLI refuses the
/// value; [`Isa::active`] then ignores it).
pub fn gemm_isa_from_env() -> Result<Option<Isa>, String> {
    crate::settings::gemm_isa()
}

/// `C[m,n] = alpha * A[m,k] @ B[k,n] + beta * C`, all strides in elements
/// (row stride, column stride), using the best kernel for this CPU (or the
/// one `SPECC_GEMM_ISA` names, see [`Isa::active`]).
///
/// Any strides are accepted: a transposed view is a pair of swapped strides,
/// and a stride of 0 makes a broadcast read of A or B. With `beta == 0`, C is
/// not read (it may hold NaN). `m`, `n` and `k` may be 0 (`k == 0`:
/// `C = beta * C`, or 0 if `beta == 0`). Results are deterministic and
/// independent of how C is split between calls (see the module docs).
///
/// # Safety
/// For every `i < m`, `j < n`, `p < k`: `a.offset(i*rsa + p*csa)` and
/// `b.offset(p*rsb + j*csb)` must be valid for reads, and
/// `c.offset(i*rsc + j*csc)` valid for reads and writes, with distinct
/// `(i, j)` addressing distinct elements of C. C must not overlap A or B.
/// Nothing else is accessed.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
) {
    sgemm_with(
        Isa::active(),
        m,
        k,
        n,
        alpha,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        beta,
        c,
        rsc,
        csc,
    )
}

/// [`sgemm`] with a chosen kernel (for tests and benchmarks). Bit-identical
/// to [`sgemm`] on every input.
///
/// # Panics
/// If `isa` is not available on this CPU ([`Isa::is_available`]).
///
/// # Safety
/// As for [`sgemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_with(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
) {
    sgemm_ep_with(
        isa, m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc, None,
    )
}

/// [`sgemm`] followed by an [`Epilogue`]: `C = ep(alpha * A @ B + beta * C)`.
/// The epilogue is applied block by block of C (the driver's cache blocks,
/// at most about 1056 x 512 floats), right after the block's last k block
/// is stored (while it is in cache), never to partial sums; every element
/// gets the same operations whatever the kernel or the way C is split
/// between calls (a caller splitting C by columns offsets `bias` too).
///
/// # Safety
/// As for [`sgemm`]; with a bias, `bias.offset(j * bias_stride)` must be
/// readable for every `j < n` and must not overlap C.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_ep(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
    ep: Option<&Epilogue>,
) {
    sgemm_ep_with(
        Isa::active(),
        m,
        k,
        n,
        alpha,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        beta,
        c,
        rsc,
        csc,
        ep,
    )
}

/// [`sgemm_ep`] with a chosen kernel (for tests and benchmarks).
///
/// # Panics
/// If `isa` is not available on this CPU ([`Isa::is_available`]).
///
/// # Safety
/// As for [`sgemm_ep`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_ep_with(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
    ep: Option<&Epilogue>,
) {
    let ep = ep.and_then(|e| {
        (!e.bias.is_null() || e.relu).then_some(Ep {
            bias: e.bias,
            rs: 0,
            cs: e.bias_stride,
            relu: e.relu,
        })
    });
    let p = Problem {
        m,
        n,
        k,
        alpha,
        beta,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        c,
        rsc,
        csc,
        ep,
    };
    dispatch(isa, p, Batch::ONE);
}

/// Every product of `batch`, `p` its first group: the empty cases (`k == 0`
/// scales each C and applies the epilogue), the orientation the kernels
/// prefer (A's and B's group strides trading places with them), then the
/// ISA's kernel. What [`sgemm_ep_with`] and [`sgemm_batched_with`] share.
unsafe fn dispatch(isa: Isa, mut p: Problem, mut batch: Batch) {
    assert!(
        isa.is_available(),
        "sgemm: {isa:?} is not supported by this CPU"
    );
    if batch.count == 0 || p.m == 0 || p.n == 0 {
        return;
    }
    if p.k == 0 {
        for g in 0..batch.count {
            let c = p.c.offset(g as isize * batch.c);
            scale_c(p.m, p.n, p.beta, c, p.rsc, p.csc);
            if let Some(ep) = &p.ep {
                let tile = CTile {
                    ptr: c,
                    rs: p.rsc,
                    cs: p.csc,
                    mr: p.m,
                    nr: p.n,
                };
                apply_ep(ep, tile, 0, 0);
            }
        }
        return;
    }
    if p.prefers_transposed(isa) {
        p = p.transposed();
        batch = Batch {
            a: batch.b,
            b: batch.a,
            ..batch
        };
    }
    run(isa, &p, &batch);
}

/// The ISA's kernel over every group of `batch` (`p` oriented).
unsafe fn run(isa: Isa, p: &Problem, batch: &Batch) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => kernel_avx512::gemm(p, batch),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => kernel_avx2::gemm(p, batch),
        _ => kernel_scalar::gemm(p, batch),
    }
}

/// A strided batch of products ([`sgemm_batched`]): `count` groups, group
/// `g`'s A, B and C starting `g * a`, `g * b` and `g * c` elements after
/// the first group's. A stride of 0 shares that operand between the groups
/// (C's must not be 0 when `count > 1`: the groups' Cs must not overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    pub count: usize,
    pub a: isize,
    pub b: isize,
    pub c: isize,
}

impl Batch {
    /// One product ([`sgemm`]).
    pub const ONE: Batch = Batch {
        count: 1,
        a: 0,
        b: 0,
        c: 0,
    };
}

/// `batch.count` products `C_g = alpha * A_g @ B_g + beta * C_g` of the same
/// shape and strides, `A_g = a + g * batch.a` (likewise B and C, strides in
/// elements): what a loop of [`sgemm`] calls over the groups computes, bit
/// for bit, in one call. The checks, the orientation, the kernel and tile
/// choice, the cache plan and the packing buffers are decided once for the
/// whole batch (they depend on the shapes and strides only), and an operand
/// shared by every group (group stride 0) that is packed is packed once
/// when one packing covers it (a single k block and a single cache block).
/// Single-threaded, like [`sgemm`]: callers split the groups between threads.
///
/// # Safety
/// As for [`sgemm`], for every group `g < batch.count`; the groups' Cs must
/// not overlap one another or any A or B.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_batched(
    batch: Batch,
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
) {
    sgemm_batched_with(
        Isa::active(),
        batch,
        m,
        k,
        n,
        alpha,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        beta,
        c,
        rsc,
        csc,
    )
}

/// [`sgemm_batched`] with a chosen kernel (for tests and benchmarks).
///
/// # Panics
/// If `isa` is not available on this CPU ([`Isa::is_available`]).
///
/// # Safety
/// As for [`sgemm_batched`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_batched_with(
    isa: Isa,
    batch: Batch,
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    beta: f32,
    c: *mut f32,
    rsc: isize,
    csc: isize,
) {
    let p = Problem {
        m,
        n,
        k,
        alpha,
        beta,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        c,
        rsc,
        csc,
        ep: None,
    };
    dispatch(isa, p, batch);
}

/// `C = beta * C` (`C = 0` if `beta == 0`): the product with `k == 0`.
unsafe fn scale_c(m: usize, n: usize, beta: f32, c: *mut f32, rsc: isize, csc: isize) {
    for i in 0..m {
        for j in 0..n {
            let e = c.offset(i as isize * rsc + j as isize * csc);
            *e = if beta == 0.0 { 0.0 } else { beta * *e };
        }
    }
}

/// One product, after the public checks: `m, n, k > 0`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
    pub a: *const f32,
    pub rsa: isize,
    pub csa: isize,
    pub b: *const f32,
    pub rsb: isize,
    pub csb: isize,
    pub c: *mut f32,
    pub rsc: isize,
    pub csc: isize,
    /// Applied to each tile after its last k block.
    pub ep: Option<Ep>,
}

impl Problem {
    /// Whether `C^T = B^T A^T` suits the kernels better (the per-element
    /// arithmetic is the same either way, so this is only about speed).
    /// Kernels vectorize along the columns of C: prefer the orientation
    /// where those are contiguous, and, when C has few columns but many
    /// rows, the one that vectorizes along the rows if A can then be read in
    /// place (column-major A). With only AVX2 (no row-vectorized `narrow`
    /// kernel) also from a row-major A, packed transposed: a 16-column tile
    /// over `n = 10` columns leaves 6 of 16 lanes idle, the transposed
    /// 5x16 tiles none (one thread on the Zen 5: 64x128x10 76 -> 87 GFLOP/s;
    /// 32x128x10, a half of it on each of two threads, 68 -> 87).
    fn prefers_transposed(&self, isa: Isa) -> bool {
        if self.csc != 1 {
            return self.rsc == 1 || self.rsc.unsigned_abs() < self.csc.unsigned_abs();
        }
        if isa == Isa::Avx2 {
            return self.n < 16 && self.m >= 2 * self.n && self.m >= 16;
        }
        self.n < 16 && self.m >= 4 * self.n && self.m >= 64 && self.rsa == 1
    }

    /// Group `g` of `batch`: the operands advanced by their group strides.
    #[inline(always)]
    pub(crate) unsafe fn group(&self, g: usize, batch: &Batch) -> Problem {
        let g = g as isize;
        Problem {
            a: self.a.offset(g * batch.a),
            b: self.b.offset(g * batch.b),
            c: self.c.offset(g * batch.c),
            ..*self
        }
    }

    /// The same product as `C^T = B^T A^T`.
    fn transposed(self) -> Problem {
        Problem {
            m: self.n,
            n: self.m,
            a: self.b,
            rsa: self.csb,
            csa: self.rsb,
            b: self.a,
            rsb: self.csa,
            csb: self.rsa,
            rsc: self.csc,
            csc: self.rsc,
            ep: self.ep.map(|e| Ep {
                rs: e.cs,
                cs: e.rs,
                ..e
            }),
            ..self
        }
    }
}
