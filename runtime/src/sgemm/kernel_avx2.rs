//! AVX2+FMA microkernel: 6 rows x 16 columns (12 ymm accumulators; 5 x 16
//! for a C of 7 to 10 rows, see `tile_rows`), B rows
//! loaded as vectors, A elements broadcast; vectorized packing (8x8
//! transposes in registers); column-major C tiles written back by 8x8
//! transposes (`store_transposed`).
//!
//! Owns the AVX2 entry point [`gemm`]. Same per-element arithmetic as every
//! other kernel (see the module docs of `sgemm`).
//!
//! Safety: every function here is `unsafe` because it uses AVX2/FMA
//! intrinsics (callers must have checked the CPU) and raw pointers (valid
//! as the `sgemm` contract says: masked loads and stores never touch
//! masked-off lanes; only prefetches, which cannot fault, may point
//! outside the operands).

use super::blocking::drive;
use super::dispatch::{Batch, Problem};
use super::kernel::{ASrc, BSrc, Beta, CTile, Kernel};
use core::arch::x86_64::*;

/// The AVX2 product, for every group of `batch`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `p` and `batch` as for
/// `sgemm_batched`.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn gemm(p: &Problem, batch: &Batch) {
    if tile_rows(p.m) == 5 {
        drive::<Tile<5, 2>>(p, batch)
    } else {
        drive::<Tile<6, 2>>(p, batch)
    }
}

/// The rows of the tile for a C of `m` rows: 6, or 5 when C has at most 12
/// rows and 5-row tiles pad fewer of them (m = 7..=10: the transposed
/// products of a 10-class classifier, `C^T = B^T A^T` with m = 10, run as
/// two full 5x16 tiles instead of two 6x16 with 2 of 12 rows idle).
fn tile_rows(m: usize) -> usize {
    let padded = |mr: usize| m.div_ceil(mr) * mr;
    if m <= 12 && padded(5) < padded(6) {
        5
    } else {
        6
    }
}

/// An MR x (8*NV) tile kernel (MR <= 8).
pub(crate) struct Tile<const MR: usize, const NV: usize>;

/// How many k steps ahead the kernel prefetches B into L1.
const PF_DIST: isize = 16;

/// A lane mask with the first `n` lanes set (for maskload/maskstore).
#[inline(always)]
unsafe fn lanes(n: usize) -> __m256i {
    let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), idx)
}

/// Reads A elements for the broadcast: `at(i)` is `a(i, p)` for the current
/// k step `p`; `step` moves to `p + 1`.
trait ALoad: Copy {
    unsafe fn at(&self, i: usize) -> f32;
    fn step(&mut self);
}

#[derive(Clone, Copy)]
struct PanelA {
    ptr: *const f32,
    ld: isize,
}

impl ALoad for PanelA {
    #[inline(always)]
    unsafe fn at(&self, i: usize) -> f32 {
        *self.ptr.add(i)
    }
    #[inline(always)]
    fn step(&mut self) {
        self.ptr = self.ptr.wrapping_offset(self.ld);
    }
}

/// Row-major A in place: one pointer per row, rows past the edge repeating
/// the last valid one.
#[derive(Clone, Copy)]
struct RowsA<const MR: usize> {
    rows: [*const f32; MR],
    off: usize,
}

impl<const MR: usize> RowsA<MR> {
    #[inline(always)]
    fn new(ptr: *const f32, rs: isize, rows: usize) -> Self {
        let mut r = [ptr; MR];
        for (i, x) in r.iter_mut().enumerate() {
            *x = ptr.wrapping_offset(i.min(rows - 1) as isize * rs);
        }
        RowsA { rows: r, off: 0 }
    }
}

impl<const MR: usize> ALoad for RowsA<MR> {
    #[inline(always)]
    unsafe fn at(&self, i: usize) -> f32 {
        *self.rows[i].add(self.off)
    }
    #[inline(always)]
    fn step(&mut self) {
        self.off += 1;
    }
}

/// `acc[i][v] = sum over p in 0..kc, in order, of a(i, p) * b(p, 8v..8v+8)`
/// (one fused multiply-add per step, from zero).
#[inline(always)]
unsafe fn kloop<const MR: usize, const NV: usize, A: ALoad, const MASKED: bool>(
    kc: usize,
    mut a: A,
    b: BSrc,
) -> [[__m256; NV]; MR] {
    let mut acc = [[_mm256_setzero_ps(); NV]; MR];
    let mut masks = [_mm256_set1_epi32(-1); NV];
    if MASKED {
        for (v, m) in masks.iter_mut().enumerate() {
            *m = lanes(b.valid.saturating_sub(8 * v));
        }
    }
    let mut bp = b.ptr;
    let pf = b.ld * PF_DIST;
    // One k step: prefetch, NV loads of B, MR broadcasts of A, MR x NV FMAs.
    macro_rules! step {
        () => {{
            _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_offset(pf) as *const i8);
            let mut bv = [_mm256_setzero_ps(); NV];
            #[allow(clippy::needless_range_loop)]
            for v in 0..NV {
                let src = bp.wrapping_add(8 * v);
                bv[v] = if MASKED {
                    _mm256_maskload_ps(src, masks[v])
                } else {
                    _mm256_loadu_ps(src)
                };
            }
            #[allow(clippy::needless_range_loop)]
            for i in 0..MR {
                let ai = _mm256_set1_ps(a.at(i));
                for v in 0..NV {
                    acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
                }
            }
            bp = bp.wrapping_offset(b.ld);
            a.step();
        }};
    }
    if MASKED {
        // Masked edge tiles stay rolled (unrolling them measured slower).
        for _ in 0..kc {
            step!();
        }
    } else {
        // Unrolled by 4: fewer loop-control uops per FMA (on a 4-wide front
        // end, Haswell's or Zen's, they compete with the 24 uops of a step).
        // The order of the FMAs on each accumulator is unchanged.
        for _ in 0..kc / 4 {
            step!();
            step!();
            step!();
            step!();
        }
        for _ in 0..kc % 4 {
            step!();
        }
    }
    acc
}

/// A whole tile: the k loop, then the epilogue (each source layout gets
/// its own copy, so the accumulators stay in registers).
#[inline(always)]
unsafe fn run<const MR: usize, const NV: usize, A: ALoad>(
    kc: usize,
    a: A,
    b: BSrc,
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    if b.valid >= 8 * NV {
        let acc = kloop::<MR, NV, A, false>(kc, a, b);
        store::<MR, NV>(&acc, c, alpha, beta);
    } else {
        let acc = kloop::<MR, NV, A, true>(kc, a, b);
        store::<MR, NV>(&acc, c, alpha, beta);
    }
}

/// Writes `alpha * acc` / `fma(alpha, acc, c)` / `fma(alpha, acc, beta * c)`
/// to the first `mr` rows (stride `rs`) and the lanes `cols[v]` of each
/// 8-column group of a row-major tile at `c` (C is not read for
/// `Beta::Zero`). Branch-free per element, so the loops unroll and `acc`
/// stays in registers; masked-off lanes are never accessed.
#[inline(always)]
unsafe fn update<const MR: usize, const NV: usize>(
    acc: &[[__m256; NV]; MR],
    c: *mut f32,
    rs: isize,
    mr: usize,
    cols: [__m256i; NV],
    alpha: f32,
    beta: Beta,
) {
    let va = _mm256_set1_ps(alpha);
    let vb = _mm256_set1_ps(match beta {
        Beta::Scale(b) => b,
        _ => 1.0,
    });
    let zero = _mm256_setzero_si256();
    macro_rules! each {
        (|$p:ident, $m:ident, $x:ident| $body:expr) => {
            for i in 0..MR {
                let row = c.wrapping_offset(i as isize * rs);
                let valid = i < mr;
                for v in 0..NV {
                    let $p = row.wrapping_add(8 * v);
                    let $m = if valid { cols[v] } else { zero };
                    let $x = acc[i][v];
                    $body;
                }
            }
        };
    }
    match beta {
        Beta::Zero => each!(|p, m, x| _mm256_maskstore_ps(p, m, _mm256_mul_ps(va, x))),
        Beta::One => each!(|p, m, x| _mm256_maskstore_ps(
            p,
            m,
            _mm256_fmadd_ps(va, x, _mm256_maskload_ps(p, m))
        )),
        Beta::Scale(_) => each!(|p, m, x| _mm256_maskstore_ps(
            p,
            m,
            _mm256_fmadd_ps(va, x, _mm256_mul_ps(vb, _mm256_maskload_ps(p, m)))
        )),
    }
}

/// Writes the valid part of the tile to a C tile with unit column stride
/// (see `update`).
#[inline(always)]
unsafe fn store<const MR: usize, const NV: usize>(
    acc: &[[__m256; NV]; MR],
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    if c.mr == MR && c.nr == 8 * NV {
        update_full(acc, c.ptr, c.rs, alpha, beta);
        return;
    }
    let mut cols = [_mm256_setzero_si256(); NV];
    for (v, m) in cols.iter_mut().enumerate() {
        *m = lanes(c.nr.saturating_sub(8 * v));
    }
    update(acc, c.ptr, c.rs, c.mr, cols, alpha, beta);
}

/// `update` for a whole tile, with plain loads and stores: a masked store
/// (`vmaskmovps`) costs more than a plain one (several uops on Intel, more
/// on some AMD cores), which matters when k is short. The same arithmetic
/// per element.
#[inline(always)]
unsafe fn update_full<const MR: usize, const NV: usize>(
    acc: &[[__m256; NV]; MR],
    c: *mut f32,
    rs: isize,
    alpha: f32,
    beta: Beta,
) {
    let va = _mm256_set1_ps(alpha);
    let vb = _mm256_set1_ps(match beta {
        Beta::Scale(b) => b,
        _ => 1.0,
    });
    macro_rules! each {
        (|$p:ident, $x:ident| $body:expr) => {
            for i in 0..MR {
                let row = c.offset(i as isize * rs);
                for v in 0..NV {
                    let $p = row.add(8 * v);
                    let $x = acc[i][v];
                    $body;
                }
            }
        };
    }
    match beta {
        Beta::Zero => each!(|p, x| _mm256_storeu_ps(p, _mm256_mul_ps(va, x))),
        Beta::One => each!(|p, x| _mm256_storeu_ps(p, _mm256_fmadd_ps(va, x, _mm256_loadu_ps(p)))),
        Beta::Scale(_) => each!(|p, x| _mm256_storeu_ps(
            p,
            _mm256_fmadd_ps(va, x, _mm256_mul_ps(vb, _mm256_loadu_ps(p)))
        )),
    }
}

/// The tile for each A source layout, writing a unit-column-stride C tile.
#[inline(always)]
unsafe fn dispatch<const MR: usize, const NV: usize>(
    kc: usize,
    a: ASrc,
    b: BSrc,
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    match a {
        ASrc::Panel { ptr, ld } => run::<MR, NV, _>(kc, PanelA { ptr, ld }, b, c, alpha, beta),
        ASrc::Rows { ptr, rs, rows } => {
            run::<MR, NV, _>(kc, RowsA::<MR>::new(ptr, rs, rows), b, c, alpha, beta)
        }
    }
}

impl<const MR: usize, const NV: usize> Kernel for Tile<MR, NV> {
    const MR: usize = MR;
    const NR: usize = 8 * NV;
    /// 256 KB: half the L2 of a Zen 3 core (512 KB), so the packed B block
    /// stays in L2 while A micro-panels stream past it (the default 1 MB
    /// block fits Intel's 1-2 MB L2s but not AMD's).
    const B_BLOCK: usize = 64 * 1024;
    /// n = 10 (a classifier's logits): packing B once, zero-padded to 16
    /// columns, lets every tile run the unrolled unmasked k loop.
    const PACK_NARROW_B: bool = true;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: ASrc, b: BSrc, c: CTile, alpha: f32, beta: Beta) {
        // Prefetch C while the k loop runs (useless when the loop is too
        // short to hide the latency: the stores come right away).
        if c.cs == 1 && kc >= 32 {
            for i in 0..c.mr {
                let row = c.ptr.offset(i as isize * c.rs);
                _mm_prefetch::<_MM_HINT_T0>(row as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(8 * NV - 1) as *const i8);
            }
        }
        if c.cs != 1 {
            tile_strided::<MR, NV>(kc, a, b, c, alpha, beta);
            return;
        }
        dispatch::<MR, NV>(kc, a, b, c, alpha, beta);
    }

    #[inline(always)]
    unsafe fn pack_a(kc: usize, mc: usize, a: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        const { assert!(MR <= 8) };
        for (t, i0) in (0..mc).step_by(MR).enumerate() {
            let rows = MR.min(mc - i0);
            let panel = dst.add(t * MR * kc);
            let src = a.offset(i0 as isize * rs);
            if rs == 1 {
                // Column-major A: each k step is one (masked) vector.
                let (lm, sm) = (lanes(rows), lanes(MR));
                for p in 0..kc {
                    let x = _mm256_maskload_ps(src.offset(p as isize * cs), lm);
                    _mm256_maskstore_ps(panel.add(p * MR), sm, x);
                }
            } else if cs == 1 {
                // Row-major A: 8x8 transposes.
                let sm = lanes(MR);
                for p0 in (0..kc).step_by(8) {
                    let w = (kc - p0).min(8);
                    let lm = lanes(w);
                    let mut r = [_mm256_setzero_ps(); 8];
                    for (i, x) in r.iter_mut().enumerate().take(MR) {
                        if i < rows {
                            *x = _mm256_maskload_ps(src.offset(i as isize * rs).add(p0), lm);
                        }
                    }
                    let t = transpose8(&r);
                    for (q, x) in t.iter().enumerate().take(w) {
                        _mm256_maskstore_ps(panel.add((p0 + q) * MR), sm, *x);
                    }
                }
            } else {
                super::pack::pack_a::<Self>(kc, rows, src, rs, cs, panel);
            }
        }
    }

    #[inline(always)]
    unsafe fn pack_b(kc: usize, nc: usize, b: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        for (t, j0) in (0..nc).step_by(8 * NV).enumerate() {
            let cols = (8 * NV).min(nc - j0);
            let panel = dst.add(t * 8 * NV * kc);
            let src = b.offset(j0 as isize * cs);
            if cs == 1 {
                // Row-major B: each k step is NV (masked) vectors.
                let mut cm = [_mm256_setzero_si256(); NV];
                for (v, m) in cm.iter_mut().enumerate() {
                    *m = lanes(cols.saturating_sub(8 * v));
                }
                for p in 0..kc {
                    let s = src.offset(p as isize * rs);
                    for (v, m) in cm.iter().enumerate() {
                        let x = _mm256_maskload_ps(s.wrapping_add(8 * v), *m);
                        _mm256_storeu_ps(panel.add(p * 8 * NV + 8 * v), x);
                    }
                }
            } else if rs == 1 {
                // Column-major B: 8x8 transposes.
                for p0 in (0..kc).step_by(8) {
                    let w = (kc - p0).min(8);
                    let lm = lanes(w);
                    for v in 0..NV {
                        let mut r = [_mm256_setzero_ps(); 8];
                        for (j, x) in r.iter_mut().enumerate() {
                            if 8 * v + j < cols {
                                let s = src.offset((8 * v + j) as isize * cs).add(p0);
                                *x = _mm256_maskload_ps(s, lm);
                            }
                        }
                        let t = transpose8(&r);
                        for (q, x) in t.iter().enumerate().take(w) {
                            _mm256_storeu_ps(panel.add((p0 + q) * 8 * NV + 8 * v), *x);
                        }
                    }
                }
            } else {
                super::pack::pack_b::<Self>(kc, cols, src, rs, cs, panel);
            }
        }
    }
}

/// A tile whose C has a non-unit column stride: the kernel writes `acc`
/// exactly (alpha 1, beta 0) to a contiguous buffer, then the epilogue runs
/// from it. Kept out of line so that the common unit-stride tile code is
/// not perturbed.
///
/// # Safety
/// As for `Kernel::tile`; the CPU must support AVX2 and FMA.
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_strided<const MR: usize, const NV: usize>(
    kc: usize,
    a: ASrc,
    b: BSrc,
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    let mut buf = [[[0.0f32; 8]; NV]; MR];
    let tmp = CTile {
        ptr: buf.as_mut_ptr().cast(),
        rs: (8 * NV) as isize,
        cs: 1,
        mr: MR,
        nr: 8 * NV,
    };
    dispatch::<MR, NV>(kc, a, b, tmp, 1.0, Beta::Zero);
    if c.rs == 1 {
        // Column-major C (a transposed product, e.g. a C with few columns
        // computed as C^T = B^T A^T): each tile column is contiguous in
        // memory, so transpose 8x8 blocks in registers and store whole
        // columns.
        store_transposed::<MR, NV>(&buf, c, alpha, beta);
    } else {
        super::kernel::store_strided(buf.as_ptr().cast(), 8 * NV, c, alpha, beta);
    }
}

/// Writes the valid part of the tile held in `buf` (exact accumulators,
/// row `i`, column `j` at `buf[i][j / 8][j % 8]`) to a C tile with unit
/// *row* stride: tile column `j` is the `mr` contiguous floats at
/// `c.ptr + j * c.cs`. Each 8-column group is transposed in registers (rows
/// past `MR` are zero and never stored), then every column gets the same
/// per-element epilogue as `update` (`alpha * acc`, `fma(alpha, acc, c)` or
/// `fma(alpha, acc, beta * c)`), with masked loads and stores of its `mr`
/// lanes. Bit-identical to `super::kernel::store_strided`.
#[inline(always)]
unsafe fn store_transposed<const MR: usize, const NV: usize>(
    buf: &[[[f32; 8]; NV]; MR],
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    const { assert!(MR <= 8) };
    let va = _mm256_set1_ps(alpha);
    let vb = _mm256_set1_ps(match beta {
        Beta::Scale(b) => b,
        _ => 1.0,
    });
    let m = lanes(c.mr);
    #[allow(clippy::needless_range_loop)]
    for v in 0..NV {
        let cols = c.nr.saturating_sub(8 * v).min(8);
        if cols == 0 {
            break;
        }
        let mut r = [_mm256_setzero_ps(); 8];
        for (i, ri) in r.iter_mut().enumerate().take(MR) {
            *ri = _mm256_loadu_ps(buf[i][v].as_ptr());
        }
        let t = transpose8(&r);
        for (j, x) in t.iter().enumerate().take(cols) {
            let p = c.ptr.offset((8 * v + j) as isize * c.cs);
            let y = match beta {
                Beta::Zero => _mm256_mul_ps(va, *x),
                Beta::One => _mm256_fmadd_ps(va, *x, _mm256_maskload_ps(p, m)),
                Beta::Scale(_) => {
                    _mm256_fmadd_ps(va, *x, _mm256_mul_ps(vb, _mm256_maskload_ps(p, m)))
                }
            };
            _mm256_maskstore_ps(p, m, y);
        }
    }
}

/// `out[j]` lane `i` = `r[i]` lane `j` (an 8x8 transpose in registers).
#[inline(always)]
unsafe fn transpose8(r: &[__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    // u[c]: rows 0..4 (u0..u3) or 4..8 (u4..u7) of columns c | c + 4.
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xee>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xee>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xee>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xee>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}
