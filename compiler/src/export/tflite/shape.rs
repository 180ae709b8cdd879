//! The operators that move elements: RESHAPE, TRANSPOSE, CONCATENATION,
//! SLICE, PAD and GATHER, and `iota` (an index along an axis) as a
//! constant.
//!
//! Invariants: shapes, permutations, offsets and paddings are INT32
//! constants (a batch dimension -1, or the fixed batch); GATHER's ids are
//! clamped at 0 (a feature column's padding id -1 reads row 0, which its
//! weight 0 zeroes, as specc's zeros do); an index over the batch axis is
//! refused.

use specc_tflite::{
    ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, TensorType,
};

use super::lower::Lower;
use super::R;
use crate::ir::{DType, Dim, NodeId, Shape};

impl Lower<'_> {
    /// RESHAPE to `to`.
    pub(super) fn reshape(&mut self, id: NodeId, to: Shape) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let dims = self.dims(&to);
        let st = self.m.constant_i32(
            &format!("{}/shape", self.name(id)),
            &[dims.len() as i32],
            &dims,
        );
        let y = self.out(id);
        self.m.operator(
            B::Reshape,
            &[x, st],
            &[y],
            BuiltinOptions::Reshape { new_shape: dims },
        );
        Ok(())
    }

    /// TRANSPOSE by `perm`.
    pub(super) fn transpose(&mut self, id: NodeId, perm: Vec<u8>) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let perm: Vec<i32> = perm.iter().map(|&p| p as i32).collect();
        let pt = self.m.constant_i32(
            &format!("{}/perm", self.name(id)),
            &[perm.len() as i32],
            &perm,
        );
        let y = self.out(id);
        self.m.operator(
            B::Transpose,
            &[x, pt],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::TRANSPOSE),
        );
        Ok(())
    }

    /// CONCATENATION along `axis`.
    pub(super) fn concatenation(&mut self, id: NodeId, axis: u8) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let none = Act::None;
        let parts = ins.iter().map(|&p| self.tensor(p)).collect::<R<Vec<_>>>()?;
        let y = self.out(id);
        self.m.operator(
            B::Concatenation,
            &parts,
            &[y],
            BuiltinOptions::Concatenation {
                axis: axis as i32,
                fused_activation_function: none,
            },
        );
        Ok(())
    }

    /// SLICE from `begin` to the result's `shape` (batch axes whole).
    pub(super) fn slice(&mut self, id: NodeId, begin: Vec<u32>, shape: Shape) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let begin: Vec<i32> = begin.iter().map(|&b| b as i32).collect();
        let size: Vec<i32> = shape
            .0
            .iter()
            .map(|d| match d {
                Dim::Batch => -1,
                Dim::Fixed(n) => *n as i32,
            })
            .collect();
        let name = self.name(id);
        let bt = self
            .m
            .constant_i32(&format!("{name}/begin"), &[begin.len() as i32], &begin);
        let st = self
            .m
            .constant_i32(&format!("{name}/size"), &[size.len() as i32], &size);
        let y = self.out(id);
        self.m.operator(
            B::Slice,
            &[x, bt, st],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::SLICE),
        );
        Ok(())
    }

    /// PAD with zeros, `before` per axis, to the result's `shape`.
    pub(super) fn pad(&mut self, id: NodeId, before: Vec<u32>, shape: Shape) -> R<()> {
        let g = self.g;
        let ins = g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let from = g.shape(ins[0]).clone();
        let mut pads = Vec::new();
        for (k, &b) in before.iter().enumerate() {
            let after = match (shape.0[k], from.0[k]) {
                (Dim::Fixed(o), Dim::Fixed(i)) => o as i32 - i as i32 - b as i32,
                _ => 0,
            };
            pads.extend([b as i32, after]);
        }
        let pt = self.m.constant_i32(
            &format!("{}/paddings", self.name(id)),
            &[before.len() as i32, 2],
            &pads,
        );
        let y = self.out(id);
        self.m.operator(
            B::Pad,
            &[x, pt],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::PAD),
        );
        Ok(())
    }

    /// GATHER of rows (axis 0) by ids.
    pub(super) fn gather(&mut self, id: NodeId) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let p = self.tensor(ins[0])?;
        let i = self.tensor(ins[1])?;
        // A feature column's padding id -1 reads row 0 (TFLite's
        // GATHER refuses negative ids); its weight 0 zeroes the row
        // where the spec combines it, as specc's zeros do.
        let i = if self.g.dtype(ins[1]) == DType::I32 {
            let name = self.name(id);
            let zero = self.m.constant_i32(&format!("{name}/zero"), &[], &[0]);
            let dims = self.dims(self.g.shape(ins[1]));
            let clamped = self
                .m
                .tensor(&format!("{name}/ids"), TensorType::Int32, &dims);
            self.m.operator(
                B::Maximum,
                &[i, zero],
                &[clamped],
                BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
            );
            clamped
        } else {
            i
        };
        let y = self.out(id);
        self.m.operator(
            B::Gather,
            &[p, i],
            &[y],
            BuiltinOptions::Gather {
                axis: 0,
                batch_dims: 0,
            },
        );
        Ok(())
    }

    /// The index along `axis` as a constant.
    pub(super) fn iota(&mut self, id: NodeId, axis: u8) -> R<()> {
        // The index along a non-batch axis is a constant; with the
        // batch axis as 1 it broadcasts in its consumer (NumPy rules).
        let shape = self.g.shape(id).clone();
        let axis = axis as usize;
        if !matches!(shape.0.get(axis), Some(Dim::Fixed(_))) {
            return Err(self.unsupported(id, "an index over the batch axis"));
        }
        let dims: Vec<usize> = shape
            .0
            .iter()
            .map(|d| match d {
                Dim::Batch => 1,
                Dim::Fixed(k) => *k as usize,
            })
            .collect();
        let inner: usize = dims[axis + 1..].iter().product();
        let len = dims[axis];
        let n: usize = dims.iter().product();
        let dims32: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
        let name = self.name(id);
        let t = match self.g.dtype(id) {
            DType::F32 => {
                let v: Vec<f32> = (0..n).map(|i| ((i / inner) % len) as f32).collect();
                self.m.constant_f32(&name, &dims32, &v)
            }
            DType::I32 => {
                let v: Vec<i32> = (0..n).map(|i| ((i / inner) % len) as i32).collect();
                self.m.constant_i32(&name, &dims32, &v)
            }
        };
        self.tensors.insert(id, t);
        Ok(())
    }
}
