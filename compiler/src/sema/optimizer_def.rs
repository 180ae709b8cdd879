//! `optimizer_def` items: checking an optimizer written in the spec into a
//! [`Defined`] rule, and binding an `optimizer NAME(...)` item against one
//! (the spec's own definitions, then specc's optimizer library,
//! `<specc>/optimizers.spec`: `adamw`, `lamb`).
//!
//! Owns the checks of a definition, each a caret error: names (a
//! hyperparameter, slot, global or local defined twice, or shadowing `var`,
//! `grad` or `step`: `duplicate-name`; an unknown name: `unknown-name`; an
//! unknown function: `unknown-function`), what each section may assign
//! (`update` and `sparse` rules: `var`, slots, locals; `finish`: globals,
//! locals), that `update` exists and assigns `var` (`optimizer-def`), and
//! shapes: `var` and slots take values shaped as the variable, globals take
//! scalars (`shape-mismatch`). A reduction over the whole variable (`norm`,
//! `sum`) is refused in a rule that runs on touched rows (`sparse rows`).
//! Invariant: a [`Defined`] that this module returns lowers without error
//! (`optim::defined`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use specc_grammar::ast::{self, BinOp, Expr, ExprKind, OptEntry, OptSection, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::{BinaryOp, UnaryOp};
use crate::model::{Hypers, OptimizerSpec};
use crate::optim::defined::{
    Assign, Bound, Declared, Defined, Ex, Init, Reduction, SparseMode, Target,
};

/// Names every rule sees, which a definition may not take.
const RESERVED: &[&str] = &["var", "grad", "step"];

/// Checks an `optimizer_def` and records it for the `optimizer` items.
pub(crate) fn define(st: &mut State, d: &ast::OptimizerDef) -> R<()> {
    let name = d.name.name.as_str();
    let taken = if crate::optim::table::by_name(name).is_some() {
        Some("a built-in optimizer")
    } else if library().iter().any(|l| l.name == name) {
        Some("an optimizer of specc's library (`specc library optimizers`)")
    } else {
        None
    };
    if let Some(what) = taken {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            d.name.span,
            format!("`{name}` is {what}"),
        )
        .with_label("name taken")
        .with_help("give your optimizer another name"));
    }
    if let Some((_, prev)) = st.optimizer_defs.iter().find(|(o, _)| o.name == name) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            d.name.span,
            format!("optimizer `{name}` is defined twice"),
        )
        .with_label("second definition")
        .with_secondary(*prev, "first one here"));
    }
    let def = check(d)?;
    st.optimizer_defs.push((Arc::new(def), d.name.span));
    Ok(())
}

/// The definition an `optimizer` item names: the spec's, else the library's.
pub(crate) fn lookup(st: &State, name: &str) -> Option<Arc<Defined>> {
    st.optimizer_defs
        .iter()
        .map(|(d, _)| d)
        .chain(library())
        .find(|d| d.name == name)
        .cloned()
}

/// The names `unknown-optimizer` suggests besides the built-ins.
pub(crate) fn names(st: &State) -> Vec<String> {
    st.optimizer_defs
        .iter()
        .map(|(d, _)| d)
        .chain(library())
        .map(|d| d.name.clone())
        .collect()
}

/// specc's optimizer library, checked once. It parses and checks (a test
/// does both), so an error here is a bug in specc, reported as none found.
pub fn library() -> &'static [Arc<Defined>] {
    static LIB: OnceLock<Vec<Arc<Defined>>> = OnceLock::new();
    LIB.get_or_init(|| {
        let Some(file) = specc_grammar::library::file("optimizers") else {
            return vec![];
        };
        let Ok(spec) = file.parse() else {
            return vec![];
        };
        spec.items
            .iter()
            .filter_map(|i| match i {
                ast::Item::OptimizerDef(d) => check(d).ok().map(Arc::new),
                _ => None,
            })
            .collect()
    })
}

/// `optimizer NAME(ARGS)` for a defined optimizer: every hyperparameter a
/// float32 scalar expression (a schedule, as the built-ins' schedulable
/// arguments), and the constant values of those that initialize slots or
/// globals.
pub(crate) fn bind(st: &mut State, call: &ast::Call, def: Arc<Defined>) -> R<OptimizerSpec> {
    let params: Vec<args::Param> = def
        .hypers
        .iter()
        .map(|(n, d)| if d.is_none() { req(n) } else { opt(n) })
        .collect();
    let bound = args::bind(&def.name, call, &params)?;
    let mut hypers = Vec::new();
    for (i, (name, default)) in def.hypers.iter().enumerate() {
        let node = match (default, bound.get(i)) {
            (_, Some(e)) => super::optimizer::hyper(st, e, name, false)?,
            (Some(v), None) => st.graph.scalar(*v),
            (None, None) => super::optimizer::hyper(st, bound.req(i), name, false)?,
        };
        hypers.push((name.clone(), node));
    }
    let init = |d: &Declared| -> R<f32> {
        match d.init {
            Init::Value(v) => Ok(v),
            Init::Hyper(i) => match (bound.get(i), def.hypers[i].1) {
                (Some(e), _) => match args::eval_number(e) {
                    Ok(v) if v.is_finite() => Ok(v as f32),
                    _ => Err(Diagnostic::new(
                        Code::ArgumentType,
                        e.span,
                        format!(
                            "`{}` is the initial value of `{}`, so it must be a number",
                            def.hypers[i].0, d.name
                        ),
                    )
                    .with_label("not a constant number")),
                },
                (None, Some(v)) => Ok(v),
                (None, None) => Ok(0.0),
            },
        }
    };
    let slot_inits = def.slots.iter().map(init).collect::<R<Vec<_>>>()?;
    let global_inits = def.globals.iter().map(init).collect::<R<Vec<_>>>()?;
    Ok(OptimizerSpec {
        def: &crate::optim::defined::ENTRY,
        hypers: Hypers(hypers),
        constants: vec![],
        defined: Some(Bound {
            def,
            slot_inits,
            global_inits,
        }),
        span: call.span,
    })
}

fn err(code: Code, span: Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::new(code, span, msg).with_label(label.to_string())
}

fn def_err(span: Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    err(Code::OptimizerDef, span, msg, label)
}

/// What a name of a definition is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sym {
    Hyper(usize),
    Slot(usize),
    Global(usize),
}

/// A value's shape class: one number, or shaped as the variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Scalar,
    Tensor,
}

/// The section being checked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Section {
    /// A per-variable rule (`update`, or a `sparse` one); `rows`: it also
    /// runs on touched rows only.
    Rule {
        rows: bool,
    },
    Finish,
}

/// Checks a whole definition.
pub(crate) fn check(d: &ast::OptimizerDef) -> R<Defined> {
    let mut syms: HashMap<String, (Sym, Span)> = HashMap::new();
    let mut claim = |name: &ast::Ident, sym: Sym| -> R<()> {
        if RESERVED.contains(&name.name.as_str()) {
            return Err(err(
                Code::DuplicateName,
                name.span,
                format!("`{}` is a name every rule sees", name.name),
                "reserved in an optimizer_def",
            )
            .with_help("`var` is the variable, `grad` its gradient, `step` the global step"));
        }
        if let Some((_, prev)) = syms.get(&name.name) {
            return Err(err(
                Code::DuplicateName,
                name.span,
                format!("`{}` is defined twice", name.name),
                "second definition",
            )
            .with_secondary(*prev, "first one here"));
        }
        syms.insert(name.name.clone(), (sym, name.span));
        Ok(())
    };
    let mut hypers = Vec::new();
    for (i, p) in d.params.iter().enumerate() {
        if p.name.name == "var_list" {
            return Err(err(
                Code::DuplicateName,
                p.name.span,
                "`var_list` is an argument of every `optimizer` item",
                "not a hyperparameter name",
            )
            .with_help(
                "`optimizer NAME(..., var_list = \"dnn/*\")` chooses the variables it trains",
            ));
        }
        claim(&p.name, Sym::Hyper(i))?;
        let default = match &p.default {
            None => None,
            Some(e) => match args::eval_number(e) {
                Ok(v) if v.is_finite() => Some(v as f32),
                _ => {
                    return Err(err(
                        Code::ArgumentType,
                        e.span,
                        format!("the default of `{}` must be a number", p.name.name),
                        "not a constant number",
                    ))
                }
            },
        };
        hypers.push((p.name.name.clone(), default));
    }
    let hyper_index = |name: &str| hypers.iter().position(|(n, _)| n == name);
    let mut slots = Vec::new();
    let mut globals = Vec::new();
    let (mut update, mut finish, mut sparse) = (None, None, None);
    let once = |seen: Option<Span>, what: &str, span: Span| -> R<()> {
        match seen {
            Some(prev) => Err(def_err(
                span,
                format!("an optimizer_def has one `{what}`"),
                &format!("second `{what}`"),
            )
            .with_secondary(prev, "first one here")),
            None => Ok(()),
        }
    };
    for e in &d.entries {
        match e {
            OptEntry::Slot(b) | OptEntry::Global(b) => {
                let is_slot = matches!(e, OptEntry::Slot(_));
                let init = initial_value(&b.value, &hyper_index)?;
                let declared = Declared {
                    name: b.name.name.clone(),
                    init,
                    span: b.span,
                };
                if is_slot {
                    claim(&b.name, Sym::Slot(slots.len()))?;
                    slots.push(declared);
                } else {
                    claim(&b.name, Sym::Global(globals.len()))?;
                    globals.push(declared);
                }
            }
            OptEntry::Update(s) => {
                once(
                    update.as_ref().map(|s: &&OptSection| s.keyword),
                    "update",
                    s.keyword,
                )?;
                update = Some(s);
            }
            OptEntry::Finish(s) => {
                once(
                    finish.as_ref().map(|s: &&OptSection| s.keyword),
                    "finish",
                    s.keyword,
                )?;
                finish = Some(s);
            }
            OptEntry::Sparse { mode, rule, span } => {
                once(
                    sparse.map(|(_, _, s): (SparseMode, _, Span)| s),
                    "sparse",
                    *span,
                )?;
                let m = match mode.name.as_str() {
                    "rows" => SparseMode::Rows,
                    "densify" => SparseMode::Densify,
                    other => {
                        return Err(err(
                            Code::UnknownChoice,
                            mode.span,
                            format!("unknown sparse mode `{other}`"),
                            "not `rows` or `densify`",
                        )
                        .with_help("`sparse rows`: the rule on the touched rows (TF's _apply_sparse); `sparse densify`: the rule on the dense gradient"));
                    }
                };
                sparse = Some((m, rule.as_ref(), *span));
            }
        }
    }
    let Some(update) = update else {
        return Err(def_err(
            d.name.span,
            format!("optimizer `{}` has no `update`", d.name.name),
            "no dense update",
        )
        .with_help(
            "add `update { var = var - learning_rate * grad }` (the rule of one variable)",
        ));
    };
    let mode = sparse.map_or(SparseMode::Rows, |(m, _, _)| m);
    let mut ck = Checker {
        syms: &syms,
        locals: HashMap::new(),
        count: 0,
        section: Section::Rule {
            rows: mode == SparseMode::Rows && sparse.is_none_or(|(_, r, _)| r.is_none()),
        },
    };
    let update_rule = ck.rule(update)?;
    let mut sparse_rule = None;
    if let Some((m, Some(rule), _)) = sparse {
        ck.locals.clear();
        ck.section = Section::Rule {
            rows: m == SparseMode::Rows,
        };
        sparse_rule = Some(ck.rule(rule)?);
    }
    let mut finish_rule = Vec::new();
    if let Some(f) = finish {
        ck.locals.clear();
        ck.section = Section::Finish;
        finish_rule = ck.section_body(f)?;
    }
    Ok(Defined {
        name: d.name.name.clone(),
        hypers,
        slots,
        globals,
        update: update_rule,
        sparse: mode,
        sparse_rule,
        finish: finish_rule,
        locals: ck.count,
        span: d.span,
    })
}

/// `zeros`, `ones`, a number, or a hyperparameter.
fn initial_value(e: &Expr, hyper: &dyn Fn(&str) -> Option<usize>) -> R<Init> {
    match &e.kind {
        ExprKind::Ident(n) if n == "zeros" => Ok(Init::Value(0.0)),
        ExprKind::Ident(n) if n == "ones" => Ok(Init::Value(1.0)),
        ExprKind::Ident(n) => hyper(n).map(Init::Hyper).ok_or_else(|| {
            err(
                Code::UnknownName,
                e.span,
                format!("`{n}` is not a hyperparameter of this optimizer"),
                "unknown initial value",
            )
            .with_help("an initial value is `zeros`, `ones`, a number or a hyperparameter")
        }),
        _ => match args::eval_number(e) {
            Ok(v) if v.is_finite() => Ok(Init::Value(v as f32)),
            _ => Err(def_err(
                e.span,
                "an initial value is `zeros`, `ones`, a number or a hyperparameter",
                "not an initial value",
            )),
        },
    }
}

struct Checker<'a> {
    syms: &'a HashMap<String, (Sym, Span)>,
    /// The section's locals: index and kind.
    locals: HashMap<String, (usize, Kind)>,
    /// Locals of every section so far.
    count: usize,
    section: Section,
}

impl Checker<'_> {
    /// A per-variable rule, which must assign `var`.
    fn rule(&mut self, s: &OptSection) -> R<Vec<Assign>> {
        let body = self.section_body(s)?;
        if !body.iter().any(|a| a.target == Target::Var) {
            let what = &s.keyword;
            return Err(def_err(
                *what,
                "this rule never assigns `var`",
                "no new value of the variable",
            )
            .with_help(
                "assign the variable's new value, e.g. `var = var - learning_rate * grad`",
            ));
        }
        Ok(body)
    }

    fn section_body(&mut self, s: &OptSection) -> R<Vec<Assign>> {
        let mut out = Vec::new();
        for b in &s.body {
            let (value, kind) = self.expr(&b.value)?;
            let name = b.name.name.as_str();
            let target = self.target(&b.name, kind, b.value.span)?;
            if let Target::Local(i) = target {
                self.locals.insert(name.to_string(), (i, kind));
            }
            out.push(Assign { target, value });
        }
        Ok(out)
    }

    fn target(&mut self, name: &ast::Ident, kind: Kind, value: Span) -> R<Target> {
        let n = name.name.as_str();
        let finish = self.section == Section::Finish;
        let shaped = |what: String| -> R<()> {
            if kind == Kind::Scalar {
                return Err(err(
                    Code::ShapeMismatch,
                    value,
                    format!("{what} is shaped as the variable, but this value is a scalar"),
                    "a scalar",
                )
                .with_help(
                    "use `var`, `grad` or a slot in the value (a scalar broadcasts against them)",
                ));
            }
            Ok(())
        };
        let not_assignable = |what: &str| {
            let may = if finish {
                "`finish` assigns globals and new local names"
            } else {
                "a rule assigns `var`, slots and new local names"
            };
            def_err(
                name.span,
                format!("cannot assign {what}"),
                "not assignable here",
            )
            .with_help(may)
        };
        if n == "var" && !finish {
            shaped("`var`".into())?;
            return Ok(Target::Var);
        }
        if RESERVED.contains(&n) {
            return Err(not_assignable(&format!("`{n}`")));
        }
        match self.syms.get(n).map(|s| s.0) {
            Some(Sym::Slot(i)) if !finish => {
                shaped(format!("slot `{n}`"))?;
                Ok(Target::Slot(i))
            }
            Some(Sym::Global(i)) if finish => {
                if kind == Kind::Tensor {
                    return Err(err(
                        Code::ShapeMismatch,
                        value,
                        format!("global `{n}` is a scalar, but this value is shaped as the variable"),
                        "shaped as the variable",
                    )
                    .with_help("`finish` runs once per step: use scalars (hyperparameters, globals, `step`)"));
                }
                Ok(Target::Global(i))
            }
            Some(Sym::Global(_)) => Err(not_assignable(&format!("global `{n}` in a rule"))
                .with_help("a global is updated once per step, in `finish { ... }`")),
            Some(Sym::Slot(_)) => Err(not_assignable(&format!("slot `{n}` in `finish`"))),
            Some(Sym::Hyper(_)) => Err(not_assignable(&format!("hyperparameter `{n}`"))),
            None => match self.locals.get(n) {
                Some(&(i, _)) => Ok(Target::Local(i)),
                None => {
                    let i = self.count;
                    self.count += 1;
                    Ok(Target::Local(i))
                }
            },
        }
    }

    fn name(&self, n: &str, span: Span) -> R<(Ex, Kind)> {
        let finish = self.section == Section::Finish;
        if let Some(&(i, k)) = self.locals.get(n) {
            return Ok((Ex::Local(i), k));
        }
        let per_variable = |what: String| {
            def_err(
                span,
                format!("{what} is not known in `finish`, which runs once per step"),
                "per-variable",
            )
        };
        Ok(match n {
            "step" => (Ex::Step, Kind::Scalar),
            "var" | "grad" if finish => return Err(per_variable(format!("`{n}`"))),
            "var" => (Ex::Var, Kind::Tensor),
            "grad" => (Ex::Grad, Kind::Tensor),
            _ => match self.syms.get(n).map(|s| s.0) {
                Some(Sym::Hyper(i)) => (Ex::Hyper(i), Kind::Scalar),
                Some(Sym::Global(i)) => (Ex::Global(i), Kind::Scalar),
                Some(Sym::Slot(_)) if finish => return Err(per_variable(format!("slot `{n}`"))),
                Some(Sym::Slot(i)) => (Ex::Slot(i), Kind::Tensor),
                None => {
                    let mut names: Vec<&str> = self.syms.keys().map(String::as_str).collect();
                    names.extend(self.locals.keys().map(String::as_str));
                    names.extend(RESERVED);
                    let mut d = err(
                        Code::UnknownName,
                        span,
                        format!("unknown name `{n}`"),
                        "not defined in this optimizer",
                    );
                    if let Some(s) = args::suggest(n, names) {
                        d = d.with_help(format!("did you mean `{s}`?"));
                    }
                    return Err(d.with_help("a rule sees the hyperparameters, `var`, `grad`, the slots, the globals, `step` and the names it assigned before"));
                }
            },
        })
    }

    fn expr(&self, e: &Expr) -> R<(Ex, Kind)> {
        match &e.kind {
            ExprKind::Number { value, .. } => Ok((Ex::Const(*value as f32), Kind::Scalar)),
            ExprKind::Ident(n) => self.name(n, e.span),
            ExprKind::Unary(x) => {
                let (x, k) = self.expr(x)?;
                Ok((Ex::Unary(UnaryOp::Neg, Box::new(x)), k))
            }
            ExprKind::Binary(first, rest) => {
                let (mut acc, mut kind) = self.expr(first)?;
                for o in rest {
                    let op = match o.op {
                        BinOp::Add => BinaryOp::Add,
                        BinOp::Sub => BinaryOp::Sub,
                        BinOp::Mul => BinaryOp::Mul,
                        BinOp::Div => BinaryOp::Div,
                        BinOp::Eq => BinaryOp::Eq,
                        BinOp::Ne => BinaryOp::Ne,
                        BinOp::Lt => BinaryOp::Lt,
                        BinOp::Le => BinaryOp::Le,
                        BinOp::Gt => BinaryOp::Gt,
                        BinOp::Ge => BinaryOp::Ge,
                        other => {
                            return Err(def_err(
                                o.op_span,
                                format!("`{}` is not an operation of an optimizer rule", other.symbol()),
                                "not elementwise arithmetic",
                            )
                            .with_help("a rule has `+ - * /`, comparisons (1 or 0) and elementwise functions; combine conditions with `where`"))
                        }
                    };
                    let (rhs, k) = self.expr(&o.rhs)?;
                    acc = Ex::Binary(op, Box::new(acc), Box::new(rhs));
                    kind = kind.max(k);
                }
                Ok((acc, kind))
            }
            ExprKind::Call(c) => self.call(c),
            _ => Err(def_err(
                e.span,
                format!("{} is not a value of an optimizer rule", args::describe(e)),
                "not a number or a tensor",
            )),
        }
    }

    fn call(&self, c: &ast::Call) -> R<(Ex, Kind)> {
        let name = c.func.name.as_str();
        let arity = FUNCTIONS.iter().find(|f| f.0 == name).map(|f| f.1);
        let Some(arity) = arity else {
            let mut d = err(
                Code::UnknownFunction,
                c.func.span,
                format!("`{name}` is not a function of an optimizer rule"),
                "unknown function",
            );
            if let Some(s) = args::suggest(name, FUNCTIONS.iter().map(|f| f.0)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            let all: Vec<&str> = FUNCTIONS.iter().map(|f| f.0).collect();
            return Err(d.with_help(format!("functions: {}", all.join(", "))));
        };
        if c.args.len() != arity || c.args.iter().any(|a| a.name.is_some()) {
            return Err(err(
                Code::WrongArity,
                c.span,
                format!(
                    "`{name}` takes {arity} positional argument{}",
                    if arity == 1 { "" } else { "s" }
                ),
                &format!("{} given", c.args.len()),
            ));
        }
        let mut xs = Vec::new();
        let mut kind = Kind::Scalar;
        for a in &c.args {
            let (x, k) = self.expr(&a.value)?;
            kind = kind.max(k);
            xs.push(Box::new(x));
        }
        let mut xs = xs.into_iter();
        let mut next = || xs.next().expect("arity checked");
        let unary = [
            ("sqrt", UnaryOp::Sqrt),
            ("square", UnaryOp::Square),
            ("abs", UnaryOp::Abs),
            ("sign", UnaryOp::Sign),
            ("exp", UnaryOp::Exp),
            ("log", UnaryOp::Log),
        ];
        let ex = match name {
            _ if unary.iter().any(|u| u.0 == name) => {
                let op = unary.iter().find(|u| u.0 == name).map(|u| u.1);
                Ex::Unary(op.expect("found"), next())
            }
            "rsqrt" => Ex::Rsqrt(next()),
            "maximum" | "minimum" | "pow" => {
                let op = match name {
                    "maximum" => BinaryOp::Max,
                    "minimum" => BinaryOp::Min,
                    _ => BinaryOp::Pow,
                };
                Ex::Binary(op, next(), next())
            }
            "where" => Ex::Where(next(), next(), next()),
            _ => {
                if let Section::Rule { rows: true } = self.section {
                    return Err(def_err(
                        c.span,
                        format!("`{name}` reduces over the whole variable, but this rule also runs on the touched rows of a sparse gradient"),
                        "a reduction under `sparse rows`",
                    )
                    .with_help("add `sparse densify` (the rule on the dense gradient), or a `sparse rows { ... }` rule without reductions"));
                }
                let r = if name == "norm" {
                    Reduction::Norm
                } else {
                    Reduction::Sum
                };
                return Ok((Ex::Reduce(r, next()), Kind::Scalar));
            }
        };
        Ok((ex, kind))
    }
}

/// The functions of a rule and their arities.
const FUNCTIONS: &[(&str, usize)] = &[
    ("sqrt", 1),
    ("rsqrt", 1),
    ("square", 1),
    ("abs", 1),
    ("sign", 1),
    ("exp", 1),
    ("log", 1),
    ("maximum", 2),
    ("minimum", 2),
    ("pow", 2),
    ("where", 3),
    ("norm", 1),
    ("sum", 1),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_of_the_library_checks() {
        let file = specc_grammar::library::file("optimizers").expect("the optimizer library");
        let spec = file.parse().unwrap_or_else(|d| panic!("{}", d.message));
        let mut names = Vec::new();
        for item in &spec.items {
            let ast::Item::OptimizerDef(d) = item else {
                panic!("not an optimizer_def")
            };
            let def = check(d).unwrap_or_else(|e| panic!("{}: {}", d.name.name, e.message));
            assert!(
                crate::optim::table::by_name(&def.name).is_none(),
                "{}",
                def.name
            );
            names.push(def.name);
        }
        assert_eq!(names, ["adamw", "lamb"]);
        let lib: Vec<&str> = library().iter().map(|d| d.name.as_str()).collect();
        assert_eq!(lib, names);
    }
}
