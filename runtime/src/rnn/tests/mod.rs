//! Tests of the time loops: the forward against TF's `dynamic_rnn` written
//! naively ([`reference`]), the backward against central finite
//! differences through the weight-gradient formulas the compiler uses
//! ([`weight_grads`], the contract between the tapes and the compiler),
//! the f32 bits against the row split and the ISA, and the f32 math.

mod backward;
mod bits;
mod forward;
mod reference;

use std::ops::Range;

use super::backward::backward_with;
use super::forward::forward_with;
use super::{Activation, Backward, Cell, CellKind, Forward, Real};
use crate::prng::SplitMix64;
use crate::sgemm::Isa;

/// A cell's settings, as a test names them.
#[derive(Clone, Copy)]
pub(super) struct Spec {
    pub kind: CellKind,
    pub units: u32,
    pub num_proj: Option<u32>,
    pub peepholes: bool,
    pub forget_bias: f32,
    pub cell_clip: Option<f32>,
    pub proj_clip: Option<f32>,
    pub act: Activation,
}

impl Spec {
    pub const fn new(kind: CellKind, act: Activation) -> Spec {
        Spec {
            kind,
            units: 5,
            num_proj: None,
            peepholes: false,
            forget_bias: 1.0,
            cell_clip: None,
            proj_clip: None,
            act,
        }
    }

    pub fn cell(&self) -> Cell {
        Cell {
            kind: self.kind,
            units: self.units,
            num_proj: self.num_proj,
            use_peepholes: self.peepholes,
            forget_bias: self.forget_bias.to_bits(),
            cell_clip: self.cell_clip.map(f32::to_bits),
            proj_clip: self.proj_clip.map(f32::to_bits),
            activation: self.act,
        }
    }
}

/// A recurrent layer's inputs and weights as TF holds them (f64 values
/// that are f32s, so an f32 run sees the same numbers).
pub(super) struct Case {
    pub cell: Cell,
    pub batch: usize,
    pub steps: usize,
    /// `D`.
    pub input: usize,
    /// `[B, T, D]`.
    pub x: Vec<f64>,
    /// `[D + P, G]`: TF's kernel over `concat([x, h])` (GRU: the gates'
    /// kernel's `2H` columns, then the candidate's `H`).
    pub kernel: Vec<f64>,
    /// `[G]`.
    pub bias: Vec<f64>,
    /// `[3, H]` or empty.
    pub peepholes: Vec<f64>,
    /// `[H, P]` or empty.
    pub proj: Vec<f64>,
    pub lengths: Option<Vec<usize>>,
    pub h0: Option<Vec<f64>>,
    pub c0: Option<Vec<f64>>,
}

/// Uniform in `[-s, s)`, rounded to f32.
pub(super) fn uniform(rng: &mut SplitMix64, n: usize, s: f64) -> Vec<f64> {
    (0..n)
        .map(|_| f64::from(((rng.uniform01_f64() * 2.0 - 1.0) * s) as f32))
        .collect()
}

impl Case {
    /// Random values; with `given`, lengths (0, T and between, cycling
    /// over the rows) and initial states, else none.
    pub fn new(spec: Spec, batch: usize, steps: usize, seed: u64, given: bool) -> Case {
        let cell = spec.cell();
        let mut rng = SplitMix64::new(seed);
        let (h, p, g, d) = (
            cell.units as usize,
            cell.output_size(),
            cell.gate_width(),
            3,
        );
        let lstm = cell.kind == CellKind::Lstm;
        let pattern = [steps, 0, steps / 2, 1, steps.saturating_sub(1), steps];
        Case {
            cell,
            batch,
            steps,
            input: d,
            x: uniform(&mut rng, batch * steps * d, 1.0),
            kernel: uniform(&mut rng, (d + p) * g, 0.7),
            bias: uniform(&mut rng, g, 0.5),
            peepholes: if spec.peepholes {
                uniform(&mut rng, 3 * h, 0.8)
            } else {
                vec![]
            },
            proj: if cell.num_proj.is_some() {
                uniform(&mut rng, h * p, 0.8)
            } else {
                vec![]
            },
            lengths: given.then(|| (0..batch).map(|b| pattern[b % pattern.len()]).collect()),
            h0: given.then(|| uniform(&mut rng, batch * p, 0.9)),
            c0: (given && lstm).then(|| uniform(&mut rng, batch * h, 1.5)),
        }
    }

    /// Row `b`'s length.
    pub fn len(&self, b: usize) -> usize {
        self.lengths.as_ref().map_or(self.steps, |l| l[b])
    }

    /// The loops' operands: `xproj = x @ kernel[:D] + bias` (in f64) and
    /// `W_h = kernel[D:]`.
    pub fn operands<R: Real>(&self) -> Operands<R> {
        let (g, d) = (self.cell.gate_width(), self.input);
        let mut xproj = Vec::with_capacity(self.batch * self.steps * g);
        for bt in 0..self.batch * self.steps {
            for k in 0..g {
                let mut acc = self.bias[k];
                for i in 0..d {
                    acc += self.x[bt * d + i] * self.kernel[i * g + k];
                }
                xproj.push(acc);
            }
        }
        let cast = |v: &[f64]| v.iter().map(|&v| R::from_f64(v)).collect::<Vec<R>>();
        Operands {
            batch: self.batch,
            steps: self.steps,
            xproj: cast(&xproj),
            wh: cast(&self.kernel[d * g..]),
            peepholes: cast(&self.peepholes),
            proj: cast(&self.proj),
            lengths: self
                .lengths
                .as_ref()
                .map(|l| l.iter().map(|&v| R::from_f64(v as f64)).collect()),
            h0: self.h0.as_deref().map(cast),
            c0: self.c0.as_deref().map(cast),
        }
    }
}

/// A forward's and backward's buffers.
pub(super) struct Operands<R> {
    pub batch: usize,
    pub steps: usize,
    pub xproj: Vec<R>,
    pub wh: Vec<R>,
    pub peepholes: Vec<R>,
    pub proj: Vec<R>,
    pub lengths: Option<Vec<R>>,
    pub h0: Option<Vec<R>>,
    pub c0: Option<Vec<R>>,
}

fn ptr<R>(v: &[R]) -> *const R {
    if v.is_empty() {
        std::ptr::null()
    } else {
        v.as_ptr()
    }
}

impl<R: Real> Operands<R> {
    fn args(&self, tape: *mut R) -> Forward<R> {
        Forward {
            steps: self.steps,
            xproj: self.xproj.as_ptr(),
            wh: self.wh.as_ptr(),
            peepholes: ptr(&self.peepholes),
            proj: ptr(&self.proj),
            lengths: self.lengths.as_deref().map_or(std::ptr::null(), ptr),
            h0: self.h0.as_deref().map_or(std::ptr::null(), ptr),
            c0: self.c0.as_deref().map_or(std::ptr::null(), ptr),
            tape,
        }
    }

    /// The tape (NaN before), computed by one call per range of rows.
    pub fn forward(&self, cell: &Cell, isa: Isa, calls: &[Range<usize>]) -> Vec<R> {
        let w = cell.tape().width;
        let nan = R::from_f64(f64::NAN);
        let mut tape = vec![nan; self.batch * (self.steps + 1) * w];
        let a = self.args(tape.as_mut_ptr());
        for rows in calls {
            // SAFETY: every buffer has the shape the cell and sizes give.
            unsafe { forward_with(isa, cell, &a, rows.clone()) };
        }
        tape
    }

    /// The gradient tape (NaN before) of `tape` and `dstate`, computed by
    /// one call per range of rows.
    pub fn backward(
        &self,
        cell: &Cell,
        isa: Isa,
        tape: &mut [R],
        dstate: &[R],
        calls: &[Range<usize>],
    ) -> Vec<R> {
        let wg = cell.grad_tape().width;
        let nan = R::from_f64(f64::NAN);
        let mut grad = vec![nan; self.batch * (self.steps + 1) * wg];
        let a = Backward {
            forward: self.args(tape.as_mut_ptr()),
            dstate: dstate.as_ptr(),
            grad: grad.as_mut_ptr(),
        };
        for rows in calls {
            // SAFETY: as in `forward`; `dstate` is `[B, T + 1, S]`.
            unsafe { backward_with(isa, cell, &a, rows.clone()) };
        }
        grad
    }
}

/// The gradients of the weights, from the two tapes, as the compiler
/// computes them after the backward loop (in f64):
/// - `dW_h = Σ_{b,t} h_{t-1}ᵀ dz_t` (GRU: `[Σ h_{t-1}ᵀ dz_{ru} | Σ
///   (r·h_{t-1})ᵀ dz_cand]`), `[P, G]`;
/// - `dw_i = Σ dz_i·c_{t-1}`, `dw_f = Σ dz_f·c_{t-1}`, `dw_o = Σ dz_o·c_t`,
///   `[3, H]`;
/// - `dW_proj = Σ mᵀ dproj`, `[H, P]`;
/// - `dxproj = dz`, `[B, T, G]`.
pub(super) struct WeightGrads {
    pub wh: Vec<f64>,
    pub peepholes: Vec<f64>,
    pub proj: Vec<f64>,
    pub xproj: Vec<f64>,
}

pub(super) fn weight_grads(
    cell: &Cell,
    (batch, steps): (usize, usize),
    tape: &[f64],
    grad: &[f64],
) -> WeightGrads {
    let (lay, gl) = (cell.tape(), cell.grad_tape());
    let (h, p, g) = (cell.units as usize, cell.output_size(), cell.gate_width());
    let slot = |b: usize, s: usize| &tape[(b * (steps + 1) + s) * lay.width..][..lay.width];
    let gslot = |b: usize, s: usize| &grad[(b * (steps + 1) + s) * gl.width..][..gl.width];
    let mut out = WeightGrads {
        wh: vec![0.0; p * g],
        peepholes: vec![0.0; if cell.use_peepholes { 3 * h } else { 0 }],
        proj: vec![0.0; if lay.m.is_some() { h * p } else { 0 }],
        xproj: Vec::with_capacity(batch * steps * g),
    };
    for b in 0..batch {
        for t in 0..steps {
            let (prev, cur, gcur) = (slot(b, t), slot(b, t + 1), gslot(b, t + 1));
            let dz = &gcur[gl.dz..gl.dz + g];
            out.xproj.extend_from_slice(dz);
            for i in 0..p {
                for (k, &dz) in dz.iter().enumerate() {
                    let operand = match lay.rh {
                        Some(rh) if k >= 2 * h => cur[rh + i],
                        _ => prev[lay.h + i],
                    };
                    out.wh[i * g + k] += operand * dz;
                }
            }
            if cell.use_peepholes {
                let c = lay.c.expect("LSTM");
                for k in 0..h {
                    out.peepholes[k] += dz[k] * prev[c + k];
                    out.peepholes[h + k] += dz[2 * h + k] * prev[c + k];
                    out.peepholes[2 * h + k] += dz[3 * h + k] * cur[c + k];
                }
            }
            if let (Some(m), Some(dproj)) = (lay.m, gl.dproj) {
                for a in 0..h {
                    for q in 0..p {
                        out.proj[a * p + q] += cur[m + a] * gcur[dproj + q];
                    }
                }
            }
        }
    }
    out
}

/// Every row in one call.
pub(super) fn one_call(batch: usize) -> Vec<Range<usize>> {
    std::iter::once(0..batch).collect()
}

/// Every row in one call, and split at each `k` in two calls.
pub(super) fn splits(batch: usize) -> Vec<Vec<Range<usize>>> {
    let mut v = vec![one_call(batch)];
    v.extend((1..batch).map(|k| vec![0..k, k..batch]));
    v
}

/// The fields of a gradient tape that mean something (all but the private
/// scratch), as (index, value) for comparing runs.
pub(super) fn public_grad<R: Copy>(cell: &Cell, grad: &[R]) -> Vec<R> {
    let gl = cell.grad_tape();
    grad.chunks(gl.width)
        .flat_map(|s| s[..gl.private].to_vec())
        .collect()
}

/// The plain LSTM (`tanh`, `forget_bias` 1).
pub(super) const LSTM: Spec = Spec::new(CellKind::Lstm, Activation::Tanh);

/// Every option of the LSTM at once.
pub(super) const LSTM_ALL: Spec = Spec {
    peepholes: true,
    forget_bias: 0.5,
    cell_clip: Some(0.6),
    num_proj: Some(4),
    proj_clip: Some(0.3),
    ..LSTM
};

/// One `#[test]` per cell and option, each running `$check(spec)`.
macro_rules! each_cell {
    ($check:ident) => {
        each_cell!(@ $check,
            basic_tanh: Spec::new(CellKind::Basic, Activation::Tanh),
            basic_relu: Spec::new(CellKind::Basic, Activation::Relu),
            basic_sigmoid: Spec::new(CellKind::Basic, Activation::Sigmoid),
            basic_linear: Spec::new(CellKind::Basic, Activation::Linear),
            lstm_tanh: LSTM,
            lstm_relu: Spec::new(CellKind::Lstm, Activation::Relu),
            lstm_sigmoid: Spec::new(CellKind::Lstm, Activation::Sigmoid),
            lstm_linear: Spec::new(CellKind::Lstm, Activation::Linear),
            lstm_peepholes: Spec { peepholes: true, ..LSTM },
            lstm_forget_bias: Spec { forget_bias: 0.25, ..LSTM },
            lstm_cell_clip: Spec { cell_clip: Some(0.6), ..LSTM },
            lstm_peepholes_cell_clip: Spec { peepholes: true, cell_clip: Some(0.5), ..LSTM },
            lstm_num_proj: Spec { num_proj: Some(3), ..LSTM },
            lstm_num_proj_clip: Spec { num_proj: Some(3), proj_clip: Some(0.3), ..LSTM },
            lstm_num_proj_wider_than_gates: Spec { num_proj: Some(23), peepholes: true, ..LSTM },
            lstm_everything: LSTM_ALL,
            lstm_everything_relu: Spec { act: Activation::Relu, ..LSTM_ALL },
            gru_tanh: Spec::new(CellKind::Gru, Activation::Tanh),
            gru_relu: Spec::new(CellKind::Gru, Activation::Relu),
            gru_sigmoid: Spec::new(CellKind::Gru, Activation::Sigmoid),
            gru_linear: Spec::new(CellKind::Gru, Activation::Linear),
        );
    };
    (@ $check:ident, $($name:ident: $spec:expr,)*) => {
        $(
            #[test]
            fn $name() {
                $check($spec)
            }
        )*
    };
}
pub(super) use each_cell;
