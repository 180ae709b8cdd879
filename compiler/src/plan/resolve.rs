//! View resolution: how a kernel reads a node it does not compute.
//!
//! Owns: turning an operand into a [`Source`] (a strided view of a buffer, a
//! scalar SSA value, the loop index, a constant) by composing views through
//! broadcast, transpose, slice, reshape and stop_gradient down to a
//! materialized buffer; and materializing an operand into scratch (a new
//! copy unit, [`Planner::materialize`]) when no view exists — a reshape of a
//! strided view, an iota or scalar operand of a GEMM or argmax, an operand
//! of a row kernel that is not row-major.
//!
//! A copy into a contiguous buffer (an output, an update, a materialized
//! node) of a reshape that no view of its operand expresses (a transposed
//! view flattened back, as a tiled pooling's input gradient is) loops over
//! the operand's shape instead, writing the same bytes ([`Planner::source_for_copy`]).
//!
//! Invariants: a resolved `Source::Load` addresses a buffer in `node_buf`
//! (or a view of one); a copy never reads its own destination; each node is
//! materialized at most once (its buffer is found again by later reads).

use super::units::Class;
use super::view::View;
use super::{Loc, Planner, Source};
use crate::ir::{NodeId, Op};

impl Planner<'_> {
    /// Materializes `n` into a new scratch buffer through a copy unit, which
    /// becomes `n`'s producer (for an operand no view can read); returns the
    /// buffer's contiguous view.
    fn materialize(&mut self, n: NodeId) -> View {
        let b = self.add_buffer(n, Loc::Scratch { offset: 0 });
        let unit = self.add_copy(n, b);
        self.producer.insert(n, unit);
        self.node_buf.insert(n, b);
        View::contiguous(b, self.g.shape(n)).expect("copyable shape")
    }

    /// Resolves how a loop over `n`'s shape reads `n`, forcing a copy when no view exists.
    pub(super) fn source(&mut self, n: NodeId) -> Source {
        if self.g.shape(n).is_scalar() || self.cls(n) == Class::Scalar {
            return Source::Scalar(n);
        }
        if let Some(v) = self.view_of(n) {
            return v;
        }
        // A reshape of a view that strides cannot express: copy its operand into
        // contiguous memory, after which the reshape is a view of the copy.
        if let Op::Reshape(_) = self.g.op(n) {
            let x = self.g.inputs_of(n)[0];
            if !self.node_buf.contains_key(&x) {
                self.materialize(x);
                if let Some(v) = self.view_of(n) {
                    return v;
                }
            }
        }
        // Otherwise materialize a contiguous copy of `n` and read that.
        Source::Load(self.materialize(n), self.g.dtype(n))
    }

    pub(super) fn view_of(&mut self, n: NodeId) -> Option<Source> {
        let dt = self.g.dtype(n);
        if let Some(&b) = self.node_buf.get(&n) {
            return Some(Source::Load(View::contiguous(b, self.g.shape(n))?, dt));
        }
        if self.g.shape(n).is_scalar() {
            return Some(Source::Scalar(n));
        }
        match self.g.op(n).clone() {
            Op::Iota { axis, .. } => Some(Source::Iota {
                axis: axis as usize,
            }),
            Op::BroadcastTo(to) => {
                let x = self.g.inputs_of(n)[0];
                let from = self.g.shape(x).clone();
                match self.source(x) {
                    Source::Scalar(s) => Some(Source::Scalar(s)),
                    Source::Const(c) => Some(Source::Const(c)),
                    Source::Load(v, d) => Some(Source::Load(v.broadcast(&from, &to), d)),
                    Source::Iota { .. } => None,
                }
            }
            Op::Transpose(perm) => match self.source(self.g.inputs_of(n)[0]) {
                Source::Load(v, d) => Some(Source::Load(v.transpose(&perm), d)),
                s @ (Source::Scalar(_) | Source::Const(_)) => Some(s),
                Source::Iota { .. } => None,
            },
            Op::Slice { begin, .. } => match self.source(self.g.inputs_of(n)[0]) {
                Source::Load(v, d) => Some(Source::Load(v.slice(&begin), d)),
                s @ (Source::Scalar(_) | Source::Const(_)) => Some(s),
                Source::Iota { .. } => None,
            },
            Op::Reshape(to) => {
                let x = self.g.inputs_of(n)[0];
                let from = self.g.shape(x).clone();
                match self.source(x) {
                    Source::Scalar(s) => Some(Source::Scalar(s)),
                    Source::Const(c) => Some(Source::Const(c)),
                    Source::Load(v, d) => v.reshape(&from, &to).map(|v| Source::Load(v, d)),
                    Source::Iota { .. } => None,
                }
            }
            Op::StopGradient => self.view_of(self.g.inputs_of(n)[0]),
            _ => None,
        }
    }

    pub(super) fn load_view(&mut self, n: NodeId) -> View {
        match self.source(n) {
            Source::Load(v, _) => v,
            _ => {
                // A scalar or iota operand of a GEMM/argmax: materialize it.
                self.materialize(n)
            }
        }
    }

    pub(super) fn out_view(&self, n: NodeId) -> View {
        View::contiguous(self.node_buf[&n], self.g.shape(n))
            .expect("materialized shapes have no B*B")
    }

    /// What a copy of `n` into a contiguous buffer reads: `(m, source)`, the
    /// copy's loop running over `m`'s shape (never the copy's own
    /// destination). `m` is `n` itself, or — when `n` is a reshape of a view
    /// that strides cannot express (the transposed taps of a pooling whose
    /// windows tile the image, back to the image's shape) — the nearest
    /// operand down its chain of reshapes that has a view: a contiguous
    /// buffer holds the same bytes in every shape of the same elements, so
    /// copying `m` into the destination viewed in `m`'s shape writes `n`.
    pub(super) fn source_for_copy(&mut self, n: NodeId) -> (NodeId, Source) {
        if let Some(&b) = self.node_buf.get(&n) {
            // `b` is `n`'s buffer, so a copy into `b` copies `n`.
            let src_is_this_copy = self.copy_dsts.contains(&b);
            if !src_is_this_copy {
                return (
                    n,
                    Source::Load(
                        View::contiguous(b, self.g.shape(n)).expect("copyable"),
                        self.g.dtype(n),
                    ),
                );
            }
        }
        // Resolve through the op itself (a view of something materialized).
        let saved = self.node_buf.remove(&n);
        let mut m = n;
        let s = loop {
            let s = match self.g.op(m) {
                Op::Iota { axis, .. } => Some(Source::Iota {
                    axis: *axis as usize,
                }),
                _ if self.g.shape(m).is_scalar() || self.cls(m) == Class::Scalar => {
                    Some(Source::Scalar(m))
                }
                _ => self.view_of(m),
            };
            match (s, self.g.op(m)) {
                (Some(s), _) => break s,
                (None, Op::Reshape(_)) => m = self.g.inputs_of(m)[0],
                (None, _) => panic!("internal compiler error: no view for copy of {n}"),
            }
        };
        if let Some(b) = saved {
            self.node_buf.insert(n, b);
        }
        (m, s)
    }

    /// A row-major view of `n`, copying it into scratch when its view strides
    /// (a transposed or broadcast operand).
    pub(super) fn row_major_view(&mut self, n: NodeId) -> View {
        let shape = self.g.shape(n).clone();
        let v = self.load_view(n);
        if v.is_row_major(&shape) {
            return v;
        }
        self.materialize(n)
    }
}
