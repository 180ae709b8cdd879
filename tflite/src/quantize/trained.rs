//! Trained ranges (quantization-aware training): the QUANTIZE/DEQUANTIZE
//! pairs of a float model, which TF's converter and `specc export` write
//! for each fake quantization (`FakeQuantWithMinMaxVars` and its kin), as
//! the int8 parameters of the tensors they quantize, and the model without
//! the pairs. Full-integer quantization ([`super::quantize_int8`]) takes an
//! activation's parameters from here before any calibration, and quantizes
//! weights read through a pair with its scales instead of their own range.
//!
//! Invariants: a pair is a QUANTIZE of a FLOAT32 tensor `x` to UINT8 or
//! INT8 whose output only DEQUANTIZE operators read; its parameters become
//! `x`'s in int8 (a uint8 zero point − 128), and every reader of a
//! DEQUANTIZE's output reads `x` (a model output keeps its name, now on
//! `x`); the tensors of the pair are removed and the others keep their
//! order ([`Trained::source`] maps them back to the float model's).

use super::rewrite::{prune_opcodes, remove_tensors};
use super::Result;
use crate::model::{Model, Quantization};
use crate::schema::{BuiltinOperator as B, TensorType};

/// The difference between a uint8 zero point and the int8 one of the same
/// real values.
const UINT8_SHIFT: i64 = 128;

/// A float model without its fake-quantization pairs, and the int8
/// parameters they gave.
pub(super) struct Trained {
    pub model: Model,
    /// Per tensor of `model`: the trained parameters (scales and int8 zero
    /// points, along `quantized_dimension` when more than one).
    pub params: Vec<Option<Quantization>>,
    /// Per tensor of `model`: its index in the float model.
    pub source: Vec<usize>,
    /// How many pairs were taken.
    pub pairs: usize,
}

/// The pairs of `float` taken out (see the module documentation).
pub(super) fn take_pairs(float: &Model) -> Result<Trained> {
    let g = &float.subgraphs[0];
    let n = g.tensors.len();
    let mut m = float.clone();
    let mut params: Vec<Option<Quantization>> = vec![None; n];
    let mut dead_ops = vec![false; g.operators.len()];
    let mut dead = vec![false; n];
    let mut pairs = 0;
    for (k, op) in g.operators.iter().enumerate() {
        if float.builtin(op) != Some(B::Quantize) {
            continue;
        }
        let (Some(&x), Some(&q)) = (op.inputs.first(), op.outputs.first()) else {
            continue;
        };
        let (xt, qt) = (&g.tensors[x as usize], &g.tensors[q as usize]);
        let shift = match qt.tensor_type {
            TensorType::Uint8 => UINT8_SHIFT,
            TensorType::Int8 => 0,
            _ => continue,
        };
        let Some(quant) = qt.quantization.as_ref().filter(|q| !q.scale.is_empty()) else {
            continue;
        };
        if xt.tensor_type != TensorType::Float32 {
            continue;
        }
        let readers: Vec<usize> = (0..g.operators.len())
            .filter(|&j| g.operators[j].inputs.contains(&q))
            .collect();
        let dequantizes = readers.iter().all(|&j| {
            float.builtin(&g.operators[j]) == Some(B::Dequantize)
                && g.operators[j].outputs.len() == 1
        });
        if readers.is_empty() || !dequantizes || g.outputs.contains(&q) {
            continue;
        }
        if params[x as usize].is_some() {
            return Err(format!(
                "tensor `{}` is fake-quantized twice; one range per tensor",
                xt.name
            ));
        }
        params[x as usize] = Some(Quantization {
            scale: quant.scale.clone(),
            zero_point: quant.zero_point.iter().map(|z| z - shift).collect(),
            quantized_dimension: quant.quantized_dimension,
            ..Quantization::default()
        });
        dead_ops[k] = true;
        dead[q as usize] = true;
        for &j in &readers {
            dead_ops[j] = true;
            let y = g.operators[j].outputs[0];
            dead[y as usize] = true;
            let sub = &mut m.subgraphs[0];
            for o in &mut sub.operators {
                for i in &mut o.inputs {
                    if *i == y {
                        *i = x;
                    }
                }
            }
            if let Some(p) = g.outputs.iter().position(|&o| o == y) {
                if g.inputs.contains(&x) || g.outputs.contains(&x) {
                    return Err(format!(
                        "output `{}` is a fake quantization of `{}`, which is itself an input or output",
                        g.tensors[y as usize].name, xt.name
                    ));
                }
                sub.outputs[p] = x;
                sub.tensors[x as usize].name = g.tensors[y as usize].name.clone();
                for sig in &mut m.signature_defs {
                    for t in &mut sig.outputs {
                        if t.tensor_index == y as u32 {
                            t.tensor_index = x as u32;
                        }
                    }
                }
            }
        }
        pairs += 1;
    }
    let mut k = 0;
    m.subgraphs[0].operators.retain(|_| {
        k += 1;
        !dead_ops[k - 1]
    });
    remove_tensors(&mut m, &dead);
    prune_opcodes(&mut m);
    let keep = |t: &usize| !dead[*t];
    let source: Vec<usize> = (0..n).filter(keep).collect();
    let params = source.iter().map(|&t| params[t].clone()).collect();
    m.validate()?;
    Ok(Trained {
        model: m,
        params,
        source,
        pairs,
    })
}

/// The per-tensor `(scale, zero_point)` of trained parameters, `None` for
/// per-channel ones.
pub(super) fn per_tensor_of(q: &Quantization) -> Option<(f32, i32)> {
    match (&q.scale[..], &q.zero_point[..]) {
        ([s], [z]) => Some((*s, *z as i32)),
        _ => None,
    }
}

/// How many fake-quantization pairs (trained ranges) `float` has.
pub fn trained_ranges(float: &Model) -> usize {
    take_pairs(float).map_or(0, |t| t.pairs)
}
