//! AVX-512F microkernels: MR rows x NV*16 columns, one zmm accumulator per
//! (row, 16 columns), B rows loaded as vectors, A elements broadcast.
//!
//! Owns the AVX-512 entry point [`gemm`], its tile shapes (6x64, 8x48, 12x32
//! with 24 accumulators; 16x16 when C has at most 16 columns), its
//! packing (vector copies, 16x16 in-register transposes), the write-back
//! of column-major C tiles (16x16 transposes, `store_transposed`) and the
//! kernel for C with at most 12 columns and a row-major A (`narrow`:
//! vectorized along the rows of C).
//!
//! Safety: every function here is `unsafe` because it uses AVX-512
//! intrinsics (callers must have checked the CPU) and raw pointers (valid
//! as the `sgemm` contract says: masked loads and stores never touch
//! masked-off lanes; only prefetches, which cannot fault, may point
//! outside the operands).

use super::blocking::drive;
use super::dispatch::{Batch, Problem};
use super::kernel::{ASrc, BSrc, Beta, CTile, Kernel};
use core::arch::x86_64::*;

/// The AVX-512 product, for every group of `batch` (the kernel and tile
/// shape chosen once: they depend on the shape only).
///
/// # Safety
/// The CPU must support AVX-512F, AVX2 and FMA; `p` and `batch` as for
/// `sgemm_batched`.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn gemm(p: &Problem, batch: &Batch) {
    if narrow_applies(p) {
        for g in 0..batch.count {
            narrow(&p.group(g, batch));
        }
        return;
    }
    match tile_shape(p.m, p.n) {
        (16, 16) => drive::<Tile<16, 1>>(p, batch),
        (12, 32) => drive::<Tile<12, 2>>(p, batch),
        (8, 48) => drive::<Tile<8, 3>>(p, batch),
        _ => drive::<Tile<6, 4>>(p, batch),
    }
}

/// Widest C handled by [`narrow`].
const NARROW_MAX_N: usize = 12;

/// Whether [`narrow`] computes this product: C row-major with at most
/// `NARROW_MAX_N` columns (a 16-column tile would leave a quarter or more of
/// its lanes idle), A row-major, at least one 16-row tile and a k of 8 or
/// more (each 16 k steps cost a 16x16 transpose).
fn narrow_applies(p: &Problem) -> bool {
    p.n <= NARROW_MAX_N && p.csc == 1 && p.csa == 1 && p.m >= 16 && p.k >= 8
}

/// A product with few columns, vectorized along the rows of C instead of
/// its columns: for each block of 16 rows, 16 k steps of A (16 row
/// segments, read in place) are transposed in registers, so that
/// `t[q]` holds `a(i0..i0+16, p0+q)`, and each column `j < n` of C keeps
/// one accumulator, `acc[j] = fma(t[q], b(p0+q, j), acc[j])` in increasing
/// `p` (B elements broadcast). `n` FMAs per k step instead of 16, and no
/// packing. The accumulators are transposed back and stored a row at a
/// time with the epilogue of the module docs, so every element gets the
/// same operations as in the other kernels: the same bits.
///
/// # Safety
/// As for [`gemm`]; `narrow_applies(p)`.
#[inline(never)]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn narrow(p: &Problem) {
    macro_rules! by_n {
        ($($n:literal)*) => {
            match p.n {
                $($n => narrow_n::<$n>(p),)*
                _ => unreachable!("narrow: n = {} > NARROW_MAX_N", p.n),
            }
        };
    }
    by_n!(1 2 3 4 5 6 7 8 9 10 11 12)
}

/// [`narrow`] for `n == N`.
#[inline(always)]
unsafe fn narrow_n<const N: usize>(p: &Problem) {
    const { assert!(N <= 16) };
    let kb = super::kernel::KBlocks::new(p.k);
    for t in 0..kb.nb {
        let (pc, kc) = kb.block(t);
        let beta = if t == 0 {
            Beta::first(p.beta)
        } else {
            Beta::One
        };
        for i0 in (0..p.m).step_by(16) {
            let rows = 16.min(p.m - i0);
            // Rows past the last one repeat it (their results are not
            // stored).
            let mut arow = [p.a; 16];
            for (i, r) in arow.iter_mut().enumerate() {
                *r =
                    p.a.offset((i0 + i.min(rows - 1)) as isize * p.rsa + pc as isize);
            }
            let mut acc = [_mm512_setzero_ps(); N];
            for p0 in (0..kc).step_by(16) {
                let w = 16.min(kc - p0);
                let lm = lanes(w);
                let mut r = [_mm512_setzero_ps(); 16];
                for (x, src) in r.iter_mut().zip(&arow) {
                    *x = _mm512_maskz_loadu_ps(lm, src.add(p0));
                }
                let at = transpose16(&r);
                for (q, aq) in at.iter().enumerate().take(w) {
                    let brow = p.b.offset((pc + p0 + q) as isize * p.rsb);
                    for (j, x) in acc.iter_mut().enumerate() {
                        let bj = _mm512_set1_ps(*brow.offset(j as isize * p.csb));
                        *x = _mm512_fmadd_ps(*aq, bj, *x);
                    }
                }
            }
            // Back to rows: out[i] lane j = acc[j] lane i = C(i0 + i, j).
            let mut r = [_mm512_setzero_ps(); 16];
            r[..N].copy_from_slice(&acc);
            let out = transpose16(&r);
            let va = _mm512_set1_ps(p.alpha);
            let vb = _mm512_set1_ps(match beta {
                Beta::Scale(b) => b,
                _ => 1.0,
            });
            let m = lanes(N);
            for (i, x) in out.iter().enumerate().take(rows) {
                let c = p.c.offset((i0 + i) as isize * p.rsc);
                let y = match beta {
                    Beta::Zero => _mm512_mul_ps(va, *x),
                    Beta::One => _mm512_fmadd_ps(va, *x, _mm512_maskz_loadu_ps(m, c)),
                    Beta::Scale(_) => {
                        _mm512_fmadd_ps(va, *x, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, c)))
                    }
                };
                _mm512_mask_storeu_ps(c, m, y);
            }
            if t + 1 == kb.nb {
                if let Some(ep) = &p.ep {
                    let tile = CTile {
                        ptr: p.c.offset(i0 as isize * p.rsc),
                        rs: p.rsc,
                        cs: 1,
                        mr: rows,
                        nr: N,
                    };
                    super::epilogue::apply_ep(ep, tile, i0, 0);
                }
            }
        }
    }
}

/// The tile (MR, NR) for an m x n product: 16x16 for at most 16 columns,
/// else the shape with the least padding, then the fewest row tiles (each
/// row tile reads all of B), then 6x64 first. (All shapes run at about the
/// same speed on full tiles: 24 accumulators each.)
fn tile_shape(m: usize, n: usize) -> (usize, usize) {
    if n <= 16 {
        return (16, 16);
    }
    [(6, 64), (12, 32), (8, 48)]
        .into_iter()
        .min_by_key(|&(mr, nr)| (m.div_ceil(mr) * mr * n.div_ceil(nr) * nr, m.div_ceil(mr)))
        .expect("non-empty")
}

/// An MR x (16*NV) tile kernel.
pub(crate) struct Tile<const MR: usize, const NV: usize>;

/// The first `n` (<= 16) lanes.
#[inline(always)]
fn lanes(n: usize) -> __mmask16 {
    if n >= 16 {
        0xffff
    } else {
        ((1u32 << n) - 1) as __mmask16
    }
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

/// Row-major A in place: rows in groups of four, `g` pointing at the first
/// row of each group, so that `a(4g + r, p)` is at byte
/// `groups[g] + 4p + r * rs` (an x86 base + scaled-index address). Only for
/// full tiles (`MR` a multiple of 4).
#[derive(Clone, Copy)]
struct RowsA<const MR: usize> {
    /// Entries `0..MR/4` are used.
    groups: [*const f32; MR],
    /// 0, 1, 2, 3 row strides, in bytes.
    rs: [isize; 4],
    /// The current k step.
    off: usize,
}

impl<const MR: usize> RowsA<MR> {
    #[inline(always)]
    fn new(ptr: *const f32, rs: isize) -> Self {
        let mut groups = [ptr; MR];
        for (g, x) in groups.iter_mut().enumerate().take(MR / 4) {
            *x = ptr.wrapping_offset(4 * g as isize * rs);
        }
        let b = rs * 4;
        RowsA {
            groups,
            rs: [0, b, 2 * b, 3 * b],
            off: 0,
        }
    }
}

impl<const MR: usize> ALoad for RowsA<MR> {
    #[inline(always)]
    unsafe fn at(&self, i: usize) -> f32 {
        let base = self.groups[i / 4].add(self.off) as *const u8;
        *(base.wrapping_offset(self.rs[i % 4]) as *const f32)
    }
    #[inline(always)]
    fn step(&mut self) {
        self.off += 1;
    }
}

/// Row-major A in place for an edge tile: one pointer per row, missing rows
/// repeating the last valid one.
#[derive(Clone, Copy)]
struct RowsClamped<const MR: usize> {
    rows: [*const f32; MR],
    off: usize,
}

impl<const MR: usize> RowsClamped<MR> {
    #[inline(always)]
    fn new(ptr: *const f32, rs: isize, rows: usize) -> Self {
        let mut r = [ptr; MR];
        for (i, x) in r.iter_mut().enumerate() {
            *x = ptr.wrapping_offset(i.min(rows - 1) as isize * rs);
        }
        RowsClamped { rows: r, off: 0 }
    }
}

impl<const MR: usize> ALoad for RowsClamped<MR> {
    #[inline(always)]
    unsafe fn at(&self, i: usize) -> f32 {
        *self.rows[i].add(self.off)
    }
    #[inline(always)]
    fn step(&mut self) {
        self.off += 1;
    }
}

/// How many k steps ahead the kernel prefetches B into L1.
const PF_DIST: isize = 16;

/// `acc[i][v] = sum over p in 0..kc, in order, of a(i, p) * b(p, 16v..16v+16)`
/// (one fused multiply-add per step, from zero).
#[inline(always)]
unsafe fn kloop<const MR: usize, const NV: usize, A: ALoad, const MASKED: bool>(
    kc: usize,
    mut a: A,
    b: BSrc,
) -> [[__m512; NV]; MR] {
    let mut acc = [[_mm512_setzero_ps(); NV]; MR];
    let mut masks = [0xffff as __mmask16; NV];
    if MASKED {
        for (v, m) in masks.iter_mut().enumerate() {
            *m = lanes(b.valid.saturating_sub(16 * v));
        }
    }
    let mut bp = b.ptr;
    let pf = b.ld * PF_DIST;
    for _ in 0..kc {
        // B streams from L2 (or memory, in place): fetch ahead into L1.
        for v in 0..NV {
            _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_offset(pf).wrapping_add(16 * v) as *const i8);
        }
        let mut bv = [_mm512_setzero_ps(); NV];
        #[allow(clippy::needless_range_loop)]
        for v in 0..NV {
            let src = bp.wrapping_add(16 * v);
            bv[v] = if MASKED {
                _mm512_maskz_loadu_ps(masks[v], src)
            } else {
                _mm512_loadu_ps(src)
            };
        }
        #[allow(clippy::needless_range_loop)]
        for i in 0..MR {
            let ai = _mm512_set1_ps(a.at(i));
            for v in 0..NV {
                acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
            }
        }
        bp = bp.wrapping_offset(b.ld);
        a.step();
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
    // No merge of two accumulator sets: each branch stores its own.
    if b.valid >= 16 * NV {
        let acc = kloop::<MR, NV, A, false>(kc, a, b);
        store::<MR, NV>(&acc, c, alpha, beta);
    } else {
        let acc = kloop::<MR, NV, A, true>(kc, a, b);
        store::<MR, NV>(&acc, c, alpha, beta);
    }
}

/// Writes `alpha * acc` / `fma(alpha, acc, c)` / `fma(alpha, acc, beta * c)`
/// to the first `mr` rows (stride `rs`) and the lanes `cols[v]` of each
/// 16-column group of a row-major tile at `c` (C is not read for
/// `Beta::Zero`). Branch-free per element, so the loops unroll and `acc`
/// stays in registers; masked-off lanes are never accessed.
#[inline(always)]
unsafe fn update<const MR: usize, const NV: usize>(
    acc: &[[__m512; NV]; MR],
    c: *mut f32,
    rs: isize,
    mr: usize,
    cols: [__mmask16; NV],
    alpha: f32,
    beta: Beta,
) {
    let va = _mm512_set1_ps(alpha);
    let vb = _mm512_set1_ps(match beta {
        Beta::Scale(b) => b,
        _ => 1.0,
    });
    macro_rules! each {
        (|$p:ident, $m:ident, $x:ident| $body:expr) => {
            for i in 0..MR {
                let row = c.wrapping_offset(i as isize * rs);
                let valid = if i < mr { 0xffff } else { 0 };
                for v in 0..NV {
                    let $p = row.wrapping_add(16 * v);
                    let $m: __mmask16 = cols[v] & valid;
                    let $x = acc[i][v];
                    $body;
                }
            }
        };
    }
    match beta {
        Beta::Zero => each!(|p, m, x| _mm512_mask_storeu_ps(p, m, _mm512_mul_ps(va, x))),
        Beta::One => each!(|p, m, x| _mm512_mask_storeu_ps(
            p,
            m,
            _mm512_fmadd_ps(va, x, _mm512_maskz_loadu_ps(m, p))
        )),
        Beta::Scale(_) => each!(|p, m, x| _mm512_mask_storeu_ps(
            p,
            m,
            _mm512_fmadd_ps(va, x, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, p)))
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
            if rows == MR && MR.is_multiple_of(4) {
                run::<MR, NV, _>(kc, RowsA::<MR>::new(ptr, rs), b, c, alpha, beta)
            } else {
                // Edge tile: clamp the missing rows to the last valid one.
                run::<MR, NV, _>(kc, RowsClamped::<MR>::new(ptr, rs, rows), b, c, alpha, beta)
            }
        }
    }
}

impl<const MR: usize, const NV: usize> Kernel for Tile<MR, NV> {
    const MR: usize = MR;
    const NR: usize = 16 * NV;

    #[inline(always)]
    unsafe fn pack_a(kc: usize, mc: usize, a: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        const { assert!(MR <= 16) };
        for (t, i0) in (0..mc).step_by(MR).enumerate() {
            let rows = MR.min(mc - i0);
            let panel = dst.add(t * MR * kc);
            let src = a.offset(i0 as isize * rs);
            if rs == 1 {
                // Column-major A: each k step is one (masked) vector.
                let (lm, sm) = (lanes(rows), lanes(MR));
                for p in 0..kc {
                    let x = _mm512_maskz_loadu_ps(lm, src.offset(p as isize * cs));
                    _mm512_mask_storeu_ps(panel.add(p * MR), sm, x);
                }
            } else if cs == 1 {
                pack_a_rows::<MR>(kc, rows, src, rs, panel);
            } else {
                super::pack::pack_a::<Self>(kc, rows, src, rs, cs, panel);
            }
        }
    }

    #[inline(always)]
    unsafe fn pack_b(kc: usize, nc: usize, b: *const f32, rs: isize, cs: isize, dst: *mut f32) {
        for (t, j0) in (0..nc).step_by(16 * NV).enumerate() {
            let cols = (16 * NV).min(nc - j0);
            let panel = dst.add(t * 16 * NV * kc);
            let src = b.offset(j0 as isize * cs);
            if cs == 1 {
                // Row-major B: each k step is NV (masked) vectors.
                let mut cm = [0 as __mmask16; NV];
                for (v, m) in cm.iter_mut().enumerate() {
                    *m = lanes(cols.saturating_sub(16 * v));
                }
                if cols == 16 * NV {
                    for p in 0..kc {
                        let s = src.offset(p as isize * rs);
                        for v in 0..NV {
                            let x = _mm512_loadu_ps(s.add(16 * v));
                            _mm512_storeu_ps(panel.add(p * 16 * NV + 16 * v), x);
                        }
                    }
                } else {
                    for p in 0..kc {
                        let s = src.offset(p as isize * rs);
                        for (v, m) in cm.iter().enumerate() {
                            let x = _mm512_maskz_loadu_ps(*m, s.wrapping_add(16 * v));
                            _mm512_storeu_ps(panel.add(p * 16 * NV + 16 * v), x);
                        }
                    }
                }
            } else if rs == 1 {
                pack_b_cols::<NV>(kc, cols, src, cs, panel);
            } else {
                super::pack::pack_b::<Self>(kc, cols, src, rs, cs, panel);
            }
        }
    }

    #[inline(always)]
    unsafe fn tile(kc: usize, a: ASrc, b: BSrc, c: CTile, alpha: f32, beta: Beta) {
        if c.cs == 1 {
            for i in 0..c.mr {
                let row = c.ptr.offset(i as isize * c.rs);
                for v in 0..NV {
                    _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(16 * v) as *const i8);
                }
            }
        }
        if c.cs != 1 {
            tile_strided::<MR, NV>(kc, a, b, c, alpha, beta);
            return;
        }
        dispatch::<MR, NV>(kc, a, b, c, alpha, beta);
    }
}

/// A tile whose C has a non-unit column stride: the kernel writes `acc`
/// exactly (alpha 1, beta 0) to a contiguous buffer, then the epilogue runs
/// from it. Kept out of line so that the common unit-stride tile code is
/// not perturbed (inlining it slowed unrelated shapes by ~10%).
///
/// # Safety
/// As for `Kernel::tile`; the CPU must support AVX-512F.
#[inline(never)]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tile_strided<const MR: usize, const NV: usize>(
    kc: usize,
    a: ASrc,
    b: BSrc,
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    let mut buf = [[[0.0f32; 16]; NV]; MR];
    let tmp = CTile {
        ptr: buf.as_mut_ptr().cast(),
        rs: (16 * NV) as isize,
        cs: 1,
        mr: MR,
        nr: 16 * NV,
    };
    dispatch::<MR, NV>(kc, a, b, tmp, 1.0, Beta::Zero);
    if c.rs == 1 {
        // Column-major C (a transposed product, e.g. a C with few columns
        // computed as C^T = B^T A^T): each tile column is contiguous in
        // memory, so transpose 16x16 blocks in registers and store whole
        // columns.
        store_transposed::<MR, NV>(&buf, c, alpha, beta);
    } else {
        super::kernel::store_strided(buf.as_ptr().cast(), 16 * NV, c, alpha, beta);
    }
}

/// Writes the valid part of the tile held in `buf` (exact accumulators,
/// row `i`, column `j` at `buf[i][j / 16][j % 16]`) to a C tile with unit
/// *row* stride: tile column `j` is the `mr` contiguous floats at
/// `c.ptr + j * c.cs`. Each 16-column group is transposed in registers
/// (rows past `MR` are zero and never stored), then every column gets the
/// same per-element epilogue as `update` (`alpha * acc`,
/// `fma(alpha, acc, c)` or `fma(alpha, acc, beta * c)`), with masked loads
/// and stores of its `mr` lanes. Bit-identical to `super::kernel::store_strided`.
#[inline(always)]
unsafe fn store_transposed<const MR: usize, const NV: usize>(
    buf: &[[[f32; 16]; NV]; MR],
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    const { assert!(MR <= 16) };
    let va = _mm512_set1_ps(alpha);
    let vb = _mm512_set1_ps(match beta {
        Beta::Scale(b) => b,
        _ => 1.0,
    });
    let m = lanes(c.mr);
    #[allow(clippy::needless_range_loop)]
    for v in 0..NV {
        let cols = c.nr.saturating_sub(16 * v).min(16);
        if cols == 0 {
            break;
        }
        let mut r = [_mm512_setzero_ps(); 16];
        for (i, ri) in r.iter_mut().enumerate().take(MR) {
            *ri = _mm512_loadu_ps(buf[i][v].as_ptr());
        }
        let t = transpose16(&r);
        for (j, x) in t.iter().enumerate().take(cols) {
            let p = c.ptr.offset((16 * v + j) as isize * c.cs);
            let y = match beta {
                Beta::Zero => _mm512_mul_ps(va, *x),
                Beta::One => _mm512_fmadd_ps(va, *x, _mm512_maskz_loadu_ps(m, p)),
                Beta::Scale(_) => {
                    _mm512_fmadd_ps(va, *x, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, p)))
                }
            };
            _mm512_mask_storeu_ps(p, m, y);
        }
    }
}

/// Writes the valid part of the tile to a C tile with unit column stride
/// (see `update`).
#[inline(always)]
unsafe fn store<const MR: usize, const NV: usize>(
    acc: &[[__m512; NV]; MR],
    c: CTile,
    alpha: f32,
    beta: Beta,
) {
    let mut cols = [0 as __mmask16; NV];
    for (v, m) in cols.iter_mut().enumerate() {
        *m = lanes(c.nr.saturating_sub(16 * v));
    }
    update(acc, c.ptr, c.rs, c.mr, cols, alpha, beta);
}

/// `out[j]` lane `i` = `r[i]` lane `j` (a 16x16 transpose in registers:
/// 64 shuffles).
#[inline(always)]
unsafe fn transpose16(r: &[__m512; 16]) -> [__m512; 16] {
    let mut t = [_mm512_setzero_ps(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4g + c]: rows 4g..4g+4 of columns c, c+4, c+8, c+12 (one per lane).
    let mut u = [_mm512_setzero_ps(); 16];
    for g in 0..4 {
        u[4 * g] = _mm512_shuffle_ps::<0x44>(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_shuffle_ps::<0xee>(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_shuffle_ps::<0x44>(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_shuffle_ps::<0xee>(t[4 * g + 1], t[4 * g + 3]);
    }
    let mut out = [_mm512_setzero_ps(); 16];
    for c in 0..4 {
        let v0 = _mm512_shuffle_f32x4::<0x88>(u[c], u[4 + c]);
        let v1 = _mm512_shuffle_f32x4::<0xdd>(u[c], u[4 + c]);
        let w0 = _mm512_shuffle_f32x4::<0x88>(u[8 + c], u[12 + c]);
        let w1 = _mm512_shuffle_f32x4::<0xdd>(u[8 + c], u[12 + c]);
        out[c] = _mm512_shuffle_f32x4::<0x88>(v0, w0);
        out[8 + c] = _mm512_shuffle_f32x4::<0xdd>(v0, w0);
        out[4 + c] = _mm512_shuffle_f32x4::<0x88>(v1, w1);
        out[12 + c] = _mm512_shuffle_f32x4::<0xdd>(v1, w1);
    }
    out
}

/// Packs `rows <= MR` rows of a row-major A (row `i` at `src + i*rs`, unit
/// column stride) into one MR-row panel, 16 k steps at a time.
#[inline(always)]
unsafe fn pack_a_rows<const MR: usize>(
    kc: usize,
    rows: usize,
    src: *const f32,
    rs: isize,
    panel: *mut f32,
) {
    let sm = lanes(MR);
    for p0 in (0..kc).step_by(16) {
        let w = (kc - p0).min(16);
        let lm = lanes(w);
        let mut r = [_mm512_setzero_ps(); 16];
        for (i, x) in r.iter_mut().enumerate().take(MR) {
            let m = if i < rows { lm } else { 0 };
            *x = _mm512_maskz_loadu_ps(m, src.wrapping_offset(i as isize * rs).wrapping_add(p0));
        }
        let t = transpose16(&r);
        for (p, x) in t.iter().enumerate() {
            let m = if p < w { sm } else { 0 };
            _mm512_mask_storeu_ps(panel.wrapping_add((p0 + p) * MR), m, *x);
        }
    }
}

/// Packs `cols <= 16*NV` columns of a column-major B (column `j` at
/// `src + j*cs`, unit row stride) into one panel, 16x16 blocks at a time.
#[inline(always)]
unsafe fn pack_b_cols<const NV: usize>(
    kc: usize,
    cols: usize,
    src: *const f32,
    cs: isize,
    panel: *mut f32,
) {
    for p0 in (0..kc).step_by(16) {
        let w = (kc - p0).min(16);
        let lm = lanes(w);
        for v in 0..NV {
            let mut r = [_mm512_setzero_ps(); 16];
            for (j, x) in r.iter_mut().enumerate() {
                let col = 16 * v + j;
                let m = if col < cols { lm } else { 0 };
                *x = _mm512_maskz_loadu_ps(
                    m,
                    src.wrapping_offset(col as isize * cs).wrapping_add(p0),
                );
            }
            let t = transpose16(&r);
            for (p, x) in t.iter().enumerate() {
                let m = if p < w { 0xffff } else { 0 };
                _mm512_mask_storeu_ps(panel.wrapping_add((p0 + p) * 16 * NV + 16 * v), m, *x);
            }
        }
    }
}
