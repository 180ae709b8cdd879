//! `numeric_column` and `bucketized_column`: a dense column of `shape`
//! float32 values per example, and its bucketization (a categorical column
//! of `shape` ids, one per value).
//!
//! Invariants: a numeric column has between 1 and 2^20 values, its
//! `default_value` exactly `shape` of them (one number is repeated); a
//! bucketized column's boundaries are finite, sorted and distinct, and its
//! source is a `numeric_column`.

use specc_grammar::ast::{Call, ExprKind};
use specc_grammar::Code;
use specc_runtime::feature_column::{CategoricalColumn, NumericColumn};

use super::{bad, column, key, Categorical, Column};
use crate::sema::args::{self, opt, req};
use crate::sema::expr::R;
use crate::sema::State;

pub(super) fn numeric_column(c: &Call) -> R<NumericColumn> {
    let b = args::bind(
        "numeric_column",
        c,
        &[
            req("key"),
            opt("shape"),
            opt("default_value"),
            opt("dtype"),
            opt("normalizer_fn"),
        ],
    )?;
    let key = key(b.req(0))?;
    let shape = match b.get(1) {
        None => 1,
        Some(e) => {
            let dims = args::eval_int_list(e)?;
            let mut n: u64 = 1;
            for &d in &dims {
                if d <= 0 {
                    return Err(bad(
                        Code::ArgumentOutOfRange,
                        e.span,
                        format!("shape dimensions must be positive, got {d}"),
                        "bad shape",
                    ));
                }
                n = n.saturating_mul(d as u64);
            }
            if n > 1 << 20 {
                return Err(bad(
                    Code::ArgumentOutOfRange,
                    e.span,
                    "a numeric column of more than 2^20 values",
                    "too large",
                ));
            }
            n as usize
        }
    };
    if let Some(e) = b.get(3) {
        match &e.kind {
            ExprKind::Ident(s) | ExprKind::Str(s) if s == "float32" || s == "tf.float32" => {}
            _ => {
                return Err(bad(
                    Code::UnsupportedArgument,
                    e.span,
                    "a numeric column is float32",
                    "expected float32",
                ))
            }
        }
    }
    let default_value = match b.get(2) {
        None => None,
        Some(e) => {
            let values: Vec<f64> = match &e.kind {
                ExprKind::List(items) => items.iter().map(args::eval_number).collect::<R<_>>()?,
                _ => vec![args::eval_number(e)?],
            };
            let values = if values.len() == 1 {
                vec![values[0]; shape]
            } else {
                values
            };
            if values.len() != shape {
                return Err(bad(
                    Code::ConflictingArguments,
                    e.span,
                    format!(
                        "default_value has {} values but the column's shape has {shape}",
                        values.len()
                    ),
                    "wrong number of values",
                ));
            }
            Some(values)
        }
    };
    let normalizer = b.get(4).map(crate::sema::inputs::norm_expr).transpose()?;
    Ok(NumericColumn {
        key,
        shape,
        default_value,
        normalizer,
    })
}

pub(super) fn bucketized_column(st: &mut State, c: &Call) -> R<Column> {
    let b = args::bind(
        "bucketized_column",
        c,
        &[req("source_column"), req("boundaries")],
    )?;
    let src = column(st, b.req(0))?;
    let Column::Numeric(source) = src.column else {
        return Err(bad(
            Code::ArgumentType,
            b.req(0).span,
            "bucketized_column needs a numeric_column as its source",
            "not a numeric column",
        ));
    };
    let be = b.req(1);
    let ExprKind::List(items) = &be.kind else {
        return Err(bad(
            Code::ArgumentType,
            be.span,
            format!(
                "boundaries must be a list of numbers, found {}",
                args::describe(be)
            ),
            "not a list",
        ));
    };
    let boundaries: Vec<f64> = items.iter().map(args::eval_number).collect::<R<_>>()?;
    if boundaries.is_empty() {
        return Err(bad(
            Code::EmptyArgument,
            be.span,
            "boundaries must not be empty",
            "empty",
        ));
    }
    if boundaries.iter().any(|v| !v.is_finite()) {
        return Err(bad(
            Code::ArgumentOutOfRange,
            be.span,
            "boundaries must be finite",
            "not finite",
        ));
    }
    for (i, w) in boundaries.windows(2).enumerate() {
        if w[0] >= w[1] {
            return Err(bad(
                Code::MalformedArgument,
                items[i + 1].span,
                format!(
                    "boundaries must be sorted and distinct, but {} follows {}",
                    w[1], w[0]
                ),
                "not above the previous boundary",
            ));
        }
    }
    let max_values = source.shape;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Bucketized { source, boundaries },
        max_values,
        sequence: false,
    }))
}
