//! The shape builtins over existing IR ops: `expand_dims`, `squeeze`,
//! `stack`, `tile` (reshapes and concatenations), `sequence_mask` (an iota
//! compared with the lengths), and `split` / `unstack`, which return tuples
//! (slices), with TF's argument names.
//!
//! Invariants: the batch dimension `B` is never squeezed, tiled or cut, and
//! keeps its place in the element order (a new axis may go before it, as
//! `stack`'s default axis 0 of `[B, D]` tensors makes a time-major
//! `[N, B, D]`); every result is a view or copy of its operands, so the
//! gradients are those of reshape and concat.

use specc_grammar::ast::{Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};

use crate::ir::{Dim, NodeId, Shape};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{Lowerer, R};

/// An axis in `[-rank, rank)` of a rank-`rank` result (`expand_dims`' and
/// `stack`'s new axis).
fn new_axis(e: &Expr, rank: usize) -> R<usize> {
    let a = args::eval_int(e)?;
    let r = rank as i64;
    let axis = if a < 0 { a + r } else { a };
    if axis < 0 || axis >= r {
        return Err(Diagnostic::new(
            Code::BadAxis,
            e.span,
            format!("axis {a} is out of range for a result of rank {rank}"),
        )
        .with_label(format!("axis {a}")));
    }
    Ok(axis as usize)
}

/// `tf.expand_dims(input, axis)`.
pub(super) fn lower_expand_dims(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axis = new_axis(b.req(1), s.rank() + 1)?;
    let mut dims = s.0.clone();
    dims.insert(axis, Dim::Fixed(1));
    Ok(lw.g.reshape(x, &Shape(dims)))
}

/// `tf.squeeze(input, axis = None)`: the size-1 axes (all, or those listed).
pub(super) fn lower_squeeze(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axes: Vec<usize> = match b.get(1) {
        Some(e) if !args::is_none(e) => {
            let list = match &e.kind {
                ExprKind::List(_) => args::eval_int_list(e)?,
                _ => vec![args::eval_int(e)?],
            };
            let mut out = Vec::new();
            for a in list {
                let ax = crate::ir::shape::axis(a, s.rank()).map_err(|m| {
                    Diagnostic::new(Code::BadAxis, e.span, m).with_label(format!("axis {a}"))
                })?;
                if s.0[ax] != Dim::Fixed(1) {
                    return Err(Diagnostic::new(
                        Code::BadAxis,
                        e.span,
                        format!("axis {a} of {s} has size {}, not 1", s.0[ax]),
                    )
                    .with_label("cannot squeeze"));
                }
                out.push(ax);
            }
            out
        }
        _ => (0..s.rank()).filter(|&a| s.0[a] == Dim::Fixed(1)).collect(),
    };
    let dims: Vec<Dim> = (0..s.rank())
        .filter(|a| !axes.contains(a))
        .map(|a| s.0[a])
        .collect();
    Ok(lw.g.reshape(x, &Shape(dims)))
}

/// The tensors of a list argument (`stack`'s values), float32, all of one shape.
fn same_shape_list(lw: &mut Lowerer, e: &Expr, what: &str, span: Span) -> R<Vec<NodeId>> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!(
                "expected a list of tensors like [a, b], found {}",
                args::describe(e)
            ),
        )
        .with_label("expected a list"));
    };
    if items.is_empty() {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            e.span,
            format!("{what} of an empty list"),
        )
        .with_label("no tensors"));
    }
    let mut parts = Vec::new();
    for it in items {
        let p = lw.float(it)?;
        if let Some(&first) = parts.first() {
            if lw.g.shape(p) != lw.g.shape(first) {
                return Err(Diagnostic::new(
                    Code::ShapeMismatch,
                    span,
                    format!(
                        "{what} needs tensors of one shape: {} and {}",
                        lw.g.shape(first),
                        lw.g.shape(p)
                    ),
                )
                .with_label("different shapes")
                .with_secondary(it.span, format!("this is {}", lw.g.shape(p))));
            }
        }
        parts.push(p);
    }
    Ok(parts)
}

/// `tf.stack(values, axis = 0)`: a new axis of size `len(values)`.
pub(super) fn lower_stack(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let parts = same_shape_list(lw, b.req(0), "stack", c.span)?;
    let s = lw.g.shape(parts[0]).clone();
    let axis = match b.get(1) {
        Some(e) => new_axis(e, s.rank() + 1)?,
        None => 0,
    };
    let mut dims = s.0.clone();
    dims.insert(axis, Dim::Fixed(1));
    let one = Shape(dims);
    let expanded: Vec<NodeId> = parts.iter().map(|&p| lw.g.reshape(p, &one)).collect();
    Ok(lw.g.concat(&expanded, axis))
}

/// `tf.tile(input, multiples)`: copies along each axis (the batch axis's
/// multiple is 1).
pub(super) fn lower_tile(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let me = b.req(1);
    let multiples = args::eval_int_list(me)?;
    if multiples.len() != s.rank() {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            me.span,
            format!(
                "multiples has {} entries for a tensor of rank {} ({s})",
                multiples.len(),
                s.rank()
            ),
        )
        .with_label("one multiple per axis"));
    }
    let mut out = x;
    for (axis, &m) in multiples.iter().enumerate() {
        if !(1..=1 << 20).contains(&m) {
            return Err(Diagnostic::new(
                Code::ArgumentOutOfRange,
                me.span,
                format!("multiple {m} of axis {axis} must be from 1 to 1048576"),
            )
            .with_label("bad multiple"));
        }
        if m > 1 && s.0[axis] == Dim::Batch {
            return Err(Diagnostic::new(
                Code::BadAxis,
                me.span,
                "the batch dimension B cannot be tiled",
            )
            .with_label(format!("multiple {m} of axis {axis}")));
        }
        if m > 1 {
            let copies = vec![out; m as usize];
            out = lw.g.concat(&copies, axis);
        }
    }
    Ok(out)
}

/// `tf.sequence_mask(lengths, maxlen)`: `[.., maxlen]`, 1.0 where the
/// position is below the length (TF's bool mask, as a float32 factor).
pub(super) fn lower_sequence_mask(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let lengths = lw.lower(b.req(0))?;
    let lengths = lw.g.cast(lengths, crate::ir::DType::F32);
    let me = b.req(1);
    let maxlen = args::eval_int(me)?;
    if !(1..=1 << 24).contains(&maxlen) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            me.span,
            format!("maxlen must be from 1 to 16777216, got {maxlen}"),
        )
        .with_label("bad maxlen"));
    }
    Ok(lw.g.sequence_mask(lengths, maxlen as u32))
}

/// The builtins that return tuples, bound by a tuple binding only.
pub(crate) const TUPLE_BUILTINS: [&str; 5] = [
    "moments",
    "split",
    "unstack",
    "dynamic_rnn",
    "bidirectional_dynamic_rnn",
];

/// The builtins that return tuples (`a, b = split(x, 2, axis = 1)`): their
/// values, or `None` when `c` is not one of them (`moments` is the tuple
/// binding's own); `split(value, num_or_size_splits, axis = 0)` cuts an axis
/// into equal parts (a count) or parts of the listed sizes;
/// `unstack(value, num = None, axis = 0)` takes every index of an axis,
/// dropping it. The batch axis is never cut.
pub(crate) fn tuple_builtin(lw: &mut Lowerer, c: &Call) -> Option<R<Vec<NodeId>>> {
    let params: &[crate::sema::args::Param] = match c.func.name.as_str() {
        "split" => &[
            args::req("value"),
            args::req("num_or_size_splits"),
            args::opt("axis"),
        ],
        "unstack" => &[args::req("value"), args::opt("num"), args::opt("axis")],
        _ => return None,
    };
    Some(cut(lw, c, params))
}

/// The parts of `split` or `unstack` (bound by [`tuple_builtin`]).
fn cut(lw: &mut Lowerer, c: &Call, params: &[crate::sema::args::Param]) -> R<Vec<NodeId>> {
    let b = args::bind(&c.func.name, c, params)?;
    let x = lw.lower(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axis_expr = b.get(2);
    let axis = match axis_expr {
        Some(e) => lw.axis(e, s.rank())?,
        None => 0,
    };
    let at = axis_expr.map_or(c.span, |e| e.span);
    let Dim::Fixed(size) = s.0[axis] else {
        return Err(Diagnostic::new(
            Code::BadAxis,
            at,
            format!("`{}` cannot cut the batch dimension B of {s}", c.func.name),
        )
        .with_label(format!("axis {axis}"))
        .with_help("pass an axis of fixed size, e.g. axis = 1"));
    };
    let sizes: Vec<u32> = if c.func.name == "unstack" {
        if let Some(e) = b.get(1).filter(|e| !args::is_none(e)) {
            let n = args::eval_int(e)?;
            if n != i64::from(size) {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("num is {n}, but axis {axis} of {s} has {size}"),
                )
                .with_label("another count"));
            }
        }
        vec![1; size as usize]
    } else {
        let e = b.req(1);
        match &e.kind {
            ExprKind::List(_) => {
                let list = args::eval_int_list(e)?;
                if list.iter().any(|&v| v < 1) || list.iter().sum::<i64>() != i64::from(size) {
                    return Err(Diagnostic::new(
                        Code::MalformedArgument,
                        e.span,
                        format!("the sizes {list:?} do not add up to {size}, axis {axis} of {s}"),
                    )
                    .with_label("sizes of the parts"));
                }
                list.into_iter().map(|v| v as u32).collect()
            }
            _ => {
                let n = args::eval_int(e)?;
                if n < 1 || i64::from(size) % n != 0 {
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        e.span,
                        format!("{n} parts do not divide axis {axis} of {s} ({size})"),
                    )
                    .with_label("not a divisor"));
                }
                vec![size / n as u32; n as usize]
            }
        }
    };
    let mut out = Vec::with_capacity(sizes.len());
    let mut start = 0u32;
    for len in sizes {
        let mut begin = vec![0u32; s.rank()];
        begin[axis] = start;
        let mut dims = s.0.clone();
        dims[axis] = Dim::Fixed(len);
        let part = lw.g.slice(x, &begin, &Shape(dims.clone()));
        out.push(if c.func.name == "unstack" {
            dims.remove(axis);
            lw.g.reshape(part, &Shape(dims))
        } else {
            part
        });
        start += len;
    }
    Ok(out)
}
