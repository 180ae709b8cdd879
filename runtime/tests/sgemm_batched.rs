//! The strided batch (`sgemm_batched`, `specc_sgemm_batched`): every group
//! gets the bits of its own `sgemm` call and of the documented recipe (a
//! naive product in the k recipe's order), within the float64 reference's
//! bound, for every kernel, odd sizes, transposed and padded operands, an
//! operand shared by every group (group stride 0, packed once) and long k
//! (several k blocks); nothing outside the groups' Cs is written.

use crate::sgemm_common::{isas, recipe, reference, same_bits, Layout, Rng, View};
use specc_runtime::gemm::{specc_sgemm, specc_sgemm_batched};
use specc_runtime::sgemm::{sgemm_batched_with, sgemm_with, Batch, Isa};

/// `count` views of one layout in one buffer, group `g` at `g * stride`
/// (stride 0: one view shared by every group).
struct Groups {
    views: Vec<View>,
    buf: Vec<f32>,
    stride: usize,
    /// Offset of the first group's element (0, 0) in `buf`.
    off: usize,
}

impl Groups {
    /// Random groups; `shared` makes the group stride 0. Groups are `gap`
    /// floats apart beyond the view's own buffer.
    fn new(
        count: usize,
        rows: usize,
        cols: usize,
        layout: Layout,
        shared: bool,
        gap: usize,
        mut fill: impl FnMut() -> f32,
    ) -> Groups {
        let first = View::new(rows, cols, layout, &mut fill);
        let len = first.data.len();
        let stride = if shared { 0 } else { len + gap };
        let views: Vec<View> = if shared {
            vec![first; count]
        } else {
            std::iter::once(first)
                .chain((1..count).map(|_| View::new(rows, cols, layout, &mut fill)))
                .collect()
        };
        let mut buf: Vec<f32> = (0..(count.max(1) - 1) * stride + len + gap)
            .map(|_| fill())
            .collect();
        for (g, v) in views.iter().enumerate() {
            buf[g * stride..g * stride + len].copy_from_slice(&v.data);
        }
        let off = views[0].off;
        Groups {
            views,
            buf,
            stride,
            off,
        }
    }

    fn ptr(&self) -> *const f32 {
        self.buf[self.off..].as_ptr()
    }
}

/// One case: the batched call against the per-group loop (bit for bit),
/// the recipe (bit for bit) and the reference (within its bound).
#[allow(clippy::too_many_arguments)]
fn check(
    isa: Isa,
    count: usize,
    (m, k, n): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    (share_a, share_b): (bool, bool),
    (alpha, beta): (f32, f32),
    rng: &mut Rng,
) {
    let what = format!(
        "{isa:?} count={count} m={m} k={k} n={n} {la:?} {lb:?} {lc:?} \
         shared A {share_a} B {share_b} alpha={alpha} beta={beta}"
    );
    let a = Groups::new(count, m, k, la, share_a, 3, || rng.f32());
    let b = Groups::new(count, k, n, lb, share_b, 5, || rng.f32());
    // C is NaN where beta == 0 never reads it, and NaN in the gaps.
    let c0 = if beta == 0.0 {
        Groups::new(count, m, n, lc, false, 2, || f32::NAN)
    } else {
        let mut c = Groups::new(count, m, n, lc, false, 2, || rng.f32());
        let len = c.views[0].data.len();
        for g in 0..count {
            c.buf[g * c.stride + len..(g + 1) * c.stride].fill(f32::NAN);
        }
        c
    };
    let (a0, b0) = (&a.views[0], &b.views[0]);
    let c_0 = &c0.views[0];
    let batch = Batch {
        count,
        a: a.stride as isize,
        b: b.stride as isize,
        c: c0.stride as isize,
    };
    let mut got = c0.buf.clone();
    unsafe {
        sgemm_batched_with(
            isa,
            batch,
            m,
            k,
            n,
            alpha,
            a.ptr(),
            a0.rs,
            a0.cs,
            b.ptr(),
            b0.rs,
            b0.cs,
            beta,
            got[c0.off..].as_mut_ptr(),
            c_0.rs,
            c_0.cs,
        );
    }
    // The loop of single products over the same buffers.
    let mut looped = c0.buf.clone();
    for g in 0..count {
        unsafe {
            sgemm_with(
                isa,
                m,
                k,
                n,
                alpha,
                a.ptr().add(g * a.stride),
                a0.rs,
                a0.cs,
                b.ptr().add(g * b.stride),
                b0.rs,
                b0.cs,
                beta,
                looped[c0.off + g * c0.stride..].as_mut_ptr(),
                c_0.rs,
                c_0.cs,
            );
        }
    }
    assert!(
        same_bits(&got, &looped),
        "{what}: not the per-group loop's bits"
    );
    for g in 0..count {
        let (ag, bg, cg) = (&a.views[g], &b.views[g], &c0.views[g]);
        let mut out = cg.clone();
        let len = out.data.len();
        out.data
            .copy_from_slice(&got[g * c0.stride..g * c0.stride + len]);
        let values = out.to_vec();
        assert!(
            same_bits(&values, &recipe(alpha, ag, bg, beta, cg)),
            "{what}: group {g} is not the documented recipe"
        );
        for (idx, (x, (w, bound))) in values
            .iter()
            .zip(reference(alpha, ag, bg, beta, cg))
            .enumerate()
        {
            let err = (*x as f64 - w).abs();
            assert!(
                err <= bound,
                "{what}: group {g} C[{},{}] = {x}, want {w}",
                idx / n,
                idx % n
            );
        }
        // Nothing in the group's buffer outside its view changed.
        let mut inside = vec![false; len];
        for i in 0..m {
            for j in 0..n {
                inside[out.index(i, j)] = true;
            }
        }
        for (t, (x, y)) in out.data.iter().zip(&cg.data).enumerate() {
            assert!(
                inside[t] || x.to_bits() == y.to_bits(),
                "{what}: group {g} wrote outside C"
            );
        }
    }
    // The gaps between the groups' Cs are untouched (NaN).
    let len = c_0.data.len();
    for g in 0..count {
        let end = if g + 1 < count {
            (g + 1) * c0.stride
        } else {
            got.len()
        };
        assert!(
            got[g * c0.stride + len..end].iter().all(|x| x.is_nan()),
            "{what}: wrote between the groups"
        );
    }
}

const ROW: Layout = Layout::Row { pad: 0 };
const COL: Layout = Layout::Col { pad: 0 };

/// The operand layouts: plain, transposed, padded.
const OPERANDS: [Layout; 4] = [ROW, COL, Layout::Row { pad: 3 }, Layout::Col { pad: 5 }];

#[test]
fn batched_equals_per_group_loop_and_naive_product() {
    let mut rng = Rng(0x0bad_5eed_1234_5678);
    // Attention's shapes (scores [T,D]x[D,T], weighted sums [T,T]x[T,D]),
    // odd sizes, a single row or column, narrow C.
    let shapes = [
        (16, 8, 16),
        (64, 32, 64),
        (64, 64, 32),
        (7, 5, 3),
        (13, 17, 29),
        (1, 9, 33),
        (33, 9, 1),
        (37, 20, 10),
        (65, 3, 70),
    ];
    for isa in isas() {
        for (s, &mnk) in shapes.iter().enumerate() {
            for (t, &la) in OPERANDS.iter().enumerate() {
                let lb = OPERANDS[(t + s) % OPERANDS.len()];
                let lc = [ROW, COL][(s + t) % 2];
                let shares = [(false, false), (true, false), (false, true)];
                let share = shares[(s + 2 * t) % 3];
                let ab = [(1.0, 0.0), (0.5, 1.0), (-1.5, 0.25)][(s + t) % 3];
                check(isa, 1 + (s + t) % 4, mnk, (la, lb, lc), share, ab, &mut rng);
            }
        }
    }
}

#[test]
fn shared_operand_packed_once_gives_every_group_its_bits() {
    let mut rng = Rng(0x5eed_0000_0000_0042);
    // Big enough that the shared operand is packed (a transposed B, an A
    // used by many column tiles), then several k blocks (packed per block,
    // not shared) and several row blocks of a packed A.
    let cases = [
        ((96, 130, 200), ROW, COL),
        ((96, 130, 200), COL, COL),
        ((150, 130, 200), ROW, ROW),
        ((40, 1100, 48), ROW, COL),
        ((1200, 20, 40), COL, COL),
    ];
    for isa in isas() {
        for &(mnk, la, lb) in &cases {
            for share in [(true, false), (false, true), (true, true)] {
                check(isa, 3, mnk, (la, lb, ROW), share, (1.0, 0.0), &mut rng);
            }
        }
    }
}

#[test]
fn k_zero_scales_every_group_and_empty_batches_touch_nothing() {
    let mut rng = Rng(7);
    for isa in isas() {
        check(
            isa,
            3,
            (5, 0, 4),
            (ROW, ROW, ROW),
            (false, false),
            (1.0, 0.0),
            &mut rng,
        );
        check(
            isa,
            3,
            (5, 0, 4),
            (ROW, COL, COL),
            (true, false),
            (1.0, 0.5),
            &mut rng,
        );
        check(
            isa,
            2,
            (0, 3, 4),
            (ROW, ROW, ROW),
            (false, false),
            (1.0, 0.0),
            &mut rng,
        );
        check(
            isa,
            2,
            (3, 3, 0),
            (ROW, ROW, ROW),
            (false, false),
            (1.0, 0.0),
            &mut rng,
        );
        // No groups: C (NaN, not even its first group) is not written.
        let mut c = vec![f32::NAN; 16];
        let a = [1.0f32; 16];
        let batch = Batch {
            count: 0,
            a: 4,
            b: 4,
            c: 4,
        };
        unsafe {
            sgemm_batched_with(
                isa,
                batch,
                2,
                2,
                2,
                1.0,
                a.as_ptr(),
                2,
                1,
                a.as_ptr(),
                2,
                1,
                0.0,
                c.as_mut_ptr(),
                2,
                1,
            )
        };
        assert!(c.iter().all(|x| x.is_nan()));
    }
}

/// The C entry point generated code calls: one call over a thread's share
/// of the groups, the two shares of a split batch, and the loop of
/// `specc_sgemm` calls it replaces all give the same bits.
#[test]
fn c_entry_point_matches_the_loop_of_specc_sgemm_and_any_split() {
    let mut rng = Rng(0xfeed);
    // q @ k^T for 5 groups of [9, 6] x [6, 11]^T: B transposed.
    let (count, m, k, n) = (5usize, 9usize, 6usize, 11usize);
    let a: Vec<f32> = (0..count * m * k).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..count * n * k).map(|_| rng.f32()).collect();
    let (sa, sb, sc) = ((m * k) as i64, (n * k) as i64, (m * n) as i64);
    let (m, k, n) = (m as i64, k as i64, n as i64);
    let call = |c: &mut [f32], g0: i64, groups: i64| unsafe {
        specc_sgemm_batched(
            m,
            k,
            n,
            1.0,
            a.as_ptr().add((g0 * sa) as usize),
            k,
            1,
            b.as_ptr().add((g0 * sb) as usize),
            1,
            k,
            0.0,
            c.as_mut_ptr().add((g0 * sc) as usize),
            n,
            1,
            groups,
            sa,
            sb,
            sc,
        )
    };
    let mut whole = vec![f32::NAN; count * (m * n) as usize];
    call(&mut whole, 0, count as i64);
    let mut split = vec![f32::NAN; whole.len()];
    call(&mut split, 0, 2);
    call(&mut split, 2, count as i64 - 2);
    // Nothing for an empty or negative share.
    call(&mut split, 0, 0);
    call(&mut split, 0, -1);
    let mut looped = vec![f32::NAN; whole.len()];
    for g in 0..count as i64 {
        unsafe {
            specc_sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr().add((g * sa) as usize),
                k,
                1,
                b.as_ptr().add((g * sb) as usize),
                1,
                k,
                0.0,
                looped.as_mut_ptr().add((g * sc) as usize),
                n,
                1,
            )
        };
    }
    assert!(whole.iter().all(|x| x.is_finite()));
    assert!(same_bits(&whole, &looped));
    assert!(same_bits(&split, &looped));
}
