//! Single-precision matrix product for compiled training steps.
//!
//! Owns: [`sgemm`] (`C = alpha * A @ B + beta * C` with arbitrary strides),
//! its runtime CPU dispatch (AVX-512F, else AVX2+FMA, else portable scalar;
//! `SPECC_GEMM_ISA=avx512|avx2|scalar` forces one, read once: [`Isa::active`]),
//! the cache blocking and packing, and the per-thread packing buffers.
//!
//! # Determinism
//!
//! Every output element is computed by the same sequence of IEEE operations,
//! whatever the kernel, the tile shape, the position of the element inside a
//! tile, the packing decisions, the CPU, or the way the caller splits C into
//! row or column blocks:
//!
//! * `k` is cut into `nb = ceil(k / KC_MAX)` consecutive blocks of nearly
//!   equal length (the first `k % nb` blocks are one longer), starting at 0.
//!   This depends on `k` only.
//! * Within a block, `acc = 0; for p in block { acc = fma(a[i,p], b[p,j], acc) }`
//!   (one fused multiply-add per step, in increasing `p`).
//! * The first block is written as `alpha * acc` if `beta == 0` (C is not
//!   read), `fma(alpha, acc, c)` if `beta == 1`, else `fma(alpha, acc, beta * c)`;
//!   every later block as `c = fma(alpha, acc, c)`.
//!
//! All kernels (AVX-512, AVX2, scalar) follow exactly this recipe, so their
//! results are bit-identical: edge tiles are computed by the same kernel on
//! zero-padded (or masked) operands and only the valid part is stored. The
//! scalar kernel uses `f32::mul_add`, which is a single instruction on CPUs
//! with FMA (and on aarch64) and a correctly rounded library call otherwise
//! (slow, but identical). `k == 0` sets `C = beta * C` (0 if `beta == 0`).
//! NaN and infinity propagate as IEEE arithmetic says (`alpha == 0` is not
//! special-cased).
//!
//! # Design
//!
//! BLIS-style loops, vectorized along the columns of C:
//!
//! ```text
//! for each k block (pc, kc)                 -- KC_MAX = 512, see above
//!   for each block of up to ~1056 rows (ic)  -- pack A: MR-row panels (2 MB)
//!     for each block of columns (jc)         -- pack B: NR-column panels
//!                                            --   (kc x ncb, in L2: <= 1 MB
//!                                            --   AVX-512, <= 256 KB AVX2)
//!       for each MR-row panel of A (ir)      -- stays in L1
//!         for each NR-column panel of B (jr) -- streams from L2 (prefetched)
//!           microkernel: MR x NR tile of C, kc steps, then the epilogue
//!       after the last k block: the fused epilogue (`sgemm_ep`: bias,
//!       relu) over the ic x jc block of C just written
//! ```
//!
//! * Microkernels keep the whole tile in registers (24 zmm accumulators on
//!   AVX-512: 6x64, 8x48 or 12x32, whichever pads the problem least, or
//!   16x16 when C has at most 16 columns; 12 ymm on AVX2: 6x16, or 5x16
//!   for a C of 7 to 10 rows, the unmasked k loop unrolled by 4), load B
//!   rows as vectors and broadcast A elements, one FMA per accumulator and
//!   k step.
//! * Operands are read in place, without packing, when that is cheaper:
//!   a row-major B whose span is small (or that is used by a single row of
//!   tiles), a row-major A used by few column tiles (one row pointer per
//!   tile row), a column-major A used by at most two column tiles. Otherwise
//!   they are packed (AVX-512/AVX2: vector copies, or 16x16 / 8x8 in-register
//!   transposes for the transposed layouts). The AVX2 kernel also packs a B
//!   narrower than its 16 columns (zero-padded), so tiles skip masked loads.
//! * A column-major C is computed as `C^T = B^T A^T`; so is a C with fewer
//!   than 16 columns, many rows and a column-major A (so that the long
//!   dimension is vectorized and A is read in place), and with AVX2 (which
//!   has no row-vectorized kernel, below) any C with fewer than 16 columns
//!   and at least twice as many rows, A packed transposed: `n = 10` then
//!   runs as two full 5x16 tiles instead of 16-lane tiles with 6 lanes idle.
//! * AVX-512, a row-major C with at most 12 columns and a row-major A (the
//!   logits `h @ W2`, n = 10): vectorized along the rows of C instead, 16
//!   rows a vector, each 16 k steps of A transposed in registers and B
//!   elements broadcast, one accumulator per column (`n` FMAs a k step
//!   instead of 16; 64x128x10: 135-138 -> 154-157 GFLOP/s on Zen 5).
//! * Edge tiles run the same kernel on zero-padded panels or with masked
//!   loads and stores; a C with a non-unit column stride goes through a
//!   small buffer. When that C has unit row stride (column-major: what the
//!   transposed products above write), the buffer is written back by
//!   in-register transposes (16x16 AVX-512, 8x8 AVX2), one masked vector
//!   per tile column, instead of element by element (the `n = 10` weight
//!   gradient `h^T dlogits`: 148 -> 176 GFLOP/s AVX-512, 92 -> 99 AVX2).
//!   That path is out of line so the unit-stride tiles' code is unchanged.
//!
//! # Allocation
//!
//! Packing buffers live in thread-local storage (about 3 MB per thread). They are allocated once per
//! thread, at full size, by the first call that packs, and reused; no later
//! call allocates. (Only a call made while the thread-local storage is being
//! torn down falls back to a temporary buffer.)
//!
//! Invariants: the public functions never read C when `beta == 0`, never
//! write outside the `m x n` view of C, and read A and B only inside their
//! `m x k` / `k x n` views.

#[cfg(target_arch = "x86_64")]
mod kernel_avx2;
#[cfg(target_arch = "x86_64")]
mod kernel_avx512;
mod kernel_scalar;
mod pack;

use std::cell::RefCell;
use std::sync::OnceLock;

/// Longest k block. The block boundaries depend only on `k` (see the module
/// docs) and are the same for every kernel, so results do not depend on the
/// CPU.
pub const KC_MAX: usize = 512;

/// Capacity of the packed-A buffer, in floats: 1056 rows of `KC_MAX`.
const A_CAP: usize = 1056 * KC_MAX;
/// Capacity of the packed-B buffer, in floats: 512 columns of `KC_MAX`.
const B_CAP: usize = 512 * KC_MAX;

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

/// What is applied to every element of C after its last k block
/// ([`sgemm_ep`]): `c = c + bias[j * bias_stride]` (when `bias` is not
/// null), then `c = relu(c)` (when `relu`), where `relu(x) = x > 0 ? x : 0`
/// (NaN and -0.0 give +0.0), the same IEEE operations, in the same order, as
/// a compiled elementwise loop `relu(add(c, bias))`.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue {
    /// The bias row (one value per column of C), or null for none.
    pub bias: *const f32,
    /// Elements between the biases of consecutive columns of C.
    pub bias_stride: isize,
    pub relu: bool,
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
    assert!(
        isa.is_available(),
        "sgemm: {isa:?} is not supported by this CPU"
    );
    if m == 0 || n == 0 {
        return;
    }
    let ep = ep.and_then(|e| {
        (!e.bias.is_null() || e.relu).then_some(Ep {
            bias: e.bias,
            rs: 0,
            cs: e.bias_stride,
            relu: e.relu,
        })
    });
    if k == 0 {
        scale_c(m, n, beta, c, rsc, csc);
        if let Some(ep) = &ep {
            let tile = CTile {
                ptr: c,
                rs: rsc,
                cs: csc,
                mr: m,
                nr: n,
            };
            apply_ep(ep, tile, 0, 0);
        }
        return;
    }
    let mut p = Problem {
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
    if p.prefers_transposed(isa) {
        p = p.transposed();
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => kernel_avx512::gemm(&p),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => kernel_avx2::gemm(&p),
        _ => kernel_scalar::gemm(&p),
    }
}

/// An [`Epilogue`] in a [`Problem`]'s orientation: the bias of element
/// `(i, j)` at `bias + i * rs + j * cs` (`rs == 0` unless transposed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ep {
    pub bias: *const f32,
    pub rs: isize,
    pub cs: isize,
    pub relu: bool,
}

/// Applies the epilogue to a tile of C whose first element is C's element
/// `(i0, j0)`: `c = c + bias` (with a bias), then `c = c > 0 ? c : 0` (with
/// relu), element by element; contiguous rows of C with a contiguous or
/// constant bias take a loop the compiler vectorizes (the same operations).
///
/// # Safety
/// The tile must be readable and writable, the biases readable.
#[inline(always)]
pub(crate) unsafe fn apply_ep(ep: &Ep, c: CTile, i0: usize, j0: usize) {
    #[inline(always)]
    fn relu(x: f32) -> f32 {
        if x > 0.0 {
            x
        } else {
            0.0
        }
    }
    let has_bias = !ep.bias.is_null();
    for i in 0..c.mr {
        let row = c.ptr.offset(i as isize * c.rs);
        if !has_bias {
            if c.cs == 1 {
                let r = core::slice::from_raw_parts_mut(row, c.nr);
                for x in r {
                    *x = relu(*x);
                }
            } else {
                for j in 0..c.nr {
                    let e = row.offset(j as isize * c.cs);
                    *e = relu(*e);
                }
            }
            continue;
        }
        let brow = ep
            .bias
            .offset((i0 + i) as isize * ep.rs + j0 as isize * ep.cs);
        if c.cs == 1 && ep.cs == 1 {
            let r = core::slice::from_raw_parts_mut(row, c.nr);
            let bs = core::slice::from_raw_parts(brow, c.nr);
            if ep.relu {
                for (x, b) in r.iter_mut().zip(bs) {
                    *x = relu(*x + *b);
                }
            } else {
                for (x, b) in r.iter_mut().zip(bs) {
                    *x += *b;
                }
            }
        } else if c.cs == 1 && ep.cs == 0 {
            let r = core::slice::from_raw_parts_mut(row, c.nr);
            let b = *brow;
            if ep.relu {
                for x in r {
                    *x = relu(*x + b);
                }
            } else {
                for x in r {
                    *x += b;
                }
            }
        } else {
            for j in 0..c.nr {
                let e = row.offset(j as isize * c.cs);
                let v = *e + *brow.offset(j as isize * ep.cs);
                *e = if ep.relu { relu(v) } else { v };
            }
        }
    }
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

/// The k blocks: `nb` blocks, the first `k % nb` one element longer.
#[derive(Clone, Copy)]
pub(crate) struct KBlocks {
    nb: usize,
    base: usize,
    extra: usize,
}

impl KBlocks {
    pub(crate) fn new(k: usize) -> KBlocks {
        let nb = k.div_ceil(KC_MAX).max(1);
        KBlocks {
            nb,
            base: k / nb,
            extra: k % nb,
        }
    }

    /// (start, length) of block `t`.
    pub(crate) fn block(self, t: usize) -> (usize, usize) {
        let start = t * self.base + t.min(self.extra);
        (start, self.base + usize::from(t < self.extra))
    }

    /// The longest block.
    pub(crate) fn max_len(self) -> usize {
        self.base + usize::from(self.extra > 0)
    }
}

/// How the first k block combines with the old C.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Beta {
    /// `c = alpha * acc` (C not read).
    Zero,
    /// `c = fma(alpha, acc, c)`.
    One,
    /// `c = fma(alpha, acc, beta * c)`.
    Scale(f32),
}

impl Beta {
    pub(crate) fn first(beta: f32) -> Beta {
        if beta == 0.0 {
            Beta::Zero
        } else if beta == 1.0 {
            Beta::One
        } else {
            Beta::Scale(beta)
        }
    }
}

/// Where a kernel reads its MR x kc block of A.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ASrc {
    /// `a(i, p) = ptr[p * ld + i]` for all `i < MR` (packed panels have
    /// `ld == MR`; a column-major A is read in place with `ld = csa`).
    Panel { ptr: *const f32, ld: isize },
    /// `a(i, p) = ptr[min(i, rows - 1) * rs + p]`: a row-major A read in
    /// place; rows past `rows` repeat the last one (their results are not
    /// stored).
    Rows {
        ptr: *const f32,
        rs: isize,
        rows: usize,
    },
}

/// Where a kernel reads its kc x NR block of B: `b(p, j) = ptr[p * ld + j]`
/// for `j < valid`, and 0 for `valid <= j < NR` (not read).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BSrc {
    pub ptr: *const f32,
    pub ld: isize,
    pub valid: usize,
}

/// The `mr x nr` block of C a kernel writes (`mr <= MR`, `nr <= NR`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CTile {
    pub ptr: *mut f32,
    pub rs: isize,
    pub cs: isize,
    pub mr: usize,
    pub nr: usize,
}

/// The epilogue for one element (module docs): `alpha * acc`,
/// `fma(alpha, acc, c)` or `fma(alpha, acc, beta * c)`. Bit-identical to the
/// vector epilogues (`mul_add` is a fused multiply-add).
#[inline(always)]
pub(crate) fn combine(alpha: f32, acc: f32, beta: Beta, c: f32) -> f32 {
    match beta {
        Beta::Zero => alpha * acc,
        Beta::One => alpha.mul_add(acc, c),
        Beta::Scale(b) => alpha.mul_add(acc, b * c),
    }
}

/// Writes the valid part of a tile computed into `acc` (row `i`, column
/// `j` at `acc[i * ld + j]`) to a C tile with any strides, element by
/// element (C is not read for `Beta::Zero`).
///
/// # Safety
/// `acc` must hold `c.mr` rows of `c.nr` values; the tile must be writable.
#[inline(always)]
pub(crate) unsafe fn store_strided(acc: *const f32, ld: usize, c: CTile, alpha: f32, beta: Beta) {
    for i in 0..c.mr {
        let row = c.ptr.offset(i as isize * c.rs);
        for j in 0..c.nr {
            let e = row.offset(j as isize * c.cs);
            let old = if beta == Beta::Zero { 0.0 } else { *e };
            *e = combine(alpha, *acc.add(i * ld + j), beta, old);
        }
    }
}

/// A microkernel: computes an MR x NR tile over one k block and writes its
/// valid part with the epilogue of the module docs.
pub(crate) trait Kernel {
    const MR: usize;
    const NR: usize;
    /// Most floats of a packed B block (`kc x ncb`, kept in L2 while the
    /// A micro-panels stream past it), at most the buffer's `B_CAP`.
    const B_BLOCK: usize = B_CAP;
    /// Whether a B narrower than `NR` columns is packed (zero-padded) rather
    /// than read in place with masked loads.
    const PACK_NARROW_B: bool = false;
    /// # Safety
    /// `kc > 0`; the sources must be readable as their docs say and the tile
    /// writable.
    unsafe fn tile(kc: usize, a: ASrc, b: BSrc, c: CTile, alpha: f32, beta: Beta);

    /// Packs `A[0..mc, 0..kc]` (element `(i, p)` at `a + i*rs + p*cs`) into
    /// MR-row panels at `dst` (layout: see `pack`).
    ///
    /// # Safety
    /// As for [`pack::pack_a`].
    #[inline(always)]
    unsafe fn pack_a(kc: usize, mc: usize, a: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        pack::pack_a::<Self>(kc, mc, a, rs, cs, dst)
    }

    /// Packs `B[0..kc, 0..nc]` (element `(p, j)` at `b + p*rs + j*cs`) into
    /// NR-column panels at `dst` (layout: see `pack`).
    ///
    /// # Safety
    /// As for [`pack::pack_b`].
    #[inline(always)]
    unsafe fn pack_b(kc: usize, nc: usize, b: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        pack::pack_b::<Self>(kc, nc, b, rs, cs, dst)
    }
}

/// Packing buffers, 64-byte aligned.
struct Buffers {
    a: Vec<Align64>,
    b: Vec<Align64>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Align64([f32; 16]);

impl Buffers {
    fn new() -> Buffers {
        Buffers {
            a: vec![Align64([0.0; 16]); A_CAP / 16],
            b: vec![Align64([0.0; 16]); B_CAP / 16],
        }
    }

    fn ptrs(&mut self) -> (*mut f32, *mut f32) {
        (self.a.as_mut_ptr().cast(), self.b.as_mut_ptr().cast())
    }
}

thread_local! {
    static BUFFERS: RefCell<Option<Buffers>> = const { RefCell::new(None) };
}

/// This thread's packing buffers (`A_CAP` and `B_CAP` floats), allocated on
/// first use. They stay valid while the thread lives: they are never resized
/// or freed before thread exit, and `sgemm` never re-enters itself. `None`
/// while the thread-local storage is being destroyed.
fn thread_buffers() -> Option<(*mut f32, *mut f32)> {
    BUFFERS
        .try_with(|cell| {
            cell.try_borrow_mut()
                .ok()
                .map(|mut g| g.get_or_insert_with(Buffers::new).ptrs())
        })
        .ok()
        .flatten()
}

/// Which operands are read in place and the block sizes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub a_inplace: bool,
    pub b_inplace: bool,
    /// Rows of A packed at once (multiple of MR unless A is read in place).
    pub mcb: usize,
    /// Columns of B packed at once (multiple of NR unless in place).
    pub ncb: usize,
}

impl Plan {
    #[inline(always)]
    pub(crate) fn new(
        p: &Problem,
        mr: usize,
        nr: usize,
        kc: usize,
        b_block: usize,
        pack_narrow_b: bool,
    ) -> Plan {
        let row_tiles = p.m.div_ceil(mr);
        let col_tiles = p.n.div_ceil(nr);
        // B is read in place when its rows are unit-stride and the span it
        // covers is small (no cache-set or TLB conflicts), or when there is
        // little reuse of a packed copy.
        let b_span = p.rsb.unsigned_abs() * p.k;
        // A B narrower than one panel (n = 10) may be packed zero-padded
        // instead, so that every tile runs the unmasked k loop.
        let narrow = pack_narrow_b && p.n < nr && row_tiles >= 4;
        // A row-major B of contiguous rows at most two panels wide is read
        // as its packed copy would be (short rows: no set or TLB conflicts).
        let one_panel = p.csb == 1 && p.rsb == p.n as isize && p.n <= 2 * nr;
        let b_inplace =
            p.csb == 1 && (b_span <= 64 * 1024 || row_tiles <= 1 || one_panel) && !narrow;
        // A is read in place when each packed element would be used by few
        // column tiles (packing a row-major A is a transpose).
        let a_span = p.k * p.csa.unsigned_abs() + p.m;
        // A column-major A used by at most two column tiles is read in place
        // when its span is small, or when k is long against m (a
        // convolution's filter gradient, patches^T @ dY): packing would copy
        // every element to use it once or twice.
        let a_inplace = (p.csa == 1 && (col_tiles <= 8 || p.m * p.k <= 16 * 1024))
            || (p.rsa == 1 && (col_tiles <= 2 && (a_span <= 256 * 1024 || p.k >= 8 * p.m)));
        let mcb = if a_inplace {
            p.m
        } else {
            let max_rows = (A_CAP / kc) / mr * mr;
            let chunks = p.m.div_ceil(max_rows);
            p.m.div_ceil(chunks).div_ceil(mr) * mr
        };
        let ncb = if b_inplace {
            p.n
        } else {
            let max_cols = ((b_block.min(B_CAP) / kc) / nr).max(1) * nr;
            let chunks = p.n.div_ceil(max_cols);
            p.n.div_ceil(chunks).div_ceil(nr) * nr
        };
        Plan {
            a_inplace,
            b_inplace,
            mcb,
            ncb,
        }
    }
}

/// The blocked product with kernel `K` (inlined into each ISA's entry point,
/// so it is compiled with that ISA's target features).
#[inline(always)]
pub(crate) unsafe fn drive<K: Kernel>(p: &Problem) {
    let (mr_max, nr_max) = (K::MR, K::NR);
    let kb = KBlocks::new(p.k);
    let plan = Plan::new(
        p,
        mr_max,
        nr_max,
        kb.max_len(),
        K::B_BLOCK,
        K::PACK_NARROW_B,
    );
    let needs_a_buf = !plan.a_inplace || (p.csa != 1 && !p.m.is_multiple_of(mr_max));
    let mut local = None;
    let (abuf, bbuf) = if needs_a_buf || !plan.b_inplace {
        match thread_buffers() {
            Some(ptrs) => ptrs,
            None => local.insert(Buffers::new()).ptrs(),
        }
    } else {
        (core::ptr::null_mut(), core::ptr::null_mut())
    };
    let at = |i: usize, pk: usize| p.a.offset(i as isize * p.rsa + pk as isize * p.csa);
    let bt = |pk: usize, j: usize| p.b.offset(pk as isize * p.rsb + j as isize * p.csb);
    for t in 0..kb.nb {
        let (pc, kc) = kb.block(t);
        let beta = if t == 0 {
            Beta::first(p.beta)
        } else {
            Beta::One
        };
        for ic in (0..p.m).step_by(plan.mcb) {
            let mcb = plan.mcb.min(p.m - ic);
            if !plan.a_inplace {
                K::pack_a(kc, mcb, at(ic, pc), p.rsa, p.csa, abuf);
            }
            for jc in (0..p.n).step_by(plan.ncb) {
                let ncb = plan.ncb.min(p.n - jc);
                if !plan.b_inplace {
                    K::pack_b(kc, ncb, bt(pc, jc), p.rsb, p.csb, bbuf);
                }
                // An in-place column-major A cannot be read past its last
                // row: its edge panel is packed once, up front.
                let edge = mcb - mcb % mr_max;
                if plan.a_inplace && p.csa != 1 && edge < mcb {
                    K::pack_a(kc, mcb - edge, at(ic + edge, pc), p.rsa, p.csa, abuf);
                }
                let a_src = |ir: usize| {
                    if !plan.a_inplace {
                        ASrc::Panel {
                            ptr: abuf.add(ir * kc),
                            ld: mr_max as isize,
                        }
                    } else if p.csa == 1 {
                        ASrc::Rows {
                            ptr: at(ic + ir, pc),
                            rs: p.rsa,
                            rows: mr_max.min(mcb - ir),
                        }
                    } else if ir < edge {
                        ASrc::Panel {
                            ptr: at(ic + ir, pc),
                            ld: p.csa,
                        }
                    } else {
                        ASrc::Panel {
                            ptr: abuf,
                            ld: mr_max as isize,
                        }
                    }
                };
                let b_src = |jr: usize| {
                    if plan.b_inplace {
                        BSrc {
                            ptr: bt(pc, jc + jr),
                            ld: p.rsb,
                            valid: nr_max.min(ncb - jr),
                        }
                    } else {
                        BSrc {
                            ptr: bbuf.add(jr * kc),
                            ld: nr_max as isize,
                            valid: nr_max,
                        }
                    }
                };
                let c_tile = |ir: usize, jr: usize| CTile {
                    ptr: p
                        .c
                        .offset((ic + ir) as isize * p.rsc + (jc + jr) as isize * p.csc),
                    rs: p.rsc,
                    cs: p.csc,
                    mr: mr_max.min(mcb - ir),
                    nr: nr_max.min(ncb - jr),
                };
                // The A micro-panel stays in L1 across a row of tiles while
                // B micro-panels stream from L2 (faster here than the
                // opposite order).
                for ir in (0..mcb).step_by(mr_max) {
                    let a = a_src(ir);
                    for jr in (0..ncb).step_by(nr_max) {
                        K::tile(kc, a, b_src(jr), c_tile(ir, jr), p.alpha, beta);
                    }
                }
                // The epilogue over the block of C just finished (at most
                // ~1056 x 512 floats, mostly still in cache), after its
                // last k block: long rows vectorize better than one tile's.
                if t + 1 == kb.nb {
                    if let Some(ep) = &p.ep {
                        let block = CTile {
                            ptr: c_tile(0, 0).ptr,
                            rs: p.rsc,
                            cs: p.csc,
                            mr: mcb,
                            nr: ncb,
                        };
                        apply_ep(ep, block, ic, jc);
                    }
                }
            }
        }
    }
}
