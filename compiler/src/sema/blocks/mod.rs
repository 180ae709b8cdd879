//! Blocks, loops and tuples: the spec's functions with TF's variable scopes.
//!
//! Owns: `block` definitions, their expansion at each call (arguments bound
//! as tensors or statics, parameters declared under the call's variable
//! scope, the body checked statement by statement, the returned values),
//! `for` loops over static ranges, static `if`, and tuple bindings.
//!
//! A call is expanded where it is written, as Python runs a function that
//! builds a TF graph: its tensor arguments are lowered in the caller, its
//! scope named ([`scope`]), and its body checked in a frame of its own, in
//! which a block sees only its arguments, its parameters, its own bindings
//! and other blocks. Each statement of a body is first specialized for the
//! frame ([`specialize`]).
//!
//! Invariants: a call's variables are named `SCOPE/NAME` with TF's scope
//! names, so they are TF's names for the same layers; a block cannot call
//! itself (directly or not); every diagnostic from inside a body carries a
//! secondary mark at each call it was expanded from; expansion is bounded
//! ([`MAX_STATEMENTS`]); at the top level outside loops nothing is
//! specialized, so specs without blocks check exactly as before.

mod hoist;
pub(crate) mod library;
mod loops;
pub(crate) mod scope;
pub(crate) mod specialize;

use hoist::{hoist_call, not_found};
pub(crate) use hoist::{hoisted, lower, release};
use loops::run_for;

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use specc_grammar::ast::{
    Arg, Binding, BlockDef, Call, Expr, ExprKind, ForLoop, Ident, ParamDecl, Span, Stmt,
    TupleBinding,
};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Param};
use super::expr::{Entry, Env, R};
use super::State;
use crate::ir::NodeId;
use specialize::{Static, Statics};

/// The most statements one spec may expand to (loops times bodies).
pub const MAX_STATEMENTS: usize = 200_000;

/// The arguments every block call takes besides its own (TF's layers'
/// `name` and `reuse`).
const SCOPE_ARGUMENTS: [&str; 2] = ["name", "reuse"];

/// The blocks of a spec and the state of their expansion.
#[derive(Default)]
pub(crate) struct Blocks {
    defs: HashMap<String, Rc<BlockDef>>,
    scopes: scope::Scopes,
    /// The frame being checked.
    frame: Frame,
    /// The calls being expanded, innermost last.
    stack: Vec<(String, Span)>,
    /// Statements expanded so far.
    expanded: usize,
    /// Temporaries made for block calls inside expressions.
    temps: usize,
    /// The call that made each block variable (for `variable-scope` errors).
    made_by: HashMap<String, Span>,
    /// Every call expanded, for `--emit ir`.
    pub expanded_calls: Vec<crate::model::BlockCall>,
}

/// What a body is checked in, besides its names (`State::env`).
#[derive(Clone, Default)]
struct Frame {
    statics: Statics,
    /// The variable scope (`""` at the top level).
    scope: String,
    reuse: bool,
    /// A block's body (it may `return` and declare `params`).
    in_block: bool,
    /// Inside a loop or a block: bindings may be bound again.
    rebinds: bool,
    /// The statics that bindings made (`d = shape(x)[-1]`): bound again
    /// like bindings, unlike arguments and loop variables.
    bound_statics: Vec<String>,
    /// A library block's body: plain names call builtins only.
    in_library: bool,
}

/// How a body ended.
enum Flow {
    Next,
    Return(Vec<NodeId>, Span),
}

impl Blocks {
    /// The variable scope statements are checked in (`""` at the top).
    pub(crate) fn scope(&self) -> &str {
        &self.frame.scope
    }

    /// Opens a scope under `parent`: `name` as given, else `default_name`
    /// made unique (TF's `variable_scope(name, default_name)`); its full name.
    pub(crate) fn open_scope(
        &mut self,
        parent: &str,
        name: Option<&str>,
        default_name: &str,
    ) -> String {
        let local = name.map_or_else(|| self.scopes.unique(parent, default_name), str::to_string);
        let full = scope::join(parent, &local);
        self.scopes.open(&full);
        full
    }

    /// Whether `name` calls a block here (a name of the frame shadows it).
    fn calls(&self, name: &str, env: &Env) -> bool {
        self.def(name).is_some()
            && !env.entries.contains_key(name)
            && !self.frame.statics.contains_key(name)
    }

    /// The block `name` calls: the spec's, or (a qualified name such as
    /// `layers.dense`) the library's.
    fn def(&self, name: &str) -> Option<Rc<BlockDef>> {
        if name.contains('.') {
            return library::block(name);
        }
        if self.frame.in_library {
            return None;
        }
        self.defs.get(name).cloned()
    }

    /// The call that made block variable `name` (its outermost call's
    /// innermost block), if a block made it.
    pub fn made_by(&self, name: &str) -> Option<Span> {
        self.made_by.get(name).copied()
    }

    /// Whether statements are specialized (in a block or a loop).
    fn specializing(&self) -> bool {
        self.frame.in_block || self.frame.rebinds
    }
}

/// `block NAME(...) { ... }`: a definition, checked when it is called.
pub(crate) fn define(st: &mut State, d: &BlockDef) -> R<()> {
    let name = &d.name;
    if super::functions::is_builtin(&name.name) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            name.span,
            format!("`{}` is a builtin function", name.name),
        )
        .with_label("a builtin's name")
        .with_help("name the block otherwise"));
    }
    if let Some(prev) = st.blocks.defs.get(&name.name) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            name.span,
            format!("block `{}` is defined twice", name.name),
        )
        .with_label("second definition")
        .with_secondary(prev.name.span, "first defined here"));
    }
    for (i, p) in d.params.iter().enumerate() {
        if SCOPE_ARGUMENTS.contains(&p.name.name.as_str()) {
            return Err(Diagnostic::new(
                Code::DuplicateName,
                p.name.span,
                format!("`{}` is an argument of every block call", p.name.name),
            )
            .with_label("reserved")
            .with_help("`name` chooses a call's variable scope and `reuse` shares its variables"));
        }
        if let Some(prev) = d.params[..i].iter().find(|q| q.name.name == p.name.name) {
            return Err(Diagnostic::new(
                Code::DuplicateName,
                p.name.span,
                format!("`{}` is a parameter twice", p.name.name),
            )
            .with_label("second one")
            .with_secondary(prev.name.span, "first one"));
        }
        if p.default.is_none() {
            if let Some(prev) = d.params[..i].iter().find(|q| q.default.is_some()) {
                return Err(Diagnostic::new(
                    Code::WrongArity,
                    p.span,
                    "a parameter without a default after one with a default",
                )
                .with_label("needs a default")
                .with_secondary(prev.span, "has a default"));
            }
        }
    }
    if let Some(s) = &d.scope {
        scope_name(&Expr::new(ExprKind::Str(s.value.clone()), s.span))?;
    }
    st.blocks.defs.insert(name.name.clone(), Rc::new(d.clone()));
    Ok(())
}

/// A binding: `name = value`, where the value may call blocks. In a
/// block, a number known at compile time (`d = shape(x)[-1] // heads`), or
/// a list of them, is bound as a static, so sizes can be computed in steps.
pub(crate) fn let_binding(st: &mut State, b: &Binding) -> R<()> {
    if st.blocks.frame.in_block {
        let s = match specialized(st, &b.value) {
            Ok(s) => s,
            Err(d) => {
                st.env.poison(&b.name.name, b.name.span, "binding");
                return Err(d);
            }
        };
        // A number, or a list of them (`k = normalize_tuple(kernel_size, 2)`).
        let number = match &s.kind {
            ExprKind::Number { .. } => true,
            ExprKind::Unary(x) => matches!(x.kind, ExprKind::Number { .. }),
            ExprKind::List(items) => !items.is_empty() && items.iter().all(is_literal),
            _ => false,
        };
        let frame = &st.blocks.frame;
        let name = &b.name.name;
        let free = !st.env.entries.contains_key(name)
            && (!frame.statics.contains_key(name) || frame.bound_statics.contains(name));
        if number && free {
            let value = Static::Value(s.into_owned());
            let frame = &mut st.blocks.frame;
            frame.statics.insert(name.clone(), value);
            frame.bound_statics.push(name.clone());
            return Ok(());
        }
    }
    let value = match lower(st, &b.value) {
        Ok(v) => Some(v),
        Err(d) => {
            st.errors.push(d);
            None
        }
    };
    bind(st, &b.name, value, b.value.span)
}

/// A top-level tuple binding.
pub(crate) fn tuple_binding(st: &mut State, t: &TupleBinding) -> R<()> {
    let values = match tuple_value(st, t) {
        Ok(v) => v.into_iter().map(Some).collect(),
        Err(d) => {
            st.errors.push(d);
            vec![None; t.names.len()]
        }
    };
    for (n, v) in t.names.iter().zip(values) {
        bind(st, n, v, t.value.span)?;
    }
    Ok(())
}

/// A statement call at the top level that calls a block (`true`), or not.
pub(crate) fn call_statement(st: &mut State, c: &Call) -> Option<R<()>> {
    let def = st.blocks.def(&c.func.name)?;
    if !st.blocks.calls(&c.func.name, &st.env) {
        return None;
    }
    Some(call_block(st, c, &def).map(|_| ()))
}

/// A top-level `for` loop.
pub(crate) fn top_for(st: &mut State, f: &ForLoop) -> R<()> {
    match run_for(st, f)? {
        Flow::Next => Ok(()),
        Flow::Return(_, span) => Err(return_outside(span)),
    }
}

fn return_outside(span: Span) -> Diagnostic {
    Diagnostic::new(Code::BlockReturn, span, "`return` outside a block")
        .with_label("not in a block")
}

/// Binds `name` in the current frame: a first binding, or (in a loop or a
/// block) a binding or argument bound again.
fn bind(st: &mut State, name: &Ident, value: Option<NodeId>, value_span: Span) -> R<()> {
    let frame = &st.blocks.frame;
    if let Some(s) = frame.statics.get(&name.name) {
        let what = match s {
            Static::Func(_) => "a function argument",
            Static::Value(_) => "a static value (a loop variable or an argument)",
        };
        return Err(Diagnostic::new(
            Code::DuplicateName,
            name.span,
            format!("`{}` is {what} here", name.name),
        )
        .with_label("cannot be bound"));
    }
    let rebinding = frame.rebinds
        && matches!(
            st.env.entries.get(&name.name),
            Some(Entry {
                what: "binding" | "argument",
                ..
            })
        );
    if rebinding {
        st.env.entries.insert(
            name.name.clone(),
            Entry {
                value,
                span: name.span,
                what: "binding",
            },
        );
    } else {
        st.env.define(&name.name, name.span, "binding", value)?;
    }
    if !st.blocks.frame.in_block {
        if let Some(v) = value {
            st.bindings.push((name.name.clone(), v));
            st.binding_spans.push(value_span);
        }
        if name.name == "loss" {
            st.loss_defined = true;
            if let Some(v) = value {
                st.loss = Some((v, value_span));
            }
        }
    }
    Ok(())
}

/// The frame's view of `e`: specialized in a block or loop, as written
/// elsewhere.
fn specialized<'e>(st: &State, e: &'e Expr) -> R<Cow<'e, Expr>> {
    if !st.blocks.specializing() {
        return Ok(Cow::Borrowed(e));
    }
    let cx = specialize::Cx {
        statics: &st.blocks.frame.statics,
        env: &st.env,
        graph: &st.graph,
    };
    specialize::expr(e, &cx).map(Cow::Owned)
}

/// The values of `a, b = value`: a block call returning as many.
fn tuple_value(st: &mut State, t: &TupleBinding) -> R<Vec<NodeId>> {
    let value = specialized(st, &t.value)?;
    let ExprKind::Call(c) = &value.kind else {
        return Err(not_a_tuple(&t.value));
    };
    if c.func.name == "moments" && !st.blocks.calls(&c.func.name, &st.env) {
        // tf.nn.moments: (mean, variance), the builtins of its two results.
        let mut values = Vec::with_capacity(2);
        for part in ["moments_mean", "moments_variance"] {
            let mut call = c.clone();
            call.func.name = part.to_string();
            values.push(lower(st, &Expr::new(ExprKind::Call(call), value.span))?);
        }
        if t.names.len() != 2 {
            return Err(Diagnostic::new(
                Code::BlockReturn,
                t.value.span,
                format!(
                    "`moments` returns 2 values, but {} names are bound",
                    t.names.len()
                ),
            )
            .with_label("mean and variance"));
        }
        return Ok(values);
    }
    let values = if st.blocks.calls(&c.func.name, &st.env) {
        let def = st.blocks.def(&c.func.name).ok_or_else(|| not_found(c))?;
        call_block(st, c, &def)?
    } else {
        let c = hoist_call(st, c, value.span)?;
        if c.func.name == "dynamic_rnn" {
            super::recurrent::dynamic_rnn(st, &c)?
        } else if c.func.name == "bidirectional_dynamic_rnn" {
            super::recurrent::bidirectional_dynamic_rnn(st, &c)?
        } else {
            match super::functions::tuple_builtin(&mut st.lowerer(), &c) {
                Some(r) => r?,
                None => return Err(not_a_tuple(&t.value)),
            }
        }
    };
    if values.len() != t.names.len() {
        return Err(Diagnostic::new(
            Code::BlockReturn,
            t.value.span,
            format!(
                "`{}` returns {} value{} here, but {} names are bound",
                c.func.name,
                values.len(),
                if values.len() == 1 { "" } else { "s" },
                t.names.len()
            ),
        )
        .with_label(format!(
            "{} value{}",
            values.len(),
            if values.len() == 1 { "" } else { "s" }
        )));
    }
    Ok(values)
}

fn not_a_tuple(e: &Expr) -> Diagnostic {
    Diagnostic::new(
        Code::BlockReturn,
        e.span,
        "only a block call returns several values",
    )
    .with_label("one value")
    .with_help("a block returns a tuple with `return a, b`; of the builtins, `moments`, `split` and `unstack` do")
}

/// The value a block argument binds: a static or a tensor.
enum Bound {
    Static(Static),
    Tensor(NodeId),
}

/// Whether `e` (specialized) is a literal a block can take as a static.
fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Number { .. } | ExprKind::Str(_) | ExprKind::Bool(_) => true,
        ExprKind::Ident(n) => n == "None",
        ExprKind::Unary(x) => matches!(x.kind, ExprKind::Number { .. }),
        ExprKind::List(items) => items.iter().all(is_literal),
        _ => false,
    }
}

/// Binds an argument's expression (`None`: the default `default`).
fn bind_argument(st: &mut State, given: Option<&Expr>, default: Option<&Expr>) -> R<Bound> {
    let Some(e) = given else {
        // Defaults are literals or function names, checked as written.
        let d = default.expect("bound or defaulted");
        return Ok(match &d.kind {
            ExprKind::Ident(n) if n != "None" => Bound::Static(Static::Func(n.clone())),
            _ => Bound::Static(Static::Value(d.clone())),
        });
    };
    let s = specialized(st, e)?;
    if is_literal(&s) {
        return Ok(Bound::Static(Static::Value(s.into_owned())));
    }
    if let ExprKind::Ident(n) = &s.kind {
        let is_function = super::functions::is_builtin(n)
            || super::params::INITIALIZERS.contains(&n.as_str())
            || st.blocks.def(n).is_some();
        if is_function && !st.env.entries.contains_key(n) {
            return Ok(Bound::Static(Static::Func(n.clone())));
        }
    }
    // An initializer with its arguments (`glorot_uniform(seed = 3)`), for
    // a `params` entry of the block.
    if let ExprKind::Call(c) = &s.kind {
        if super::params::INITIALIZERS.contains(&c.func.name.as_str())
            && !super::functions::is_builtin(&c.func.name)
        {
            return Ok(Bound::Static(Static::Value(s.into_owned())));
        }
    }
    lower(st, e).map(Bound::Tensor)
}

/// Expands a call of `def`; its returned values.
fn call_block(st: &mut State, call: &Call, def: &Rc<BlockDef>) -> R<Vec<NodeId>> {
    // As called: `layers.dense` and a spec's own `dense` are two blocks.
    let name = &call.func.name;
    if st.blocks.stack.iter().any(|(n, _)| n == name) {
        return Err(Diagnostic::new(
            Code::RecursiveBlock,
            call.func.span,
            format!("block `{name}` calls itself"),
        )
        .with_label("a call of the block being expanded")
        .with_help("blocks are expanded at each call; repeat a block with a `for` loop instead"));
    }
    let params: Vec<Param> = def
        .params
        .iter()
        .map(|p| Param {
            name: &p.name.name,
            required: p.default.is_none(),
        })
        .collect();
    // `name` and `reuse` are keyword arguments of every call.
    let mut scope_args: [Option<&Arg>; 2] = [None, None];
    let mut own = Vec::with_capacity(call.args.len());
    for a in &call.args {
        let k = a
            .name
            .as_ref()
            .and_then(|n| SCOPE_ARGUMENTS.iter().position(|s| *s == n.name));
        match k {
            Some(k) => {
                if let Some(prev) = scope_args[k] {
                    return Err(Diagnostic::new(
                        Code::DuplicateArgument,
                        a.span,
                        format!("argument `{}` given twice", SCOPE_ARGUMENTS[k]),
                    )
                    .with_label("second value")
                    .with_secondary(prev.span, "first value"));
                }
                scope_args[k] = Some(a);
            }
            None => own.push(a.clone()),
        }
    }
    let b = args::bind_args(name, &own, call.span, &params)?;
    let mut statics = Statics::new();
    let mut tensors = Vec::new();
    for (i, p) in def.params.iter().enumerate() {
        match bind_argument(st, b.get(i), p.default.as_ref())? {
            Bound::Static(s) => {
                statics.insert(p.name.name.clone(), s);
            }
            Bound::Tensor(v) => tensors.push((&p.name, v)),
        }
    }
    let chosen = match scope_args[0] {
        Some(a) => Some(scope_name(&*specialized(st, &a.value)?)?),
        None => None,
    };
    let reuse = match scope_args[1].map(|a| &a.value) {
        Some(e) => {
            let r = args::eval_bool(&*specialized(st, e)?)?;
            if r && chosen.is_none() {
                return Err(Diagnostic::new(
                    Code::VariableScope,
                    e.span,
                    "`reuse = true` needs the `name` of the scope to reuse",
                )
                .with_label("reuse of which scope?")
                .with_help("an unnamed call always makes new variables; name both calls, e.g. name = \"shared\""));
            }
            r
        }
        None => false,
    };
    let parent = st.blocks.frame.scope.clone();
    let default_name = def
        .scope
        .as_ref()
        .map_or(def.name.name.as_str(), |s| s.value.as_str());
    let local = chosen.unwrap_or_else(|| st.blocks.scopes.unique(&parent, default_name));
    let full = scope::join(&parent, &local);
    st.blocks.scopes.open(&full);

    let mut env = Env::default();
    for (p, v) in tensors {
        env.define(&p.name, p.span, "argument", Some(v))?;
    }
    let frame = Frame {
        statics,
        scope: full,
        reuse: reuse || st.blocks.frame.reuse,
        in_block: true,
        rebinds: true,
        bound_statics: Vec::new(),
        in_library: specc_grammar::library::file_of(def.span).is_some(),
    };
    let saved_env = std::mem::replace(&mut st.env, env);
    let saved_frame = std::mem::replace(&mut st.blocks.frame, frame);
    let record = st.blocks.expanded_calls.len();
    st.blocks.expanded_calls.push(crate::model::BlockCall {
        depth: st.blocks.stack.len(),
        call: specc_grammar::print::expr(&Expr::new(ExprKind::Call(call.clone()), call.span)),
        scope: st.blocks.frame.scope.clone(),
        reuse: st.blocks.frame.reuse,
        variables: Vec::new(),
    });
    let vars_before = st.graph.vars.len();
    st.blocks.stack.push((name.clone(), call.span));
    let errors_before = st.errors.len();
    let r = run(st, &def.body);
    let prefix = format!("{}/", st.blocks.expanded_calls[record].scope);
    st.blocks.expanded_calls[record].variables = st.graph.vars[vars_before..]
        .iter()
        .filter_map(|v| v.name.strip_prefix(&prefix))
        .filter(|leaf| !leaf.contains('/'))
        .map(str::to_string)
        .collect();
    st.blocks.stack.pop();
    st.blocks.frame = saved_frame;
    st.env = saved_env;
    let body = def.span;
    let context = |d: Diagnostic| {
        let d = if d.code == Code::UnknownName
            && d.span.start >= body.start
            && d.span.end <= body.end
        {
            d.with_help("a block sees only its arguments, its parameters and its own bindings: pass the value as an argument")
        } else {
            d
        };
        d.with_secondary(call.span, format!("in this call of `{name}`"))
    };
    let new: Vec<Diagnostic> = st.errors.drain(errors_before..).map(context).collect();
    let failed = !new.is_empty();
    st.errors.extend(new);
    match r.map_err(context)? {
        // The body's errors are reported: the call's value is poisoned.
        Flow::Next if failed => Err(poisoned(call.span)),
        Flow::Next => Ok(Vec::new()),
        Flow::Return(values, _) => Ok(values),
    }
}

/// A `name = "..."` argument: a scope name.
fn scope_name(e: &Expr) -> R<String> {
    let ExprKind::Str(s) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!("a scope name is a string, found {}", args::describe(e)),
        )
        .with_label("not a string"));
    };
    let ok = !s.is_empty()
        && s.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        });
    if !ok {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("`{s}` is not a scope name"),
        )
        .with_label("letters, digits, `_`, `.`, `-`, parts joined by `/`"));
    }
    Ok(s.clone())
}

/// Runs a body's statements; each error is reported and the next statement
/// checked (an error in a binding poisons its name).
fn run(st: &mut State, body: &[Stmt]) -> R<Flow> {
    for s in body {
        st.blocks.expanded += 1;
        if st.blocks.expanded > MAX_STATEMENTS {
            return Err(Diagnostic::new(
                Code::ExpansionTooLarge,
                stmt_span(s),
                format!("the spec expands to more than {MAX_STATEMENTS} statements"),
            )
            .with_label("expanded too often")
            .with_help("loops and block calls multiply; a model this size is beyond one spec"));
        }
        match stmt(st, s) {
            Ok(Flow::Next) => {}
            Ok(r @ Flow::Return(..)) => return Ok(r),
            Err(d) if d.code == Code::ExpansionTooLarge => return Err(d),
            // A failed `return` ends the body; its call's value is poisoned.
            Err(d) if matches!(s, Stmt::Return(_)) => {
                st.errors.push(d);
                return Err(poisoned(stmt_span(s)));
            }
            Err(d) => st.errors.push(d),
        }
    }
    Ok(Flow::Next)
}

/// The marker of a value whose error is reported already.
fn poisoned(span: Span) -> Diagnostic {
    Diagnostic::new(Code::Poisoned, span, "")
}

fn stmt_span(s: &Stmt) -> Span {
    match s {
        Stmt::Params(b) => b.span,
        Stmt::Let(b) => b.span,
        Stmt::TupleLet(t) => t.span,
        Stmt::Call(c) => c.span,
        Stmt::For(f) => f.span,
        Stmt::If(i) => i.span,
        Stmt::Return(r) => r.span,
    }
}

fn stmt(st: &mut State, s: &Stmt) -> R<Flow> {
    match s {
        Stmt::Let(b) => let_binding(st, b)?,
        Stmt::TupleLet(t) => tuple_binding(st, t)?,
        Stmt::Call(c) => {
            let c = match specialized(st, &Expr::new(ExprKind::Call(c.clone()), c.span))?
                .into_owned()
                .kind
            {
                ExprKind::Call(c) => c,
                _ => return Ok(Flow::Next),
            };
            match call_statement(st, &c) {
                Some(r) => r?,
                None => super::statements::statement(st, &c)?,
            }
        }
        Stmt::Params(block) => {
            if !st.blocks.frame.in_block {
                return Err(Diagnostic::new(
                    Code::VariableScope,
                    block.keyword,
                    "`params` in a loop outside a block",
                )
                .with_label("every iteration would declare the same variables")
                .with_help(
                    "declare them in a block and call it in the loop: each call makes its own",
                ));
            }
            for p in &block.entries {
                let r = param(st, p);
                if let Err(d) = r {
                    st.env.poison(&p.name.name, p.name.span, "parameter");
                    st.errors.push(d);
                }
            }
        }
        Stmt::For(f) => return run_for(st, f),
        Stmt::If(i) => {
            let cond = specialized(st, &i.cond)?;
            if is_literal(&cond) && !matches!(cond.kind, ExprKind::Bool(_)) {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    i.cond.span,
                    format!(
                        "an `if` condition is true or false, found {}",
                        args::describe(&cond)
                    ),
                )
                .with_label("not a boolean"));
            }
            let take = args::eval_bool(&cond).map_err(|_| {
                Diagnostic::new(
                    Code::ArgumentType,
                    i.cond.span,
                    "an `if` condition must be known at compile time",
                )
                .with_label("not a static condition")
                .with_help("compare static values (arguments, loop variables, `shape(x)[i]`); for a tensor condition use where(cond, a, b)")
            })?;
            let body = if take { &i.then } else { &i.otherwise };
            return run(st, body);
        }
        Stmt::Return(r) => {
            if !st.blocks.frame.in_block {
                return Err(return_outside(r.span));
            }
            let mut values = Vec::with_capacity(r.values.len());
            for v in &r.values {
                values.push(lower(st, v)?);
            }
            return Ok(Flow::Return(values, r.span));
        }
    }
    Ok(Flow::Next)
}

/// A trainable variable a builtin layer makes (`dynamic_rnn`'s cells),
/// named `name` in full: a new one, or in a reused scope the existing one
/// of this shape. `span` is the call that makes it.
pub(crate) fn declare_variable(
    st: &mut State,
    name: &str,
    dims: &[u32],
    init: specc_runtime::init::Initializer,
    span: Span,
) -> R<NodeId> {
    let shape = crate::ir::Shape::fixed(dims);
    if st.blocks.frame.reuse {
        let Some(v) = st.graph.vars.iter().position(|v| v.name == name) else {
            return Err(Diagnostic::new(
                Code::VariableScope,
                span,
                format!("variable `{name}` does not exist, and this call reuses its scope"),
            )
            .with_label("nothing to reuse"));
        };
        if st.graph.vars[v].shape != shape {
            return Err(Diagnostic::new(
                Code::VariableScope,
                span,
                format!(
                    "variable `{name}` is {}, but this call makes it {shape}",
                    st.graph.vars[v].shape
                ),
            )
            .with_label("another shape"));
        }
        return Ok(st.graph.var(v as u32));
    }
    if let Some(first) = st.blocks.made_by.get(name) {
        return Err(Diagnostic::new(
            Code::VariableScope,
            span,
            format!("variable `{name}` already exists"),
        )
        .with_label("a second variable of this name")
        .with_secondary(*first, "first made by this call")
        .with_help("give the call another `scope` (or its cell another `name`)"));
    }
    let v = st.graph.add_var(name, crate::ir::DType::F32, shape);
    st.vars.push(crate::model::VarInfo {
        kind: crate::model::VarKind::Param { trainable: true },
        init,
        span: Some(span),
        partitions: Vec::new(),
    });
    st.blocks.made_by.insert(name.to_string(), span);
    Ok(st.graph.var(v))
}

/// A parameter of a block, under the call's scope.
fn param(st: &mut State, p: &ParamDecl) -> R<()> {
    let mut q = p.clone();
    for d in &mut q.shape {
        *d = specialized(st, d)?.into_owned();
    }
    q.init = specialized(st, &p.init)?.into_owned();
    for o in &mut q.options {
        o.value = specialized(st, &o.value)?.into_owned();
    }
    let name = scope::join(&st.blocks.frame.scope, &p.name.name);
    let reuse = st.blocks.frame.reuse;
    if !reuse {
        if let Some(first) = st.blocks.made_by.get(&name) {
            return Err(Diagnostic::new(
                Code::VariableScope,
                p.name.span,
                format!("variable `{name}` already exists"),
            )
            .with_label("a second variable of this name")
            .with_secondary(*first, "first made by this call")
            .with_help(
                "give the call another `name`, or pass `reuse = true` to share the variables",
            ));
        }
    }
    super::params::param_named(st, &q, &name, reuse)?;
    if let Some((_, call)) = st.blocks.stack.last() {
        st.blocks.made_by.entry(name).or_insert(*call);
    }
    Ok(())
}
