//! The runtime's dense Adam update (`specc_adam`): every instruction set
//! this CPU runs gives, bit for bit, a scalar reference of the rule in the
//! compiler's order of operations (`optim::table::adam`'s dense rule as
//! `plan::adam` recognises it), on random data, for lengths that leave
//! every kind of vector tail, sub-ranges (two threads' halves), in place
//! and out of place, with and without the clipping scale and the moving
//! average; and elements outside the range stay untouched.

use specc_runtime::adam::{specc_adam_with, Ptrs, Scalars, MOVING_AVERAGE, SCALE_GRAD};
use specc_runtime::sgemm::Isa;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Every combination of the flags.
const FLAGS: [i64; 4] = [0, SCALE_GRAD, MOVING_AVERAGE, SCALE_GRAD | MOVING_AVERAGE];

fn available() -> Vec<Isa> {
    [Isa::Avx512, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| i.is_available())
        .collect()
}

/// The state of one update: gradient, m, v, variable.
#[derive(Clone)]
struct State {
    grad: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    var: Vec<f32>,
    shadow: Vec<f32>,
}

fn state(n: usize, seed: u64) -> State {
    State {
        grad: values(n, seed),
        m: values(n, seed + 1).iter().map(|x| x * 0.1).collect(),
        // v >= 0, as Adam keeps it; some exactly zero.
        v: values(n, seed + 2)
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 7 == 3 { 0.0 } else { x * x * 0.01 })
            .collect(),
        var: values(n, seed + 3),
        shadow: values(n, seed + 4),
    }
}

/// The rule, element by element, in the compiler's order: `g = grad (*
/// scale)`, `m' = m + (g - m) * omb1`, `v' = v + (g*g - v) * omb2`,
/// `var' = var - (m' * alpha) / (sqrt(v') + eps)`, then with
/// `MOVING_AVERAGE` `s' = s - (s - var') * decay`.
fn reference(st: &mut State, s: Scalars, flags: i64, lo: usize, hi: usize) {
    for i in lo..hi {
        let g = if flags & SCALE_GRAD != 0 {
            st.grad[i] * s.scale
        } else {
            st.grad[i]
        };
        let m = st.m[i] + (g - st.m[i]) * s.omb1;
        let v = st.v[i] + (g * g - st.v[i]) * s.omb2;
        let step = (m * s.alpha) / (v.sqrt() + s.eps);
        st.m[i] = m;
        st.v[i] = v;
        st.var[i] -= step;
        if flags & MOVING_AVERAGE != 0 {
            st.shadow[i] = st.shadow[i] - (st.shadow[i] - st.var[i]) * s.decay;
        }
    }
}

/// `specc_adam_with` on `st`, in place or into copies.
fn kernel(
    isa: Isa,
    st: &State,
    s: Scalars,
    flags: i64,
    lo: usize,
    hi: usize,
    in_place: bool,
) -> State {
    let mut out = st.clone();
    let src = st.clone();
    let shadow_out = out.shadow.as_mut_ptr();
    let shadow = if in_place {
        shadow_out as *const f32
    } else {
        src.shadow.as_ptr()
    };
    let (m_out, v_out, var_out) = (out.m.as_mut_ptr(), out.v.as_mut_ptr(), out.var.as_mut_ptr());
    let (m, v, var) = if in_place {
        (
            m_out as *const f32,
            v_out as *const f32,
            var_out as *const f32,
        )
    } else {
        (src.m.as_ptr(), src.v.as_ptr(), src.var.as_ptr())
    };
    let p = Ptrs {
        grad: st.grad.as_ptr(),
        m,
        v,
        var,
        m_out,
        v_out,
        var_out,
        shadow,
        shadow_out,
    };
    // SAFETY: every pointer addresses `st.grad.len()` elements; in place,
    // inputs and outputs are the same addresses.
    unsafe { specc_adam_with(isa, p, s, flags, lo as i64, hi as i64) };
    out
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn assert_same(isa: Isa, what: &str, got: &State, want: &State) {
    for (name, g, w) in [
        ("m", &got.m, &want.m),
        ("v", &got.v, &want.v),
        ("var", &got.var, &want.var),
        ("shadow", &got.shadow, &want.shadow),
    ] {
        assert_eq!(bits(g), bits(w), "{isa:?} {what}: {name} differs");
    }
}

/// Bias-corrected rate of step 3 with TF's defaults, a clipping scale below 1.
fn scalars() -> Scalars {
    let (lr, b1, b2) = (0.001f32, 0.9f32, 0.999f32);
    let (b1p, b2p) = (b1 * b1 * b1, b2 * b2 * b2);
    Scalars {
        scale: 0.73,
        omb1: 1.0 - b1,
        omb2: 1.0 - b2,
        alpha: lr * (1.0 - b2p).sqrt() / (1.0 - b1p),
        eps: 1e-8,
        decay: 0.01,
    }
}

#[test]
fn every_instruction_set_gives_the_reference_bits() {
    let s = scalars();
    let lengths: Vec<usize> = (1..=40).chain([63, 1000, 9610]).collect();
    for isa in available() {
        for &n in &lengths {
            for flags in FLAGS {
                for in_place in [true, false] {
                    let st = state(n, n as u64);
                    let mut want = st.clone();
                    reference(&mut want, s, flags, 0, n);
                    let got = kernel(isa, &st, s, flags, 0, n, in_place);
                    let what = format!("n={n} flags={flags} in_place={in_place}");
                    assert_same(isa, &what, &got, &want);
                }
            }
        }
    }
}

#[test]
fn sub_ranges_update_only_their_elements() {
    let s = scalars();
    for isa in available() {
        for n in [1usize, 17, 40, 9610] {
            let cut = (n / 2) & !15;
            let ranges = [
                (0, cut),
                (cut, n),
                (3.min(n), n.saturating_sub(2).max(3.min(n))),
            ];
            for (lo, hi) in ranges {
                for flags in FLAGS {
                    let st = state(n, 7 + n as u64);
                    let mut want = st.clone();
                    reference(&mut want, s, flags, lo, hi);
                    let got = kernel(isa, &st, s, flags, lo, hi, true);
                    assert_same(isa, &format!("n={n} {lo}..{hi} flags={flags}"), &got, &want);
                }
            }
            // Two halves give the whole range's bits.
            let st = state(n, 99);
            let whole = kernel(isa, &st, s, MOVING_AVERAGE, 0, n, true);
            let first = kernel(isa, &st, s, MOVING_AVERAGE, 0, cut, true);
            let both = kernel(isa, &first, s, MOVING_AVERAGE, cut, n, true);
            assert_same(isa, &format!("n={n} halves"), &both, &whole);
        }
    }
}

#[test]
fn the_update_moves_against_the_gradient() {
    // A known result, independent of the reference: from m = v = 0 with
    // omb1 = omb2 = 1 (beta = 0), m' = g, v' = g², and the step is
    // alpha * g / (|g| + eps) ≈ alpha * sign(g).
    let n = 37;
    let st = State {
        grad: (0..n)
            .map(|i| if i % 2 == 0 { 0.5 } else { -2.0 })
            .collect(),
        m: vec![0.0; n],
        v: vec![0.0; n],
        var: vec![1.0; n],
        shadow: vec![0.0; n],
    };
    let s = Scalars {
        scale: 1.0,
        omb1: 1.0,
        omb2: 1.0,
        alpha: 0.25,
        eps: 0.0,
        decay: 0.5,
    };
    for isa in available() {
        let got = kernel(isa, &st, s, MOVING_AVERAGE, 0, n, true);
        for i in 0..n {
            let g = st.grad[i];
            assert_eq!(got.m[i], g);
            assert_eq!(got.v[i], g * g);
            let want = if g > 0.0 { 0.75 } else { 1.25 };
            assert_eq!(got.var[i], want, "{isa:?} element {i}");
            // Halfway from 0 to the new value.
            assert_eq!(got.shadow[i], want / 2.0, "{isa:?} element {i}");
        }
    }
}
