//! The graph inputs a spec declares: the `label` and the `features` block
//! (feature columns `numeric` and `integer`), with their columns and
//! normalizers.
//!
//! Owns: translating these declarations into graph inputs and the runtime's
//! [`InputSpec`]s (which CSV columns, which kind, which normalizer), column
//! ranges (`px0..px63`), the normalizer expressions in `x`, and their
//! diagnostics, and string labels (`label y: vocabulary [..]`, TF's
//! `label_vocabulary`). `tf.feature_column` is [`super::features`].
//!
//! Invariants: every input is one graph input and one [`InputInfo`], in the
//! same order (`Model::inputs` is parallel to `graph.inputs`); a label is
//! `[B]` (an int label, or a float label of one unnamed column) or `[B, k]`
//! for k float columns; a `numeric` feature is `[B, k]`; `integer` ids are
//! `[B]` for one column and `[B, k]` for k, and declare their range
//! (`num_buckets`), so the runtime can check every id it loads.

use specc_grammar::ast::{Binding, Call, Expr, ExprKind, LabelDecl, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::data::{InputKind, InputSpec, NormExpr, NormFunc, Normalizer};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::{DType, Dim, Shape};
use crate::model::{InputInfo, InputRole};

/// Expands column names and ranges like `px0..px63`.
fn columns<'e>(list: impl IntoIterator<Item = &'e Expr>) -> R<Vec<String>> {
    let mut out = Vec::new();
    for e in list {
        match &e.kind {
            ExprKind::Ident(n) => out.push(n.clone()),
            ExprKind::Str(n) => out.push(n.clone()),
            ExprKind::Range(a, b) => {
                let split = |s: &str| {
                    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                    let (p, n) = s.split_at(s.len() - digits);
                    (p.to_string(), n.parse::<u64>().ok())
                };
                let (pa, na) = split(&a.name);
                let (pb, nb) = split(&b.name);
                let bad = |msg: String| {
                    Diagnostic::new(Code::BadColumnRange, e.span, msg)
                        .with_label("bad range")
                        .with_help("a range is written like px0..px63: the same prefix, then first and last numbers")
                };
                match (na, nb) {
                    (Some(x), Some(y)) if pa == pb => {
                        if x > y {
                            return Err(bad(format!("the range {}..{} is empty", a.name, b.name)));
                        }
                        if y - x > 1_000_000 {
                            return Err(bad("the range has more than a million columns".into()));
                        }
                        for i in x..=y {
                            out.push(format!("{pa}{i}"));
                        }
                    }
                    (Some(_), Some(_)) => {
                        return Err(bad(format!(
                            "the ends of {}..{} have different prefixes `{pa}` and `{pb}`",
                            a.name, b.name
                        )))
                    }
                    _ => {
                        return Err(bad(format!(
                            "the ends of {}..{} must end in numbers",
                            a.name, b.name
                        )))
                    }
                }
            }
            _ => {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    e.span,
                    format!(
                        "expected a column name or range, found {}",
                        args::describe(e)
                    ),
                )
                .with_label("not a column"))
            }
        }
    }
    Ok(out)
}

pub(crate) fn label(st: &mut State, d: &LabelDecl) -> R<()> {
    if d.dtype.name == "vocabulary" || d.vocabulary.is_some() {
        return vocabulary_label(st, d);
    }
    let kind = match d.dtype.name.as_str() {
        "int" | "int32" => InputKind::ClassId { num_classes: None },
        "float" | "float32" => InputKind::Float,
        other => {
            return Err(Diagnostic::new(
                Code::UnknownChoice,
                d.dtype.span,
                format!("unknown label type `{other}`"),
            )
            .with_label("expected int, float or vocabulary [..]"))
        }
    };
    let (cols, shape) = match &d.columns {
        None => (vec![d.name.name.clone()], Shape(vec![Dim::Batch])),
        Some(list) => {
            let cols = columns(list)?;
            let k = cols.len() as u32;
            let shape = if matches!(kind, InputKind::ClassId { .. }) {
                if k != 1 {
                    return Err(Diagnostic::new(
                        Code::LabelKind,
                        d.span,
                        format!(
                            "an int label holds one class id per row, but {k} columns are given"
                        ),
                    )
                    .with_label("several columns"));
                }
                Shape(vec![Dim::Batch])
            } else {
                Shape(vec![Dim::Batch, Dim::Fixed(k)])
            };
            (cols, shape)
        }
    };
    let dtype = match kind {
        InputKind::ClassId { .. } => DType::I32,
        InputKind::Float => DType::F32,
    };
    add_input(
        st,
        &d.name.name,
        d.name.span,
        InputRole::Label,
        InputSpec {
            name: d.name.name.clone(),
            columns: cols,
            kind,
            normalizer: Normalizer::None,
            feature: None,
        },
        dtype,
        shape,
        "label",
    )
}

/// `label NAME: vocabulary ["no", "yes"] [from COLUMN]`: a string label
/// whose class id is the cell's position in the vocabulary (TF's
/// `label_vocabulary`), an i32 `[B]` input of that many classes.
fn vocabulary_label(st: &mut State, d: &LabelDecl) -> R<()> {
    let Some(list) = &d.vocabulary else {
        return Err(Diagnostic::new(
            Code::MissingArgument,
            d.dtype.span,
            "a vocabulary label lists its values",
        )
        .with_label("no vocabulary")
        .with_help("e.g. label survived: vocabulary [\"no\", \"yes\"]"));
    };
    if d.dtype.name != "vocabulary" {
        return Err(Diagnostic::new(
            Code::ConflictingArguments,
            list.span,
            format!(
                "a list of values follows `vocabulary`, not `{}`",
                d.dtype.name
            ),
        )
        .with_label("unexpected list")
        .with_help("e.g. label survived: vocabulary [\"no\", \"yes\"]"));
    }
    let ExprKind::List(items) = &list.kind else {
        return Err(
            Diagnostic::new(Code::ArgumentType, list.span, "expected a list of strings")
                .with_label("not a list"),
        );
    };
    if items.len() < 2 {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            list.span,
            format!(
                "a label vocabulary needs at least 2 values, got {}",
                items.len()
            ),
        )
        .with_label("too few values"));
    }
    let mut vocabulary: Vec<Vec<u8>> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    for it in items {
        let v = args::eval_string(it)?;
        if let Some(k) = vocabulary.iter().position(|x| x == v.as_bytes()) {
            return Err(Diagnostic::new(
                Code::DuplicateValue,
                it.span,
                format!("the label vocabulary has \"{v}\" twice"),
            )
            .with_label("duplicate")
            .with_secondary(spans[k], "first here"));
        }
        vocabulary.push(v.as_bytes().to_vec());
        spans.push(it.span);
    }
    let cols = match &d.columns {
        None => vec![d.name.name.clone()],
        Some(list) => {
            let cols = columns(list)?;
            if cols.len() != 1 {
                return Err(Diagnostic::new(
                    Code::LabelKind,
                    d.span,
                    format!(
                        "a vocabulary label is one column, but {} are given",
                        cols.len()
                    ),
                )
                .with_label("several columns"));
            }
            cols
        }
    };
    let n = vocabulary.len() as u32;
    let input = st.graph.inputs.len() as u32;
    add_input(
        st,
        &d.name.name,
        d.name.span,
        InputRole::Label,
        InputSpec {
            name: d.name.name.clone(),
            columns: cols,
            kind: InputKind::ClassId {
                num_classes: Some(n),
            },
            normalizer: Normalizer::None,
            feature: Some(
                specc_runtime::feature_column::FeatureInput::LabelVocabulary { vocabulary },
            ),
        },
        DType::I32,
        Shape(vec![Dim::Batch]),
        "label",
    )?;
    // Every use of the label must agree with the vocabulary's size.
    st.class_uses.push(super::expr::ClassUse {
        input,
        classes: n,
        span: list.span,
        at_most: false,
    });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn add_input(
    st: &mut State,
    name: &str,
    span: Span,
    role: InputRole,
    spec: InputSpec,
    dtype: DType,
    shape: Shape,
    what: &'static str,
) -> R<()> {
    if st.env.entries.contains_key(name) {
        st.env.define(name, span, what, None)?;
    }
    let i = st.graph.add_input(name, dtype, shape);
    st.inputs.push(InputInfo { role, spec, span });
    let node = st.graph.input(i);
    st.env.define(name, span, what, Some(node))
}

/// An image input (`sema::images`): a feature input of its own shape.
pub(crate) fn add_image_input(
    st: &mut State,
    name: &str,
    span: Span,
    spec: InputSpec,
    dtype: DType,
    shape: Shape,
) -> R<()> {
    add_input(
        st,
        name,
        span,
        InputRole::Feature,
        spec,
        dtype,
        shape,
        "feature",
    )
}

pub(crate) fn feature(st: &mut State, b: &Binding) -> R<()> {
    let ExprKind::Call(call) = &b.value.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            b.value.span,
            format!(
                "expected a feature column like numeric(...), found {}",
                args::describe(&b.value)
            ),
        )
        .with_label("not a feature column"));
    };
    if call.func.name == "integer" {
        return integer_feature(st, b, call);
    }
    if call.func.name != "numeric" {
        return Err(Diagnostic::new(
            Code::UnknownFunction,
            call.func.span,
            format!("unknown feature column `{}`", call.func.name),
        )
        .with_label("not a feature column")
        .with_help(
            "expected numeric(COLUMNS, normalizer = ...) or integer(COLUMNS, num_buckets = N)",
        ));
    }
    let (cols_exprs, bound) =
        args::bind_variadic("numeric", call, "COLUMNS", &[opt("normalizer")])?;
    let normalizer = match bound.get(0) {
        Some(e) => parse_normalizer(e)?,
        None => Normalizer::None,
    };
    let cols = feature_columns(call, &cols_exprs, "numeric")?;
    let k = cols.len() as u32;
    add_input(
        st,
        &b.name.name,
        b.name.span,
        InputRole::Feature,
        InputSpec {
            name: b.name.name.clone(),
            columns: cols,
            kind: InputKind::Float,
            normalizer,
            feature: None,
        },
        DType::F32,
        Shape(vec![Dim::Batch, Dim::Fixed(k)]),
        "feature",
    )
}

/// `integer(COLUMNS, num_buckets = N)`: int32 ids in `[0, N)`, shape `[B]`
/// for one column and `[B, k]` for k columns (e.g. for `embedding_lookup`).
fn integer_feature(st: &mut State, b: &Binding, call: &Call) -> R<()> {
    let (cols_exprs, bound) =
        args::bind_variadic("integer", call, "COLUMNS", &[opt("num_buckets")])?;
    let Some(e) = bound.get(0) else {
        return Err(Diagnostic::new(
            Code::MissingArgument,
            call.span,
            "`integer` needs `num_buckets`: ids are checked to be in [0, num_buckets)",
        )
        .with_label("no num_buckets"));
    };
    let buckets = args::eval_count(e, "num_buckets")?;
    if buckets == 0 || buckets > i32::MAX as u64 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("num_buckets must be in [1, 2^31), got {buckets}"),
        )
        .with_label("out of range"));
    }
    let cols = feature_columns(call, &cols_exprs, "integer")?;
    let k = cols.len() as u32;
    let shape = if k == 1 {
        Shape(vec![Dim::Batch])
    } else {
        Shape(vec![Dim::Batch, Dim::Fixed(k)])
    };
    add_input(
        st,
        &b.name.name,
        b.name.span,
        InputRole::Feature,
        InputSpec {
            name: b.name.name.clone(),
            columns: cols,
            kind: InputKind::ClassId {
                num_classes: Some(buckets as u32),
            },
            normalizer: Normalizer::None,
            feature: None,
        },
        DType::I32,
        shape,
        "feature",
    )
}

/// The columns of a feature column: its positional arguments, at least one.
fn feature_columns(call: &Call, exprs: &[&Expr], what: &str) -> R<Vec<String>> {
    if exprs.is_empty() {
        return Err(Diagnostic::new(
            Code::MissingArgument,
            call.span,
            format!("`{what}` needs at least one column"),
        )
        .with_label("no columns"));
    }
    columns(exprs.iter().copied())
}

fn parse_normalizer(e: &Expr) -> R<Normalizer> {
    if let ExprKind::Ident(n) = &e.kind {
        if n == "standardize" {
            return Ok(Normalizer::Standardize);
        }
    }
    Ok(Normalizer::Expr(norm_expr(e)?))
}

pub(crate) fn norm_expr(e: &Expr) -> R<NormExpr> {
    use specc_grammar::ast::BinOp;
    let b = |x: &Expr| norm_expr(x).map(Box::new);
    Ok(match &e.kind {
        ExprKind::Number { value, .. } => NormExpr::Const(*value),
        ExprKind::Ident(n) if n == "x" => NormExpr::X,
        ExprKind::Ident(n) => {
            return Err(Diagnostic::new(
                Code::UnknownName,
                e.span,
                format!("unknown name `{n}` in a normalizer"),
            )
            .with_label("not defined here")
            .with_help("a normalizer is an expression in `x` (the raw value), e.g. (x - 3.5) / 2, or `standardize`"))
        }
        ExprKind::Unary(x) => NormExpr::Neg(b(x)?),
        ExprKind::Binary(first, rest) => {
            // The runtime evaluates normalizers recursively: bound their depth.
            if rest.len() >= specc_grammar::MAX_EXPR_DEPTH {
                return Err(Diagnostic::new(Code::UnsupportedArgument, e.span, "this normalizer is too long")
                    .with_label(format!("more than {} operations", specc_grammar::MAX_EXPR_DEPTH)));
            }
            let mut acc = b(first)?;
            for o in rest {
                let r = b(&o.rhs)?;
                acc = Box::new(match o.op {
                    BinOp::Add => NormExpr::Add(acc, r),
                    BinOp::Sub => NormExpr::Sub(acc, r),
                    BinOp::Mul => NormExpr::Mul(acc, r),
                    BinOp::Div => NormExpr::Div(acc, r),
                    op => {
                        return Err(Diagnostic::new(
                            Code::UnsupportedArgument,
                            e.span,
                            format!("`{}` is not allowed in a normalizer", op.symbol()),
                        )
                        .with_label("use + - * /"))
                    }
                });
            }
            *acc
        }
        ExprKind::Call(c) => {
            let f = match c.func.name.as_str() {
                "log" => NormFunc::Log,
                "log1p" => NormFunc::Log1p,
                "exp" => NormFunc::Exp,
                "sqrt" => NormFunc::Sqrt,
                "abs" => NormFunc::Abs,
                "square" => NormFunc::Square,
                other => {
                    return Err(Diagnostic::new(
                        Code::UnknownFunction,
                        c.func.span,
                        format!("`{other}` cannot be used in a normalizer"),
                    )
                    .with_label("not allowed here")
                    .with_help("normalizers may use log, log1p, exp, sqrt, abs, square"))
                }
            };
            let bound = args::bind(&c.func.name, c, &[req("x")])?;
            NormExpr::Func(f, b(bound.req(0))?)
        }
        _ => {
            return Err(Diagnostic::new(
                Code::ArgumentType,
                e.span,
                format!("expected an expression in `x`, found {}", args::describe(e)),
            )
            .with_label("not a normalizer"))
        }
    })
}
