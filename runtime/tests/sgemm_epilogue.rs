//! The fused epilogue (`sgemm_ep`: bias row and/or relu after the last k
//! block) against the documented recipe followed by the loop a compiled step
//! would run (`relu(add(c, bias))`), bit for bit, for every kernel, every
//! operand layout, odd shapes with edge tiles, several k blocks (the
//! epilogue must be applied once, to the final sums), beta != 0, and C split
//! into row and column blocks between calls.

use crate::sgemm_common as common;

use common::*;
use specc_runtime::sgemm::{sgemm_ep_with, Epilogue, Isa, KC_MAX};

/// What the compiled loop computes after a plain product: `c + bias[j]`,
/// then `c > 0 ? c : 0` (the CLIF relu).
fn loop_epilogue(c: &mut [f32], n: usize, bias: Option<&[f32]>, stride: usize, relu: bool) {
    for (idx, x) in c.iter_mut().enumerate() {
        let mut v = *x;
        if let Some(b) = bias {
            v += b[(idx % n) * stride];
        }
        if relu {
            v = if v > 0.0 { v } else { 0.0 };
        }
        *x = v;
    }
}

#[allow(clippy::too_many_arguments)]
fn gemm_ep(
    isa: Isa,
    alpha: f32,
    a: &View,
    b: &View,
    beta: f32,
    c: &mut View,
    bias: Option<&[f32]>,
    stride: usize,
    relu: bool,
) {
    let ep = Epilogue {
        bias: bias.map_or(core::ptr::null(), |b| b.as_ptr()),
        bias_stride: stride as isize,
        relu,
    };
    unsafe {
        sgemm_ep_with(
            isa,
            a.rows,
            a.cols,
            b.cols,
            alpha,
            a.ptr(),
            a.rs,
            a.cs,
            b.ptr(),
            b.rs,
            b.cs,
            beta,
            c.mut_ptr(),
            c.rs,
            c.cs,
            Some(&ep),
        )
    }
}

/// Shapes that select every AVX-512 tile and the narrow (n <= 12) path,
/// with edge tiles in both dimensions, k over one and two block boundaries.
const SHAPES: &[(usize, usize, usize)] = &[
    (64, 64, 128),
    (64, 128, 10),
    (37, 64, 10),
    (16, 5, 16),
    (17, 9, 15),
    (13, 17, 33),
    (24, 31, 48),
    (7, 50, 64),
    (97, 101, 103),
    (1, 7, 1),
    (5, KC_MAX + 1, 7),
    (45, 600, 150),
    (30, 2 * KC_MAX + 76, 70),
    (70, 2 * KC_MAX + 3, 9),
];

const C_LAYOUTS: [Layout; 4] = [
    Layout::Row { pad: 0 },
    Layout::Col { pad: 0 },
    Layout::Row { pad: 7 },
    Layout::RowReversed,
];

const ALPHA_BETA: [(f32, f32); 3] = [(1.0, 0.0), (1.0, 1.0), (-0.5, 0.75)];

/// (bias, bias stride, relu)
const EPILOGUES: [(bool, usize, bool); 5] = [
    (true, 1, true),
    (true, 1, false),
    (false, 1, true),
    (true, 3, true),
    (true, 0, true),
];

#[allow(clippy::too_many_arguments)]
fn check(
    isa: Isa,
    (m, k, n): (usize, usize, usize),
    la: Layout,
    lb: Layout,
    lc: Layout,
    (alpha, beta): (f32, f32),
    (with_bias, stride, relu): (bool, usize, bool),
    rng: &mut Rng,
) {
    let a = View::random(m, k, la, rng);
    let b = View::random(k, n, lb, rng);
    let c0 = if beta == 0.0 {
        View::new(m, n, lc, || f32::NAN)
    } else {
        View::random(m, n, lc, rng)
    };
    // Biases of about the size of the products, so relu cuts about half.
    let bias: Vec<f32> = (0..(n * stride).max(1)).map(|_| rng.f32() * 2.0).collect();
    let bias = with_bias.then_some(&bias[..]);
    let mut want = recipe(alpha, &a, &b, beta, &c0);
    loop_epilogue(&mut want, n, bias, stride, relu);
    let mut c = c0.clone();
    gemm_ep(isa, alpha, &a, &b, beta, &mut c, bias, stride, relu);
    let got = c.to_vec();
    let ctx = format!(
        "{isa:?} m={m} k={k} n={n} {la:?} {lb:?} {lc:?} alpha={alpha} beta={beta} \
         bias={with_bias} stride={stride} relu={relu}"
    );
    for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{ctx}: C[{},{}] = {g}, want {w}",
            idx / n,
            idx % n
        );
    }
    let mut inside = vec![false; c.data.len()];
    for i in 0..m {
        for j in 0..n {
            inside[c.index(i, j)] = true;
        }
    }
    for (t, (x, y)) in c.data.iter().zip(&c0.data).enumerate() {
        assert!(
            inside[t] || x.to_bits() == y.to_bits(),
            "{ctx}: wrote outside C"
        );
    }
}

#[test]
fn epilogue_matches_recipe_then_loop_every_kernel_and_layout() {
    let mut rng = Rng(0x05ee_de91);
    let ab_layouts = [
        Layout::Row { pad: 0 },
        Layout::Col { pad: 0 },
        Layout::Row { pad: 3 },
    ];
    let mut case = 0;
    for isa in isas() {
        for &shape in SHAPES {
            for la in ab_layouts {
                for lb in ab_layouts {
                    for lc in C_LAYOUTS {
                        // alpha/beta and the epilogue cycle (3 and 5 are
                        // coprime: every pair comes up for every shape).
                        let ab = ALPHA_BETA[case % ALPHA_BETA.len()];
                        let ep = EPILOGUES[case % EPILOGUES.len()];
                        case += 1;
                        check(isa, shape, la, lb, lc, ab, ep, &mut rng);
                    }
                }
            }
        }
    }
}

#[test]
fn epilogue_with_k_zero_applies_to_scaled_c() {
    let mut rng = Rng(77);
    for isa in isas() {
        for ab in [(1.0, 0.0), (1.0, 0.5)] {
            check(
                isa,
                (9, 0, 21),
                Layout::Row { pad: 0 },
                Layout::Row { pad: 0 },
                Layout::Row { pad: 1 },
                ab,
                (true, 1, true),
                &mut rng,
            );
        }
    }
}

/// relu of NaN and of -0.0 is +0.0, as the CLIF `x > 0 ? x : 0`.
#[test]
fn epilogue_relu_of_nan_and_negative_zero_is_positive_zero() {
    for isa in isas() {
        for n in [5, 40] {
            let (m, k) = (20, 3);
            // A row of NaN gives NaN products; zero rows with alpha = -1 give
            // -0.0, and a bias of -0.0 keeps them -0.0 before relu.
            let a = View::new(m, k, Layout::Row { pad: 0 }, || 0.0);
            let mut a = a;
            for p in 0..k {
                a.data[p] = f32::NAN;
            }
            let b = View::new(k, n, Layout::Row { pad: 0 }, || 1.0);
            let bias = vec![-0.0f32; n];
            for relu in [false, true] {
                let mut c = View::new(m, n, Layout::Row { pad: 0 }, || 7.0);
                gemm_ep(isa, -1.0, &a, &b, 0.0, &mut c, Some(&bias), 1, relu);
                for i in 0..m {
                    for j in 0..n {
                        let g = c.get(i, j);
                        if relu {
                            assert_eq!(g.to_bits(), 0.0f32.to_bits(), "{isa:?} C[{i},{j}]");
                        } else if i == 0 {
                            assert!(g.is_nan(), "{isa:?} C[{i},{j}] = {g}");
                        } else {
                            assert_eq!(g.to_bits(), (-0.0f32).to_bits(), "{isa:?} C[{i},{j}]");
                        }
                    }
                }
            }
        }
    }
}

/// C computed in row blocks and in column blocks (the bias offset by the
/// first column), as two threads split it, gives the bits of one call.
#[test]
fn epilogue_is_independent_of_the_split() {
    let mut rng = Rng(0xb10c);
    for isa in isas() {
        for &(m, k, n) in &[
            (64, 64, 128),
            (256, 784, 1024),
            (64, 128, 10),
            (33, 600, 47),
        ] {
            let a = View::random(m, k, Layout::Row { pad: 0 }, &mut rng);
            let b = View::random(k, n, Layout::Row { pad: 0 }, &mut rng);
            let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
            let mut whole = View::new(m, n, Layout::Row { pad: 0 }, || f32::NAN);
            gemm_ep(isa, 1.0, &a, &b, 0.0, &mut whole, Some(&bias), 1, true);
            let mut by_rows = View::new(m, n, Layout::Row { pad: 0 }, || f32::NAN);
            let mut by_cols = View::new(m, n, Layout::Row { pad: 0 }, || f32::NAN);
            let ep = |bias: *const f32| Epilogue {
                bias,
                bias_stride: 1,
                relu: true,
            };
            unsafe {
                let h = (m / 2).div_ceil(8) * 8;
                for (lo, hi) in [(0, h.min(m)), (h.min(m), m)] {
                    sgemm_ep_with(
                        isa,
                        hi - lo,
                        k,
                        n,
                        1.0,
                        a.ptr().add(lo * k),
                        k as isize,
                        1,
                        b.ptr(),
                        n as isize,
                        1,
                        0.0,
                        by_rows.mut_ptr().add(lo * n),
                        n as isize,
                        1,
                        Some(&ep(bias.as_ptr())),
                    );
                }
                let h = (n / 2).div_ceil(16) * 16;
                for (lo, hi) in [(0, h.min(n)), (h.min(n), n)] {
                    sgemm_ep_with(
                        isa,
                        m,
                        k,
                        hi - lo,
                        1.0,
                        a.ptr(),
                        k as isize,
                        1,
                        b.ptr().add(lo),
                        n as isize,
                        1,
                        0.0,
                        by_cols.mut_ptr().add(lo),
                        n as isize,
                        1,
                        Some(&ep(bias.as_ptr().add(lo))),
                    );
                }
            }
            assert!(
                same_bits(&whole.to_vec(), &by_rows.to_vec()),
                "{isa:?} {m}x{k}x{n} rows"
            );
            assert!(
                same_bits(&whole.to_vec(), &by_cols.to_vec()),
                "{isa:?} {m}x{k}x{n} columns"
            );
            // And the recipe followed by the loop.
            let mut want = recipe(
                1.0,
                &a,
                &b,
                0.0,
                &View::new(m, n, Layout::Row { pad: 0 }, || 0.0),
            );
            loop_epilogue(&mut want, n, Some(&bias), 1, true);
            assert!(same_bits(&whole.to_vec(), &want), "{isa:?} {m}x{k}x{n}");
        }
    }
}
