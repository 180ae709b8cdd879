//! Lowering the forward IR to a TensorFlow Lite model (`specc export --format tflite`).
//!
//! Owns: [`export_tflite`] and its request [`TfliteExport`]: from the graph,
//! the trained parameters (by TF name), the dense inputs and the named
//! outputs to a `specc_tflite::Model` of TFLite builtin operators with the
//! `serving_default` signature.
//!
//! How nodes lower, in id order (a topological order, no recursion):
//! - Everything that depends on no input and has no batch dimension is folded
//!   with the reference interpreter ([`crate::interp`], float64, rounded to
//!   float32 once) and becomes a constant buffer, as TF's converter folds
//!   constants; parameters are such constants.
//! - Patterns first (one matcher per TFLite operator, tabled in
//!   `Lower::pattern`'s doc): `x @ W + b` (`W`, `b` constant) is
//!   FULLY_CONNECTED with the weights transposed to TFLite's `[units,
//!   depth]`; sema's convolutions (image patches times a constant kernel
//!   matrix, or images times it for a 1×1 kernel) are CONV_2D, its depthwise
//!   convolution DEPTHWISE_CONV_2D, its transposed convolution (patches_grad)
//!   TRANSPOSE_CONV, its max and average pools MAX_POOL_2D and
//!   AVERAGE_POOL_2D, each with the kernel laid out as TFLite's filter; a
//!   bias and a following `relu`/`relu6` fuse into FULLY_CONNECTED and the
//!   convolutions; sema's softmax and log-softmax over the last axis are
//!   SOFTMAX and LOG_SOFTMAX; `reduce_sum / count` (sema's mean) is MEAN.
//!   A window whose placement is TF's VALID or SAME arithmetic has that
//!   padding; any other (explicit) padding of a convolution is a PAD operator
//!   before a VALID one.
//! - Then one operator per node: elementwise ops (broadcasting operands are
//!   read before their explicit `broadcast_to`, TFLite broadcasts itself),
//!   comparisons as a BOOL operator and a CAST, reductions with an axes
//!   constant, `argmax` (INT32), matmul by a non-constant as BATCH_MATMUL,
//!   reshape/transpose/concat/slice/pad/gather, `stop_gradient` as nothing.
//!
//! Invariants: an op TFLite cannot express (the batch size as a value, the
//! global step, random noise, the optimizer's row updates, image patches
//! outside the convolution and pool patterns, a dilated transposed
//! convolution) is a
//! `tflite-unsupported` diagnostic at its spec span, never a silently
//! different model; every tensor of the model has the node's dtype and shape
//! (the batch dimension -1 in `shape_signature`, or the fixed batch).

use std::collections::HashMap;

use ndarray::ArrayD;
use specc_grammar::{Code, Diagnostic};
use specc_tflite::{
    ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, ModelBuilder, Padding,
    TensorType,
};

use crate::interp;
use crate::ir::print::op_text;
use crate::ir::{BinaryOp, DType, Dim, Graph, NodeId, Op, ReduceKind, Shape, UnaryOp, Window};

/// What to export.
pub struct TfliteExport<'a> {
    pub graph: &'a Graph,
    /// Trained values of the graph's variables, by TF name.
    pub params: &'a HashMap<String, ArrayD<f32>>,
    /// The graph inputs the model takes, by name, in signature order.
    pub inputs: &'a [String],
    /// The model's outputs: signature name and node.
    pub outputs: &'a [(String, NodeId)],
    /// A fixed batch size, or `None` for a dynamic batch dimension (-1).
    pub batch: Option<u32>,
}

/// How one needed node becomes operators.
#[derive(Clone, Copy, Debug)]
enum Lowering {
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
    /// One operator for the node itself.
    Plain,
}

type R<T> = Result<T, Diagnostic>;

/// The TFLite model of `e.outputs` over `e.inputs`.
pub fn export_tflite(e: &TfliteExport<'_>) -> R<specc_tflite::Model> {
    Lower::new(e)?.run()
}

struct Lower<'a> {
    e: &'a TfliteExport<'a>,
    g: &'a Graph,
    /// Whether a node depends on no input, batch size, step or noise and has no batch axis.
    foldable: Vec<bool>,
    lowering: Vec<Option<Lowering>>,
    folded: HashMap<NodeId, interp::Tensor>,
    tensors: HashMap<NodeId, i32>,
    m: ModelBuilder,
}

impl<'a> Lower<'a> {
    fn new(e: &'a TfliteExport<'a>) -> R<Lower<'a>> {
        let g = e.graph;
        let mut foldable = vec![false; g.len()];
        for (id, n) in g.nodes() {
            let leaf_ok = !matches!(
                n.op,
                Op::Input(_)
                    | Op::BatchSize
                    | Op::GlobalStep
                    | Op::FirstRow
                    | Op::NormalNoise { .. }
            );
            foldable[id.index()] =
                leaf_ok && !n.shape.has_batch() && n.inputs.iter().all(|i| foldable[i.index()]);
        }
        Ok(Lower {
            e,
            g,
            foldable,
            lowering: vec![None; g.len()],
            folded: HashMap::new(),
            tensors: HashMap::new(),
            m: ModelBuilder::new(),
        })
    }

    fn unsupported(&self, id: NodeId, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::TfliteUnsupported,
            self.g.span(id).unwrap_or_default(),
            format!(
                "`{}` cannot be exported to TensorFlow Lite: {what}",
                op_text(self.g, self.g.op(id))
            ),
        )
        .with_help("TensorFlow Lite has no builtin operator for it; `--format object` compiles any spec to native code")
    }

    fn run(mut self) -> R<specc_tflite::Model> {
        self.plan()?;
        self.fold()?;
        let mut inputs = Vec::new();
        for name in self.e.inputs {
            let Some(i) = self.g.inputs.iter().position(|l| &l.name == name) else {
                return Err(Diagnostic::new(
                    Code::TfliteUnsupported,
                    Default::default(),
                    format!("`{name}` is not an input of the model"),
                ));
            };
            let leaf = &self.g.inputs[i];
            let t = self
                .m
                .tensor(name, tensor_type(leaf.dtype), &self.dims(&leaf.shape));
            inputs.push((name.clone(), t));
            for (id, n) in self.g.nodes() {
                if n.op == Op::Input(i as u32) {
                    self.tensors.insert(id, t);
                }
            }
        }
        for i in 0..self.g.len() {
            let id = NodeId(i as u32);
            if let Some(l) = self.lowering[i] {
                if !matches!(l, Lowering::Constant) {
                    self.emit(id, l)?;
                }
            }
        }
        let mut outputs = Vec::new();
        for (name, node) in self.e.outputs {
            let t = self.tensor(*node)?;
            outputs.push((name.clone(), t));
        }
        // Name the output tensors as the signature does.
        let mut model = self.m.finish(&inputs, &outputs);
        for (name, t) in &outputs {
            let tensor = &mut model.subgraphs[0].tensors[*t as usize];
            if !inputs.iter().any(|(_, i)| i == t) {
                tensor.name = name.clone();
            }
        }
        Ok(model)
    }

    /// Which nodes are needed and how each lowers, from the outputs back.
    fn plan(&mut self) -> R<()> {
        let g = self.g;
        let roots: Vec<NodeId> = self.e.outputs.iter().map(|o| o.1).collect();
        let uses = g.use_counts(&roots);
        let mut needed = vec![false; g.len()];
        for r in &roots {
            needed[r.index()] = true;
        }
        for i in (0..g.len()).rev() {
            if !needed[i] {
                continue;
            }
            let id = NodeId(i as u32);
            let (l, reads) = if self.foldable[i] {
                (Lowering::Constant, Vec::new())
            } else if let Some((l, reads)) = self.pattern(id, &uses) {
                (l, reads)
            } else {
                let reads = match g.op(id) {
                    Op::Binary(_) | Op::Select => self.operands(id),
                    _ => g.inputs_of(id).to_vec(),
                };
                (Lowering::Plain, reads)
            };
            self.lowering[i] = Some(l);
            for r in reads {
                needed[r.index()] = true;
            }
        }
        Ok(())
    }

    /// The operands of an elementwise node as TFLite reads them: `x` for
    /// `broadcast_to(x)`, since TFLite's binary operators broadcast (NumPy
    /// rules) themselves — unless no operand would then carry the batch axis
    /// the result has.
    fn operands(&self, id: NodeId) -> Vec<NodeId> {
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

    fn strip_broadcast(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::BroadcastTo(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    fn strip_reshape(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::Reshape(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    fn is_reduce(&self, id: NodeId, kind: ReduceKind, axes: &[u8]) -> Option<NodeId> {
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
    ///
    /// `taps(x)` is `reshape(patches(x))` to `[N, OH, OW, KH·KW, C]`, or
    /// for windows tiling the image the view `reshape(transpose(reshape(x)))`.
    fn pattern(&self, id: NodeId, uses: &[u32]) -> Option<(Lowering, Vec<NodeId>)> {
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
            Op::Binary(BinaryOp::Div) => {
                if let Some(p) = self.average_pool(id) {
                    return Some(p);
                }
                let (num, den) = (ins[0], self.strip_broadcast(ins[1]));
                let rank = g.shape(id).rank();
                if rank > 0 {
                    let last = [(rank - 1) as u8];
                    // softmax: e / reshape(sum(e, last)), e = exp(x - reshape(stop(max(x, last))))
                    let sum = self.strip_reshape(den);
                    if self.is_reduce(sum, ReduceKind::Sum, &last) == Some(num) {
                        if let Some(x) = self.shifted_exp(num, &last) {
                            return Some((Lowering::Softmax { x, log: false }, vec![x]));
                        }
                    }
                }
                // mean: reduce_sum(x, axes) / count
                if let Op::Reduce {
                    kind: ReduceKind::Sum,
                    axes,
                } = g.op(num)
                {
                    let x = g.inputs_of(num)[0];
                    if self.is_count(den, g.shape(x), axes) {
                        return Some((Lowering::Mean { x }, vec![x]));
                    }
                }
                None
            }
            Op::Binary(BinaryOp::Sub) => {
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

    fn is_scalar(&self, id: NodeId, v: f32) -> bool {
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

    /// `x @ W` with constant `W`: FULLY_CONNECTED, or CONV_2D when `x` is
    /// the patches of images (`matmul(patches(x), reshape(K))`, sema's
    /// conv2d and conv1d) or images itself (a 1×1 kernel with stride 1).
    fn fully_connected(&self, mm: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let Op::MatMul { ta: false, tb } = *g.op(mm) else {
            return None;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return None;
        };
        if !self.foldable[w.index()] || self.foldable[x.index()] || g.shape(w).rank() != 2 {
            return None;
        }
        let depth = g.shape(w).0[if tb { 1 } else { 0 }].fixed()?;
        if depth == 0 {
            return None;
        }
        let rank = g.shape(x).rank();
        if rank == 4 {
            let conv = |x, window| Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias: None,
                act: Act::None,
            };
            if let Op::Patches { window, pad: 0 } = *g.op(x) {
                let images = g.inputs_of(x)[0];
                if window.patch_len() == depth && !self.foldable[images.index()] {
                    return Some((conv(images, window), vec![images, w]));
                }
                return None;
            }
            let s = &g.shape(x).0;
            let (h, wd) = (s[1].fixed()?, s[2].fixed()?);
            let pointwise = Window {
                input: [h, wd],
                output: [h, wd],
                kernel: [1, 1],
                strides: [1, 1],
                dilations: [1, 1],
                pad_before: [0, 0],
                channels: depth,
            };
            return Some((conv(x, pointwise), vec![x, w]));
        }
        let l = Lowering::FullyConnected {
            x,
            w,
            tb,
            bias: None,
            act: Act::None,
            keep_num_dims: rank != 2,
        };
        Some((l, vec![x, w]))
    }

    /// `reshape(reduce_sum(reshape(patches(x)) * reshape(K), [3]))` to
    /// `[N, OH, OW, C·M]`: sema's depthwise_conv2d.
    fn depthwise_conv2d(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        if !matches!(g.op(id), Op::Reshape(_)) {
            return None;
        }
        let s = g.inputs_of(id)[0];
        let prod = self.is_reduce(s, ReduceKind::Sum, &[3])?;
        if g.op(prod) != &Op::Binary(BinaryOp::Mul) {
            return None;
        }
        let ins = g.inputs_of(prod);
        let (a, b) = (self.strip_broadcast(ins[0]), self.strip_broadcast(ins[1]));
        let (p6, k) = if self.foldable[b.index()] {
            (a, b)
        } else {
            (b, a)
        };
        if !self.foldable[k.index()] || !matches!(g.op(p6), Op::Reshape(_)) {
            return None;
        }
        let p = g.inputs_of(p6)[0];
        let Op::Patches { window, pad: 0 } = *g.op(p) else {
            return None;
        };
        let x = g.inputs_of(p)[0];
        let taps = window.kernel[0] * window.kernel[1];
        let c = window.channels;
        let kd = &g.shape(k).0;
        let m = match kd[..] {
            [Dim::Fixed(t), Dim::Fixed(kc), Dim::Fixed(m)] if t == taps && kc == c => m,
            _ => return None,
        };
        let p6_ok = g.shape(p6).0[3..] == [Dim::Fixed(taps), Dim::Fixed(c), Dim::Fixed(1)];
        let out_ok = g.shape(id).0[1..]
            == [
                Dim::Fixed(window.output[0]),
                Dim::Fixed(window.output[1]),
                Dim::Fixed(c * m),
            ];
        if !p6_ok || !out_ok || self.foldable[x.index()] {
            return None;
        }
        let l = Lowering::DepthwiseConv2D {
            x,
            w: k,
            window,
            bias: None,
            act: Act::None,
        };
        Some((l, vec![x, k]))
    }

    /// `patches_grad(x @ reshape(K)ᵀ)`: sema's conv2d_transpose, when
    /// TRANSPOSE_CONV can express its window (no dilation; SAME or VALID).
    fn transpose_conv(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let Op::PatchesGrad(window) = *g.op(id) else {
            return None;
        };
        let mm = g.inputs_of(id)[0];
        let Op::MatMul {
            ta: false,
            tb: true,
        } = *g.op(mm)
        else {
            return None;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return None;
        };
        let ok = self.foldable[w.index()]
            && !self.foldable[x.index()]
            && g.shape(x).rank() == 4
            && g.shape(w).rank() == 2
            && window.patch_len() > 0
            && g.shape(w).0.first() == Some(&Dim::Fixed(window.patch_len()))
            && window.dilations == [1, 1]
            && !matches!(window_padding(&window), WindowPadding::Explicit(_));
        ok.then(|| (Lowering::TransposeConv { x, w, window }, vec![x, w]))
    }

    /// The images and window of `taps(x)` (see [`Lower::pattern`]), and the
    /// patches' padding value (`None` for the tiling view, which has none).
    fn taps(&self, p: NodeId) -> Option<(NodeId, Window, Option<u32>)> {
        let g = self.g;
        if !matches!(g.op(p), Op::Reshape(_)) || g.shape(p).rank() != 5 {
            return None;
        }
        let q = g.inputs_of(p)[0];
        let s = &g.shape(p).0;
        match *g.op(q) {
            Op::Patches { window, pad } => {
                let want = [
                    Dim::Fixed(window.output[0]),
                    Dim::Fixed(window.output[1]),
                    Dim::Fixed(window.kernel[0] * window.kernel[1]),
                    Dim::Fixed(window.channels),
                ];
                (s[1..] == want).then(|| (g.inputs_of(q)[0], window, Some(pad)))
            }
            Op::Transpose(ref perm) if perm[..] == [0, 1, 3, 2, 4, 5] => {
                let split = g.inputs_of(q)[0];
                if !matches!(g.op(split), Op::Reshape(_)) {
                    return None;
                }
                let x = g.inputs_of(split)[0];
                let d: Vec<u32> = g.shape(split).0[1..]
                    .iter()
                    .map(|d| d.fixed())
                    .collect::<Option<_>>()?;
                let [oh, kh, ow, kw, c] = d[..] else {
                    return None;
                };
                let xs = &g.shape(x).0;
                let image = [Dim::Fixed(oh * kh), Dim::Fixed(ow * kw), Dim::Fixed(c)];
                if xs.len() != 4 || xs[1..] != image || s[3] != Dim::Fixed(kh * kw) {
                    return None;
                }
                let window = Window {
                    input: [oh * kh, ow * kw],
                    output: [oh, ow],
                    kernel: [kh, kw],
                    strides: [kh, kw],
                    dilations: [1, 1],
                    pad_before: [0, 0],
                    channels: c,
                };
                Some((x, window, None))
            }
            _ => None,
        }
    }

    /// sema's max_pool2d: `sum(select(iota == argmax(t), t, 0), taps)` of
    /// `t = taps(x)` (`-inf` outside the image).
    fn max_pool(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let sel = self.is_reduce(id, ReduceKind::Sum, &[3])?;
        if g.op(sel) != &Op::Select {
            return None;
        }
        let [cond, t, zero] = g.inputs_of(sel)[..] else {
            return None;
        };
        if g.op(cond) != &Op::Binary(BinaryOp::Eq) || !self.is_scalar(zero, 0.0) {
            return None;
        }
        let c = g.inputs_of(cond);
        let (a, b) = (self.strip_broadcast(c[0]), self.strip_broadcast(c[1]));
        let first = if matches!(g.op(a), Op::Iota { axis: 3, .. }) {
            b
        } else if matches!(g.op(b), Op::Iota { axis: 3, .. }) {
            a
        } else {
            return None;
        };
        let cast = self.strip_reshape(first);
        if g.op(cast) != &Op::Cast(DType::F32) {
            return None;
        }
        let am = g.inputs_of(cast)[0];
        if g.op(am) != &(Op::ArgMax { axis: 3 }) || g.inputs_of(am)[0] != t {
            return None;
        }
        let (x, window, pad) = self.taps(t)?;
        // An explicit padding that is neither SAME nor VALID is recognized
        // too, so that its refusal names the pool (see `Lowering::Pool`).
        let ok = pad.is_none_or(|p| p == f32::NEG_INFINITY.to_bits()) && !self.foldable[x.index()];
        ok.then(|| {
            let l = Lowering::Pool {
                x,
                window,
                max: true,
            };
            (l, vec![x])
        })
    }

    /// sema's avg_pool2d: `sum(taps(x), taps) / count`, `count` each
    /// window's cells inside the image (as TF's and TFLite's SAME average).
    fn average_pool(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let t = self.is_reduce(ins[0], ReduceKind::Sum, &[3])?;
        let (x, w, pad) = self.taps(t)?;
        if pad.is_some_and(|p| p != 0) || self.foldable[x.index()] {
            return None;
        }
        if matches!(window_padding(&w), WindowPadding::Explicit(_)) {
            return None;
        }
        let inside = |a: usize, o: u32| {
            (0..w.kernel[a])
                .filter(|&k| w.source(a, o, k).is_some())
                .count()
        };
        let mut counts = Vec::new();
        for oy in 0..w.output[0] {
            for ox in 0..w.output[1] {
                counts.push((inside(0, oy) * inside(1, ox)) as f32);
            }
        }
        let den = self.strip_broadcast(ins[1]);
        let ok = match g.op(den) {
            Op::Scalar(_) => counts.iter().all(|&c| Some(c) == g.op(den).scalar_value()),
            Op::Tensor(i) => {
                let c = &g.consts[*i as usize];
                c.shape.0
                    == [
                        Dim::Fixed(w.output[0]),
                        Dim::Fixed(w.output[1]),
                        Dim::Fixed(1),
                    ]
                    && c.values == counts
            }
            _ => false,
        };
        ok.then(|| {
            let l = Lowering::Pool {
                x,
                window: w,
                max: false,
            };
            (l, vec![x])
        })
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

    /// Evaluates every needed constant node at once.
    fn fold(&mut self) -> R<()> {
        let g = self.g;
        let roots: Vec<NodeId> = (0..g.len())
            .filter(|&i| matches!(self.lowering[i], Some(Lowering::Constant)))
            .map(|i| NodeId(i as u32))
            .collect();
        let live = g.reachable(&roots);
        let mut vars = Vec::with_capacity(g.vars.len());
        for (i, leaf) in g.vars.iter().enumerate() {
            let used = g
                .nodes()
                .any(|(id, n)| live[id.index()] && n.op == Op::Var(i as u32));
            if !used {
                vars.push(interp::Tensor::scalar(0.0));
                continue;
            }
            let Some(value) = self.e.params.get(&leaf.name) else {
                return Err(Diagnostic::new(
                    Code::TfliteMissingParameter,
                    Default::default(),
                    format!("no value for parameter `{}`", leaf.name),
                ));
            };
            let want: Vec<usize> = leaf.shape.concrete(1).iter().map(|&d| d as usize).collect();
            if value.shape() != want.as_slice() {
                return Err(Diagnostic::new(
                    Code::TfliteMissingParameter,
                    Default::default(),
                    format!(
                        "parameter `{}` has shape {:?}, the model declares {}",
                        leaf.name,
                        value.shape(),
                        leaf.shape
                    ),
                ));
            }
            vars.push(interp::Tensor::new(
                want,
                value.iter().map(|&v| v as f64).collect(),
            ));
        }
        let env = interp::Env {
            inputs: &[],
            vars: &vars,
            batch: 1,
            global_step: 0.0,
        };
        let values = interp::eval(g, &env, &roots);
        self.folded = roots.into_iter().zip(values).collect();
        Ok(())
    }

    fn dims(&self, s: &Shape) -> Vec<i32> {
        s.0.iter()
            .map(|d| match d {
                Dim::Batch => self.e.batch.map_or(-1, |b| b as i32),
                Dim::Fixed(n) => *n as i32,
            })
            .collect()
    }

    fn name(&self, id: NodeId) -> String {
        match self.g.op(id) {
            Op::Var(i) => return self.g.vars[*i as usize].name.clone(),
            Op::Input(i) => return self.g.inputs[*i as usize].name.clone(),
            _ => {}
        }
        let text = op_text(self.g, self.g.op(id));
        let op = text.split_whitespace().next().unwrap_or("node");
        format!("{op}_{}", id.0)
    }

    /// The tensor holding node `id` (a constant is created on first use).
    fn tensor(&mut self, id: NodeId) -> R<i32> {
        if let Some(&t) = self.tensors.get(&id) {
            return Ok(t);
        }
        if let Some(v) = self.folded.get(&id) {
            let dims: Vec<i32> = v.dims.iter().map(|&d| d as i32).collect();
            let name = self.name(id);
            let t = match self.g.dtype(id) {
                DType::F32 => {
                    let vals: Vec<f32> = v.data.iter().map(|&x| x as f32).collect();
                    self.m.constant_f32(&name, &dims, &vals)
                }
                DType::I32 => {
                    let vals: Vec<i32> = v.data.iter().map(|&x| x as i32).collect();
                    self.m.constant_i32(&name, &dims, &vals)
                }
            };
            self.tensors.insert(id, t);
            return Ok(t);
        }
        match self.g.op(id) {
            Op::Input(i) => Err(Diagnostic::new(
                Code::TfliteUnsupported,
                self.g.span(id).unwrap_or_default(),
                format!(
                    "the output needs input `{}`, which is not among the exported inputs",
                    self.g.inputs[*i as usize].name
                ),
            )),
            _ => Err(self.unsupported(id, "no operator computes it")),
        }
    }

    fn out(&mut self, id: NodeId) -> i32 {
        let name = self.name(id);
        let dims = self.dims(self.g.shape(id));
        let t = self.m.tensor(&name, tensor_type(self.g.dtype(id)), &dims);
        self.tensors.insert(id, t);
        t
    }

    /// The images `x` as a convolution over `window` reads them, and its
    /// TFLite padding: `x` itself with SAME or VALID when the window's
    /// padding is TF's arithmetic for one of them, else `x` through a PAD
    /// operator (zeros) and VALID.
    fn padded(&mut self, id: NodeId, x: NodeId, window: &Window) -> R<(i32, Padding)> {
        let xt = self.tensor(x)?;
        let pads = match window_padding(window) {
            WindowPadding::Same => return Ok((xt, Padding::Same)),
            WindowPadding::Valid => return Ok((xt, Padding::Valid)),
            WindowPadding::Explicit(p) => p,
        };
        let name = self.name(id);
        let mut dims = self.dims(self.g.shape(x));
        let mut flat = vec![0, 0];
        for (a, (b, e)) in pads.iter().enumerate() {
            dims[1 + a] += (b + e) as i32;
            flat.extend([*b as i32, *e as i32]);
        }
        flat.extend([0, 0]);
        let pt = self
            .m
            .constant_i32(&format!("{name}/paddings"), &[4, 2], &flat);
        let y = self
            .m
            .tensor(&format!("{name}/padded"), TensorType::Float32, &dims);
        self.m.operator(
            B::Pad,
            &[xt, pt],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::PAD),
        );
        Ok((y, Padding::Valid))
    }

    /// The bias of a convolution: the constant, or zeros (TF's converter
    /// gives every convolution a bias).
    fn bias(&mut self, id: NodeId, bias: Option<NodeId>, units: usize) -> R<i32> {
        match bias {
            Some(b) => self.tensor(b),
            None => {
                let name = format!("{}/bias", self.name(id));
                Ok(self
                    .m
                    .constant_f32(&name, &[units as i32], &vec![0.0; units]))
            }
        }
    }

    fn axes_const(&mut self, id: NodeId, axes: &[i32]) -> i32 {
        let name = format!("{}/axes", self.name(id));
        self.m.constant_i32(&name, &[axes.len() as i32], axes)
    }

    fn emit(&mut self, id: NodeId, l: Lowering) -> R<()> {
        let g = self.g;
        match l {
            Lowering::Constant => {}
            Lowering::FullyConnected {
                x,
                w,
                tb,
                bias,
                act,
                keep_num_dims,
            } => {
                let xt = self.tensor(x)?;
                let wv = &self.folded[&w];
                let (k, n) = if tb {
                    (wv.dims[1], wv.dims[0])
                } else {
                    (wv.dims[0], wv.dims[1])
                };
                // TFLite's weights are [units, depth].
                let mut data = vec![0f32; k * n];
                for u in 0..n {
                    for d in 0..k {
                        data[u * k + d] = if tb {
                            wv.data[u * k + d]
                        } else {
                            wv.data[d * n + u]
                        } as f32;
                    }
                }
                let wname = if tb {
                    self.name(w)
                } else {
                    format!("{}/transpose", self.name(w))
                };
                let wt = self.m.constant_f32(&wname, &[n as i32, k as i32], &data);
                let bt = match bias {
                    Some(b) => self.tensor(b)?,
                    None => -1,
                };
                let y = self.out(id);
                // Version 5: keep_num_dims (TF's converter's versioning).
                self.m.operator_version(
                    B::FullyConnected,
                    if keep_num_dims { 5 } else { 1 },
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::FullyConnected {
                        fused_activation_function: act,
                        keep_num_dims,
                        asymmetric_quantize_inputs: false,
                    },
                );
            }
            Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias,
                act,
            } => {
                let (xt, padding) = self.padded(id, x, &window)?;
                let wv = &self.folded[&w];
                let (len, units) = (
                    window.patch_len() as usize,
                    wv.data.len() / window.patch_len() as usize,
                );
                // TFLite's filter is [O, KH, KW, C]; the kernel matrix's rows
                // are (ky, kx, c).
                let mut data = vec![0f32; len * units];
                for o in 0..units {
                    for r in 0..len {
                        data[o * len + r] = if tb {
                            wv.data[o * len + r]
                        } else {
                            wv.data[r * units + o]
                        } as f32;
                    }
                }
                let [kh, kw] = window.kernel.map(|k| k as i32);
                let name = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt = self.m.constant_f32(
                    &name,
                    &[units as i32, kh, kw, window.channels as i32],
                    &data,
                );
                let bt = self.bias(id, bias, units)?;
                let y = self.out(id);
                self.m.operator(
                    B::Conv2d,
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::Conv2D {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        fused_activation_function: act,
                        dilation_w_factor: window.dilations[1] as i32,
                        dilation_h_factor: window.dilations[0] as i32,
                    },
                );
            }
            Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                bias,
                act,
            } => {
                let (xt, padding) = self.padded(id, x, &window)?;
                // [KH·KW, C, M] is [1, KH, KW, C·M] in the same order.
                let wv = &self.folded[&w];
                let m = wv.dims[2];
                let data: Vec<f32> = wv.data.iter().map(|&v| v as f32).collect();
                let channels = window.channels as usize * m;
                let [kh, kw] = window.kernel.map(|k| k as i32);
                let name = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt = self
                    .m
                    .constant_f32(&name, &[1, kh, kw, channels as i32], &data);
                let bt = self.bias(id, bias, channels)?;
                let y = self.out(id);
                // Version 2: dilation (TF's converter's versioning).
                let version = if window.dilations == [1, 1] { 1 } else { 2 };
                self.m.operator_version(
                    B::DepthwiseConv2d,
                    version,
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::DepthwiseConv2D {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        depth_multiplier: m as i32,
                        fused_activation_function: act,
                        dilation_w_factor: window.dilations[1] as i32,
                        dilation_h_factor: window.dilations[0] as i32,
                    },
                );
            }
            Lowering::TransposeConv { x, w, window } => {
                let padding = match window_padding(&window) {
                    WindowPadding::Same => Padding::Same,
                    WindowPadding::Valid => Padding::Valid,
                    WindowPadding::Explicit(_) => {
                        return Err(
                            self.unsupported(id, "TRANSPOSE_CONV takes SAME or VALID padding")
                        )
                    }
                };
                let xt = self.tensor(x)?;
                // [KH·KW·O, I] with rows (ky, kx, o) to TFLite's [O, KH, KW, I].
                let wv = &self.folded[&w];
                let (o, i) = (window.channels as usize, wv.dims[1]);
                let [kh, kw] = window.kernel.map(|k| k as usize);
                let mut data = vec![0f32; wv.data.len()];
                for ky in 0..kh {
                    for kx in 0..kw {
                        for c in 0..o {
                            for k in 0..i {
                                data[((c * kh + ky) * kw + kx) * i + k] =
                                    wv.data[((ky * kw + kx) * o + c) * i + k] as f32;
                            }
                        }
                    }
                }
                let name = self.name(id);
                let wname = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt =
                    self.m
                        .constant_f32(&wname, &[o as i32, kh as i32, kw as i32, i as i32], &data);
                let [oh, ow] = window.input.map(|d| d as i32);
                let shape = match self.e.batch {
                    Some(b) => self.m.constant_i32(
                        &format!("{name}/output_shape"),
                        &[4],
                        &[b as i32, oh, ow, o as i32],
                    ),
                    None => {
                        // [N, H, W, I] · [1, 0, 0, 0] + [0, OH, OW, O].
                        let dims =
                            self.m
                                .tensor(&format!("{name}/input_shape"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Shape,
                            &[xt],
                            &[dims],
                            BuiltinOptions::Shape {
                                out_type: TensorType::Int32,
                            },
                        );
                        let keep =
                            self.m
                                .constant_i32(&format!("{name}/batch_only"), &[4], &[1, 0, 0, 0]);
                        let batch =
                            self.m
                                .tensor(&format!("{name}/batch"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Mul,
                            &[dims, keep],
                            &[batch],
                            BuiltinOptions::Mul {
                                fused_activation_function: Act::None,
                            },
                        );
                        let rest = self.m.constant_i32(
                            &format!("{name}/image_shape"),
                            &[4],
                            &[0, oh, ow, o as i32],
                        );
                        let shape =
                            self.m
                                .tensor(&format!("{name}/output_shape"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Add,
                            &[batch, rest],
                            &[shape],
                            BuiltinOptions::Add {
                                fused_activation_function: Act::None,
                            },
                        );
                        shape
                    }
                };
                let y = self.out(id);
                self.m.operator(
                    B::TransposeConv,
                    &[shape, wt, xt],
                    &[y],
                    BuiltinOptions::TransposeConv {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        fused_activation_function: Act::None,
                    },
                );
            }
            Lowering::Pool { x, window, max } => {
                let padding = match window_padding(&window) {
                    WindowPadding::Same => Padding::Same,
                    WindowPadding::Valid => Padding::Valid,
                    WindowPadding::Explicit(_) => {
                        // TF's converter refuses it too (tf.MaxPool with
                        // EXPLICIT padding is neither a builtin nor a flex
                        // op); PAD would pad with zeros, which can win a max.
                        return Err(self.unsupported(
                            id,
                            "MAX_POOL_2D takes SAME or VALID padding, and this explicit padding is neither (TF's converter refuses it too)",
                        ));
                    }
                };
                let xt = self.tensor(x)?;
                let y = self.out(id);
                self.m.operator(
                    if max { B::MaxPool2d } else { B::AveragePool2d },
                    &[xt],
                    &[y],
                    BuiltinOptions::Pool2D {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        filter_width: window.kernel[1] as i32,
                        filter_height: window.kernel[0] as i32,
                        fused_activation_function: Act::None,
                    },
                );
            }
            Lowering::Softmax { x, log } => {
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
            }
            Lowering::Mean { x } => {
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
            }
            Lowering::Plain => self.plain(id)?,
        }
        Ok(())
    }

    fn plain(&mut self, id: NodeId) -> R<()> {
        let g = self.g;
        let ins = g.inputs_of(id).to_vec();
        let none = Act::None;
        match g.op(id).clone() {
            Op::StopGradient => {
                let t = self.tensor(ins[0])?;
                self.tensors.insert(id, t);
            }
            Op::Unary(u) => {
                let x = self.tensor(ins[0])?;
                let op = match u {
                    UnaryOp::Neg => B::Neg,
                    UnaryOp::Exp => B::Exp,
                    UnaryOp::Log => B::Log,
                    UnaryOp::Sqrt => B::Sqrt,
                    UnaryOp::Square => B::Square,
                    UnaryOp::Abs => B::Abs,
                    UnaryOp::Sign => B::Sign,
                    UnaryOp::Relu => B::Relu,
                    UnaryOp::Sigmoid => B::Logistic,
                    UnaryOp::Tanh => B::Tanh,
                    UnaryOp::Floor => B::Floor,
                    UnaryOp::Ceil => B::Ceil,
                    UnaryOp::Sin => B::Sin,
                    UnaryOp::Cos => B::Cos,
                    UnaryOp::Recip => {
                        let one = self.m.constant_f32(&format!("{}/one", self.name(id)), &[], &[1.0]);
                        let y = self.out(id);
                        self.m.operator(
                            B::Div,
                            &[one, x],
                            &[y],
                            BuiltinOptions::Div {
                                fused_activation_function: none,
                            },
                        );
                        return Ok(());
                    }
                    UnaryOp::Log1p | UnaryOp::Softplus => {
                        return Err(self.unsupported(
                            id,
                            "TFLite has no builtin for it (writing it as log(1 + ...) would lose its precision)",
                        ))
                    }
                };
                let y = self.out(id);
                let options = if op == B::Exp {
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::EXP)
                } else {
                    BuiltinOptions::None
                };
                self.m.operator(op, &[x], &[y], options);
            }
            Op::Binary(b) => {
                let ops = self.operands(id);
                let a = self.tensor(ops[0])?;
                let c = self.tensor(ops[1])?;
                let (op, options) = match b {
                    BinaryOp::Add => (
                        B::Add,
                        BuiltinOptions::Add {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Sub => (
                        B::Sub,
                        BuiltinOptions::Sub {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Mul => (
                        B::Mul,
                        BuiltinOptions::Mul {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Div => (
                        B::Div,
                        BuiltinOptions::Div {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Max => (
                        B::Maximum,
                        BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
                    ),
                    BinaryOp::Min => (
                        B::Minimum,
                        BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
                    ),
                    BinaryOp::Pow => (B::Pow, BuiltinOptions::None),
                    BinaryOp::Gt => (B::Greater, BuiltinOptions::None),
                    BinaryOp::Ge => (B::GreaterEqual, BuiltinOptions::None),
                    BinaryOp::Lt => (B::Less, BuiltinOptions::None),
                    BinaryOp::Le => (B::LessEqual, BuiltinOptions::None),
                    BinaryOp::Eq => (B::Equal, BuiltinOptions::None),
                    BinaryOp::Ne => (B::NotEqual, BuiltinOptions::None),
                };
                if b.is_comparison() {
                    // A BOOL result, then 1.0 / 0.0 as the IR has it.
                    let dims = self.dims(g.shape(id));
                    let name = format!("{}/bool", self.name(id));
                    let cond = self.m.tensor(&name, TensorType::Bool, &dims);
                    self.m.operator(op, &[a, c], &[cond], options);
                    let y = self.out(id);
                    self.cast(cond, TensorType::Bool, y, TensorType::Float32);
                } else {
                    let y = self.out(id);
                    self.m.operator(op, &[a, c], &[y], options);
                }
            }
            Op::Select => {
                let ops = self.operands(id);
                let c = self.tensor(ops[0])?;
                let a = self.tensor(ops[1])?;
                let b = self.tensor(ops[2])?;
                let zero = self
                    .m
                    .constant_f32(&format!("{}/zero", self.name(id)), &[], &[0.0]);
                let shape = self
                    .m
                    .tensor_info(c)
                    .shape_signature
                    .clone()
                    .unwrap_or_else(|| self.m.tensor_info(c).shape.clone());
                let cond =
                    self.m
                        .tensor(&format!("{}/cond", self.name(id)), TensorType::Bool, &shape);
                self.m
                    .operator(B::NotEqual, &[c, zero], &[cond], BuiltinOptions::None);
                let y = self.out(id);
                self.m.operator(
                    B::SelectV2,
                    &[cond, a, b],
                    &[y],
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::SELECT_V2),
                );
            }
            Op::Cast(to) => {
                let x = self.tensor(ins[0])?;
                let from = tensor_type(g.dtype(ins[0]));
                let y = self.out(id);
                self.cast(x, from, y, tensor_type(to));
            }
            Op::BroadcastTo(to) => {
                let x = ins[0];
                let xt = self.tensor(x)?;
                let from = g.shape(x).clone();
                let pad = to.rank() - from.rank();
                let batch_kept =
                    to.0.iter().enumerate().all(|(k, d)| {
                        *d != Dim::Batch || (k >= pad && from.0[k - pad] == Dim::Batch)
                    });
                if self.e.batch.is_some() || !to.has_batch() {
                    let dims = self.dims(&to);
                    let st = self.m.constant_i32(
                        &format!("{}/shape", self.name(id)),
                        &[dims.len() as i32],
                        &dims,
                    );
                    let y = self.out(id);
                    self.m
                        .operator(B::BroadcastTo, &[xt, st], &[y], BuiltinOptions::None);
                } else if batch_kept {
                    // x + zeros of the target shape with the batch axis 1:
                    // ADD broadcasts the dynamic batch itself.
                    let dims: Vec<i32> =
                        to.0.iter()
                            .map(|d| match d {
                                Dim::Batch => 1,
                                Dim::Fixed(n) => *n as i32,
                            })
                            .collect();
                    let n: i32 = dims.iter().product();
                    let zeros = self.m.constant_f32(
                        &format!("{}/zeros", self.name(id)),
                        &dims,
                        &vec![0.0; n as usize],
                    );
                    let y = self.out(id);
                    self.m.operator(
                        B::Add,
                        &[xt, zeros],
                        &[y],
                        BuiltinOptions::Add {
                            fused_activation_function: none,
                        },
                    );
                } else {
                    return Err(self.unsupported(id, "it broadcasts to the batch size, which a TFLite model with a dynamic batch cannot hold as a constant (export with a fixed batch)"));
                }
            }
            Op::Reduce { kind, axes } => {
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
            }
            Op::ArgMax { axis } => {
                let x = self.tensor(ins[0])?;
                let at =
                    self.m
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
            }
            Op::MatMul { ta, tb } => {
                let a = self.tensor(ins[0])?;
                let b = self.tensor(ins[1])?;
                let y = self.out(id);
                self.m.operator(
                    B::BatchMatmul,
                    &[a, b],
                    &[y],
                    BuiltinOptions::BatchMatMul {
                        adj_x: ta,
                        adj_y: tb,
                    },
                );
            }
            Op::Reshape(to) => {
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
            }
            Op::Transpose(perm) => {
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
            }
            Op::Concat { axis } => {
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
            }
            Op::Slice { begin, shape } => {
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
                let bt =
                    self.m
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
            }
            Op::Pad { before, shape } => {
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
            }
            Op::Gather => {
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
            }
            Op::BatchSize => {
                return Err(self.unsupported(
                    id,
                    "the batch size as a value (a mean over the batch) has no TFLite equivalent",
                ))
            }
            Op::GlobalStep => {
                return Err(self.unsupported(id, "an inference model has no global step"))
            }
            Op::FirstRow => {
                return Err(self.unsupported(
                    id,
                    "a row's place in the global batch is a training-time value",
                ))
            }
            Op::NormalNoise { .. } => {
                return Err(self.unsupported(id, "random noise is a training-time op"))
            }
            Op::Iota { axis, .. } => {
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
            }
            Op::UniformHash { .. } => {
                return Err(self.unsupported(id, "random draws are a training-time op"))
            }
            Op::Training => {
                return Err(self.unsupported(
                    id,
                    "the training flag is resolved before export (an internal error)",
                ))
            }
            Op::Patches { .. } => {
                return Err(self.unsupported(
                    id,
                    "these image patches are not a convolution by a constant kernel (CONV_2D, DEPTHWISE_CONV_2D) or a max or average pool with SAME or VALID padding (MAX_POOL_2D, AVERAGE_POOL_2D)",
                ))
            }
            Op::PatchesGrad(window) => {
                let why = if window.dilations != [1, 1] {
                    "TFLite's TRANSPOSE_CONV has no dilation"
                } else if matches!(window_padding(&window), WindowPadding::Explicit(_)) {
                    "TFLite's TRANSPOSE_CONV takes SAME or VALID padding, not explicit padding"
                } else {
                    "it is not a transposed convolution by a constant kernel (TRANSPOSE_CONV)"
                };
                return Err(self.unsupported(id, why));
            }
            Op::WinogradInput(..)
            | Op::WinogradInputGrad(..)
            | Op::WinogradOutput(..)
            | Op::WinogradOutputGrad(..)
            | Op::BatchMatMul { .. } => {
                return Err(self.unsupported(
                    id,
                    "the Winograd convolution ops are introduced only for compiled steps (an internal error)",
                ))
            }
            Op::ScatterAdd | Op::FirstOccurrence { .. } | Op::SumDuplicates | Op::ScatterRows => {
                return Err(self.unsupported(id, "a training-time row update"))
            }
            Op::Input(_) | Op::Var(_) | Op::Scalar(_) | Op::Tensor(_) => {
                self.tensor(id)?;
            }
        }
        Ok(())
    }

    fn cast(&mut self, x: i32, from: TensorType, y: i32, to: TensorType) {
        self.m.operator(
            B::Cast,
            &[x],
            &[y],
            BuiltinOptions::Cast {
                in_data_type: from,
                out_data_type: to,
            },
        );
    }
}

fn tensor_type(d: DType) -> TensorType {
    match d {
        DType::F32 => TensorType::Float32,
        DType::I32 => TensorType::Int32,
    }
}

/// How TFLite places a window: TF's SAME or VALID arithmetic, or explicit
/// `(before, after)` cells per spatial axis.
#[derive(Clone, Copy, Debug, PartialEq)]
enum WindowPadding {
    Same,
    Valid,
    Explicit([(u32, u32); 2]),
}

/// The TFLite padding of `w`: VALID when its output size and padding
/// before are TF's VALID arithmetic on both axes (`out = ⌊(in − k_eff)/s⌋ +
/// 1`, none before), SAME when they are SAME's (`out = ⌈in/s⌉`,
/// `⌊pad_total/2⌋` before; a window both describe is VALID), else the explicit padding a VALID window needs to give the
/// same output (after = what the last window reaches past the image).
fn window_padding(w: &Window) -> WindowPadding {
    let mut same = true;
    let mut valid = true;
    let mut pads = [(0, 0); 2];
    for (a, pad) in pads.iter_mut().enumerate() {
        let (n, s, out, before) = (w.input[a], w.strides[a], w.output[a], w.pad_before[a]);
        let k_eff = (w.kernel[a] - 1) * w.dilations[a] + 1;
        let reach = (out.max(1) - 1) * s + k_eff;
        let same_out = n.div_ceil(s);
        let same_total = ((same_out.max(1) - 1) * s + k_eff).saturating_sub(n);
        same &= out == same_out && before == same_total / 2;
        valid &= before == 0 && n >= k_eff && out == (n - k_eff) / s + 1;
        *pad = (before, reach.saturating_sub(n + before));
    }
    if valid {
        WindowPadding::Valid
    } else if same {
        WindowPadding::Same
    } else {
        WindowPadding::Explicit(pads)
    }
}
