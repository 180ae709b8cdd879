//! Parsing blocks, loops and tuples: `block` definitions and the
//! statements of their bodies (`params`, bindings, tuple bindings, calls,
//! `for`, `if`, `return`), from pest pairs to the AST.
//!
//! Invariant: as the rest of the parser, every node gets the tight span of
//! its text; nesting is bounded by the scanner's bracket limit (bodies are
//! braces).

use pest::iterators::Pair;

use super::{binding, block, call, expr, ident, internal, is_punct, param_decl, span_of, str_lit};
use super::{Children, Result, Rule};
use crate::ast::*;

/// `block NAME(PARAMS) { BODY }` from the item's children.
pub(super) fn block_def(span: Span, mut c: Children<'_>) -> Result<BlockDef> {
    let name = c.ident()?;
    let mut params = Vec::new();
    let mut body = Vec::new();
    let mut scope = None;
    while let Some(p) = c.next() {
        match p.as_rule() {
            Rule::block_scope => {
                let mut sc = Children::of(p);
                scope = Some(str_lit(sc.expect("a scope name")?)?);
            }
            Rule::block_param => {
                let span = span_of(&p);
                let mut pc = Children::of(p);
                let name = pc.ident()?;
                let default = pc.next().map(expr).transpose()?;
                params.push(BlockParam {
                    name,
                    default,
                    span,
                });
            }
            Rule::stmt => body.push(stmt(p)?),
            _ => return Err(internal(span_of(&p), "a block parameter or statement")),
        }
    }
    Ok(BlockDef {
        name,
        params,
        scope,
        body,
        span,
    })
}

/// One statement of a block, `for` or `if` body.
fn stmt(pair: Pair<'_, Rule>) -> Result<Stmt> {
    let mut c = Children::of(pair);
    let inner = c.expect("a statement")?;
    let span = span_of(&inner);
    let keyword = inner
        .clone()
        .into_inner()
        .next()
        .map_or(span, |p| span_of(&p));
    Ok(match inner.as_rule() {
        Rule::params_item => Stmt::Params(block(keyword, span, Children::of(inner), param_decl)?),
        Rule::for_stmt => Stmt::For(for_loop(inner)?),
        Rule::if_stmt => {
            let mut c = Children::of(inner);
            let cond = expr(c.expect("a condition")?)?;
            let (mut then, mut otherwise) = (Vec::new(), Vec::new());
            let mut in_else = false;
            for p in c.inner.by_ref() {
                match p.as_rule() {
                    Rule::kw_else => in_else = true,
                    Rule::stmt if in_else => otherwise.push(stmt(p)?),
                    Rule::stmt => then.push(stmt(p)?),
                    _ => {}
                }
            }
            Stmt::If(IfStmt {
                cond,
                then,
                otherwise,
                span,
            })
        }
        Rule::return_stmt => {
            let values = Children::of(inner)
                .inner
                .filter(|p| !is_punct(p.as_rule()))
                .map(expr)
                .collect::<Result<Vec<_>>>()?;
            Stmt::Return(Return { values, span })
        }
        Rule::tuple_let_item => {
            Stmt::TupleLet(tuple_binding(Children::of(inner).expect("a binding")?)?)
        }
        Rule::statement_item => Stmt::Call(call(Children::of(inner).expect("a call")?)?),
        Rule::let_item => Stmt::Let(binding(Children::of(inner).expect("a binding")?)?),
        _ => return Err(internal(span, "a statement")),
    })
}

/// `for VAR in range(...) { BODY }`.
pub(super) fn for_loop(pair: Pair<'_, Rule>) -> Result<ForLoop> {
    let span = span_of(&pair);
    let mut c = Children::of(pair);
    let var = c.ident()?;
    let range = call(c.expect("a range")?)?;
    let mut body = Vec::new();
    while let Some(p) = c.next() {
        body.push(stmt(p)?);
    }
    Ok(ForLoop {
        var,
        range,
        body,
        span,
    })
}

/// `a, b = value`.
pub(super) fn tuple_binding(pair: Pair<'_, Rule>) -> Result<TupleBinding> {
    let span = span_of(&pair);
    let mut names = Vec::new();
    let mut value = None;
    for p in pair.into_inner().filter(|p| !is_punct(p.as_rule())) {
        if p.as_rule() == Rule::ident {
            names.push(ident(&p));
        } else {
            value = Some(expr(p)?);
        }
    }
    let value = value.ok_or_else(|| internal(span, "an expression"))?;
    Ok(TupleBinding { names, value, span })
}
