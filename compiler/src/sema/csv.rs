//! A CSV source's options (`data csv(...)`, `eval_data csv(...)`): TF's
//! `make_csv_dataset` arguments checked into the runtime's
//! [`CsvReadOptions`].
//!
//! Owns: [`OPTIONS`] (their names, in the signature's order), [`options`]
//! (each one's form: `field_delim` and `comment` one character, `header`
//! and `use_quote_delim` booleans, `na_value` a string, `column_names` a
//! list of distinct names, `select_columns` a list of names or indices,
//! `column_defaults` a list of numbers, strings or dtypes, `filter` a
//! condition) and [`check_columns`], the checks against the model's inputs
//! once they are known: every column a spec reads is among the source's
//! columns when the spec names them (`unknown-column`), a default fits its
//! column's type and each `filter` comparison is typed (`column-type`).
//!
//! A column's type is the one the model's inputs read it as (the raw
//! keys' types of `runtime::data::text::parse_spec`: `float32`, `int64`,
//! `string`), else its default's (TF's: an integer literal `int32`, a
//! decimal `float32`, a string `string`), else for a `filter` comparison
//! its value's (`float64` for a number, `string`). A default that fits is
//! stored in the column's type (`0` for a float column is `0.0`).
//!
//! Invariants: what is known from the spec is checked here with a caret;
//! what depends on a file (a header's names, its width) is checked when the
//! file is opened (`runtime::data::csv_options`); a filter holds only
//! comparisons of a column with a literal, joined by `and` / `or`.

use specc_grammar::ast::{BinOp, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::data::csv_filter::{CmpOp, FilterValue, RowFilter};
use specc_runtime::data::csv_options::{ColumnRef, CsvReadOptions};
use specc_runtime::data::Source;
use specc_runtime::io::csv::{CsvType, RecordDefault};
use specc_runtime::io::example::DType;

use super::args::{self, Bound};
use super::expr::R;
use super::State;

/// The CSV options, in the order `csv(...)` binds them.
pub(crate) const OPTIONS: &[&str] = &[
    "na_value",
    "field_delim",
    "use_quote_delim",
    "header",
    "column_names",
    "select_columns",
    "column_defaults",
    "comment",
    "filter",
];

/// Where the options were written, for [`check_columns`].
#[derive(Clone, Debug, Default)]
pub(crate) struct CsvSpans {
    /// The columns the spec knows the source has (`column_names`, or the
    /// selected ones when they are known), and the option that says so.
    known: Option<(Vec<String>, Span)>,
    /// Each entry of `column_defaults`: its column when the spec knows it.
    defaults: Vec<(Option<String>, Span)>,
    /// Each comparison of `filter`, in order: the column's and the value's
    /// spans.
    comparisons: Vec<(Span, Span)>,
}

/// The CSV options of a bound `csv(...)` call, the first at `first`.
pub(crate) fn options(b: &Bound<'_>, first: usize) -> R<(CsvReadOptions, CsvSpans)> {
    let at = |name: &str| b.get(first + OPTIONS.iter().position(|o| *o == name).unwrap_or(0));
    let mut o = CsvReadOptions::default();
    let mut spans = CsvSpans::default();
    if let Some(e) = at("na_value") {
        o.na_value = Some(args::eval_string(e)?.to_string());
    }
    if let Some(e) = at("use_quote_delim") {
        o.use_quote_delim = args::eval_bool(e)?;
    }
    if let Some(e) = at("field_delim") {
        o.field_delim = one_char(e, "field_delim")?;
        if o.use_quote_delim && o.field_delim == b'"' {
            return Err(Diagnostic::new(
                Code::ConflictingArguments,
                e.span,
                "field_delim cannot be `\"` when quotes delimit fields",
            )
            .with_label("the quote character")
            .with_help("set use_quote_delim = false to read quotes as data"));
        }
    }
    if let Some(e) = at("comment") {
        let c = one_char(e, "comment")?;
        if c == o.field_delim || (o.use_quote_delim && c == b'"') {
            return Err(Diagnostic::new(
                Code::ConflictingArguments,
                e.span,
                "the comment character cannot be the delimiter or the quote",
            )
            .with_label("already a delimiter or quote"));
        }
        o.comment = Some(c);
    }
    if let Some(e) = at("header") {
        o.header = args::eval_bool(e)?;
    }
    if let Some(e) = at("column_names") {
        let names = name_list(e)?;
        spans.known = Some((names.clone(), e.span));
        o.column_names = Some(names);
    } else if !o.header {
        let e = at("header").map_or(b.call_span, |e| e.span);
        return Err(Diagnostic::new(
            Code::MissingArgument,
            e,
            "a file without a header needs `column_names`",
        )
        .with_label("no header to name the columns")
        .with_help("name every column, e.g. column_names = [\"age\", \"sex\", \"label\"]"));
    }
    if let Some(e) = at("select_columns") {
        let (sel, names) = select(e, o.column_names.as_deref())?;
        if let Some(names) = names {
            spans.known = Some((names, e.span));
        }
        o.select_columns = Some(sel);
    }
    if let Some(e) = at("column_defaults") {
        let (defaults, entries) = defaults(e, &o)?;
        o.column_defaults = Some(defaults);
        spans.defaults = entries;
    }
    if let Some(e) = at("filter") {
        let known = spans.known.as_ref().map(|(n, s)| (n.as_slice(), *s));
        o.filter = Some(filter(e, known, &mut spans.comparisons)?);
    }
    Ok((o, spans))
}

/// A string of one ASCII character other than a line break.
fn one_char(e: &Expr, what: &str) -> R<u8> {
    let s = args::eval_string(e)?;
    match s.as_bytes() {
        [c] if c.is_ascii() && !matches!(c, b'\n' | b'\r') => Ok(*c),
        _ => Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("{what} must be one character (not a line break), got {s:?}"),
        )
        .with_label("expected one character")),
    }
}

/// A list of distinct, non-empty names.
fn name_list(e: &Expr) -> R<Vec<String>> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            "column_names is a list of names",
        )
        .with_label("expected [\"a\", \"b\", ...]"));
    };
    if items.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, e.span, "column_names is empty")
                .with_label("no columns"),
        );
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let n = args::eval_string(item)?;
        if n.is_empty() {
            return Err(
                Diagnostic::new(Code::EmptyArgument, item.span, "an empty column name")
                    .with_label("expected a name"),
            );
        }
        if let Some(j) = names.iter().position(|m| m == n) {
            return Err(Diagnostic::new(
                Code::DuplicateValue,
                item.span,
                format!("column `{n}` is named twice"),
            )
            .with_label("second time")
            .with_secondary(items[j].span, "first time"));
        }
        names.push(n.to_string());
    }
    Ok(names)
}

/// `select_columns`: names or indices, distinct; checked against
/// `column_names` when given. Also the selected names when they are
/// known, in file order.
fn select(e: &Expr, names: Option<&[String]>) -> R<(Vec<ColumnRef>, Option<Vec<String>>)> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            "select_columns is a list of column names or indices",
        )
        .with_label("expected [\"a\", \"b\", ...] or [0, 2, ...]"));
    };
    if items.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, e.span, "select_columns is empty")
                .with_label("no columns"),
        );
    }
    let mut out = Vec::with_capacity(items.len());
    // Each entry's field when known, for duplicates and the known names.
    let mut fields: Vec<(Option<usize>, String, Span)> = Vec::new();
    for item in items {
        let (r, field, label) = match &item.kind {
            ExprKind::Str(n) => {
                let field = match names {
                    Some(names) => Some(known_column(n, names, item.span, "column_names")?),
                    None => None,
                };
                (ColumnRef::Name(n.clone()), field, n.clone())
            }
            _ => {
                let i = args::eval_int(item).map_err(|_| {
                    Diagnostic::new(
                        Code::ArgumentType,
                        item.span,
                        "a column of select_columns is a name or an index from 0",
                    )
                    .with_label("expected \"name\" or an index")
                })?;
                let n = names.map_or(usize::MAX, <[String]>::len);
                if i < 0 || i as u64 >= n as u64 {
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        item.span,
                        match names {
                            Some(names) => format!(
                                "column {i} is out of range: column_names has {} columns",
                                names.len()
                            ),
                            None => format!("column {i} is out of range: indices count from 0"),
                        },
                    )
                    .with_label("no such column"));
                }
                let label = names.map_or_else(|| i.to_string(), |n| n[i as usize].clone());
                (
                    ColumnRef::Index(i as usize),
                    names.map(|_| i as usize),
                    label,
                )
            }
        };
        let same = fields.iter().find(|(f, l, _)| match (f, field) {
            (Some(a), Some(b)) => *a == b,
            (None, None) => *l == label && matches!(r, ColumnRef::Name(_)),
            _ => false,
        });
        if let Some((_, _, first)) = same {
            return Err(Diagnostic::new(
                Code::DuplicateValue,
                item.span,
                format!("select_columns selects `{label}` twice"),
            )
            .with_label("second time")
            .with_secondary(*first, "first time"));
        }
        fields.push((field, label, item.span));
        out.push(r);
    }
    // The selected names, in file order, when every field is known (by
    // column_names) or every entry is a name.
    let known = match names {
        Some(names) => {
            let mut f: Vec<usize> = fields.iter().filter_map(|(f, _, _)| *f).collect();
            f.sort_unstable();
            Some(f.into_iter().map(|i| names[i].clone()).collect())
        }
        None if out.iter().all(|r| matches!(r, ColumnRef::Name(_))) => {
            Some(fields.iter().map(|(_, l, _)| l.clone()).collect())
        }
        None => None,
    };
    Ok((out, known))
}

/// The index of column `n` among `names`, or an `unknown-column` error at
/// `span` naming `whose` list.
fn known_column(n: &str, names: &[String], span: Span, whose: &str) -> R<usize> {
    if let Some(i) = names.iter().position(|m| m == n) {
        return Ok(i);
    }
    let mut d = Diagnostic::new(
        Code::UnknownColumn,
        span,
        format!("column `{n}` is not among {whose}"),
    )
    .with_label("no such column");
    if let Some(s) = args::suggest(n, names.iter().map(String::as_str)) {
        d = d.with_help(format!("did you mean `{s}`?"));
    } else {
        d = d.with_help(format!("{whose}: {}", names.join(", ")));
    }
    Err(d)
}

/// `column_defaults`: one entry per selected column (or per column, when
/// the spec knows how many), each a number, a string or a dtype (required).
#[allow(clippy::type_complexity)]
fn defaults(e: &Expr, o: &CsvReadOptions) -> R<(Vec<RecordDefault>, Vec<(Option<String>, Span)>)> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            "column_defaults is a list: a value or a dtype per column",
        )
        .with_label("expected [0.0, \"\", int32, ...]"));
    };
    // The columns the entries stand for, when the spec knows them.
    let columns: Option<Vec<Option<String>>> = match (&o.select_columns, &o.column_names) {
        (Some(sel), names) => {
            let mut fields: Vec<(usize, Option<String>)> = sel
                .iter()
                .map(|r| match (r, names) {
                    (ColumnRef::Name(n), Some(names)) => {
                        let i = names.iter().position(|m| m == n).unwrap_or(0);
                        (i, Some(n.clone()))
                    }
                    (ColumnRef::Index(i), Some(names)) => (*i, names.get(*i).cloned()),
                    (ColumnRef::Name(n), None) => (0, Some(n.clone())),
                    (ColumnRef::Index(i), None) => (*i, None),
                })
                .collect();
            // TF sorts the selection; by name without column_names the
            // order in the file is unknown.
            if names.is_some() || sel.iter().all(|r| matches!(r, ColumnRef::Index(_))) {
                fields.sort_by_key(|(i, _)| *i);
                Some(fields.into_iter().map(|(_, n)| n).collect())
            } else {
                Some(vec![None; sel.len()])
            }
        }
        (None, Some(names)) => Some(names.iter().cloned().map(Some).collect()),
        (None, None) => None,
    };
    if let Some(cols) = &columns {
        if cols.len() != items.len() {
            let what = if o.select_columns.is_some() {
                "select_columns selects"
            } else {
                "column_names names"
            };
            return Err(Diagnostic::new(
                Code::MalformedArgument,
                e.span,
                format!(
                    "column_defaults has {} values but {what} {} columns",
                    items.len(),
                    cols.len()
                ),
            )
            .with_label("one default per column"));
        }
    }
    let mut out = Vec::with_capacity(items.len());
    let mut entries = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        out.push(default_value(item)?);
        let col = columns.as_ref().and_then(|c| c[k].clone());
        entries.push((col, item.span));
    }
    Ok((out, entries))
}

/// One default: a number (an integer `int32`, or `int64` beyond it; a
/// decimal `float32`), a string, or a dtype alone (the column is required).
fn default_value(e: &Expr) -> R<RecordDefault> {
    match &e.kind {
        ExprKind::Str(s) => Ok(RecordDefault::String(s.as_bytes().to_vec())),
        ExprKind::Ident(t) => Ok(RecordDefault::Required(match t.as_str() {
            "float32" => CsvType::Float32,
            "float64" => CsvType::Float64,
            "int32" => CsvType::Int32,
            "int64" => CsvType::Int64,
            "string" => CsvType::String,
            other => {
                return Err(Diagnostic::new(
                    Code::UnknownChoice,
                    e.span,
                    format!("`{other}` is not a CSV dtype"),
                )
                .with_label("expected float32, float64, int32, int64 or string"))
            }
        })),
        _ => {
            let x = args::eval_number(e).map_err(|_| {
                Diagnostic::new(
                    Code::ArgumentType,
                    e.span,
                    "a column default is a number, a string or a dtype (required)",
                )
                .with_label("expected 0.0, \"\", int64, ...")
            })?;
            if !x.is_finite() || x.abs() > f64::from(f32::MAX) {
                return Err(Diagnostic::new(
                    Code::NonFiniteConstant,
                    e.span,
                    "a column default must be a finite float32",
                )
                .with_label("out of range"));
            }
            if is_integer(e) {
                if x.abs() > 9.0e15 {
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        e.span,
                        "integer is too large",
                    )
                    .with_label("overflows"));
                }
                let v = x as i64;
                return Ok(match i32::try_from(v) {
                    Ok(v) => RecordDefault::Int32(v),
                    Err(_) => RecordDefault::Int64(v),
                });
            }
            Ok(RecordDefault::Float32(x as f32))
        }
    }
}

/// Whether a number literal (maybe negated) is written as an integer.
fn is_integer(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Number { is_int, .. } => *is_int,
        ExprKind::Unary(x) => is_integer(x),
        _ => false,
    }
}

/// The filter: comparisons of a column with a literal, joined by `and`
/// and `or`; a column must be among `known` (the columns the spec names)
/// when given. Each comparison's spans go to `spans`, in order; its type is
/// decided by [`check_columns`].
fn filter(
    e: &Expr,
    known: Option<(&[String], Span)>,
    spans: &mut Vec<(Span, Span)>,
) -> R<RowFilter> {
    let bad = |span: Span, what: &str| {
        Diagnostic::new(
            Code::BadFilter,
            span,
            format!("a filter compares a column with a number or a string; {what}"),
        )
        .with_label("not a column compared with a value")
        .with_help("e.g. filter = age > 30 and sex == \"male\"")
    };
    let ExprKind::Binary(first, rest) = &e.kind else {
        return Err(bad(e.span, &format!("this is {}", args::describe(e))));
    };
    if rest.iter().all(|o| matches!(o.op, BinOp::And | BinOp::Or)) {
        let mut parts = vec![filter(first, known, spans)?];
        for o in rest {
            parts.push(filter(&o.rhs, known, spans)?);
        }
        // One chain holds one operator (`and` binds tighter than `or`).
        return Ok(if rest[0].op == BinOp::And {
            RowFilter::All(parts)
        } else {
            RowFilter::Any(parts)
        });
    }
    let [o] = rest.as_slice() else {
        return Err(bad(e.span, "this is arithmetic"));
    };
    let op = match o.op {
        BinOp::Eq => CmpOp::Eq,
        BinOp::Ne => CmpOp::Ne,
        BinOp::Lt => CmpOp::Lt,
        BinOp::Le => CmpOp::Le,
        BinOp::Gt => CmpOp::Gt,
        BinOp::Ge => CmpOp::Ge,
        _ => return Err(bad(e.span, "this is arithmetic")),
    };
    let literal = |x: &Expr| -> Option<FilterValue> {
        match &x.kind {
            ExprKind::Str(s) => Some(FilterValue::String(s.as_bytes().to_vec())),
            ExprKind::Number { .. } | ExprKind::Unary(_) => {
                args::eval_number(x).ok().map(FilterValue::Number)
            }
            _ => None,
        }
    };
    let (column, value, op, col_span, value_span) = match (&first.kind, &o.rhs.kind) {
        (ExprKind::Ident(_), ExprKind::Ident(_)) => {
            return Err(bad(e.span, "this compares two columns"))
        }
        (ExprKind::Ident(c), _) => match literal(&o.rhs) {
            Some(v) => (c, v, op, first.span, o.rhs.span),
            None => {
                return Err(bad(
                    o.rhs.span,
                    &format!("the other side is {}", args::describe(&o.rhs)),
                ))
            }
        },
        (_, ExprKind::Ident(c)) => match literal(first) {
            Some(v) => (c, v, op.flipped(), o.rhs.span, first.span),
            None => {
                return Err(bad(
                    first.span,
                    &format!("the other side is {}", args::describe(first)),
                ))
            }
        },
        _ => return Err(bad(e.span, "neither side is a column name")),
    };
    if let FilterValue::Number(x) = &value {
        if !x.is_finite() {
            return Err(Diagnostic::new(
                Code::NonFiniteConstant,
                value_span,
                "a filter compares with a finite number",
            )
            .with_label("not finite"));
        }
    }
    if let Some((names, _)) = known {
        known_column(column, names, col_span, "the source's columns")?;
    }
    spans.push((col_span, value_span));
    Ok(RowFilter::Compare {
        column: column.clone(),
        op,
        value,
        dtype: CsvType::Float64,
    })
}

/// The checks of the data and eval_data CSV options against the model's
/// inputs (see the module doc); types each `filter` comparison.
pub(crate) fn check_columns(st: &mut State) {
    let inputs: Vec<_> = st.inputs.iter().map(|i| (i.spec.clone(), i.span)).collect();
    let specs: Vec<_> = inputs.iter().map(|(s, _)| s.clone()).collect();
    // The type each raw key is read as (none when the spec reads a key two
    // ways: `specc convert` reports that).
    let keys = specc_runtime::data::text::parse_spec(&specs).unwrap_or_default();
    let read_as = |c: &str| {
        keys.iter().find(|k| k.key == c).map(|k| match k.dtype {
            DType::Float32 => CsvType::Float32,
            DType::Int64 => CsvType::Int64,
            DType::String => CsvType::String,
        })
    };
    let mut errors = Vec::new();
    for eval in [false, true] {
        let (item, spans) = if eval {
            (
                st.eval_data.as_mut().map(|d| &mut d.0),
                st.eval_csv.as_ref(),
            )
        } else {
            (st.data.as_mut().map(|d| &mut d.0), st.data_csv.as_ref())
        };
        let (Some(item), Some(spans)) = (item, spans) else {
            continue;
        };
        let options = match &mut item.source {
            Source::Csv { options, .. } => options,
            Source::Stream(s) => match &mut s.format {
                specc_runtime::pipeline::Format::Csv(options) => &mut **options,
                _ => continue,
            },
            _ => continue,
        };
        if let Some((names, span)) = &spans.known {
            for (spec, ispan) in &inputs {
                for c in &spec.columns {
                    if !names.contains(c) {
                        errors.push(
                            Diagnostic::new(
                                Code::UnknownColumn,
                                *ispan,
                                format!(
                                    "`{}` reads column `{c}`, which the {} source leaves out",
                                    spec.name,
                                    if eval { "eval_data" } else { "data" }
                                ),
                            )
                            .with_label("not among the source's columns")
                            .with_secondary(*span, "the source's columns")
                            .with_help(format!("add `{c}` to the source's columns")),
                        );
                    }
                }
            }
        }
        // Defaults: fit the column's type, stored in it.
        let mut default_type: Vec<(String, CsvType)> = Vec::new();
        if let Some(defaults) = options.column_defaults.as_mut() {
            for (d, (col, span)) in defaults.iter_mut().zip(&spans.defaults) {
                let Some(col) = col else { continue };
                match read_as(col) {
                    Some(t) => match fit(d, t) {
                        Some(v) => *d = v,
                        None => errors.push(
                            Diagnostic::new(
                                Code::ColumnType,
                                *span,
                                format!(
                                    "column `{col}` is read as {}, but its default is {}",
                                    t.tf_name(),
                                    describe_default(d)
                                ),
                            )
                            .with_label(format!(
                                "not {} {} default",
                                article(t),
                                t.tf_name()
                            )),
                        ),
                    },
                    None => default_type.push((col.clone(), d.dtype())),
                }
            }
        }
        // Filter comparisons: typed by the inputs, the default, the value.
        let Some(f) = options.filter.as_mut() else {
            continue;
        };
        let mut k = 0;
        each_comparison_mut(f, &mut |c| {
            let RowFilter::Compare {
                column,
                op,
                value,
                dtype,
            } = c
            else {
                return;
            };
            let (col_span, value_span) = spans.comparisons.get(k).copied().unwrap_or_default();
            k += 1;
            let by_value = match value {
                FilterValue::Number(_) => CsvType::Float64,
                FilterValue::String(_) => CsvType::String,
            };
            let t = read_as(column)
                .or_else(|| {
                    default_type
                        .iter()
                        .find(|(n, _)| n == column)
                        .map(|(_, t)| *t)
                })
                .unwrap_or(by_value);
            *dtype = t;
            let wrong = match (t, &*value) {
                (CsvType::String, FilterValue::Number(_)) => Some("a number"),
                (CsvType::String, _) if !matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                    errors.push(
                        Diagnostic::new(
                            Code::ColumnType,
                            col_span.to(value_span),
                            format!("strings compare by == and !=, not {}", op.symbol()),
                        )
                        .with_label(format!("`{column}` is a string")),
                    );
                    None
                }
                (CsvType::Float32 | CsvType::Float64, FilterValue::String(_))
                | (CsvType::Int32 | CsvType::Int64, FilterValue::String(_)) => Some("a string"),
                (CsvType::Int32 | CsvType::Int64, FilterValue::Number(x)) if x.fract() != 0.0 => {
                    Some("a fraction")
                }
                _ => None,
            };
            if let Some(what) = wrong {
                errors.push(
                    Diagnostic::new(
                        Code::ColumnType,
                        value_span,
                        format!(
                            "`{column}` is read as {}, so the filter cannot compare it with {what}",
                            t.tf_name()
                        ),
                    )
                    .with_label(format!("not {} {} value", article(t), t.tf_name()))
                    .with_secondary(col_span, format!("read as {}", t.tf_name())),
                );
            }
        });
    }
    st.errors.extend(errors);
}

/// Calls `f` on every comparison of the filter, in order.
fn each_comparison_mut(f: &mut RowFilter, g: &mut impl FnMut(&mut RowFilter)) {
    match f {
        RowFilter::All(v) | RowFilter::Any(v) => {
            for c in v {
                each_comparison_mut(c, g);
            }
        }
        c => g(c),
    }
}

/// A default in column type `t`, when it fits: a number for a float
/// column, an integer for an integer column, a string for a string column;
/// a dtype alone (required) of the same kind.
fn fit(d: &RecordDefault, t: CsvType) -> Option<RecordDefault> {
    use RecordDefault as D;
    let float = matches!(t, CsvType::Float32 | CsvType::Float64);
    let int = matches!(t, CsvType::Int32 | CsvType::Int64);
    Some(match d {
        D::Required(u) => {
            let same = match u {
                CsvType::String => t == CsvType::String,
                CsvType::Int32 | CsvType::Int64 => float || int,
                CsvType::Float32 | CsvType::Float64 => float,
            };
            if !same {
                return None;
            }
            D::Required(*u)
        }
        D::Missing(_) => D::Missing(t),
        D::String(s) if t == CsvType::String => D::String(s.clone()),
        D::Int32(x) if float => D::Float32(*x as f32),
        D::Int64(x) if float => D::Float32(*x as f32),
        D::Float32(x) if float => D::Float32(*x),
        D::Float64(x) if float => D::Float32(*x as f32),
        D::Int32(x) if int => D::Int64(i64::from(*x)),
        D::Int64(x) if int => D::Int64(*x),
        _ => return None,
    })
}

/// "a float32", "an int64".
fn article(t: CsvType) -> &'static str {
    match t {
        CsvType::Int32 | CsvType::Int64 => "an",
        _ => "a",
    }
}

fn describe_default(d: &RecordDefault) -> String {
    match d {
        RecordDefault::Required(t) | RecordDefault::Missing(t) => {
            format!("the dtype {}", t.tf_name())
        }
        RecordDefault::String(_) => "a string".into(),
        RecordDefault::Float32(_) | RecordDefault::Float64(_) => "a decimal number".into(),
        RecordDefault::Int32(_) | RecordDefault::Int64(_) => "an integer".into(),
    }
}
