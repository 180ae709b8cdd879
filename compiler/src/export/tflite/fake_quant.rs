//! A fake quantization (sema's record, [`crate::ir::FakeQuant`]) as TF's
//! converter writes a `FakeQuantWithMinMaxVars` into a float model (TF
//! 2.21, no optimizations): a QUANTIZE of its input to `UINT8` with the
//! range's nudged scale and zero point
//! ([`specc_tflite::quantize::fake_quant_params`]) and a DEQUANTIZE back to
//! float, in place of the float arithmetic. For a fully connected layer's
//! weights the pair reads the (fake-quantized) weights constant and
//! FULLY_CONNECTED reads the DEQUANTIZE; per-channel weights (a range per
//! unit) get an `INT8` pair along TFLite's dimension 0 (TF's converter
//! refuses per-channel fake quantization of a matmul's weights; TFLite's
//! per-channel QUANTIZE writes INT8). Full-integer quantization
//! (`specc_tflite::quantize::quantize_int8`) takes these pairs' parameters
//! as the trained ranges and removes them.
//!
//! Invariants: only a record with 8 bits and a constant range (foldable
//! `min`, `max`) becomes a pair, a per-channel one only on weights; any
//! other keeps its float arithmetic (one operator per node), as before.

use specc_tflite::quantize::fake_quant_params;
use specc_tflite::{BuiltinOperator as B, BuiltinOptions, Quantization, TensorType};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{FakeQuant, NodeId};

/// The difference between a uint8 zero point and the int8 one of the same
/// real values.
const UINT8_SHIFT: i64 = 128;

impl Lower<'_> {
    /// The fake quantization whose output is `id`, when TFLite's QUANTIZE
    /// can express it: 8 bits and a constant range.
    pub(super) fn fake_quant_record(&self, id: NodeId) -> Option<FakeQuant> {
        self.g
            .fake_quants
            .iter()
            .find(|f| {
                f.output == id
                    && f.num_bits == 8
                    && self.foldable[f.min.index()]
                    && self.foldable[f.max.index()]
            })
            .copied()
    }

    /// The QUANTIZE/DEQUANTIZE pair of an activation's per-tensor fake
    /// quantization: `(lowering, nodes read)`.
    pub(super) fn fake_quant(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let f = self.fake_quant_record(id)?;
        if f.per_channel || self.foldable[f.input.index()] {
            return None;
        }
        let l = Lowering::FakeQuant {
            x: f.input,
            min: f.min,
            max: f.max,
            narrow_range: f.narrow_range,
        };
        Some((l, vec![f.input, f.min, f.max]))
    }

    /// The folded values of a constant range bound.
    fn bound(&self, n: NodeId) -> Vec<f32> {
        self.folded[&n].data.iter().map(|&v| v as f32).collect()
    }

    /// The parameters of the range `[min, max]`: per tensor UINT8 (TF's),
    /// per channel INT8 along `axis`.
    fn range_quantization(&self, f: &FakeQuant, axis: i32) -> (TensorType, Quantization) {
        let (lo, hi) = (self.bound(f.min), self.bound(f.max));
        let params: Vec<(f32, i32)> = lo
            .iter()
            .zip(&hi)
            .map(|(&a, &b)| fake_quant_params(a, b, f.narrow_range))
            .collect();
        let (tensor_type, shift, dim) = if f.per_channel {
            (TensorType::Int8, UINT8_SHIFT, axis)
        } else {
            (TensorType::Uint8, 0, 0)
        };
        let q = Quantization {
            scale: params.iter().map(|p| p.0).collect(),
            zero_point: params.iter().map(|p| i64::from(p.1) - shift).collect(),
            quantized_dimension: dim,
            ..Quantization::default()
        };
        (tensor_type, q)
    }

    /// QUANTIZE `x` (tensor) to the range of `f`, DEQUANTIZE into `y`.
    fn quantize_pair(&mut self, f: &FakeQuant, x: i32, y: i32, axis: i32) {
        let (tensor_type, q) = self.range_quantization(f, axis);
        let info = self.m.tensor_info(x);
        let name = format!("{}/quantize", info.name);
        let dims = info
            .shape_signature
            .clone()
            .unwrap_or_else(|| info.shape.clone());
        let qt = self.m.quantized_tensor(&name, tensor_type, &dims, q);
        self.m
            .operator(B::Quantize, &[x], &[qt], BuiltinOptions::None);
        self.m
            .operator(B::Dequantize, &[qt], &[y], BuiltinOptions::None);
    }

    /// The pair of a [`Lowering::FakeQuant`].
    pub(super) fn emit_fake_quant(&mut self, id: NodeId, l: Lowering) -> R<()> {
        let Lowering::FakeQuant {
            x,
            min,
            max,
            narrow_range,
        } = l
        else {
            unreachable!("not a fake quantization: {l:?}")
        };
        let f = FakeQuant {
            input: x,
            min,
            max,
            output: id,
            num_bits: 8,
            narrow_range,
            per_channel: false,
        };
        let xt = self.tensor(x)?;
        let y = self.out(id);
        self.quantize_pair(&f, xt, y, 0);
        Ok(())
    }

    /// FULLY_CONNECTED's weights `wt` (the constant of node `w`, TFLite's
    /// `[units, depth]`; `transposed` from the IR's `[depth, units]`): the
    /// DEQUANTIZE of their pair when `w` is a fake quantization (per
    /// channel: one range per unit, so only transposed weights), else `wt`.
    pub(super) fn fake_quant_weights(&mut self, w: NodeId, wt: i32, transposed: bool) -> i32 {
        let Some(f) = self.fake_quant_record(w) else {
            return wt;
        };
        if f.per_channel && !transposed {
            return wt;
        }
        let info = self.m.tensor_info(wt);
        let name = format!("{}/dequantize", info.name);
        let dims = info.shape.clone();
        let y = self.m.tensor(&name, TensorType::Float32, &dims);
        self.quantize_pair(&f, wt, y, 0);
        y
    }
}
