//! Kernel planning: from an IR function to an ordered list of kernels over
//! buffers, ready for code generation (`specc compile --emit plan`).
//!
//! Owns: deciding which nodes are computed inside which loop (fusion), which
//! tensors are materialized and where (inputs, variable arenas, outputs,
//! scratch), how each kernel reads its operands (views), the order of
//! kernels, how threads share them, and scratch reuse by liveness.
//!
//! # The rules
//! - Scalars are SSA values in the generated function, never memory.
//! - Broadcast, reshape, transpose and slice are views (strides), not copies.
//! - An elementwise node is computed inside its consumers' loop when all its
//!   consumers are in one loop over the same shape (tree fusion); otherwise it
//!   is stored. Then loops over the same shape where one reads the other's
//!   stored values element by element are merged when nothing has to run in
//!   between (multi-output fusion): Adam's m, v and parameter updates become
//!   one loop, and a bias gradient is summed in the loop that computes it.
//! - Matrix products are GEMM calls; argmax, concat and pad have kernels of
//!   their own, and so do the row-indexed ops of embeddings and sparse updates
//!   (gather, scatter-add, first occurrence, duplicate sums, row scatter),
//!   which visit only the indexed rows.
//! - The update loops of adjacent parameters that compute the same rule merge
//!   into one loop over the span they occupy in every arena ([`merge`]).
//! - A variable's new value is written in place when every reader of the old
//!   value runs earlier (or in the same loop, at the same element);
//!   otherwise it is computed in scratch and copied at the end. A row scatter
//!   into the variable itself (a sparse update) writes only its rows.
//!
//! # The phases
//! [`plan`] runs a `Planner` for two threads when allowed, and keeps that
//! plan when its split kernels save more than its synchronizations cost
//! (`threads`), else runs one for one thread. A `Planner`'s phases run in
//! this order, each keeping the invariant named:
//! 1. Classification (`units`): every node gets a `Class` — scalar, leaf,
//!    view, iota, elementwise, reduce, or a kernel of its own.
//! 2. Tree fusion (`fusion`): elementwise and reduce nodes into groups.
//!    Every live elementwise or reduce node is in exactly one group.
//! 3. Units (`units`): a unit per group and per node with a kernel of its
//!    own; `producer` maps each node a unit computes to that unit.
//! 4. Multi-output fusion (`fusion`): groups merged into consumer groups.
//!    The unit graph stays acyclic; `producer` is rebuilt for the survivors.
//! 5. Placement (`placement`): a buffer for every materialized node (leaf,
//!    output, in-place update, scratch) and copy units for the outputs and
//!    updates no unit writes. Each materialized node has one buffer.
//! 6. Lowering (`lower`, reading operands through `resolve`): each unit
//!    to kernels; an operand no view can read is materialized by a new copy
//!    unit, itself lowered in turn. Every kernel reads only buffers, scalar
//!    SSA values, loop indices or constants.
//! 7. Ordering (`order`): a dependency order of the units with in-place
//!    hazards. If an in-place update cannot be ordered, the phase returns its
//!    variable and [`plan`] starts again with that variable out of place;
//!    each retry removes one variable, so planning ends.
//! 8. Finishing (`Planner::finish`): the kernels in order, update loops
//!    merged across parameters ([`merge`]), Winograd passes fused
//!    (`winofuse`), bias/relu loops folded into the GEMMs before them
//!    ([`epilogue`], unless `SPECC_GEMM_EPILOGUE=never`), a `Mode` per kernel
//!    (`threads`), scratch offsets by liveness (`memory`), output layouts,
//!    then the barriers the threads need (`threads`, after the scratch
//!    offsets: reused scratch bytes are a conflict too).
//!
//! Invariants of a plan: kernels are in a dependency order; every buffer a
//! kernel reads is written earlier or is an input or variable; scratch
//! intervals of simultaneously live buffers never overlap; a variable is
//! overwritten only after its last reader.
//!
//! Cost: the phases are linear in nodes, units and edges, with two
//! exceptions that cost O(units) per candidate: multi-output fusion's check
//! that no unit has to run between two groups (a reachability search per
//! pair that passes the cheaper checks), and `merge::merge_updates`' check
//! of the kernels between the members of a run. Keep new per-node work
//! clear of scans over all nodes or units.
//!
//! Code map: [`kernel`] (the public types: buffers, kernels, [`Plan`]),
//! [`view`] (strided views), `units`, `fusion`, `placement`,
//! `resolve`, `lower`, `order`, `threads`, [`merge`], `memory`,
//! [`print`](mod@print) (`--emit plan`).

pub mod adam;
pub mod epilogue;
mod fusion;
pub mod kernel;
mod lower;
mod memory;
pub mod merge;
pub mod nest;
mod order;
mod placement;
pub mod print;
mod resolve;
mod threads;
mod units;
pub mod view;
mod winofuse;

use std::collections::{HashMap, HashSet};

use specc_runtime::abi::{ElemType, OutputLayout};

use crate::ir::{DType, Function, Graph, NodeId};
use crate::layout::VarPlacement;
use crate::verify::{self, in_pass};
use fusion::Group;
pub use kernel::{
    Buffer, GemmEpilogue, Groups, Kernel, Loc, LoopKernel, Mode, Plan, RecurrenceKernel, Reduction,
    RowKernel, RowOp, Source, WindowKernel, WindowOp, WinogradKernel,
};
pub(crate) use threads::syncs as threads_syncs;
pub use threads::{scalar_operands, Syncs};
use units::{Class, Unit};
pub use view::{BufId, Lin, View};

/// Plans one function of a model for up to `threads` threads, with GEMM
/// epilogues fused unless `SPECC_GEMM_EPILOGUE=never` ([`plan_with`]).
pub fn plan(g: &Graph, f: &Function, place: &VarPlacement, threads: usize) -> Plan {
    plan_with(
        g,
        f,
        place,
        threads,
        epilogue::enabled_from_env().unwrap_or(true),
    )
}

/// [`plan`], fusing bias/relu loops into GEMM epilogues when
/// `gemm_epilogue` ([`epilogue`]).
pub fn plan_with(
    g: &Graph,
    f: &Function,
    place: &VarPlacement,
    threads: usize,
    gemm_epilogue: bool,
) -> Plan {
    let plan =
        |threads, split_seconds| plan_threads(g, f, place, threads, split_seconds, gemm_epilogue);
    if threads >= 2 {
        let two = plan(2, threads::PARALLEL_KERNEL_SECONDS);
        if threads::two_threads_pay(g, &two, threads::SYNC_SECONDS) {
            return two;
        }
        if threads::two_threads_pay(g, &two, threads::TWIN_SYNC_SECONDS) {
            // A short step with a twin: split finely (the twin guards it).
            let mut two = plan(2, threads::TWIN_PARALLEL_KERNEL_SECONDS);
            let mut one = plan(1, threads::PARALLEL_KERNEL_SECONDS);
            one.name = twin_name(&two.name);
            two.twin = Some(Box::new(one));
            return two;
        }
    }
    plan(1, threads::PARALLEL_KERNEL_SECONDS)
}

/// The name of function `name`'s one-thread twin (see `Plan::twin`).
pub fn twin_name(name: &str) -> String {
    format!("{name}__one_thread")
}

/// Plans one function for exactly `threads` threads, splitting kernels of
/// at least `split_seconds` of estimated work between them.
fn plan_threads(
    g: &Graph,
    f: &Function,
    place: &VarPlacement,
    threads: u32,
    split_seconds: f64,
    gemm_epilogue: bool,
) -> Plan {
    let mut not_in_place: HashSet<u32> = HashSet::new();
    loop {
        let mut planner = Planner::new(g, f, place, &not_in_place, threads);
        planner.gemm_epilogue = gemm_epilogue;
        planner.split_seconds = split_seconds;
        match planner.run() {
            Ok(p) => return p,
            Err(var) => {
                not_in_place.insert(var);
            }
        }
    }
}

/// The state the phases share: facts about the graph (computed once), then
/// what each phase decides.
struct Planner<'a> {
    g: &'a Graph,
    f: &'a Function,
    place: &'a VarPlacement,
    /// Variables whose update must not be written in place (earlier attempts).
    not_in_place: &'a HashSet<u32>,
    live: Vec<bool>,
    /// Live users of each node, in node order, without repeats.
    users: Vec<Vec<NodeId>>,
    is_root: Vec<bool>,
    class: Vec<Class>,
    group_of: Vec<Option<usize>>,
    groups: Vec<Group>,
    buffers: Vec<Buffer>,
    /// The buffer that holds each materialized node.
    node_buf: HashMap<NodeId, BufId>,
    units: Vec<Unit>,
    /// The destination buffers of the copy units.
    copy_dsts: HashSet<BufId>,
    /// The unit that materializes a node (or computes a scalar reduction).
    producer: HashMap<NodeId, usize>,
    /// In-place updates: var -> node stored into the var's memory.
    in_place: HashMap<u32, NodeId>,
    scalar_loads: HashMap<NodeId, (View, DType)>,
    /// Scratch buffers that keep their contents from call to call.
    persistent: HashSet<BufId>,
    threads: u32,
    /// The estimated work from which a kernel is split between two threads
    /// (`threads::kernel_modes`).
    split_seconds: f64,
    /// Fuse bias/relu loops into GEMM epilogues ([`epilogue`]).
    gemm_epilogue: bool,
}

impl<'a> Planner<'a> {
    fn new(
        g: &'a Graph,
        f: &'a Function,
        place: &'a VarPlacement,
        not_in_place: &'a HashSet<u32>,
        threads: u32,
    ) -> Planner<'a> {
        let roots = f.roots();
        let live = g.reachable(&roots);
        // Users are pushed in node order, so a repeat is always the last one
        // pushed (a node that reads the same input twice).
        let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
        for (id, n) in g.nodes() {
            if live[id.index()] {
                for &i in &n.inputs {
                    if users[i.index()].last() != Some(&id) {
                        users[i.index()].push(id);
                    }
                }
            }
        }
        let mut is_root = vec![false; g.len()];
        for r in &roots {
            is_root[r.index()] = true;
        }
        let class = (0..g.len())
            .map(|i| units::classify(g, NodeId(i as u32)))
            .collect();
        Planner {
            g,
            f,
            place,
            not_in_place,
            live,
            users,
            is_root,
            class,
            group_of: vec![None; g.len()],
            groups: Vec::new(),
            buffers: Vec::new(),
            node_buf: HashMap::new(),
            units: Vec::new(),
            copy_dsts: HashSet::new(),
            producer: HashMap::new(),
            in_place: HashMap::new(),
            scalar_loads: HashMap::new(),
            persistent: HashSet::new(),
            threads,
            split_seconds: threads::PARALLEL_KERNEL_SECONDS,
            gemm_epilogue: true,
        }
    }

    fn cls(&self, n: NodeId) -> Class {
        self.class[n.index()]
    }

    /// The phases in order; `Err(var)`: plan again with `var` out of place.
    /// Each phase runs as a pass of its own (`verify::in_pass`); the
    /// kernels are verified once ordered (and after each later rewrite).
    fn run(mut self) -> Result<Plan, u32> {
        in_pass("plan::fusion", || self.fuse());
        in_pass("plan::units", || self.make_units());
        in_pass("plan::fusion (multi-output)", || self.merge_groups());
        in_pass("plan::placement", || self.place_buffers());
        let (kernels_by_unit, deps) = in_pass("plan::lower", || self.lower_units());
        let order = in_pass("plan::order", || self.order(&deps))?;
        Ok(in_pass("plan::finish", || {
            self.finish(kernels_by_unit, order)
        }))
    }

    /// Verifies `kernels` in debug builds: `verify::plan::kernels` after
    /// `pass` (what each kernel is), `verify::plan::order` after
    /// `order_pass` (how they follow each other).
    fn verify_kernels(
        &self,
        pass: &str,
        order_pass: &str,
        kernels: &[Kernel],
        chains: &[merge::Chain],
    ) {
        let parts = verify::plan::Parts {
            g: self.g,
            place: self.place,
            buffers: &self.buffers,
            kernels,
            chains,
            max_batch: self.place.layout.max_batch as u64,
        };
        verify::assert_after(pass, || verify::plan::kernels(&parts));
        verify::assert_after(order_pass, || verify::plan::order(&parts));
    }

    /// Assembles the plan: kernels in `order`, update loops merged, thread
    /// modes, scratch offsets, output layouts.
    fn finish(mut self, kernels_by_unit: Vec<Vec<Kernel>>, order: Vec<usize>) -> Plan {
        let mut kernels: Vec<Kernel> = order
            .iter()
            .flat_map(|&u| kernels_by_unit[u].clone())
            .collect();
        self.verify_kernels("plan::lower", "plan::order", &kernels, &[]);
        let chains = in_pass("plan::merge", || {
            merge::merge_updates(self.g, &self.buffers, &mut kernels)
        });
        self.verify_kernels("plan::merge", "plan::merge", &kernels, &chains);
        let batch = self.place.layout.max_batch as u64;
        let mut kernels = in_pass("plan::winofuse", || winofuse::fuse(kernels, batch));
        self.verify_kernels("plan::winofuse", "plan::winofuse", &kernels, &chains);
        let pinned: HashSet<BufId> = self.scalar_loads.values().map(|(v, _)| v.buf).collect();
        if self.gemm_epilogue {
            in_pass("plan::epilogue", || {
                epilogue::fuse(self.g, &self.buffers, &mut kernels, &pinned)
            });
            self.verify_kernels("plan::epilogue", "plan::epilogue", &kernels, &chains);
        }
        let modes =
            threads::kernel_modes(self.g, &kernels, batch, self.threads, self.split_seconds);
        let scratch_bytes = in_pass("plan::memory", || {
            memory::assign_scratch(
                &mut self.buffers,
                &kernels,
                &pinned,
                &self.persistent,
                &chains,
                batch,
            )
        });
        let scratch_bytes = winofuse::place_scratch(&mut kernels, scratch_bytes, self.threads);
        let mut outputs = Vec::new();
        let mut scalar_outputs = Vec::new();
        for (k, o) in self.f.outputs.iter().enumerate() {
            let s = self.g.shape(o.node);
            if s.is_scalar() {
                scalar_outputs.push((k as u32, o.node));
            }
            outputs.push(OutputLayout {
                name: o.name.clone(),
                elem: match self.g.dtype(o.node) {
                    DType::F32 => ElemType::F32,
                    DType::I32 => ElemType::I32,
                },
                per_example: s.fixed_numel() as usize,
                batched: s.has_batch(),
            });
        }
        let scalar_updates = self
            .f
            .updates
            .iter()
            .filter(|(_, n)| self.g.shape(*n).is_scalar())
            .map(|&(v, n)| {
                let (a, o) = self.place.vars[v as usize];
                (a as u32, o as u64, n)
            })
            .collect();
        let mut plan = Plan {
            name: self.f.name.clone(),
            buffers: self.buffers,
            kernels,
            modes,
            threads: self.threads,
            syncs: Syncs::default(),
            scratch_bytes,
            chains,
            outputs,
            scalar_outputs,
            scalar_updates,
            scalar_loads: self.scalar_loads,
            var_locs: self.place.vars.clone(),
            increments_global_step: self.f.increments_global_step,
            twin: None,
            max_batch: batch,
        };
        verify::assert_after("plan::memory", || {
            verify::plan::scratch(&verify::plan::Parts::of(self.g, self.place, &plan), &plan)
        });
        plan.syncs = in_pass("plan::threads", || threads::syncs(self.g, &plan));
        verify::assert_after("plan::threads", || verify::plan::threads(self.g, &plan));
        verify::assert_after("plan::finish", || {
            verify::plan::function(self.g, self.f, self.place, &plan)
        });
        plan
    }
}
