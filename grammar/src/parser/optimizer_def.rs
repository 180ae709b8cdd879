//! Parsing `optimizer_def` items: the hyperparameters and the entries of
//! the body (`slot`, `global`, `update`, `sparse`, `finish`), from pest
//! pairs to the AST. Which entries a definition must have, and what their
//! assignments may name, is sema's (`sema::optimizer_def`).
//!
//! Invariant: as the rest of the parser, every node gets the tight span of
//! its text.

use pest::iterators::Pair;

use super::{binding, expr, internal, span_of, Children, Result, Rule};
use crate::ast::*;

/// `optimizer_def NAME(HYPERS) { ENTRIES }` from the item's children.
pub(super) fn optimizer_def(span: Span, mut c: Children<'_>) -> Result<OptimizerDef> {
    let name = c.ident()?;
    let mut params = Vec::new();
    let mut entries = Vec::new();
    while let Some(p) = c.next() {
        match p.as_rule() {
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
            Rule::opt_entry => {
                let mut ec = Children::of(p);
                entries.push(entry(ec.expect("an entry")?)?);
            }
            _ => return Err(internal(span_of(&p), "a hyperparameter or entry")),
        }
    }
    Ok(OptimizerDef {
        name,
        params,
        entries,
        span,
    })
}

fn entry(pair: Pair<'_, Rule>) -> Result<OptEntry> {
    let span = span_of(&pair);
    let keyword = pair
        .clone()
        .into_inner()
        .next()
        .map_or(span, |p| span_of(&p));
    let rule = pair.as_rule();
    let mut c = Children::of(pair);
    Ok(match rule {
        Rule::opt_slot | Rule::opt_global => {
            let name = c.ident()?;
            let value = expr(c.expect("an initial value")?)?;
            let b = Binding {
                span: name.span.to(value.span),
                name,
                value,
            };
            if rule == Rule::opt_slot {
                OptEntry::Slot(b)
            } else {
                OptEntry::Global(b)
            }
        }
        Rule::opt_update => OptEntry::Update(section(keyword, span, c)?),
        Rule::opt_finish => OptEntry::Finish(section(keyword, span, c)?),
        Rule::opt_sparse => {
            let mode = c.ident()?;
            let mut body = Vec::new();
            while let Some(p) = c.next() {
                body.push(binding(p)?);
            }
            // Spans are tight: text after the mode is its braces.
            let has_braces = span.end > mode.span.end;
            OptEntry::Sparse {
                mode,
                rule: has_braces.then_some(OptSection {
                    keyword,
                    body,
                    span,
                }),
                span,
            }
        }
        _ => return Err(internal(span, "an optimizer entry")),
    })
}

fn section(keyword: Span, span: Span, mut c: Children<'_>) -> Result<OptSection> {
    let mut body = Vec::new();
    while let Some(p) = c.next() {
        body.push(binding(p)?);
    }
    Ok(OptSection {
        keyword,
        body,
        span,
    })
}
