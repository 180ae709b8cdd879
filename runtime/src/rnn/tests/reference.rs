//! TF's `dynamic_rnn`, written naively and independently of the loops, in
//! f64: per row and step, `concat([x_t, h]) @ kernel + bias` and the cells'
//! formulas (`LSTMCell`, `GRUCell`, `BasicRNNCell`), the state copied
//! through past a row's length. It fills a tape in [`Cell::tape`]'s layout.

use super::super::{Activation, CellKind};
use super::Case;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn act(a: Activation, x: f64) -> f64 {
    match a {
        Activation::Tanh => x.tanh(),
        Activation::Relu => x.max(0.0),
        Activation::Sigmoid => sigmoid(x),
        Activation::Linear => x,
    }
}

fn clip(x: f64, c: Option<f32>) -> f64 {
    match c {
        Some(c) => x.min(f64::from(c)).max(-f64::from(c)),
        None => x,
    }
}

/// `v @ m[:, cols]` for a row-major `m` with `width` columns.
fn matvec(v: &[f64], m: &[f64], width: usize, cols: std::ops::Range<usize>) -> Vec<f64> {
    cols.map(|k| {
        v.iter()
            .enumerate()
            .map(|(i, &vi)| vi * m[i * width + k])
            .sum()
    })
    .collect()
}

/// The expected tape of `case`.
pub(super) fn tape(case: &Case) -> Vec<f64> {
    let cell = &case.cell;
    let lay = cell.tape();
    let (h, p, g, d) = (
        cell.units as usize,
        cell.output_size(),
        cell.gate_width(),
        case.input,
    );
    let (steps, a) = (case.steps, cell.activation);
    let mut tape = vec![0.0; case.batch * (steps + 1) * lay.width];
    for b in 0..case.batch {
        let mut state_h = case
            .h0
            .as_ref()
            .map_or(vec![0.0; p], |v| v[b * p..][..p].to_vec());
        let mut state_c = case
            .c0
            .as_ref()
            .map_or(vec![0.0; h], |v| v[b * h..][..h].to_vec());
        for s in 0..=steps {
            let slot = &mut tape[(b * (steps + 1) + s) * lay.width..][..lay.width];
            if s > 0 && s <= case.len(b) {
                let t = s - 1;
                let mut xh = case.x[(b * steps + t) * d..][..d].to_vec();
                xh.extend_from_slice(&state_h);
                let add_bias = |v: Vec<f64>, from: usize| -> Vec<f64> {
                    v.iter()
                        .enumerate()
                        .map(|(k, z)| z + case.bias[from + k])
                        .collect()
                };
                match cell.kind {
                    CellKind::Basic => {
                        let z = add_bias(matvec(&xh, &case.kernel, g, 0..g), 0);
                        state_h = z.iter().map(|&z| act(a, z)).collect();
                    }
                    CellKind::Lstm => {
                        let z = add_bias(matvec(&xh, &case.kernel, g, 0..g), 0);
                        let fb = f64::from(f32::from_bits(cell.forget_bias));
                        let peep = |row: usize, k: usize| {
                            if cell.use_peepholes {
                                case.peepholes[row * h + k]
                            } else {
                                0.0
                            }
                        };
                        let gates = lay.gates.expect("LSTM gates");
                        let mut m = vec![0.0; h];
                        for k in 0..h {
                            let c_prev = state_c[k];
                            let i = sigmoid(z[k] + peep(0, k) * c_prev);
                            let j = act(a, z[h + k]);
                            let f = sigmoid(z[2 * h + k] + fb + peep(1, k) * c_prev);
                            let c = clip(f * c_prev + i * j, cell.cell_clip.map(f32::from_bits));
                            let o = sigmoid(z[3 * h + k] + peep(2, k) * c);
                            m[k] = o * act(a, c);
                            state_c[k] = c;
                            for (n, v) in [i, j, f, o].into_iter().enumerate() {
                                slot[gates + n * h + k] = v;
                            }
                        }
                        state_h = match lay.m {
                            Some(at) => {
                                slot[at..at + h].copy_from_slice(&m);
                                let pc = cell.proj_clip.map(f32::from_bits);
                                let hp = matvec(&m, &case.proj, p, 0..p);
                                hp.into_iter().map(|v| clip(v, pc)).collect()
                            }
                            None => m,
                        };
                    }
                    CellKind::Gru => {
                        let zr = add_bias(matvec(&xh, &case.kernel, g, 0..2 * h), 0);
                        let ru: Vec<f64> = zr.into_iter().map(sigmoid).collect();
                        let rh: Vec<f64> = (0..h).map(|k| ru[k] * state_h[k]).collect();
                        let mut xr = case.x[(b * steps + t) * d..][..d].to_vec();
                        xr.extend_from_slice(&rh);
                        let zc = add_bias(matvec(&xr, &case.kernel, g, 2 * h..3 * h), 2 * h);
                        let gates = lay.gates.expect("GRU gates");
                        let at_rh = lay.rh.expect("GRU rh");
                        for k in 0..h {
                            let cand = act(a, zc[k]);
                            let u = ru[h + k];
                            slot[gates + k] = ru[k];
                            slot[gates + h + k] = u;
                            slot[gates + 2 * h + k] = cand;
                            slot[at_rh + k] = rh[k];
                            state_h[k] = u * state_h[k] + (1.0 - u) * cand;
                        }
                    }
                }
            }
            slot[lay.h..lay.h + p].copy_from_slice(&state_h);
            if let Some(c) = lay.c {
                slot[c..c + h].copy_from_slice(&state_c);
            }
        }
    }
    tape
}
