//! What every microkernel shares: the k recipe and the tile interface.
//!
//! Owns [`KBlocks`] (the k blocks, which depend on `k` only), [`Beta`] and
//! [`combine`] (how a k block's sum meets the old C), the sources a kernel
//! reads ([`ASrc`], [`BSrc`]), the tile it writes ([`CTile`],
//! [`store_strided`]) and the [`Kernel`] trait the driver runs.
//!
//! Invariant: every kernel computes an element as the [module docs](super)
//! say (one FMA per k step in increasing `p`, then [`combine`]), so all
//! kernels give the same bits.

use super::blocking::B_CAP;
use super::pack;
use super::KC_MAX;

/// The k blocks: `nb` blocks, the first `k % nb` one element longer.
#[derive(Clone, Copy)]
pub(crate) struct KBlocks {
    pub(super) nb: usize,
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
