//! Winograd F(2×2, 3×3) transforms over NHWC images, called by generated
//! code (`specc_winograd`) for the fused Winograd kernels of the JIT.
//!
//! Owns: the four transforms of a range of images, 16 channels at a time
//! in AVX-512 registers or 8 in AVX2 registers, with a scalar tail (and a
//! scalar path on other CPUs); the instruction set is the GEMM's
//! ([`Isa::active`], so `SPECC_GEMM_ISA` forces it here too). Invariant: every value is computed by the same adds,
//! subtracts and negations in the same order as the compiler's CLIF
//! version (`codegen::window`), so the results are the same bits whichever
//! runs (a lane is an independent channel).

use crate::lanes::Lane;
use crate::sgemm::Isa;

/// The transforms, numbered as the generated code passes them.
pub const INPUT: i64 = 0;
pub const INPUT_GRAD: i64 = 1;
pub const OUTPUT: i64 = 2;
pub const OUTPUT_GRAD: i64 = 3;

/// The shape of a transform: channels, input and output sizes, the top and
/// left padding.
#[derive(Clone, Copy)]
struct Geo {
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

#[inline(always)]
fn bt4<L: Lane>(v: [L; 4]) -> [L; 4] {
    [
        v[0].sub(v[2]),
        v[1].add(v[2]),
        v[2].sub(v[1]),
        v[1].sub(v[3]),
    ]
}

#[inline(always)]
fn b4<L: Lane>(v: [L; 4]) -> [L; 4] {
    let d = v[1].sub(v[2]);
    let s = v[1].add(v[2]);
    [v[0], d.add(v[3]), s.sub(v[0]), v[3].neg()]
}

#[inline(always)]
fn at4<L: Lane>(v: [L; 4]) -> [L; 2] {
    let s = v[0].add(v[1]);
    let d = v[1].sub(v[2]);
    [s.add(v[2]), d.sub(v[3])]
}

#[inline(always)]
fn a2<L: Lane>(v: [L; 2]) -> [L; 4] {
    [v[0], v[0].add(v[1]), v[0].sub(v[1]), v[1].neg()]
}

/// `f` down each column of the row-major `R×R` block `x`, then along each
/// row (as the compiler's `sandwich`).
#[inline(always)]
fn sandwich<L: Lane, const R: usize, const S: usize>(
    x: &[L],
    f: fn([L; R]) -> [L; S],
    out: &mut [L],
) {
    let cols: [[L; S]; R] = std::array::from_fn(|s| f(std::array::from_fn(|r| x[r * R + s])));
    for i in 0..S {
        let row = f(std::array::from_fn(|s| cols[s][i]));
        out[i * S..(i + 1) * S].copy_from_slice(&row);
    }
}

/// Channels `[c0, c1)` of one tile, `L::N` at a time.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<L: Lane>(
    op: i64,
    c0: usize,
    c1: usize,
    cells: &[*mut f32],
    ok: &[bool],
    groups: &[*mut f32; 16],
) {
    let mut ch = c0;
    while ch + L::N <= c1 {
        unsafe {
            match op {
                INPUT => {
                    let x: [L; 16] = std::array::from_fn(|t| {
                        if ok[t] {
                            L::load(cells[t].add(ch))
                        } else {
                            L::zero()
                        }
                    });
                    let mut v = [L::zero(); 16];
                    sandwich::<L, 4, 4>(&x, bt4, &mut v);
                    for g in 0..16 {
                        v[g].store(groups[g].add(ch));
                    }
                }
                INPUT_GRAD => {
                    let dv: [L; 16] = std::array::from_fn(|g| L::load(groups[g].add(ch)));
                    let mut dx = [L::zero(); 16];
                    sandwich::<L, 4, 4>(&dv, b4, &mut dx);
                    for t in 0..16 {
                        if ok[t] {
                            let p = cells[t].add(ch);
                            L::load(p).add(dx[t]).store(p);
                        }
                    }
                }
                OUTPUT => {
                    let m: [L; 16] = std::array::from_fn(|g| L::load(groups[g].add(ch)));
                    let mut y = [L::zero(); 4];
                    sandwich::<L, 4, 2>(&m, at4, &mut y);
                    for t in 0..4 {
                        if ok[t] {
                            y[t].store(cells[t].add(ch));
                        }
                    }
                }
                _ => {
                    let dy: [L; 4] = std::array::from_fn(|t| {
                        if ok[t] {
                            L::load(cells[t].add(ch))
                        } else {
                            L::zero()
                        }
                    });
                    let mut dm = [L::zero(); 16];
                    sandwich::<L, 2, 4>(&dy, a2, &mut dm);
                    for g in 0..16 {
                        dm[g].store(groups[g].add(ch));
                    }
                }
            }
        }
        ch += L::N;
    }
}

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
    let c = g.c;
    let (th, tw) = ((g.oh + 1) / 2, (g.ow + 1) / 2);
    let input_side = op == INPUT || op == INPUT_GRAD;
    let (h, w) = if input_side {
        (g.ih, g.iw)
    } else {
        (g.oh, g.ow)
    };
    let image_len = (h * w) as usize * c;
    let tiles_len = (th * tw) as usize * c;
    let group = group / 4;
    let span = if input_side { 4 } else { 2 };
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
                    let groups: [*mut f32; 16] =
                        std::array::from_fn(|k| t.wrapping_offset(k as isize * group));
                    let mut cells = [img; 16];
                    let mut ok = [false; 16];
                    for r in 0..span {
                        let y = 2 * ty + base.0 + r;
                        for s in 0..span {
                            let x = 2 * tx + base.1 + s;
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
                    tile::<L>(
                        op,
                        0,
                        if L::N == 1 { c } else { body },
                        &cells[..n],
                        &ok[..n],
                        &groups,
                    );
                    if L::N > 1 {
                        tile::<f32>(op, body, c, &cells[..n], &ok[..n], &groups);
                    }
                }
            }
        }
    }
}

/// Transform `op` of images `lo..hi`: image `n` at `image + n·H·W·C`
/// (NHWC, `H×W` the input size for the input transforms, the output size
/// for the output ones), its tiles of group `k` at
/// `tiles + k·group_bytes + n·TH·TW·C` (f32 elements except `group_bytes`).
///
/// # Safety
/// The pointers must address the images and tiles described, as the
/// generated code guarantees.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn specc_winograd(
    op: i64,
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
    c: i64,
    (ih, iw, oh, ow): (i64, i64, i64, i64),
    (pad_top, pad_left): (i64, i64),
    image: *mut f32,
    tiles: *mut f32,
    group_bytes: i64,
    (lo, hi): (i64, i64),
) {
    let g = Geo {
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
