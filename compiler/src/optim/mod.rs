//! The training step as IR: gradients, optimizer slots, updates.
//!
//! Owns: turning a checked [`Model`] into its `grad` and `step` functions.
//! It differentiates the loss with respect to every trainable parameter,
//! clips the gradients ([`clip`]), creates the optimizer's variables with TF's
//! names (`W/Adam`, `W/Adam_1`, `beta1_power`), writes each update with the
//! rules of the optimizer's entry in [`table`] (dense, or sparse through
//! [`sparse`] for an `IndexedSlices` gradient), and adds moving averages.
//! With several optimizers (groups by `var_list`), each parameter is updated
//! by its group's rule, learning rate and slots, each group's non-slot
//! variables take TF's unique names, and the step increments `global_step`
//! once; a clip with a `var_list` clips only its group of gradients.
//!
//! Invariants: every trainable parameter gets a gradient or the model is
//! rejected (`no-gradient`); slot variables are created in parameter order,
//! slot by slot, so arena layouts are deterministic; every variable is
//! updated at most once; non-slot variables are updated after (and from the
//! values before) the parameter updates, as TF's `_finish` does; moving
//! averages read the parameters' new values.

pub mod clip;
pub mod defined;
pub mod replicas;
pub mod sharded;
pub mod sparse;
pub mod table;

use specc_grammar::{Code, Diagnostic};
use specc_runtime::abi::{
    assertion_output, grad_output, OUTPUT_GLOBAL_NORM, OUTPUT_LEARNING_RATE, OUTPUT_LOSS,
    SUMMARY_STEP,
};
use specc_runtime::init::Initializer;

use crate::autodiff;
use crate::ir::{BinaryOp, Function, NodeId, Op, Output, Shape};
use crate::model::{Model, VarKind};

/// Adds the `grad` and `step` functions to the model.
pub fn build(model: &mut Model) -> Result<(), Vec<Diagnostic>> {
    // Tables sharded across replicas are differentiated through the rows
    // each replica fetches.
    sharded::shard(model)?;
    let params = model.trainable_params();
    let wrt: Vec<u32> = params
        .iter()
        .map(|&p| sharded::differentiated(model, p))
        .collect();
    let grads = autodiff::gradients(&mut model.graph, model.loss, &wrt)
        .map_err(|e| vec![not_differentiable(model, e)])?;

    let mut errors = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        if grads[k].is_none() {
            let name = model.var_name(p).to_string();
            let span = model.vars[p as usize].span.unwrap_or_default();
            errors.push(
                Diagnostic::new(
                    Code::NoGradient,
                    span,
                    format!("parameter `{name}` gets no gradient: the loss does not depend on it"),
                )
                .with_label("declared here")
                .with_secondary(model.loss_span, "the loss")
                .with_help(format!(
                    "use `{name}` in the loss, or declare it with `trainable = false`"
                )),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut grads: Vec<NodeId> = grads.into_iter().flatten().collect();
    // A table read by several lookups: their IndexedSlices, summed, are one
    // IndexedSlices (TF's `aggregate_indexed_slices_gradients`), which stays
    // sparse as TF's does.
    for gr in &mut grads {
        if let Some(one) = sparse::summed_slices(&mut model.graph, *gr) {
            *gr = one;
        }
    }

    let mut grad_fn = Function::new("grad");
    grad_fn.outputs.push(Output {
        name: OUTPUT_LOSS.into(),
        node: model.loss,
    });
    for (&p, &gr) in params.iter().zip(&grads) {
        grad_fn.outputs.push(Output {
            name: grad_output(model.var_name(p)),
            node: gr,
        });
    }

    // A gradient that is an IndexedSlices (the table's only use is a lookup)
    // stays sparse: clipping and the global norm see its rows (as TF's do),
    // and the optimizer applies it with TF's sparse semantics.
    let mut sparse_ids: Vec<Option<NodeId>> = grads
        .iter()
        .map(|&gr| indexed_slices(&model.graph, gr).map(|(ids, _)| ids))
        .collect();
    for (k, &p) in params.iter().enumerate() {
        if sparse_ids[k].is_none() && sharded::differentiated(model, p) != p {
            let name = model.var_name(p).to_string();
            return Err(vec![Diagnostic::new(
                Code::ShapeMismatch,
                model.vars[p as usize].span.unwrap_or_default(),
                format!(
                    "`{name}` is sharded across replicas, but its gradient is not the rows of \
                     its lookup (an IndexedSlices)"
                ),
            )
            .with_label("partitioned here")]);
        }
    }
    for (gr, ids) in grads.iter_mut().zip(&sparse_ids) {
        if ids.is_some() {
            *gr = model.graph.inputs_of(*gr)[2];
        }
    }

    // Trained by replicas: the step reads the replicas' combined gradients,
    // loss and state updates from exchange variables (`replicas`).
    let mut state_updates: Vec<(u32, NodeId)> = model
        .state_updates
        .iter()
        .map(|u| (u.var, u.value))
        .collect();
    let mut step_loss = model.loss;
    if model.replicas.is_some() {
        let split = replicas::split(model, &params, &mut grads, &mut sparse_ids, &state_updates);
        step_loss = split.loss;
        state_updates = split.state_updates;
    }

    // A sharded table's gradient is held apart by the replicas: no norm
    // over it can be taken where the step runs.
    let sharded_name = |model: &Model, k: usize| {
        let p = params[k];
        (sharded::differentiated(model, p) != p).then(|| model.var_name(p).to_string())
    };
    if model.report_global_norm {
        if let Some(name) = (0..params.len()).find_map(|k| sharded_name(model, k)) {
            return Err(vec![Diagnostic::new(
                Code::ShapeMismatch,
                model.loss_span,
                format!(
                    "the `global_norm` metric needs every gradient whole, but `{name}` is \
                     sharded across the replicas"
                ),
            )
            .with_label("trained here")
            .with_help("drop the metric, or train in one process")]);
        }
    }
    for c in &model.clips {
        if matches!(c.kind, crate::model::ClipKind::ByValue { .. }) {
            continue;
        }
        let covered = (0..params.len()).filter(|&k| {
            c.var_list
                .as_ref()
                .is_none_or(|l| l.contains(model.var_name(params[k])))
        });
        if let Some(name) = covered.clone().find_map(|k| sharded_name(model, k)) {
            return Err(vec![Diagnostic::new(
                Code::ShapeMismatch,
                c.span,
                format!(
                    "clipping by a norm needs the whole gradient of `{name}`, which is sharded \
                     across the replicas"
                ),
            )
            .with_label("a norm over the sharded gradient")
            .with_help(
                "give the clip a var_list without the sharded tables, clip by value, or train \
                 in one process",
            )]);
        }
    }

    // The global norm of the raw gradients (metric), then clipping in order.
    let raw_norm = if model.report_global_norm {
        model.graph.current_span = None;
        Some(clip::global_norm(&mut model.graph, &grads))
    } else {
        None
    };
    for c in &model.clips {
        // The gradients this clip takes (its var_list, or all), in order.
        let chosen: Vec<usize> = (0..params.len())
            .filter(|&k| {
                c.var_list
                    .as_ref()
                    .is_none_or(|l| l.contains(model.var_name(params[k])))
            })
            .collect();
        for &k in &chosen {
            if let Some(why) = clip::check(&c.kind, model.graph.shape(grads[k])) {
                let name = model.var_name(params[k]);
                return Err(vec![Diagnostic::new(
                    Code::ShapeMismatch,
                    c.span,
                    format!("cannot clip the gradient of `{name}`: {why}"),
                )
                .with_label("does not fit every gradient")]);
            }
        }
        model.graph.current_span = Some(c.span);
        let mut part: Vec<NodeId> = chosen.iter().map(|&k| grads[k]).collect();
        clip::apply(&mut model.graph, &c.kind, &mut part);
        for (&k, gr) in chosen.iter().zip(part) {
            grads[k] = gr;
        }
    }
    model.graph.current_span = None;

    // Each parameter's optimizer (its group).
    let groups: Vec<crate::model::OptimizerSpec> =
        model.optimizers.iter().map(|g| g.spec.clone()).collect();
    let group_of: Vec<usize> = params.iter().map(|&p| model.optimizer_of(p)).collect();
    // Slot variables: for each param, its slots in rule order (TF names W/Adam, W/Adam_1).
    let mut slot_vars: Vec<Vec<u32>> = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        let shape = model.graph.vars[p as usize].shape.clone();
        let pname = model.var_name(p).to_string();
        let vars = table::slots(&groups[group_of[k]])
            .iter()
            .map(|s| {
                model.add_var(
                    &format!("{pname}/{}", s.suffix),
                    shape.clone(),
                    VarKind::Slot {
                        param: p,
                        slot: s.name.clone(),
                    },
                    constant_init(s.init),
                )
            })
            .collect();
        slot_vars.push(vars);
    }

    // Each group's non-slot variables, named uniquely as TF names a second
    // `beta1_power` (`beta1_power_1`).
    let mut global_vars: Vec<Vec<u32>> = Vec::new();
    for opt in &groups {
        let vars = table::globals(opt)
            .iter()
            .map(|(name, init)| {
                let (name, init) = (name.as_str(), *init);
                let mut unique = name.to_string();
                let mut i = 0;
                while model.graph.vars.iter().any(|v| v.name == unique) {
                    i += 1;
                    unique = format!("{name}_{i}");
                }
                model.add_var(
                    &unique,
                    Shape::scalar(),
                    VarKind::Optimizer,
                    constant_init(init),
                )
            })
            .collect();
        global_vars.push(vars);
    }

    let replicated = model.replicas.is_some();
    let g = &mut model.graph;
    g.current_span = Some(groups[0].span);
    let globals: Vec<Vec<NodeId>> = global_vars
        .iter()
        .map(|vs| vs.iter().map(|&v| g.var(v)).collect())
        .collect();
    let lr = groups[0].learning_rate(g);
    let step_node = g.global_step();
    let mut step = Function::new("step");
    step.outputs.push(Output {
        name: OUTPUT_LOSS.into(),
        node: step_loss,
    });
    // The learning rate this step used (a schedule's current value).
    step.outputs.push(Output {
        name: OUTPUT_LEARNING_RATE.into(),
        node: lr,
    });
    if let Some(n) = raw_norm {
        step.outputs.push(Output {
            name: OUTPUT_GLOBAL_NORM.into(),
            node: n,
        });
    }

    // The runtime checks (`tf.debugging`), one scalar each (a replica's
    // `replica_grad` returns them instead).
    for (i, a) in model.assertions.iter().enumerate().filter(|_| !replicated) {
        step.outputs.push(Output {
            name: assertion_output(i),
            node: a.node,
        });
    }
    let mut new_params: Vec<(u32, NodeId)> = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        let opt = &groups[group_of[k]];
        g.current_span = Some(opt.span);
        let slots: Vec<NodeId> = slot_vars[k].iter().map(|&v| g.var(v)).collect();
        let param = g.var(p);
        let inputs = table::UpdateInputs {
            param,
            grad: grads[k],
            slots: &slots,
            globals: &globals[group_of[k]],
            lr: opt.learning_rate(g),
            step: step_node,
        };
        let out = match sparse_ids[k] {
            None => (opt.def.dense)(g, opt, &inputs),
            Some(ids) => sparse::update(g, opt, &inputs, ids),
        };
        assert_eq!(
            out.slots.len(),
            slots.len(),
            "optimizer table: `{}` updates {} of its {} slots",
            opt.name(),
            out.slots.len(),
            slots.len()
        );
        step.updates.push((p, out.param));
        new_params.push((p, out.param));
        for (&sv, &new) in slot_vars[k].iter().zip(&out.slots) {
            step.updates.push((sv, new));
        }
    }
    for (gi, opt) in groups.iter().enumerate() {
        g.current_span = Some(opt.span);
        let finished = (opt.def.finish)(g, opt, &globals[gi]);
        assert_eq!(
            finished.len(),
            globals[gi].len(),
            "optimizer table: `{}` finishes {} of its {} globals",
            opt.name(),
            finished.len(),
            globals[gi].len()
        );
        for (&gv, new) in global_vars[gi].iter().zip(finished) {
            step.updates.push((gv, new));
        }
    }
    step.increments_global_step = true;
    // The layers' own updates (batch_norm's moving statistics).
    for &(var, value) in &state_updates {
        step.updates.push((var, value));
    }
    g.current_span = None;

    // Moving averages of the new parameter values (TF's ExponentialMovingAverage.apply
    // after the training op): shadow -= (shadow - var) * (1 - decay), for
    // the parameters of the `ema` item's var_list (TF's `apply(var_list)`).
    if let Some(ema) = model.ema.clone() {
        let averaged = model.averaged_params();
        new_params.retain(|(p, _)| averaged.contains(p));
        let mut shadows = Vec::new();
        for &(p, _) in &new_params {
            let name = crate::model::average_name(model.var_name(p));
            let shape = model.graph.vars[p as usize].shape.clone();
            let init = model.vars[p as usize].init.clone();
            shadows.push(model.add_var(&name, shape, VarKind::Average { param: p }, init));
        }
        let g = &mut model.graph;
        g.current_span = Some(ema.span);
        let mut decay = g.scalar(ema.decay);
        if ema.num_updates {
            // decay = min(decay, (1 + n) / (10 + n)), n = the incremented global step
            let one = g.scalar(1.0);
            let n = g.global_step();
            let n = g.add(n, one);
            let a = g.add(one, n);
            let ten = g.scalar(10.0);
            let b = g.add(ten, n);
            let r = g.div(a, b);
            decay = g.binary(crate::ir::BinaryOp::Min, decay, r);
        }
        let one = g.scalar(1.0);
        let omd = g.sub(one, decay);
        for (&(_, new), &sv) in new_params.iter().zip(&shadows) {
            let s = g.var(sv);
            let d = g.sub(s, new);
            let delta = g.mul(d, omd);
            let shadow = g.sub(s, delta);
            step.updates.push((sv, shadow));
        }
        g.current_span = None;
    }

    // The summary step: the same step, also returning what the run's hooks
    // read; the plain step stays as it was.
    // With `gradient_histograms`, each parameter's gradient of the loss
    // (dense, before clipping) as `histogram/gradients/<name>`.
    let mut extra = model.step_outputs.clone();
    if model.summaries.gradient_histograms {
        for (&p, o) in params.iter().zip(grad_fn.outputs.iter().skip(1)) {
            extra.push(Output {
                name: format!(
                    "{}gradients/{}",
                    specc_runtime::abi::HISTOGRAM_OUTPUT_PREFIX,
                    model.var_name(p)
                ),
                node: o.node,
            });
        }
    }
    if !extra.is_empty() {
        let mut summary = step.clone();
        summary.name = SUMMARY_STEP.into();
        for o in &extra {
            if !summary.outputs.iter().any(|e| e.name == o.name) {
                summary.outputs.push(o.clone());
            }
        }
        model.functions.summary_step = Some(summary);
    }
    model.functions.grad = Some(grad_fn);
    model.functions.step = Some(step);
    Ok(())
}

fn op_words(model: &Model, node: NodeId) -> String {
    match model.graph.op(node) {
        Op::ArgMax { .. } => "`argmax`".into(),
        Op::Cast(_) => "`cast` from int32".into(),
        Op::Binary(b) => {
            let sym = match b {
                BinaryOp::Gt => ">",
                BinaryOp::Ge => ">=",
                BinaryOp::Lt => "<",
                BinaryOp::Le => "<=",
                BinaryOp::Eq => "==",
                BinaryOp::Ne => "!=",
                _ => "?",
            };
            format!("the comparison `{sym}`")
        }
        other => format!("`{}`", crate::ir::print::op_text(&model.graph, other)),
    }
}

fn not_differentiable(model: &Model, e: autodiff::NoGradient) -> Diagnostic {
    let what = op_words(model, e.node);
    let var = model.var_name(e.var).to_string();
    let span = model.graph.span(e.node).unwrap_or(model.loss_span);
    Diagnostic::new(
        Code::NotDifferentiable,
        span,
        format!("{what} has no gradient, but the loss depends on `{var}` through it"),
    )
    .with_label("no gradient rule for this op")
    .with_help("wrap it in stop_gradient(...) if no gradient should flow through it")
}

/// The initializer of a slot or non-slot variable holding `v`.
fn constant_init(v: f32) -> Initializer {
    if v == 0.0 {
        Initializer::Zeros
    } else {
        Initializer::Constant(vec![v])
    }
}

/// `(ids, values)` when a gradient is the dense value of an `IndexedSlices`:
/// a scatter-add of rows into zeros (the gradient of one `embedding_lookup`).
fn indexed_slices(g: &crate::ir::Graph, grad: NodeId) -> Option<(NodeId, NodeId)> {
    if g.op(grad) != &Op::ScatterAdd {
        return None;
    }
    let inputs = g.inputs_of(grad);
    let base = inputs[0];
    let zero = match g.op(base) {
        Op::BroadcastTo(_) => g.op(g.inputs_of(base)[0]).scalar_value(),
        op => op.scalar_value(),
    };
    (zero == Some(0.0)).then(|| (inputs[1], inputs[2]))
}
