//! Fusion: which elementwise and reduce nodes are computed in which loop.
//!
//! Owns: the fusion groups ([`Group`]: the nodes one loop computes, over one
//! domain) and the two decisions that build them.
//! - Tree fusion ([`Planner::fuse`]), walking nodes from last to first: a
//!   reduction starts a group over its operand's shape; an elementwise node
//!   joins its consumers' group when every consumer is in that one group,
//!   the group's domain is the node's shape and the node is not a root;
//!   otherwise it starts a group of its own.
//! - Multi-output fusion ([`Planner::merge_groups`], on units): a group
//!   merges into a consumer group over the same domain (and the same reduced
//!   axes when both reduce) when the consumer reads it only element by
//!   element at the same element and no other unit has to run between them.
//!   Adam's m, v and parameter updates become one loop; a bias gradient is
//!   summed in the loop that computes it.
//!
//! Which members must be written to memory ([`Planner::stored`]) follows:
//! roots, reductions with a tensor result, and values read outside their loop.
//!
//! Invariants: every live elementwise or reduce node is in exactly one live
//! group; a group's elementwise members have its domain's shape; merging
//! keeps the unit graph acyclic (it never merges across a unit that has to
//! run in between).

use std::collections::{BTreeSet, HashSet};

use super::units::{Class, Unit};
use super::Planner;
use crate::ir::{NodeId, Op, Shape};

/// A set of nodes computed by one loop.
#[derive(Clone, Debug)]
pub(super) struct Group {
    /// The loop's iteration space: the shape of its elementwise members, or
    /// of its reductions' operands.
    pub(super) domain: Shape,
    /// The reduced axes of `domain` (empty without reductions).
    pub(super) axes: Vec<usize>,
    pub(super) members: BTreeSet<NodeId>,
    /// False once merged into another group.
    pub(super) alive: bool,
}

impl Group {
    fn has_reduce(&self, class: &[Class]) -> bool {
        self.members
            .iter()
            .any(|m| class[m.index()] == Class::Reduce)
    }
}

/// A set of units for one search at a time, emptied in O(1).
struct Marks {
    marks: Vec<u32>,
    search: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            marks: vec![0; n],
            search: 0,
        }
    }

    /// Starts a new search: the set is empty.
    fn next(&mut self) {
        self.search += 1;
    }

    /// Adds `u`; whether it was not in the set.
    fn insert(&mut self, u: usize) -> bool {
        let fresh = self.marks[u] != self.search;
        self.marks[u] = self.search;
        fresh
    }
}

impl Planner<'_> {
    /// Tree fusion: assigns elementwise and reduce nodes to groups.
    pub(super) fn fuse(&mut self) {
        for i in (0..self.g.len()).rev() {
            let n = NodeId(i as u32);
            if !self.live[i] {
                continue;
            }
            match self.cls(n) {
                Class::Reduce => {
                    let x = self.g.inputs_of(n)[0];
                    let Op::Reduce { axes, .. } = self.g.op(n) else {
                        unreachable!()
                    };
                    let gi = self.groups.len();
                    self.groups.push(Group {
                        domain: self.g.shape(x).clone(),
                        axes: axes.iter().map(|&a| a as usize).collect(),
                        members: BTreeSet::from([n]),
                        alive: true,
                    });
                    self.group_of[i] = Some(gi);
                }
                Class::Elementwise => {
                    let shape = self.g.shape(n).clone();
                    let consumer_groups: Vec<Option<usize>> = self.users[i]
                        .iter()
                        .map(|&u| match self.cls(u) {
                            Class::Elementwise | Class::Reduce => self.group_of[u.index()],
                            _ => None,
                        })
                        .collect();
                    let joined = match consumer_groups.first() {
                        Some(Some(gi))
                            if !self.is_root[i]
                                && consumer_groups.iter().all(|c| *c == Some(*gi))
                                && self.groups[*gi].domain == shape =>
                        {
                            Some(*gi)
                        }
                        _ => None,
                    };
                    let gi = joined.unwrap_or_else(|| {
                        self.groups.push(Group {
                            domain: shape,
                            axes: vec![],
                            members: BTreeSet::new(),
                            alive: true,
                        });
                        self.groups.len() - 1
                    });
                    self.groups[gi].members.insert(n);
                    self.group_of[i] = Some(gi);
                }
                _ => {}
            }
        }
    }

    /// Whether a grouped node must be written to memory.
    pub(super) fn stored(&self, n: NodeId) -> bool {
        if self.g.shape(n).is_scalar() {
            // Scalars are SSA values; scalar roots are stored at the end of the function.
            return false;
        }
        if self.is_root[n.index()] {
            return true;
        }
        let gi = self.group_of[n.index()];
        match self.cls(n) {
            // A reduction's result leaves the loop unless it is a scalar SSA value.
            Class::Reduce => !self.g.shape(n).is_scalar(),
            _ => self.users[n.index()].iter().any(|&u| {
                self.group_of[u.index()] != gi
                    || !matches!(self.cls(u), Class::Elementwise | Class::Reduce)
            }),
        }
    }

    /// Multi-output fusion of loops over the same shape.
    pub(super) fn merge_groups(&mut self) {
        let n_units = self.units.len();
        let mut deps: Vec<BTreeSet<usize>> = (0..n_units).map(|u| self.unit_deps(u)).collect();
        let mut users: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n_units];
        for (u, ds) in deps.iter().enumerate() {
            for &d in ds {
                users[d].insert(u);
            }
        }
        // Merges happen one at a time, always the first mergeable pair in the
        // order (consumer unit, producer unit). A pair found not mergeable
        // stays so until one of its units takes part in a merge: merging u1
        // into u2 only renames u1 to u2 for everyone else and can only add
        // paths between units. So only the pairs of u2 are looked at again.
        let mut refused: HashSet<(usize, usize)> = HashSet::new();
        // Consumers that may have a pair not yet refused.
        let mut pending: BTreeSet<usize> = (0..n_units).collect();
        let mut seen = Marks::new(n_units);
        while let Some(u2) = pending.pop_first() {
            let Unit::Group(g2) = self.units[u2] else {
                continue;
            };
            if !self.groups[g2].alive {
                continue;
            }
            let found = deps[u2].iter().copied().find(|&u1| {
                if refused.contains(&(u2, u1)) {
                    return false;
                }
                let ok = matches!(self.units[u1], Unit::Group(g1)
                    if self.groups[g1].alive && self.mergeable(g1, g2, u1, u2, &deps, &mut seen));
                if !ok {
                    refused.insert((u2, u1));
                }
                ok
            });
            let Some(u1) = found else {
                continue;
            };
            let Unit::Group(g1) = self.units[u1] else {
                unreachable!("only groups merge")
            };
            let moved: Vec<NodeId> = self.groups[g1].members.iter().copied().collect();
            for m in &moved {
                self.group_of[m.index()] = Some(g2);
                self.producer.insert(*m, u2);
            }
            if self.groups[g2].axes.is_empty() {
                self.groups[g2].axes = self.groups[g1].axes.clone();
            }
            self.groups[g2].members.extend(moved);
            self.groups[g1].alive = false;
            self.groups[g1].members.clear();
            // u1's dependencies and users become u2's.
            for d in std::mem::take(&mut deps[u1]) {
                users[d].remove(&u1);
                if d != u2 {
                    deps[u2].insert(d);
                    users[d].insert(u2);
                }
            }
            for u in std::mem::take(&mut users[u1]) {
                deps[u].remove(&u1);
                if u != u2 {
                    deps[u].insert(u2);
                    users[u2].insert(u);
                }
            }
            for &u in &users[u2] {
                refused.remove(&(u, u2));
                pending.insert(u);
            }
            for &d in &deps[u2] {
                refused.remove(&(u2, d));
            }
            pending.insert(u2);
        }
        let groups = &self.groups;
        self.units
            .retain(|u| !matches!(u, Unit::Group(g) if !groups[*g].alive));
        self.producer.clear();
        for (ui, u) in self.units.iter().enumerate() {
            match u {
                Unit::Group(gi) => {
                    for m in &self.groups[*gi].members {
                        self.producer.insert(*m, ui);
                    }
                }
                Unit::Node(n) => {
                    self.producer.insert(*n, ui);
                }
                Unit::Copy { .. } => {}
            }
        }
    }

    fn mergeable(
        &self,
        g1: usize,
        g2: usize,
        u1: usize,
        u2: usize,
        deps: &[BTreeSet<usize>],
        seen: &mut Marks,
    ) -> bool {
        let (a, b) = (&self.groups[g1], &self.groups[g2]);
        if a.domain != b.domain {
            return false;
        }
        let (ra, rb) = (a.has_reduce(&self.class), b.has_reduce(&self.class));
        if ra && rb && a.axes != b.axes {
            return false;
        }
        // Every read of g1 by g2 must be an elementwise value at the same element.
        for m in &b.members {
            for &i in self.g.inputs_of(*m) {
                if b.members.contains(&i) {
                    continue;
                }
                let mut prods = BTreeSet::new();
                self.producers_of(i, &mut prods, &mut HashSet::new());
                if prods.contains(&u1) {
                    let direct = a.members.contains(&i) && self.cls(i) == Class::Elementwise;
                    if !direct {
                        return false;
                    }
                }
            }
        }
        // No other unit may have to run between them.
        let mut stack: Vec<usize> = deps[u2].iter().copied().filter(|&d| d != u1).collect();
        seen.next();
        while let Some(u) = stack.pop() {
            if u == u1 {
                return false;
            }
            if seen.insert(u) {
                stack.extend(deps[u].iter().copied());
            }
        }
        true
    }
}
