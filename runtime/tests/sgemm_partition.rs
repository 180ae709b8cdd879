//! Partition independence: C computed whole, as column blocks and as row
//! blocks (split anywhere, including inside a tile) is bit-identical, and an
//! element computed in a full tile equals the same element computed alone
//! (an edge tile of every kernel).

use crate::sgemm_common as common;

use common::*;
use specc_runtime::sgemm::{sgemm_with, Isa, KC_MAX};

/// C[r0..r1, c0..c1] = alpha * A[r0..r1, :] @ B[:, c0..c1] + beta * C[...].
#[allow(clippy::too_many_arguments)]
fn gemm_block(
    isa: Isa,
    alpha: f32,
    a: &View,
    b: &View,
    beta: f32,
    c: &mut View,
    rows: (usize, usize),
    cols: (usize, usize),
) {
    let (k, m, n) = (a.cols, rows.1 - rows.0, cols.1 - cols.0);
    let ai = a.index(rows.0, 0);
    let bi = b.index(0, cols.0);
    let ci = c.index(rows.0, cols.0);
    unsafe {
        sgemm_with(
            isa,
            m,
            k,
            n,
            alpha,
            a.data.as_ptr().add(ai),
            a.rs,
            a.cs,
            b.data.as_ptr().add(bi),
            b.rs,
            b.cs,
            beta,
            c.data.as_mut_ptr().add(ci),
            c.rs,
            c.cs,
        )
    }
}

fn splits(len: usize) -> Vec<usize> {
    let mut s: Vec<usize> = [1, 5, 11, 16, 17, 31, 32, 33, len / 2, len - 1]
        .into_iter()
        .filter(|&x| x > 0 && x < len)
        .collect();
    s.sort();
    s.dedup();
    s
}

#[test]
fn column_and_row_splits_are_bit_identical() {
    let mut rng = Rng(0xfeed);
    let row = Layout::Row { pad: 0 };
    let col = Layout::Col { pad: 0 };
    let shapes = [
        (64, 64, 128, row, row),
        (64, 128, 10, row, row),
        (64, 10, 128, row, col),
        (128, 64, 10, col, row),
        (64, 64, 128, col, row),
        (37, KC_MAX + 77, 45, row, row),
        (50, 2 * KC_MAX + 1, 70, col, col),
        (100, 300, 99, Layout::Row { pad: 4 }, Layout::Col { pad: 3 }),
        // Packed row-major B (packing fused into the first row of tiles).
        (40, 700, 130, row, row),
    ];
    for isa in isas() {
        for &(m, k, n, la, lb) in &shapes {
            for lc in [row, col] {
                let a = View::random(m, k, la, &mut rng);
                let b = View::random(k, n, lb, &mut rng);
                let c0 = View::random(m, n, lc, &mut rng);
                for (alpha, beta) in [(1.0, 0.0), (1.0, 1.0), (0.5, -2.0)] {
                    let mut whole = c0.clone();
                    gemm_block(isa, alpha, &a, &b, beta, &mut whole, (0, m), (0, n));
                    let want = whole.to_vec();
                    for s in splits(n) {
                        let mut c = c0.clone();
                        gemm_block(isa, alpha, &a, &b, beta, &mut c, (0, m), (0, s));
                        gemm_block(isa, alpha, &a, &b, beta, &mut c, (0, m), (s, n));
                        assert!(
                            same_bits(&c.to_vec(), &want),
                            "{isa:?} {m}x{k}x{n} column split at {s}"
                        );
                    }
                    for s in splits(m) {
                        let mut c = c0.clone();
                        gemm_block(isa, alpha, &a, &b, beta, &mut c, (s, m), (0, n));
                        gemm_block(isa, alpha, &a, &b, beta, &mut c, (0, s), (0, n));
                        assert!(
                            same_bits(&c.to_vec(), &want),
                            "{isa:?} {m}x{k}x{n} row split at {s}"
                        );
                    }
                    // Four quadrants, in an odd order.
                    let (sm, sn) = (m / 3 + 1, n / 2 + 3).min((m - 1, n - 1));
                    let mut c = c0.clone();
                    for (r, cc) in [
                        ((sm, m), (0, sn)),
                        ((0, sm), (sn, n)),
                        ((sm, m), (sn, n)),
                        ((0, sm), (0, sn)),
                    ] {
                        if r.0 < r.1 && cc.0 < cc.1 {
                            gemm_block(isa, alpha, &a, &b, beta, &mut c, r, cc);
                        }
                    }
                    assert!(
                        same_bits(&c.to_vec(), &want),
                        "{isa:?} {m}x{k}x{n} quadrants"
                    );
                }
            }
        }
    }
}

#[test]
fn edge_tiles_match_full_tiles() {
    // Every element computed alone (a 1x1 product: an edge tile with zero
    // padding or masks in every kernel) equals the same element of a large
    // product, where most elements sit in full tiles.
    let mut rng = Rng(77);
    for isa in isas() {
        for &(m, k, n) in &[(48, 200, 96), (32, 700, 64), (40, 33, 20)] {
            for (la, lb) in [
                (Layout::Row { pad: 0 }, Layout::Row { pad: 0 }),
                (Layout::Col { pad: 0 }, Layout::Col { pad: 0 }),
            ] {
                let a = View::random(m, k, la, &mut rng);
                let b = View::random(k, n, lb, &mut rng);
                let c0 = View::random(m, n, Layout::Row { pad: 0 }, &mut rng);
                let mut whole = c0.clone();
                gemm_block(isa, 1.0, &a, &b, 1.0, &mut whole, (0, m), (0, n));
                let mut single = c0.clone();
                for i in 0..m {
                    for j in 0..n {
                        gemm_block(isa, 1.0, &a, &b, 1.0, &mut single, (i, i + 1), (j, j + 1));
                    }
                }
                assert!(
                    same_bits(&single.to_vec(), &whole.to_vec()),
                    "{isa:?} {m}x{k}x{n}"
                );
                // Odd-sized sub-blocks too (3x5 tiles everywhere).
                let mut blocks = c0.clone();
                for i in (0..m).step_by(3) {
                    for j in (0..n).step_by(5) {
                        gemm_block(
                            isa,
                            1.0,
                            &a,
                            &b,
                            1.0,
                            &mut blocks,
                            (i, (i + 3).min(m)),
                            (j, (j + 5).min(n)),
                        );
                    }
                }
                assert!(
                    same_bits(&blocks.to_vec(), &whole.to_vec()),
                    "{isa:?} {m}x{k}x{n} 3x5 blocks"
                );
            }
        }
    }
}
