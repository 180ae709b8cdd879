//! The `optimizer` items: binding a call like `adam(learning_rate = 0.001)`
//! against its entry in the optimizer table ([`crate::optim::table`]), and
//! the `var_list` of each (TF's `minimize(var_list = ...)`: one optimizer
//! per part of the model, `check_groups` making sure they divide the
//! trainable variables, and that every pattern of an optimizer's, a clip's
//! or `ema`'s `var_list` matches one).
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

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::NodeId;
use crate::model::{Constant, Hypers, OptimizerGroup, OptimizerSpec, VarList};
use crate::optim::table::{self, ArgKind, OPTIMIZERS};

/// An `optimizer` item: the optimizer and its `var_list`.
pub(crate) fn optimizer_item(st: &mut State, call: &Call) -> R<OptimizerGroup> {
    let (call, var_list) = split_var_list(call)?;
    let spec = optimizer(st, &call)?;
    Ok(OptimizerGroup { spec, var_list })
}

/// `call` without its `var_list = ...` argument, and that argument (TF's
/// `minimize(var_list = ...)`): a pattern or a list of patterns over TF
/// names, `*` matching any text.
pub(crate) fn split_var_list(call: &Call) -> R<(Call, Option<VarList>)> {
    let mut rest = call.clone();
    let Some(i) = call
        .args
        .iter()
        .position(|a| a.name.as_ref().is_some_and(|n| n.name == "var_list"))
    else {
        return Ok((rest, None));
    };
    let arg = rest.args.remove(i);
    Ok((rest, Some(var_list(&arg)?)))
}

/// A `var_list = ...` argument (of an optimizer, a clip or `ema`): a
/// pattern or a non-empty list of patterns over TF names.
pub(crate) fn var_list(arg: &specc_grammar::ast::Arg) -> R<VarList> {
    let e = &arg.value;
    let items: Vec<&Expr> = match &e.kind {
        ExprKind::List(items) => items.iter().collect(),
        _ => vec![e],
    };
    let mut patterns = Vec::new();
    for item in items {
        let ExprKind::Str(p) = &item.kind else {
            return Err(Diagnostic::new(
                Code::ArgumentType,
                item.span,
                format!(
                    "a var_list is a name pattern or a list of them, found {}",
                    args::describe(item)
                ),
            )
            .with_label("not a string")
            .with_help("e.g. var_list = \"dnn/*\" or var_list = [\"linear_model/*\", \"bias\"]"));
        };
        if p.is_empty() {
            return Err(
                Diagnostic::new(Code::EmptyArgument, item.span, "an empty pattern")
                    .with_label("matches nothing"),
            );
        }
        patterns.push((p.clone(), item.span));
    }
    if patterns.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, e.span, "an empty var_list")
                .with_label("no variables"),
        );
    }
    Ok(VarList {
        patterns,
        span: arg.span,
    })
}

pub(crate) fn optimizer(st: &mut State, call: &Call) -> R<OptimizerSpec> {
    let name = call.func.name.as_str();
    if st.failed_optimizer_defs.iter().any(|n| n == name) {
        return Err(Diagnostic::new(Code::Poisoned, call.func.span, ""));
    }
    if let Some(defined) = super::optimizer_def::lookup(st, name) {
        return super::optimizer_def::bind(st, call, defined);
    }
    let Some(def) = table::by_name(name) else {
        let mut d = Diagnostic::new(
            Code::UnknownOptimizer,
            call.func.span,
            format!("unknown optimizer `{name}`"),
        )
        .with_label("not an optimizer");
        let defined = super::optimizer_def::names(st);
        let names = || {
            OPTIMIZERS
                .iter()
                .map(|d| d.name)
                .chain(defined.iter().map(String::as_str))
        };
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
                hypers.push((a.name.to_string(), node));
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
        defined: None,
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
pub(crate) fn hyper(st: &mut State, e: &Expr, name: &str, positive: bool) -> R<NodeId> {
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

/// The optimizers', clips' and `ema`'s `var_list`s against the trainable variables:
/// with several optimizers each names its `var_list`; every trainable
/// variable is in exactly one optimizer's; every pattern matches some
/// trainable variable.
pub(crate) fn check_groups(st: &mut State) {
    let trainable: Vec<(String, specc_grammar::ast::Span)> = st
        .vars
        .iter()
        .enumerate()
        .filter(|(_, v)| matches!(v.kind, crate::model::VarKind::Param { trainable: true }))
        .map(|(i, v)| {
            let span = v.span.unwrap_or_default();
            (st.graph.vars[i].name.clone(), span)
        })
        .collect();
    let several = st.optimizers.len() > 1;
    let mut errors = Vec::new();
    for g in &st.optimizers {
        if several && g.var_list.is_none() {
            errors.push(
                Diagnostic::new(
                    Code::VarList,
                    g.spec.span,
                    "with several optimizers, each names the variables it trains",
                )
                .with_label("no var_list")
                .with_help("add var_list = \"SCOPE/*\" (TF's minimize(var_list = ...)); each trainable variable must be in exactly one"),
            );
        }
    }
    let lists = st
        .optimizers
        .iter()
        .filter_map(|g| g.var_list.as_ref())
        .chain(st.clips.iter().filter_map(|c| c.var_list.as_ref()))
        .chain(st.ema.iter().filter_map(|e| e.var_list.as_ref()));
    for list in lists {
        for (p, span) in &list.patterns {
            if !trainable.iter().any(|(n, _)| crate::model::glob(p, n)) {
                let mut d = Diagnostic::new(
                    Code::VarList,
                    *span,
                    format!("`{p}` matches no trainable variable"),
                )
                .with_label("matches nothing");
                if let Some(s) = args::suggest(p, trainable.iter().map(|(n, _)| n.as_str())) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                errors.push(d);
            }
        }
    }
    if errors.is_empty() && st.optimizers.iter().any(|g| g.var_list.is_some()) {
        for (name, span) in &trainable {
            let holders: Vec<&VarList> = st
                .optimizers
                .iter()
                .filter_map(|g| g.var_list.as_ref())
                .filter(|l| l.contains(name))
                .collect();
            let at = if *span == specc_grammar::ast::Span::default() {
                st.optimizers[0].spec.span
            } else {
                *span
            };
            let d = match holders.as_slice() {
                [_] => continue,
                [] => Diagnostic::new(
                    Code::VarList,
                    at,
                    format!("`{name}` is in no optimizer's var_list"),
                )
                .with_label("trained by no optimizer")
                .with_help("add a pattern that matches it to one optimizer's var_list, or declare it with `trainable = false`"),
                [first, second, ..] => Diagnostic::new(
                    Code::VarList,
                    at,
                    format!("`{name}` is in two optimizers' var_lists"),
                )
                .with_label("trained twice")
                .with_secondary(first.span, "one var_list")
                .with_secondary(second.span, "another var_list"),
            };
            errors.push(match st.blocks.made_by(name) {
                Some(call) => d.with_secondary(call, format!("`{name}` made by this call")),
                None => d,
            });
        }
    }
    st.errors.extend(errors);
}
