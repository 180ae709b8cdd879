//! The backward loop (f64) against central finite differences of
//! `L = Σ w1·outputs + Σ w2·final states` (outputs zero past each row's
//! length, as the compiler makes them; the final state the tape's last
//! slot's): `dz` through `xproj`, `dh0`, `dc0`, and through the weight
//! gradients the compiler computes ([`super::weight_grads`]) `W_h`, the
//! peepholes and `W_proj` (so `dproj`).

use specc_testkit::tol::{assert_all_close_f64, scale, Tol};

use super::super::{Activation, Cell, CellKind};
use super::{
    each_cell, one_call, public_grad, uniform, weight_grads, Case, Operands, Spec, LSTM, LSTM_ALL,
};
use crate::prng::SplitMix64;
use crate::sgemm::Isa;

const BATCH: usize = 6;
const STEPS: usize = 5;

/// The loss's weights: `w1` `[B, T, P]`, `w2` `[B, S]` (`h`, then `c`).
struct Loss {
    w1: Vec<f64>,
    w2: Vec<f64>,
}

impl Loss {
    fn new(cell: &Cell, batch: usize, steps: usize) -> Loss {
        let mut rng = SplitMix64::new(99);
        Loss {
            w1: uniform(&mut rng, batch * steps * cell.output_size(), 1.0),
            w2: uniform(&mut rng, batch * cell.state_width(), 1.0),
        }
    }

    /// `L` of a tape.
    fn value(&self, case: &Case, tape: &[f64]) -> f64 {
        let (w, p, st) = (case.cell.tape().width, case.cell.output_size(), case.steps);
        let s = case.cell.state_width();
        let mut l = 0.0;
        for b in 0..case.batch {
            let slot = |i: usize| &tape[(b * (st + 1) + i) * w..];
            for t in 0..case.len(b) {
                l += (0..p)
                    .map(|k| self.w1[(b * st + t) * p + k] * slot(t + 1)[k])
                    .sum::<f64>();
            }
            // The state fields lead the slot (h, then c).
            l += (0..s)
                .map(|k| self.w2[b * s + k] * slot(st)[k])
                .sum::<f64>();
        }
        l
    }

    /// `dL/d(state)` of every slot, `[B, T + 1, S]`.
    fn dstate(&self, case: &Case) -> Vec<f64> {
        let (p, st, s) = (case.cell.output_size(), case.steps, case.cell.state_width());
        let mut d = vec![0.0; case.batch * (st + 1) * s];
        for b in 0..case.batch {
            for t in 0..case.len(b) {
                let at = (b * (st + 1) + t + 1) * s;
                d[at..at + p].copy_from_slice(&self.w1[(b * st + t) * p..][..p]);
            }
            let at = (b * (st + 1) + st) * s;
            for k in 0..s {
                d[at + k] += self.w2[b * s + k];
            }
        }
        d
    }
}

/// Central differences of `L` with respect to every element of the
/// operand `pick` selects.
fn finite_differences(
    case: &Case,
    loss: &Loss,
    ops: &mut Operands<f64>,
    pick: fn(&mut Operands<f64>) -> &mut Vec<f64>,
) -> Vec<f64> {
    let eps = 1e-6;
    let n = pick(ops).len();
    (0..n)
        .map(|i| {
            let v = pick(ops)[i];
            let mut at = |x: f64| {
                pick(ops)[i] = x;
                let tape = ops.forward(&case.cell, Isa::active(), &one_call(case.batch));
                loss.value(case, &tape)
            };
            let d = (at(v + eps) - at(v - eps)) / (2.0 * eps);
            pick(ops)[i] = v;
            d
        })
        .collect()
}

fn assert_gradient(what: &str, got: &[f64], want: &[f64]) {
    // Central differences: O(eps²) truncation, O(1e-16 |L| / eps) rounding.
    let tol = Tol::scaled(1e-6, 1e-7, scale(want).max(1e-3));
    assert_all_close_f64(what, got, want, tol);
}

fn check(spec: Spec) {
    for (seed, given) in [(21, true), (22, false)] {
        let case = Case::new(spec, BATCH, STEPS, seed, given);
        check_case(&case, &format!("lengths and h0: {given}"));
    }
}

fn check_case(case: &Case, what: &str) {
    let cell = case.cell;
    let (batch, steps) = (case.batch, case.steps);
    let loss = Loss::new(&cell, batch, steps);
    let mut ops = case.operands::<f64>();
    let rows = one_call(batch);
    let mut tape = ops.forward(&cell, Isa::active(), &rows);
    let grad = ops.backward(&cell, Isa::active(), &mut tape, &loss.dstate(case), &rows);
    let weights = weight_grads(&cell, (batch, steps), &tape, &grad);

    let fd = |ops: &mut Operands<f64>, pick: fn(&mut Operands<f64>) -> &mut Vec<f64>| {
        finite_differences(case, &loss, ops, pick)
    };
    let dz = fd(&mut ops, |o| &mut o.xproj);
    assert_gradient(&format!("dz = dxproj ({what})"), &weights.xproj, &dz);
    let dwh = fd(&mut ops, |o| &mut o.wh);
    assert_gradient(&format!("dW_h ({what})"), &weights.wh, &dwh);
    if cell.use_peepholes {
        let d = fd(&mut ops, |o| &mut o.peepholes);
        assert_gradient(&format!("peepholes ({what})"), &weights.peepholes, &d);
    }
    if cell.num_proj.is_some() {
        let d = fd(&mut ops, |o| &mut o.proj);
        assert_gradient(&format!("dW_proj ({what})"), &weights.proj, &d);
    }

    // dh0, dc0: slot 0 of the gradient tape.
    let (gl, p, h) = (cell.grad_tape(), cell.output_size(), cell.units as usize);
    if ops.h0.is_none() {
        // A null initial state is zeros (its differences would sit on
        // relu's kink: c = f · 0 when j = 0).
        let mut zeros = case.operands::<f64>();
        zeros.h0 = Some(vec![0.0; batch * p]);
        zeros.c0 = gl.dc0.map(|_| vec![0.0; batch * h]);
        let mut tape0 = zeros.forward(&cell, Isa::active(), &rows);
        assert!(
            tape0 == tape,
            "forward: a null initial state is zeros ({what})"
        );
        let grad0 = zeros.backward(&cell, Isa::active(), &mut tape0, &loss.dstate(case), &rows);
        // Everything but `dh0`, which a null `h0` does not compute.
        let without_dh0 = |g: &[f64]| {
            let mut v = public_grad(&cell, g);
            for slot in v.chunks_mut(gl.private).step_by(steps + 1) {
                slot[gl.dh0..gl.dh0 + p].fill(0.0);
            }
            v
        };
        let same = without_dh0(&grad0) == without_dh0(&grad);
        assert!(same, "backward: a null initial state is zeros ({what})");
        return;
    }
    let slot0 = |b: usize| &grad[b * (steps + 1) * gl.width..];
    let dh0: Vec<f64> = (0..batch)
        .flat_map(|b| slot0(b)[gl.dh0..gl.dh0 + p].to_vec())
        .collect();
    let want = fd(&mut ops, |o| o.h0.as_mut().expect("h0"));
    assert_gradient(&format!("dh0 ({what})"), &dh0, &want);
    if let Some(dc0_at) = gl.dc0 {
        let dc0: Vec<f64> = (0..batch)
            .flat_map(|b| slot0(b)[dc0_at..dc0_at + h].to_vec())
            .collect();
        let want = fd(&mut ops, |o| o.c0.as_mut().expect("c0"));
        assert_gradient(&format!("dc0 ({what})"), &dc0, &want);
    }
}

each_cell!(check);

/// No steps: the final state is the initial one, `dh0`, `dc0` are `w2`.
#[test]
fn no_steps() {
    let case = Case::new(LSTM_ALL, 3, 0, 5, true);
    check_case(&case, "T = 0");
}

/// Every row of length 0: nothing runs, the gradient passes straight.
#[test]
fn all_rows_empty() {
    let mut case = Case::new(LSTM_ALL, 4, 3, 6, true);
    case.lengths = Some(vec![0; 4]);
    check_case(&case, "lengths 0");
}
