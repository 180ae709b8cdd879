//! The plan's vocabulary: buffers, kernels and the plan of one function.
//!
//! Owns: the public types the planner produces and the code generator,
//! the printer and the profiler consume — where a buffer lives ([`Loc`],
//! [`Buffer`]), how a loop reads a value ([`Source`]), the kernels
//! ([`LoopKernel`], GEMM and argmax, [`RowKernel`], [`WindowKernel`]), how threads share a
//! kernel ([`Mode`]), and the [`Plan`].
//!
//! Invariants (kept by the planner, relied on by codegen): every view a
//! kernel holds addresses a buffer of its plan; a loop's `body` is in
//! dependency order and its `stores` and `reductions` only name nodes of the
//! body or its sources; `modes` has one entry per kernel.

use std::collections::HashMap;

use specc_runtime::abi::OutputLayout;

use super::view::{BufId, Lin, View};
use crate::ir::{DType, NodeId, ReduceKind, Shape, Window, WinogradTile};

/// Where a buffer lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loc {
    /// `ctx.inputs[i]`
    Input(u32),
    /// `ctx.arenas[arena] + offset` (f32 elements).
    Arena { arena: u32, offset: u64 },
    /// `ctx.outputs[i]`
    Output(u32),
    /// `ctx.scratch + offset` (bytes).
    Scratch { offset: u64 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub node: NodeId,
    pub loc: Loc,
    pub shape: Shape,
    pub dtype: DType,
}

/// How a loop obtains a value it does not compute.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Loaded through a view (i32 buffers are converted to f32).
    Load(View, DType),
    /// A scalar SSA value, the same for every element.
    Scalar(NodeId),
    /// The loop index along an axis, as f32.
    Iota { axis: usize },
    /// A constant.
    Const(f32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    pub node: NodeId,
    pub kind: ReduceKind,
    pub input: NodeId,
    /// Where the result goes; `None`: a scalar SSA value.
    pub dest: Option<View>,
}

/// A loop nest over `domain`, reducing `reduce_axes` when it has reductions.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopKernel {
    pub domain: Shape,
    pub reduce_axes: Vec<usize>,
    /// Elementwise nodes computed per element, in dependency order.
    pub body: Vec<NodeId>,
    /// Values read per element that the body does not compute.
    pub sources: Vec<(NodeId, Source)>,
    /// Values written per element (body nodes or sources) and where.
    pub stores: Vec<(NodeId, View)>,
    pub reductions: Vec<Reduction>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kernel {
    Loop(LoopKernel),
    /// `c = a @ b` through `specc_sgemm`; views are over the operands' own shapes.
    Gemm {
        node: NodeId,
        a: View,
        b: View,
        c: View,
        ta: bool,
        tb: bool,
        m: Lin,
        k: Lin,
        n: Lin,
        /// A batched product (`Op::BatchMatMul`): this many GEMMs, the views
        /// advancing by the given element strides from one to the next.
        groups: Option<Groups>,
        /// A bias row and/or relu applied to C's final values
        /// (`plan::epilogue`); C then holds the epilogue's node.
        epilogue: Option<GemmEpilogue>,
    },
    /// Index of the first maximum along `axis` of `src` (viewed over `shape`).
    ArgMax {
        node: NodeId,
        src: View,
        shape: Shape,
        axis: usize,
        dst: View,
    },
    /// A row-indexed kernel (see [`RowKernel`]).
    Rows(RowKernel),
    /// im2col or col2im (see [`WindowKernel`]).
    Window(WindowKernel),
    /// A Winograd convolution's transforms and products over blocks of
    /// images (see [`WinogradKernel`]).
    Winograd(WinogradKernel),
    /// A recurrent layer's time loop or its backward loop (see
    /// [`RecurrenceKernel`]).
    Recurrence(RecurrenceKernel),
}

impl Kernel {
    /// The buffers a kernel reads and writes (row kernels: all of theirs as both).
    pub fn reads_writes(&self) -> (Vec<BufId>, Vec<BufId>) {
        let mut r = Vec::new();
        let mut w = Vec::new();
        match self {
            Kernel::Loop(l) => {
                for (_, s) in &l.sources {
                    if let Source::Load(v, _) = s {
                        r.push(v.buf);
                    }
                }
                w.extend(l.stores.iter().map(|(_, v)| v.buf));
                for red in &l.reductions {
                    if let Some(v) = &red.dest {
                        r.push(v.buf);
                        w.push(v.buf);
                    }
                }
            }
            Kernel::Gemm {
                a, b, c, epilogue, ..
            } => {
                r.extend([a.buf, b.buf]);
                r.extend(
                    epilogue
                        .iter()
                        .filter_map(|e| e.bias.as_ref().map(|v| v.buf)),
                );
                w.push(c.buf);
            }
            Kernel::ArgMax { src, dst, .. } => {
                r.push(src.buf);
                w.push(dst.buf);
            }
            Kernel::Window(x) => {
                r.push(x.src.buf);
                w.push(x.dst.buf);
            }
            Kernel::Rows(x) => {
                for v in [Some(&x.ids), x.src.as_ref(), x.first.as_ref(), Some(&x.dst)]
                    .into_iter()
                    .flatten()
                {
                    r.push(v.buf);
                    w.push(v.buf);
                }
            }
            Kernel::Winograd(x) => return x.reads_writes(),
            Kernel::Recurrence(x) => {
                r.extend(x.inputs.iter().map(|v| v.buf));
                w.push(x.dst.buf);
            }
        }
        (r, w)
    }
}

/// What a GEMM applies to each element of C after its last k block, in
/// this order: `c + bias[j]` (with a bias), then `c > 0 ? c : 0` (with
/// relu): a fused elementwise loop's operations (`plan::epilogue`).
#[derive(Clone, Debug, PartialEq)]
pub struct GemmEpilogue {
    /// The node C holds afterwards (the fused loop's stored value).
    pub node: NodeId,
    /// The bias, viewed over C's shape (row stride 0).
    pub bias: Option<View>,
    pub relu: bool,
}

/// The groups of a batched GEMM: `count` products, group `g` reading `a`,
/// `b` and writing `c` at `g` times the strides past the kernel's views.
/// Threads split the groups (each product whole), so results do not depend
/// on the thread count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Groups {
    /// How many products: fixed, or the batch size (a product per example).
    pub count: Lin,
    pub a: Lin,
    pub b: Lin,
    pub c: Lin,
}

/// What a window kernel computes (every one a loop over images).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowOp {
    /// `Op::Patches`: `dst` gets the patches of `src`, `pad` outside the images.
    Patches,
    /// `Op::PatchesGrad`: `dst` is zeroed, then gets every patch entry of
    /// `src` added at the cell it reads.
    PatchesGrad,
    /// `Op::WinogradInput`: images to tiles `[G, N, TH, TW, C]`.
    WinogradInput,
    /// `Op::WinogradInputGrad`: tiles to images (zeroed, then accumulated).
    WinogradInputGrad,
    /// `Op::WinogradOutput`: tile products to images.
    WinogradOutput,
    /// `Op::WinogradOutputGrad`: images to tiles.
    WinogradOutputGrad,
}

impl WindowOp {
    /// The op's name in dumps (as in the IR).
    pub fn name(self) -> &'static str {
        match self {
            WindowOp::Patches => "patches",
            WindowOp::PatchesGrad => "patches_grad",
            WindowOp::WinogradInput => "winograd_input",
            WindowOp::WinogradInputGrad => "winograd_input_grad",
            WindowOp::WinogradOutput => "winograd_output",
            WindowOp::WinogradOutputGrad => "winograd_output_grad",
        }
    }
}

/// A loop over images moving windows of `src` to `dst` ([`WindowOp`]).
/// Every view is row-major; a tile tensor `[G, N, TH, TW, channels]` (`G`
/// the tile's groups) has the images on its second axis.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowKernel {
    pub node: NodeId,
    pub op: WindowOp,
    pub window: Window,
    /// The tile of a Winograd op (`None` for the patches ops).
    pub tile: Option<WinogradTile>,
    /// Channels of a cell: the window's `C`, or `O` for the output transforms.
    pub channels: u32,
    pub pad: f32,
    /// Number of images, `N`.
    pub images: Lin,
    pub src: View,
    pub dst: View,
}

/// The Winograd F(m×m, 3×3) transforms and batched products of one
/// convolution pass, run block by block over the images so that each
/// block's tile tensors stay in cache (`plan::winofuse`):
/// - forward (`y`): `y = winograd_output(winograd_input(x) @ u)`, the input
///   tiles also stored whole into `v` when something else reads them;
/// - backward (`dy`): `dM = winograd_output_grad(dy)`, then
///   `dx = winograd_input_grad(dM @ uᵀ)` and/or
///   `du = winograd_input(x)ᵀ @ dM` summed over the images.
///
/// A block's tiles live in per-thread scratch at `scratch` (bytes). The
/// filter gradient is summed in two fixed halves of the blocks (the first
/// into `du`, the second into the scratch at `acc`), added at the end, so
/// its bits do not depend on the thread count (two threads take one half
/// each).
#[derive(Clone, Debug, PartialEq)]
pub struct WinogradKernel {
    /// The node of the last op replaced (names the kernel).
    pub node: NodeId,
    pub window: Window,
    pub tile: WinogradTile,
    /// Number of images, `N`.
    pub images: Lin,
    /// Images per block.
    pub block: u32,
    /// Output channels `O` (the input channels are the window's).
    pub out_channels: u32,
    /// Input images `[N, H, W, C]`.
    pub x: View,
    /// The transformed filter `[G, C, O]` (row-major), when read.
    pub u: Option<View>,
    /// Forward: the output images `[N, OH, OW, O]`.
    pub y: Option<View>,
    /// Forward: the whole input tile tensor, when other kernels read it.
    pub v: Option<View>,
    /// Backward: the output gradient `[N, OH, OW, O]`.
    pub dy: Option<View>,
    /// Backward: the input gradient `[N, H, W, C]`.
    pub dx: Option<View>,
    /// Backward: the transformed filter gradient `[G, C, O]`.
    pub du: Option<View>,
    /// Byte offset of the per-thread block tiles in scratch.
    pub scratch: u64,
    /// Byte offset of the second half's filter gradient in scratch.
    pub acc: u64,
}

impl WinogradKernel {
    /// Tiles per image.
    pub fn tiles(&self) -> u64 {
        let [th, tw] = self.window.winograd_tiles(self.tile);
        u64::from(th * tw)
    }

    /// Values a tile per channel: the batched products of a block.
    pub fn groups(&self) -> u64 {
        u64::from(self.tile.groups())
    }

    /// Bytes from one group to the next in a block buffer of tiles with
    /// `channels` channels: the group's tiles rounded up to 4 KiB, plus one
    /// cache line. Groups a multiple of 4 KiB apart would all fall in the
    /// same L1 set (and alias in the store buffer), and a transform writes
    /// or reads all of a tile's 16 or 36 groups at once: with the extra
    /// line they fall in consecutive sets (W7 with F(4×4): the transforms
    /// ran ~1.4× slower without it).
    pub fn group_bytes(&self, channels: u32) -> u64 {
        let bytes = u64::from(self.block) * self.tiles() * u64::from(channels) * 4;
        bytes.next_multiple_of(4096) + 64
    }

    /// Bytes of one thread's block tiles: the input tiles and the output
    /// (gradient) tiles of `block` images.
    pub fn block_bytes(&self) -> u64 {
        self.groups()
            * (self.group_bytes(self.window.channels) + self.group_bytes(self.out_channels))
    }

    /// Bytes of the second filter-gradient accumulator (0 without one).
    pub fn acc_bytes(&self) -> u64 {
        if self.du.is_some() {
            let (c, o) = (self.window.channels, self.out_channels);
            (self.groups() * u64::from(c) * u64::from(o) * 4).next_multiple_of(64)
        } else {
            0
        }
    }

    /// The buffers it reads and writes.
    pub fn reads_writes(&self) -> (Vec<BufId>, Vec<BufId>) {
        let reads = [Some(&self.x), self.u.as_ref(), self.dy.as_ref()]
            .into_iter()
            .flatten()
            .map(|v| v.buf)
            .collect();
        let writes = [
            self.y.as_ref(),
            self.v.as_ref(),
            self.dx.as_ref(),
            self.du.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(|v| v.buf)
        .collect();
        (reads, writes)
    }
}

/// `Op::Recurrence` (`grad == false`) or `Op::RecurrenceGrad`: one call of
/// the runtime's `specc_rnn_forward` / `specc_rnn_backward` per thread,
/// each with a range of the rows (the loops' bits do not depend on the
/// split: `specc_runtime::rnn`).
#[derive(Clone, Debug, PartialEq)]
pub struct RecurrenceKernel {
    pub node: NodeId,
    pub cell: specc_runtime::rnn::Cell,
    pub operands: crate::ir::RnnOperands,
    pub grad: bool,
    /// The batch rows, `B`.
    pub rows: Lin,
    /// The time steps, `T`.
    pub steps: u32,
    /// The op's inputs, in its order, each row-major and contiguous.
    pub inputs: Vec<View>,
    /// The tape or gradient tape, row-major.
    pub dst: View,
}

/// What a row kernel does for each of its `n` ids (`r = ids[i]`, clamped to
/// `[0, rows)`; a row is `row_len` contiguous elements). A negative id is a
/// padding slot that names no row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// `dst[i] = src[r]` (zeros for a negative id)
    Gather,
    /// `dst[r] += src[i]`, in order of `i` (nothing for a negative id)
    ScatterAdd,
    /// `dst[i] = i` if `r` first occurs at `i`, else the position of its first
    /// occurrence, -1 for a negative id; `src` is the persistent marker table
    /// (i32 `[rows]`, all zero between calls).
    FirstOccurrence,
    /// The same through a hash table of `capacity` entries (a power of two,
    /// at least twice the ids; `src` is i32 `[2 * capacity]`, all zero
    /// between calls): for tables much larger than a batch's ids, where the
    /// marker table would miss the cache on every id.
    FirstOccurrenceHashed { capacity: u32 },
    /// `dst[i] = 0 + src[i]` where `first[i] == i`, else `dst[first[i]] += src[i]`
    /// (when `first[i] >= 0`) and `dst[i] = 0`.
    SumDuplicates,
    /// `dst[r] = src[i]` where `first[i] == i`
    ScatterRows,
}

/// A loop over ids with a row operation per id; every view is row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct RowKernel {
    pub node: NodeId,
    pub op: RowOp,
    /// Number of ids.
    pub n: Lin,
    /// Elements per row.
    pub row_len: u64,
    /// Rows of the indexed table.
    pub rows: u64,
    pub ids: View,
    pub src: Option<View>,
    pub first: Option<View>,
    pub dst: View,
}

/// How the threads of an SPMD function share a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every thread takes a disjoint slice (split along a kept dimension, so
    /// results do not depend on the thread count); one thread: the whole kernel.
    Split,
    /// Thread 0 runs the whole kernel; the others wait at the next barrier.
    Single,
}

/// A function's kernels, buffers and what it writes besides them.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    pub buffers: Vec<Buffer>,
    pub kernels: Vec<Kernel>,
    /// Per kernel: how threads share it.
    pub modes: Vec<Mode>,
    /// Threads that run every call together (1 or 2).
    pub threads: u32,
    /// Where the threads wait for each other (none with one thread).
    pub syncs: super::Syncs,
    pub scratch_bytes: u64,
    /// The scratch buffers the memory planner placed back to back as one
    /// block each, live while any member is (`plan::merge`'s chains: a
    /// merged update loop reads them all through its first member's view).
    pub chains: Vec<super::merge::Chain>,
    pub outputs: Vec<OutputLayout>,
    /// Scalar outputs, stored at the end: (output index, node).
    pub scalar_outputs: Vec<(u32, NodeId)>,
    /// Scalar variable updates, stored at the end: (arena, offset, node).
    pub scalar_updates: Vec<(u32, u64, NodeId)>,
    /// Scalar nodes read from memory (a view of a one-element tensor).
    pub scalar_loads: HashMap<NodeId, (View, DType)>,
    /// (arena, offset) of every graph variable.
    pub var_locs: Vec<(usize, usize)>,
    pub increments_global_step: bool,
    pub max_batch: u64,
    /// A two-thread plan of a short step: the same function planned for one
    /// thread (named by `plan::twin_name`), which the session runs instead
    /// while the two threads stall each other on a busy machine. The same
    /// bits either way (a plan's results never depend on its threads).
    pub twin: Option<Box<Plan>>,
}

impl Plan {
    pub fn buffer(&self, b: BufId) -> &Buffer {
        &self.buffers[b.0 as usize]
    }
}
