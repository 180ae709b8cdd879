//! `crossed_column`: TF's hashed cross of raw keys and categorical columns.
//!
//! In the list of keys a string is a raw key crossed as a string,
//! `int64("k")` a raw key crossed as an int64 (`string("k")` as a string),
//! and an identifier a categorical column binding (crossed by its ids).
//! `string("k", sep = whitespace)` / `int64("k", sep = "|")` cross the
//! pieces of a CSV cell (TF's `crossed_column` over the SparseTensor of
//! `tf.strings.split`); such a cross gives its `max_values` explicitly.
//!
//! Invariants: a cross has at least 2 keys, none of them a weighted or a
//! sequence column; its `max_values` (default: the product of its
//! columns') is at most 65536.

use specc_grammar::ast::{Call, ExprKind};
use specc_grammar::Code;
use specc_runtime::feature_column::{CategoricalColumn, CrossKey, KeyDType};

use super::categorical::nonzero;
use super::sequence::sequence_refused;
use super::split::key_values;
use super::{bad, bucket_count, categorical, key, max_values, Categorical, Column};
use crate::sema::args::{self, opt, req};
use crate::sema::expr::R;
use crate::sema::State;

pub(super) fn crossed_column(st: &mut State, c: &Call) -> R<Column> {
    let b = args::bind(
        "crossed_column",
        c,
        &[
            req("keys"),
            req("hash_bucket_size"),
            opt("hash_key"),
            opt("max_values"),
        ],
    )?;
    let ke = b.req(0);
    let ExprKind::List(items) = &ke.kind else {
        return Err(bad(
            Code::ArgumentType,
            ke.span,
            format!("keys must be a list, found {}", args::describe(ke)),
            "not a list",
        )
        .with_help("e.g. crossed_column([\"sex\", pclass], hash_bucket_size = 64)"));
    };
    if items.len() < 2 {
        return Err(bad(
            Code::EmptyArgument,
            ke.span,
            "a cross needs at least 2 keys",
            "fewer than 2 keys",
        ));
    }
    let mut keys = Vec::new();
    let mut product: usize = 1;
    // The first raw key split by a `sep` (its count per row is unbounded).
    let mut split_key = None;
    for it in items {
        match &it.kind {
            ExprKind::Str(s) if !s.is_empty() => keys.push(CrossKey::Raw {
                key: s.clone(),
                dtype: KeyDType::String,
                sep: None,
            }),
            ExprKind::Call(k) if k.func.name == "int64" || k.func.name == "string" => {
                let kb = args::bind(&k.func.name, k, &[req("key"), opt("sep")])?;
                let sep = key_values(kb.get(1), None, 1)?.sep;
                if sep.is_some() && split_key.is_none() {
                    split_key = Some(it.span);
                }
                keys.push(CrossKey::Raw {
                    key: key(kb.req(0))?,
                    dtype: if k.func.name == "int64" {
                        KeyDType::Int64
                    } else {
                        KeyDType::String
                    },
                    sep,
                });
            }
            _ => {
                let cat = categorical(st, it)?;
                if cat.sequence {
                    return Err(sequence_refused(
                        it.span,
                        &cat.column.name(),
                        "crossed_column",
                    ));
                }
                if let CategoricalColumn::Weighted { .. } = cat.column {
                    return Err(bad(
                        Code::UnsupportedArgument,
                        it.span,
                        "a weighted column cannot be crossed (TF refuses it)",
                        "weighted",
                    ));
                }
                product = product.saturating_mul(cat.max_values);
                keys.push(CrossKey::Column(Box::new(cat.column)));
            }
        }
    }
    let size = bucket_count(b.req(1), "hash_bucket_size")?;
    let hash_key = b
        .get(2)
        .map(|e| args::eval_count(e, "hash_key"))
        .transpose()?;
    let max_values = match (b.get(3), split_key) {
        (Some(e), _) => max_values(Some(e))?,
        (None, None) => product,
        (None, Some(span)) => {
            return Err(bad(
                Code::MissingArgument,
                span,
                "a cross of a key split by `sep` needs `max_values`",
                "split key",
            )
            .with_help(
                "give the cross max_values = the most crosses one example has \
                 (the product of its keys' value counts)",
            ))
        }
    };
    if max_values > 1 << 16 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            c.span,
            format!("the cross gives up to {max_values} ids per example (more than 65536)"),
            "too many values",
        ));
    }
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Crossed {
            keys,
            hash_bucket_size: nonzero(size),
            hash_key,
        },
        max_values,
        sequence: false,
    }))
}
