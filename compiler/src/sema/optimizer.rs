//! The `optimizer` item: binding a call like `adam(learning_rate = 0.001)`
//! against its entry in the optimizer table ([`crate::optim::table`]).
//!
//! Owns: the `unknown-optimizer` diagnostic, and the checks of the entry's
//! arguments: a schedulable argument is lowered as a float32 scalar
//! expression (a constant is checked now: finite, and positive for the
//! learning rate), a number is a finite compile-time constant meeting TF's
//! check, a flag is `true` or `false`.
//! Invariant: the [`OptimizerSpec`] holds a value for every argument of its
//! entry, given or defaulted, evaluated in TF's signature order, so the
//! first error reported is the first in that order (and schedulable
//! arguments get their node ids in that order).

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::NodeId;
use crate::model::{Constant, Hypers, OptimizerSpec};
use crate::optim::table::{self, ArgKind, OPTIMIZERS};

pub(crate) fn optimizer(st: &mut State, call: &Call) -> R<OptimizerSpec> {
    let name = call.func.name.as_str();
    let Some(def) = table::by_name(name) else {
        let mut d = Diagnostic::new(
            Code::UnknownOptimizer,
            call.func.span,
            format!("unknown optimizer `{name}`"),
        )
        .with_label("not an optimizer");
        let names = || OPTIMIZERS.iter().map(|d| d.name);
        if let Some(s) = args::suggest(name, names()) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        let list: Vec<&str> = names().collect();
        return Err(d.with_help(format!("optimizers: {}", list.join(", "))));
    };
    let params: Vec<args::Param> = def
        .args
        .iter()
        .map(|a| {
            if a.required() {
                req(a.name)
            } else {
                opt(a.name)
            }
        })
        .collect();
    let bound = args::bind(name, call, &params)?;
    let mut hypers = Vec::new();
    let mut constants = Vec::new();
    for (i, a) in def.args.iter().enumerate() {
        match a.kind {
            ArgKind::Schedule { default, positive } => {
                let node = match (default, bound.get(i)) {
                    (None, _) => hyper(st, bound.req(i), a.name, positive)?,
                    (Some(_), Some(e)) => hyper(st, e, a.name, positive)?,
                    (Some(v), None) => st.graph.scalar(v),
                };
                hypers.push((a.name, node));
            }
            ArgKind::Number { default, check } => {
                let v = match bound.get(i) {
                    None => default,
                    Some(e) => finite(e, a.name)?,
                };
                if !check.holds(f64::from(v)) {
                    let span = bound.get(i).map_or(call.span, |e| e.span);
                    let what = check.words();
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        span,
                        format!("{} must be {what}, got {v}", a.name),
                    )
                    .with_label(format!("must be {what}")));
                }
                constants.push((a.name, Constant::Number(v)));
            }
            ArgKind::Flag => constants.push((a.name, Constant::Flag(bound.flag(i)?))),
        }
    }
    Ok(OptimizerSpec {
        def,
        hypers: Hypers(hypers),
        constants,
        span: call.span,
    })
}

/// A finite compile-time number, as float32.
fn finite(e: &Expr, name: &str) -> R<f32> {
    let v = args::eval_number(e)?;
    if !v.is_finite() {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{name} must be finite"),
        )
        .with_label("not finite"));
    }
    Ok(v as f32)
}

/// A schedulable argument: any float32 scalar expression (a number, a
/// schedule, an expression of `global_step`). Constants are checked now;
/// a learning rate must be positive.
fn hyper(st: &mut State, e: &Expr, name: &str, positive: bool) -> R<NodeId> {
    let v = st.lowerer().float(e)?;
    if !st.graph.shape(v).is_scalar() {
        return Err(Diagnostic::new(
            Code::BadShape,
            e.span,
            format!("{name} must be a scalar, but this is {}", st.graph.shape(v)),
        )
        .with_label("not a scalar"));
    }
    if let Ok(c) = args::eval_number(e) {
        if !c.is_finite() || (positive && c <= 0.0) {
            return Err(Diagnostic::new(
                Code::ArgumentOutOfRange,
                e.span,
                format!(
                    "{name} must be {}, got {c}",
                    if positive { "positive" } else { "finite" }
                ),
            )
            .with_label(if positive {
                "not a positive number"
            } else {
                "not finite"
            }));
        }
    }
    Ok(v)
}
