//! Results against a float64 reference and against the exact recipe of the
//! module docs, for every kernel, over random shapes, layouts, alpha/beta.

use crate::sgemm_common as common;

use common::*;
use specc_runtime::sgemm::{sgemm, sgemm_with, Isa, KC_MAX};

/// Shapes with primes, ones, tile-edge sizes and k over one block, and
/// shapes that select each AVX-512 tile (16x16, 12x32, 8x48, 6x64).
const SPECIAL: &[(usize, usize, usize)] = &[
    (16, 37, 96),
    (8, 20, 48),
    (12, 9, 32),
    (7, 50, 64),
    (24, 70, 16),
    (45, 600, 150),
    (30, 2 * KC_MAX + 76, 70),
    (1, 1, 1),
    (1, 7, 1),
    (1, 1, 33),
    (33, 1, 1),
    (2, 3, 5),
    (7, 11, 13),
    (12, 16, 32),
    (13, 17, 33),
    (16, 5, 16),
    (17, 9, 15),
    (24, 31, 48),
    (37, 64, 10),
    (64, 64, 128),
    (64, 128, 10),
    (64, 10, 128),
    (128, 64, 10),
    (97, 101, 103),
    (5, KC_MAX + 1, 7),
    (20, 2 * KC_MAX + 3, 35),
    (131, 257, 67),
];

#[allow(clippy::too_many_arguments)]
fn check_case(
    isa: Isa,
    (m, k, n): (usize, usize, usize),
    la: Layout,
    lb: Layout,
    lc: Layout,
    alpha: f32,
    beta: f32,
    rng: &mut Rng,
) {
    let a = View::random(m, k, la, rng);
    let b = View::random(k, n, lb, rng);
    let c0 = if beta == 0.0 {
        View::new(m, n, lc, || f32::NAN)
    } else {
        View::random(m, n, lc, rng)
    };
    let mut c = c0.clone();
    gemm(isa, alpha, &a, &b, beta, &mut c);
    let want = reference(alpha, &a, &b, beta, &c0);
    let got = c.to_vec();
    for (idx, (g, (w, bound))) in got.iter().zip(&want).enumerate() {
        let err = (*g as f64 - w).abs();
        assert!(
            err <= *bound,
            "{isa:?} m={m} k={k} n={n} {la:?} {lb:?} {lc:?} alpha={alpha} beta={beta}: \
             C[{},{}] = {g}, want {w} (err {err:e} > {bound:e})",
            idx / n,
            idx % n
        );
    }
    // Exactly the documented operation order.
    let exact = recipe(alpha, &a, &b, beta, &c0);
    assert!(
        same_bits(&got, &exact),
        "{isa:?} m={m} k={k} n={n} {la:?} {lb:?} {lc:?}: not the documented recipe"
    );
    // Nothing outside the view of C changed.
    if !matches!(lc, Layout::RowBroadcast | Layout::ColBroadcast) {
        let mut inside = vec![false; c.data.len()];
        for i in 0..m {
            for j in 0..n {
                inside[c.index(i, j)] = true;
            }
        }
        for (t, (x, y)) in c.data.iter().zip(&c0.data).enumerate() {
            assert!(inside[t] || x.to_bits() == y.to_bits(), "wrote outside C");
        }
    }
}

const C_LAYOUTS: [Layout; 4] = [
    Layout::Row { pad: 0 },
    Layout::Col { pad: 0 },
    Layout::Row { pad: 7 },
    Layout::Col { pad: 2 },
];

const ALPHA_BETA: [(f32, f32); 5] = [
    (1.0, 0.0),
    (1.0, 1.0),
    (-0.5, 0.0),
    (2.0, 1.0),
    (0.75, -1.5),
];

#[test]
fn random_shapes_match_f64_reference_and_recipe() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for isa in isas() {
        for _ in 0..150 {
            let dim = |rng: &mut Rng| {
                if rng.below(4) == 0 {
                    1 + rng.below(8)
                } else {
                    1 + rng.below(300)
                }
            };
            let (m, k, n) = (dim(&mut rng), dim(&mut rng), dim(&mut rng));
            let la = LAYOUTS[rng.below(LAYOUTS.len())];
            let lb = LAYOUTS[rng.below(LAYOUTS.len())];
            let lc = C_LAYOUTS[rng.below(C_LAYOUTS.len())];
            let (alpha, beta) = ALPHA_BETA[rng.below(ALPHA_BETA.len())];
            check_case(isa, (m, k, n), la, lb, lc, alpha, beta, &mut rng);
        }
    }
}

#[test]
fn special_shapes_every_layout() {
    let mut rng = Rng(42);
    for isa in isas() {
        for &shape in SPECIAL {
            for (t, &la) in LAYOUTS.iter().enumerate() {
                let lb = LAYOUTS[(t * 3 + shape.0) % LAYOUTS.len()];
                let lc = C_LAYOUTS[(t + shape.2) % C_LAYOUTS.len()];
                let (alpha, beta) = ALPHA_BETA[(t + shape.1) % ALPHA_BETA.len()];
                check_case(isa, shape, la, lb, lc, alpha, beta, &mut rng);
            }
        }
    }
}

#[test]
fn transposed_operands_of_the_specc_shapes() {
    let mut rng = Rng(7);
    let rm = Layout::Row { pad: 0 };
    let cm = Layout::Col { pad: 0 };
    for isa in isas() {
        for &(m, k, n, la, lb) in &[
            (64, 64, 128, rm, rm),
            (64, 128, 10, rm, rm),
            (64, 10, 128, rm, cm),
            (128, 64, 10, cm, rm),
            (64, 64, 128, cm, rm),
            (256, 300, 40, rm, cm),
            (40, 600, 70, cm, cm),
            // A convolution's filter gradient (patches^T @ dY): a
            // column-major A of a wide span read in place (one column of
            // tiles), a B one panel wide read in place; an odd m.
            (288, 1100, 64, cm, rm),
            (291, 1100, 64, cm, rm),
            (291, 700, 16, cm, rm),
        ] {
            for (alpha, beta) in [(1.0, 0.0), (1.0, 1.0)] {
                check_case(isa, (m, k, n), la, lb, rm, alpha, beta, &mut rng);
            }
        }
    }
}

/// Narrow products (n in 1..=20, a classifier's logits and their
/// gradients) with short and long k: a C with fewer than 16 columns, many
/// rows and a column-major A is computed as `C^T = B^T A^T`, whose C^T is
/// column-major, so the kernels write it by in-register transposes of whole
/// tile columns (`store_transposed`); with a row-major A and at most 12
/// columns the AVX-512 kernel vectorizes along the rows of C instead
/// (`narrow`: A transposed in registers 16 k steps at a time). Odd m (edge
/// row blocks), k not a multiple of 16, every beta kind, padded rows of A
/// and C, row- and column-major B; each result against the f64 product and
/// the exact recipe (so the same bits as every other kernel), nothing
/// outside C touched.
#[test]
fn narrow_products_with_transposed_stores() {
    let mut rng = Rng(0x5eed_0010);
    let cm = Layout::Col { pad: 0 };
    let rm = Layout::Row { pad: 0 };
    for isa in isas() {
        for n in 1..=20 {
            for k in [1, 2, 3, 7, 10, 16, 19, 20, 64, 130] {
                for (t, m) in [64, 77, 131].into_iter().enumerate() {
                    let la =
                        [cm, Layout::Col { pad: 3 }, rm, Layout::Row { pad: 3 }][(n + k + t) % 4];
                    let lb = [rm, cm][(n + t) % 2];
                    let lc = [rm, Layout::Row { pad: 5 }][(k + t) % 2];
                    let (alpha, beta) = ALPHA_BETA[(n + k + t) % ALPHA_BETA.len()];
                    check_case(isa, (m, k, n), la, lb, lc, alpha, beta, &mut rng);
                }
            }
        }
    }
}

/// C with at most 12 rows, directly or as the transposed product of a
/// narrow C (`C^T = B^T A^T`, m = n of the caller): the AVX2 kernel takes
/// 5-row tiles for m = 7..=10 and 6-row tiles otherwise; every row count,
/// both orientations, each layout of A, against the f64 product and the
/// exact recipe.
#[test]
fn short_and_narrow_products_for_every_row_count() {
    let mut rng = Rng(0x5eed_0512);
    let cm = Layout::Col { pad: 0 };
    let rm = Layout::Row { pad: 0 };
    for isa in isas() {
        for m in 1..=12 {
            for (t, k) in [1, 9, 64, 128].into_iter().enumerate() {
                let la = [rm, cm, Layout::Row { pad: 3 }, Layout::Col { pad: 2 }][(m + t) % 4];
                let lb = [rm, cm][(m + t) % 2];
                let (alpha, beta) = ALPHA_BETA[(m + t) % ALPHA_BETA.len()];
                // C with m rows, and C with m columns and 64 rows.
                check_case(isa, (m, k, 40), la, lb, rm, alpha, beta, &mut rng);
                check_case(isa, (64, k, m), la, lb, rm, alpha, beta, &mut rng);
                check_case(isa, (32, k, m), la, lb, rm, alpha, beta, &mut rng);
            }
        }
    }
}

#[test]
fn kernels_are_bit_identical() {
    let mut rng = Rng(99);
    let all = isas();
    for _ in 0..60 {
        let (m, k, n) = (1 + rng.below(200), 1 + rng.below(1200), 1 + rng.below(200));
        let a = View::random(m, k, LAYOUTS[rng.below(5)], &mut rng);
        let b = View::random(k, n, LAYOUTS[rng.below(5)], &mut rng);
        let c0 = View::random(m, n, C_LAYOUTS[rng.below(4)], &mut rng);
        let (alpha, beta) = ALPHA_BETA[rng.below(ALPHA_BETA.len())];
        let results: Vec<Vec<f32>> = all
            .iter()
            .map(|&isa| {
                let mut c = c0.clone();
                gemm(isa, alpha, &a, &b, beta, &mut c);
                c.to_vec()
            })
            .collect();
        for (isa, r) in all.iter().zip(&results) {
            assert!(
                same_bits(r, &results[0]),
                "{isa:?} differs from {:?} at {m}x{k}x{n}",
                all[0]
            );
        }
    }
}

#[test]
fn beta_zero_never_reads_c() {
    let mut rng = Rng(3);
    for isa in isas() {
        for &(m, k, n) in &[(1, 1, 1), (13, 7, 45), (64, 128, 10), (30, 600, 40)] {
            for lc in C_LAYOUTS {
                let a = View::random(m, k, Layout::Row { pad: 0 }, &mut rng);
                let b = View::random(k, n, Layout::Row { pad: 0 }, &mut rng);
                let mut c = View::new(m, n, lc, || f32::NAN);
                gemm(isa, 1.0, &a, &b, 0.0, &mut c);
                assert!(c.to_vec().iter().all(|x| x.is_finite()), "{isa:?} read C");
                let mut c = View::new(m, n, lc, || f32::INFINITY);
                gemm(isa, 1.0, &a, &b, 0.0, &mut c);
                assert!(c.to_vec().iter().all(|x| x.is_finite()), "{isa:?} read C");
            }
        }
    }
}

#[test]
fn k_zero_scales_c() {
    for isa in isas() {
        let a = View::new(5, 0, Layout::Row { pad: 0 }, || 1.0);
        let b = View::new(0, 9, Layout::Row { pad: 0 }, || 1.0);
        let mut c = View::new(5, 9, Layout::Row { pad: 0 }, || 3.0);
        gemm(isa, 2.0, &a, &b, 0.5, &mut c);
        assert!(c.to_vec().iter().all(|&x| x == 1.5));
        gemm(isa, 2.0, &a, &b, 1.0, &mut c);
        assert!(c.to_vec().iter().all(|&x| x == 1.5));
        let mut c = View::new(5, 9, Layout::Col { pad: 1 }, || f32::NAN);
        gemm(isa, 2.0, &a, &b, 0.0, &mut c);
        assert!(c.to_vec().iter().all(|&x| x == 0.0));
    }
}

#[test]
fn empty_m_or_n_touches_nothing() {
    for isa in isas() {
        let mut c = [7.0f32; 4];
        unsafe {
            // Dangling-but-aligned A/B pointers: nothing may be read.
            let p = std::ptr::NonNull::<f32>::dangling().as_ptr();
            sgemm_with(
                isa,
                0,
                5,
                3,
                1.0,
                p,
                5,
                1,
                p,
                3,
                1,
                0.0,
                c.as_mut_ptr(),
                3,
                1,
            );
            sgemm_with(
                isa,
                3,
                5,
                0,
                1.0,
                p,
                5,
                1,
                p,
                3,
                1,
                0.0,
                c.as_mut_ptr(),
                3,
                1,
            );
            sgemm_with(
                isa,
                0,
                0,
                0,
                1.0,
                p,
                0,
                0,
                p,
                0,
                0,
                0.0,
                c.as_mut_ptr(),
                0,
                0,
            );
        }
        assert_eq!(c, [7.0; 4]);
    }
}

#[test]
fn public_entry_uses_the_detected_kernel() {
    let mut rng = Rng(5);
    let a = View::random(37, 91, Layout::Row { pad: 0 }, &mut rng);
    let b = View::random(91, 53, Layout::Col { pad: 0 }, &mut rng);
    let mut c1 = View::random(37, 53, Layout::Row { pad: 0 }, &mut rng);
    let mut c2 = c1.clone();
    unsafe {
        sgemm(
            37,
            91,
            53,
            1.5,
            a.ptr(),
            a.rs,
            a.cs,
            b.ptr(),
            b.rs,
            b.cs,
            0.5,
            c1.mut_ptr(),
            c1.rs,
            c1.cs,
        );
    }
    gemm(Isa::active(), 1.5, &a, &b, 0.5, &mut c2);
    assert!(same_bits(&c1.to_vec(), &c2.to_vec()));
    assert!(Isa::Scalar.is_available());
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        assert_eq!(Isa::detect(), Isa::Avx512);
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn unavailable_kernel_panics() {
    for isa in [Isa::Avx512, Isa::Avx2] {
        if !isa.is_available() {
            let r = std::panic::catch_unwind(|| {
                let mut c = [0.0f32];
                let x = [1.0f32];
                unsafe {
                    sgemm_with(
                        isa,
                        1,
                        1,
                        1,
                        1.0,
                        x.as_ptr(),
                        1,
                        1,
                        x.as_ptr(),
                        1,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        1,
                        1,
                    )
                };
            });
            assert!(r.is_err());
        }
    }
}

#[test]
fn large_problems_use_several_packing_blocks() {
    // A packed (column-major, 1100 rows > 1056 per chunk at kc = 512): two
    // row chunks and two k blocks. B packed (row-major, 1000 columns > 704
    // per chunk at kc = 350): two column chunks (six on AVX2, whose B blocks
    // hold 176 columns at kc = 350).
    let mut rng = Rng(2024);
    let row = Layout::Row { pad: 0 };
    let col = Layout::Col { pad: 0 };
    for isa in isas() {
        check_case(isa, (1100, 1024, 20), col, row, row, 1.0, 1.0, &mut rng);
        check_case(isa, (30, 700, 1000), col, row, row, 0.5, 0.0, &mut rng);
        check_case(isa, (1100, 30, 70), col, col, col, 1.0, 0.0, &mut rng);
    }
}
