//! Specializing a statement of a block or loop body for one expansion.
//!
//! Owns: replacing the static names of a frame (a loop's counter, a block's
//! arguments that are numbers, strings, booleans, `None`, lists or
//! functions) by their values, and folding what is then known at compile
//! time: integer arithmetic on sizes (`units * 4`, `d // heads`, `i % 2`),
//! a comparison of numbers (`rate > 0`), whether an optional argument is
//! `None` (`mask != None`), `shape(x)[i]` of a tensor with a
//! fixed dimension there, an item of a static list, Keras's
//! `normalize_tuple(v, n)`. A call of a static function argument becomes a
//! call of that function (`activation(y)` with `activation = relu`), and a
//! call of `None` is its argument (TF's `activation = None`).
//!
//! Invariant: every node keeps the span of the text it came from, so a
//! diagnostic about the specialized statement points into the body; only
//! expressions the frame's statics reach are folded, so top-level specs
//! check exactly as before.

use std::collections::HashMap;

use specc_grammar::ast::{BinOp, Call, Expr, ExprKind, IndexItem, Operation, Span};
use specc_grammar::{Code, Diagnostic};

use super::super::expr::{Env, R};
use crate::ir::{Dim, Graph};

/// What a static name of a frame stands for.
#[derive(Clone, Debug)]
pub(crate) enum Static {
    /// A literal (number, string, boolean, `None` or a list of them).
    Value(Expr),
    /// A function passed by name (`activation = relu`): a builtin or a block.
    Func(String),
}

pub(crate) type Statics = HashMap<String, Static>;

/// What specializing reads: the statics, and the tensors' shapes.
pub(crate) struct Cx<'a> {
    pub statics: &'a Statics,
    pub env: &'a Env,
    pub graph: &'a Graph,
}

/// `e` with the frame's statics substituted and folded.
pub(crate) fn expr(e: &Expr, cx: &Cx) -> R<Expr> {
    let kind = match &e.kind {
        ExprKind::Ident(n) => match cx.statics.get(n) {
            Some(Static::Value(v)) => v.kind.clone(),
            Some(Static::Func(f)) => ExprKind::Ident(f.clone()),
            // A name whose definition failed: its error is reported.
            None if cx.env.entries.get(n).is_some_and(|e| e.value.is_none()) => {
                return Err(Diagnostic::new(Code::Poisoned, e.span, ""));
            }
            None => e.kind.clone(),
        },
        ExprKind::Number { .. } | ExprKind::Str(_) | ExprKind::Bool(_) | ExprKind::Range(..) => {
            e.kind.clone()
        }
        ExprKind::List(items) => {
            ExprKind::List(items.iter().map(|x| expr(x, cx)).collect::<R<_>>()?)
        }
        ExprKind::Unary(x) => {
            let x = expr(x, cx)?;
            match x.kind {
                ExprKind::Number {
                    value,
                    is_int: true,
                } => ExprKind::Number {
                    value: -value,
                    is_int: true,
                },
                _ => ExprKind::Unary(Box::new(x)),
            }
        }
        ExprKind::Binary(first, rest) => {
            let first = expr(first, cx)?;
            let rest = rest
                .iter()
                .map(|o| {
                    Ok(Operation {
                        op: o.op,
                        op_span: o.op_span,
                        rhs: expr(&o.rhs, cx)?,
                    })
                })
                .collect::<R<Vec<_>>>()?;
            fold(first, rest, e.span)?
        }
        ExprKind::Call(c) => return call(c, e.span, cx),
        ExprKind::Index(x, items) => {
            if let Some(d) = static_dim(x, items, cx)? {
                d
            } else {
                let x = expr(x, cx)?;
                let items = items
                    .iter()
                    .map(|i| index_item(i, cx))
                    .collect::<R<Vec<_>>>()?;
                match list_item(&x, &items)? {
                    Some(v) => v,
                    None => ExprKind::Index(Box::new(x), items),
                }
            }
        }
    };
    Ok(Expr::new(kind, e.span))
}

fn index_item(i: &IndexItem, cx: &Cx) -> R<IndexItem> {
    Ok(match i {
        IndexItem::Index(e) => IndexItem::Index(expr(e, cx)?),
        IndexItem::Slice { start, end, span } => IndexItem::Slice {
            start: start.as_ref().map(|e| expr(e, cx)).transpose()?,
            end: end.as_ref().map(|e| expr(e, cx)).transpose()?,
            span: *span,
        },
    })
}

/// A call, with a static function argument resolved.
fn call(c: &Call, span: Span, cx: &Cx) -> R<Expr> {
    let mut func = c.func.clone();
    match cx.statics.get(&c.func.name) {
        Some(Static::Func(f)) => func.name = f.clone(),
        Some(Static::Value(v)) if is_none(v) => {
            // `activation(y)` with `activation = None`: y, as TF's layers do.
            return match c.args.as_slice() {
                [a] if a.name.is_none() => expr(&a.value, cx),
                _ => Err(Diagnostic::new(
                    Code::ArgumentType,
                    c.span,
                    format!(
                        "`{}` is None: only a call with one argument passes it through",
                        c.func.name
                    ),
                )
                .with_label("None called")),
            };
        }
        Some(Static::Value(v)) => {
            return Err(Diagnostic::new(
                Code::ArgumentType,
                c.func.span,
                format!(
                    "`{}` is {}, not a function",
                    c.func.name,
                    specc_grammar::print::expr(v)
                ),
            )
            .with_label("called here"))
        }
        None => {}
    }
    let args = c
        .args
        .iter()
        .map(|a| {
            Ok(specc_grammar::ast::Arg {
                name: a.name.clone(),
                value: expr(&a.value, cx)?,
                span: a.span,
            })
        })
        .collect::<R<Vec<_>>>()?;
    let c = Call {
        func,
        args,
        span: c.span,
    };
    if c.func.name == "normalize_tuple" {
        return normalize_tuple(&c, span);
    }
    Ok(Expr::new(ExprKind::Call(c), span))
}

/// The functions of statics, folded here: `shape(x)[i]` and
/// `normalize_tuple(v, n)` (Keras's: `v` as a list of `n`, from a number or
/// a list of `n`, e.g. a `kernel_size` of 3 or [3, 5]).
pub(crate) const STATIC_FUNCTIONS: [&str; 2] = ["shape", "normalize_tuple"];

/// `[a, b, c][i]` with a static `i`: the item.
fn list_item(x: &Expr, items: &[IndexItem]) -> R<Option<ExprKind>> {
    let (ExprKind::List(list), [IndexItem::Index(i)]) = (&x.kind, items) else {
        return Ok(None);
    };
    let ExprKind::Number {
        value,
        is_int: true,
    } = i.kind
    else {
        return Ok(None);
    };
    let n = list.len() as f64;
    let at = if value < 0.0 { value + n } else { value };
    if at < 0.0 || at >= n {
        return Err(Diagnostic::new(
            Code::BadIndex,
            i.span,
            format!("index {value} of a list of {}", list.len()),
        )
        .with_label("out of range"));
    }
    Ok(Some(list[at as usize].kind.clone()))
}

/// `normalize_tuple(v, n)`, its arguments specialized.
fn normalize_tuple(c: &Call, span: Span) -> R<Expr> {
    let wrong = || {
        Diagnostic::new(
            Code::ArgumentType,
            c.span,
            "normalize_tuple(value, n) takes a number or a list of n, and a count n",
        )
        .with_label("normalize_tuple(3, 2) is [3, 3]")
    };
    let [v, n] = c.args.as_slice() else {
        return Err(wrong());
    };
    let count = super::super::args::eval_int(&n.value)?;
    let items = match &v.value.kind {
        ExprKind::List(items) if items.len() as i64 == count => items.clone(),
        ExprKind::List(items) => {
            return Err(Diagnostic::new(
                Code::ArgumentType,
                v.value.span,
                format!(
                    "a list of {} where {count} values are expected",
                    items.len()
                ),
            )
            .with_label(format!("expected {count} values")))
        }
        ExprKind::Number { .. } if (1..=8).contains(&count) => {
            vec![v.value.clone(); count as usize]
        }
        _ => return Err(wrong()),
    };
    Ok(Expr::new(ExprKind::List(items), span))
}

pub(crate) fn is_none(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Ident(n) if n == "None")
}

/// `shape(x)[i]` of a tensor `x` whose dimension `i` is fixed.
fn static_dim(x: &Expr, items: &[IndexItem], cx: &Cx) -> R<Option<ExprKind>> {
    let ExprKind::Call(c) = &x.kind else {
        return Ok(None);
    };
    if c.func.name != "shape" || cx.statics.contains_key("shape") {
        return Ok(None);
    }
    let [IndexItem::Index(i)] = items else {
        return Err(Diagnostic::new(
            Code::BadIndex,
            x.span,
            "`shape(x)` is indexed by one dimension: shape(x)[-1]",
        )
        .with_label("one index"));
    };
    let target = match c.args.as_slice() {
        [a] if a.name.is_none() => &a.value,
        _ => {
            return Err(Diagnostic::new(
                Code::WrongArity,
                c.span,
                "`shape` takes one tensor: shape(x)[-1]",
            )
            .with_label("one argument"))
        }
    };
    let ExprKind::Ident(name) = &target.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            target.span,
            "`shape` takes a name (bind the expression first)",
        )
        .with_label("not a name"));
    };
    let node = cx.env.entries.get(name).and_then(|e| e.value);
    let Some(node) = node else {
        return Err(Diagnostic::new(
            Code::UnknownName,
            target.span,
            format!("unknown tensor `{name}`"),
        )
        .with_label("not a tensor of this block"));
    };
    let shape = cx.graph.shape(node);
    let i = super::super::args::eval_int(&expr(i, cx)?)?;
    let rank = shape.rank() as i64;
    let axis = if i < 0 { i + rank } else { i };
    if axis < 0 || axis >= rank {
        return Err(Diagnostic::new(
            Code::BadIndex,
            x.span,
            format!("dimension {i} of `{name}`, which is {shape}"),
        )
        .with_label("out of range"));
    }
    match shape.0[axis as usize] {
        Dim::Fixed(n) => Ok(Some(ExprKind::Number {
            value: f64::from(n),
            is_int: true,
        })),
        _ => Err(Diagnostic::new(
            Code::BadShape,
            x.span,
            format!("dimension {i} of `{name}` ({shape}) is the batch size, not a static size"),
        )
        .with_label("the batch dimension B")),
    }
}

/// A chain whose operands are all static integers (with `+ - * // %`), a
/// comparison of two numbers, or `and` / `or` of static booleans (a static
/// `if`'s condition), folded; any other chain as it is.
fn fold(first: Expr, rest: Vec<Operation>, span: Span) -> R<ExprKind> {
    let boolean = |e: &Expr| match e.kind {
        ExprKind::Bool(v) => Some(v),
        _ => None,
    };
    if rest.iter().all(|o| matches!(o.op, BinOp::And | BinOp::Or)) {
        if let Some(mut acc) = boolean(&first) {
            let mut all = true;
            for o in &rest {
                match boolean(&o.rhs) {
                    Some(v) if o.op == BinOp::And => acc &= v,
                    Some(v) => acc |= v,
                    None => all = false,
                }
            }
            if all {
                return Ok(ExprKind::Bool(acc));
            }
        }
    }
    let int = |e: &Expr| match e.kind {
        ExprKind::Number {
            value,
            is_int: true,
        } => Some(value as i64),
        _ => None,
    };
    let number = |e: &Expr| match e.kind {
        ExprKind::Number { value, .. } => Some(value),
        _ => None,
    };
    if let [o] = rest.as_slice() {
        // `x == None`, `x != None` (Python's `is None`): whether an
        // optional argument was given (`if attention_mask != None`).
        if matches!(o.op, BinOp::Eq | BinOp::Ne) && (is_none(&first) || is_none(&o.rhs)) {
            let same = is_none(&first) && is_none(&o.rhs);
            return Ok(ExprKind::Bool(same == (o.op == BinOp::Eq)));
        }
        if let (Some(a), Some(b)) = (number(&first), number(&o.rhs)) {
            let cmp = match o.op {
                BinOp::Eq => Some(a == b),
                BinOp::Ne => Some(a != b),
                BinOp::Lt => Some(a < b),
                BinOp::Le => Some(a <= b),
                BinOp::Gt => Some(a > b),
                BinOp::Ge => Some(a >= b),
                _ => None,
            };
            if let Some(c) = cmp {
                return Ok(ExprKind::Bool(c));
            }
        }
    }
    let arithmetic = rest.iter().all(|o| {
        matches!(
            o.op,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::FloorDiv | BinOp::Mod
        ) && int(&o.rhs).is_some()
    });
    let Some(mut acc) = int(&first).filter(|_| arithmetic) else {
        return Ok(ExprKind::Binary(Box::new(first), rest));
    };
    for o in &rest {
        let b = int(&o.rhs).unwrap_or(0);
        let zero = || {
            Diagnostic::new(
                Code::NonFiniteConstant,
                o.rhs.span,
                "division of static sizes by zero",
            )
            .with_label("zero")
        };
        let r = match o.op {
            BinOp::Add => acc.checked_add(b),
            BinOp::Sub => acc.checked_sub(b),
            BinOp::Mul => acc.checked_mul(b),
            BinOp::FloorDiv if b == 0 => return Err(zero()),
            BinOp::Mod if b == 0 => return Err(zero()),
            BinOp::FloorDiv => Some(floor_div(acc, b)),
            _ => Some(acc - b * floor_div(acc, b)),
        };
        acc = r
            .filter(|v| v.abs() <= 9_000_000_000_000_000)
            .ok_or_else(|| {
                Diagnostic::new(Code::ArgumentOutOfRange, span, "integer is too large")
                    .with_label("overflows")
            })?;
    }
    Ok(ExprKind::Number {
        value: acc as f64,
        is_int: true,
    })
}

/// Python's `a // b`: the quotient rounded toward negative infinity.
fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}
