//! The tensor-level SSA graph that every compiler stage reads and writes.
//!
//! Owns: [`Op`], [`Node`], [`Graph`] (with hash-consing, so structurally equal
//! nodes are one node and CSE is free), [`Function`] (named roots: outputs and
//! variable updates) and the typed builder methods in [`build`].
//!
//! Invariants:
//! - Nodes are immutable once created; a node's inputs always have smaller ids
//!   (ids are a topological order).
//! - Every node has a dtype and a static [`Shape`]; the batch dimension is the
//!   symbolic [`Dim::Batch`].
//! - Elementwise ops (`Unary`, `Binary`, `Select`, `Cast`) take operands of
//!   exactly their own shape: broadcasting is always an explicit `BroadcastTo`.
//! - Arithmetic is f32; i32 appears only for class ids and argmax results and
//!   is converted with `Cast` before any arithmetic.

pub mod build;
pub mod fake_quant;
pub mod print;
pub mod recurrence;
pub mod shape;

use std::collections::HashMap;
use std::fmt;

use specc_grammar::ast::Span;

pub use fake_quant::FakeQuant;
pub use recurrence::RnnOperands;
pub use shape::{DType, Dim, Shape};

/// Index of a node in its [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Exp,
    Log,
    Log1p,
    Sqrt,
    Square,
    Abs,
    Sign,
    Relu,
    Sigmoid,
    Tanh,
    Softplus,
    Recip,
    Floor,
    Ceil,
    Sin,
    Cos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    /// `x^y` (exp(y log x); `x^0 = 1`).
    Pow,
    /// Comparisons give 1.0 or 0.0.
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Eq | BinaryOp::Ne
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Max,
}

/// What a node computes. Leaves have no inputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// The batch's value of input `i` (a feature group or label).
    Input(u32),
    /// The value of variable `i` at the start of the step.
    Var(u32),
    /// A scalar f32 constant, stored as its bits so ops hash.
    Scalar(u32),
    /// Tensor constant `i` of the graph's constant table.
    Tensor(u32),
    /// The index along `axis`, as f32, for every element of `shape`.
    Iota {
        axis: u8,
        shape: Shape,
    },
    /// The runtime batch size, as an f32 scalar.
    BatchSize,
    /// The global step before this step's increment, as an f32 scalar.
    GlobalStep,
    /// The index in the global batch of this call's first row, as an f32
    /// scalar: 0 in one process, a replica's offset in a data-parallel job
    /// (`StepCtx::first_row`). Per-row random draws key on the global row,
    /// so N replicas draw what one process draws for the global batch.
    FirstRow,
    /// Whether the function trains, as an f32 scalar: 1 in `grad` and `step`,
    /// 0 in `eval` and `predict` (TF's `training` argument of the layers).
    /// `passes::optimize` replaces it in each function before planning.
    Training,

    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `cond != 0 ? a : b` (inputs: cond, a, b).
    Select,
    Cast(DType),
    /// A uniform draw in `[0, 1)` per element (inputs: the element's index
    /// and the global step, as f32): a counter-based generator, the top 24
    /// bits of `fmix32(index · 0x9E3779B1 + fmix32(step ^ seed))` (murmur3's
    /// finalizer, wrapping u32 arithmetic) times 2⁻²⁴. No gradient.
    UniformHash {
        seed: u32,
    },
    /// Broadcast the input to this shape (NumPy rules).
    BroadcastTo(Shape),
    /// Reduce over `axes` (sorted), dropping them.
    Reduce {
        kind: ReduceKind,
        axes: Vec<u8>,
    },
    /// Index of the first maximum along `axis` (i32), dropping it.
    ArgMax {
        axis: u8,
    },
    /// Rank-2 matrix product with optional transposes.
    MatMul {
        ta: bool,
        tb: bool,
    },
    Reshape(Shape),
    Transpose(Vec<u8>),
    /// n-ary concatenation along `axis`.
    Concat {
        axis: u8,
    },
    /// Static slice: `begin` per axis, result `shape` (batch axes are taken whole).
    Slice {
        begin: Vec<u32>,
        shape: Shape,
    },
    /// Zero padding: `before` per axis, result `shape`; the inverse of `Slice`.
    Pad {
        before: Vec<u32>,
        shape: Shape,
    },
    /// Identity in the forward pass, zero gradient. Removed after autodiff.
    StopGradient,
    /// `tf.gather(params, ids)` along axis 0 (`tf.nn.embedding_lookup`):
    /// inputs `[params, ids]`, result `ids.shape ++ params.shape[1..]`. Ids are
    /// clamped into `[0, rows)` (inputs are range-checked when loaded); a
    /// negative id (a feature column's padding slot, -1) gathers zeros.
    /// Every row op below treats a negative id as naming no row.
    Gather,
    /// `base` with row `ids[i]` incremented by row `i` of `updates`, in order of
    /// `i` (`tf.tensor_scatter_nd_add`; from zeros it is `unsorted_segment_sum`,
    /// the dense value of an `IndexedSlices` gradient); a negative id adds
    /// nowhere. Inputs `[base, ids [N], updates [N, ..]]`.
    ScatterAdd,
    /// For ids `[N]` into a table of `rows` rows: the position of the first
    /// occurrence of `ids[i]` (i32 `[N]`), -1 for a negative id (padding is
    /// never a first occurrence). The sparse optimizers' deduplication.
    FirstOccurrence {
        rows: u32,
    },
    /// Rows of `values [N, ..]` summed at the first occurrence of their id
    /// (inputs `[values, first]`); rows that are not a first occurrence are 0
    /// (a padding row, first -1, is 0 and adds nowhere).
    /// TF's `unique` + `unsorted_segment_sum` of an `IndexedSlices`, in place.
    SumDuplicates,
    /// `base` with row `ids[i]` replaced by row `i` of `rows` wherever
    /// `first[i] == i` (inputs `[base, ids, first, rows]`): a lazy sparse update
    /// (padding slots, first -1, write nothing).
    ScatterRows,
    /// A standard normal draw determined by `seed` and the (scalar) input step:
    /// Box–Muller on outputs 2s+1 and 2s+2 of the splitmix64 stream `seed`.
    NormalNoise {
        seed: u64,
    },
    /// im2col of NHWC images: input `[N, H, W, C]` to `[N, OH, OW, KH·KW·C]`,
    /// the patch of output cell `(oy, ox)` in `(ky, kx, c)` order reading
    /// `x[oy·sh − pt + ky·dh, ox·sw − pl + kx·dw, c]`, and `pad` (f32 bits)
    /// where that cell is outside the image. A convolution is these patches
    /// times the kernel as a `[KH·KW·C, O]` matrix; a pooling reduces them.
    Patches {
        window: Window,
        pad: u32,
    },
    /// The adjoint of `Patches` (col2im): `[N, OH, OW, KH·KW·C]` to
    /// `[N, H, W, C]`, each image cell the sum of the patch entries that read
    /// it, in output-cell order (padding entries add nowhere).
    PatchesGrad(Window),
    /// Winograd F(m×m, 3×3) input transform (Lavin & Gray 2015) of a 3×3,
    /// stride-1, dilation-1 convolution's `window` with tiles `tile`
    /// (`a = m + 2` input cells a side, `G = a²` groups): input
    /// `[N, H, W, C]` to `V [G, N, TH, TW, C]` (`TH = ⌈OH/m⌉`,
    /// `TW = ⌈OW/m⌉`), per tile `(ty, tx)` and channel
    /// `V[a·i + j] = (Bᵀ d B)[i, j]`, where `d` is the `a×a` cells from
    /// `(m·ty − pt, m·tx − pl)`, zero outside the image
    /// ([`WinogradTile::bt`]).
    WinogradInput(Window, WinogradTile),
    /// The adjoint of `WinogradInput`: `[G, N, TH, TW, C]` to `[N, H, W, C]`,
    /// each image cell the sum over the tiles that read it (in tile order) of
    /// `(B dV B^T)` at its place in the tile.
    WinogradInputGrad(Window, WinogradTile),
    /// Winograd output transform: `M [G, N, TH, TW, O]` to `[N, OH, OW, O]`,
    /// each tile's `m×m` cells `Aᵀ M A` ([`WinogradTile::at`]), cells past
    /// `OH`/`OW` dropped.
    WinogradOutput(Window, WinogradTile),
    /// The adjoint of `WinogradOutput`: `[N, OH, OW, O]` to
    /// `[G, N, TH, TW, O]`, per tile `A dY Aᵀ` (cells past the output zero).
    WinogradOutputGrad(Window, WinogradTile),
    /// Batched matrix product over the `groups` leading axes of both
    /// operands (the same axes in each; the batch `B` only as the first):
    /// the groups are the product of those axes in row-major order, and
    /// slice `g` of the result is `MatMul { ta, tb }` of the operands'
    /// (contiguous) slices `g`, each slice a matrix as `MatMul` sees it.
    /// `tf.linalg.matmul` of several batch axes (`[B, H, T, D] @ [B, H, D,
    /// S]`, `groups = 2`); an operand whose batch axes broadcast is
    /// materialized by sema with `BroadcastTo` first (whose VJP sums back),
    /// so both operands always lead with the same group axes.
    BatchMatMul {
        ta: bool,
        tb: bool,
        groups: u8,
    },
    /// The time loop of `tf.compat.v1.nn.dynamic_rnn`
    /// (`specc_runtime::rnn::forward`): inputs `xproj [B, T, G]`,
    /// `wh [P, G]`, then those [`RnnOperands`] names (peepholes, projection,
    /// lengths, `h0`, `c0`); the result is the cell's tape `[B, T + 1, W]`
    /// (`Cell::tape`: the state of every step, and the gate values the
    /// backward loop needs). Only the tape's state fields are read by
    /// other ops (sema slices them), so its VJP reads only their cotangents.
    Recurrence {
        cell: specc_runtime::rnn::Cell,
        operands: RnnOperands,
    },
    /// The backward loop (`specc_runtime::rnn::backward`): the forward's
    /// inputs, then its tape and the cotangent of the tape's state fields
    /// `[B, T + 1, S]`; the result is the gradient tape `[B, T + 1, WG]`
    /// (`Cell::grad_tape`). Not differentiable (no second derivatives).
    RecurrenceGrad {
        cell: specc_runtime::rnn::Cell,
        operands: RnnOperands,
    },
}

/// The sliding-window geometry of a 2-D convolution or pooling over NHWC
/// images: windows of `kernel` taps spaced `dilations` apart, moved by
/// `strides`, the first starting `pad_before` cells above and left of the
/// image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// `[H, W]` of the image.
    pub input: [u32; 2],
    /// `[OH, OW]`.
    pub output: [u32; 2],
    pub kernel: [u32; 2],
    pub strides: [u32; 2],
    pub dilations: [u32; 2],
    pub pad_before: [u32; 2],
    /// `C`, the channels of the image.
    pub channels: u32,
}

impl Window {
    /// Elements of one patch, `KH·KW·C`.
    pub fn patch_len(&self) -> u32 {
        self.kernel[0] * self.kernel[1] * self.channels
    }

    /// The image coordinate along `axis` (0: rows, 1: columns) that tap `k`
    /// of output cell `o` reads, or `None` in the padding.
    pub fn source(&self, axis: usize, o: u32, k: u32) -> Option<u32> {
        let at = i64::from(o) * i64::from(self.strides[axis]) - i64::from(self.pad_before[axis])
            + i64::from(k) * i64::from(self.dilations[axis]);
        (0..i64::from(self.input[axis]))
            .contains(&at)
            .then_some(at as u32)
    }
}

/// The tile of a Winograd F(m×m, 3×3) convolution (Lavin & Gray 2015):
/// `m×m` output cells from `(m+2)×(m+2)` input cells, `(m+2)²` products
/// per channel pair ("groups"). F(2×2) multiplies 2.25× less than direct
/// convolution, F(4×4) 4×, at the price of larger transforms with
/// fractional filter coefficients (a few more ulps of rounding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WinogradTile {
    /// F(2×2, 3×3): 4×4 input tiles, 16 groups.
    F2,
    /// F(4×4, 3×3): 6×6 input tiles, 36 groups.
    F4,
}

/// F(2×2, 3×3)'s `Bᵀ` (input transform `V = Bᵀ d B`).
const F2_BT: [&[f32]; 4] = [
    &[1.0, 0.0, -1.0, 0.0],
    &[0.0, 1.0, 1.0, 0.0],
    &[0.0, -1.0, 1.0, 0.0],
    &[0.0, 1.0, 0.0, -1.0],
];
/// F(2×2, 3×3)'s `G` (filter transform `U = G g Gᵀ`).
const F2_G: [&[f32]; 4] = [
    &[1.0, 0.0, 0.0],
    &[0.5, 0.5, 0.5],
    &[0.5, -0.5, 0.5],
    &[0.0, 0.0, 1.0],
];
/// F(2×2, 3×3)'s `Aᵀ` (output transform `Y = Aᵀ M A`).
const F2_AT: [&[f32]; 2] = [&[1.0, 1.0, 1.0, 0.0], &[0.0, 1.0, -1.0, -1.0]];
/// F(4×4, 3×3)'s `Bᵀ` (interpolation points 0, ±1, ±2 and ∞).
const F4_BT: [&[f32]; 6] = [
    &[4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
    &[0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
    &[0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
    &[0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
    &[0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
    &[0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
];
/// F(4×4, 3×3)'s `G`.
const F4_G: [&[f32]; 6] = [
    &[1.0 / 4.0, 0.0, 0.0],
    &[-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    &[-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    &[1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    &[1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    &[0.0, 0.0, 1.0],
];
/// F(4×4, 3×3)'s `Aᵀ`.
const F4_AT: [&[f32]; 4] = [
    &[1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
    &[0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
    &[0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
    &[0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
];

impl WinogradTile {
    /// Output cells a tile side, `m`.
    pub fn m(self) -> u32 {
        match self {
            WinogradTile::F2 => 2,
            WinogradTile::F4 => 4,
        }
    }

    /// Input cells a tile side, `m + 2`.
    pub fn alpha(self) -> u32 {
        self.m() + 2
    }

    /// Values a tile per channel, `(m + 2)²`: the leading axis of a tile
    /// tensor and the number of batched products.
    pub fn groups(self) -> u32 {
        self.alpha() * self.alpha()
    }

    /// `Bᵀ` (`alpha × alpha`).
    pub fn bt(self) -> &'static [&'static [f32]] {
        match self {
            WinogradTile::F2 => &F2_BT,
            WinogradTile::F4 => &F4_BT,
        }
    }

    /// `G` (`alpha × 3`).
    pub fn g(self) -> &'static [&'static [f32]] {
        match self {
            WinogradTile::F2 => &F2_G,
            WinogradTile::F4 => &F4_G,
        }
    }

    /// `Aᵀ` (`m × alpha`).
    pub fn at(self) -> &'static [&'static [f32]] {
        match self {
            WinogradTile::F2 => &F2_AT,
            WinogradTile::F4 => &F4_AT,
        }
    }

    /// The name in dumps: `f2x2`, `f4x4`.
    pub fn name(self) -> &'static str {
        match self {
            WinogradTile::F2 => "f2x2",
            WinogradTile::F4 => "f4x4",
        }
    }

    /// The tile a convolution's `window` takes by default: the one with
    /// fewer transformed values (tiles × groups, hence products) for its
    /// output size, F(2×2) on a tie (the smaller rounding). W7's 8×8
    /// outputs: 16 tiles × 16 against 4 × 36, so F(4×4).
    pub fn for_window(window: &Window) -> WinogradTile {
        let values = |t: WinogradTile| {
            let [th, tw] = window.winograd_tiles(t);
            u64::from(th * tw) * u64::from(t.groups())
        };
        if values(WinogradTile::F4) < values(WinogradTile::F2) {
            WinogradTile::F4
        } else {
            WinogradTile::F2
        }
    }
}

impl Window {
    /// `[TH, TW]`: the `m×m` output tiles of a Winograd transform.
    pub fn winograd_tiles(&self, tile: WinogradTile) -> [u32; 2] {
        let m = tile.m();
        [self.output[0].div_ceil(m), self.output[1].div_ceil(m)]
    }

    /// Whether the window is a convolution Winograd F(m×m, 3×3) computes:
    /// a 3×3 kernel, stride 1, dilation 1.
    pub fn winograd_fits(&self) -> bool {
        self.kernel == [3, 3] && self.strides == [1, 1] && self.dilations == [1, 1]
    }
}

impl Op {
    pub fn scalar_value(&self) -> Option<f32> {
        match self {
            Op::Scalar(bits) => Some(f32::from_bits(*bits)),
            _ => None,
        }
    }
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_) | Op::Binary(_) | Op::Select | Op::Cast(_) | Op::UniformHash { .. }
        )
    }
    pub fn is_leaf(&self) -> bool {
        matches!(
            self,
            Op::Input(_)
                | Op::Var(_)
                | Op::Scalar(_)
                | Op::Tensor(_)
                | Op::Iota { .. }
                | Op::BatchSize
                | Op::GlobalStep
                | Op::FirstRow
                | Op::Training
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<NodeId>,
    pub dtype: DType,
    pub shape: Shape,
}

/// A named leaf declaration: an input or a variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub name: String,
    pub dtype: DType,
    pub shape: Shape,
}

/// A constant tensor (row-major values).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstTensor {
    pub shape: Shape,
    pub dtype: DType,
    pub values: Vec<f32>,
}

/// The graph: nodes, their source positions, and the leaves they refer to.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    nodes: Vec<Node>,
    spans: Vec<Option<Span>>,
    intern: HashMap<(Op, Vec<NodeId>), NodeId>,
    pub inputs: Vec<Leaf>,
    pub vars: Vec<Leaf>,
    pub consts: Vec<ConstTensor>,
    /// The fake quantizations sema lowered, by their nodes (an export's
    /// quantization boundaries).
    pub fake_quants: Vec<FakeQuant>,
    /// Span given to nodes created from now on (sema sets it per expression).
    pub current_span: Option<Span>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    pub fn shape(&self, id: NodeId) -> &Shape {
        &self.nodes[id.index()].shape
    }

    pub fn dtype(&self, id: NodeId) -> DType {
        self.nodes[id.index()].dtype
    }

    pub fn op(&self, id: NodeId) -> &Op {
        &self.nodes[id.index()].op
    }

    pub fn inputs_of(&self, id: NodeId) -> &[NodeId] {
        &self.nodes[id.index()].inputs
    }

    pub fn span(&self, id: NodeId) -> Option<Span> {
        self.spans[id.index()]
    }

    /// Which graph inputs the `roots` read, directly or through other nodes
    /// (`read[i]` for input `i`): one sweep down the ids, which are a
    /// topological order, so no recursion however deep the graph.
    pub fn inputs_read(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut read = vec![false; self.inputs.len()];
        let Some(top) = roots.iter().map(|r| r.index()).max() else {
            return read;
        };
        let mut live = vec![false; top + 1];
        for r in roots {
            live[r.index()] = true;
        }
        for i in (0..=top).rev() {
            if !live[i] {
                continue;
            }
            let n = &self.nodes[i];
            if let Op::Input(k) = n.op {
                if let Some(r) = read.get_mut(k as usize) {
                    *r = true;
                }
            }
            for x in &n.inputs {
                live[x.index()] = true;
            }
        }
        read
    }

    /// Adds a variable declaration; returns its index for `Op::Var`.
    pub fn add_var(&mut self, name: &str, dtype: DType, shape: Shape) -> u32 {
        self.vars.push(Leaf {
            name: name.to_string(),
            dtype,
            shape,
        });
        (self.vars.len() - 1) as u32
    }

    /// Gives variable `v` a new shape, on its declaration and on its node:
    /// the sharded-table rewrite, whose readers (lookups) do not depend on
    /// the first dimension.
    pub fn set_var_shape(&mut self, v: u32, shape: Shape) {
        for n in &mut self.nodes {
            if n.op == Op::Var(v) {
                n.shape = shape.clone();
            }
        }
        self.vars[v as usize].shape = shape;
    }

    /// Adds an input declaration; returns its index for `Op::Input`.
    pub fn add_input(&mut self, name: &str, dtype: DType, shape: Shape) -> u32 {
        self.inputs.push(Leaf {
            name: name.to_string(),
            dtype,
            shape,
        });
        (self.inputs.len() - 1) as u32
    }

    /// Interns a node whose dtype and shape the caller has computed.
    /// Structurally equal nodes are returned as the existing id.
    pub fn intern(&mut self, op: Op, inputs: Vec<NodeId>, dtype: DType, shape: Shape) -> NodeId {
        use std::collections::hash_map::Entry;
        let next = NodeId(self.nodes.len() as u32);
        match self.intern.entry((op, inputs)) {
            Entry::Occupied(e) => {
                let id = *e.get();
                if self.spans[id.index()].is_none() {
                    self.spans[id.index()] = self.current_span;
                }
                id
            }
            Entry::Vacant(e) => {
                let (op, inputs) = e.key().clone();
                e.insert(next);
                self.nodes.push(Node {
                    op,
                    inputs,
                    dtype,
                    shape,
                });
                self.spans.push(self.current_span);
                next
            }
        }
    }

    /// The entries of the hash-consing table: `(op, inputs)` and the node
    /// `Graph::intern` returns for them (for `verify::ir`'s check).
    pub(crate) fn interned(&self) -> impl ExactSizeIterator<Item = (&Op, &[NodeId], NodeId)> {
        self.intern
            .iter()
            .map(|((op, inputs), &id)| (op, inputs.as_slice(), id))
    }

    /// Appends `node` without hash-consing it: a broken graph for the
    /// verifier's tests.
    #[cfg(test)]
    pub(crate) fn push_unhashed(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.spans.push(None);
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// Number of uses of each node among the nodes reachable from `roots`.
    pub fn use_counts(&self, roots: &[NodeId]) -> Vec<u32> {
        let live = self.reachable(roots);
        let mut counts = vec![0u32; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if live[i] {
                for &inp in &n.inputs {
                    counts[inp.index()] += 1;
                }
            }
        }
        for r in roots {
            counts[r.index()] += 1;
        }
        counts
    }

    /// Marks the nodes reachable from `roots`.
    pub fn reachable(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        for r in roots {
            live[r.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for inp in &self.nodes[i].inputs {
                    live[inp.index()] = true;
                }
            }
        }
        live
    }
}

/// A named output of a function.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub name: String,
    pub node: NodeId,
}

/// An entry point over the graph: what it returns and which variables it assigns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Function {
    pub name: String,
    pub outputs: Vec<Output>,
    /// `(var index, new value)`: assigned after everything else is computed.
    pub updates: Vec<(u32, NodeId)>,
    /// Whether the function increments the global step.
    pub increments_global_step: bool,
}

impl Function {
    pub fn new(name: &str) -> Function {
        Function {
            name: name.to_string(),
            ..Function::default()
        }
    }

    /// Every node the function needs, outputs first then updates.
    pub fn roots(&self) -> Vec<NodeId> {
        self.outputs
            .iter()
            .map(|o| o.node)
            .chain(self.updates.iter().map(|u| u.1))
            .collect()
    }

    pub fn output(&self, name: &str) -> Option<NodeId> {
        self.outputs.iter().find(|o| o.name == name).map(|o| o.node)
    }
}
