//! The runtime's Winograd F(2×2, 3×3) and F(4×4, 3×3) transforms
//! (`specc_winograd`), each tile size on its own: each transform against
//! its definition (`Bᵀ d B`, `Aᵀ M A`, with the matrices written out here)
//! on integer-valued data, where f32 arithmetic is exact; the two gradient
//! transforms as the adjoints of those (`⟨T x, t⟩ = ⟨x, Tᵀ t⟩`); and every
//! instruction set this CPU runs giving the scalar code's bits on random
//! data, for channel counts that leave every kind of vector tail.

// The references index matrices as the formulas do.
#![allow(clippy::needless_range_loop)]

use specc_runtime::sgemm::Isa;
use specc_runtime::winograd::{specc_winograd_with, INPUT, INPUT_GRAD, OUTPUT, OUTPUT_GRAD};

/// A transform's geometry: channels, input size, output size, top/left padding.
#[derive(Clone, Copy, Debug)]
struct Geo {
    /// Output cells a tile side: 2 or 4.
    m: usize,
    c: usize,
    ih: usize,
    iw: usize,
    oh: usize,
    ow: usize,
    pt: usize,
    pl: usize,
}

const IMAGES: usize = 3;

impl Geo {
    fn tiles(self) -> (usize, usize) {
        (self.oh.div_ceil(self.m), self.ow.div_ceil(self.m))
    }
    /// Input cells a tile side.
    fn alpha(self) -> usize {
        self.m + 2
    }
    /// Groups (values a tile per channel).
    fn groups(self) -> usize {
        self.alpha() * self.alpha()
    }
    /// Floats of the whole tile tensor.
    fn tiles_len(self) -> usize {
        self.groups() * self.group()
    }
    fn with_m(self, m: usize) -> Geo {
        Geo { m, ..self }
    }
    /// Floats of one group of tiles (all images).
    fn group(self) -> usize {
        let (th, tw) = self.tiles();
        IMAGES * th * tw * self.c
    }
    fn image_len(self, op: i64) -> usize {
        if op == INPUT || op == INPUT_GRAD {
            IMAGES * self.ih * self.iw * self.c
        } else {
            IMAGES * self.oh * self.ow * self.c
        }
    }
}

const GEOS: [Geo; 4] = [
    // W7's second convolution's shape, SAME.
    Geo {
        m: 2,
        c: 32,
        ih: 8,
        iw: 8,
        oh: 8,
        ow: 8,
        pt: 1,
        pl: 1,
    },
    // VALID, odd output sizes (cropped last tiles).
    Geo {
        m: 2,
        c: 17,
        ih: 7,
        iw: 6,
        oh: 5,
        ow: 4,
        pt: 0,
        pl: 0,
    },
    // Explicit, uneven padding; channel tails of every vector width.
    Geo {
        m: 2,
        c: 25,
        ih: 5,
        iw: 9,
        oh: 6,
        ow: 7,
        pt: 2,
        pl: 0,
    },
    Geo {
        m: 2,
        c: 3,
        ih: 4,
        iw: 4,
        oh: 3,
        ow: 2,
        pt: 1,
        pl: 1,
    },
];

/// Deterministic values: small integers (exact arithmetic) or fractions.
fn values(n: usize, seed: u64, integers: bool) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as i64 % 19 - 9;
            if integers {
                u as f32
            } else {
                u as f32 * 0.137 + (s >> 20 & 0xff) as f32 / 311.0
            }
        })
        .collect()
}

/// Runs transform `op` of images 0..IMAGES on `isa`; returns (image, tiles).
fn run(
    isa: Isa,
    op: i64,
    g: Geo,
    mut image: Vec<f32>,
    mut tiles: Vec<f32>,
) -> (Vec<f32>, Vec<f32>) {
    assert_eq!(image.len(), g.image_len(op));
    assert_eq!(tiles.len(), g.tiles_len());
    // SAFETY: the buffers are the sizes the transform addresses.
    unsafe {
        specc_winograd_with(
            isa,
            op,
            g.m as i64,
            g.c as i64,
            (g.ih as i64, g.iw as i64, g.oh as i64, g.ow as i64),
            (g.pt as i64, g.pl as i64),
            image.as_mut_ptr(),
            tiles.as_mut_ptr(),
            (g.group() * 4) as i64,
            (0, IMAGES as i64),
        )
    };
    (image, tiles)
}

/// `Bᵀ` of F(2×2, 3×3) (Lavin & Gray 2015).
const BT2: [&[f64]; 4] = [
    &[1., 0., -1., 0.],
    &[0., 1., 1., 0.],
    &[0., -1., 1., 0.],
    &[0., 1., 0., -1.],
];
/// `Aᵀ` of F(2×2, 3×3).
const AT2: [&[f64]; 2] = [&[1., 1., 1., 0.], &[0., 1., -1., -1.]];
/// `Bᵀ` of F(4×4, 3×3) (points 0, ±1, ±2, ∞).
const BT4: [&[f64]; 6] = [
    &[4., 0., -5., 0., 1., 0.],
    &[0., -4., -4., 1., 1., 0.],
    &[0., 4., -4., -1., 1., 0.],
    &[0., -2., -1., 2., 1., 0.],
    &[0., 2., -1., -2., 1., 0.],
    &[0., 4., 0., -5., 0., 1.],
];
/// `Aᵀ` of F(4×4, 3×3).
const AT4: [&[f64]; 4] = [
    &[1., 1., 1., 1., 1., 0.],
    &[0., 1., -1., 2., -2., 0.],
    &[0., 1., 1., 4., 4., 0.],
    &[0., 1., -1., 8., -8., 1.],
];

fn bt(g: Geo) -> &'static [&'static [f64]] {
    if g.m == 4 {
        &BT4
    } else {
        &BT2
    }
}

fn at(g: Geo) -> &'static [&'static [f64]] {
    if g.m == 4 {
        &AT4
    } else {
        &AT2
    }
}

/// Index of tile group `k` of tile (n, ty, tx), channel ch.
fn tile_at(g: Geo, k: usize, n: usize, ty: usize, tx: usize, ch: usize) -> usize {
    let (th, tw) = g.tiles();
    k * g.group() + ((n * th + ty) * tw + tx) * g.c + ch
}

fn input_reference(g: Geo, x: &[f32]) -> Vec<f32> {
    let (th, tw) = g.tiles();
    let (m, a, bt) = (g.m, g.alpha(), bt(g));
    let mut t = vec![0f32; g.tiles_len()];
    for n in 0..IMAGES {
        for ty in 0..th {
            for tx in 0..tw {
                for ch in 0..g.c {
                    let d = |r: usize, s: usize| -> f64 {
                        let y = (m * ty + r) as i64 - g.pt as i64;
                        let xx = (m * tx + s) as i64 - g.pl as i64;
                        if y < 0 || xx < 0 || y >= g.ih as i64 || xx >= g.iw as i64 {
                            0.0
                        } else {
                            x[((n * g.ih + y as usize) * g.iw + xx as usize) * g.c + ch] as f64
                        }
                    };
                    for i in 0..a {
                        for j in 0..a {
                            let mut v = 0.0;
                            for r in 0..a {
                                for s in 0..a {
                                    v += bt[i][r] * d(r, s) * bt[j][s];
                                }
                            }
                            t[tile_at(g, i * a + j, n, ty, tx, ch)] = v as f32;
                        }
                    }
                }
            }
        }
    }
    t
}

fn output_reference(g: Geo, t: &[f32]) -> Vec<f32> {
    let (th, tw) = g.tiles();
    let (m, a, at) = (g.m, g.alpha(), at(g));
    let mut y = vec![0f32; g.image_len(OUTPUT)];
    for n in 0..IMAGES {
        for ty in 0..th {
            for tx in 0..tw {
                for ch in 0..g.c {
                    for i in 0..m {
                        for j in 0..m {
                            let (oy, ox) = (m * ty + i, m * tx + j);
                            if oy >= g.oh || ox >= g.ow {
                                continue;
                            }
                            let mut v = 0.0;
                            for r in 0..a {
                                for s in 0..a {
                                    v += at[i][r]
                                        * t[tile_at(g, r * a + s, n, ty, tx, ch)] as f64
                                        * at[j][s];
                                }
                            }
                            y[((n * g.oh + oy) * g.ow + ox) * g.c + ch] = v as f32;
                        }
                    }
                }
            }
        }
    }
    y
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

fn available() -> Vec<Isa> {
    [Isa::Avx512, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| i.is_available())
        .collect()
}

fn input_transform_is_bt_d_b(m: usize) {
    for g in GEOS.map(|g| g.with_m(m)) {
        let x = values(g.image_len(INPUT), 1, true);
        let want = input_reference(g, &x);
        for isa in available() {
            let (_, t) = run(isa, INPUT, g, x.clone(), vec![f32::NAN; g.tiles_len()]);
            assert_eq!(t, want, "{isa:?} {g:?}");
        }
    }
}

fn output_transform_is_at_m_a(m: usize) {
    for g in GEOS.map(|g| g.with_m(m)) {
        let t = values(g.tiles_len(), 2, true);
        let want = output_reference(g, &t);
        for isa in available() {
            let (y, _) = run(isa, OUTPUT, g, vec![0.0; g.image_len(OUTPUT)], t.clone());
            assert_eq!(y, want, "{isa:?} {g:?}");
        }
    }
}

fn gradient_transforms_are_the_adjoints(m: usize) {
    for g in GEOS.map(|g| g.with_m(m)) {
        for isa in available() {
            // ⟨input(x), t⟩ = ⟨x, input_grad(t)⟩
            let x = values(g.image_len(INPUT), 3, true);
            let t = values(g.tiles_len(), 4, true);
            let (_, tx) = run(isa, INPUT, g, x.clone(), vec![0.0; t.len()]);
            let (xt, _) = run(isa, INPUT_GRAD, g, vec![f32::NAN; x.len()], t.clone());
            assert_eq!(dot(&tx, &t), dot(&x, &xt), "input {isa:?} {g:?}");
            // ⟨output(m), y⟩ = ⟨m, output_grad(y)⟩
            let m = values(g.tiles_len(), 5, true);
            let y = values(g.image_len(OUTPUT), 6, true);
            let (ym, _) = run(isa, OUTPUT, g, vec![0.0; y.len()], m.clone());
            let (_, my) = run(isa, OUTPUT_GRAD, g, y.clone(), vec![f32::NAN; m.len()]);
            assert_eq!(dot(&ym, &y), dot(&m, &my), "output {isa:?} {g:?}");
        }
    }
}

fn every_instruction_set_gives_the_scalar_bits(m: usize) {
    for g in GEOS.map(|g| g.with_m(m)) {
        for op in [INPUT, INPUT_GRAD, OUTPUT, OUTPUT_GRAD] {
            let image = values(g.image_len(op), 7 + op as u64, false);
            let tiles = values(g.tiles_len(), 11 + op as u64, false);
            let (ws, ts) = run(Isa::Scalar, op, g, image.clone(), tiles.clone());
            for isa in available() {
                let (wi, ti) = run(isa, op, g, image.clone(), tiles.clone());
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&wi), bits(&ws), "image, op {op} {isa:?} {g:?}");
                assert_eq!(bits(&ti), bits(&ts), "tiles, op {op} {isa:?} {g:?}");
            }
        }
    }
}

#[test]
fn f2x2_input_transform_is_bt_d_b() {
    input_transform_is_bt_d_b(2);
}

#[test]
fn f4x4_input_transform_is_bt_d_b() {
    input_transform_is_bt_d_b(4);
}

#[test]
fn f2x2_output_transform_is_at_m_a() {
    output_transform_is_at_m_a(2);
}

#[test]
fn f4x4_output_transform_is_at_m_a() {
    output_transform_is_at_m_a(4);
}

#[test]
fn f2x2_gradient_transforms_are_the_adjoints() {
    gradient_transforms_are_the_adjoints(2);
}

#[test]
fn f4x4_gradient_transforms_are_the_adjoints() {
    gradient_transforms_are_the_adjoints(4);
}

#[test]
fn f2x2_every_instruction_set_gives_the_scalar_bits() {
    every_instruction_set_gives_the_scalar_bits(2);
}

#[test]
fn f4x4_every_instruction_set_gives_the_scalar_bits() {
    every_instruction_set_gives_the_scalar_bits(4);
}
