//! The integer interface of a full-integer model (TF's converter's
//! `inference_input_type` and `inference_output_type`): a model from
//! [`super::quantize_int8`], whose float inputs each feed one QUANTIZE and
//! whose float outputs each come from one DEQUANTIZE, with its boundary
//! made `INT8` or `UINT8` as TF 2.21's converter writes it:
//!
//! - `INT8` input: the input tensor is the QUANTIZE's output (`INT8`, its
//!   scale and zero point, the input's name); the QUANTIZE is removed.
//! - `UINT8` input: the input tensor is `UINT8` with the same scale and the
//!   zero point + 128; the QUANTIZE stays (version 1), now uint8 → int8.
//! - `INT8` output: the DEQUANTIZE is removed; the int8 tensor is the
//!   output, under the output's name.
//! - `UINT8` output: the DEQUANTIZE becomes a QUANTIZE (version 1) int8 →
//!   uint8; the output is `UINT8` with the same scale and the zero point +
//!   128.
//!
//! Outputs that are not float (an `ARG_MAX` class, `INT32`) stay as they
//! are. Invariants: only the boundary changes: every other tensor and
//! operator is the float-interface model's, in its order, so the integer
//! values the body computes are the same bits; tensor indices stay valid
//! (the subgraph's inputs and outputs and the signatures renumbered when a
//! tensor is removed).

use super::rewrite::{opcode, per_tensor, prune_opcodes, remove_tensors};
use super::Result;
use crate::kernels::int8::per_tensor as per_tensor_of;
use crate::model::Model;
use crate::schema::{BuiltinOperator as B, TensorType};

/// A type at the model's boundary (TF's `inference_input_type`,
/// `inference_output_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InferenceType {
    /// `tf.float32`: a QUANTIZE after each input, a DEQUANTIZE before each
    /// output (what [`super::quantize_int8`] writes).
    Float32,
    /// `tf.int8`.
    Int8,
    /// `tf.uint8`: int8 with the zero point shifted by 128.
    Uint8,
}

impl InferenceType {
    /// TF's name (`float32`, `int8`, `uint8`).
    pub fn name(self) -> &'static str {
        match self {
            InferenceType::Float32 => "float32",
            InferenceType::Int8 => "int8",
            InferenceType::Uint8 => "uint8",
        }
    }
}

/// The difference between a uint8 zero point and the int8 one of the same
/// real values.
const UINT8_SHIFT: i32 = 128;

/// `model` (full-integer, float interface) with its float inputs of type
/// `input` and its float outputs of type `output` (see the module
/// documentation).
pub fn set_inference_types(
    model: &Model,
    input: InferenceType,
    output: InferenceType,
) -> Result<Model> {
    model.validate()?;
    let mut m = model.clone();
    let g = &model.subgraphs[0];
    let producer = |t: i32| g.operators.iter().position(|o| o.outputs.contains(&t));
    let consumers = |t: i32| {
        g.operators
            .iter()
            .enumerate()
            .filter(|(_, o)| o.inputs.contains(&t))
            .map(|(k, _)| k)
            .collect::<Vec<_>>()
    };
    let mut dead_ops = vec![false; g.operators.len()];
    let mut dead_tensors = vec![false; g.tensors.len()];
    for &x in &g.inputs {
        if input == InferenceType::Float32
            || g.tensors[x as usize].tensor_type != TensorType::Float32
        {
            continue;
        }
        let name = &g.tensors[x as usize].name;
        let quantize = match consumers(x)[..] {
            [k] => match (model.builtin(&g.operators[k]), &g.operators[k].outputs[..]) {
                (Some(B::Quantize), &[q])
                    if g.tensors[q as usize].tensor_type == TensorType::Int8 =>
                {
                    Some((k, q))
                }
                _ => None,
            },
            _ => None,
        };
        let Some((k, q)) = quantize else {
            return Err(format!(
                "input `{name}` is not read by one QUANTIZE to INT8; a full-integer model's float input is"
            ));
        };
        let qt = &g.tensors[q as usize];
        let (s, zp) = per_tensor_of(qt)?;
        if input == InferenceType::Int8 {
            dead_ops[k] = true;
            dead_tensors[q as usize] = true;
            for o in &mut m.subgraphs[0].operators {
                for i in &mut o.inputs {
                    if *i == q {
                        *i = x;
                    }
                }
            }
            let t = &mut m.subgraphs[0].tensors[x as usize];
            t.tensor_type = TensorType::Int8;
            t.quantization = Some(per_tensor(s, zp));
        } else {
            let t = &mut m.subgraphs[0].tensors[x as usize];
            t.tensor_type = TensorType::Uint8;
            t.quantization = Some(per_tensor(s, zp + UINT8_SHIFT));
        }
    }
    for (position, &y) in g.outputs.iter().enumerate() {
        if output == InferenceType::Float32
            || g.tensors[y as usize].tensor_type != TensorType::Float32
        {
            continue;
        }
        let name = &g.tensors[y as usize].name;
        let dequantize = producer(y).and_then(|k| {
            match (model.builtin(&g.operators[k]), &g.operators[k].inputs[..]) {
                (Some(B::Dequantize), &[q]) if q >= 0 => Some((k, q)),
                _ => None,
            }
        });
        let Some((k, q)) = dequantize else {
            return Err(format!(
                "output `{name}` is not computed by a DEQUANTIZE; a full-integer model's float output is"
            ));
        };
        let qt = &g.tensors[q as usize];
        if qt.tensor_type != TensorType::Int8 {
            return Err(format!(
                "output `{name}` is the DEQUANTIZE of a {} tensor, not INT8",
                qt.tensor_type
            ));
        }
        let (s, zp) = per_tensor_of(qt)?;
        if output == InferenceType::Int8 {
            if g.outputs.contains(&q) {
                return Err(format!(
                    "output `{name}` is the DEQUANTIZE of another output, `{}`",
                    qt.name
                ));
            }
            dead_ops[k] = true;
            dead_tensors[y as usize] = true;
            let sub = &mut m.subgraphs[0];
            sub.tensors[q as usize].name = name.clone();
            sub.outputs[position] = q;
            for sig in &mut m.signature_defs {
                for t in &mut sig.outputs {
                    if t.tensor_index == y as u32 {
                        t.tensor_index = q as u32;
                    }
                }
            }
        } else {
            let code = opcode(&mut m, B::Quantize, 1);
            let sub = &mut m.subgraphs[0];
            sub.operators[k].opcode_index = code;
            let t = &mut sub.tensors[y as usize];
            t.tensor_type = TensorType::Uint8;
            t.quantization = Some(per_tensor(s, zp + UINT8_SHIFT));
        }
    }
    let mut k = 0;
    m.subgraphs[0].operators.retain(|_| {
        k += 1;
        !dead_ops[k - 1]
    });
    remove_tensors(&mut m, &dead_tensors);
    prune_opcodes(&mut m);
    m.validate()?;
    Ok(m)
}
