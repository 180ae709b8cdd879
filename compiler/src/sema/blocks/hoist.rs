//! Block calls inside expressions: each is expanded where it stands (in
//! the order of the text, so scopes are numbered as Python would) and
//! replaced by a temporary name bound to its value, so the expression then
//! lowers as any other.
//!
//! Owns: the temporaries (`%0`, `%1`, ...) and their lifetime: an item
//! that lowers its parts itself (a metric) keeps them until [`release`].
//! Invariant: every temporary made is released, on success and on error.

use std::borrow::Cow;

use specc_grammar::ast::{Arg, Call, Expr, ExprKind, IndexItem, Span};
use specc_grammar::{Code, Diagnostic};

use super::super::expr::{Entry, R};
use super::super::State;
use super::{call_block, specialized};
use crate::ir::NodeId;

/// Lowers an expression in the current frame: specialized, its block calls
/// expanded, then as any expression.
pub(crate) fn lower(st: &mut State, e: &Expr) -> R<NodeId> {
    let e = specialized(st, e)?;
    let (e, mark) = hoisted(st, &e)?;
    let r = st.lowerer().lower(&e);
    release(st, mark);
    r
}

/// `e` with its block calls expanded into temporaries, for an item that
/// lowers its parts itself (a metric); the temporaries live until
/// [`release`] with the returned mark.
pub(crate) fn hoisted(st: &mut State, e: &Expr) -> R<(Expr, usize)> {
    let before = st.blocks.temps;
    match hoist(st, e) {
        Ok(e) => Ok((e.into_owned(), before)),
        Err(d) => {
            release(st, before);
            Err(d)
        }
    }
}

/// Drops the temporaries made since `mark`.
pub(crate) fn release(st: &mut State, mark: usize) {
    for i in mark..st.blocks.temps {
        st.env.entries.remove(&temp_name(i));
    }
    st.blocks.temps = mark;
}

/// A block call whose block is gone: a bug (callers check [`Blocks::calls`]).
pub(super) fn not_found(c: &Call) -> Diagnostic {
    Diagnostic::new(
        Code::InternalError,
        c.span,
        format!("block `{}` not found", c.func.name),
    )
}

fn temp_name(i: usize) -> String {
    format!("%{i}")
}

/// `e` with each block call replaced by a temporary bound to its value (in
/// the order of the text, so scopes are numbered as Python would).
fn hoist<'e>(st: &mut State, e: &'e Expr) -> R<Cow<'e, Expr>> {
    if !mentions_block(st, e) {
        return Ok(Cow::Borrowed(e));
    }
    let kind = match &e.kind {
        ExprKind::Call(c) if st.blocks.calls(&c.func.name, &st.env) => {
            let def = st.blocks.def(&c.func.name).ok_or_else(|| not_found(c))?;
            let values = call_block(st, c, &def)?;
            let [v] = values.as_slice() else {
                return Err(Diagnostic::new(
                    Code::BlockReturn,
                    c.span,
                    format!(
                        "`{}` returns {} values here, not one",
                        c.func.name,
                        values.len()
                    ),
                )
                .with_label("used as one value")
                .with_help("bind its values by position: a, b = block(...)"));
            };
            let name = temp_name(st.blocks.temps);
            st.blocks.temps += 1;
            st.env.entries.insert(
                name.clone(),
                Entry {
                    value: Some(*v),
                    span: c.span,
                    what: "binding",
                },
            );
            ExprKind::Ident(name)
        }
        ExprKind::Call(c) => {
            let mut args = Vec::with_capacity(c.args.len());
            for a in &c.args {
                args.push(Arg {
                    name: a.name.clone(),
                    value: hoist(st, &a.value)?.into_owned(),
                    span: a.span,
                });
            }
            ExprKind::Call(Call {
                func: c.func.clone(),
                args,
                span: c.span,
            })
        }
        ExprKind::List(items) => ExprKind::List(
            items
                .iter()
                .map(|x| hoist(st, x).map(Cow::into_owned))
                .collect::<R<_>>()?,
        ),
        ExprKind::Unary(x) => ExprKind::Unary(Box::new(hoist(st, x)?.into_owned())),
        ExprKind::Binary(first, rest) => {
            let first = hoist(st, first)?.into_owned();
            let mut ops = Vec::with_capacity(rest.len());
            for o in rest {
                let mut o = o.clone();
                o.rhs = hoist(st, &o.rhs)?.into_owned();
                ops.push(o);
            }
            ExprKind::Binary(Box::new(first), ops)
        }
        ExprKind::Index(x, items) => {
            let x = hoist(st, x)?.into_owned();
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(match i {
                    IndexItem::Index(e) => IndexItem::Index(hoist(st, e)?.into_owned()),
                    other => other.clone(),
                });
            }
            ExprKind::Index(Box::new(x), out)
        }
        other => other.clone(),
    };
    Ok(Cow::Owned(Expr::new(kind, e.span)))
}

/// A builtin call with the block calls of its arguments expanded.
pub(super) fn hoist_call(st: &mut State, c: &Call, span: Span) -> R<Call> {
    let e = Expr::new(ExprKind::Call(c.clone()), span);
    match hoist(st, &e)?.into_owned().kind {
        ExprKind::Call(c) => Ok(c),
        _ => Err(Diagnostic::new(
            Code::InternalError,
            span,
            "a call hoisted to a name",
        )),
    }
}

/// Whether `e` calls a block anywhere.
fn mentions_block(st: &State, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call(c) => {
            st.blocks.calls(&c.func.name, &st.env)
                || c.args.iter().any(|a| mentions_block(st, &a.value))
        }
        ExprKind::List(items) => items.iter().any(|x| mentions_block(st, x)),
        ExprKind::Unary(x) => mentions_block(st, x),
        ExprKind::Binary(first, rest) => {
            mentions_block(st, first) || rest.iter().any(|o| mentions_block(st, &o.rhs))
        }
        ExprKind::Index(x, items) => {
            mentions_block(st, x)
                || items
                    .iter()
                    .any(|i| matches!(i, IndexItem::Index(e) if mentions_block(st, e)))
        }
        _ => false,
    }
}
