//! Accuracy of the emitted math functions against an f64 reference, for both
//! the scalar and the `f32x4` path (which must agree bit for bit).
//!
//! Run with `cargo test -p specc-compiler --test math_accuracy -- --nocapture`
//! to see the ulp table.

use crate::jit;

use jit::{run, Emit, Jit, Mode};
use specc_compiler::codegen::math;

struct Case {
    name: &'static str,
    emit: Emit,
    reference: fn(f64) -> f64,
    /// Evenly spaced sweeps: (lo, hi, count).
    dense: &'static [(f64, f64, usize)],
    /// Points around which every f32 within ±WALK steps is tested.
    thresholds: &'static [f32],
    /// Bound on the distance (in f32 ulps) to the correctly rounded result.
    max_ulp: u64,
}

const WALK: usize = 4096;
const RANDOM: usize = 1_000_000;
const DENSE: usize = 1_000_000;

fn sigmoid_ref(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

fn softplus_ref(x: f64) -> f64 {
    (-x.abs()).exp().ln_1p() + x.max(0.0)
}

/// Maps f32 bit patterns onto a line where adjacent floats differ by 1
/// (±0 both map to 0; ±inf sit one step beyond ±MAX).
fn ordered(x: f32) -> i64 {
    let b = x.to_bits();
    let mag = i64::from(b & 0x7fff_ffff);
    if b >> 31 == 1 {
        -mag
    } else {
        mag
    }
}

fn ulp_dist(a: f32, b: f32) -> u64 {
    (ordered(a) - ordered(b)).unsigned_abs()
}

/// Size of one f32 ulp at the (finite, f64) value v; 2^-149 for subnormals.
fn ulp_at(v: f64) -> f64 {
    let a = v.abs();
    let e = if a == 0.0 {
        -126
    } else {
        (a.log2().floor() as i32).max(-126)
    };
    2f64.powi(e - 23)
}

fn same(a: f32, b: f32) -> bool {
    jit::same_bits(a, b)
}

fn inputs(case: &Case) -> Vec<f32> {
    jit::sweep(case.dense, case.thresholds, WALK, RANDOM, 0x9E37_79B9)
}

#[derive(Default)]
struct Stats {
    max_ulp: u64,
    worst_x: f32,
    max_frac: f64,
    max_ulp_normal: u64,
    max_ulp_subnormal: u64,
    failures: Vec<String>,
    failure_count: usize,
}

impl Stats {
    /// Checks `ys = f(xs)` against the reference and accumulates the errors.
    fn update(&mut self, case: &Case, xs: &[f32], ys: &[f32]) {
        for (&x, &y) in xs.iter().zip(ys) {
            let exact = (case.reference)(f64::from(x));
            let want = exact as f32;
            let bad = if want.is_nan() || want.is_infinite() || y.is_nan() || y.is_infinite() {
                !same(want, y)
            } else {
                let d = ulp_dist(y, want);
                if d > self.max_ulp {
                    self.max_ulp = d;
                    self.worst_x = x;
                }
                if want.abs() < f32::MIN_POSITIVE {
                    self.max_ulp_subnormal = self.max_ulp_subnormal.max(d);
                } else {
                    self.max_ulp_normal = self.max_ulp_normal.max(d);
                }
                let frac = (f64::from(y) - exact).abs() / ulp_at(exact);
                self.max_frac = self.max_frac.max(frac);
                d > case.max_ulp
            };
            if bad {
                self.failure_count += 1;
                if self.failures.len() < 20 {
                    self.failures.push(format!(
                        "{}({x:e} = {:#010x}) = {y:e}, want {want:e} ({} ulp)",
                        case.name,
                        x.to_bits(),
                        ulp_dist(y, want)
                    ));
                }
            }
        }
    }

    fn assert_ok(&self, case: &Case) {
        assert!(
            self.failure_count == 0,
            "{}: {} failures, first ones:\n{}",
            case.name,
            self.failure_count,
            self.failures.join("\n")
        );
    }
}

fn measure(case: &Case, xs: &[f32], ys: &[f32]) -> Stats {
    let mut st = Stats::default();
    st.update(case, xs, ys);
    st.assert_ok(case);
    st
}

fn assert_same_paths(name: &str, xs: &[f32], yv: &[f32], ys: &[f32]) {
    let mismatches: Vec<String> = xs
        .iter()
        .zip(yv.iter().zip(ys))
        .filter(|(_, (a, b))| !same(**a, **b))
        .take(10)
        .map(|(x, (a, b))| format!("x={x:e}: vector {a:e} scalar {b:e}"))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{name}: scalar/vector mismatch:\n{}",
        mismatches.join("\n")
    );
}

/// Runs the full accuracy protocol for one function; returns the outputs
/// of the vector kernel so callers can make function-specific checks.
fn check(case: &Case) -> (Jit, jit::MapFn) {
    let mut jit = Jit::native();
    let vec_fn = jit.compile_map(&format!("{}_v", case.name), case.emit, Mode::Vector);
    let sca_fn = jit.compile_map(&format!("{}_s", case.name), case.emit, Mode::ScalarOnly);

    let xs = inputs(case);
    let yv = run(vec_fn, &xs);
    let ys = run(sca_fn, &xs);

    // Scalar and vector paths must agree bit for bit.
    assert_same_paths(case.name, &xs, &yv, &ys);

    // Tails: every length 0..=9 with the vector kernel equals the scalar one.
    for len in 0..=9 {
        let a = run(vec_fn, &xs[..len]);
        let b = run(sca_fn, &xs[..len]);
        assert!(a.iter().zip(&b).all(|(p, q)| same(*p, *q)));
    }

    let sv = measure(case, &xs, &yv);
    let ss = measure(case, &xs, &ys);
    println!(
        "{:<9} n={:>8}  vector: max {} ulp (normal {}, subnormal {}; vs exact {:.3} ulp; worst x={:e})  scalar: max {} ulp (vs exact {:.3})",
        case.name,
        xs.len(),
        sv.max_ulp,
        sv.max_ulp_normal,
        sv.max_ulp_subnormal,
        sv.max_frac,
        sv.worst_x,
        ss.max_ulp,
        ss.max_frac,
    );
    (jit, vec_fn)
}

/// Evaluates the vector kernel on a few points.
fn eval(f: jit::MapFn, xs: &[f32]) -> Vec<f32> {
    run(f, xs)
}

fn assert_bits(f: jit::MapFn, name: &str, cases: &[(f32, f32)]) {
    let xs: Vec<f32> = cases.iter().map(|c| c.0).collect();
    // Also through the scalar tail: one element per call.
    let ys = eval(f, &xs);
    for (&(x, want), &y) in cases.iter().zip(&ys) {
        assert!(
            same(y, want),
            "{name}({x:e}) = {y:e} ({:#010x}), want {want:e}",
            y.to_bits()
        );
        let y1 = eval(f, &[x])[0];
        assert!(
            same(y1, want),
            "scalar {name}({x:e}) = {y1:e}, want {want:e}"
        );
    }
}

const EXP: Case = Case {
    name: "exp",
    emit: math::exp,
    reference: f64::exp,
    dense: &[(-104.0, 89.0, DENSE), (-1.0, 1.0, DENSE / 10)],
    thresholds: &[88.722_84, -103.972_08, -87.336_55, 0.0, -88.0],
    max_ulp: 2,
};

const LOG: Case = Case {
    name: "log",
    emit: math::log,
    reference: f64::ln,
    dense: &[(1e-6, 4.0, DENSE), (0.5, 2.0, DENSE / 10)],
    thresholds: &[
        1.0,
        f32::MIN_POSITIVE,
        f32::MAX,
        std::f32::consts::SQRT_2,
        std::f32::consts::FRAC_1_SQRT_2,
    ],
    max_ulp: 2,
};

const LOG1P: Case = Case {
    name: "log1p",
    emit: math::log1p,
    reference: f64::ln_1p,
    dense: &[(-0.999_999, 4.0, DENSE), (-1e-4, 1e-4, DENSE / 10)],
    thresholds: &[
        -1.0,
        0.0,
        5.960_464_5e-8,
        0.414_213_57,
        -0.292_893_2,
        1.0,
        3.0,
        33_554_432.0,
    ],
    max_ulp: 2,
};

const TANH: Case = Case {
    name: "tanh",
    emit: math::tanh,
    reference: f64::tanh,
    dense: &[(-10.0, 10.0, DENSE), (-1.0, 1.0, DENSE / 10)],
    thresholds: &[0.625, -0.625, 9.01, -9.01, 0.0],
    max_ulp: 3,
};

const SIGMOID: Case = Case {
    name: "sigmoid",
    emit: math::sigmoid,
    reference: sigmoid_ref,
    dense: &[(-105.0, 20.0, DENSE), (-2.0, 2.0, DENSE / 10)],
    thresholds: &[0.0, -87.336_55, -103.972_08, 16.635_532, -16.635_532],
    max_ulp: 3,
};

const SOFTPLUS: Case = Case {
    name: "softplus",
    emit: math::softplus,
    reference: softplus_ref,
    dense: &[(-105.0, 30.0, DENSE), (-2.0, 2.0, DENSE / 10)],
    thresholds: &[0.0, -87.336_55, -103.972_08, 16.635_532, 88.0],
    max_ulp: 3,
};

#[test]
fn exp_accuracy() {
    let case = EXP;
    let (_jit, f) = check(&case);
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "exp",
        &[
            (0.0, 1.0),
            (-0.0, 1.0),
            (inf, inf),
            (-inf, 0.0),
            (f32::NAN, f32::NAN),
            (88.8, inf),
            (1000.0, inf),
            (-104.0, 0.0),
            (-1000.0, 0.0),
            (1.0, std::f32::consts::E),
        ],
    );
    // Overflow happens exactly where the rounded true result overflows.
    let mut x = 88.0f32;
    while ((f64::from(x)).exp() as f32).is_finite() {
        x = x.next_up();
    }
    let below = x.next_down();
    let ys = eval(f, &[below, x]);
    assert!(
        ys[0].is_finite() && ys[1] == inf,
        "overflow edge at {x:e}: {ys:?}"
    );
    println!(
        "exp overflow edge: exp({below:e}) = {:e}, exp({x:e}) = inf",
        ys[0]
    );
}

#[test]
fn log_accuracy() {
    let case = LOG;
    let (_jit, f) = check(&case);
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "log",
        &[
            (1.0, 0.0),
            (0.0, -inf),
            (-0.0, -inf),
            (-1.0, f32::NAN),
            (-inf, f32::NAN),
            (-1e-45, f32::NAN),
            (inf, inf),
            (f32::NAN, f32::NAN),
        ],
    );
}

#[test]
fn log1p_accuracy() {
    let case = LOG1P;
    let (_jit, f) = check(&case);
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "log1p",
        &[
            (0.0, 0.0),
            (-0.0, -0.0),
            (1e-30, 1e-30),
            (-1e-30, -1e-30),
            (-1.0, -inf),
            (-1.5, f32::NAN),
            (-inf, f32::NAN),
            (inf, inf),
            (f32::NAN, f32::NAN),
        ],
    );
}

#[test]
fn tanh_accuracy() {
    let case = TANH;
    let (_jit, f) = check(&case);
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "tanh",
        &[
            (0.0, 0.0),
            (-0.0, -0.0),
            (1e-30, 1e-30),
            (-1e-30, -1e-30),
            (10.0, 1.0),
            (-10.0, -1.0),
            (inf, 1.0),
            (-inf, -1.0),
            (f32::NAN, f32::NAN),
        ],
    );
    // Exact odd symmetry over the whole input set.
    let xs = inputs(&case);
    let neg: Vec<f32> = xs.iter().map(|x| -x).collect();
    let (a, b) = (run(f, &xs), run(f, &neg));
    for ((x, p), q) in xs.iter().zip(&a).zip(&b) {
        assert!(same(*p, -*q), "tanh not odd at {x:e}: {p:e} vs {q:e}");
    }
}

#[test]
fn sigmoid_accuracy() {
    let case = SIGMOID;
    let (_jit, f) = check(&case);
    // Tiny results keep their relative accuracy (not flushed to 0).
    let y = eval(f, &[-80.0])[0];
    let want = sigmoid_ref(-80.0) as f32;
    assert!(
        ulp_dist(y, want) <= 1,
        "sigmoid(-80) = {y:e}, want {want:e}"
    );
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "sigmoid",
        &[
            (0.0, 0.5),
            (100.0, 1.0),
            (inf, 1.0),
            (-inf, 0.0),
            (f32::NAN, f32::NAN),
        ],
    );
}

#[test]
fn softplus_accuracy() {
    let case = SOFTPLUS;
    let (_jit, f) = check(&case);
    let inf = f32::INFINITY;
    assert_bits(
        f,
        "softplus",
        &[
            (100.0, 100.0),
            (inf, inf),
            (-inf, 0.0),
            (f32::NAN, f32::NAN),
            (0.0, std::f32::consts::LN_2),
        ],
    );
}

/// Every one of the 2^32 f32 inputs, for all functions, vector and scalar
/// path. Slow (minutes): `cargo test --release -p specc-compiler --test math_accuracy -- --ignored
/// --nocapture exhaustive`.
#[test]
#[ignore]
fn exhaustive_all_inputs() {
    const CHUNK: u64 = 1 << 22;
    let mut total_failures = 0;
    for case in [EXP, LOG, LOG1P, TANH, SIGMOID, SOFTPLUS] {
        let start = std::time::Instant::now();
        let mut jit = Jit::native();
        let vec_fn = jit.compile_map(&format!("{}_v", case.name), case.emit, Mode::Vector);
        let sca_fn = jit.compile_map(&format!("{}_s", case.name), case.emit, Mode::ScalarOnly);
        let mut st = Stats::default();
        let mut xs = vec![0.0f32; CHUNK as usize];
        for chunk in 0..(1u64 << 32) / CHUNK {
            for (i, x) in xs.iter_mut().enumerate() {
                *x = f32::from_bits((chunk * CHUNK + i as u64) as u32);
            }
            let yv = run(vec_fn, &xs);
            let ys = run(sca_fn, &xs);
            assert_same_paths(case.name, &xs, &yv, &ys);
            st.update(&case, &xs, &yv);
        }
        println!(
            "{:<9} all 2^32 inputs: max {} ulp (normal {}, subnormal {}; vs exact {:.3} ulp; worst x={:e}); {} failures; {:.0}s",
            case.name,
            st.max_ulp,
            st.max_ulp_normal,
            st.max_ulp_subnormal,
            st.max_frac,
            st.worst_x,
            st.failure_count,
            start.elapsed().as_secs_f64()
        );
        if st.failure_count > 0 {
            println!("{}", st.failures.join("\n"));
        }
        total_failures += st.failure_count;
    }
    assert_eq!(total_failures, 0, "see the failures printed above");
}
