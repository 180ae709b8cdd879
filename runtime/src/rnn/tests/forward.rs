//! The forward loop against TF's `dynamic_rnn` ([`super::reference`]), in
//! f64 and f32, with lengths (0, T and between) and initial states, and
//! without either.

use specc_testkit::tol::{assert_all_close_f64, scale, Tol};

use super::super::{Activation, CellKind};
use super::{each_cell, one_call, reference, Case, Spec, LSTM, LSTM_ALL};
use crate::sgemm::Isa;

const BATCH: usize = 7;
const STEPS: usize = 6;

fn check(spec: Spec) {
    for (seed, given) in [(11, true), (12, false)] {
        let case = Case::new(spec, BATCH, STEPS, seed, given);
        let want = reference::tape(&case);
        let s = scale(&want);
        let rows = one_call(BATCH);

        let got = case
            .operands::<f64>()
            .forward(&case.cell, Isa::active(), &rows);
        // Only the association of the sums differs from TF's.
        let tol = Tol::scaled(1e-12, 1e-13, s);
        assert_all_close_f64(
            &format!("f64 tape (lengths and h0: {given})"),
            &got,
            &want,
            tol,
        );

        let got = case
            .operands::<f32>()
            .forward(&case.cell, Isa::active(), &rows);
        let got: Vec<f64> = got.into_iter().map(f64::from).collect();
        // f32 rounding over a few steps.
        let tol = Tol::scaled(2e-5, 2e-6, s);
        assert_all_close_f64(
            &format!("f32 tape (lengths and h0: {given})"),
            &got,
            &want,
            tol,
        );
    }
}

each_cell!(check);

/// No steps: the tape is the initial state.
#[test]
fn no_steps() {
    let case = Case::new(LSTM_ALL, 3, 0, 5, true);
    let got = case
        .operands::<f64>()
        .forward(&case.cell, Isa::active(), &one_call(3));
    assert_eq!(got, reference::tape(&case));
    assert!(got.iter().any(|&v| v != 0.0));
}
