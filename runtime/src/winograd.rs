//! Winograd F(2×2, 3×3) and F(4×4, 3×3) transforms over NHWC images,
//! called by generated code (`specc_winograd`) for the fused Winograd
//! kernels of the JIT, and the one definition of their arithmetic that the
//! compiler's CLIF version (`codegen::winograd`) is built from too.
//!
//! Owns: the four transforms of a range of images, 16 channels at a time
//! in AVX-512 registers or 8 in AVX2 registers, with a scalar tail (and a
//! scalar path on other CPUs); the instruction set is the GEMM's
//! ([`Isa::active`], so `SPECC_GEMM_ISA` forces it here too); and the 1-D
//! maps ([`bt4`], [`b4`], [`at4`], [`a2`], [`bt6`], [`b6`], [`at6`],
//! [`a4`]) and [`sandwich`], generic over [`Arith`].
//!
//! Invariant: every value is computed by the same adds, subtracts,
//! negations and multiplications by constants in the same order whoever
//! runs the maps (these lanes or Cranelift's instructions through
//! [`Arith`]), so the results are the same bits whichever runs (a lane is
//! an independent channel).

use crate::lanes::Lane;
use crate::sgemm::Isa;

/// The transforms, numbered as the generated code passes them.
pub const INPUT: i64 = 0;
pub const INPUT_GRAD: i64 = 1;
pub const OUTPUT: i64 = 2;
pub const OUTPUT_GRAD: i64 = 3;

/// The shape of a transform: output cells a tile side (2 or 4), channels,
/// input and output sizes, the top and left padding.
#[derive(Clone, Copy)]
struct Geo {
    m: i64,
    c: usize,
    ih: i64,
    iw: i64,
    oh: i64,
    ow: i64,
    pt: i64,
    pl: i64,
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use crate::lanes::Avx512 as V;

    /// # Safety
    /// As [`super::specc_winograd`], on a CPU with AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run(
        op: i64,
        g: super::Geo,
        image: *mut f32,
        tiles: *mut f32,
        group: isize,
        lo: i64,
        hi: i64,
    ) {
        unsafe { super::run::<V>(op, g, image, tiles, group, lo, hi) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::lanes::Avx2 as V;

    /// # Safety
    /// As [`super::specc_winograd`], on a CPU with AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn run(
        op: i64,
        g: super::Geo,
        image: *mut f32,
        tiles: *mut f32,
        group: isize,
        lo: i64,
        hi: i64,
    ) {
        unsafe { super::run::<V>(op, g, image, tiles, group, lo, hi) }
    }
}

/// The arithmetic the maps are written in: values `V` (a lane of floats,
/// or a Cranelift value) and the IEEE operations on them. `scale` is a
/// multiplication by a constant (no fused multiply-add anywhere).
pub trait Arith {
    type V: Copy;
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V;
    fn neg(&mut self, a: Self::V) -> Self::V;
    fn scale(&mut self, a: Self::V, c: f32) -> Self::V;
}

/// [`Arith`] on the runtime's lanes.
struct Lanes<L>(std::marker::PhantomData<L>);

impl<L: Lane> Arith for Lanes<L> {
    type V = L;
    #[inline(always)]
    fn add(&mut self, a: L, b: L) -> L {
        a.add(b)
    }
    #[inline(always)]
    fn sub(&mut self, a: L, b: L) -> L {
        a.sub(b)
    }
    #[inline(always)]
    fn neg(&mut self, a: L) -> L {
        a.neg()
    }
    #[inline(always)]
    fn scale(&mut self, a: L, c: f32) -> L {
        a.mul(L::splat(c))
    }
}

/// F(2×2) `Bᵀ v`: `[v0 − v2, v1 + v2, v2 − v1, v1 − v3]`.
#[inline(always)]
pub fn bt4<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 4] {
    [
        a.sub(v[0], v[2]),
        a.add(v[1], v[2]),
        a.sub(v[2], v[1]),
        a.sub(v[1], v[3]),
    ]
}

/// F(2×2) `B v`: `[v0, v1 − v2 + v3, v1 + v2 − v0, −v3]`.
#[inline(always)]
pub fn b4<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 4] {
    let d = a.sub(v[1], v[2]);
    let s = a.add(v[1], v[2]);
    [v[0], a.add(d, v[3]), a.sub(s, v[0]), a.neg(v[3])]
}

/// F(2×2) `Aᵀ v`: `[v0 + v1 + v2, v1 − v2 − v3]`.
#[inline(always)]
pub fn at4<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 2] {
    let s = a.add(v[0], v[1]);
    let d = a.sub(v[1], v[2]);
    [a.add(s, v[2]), a.sub(d, v[3])]
}

/// F(2×2) `A v`: `[v0, v0 + v1, v0 − v1, −v1]`.
#[inline(always)]
pub fn a2<A: Arith>(a: &mut A, v: [A::V; 2]) -> [A::V; 4] {
    [v[0], a.add(v[0], v[1]), a.sub(v[0], v[1]), a.neg(v[1])]
}

/// F(4×4) `Bᵀ d` (rows `[4, 0, −5, 0, 1, 0]`, `[0, −4, −4, 1, 1, 0]`,
/// `[0, 4, −4, −1, 1, 0]`, `[0, −2, −1, 2, 1, 0]`, `[0, 2, −1, −2, 1, 0]`,
/// `[0, 4, 0, −5, 0, 1]`), factored.
#[inline(always)]
pub fn bt6<A: Arith>(a: &mut A, d: [A::V; 6]) -> [A::V; 6] {
    let d0 = a.scale(d[0], 4.0);
    let d2 = a.scale(d[2], 5.0);
    let r0 = a.sub(d0, d2);
    let r0 = a.add(r0, d[4]);
    let s12 = a.add(d[1], d[2]);
    let s34 = a.add(d[3], d[4]);
    let s12 = a.scale(s12, 4.0);
    let r1 = a.sub(s34, s12);
    let d12 = a.sub(d[1], d[2]);
    let d43 = a.sub(d[4], d[3]);
    let d12 = a.scale(d12, 4.0);
    let r2 = a.add(d43, d12);
    let d42 = a.sub(d[4], d[2]);
    let d31 = a.sub(d[3], d[1]);
    let d31 = a.scale(d31, 2.0);
    let r3 = a.add(d42, d31);
    let r4 = a.sub(d42, d31);
    let d1 = a.scale(d[1], 4.0);
    let d3 = a.scale(d[3], 5.0);
    let r5 = a.sub(d1, d3);
    let r5 = a.add(r5, d[5]);
    [r0, r1, r2, r3, r4, r5]
}

/// F(4×4) `B v`, the transpose of [`bt6`].
#[inline(always)]
pub fn b6<A: Arith>(a: &mut A, v: [A::V; 6]) -> [A::V; 6] {
    let o0 = a.scale(v[0], 4.0);
    let t = a.sub(v[2], v[1]);
    let t = a.add(t, v[5]);
    let t = a.scale(t, 4.0);
    let u = a.sub(v[4], v[3]);
    let u = a.scale(u, 2.0);
    let o1 = a.add(t, u);
    let s12 = a.add(v[1], v[2]);
    let s34 = a.add(v[3], v[4]);
    let v0 = a.scale(v[0], 5.0);
    let t = a.scale(s12, 4.0);
    let t = a.add(v0, t);
    let t = a.add(t, s34);
    let o2 = a.neg(t);
    let t = a.sub(v[1], v[2]);
    let u = a.sub(v[3], v[4]);
    let u = a.scale(u, 2.0);
    let t = a.add(t, u);
    let v5 = a.scale(v[5], 5.0);
    let o3 = a.sub(t, v5);
    let t = a.add(v[0], s12);
    let o4 = a.add(t, s34);
    [o0, o1, o2, o3, o4, v[5]]
}

/// F(4×4) `Aᵀ m` (rows `[1, 1, 1, 1, 1, 0]`, `[0, 1, −1, 2, −2, 0]`,
/// `[0, 1, 1, 4, 4, 0]`, `[0, 1, −1, 8, −8, 1]`), factored.
#[inline(always)]
pub fn at6<A: Arith>(a: &mut A, m: [A::V; 6]) -> [A::V; 4] {
    let s12 = a.add(m[1], m[2]);
    let d12 = a.sub(m[1], m[2]);
    let s34 = a.add(m[3], m[4]);
    let d34 = a.sub(m[3], m[4]);
    let y0 = a.add(m[0], s12);
    let y0 = a.add(y0, s34);
    let t = a.scale(d34, 2.0);
    let y1 = a.add(d12, t);
    let t = a.scale(s34, 4.0);
    let y2 = a.add(s12, t);
    let t = a.scale(d34, 8.0);
    let y3 = a.add(d12, t);
    let y3 = a.add(y3, m[5]);
    [y0, y1, y2, y3]
}

/// F(4×4) `A g`, the transpose of [`at6`].
#[inline(always)]
pub fn a4<A: Arith>(a: &mut A, g: [A::V; 4]) -> [A::V; 6] {
    let e = a.add(g[0], g[2]);
    let f = a.add(g[1], g[3]);
    let o1 = a.add(e, f);
    let o2 = a.sub(e, f);
    let t = a.scale(g[2], 4.0);
    let p = a.add(g[0], t);
    let t = a.scale(g[1], 2.0);
    let u = a.scale(g[3], 8.0);
    let q = a.add(t, u);
    let o3 = a.add(p, q);
    let o4 = a.sub(p, q);
    [g[0], o1, o2, o3, o4, g[3]]
}

/// A 1-D map of `R` values to `S` over the arithmetic `A`.
pub type Map<A, const R: usize, const S: usize> =
    fn(&mut A, [<A as Arith>::V; R]) -> [<A as Arith>::V; S];

/// `M · X · Mᵀ` of the `R×R` block `x` (`x[r][s]`) by the 1-D map `f`
/// (`R` to `S` values): `f` down each column, then along each row.
#[inline(always)]
pub fn sandwich<A: Arith, const R: usize, const S: usize>(
    a: &mut A,
    x: &[[A::V; R]; R],
    f: Map<A, R, S>,
) -> [[A::V; S]; S] {
    // Plain loops: `std::array::from_fn` is not always inlined.
    let mut cols = [[x[0][0]; S]; R];
    for s in 0..R {
        let mut col = [x[0][0]; R];
        for r in 0..R {
            col[r] = x[r][s];
        }
        cols[s] = f(a, col);
    }
    let mut out = [[x[0][0]; S]; S];
    for i in 0..S {
        let mut row = [x[0][0]; R];
        for s in 0..R {
            row[s] = cols[s][i];
        }
        out[i] = f(a, row);
    }
    out
}

/// The 1-D maps of one tile size (`AL = m + 2` input cells a side, `M = m`
/// output cells).
trait TileMaps<const AL: usize, const M: usize> {
    fn bt<A: Arith>(a: &mut A, v: [A::V; AL]) -> [A::V; AL];
    fn b<A: Arith>(a: &mut A, v: [A::V; AL]) -> [A::V; AL];
    fn at<A: Arith>(a: &mut A, v: [A::V; AL]) -> [A::V; M];
    fn a<A: Arith>(a: &mut A, v: [A::V; M]) -> [A::V; AL];
}

/// F(2×2, 3×3).
struct F2;
/// F(4×4, 3×3).
struct F4;

impl TileMaps<4, 2> for F2 {
    #[inline(always)]
    fn bt<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 4] {
        bt4(a, v)
    }
    #[inline(always)]
    fn b<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 4] {
        b4(a, v)
    }
    #[inline(always)]
    fn at<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 2] {
        at4(a, v)
    }
    #[inline(always)]
    fn a<A: Arith>(a: &mut A, v: [A::V; 2]) -> [A::V; 4] {
        a2(a, v)
    }
}

impl TileMaps<6, 4> for F4 {
    #[inline(always)]
    fn bt<A: Arith>(a: &mut A, v: [A::V; 6]) -> [A::V; 6] {
        bt6(a, v)
    }
    #[inline(always)]
    fn b<A: Arith>(a: &mut A, v: [A::V; 6]) -> [A::V; 6] {
        b6(a, v)
    }
    #[inline(always)]
    fn at<A: Arith>(a: &mut A, v: [A::V; 6]) -> [A::V; 4] {
        at6(a, v)
    }
    #[inline(always)]
    fn a<A: Arith>(a: &mut A, v: [A::V; 4]) -> [A::V; 6] {
        a4(a, v)
    }
}

/// Channels `[c0, c1)` of one tile, `L::N` at a time: `cells` are its
/// image cells (`AL²` on the input side, `M²` on the output side, row-major),
/// `ok` whether each is inside the image, `groups` its `AL²` places in the
/// tile tensor.
#[inline(always)]
unsafe fn tile<L: Lane, T: TileMaps<AL, M>, const AL: usize, const M: usize>(
    op: i64,
    c0: usize,
    c1: usize,
    cells: &[*mut f32],
    ok: &[bool],
    groups: &[*mut f32],
) {
    let mut ar = Lanes::<L>(std::marker::PhantomData);
    let mut ch = c0;
    while ch + L::N <= c1 {
        unsafe {
            match op {
                INPUT => {
                    let mut x = [[L::zero(); AL]; AL];
                    for r in 0..AL {
                        for s in 0..AL {
                            if ok[r * AL + s] {
                                x[r][s] = L::load(cells[r * AL + s].add(ch));
                            }
                        }
                    }
                    let v = sandwich::<_, AL, AL>(&mut ar, &x, T::bt);
                    for i in 0..AL {
                        for j in 0..AL {
                            v[i][j].store(groups[i * AL + j].add(ch));
                        }
                    }
                }
                INPUT_GRAD => {
                    let mut dv = [[L::zero(); AL]; AL];
                    for i in 0..AL {
                        for j in 0..AL {
                            dv[i][j] = L::load(groups[i * AL + j].add(ch));
                        }
                    }
                    let dx = sandwich::<_, AL, AL>(&mut ar, &dv, T::b);
                    for r in 0..AL {
                        for s in 0..AL {
                            if ok[r * AL + s] {
                                let p = cells[r * AL + s].add(ch);
                                L::load(p).add(dx[r][s]).store(p);
                            }
                        }
                    }
                }
                OUTPUT => {
                    let mut m = [[L::zero(); AL]; AL];
                    for i in 0..AL {
                        for j in 0..AL {
                            m[i][j] = L::load(groups[i * AL + j].add(ch));
                        }
                    }
                    let y = sandwich::<_, AL, M>(&mut ar, &m, T::at);
                    for r in 0..M {
                        for s in 0..M {
                            if ok[r * M + s] {
                                y[r][s].store(cells[r * M + s].add(ch));
                            }
                        }
                    }
                }
                _ => {
                    let mut dy = [[L::zero(); M]; M];
                    for r in 0..M {
                        for s in 0..M {
                            if ok[r * M + s] {
                                dy[r][s] = L::load(cells[r * M + s].add(ch));
                            }
                        }
                    }
                    let dm = sandwich::<_, M, AL>(&mut ar, &dy, T::a);
                    for i in 0..AL {
                        for j in 0..AL {
                            dm[i][j].store(groups[i * AL + j].add(ch));
                        }
                    }
                }
            }
        }
        ch += L::N;
    }
}

/// Most values of a tile (F(4×4): 6×6).
const MAX_GROUPS: usize = 36;

#[inline(always)]
unsafe fn run<L: Lane>(
    op: i64,
    g: Geo,
    image: *mut f32,
    tiles: *mut f32,
    group: isize,
    lo: i64,
    hi: i64,
) {
    unsafe {
        if g.m == 4 {
            run_tiles::<L, F4, 6, 4>(op, g, image, tiles, group, lo, hi)
        } else {
            run_tiles::<L, F2, 4, 2>(op, g, image, tiles, group, lo, hi)
        }
    }
}

#[inline(always)]
unsafe fn run_tiles<L: Lane, T: TileMaps<AL, M>, const AL: usize, const M: usize>(
    op: i64,
    g: Geo,
    image: *mut f32,
    tiles: *mut f32,
    group: isize,
    lo: i64,
    hi: i64,
) {
    let c = g.c;
    let m = M as i64;
    let (th, tw) = ((g.oh + m - 1) / m, (g.ow + m - 1) / m);
    let input_side = op == INPUT || op == INPUT_GRAD;
    let (h, w) = if input_side {
        (g.ih, g.iw)
    } else {
        (g.oh, g.ow)
    };
    let image_len = (h * w) as usize * c;
    let tiles_len = (th * tw) as usize * c;
    let group = group / 4;
    let span = if input_side { AL as i64 } else { m };
    let base = if input_side { (-g.pt, -g.pl) } else { (0, 0) };
    for n in lo..hi {
        unsafe {
            let img = image.add(n as usize * image_len);
            let til = tiles.wrapping_offset(n as isize * tiles_len as isize);
            if op == INPUT_GRAD {
                std::ptr::write_bytes(img, 0, image_len);
            }
            for ty in 0..th {
                for tx in 0..tw {
                    let t = til.wrapping_add((ty * tw + tx) as usize * c);
                    let mut groups = [t; MAX_GROUPS];
                    for (k, p) in groups.iter_mut().enumerate() {
                        *p = t.wrapping_offset(k as isize * group);
                    }
                    let mut cells = [img; MAX_GROUPS];
                    let mut ok = [false; MAX_GROUPS];
                    for r in 0..span {
                        let y = m * ty + base.0 + r;
                        for s in 0..span {
                            let x = m * tx + base.1 + s;
                            let inside = (0..h).contains(&y) && (0..w).contains(&x);
                            let k = (r * span + s) as usize;
                            ok[k] = inside;
                            if inside {
                                cells[k] = img.add((y * w + x) as usize * c);
                            }
                        }
                    }
                    let n = (span * span) as usize;
                    let body = c - c % L::N;
                    let (cells, ok, groups) = (&cells[..n], &ok[..n], &groups[..AL * AL]);
                    tile::<L, T, AL, M>(op, 0, if L::N == 1 { c } else { body }, cells, ok, groups);
                    if L::N > 1 {
                        tile::<f32, T, AL, M>(op, body, c, cells, ok, groups);
                    }
                }
            }
        }
    }
}

/// Transform `op` of F(m×m, 3×3) (`m` 2 or 4) of images `lo..hi`: image
/// `n` at `image + n·H·W·C` (NHWC, `H×W` the input size for the input
/// transforms, the output size for the output ones), its tiles of group
/// `k` at `tiles + k·group_bytes + n·TH·TW·C` (f32 elements except
/// `group_bytes`; `TH = ⌈OH/m⌉`).
///
/// # Safety
/// The pointers must address the images and tiles described, as the
/// generated code guarantees.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_winograd(
    op: i64,
    m: i64,
    c: i64,
    ih: i64,
    iw: i64,
    oh: i64,
    ow: i64,
    pad_top: i64,
    pad_left: i64,
    image: *mut f32,
    tiles: *mut f32,
    group_bytes: i64,
    lo: i64,
    hi: i64,
) {
    let g = Geo {
        m,
        c: c as usize,
        ih,
        iw,
        oh,
        ow,
        pt: pad_top,
        pl: pad_left,
    };
    // SAFETY: the caller guarantees the pointers.
    unsafe {
        transform(
            Isa::active(),
            op,
            g,
            image,
            tiles,
            group_bytes as isize,
            lo,
            hi,
        )
    }
}

/// [`specc_winograd`] with the instruction set `isa` (which this CPU must
/// run, [`Isa::is_available`]; another falls back to scalar code): every
/// instruction set gives the same bits (tested).
///
/// # Safety
/// As [`specc_winograd`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn specc_winograd_with(
    isa: Isa,
    op: i64,
    m: i64,
    c: i64,
    (ih, iw, oh, ow): (i64, i64, i64, i64),
    (pad_top, pad_left): (i64, i64),
    image: *mut f32,
    tiles: *mut f32,
    group_bytes: i64,
    (lo, hi): (i64, i64),
) {
    let g = Geo {
        m,
        c: c as usize,
        ih,
        iw,
        oh,
        ow,
        pt: pad_top,
        pl: pad_left,
    };
    // SAFETY: the caller guarantees the pointers.
    unsafe { transform(isa, op, g, image, tiles, group_bytes as isize, lo, hi) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn transform(
    isa: Isa,
    op: i64,
    g: Geo,
    image: *mut f32,
    tiles: *mut f32,
    group: isize,
    lo: i64,
    hi: i64,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if isa == Isa::Avx512 && isa.is_available() {
            // SAFETY: AVX-512F is present; the caller guarantees the rest.
            unsafe { avx512::run(op, g, image, tiles, group, lo, hi) };
            return;
        }
        if isa == Isa::Avx2 && isa.is_available() {
            // SAFETY: AVX2 is present; the caller guarantees the rest.
            unsafe { avx2::run(op, g, image, tiles, group, lo, hi) };
            return;
        }
    }
    let _ = isa;
    // SAFETY: the caller guarantees the pointers.
    unsafe { run::<f32>(op, g, image, tiles, group, lo, hi) }
}
