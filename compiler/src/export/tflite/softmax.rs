//! SOFTMAX and LOG_SOFTMAX: sema's softmax (`e / reshape(sum(e, last))`,
//! `e = exp(x - reshape(stop_gradient(max(x, last))))`) and log-softmax
//! (`z - reshape(log(sum(exp(z), last)))`, `z` the same shift of `x`) over
//! the last axis, each one operator of `x`.

use specc_tflite::{BuiltinOperator as B, BuiltinOptions};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{BinaryOp, NodeId, Op, ReduceKind, UnaryOp};

impl Lower<'_> {
    /// sema's softmax over the last axis: SOFTMAX.
    pub(super) fn softmax(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let (num, den) = (ins[0], self.strip_broadcast(ins[1]));
        let rank = g.shape(id).rank();
        let last = [rank.checked_sub(1)? as u8];
        // e / reshape(sum(e, last)), e = exp(x - reshape(stop(max(x, last))))
        let sum = self.strip_reshape(den);
        if self.is_reduce(sum, ReduceKind::Sum, &last) != Some(num) {
            return None;
        }
        let x = self.shifted_exp(num, &last)?;
        Some((Lowering::Softmax { x, log: false }, vec![x]))
    }

    /// sema's log-softmax over the last axis: LOG_SOFTMAX.
    pub(super) fn log_softmax(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        // log_softmax: z - reshape(log(sum(exp(z), last)))
        let rank = g.shape(id).rank();
        let last = [rank.checked_sub(1)? as u8];
        let z = ins[0];
        let lse = self.strip_reshape(self.strip_broadcast(ins[1]));
        let Op::Unary(UnaryOp::Log) = g.op(lse) else {
            return None;
        };
        let e = self.is_reduce(g.inputs_of(lse)[0], ReduceKind::Sum, &last)?;
        if g.op(e) != &Op::Unary(UnaryOp::Exp) || g.inputs_of(e)[0] != z {
            return None;
        }
        let x = self.shifted(z, &last)?;
        Some((Lowering::Softmax { x, log: true }, vec![x]))
    }

    /// `x` of `x - reshape(stop_gradient(max(x, last)))` (sema's shift).
    fn shifted(&self, z: NodeId, last: &[u8]) -> Option<NodeId> {
        let g = self.g;
        if g.op(z) != &Op::Binary(BinaryOp::Sub) {
            return None;
        }
        let x = g.inputs_of(z)[0];
        let m = self.strip_reshape(self.strip_broadcast(g.inputs_of(z)[1]));
        let m = match g.op(m) {
            Op::StopGradient => g.inputs_of(m)[0],
            _ => m,
        };
        (self.is_reduce(m, ReduceKind::Max, last) == Some(x)).then_some(x)
    }

    fn shifted_exp(&self, e: NodeId, last: &[u8]) -> Option<NodeId> {
        if self.g.op(e) != &Op::Unary(UnaryOp::Exp) {
            return None;
        }
        self.shifted(self.g.inputs_of(e)[0], last)
    }

    /// SOFTMAX, or LOG_SOFTMAX (`log`), of `x`.
    pub(super) fn emit_softmax(&mut self, id: NodeId, x: NodeId, log: bool) -> R<()> {
        let xt = self.tensor(x)?;
        let y = self.out(id);
        if log {
            self.m
                .operator(B::LogSoftmax, &[xt], &[y], BuiltinOptions::None);
        } else {
            self.m.operator(
                B::Softmax,
                &[xt],
                &[y],
                BuiltinOptions::Softmax { beta: 1.0 },
            );
        }
        Ok(())
    }
}
