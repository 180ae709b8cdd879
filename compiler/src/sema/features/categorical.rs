//! The base categorical columns: `categorical_column_with_hash_bucket`,
//! `categorical_column_with_identity`,
//! `categorical_column_with_vocabulary_list` and
//! `categorical_column_with_vocabulary_file` (also the bases of the
//! `sequence_categorical_column_with_*` columns), and
//! `weighted_categorical_column`. The base columns take `sep` and
//! `on_overflow` (module `split`).
//!
//! Invariants: a column's bucket count (with its OOV buckets) fits an int32
//! id; a vocabulary (listed or read from a file, relative to the spec) is
//! not empty and has no entry twice; `default_value` and `num_oov_buckets`
//! are not both given; an identity column's `default_value` is one of its
//! buckets; a weighted column wraps a non-sequence categorical column and
//! keeps its `max_values`.

use std::collections::HashMap;
use std::num::NonZeroU64;

use specc_grammar::ast::{Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::feature_column::{CategoricalColumn, KeyDType, Vocabulary};

use super::sequence::sequence_refused;
use super::split::key_values;
use super::{bad, bucket_count, categorical, key, key_dtype, max_values, Categorical, Column};
use crate::sema::args::{self, opt, req};
use crate::sema::expr::R;
use crate::sema::State;

pub(super) fn hash_bucket(c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("hash_bucket_size"),
            opt("dtype"),
            opt("max_values"),
            opt("sep"),
            opt("on_overflow"),
        ],
    )?;
    let key = key(b.req(0))?;
    let size = bucket_count(b.req(1), "hash_bucket_size")?;
    let max_values = max_values(b.get(3))?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::HashBucket {
            key,
            hash_bucket_size: nonzero(size),
            dtype: key_dtype(b.get(2))?,
            values: key_values(b.get(4), b.get(5), max_values)?,
        },
        max_values,
        sequence: false,
    }))
}

pub(super) fn nonzero(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap_or(NonZeroU64::MIN)
}

pub(super) fn identity(c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("num_buckets"),
            opt("default_value"),
            opt("max_values"),
            opt("sep"),
            opt("on_overflow"),
        ],
    )?;
    let key = key(b.req(0))?;
    let n = bucket_count(b.req(1), "num_buckets")?;
    let default_value = match b.get(2) {
        Some(e) if !args::is_none(e) => {
            let v = args::eval_int(e)?;
            if v < 0 || v as u64 >= n {
                return Err(bad(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("default_value {v} not in [0, {n})"),
                    "out of range",
                ));
            }
            Some(v)
        }
        _ => None,
    };
    let max_values = max_values(b.get(3))?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Identity {
            key,
            num_buckets: n,
            default_value,
            values: key_values(b.get(4), b.get(5), max_values)?,
        },
        max_values,
        sequence: false,
    }))
}

/// A vocabulary list's entries (strings or ints, as `dtype` says or as the
/// entries are), checked for duplicates.
fn vocabulary(e: &Expr, dtype: Option<&Expr>) -> R<Vocabulary> {
    let ExprKind::List(items) = &e.kind else {
        return Err(bad(
            Code::ArgumentType,
            e.span,
            format!(
                "vocabulary_list must be a list, found {}",
                args::describe(e)
            ),
            "not a list",
        ));
    };
    if items.is_empty() {
        return Err(bad(
            Code::EmptyArgument,
            e.span,
            "the vocabulary is empty",
            "empty",
        ));
    }
    let ints = match dtype {
        Some(_) => key_dtype(dtype)? == KeyDType::Int64,
        None => !matches!(items[0].kind, ExprKind::Str(_)),
    };
    if ints {
        let mut seen: HashMap<i64, Span> = HashMap::new();
        let mut out = Vec::new();
        for it in items {
            let v = args::eval_int(it)?;
            if let Some(prev) = seen.insert(v, it.span) {
                return Err(duplicate(it.span, prev, &v.to_string()));
            }
            out.push(v);
        }
        Ok(Vocabulary::Ints(out))
    } else {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut out = Vec::new();
        for it in items {
            let v = args::eval_string(it)?;
            if let Some(prev) = seen.insert(v, it.span) {
                return Err(duplicate(it.span, prev, &format!("\"{v}\"")));
            }
            out.push(v.as_bytes().to_vec());
        }
        Ok(Vocabulary::Strings(out))
    }
}

fn duplicate(span: Span, prev: Span, v: &str) -> Diagnostic {
    Diagnostic::new(
        Code::DuplicateValue,
        span,
        format!("the vocabulary has {v} twice"),
    )
    .with_label("duplicate")
    .with_secondary(prev, "first here")
    .with_help("a vocabulary's entries are distinct (TF refuses duplicates)")
}

/// `default_value` and `num_oov_buckets` of a vocabulary column.
fn oov(default: Option<&Expr>, oov: Option<&Expr>) -> R<(i64, u64)> {
    let d = default.map(args::eval_int).transpose()?;
    let n = oov
        .map(|e| args::eval_count(e, "num_oov_buckets"))
        .transpose()?
        .unwrap_or(0);
    if let (Some(dv), Some(e)) = (d, oov) {
        if n > 0 && dv != -1 {
            return Err(bad(
                Code::ConflictingArguments,
                e.span,
                "give either default_value or num_oov_buckets, not both",
                "both given",
            ));
        }
    }
    if n > i32::MAX as u64 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            oov.map_or(Span::default(), |e| e.span),
            "num_oov_buckets is too large",
            "too large",
        ));
    }
    Ok((d.unwrap_or(-1), n))
}

pub(super) fn vocabulary_list(c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("vocabulary_list"),
            opt("dtype"),
            opt("default_value"),
            opt("num_oov_buckets"),
            opt("max_values"),
            opt("sep"),
            opt("on_overflow"),
        ],
    )?;
    let key = key(b.req(0))?;
    let vocabulary = vocabulary(b.req(1), b.get(2))?;
    let (default_value, num_oov_buckets) = oov(b.get(3), b.get(4))?;
    check_buckets(c.span, vocabulary.len() as u64 + num_oov_buckets)?;
    let max_values = max_values(b.get(5))?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Vocabulary {
            key,
            vocabulary,
            vocabulary_file: None,
            num_oov_buckets,
            default_value,
            values: key_values(b.get(6), b.get(7), max_values)?,
        },
        max_values,
        sequence: false,
    }))
}

fn check_buckets(span: Span, n: u64) -> R<()> {
    if n > i32::MAX as u64 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            span,
            "more than 2^31 buckets",
            "too many buckets",
        ));
    }
    Ok(())
}

pub(super) fn vocabulary_file(st: &mut State, c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("vocabulary_file"),
            opt("vocabulary_size"),
            opt("num_oov_buckets"),
            opt("default_value"),
            opt("dtype"),
            opt("max_values"),
            opt("sep"),
            opt("on_overflow"),
        ],
    )?;
    let key = key(b.req(0))?;
    let fe = b.req(1);
    let path = args::eval_string(fe)?.to_string();
    let full = match &st.spec_dir {
        Some(d) => d.join(&path),
        None => std::path::PathBuf::from(&path),
    };
    let text = std::fs::read(&full).map_err(|e| {
        bad(
            Code::UnreadableFile,
            fe.span,
            format!("cannot read the vocabulary file {}: {e}", full.display()),
            "unreadable",
        )
    })?;
    // TF's TextFileIndex.WHOLE_LINE: one entry per line, `\n` separated.
    let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let size = match b.get(2) {
        Some(e) => {
            let n = args::eval_count(e, "vocabulary_size")?;
            if n == 0 || n as usize > lines.len() {
                return Err(bad(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!(
                        "vocabulary_size {n} must be in [1, {}], the lines of {}",
                        lines.len(),
                        full.display()
                    ),
                    "out of range",
                ));
            }
            n as usize
        }
        None => lines.len(),
    };
    if size == 0 {
        return Err(bad(
            Code::EmptyArgument,
            fe.span,
            format!("the vocabulary file {} is empty", full.display()),
            "empty",
        ));
    }
    let ints = key_dtype(b.get(5))? == KeyDType::Int64;
    let vocabulary = if ints {
        let mut out = Vec::new();
        for (i, l) in lines[..size].iter().enumerate() {
            let s = String::from_utf8_lossy(l);
            let v: i64 = s.trim_end_matches('\r').parse().map_err(|_| {
                bad(
                    Code::MalformedArgument,
                    fe.span,
                    format!("{} line {}: `{s}` is not an int64", full.display(), i + 1),
                    "bad vocabulary file",
                )
            })?;
            out.push(v);
        }
        Vocabulary::Ints(out)
    } else {
        Vocabulary::Strings(lines[..size].iter().map(|l| l.to_vec()).collect())
    };
    // Duplicates (TF's table initializer refuses them).
    let mut seen = std::collections::HashSet::new();
    let dup = match &vocabulary {
        Vocabulary::Strings(v) => v
            .iter()
            .position(|x| !seen.insert(x.clone()))
            .map(|i| (i, String::from_utf8_lossy(&v[i]).into_owned())),
        Vocabulary::Ints(v) => v
            .iter()
            .position(|x| !seen.insert(x.to_le_bytes().to_vec()))
            .map(|i| (i, v[i].to_string())),
    };
    if let Some((i, v)) = dup {
        return Err(bad(
            Code::DuplicateValue,
            fe.span,
            format!(
                "{} line {}: `{v}` is in the vocabulary twice",
                full.display(),
                i + 1
            ),
            "duplicate vocabulary entry",
        ));
    }
    let (default_value, num_oov_buckets) = oov(b.get(4), b.get(3))?;
    check_buckets(c.span, vocabulary.len() as u64 + num_oov_buckets)?;
    let max_values = max_values(b.get(6))?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Vocabulary {
            key,
            vocabulary,
            vocabulary_file: Some(path),
            num_oov_buckets,
            default_value,
            values: key_values(b.get(7), b.get(8), max_values)?,
        },
        max_values,
        sequence: false,
    }))
}

pub(super) fn weighted(st: &mut State, c: &Call) -> R<Column> {
    let b = args::bind(
        "weighted_categorical_column",
        c,
        &[
            req("categorical_column"),
            req("weight_feature_key"),
            opt("dtype"),
        ],
    )?;
    let cat = categorical(st, b.req(0))?;
    if cat.sequence {
        return Err(sequence_refused(
            b.req(0).span,
            &cat.column.name(),
            "weighted_categorical_column",
        ));
    }
    let weight_feature_key = key(b.req(1))?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Weighted {
            categorical: Box::new(cat.column),
            weight_feature_key,
        },
        max_values: cat.max_values,
        sequence: false,
    }))
}
