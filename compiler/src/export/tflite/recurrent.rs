//! Recurrent layers (`dynamic_rnn`) to TF Lite's fused sequence operators:
//! an LSTM to UNIDIRECTIONAL_SEQUENCE_LSTM (the operator TF's
//! `TFLiteLSTMCell` targets), the basic cell to UNIDIRECTIONAL_SEQUENCE_RNN,
//! and the slices sema takes of the recurrence's tape (the outputs and the
//! final state) to slices of the operator's outputs.
//!
//! How the IR maps: `Op::Recurrence` reads `xproj = x @ kernel[0:D] + bias`
//! (matched back to `x` and the constants; any other `xproj` is fed as the
//! operator's input with identity selectors as its input weights), `W_h`,
//! the peepholes and the projection, all constants. TF's gates `i, j, f, o`
//! become TF Lite's input, cell, forget and output gates, each weight
//! matrix transposed to `[units, depth]`; `forget_bias` is added to the
//! forget gate's bias. The operator's result `Y [B, T, P]` stands for the
//! tape: a slice of the tape's `h` over slots `s..s+n` is `Y[:, s-1 ..]`;
//! with `sequence_length`, slot `s` of row `b` is `Y[b, min(s, len_b) - 1]`
//! (zero when that is -1): a one-hot `[B, n, T]` of those steps times `Y`
//! (BATCH_MATMUL, exact), which is TF's copy-through of the final state.
//!
//! A GRU has no TF Lite operator: `gru` unrolls it into builtins.
//!
//! Invariants: the state is two variable tensors of a fixed batch (TF
//! Lite's sequence kernels keep their state there, sized at allocation),
//! so an export with a recurrent layer needs `--batch`; what TF Lite's
//! operators cannot express (an LSTM's or basic cell's initial state, the
//! LSTM's cell state `c` as a value, a sigmoid activation) is a `tflite-unsupported`
//! diagnostic at the `dynamic_rnn` call.

use specc_grammar::{Code, Diagnostic};
use specc_runtime::rnn::{Activation, Cell, CellKind};
use specc_tflite::{schema::options_type, TensorType};
use specc_tflite::{ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::recurrence::{batch_and_steps, RnnInputs};
use crate::ir::{BinaryOp, Dim, NodeId, Op};

/// TF Lite's gate `k` (input, forget, cell, output) is TF's gate `TF_GATE[k]`
/// of `i, j, f, o`.
const TF_GATE: [usize; 4] = [0, 2, 1, 3];

impl Lower<'_> {
    /// The recurrence `id` as one fused operator, when TF Lite has one for
    /// it: `(Lowering::Sequence, nodes read)`.
    pub(super) fn sequence(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let Op::Recurrence { cell, operands } = g.op(id) else {
            return None;
        };
        if self.refusal(id).is_some() {
            return None;
        }
        let r = RnnInputs::from_slice(cell, *operands, g.inputs_of(id));
        if cell.kind == CellKind::Gru {
            let mut reads = vec![r.xproj, r.wh];
            reads.extend(r.lengths);
            reads.extend(r.h0);
            return Some((Lowering::UnrolledGru, reads));
        }
        let (x, wx, bias) = self.input_projection(r.xproj, cell);
        let mut reads = vec![x, r.wh];
        reads.extend([wx, bias, r.peepholes, r.proj].into_iter().flatten());
        Some((Lowering::Sequence { x, wx, bias }, reads))
    }

    /// Why the recurrence `id` has no TF Lite operator, if it has none.
    pub(super) fn refusal(&self, id: NodeId) -> Option<&'static str> {
        let g = self.g;
        let Op::Recurrence { cell, operands } = g.op(id) else {
            return None;
        };
        let r = RnnInputs::from_slice(cell, *operands, g.inputs_of(id));
        let constant = [Some(r.wh), r.peepholes, r.proj]
            .into_iter()
            .flatten()
            .all(|w| self.foldable[w.index()]);
        let gru = cell.kind == CellKind::Gru;
        Some(if !gru && (operands.h0 || operands.c0) {
            "TF Lite's sequence operators (LSTM, basic RNN) start from a zero state: an `initial_state` cannot be exported"
        } else if !gru && activation(cell).is_none() {
            "TF Lite's sequence operators take a tanh, relu or linear activation, not a sigmoid"
        } else if !constant {
            "the recurrent weights are not constants of the model"
        } else {
            return None;
        })
    }

    /// `(x, W_x, bias)` with `xproj = x @ W_x + bias` and constant `W_x`
    /// `[D, G]` and `bias [G]`, or `(xproj, None, None)`.
    fn input_projection(
        &self,
        xproj: NodeId,
        cell: &Cell,
    ) -> (NodeId, Option<NodeId>, Option<NodeId>) {
        let g = self.g;
        let none = (xproj, None, None);
        let Op::Binary(BinaryOp::Add) = g.op(xproj) else {
            return none;
        };
        let [a, b] = g.inputs_of(xproj)[..] else {
            return none;
        };
        let (mm, bias) = match (g.op(a), g.op(b)) {
            (Op::MatMul { .. }, _) => (a, self.strip_broadcast(b)),
            (_, Op::MatMul { .. }) => (b, self.strip_broadcast(a)),
            _ => return none,
        };
        let Op::MatMul {
            ta: false,
            tb: false,
        } = g.op(mm)
        else {
            return none;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return none;
        };
        let width = cell.gate_width() as u32;
        let ok = self.foldable[w.index()]
            && self.foldable[bias.index()]
            && !self.foldable[x.index()]
            && g.shape(x).rank() == 3
            && g.shape(w).rank() == 2
            && g.shape(w).0[1] == Dim::Fixed(width)
            && g.shape(bias).0 == [Dim::Fixed(width)];
        if ok {
            (x, Some(w), Some(bias))
        } else {
            none
        }
    }

    /// The refusal of a recurrence TF Lite cannot express, at its call.
    pub(super) fn refuse_recurrence(&self, id: NodeId) -> Diagnostic {
        let why = self
            .refusal(id)
            .unwrap_or("the recurrent layer's gradient is a training-time op");
        Diagnostic::new(
            Code::TfliteUnsupported,
            self.g.span(id).unwrap_or_default(),
            format!("this recurrent layer cannot be exported to TensorFlow Lite: {why}"),
        )
        .with_label("a recurrent layer")
        .with_help("LSTM and basic cells without an initial state export (UNIDIRECTIONAL_SEQUENCE_LSTM, UNIDIRECTIONAL_SEQUENCE_RNN), a GRU as builtins; `specc predict` runs any")
    }

    /// A constant's folded values as f32, row-major.
    pub(super) fn values_of(&self, id: NodeId) -> R<Vec<f32>> {
        self.folded
            .get(&id)
            .map(|t| t.data.iter().map(|&v| v as f32).collect())
            .ok_or_else(|| self.unsupported(id, "its value is not a constant (an internal error)"))
    }

    /// Emits the fused operator of recurrence `id`; its tensor is the
    /// outputs `Y [B, T, P]` (see the module docs).
    pub(super) fn emit_sequence(&mut self, id: NodeId, l: Lowering) -> R<()> {
        let Lowering::Sequence { x, wx, bias } = l else {
            return Err(self.unsupported(id, "not a sequence lowering (an internal error)"));
        };
        let g = self.g;
        let Op::Recurrence { cell, operands } = *g.op(id) else {
            return Err(self.unsupported(id, "not a recurrence (an internal error)"));
        };
        let Some(batch) = self.e.batch else {
            return Err(Diagnostic::new(
                Code::TfliteUnsupported,
                g.span(id).unwrap_or_default(),
                "a recurrent layer exports to TensorFlow Lite only with a fixed batch size",
            )
            .with_label("a recurrent layer")
            .with_help("give `--batch N`: TF Lite's sequence operators keep their state in variable tensors sized when the model is allocated"));
        };
        let r = RnnInputs::from_slice(&cell, operands, g.inputs_of(id));
        let (units, p, width) = (cell.units as usize, cell.output_size(), cell.gate_width());
        let (_, steps) = batch_and_steps(g.shape(r.xproj)).map_err(|e| self.unsupported(id, &e))?;
        let name = self.name(id);
        let xt = self.tensor(x)?;
        let depth = match g.shape(x).0.last() {
            Some(Dim::Fixed(d)) => *d as usize,
            _ => return Err(self.unsupported(id, "the input's last axis is not fixed")),
        };
        // W_x [D, G] (identity selectors when x is xproj itself) and W_h [P, G].
        let wx_values = match wx {
            Some(w) => self.values_of(w)?,
            None => {
                let mut eye = vec![0.0f32; width * width];
                (0..width).for_each(|i| eye[i * width + i] = 1.0);
                eye
            }
        };
        let wh_values = self.values_of(r.wh)?;
        let mut bias_values = match bias {
            Some(b) => self.values_of(b)?,
            None => vec![0.0; width],
        };
        let gates = if cell.kind == CellKind::Lstm { 4 } else { 1 };
        // Columns `[k·H, (k+1)·H)` of a `[rows, G]` matrix, as `[H, rows]`.
        let block = |m: &[f32], rows: usize, k: usize| -> Vec<f32> {
            let mut out = Vec::with_capacity(units * rows);
            for u in 0..units {
                for row in 0..rows {
                    out.push(m[row * width + k * units + u]);
                }
            }
            out
        };
        if cell.kind == CellKind::Lstm {
            let forget_bias = f32::from_bits(cell.forget_bias);
            bias_values[2 * units..3 * units]
                .iter_mut()
                .for_each(|b| *b += forget_bias);
        }
        let mut input_to = Vec::new();
        let mut recurrent_to = Vec::new();
        let mut biases = Vec::new();
        for k in 0..gates {
            let tf = if gates == 4 { TF_GATE[k] } else { 0 };
            let part = ["input", "forget", "cell", "output"][k];
            let wname = |what: &str| format!("{name}/{what}_to_{part}_weights");
            input_to.push(self.m.constant_f32(
                &wname("input"),
                &[units as i32, depth as i32],
                &block(&wx_values, depth, tf),
            ));
            recurrent_to.push(self.m.constant_f32(
                &wname("recurrent"),
                &[units as i32, p as i32],
                &block(&wh_values, p, tf),
            ));
            biases.push(self.m.constant_f32(
                &format!("{name}/{part}_gate_bias"),
                &[units as i32],
                &bias_values[tf * units..(tf + 1) * units],
            ));
        }
        let act = activation(&cell).unwrap_or(Act::Tanh);
        let y = self.m.tensor(
            &format!("{name}/outputs"),
            TensorType::Float32,
            &[batch as i32, steps as i32, p as i32],
        );
        let h_state = self.zero_state(&format!("{name}/output_state"), batch, p);
        if cell.kind == CellKind::Basic {
            self.m.operator(
                B::UnidirectionalSequenceRnn,
                &[xt, input_to[0], recurrent_to[0], biases[0], h_state],
                &[y],
                BuiltinOptions::SequenceRnn {
                    time_major: false,
                    fused_activation_function: act,
                    asymmetric_quantize_inputs: false,
                },
            );
            self.tensors.insert(id, y);
            return Ok(());
        }
        let peepholes = match r.peepholes {
            Some(pp) => {
                let v = self.values_of(pp)?;
                // Rows w_i_diag, w_f_diag, w_o_diag.
                ["input", "forget", "output"]
                    .iter()
                    .enumerate()
                    .map(|(k, part)| {
                        self.m.constant_f32(
                            &format!("{name}/cell_to_{part}_weights"),
                            &[units as i32],
                            &v[k * units..(k + 1) * units],
                        )
                    })
                    .collect()
            }
            None => vec![-1; 3],
        };
        let projection = match r.proj {
            Some(pw) => {
                // [H, P] to TF Lite's [P, H].
                let v = self.values_of(pw)?;
                let mut t = Vec::with_capacity(units * p);
                for j in 0..p {
                    for u in 0..units {
                        t.push(v[u * p + j]);
                    }
                }
                self.m.constant_f32(
                    &format!("{name}/projection_weights"),
                    &[p as i32, units as i32],
                    &t,
                )
            }
            None => -1,
        };
        let c_state = self.zero_state(&format!("{name}/cell_state"), batch, units);
        let mut inputs = vec![xt];
        inputs.extend(&input_to);
        inputs.extend(&recurrent_to);
        inputs.extend(&peepholes);
        inputs.extend(&biases);
        inputs.extend([projection, -1, h_state, c_state]);
        let clip = |c: Option<u32>| c.map_or(0.0, f32::from_bits);
        self.m.operator(
            B::UnidirectionalSequenceLstm,
            &inputs,
            &[y],
            BuiltinOptions::SequenceLstm {
                fused_activation_function: act,
                cell_clip: clip(cell.cell_clip),
                proj_clip: clip(cell.proj_clip),
                time_major: false,
                asymmetric_quantize_inputs: false,
            },
        );
        self.tensors.insert(id, y);
        Ok(())
    }

    /// A state variable `[batch, width]`, set to zero by an ADD of zero
    /// constants before the operator runs: TF Lite's sequence kernels
    /// leave their final state in it, which the next invocation would
    /// otherwise start from.
    fn zero_state(&mut self, name: &str, batch: u32, width: usize) -> i32 {
        let dims = [batch as i32, width as i32];
        let state = self.m.variable_tensor(name, TensorType::Float32, &dims);
        let zeros = vec![0.0f32; batch as usize * width];
        let z = self.m.constant_f32(&format!("{name}/zeros"), &dims, &zeros);
        let zero = self.m.constant_f32(&format!("{name}/zero"), &[], &[0.0]);
        self.m.operator(
            B::Add,
            &[z, zero],
            &[state],
            BuiltinOptions::Add {
                fused_activation_function: Act::None,
            },
        );
        state
    }

    /// A slice of a recurrence's tape: the `h` field over slots `s..s+n`
    /// (see the module docs); any other field is refused.
    pub(super) fn tape_slice(&mut self, id: NodeId, rnn: NodeId, begin: &[u32]) -> R<()> {
        let g = self.g;
        let Op::Recurrence { cell, operands } = *g.op(rnn) else {
            return Err(self.unsupported(id, "not a slice of a recurrence (an internal error)"));
        };
        let r = RnnInputs::from_slice(&cell, operands, g.inputs_of(rnn));
        let p = cell.output_size();
        let (_, steps) = batch_and_steps(g.shape(r.xproj)).map_err(|e| self.unsupported(id, &e))?;
        let shape = g.shape(id).clone();
        let (&[_, s0, f0], [_, Dim::Fixed(n), Dim::Fixed(w)]) = (begin, &shape.0[..]) else {
            return Err(self.unsupported(id, "not a slice of a tape (an internal error)"));
        };
        let (n, w) = (*n as usize, *w as usize);
        let layout = cell.tape();
        if f0 as usize != layout.h || w != p {
            let what = if Some(f0 as usize) == layout.c {
                "TF Lite's UNIDIRECTIONAL_SEQUENCE_LSTM returns the outputs, not the cell state `c`: export `h` or the outputs"
            } else {
                "it reads the recurrence's internal values"
            };
            return Err(Diagnostic::new(
                Code::TfliteUnsupported,
                g.span(id).or(g.span(rnn)).unwrap_or_default(),
                format!(
                    "this recurrent layer's value cannot be exported to TensorFlow Lite: {what}"
                ),
            ));
        }
        if s0 == 0 {
            return Err(self.unsupported(id, "the initial state is not a value of the model"));
        }
        if cell.kind == CellKind::Gru {
            return self.stacked_states(id, rnn, s0 as usize, n);
        }
        let yt = self.tensor(rnn)?;
        let name = self.name(id);
        let batch = self.e.batch.unwrap_or(1) as i32;
        let Some(lengths) = r.lengths else {
            if s0 == 1 && n == steps as usize {
                self.tensors.insert(id, yt);
                return Ok(());
            }
            let bt = self
                .m
                .constant_i32(&format!("{name}/begin"), &[3], &[0, s0 as i32 - 1, 0]);
            let st = self
                .m
                .constant_i32(&format!("{name}/size"), &[3], &[-1, n as i32, p as i32]);
            let out = self.out(id);
            self.m.operator(
                B::Slice,
                &[yt, bt, st],
                &[out],
                BuiltinOptions::Empty(options_type::SLICE),
            );
            return Ok(());
        };
        // onehot[b, k, t] = (t == min(s0 + k, len_b) - 1), then onehot @ Y.
        let lt = self.tensor(lengths)?;
        let f32t = TensorType::Float32;
        let shape3 = self
            .m
            .constant_i32(&format!("{name}/lengths_shape"), &[3], &[-1, 1, 1]);
        let l3 = self
            .m
            .tensor(&format!("{name}/lengths"), f32t, &[batch, 1, 1]);
        self.m.operator(
            B::Reshape,
            &[lt, shape3],
            &[l3],
            BuiltinOptions::Reshape {
                new_shape: vec![-1, 1, 1],
            },
        );
        let slots: Vec<f32> = (0..n).map(|k| (s0 as usize + k) as f32).collect();
        let st = self
            .m
            .constant_f32(&format!("{name}/slots"), &[1, n as i32, 1], &slots);
        let reached = self
            .m
            .tensor(&format!("{name}/reached"), f32t, &[batch, n as i32, 1]);
        self.m.operator(
            B::Minimum,
            &[st, l3],
            &[reached],
            BuiltinOptions::Empty(options_type::MAXIMUM_MINIMUM),
        );
        let one = self.m.constant_f32(&format!("{name}/one"), &[], &[1.0]);
        let step = self
            .m
            .tensor(&format!("{name}/step"), f32t, &[batch, n as i32, 1]);
        self.m.operator(
            B::Sub,
            &[reached, one],
            &[step],
            BuiltinOptions::Sub {
                fused_activation_function: Act::None,
            },
        );
        let times: Vec<f32> = (0..steps).map(|t| t as f32).collect();
        let tt = self
            .m
            .constant_f32(&format!("{name}/times"), &[1, 1, steps as i32], &times);
        let dims = [batch, n as i32, steps as i32];
        let hit = self
            .m
            .tensor(&format!("{name}/hit"), TensorType::Bool, &dims);
        self.m
            .operator(B::Equal, &[step, tt], &[hit], BuiltinOptions::None);
        let onehot = self.m.tensor(&format!("{name}/onehot"), f32t, &dims);
        self.m.operator(
            B::Cast,
            &[hit],
            &[onehot],
            BuiltinOptions::Cast {
                in_data_type: TensorType::Bool,
                out_data_type: f32t,
            },
        );
        let out = self.out(id);
        self.m.operator(
            B::BatchMatmul,
            &[onehot, yt],
            &[out],
            BuiltinOptions::BatchMatMul {
                adj_x: false,
                adj_y: false,
            },
        );
        Ok(())
    }
}

/// TF Lite's fused activation for the cell's, if it has one.
fn activation(cell: &Cell) -> Option<Act> {
    match cell.activation {
        Activation::Tanh => Some(Act::Tanh),
        Activation::Relu => Some(Act::Relu),
        Activation::Linear => Some(Act::None),
        Activation::Sigmoid => None,
    }
}
