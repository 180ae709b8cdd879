//! MEAN, SUM, REDUCE_MAX and ARG_MAX: reductions over constant axes (sema's
//! mean, `reduce_sum(x, axes) / count`, as one MEAN).
//!
//! Invariants: the axes are an INT32 constant; the reduced axes are dropped
//! (`keep_dims` false), as the IR drops them; ARG_MAX's output is INT32.

use specc_tflite::{BuiltinOperator as B, BuiltinOptions, TensorType};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{BinaryOp, Dim, NodeId, Op, ReduceKind, Shape};

impl Lower<'_> {
    /// `reduce_sum(x, axes) / count` (sema's mean): MEAN.
    pub(super) fn mean(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let (num, den) = (ins[0], self.strip_broadcast(ins[1]));
        let Op::Reduce {
            kind: ReduceKind::Sum,
            axes,
        } = g.op(num)
        else {
            return None;
        };
        let x = g.inputs_of(num)[0];
        self.is_count(den, g.shape(x), axes)
            .then(|| (Lowering::Mean { x }, vec![x]))
    }

    /// Whether `n` is sema's element count of `shape` over `axes`.
    fn is_count(&self, n: NodeId, shape: &Shape, axes: &[u8]) -> bool {
        let g = self.g;
        let mut fixed = 1f32;
        let mut batch = false;
        for &a in axes {
            match shape.0[a as usize] {
                Dim::Fixed(k) => fixed *= k as f32,
                Dim::Batch => batch = true,
            }
        }
        match (g.op(n), batch) {
            (Op::Scalar(_), false) => g.op(n).scalar_value() == Some(fixed),
            (Op::BatchSize, true) => fixed == 1.0,
            (Op::Binary(BinaryOp::Mul), true) => {
                let ins = g.inputs_of(n);
                g.op(ins[0]).scalar_value() == Some(fixed) && g.op(ins[1]) == &Op::BatchSize
            }
            _ => false,
        }
    }

    fn axes_const(&mut self, id: NodeId, axes: &[i32]) -> i32 {
        let name = format!("{}/axes", self.name(id));
        self.m.constant_i32(&name, &[axes.len() as i32], axes)
    }

    /// MEAN of `x` over the axes of node `id`'s sum.
    pub(super) fn emit_mean(&mut self, id: NodeId, x: NodeId) -> R<()> {
        let g = self.g;
        let Op::Reduce { axes, .. } = g.op(g.inputs_of(id)[0]) else {
            return Err(self.unsupported(id, "not a mean"));
        };
        let axes: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        let xt = self.tensor(x)?;
        let at = self.axes_const(id, &axes);
        let y = self.out(id);
        self.m.operator(
            B::Mean,
            &[xt, at],
            &[y],
            BuiltinOptions::Reducer { keep_dims: false },
        );
        Ok(())
    }

    /// SUM or REDUCE_MAX over `axes`.
    pub(super) fn reduce(&mut self, id: NodeId, kind: ReduceKind, axes: Vec<u8>) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let axes: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        let at = self.axes_const(id, &axes);
        let y = self.out(id);
        let op = match kind {
            ReduceKind::Sum => B::Sum,
            ReduceKind::Max => B::ReduceMax,
        };
        self.m.operator(
            op,
            &[x, at],
            &[y],
            BuiltinOptions::Reducer { keep_dims: false },
        );
        Ok(())
    }

    /// ARG_MAX along `axis`, INT32.
    pub(super) fn arg_max(&mut self, id: NodeId, axis: u8) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let x = self.tensor(ins[0])?;
        let at = self
            .m
            .constant_i32(&format!("{}/axis", self.name(id)), &[1], &[axis as i32]);
        let y = self.out(id);
        self.m.operator(
            B::ArgMax,
            &[x, at],
            &[y],
            BuiltinOptions::ArgMax {
                output_type: TensorType::Int32,
            },
        );
        Ok(())
    }
}
