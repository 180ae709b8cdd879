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
use crate::ir::{DType, NodeId, ReduceKind, Shape, Window};

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
}

/// The patches of NHWC images (`Op::Patches`, `grad` false: `dst` gets the
/// patches of `src`, `pad` outside the images) or their adjoint
/// (`Op::PatchesGrad`, `grad` true: `dst` is zeroed, then gets every patch
/// entry of `src` added at the cell it reads). Every view is row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowKernel {
    pub node: NodeId,
    pub grad: bool,
    pub window: Window,
    pub pad: f32,
    /// Number of images, `N`.
    pub images: Lin,
    pub src: View,
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
}

impl Plan {
    pub fn buffer(&self, b: BufId) -> &Buffer {
        &self.buffers[b.0 as usize]
    }
}
