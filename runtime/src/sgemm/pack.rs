//! Packing of A and B blocks into the kernels' panel layouts.
//!
//! Owns the panel layouts: A panels of `MR` rows stored k-major
//! (`panel[p * MR + i]`), B panels of `NR` columns stored k-major
//! (`panel[p * NR + j]`), consecutive panels `MR * kc` (`NR * kc`) floats
//! apart, rows/columns past the matrix edge filled with zeros.
//!
//! These functions are `#[inline(always)]` so that each ISA entry point
//! compiles them with its own target features (the copies vectorize).

use super::kernel::Kernel;

/// Packs `A[0..mc, 0..kc]` (element `(i, p)` at `a + i*rs + p*cs`) into
/// `ceil(mc / MR)` panels at `dst`.
///
/// # Safety
/// The block must be readable and `dst` writable for
/// `ceil(mc / MR) * MR * kc` floats.
#[inline(always)]
pub(crate) unsafe fn pack_a<K: Kernel + ?Sized>(
    kc: usize,
    mc: usize,
    a: *const f32,
    rs: isize,
    cs: isize,
    dst: *mut f32,
) {
    let mr = K::MR;
    for (t, i0) in (0..mc).step_by(mr).enumerate() {
        let rows = mr.min(mc - i0);
        let panel = dst.add(t * mr * kc);
        let src = a.offset(i0 as isize * rs);
        if rows == mr && rs == 1 {
            // Column-major A: each k step is a contiguous run of MR floats.
            for p in 0..kc {
                core::ptr::copy_nonoverlapping(src.offset(p as isize * cs), panel.add(p * mr), mr);
            }
        } else if rows == mr && cs == 1 {
            // Row-major A: a transpose; read each row sequentially.
            for i in 0..mr {
                let s = src.offset(i as isize * rs);
                for p in 0..kc {
                    *panel.add(p * mr + i) = *s.add(p);
                }
            }
        } else {
            for p in 0..kc {
                let d = panel.add(p * mr);
                for i in 0..mr {
                    *d.add(i) = if i < rows {
                        *src.offset(i as isize * rs + p as isize * cs)
                    } else {
                        0.0
                    };
                }
            }
        }
    }
}

/// Packs `B[0..kc, 0..nc]` (element `(p, j)` at `b + p*rs + j*cs`) into
/// `ceil(nc / NR)` panels at `dst`.
///
/// # Safety
/// The block must be readable and `dst` writable for
/// `ceil(nc / NR) * NR * kc` floats.
#[inline(always)]
pub(crate) unsafe fn pack_b<K: Kernel + ?Sized>(
    kc: usize,
    nc: usize,
    b: *const f32,
    rs: isize,
    cs: isize,
    dst: *mut f32,
) {
    let nr = K::NR;
    for (t, j0) in (0..nc).step_by(nr).enumerate() {
        let cols = nr.min(nc - j0);
        let panel = dst.add(t * nr * kc);
        let src = b.offset(j0 as isize * cs);
        if cols == nr && cs == 1 {
            // Row-major B: each k step is a contiguous run of NR floats.
            for p in 0..kc {
                core::ptr::copy_nonoverlapping(src.offset(p as isize * rs), panel.add(p * nr), nr);
            }
        } else if cols == nr && rs == 1 {
            // Column-major B: a transpose; read each column sequentially.
            for j in 0..nr {
                let s = src.offset(j as isize * cs);
                for p in 0..kc {
                    *panel.add(p * nr + j) = *s.add(p);
                }
            }
        } else {
            for p in 0..kc {
                let d = panel.add(p * nr);
                for j in 0..nr {
                    *d.add(j) = if j < cols {
                        *src.offset(p as isize * rs + j as isize * cs)
                    } else {
                        0.0
                    };
                }
            }
        }
    }
}
