//! `tf.gather(params, indices, axis = 0, batch_dims = 0)` with any axis,
//! and `tf.nn.embedding_lookup(params, ids)` (its axis 0).
//!
//! Owns: how a gather lowers, in one of three exact forms:
//! - axis 0 of a table with a fixed shape (`embedding_lookup`, and `gather`
//!   without `batch_dims`): `Op::Gather`, whose gradient is an
//!   `IndexedSlices` the optimizers apply sparsely;
//! - another axis of a table with a fixed shape: that axis moved first by a
//!   transpose, `Op::Gather`, and the result's axes moved to TF's order (the
//!   gradient is the gather's scatter-add transposed back, dense);
//! - `params` with the batch dimension `B`, or `batch_dims` ≥ 1 (TF's
//!   per-example gather, e.g. `[B, T, D]` params by `[B, K]` indices): per
//!   result element, `sum_t where(index == t, params[.., t, ..], 0)` over the
//!   gathered axis, which is the one element selected (the others add +0,
//!   whatever they hold), and whose gradient is the dense scatter-add (the
//!   select routes each cotangent to its position). It costs the axis's
//!   size per result element and fuses into one reduction loop: meant for
//!   the short axes of sequences, not for vocabularies (those are tables).
//!
//! Invariants: the result's shape is TF's, `params.shape[:axis] +
//! indices.shape[batch_dims:] + params.shape[axis + 1:]`, with at most one
//! `B`; the gathered axis has a fixed size; the first `batch_dims` axes of
//! `params` and `indices` are equal; ids are int32 (a literal of whole
//! numbers is taken as ids); constant ids outside the axis are a caret
//! error, an input's ids are recorded as a [`ClassUse`] so the runtime
//! range-checks them (axis 0 of a table keeps `embedding_lookup`'s rule: a
//! negative id, a feature column's padding, gathers zeros).

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};

use crate::ir::{BinaryOp, DType, Dim, NodeId, Op, Shape};
use crate::sema::args::{self, Bound};
use crate::sema::expr::{ClassUse, Lowerer, R};

/// `tf.nn.embedding_lookup(params, ids)`: rows of a table with a fixed
/// shape, by int32 ids of any shape.
pub(super) fn lower_embedding_lookup(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ep, ei) = (b.req(0), b.req(1));
    let params = lw.float(ep)?;
    let ps = lw.g.shape(params).clone();
    if ps.rank() == 0 || ps.has_batch() {
        return Err(Diagnostic::new(
            Code::BadShape,
            ep.span,
            format!(
                "`{}` needs a table with a fixed shape [rows, ..], got {ps}",
                c.func.name
            ),
        )
        .with_label(format!("this is {ps}"))
        .with_help("look rows up in a parameter, e.g. emb: [1000, 16]"));
    }
    let ids = lookup_ids(lw, ei, c)?;
    let rows = ps.0[0].fixed().unwrap_or(1);
    record_input_ids(lw, ids, rows, c);
    Ok(lw.g.gather(params, ids))
}

/// `tf.gather(params, indices, axis = 0, batch_dims = 0)`.
pub(super) fn lower_gather(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ep, ei) = (b.req(0), b.req(1));
    let params = lw.float(ep)?;
    let ps = lw.g.shape(params).clone();
    let given = |i: usize| b.get(i).filter(|e| !args::is_none(e));
    if ps.rank() == 0 {
        return Err(Diagnostic::new(
            Code::BadShape,
            ep.span,
            "`gather` needs params with at least one axis, but this is a scalar",
        )
        .with_label("scalar"));
    }
    let ids = lookup_ids(lw, ei, c)?;
    let is = lw.g.shape(ids).clone();
    let batch_dims = match given(3) {
        None => 0,
        Some(e) => {
            let v = args::eval_int(e)?;
            let n = if v < 0 { v + is.rank() as i64 } else { v };
            if n < 0 || n as usize > is.rank() || n as usize >= ps.rank() {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!(
                        "batch_dims {v} is out of range for indices {is} and params {ps}"
                    ),
                )
                .with_label(format!("batch_dims {v}"))
                .with_help("batch_dims counts the leading axes params and indices share (at most the indices' rank, below the params')"));
            }
            n as usize
        }
    };
    let axis = match given(2) {
        None => batch_dims,
        Some(e) => {
            let a = lw.axis(e, ps.rank())?;
            if a < batch_dims {
                return Err(Diagnostic::new(
                    Code::BadAxis,
                    e.span,
                    format!("axis {a} is one of the {batch_dims} batch_dims axes"),
                )
                .with_label(format!("axis {a}"))
                .with_help(
                    "the gathered axis comes after the batch_dims axes (TF: batch_dims <= axis)",
                ));
            }
            a
        }
    };
    let at = given(2).map_or(c.span, |e| e.span);
    let Dim::Fixed(size) = ps.0[axis] else {
        return Err(Diagnostic::new(
            Code::BadAxis,
            at,
            format!("`gather` cannot gather along the batch dimension B of {ps}"),
        )
        .with_label(format!("axis {axis}"))
        .with_help("gather along an axis of fixed size"));
    };
    if ps.0[..batch_dims] != is.0[..batch_dims] {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!(
                "with batch_dims = {batch_dims}, the leading axes of params {ps} and indices {is} differ"
            ),
        )
        .with_label("leading axes differ")
        .with_secondary(ep.span, format!("this is {ps}"))
        .with_secondary(ei.span, format!("this is {is}")));
    }
    let out = Shape(
        ps.0[..axis]
            .iter()
            .chain(&is.0[batch_dims..])
            .chain(&ps.0[axis + 1..])
            .copied()
            .collect(),
    );
    if out.0.iter().filter(|d| **d == Dim::Batch).count() > 1 {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!("gathering {is} indices from {ps} would make {out}, which has the batch dimension twice"),
        )
        .with_label("B twice")
        .with_secondary(ep.span, format!("this is {ps}"))
        .with_secondary(ei.span, format!("this is {is}"))
        .with_help("per-example indices of per-example params take batch_dims = 1"));
    }
    check_constant_ids(lw, ids, size, ei)?;
    record_input_ids(lw, ids, size, c);
    if batch_dims == 0 && !ps.has_batch() {
        return Ok(table_gather(lw, params, ids, axis));
    }
    Ok(select_gather(lw, params, ids, axis, batch_dims))
}

/// Int32 ids: an int32 tensor, or a literal of whole numbers (`[2, 0, 1]`).
fn lookup_ids(lw: &mut Lowerer, ei: &Expr, c: &Call) -> R<NodeId> {
    let ids = lw.lower(ei)?;
    let ids = match lw.g.op(ids) {
        // A literal list of whole numbers is a constant of ids.
        Op::Tensor(i) if lw.g.dtype(ids) == DType::F32 => {
            let k = lw.g.consts[*i as usize].clone();
            if k.values.iter().all(|x| x.fract() == 0.0 && *x >= 0.0) {
                lw.g.tensor(DType::I32, k.shape, k.values)
            } else {
                ids
            }
        }
        _ => ids,
    };
    if lw.g.dtype(ids) != DType::I32 {
        return Err(Diagnostic::new(
            Code::LabelKind,
            ei.span,
            format!("`{}` needs int32 ids, but this is float32", c.func.name),
        )
        .with_label("float32 values")
        .with_help(
            "declare the id columns as a feature `ids = integer(COLUMN, num_buckets = N)`",
        ));
    }
    Ok(ids)
}

/// An input's ids index `rows` rows: the runtime range-checks them.
fn record_input_ids(lw: &mut Lowerer, ids: NodeId, rows: u32, c: &Call) {
    if let Op::Input(i) = lw.g.op(ids) {
        lw.class_uses.push(ClassUse {
            input: *i,
            classes: rows,
            span: c.span,
            at_most: true,
        });
    }
}

/// Constant ids must name positions `0..size` of the gathered axis (TF's
/// CPU kernel fails on any other).
fn check_constant_ids(lw: &Lowerer, ids: NodeId, size: u32, ei: &Expr) -> R<()> {
    let Op::Tensor(i) = lw.g.op(ids) else {
        return Ok(());
    };
    let k = &lw.g.consts[*i as usize];
    match k.values.iter().find(|v| **v < 0.0 || **v >= size as f32) {
        None => Ok(()),
        Some(v) => Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            ei.span,
            format!("index {v} is out of range for an axis of size {size}"),
        )
        .with_label(format!("valid: 0 to {}", size - 1))),
    }
}

/// A fixed-shape table's `axis` gathered by `Op::Gather`: the axis moved
/// first, and the result's `ids` axes moved back to where it was.
fn table_gather(lw: &mut Lowerer, params: NodeId, ids: NodeId, axis: usize) -> NodeId {
    let rank = lw.g.shape(params).rank();
    let first: Vec<usize> = std::iter::once(axis)
        .chain((0..rank).filter(|&a| a != axis))
        .collect();
    let table = lw.g.transpose(params, &first);
    let rows = lw.g.gather(table, ids);
    // `rows` is ids ++ params[..axis] ++ params[axis + 1..].
    let (n, total) = (lw.g.shape(ids).rank(), lw.g.shape(rows).rank());
    let back: Vec<usize> = (n..n + axis).chain(0..n).chain(n + axis..total).collect();
    lw.g.transpose(rows, &back)
}

/// The select form: over the shape `lead ++ pre ++ idx ++ [T] ++ post`
/// (`lead` the batch_dims axes, `pre`/`post` params' axes around the
/// gathered one, `idx` the indices' own axes), params where the index
/// equals the position along `T`, else 0, summed over `T`.
pub(crate) fn select_gather(
    lw: &mut Lowerer,
    params: NodeId,
    ids: NodeId,
    axis: usize,
    batch_dims: usize,
) -> NodeId {
    let ps = lw.g.shape(params).clone();
    let is = lw.g.shape(ids).clone();
    let one = Dim::Fixed(1);
    let (lead, pre) = (&ps.0[..batch_dims], &ps.0[batch_dims..axis]);
    let (size, post) = (ps.0[axis], &ps.0[axis + 1..]);
    let idx = &is.0[batch_dims..];
    let ones = |n: usize| std::iter::repeat_n(one, n);
    // params as lead ++ pre ++ 1s ++ [T] ++ post.
    let p_dims: Vec<Dim> = lead
        .iter()
        .chain(pre)
        .copied()
        .chain(ones(idx.len()))
        .chain(std::iter::once(size))
        .chain(post.iter().copied())
        .collect();
    let p = lw.g.reshape(params, &Shape(p_dims));
    // ids as lead ++ 1s ++ idx ++ [1] ++ 1s.
    let i_dims: Vec<Dim> = lead
        .iter()
        .copied()
        .chain(ones(pre.len()))
        .chain(idx.iter().copied())
        .chain(ones(1 + post.len()))
        .collect();
    let ids = match lw.g.op(ids) {
        // Constant ids stay a constant (as float32 positions).
        Op::Tensor(i) => {
            let values = lw.g.consts[*i as usize].values.clone();
            lw.g.tensor(DType::F32, Shape(i_dims), values)
        }
        _ => {
            let ids = lw.g.cast(ids, DType::F32);
            lw.g.reshape(ids, &Shape(i_dims))
        }
    };
    // The positions along T, over the whole shape (an iota is no view to
    // broadcast).
    let t_axis = lead.len() + pre.len() + idx.len();
    let whole: Vec<Dim> = lead
        .iter()
        .chain(pre)
        .chain(idx)
        .copied()
        .chain(std::iter::once(size))
        .chain(post.iter().copied())
        .collect();
    let positions = lw.g.iota(t_axis, &Shape(whole));
    let hit = lw.g.binary(BinaryOp::Eq, ids, positions);
    let zero = lw.g.scalar(0.0);
    let picked = lw.g.select(hit, p, zero);
    lw.g.reduce_sum(picked, &[t_axis])
}
