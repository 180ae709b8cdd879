//! The recurrent operators to their kernels ([`crate::kernels::recurrent`]):
//! UNIDIRECTIONAL_SEQUENCE_LSTM's 24 inputs (20 without layer
//! normalization) and UNIDIRECTIONAL_SEQUENCE_RNN's 5, by role.
//!
//! Invariants: an absent optional input (-1) is `None`; a variable tensor
//! (the state) that nothing assigned is zero; layer-normalized LSTMs and
//! int8 inputs are errors naming what is unsupported, never a panic.

use super::{Interpreter, Value};
use crate::kernels::recurrent::{
    sequence_lstm, sequence_rnn, LstmOperands, SequenceOptions, Weights,
};
use crate::model::{BuiltinOptions, Operator};
use crate::schema::BuiltinOperator as B;

type Result<T> = std::result::Result<T, String>;

impl Interpreter<'_> {
    /// Runs a sequence operator (`builtin` is UNIDIRECTIONAL_SEQUENCE_LSTM
    /// or UNIDIRECTIONAL_SEQUENCE_RNN).
    pub(super) fn sequence(
        &self,
        op: &Operator,
        builtin: B,
        values: &[Option<Value>],
    ) -> Result<Value> {
        let g = &self.model.subgraphs[0];
        let operand = |i: usize| -> Result<Option<&Value>> {
            let t = match op.inputs.get(i) {
                None | Some(-1) => return Ok(None),
                Some(&t) => t as usize,
            };
            match (&values[t], g.tensors[t].is_variable) {
                (Some(v), _) => Ok(Some(v)),
                (None, true) => Ok(None),
                (None, false) => Err(format!(
                    "input `{}` is not computed before it is used",
                    g.tensors[t].name
                )),
            }
        };
        let float = |i: usize| -> Result<Option<&ndarray::ArrayD<f32>>> {
            operand(i)?.map(Value::f32).transpose()
        };
        let weights = |i: usize| -> Result<Option<Weights<'_>>> {
            Ok(match operand(i)? {
                None => None,
                Some(Value::F32(w)) => Some(Weights::F32(w)),
                Some(Value::I8(w)) => Some(Weights::I8(w, &g.tensors[op.inputs[i] as usize])),
                Some(v) => return Err(format!("weights of type {}", v.type_name())),
            })
        };
        // A peephole: float, or int8 dequantized (the hybrid kernel's).
        let vector = |i: usize| -> Result<Option<ndarray::ArrayD<f32>>> {
            Ok(match operand(i)? {
                None => None,
                Some(Value::F32(v)) => Some(v.clone()),
                Some(Value::I8(v)) => {
                    let t = &g.tensors[op.inputs[i] as usize];
                    let scale = t
                        .quantization
                        .as_ref()
                        .and_then(|q| q.scale.first().copied())
                        .ok_or_else(|| format!("int8 `{}` without a scale", t.name))?;
                    Some(v.mapv(|q| f32::from(q) * scale))
                }
                Some(v) => return Err(format!("a peephole of type {}", v.type_name())),
            })
        };
        let x = float(0)?.ok_or("the input is absent")?;
        match (builtin, &op.options) {
            (
                B::UnidirectionalSequenceLstm,
                BuiltinOptions::SequenceLstm {
                    fused_activation_function,
                    cell_clip,
                    proj_clip,
                    time_major,
                    ..
                },
            ) => {
                if (20..24).any(|i| op.inputs.get(i).is_some_and(|&t| t >= 0)) {
                    return Err(
                        "a layer-normalized LSTM is not supported by specc's interpreter".into(),
                    );
                }
                let w = LstmOperands {
                    input_to: [weights(1)?, weights(2)?, weights(3)?, weights(4)?],
                    recurrent_to: [weights(5)?, weights(6)?, weights(7)?, weights(8)?],
                    cell_to: [vector(9)?, vector(10)?, vector(11)?],
                    bias: [float(12)?, float(13)?, float(14)?, float(15)?],
                    projection: weights(16)?,
                    projection_bias: float(17)?,
                    output_state: float(18)?,
                    cell_state: float(19)?,
                };
                let o = SequenceOptions {
                    activation: *fused_activation_function,
                    cell_clip: *cell_clip,
                    proj_clip: *proj_clip,
                    time_major: *time_major,
                };
                Ok(Value::F32(sequence_lstm(x, &w, o)?))
            }
            (
                B::UnidirectionalSequenceRnn,
                BuiltinOptions::SequenceRnn {
                    time_major,
                    fused_activation_function,
                    ..
                },
            ) => {
                let o = SequenceOptions {
                    activation: *fused_activation_function,
                    cell_clip: 0.0,
                    proj_clip: 0.0,
                    time_major: *time_major,
                };
                Ok(Value::F32(sequence_rnn(
                    x,
                    weights(1)?.ok_or("the input weights are absent")?,
                    weights(2)?.ok_or("the recurrent weights are absent")?,
                    float(3)?.ok_or("the bias is absent")?,
                    float(4)?,
                    o,
                )?))
            }
            (b, o) => Err(format!("{} with options {}", b.name(), o.describe())),
        }
    }
}
