//! `sep` and `on_overflow` of the base categorical columns (and of the
//! sequence categorical columns built on them): how a CSV cell splits into
//! values (`tf.strings.split`) and what a row with more than `max_values`
//! values does.
//!
//! Spelling: `sep = whitespace` (a name) is TF's `tf.strings.split(s)`
//! (`sep=None`: runs of whitespace, no empty pieces); `sep = "|"` (a
//! non-empty string) splits on exactly that string and keeps empty pieces;
//! `sep` omitted keeps a cell one value. `on_overflow = "error"` (the
//! default) makes a row with more than `max_values` values an error naming
//! the file, row and column; `"truncate"` keeps its first `max_values`.
//!
//! Invariants: a [`KeyValues`] built here has a non-empty delimiter and a
//! truncation equal to the column's `max_values`; `sep` and `on_overflow`
//! on any other column are caret errors saying which columns take them.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::feature_column::{KeyValues, Sep};

use super::bad;
use crate::sema::args;
use crate::sema::expr::R;

/// The arguments this module reads.
pub(super) const ARGUMENTS: [&str; 2] = ["sep", "on_overflow"];

/// The reading rule of a base column from its `sep` and `on_overflow`
/// arguments and its `max_values`.
pub(super) fn key_values(
    sep: Option<&Expr>,
    on_overflow: Option<&Expr>,
    max_values: usize,
) -> R<KeyValues> {
    let sep = sep.map(parse_sep).transpose()?;
    let truncate = match on_overflow {
        None => false,
        Some(e) => parse_on_overflow(e)?,
    };
    Ok(KeyValues {
        sep,
        truncate: truncate.then_some(max_values),
    })
}

fn parse_sep(e: &Expr) -> R<Sep> {
    match &e.kind {
        ExprKind::Ident(s) if s == "whitespace" => Ok(Sep::Whitespace),
        ExprKind::Str(s) if !s.is_empty() => Ok(Sep::Delimiter(s.as_bytes().to_vec())),
        ExprKind::Str(_) => Err(bad(Code::EmptyArgument, e.span, "`sep` is empty", "empty")
            .with_help(
                "write sep = whitespace to split on runs of whitespace (TF's sep=None), \
             or give the delimiter, e.g. sep = \"|\"",
            )),
        _ if args::is_none(e) => Err(bad(
            Code::UnknownChoice,
            e.span,
            "`sep = None` is ambiguous here",
            "ambiguous",
        )
        .with_help(
            "TF's sep=None (runs of whitespace) is written sep = whitespace; \
             omit sep to keep a cell one value",
        )),
        ExprKind::Ident(other) => {
            let mut d = bad(
                Code::UnknownChoice,
                e.span,
                format!("unknown sep `{other}`"),
                "not a sep",
            );
            if let Some(s) = args::suggest(other, ["whitespace"]) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            Err(d.with_help(
                "sep = whitespace (runs of whitespace) or a delimiter string, e.g. sep = \"|\"",
            ))
        }
        _ => Err(bad(
            Code::ArgumentType,
            e.span,
            format!(
                "expected `whitespace` or a delimiter string, found {}",
                args::describe(e)
            ),
            "not a sep",
        )),
    }
}

/// `true` for `"truncate"`, `false` for `"error"`.
fn parse_on_overflow(e: &Expr) -> R<bool> {
    let s = match &e.kind {
        ExprKind::Str(s) | ExprKind::Ident(s) => s.as_str(),
        _ => {
            return Err(bad(
                Code::ArgumentType,
                e.span,
                format!(
                    "expected \"error\" or \"truncate\", found {}",
                    args::describe(e)
                ),
                "not a choice",
            ))
        }
    };
    match s {
        "error" => Ok(false),
        "truncate" => Ok(true),
        other => {
            let mut d = bad(
                Code::UnknownChoice,
                e.span,
                format!("unknown on_overflow `{other}`"),
                "not a choice",
            );
            if let Some(s) = args::suggest(other, ["error", "truncate"]) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            Err(d.with_help(
                "on_overflow = \"error\" (the default: a row over max_values is an error) \
                 or \"truncate\" (its first max_values values are kept)",
            ))
        }
    }
}

/// The caret error for `sep` or `on_overflow` given to a column that does
/// not take them (`None` when `c` gives neither).
pub(super) fn refused(c: &Call) -> Option<Diagnostic> {
    let arg = c.args.iter().find(|a| {
        a.name
            .as_ref()
            .is_some_and(|n| ARGUMENTS.contains(&n.name.as_str()))
    })?;
    let name = arg.name.as_ref().map_or("sep", |n| n.name.as_str());
    let mut d = bad(
        Code::UnsupportedArgument,
        arg.span,
        format!("`{}` takes no `{name}`", c.func.name),
        "not taken here",
    )
    .with_help(
        "sep and on_overflow belong to the base categorical columns \
         (categorical_column_with_hash_bucket, _identity, _vocabulary_list, \
         _vocabulary_file, and their sequence_* forms)",
    );
    if c.func.name.contains("numeric_column") && name == "sep" {
        d = d.with_help(
            "a numeric column of shape k already reads k whitespace-separated numbers from a cell",
        );
    } else if c.func.name == "crossed_column" || c.func.name == "weighted_categorical_column" {
        d = d.with_help(format!(
            "give {name} to the categorical column the {} wraps",
            if c.func.name == "crossed_column" {
                "cross"
            } else {
                "weighted column"
            }
        ));
    }
    Some(d)
}
