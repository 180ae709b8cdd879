//! Reverse-mode differentiation over the IR.
//!
//! Owns: the traversal that turns a scalar loss into gradient nodes for a set
//! of variables. The per-op derivatives live in [`rules`].
//!
//! Invariants:
//! - Only nodes on a path from a differentiated variable to the loss get a
//!   cotangent; contributions to one node are summed (TF's ADD_N).
//! - `stop_gradient` cuts the path; a non-differentiable op (argmax,
//!   comparisons, int casts) on a live path is an error naming the op, never a
//!   silent zero.
//! - The graph only grows: forward nodes are untouched, gradient nodes are new
//!   (or hash-consed onto existing equal nodes).

mod recurrence;
pub mod rules;

use crate::ir::{Graph, NodeId, Op};
use rules::Rule;

/// A non-differentiable op on the path from `var` to the loss.
#[derive(Clone, Debug, PartialEq)]
pub struct NoGradient {
    pub node: NodeId,
    pub var: u32,
}

/// The gradient of `loss` with respect to each variable in `wrt`
/// (`None` where the loss does not depend on it).
pub fn gradients(
    g: &mut Graph,
    loss: NodeId,
    wrt: &[u32],
) -> Result<Vec<Option<NodeId>>, NoGradient> {
    let n = loss.index() + 1;
    // depends[i] = Some(var) if node i depends on differentiated variable `var`.
    let mut depends: Vec<Option<u32>> = vec![None; n];
    for i in 0..n {
        let node = g.node(NodeId(i as u32));
        depends[i] = match &node.op {
            Op::Var(v) if wrt.contains(v) => Some(*v),
            Op::StopGradient => None,
            _ => node.inputs.iter().find_map(|inp| depends[inp.index()]),
        };
    }
    let live = g.reachable(&[loss]);
    let mut contributions: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    if depends[loss.index()].is_some() {
        contributions[loss.index()].push(g.scalar(1.0));
    }
    let mut result: Vec<Option<NodeId>> = vec![None; wrt.len()];
    for i in (0..n).rev() {
        if !live[i] || depends[i].is_none() || contributions[i].is_empty() {
            continue;
        }
        let id = NodeId(i as u32);
        let parts = std::mem::take(&mut contributions[i]);
        let mut ct = parts[0];
        for &p in &parts[1..] {
            ct = g.add(ct, p);
        }
        if let Op::Var(v) = g.op(id) {
            if let Some(k) = wrt.iter().position(|w| w == v) {
                result[k] = Some(ct);
            }
            continue;
        }
        let inputs = g.inputs_of(id).to_vec();
        let saved_span = g.current_span;
        g.current_span = g.span(id);
        let rule = rules::vjp(g, id, ct);
        g.current_span = saved_span;
        match rule {
            Rule::NotDifferentiable => {
                if let Some(var) = inputs.iter().find_map(|inp| depends[inp.index()]) {
                    // Report the non-differentiable op closest to the variable
                    // (e.g. the argmax inside a cast), which is the real cause.
                    let mut culprit = id;
                    while let Some(&next) = g.inputs_of(culprit).iter().find(|i| {
                        depends[i.index()].is_some() && rules::is_not_differentiable(g, **i)
                    }) {
                        culprit = next;
                    }
                    return Err(NoGradient { node: culprit, var });
                }
            }
            Rule::Cotangents(cts) => {
                for (inp, c) in inputs.iter().zip(cts) {
                    if let Some(c) = c {
                        if depends[inp.index()].is_some() {
                            contributions[inp.index()].push(c);
                        }
                    }
                }
            }
        }
    }
    Ok(result)
}
