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

use std::collections::BTreeSet;

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
        for (v, w) in writers {
            let var_node = self
                .g
                .nodes()
                .find(|(_, nd)| nd.op == Op::Var(v))
                .map(|(id, _)| id);
            let Some(var_node) = var_node else { continue };
            for r in 0..n {
                let mut reads = false;
                let mut same_elem_only = true;
                for x in self.external_reads(&self.units[r].clone()) {
                    if self.depends_on_var_node(x, var_node) {
                        reads = true;
                        if x != var_node {
                            same_elem_only = false;
                        }
                    }
                }
                if !reads {
                    continue;
                }
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
        let finals: Vec<usize> = (0..n)
            .filter(|&u| matches!(&self.units[u], Unit::Copy { dst, .. } if matches!(self.buffers[dst.0 as usize].loc, Loc::Arena { .. })))
            .collect();
        for &f in &finals {
            for u in 0..n {
                if !finals.contains(&u) {
                    deps[f].insert(u);
                }
            }
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

    /// Whether reading `x` reads the variable node (directly or through views).
    fn depends_on_var_node(&self, x: NodeId, var_node: NodeId) -> bool {
        if x == var_node {
            return true;
        }
        match self.cls(x) {
            Class::View => self
                .g
                .inputs_of(x)
                .iter()
                .any(|&i| self.depends_on_var_node(i, var_node)),
            _ => false,
        }
    }
}
