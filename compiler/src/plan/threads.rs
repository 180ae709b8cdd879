//! The cost model, the threading decisions and where the threads synchronize.
//!
//! Owns: an estimate of the seconds of work of a node and of a kernel at the
//! largest batch (GEMMs at 100 GFLOP/s, memory-bound loops at 10 GB/s), and
//! from it two decisions: in a two-thread function, whether each kernel is
//! split between the threads or run by thread 0 alone ([`kernel_modes`]),
//! and whether the two-thread plan is worth its synchronizations at all
//! ([`two_threads_pay`]: the work its split kernels save against the
//! barriers it emits plus the worker's start and end, else `plan` plans one
//! thread); and the barriers of a two-thread plan ([`syncs`]).
//!
//! # The barrier rule
//! Both threads run the same code; thread 0 runs a `Single` kernel while
//! thread 1 skips it, computing only the scalars the kernel reads (scalars
//! are computed on every thread). Walking the kernels in order, each thread's
//! reads and writes since the last barrier are kept (byte ranges of inputs,
//! arenas, outputs and scratch, over-approximated: a whole buffer, or what a
//! loop's view reaches over its domain). A thread's part of a split loop or
//! single product also knows its side of the kernel's cut (`plan::nest`,
//! the cut codegen emits): two parts on opposite sides of equal cuts with
//! the same stride, thread 0's ending where thread 1's begins, share no
//! byte at any batch size, so a product's rows and the loops over them run
//! back to back without a barrier. A barrier goes before a kernel
//! exactly when what one thread does in it conflicts with what the other did
//! since the last barrier: a write against a read or a write of overlapping
//! bytes. So two `Single` kernels in a row never need one; a `Split` kernel
//! after a kernel it reads from does. One more goes before thread 0's scalar
//! stores at the end when they overlap thread 1's accesses since the last
//! barrier (a scalar variable thread 1 read). Nothing is needed at the end of
//! a call: the caller waits for thread 1 before the next call starts.
//!
//! Invariants: only what can be split without changing results is marked
//! `Mode::Split` — a GEMM (each thread owns a block of C) or a loop with a
//! kept dimension (codegen splits along it, never along a reduced one);
//! argmax and row kernels always run whole (row kernels visit ids in order);
//! a one-thread function has only `Mode::Single` kernels and no barriers;
//! no two threads touch the same bytes, one of them writing, between two
//! barriers.

use std::collections::{HashMap, HashSet};

use super::nest::{gemm_split, AccessKind, Cut, GemmSplit};
use super::{BufId, Kernel, Lin, Loc, Mode, Plan, Source, View};
use crate::ir::{DType, Dim, Graph, NodeId, Op, Shape};

/// The estimated cost of one synchronization of the two threads (a barrier,
/// or the start or end of the worker's share of a call), in the units of
/// [`cost`]: a cache-line transfer each way (~0.3 us on the benchmarks' Zen 5)
/// and the threads' imbalance, scaled as `cost` overestimates the
/// cache-resident kernels of small models about tenfold (W1's Adam loop: 42
/// us estimated, 4.2 us measured). A plan that pays at this cost runs on two
/// threads plainly: W3 and W7 save milliseconds, and lose little on a busy
/// machine (W7 with two busy processes on the two cores: 286-309 steps/s on
/// two threads against 341-364 on one).
pub(super) const SYNC_SECONDS: f64 = 20e-6;
/// The cost at which a short step still pays on two threads on a quiet
/// machine (W1: 40 us saved against 6 synchronizations; 66k against 59k
/// steps/s on the Zen 5), but only with a one-thread twin beside it
/// (`Plan::twin`): on a busy machine a barrier of a short step waits for a
/// descheduled partner's next time slice (W1 with one other busy process:
/// 13.7k-33.5k steps/s on two threads against 60k on one), and the session
/// then runs the twin.
pub(super) const TWIN_SYNC_SECONDS: f64 = 4e-6;
/// Work below which a kernel of a parallel function runs on thread 0 alone.
pub(super) const PARALLEL_KERNEL_SECONDS: f64 = 10e-6;
/// The same for a step with a one-thread twin: split finely, at the price of
/// more barriers, as the twin takes over whenever two threads lose. W1 on the
/// Zen 5 (10 barriers instead of 4: its n = 10 products, softmax rows and
/// output-layer gradients split too) ran 66.0k-70.7k steps/s against
/// 65.0k-67.6k, and with the AVX2 kernels 51.5k-52.6k against 48.1k-48.9k.
pub(super) const TWIN_PARALLEL_KERNEL_SECONDS: f64 = 1e-6;

/// Estimated seconds of work of a node at `batch` (for threading decisions).
fn cost(g: &Graph, n: NodeId, batch: u64) -> f64 {
    let node = g.node(n);
    match &node.op {
        Op::MatMul { .. } | Op::BatchMatMul { .. } => {
            let (a, b) = (g.shape(node.inputs[0]), g.shape(node.inputs[1]));
            let elems = |s: &Shape| s.numel(batch) as f64;
            // 2 m n k flops = 2 * |a| * |b| / k ... computed from the output: m n and k.
            let out = elems(&node.shape);
            let k = (elems(a) * elems(b) / out.max(1.0)).sqrt();
            2.0 * out * k / 100e9
        }
        op if op.is_elementwise() || matches!(op, Op::Reduce { .. }) => {
            node.shape
                .numel(batch)
                .max(g.shape(node.inputs[0]).numel(batch)) as f64
                * 8.0
                / 10e9
        }
        _ => 0.0,
    }
}

/// Whether a two-thread plan is worth its synchronizations: the time its
/// split kernels save (half of each one's estimated work) must exceed the
/// estimated cost of the barriers it emits plus starting and ending the
/// worker's share of a call.
pub(super) fn two_threads_pay(g: &Graph, plan: &Plan, sync_seconds: f64) -> bool {
    let saved: f64 = plan
        .kernels
        .iter()
        .zip(&plan.modes)
        .filter(|(_, m)| **m == Mode::Split)
        .map(|(k, _)| kernel_work(g, k, plan.max_batch).0 / 2.0)
        .sum();
    let syncs = plan.syncs.count() + 2;
    saved > syncs as f64 * sync_seconds
}

/// A kernel's estimated seconds of work at `batch`, and whether it can be
/// split between threads without changing its results.
fn kernel_work(g: &Graph, k: &Kernel, batch: u64) -> (f64, bool) {
    match k {
        Kernel::Gemm { node, .. } => (cost(g, *node, batch), true),
        Kernel::ArgMax { shape, .. } => {
            // Split along its first kept axis (each position's scan whole,
            // so the bits do not depend on the split); with fewer than two
            // kept axes the vectorized scan may take the only one.
            let n = shape.numel(batch) as f64;
            (n * 8.0 / 10e9, shape.rank() >= 3)
        }
        Kernel::Rows(_) => (0.0, false),
        Kernel::Recurrence(r) => {
            // The recurrent products at the GEMM rate, twice over backward.
            let (p, gw) = (r.cell.output_size() as f64, r.cell.gate_width() as f64);
            let rows = r.rows.eval(batch as i64) as f64;
            let flops = 2.0 * rows * f64::from(r.steps) * p * gw;
            let passes = if r.grad { 2.0 } else { 1.0 };
            (passes * flops / 100e9, true)
        }
        Kernel::Window(w) => {
            let n = g.shape(w.node).numel(batch) as f64;
            (n * 8.0 / 10e9, true)
        }
        Kernel::Winograd(w) => {
            // Its products at the GEMM rate, as the unfused ones were.
            let t = w.tiles() as f64 * w.images.eval(batch as i64) as f64;
            let flops = 2.0 * w.groups() as f64 * t * f64::from(w.window.channels * w.out_channels);
            let products = [w.y.is_some(), w.dx.is_some(), w.du.is_some()]
                .iter()
                .filter(|&&p| p)
                .count() as f64;
            (products * flops / 100e9, true)
        }
        Kernel::Loop(l) => {
            let all_reduced = !l.reductions.is_empty()
                && (0..l.domain.rank())
                    .all(|a| l.reduce_axes.contains(&a) || l.domain.0[a] == Dim::Fixed(1));
            // A reduction whose kept elements are a short run at the
            // end (a bias gradient: [B, H, W] reduced, C kept) would
            // split that run: each thread sweeps every row for a few
            // lanes, slower than one thread sweeping them once.
            let kept: Vec<usize> = (0..l.domain.rank())
                .filter(|a| !l.reduce_axes.contains(a))
                .collect();
            let trailing = kept
                .iter()
                .enumerate()
                .all(|(i, &a)| a == l.domain.rank() - kept.len() + i);
            let short_run = !l.reductions.is_empty()
                && trailing
                && kept
                    .iter()
                    .map(|&a| l.domain.0[a].fixed().map_or(u64::MAX, u64::from))
                    .fold(1u64, u64::saturating_mul)
                    <= 256;
            let all_reduced = all_reduced || short_run;
            let n = l.domain.numel(batch) as f64;
            (
                n * 4.0 * (1 + l.sources.len() + l.stores.len()) as f64 / 10e9,
                !all_reduced,
            )
        }
    }
}

/// How the `threads` threads of a function share each of its kernels.
/// A kernel is split when its estimated work is at least `split_seconds`.
pub(super) fn kernel_modes(
    g: &Graph,
    kernels: &[Kernel],
    batch: u64,
    threads: u32,
    split_seconds: f64,
) -> Vec<Mode> {
    kernels
        .iter()
        .map(|k| {
            let (work, splittable) = kernel_work(g, k, batch);
            if threads > 1 && splittable && work >= split_seconds {
                Mode::Split
            } else {
                Mode::Single
            }
        })
        .collect()
}

/// The nodes whose scalar values the scalar value of `n` is computed from
/// (codegen computes scalars by this rule; a node in `scalar_loads` is read
/// from memory and has none).
pub fn scalar_operands<'g>(
    g: &'g Graph,
    scalar_loads: &HashMap<NodeId, (View, DType)>,
    n: NodeId,
) -> &'g [NodeId] {
    if scalar_loads.contains_key(&n) {
        return &[];
    }
    match g.op(n) {
        Op::Unary(_)
        | Op::Binary(_)
        | Op::Select
        | Op::Cast(_)
        | Op::UniformHash { .. }
        | Op::StopGradient
        | Op::NormalNoise { .. } => g.inputs_of(n),
        Op::Reshape(_) | Op::Slice { .. } | Op::Transpose(_) => &g.inputs_of(n)[..1],
        _ => &[],
    }
}

/// A memory space a kernel reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Space {
    Input(u32),
    Arena(u32),
    Output(u32),
    Scratch,
}

/// Bytes `[lo, hi)` of a memory space, at most: what the access reaches at
/// the largest batch, which covers what it reaches at every smaller one.
/// A thread's part of a split kernel also knows its side of the cut.
#[derive(Clone, Copy, Debug)]
struct Region {
    space: Space,
    lo: i64,
    hi: i64,
    side: Option<Side>,
}

/// Where a thread's part of a split access lies against the kernel's cut,
/// at every batch size (with `cut` its value there): thread 0's bytes all
/// below `cut * stride + bound`, thread 1's all at or above it.
#[derive(Clone, Copy, Debug)]
struct Side {
    cut: Cut,
    thread: usize,
    /// Bytes per index of the cut dimension (positive).
    stride: i64,
    bound: i64,
}

impl Region {
    /// Whether the two may share a byte: not when they are in different
    /// spaces or disjoint ranges, nor when they lie on opposite sides of
    /// the same cut, thread 0's bound at or below thread 1's, with the same
    /// stride (the parts of two kernels split alike: a product's rows and
    /// the loop over them).
    fn overlaps(&self, o: &Region) -> bool {
        if self.space != o.space {
            return false;
        }
        if let (Some(a), Some(b)) = (self.side, o.side) {
            let (t0, t1) = if a.thread == 0 { (a, b) } else { (b, a) };
            let opposite = t0.thread == 0 && t1.thread == 1;
            if opposite && a.cut == b.cut && a.stride == b.stride && t0.bound <= t1.bound {
                return false;
            }
        }
        self.lo < o.hi && o.lo < self.hi
    }
}

/// What one thread reads and writes (over-approximated: whole extents).
#[derive(Clone, Debug, Default)]
struct Access {
    reads: Vec<Region>,
    writes: Vec<Region>,
}

impl Access {
    /// Whether running `self` and `o` on different threads without a barrier
    /// between them could change what either reads or leaves in memory.
    fn conflicts(&self, o: &Access) -> bool {
        let hit = |a: &[Region], b: &[Region]| a.iter().any(|x| b.iter().any(|y| x.overlaps(y)));
        hit(&self.writes, &o.writes) || hit(&self.writes, &o.reads) || hit(&self.reads, &o.writes)
    }

    fn extend(&mut self, o: &Access) {
        self.reads.extend_from_slice(&o.reads);
        self.writes.extend_from_slice(&o.writes);
    }

    fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

/// Where the synchronizations of a function go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Syncs {
    /// Per kernel: both threads wait for each other before it.
    pub before: Vec<bool>,
    /// Both threads wait for each other before thread 0 stores the scalar
    /// outputs and updates.
    pub before_scalars: bool,
}

impl Syncs {
    /// Barriers emitted per call.
    pub fn count(&self) -> usize {
        self.before.iter().filter(|&&b| b).count() + usize::from(self.before_scalars)
    }
}

/// The memory a plan's code touches, by buffer and kernel.
struct Footprint<'a> {
    g: &'a Graph,
    plan: &'a Plan,
    batch: i64,
}

impl Footprint<'_> {
    /// The space and byte offset of buffer `b`, and its size in bytes.
    fn buffer(&self, b: BufId) -> (Space, i64, i64) {
        let buf = self.plan.buffer(b);
        let size = buf.shape.numel(self.batch as u64) as i64 * 4;
        match buf.loc {
            Loc::Input(i) => (Space::Input(i), 0, size),
            Loc::Arena { arena, offset } => (Space::Arena(arena), offset as i64 * 4, size),
            Loc::Output(i) => (Space::Output(i), 0, size),
            Loc::Scratch { offset } => (Space::Scratch, offset as i64, size),
        }
    }

    /// The whole of buffer `b`.
    fn whole(&self, b: BufId) -> Region {
        let (space, base, size) = self.buffer(b);
        Region {
            space,
            lo: base,
            hi: base + size.max(4),
            side: None,
        }
    }

    /// Thread `t`'s part of what `v` reaches indexed over `sizes` with
    /// `strides` (elements), dimension `split` cut by `cut`: the whole
    /// reach (as [`Self::view`]), with its side of the cut when the offset
    /// and strides are constants, none negative, the cut one positive.
    /// Thread 0 takes indices below the cut: its bytes end before
    /// `(cut - 1) * s + rest + 1` elements past the offset (`rest`: the
    /// reach of the other dimensions at the largest batch, the most they
    /// reach); thread 1's start at `cut * s`.
    fn part(
        &self,
        v: &View,
        strides: &[Lin],
        sizes: &[Lin],
        split: usize,
        cut: Cut,
        t: usize,
    ) -> Region {
        let dims: Vec<u64> = sizes
            .iter()
            .map(|s| s.eval(self.batch).max(0) as u64)
            .collect();
        let mut r = self.reach(v, strides, &dims);
        let consts: Option<Vec<i64>> = strides
            .iter()
            .map(|s| (s.b == 0 && s.c >= 0).then_some(s.c))
            .collect();
        if let (Some(st), 0) = (consts, v.offset.b) {
            let s = st[split];
            if s > 0 {
                let (_, base, _) = self.buffer(v.buf);
                let o = v.offset.c;
                let rest: i64 = (0..st.len())
                    .filter(|&d| d != split)
                    .map(|d| (dims[d].max(1) as i64 - 1) * st[d])
                    .sum();
                let bound = if t == 0 {
                    base + 4 * (o - s + rest + 1)
                } else {
                    base + 4 * o
                };
                r.side = Some(Side {
                    cut,
                    thread: t,
                    stride: 4 * s,
                    bound,
                });
            }
        }
        r
    }

    /// What view `v` reaches when indexed over `dims` (when as many as its
    /// strides), joined with its whole buffer (a view addresses its buffer,
    /// except a merged update loop's, which reaches past its first member's
    /// buffer over the loop's domain).
    fn view(&self, v: &View, dims: &[u64]) -> Region {
        self.reach(v, &v.strides, dims)
    }

    /// [`Self::view`] with other strides (a GEMM operand's, or a loop
    /// access's per level).
    fn reach(&self, v: &View, strides: &[Lin], dims: &[u64]) -> Region {
        let mut r = self.whole(v.buf);
        if dims.len() == strides.len() {
            let (_, base, _) = self.buffer(v.buf);
            let mut lo = v.offset.eval(self.batch);
            let mut hi = lo;
            for (&d, s) in dims.iter().zip(strides) {
                let reach = (d.max(1) as i64 - 1) * s.eval(self.batch);
                if reach < 0 {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
            r.lo = r.lo.min(base + lo * 4);
            r.hi = r.hi.max(base + (hi + 1) * 4);
        }
        r
    }

    /// The memory read to compute scalar `n` (loads and scalar variables).
    fn scalar_reads(&self, n: NodeId, out: &mut Vec<Region>) {
        let mut stack = vec![n];
        let mut seen = HashSet::new();
        while let Some(m) = stack.pop() {
            if !seen.insert(m) {
                continue;
            }
            if let Some((v, _)) = self.plan.scalar_loads.get(&m) {
                out.push(self.view(v, &[]));
            } else if let Op::Var(var) = self.g.op(m) {
                let (arena, offset) = self.plan.var_locs[*var as usize];
                out.push(Region {
                    space: Space::Arena(arena as u32),
                    lo: offset as i64 * 4,
                    hi: offset as i64 * 4 + 4,
                    side: None,
                });
            }
            stack.extend_from_slice(scalar_operands(self.g, &self.plan.scalar_loads, m));
        }
    }

    /// Kernel `k`'s accesses: (the kernel's own, the scalars both threads
    /// compute before it).
    fn kernel(&self, k: &Kernel) -> (Access, Access) {
        let mut a = Access::default();
        let mut s = Access::default();
        match k {
            Kernel::Loop(l) => {
                let dims: Vec<u64> = l
                    .domain
                    .dims()
                    .iter()
                    .map(|d| d.fixed().map_or(self.batch as u64, u64::from))
                    .collect();
                let kept: Vec<u64> = (0..dims.len())
                    .filter(|ax| !l.reduce_axes.contains(ax))
                    .map(|ax| dims[ax])
                    .collect();
                for (_, src) in &l.sources {
                    match src {
                        Source::Load(v, _) => a.reads.push(self.view(v, &dims)),
                        Source::Scalar(n) => self.scalar_reads(*n, &mut s.reads),
                        Source::Iota { .. } | Source::Const(_) => {}
                    }
                }
                for (_, v) in &l.stores {
                    a.writes.push(self.view(v, &dims));
                }
                for r in &l.reductions {
                    if let Some(v) = &r.dest {
                        // Reductions read back what they accumulate.
                        let d = if v.strides.len() == kept.len() {
                            &kept
                        } else {
                            &dims
                        };
                        let region = self.view(v, d);
                        a.writes.push(region);
                        a.reads.push(region);
                    }
                }
            }
            Kernel::Gemm {
                a: x,
                b: y,
                c,
                epilogue,
                ..
            } => {
                a.reads.extend([self.whole(x.buf), self.whole(y.buf)]);
                if let Some(bias) = epilogue.as_ref().and_then(|e| e.bias.as_ref()) {
                    a.reads.push(self.whole(bias.buf));
                }
                a.writes.push(self.whole(c.buf));
            }
            Kernel::ArgMax { src, dst, .. } => {
                a.reads.push(self.whole(src.buf));
                a.writes.push(self.whole(dst.buf));
            }
            Kernel::Window(w) => {
                a.reads.push(self.whole(w.src.buf));
                a.writes.push(self.whole(w.dst.buf));
            }
            Kernel::Recurrence(r) => {
                a.reads.extend(r.inputs.iter().map(|v| self.whole(v.buf)));
                a.writes.push(self.whole(r.dst.buf));
            }
            Kernel::Winograd(w) => {
                let (r, wr) = w.reads_writes();
                a.reads.extend(r.into_iter().map(|b| self.whole(b)));
                a.writes.extend(wr.into_iter().map(|b| self.whole(b)));
            }
            Kernel::Rows(r) => {
                // Marker tables are written and reset: every buffer counts as both.
                for v in [Some(&r.ids), r.src.as_ref(), r.first.as_ref(), Some(&r.dst)]
                    .into_iter()
                    .flatten()
                {
                    a.reads.push(self.whole(v.buf));
                    a.writes.push(self.whole(v.buf));
                }
            }
        }
        a.reads.extend_from_slice(&s.reads);
        (a, s)
    }

    /// Each thread's part of a split kernel, with its side of the cut,
    /// where codegen's split is known exactly: a loop's first kept level
    /// ([`Nest::split`](super::nest::Nest::split)), a single product's rows
    /// or columns ([`gemm_split`]). `None` for any other kernel (both
    /// threads then count as touching all of it).
    fn parts(&self, k: &Kernel) -> Option<[Access; 2]> {
        let mut out = [Access::default(), Access::default()];
        match k {
            Kernel::Loop(l) => {
                let nest = l.nest();
                let (level, cut) = nest.split()?;
                let sizes: Vec<Lin> = nest.levels.iter().map(|l| l.size).collect();
                for (t, part) in out.iter_mut().enumerate() {
                    for (acc, strides) in l.accesses().iter().zip(&nest.strides) {
                        let r = self.part(acc.view, strides, &sizes, level, cut, t);
                        match acc.kind {
                            AccessKind::Load => part.reads.push(r),
                            AccessKind::Store => part.writes.push(r),
                            AccessKind::Accumulate => {
                                part.reads.push(r);
                                part.writes.push(r);
                            }
                        }
                    }
                }
            }
            Kernel::Gemm {
                a,
                b,
                c,
                ta,
                tb,
                m,
                k,
                n,
                groups: None,
                epilogue,
                ..
            } => {
                // (row, column) strides of the operands as multiplied.
                let rc = |v: &View, t: bool| {
                    if t {
                        [v.strides[1], v.strides[0]]
                    } else {
                        [v.strides[0], v.strides[1]]
                    }
                };
                let bias = epilogue.as_ref().and_then(|e| e.bias.as_ref());
                for (t, part) in out.iter_mut().enumerate() {
                    match gemm_split(*m, *n, self.batch) {
                        GemmSplit::Rows(cut) => {
                            part.reads
                                .push(self.part(a, &rc(a, *ta), &[*m, *k], 0, cut, t));
                            part.reads.push(self.whole(b.buf));
                            part.writes
                                .push(self.part(c, &rc(c, false), &[*m, *n], 0, cut, t));
                        }
                        GemmSplit::Columns(cut) => {
                            part.reads.push(self.whole(a.buf));
                            part.reads
                                .push(self.part(b, &rc(b, *tb), &[*k, *n], 1, cut, t));
                            part.writes
                                .push(self.part(c, &rc(c, false), &[*m, *n], 1, cut, t));
                        }
                    }
                    if let Some(bias) = bias {
                        part.reads.push(self.whole(bias.buf));
                    }
                }
            }
            _ => return None,
        }
        Some(out)
    }
}

/// The barriers a two-thread plan needs: one before a kernel exactly when
/// what one thread does in it conflicts (a write against a read or a write
/// of the same bytes) with what the other thread did since the last barrier.
/// Thread 0 runs a `Single` kernel; thread 1 only computes its scalar
/// sources (scalars are computed on every thread), so two `Single` kernels
/// in a row need none. Before the scalar stores at the end (thread 0's),
/// one when they conflict with thread 1's accesses since the last barrier.
/// A one-thread plan has none.
pub(crate) fn syncs(g: &Graph, plan: &Plan) -> Syncs {
    let mut out = Syncs {
        before: vec![false; plan.kernels.len()],
        before_scalars: false,
    };
    if plan.threads < 2 {
        return out;
    }
    let fp = Footprint {
        g,
        plan,
        batch: plan.max_batch as i64,
    };
    // What each thread did since the last barrier.
    let mut pending = [Access::default(), Access::default()];
    for (i, k) in plan.kernels.iter().enumerate() {
        let (all, scalars) = fp.kernel(k);
        let [t0, t1] = match plan.modes[i] {
            Mode::Single => [all, scalars],
            Mode::Split => match fp.parts(k) {
                Some(mut parts) => {
                    for p in &mut parts {
                        p.reads.extend_from_slice(&scalars.reads);
                    }
                    parts
                }
                None => [all.clone(), all],
            },
        };
        if pending[0].conflicts(&t1) || pending[1].conflicts(&t0) {
            out.before[i] = true;
            pending[0].clear();
            pending[1].clear();
        }
        pending[0].extend(&t0);
        pending[1].extend(&t1);
    }
    let mut last = Access::default();
    for &(k, n) in &plan.scalar_outputs {
        fp.scalar_reads(n, &mut last.reads);
        last.writes.push(Region {
            space: Space::Output(k),
            lo: 0,
            hi: i64::MAX,
            side: None,
        });
    }
    for &(arena, offset, n) in &plan.scalar_updates {
        fp.scalar_reads(n, &mut last.reads);
        last.writes.push(Region {
            space: Space::Arena(arena),
            lo: offset as i64 * 4,
            hi: offset as i64 * 4 + 4,
            side: None,
        });
    }
    out.before_scalars = pending[1].conflicts(&last);
    out
}
