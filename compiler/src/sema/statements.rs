//! Statements: calls written on their own line for their effect on
//! checking: `assert_shape(x, [dims])`, and the `tf.debugging` checks of
//! [`super::checks`].
//!
//! Owns: checking shape assertions, with symbolic dimensions (`assert_shape(h,
//! [B, n])` binds `n` on first use and checks it on every later one).
//! Invariant: a statement only checks; it defines no name and adds no
//! output but a runtime check's (see [`super::checks`]).

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, req};
use super::expr::R;
use super::State;
use crate::ir::Dim;

pub(crate) fn statement(st: &mut State, call: &Call) -> R<()> {
    if call.func.name == "init_from_checkpoint" {
        // The grammar's `init_from_checkpoint` form did not match: a path and
        // a map literal are missing or malformed.
        return Err(Diagnostic::new(
            Code::WrongArity,
            call.span,
            "`init_from_checkpoint` takes a checkpoint path and an assignment map",
        )
        .with_label("expected init_from_checkpoint(\"PATH\", { \"CHECKPOINT NAME\": \"PARAMETER\" })")
        .with_help("e.g. init_from_checkpoint(\"runs/pretrained\", { \"/\": \"/\" }) loads every parameter"));
    }
    if super::checks::is_check(&call.func.name) {
        // A runtime check (or a static one); `check_numerics` as a statement
        // discards its value but keeps its check.
        return super::checks::lower(&mut st.lowerer(), call).map(|_| ());
    }
    if call.func.name != "assert_shape" {
        return Err(Diagnostic::new(
            Code::UnknownFunction,
            call.func.span,
            format!("`{}` is not a statement", call.func.name),
        )
        .with_label("unknown statement")
        .with_help("statements: assert_shape(x, [dims]), check_numerics(x, message) and the assert_* checks; bind other expressions to a name"));
    }
    let b = args::bind("assert_shape", call, &[req("x"), req("shape")])?;
    let x = st.lowerer().lower(b.req(0))?;
    let actual = st.graph.shape(x).clone();
    let se = b.req(1);
    let ExprKind::List(items) = &se.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            se.span,
            format!(
                "expected a shape like [B, 128], found {}",
                args::describe(se)
            ),
        )
        .with_label("expected a list of dimensions"));
    };
    let fail = |what: String| {
        Diagnostic::new(
            Code::ShapeAssertion,
            call.span,
            format!(
                "shape assertion failed: `{}` is {actual}",
                expr_text(b.req(0))
            ),
        )
        .with_label(what)
        .with_secondary(b.req(0).span, format!("this is {actual}"))
    };
    if items.len() != actual.rank() {
        return Err(fail(format!(
            "expected rank {} but it has rank {}",
            items.len(),
            actual.rank()
        )));
    }
    for (i, (it, d)) in items.iter().zip(actual.0.iter()).enumerate() {
        match &it.kind {
            ExprKind::Ident(n) if n == "B" => {
                if *d != Dim::Batch {
                    return Err(fail(format!(
                        "dimension {i} is {d}, expected the batch dimension B"
                    )));
                }
            }
            ExprKind::Ident(n) => match st.shape_symbols.get(n) {
                Some((bound, _)) if bound != d => {
                    return Err(fail(format!(
                        "dimension {i} is {d}, but `{n}` is {bound} elsewhere"
                    )));
                }
                Some(_) => {}
                None => {
                    st.shape_symbols.insert(n.clone(), (*d, it.span));
                }
            },
            _ => {
                let v = args::eval_int(it)?;
                if *d != Dim::Fixed(v.max(0) as u32) || v < 0 {
                    return Err(fail(format!("dimension {i} is {d}, expected {v}")));
                }
            }
        }
    }
    Ok(())
}

/// A compact rendering of simple expressions for messages.
fn expr_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Call(c) => format!("{}(..)", c.func.name),
        _ => "the expression".into(),
    }
}
