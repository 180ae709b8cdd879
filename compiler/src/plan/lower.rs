//! Lowering: each unit to its kernels.
//!
//! Owns: building the kernels of a unit once every node has its buffer — a
//! fused group to one [`LoopKernel`] (body in node order, one source per
//! value read from outside, a store per member with a buffer, a reduction per
//! reduce member), a copy unit to a copy loop (over the shape of what it
//! reads, see `resolve`), a matmul to a GEMM, argmax to
//! its kernel, concat and pad to copy loops into windows of the output (pad
//! fills it with zeros first), and the row-indexed ops to [`RowKernel`]s
//! (a scatter not in place first copies its base into its own buffer).
//! Scalar nodes that view a one-element tensor become scalar loads, and with
//! two threads a scalar reduction also goes to memory, where the other thread
//! reads it after the barrier.
//!
//! Invariants: lowering adds units only by materializing operands (copy
//! units appended at the end, lowered in turn, so the loop runs by index);
//! every kernel of unit `u` is in `kernels[u]`; dependencies are computed
//! after the last unit is added.

use std::collections::{BTreeSet, HashSet};

use super::units::{Class, Unit};
use super::view::{self, BufId, Lin, View};
use super::{
    Buffer, Groups, Kernel, Loc, LoopKernel, Planner, RecurrenceKernel, Reduction, RowKernel,
    RowOp, Source, WindowKernel, WindowOp,
};
use crate::ir::{DType, NodeId, Op, Shape, Window, WinogradTile};

/// A loop over `domain` that stores `src` (read as `node`) into `dst`: a copy,
/// or a fill when `src` is a constant.
fn copy_loop(domain: Shape, node: NodeId, src: Source, dst: View) -> Kernel {
    Kernel::Loop(LoopKernel {
        domain,
        reduce_axes: vec![],
        body: vec![],
        sources: vec![(node, src)],
        stores: vec![(node, dst)],
        reductions: vec![],
    })
}

impl Planner<'_> {
    /// Builds each unit's kernels; returns them with the unit dependencies.
    pub(super) fn lower_units(&mut self) -> (Vec<Vec<Kernel>>, Vec<BTreeSet<usize>>) {
        // Scalar nodes that are views of one-element tensors are loads.
        for i in 0..self.g.len() {
            let n = NodeId(i as u32);
            if self.live[i]
                && self.g.shape(n).is_scalar()
                && matches!(
                    self.g.op(n),
                    Op::Reshape(_) | Op::Slice { .. } | Op::Transpose(_)
                )
            {
                let x = self.g.inputs_of(n)[0];
                if !self.g.shape(x).is_scalar() {
                    let v = self.load_view(x);
                    self.scalar_loads.insert(n, (v, self.g.dtype(x)));
                }
            }
        }
        let mut kernels: Vec<Vec<Kernel>> = Vec::new();
        let mut ui = 0;
        // Units can be appended while lowering (forced copies), so iterate by index.
        while ui < self.units.len() {
            let k = self.lower_unit(ui);
            kernels.push(k);
            ui += 1;
        }
        let deps = (0..self.units.len()).map(|u| self.unit_deps(u)).collect();
        (kernels, deps)
    }

    fn lower_unit(&mut self, ui: usize) -> Vec<Kernel> {
        match self.units[ui].clone() {
            Unit::Group(gi) => vec![Kernel::Loop(self.lower_group(gi))],
            Unit::Copy { node, dst } => {
                let (read, src) = self.source_for_copy(node);
                let shape = self.g.shape(read).clone();
                let dst = View::contiguous(dst, &shape).expect("copyable shape");
                vec![copy_loop(shape, read, src, dst)]
            }
            Unit::Node(n) => self.lower_node(n),
        }
    }

    fn lower_group(&mut self, gi: usize) -> LoopKernel {
        let group = self.groups[gi].clone();
        let mut body = Vec::new();
        let mut reductions = Vec::new();
        let mut sources: Vec<(NodeId, Source)> = Vec::new();
        let mut read = HashSet::new();
        for &m in &group.members {
            if self.cls(m) == Class::Reduce {
                let Op::Reduce { kind, .. } = self.g.op(m) else {
                    unreachable!()
                };
                let scalar = self.g.shape(m).is_scalar();
                if scalar && self.threads > 1 && !self.node_buf.contains_key(&m) {
                    // Other threads read the result from memory after the barrier.
                    let b = self.add_buffer(m, Loc::Scratch { offset: 0 });
                    self.node_buf.insert(m, b);
                    self.scalar_loads.insert(m, (self.out_view(m), DType::F32));
                }
                let dest = if scalar && !self.node_buf.contains_key(&m) {
                    None
                } else {
                    Some(self.out_view(m))
                };
                reductions.push(Reduction {
                    node: m,
                    kind: *kind,
                    input: self.g.inputs_of(m)[0],
                    dest,
                });
            } else {
                body.push(m);
            }
            for &i in self.g.inputs_of(m) {
                if !group.members.contains(&i) && read.insert(i) {
                    let s = self.source(i);
                    sources.push((i, s));
                }
            }
        }
        let stores = body
            .iter()
            .filter(|&&m| self.node_buf.contains_key(&m))
            .map(|&m| (m, self.out_view(m)))
            .collect();
        LoopKernel {
            domain: group.domain,
            reduce_axes: if reductions.is_empty() {
                vec![]
            } else {
                group.axes
            },
            body,
            sources,
            stores,
            reductions,
        }
    }

    fn lower_node(&mut self, n: NodeId) -> Vec<Kernel> {
        let inputs = self.g.inputs_of(n).to_vec();
        match self.g.op(n).clone() {
            Op::MatMul { ta, tb } => {
                let (sa, sb) = (
                    self.g.shape(inputs[0]).clone(),
                    self.g.shape(inputs[1]).clone(),
                );
                let a = self.matrix_view(inputs[0]);
                let b = self.matrix_view(inputs[1]);
                // An operand of rank > 2 is the matrix [product of its leading
                // dims, its last dim] (`shape::matmul`).
                let (ar, ac) = matrix_dims(&sa);
                let (br, bc) = matrix_dims(&sb);
                let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
                let nn = if tb { br } else { bc };
                vec![Kernel::Gemm {
                    node: n,
                    a,
                    b,
                    c: self.matrix_out_view(n),
                    ta,
                    tb,
                    m,
                    k,
                    n: nn,
                    groups: None,
                    epilogue: None,
                }]
            }
            Op::BatchMatMul {
                ta,
                tb,
                groups: axes,
            } => {
                // One GEMM per group, over the operands' row-major slices:
                // one kernel whose groups the threads share. The groups are
                // the product of the `axes` leading axes (`B` only the first).
                let axes = usize::from(axes);
                let group_shape = |s: &Shape| Shape(s.0[axes..].to_vec());
                let (sa, sb, sc) = (
                    group_shape(self.g.shape(inputs[0])),
                    group_shape(self.g.shape(inputs[1])),
                    group_shape(self.g.shape(n)),
                );
                let groups = self.g.shape(n).0[..axes]
                    .iter()
                    .try_fold(Lin::constant(1), |acc, &d| acc.mul_dim(d))
                    .expect("a batch_matmul has the batch dimension at most once");
                let a = self.row_major_view(inputs[0]);
                let b = self.row_major_view(inputs[1]);
                let c = self.out_view(n);
                let (ar, ac) = matrix_dims(&sa);
                let (br, bc) = matrix_dims(&sb);
                let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
                let nn = if tb { br } else { bc };
                let stride = |v: &View| v.strides[axes - 1];
                vec![Kernel::Gemm {
                    node: n,
                    a: group_matrix(&a, &sa, 0),
                    b: group_matrix(&b, &sb, 0),
                    c: group_matrix(&c, &sc, 0),
                    ta,
                    tb,
                    m,
                    k,
                    n: nn,
                    groups: Some(Groups {
                        count: groups,
                        a: stride(&a),
                        b: stride(&b),
                        c: stride(&c),
                    }),
                    epilogue: None,
                }]
            }
            Op::ArgMax { axis } => {
                let src = self.load_view(inputs[0]);
                vec![Kernel::ArgMax {
                    node: n,
                    src,
                    shape: self.g.shape(inputs[0]).clone(),
                    axis: axis as usize,
                    dst: self.out_view(n),
                }]
            }
            Op::Concat { axis } => {
                let out = self.out_view(n);
                let mut ks = Vec::new();
                let mut offset = 0u32;
                for &p in &inputs {
                    let ps = self.g.shape(p).clone();
                    let mut begin = vec![0u32; ps.rank()];
                    begin[axis as usize] = offset;
                    offset += ps.0[axis as usize].fixed().unwrap_or(0);
                    let src = self.source(p);
                    ks.push(copy_loop(ps, p, src, out.slice(&begin)));
                }
                ks
            }
            Op::Pad { before, .. } => {
                let out = self.out_view(n);
                let shape = self.g.shape(n).clone();
                let x = inputs[0];
                let src = self.source(x);
                // Zero the whole buffer, then copy the input into its window.
                vec![
                    copy_loop(shape, n, Source::Const(0.0), out.clone()),
                    copy_loop(self.g.shape(x).clone(), x, src, out.slice(&before)),
                ]
            }
            Op::Gather => {
                let (params, ids) = (inputs[0], inputs[1]);
                let src = self.row_major_view(params);
                let kernel = self.row_kernel(n, RowOp::Gather, params, ids, Some(src), None);
                vec![Kernel::Rows(kernel)]
            }
            Op::ScatterAdd | Op::ScatterRows => {
                let (base, ids) = (inputs[0], inputs[1]);
                let updates = *inputs.last().expect("rows operand");
                let mut ks = self.copy_base(n, base);
                let src = self.row_major_view(updates);
                let (op, first) = if self.g.op(n) == &Op::ScatterAdd {
                    (RowOp::ScatterAdd, None)
                } else {
                    (RowOp::ScatterRows, Some(self.row_major_view(inputs[2])))
                };
                ks.push(Kernel::Rows(self.row_kernel(
                    n,
                    op,
                    base,
                    ids,
                    Some(src),
                    first,
                )));
                ks
            }
            Op::FirstOccurrence { rows } => {
                let ids = inputs[0];
                // A marker per row for tables of a few times the ids; a hash
                // table (in L1) for larger ones. Zero between calls.
                let most_ids = self.g.shape(ids).numel(self.place.layout.max_batch as u64);
                let capacity = (2 * most_ids).next_power_of_two().max(16);
                let (op, len) = if u64::from(rows) <= 4 * capacity {
                    (RowOp::FirstOccurrence, rows)
                } else {
                    let capacity = capacity as u32;
                    (RowOp::FirstOccurrenceHashed { capacity }, 2 * capacity)
                };
                let marker = BufId(self.buffers.len() as u32);
                self.buffers.push(Buffer {
                    node: n,
                    loc: Loc::Scratch { offset: 0 },
                    shape: Shape::fixed(&[len]),
                    dtype: DType::I32,
                });
                self.persistent.insert(marker);
                let src = View::contiguous(marker, &Shape::fixed(&[len])).expect("fixed shape");
                let mut k = self.row_kernel(n, op, ids, ids, Some(src), None);
                k.rows = u64::from(rows);
                k.row_len = 1;
                vec![Kernel::Rows(k)]
            }
            Op::SumDuplicates => {
                let (values, first) = (inputs[0], inputs[1]);
                let src = self.row_major_view(values);
                let fv = self.row_major_view(first);
                let mut k =
                    self.row_kernel(n, RowOp::SumDuplicates, values, first, Some(src), Some(fv));
                // Rows are the values' own: [N, ..].
                let ns = self.g.shape(first).clone();
                k.rows = 0;
                k.row_len = self.g.shape(values).fixed_numel() / ns.fixed_numel().max(1);
                vec![Kernel::Rows(k)]
            }
            Op::Recurrence { cell, operands } | Op::RecurrenceGrad { cell, operands } => {
                let views = inputs.iter().map(|&x| self.row_major_view(x)).collect();
                let xs = self.g.shape(inputs[0]).clone();
                vec![Kernel::Recurrence(RecurrenceKernel {
                    node: n,
                    cell,
                    operands,
                    grad: matches!(self.g.op(n), Op::RecurrenceGrad { .. }),
                    rows: Lin::of_dim(xs.0[0]),
                    steps: xs.0[1].fixed().expect("a recurrence's fixed steps"),
                    inputs: views,
                    dst: self.out_view(n),
                })]
            }
            Op::Patches { window, pad } => {
                vec![self.window_kernel(n, window, WindowOp::Patches, None, pad)]
            }
            Op::PatchesGrad(window) => {
                vec![self.window_kernel(n, window, WindowOp::PatchesGrad, None, 0)]
            }
            Op::WinogradInput(window, tile) => {
                vec![self.window_kernel(n, window, WindowOp::WinogradInput, Some(tile), 0)]
            }
            Op::WinogradInputGrad(window, tile) => {
                let op = WindowOp::WinogradInputGrad;
                vec![self.window_kernel(n, window, op, Some(tile), 0)]
            }
            Op::WinogradOutput(window, tile) => {
                vec![self.window_kernel(n, window, WindowOp::WinogradOutput, Some(tile), 0)]
            }
            Op::WinogradOutputGrad(window, tile) => {
                let op = WindowOp::WinogradOutputGrad;
                vec![self.window_kernel(n, window, op, Some(tile), 0)]
            }
            other => panic!("internal compiler error: no kernel for {other:?}"),
        }
    }

    /// The window kernel `op` of node `n` (`tile`: a Winograd op's).
    fn window_kernel(
        &mut self,
        n: NodeId,
        window: Window,
        op: WindowOp,
        tile: Option<WinogradTile>,
        pad: u32,
    ) -> Kernel {
        let x = self.g.inputs_of(n)[0];
        let src = self.row_major_view(x);
        // The images are the first axis of an image tensor, the second of
        // a tile tensor ([G, N, TH, TW, channels]).
        let tiles_out = matches!(op, WindowOp::WinogradInput | WindowOp::WinogradOutputGrad);
        let (images, channels) = {
            let s = self.g.shape(n);
            let xs = self.g.shape(x);
            let images = if tiles_out { s.0[1] } else { s.0[0] };
            let last = |s: &Shape| s.0[s.rank() - 1].fixed().expect("fixed channels");
            (images, last(s).max(last(xs)))
        };
        let channels = match op {
            WindowOp::Patches | WindowOp::PatchesGrad => window.channels,
            _ => channels,
        };
        Kernel::Window(WindowKernel {
            node: n,
            op,
            channels,
            window,
            tile,
            pad: f32::from_bits(pad),
            images: Lin::of_dim(images),
            src,
            dst: self.out_view(n),
        })
    }

    /// A row kernel of node `n` indexing `table` (its first axis) with `ids`.
    fn row_kernel(
        &mut self,
        n: NodeId,
        op: RowOp,
        table: NodeId,
        ids: NodeId,
        src: Option<View>,
        first: Option<View>,
    ) -> RowKernel {
        let ts = self.g.shape(table).clone();
        let rows = ts.0.first().and_then(|d| d.fixed()).unwrap_or(1);
        let row_len = Shape(ts.0.iter().skip(1).copied().collect()).fixed_numel();
        let ids_shape = self.g.shape(ids).clone();
        RowKernel {
            node: n,
            op,
            n: view::numel(&ids_shape).expect("ids have at most one batch dimension"),
            row_len,
            rows: u64::from(rows),
            ids: self.row_major_view(ids),
            src,
            first,
            dst: self.out_view(n),
        }
    }

    /// The copy of a scatter's base into the scatter's buffer, unless the
    /// scatter writes into the base's own memory (a sparse update in place).
    fn copy_base(&mut self, n: NodeId, base: NodeId) -> Vec<Kernel> {
        let out = self.node_buf[&n];
        if let Some(&b) = self.node_buf.get(&base) {
            if self.buffers[b.0 as usize].loc == self.buffers[out.0 as usize].loc {
                return vec![];
            }
        }
        let shape = self.g.shape(n).clone();
        let src = self.source(base);
        let dst = View::contiguous(out, &shape).expect("copyable shape");
        vec![copy_loop(shape, base, src, dst)]
    }
}

/// The rows (product of the leading dims) and columns (last dim) of a GEMM
/// operand viewed as a matrix.
fn matrix_dims(s: &Shape) -> (Lin, Lin) {
    let r = s.rank();
    let rows = s.0[..r - 1]
        .iter()
        .try_fold(Lin::constant(1), |acc, &d| acc.mul_dim(d))
        .expect("a matmul operand has the batch dimension at most once");
    (rows, Lin::of_dim(s.0[r - 1]))
}

impl Planner<'_> {
    /// A GEMM operand's view as a 2-D matrix: as before for a matrix; a
    /// row-major view (materialized when needed) for a tensor of rank > 2,
    /// whose rows are its leading dims.
    fn matrix_view(&mut self, x: NodeId) -> View {
        let shape = self.g.shape(x).clone();
        if shape.rank() == 2 {
            return self.load_view(x);
        }
        let v = self.row_major_view(x);
        flatten_rows(v, &shape)
    }

    /// The output of a GEMM as a 2-D matrix.
    fn matrix_out_view(&self, n: NodeId) -> View {
        let shape = self.g.shape(n).clone();
        let v = self.out_view(n);
        if shape.rank() == 2 {
            v
        } else {
            flatten_rows(v, &shape)
        }
    }
}

/// Group `g` of the row-major view `v` (of `[G] ++ shape`) as the matrix
/// [leading dims of `shape`, its last dim].
fn group_matrix(v: &View, shape: &Shape, g: u32) -> View {
    let cols = Lin::of_dim(shape.0[shape.rank() - 1]);
    View {
        buf: v.buf,
        offset: v.offset.plus(v.strides[0].scale(i64::from(g))),
        strides: vec![cols, Lin::constant(1)],
    }
}

/// A row-major view over `shape` as the matrix [leading dims, last dim].
fn flatten_rows(v: View, shape: &Shape) -> View {
    let cols = Lin::of_dim(shape.0[shape.rank() - 1]);
    View {
        buf: v.buf,
        offset: v.offset,
        strides: vec![cols, Lin::constant(1)],
    }
}
