//! Checking of the non-expression items: data, label, features, params,
//! statements, optimizer, train and metrics.
//!
//! Owns: the translation of these items into model declarations (runtime
//! input specs, initializers, settings) and their diagnostics.
//! Invariant: every value taken from the spec is validated here, so later
//! stages and the runtime can trust the model.

use specc_grammar::ast::{
    Arg, Binding, Block, Call, EmaDecl, Expr, ExprKind, LabelDecl, MetricDecl, ParamDecl, Span,
};
use specc_grammar::Diagnostic;
use specc_runtime::data::{
    Distribution, InputKind, InputSpec, NormExpr, NormFunc, Normalizer, SyntheticSpec,
};
use specc_runtime::init::Initializer;
use specc_runtime::prng::fnv1a64;

use super::args::{self, opt, req};
use super::expr::{constant_values, R};
use super::State;
use crate::ir::{shape, BinaryOp, DType, Dim, NodeId, Output, Shape};
use crate::model::{
    ClipBound, ClipKind, ClipSpec, DataSource, Duration, EmaSpec, Hypers, InputInfo, InputRole,
    Metric, MetricKind, OptimizerKind, OptimizerSpec, TrainSettings, VarInfo, VarKind,
};

pub(crate) fn data(st: &mut State, call: &Call) -> R<()> {
    if let Some((_, prev)) = &st.data {
        return Err(
            Diagnostic::new("duplicate-item", call.span, "a spec has one `data` source")
                .with_label("second data source")
                .with_secondary(*prev, "first one here"),
        );
    }
    let source = match call.func.name.as_str() {
        "csv" => {
            let b = args::bind("csv", call, &[req("path")])?;
            let path = args::eval_string(b.req(0))?;
            if path.is_empty() {
                return Err(Diagnostic::new("bad-argument", b.req(0).span, "empty path")
                    .with_label("expected a file name"));
            }
            DataSource::Csv {
                path: path.to_string(),
                span: b.req(0).span,
            }
        }
        "synthetic" => {
            let b = args::bind(
                "synthetic",
                call,
                &[
                    req("rows"),
                    req("features"),
                    opt("classes"),
                    opt("seed"),
                    opt("label_seed"),
                    opt("distribution"),
                ],
            )?;
            let rows = positive(b.req(0), "rows")?;
            let features = positive(b.req(1), "features")?;
            let classes = match b.get(2) {
                Some(e) => Some(positive(e, "classes")? as u32),
                None => None,
            };
            let seed = match b.get(3) {
                Some(e) => args::eval_count(e, "seed")?,
                None => 0,
            };
            let label_seed = match b.get(4) {
                Some(e) => args::eval_count(e, "label_seed")?,
                None => seed.wrapping_add(1),
            };
            let distribution = match b.get(5) {
                None => Distribution::Normal,
                Some(e) => match args::eval_ident(e)? {
                    "normal" => Distribution::Normal,
                    "uniform" => Distribution::Uniform,
                    other => {
                        return Err(Diagnostic::new(
                            "bad-argument",
                            e.span,
                            format!("unknown distribution `{other}`"),
                        )
                        .with_label("expected normal or uniform"))
                    }
                },
            };
            DataSource::Synthetic(SyntheticSpec {
                rows: rows as usize,
                features: features as usize,
                classes,
                seed,
                label_seed,
                distribution,
            })
        }
        other => {
            return Err(Diagnostic::new(
                "unknown-function",
                call.func.span,
                format!("unknown data source `{other}`"),
            )
            .with_label("not a data source")
            .with_help("expected csv(\"file.csv\") or synthetic(rows = .., features = ..)"))
        }
    };
    st.data = Some((source, call.span));
    Ok(())
}

fn positive(e: &Expr, what: &str) -> R<u64> {
    let v = args::eval_count(e, what)?;
    if v == 0 || v > u32::MAX as u64 {
        return Err(Diagnostic::new(
            "bad-argument",
            e.span,
            format!("{what} must be a positive integer, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v)
}

/// Expands column names and ranges like `px0..px63`.
fn columns(list: &[Expr]) -> R<Vec<String>> {
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
                    Diagnostic::new("bad-column-range", e.span, msg)
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
                    "bad-argument",
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
    let kind = match d.dtype.name.as_str() {
        "int" | "int32" => InputKind::ClassId { num_classes: None },
        "float" | "float32" => InputKind::Float,
        other => {
            return Err(Diagnostic::new(
                "bad-argument",
                d.dtype.span,
                format!("unknown label type `{other}`"),
            )
            .with_label("expected int or float"))
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
                        "label-kind",
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
        },
        dtype,
        shape,
        "label",
    )
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

pub(crate) fn feature(st: &mut State, b: &Binding) -> R<()> {
    let ExprKind::Call(call) = &b.value.kind else {
        return Err(Diagnostic::new(
            "bad-argument",
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
            "unknown-function",
            call.func.span,
            format!("unknown feature column `{}`", call.func.name),
        )
        .with_label("not a feature column")
        .with_help(
            "expected numeric(COLUMNS, normalizer = ...) or integer(COLUMNS, num_buckets = N)",
        ));
    }
    let mut cols_exprs = Vec::new();
    let mut normalizer = Normalizer::None;
    let mut seen_norm: Option<Span> = None;
    for a in &call.args {
        match &a.name {
            None => cols_exprs.push(a.value.clone()),
            Some(n) if n.name == "normalizer" => {
                if let Some(prev) = seen_norm {
                    return Err(Diagnostic::new(
                        "duplicate-argument",
                        a.span,
                        "argument `normalizer` given twice",
                    )
                    .with_secondary(prev, "first value"));
                }
                seen_norm = Some(a.span);
                normalizer = parse_normalizer(&a.value)?;
            }
            Some(n) => {
                return Err(Diagnostic::new(
                    "unknown-argument",
                    n.span,
                    format!("`numeric` has no argument `{}`", n.name),
                )
                .with_label("unknown argument")
                .with_help("signature: numeric(COLUMNS.., normalizer=..)"))
            }
        }
    }
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
        },
        DType::F32,
        Shape(vec![Dim::Batch, Dim::Fixed(k)]),
        "feature",
    )
}

/// `integer(COLUMNS, num_buckets = N)`: int32 ids in `[0, N)`, shape `[B]`
/// for one column and `[B, k]` for k columns (e.g. for `embedding_lookup`).
fn integer_feature(st: &mut State, b: &Binding, call: &Call) -> R<()> {
    let mut cols_exprs = Vec::new();
    let mut buckets: Option<(u64, Span)> = None;
    for a in &call.args {
        match &a.name {
            None => cols_exprs.push(a.value.clone()),
            Some(n) if n.name == "num_buckets" => {
                if let Some((_, prev)) = buckets {
                    return Err(Diagnostic::new(
                        "duplicate-argument",
                        a.span,
                        "argument `num_buckets` given twice",
                    )
                    .with_secondary(prev, "first value"));
                }
                let v = args::eval_count(&a.value, "num_buckets")?;
                if v == 0 || v > i32::MAX as u64 {
                    return Err(Diagnostic::new(
                        "bad-argument",
                        a.value.span,
                        format!("num_buckets must be in [1, 2^31), got {v}"),
                    )
                    .with_label("out of range"));
                }
                buckets = Some((v, a.span));
            }
            Some(n) => {
                return Err(Diagnostic::new(
                    "unknown-argument",
                    n.span,
                    format!("`integer` has no argument `{}`", n.name),
                )
                .with_label("unknown argument")
                .with_help("signature: integer(COLUMNS.., num_buckets = N)"))
            }
        }
    }
    let Some((buckets, _)) = buckets else {
        return Err(Diagnostic::new(
            "missing-argument",
            call.span,
            "`integer` needs `num_buckets`: ids are checked to be in [0, num_buckets)",
        )
        .with_label("no num_buckets"));
    };
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
        },
        DType::I32,
        shape,
        "feature",
    )
}

/// The `key = true|false` options of a declaration; a key outside `known` is
/// an error saying that `owner` ("parameters have") has no such option.
fn flag_options<'a>(
    options: &'a [Arg],
    known: &[&str],
    owner: &str,
    help: &str,
) -> R<Vec<(&'a str, bool)>> {
    let mut out = Vec::new();
    for o in options {
        let Some(n) = &o.name else {
            return Err(
                Diagnostic::new("bad-argument", o.span, "expected `key = value`")
                    .with_label("unnamed option"),
            );
        };
        if !known.contains(&n.name.as_str()) {
            return Err(Diagnostic::new(
                "unknown-argument",
                n.span,
                format!("{owner} no option `{}`", n.name),
            )
            .with_label("unknown option")
            .with_help(help.to_string()));
        }
        out.push((n.name.as_str(), args::eval_bool(&o.value)?));
    }
    Ok(out)
}

/// The last value given for flag `key`.
fn flag(flags: &[(&str, bool)], key: &str) -> Option<bool> {
    flags.iter().rev().find(|(k, _)| *k == key).map(|f| f.1)
}

/// The columns of a feature column: its positional arguments, at least one.
fn feature_columns(call: &Call, exprs: &[Expr], what: &str) -> R<Vec<String>> {
    if exprs.is_empty() {
        return Err(Diagnostic::new(
            "missing-argument",
            call.span,
            format!("`{what}` needs at least one column"),
        )
        .with_label("no columns"));
    }
    columns(exprs)
}

fn parse_normalizer(e: &Expr) -> R<Normalizer> {
    if let ExprKind::Ident(n) = &e.kind {
        if n == "standardize" {
            return Ok(Normalizer::Standardize);
        }
    }
    Ok(Normalizer::Expr(norm_expr(e)?))
}

fn norm_expr(e: &Expr) -> R<NormExpr> {
    use specc_grammar::ast::BinOp;
    let b = |x: &Expr| norm_expr(x).map(Box::new);
    Ok(match &e.kind {
        ExprKind::Number { value, .. } => NormExpr::Const(*value),
        ExprKind::Ident(n) if n == "x" => NormExpr::X,
        ExprKind::Ident(n) => {
            return Err(Diagnostic::new(
                "unknown-name",
                e.span,
                format!("unknown name `{n}` in a normalizer"),
            )
            .with_label("not defined here")
            .with_help("a normalizer is an expression in `x` (the raw value), e.g. (x - 3.5) / 2, or `standardize`"))
        }
        ExprKind::Unary(x) => NormExpr::Neg(b(x)?),
        ExprKind::Binary(op, l, r) => {
            let (l, r) = (b(l)?, b(r)?);
            match op {
                BinOp::Add => NormExpr::Add(l, r),
                BinOp::Sub => NormExpr::Sub(l, r),
                BinOp::Mul => NormExpr::Mul(l, r),
                BinOp::Div => NormExpr::Div(l, r),
                _ => {
                    return Err(Diagnostic::new(
                        "bad-argument",
                        e.span,
                        format!("`{}` is not allowed in a normalizer", op.symbol()),
                    )
                    .with_label("use + - * /"))
                }
            }
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
                        "unknown-function",
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
                "bad-argument",
                e.span,
                format!("expected an expression in `x`, found {}", args::describe(e)),
            )
            .with_label("not a normalizer"))
        }
    })
}

const INITIALIZERS: &[&str] = &[
    "zeros",
    "ones",
    "constant",
    "random_uniform",
    "random_normal",
    "truncated_normal",
    "glorot_uniform",
    "glorot_normal",
];

pub(crate) fn param(st: &mut State, p: &ParamDecl) -> R<()> {
    let mut dims = Vec::new();
    for d in &p.shape {
        if matches!(&d.kind, ExprKind::Ident(n) if n == "B") {
            return Err(Diagnostic::new(
                "bad-shape",
                d.span,
                "parameters have fixed shapes; the batch dimension B is not allowed",
            )
            .with_label("B"));
        }
        let v = args::eval_int(d)?;
        if v <= 0 || v > u32::MAX as i64 {
            return Err(Diagnostic::new(
                "bad-shape",
                d.span,
                format!("dimension {v} must be a positive integer"),
            )
            .with_label("bad dimension"));
        }
        dims.push(v as u32);
    }
    let flags = flag_options(
        &p.options,
        &["trainable"],
        "parameters have",
        "parameter options: trainable",
    )?;
    let trainable = flag(&flags, "trainable").unwrap_or(true);
    let shape = Shape::fixed(&dims);
    let init = initializer(&p.init, &p.name.name, &dims)?;
    let v = st.graph.add_var(&p.name.name, DType::F32, shape);
    st.vars.push(VarInfo {
        kind: VarKind::Param { trainable },
        init,
        span: Some(p.name.span),
    });
    let node = st.graph.var(v);
    st.env
        .define(&p.name.name, p.name.span, "parameter", Some(node))
}

fn initializer(e: &Expr, param: &str, dims: &[u32]) -> R<Initializer> {
    let (name, span, args_list): (&str, Span, &[Arg]) = match &e.kind {
        ExprKind::Ident(n) => (n, e.span, &[]),
        ExprKind::Call(c) => (&c.func.name, c.func.span, &c.args),
        ExprKind::Number { .. } | ExprKind::List(_) | ExprKind::Unary(_) => {
            return Err(Diagnostic::new(
                "bad-initializer",
                e.span,
                "a parameter's initializer is a function like zeros or glorot_uniform(seed = 1)",
            )
            .with_label("not an initializer")
            .with_help("for fixed values write constant(value = ...)"))
        }
        _ => {
            return Err(Diagnostic::new(
                "bad-initializer",
                e.span,
                format!("expected an initializer, found {}", args::describe(e)),
            )
            .with_label("not an initializer"))
        }
    };
    let default_seed = fnv1a64(param.as_bytes());
    let seed_of = |x: Option<&Expr>| -> R<u64> {
        x.map(|e| args::eval_count(e, "seed"))
            .transpose()
            .map(|s| s.unwrap_or(default_seed))
    };
    let num = |x: Option<&Expr>, d: f64| -> R<f64> {
        x.map(args::eval_number).transpose().map(|v| v.unwrap_or(d))
    };
    let bind = |params: &[args::Param]| args::bind_args(name, args_list, e.span, params);
    match name {
        "zeros" => {
            bind(&[])?;
            Ok(Initializer::Zeros)
        }
        "ones" => {
            bind(&[])?;
            Ok(Initializer::Ones)
        }
        "constant" => {
            let b = bind(&[req("value")])?;
            let ve = b.req(0);
            let (vdims, values) = constant_values(ve)?;
            if !vdims.is_empty() && vdims != dims {
                return Err(Diagnostic::new(
                    "bad-initializer",
                    ve.span,
                    format!(
                        "the constant has shape {} but `{param}` is {}",
                        Shape::fixed(&vdims),
                        Shape::fixed(dims)
                    ),
                )
                .with_label("wrong shape")
                .with_help(
                    "give a single number, or a nested list of exactly the parameter's shape",
                ));
            }
            Ok(Initializer::Constant(values))
        }
        "random_uniform" => {
            let b = bind(&[opt("minval"), opt("maxval"), opt("seed")])?;
            let lo = num(b.get(0), -0.05)?;
            let hi = num(b.get(1), 0.05)?;
            if lo >= hi {
                return Err(Diagnostic::new(
                    "bad-initializer",
                    e.span,
                    format!("random_uniform needs minval < maxval, got {lo} and {hi}"),
                )
                .with_label("empty range"));
            }
            Ok(Initializer::RandomUniform {
                minval: lo as f32,
                maxval: hi as f32,
                seed: seed_of(b.get(2))?,
            })
        }
        "random_normal" | "truncated_normal" => {
            let b = bind(&[opt("mean"), opt("stddev"), opt("seed")])?;
            let mean = num(b.get(0), 0.0)? as f32;
            let stddev = num(b.get(1), 0.05)?;
            if stddev < 0.0 {
                return Err(Diagnostic::new(
                    "bad-initializer",
                    b.get(1).map(|x| x.span).unwrap_or(e.span),
                    format!("stddev must not be negative, got {stddev}"),
                )
                .with_label("negative stddev"));
            }
            let seed = seed_of(b.get(2))?;
            let stddev = stddev as f32;
            Ok(if name == "random_normal" {
                Initializer::RandomNormal { mean, stddev, seed }
            } else {
                Initializer::TruncatedNormal { mean, stddev, seed }
            })
        }
        "glorot_uniform" | "glorot_normal" => {
            let b = bind(&[opt("seed")])?;
            let seed = seed_of(b.get(0))?;
            Ok(if name == "glorot_uniform" {
                Initializer::GlorotUniform { seed }
            } else {
                Initializer::GlorotNormal { seed }
            })
        }
        other => {
            let mut d = Diagnostic::new(
                "bad-initializer",
                span,
                format!("unknown initializer `{other}`"),
            )
            .with_label("not an initializer");
            if let Some(s) = args::suggest(other, INITIALIZERS.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            Err(d.with_help(format!("initializers: {}", INITIALIZERS.join(", "))))
        }
    }
}

pub(crate) fn statement(st: &mut State, call: &Call) -> R<()> {
    if call.func.name != "assert_shape" {
        return Err(Diagnostic::new(
            "unknown-function",
            call.func.span,
            format!("`{}` is not a statement", call.func.name),
        )
        .with_label("unknown statement")
        .with_help("statements: assert_shape(x, [dims]); bind other expressions to a name"));
    }
    let b = args::bind("assert_shape", call, &[req("x"), req("shape")])?;
    let x = st.lowerer().lower(b.req(0))?;
    let actual = st.graph.shape(x).clone();
    let se = b.req(1);
    let ExprKind::List(items) = &se.kind else {
        return Err(Diagnostic::new(
            "bad-argument",
            se.span,
            format!(
                "expected a shape like [B, 128], found {}",
                args::describe(se)
            ),
        )
        .with_label("expected a list of dimensions"));
    };
    let fail = |what: String| {
        Diagnostic::new(
            "shape-assertion",
            call.span,
            format!(
                "shape assertion failed: `{}` is {actual}",
                expr_text(b.req(0))
            ),
        )
        .with_label(what)
        .with_secondary(b.req(0).span, format!("this is {actual}"))
    };
    if items.len() != actual.rank() {
        return Err(fail(format!(
            "expected rank {} but it has rank {}",
            items.len(),
            actual.rank()
        )));
    }
    for (i, (it, d)) in items.iter().zip(actual.0.iter()).enumerate() {
        match &it.kind {
            ExprKind::Ident(n) if n == "B" => {
                if *d != Dim::Batch {
                    return Err(fail(format!(
                        "dimension {i} is {d}, expected the batch dimension B"
                    )));
                }
            }
            ExprKind::Ident(n) => match st.shape_symbols.get(n) {
                Some((bound, _)) if bound != d => {
                    return Err(fail(format!(
                        "dimension {i} is {d}, but `{n}` is {bound} elsewhere"
                    )));
                }
                Some(_) => {}
                None => {
                    st.shape_symbols.insert(n.clone(), (*d, it.span));
                }
            },
            _ => {
                let v = args::eval_int(it)?;
                if *d != Dim::Fixed(v.max(0) as u32) || v < 0 {
                    return Err(fail(format!("dimension {i} is {d}, expected {v}")));
                }
            }
        }
    }
    Ok(())
}

/// A compact rendering of simple expressions for messages.
fn expr_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Call(c) => format!("{}(..)", c.func.name),
        _ => "the expression".into(),
    }
}

const OPTIMIZERS: &[&str] = &[
    "gradient_descent",
    "momentum",
    "adagrad",
    "adagrad_da",
    "adadelta",
    "adam",
    "ftrl",
    "rmsprop",
    "proximal_adagrad",
    "proximal_gradient_descent",
];

/// Reads optimizer arguments by TF name, with defaults and TF's validation.
struct OptArgs<'a> {
    names: Vec<&'static str>,
    bound: args::Bound<'a>,
}

impl OptArgs<'_> {
    fn expr(&self, name: &str) -> Option<&Expr> {
        let i = self.names.iter().position(|n| *n == name)?;
        self.bound.get(i)
    }
    fn number(&self, name: &str, default: f64) -> R<f32> {
        match self.expr(name) {
            None => Ok(default as f32),
            Some(e) => {
                let v = args::eval_number(e)?;
                if !v.is_finite() {
                    return Err(Diagnostic::new(
                        "bad-argument",
                        e.span,
                        format!("{name} must be finite"),
                    )
                    .with_label("not finite"));
                }
                Ok(v as f32)
            }
        }
    }
    /// A number that must satisfy `ok`, else `bad-argument` saying `what`.
    fn checked(&self, name: &str, default: f64, ok: fn(f64) -> bool, what: &str) -> R<f32> {
        let v = self.number(name, default)?;
        if !ok(f64::from(v)) {
            let span = self
                .expr(name)
                .map(|e| e.span)
                .unwrap_or(self.bound.call_span);
            return Err(Diagnostic::new(
                "bad-argument",
                span,
                format!("{name} must be {what}, got {v}"),
            )
            .with_label(format!("must be {what}")));
        }
        Ok(v)
    }
    fn non_negative(&self, name: &str, default: f64) -> R<f32> {
        self.checked(name, default, |v| v >= 0.0, "non-negative")
    }
    fn flag(&self, name: &str) -> R<bool> {
        self.expr(name)
            .map(args::eval_bool)
            .transpose()
            .map(|v| v.unwrap_or(false))
    }
}

pub(crate) fn optimizer(st: &mut State, call: &Call) -> R<OptimizerSpec> {
    let name = call.func.name.as_str();
    // (TF argument names, learning-rate default (None: required))
    let (names, lr_default): (Vec<&'static str>, Option<f64>) = match name {
        "gradient_descent" => (vec!["learning_rate"], None),
        "momentum" => (vec!["learning_rate", "momentum", "use_nesterov"], None),
        "adagrad" => (vec!["learning_rate", "initial_accumulator_value"], None),
        "adagrad_da" => (
            vec![
                "learning_rate",
                "initial_gradient_squared_accumulator_value",
                "l1_regularization_strength",
                "l2_regularization_strength",
            ],
            None,
        ),
        "adadelta" => (vec!["learning_rate", "rho", "epsilon"], Some(0.001)),
        "adam" => (
            vec!["learning_rate", "beta1", "beta2", "epsilon"],
            Some(0.001),
        ),
        "ftrl" => (
            vec![
                "learning_rate",
                "learning_rate_power",
                "initial_accumulator_value",
                "l1_regularization_strength",
                "l2_regularization_strength",
                "l2_shrinkage_regularization_strength",
                "beta",
            ],
            None,
        ),
        "rmsprop" => (
            vec!["learning_rate", "decay", "momentum", "epsilon", "centered"],
            None,
        ),
        "proximal_adagrad" => (
            vec![
                "learning_rate",
                "initial_accumulator_value",
                "l1_regularization_strength",
                "l2_regularization_strength",
            ],
            None,
        ),
        "proximal_gradient_descent" => (
            vec![
                "learning_rate",
                "l1_regularization_strength",
                "l2_regularization_strength",
            ],
            None,
        ),
        other => {
            let mut d = Diagnostic::new(
                "unknown-optimizer",
                call.func.span,
                format!("unknown optimizer `{other}`"),
            )
            .with_label("not an optimizer");
            if let Some(s) = args::suggest(other, OPTIMIZERS.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d.with_help(format!("optimizers: {}", OPTIMIZERS.join(", "))));
        }
    };
    let params: Vec<args::Param> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            // The learning rate (and Momentum's momentum) are required unless defaulted.
            let required =
                (i == 0 && lr_default.is_none()) || (name == "momentum" && *n == "momentum");
            if required {
                req(n)
            } else {
                opt(n)
            }
        })
        .collect();
    let bound = args::bind(name, call, &params)?;
    let a = OptArgs { names, bound };
    let learning_rate = match a.expr("learning_rate") {
        Some(e) => hyper(st, e, "learning_rate", true)?,
        None => st.graph.scalar(lr_default.unwrap_or(0.001) as f32),
    };
    let mut hyper_or = |name: &str, default: f32| -> R<NodeId> {
        match a.expr(name) {
            Some(e) => hyper(st, e, name, false),
            None => Ok(st.graph.scalar(default)),
        }
    };
    let (momentum, decay, rho) = match name {
        "momentum" => (Some(hyper_or("momentum", 0.0)?), None, None),
        "rmsprop" => (
            Some(hyper_or("momentum", 0.0)?),
            Some(hyper_or("decay", 0.9)?),
            None,
        ),
        "adadelta" => (None, None, Some(hyper_or("rho", 0.95)?)),
        _ => (None, None, None),
    };
    let positive = |v: f64| v > 0.0;
    let kind = match name {
        "gradient_descent" => OptimizerKind::GradientDescent,
        "momentum" => OptimizerKind::Momentum {
            use_nesterov: a.flag("use_nesterov")?,
        },
        "adagrad" => OptimizerKind::Adagrad {
            initial_accumulator_value: a.checked(
                "initial_accumulator_value",
                0.1,
                positive,
                "positive",
            )?,
        },
        "adagrad_da" => OptimizerKind::AdagradDA {
            initial_gradient_squared_accumulator_value: a.checked(
                "initial_gradient_squared_accumulator_value",
                0.1,
                positive,
                "positive",
            )?,
            l1_regularization_strength: a.non_negative("l1_regularization_strength", 0.0)?,
            l2_regularization_strength: a.non_negative("l2_regularization_strength", 0.0)?,
        },
        "adadelta" => OptimizerKind::Adadelta {
            epsilon: a.non_negative("epsilon", 1e-8)?,
        },
        "adam" => {
            let unit = |v: f64| (0.0..1.0).contains(&v);
            OptimizerKind::Adam {
                beta1: a.checked("beta1", 0.9, unit, "in [0, 1)")?,
                beta2: a.checked("beta2", 0.999, unit, "in [0, 1)")?,
                epsilon: a.non_negative("epsilon", 1e-8)?,
            }
        }
        "ftrl" => OptimizerKind::Ftrl {
            learning_rate_power: a.checked(
                "learning_rate_power",
                -0.5,
                |v| v <= 0.0,
                "zero or negative",
            )?,
            initial_accumulator_value: a.non_negative("initial_accumulator_value", 0.1)?,
            l1_regularization_strength: a.non_negative("l1_regularization_strength", 0.0)?,
            l2_regularization_strength: a.non_negative("l2_regularization_strength", 0.0)?,
            l2_shrinkage_regularization_strength: a
                .non_negative("l2_shrinkage_regularization_strength", 0.0)?,
            beta: a.non_negative("beta", 0.0)?,
        },
        "rmsprop" => OptimizerKind::RMSProp {
            epsilon: a.non_negative("epsilon", 1e-10)?,
            centered: a.flag("centered")?,
        },
        "proximal_adagrad" => OptimizerKind::ProximalAdagrad {
            initial_accumulator_value: a.checked(
                "initial_accumulator_value",
                0.1,
                positive,
                "positive",
            )?,
            l1_regularization_strength: a.non_negative("l1_regularization_strength", 0.0)?,
            l2_regularization_strength: a.non_negative("l2_regularization_strength", 0.0)?,
        },
        _ => OptimizerKind::ProximalGradientDescent {
            l1_regularization_strength: a.non_negative("l1_regularization_strength", 0.0)?,
            l2_regularization_strength: a.non_negative("l2_regularization_strength", 0.0)?,
        },
    };
    Ok(OptimizerSpec {
        kind,
        hypers: Hypers {
            learning_rate,
            momentum,
            decay,
            rho,
        },
        span: call.span,
    })
}

/// A schedulable hyperparameter: any float32 scalar expression (a number, a
/// schedule, an expression of `global_step`). Constants are checked now;
/// a learning rate must be positive.
fn hyper(st: &mut State, e: &Expr, name: &str, positive: bool) -> R<NodeId> {
    let v = st.lowerer().float(e)?;
    if !st.graph.shape(v).is_scalar() {
        return Err(Diagnostic::new(
            "bad-argument",
            e.span,
            format!("{name} must be a scalar, but this is {}", st.graph.shape(v)),
        )
        .with_label("not a scalar"));
    }
    if let Ok(c) = args::eval_number(e) {
        if !c.is_finite() || (positive && c <= 0.0) {
            return Err(Diagnostic::new(
                "bad-argument",
                e.span,
                format!(
                    "{name} must be {}, got {c}",
                    if positive { "positive" } else { "finite" }
                ),
            )
            .with_label(if positive {
                "not a positive number"
            } else {
                "not finite"
            }));
        }
    }
    Ok(v)
}

const TRAIN_KEYS: &[&str] = &[
    "batch",
    "steps",
    "epochs",
    "shuffle",
    "seed",
    "eval_fraction",
    "split_seed",
];

pub(crate) fn train(block: &Block<Arg>) -> R<TrainSettings> {
    let mut batch = None;
    let mut steps: Option<(u64, Span)> = None;
    let mut epochs: Option<(u64, Span)> = None;
    let mut shuffle = 0usize;
    let mut seed = 0u64;
    let mut eval_fraction = 0.2f64;
    let mut split_seed = 0u64;
    let mut seen: Vec<(String, Span)> = Vec::new();
    for a in &block.entries {
        let Some(n) = &a.name else {
            return Err(
                Diagnostic::new("bad-setting", a.span, "expected `key = value`")
                    .with_label("unnamed setting"),
            );
        };
        if let Some((_, prev)) = seen.iter().find(|(k, _)| *k == n.name) {
            return Err(Diagnostic::new(
                "duplicate-argument",
                a.span,
                format!("`{}` is set twice", n.name),
            )
            .with_label("second value")
            .with_secondary(*prev, "first value"));
        }
        seen.push((n.name.clone(), a.span));
        let v = &a.value;
        match n.name.as_str() {
            "batch" => {
                let b = args::eval_count(v, "batch")?;
                if b == 0 || b > 1 << 24 {
                    return Err(Diagnostic::new(
                        "bad-setting",
                        v.span,
                        format!("batch must be between 1 and 16777216, got {b}"),
                    )
                    .with_label("bad batch size"));
                }
                batch = Some(b as u32);
            }
            "steps" => steps = Some((args::eval_count(v, "steps")?, v.span)),
            "epochs" => epochs = Some((args::eval_count(v, "epochs")?, v.span)),
            "shuffle" => shuffle = args::eval_count(v, "shuffle")? as usize,
            "seed" => seed = args::eval_count(v, "seed")?,
            "split_seed" => split_seed = args::eval_count(v, "split_seed")?,
            "eval_fraction" => {
                let f = args::eval_number(v)?;
                if !(0.0..1.0).contains(&f) {
                    return Err(Diagnostic::new(
                        "bad-setting",
                        v.span,
                        format!("eval_fraction must be in [0, 1), got {f}"),
                    )
                    .with_label("out of range"));
                }
                eval_fraction = f;
            }
            other => {
                let mut d = Diagnostic::new(
                    "unknown-argument",
                    n.span,
                    format!("`train` has no setting `{other}`"),
                )
                .with_label("unknown setting");
                if let Some(s) = args::suggest(other, TRAIN_KEYS.iter().copied()) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                return Err(d.with_help(format!("settings: {}", TRAIN_KEYS.join(", "))));
            }
        }
    }
    let Some(batch) = batch else {
        return Err(
            Diagnostic::new("bad-setting", block.keyword, "`train` needs a `batch` size")
                .with_label("no batch")
                .with_help("e.g. train { batch = 32, steps = 1000 }"),
        );
    };
    let duration = match (steps, epochs) {
        (Some((s, _)), None) => Duration::Steps(s),
        (None, Some((e, _))) => Duration::Epochs(e),
        (Some(_), Some((_, sp))) => {
            return Err(Diagnostic::new(
                "bad-setting",
                sp,
                "give either `steps` or `epochs`, not both",
            )
            .with_label("second duration"))
        }
        (None, None) => {
            return Err(Diagnostic::new(
                "bad-setting",
                block.keyword,
                "`train` needs `steps` or `epochs`",
            )
            .with_label("no duration"))
        }
    };
    Ok(TrainSettings {
        batch,
        duration,
        shuffle,
        seed,
        eval_fraction,
        split_seed,
    })
}

pub(crate) fn metric(st: &mut State, m: &MetricDecl) -> R<()> {
    let call_storage;
    let call = match &m.value.kind {
        // `global_norm` may be written without parentheses.
        ExprKind::Ident(n) if n == "global_norm" => {
            call_storage = Call {
                func: specc_grammar::ast::Ident {
                    name: n.clone(),
                    span: m.value.span,
                },
                args: vec![],
                span: m.value.span,
            };
            &call_storage
        }
        ExprKind::Call(c) => c,
        _ => {
            return Err(Diagnostic::new(
                "bad-metric",
                m.value.span,
                format!(
                    "expected a metric like accuracy(labels, predictions), found {}",
                    args::describe(&m.value)
                ),
            )
            .with_label("not a metric"));
        }
    };
    let fname = call.func.name.as_str();
    let name = m
        .name
        .as_ref()
        .map(|n| n.name.clone())
        .unwrap_or_else(|| fname.to_string());
    if fname == "global_norm" {
        // The gradients' global norm, reported by the training step.
        args::bind(fname, call, &[])?;
        st.report_global_norm = true;
        return Ok(());
    }
    let name_span = m.name.as_ref().map(|n| n.span).unwrap_or(call.func.span);
    if let Some(prev) = st.metrics.iter().position(|x| x.name == name) {
        let _ = prev;
        return Err(Diagnostic::new(
            "duplicate-name",
            name_span,
            format!("two metrics are called `{name}`"),
        )
        .with_label("second metric")
        .with_help("name them: metrics { acc_train = accuracy(..) }"));
    }
    let batched = |st: &State, n: NodeId, e: &Expr| -> R<u64> {
        let s = st.graph.shape(n);
        if s.0.first() != Some(&Dim::Batch) {
            return Err(Diagnostic::new(
                "bad-metric",
                e.span,
                format!("a metric needs a per-example tensor (first dimension B), but this is {s}"),
            )
            .with_label(format!("this is {s}")));
        }
        Ok(s.fixed_numel())
    };
    let same = |st: &State, a: NodeId, b: NodeId, ea: &Expr, eb: &Expr| -> R<()> {
        let (sa, sb) = (st.graph.shape(a), st.graph.shape(b));
        if sa != sb {
            return Err(Diagnostic::new(
                "shape-mismatch",
                call.span,
                format!(
                    "`{fname}` needs labels and predictions of the same shape, got {sa} and {sb}"
                ),
            )
            .with_secondary(ea.span, format!("this is {sa}"))
            .with_secondary(eb.span, format!("this is {sb}")));
        }
        Ok(())
    };
    let (kind, per_example) =
        match fname {
            "accuracy" => {
                let b = args::bind(fname, call, &[req("labels"), req("predictions")])?;
                let mut lw = st.lowerer();
                let l = lw.lower(b.req(0))?;
                let p = lw.lower(b.req(1))?;
                same(st, l, p, b.req(0), b.req(1))?;
                let per = batched(st, l, b.req(0))?;
                let g = &mut st.graph;
                g.current_span = Some(call.span);
                let lf = g.cast(l, DType::F32);
                let pf = g.cast(p, DType::F32);
                let eq = g.binary(BinaryOp::Eq, lf, pf);
                let sum = g.sum_all(eq);
                g.current_span = None;
                st.metric_outputs.push(Output {
                    name: specc_runtime::metrics::MetricOutput::Sum.name(&name),
                    node: sum,
                });
                (MetricKind::Accuracy, per)
            }
            "auc" => {
                let b = args::bind(
                    fname,
                    call,
                    &[req("labels"), req("predictions"), opt("num_thresholds")],
                )?;
                let mut lw = st.lowerer();
                let l = lw.lower(b.req(0))?;
                let p = lw.float(b.req(1))?;
                same(st, l, p, b.req(0), b.req(1))?;
                let per = batched(st, l, b.req(0))?;
                let t = match b.get(2) {
                    Some(e) => {
                        let t = args::eval_count(e, "num_thresholds")?;
                        if !(2..=100_000).contains(&t) {
                            return Err(Diagnostic::new(
                                "bad-metric",
                                e.span,
                                format!("num_thresholds must be between 2 and 100000, got {t}"),
                            )
                            .with_label("out of range"));
                        }
                        t as u32
                    }
                    None => 200,
                };
                let lf = st.graph.cast(l, DType::F32);
                st.metric_outputs.push(Output {
                    name: specc_runtime::metrics::MetricOutput::Labels.name(&name),
                    node: lf,
                });
                st.metric_outputs.push(Output {
                    name: specc_runtime::metrics::MetricOutput::Predictions.name(&name),
                    node: p,
                });
                (MetricKind::Auc { num_thresholds: t }, per)
            }
            "mean" => {
                let b = args::bind(fname, call, &[req("values")])?;
                let v = st.lowerer().float(b.req(0))?;
                let per = batched(st, v, b.req(0))?;
                let sum = st.graph.sum_all(v);
                st.metric_outputs.push(Output {
                    name: specc_runtime::metrics::MetricOutput::Sum.name(&name),
                    node: sum,
                });
                (MetricKind::Mean, per)
            }
            other => return Err(Diagnostic::new(
                "bad-metric",
                call.func.span,
                format!("unknown metric `{other}`"),
            )
            .with_label("not a metric")
            .with_help(
                "metrics: accuracy(labels, predictions), auc(labels, probabilities), mean(values)",
            )),
        };
    let _ = shape::broadcast;
    st.metrics.push(Metric {
        name,
        kind,
        per_example,
    });
    Ok(())
}

pub(crate) fn clip(call: &Call) -> R<ClipSpec> {
    let name = call.func.name.as_str();
    let positive = args::eval_positive;
    let kind = match name {
        "by_value" => {
            let b = args::bind(name, call, &[req("clip_value_min"), req("clip_value_max")])?;
            let bound = |e: &Expr| -> R<ClipBound> {
                let (dims, values) = constant_values(e)?;
                Ok(ClipBound { dims, values })
            };
            let (min, max) = (bound(b.req(0))?, bound(b.req(1))?);
            if min.dims.is_empty() && max.dims.is_empty() && min.values[0] > max.values[0] {
                return Err(Diagnostic::new(
                    "bad-argument",
                    call.span,
                    format!(
                        "clip_value_min ({}) is larger than clip_value_max ({})",
                        min.values[0], max.values[0]
                    ),
                )
                .with_label("empty range"));
            }
            ClipKind::ByValue { min, max }
        }
        "by_norm" => {
            let b = args::bind(name, call, &[req("clip_norm"), opt("axes")])?;
            let clip_norm = positive(b.req(0), "clip_norm")?;
            let axes = match b.get(1) {
                Some(e) if !args::is_none(e) => Some(args::eval_int_list(e)?),
                _ => None,
            };
            ClipKind::ByNorm { clip_norm, axes }
        }
        "by_average_norm" => {
            let b = args::bind(name, call, &[req("clip_norm")])?;
            ClipKind::ByAverageNorm {
                clip_norm: positive(b.req(0), "clip_norm")?,
            }
        }
        "global_norm" | "by_global_norm" => {
            let b = args::bind(name, call, &[req("clip_norm"), opt("use_norm")])?;
            let clip_norm = positive(b.req(0), "clip_norm")?;
            let use_norm = match b.get(1) {
                Some(e) if !args::is_none(e) => Some(positive(e, "use_norm")?),
                _ => None,
            };
            ClipKind::GlobalNorm { clip_norm, use_norm }
        }
        other => {
            return Err(Diagnostic::new(
                "unknown-function",
                call.func.span,
                format!("unknown clipping `{other}`"),
            )
            .with_label("not a clipping rule")
            .with_help("clip by_value(min, max), by_norm(clip_norm, axes = ..), by_average_norm(clip_norm) or global_norm(clip_norm, use_norm = ..)"))
        }
    };
    Ok(ClipSpec {
        kind,
        span: call.span,
    })
}

pub(crate) fn ema(decl: &EmaDecl) -> R<EmaSpec> {
    let decay = args::eval_number(&decl.decay)?;
    if !(0.0..=1.0).contains(&decay) {
        return Err(Diagnostic::new(
            "bad-argument",
            decl.decay.span,
            format!("the moving average's decay must be in [0, 1], got {decay}"),
        )
        .with_label("out of range"));
    }
    // Shadows of variables start at the variable's value: zero_debias has no
    // effect on them (as in TF), but is accepted.
    let flags = flag_options(
        &decl.options,
        &["num_updates", "zero_debias"],
        "`ema` has",
        "ema DECAY, num_updates = true|false, zero_debias = true|false",
    )?;
    let num_updates = flag(&flags, "num_updates").unwrap_or(false);
    Ok(EmaSpec {
        decay: decay as f32,
        num_updates,
        span: decl.span,
    })
}
