//! `for` loops over static ranges: the body checked once per value of the
//! loop variable (a static of the frame), bindings carried from one
//! iteration to the next.
//!
//! Invariant: the number of iterations is bounded before the first one runs
//! (`expansion-too-large`), and the loop variable is removed from the frame
//! afterwards, whatever the body did.

use specc_grammar::ast::{Call, Expr, ExprKind, ForLoop};
use specc_grammar::{Code, Diagnostic};

use super::specialize::Static;
use super::{run, specialized, Flow, MAX_STATEMENTS};
use crate::sema::args;
use crate::sema::expr::R;
use crate::sema::State;

/// `for VAR in range(...) { BODY }`: the body once per value.
pub(super) fn run_for(st: &mut State, f: &ForLoop) -> R<Flow> {
    let range = range_values(st, &f.range)?;
    let var = &f.var.name;
    if st.env.entries.contains_key(var) || st.blocks.frame.statics.contains_key(var) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            f.var.span,
            format!("`{var}` is already defined"),
        )
        .with_label("a loop variable needs a new name"));
    }
    let saved_rebinds = std::mem::replace(&mut st.blocks.frame.rebinds, true);
    let mut flow = Ok(Flow::Next);
    for i in range {
        st.blocks.frame.statics.insert(
            var.clone(),
            Static::Value(Expr::new(
                ExprKind::Number {
                    value: i as f64,
                    is_int: true,
                },
                f.var.span,
            )),
        );
        flow = run(st, &f.body);
        if !matches!(flow, Ok(Flow::Next)) {
            break;
        }
    }
    st.blocks.frame.statics.remove(var);
    st.blocks.frame.rebinds = saved_rebinds;
    flow
}

/// The values of `range(stop)`, `range(start, stop)` or `range(start, stop, step)`.
fn range_values(st: &State, c: &Call) -> R<Vec<i64>> {
    if c.func.name != "range" {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            c.span,
            format!("a loop runs over range(...), not `{}`", c.func.name),
        )
        .with_label("expected range(N)"));
    }
    let expr = Expr::new(ExprKind::Call(c.clone()), c.span);
    let s = specialized(st, &expr)?;
    let ExprKind::Call(c) = &s.kind else {
        return Err(
            Diagnostic::new(Code::ArgumentType, c.span, "expected range(N)")
                .with_label("not a range"),
        );
    };
    let mut ints = Vec::new();
    for a in &c.args {
        if let Some(n) = &a.name {
            return Err(Diagnostic::new(
                Code::UnknownArgument,
                n.span,
                "range takes positional arguments",
            )
            .with_label("named argument"));
        }
        ints.push(args::eval_int(&a.value).map_err(|_| {
            Diagnostic::new(
                Code::ArgumentType,
                a.value.span,
                "a loop's bounds must be static integers",
            )
            .with_label("not a static integer")
        })?);
    }
    let (start, stop, step) = match ints.as_slice() {
        [n] => (0, *n, 1),
        [a, b] => (*a, *b, 1),
        [a, b, s] => (*a, *b, *s),
        _ => {
            return Err(Diagnostic::new(
                Code::WrongArity,
                c.span,
                "range takes 1 to 3 arguments: range(stop), range(start, stop), range(start, stop, step)",
            )
            .with_label("wrong number of arguments"))
        }
    };
    if step == 0 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            c.span,
            "range's step must not be 0",
        )
        .with_label("step 0"));
    }
    let (span, step_size) = if step > 0 {
        ((stop - start).max(0), step)
    } else {
        ((start - stop).max(0), -step)
    };
    let count = (span + step_size - 1) / step_size;
    if count as usize > MAX_STATEMENTS {
        return Err(Diagnostic::new(
            Code::ExpansionTooLarge,
            c.span,
            format!("{count} iterations"),
        )
        .with_label("too many iterations"));
    }
    Ok((0..count).map(|k| start + k * step).collect())
}
