//! Placement: which buffer holds each materialized node.
//!
//! Owns: giving every node that lives in memory its [`Buffer`], in this
//! order of preference:
//! 1. leaves where they are: inputs in `ctx.inputs`, variables and constant
//!    tensors in their arenas;
//! 2. a function output produced by a unit: written straight into the output;
//! 3. a tensor variable's new value computed by a loop (or scattered into the
//!    variable's own rows): written in place, unless an earlier attempt found
//!    that impossible (`not_in_place`, see the ordering phase);
//! 4. everything else a unit stores: scratch (offsets come later, from
//!    liveness).
//!
//! Outputs and variable updates not written by the unit that computes them
//! get a copy unit: leaves, views and iota as outputs, a node that is two
//! outputs, out-of-place updates. (Lowering adds scratch buffers of its own
//! when it materializes an operand no view can read, see `resolve`.)
//!
//! Invariants: every materialized node has exactly one buffer in `node_buf`
//! (an output or update copy adds a destination buffer, not a second home);
//! scratch buffers have offset 0 until `memory` assigns them.

use super::units::{Class, Unit};
use super::view::BufId;
use super::{Buffer, Loc, Planner};
use crate::ir::{NodeId, Op};

/// The location of element 0 of a variable or constant placed at `(arena, offset)`.
fn arena_loc((arena, offset): (usize, usize)) -> Loc {
    Loc::Arena {
        arena: arena as u32,
        offset: offset as u64,
    }
}

impl Planner<'_> {
    /// A new buffer for `node`, of its shape and dtype.
    pub(super) fn add_buffer(&mut self, node: NodeId, loc: Loc) -> BufId {
        let b = BufId(self.buffers.len() as u32);
        self.buffers.push(Buffer {
            node,
            loc,
            shape: self.g.shape(node).clone(),
            dtype: self.g.dtype(node),
        });
        b
    }

    /// Assigns every materialized node a buffer.
    pub(super) fn place_buffers(&mut self) {
        // Leaves.
        for i in 0..self.g.len() {
            let n = NodeId(i as u32);
            if !self.live[i] {
                continue;
            }
            let loc = match self.g.op(n) {
                Op::Input(k) => Loc::Input(*k),
                Op::Var(v) => arena_loc(self.place.vars[*v as usize]),
                Op::Tensor(c) => arena_loc(self.place.consts[*c as usize]),
                _ => continue,
            };
            let b = self.add_buffer(n, loc);
            self.node_buf.insert(n, b);
        }
        // Outputs produced by a unit are written straight into the output buffer.
        for (k, o) in self.f.outputs.iter().enumerate() {
            let n = o.node;
            if self.g.shape(n).is_scalar() || self.node_buf.contains_key(&n) {
                continue;
            }
            if self.producer.contains_key(&n) {
                let b = self.add_buffer(n, Loc::Output(k as u32));
                self.node_buf.insert(n, b);
            }
        }
        // In-place updates of tensor variables computed by a loop, or scattered
        // into the variable's own rows.
        for &(v, n) in &self.f.updates {
            let scatter_into_self = matches!(self.g.op(n), Op::ScatterAdd | Op::ScatterRows)
                && self.g.op(self.g.inputs_of(n)[0]) == &Op::Var(v);
            if self.g.shape(n).is_scalar()
                || self.node_buf.contains_key(&n)
                || self.not_in_place.contains(&v)
                || !(self.cls(n) == Class::Elementwise || scatter_into_self)
            {
                continue;
            }
            let b = self.add_buffer(n, arena_loc(self.place.vars[v as usize]));
            self.node_buf.insert(n, b);
            self.in_place.insert(v, n);
        }
        // Everything else that a unit materializes goes to scratch.
        let mut materialized: Vec<NodeId> = Vec::new();
        for u in &self.units {
            match u {
                Unit::Group(gi) => {
                    for &m in &self.groups[*gi].members {
                        if self.stored(m) {
                            materialized.push(m);
                        }
                    }
                }
                Unit::Node(n) => materialized.push(*n),
                Unit::Copy { .. } => {}
            }
        }
        for n in materialized {
            if !self.node_buf.contains_key(&n) {
                let b = self.add_buffer(n, Loc::Scratch { offset: 0 });
                self.node_buf.insert(n, b);
            }
        }
        // Roots that no unit computes (leaves, views, iota, duplicates) are copied.
        for (k, o) in self.f.outputs.iter().enumerate() {
            let n = o.node;
            if self.g.shape(n).is_scalar() {
                continue;
            }
            let already = matches!(self.node_buf.get(&n).map(|b| &self.buffers[b.0 as usize].loc), Some(Loc::Output(j)) if *j == k as u32);
            if !already {
                let dst = self.add_buffer(n, Loc::Output(k as u32));
                self.add_copy(n, dst);
            }
        }
        for &(v, n) in &self.f.updates {
            if self.g.shape(n).is_scalar() || self.in_place.get(&v) == Some(&n) {
                continue;
            }
            let dst = self.add_buffer(n, arena_loc(self.place.vars[v as usize]));
            self.add_copy(n, dst);
        }
    }
}
