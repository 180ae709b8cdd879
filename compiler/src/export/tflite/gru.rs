//! A GRU (`gru_cell` in `dynamic_rnn`) to TF Lite builtins, unrolled over
//! its T steps: TF Lite has no GRU operator, so each step is TF's
//! `GRUCell` written out.
//!
//! One step, with `X = xproj [B, T, 3H]` (the IR's `x @ kernel[0:D] +
//! bias`, lowered as FULLY_CONNECTED) and the constant `W_h [H, 3H]` split
//! into the gates' `[H, 2H]` and the candidate's `[H, H]`:
//!
//! ```text
//! g  = LOGISTIC(X[:, t, 0:2H] + FULLY_CONNECTED(h, W_gates))   r = g[:, :H], u = g[:, H:]
//! c  = act(X[:, t, 2H:] + FULLY_CONNECTED(r * h, W_candidate))
//! h' = u * h + (1 - u) * c            with lengths: SELECT_V2(t < len, h', h)
//! ```
//!
//! Each step is SLICE, RESHAPE, FULLY_CONNECTED, ADD, LOGISTIC, MUL, SUB
//! and the activation (TANH, RELU, LOGISTIC or none): about 20 operators a
//! step, so the model grows with T (the fused LSTM and RNN do not). The
//! state of every slot is kept (`Lower::states`): a slice of the tape's
//! `h` is those states, stacked. An initial state is the `h0` input;
//! without one, zeros. Both weight matrices are one constant each, read by
//! every step's FULLY_CONNECTED (dynamic-range quantization quantizes a
//! shared weight once).

use specc_runtime::rnn::{Activation, Cell};
use specc_tflite::{schema::options_type, TensorType};
use specc_tflite::{ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions};

use super::lower::Lower;
use super::R;
use crate::ir::recurrence::{batch_and_steps, RnnInputs};
use crate::ir::{NodeId, Op};

impl Lower<'_> {
    /// The operators of the GRU recurrence `id`, step by step; its slots'
    /// states go to `self.states`.
    pub(super) fn emit_unrolled_gru(&mut self, id: NodeId) -> R<()> {
        let g = self.g;
        let Op::Recurrence { cell, operands } = *g.op(id) else {
            return Err(self.unsupported(id, "not a recurrence (an internal error)"));
        };
        let r = RnnInputs::from_slice(&cell, operands, g.inputs_of(id));
        let (_, steps) = batch_and_steps(g.shape(r.xproj)).map_err(|e| self.unsupported(id, &e))?;
        let h = cell.units as usize;
        let batch = self.e.batch.map_or(-1, |b| b as i32);
        let name = self.name(id);
        let xt = self.tensor(r.xproj)?;
        let wh = self.values_of(r.wh)?;
        // FULLY_CONNECTED's [units, depth]: rows of W_h's columns.
        let columns = |from: usize, n: usize| -> Vec<f32> {
            let mut t = Vec::with_capacity(n * h);
            for j in from..from + n {
                for i in 0..h {
                    t.push(wh[i * 3 * h + j]);
                }
            }
            t
        };
        let (hh, h2) = (h as i32, 2 * h as i32);
        let w_gates = self.m.constant_f32(
            &format!("{name}/gates_weights"),
            &[h2, hh],
            &columns(0, 2 * h),
        );
        let w_cand = self.m.constant_f32(
            &format!("{name}/candidate_weights"),
            &[hh, hh],
            &columns(2 * h, h),
        );
        let one = self.m.constant_f32(&format!("{name}/one"), &[], &[1.0]);
        let mut state = match r.h0 {
            Some(h0) => self.tensor(h0)?,
            None => {
                let rows = self.e.batch.unwrap_or(1) as usize;
                let zeros = vec![0.0f32; rows * h];
                let dims = [self.e.batch.map_or(1, |b| b as i32), hh];
                self.m.constant_f32(&format!("{name}/h0"), &dims, &zeros)
            }
        };
        let lengths = match r.lengths {
            Some(l) => {
                let lt = self.tensor(l)?;
                let shape = self
                    .m
                    .constant_i32(&format!("{name}/lengths_shape"), &[2], &[-1, 1]);
                let l2 =
                    self.m
                        .tensor(&format!("{name}/lengths"), TensorType::Float32, &[batch, 1]);
                self.m.operator(
                    B::Reshape,
                    &[lt, shape],
                    &[l2],
                    BuiltinOptions::Reshape {
                        new_shape: vec![-1, 1],
                    },
                );
                Some(l2)
            }
            None => None,
        };
        let mut states = vec![state];
        for t in 0..steps as i32 {
            let at = format!("{name}/step_{t}");
            let f = |m: &mut Self, what: &str, width: i32| {
                m.m.tensor(
                    &format!("{at}/{what}"),
                    TensorType::Float32,
                    &[batch, width],
                )
            };
            let xg = self.step_slice(xt, &format!("{at}/x_gates"), t, 0, h2, batch);
            let xc = self.step_slice(xt, &format!("{at}/x_candidate"), t, h2, hh, batch);
            let hg = f(self, "h_gates", h2);
            self.fully_connected_op(state, w_gates, hg);
            let gz = f(self, "gates_input", h2);
            self.binary_op(B::Add, xg, hg, gz);
            let gates = f(self, "gates", h2);
            self.m
                .operator(B::Logistic, &[gz], &[gates], BuiltinOptions::None);
            let reset = self.slice2(gates, &format!("{at}/r"), 0, hh, batch);
            let update = self.slice2(gates, &format!("{at}/u"), hh, hh, batch);
            let rh = f(self, "r_state", hh);
            self.binary_op(B::Mul, reset, state, rh);
            let hc = f(self, "h_candidate", hh);
            self.fully_connected_op(rh, w_cand, hc);
            let cz = f(self, "candidate_input", hh);
            self.binary_op(B::Add, xc, hc, cz);
            let c = match activation_op(&cell) {
                Some(op) => {
                    let c = f(self, "candidate", hh);
                    self.m.operator(op, &[cz], &[c], BuiltinOptions::None);
                    c
                }
                None => cz,
            };
            let uh = f(self, "u_state", hh);
            self.binary_op(B::Mul, update, state, uh);
            let keep = f(self, "one_minus_u", hh);
            self.binary_op(B::Sub, one, update, keep);
            let kc = f(self, "new_candidate", hh);
            self.binary_op(B::Mul, keep, c, kc);
            let mut next = f(self, "h", hh);
            self.binary_op(B::Add, uh, kc, next);
            if let Some(l2) = lengths {
                let tc = self.m.constant_f32(&format!("{at}/t"), &[], &[t as f32]);
                let running =
                    self.m
                        .tensor(&format!("{at}/running"), TensorType::Bool, &[batch, 1]);
                self.m
                    .operator(B::Less, &[tc, l2], &[running], BuiltinOptions::None);
                let kept = f(self, "h_kept", hh);
                self.m.operator(
                    B::SelectV2,
                    &[running, next, state],
                    &[kept],
                    BuiltinOptions::Empty(options_type::SELECT_V2),
                );
                next = kept;
            }
            state = next;
            states.push(state);
        }
        self.states.insert(id, states);
        Ok(())
    }

    /// The slice of a GRU's tape over slots `s0..s0 + n`: those states
    /// `[B, H]`, each as `[B, 1, H]`, concatenated along time.
    pub(super) fn stacked_states(&mut self, id: NodeId, rnn: NodeId, s0: usize, n: usize) -> R<()> {
        let states = self.states.get(&rnn).cloned().ok_or_else(|| {
            self.unsupported(id, "the recurrence is not unrolled (an internal error)")
        })?;
        let name = self.name(id);
        let dims = self.dims(self.g.shape(id));
        let width = dims[2];
        let mut parts = Vec::with_capacity(n);
        for (k, &s) in states.iter().enumerate().skip(s0).take(n) {
            let shape =
                self.m
                    .constant_i32(&format!("{name}/slot_{k}/shape"), &[3], &[-1, 1, width]);
            let y = self.m.tensor(
                &format!("{name}/slot_{k}"),
                TensorType::Float32,
                &[dims[0], 1, width],
            );
            self.m.operator(
                B::Reshape,
                &[s, shape],
                &[y],
                BuiltinOptions::Reshape {
                    new_shape: vec![-1, 1, width],
                },
            );
            parts.push(y);
        }
        if parts.len() != n {
            return Err(self.unsupported(
                id,
                "a slice past the recurrence's steps (an internal error)",
            ));
        }
        if let [one] = parts[..] {
            self.tensors.insert(id, one);
            return Ok(());
        }
        let out = self.out(id);
        self.m.operator(
            B::Concatenation,
            &parts,
            &[out],
            BuiltinOptions::Concatenation {
                axis: 1,
                fused_activation_function: Act::None,
            },
        );
        Ok(())
    }

    /// `X[:, t, from..from + width]` of a `[B, T, G]` tensor, as `[B, width]`.
    fn step_slice(&mut self, x: i32, name: &str, t: i32, from: i32, width: i32, batch: i32) -> i32 {
        let begin = self
            .m
            .constant_i32(&format!("{name}/begin"), &[3], &[0, t, from]);
        let size = self
            .m
            .constant_i32(&format!("{name}/size"), &[3], &[-1, 1, width]);
        let sliced = self.m.tensor(
            &format!("{name}/slice"),
            TensorType::Float32,
            &[batch, 1, width],
        );
        self.m.operator(
            B::Slice,
            &[x, begin, size],
            &[sliced],
            BuiltinOptions::Empty(options_type::SLICE),
        );
        let shape = self
            .m
            .constant_i32(&format!("{name}/shape"), &[2], &[-1, width]);
        let y = self.m.tensor(name, TensorType::Float32, &[batch, width]);
        self.m.operator(
            B::Reshape,
            &[sliced, shape],
            &[y],
            BuiltinOptions::Reshape {
                new_shape: vec![-1, width],
            },
        );
        y
    }

    /// Columns `from..from + width` of a `[B, W]` tensor.
    fn slice2(&mut self, x: i32, name: &str, from: i32, width: i32, batch: i32) -> i32 {
        let begin = self
            .m
            .constant_i32(&format!("{name}/begin"), &[2], &[0, from]);
        let size = self
            .m
            .constant_i32(&format!("{name}/size"), &[2], &[-1, width]);
        let y = self.m.tensor(name, TensorType::Float32, &[batch, width]);
        self.m.operator(
            B::Slice,
            &[x, begin, size],
            &[y],
            BuiltinOptions::Empty(options_type::SLICE),
        );
        y
    }

    fn fully_connected_op(&mut self, x: i32, w: i32, y: i32) {
        self.m.operator(
            B::FullyConnected,
            &[x, w, -1],
            &[y],
            BuiltinOptions::FullyConnected {
                fused_activation_function: Act::None,
                keep_num_dims: false,
                asymmetric_quantize_inputs: false,
            },
        );
    }

    fn binary_op(&mut self, op: B, a: i32, b: i32, y: i32) {
        let fused_activation_function = Act::None;
        let options = match op {
            B::Add => BuiltinOptions::Add {
                fused_activation_function,
            },
            B::Sub => BuiltinOptions::Sub {
                fused_activation_function,
            },
            _ => BuiltinOptions::Mul {
                fused_activation_function,
            },
        };
        self.m.operator(op, &[a, b], &[y], options);
    }
}

/// The operator of the GRU's candidate activation (`None`: linear).
fn activation_op(cell: &Cell) -> Option<B> {
    match cell.activation {
        Activation::Tanh => Some(B::Tanh),
        Activation::Relu => Some(B::Relu),
        Activation::Sigmoid => Some(B::Logistic),
        Activation::Linear => None,
    }
}
