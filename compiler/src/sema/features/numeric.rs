//! `numeric_column` and `bucketized_column`: a dense column of `shape`
//! float32 values per example, and its bucketization (a categorical column
//! of `shape` ids, one per value).
//!
//! A numeric column's key may be `decode_raw(key, out_type, little_endian,
//! fixed_length)` or `parse_tensor(key, out_type)`: its bytes hold the
//! values (`feature_column::BytesDecoder`).
//!
//! Invariants: a numeric column has between 1 and 2^20 values, its
//! `default_value` exactly `shape` of them (one number is repeated); a
//! `decode_raw` `fixed_length` is a multiple of the type's size giving
//! `shape` values; a
//! bucketized column's boundaries are finite, sorted and distinct, and its
//! source is a `numeric_column`.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::Code;
use specc_runtime::feature_column::{BytesDecoder, CategoricalColumn, NumericColumn};
use specc_runtime::io::tensor::TensorDType;

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
    let mut dims = vec![1];
    let shape = match b.get(1) {
        None => 1,
        Some(e) => {
            let dims_of = args::eval_int_list(e)?;
            let mut n: u64 = 1;
            for &d in &dims_of {
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
            dims = dims_of.iter().map(|&d| d as usize).collect();
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
    let (key, decode) = numeric_key(b.req(0), shape, dims)?;
    Ok(NumericColumn {
        key,
        shape,
        default_value,
        normalizer,
        decode,
    })
}

/// A numeric column's key: a feature key, or `decode_raw(key, out_type,
/// little_endian = true, fixed_length = N)` / `parse_tensor(key,
/// out_type)`, a key whose bytes hold the values (`dims`: the column's
/// shape, which `parse_tensor`'s bytes are written with).
fn numeric_key(e: &Expr, shape: usize, dims: Vec<usize>) -> R<(String, Option<BytesDecoder>)> {
    let ExprKind::Call(c) = &e.kind else {
        return Ok((key(e)?, None));
    };
    let name = c.func.name.as_str();
    let raw = match name {
        "decode_raw" => true,
        "parse_tensor" => false,
        _ => {
            return Err(bad(
                Code::ArgumentType,
                e.span,
                format!(
                    "expected a feature key, decode_raw(key, out_type) or \
                     parse_tensor(key, out_type), found a call of `{name}`"
                ),
                "not a feature key",
            ))
        }
    };
    let params: &[_] = if raw {
        &[
            req("key"),
            req("out_type"),
            opt("little_endian"),
            opt("fixed_length"),
        ]
    } else {
        &[req("key"), req("out_type")]
    };
    let b = args::bind(name, c, params)?;
    let key = key(b.req(0))?;
    let te = b.req(1);
    let out_type = match &te.kind {
        ExprKind::Ident(s) | ExprKind::Str(s) => TensorDType::from_tf_name(s),
        _ => None,
    }
    .filter(|t| !raw || t.decode_raw_takes())
    .ok_or_else(|| {
        bad(
            Code::UnknownChoice,
            te.span,
            format!("{} is not an out_type {name} takes", args::describe(te)),
            if raw {
                "expected float16, bfloat16, float32, float64, int8, uint8, int16, uint16, \
                 int32, int64 or bool"
            } else {
                "expected float16, bfloat16, float32, float64, int8, uint8, int16, uint16, \
                 int32, uint32, int64, uint64 or bool"
            },
        )
    })?;
    if !raw {
        return Ok((key, Some(BytesDecoder::ParseTensor { out_type, dims })));
    }
    let little_endian = b.get(2).map(args::eval_bool).transpose()?.unwrap_or(true);
    let fixed_length = match b.get(3) {
        None => None,
        Some(fe) => {
            let l = args::eval_count(fe, "fixed_length")? as usize;
            let size = out_type.size();
            if !l.is_multiple_of(size) {
                return Err(bad(
                    Code::ArgumentOutOfRange,
                    fe.span,
                    format!(
                        "fixed_length ({l}) must be a multiple of the size of out_type ({size})"
                    ),
                    "not a multiple",
                ));
            }
            if l / size != shape {
                return Err(bad(
                    Code::ConflictingArguments,
                    fe.span,
                    format!(
                        "fixed_length = {l} gives {} {} values, but the column's shape has {shape}",
                        l / size,
                        out_type.tf_name()
                    ),
                    "another number of values",
                ));
            }
            Some(l)
        }
    };
    Ok((
        key,
        Some(BytesDecoder::DecodeRaw {
            out_type,
            little_endian,
            fixed_length,
        }),
    ))
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
