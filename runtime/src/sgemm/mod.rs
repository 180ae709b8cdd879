//! Single-precision matrix product for compiled training steps.
//!
//! Owns: [`sgemm`] (`C = alpha * A @ B + beta * C` with arbitrary strides),
//! [`sgemm_batched`] (a strided batch of such products in one call: the
//! per-group loop's bits, with the dispatch, the plan and the buffers
//! decided once and a shared operand, group stride 0, packed once),
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
//!
//! # Code map
//!
//! - `dispatch`: [`Isa`] and the public entries; the product's orientation
//!   (`C^T = B^T A^T`) and the kernel that runs it.
//! - `epilogue`: [`Epilogue`] and its application to a block of C.
//! - `kernel`: the k blocks, the first block's `beta`, the tile sources and
//!   the `Kernel` trait every microkernel implements.
//! - `blocking`: the per-thread packing buffers, the plan (in place or
//!   packed, block sizes) and the blocked driver.
//! - `pack`: packing A and B into panels.
//! - `kernel_avx512`, `kernel_avx2`, `kernel_scalar`: the microkernels.

mod blocking;
mod dispatch;
mod epilogue;
mod kernel;
#[cfg(target_arch = "x86_64")]
mod kernel_avx2;
#[cfg(target_arch = "x86_64")]
mod kernel_avx512;
mod kernel_scalar;
mod pack;

pub use dispatch::{
    gemm_isa_from_env, sgemm, sgemm_batched, sgemm_batched_with, sgemm_ep, sgemm_ep_with,
    sgemm_with, Batch, Isa,
};
pub use epilogue::Epilogue;

/// Longest k block. The block boundaries depend only on `k` (see the module
/// docs) and are the same for every kernel, so results do not depend on the
/// CPU.
pub const KC_MAX: usize = 512;
