//! Binding call arguments to a signature, and evaluating static arguments.
//!
//! Owns: Python-style argument binding (positional then keyword, TF argument
//! names) with the `wrong-arity`, `unknown-argument`, `duplicate-argument`
//! and `missing-argument` diagnostics, and the evaluation of compile-time
//! constants (ints, floats, bools, identifiers, strings, lists) with
//! `argument-type` (the wrong kind of value) and `argument-out-of-range`
//! diagnostics; the `key = true|false` options of
//! declarations; "did you mean" suggestions.
//! Invariant: nothing here touches the graph.

use specc_grammar::ast::{Arg, Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::suggest::closest;

/// A parameter of a builtin: its TF name and whether it must be given.
#[derive(Clone, Copy, Debug)]
pub struct Param<'n> {
    pub name: &'n str,
    pub required: bool,
}

pub const fn req(name: &str) -> Param<'_> {
    Param {
        name,
        required: true,
    }
}

pub const fn opt(name: &str) -> Param<'_> {
    Param {
        name,
        required: false,
    }
}

/// Arguments matched to parameters, in signature order.
pub struct Bound<'a> {
    pub args: Vec<Option<&'a Expr>>,
    pub call_span: Span,
}

impl<'a> Bound<'a> {
    pub fn get(&self, i: usize) -> Option<&'a Expr> {
        self.args.get(i).copied().flatten()
    }
    /// A required argument (binding has already checked it is present).
    pub fn req(&self, i: usize) -> &'a Expr {
        self.get(i).expect("bind() checks required arguments")
    }
    /// A `true`/`false` argument, false when not given.
    pub fn flag(&self, i: usize) -> Result<bool, Diagnostic> {
        self.get(i)
            .map(eval_bool)
            .transpose()
            .map(|v| v.unwrap_or(false))
    }
}

/// The `key = true|false` options of a declaration (`trainable = false`).
pub struct Flags<'a>(Vec<(&'a str, bool)>);

impl Flags<'_> {
    /// The last value given for `key`, else `default`.
    pub fn get(&self, key: &str, default: bool) -> bool {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map_or(default, |f| f.1)
    }
}

/// The options of a declaration; a key outside `known` is an error saying
/// that `owner` ("parameters have") has no such option.
pub fn flag_options<'a>(
    options: &'a [Arg],
    known: &[&str],
    owner: &str,
    help: &str,
) -> Result<Flags<'a>, Diagnostic> {
    let mut out = Vec::new();
    for o in options {
        let Some(n) = &o.name else {
            return Err(
                Diagnostic::new(Code::WrongArity, o.span, "expected `key = value`")
                    .with_label("unnamed option"),
            );
        };
        if !known.contains(&n.name.as_str()) {
            return Err(Diagnostic::new(
                Code::UnknownArgument,
                n.span,
                format!("{owner} no option `{}`", n.name),
            )
            .with_label("unknown option")
            .with_help(help.to_string()));
        }
        out.push((n.name.as_str(), eval_bool(&o.value)?));
    }
    Ok(Flags(out))
}

/// The closest candidate within a small edit distance
/// ([`specc_runtime::suggest::closest`]): at most a third of `name`'s
/// length (1 to 3); ties go to the shorter, then the alphabetically first.
pub fn suggest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    closest(name, candidates)
}

/// Binds `call`'s arguments to `params` (for a function called `what`).
pub fn bind<'a>(what: &str, call: &'a Call, params: &[Param]) -> Result<Bound<'a>, Diagnostic> {
    bind_args(what, &call.args, call.span, params)
}

pub fn bind_args<'a>(
    what: &str,
    args: &'a [Arg],
    call_span: Span,
    params: &[Param],
) -> Result<Bound<'a>, Diagnostic> {
    bind_with(what, args, call_span, params, None).map(|(_, bound)| bound)
}

/// Binds a call that takes any number of positional arguments (the columns
/// of a feature column, `numeric(x0, x1, normalizer = ..)`) and the keyword
/// arguments `params`: returns the positional arguments in order, and the
/// keywords bound as [`bind`] binds them (the same unknown and duplicate
/// argument diagnostics). `variadic` names the positional arguments in the
/// signature help (`COLUMNS`).
pub fn bind_variadic<'a>(
    what: &str,
    call: &'a Call,
    variadic: &str,
    params: &[Param],
) -> Result<(Vec<&'a Expr>, Bound<'a>), Diagnostic> {
    bind_with(what, &call.args, call.span, params, Some(variadic))
}

/// [`bind_args`]; with `variadic`, every positional argument goes to the
/// returned list instead of a parameter.
fn bind_with<'a>(
    what: &str,
    args: &'a [Arg],
    call_span: Span,
    params: &[Param],
    variadic: Option<&str>,
) -> Result<(Vec<&'a Expr>, Bound<'a>), Diagnostic> {
    let help = |params: &[Param]| match variadic {
        Some(name) => signature_help_variadic(what, name, params),
        None => signature_help(what, params),
    };
    let mut rest = Vec::new();
    let mut bound: Vec<Option<&'a Expr>> = vec![None; params.len()];
    let mut spans: Vec<Option<Span>> = vec![None; params.len()];
    let mut seen_keyword = false;
    let mut positional = 0usize;
    for arg in args {
        match &arg.name {
            None if variadic.is_some() => rest.push(&arg.value),
            None => {
                if seen_keyword {
                    return Err(Diagnostic::new(
                        Code::WrongArity,
                        arg.span,
                        "positional argument after a keyword argument",
                    )
                    .with_label("move this before the keyword arguments or name it"));
                }
                if positional >= params.len() {
                    let n = params.len();
                    return Err(Diagnostic::new(
                        Code::WrongArity,
                        arg.span,
                        format!(
                            "`{what}` takes {n} argument{} but more were given",
                            if n == 1 { "" } else { "s" }
                        ),
                    )
                    .with_label("unexpected argument")
                    .with_help(help(params)));
                }
                bound[positional] = Some(&arg.value);
                spans[positional] = Some(arg.span);
                positional += 1;
            }
            Some(name) => {
                seen_keyword = true;
                let Some(i) = params.iter().position(|p| p.name == name.name) else {
                    let mut d = Diagnostic::new(
                        Code::UnknownArgument,
                        name.span,
                        format!("`{what}` has no argument `{}`", name.name),
                    )
                    .with_label("unknown argument");
                    if let Some(s) = suggest(&name.name, params.iter().map(|p| p.name)) {
                        d = d.with_help(format!("did you mean `{s}`?"));
                    }
                    return Err(d.with_help(help(params)));
                };
                if let Some(prev) = spans[i] {
                    return Err(Diagnostic::new(
                        Code::DuplicateArgument,
                        arg.span,
                        format!("argument `{}` given twice", name.name),
                    )
                    .with_label("second value")
                    .with_secondary(prev, "first value"));
                }
                bound[i] = Some(&arg.value);
                spans[i] = Some(arg.span);
            }
        }
    }
    for (i, p) in params.iter().enumerate() {
        if p.required && bound[i].is_none() {
            return Err(Diagnostic::new(
                Code::MissingArgument,
                call_span,
                format!("`{what}` needs the argument `{}`", p.name),
            )
            .with_label(format!("`{}` missing", p.name))
            .with_help(help(params)));
        }
    }
    Ok((
        rest,
        Bound {
            args: bound,
            call_span,
        },
    ))
}

pub fn signature_help(what: &str, params: &[Param]) -> String {
    format!("signature: {what}({})", param_list(params))
}

/// The help of a call with positional arguments `variadic` before `params`.
fn signature_help_variadic(what: &str, variadic: &str, params: &[Param]) -> String {
    if params.is_empty() {
        return format!("signature: {what}({variadic}..)");
    }
    format!("signature: {what}({variadic}.., {})", param_list(params))
}

fn param_list(params: &[Param]) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|p| {
            if p.required {
                p.name.to_string()
            } else {
                format!("{}=..", p.name)
            }
        })
        .collect();
    ps.join(", ")
}

/// A short description of what an expression is, for "expected X, found Y".
pub fn describe(e: &Expr) -> &'static str {
    match &e.kind {
        ExprKind::Number { is_int: true, .. } => "an integer",
        ExprKind::Number { .. } => "a number",
        ExprKind::Str(_) => "a string",
        ExprKind::Bool(_) => "a boolean",
        ExprKind::Ident(_) => "a name",
        ExprKind::Range(..) => "a column range",
        ExprKind::Call(_) => "a function call",
        ExprKind::List(_) => "a list",
        ExprKind::Unary(_) | ExprKind::Binary(..) => "an expression",
        ExprKind::Index(..) => "an indexing expression",
    }
}

fn bad(e: &Expr, expected: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ArgumentType,
        e.span,
        format!("expected {expected}, found {}", describe(e)),
    )
    .with_label(format!("expected {expected}"))
}

/// A compile-time number: literals and `+ - * /` of literals, in float64.
/// `1 / 0` is how a spec writes an infinity here (a constant initializer's
/// value, a clipping bound); each use checks the range it needs (e.g.
/// [`eval_positive`]), while the same text in a model expression is a
/// `non-finite-constant` error (see `expr::Lowerer`).
pub fn eval_number(e: &Expr) -> Result<f64, Diagnostic> {
    match &e.kind {
        ExprKind::Number { value, .. } => Ok(*value),
        ExprKind::Unary(x) => Ok(-eval_number(x)?),
        ExprKind::Binary(first, rest) => {
            use specc_grammar::ast::BinOp::*;
            let mut acc = eval_number(first)?;
            for o in rest {
                let b = eval_number(&o.rhs)?;
                acc = match o.op {
                    Add => acc + b,
                    Sub => acc - b,
                    Mul => acc * b,
                    Div => acc / b,
                    _ => return Err(bad(e, "a number")),
                };
            }
            Ok(acc)
        }
        _ => Err(bad(e, "a number")),
    }
}

/// A compile-time number that must be positive and finite.
pub fn eval_positive(e: &Expr, what: &str) -> Result<f32, Diagnostic> {
    let v = eval_number(e)?;
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be positive, got {v}"),
        )
        .with_label("not positive"));
    }
    Ok(v as f32)
}

/// A compile-time integer.
pub fn eval_int(e: &Expr) -> Result<i64, Diagnostic> {
    match &e.kind {
        ExprKind::Number {
            value,
            is_int: true,
        } => {
            if value.abs() > 9.0e15 {
                Err(
                    Diagnostic::new(Code::ArgumentOutOfRange, e.span, "integer is too large")
                        .with_label("too large"),
                )
            } else {
                Ok(*value as i64)
            }
        }
        ExprKind::Unary(x) => Ok(-eval_int(x)?),
        _ => Err(bad(e, "an integer")),
    }
}

/// A compile-time non-negative integer.
pub fn eval_count(e: &Expr, what: &str) -> Result<u64, Diagnostic> {
    let v = eval_int(e)?;
    if v < 0 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must not be negative, got {v}"),
        )
        .with_label("negative"));
    }
    Ok(v as u64)
}

pub fn eval_bool(e: &Expr) -> Result<bool, Diagnostic> {
    match &e.kind {
        ExprKind::Bool(b) => Ok(*b),
        _ => Err(bad(e, "`true` or `false`")),
    }
}

pub fn eval_ident(e: &Expr) -> Result<&str, Diagnostic> {
    match &e.kind {
        ExprKind::Ident(s) => Ok(s),
        ExprKind::Str(s) => Ok(s),
        _ => Err(bad(e, "a name")),
    }
}

pub fn eval_string(e: &Expr) -> Result<&str, Diagnostic> {
    match &e.kind {
        ExprKind::Str(s) => Ok(s),
        _ => Err(bad(e, "a string")),
    }
}

/// An int or a list of ints (axes).
pub fn eval_int_list(e: &Expr) -> Result<Vec<i64>, Diagnostic> {
    match &e.kind {
        ExprKind::List(items) => items.iter().map(eval_int).collect(),
        _ => Ok(vec![
            eval_int(e).map_err(|_| bad(e, "an integer or a list of integers"))?
        ]),
    }
}

/// Whether the expression is the identifier `None`.
pub fn is_none(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Ident(s) if s == "None")
}
