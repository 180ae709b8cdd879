//! The invariants of the IR graph and of a model's functions, and their
//! checks.
//!
//! Of the graph (`ir`'s module doc; kept by `Graph::intern` and the
//! builders of `ir::build`):
//!
//! | invariant | what holds | checked by |
//! |---|---|---|
//! | `operands-precede-users` | every input of a node is a node with a smaller id: ids are a topological order | [`graph`] |
//! | `hash-consing` | each node is the one `Graph::intern` returns for its op and inputs, and the table has one entry per node: structurally equal nodes are one node | [`graph`] |
//! | `leaves-declared` | `Input(i)`, `Var(i)` and `Tensor(i)` name a declaration and have its dtype and shape; a constant holds one value per element of its fixed shape | [`graph`] |
//! | `op-arity` | every op has its number of inputs (leaves none, `Select` three, `ScatterRows` four, `Concat` at least one, ...) | [`graph`] |
//! | `shape-rules` | a node's dtype and shape are its op's rule applied to its inputs' (the table in [`rule`]); elementwise ops take operands of exactly their shape (broadcasting is an explicit `BroadcastTo`) | [`graph`] |
//! | `f32-arithmetic` | arithmetic (`Unary`, `Binary`, `Select`, reductions, products, argmax, the window ops) reads f32 operands: an i32 value is `Cast` first | [`graph`] |
//! | `one-batch-dimension` | a shape has the batch dimension `B` at most once | [`graph`] |
//!
//! Of the model (`model`'s module doc; kept by sema, `optim::build` and
//! `passes::optimize`'s remapping):
//!
//! | invariant | what holds | checked by |
//! |---|---|---|
//! | `declarations-parallel` | `model.inputs` is parallel to `graph.inputs`, `model.vars` to `graph.vars` | [`model`] |
//! | `roots-exist` | the loss (an f32 scalar), every binding, assertion, state update, optimizer argument, step output and function root is a node of the graph | [`model`] |
//! | `slots-mirror-parameters` | a slot or moving average names a parameter of its own shape (the layout puts it at the parameter's offset) | [`model`] |
//! | `function-outputs` | a function's output names are unique | [`model`] |
//! | `function-updates` | a function updates a declared variable with a value of its dtype and shape, each variable at most once (`optim`'s module doc) | [`model`] |
//! | `training-built` | after `optim::build`: the `grad` and `step` functions exist, and with replicas `replica_grad` does and `step` reads no input (`optim::replicas`) | [`built`] |
//! | `simplified` | after `passes::optimize`: no function reaches `stop_gradient` (it only matters to autodiff) or `Op::Training` (resolved per function) | [`optimized`] |

use std::borrow::Cow;
use std::collections::HashSet;

use super::{broken, require, Verdict};
use crate::ir::shape::{self, DType, Dim, Shape};
use crate::ir::{Function, Graph, NodeId, Op, Window, WinogradTile};
use crate::model::{Model, VarKind};

/// The graph's invariants (`operands-precede-users`, `hash-consing`,
/// `leaves-declared`, `op-arity`, `shape-rules`, `f32-arithmetic`,
/// `one-batch-dimension`), node by node in id order.
pub fn graph(g: &Graph) -> Verdict {
    for (id, node) in g.nodes() {
        for &i in &node.inputs {
            require(i < id, "operands-precede-users", || {
                format!("{id} ({:?}) reads {i}", node.op)
            })?;
        }
        require(
            node.shape.0.iter().filter(|d| **d == Dim::Batch).count() <= 1,
            "one-batch-dimension",
            || format!("{id} has shape {}", node.shape),
        )?;
        let (dtype, shape) =
            rule(g, id).map_err(|(inv, why)| broken(inv, format!("{id}: {why}")))?;
        let leaf = matches!(node.op, Op::Input(_) | Op::Var(_) | Op::Tensor(_));
        require(
            dtype == node.dtype && *shape == node.shape,
            if leaf {
                "leaves-declared"
            } else {
                "shape-rules"
            },
            || {
                format!(
                    "{id} = {:?} is {}{} but its rule gives {dtype}{shape}",
                    node.op, node.dtype, node.shape
                )
            },
        )?;
    }
    hash_consing(g)
}

/// `hash-consing`: the intern table and the nodes are in one-to-one
/// correspondence, each node under its own op and inputs (so no two nodes
/// are equal: the table's keys are distinct). One pass over the table, no
/// hashing.
fn hash_consing(g: &Graph) -> Verdict {
    let mut seen = vec![false; g.len()];
    for (op, inputs, id) in g.interned() {
        let node = (id.index() < g.len()).then(|| g.node(id));
        require(
            node.is_some_and(|n| n.op == *op && n.inputs == inputs) && !seen[id.index()],
            "hash-consing",
            || format!("the intern table maps {op:?} of {inputs:?} to {id}"),
        )?;
        seen[id.index()] = true;
    }
    match seen.iter().position(|s| !s) {
        Some(i) => {
            let node = g.node(NodeId(i as u32));
            // The node interned under its key, if any: its twin.
            let twin = g
                .interned()
                .find(|(op, inputs, _)| **op == node.op && *inputs == node.inputs.as_slice())
                .map(|(_, _, id)| id);
            Err(broken(
                "hash-consing",
                match twin {
                    Some(t) => format!("%{i} and {t} are both {:?} of {:?}", node.op, node.inputs),
                    None => format!("%{i} ({:?}) is not in the intern table", node.op),
                },
            ))
        }
        None => Ok(()),
    }
}

/// What a rule finds wrong: the invariant and why.
type RuleError = (&'static str, String);

fn arity(n: usize, want: usize) -> Result<(), RuleError> {
    if n == want {
        Ok(())
    } else {
        Err(("op-arity", format!("{n} inputs, the op takes {want}")))
    }
}

/// The dtype and shape node `id`'s op gives its inputs: the shape rules of
/// `ir::shape` and of each op's documentation in `ir`, one row per op.
/// Errors name `op-arity`, `shape-rules`, `f32-arithmetic` or
/// `leaves-declared`.
pub fn rule(g: &Graph, id: NodeId) -> Result<(DType, Cow<'_, Shape>), RuleError> {
    let node = g.node(id);
    let ins = &node.inputs;
    let s = |k: usize| g.shape(ins[k]);
    let dt = |k: usize| g.dtype(ins[k]);
    let bad = |why: String| ("shape-rules", why);
    let f32_operands = |ks: &[usize]| -> Result<(), RuleError> {
        match ks.iter().find(|&&k| dt(k) != DType::F32) {
            Some(&k) => Err(("f32-arithmetic", format!("operand {} is {}", ins[k], dt(k)))),
            None => Ok(()),
        }
    };
    let same_shape = |ks: &[usize]| -> Result<(), RuleError> {
        match ks.iter().find(|&&k| s(k) != &node.shape) {
            Some(&k) => Err(bad(format!(
                "elementwise operand {} is {}, not {}",
                ins[k],
                s(k),
                node.shape
            ))),
            None => Ok(()),
        }
    };
    let scalar_leaf = || -> Result<(DType, Cow<'_, Shape>), RuleError> {
        arity(ins.len(), 0)?;
        Ok((DType::F32, Cow::Owned(Shape::scalar())))
    };
    match &node.op {
        Op::Input(i) => {
            arity(ins.len(), 0)?;
            declared(
                g.inputs.get(*i as usize).map(|l| (l.dtype, &l.shape)),
                "input",
            )
        }
        Op::Var(i) => {
            arity(ins.len(), 0)?;
            declared(
                g.vars.get(*i as usize).map(|l| (l.dtype, &l.shape)),
                "variable",
            )
        }
        Op::Tensor(i) => {
            arity(ins.len(), 0)?;
            let c = g
                .consts
                .get(*i as usize)
                .ok_or(("leaves-declared", format!("no constant #{i}")))?;
            if c.shape.has_batch() || c.values.len() as u64 != c.shape.fixed_numel() {
                return Err((
                    "leaves-declared",
                    format!(
                        "constant #{i} has {} values for {}",
                        c.values.len(),
                        c.shape
                    ),
                ));
            }
            Ok((c.dtype, Cow::Borrowed(&c.shape)))
        }
        Op::Scalar(_) | Op::BatchSize | Op::GlobalStep | Op::FirstRow | Op::Training => {
            scalar_leaf()
        }
        Op::Iota { axis, shape } => {
            arity(ins.len(), 0)?;
            if usize::from(*axis) >= shape.rank() {
                return Err(bad(format!("iota axis {axis} of {shape}")));
            }
            Ok((DType::F32, Cow::Borrowed(shape)))
        }
        Op::Unary(_) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            same_shape(&[0])?;
            Ok((DType::F32, Cow::Borrowed(&node.shape)))
        }
        Op::Binary(_) | Op::UniformHash { .. } => {
            arity(ins.len(), 2)?;
            f32_operands(&[0, 1])?;
            same_shape(&[0, 1])?;
            Ok((DType::F32, Cow::Borrowed(&node.shape)))
        }
        Op::Select => {
            arity(ins.len(), 3)?;
            f32_operands(&[0, 1, 2])?;
            same_shape(&[0, 1, 2])?;
            Ok((DType::F32, Cow::Borrowed(&node.shape)))
        }
        Op::Cast(to) => {
            arity(ins.len(), 1)?;
            Ok((*to, Cow::Borrowed(s(0))))
        }
        Op::StopGradient => {
            arity(ins.len(), 1)?;
            Ok((dt(0), Cow::Borrowed(s(0))))
        }
        Op::NormalNoise { .. } => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            if !s(0).is_scalar() {
                return Err(bad(format!("the step {} is {}", ins[0], s(0))));
            }
            Ok((DType::F32, Cow::Owned(Shape::scalar())))
        }
        Op::BroadcastTo(to) => {
            arity(ins.len(), 1)?;
            if !shape::broadcasts_to(s(0), to) {
                return Err(bad(format!("{} does not broadcast to {to}", s(0))));
            }
            Ok((dt(0), Cow::Borrowed(to)))
        }
        Op::Reduce { axes, .. } => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let axes = sorted_axes(axes, s(0))?;
            Ok((DType::F32, Cow::Owned(shape::reduce(s(0), &axes))))
        }
        Op::ArgMax { axis } => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let axes = sorted_axes(&[*axis], s(0))?;
            Ok((DType::I32, Cow::Owned(shape::reduce(s(0), &axes))))
        }
        Op::MatMul { ta, tb } => {
            arity(ins.len(), 2)?;
            f32_operands(&[0, 1])?;
            let out = shape::matmul(s(0), s(1), *ta, *tb).map_err(bad)?;
            Ok((DType::F32, Cow::Owned(out)))
        }
        Op::BatchMatMul { ta, tb, groups } => {
            arity(ins.len(), 2)?;
            f32_operands(&[0, 1])?;
            let out =
                shape::batch_matmul(s(0), s(1), *ta, *tb, usize::from(*groups)).map_err(bad)?;
            Ok((DType::F32, Cow::Owned(out)))
        }
        Op::Recurrence { cell, operands } | Op::RecurrenceGrad { cell, operands } => {
            use crate::ir::recurrence as rec;
            let grad = matches!(node.op, Op::RecurrenceGrad { .. });
            let n = operands.count(cell);
            arity(ins.len(), n + if grad { 2 } else { 0 })?;
            let all: Vec<usize> = (0..ins.len()).collect();
            f32_operands(&all)?;
            let (b, t) = rec::batch_and_steps(s(0)).map_err(bad)?;
            let mut want = rec::input_shapes(cell, *operands, b, t);
            if grad {
                want.push(rec::tape_shape(cell, b, t));
                want.push(rec::state_shape(cell, b, t));
            }
            for (i, w) in want.iter().enumerate() {
                if s(i) != w {
                    return Err(bad(format!("recurrence input {i} is {}, not {w}", s(i))));
                }
            }
            let out = if grad {
                rec::grad_tape_shape(cell, b, t)
            } else {
                rec::tape_shape(cell, b, t)
            };
            Ok((DType::F32, Cow::Owned(out)))
        }
        Op::Reshape(to) => {
            arity(ins.len(), 1)?;
            shape::reshape(s(0), to).map_err(bad)?;
            Ok((dt(0), Cow::Borrowed(to)))
        }
        Op::Transpose(perm) => {
            arity(ins.len(), 1)?;
            let perm: Vec<usize> = perm.iter().map(|&p| usize::from(p)).collect();
            Ok((
                dt(0),
                Cow::Owned(shape::transpose(s(0), &perm).map_err(bad)?),
            ))
        }
        Op::Concat { axis } => {
            if ins.is_empty() {
                return Err(("op-arity", "a concat of nothing".into()));
            }
            let shapes: Vec<&Shape> = ins.iter().map(|&i| g.shape(i)).collect();
            if usize::from(*axis) >= shapes[0].rank() {
                return Err(bad(format!("concat axis {axis} of {}", shapes[0])));
            }
            if let Some(i) = ins.iter().find(|&&i| g.dtype(i) != dt(0)) {
                return Err(bad(format!("concat of {} and {}", dt(0), g.dtype(*i))));
            }
            let out = shape::concat(&shapes, usize::from(*axis)).map_err(bad)?;
            Ok((dt(0), Cow::Owned(out)))
        }
        Op::Slice { begin, shape: out } => {
            arity(ins.len(), 1)?;
            window_fits(begin, out, s(0), "slice", |b, o, i| b + o <= i)?;
            Ok((dt(0), Cow::Borrowed(out)))
        }
        Op::Pad { before, shape: out } => {
            arity(ins.len(), 1)?;
            window_fits(before, s(0), out, "pad", |b, i, o| b + i <= o)?;
            Ok((DType::F32, Cow::Borrowed(out)))
        }
        Op::Gather => {
            arity(ins.len(), 2)?;
            ids(g, ins[1])?;
            let params = s(0);
            if params.rank() == 0 {
                return Err(bad("gather from a scalar".into()));
            }
            let mut out = s(1).clone();
            out.0.extend(params.0[1..].iter().copied());
            Ok((dt(0), Cow::Owned(out)))
        }
        Op::ScatterAdd => {
            arity(ins.len(), 3)?;
            ids(g, ins[1])?;
            f32_operands(&[0, 2])?;
            Ok((DType::F32, Cow::Borrowed(s(0))))
        }
        Op::FirstOccurrence { .. } => {
            arity(ins.len(), 1)?;
            ids(g, ins[0])?;
            Ok((DType::I32, Cow::Borrowed(s(0))))
        }
        Op::SumDuplicates => {
            arity(ins.len(), 2)?;
            f32_operands(&[0])?;
            ids(g, ins[1])?;
            Ok((DType::F32, Cow::Borrowed(s(0))))
        }
        Op::ScatterRows => {
            arity(ins.len(), 4)?;
            ids(g, ins[1])?;
            ids(g, ins[2])?;
            f32_operands(&[0, 3])?;
            Ok((DType::F32, Cow::Borrowed(s(0))))
        }
        Op::Patches { window, .. } => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let n = images(s(0), window, window.input, window.channels)?;
            Ok((
                DType::F32,
                Cow::Owned(nhwc(n, window.output, window.patch_len())),
            ))
        }
        Op::PatchesGrad(window) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let n = images(s(0), window, window.output, window.patch_len())?;
            Ok((
                DType::F32,
                Cow::Owned(nhwc(n, window.input, window.channels)),
            ))
        }
        Op::WinogradInput(window, tile) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let n = images(s(0), window, window.input, window.channels)?;
            Ok((
                DType::F32,
                Cow::Owned(tiles(n, window, *tile, window.channels)),
            ))
        }
        Op::WinogradInputGrad(window, tile) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let n = tile_images(s(0), window, *tile, Some(window.channels))?;
            Ok((
                DType::F32,
                Cow::Owned(nhwc(n, window.input, window.channels)),
            ))
        }
        Op::WinogradOutput(window, tile) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let n = tile_images(s(0), window, *tile, None)?;
            let o = s(0).0[4].fixed().unwrap_or(0);
            Ok((DType::F32, Cow::Owned(nhwc(n, window.output, o))))
        }
        Op::WinogradOutputGrad(window, tile) => {
            arity(ins.len(), 1)?;
            f32_operands(&[0])?;
            let o = s(0).0.get(3).and_then(|d| d.fixed()).unwrap_or(0);
            let n = images(s(0), window, window.output, o)?;
            Ok((DType::F32, Cow::Owned(tiles(n, window, *tile, o))))
        }
    }
}

/// A leaf's declared dtype and shape, if declared.
fn declared<'g>(
    leaf: Option<(DType, &'g Shape)>,
    what: &str,
) -> Result<(DType, Cow<'g, Shape>), RuleError> {
    match leaf {
        Some((d, sh)) => Ok((d, Cow::Borrowed(sh))),
        None => Err(("leaves-declared", format!("no {what} declaration"))),
    }
}

/// Axes as a sorted list without repeats, each inside `s`.
fn sorted_axes(axes: &[u8], s: &Shape) -> Result<Vec<usize>, RuleError> {
    let ok =
        axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|&a| usize::from(a) < s.rank());
    if !ok {
        return Err(("shape-rules", format!("axes {axes:?} of {s}")));
    }
    Ok(axes.iter().map(|&a| usize::from(a)).collect())
}

/// A slice's or pad's window: `at` per axis, `inner` placed in `outer`
/// (batch axes whole, at 0; `fits(at, inner, outer)` for the fixed ones).
fn window_fits(
    at: &[u32],
    inner: &Shape,
    outer: &Shape,
    what: &str,
    fits: impl Fn(u64, u64, u64) -> bool,
) -> Result<(), RuleError> {
    let ok = at.len() == inner.rank()
        && inner.rank() == outer.rank()
        && inner
            .0
            .iter()
            .zip(&outer.0)
            .zip(at)
            .all(|((i, o), &b)| match (i, o) {
                (Dim::Batch, Dim::Batch) => b == 0,
                (Dim::Fixed(i), Dim::Fixed(o)) => fits(u64::from(b), u64::from(*i), u64::from(*o)),
                _ => false,
            });
    if ok {
        Ok(())
    } else {
        Err((
            "shape-rules",
            format!("{what} of {inner} at {at:?} does not fit {outer}"),
        ))
    }
}

/// Row ids: an i32 tensor.
fn ids(g: &Graph, n: NodeId) -> Result<(), RuleError> {
    if g.dtype(n) == DType::I32 {
        Ok(())
    } else {
        Err(("shape-rules", format!("ids {n} are {}", g.dtype(n))))
    }
}

/// `[N, hw[0], hw[1], c]`.
fn nhwc(n: Dim, hw: [u32; 2], c: u32) -> Shape {
    Shape(vec![n, Dim::Fixed(hw[0]), Dim::Fixed(hw[1]), Dim::Fixed(c)])
}

/// The images `N` of `s`, which must be `[N, hw[0], hw[1], c]`.
fn images(s: &Shape, w: &Window, hw: [u32; 2], c: u32) -> Result<Dim, RuleError> {
    match s.0.first() {
        Some(&n) if *s == nhwc(n, hw, c) => Ok(n),
        _ => Err((
            "shape-rules",
            format!("{s} is not [N, {}, {}, {c}] for window {w:?}", hw[0], hw[1]),
        )),
    }
}

/// `[G, N, TH, TW, c]`: the Winograd tiles of `w`'s output.
fn tiles(n: Dim, w: &Window, t: WinogradTile, c: u32) -> Shape {
    let [th, tw] = w.winograd_tiles(t);
    Shape(vec![
        Dim::Fixed(t.groups()),
        n,
        Dim::Fixed(th),
        Dim::Fixed(tw),
        Dim::Fixed(c),
    ])
}

/// The images `N` of the tile tensor `s` (`[G, N, TH, TW, c]`, any `c`
/// when `None`).
fn tile_images(s: &Shape, w: &Window, t: WinogradTile, c: Option<u32>) -> Result<Dim, RuleError> {
    let ok = |n: Dim| {
        let c = c.or(s.0.get(4).and_then(|d| d.fixed())).unwrap_or(0);
        *s == tiles(n, w, t, c)
    };
    match s.0.get(1) {
        Some(&n) if ok(n) => Ok(n),
        _ => Err((
            "shape-rules",
            format!("{s} is not the {} tiles of window {w:?}", t.name()),
        )),
    }
}

/// Every function of the model, with its name.
fn functions(m: &Model) -> Vec<&Function> {
    let fs = &m.functions;
    std::iter::once(&fs.eval)
        .chain(fs.predict.as_ref())
        .chain(fs.grad.as_ref())
        .chain(fs.step.as_ref())
        .chain(fs.summary_step.as_ref())
        .chain(fs.check.as_ref())
        .chain(fs.replica_grad.as_ref())
        .collect()
}

/// The model's invariants (`declarations-parallel`, `roots-exist`,
/// `slots-mirror-parameters`, `function-outputs`, `function-updates`) and
/// its graph's ([`graph`]).
pub fn model(m: &Model) -> Verdict {
    let g = &m.graph;
    require(
        m.inputs.len() == g.inputs.len() && m.vars.len() == g.vars.len(),
        "declarations-parallel",
        || {
            format!(
                "{} inputs for {} graph inputs, {} variables for {} graph variables",
                m.inputs.len(),
                g.inputs.len(),
                m.vars.len(),
                g.vars.len()
            )
        },
    )?;
    let exists = |n: NodeId, what: &str| {
        require(n.index() < g.len(), "roots-exist", || {
            format!("{what} is {n}, past the graph's {} nodes", g.len())
        })
    };
    exists(m.loss, "the loss")?;
    require(
        g.shape(m.loss).is_scalar() && g.dtype(m.loss) == DType::F32,
        "roots-exist",
        || {
            format!(
                "the loss {} is {}{}",
                m.loss,
                g.dtype(m.loss),
                g.shape(m.loss)
            )
        },
    )?;
    for (name, n) in &m.bindings {
        exists(*n, &format!("binding `{name}`"))?;
    }
    for a in &m.assertions {
        exists(a.node, &format!("assertion `{}`", a.kind))?;
    }
    for u in &m.state_updates {
        exists(u.value, "a state update")?;
    }
    for n in m.optimizers.iter().flat_map(|g| g.spec.hypers.nodes()) {
        exists(n, "an optimizer argument")?;
    }
    for o in &m.step_outputs {
        exists(o.node, &format!("step output `{}`", o.name))?;
    }
    for (i, v) in m.vars.iter().enumerate() {
        if let VarKind::Slot { param, .. } | VarKind::Average { param } = &v.kind {
            let p = *param as usize;
            let ok = matches!(m.vars.get(p).map(|v| &v.kind), Some(VarKind::Param { .. }))
                && g.vars[p].shape == g.vars[i].shape;
            require(ok, "slots-mirror-parameters", || {
                format!("`{}` mirrors variable #{p}", g.vars[i].name)
            })?;
        }
    }
    for f in functions(m) {
        function(g, f)?;
    }
    graph(g)
}

/// One function's outputs and updates (`roots-exist`, `function-outputs`,
/// `function-updates`).
fn function(g: &Graph, f: &Function) -> Verdict {
    let mut names = HashSet::new();
    for o in &f.outputs {
        require(o.node.index() < g.len(), "roots-exist", || {
            format!("`{}` output `{}` is {}", f.name, o.name, o.node)
        })?;
        require(names.insert(o.name.as_str()), "function-outputs", || {
            format!("`{}` has two outputs `{}`", f.name, o.name)
        })?;
    }
    let mut updated = HashSet::new();
    for &(v, n) in &f.updates {
        require(n.index() < g.len(), "roots-exist", || {
            format!("`{}` updates variable #{v} with {n}", f.name)
        })?;
        let Some(leaf) = g.vars.get(v as usize) else {
            return Err(broken(
                "function-updates",
                format!("`{}` updates undeclared variable #{v}", f.name),
            ));
        };
        require(
            leaf.shape == *g.shape(n) && leaf.dtype == g.dtype(n),
            "function-updates",
            || {
                format!(
                    "`{}` updates `{}` ({}{}) with {n} ({}{})",
                    f.name,
                    leaf.name,
                    leaf.dtype,
                    leaf.shape,
                    g.dtype(n),
                    g.shape(n)
                )
            },
        )?;
        require(updated.insert(v), "function-updates", || {
            format!("`{}` updates `{}` twice", f.name, leaf.name)
        })?;
    }
    Ok(())
}

/// After `optim::build`: [`model`], and `training-built`.
pub fn built(m: &Model) -> Verdict {
    model(m)?;
    let fs = &m.functions;
    require(
        fs.grad.is_some() && fs.step.is_some(),
        "training-built",
        || "no `grad` or no `step` function".into(),
    )?;
    if m.replicas.is_some() {
        require(fs.replica_grad.is_some(), "training-built", || {
            "replicas without a `replica_grad` function".into()
        })?;
        let step = fs.step.as_ref().expect("checked");
        let g = &m.graph;
        let live = g.reachable(&step.roots());
        if let Some((id, _)) = g
            .nodes()
            .find(|(id, n)| live[id.index()] && matches!(n.op, Op::Input(_)))
        {
            return Err(broken(
                "training-built",
                format!("the replicas' `step` reads input {id}"),
            ));
        }
    }
    Ok(())
}

/// After `passes::optimize`: [`model`], and `simplified`.
pub fn optimized(m: &Model) -> Verdict {
    model(m)?;
    let g = &m.graph;
    for f in functions(m) {
        let live = g.reachable(&f.roots());
        if let Some((id, n)) = g
            .nodes()
            .find(|(id, n)| live[id.index()] && matches!(n.op, Op::StopGradient | Op::Training))
        {
            return Err(broken(
                "simplified",
                format!("`{}` reaches {id} = {:?}", f.name, n.op),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::BinaryOp;

    /// `x: f32[B, 3]`, `w: f32[3, 2]`, `y = x @ w`, `z = relu(y)`.
    fn small() -> (Graph, NodeId) {
        let mut g = Graph::new();
        let x = g.add_input("x", DType::F32, Shape(vec![Dim::Batch, Dim::Fixed(3)]));
        let w = g.add_var("w", DType::F32, Shape::fixed(&[3, 2]));
        let (x, w) = (g.input(x), g.var(w));
        let y = g.matmul(x, w, false, false);
        let z = g.unary(crate::ir::UnaryOp::Relu, y);
        (g, z)
    }

    #[test]
    fn a_built_graph_verifies() {
        let (g, _) = small();
        assert_eq!(graph(&g), Ok(()));
    }

    #[test]
    fn an_operand_after_its_user_is_named() {
        let (mut g, z) = small();
        // A node that reads one not created yet.
        let later = NodeId(z.0 + 2);
        g.intern(
            Op::Unary(crate::ir::UnaryOp::Neg),
            vec![later],
            DType::F32,
            g.shape(z).clone(),
        );
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "operands-precede-users");
        assert!(v.detail.contains(&format!("reads {later}")), "{v}");
    }

    #[test]
    fn a_wrong_shape_is_named_with_the_rule() {
        let (mut g, z) = small();
        // relu of [B, 2] claimed to be [B, 3].
        g.intern(
            Op::Unary(crate::ir::UnaryOp::Exp),
            vec![z],
            DType::F32,
            Shape(vec![Dim::Batch, Dim::Fixed(3)]),
        );
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "shape-rules");
        assert!(
            v.detail.contains("not [B, 3]") || v.detail.contains("elementwise operand"),
            "{v}"
        );
    }

    #[test]
    fn an_implicit_broadcast_is_named() {
        let (mut g, z) = small();
        let c = g.scalar(2.0);
        // mul of [B, 2] by a scalar without BroadcastTo.
        g.intern(
            Op::Binary(BinaryOp::Mul),
            vec![z, c],
            DType::F32,
            g.shape(z).clone(),
        );
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "shape-rules");
        assert!(v.detail.contains("elementwise operand"), "{v}");
    }

    #[test]
    fn an_int_operand_of_arithmetic_is_named() {
        let (mut g, z) = small();
        let k = g.argmax(z, 1);
        let s = g.shape(k).clone();
        g.intern(Op::Unary(crate::ir::UnaryOp::Neg), vec![k], DType::F32, s);
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "f32-arithmetic");
    }

    #[test]
    fn a_wrong_arity_is_named() {
        let (mut g, z) = small();
        g.intern(Op::Select, vec![z, z], DType::F32, g.shape(z).clone());
        assert_eq!(graph(&g).unwrap_err().invariant, "op-arity");
    }

    #[test]
    fn a_leaf_of_another_type_is_named() {
        let mut g = Graph::new();
        g.add_var("w", DType::F32, Shape::fixed(&[3, 2]));
        g.intern(Op::Var(0), vec![], DType::I32, Shape::fixed(&[3, 2]));
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "leaves-declared", "{v}");
        let mut g = Graph::new();
        g.intern(Op::Var(0), vec![], DType::F32, Shape::fixed(&[3, 2]));
        assert_eq!(graph(&g).unwrap_err().invariant, "leaves-declared");
    }

    #[test]
    fn a_node_twice_is_named() {
        let (mut g, z) = small();
        let copy = g.node(z).clone();
        let again = g.push_unhashed(copy);
        let v = graph(&g).unwrap_err();
        assert_eq!(v.invariant, "hash-consing");
        assert!(
            v.detail.contains(&format!("{again} and {z}"))
                || v.detail.contains(&format!("{z} and {again}")),
            "{v}"
        );
    }

    #[test]
    fn two_batch_dimensions_are_named() {
        let mut g = Graph::new();
        g.intern(
            Op::Iota {
                axis: 0,
                shape: Shape(vec![Dim::Batch, Dim::Batch]),
            },
            vec![],
            DType::F32,
            Shape(vec![Dim::Batch, Dim::Batch]),
        );
        assert_eq!(graph(&g).unwrap_err().invariant, "one-batch-dimension");
    }
}
