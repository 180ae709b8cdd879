//! Units: the pieces the planner schedules, and what each node is.
//!
//! Owns: the classification of nodes ([`Class`]: which kind of kernel, if
//! any, computes a node), the units built from it ([`Unit`]: a fused loop
//! group, a node with a kernel of its own, or a copy), the map from a
//! materialized node to the unit that produces it, and the dependencies
//! between units (looking through views and scalar chains, which no unit
//! computes).
//!
//! Invariants: every live node of class Elementwise or Reduce is produced by
//! the unit of its group, and every live MatMul, ArgMax, Concat, Pad, Rows or Window
//! node by its own `Unit::Node`; views, leaves, iota and scalars are produced
//! by no unit (a copy unit may materialize one); a unit never depends on
//! itself.

use std::collections::{BTreeSet, HashSet};

use super::view::BufId;
use super::Planner;
use crate::ir::{Graph, NodeId, Op};

/// What computes a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// A scalar SSA value (including every node of scalar shape that is not
    /// a reduction or a kernel of its own).
    Scalar,
    /// An input, variable or constant tensor: already in memory.
    Leaf,
    /// Broadcast, reshape, transpose, slice, stop_gradient: a view of its operand.
    View,
    /// The index along an axis, computed inside the loop that reads it.
    Iota,
    /// Computed per element inside a fused loop.
    Elementwise,
    /// Accumulated by a fused loop over its operand's shape.
    Reduce,
    // Nodes with kernels of their own:
    ArgMax,
    MatMul,
    Concat,
    Pad,
    Rows,
    /// im2col, col2im and the Winograd transforms.
    Window,
    /// A recurrent layer's time loop or its backward loop.
    Recurrence,
}

/// The class of node `n` (computed once per node by the planner).
pub(super) fn classify(g: &Graph, n: NodeId) -> Class {
    let node = g.node(n);
    match &node.op {
        Op::Reduce { .. } => Class::Reduce,
        Op::ArgMax { .. } => Class::ArgMax,
        Op::MatMul { .. } | Op::BatchMatMul { .. } => Class::MatMul,
        Op::Concat { .. } => Class::Concat,
        Op::Pad { .. } => Class::Pad,
        Op::Gather
        | Op::ScatterAdd
        | Op::FirstOccurrence { .. }
        | Op::SumDuplicates
        | Op::ScatterRows => Class::Rows,
        Op::Patches { .. }
        | Op::PatchesGrad(_)
        | Op::WinogradInput(..)
        | Op::WinogradInputGrad(..)
        | Op::WinogradOutput(..)
        | Op::WinogradOutputGrad(..) => Class::Window,
        Op::Recurrence { .. } | Op::RecurrenceGrad { .. } => Class::Recurrence,
        _ if node.shape.is_scalar() => Class::Scalar,
        Op::Input(_) | Op::Var(_) | Op::Tensor(_) => Class::Leaf,
        Op::Scalar(_) | Op::BatchSize | Op::GlobalStep | Op::FirstRow | Op::Training => {
            Class::Scalar
        }
        Op::Iota { .. } => Class::Iota,
        Op::BroadcastTo(_)
        | Op::Reshape(_)
        | Op::Transpose(_)
        | Op::Slice { .. }
        | Op::StopGradient => Class::View,
        Op::Unary(_) | Op::Binary(_) | Op::Select | Op::Cast(_) | Op::UniformHash { .. } => {
            Class::Elementwise
        }
        Op::NormalNoise { .. } => Class::Scalar,
    }
}

/// A piece of the function lowered to one or more kernels.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Unit {
    /// The loop of a fusion group (an index into `Planner::groups`).
    Group(usize),
    /// A matmul, argmax, concat, pad or row-indexed node.
    Node(NodeId),
    /// Copies `node`'s value into `dst` (outputs, updates, forced materialization).
    Copy { node: NodeId, dst: BufId },
}

impl Planner<'_> {
    /// One unit per fusion group, then one per node with a kernel of its own,
    /// recording the producer of every node they compute.
    pub(super) fn make_units(&mut self) {
        for gi in 0..self.groups.len() {
            self.units.push(Unit::Group(gi));
            let members: Vec<NodeId> = self.groups[gi].members.iter().copied().collect();
            for m in members {
                self.producer.insert(m, self.units.len() - 1);
            }
        }
        for i in 0..self.g.len() {
            let n = NodeId(i as u32);
            if self.live[i]
                && matches!(
                    self.cls(n),
                    Class::MatMul
                        | Class::ArgMax
                        | Class::Concat
                        | Class::Pad
                        | Class::Rows
                        | Class::Window
                        | Class::Recurrence
                )
            {
                self.units.push(Unit::Node(n));
                self.producer.insert(n, self.units.len() - 1);
            }
        }
    }

    /// Adds a unit copying `node` into `dst`, a buffer made for it; returns the unit.
    pub(super) fn add_copy(&mut self, node: NodeId, dst: BufId) -> usize {
        self.units.push(Unit::Copy { node, dst });
        self.copy_dsts.insert(dst);
        self.units.len() - 1
    }

    /// Units whose results `n` needs, looking through views and scalar chains.
    pub(super) fn producers_of(
        &self,
        n: NodeId,
        out: &mut BTreeSet<usize>,
        seen: &mut HashSet<NodeId>,
    ) {
        // An explicit stack: a chain of scalars or views can be as long as the
        // spec (the gradient of a 100,000-term sum).
        let mut stack = vec![n];
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            if let Some(&u) = self.producer.get(&n) {
                out.insert(u);
                continue;
            }
            if matches!(self.cls(n), Class::View | Class::Scalar) {
                stack.extend(self.g.inputs_of(n).iter().copied());
            }
        }
    }

    /// Nodes a unit reads that it does not compute itself.
    pub(super) fn external_reads(&self, u: &Unit) -> Vec<NodeId> {
        match u {
            Unit::Group(gi) => {
                let g = &self.groups[*gi];
                let mut out = Vec::new();
                let mut seen = HashSet::new();
                for m in &g.members {
                    for &i in self.g.inputs_of(*m) {
                        if !g.members.contains(&i) && seen.insert(i) {
                            out.push(i);
                        }
                    }
                }
                out
            }
            Unit::Node(n) => self.g.inputs_of(*n).to_vec(),
            Unit::Copy { node, .. } => vec![*node],
        }
    }

    /// The units that must run before unit `ui`.
    pub(super) fn unit_deps(&self, ui: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        let mut seen = HashSet::new();
        for n in self.external_reads(&self.units[ui]) {
            self.producers_of(n, &mut out, &mut seen);
        }
        if let Unit::Copy { node, .. } = &self.units[ui] {
            // A copy reads its node from the unit producing it, or (when the copy
            // itself materializes the node) from the producers of the node's inputs.
            out.clear();
            match self.producer.get(node) {
                Some(&p) if p != ui => {
                    out.insert(p);
                }
                _ => {
                    let mut seen = HashSet::new();
                    for &i in self.g.inputs_of(*node) {
                        self.producers_of(i, &mut out, &mut seen);
                    }
                }
            }
        }
        out.remove(&ui);
        out
    }
}
