//! Ordering: the order the units run in.
//!
//! Owns: a topological order of the units (Kahn's algorithm, the smallest
//! ready unit first, so the order is deterministic) over their data
//! dependencies plus two kinds of ordering constraints:
//! - a unit that writes a variable in place runs after every other unit
//!   that reads the variable's old value (directly or through views);
//! - copies into variables (out-of-place updates) run after everything else.
//!
//! When an in-place write cannot be ordered — its own loop reads the old
//! value other than at the same element, or the constraints form a cycle —
//! ordering fails with that variable, and [`super::plan`] plans again with
//! the variable updated out of place.
//!
//! Invariant: in the order returned, every unit comes after the units it
//! depends on, and no unit reads a variable after it was overwritten.

use std::collections::{BTreeSet, HashMap};

use super::units::{Class, Unit};
use super::{Loc, Planner};
use crate::ir::{NodeId, Op};

impl Planner<'_> {
    /// A dependency order of units (ties broken by unit index), with in-place hazards.
    pub(super) fn order(&mut self, deps: &[BTreeSet<usize>]) -> Result<Vec<usize>, u32> {
        let n = self.units.len();
        let mut deps: Vec<BTreeSet<usize>> = deps.to_vec();
        // Readers of a variable's old value run before the unit writing it in place.
        let writers: Vec<(u32, usize)> = self
            .in_place
            .iter()
            .map(|(&v, node)| (v, self.producer[node]))
            .collect();
        let var_nodes = self.var_nodes();
        let readers = self.var_readers();
        for (v, w) in writers {
            let Some(rs) = var_nodes.get(&v).and_then(|var| readers.get(var)) else {
                continue;
            };
            for &(r, same_elem_only) in rs {
                if r == w {
                    if !same_elem_only {
                        return Err(v);
                    }
                    continue;
                }
                deps[w].insert(r);
            }
        }
        // Copies into variables (non-in-place updates) run last.
        let is_final: Vec<bool> = self
            .units
            .iter()
            .map(|u| matches!(u, Unit::Copy { dst, .. } if matches!(self.buffers[dst.0 as usize].loc, Loc::Arena { .. })))
            .collect();
        for f in (0..n).filter(|&f| is_final[f]) {
            deps[f].extend((0..n).filter(|&u| !is_final[u]));
        }
        // Kahn's algorithm, smallest ready unit first.
        let mut indeg = vec![0usize; n];
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (u, ds) in deps.iter().enumerate() {
            for &d in ds {
                indeg[u] += 1;
                users[d].push(u);
            }
        }
        let mut ready: BTreeSet<usize> = (0..n).filter(|&u| indeg[u] == 0).collect();
        let mut order = Vec::new();
        while let Some(u) = ready.pop_first() {
            order.push(u);
            for &x in &users[u] {
                indeg[x] -= 1;
                if indeg[x] == 0 {
                    ready.insert(x);
                }
            }
        }
        if order.len() != n {
            // A cycle can only come from an in-place update: undo one.
            let v = *self
                .in_place
                .keys()
                .min()
                .expect("cycle without in-place update");
            return Err(v);
        }
        Ok(order)
    }

    /// The first node that reads each variable.
    fn var_nodes(&self) -> HashMap<u32, NodeId> {
        let mut nodes = HashMap::new();
        for (id, nd) in self.g.nodes() {
            if let Op::Var(v) = nd.op {
                nodes.entry(v).or_insert(id);
            }
        }
        nodes
    }

    /// For each variable node, the units that read it (directly or through
    /// views), in unit order, each with whether every such read is the
    /// variable node itself (so a loop reads it at the same element it writes).
    fn var_readers(&self) -> HashMap<NodeId, Vec<(usize, bool)>> {
        let mut readers: HashMap<NodeId, Vec<(usize, bool)>> = HashMap::new();
        let mut through_views: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
        for (r, unit) in self.units.iter().enumerate() {
            for x in self.external_reads(unit) {
                let vars = through_views.entry(x).or_insert_with(|| {
                    let mut vars = Vec::new();
                    self.vars_read_by(x, &mut vars);
                    vars
                });
                for &var in vars.iter() {
                    let list = readers.entry(var).or_default();
                    match list.last_mut() {
                        Some((last, same)) if *last == r => *same &= x == var,
                        _ => list.push((r, x == var)),
                    }
                }
            }
        }
        readers
    }

    /// The variable nodes that reading `x` reads (`x` itself or through views).
    fn vars_read_by(&self, x: NodeId, out: &mut Vec<NodeId>) {
        match self.g.op(x) {
            Op::Var(_) if !out.contains(&x) => out.push(x),
            Op::Var(_) => {}
            _ if self.cls(x) == Class::View => {
                for &i in self.g.inputs_of(x) {
                    self.vars_read_by(i, out);
                }
            }
            _ => {}
        }
    }
}
