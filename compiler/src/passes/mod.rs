//! Graph passes: simplification, common subexpressions, dead code.
//!
//! Owns: rebuilding a model's graph from the roots of its functions. The
//! rebuild visits live nodes in topological order, rewrites each with the
//! rules of [`rules`] and re-interns it, so dead nodes disappear (DCE) and
//! nodes made equal by rewriting merge (CSE, by hash-consing).
//!
//! Invariants: the rebuilt graph computes the same values bit for bit; node
//! ids stay a topological order; every function, binding and the loss are
//! remapped, and the graph's fake-quantization records
//! (`ir::FakeQuant`) carried to the new ids (dropped when dead);
//! `stop_gradient` is gone afterwards (it only matters to autodiff).

pub mod rules;
pub mod winograd;

use crate::ir::{Graph, NodeId, Op};
use crate::model::Model;

/// Rebuilds `g` keeping what `roots` need; returns the new graph and the old-to-new map.
pub fn rebuild(g: &Graph, roots: &[NodeId]) -> (Graph, Vec<Option<NodeId>>) {
    let live = g.reachable(roots);
    let mut out = Graph::new();
    out.inputs = g.inputs.clone();
    out.vars = g.vars.clone();
    out.consts = g.consts.clone();
    let mut map: Vec<Option<NodeId>> = vec![None; g.len()];
    for (id, node) in g.nodes() {
        if !live[id.index()] {
            continue;
        }
        let inputs: Vec<NodeId> = node
            .inputs
            .iter()
            .map(|i| map[i.index()].expect("inputs precede their users"))
            .collect();
        out.current_span = g.span(id);
        let new = match rules::simplify(&mut out, &node.op, &inputs, &node.shape) {
            Some(n) => n,
            None => match &node.op {
                // Leaves are re-created through the builder so their types come from the declarations.
                Op::Input(i) => out.input(*i),
                Op::Var(i) => out.var(*i),
                op => out.intern(op.clone(), inputs, node.dtype, node.shape.clone()),
            },
        };
        map[id.index()] = Some(new);
    }
    out.current_span = None;
    for fq in &g.fake_quants {
        if let Some(r) = fq.remap(&map) {
            if !out.fake_quants.contains(&r) {
                out.fake_quants.push(r);
            }
        }
    }
    (out, map)
}

/// Simplifies the model's graph until nothing changes (at most a few rounds).
pub fn optimize(model: &mut Model) {
    resolve_training(model);
    for _ in 0..4 {
        let before = model.graph.len();
        let roots = model_roots(model);
        let (g, map) = rebuild(&model.graph, &roots);
        remap(model, &map);
        model.graph = g;
        if model.graph.len() == before {
            break;
        }
    }
}

/// Replaces `Op::Training` in each function: 1 in `grad`, `step`,
/// `summary_step` and `replica_grad`, 0 in `eval`, `predict` and `check`, so the rules fold
/// each function to its mode (dropout and batch normalization keep one
/// branch).
fn resolve_training(m: &mut Model) {
    let g = &mut m.graph;
    if !g.nodes().any(|(_, n)| n.op == Op::Training) {
        return;
    }
    let one = g.scalar(1.0);
    let zero = g.scalar(0.0);
    let fs = &mut m.functions;
    for (f, mode) in [
        (Some(&mut fs.eval), zero),
        (fs.predict.as_mut(), zero),
        (fs.check.as_mut(), zero),
        (fs.grad.as_mut(), one),
        (fs.step.as_mut(), one),
        (fs.summary_step.as_mut(), one),
        (fs.replica_grad.as_mut(), one),
    ] {
        let Some(f) = f else { continue };
        for o in &mut f.outputs {
            o.node = g.replace_leaf(o.node, &Op::Training, mode);
        }
        for u in &mut f.updates {
            u.1 = g.replace_leaf(u.1, &Op::Training, mode);
        }
    }
}

fn model_roots(m: &Model) -> Vec<NodeId> {
    let mut roots = vec![m.loss];
    for f in [
        Some(&m.functions.eval),
        m.functions.predict.as_ref(),
        m.functions.grad.as_ref(),
        m.functions.step.as_ref(),
        m.functions.summary_step.as_ref(),
        m.functions.replica_grad.as_ref(),
        m.functions.check.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        roots.extend(f.roots());
    }
    roots.extend(m.bindings.iter().map(|b| b.1));
    roots.extend(m.assertions.iter().map(|a| a.node));
    roots.extend(m.state_updates.iter().map(|u| u.value));
    for g in &m.optimizers {
        roots.extend(g.spec.hypers.nodes());
    }
    roots
}

fn remap(m: &mut Model, map: &[Option<NodeId>]) {
    let f = |n: &mut NodeId| *n = map[n.index()].expect("root is live");
    f(&mut m.loss);
    for func in [
        Some(&mut m.functions.eval),
        m.functions.predict.as_mut(),
        m.functions.grad.as_mut(),
        m.functions.step.as_mut(),
        m.functions.summary_step.as_mut(),
        m.functions.replica_grad.as_mut(),
        m.functions.check.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        for o in &mut func.outputs {
            f(&mut o.node);
        }
        for u in &mut func.updates {
            f(&mut u.1);
        }
    }
    for b in &mut m.bindings {
        f(&mut b.1);
    }
    for u in &mut m.state_updates {
        f(&mut u.value);
    }
    for a in &mut m.assertions {
        f(&mut a.node);
    }
    for n in m
        .optimizers
        .iter_mut()
        .flat_map(|g| g.spec.hypers.nodes_mut())
    {
        f(n);
    }
}
