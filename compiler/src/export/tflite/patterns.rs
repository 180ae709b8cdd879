//! The patterns of the IR that lower to one richer TFLite operator
//! ([`Lower::pattern`]'s table), each node's [`Lowering`], and what they
//! share: the operands as TFLite reads them (before an explicit
//! `broadcast_to`), the bias and the activation fused into
//! FULLY_CONNECTED and the convolutions.
//!
//! Invariants: a pattern matches only what sema builds for the op it names
//! (its shapes checked), the weights and bias constants (foldable) and the
//! data not; anything else lowers one operator per node.

use specc_tflite::ActivationFunctionType as Act;

use super::lower::Lower;
use crate::ir::recurrence::RnnInputs;
use crate::ir::{BinaryOp, NodeId, Op, ReduceKind, UnaryOp, Window};

/// How one needed node becomes operators.
#[derive(Clone, Copy, Debug)]
pub(super) enum Lowering {
    /// Folded to a constant.
    Constant,
    /// FULLY_CONNECTED of `x` by constant `w` (`tb`: `w` is already
    /// `[units, depth]`), with an optional constant bias and fused
    /// activation; `keep_num_dims` for an `x` of rank 3 or above 4.
    FullyConnected {
        x: NodeId,
        w: NodeId,
        tb: bool,
        bias: Option<NodeId>,
        act: Act,
        keep_num_dims: bool,
    },
    /// CONV_2D of the images `x` over `window` by the constant kernel
    /// matrix `w` (`[KH·KW·C, O]`, or `[O, KH·KW·C]` when `tb`), with an
    /// optional constant bias and fused activation.
    Conv2D {
        x: NodeId,
        w: NodeId,
        tb: bool,
        window: Window,
        bias: Option<NodeId>,
        act: Act,
    },
    /// DEPTHWISE_CONV_2D of `x` over `window` by the constant `w [KH·KW, C, M]`.
    DepthwiseConv2D {
        x: NodeId,
        w: NodeId,
        window: Window,
        bias: Option<NodeId>,
        act: Act,
    },
    /// TRANSPOSE_CONV of `x` by the constant `w [KH·KW·O, I]` to the
    /// images of `window` (the adjoint of the convolution over it).
    TransposeConv {
        x: NodeId,
        w: NodeId,
        window: Window,
    },
    /// MAX_POOL_2D (`max`) or AVERAGE_POOL_2D of `x` over `window`.
    Pool {
        x: NodeId,
        window: Window,
        max: bool,
    },
    Softmax {
        x: NodeId,
        log: bool,
    },
    Mean {
        x: NodeId,
    },
    /// UNIDIRECTIONAL_SEQUENCE_LSTM or _RNN of the recurrence, reading `x`
    /// through the constant input weights `wx` and `bias` (both `None`:
    /// `x` is the recurrence's `xproj`; see `recurrent`).
    Sequence {
        x: NodeId,
        wx: Option<NodeId>,
        bias: Option<NodeId>,
    },
    /// A GRU recurrence unrolled into builtins (see `gru`).
    UnrolledGru,
    /// A fake quantization of `x` to the constant range `[min, max]`: a
    /// QUANTIZE/DEQUANTIZE pair (see `fake_quant`).
    FakeQuant {
        x: NodeId,
        min: NodeId,
        max: NodeId,
        narrow_range: bool,
    },
    /// One operator for the node itself.
    Plain,
}

impl Lower<'_> {
    /// The operands of an elementwise node as TFLite reads them: `x` for
    /// `broadcast_to(x)`, since TFLite's binary operators broadcast (NumPy
    /// rules) themselves — unless no operand would then carry the batch axis
    /// the result has.
    pub(super) fn operands(&self, id: NodeId) -> Vec<NodeId> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let stripped: Vec<NodeId> = ins.iter().map(|&x| self.strip_broadcast(x)).collect();
        let batch_kept =
            !g.shape(id).has_batch() || stripped.iter().any(|&x| g.shape(x).has_batch());
        if batch_kept && g.shape(id).rank() <= 5 {
            stripped
        } else {
            ins.to_vec()
        }
    }

    pub(super) fn strip_broadcast(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::BroadcastTo(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    pub(super) fn strip_reshape(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::Reshape(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    pub(super) fn is_reduce(&self, id: NodeId, kind: ReduceKind, axes: &[u8]) -> Option<NodeId> {
        match self.g.op(id) {
            Op::Reduce { kind: k, axes: a } if *k == kind && a == axes => {
                Some(self.g.inputs_of(id)[0])
            }
            _ => None,
        }
    }

    /// The patterns that lower to one richer operator: `(lowering, nodes
    /// read)`. One matcher per TFLite operator, in this order:
    ///
    /// | IR (as sema builds it)                                   | TFLite            |
    /// |----------------------------------------------------------|-------------------|
    /// | `x @ W (+ b)`, `x` of rank 2 (3, 5+: `keep_num_dims`)    | FULLY_CONNECTED   |
    /// | `patches(x) @ reshape(K) (+ b)`; `x @ W` of rank-4 `x`   | CONV_2D           |
    /// | `reshape(sum(reshape(patches(x)) * reshape(K), taps))`   | DEPTHWISE_CONV_2D |
    /// | `patches_grad(x @ reshape(K)ᵀ)`                          | TRANSPOSE_CONV    |
    /// | `sum(select(iota == argmax(taps(x)), taps(x), 0), taps)` | MAX_POOL_2D       |
    /// | `sum(taps(x), taps) / cells inside the image`            | AVERAGE_POOL_2D   |
    /// | `relu(·)`, sema's `relu6(·)` of the first three          | fused activation  |
    /// | sema's softmax and log-softmax over the last axis        | SOFTMAX, LOG_SOFTMAX |
    /// | `reduce_sum(x, axes) / count`                            | MEAN              |
    /// | `recurrence(x @ W + b, W_h, ...)` of an LSTM / basic cell | UNIDIRECTIONAL_SEQUENCE_LSTM / _RNN |
    /// | a slice of its tape's `h` (outputs, final state)         | its outputs (SLICE; with lengths a one-hot BATCH_MATMUL) |
    /// | `recurrence` of a GRU                                    | builtins, unrolled over T |
    ///
    /// `taps(x)` is `reshape(patches(x))` to `[N, OH, OW, KH·KW, C]`, or
    /// for windows tiling the image the view `reshape(transpose(reshape(x)))`.
    pub(super) fn pattern(&self, id: NodeId, uses: &[u32]) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        match g.op(id) {
            Op::Unary(UnaryOp::Relu) => self.activated(ins[0], Act::Relu, 1, uses),
            Op::Select => {
                let x = self.relu6_input(id)?;
                // x is read by `x < 6`, the inner select and `x > 0`.
                self.activated(x, Act::Relu6, 3, uses)
            }
            Op::Binary(BinaryOp::Add) | Op::MatMul { .. } | Op::Reshape(_) => self.affine(id),
            Op::PatchesGrad(_) => self.transpose_conv(id),
            Op::Reduce {
                kind: ReduceKind::Sum,
                ..
            } => self.max_pool(id),
            Op::Binary(BinaryOp::Div) => self
                .average_pool(id)
                .or_else(|| self.softmax(id))
                .or_else(|| self.mean(id)),
            Op::Binary(BinaryOp::Sub) => self.log_softmax(id),
            Op::Recurrence { .. } => self.sequence(id),
            Op::Slice { .. } => {
                let Op::Recurrence { cell, operands } = g.op(ins[0]) else {
                    return None;
                };
                let r = RnnInputs::from_slice(cell, *operands, g.inputs_of(ins[0]));
                let mut reads = vec![ins[0]];
                reads.extend(r.lengths);
                Some((Lowering::Plain, reads))
            }
            _ => None,
        }
    }

    /// `act(y)` with `y` a FULLY_CONNECTED, CONV_2D or DEPTHWISE_CONV_2D
    /// read only by the activation (`reads` uses of it): one operator with
    /// the activation fused.
    fn activated(
        &self,
        y: NodeId,
        act: Act,
        reads: u32,
        uses: &[u32],
    ) -> Option<(Lowering, Vec<NodeId>)> {
        let is_output = self.e.outputs.iter().any(|o| o.1 == y);
        if uses[y.index()] != reads || is_output || self.foldable[y.index()] {
            return None;
        }
        let (l, r) = self.affine(y)?;
        let l = match l {
            Lowering::FullyConnected {
                x,
                w,
                tb,
                bias,
                keep_num_dims,
                act: Act::None,
            } => Lowering::FullyConnected {
                x,
                w,
                tb,
                bias,
                keep_num_dims,
                act,
            },
            Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias,
                act: Act::None,
            } => Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias,
                act,
            },
            Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                bias,
                act: Act::None,
            } => Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                bias,
                act,
            },
            _ => return None,
        };
        Some((l, r))
    }

    pub(super) fn is_scalar(&self, id: NodeId, v: f32) -> bool {
        self.g.op(self.strip_broadcast(id)).scalar_value() == Some(v)
    }

    /// `x` of sema's `relu6(x)`: `x > 0 ? (x < 6 ? x : 6) : 0`.
    fn relu6_input(&self, id: NodeId) -> Option<NodeId> {
        let g = self.g;
        let [gt, capped, zero] = g.inputs_of(id)[..] else {
            return None;
        };
        let [x, z] = g.inputs_of(gt)[..] else {
            return None;
        };
        if g.op(gt) != &Op::Binary(BinaryOp::Gt)
            || !self.is_scalar(z, 0.0)
            || !self.is_scalar(zero, 0.0)
            || g.op(capped) != &Op::Select
        {
            return None;
        }
        let [lt, x2, six] = g.inputs_of(capped)[..] else {
            return None;
        };
        let ok = g.op(lt) == &Op::Binary(BinaryOp::Lt)
            && g.inputs_of(lt)[0] == x
            && self.is_scalar(g.inputs_of(lt)[1], 6.0)
            && x2 == x
            && self.is_scalar(six, 6.0);
        ok.then_some(x)
    }

    /// `core + b` with a constant bias `b` of one value per output channel
    /// (the last axis): `(core, Some(b))`; else `(id, None)`.
    fn split_bias(&self, id: NodeId) -> (NodeId, Option<NodeId>) {
        let g = self.g;
        if g.op(id) != &Op::Binary(BinaryOp::Add) {
            return (id, None);
        }
        let Some(&units) = g.shape(id).0.last() else {
            return (id, None);
        };
        let ins = g.inputs_of(id);
        for (core, other) in [(ins[0], ins[1]), (ins[1], ins[0])] {
            let b = self.strip_broadcast(other);
            if self.foldable[b.index()] && !self.foldable[core.index()] && g.shape(b).0 == [units] {
                return (core, Some(b));
            }
        }
        (id, None)
    }

    /// FULLY_CONNECTED, CONV_2D or DEPTHWISE_CONV_2D of `id`, with a bias.
    fn affine(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let (core, bias) = self.split_bias(id);
        let (l, mut reads) = self
            .fully_connected(core)
            .or_else(|| self.depthwise_conv2d(core))?;
        let Some(b) = bias else {
            return Some((l, reads));
        };
        reads.push(b);
        let l = match l {
            Lowering::FullyConnected {
                x,
                w,
                tb,
                act,
                keep_num_dims,
                bias: None,
            } => Lowering::FullyConnected {
                x,
                w,
                tb,
                act,
                keep_num_dims,
                bias: Some(b),
            },
            Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                act,
                bias: None,
            } => Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                act,
                bias: Some(b),
            },
            Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                act,
                bias: None,
            } => Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                act,
                bias: Some(b),
            },
            _ => return None,
        };
        Some((l, reads))
    }
}
