//! The f32 loops' bits: independent of the split of the rows between
//! calls and of the ISA (GEMM kernel and vector width); the f32 `exp`,
//! `tanh` and `σ` within a few ulps of f64's.

use super::super::{Activation, Cell, CellKind, Real};
use super::{one_call, public_grad, splits, uniform, Case, Operands, Spec, LSTM_ALL};
use crate::prng::SplitMix64;
use crate::sgemm::Isa;

const BATCH: usize = 6;
const STEPS: usize = 5;
/// Wide enough for full vectors and a tail on every ISA.
const UNITS: u32 = 37;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A case with lengths (0, T and between) and an f32 `dstate`.
fn case(spec: Spec) -> (Case, Operands<f32>, Vec<f32>) {
    let case = Case::new(
        Spec {
            units: UNITS,
            ..spec
        },
        BATCH,
        STEPS,
        31,
        true,
    );
    let ops = case.operands::<f32>();
    let s = case.cell.state_width() * BATCH * (STEPS + 1);
    let dstate = uniform(&mut SplitMix64::new(32), s, 1.0);
    let dstate = dstate.into_iter().map(|v| v as f32).collect();
    (case, ops, dstate)
}

/// The tape and the gradient tape's public fields, rows split as `calls`.
fn run(
    cell: &Cell,
    ops: &Operands<f32>,
    dstate: &[f32],
    isa: Isa,
    calls: &[std::ops::Range<usize>],
) -> (Vec<u32>, Vec<u32>) {
    let mut tape = ops.forward(cell, isa, calls);
    let grad = ops.backward(cell, isa, &mut tape, dstate, calls);
    assert!(
        tape.iter().all(|v| v.is_finite()),
        "the forward writes every field"
    );
    let grad = public_grad(cell, &grad);
    assert!(
        grad.iter().all(|v| v.is_finite()),
        "the backward writes every public field"
    );
    (bits(&tape), bits(&grad))
}

fn check_splits(spec: Spec) {
    let (case, ops, dstate) = case(spec);
    let whole = run(&case.cell, &ops, &dstate, Isa::active(), &one_call(BATCH));
    for calls in splits(BATCH) {
        let got = run(&case.cell, &ops, &dstate, Isa::active(), &calls);
        assert!(got.0 == whole.0, "forward: {calls:?} differs from one call");
        assert!(
            got.1 == whole.1,
            "backward: {calls:?} differs from one call"
        );
    }
}

fn check_isas(spec: Spec) {
    let (case, ops, dstate) = case(spec);
    let scalar = run(&case.cell, &ops, &dstate, Isa::Scalar, &one_call(BATCH));
    for isa in [Isa::Avx512, Isa::Avx2]
        .into_iter()
        .filter(|i| i.is_available())
    {
        let got = run(&case.cell, &ops, &dstate, isa, &one_call(BATCH));
        assert!(got.0 == scalar.0, "forward: {isa:?} differs from scalar");
        assert!(got.1 == scalar.1, "backward: {isa:?} differs from scalar");
    }
}

#[test]
fn row_split_basic() {
    check_splits(Spec::new(CellKind::Basic, Activation::Tanh));
}

#[test]
fn row_split_lstm() {
    check_splits(LSTM_ALL);
}

#[test]
fn row_split_lstm_without_options() {
    check_splits(Spec::new(CellKind::Lstm, Activation::Sigmoid));
}

#[test]
fn row_split_gru() {
    check_splits(Spec::new(CellKind::Gru, Activation::Tanh));
}

#[test]
fn isa_basic() {
    check_isas(Spec::new(CellKind::Basic, Activation::Relu));
}

#[test]
fn isa_lstm() {
    check_isas(LSTM_ALL);
}

#[test]
fn isa_gru() {
    check_isas(Spec::new(CellKind::Gru, Activation::Tanh));
}

/// Inputs: dense sweeps of `[lo, hi]` and random bit patterns.
fn inputs(lo: f32, hi: f32) -> Vec<f32> {
    let n = 100_000;
    let mut v: Vec<f32> = (0..=n)
        .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
        .collect();
    let mut rng = SplitMix64::new(7);
    v.extend((0..n).map(|_| f32::from_bits(rng.next_u64() as u32)));
    v.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
    ]);
    v
}

/// Ordered distance in ulps (±0 the same).
fn ulps(a: f32, b: f32) -> u64 {
    let ord = |x: f32| {
        let m = i64::from(x.to_bits() & 0x7fff_ffff);
        if x.is_sign_negative() {
            -m
        } else {
            m
        }
    };
    (ord(a) - ord(b)).unsigned_abs()
}

fn check_math(name: &str, f: fn(f32) -> f32, want: fn(f64) -> f64, lo: f32, hi: f32, max: u64) {
    for x in inputs(lo, hi) {
        let (got, w) = (f(x), want(f64::from(x)) as f32);
        if x.is_nan() {
            assert!(got.is_nan(), "{name}(NaN) = {got}");
            continue;
        }
        assert!(
            got == w || ulps(got, w) <= max,
            "{name}({x:e}) = {got:e}, f64 gives {w:e} ({} ulps)",
            ulps(got, w)
        );
    }
}

#[test]
fn f32_exp_within_2_ulps() {
    check_math("exp", <f32 as Real>::exp, f64::exp, -104.0, 89.0, 2);
}

#[test]
fn f32_tanh_within_3_ulps() {
    check_math("tanh", <f32 as Real>::tanh, f64::tanh, -10.0, 10.0, 3);
}

#[test]
fn f32_sigmoid_within_3_ulps() {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    check_math("sigmoid", <f32 as Real>::sigmoid, sigmoid, -90.0, 90.0, 3);
}
