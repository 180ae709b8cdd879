//! Portable scalar microkernel: 4 x 8 tiles with `f32::mul_add`.
//!
//! Owns the fallback entry point [`gemm`] (any target, any x86 CPU). It
//! performs exactly the per-element operations of the SIMD kernels, so its
//! results are bit-identical to theirs. `mul_add` is one instruction where
//! the target has FMA (aarch64, x86 with FMA) and a correctly rounded (slow)
//! library call otherwise.

use super::blocking::drive;
use super::dispatch::{Batch, Problem};
use super::kernel::{ASrc, BSrc, Beta, CTile, Kernel};

/// The scalar product, for every group of `batch`.
///
/// # Safety
/// `p` and `batch` as for `sgemm_batched`.
pub(crate) unsafe fn gemm(p: &Problem, batch: &Batch) {
    drive::<Tile<4, 8>>(p, batch)
}

/// An MR x NR tile kernel.
pub(crate) struct Tile<const MR: usize, const NR: usize>;

impl<const MR: usize, const NR: usize> Kernel for Tile<MR, NR> {
    const MR: usize = MR;
    const NR: usize = NR;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: ASrc, b: BSrc, c: CTile, alpha: f32, beta: Beta) {
        let mut acc = [[0.0f32; NR]; MR];
        let nb = b.valid.min(NR);
        for p in 0..kc {
            let mut bv = [0.0f32; NR];
            let bp = b.ptr.offset(p as isize * b.ld);
            for (j, x) in bv.iter_mut().enumerate().take(nb) {
                *x = *bp.add(j);
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let ai = match a {
                    ASrc::Panel { ptr, ld } => *ptr.offset(p as isize * ld + i as isize),
                    ASrc::Rows { ptr, rs, rows } => {
                        *ptr.offset(i.min(rows - 1) as isize * rs + p as isize)
                    }
                };
                for (x, bx) in row.iter_mut().zip(bv.iter()) {
                    *x = ai.mul_add(*bx, *x);
                }
            }
        }
        super::kernel::store_strided(acc.as_ptr().cast(), NR, c, alpha, beta);
    }
}
