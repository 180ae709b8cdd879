//! `tf.feature_column` in the `features` block: the column functions with
//! TF's names, argument names and defaults, and the lowering of
//! `input_layer` and `linear_model` to graph ops.
//!
//! Owns: building the runtime's column descriptions
//! ([`specc_runtime::feature_column`]) from a spec (`numeric_column`,
//! `bucketized_column`, `categorical_column_with_*`, `crossed_column`,
//! `weighted_categorical_column`, `indicator_column`, `embedding_column`,
//! `shared_embeddings`), their diagnostics (zero sizes, unsorted boundaries,
//! duplicate vocabularies, unknown columns with "did you mean"), the graph
//! inputs each column needs (created once per column, on first use), and the
//! lowering of `input_layer` (dense columns concatenated in TF's order, by
//! column name) and `linear_model` (a weight per id and per dense value, a
//! bias), with TF1's variable names (`input_layer/<name>_embedding/
//! embedding_weights`, `linear_model/<name>/weights`,
//! `linear_model/bias_weights`).
//!
//! Rules:
//! - a key argument of a base column is the raw feature key (an identifier or
//!   a string); in `crossed_column`'s list a string is a raw key (TF's string
//!   key, crossed as a string; `int64("k")` crosses an int64 key raw) and an
//!   identifier names a categorical column binding (TF's column object);
//! - a categorical column gives at most `max_values` ids per example (an
//!   argument of the base columns, default 1): a cross the product of its
//!   keys' (or its own `max_values`), a bucketized column its source's shape;
//! - sequence columns (`sequence_numeric_column`,
//!   `sequence_categorical_column_with_*`) bound their steps with
//!   `max_values` = T and go only in `sequence_input_layer` (TF's
//!   `SequenceFeatures`): per step an embedding row (one gather, no combining
//!   across steps), a one-hot, or a numeric column's d values, `[B, T, D]`
//!   concatenated by column name; the layer's length (`sequence_length(
//!   layer)`, int32 `[B]`) is its first column's `<name>/sequence_length`
//!   input, the others' equality a runtime assertion; a sequence column
//!   elsewhere, or another column in that layer, is a caret error;
//! - a categorical column reaches the step as two inputs of `[B, max_values]`
//!   (`<name>/ids` i32, `<name>/weights` f32, see the runtime's
//!   `FeatureInput`), a numeric column as one f32 input `[B, shape]` named by
//!   its key.
//!
//! Invariants: every column description is checked before it is built (the
//! runtime's transforms never see a zero size, unsorted boundaries or a
//! duplicate vocabulary entry); the inputs of one column (same description,
//! same `max_values`) are created once and shared by every use; ids are
//! range-checked by the runtime (`check_range`, `ClassId { num_classes }`)
//! exactly when an embedding or `linear_model` looks them up; an embedding
//! table's only use is a `gather`, so its gradient is an `IndexedSlices` and
//! sparse optimizers update only the rows a batch touched (a padding slot,
//! id -1, touches none).

use std::collections::HashMap;
use std::num::NonZeroU64;

use specc_grammar::ast::{Binding, Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::abi::AssertionValue;
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::feature_column::{
    CategoricalColumn, CrossKey, FeatureInput, KeyDType, NumericColumn, SequenceColumn, Vocabulary,
};
use specc_runtime::init::Initializer;
use specc_runtime::prng::fnv1a64;

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, UnaryOp};
use crate::model::{Assertion, ClipKind, InputInfo, InputRole, VarInfo, VarKind};

/// Every function of the `features` block (for "did you mean").
pub const FEATURE_FUNCTIONS: &[&str] = &[
    "numeric",
    "integer",
    "numeric_column",
    "bucketized_column",
    "categorical_column_with_hash_bucket",
    "categorical_column_with_identity",
    "categorical_column_with_vocabulary_list",
    "categorical_column_with_vocabulary_file",
    "crossed_column",
    "weighted_categorical_column",
    "indicator_column",
    "embedding_column",
    "shared_embeddings",
    "input_layer",
    "linear_model",
    "sequence_numeric_column",
    "sequence_categorical_column_with_identity",
    "sequence_categorical_column_with_hash_bucket",
    "sequence_categorical_column_with_vocabulary_list",
    "sequence_categorical_column_with_vocabulary_file",
    "sequence_input_layer",
    "sequence_length",
];

/// What the env calls a binding of a categorical column (its uses as a
/// tensor are refused with help, see `expr::Lowerer::name`).
pub const CATEGORICAL: &str = "categorical column";
/// What the env calls a binding of an indicator or embedding column.
pub const DENSE_COLUMN: &str = "feature column";

/// `embedding_lookup_sparse`'s combiners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combiner {
    Sum,
    Mean,
    Sqrtn,
}

impl Combiner {
    fn parse(e: &Expr) -> R<Combiner> {
        let s = match &e.kind {
            ExprKind::Str(s) | ExprKind::Ident(s) => s.as_str(),
            _ => {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    e.span,
                    format!(
                        "expected \"mean\", \"sqrtn\" or \"sum\", found {}",
                        args::describe(e)
                    ),
                )
                .with_label("not a combiner"))
            }
        };
        match s {
            "sum" => Ok(Combiner::Sum),
            "mean" => Ok(Combiner::Mean),
            "sqrtn" => Ok(Combiner::Sqrtn),
            other => {
                let mut d = Diagnostic::new(
                    Code::UnknownChoice,
                    e.span,
                    format!("unknown combiner `{other}`"),
                )
                .with_label("not a combiner");
                if let Some(s) = args::suggest(other, ["mean", "sqrtn", "sum"]) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                Err(d.with_help("TF's combiners: \"mean\", \"sqrtn\", \"sum\""))
            }
        }
    }
}

/// A categorical column with the number of ids it gives an example.
#[derive(Clone, Debug, PartialEq)]
pub struct Categorical {
    pub column: CategoricalColumn,
    pub max_values: usize,
    /// A `sequence_categorical_column_with_*` (TF's
    /// `SequenceCategoricalColumn`): one id per step, `max_values` steps.
    pub sequence: bool,
}

/// `embedding_column` (or one column of `shared_embeddings`).
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    pub categorical: Categorical,
    pub dimension: u32,
    pub combiner: Combiner,
    pub initializer: Initializer,
    pub max_norm: Option<f32>,
    pub trainable: bool,
    /// `shared_embeddings`: the collection (and table variable) name.
    pub shared: Option<String>,
}

/// A feature column, as the spec built it.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    Numeric(NumericColumn),
    Categorical(Categorical),
    Indicator(Categorical),
    Embedding(Box<Embedding>),
    /// The columns `shared_embeddings` returns (one table).
    Shared(Vec<Embedding>),
    /// `sequence_numeric_column`: `shape` values per step, at most
    /// `max_steps` steps (`default_value` always set: TF's 0.0).
    SequenceNumeric {
        column: NumericColumn,
        max_steps: usize,
    },
}

impl Column {
    /// TF's `_FeatureColumn.name` (the key `input_layer` sorts by).
    fn name(&self) -> String {
        match self {
            Column::Numeric(n) => n.name(),
            Column::Categorical(c) => c.column.name(),
            Column::Indicator(c) => format!("{}_indicator", c.column.name()),
            Column::Embedding(e) => match e.shared {
                Some(_) => format!("{}_shared_embedding", e.categorical.column.name()),
                None => format!("{}_embedding", e.categorical.column.name()),
            },
            Column::Shared(_) => "shared_embeddings".into(),
            Column::SequenceNumeric { column, .. } => column.name(),
        }
    }

    /// A column `sequence_input_layer` takes (TF's `SequenceDenseColumn`):
    /// a sequence numeric column, or an indicator or embedding of a sequence
    /// categorical column.
    fn is_sequence_dense(&self) -> bool {
        match self {
            Column::SequenceNumeric { .. } => true,
            Column::Indicator(c) => c.sequence,
            Column::Embedding(e) => e.categorical.sequence,
            _ => false,
        }
    }

    /// Whether the column is (or wraps) a sequence column.
    fn is_sequence(&self) -> bool {
        match self {
            Column::Categorical(c) => c.sequence,
            Column::Shared(list) => list.iter().any(|e| e.categorical.sequence),
            other => other.is_sequence_dense(),
        }
    }
}

/// A column with the span of the expression that built or named it.
#[derive(Clone, Debug)]
struct Spanned {
    column: Column,
    span: Span,
}

/// The two inputs of one categorical column.
#[derive(Clone, Debug)]
struct CatInputs {
    categorical: Categorical,
    /// The ids of weights `<= 0` are padding (see [`categorical_inputs`]).
    prune: bool,
    ids_input: u32,
    ids: NodeId,
    weights: NodeId,
    check_range: bool,
}

/// The feature-column state of a spec being checked.
#[derive(Default)]
pub struct Features {
    /// Column bindings of the `features` block, by binding name.
    bound: HashMap<String, Spanned>,
    numeric_inputs: Vec<(NumericColumn, NodeId)>,
    categorical_inputs: Vec<CatInputs>,
    /// Variables created here, by TF name (a shared table is created once).
    vars: HashMap<String, NodeId>,
    /// How many `input_layer` / `linear_model` scopes exist (TF's
    /// `input_layer`, `input_layer_1`, ...).
    scopes: HashMap<&'static str, usize>,
    /// The `[B, max_steps * shape]` input of each sequence numeric column.
    sequence_dense_inputs: Vec<(NumericColumn, usize, NodeId)>,
    /// The `[B]` length input of each sequence column.
    sequence_length_inputs: Vec<(SequenceColumn, usize, NodeId)>,
    /// The length `[B]` of each `sequence_input_layer` binding, by name.
    layer_lengths: HashMap<String, NodeId>,
}

/// Whether a features-block function is handled here.
pub fn handles(name: &str) -> bool {
    FEATURE_FUNCTIONS.contains(&name) && name != "numeric" && name != "integer"
}

/// One binding of the `features` block whose value is one of this module's
/// functions.
pub(crate) fn feature(st: &mut State, b: &Binding, call: &Call) -> R<()> {
    let name = &b.name.name;
    match call.func.name.as_str() {
        "input_layer" | "linear_model" | "sequence_input_layer" | "sequence_length" => {
            let saved = st.graph.current_span;
            st.graph.current_span = Some(b.value.span);
            let r = match call.func.name.as_str() {
                "input_layer" => input_layer(st, call),
                "linear_model" => linear_model(st, call),
                "sequence_length" => sequence_length(st, call),
                _ => sequence_input_layer(st, call).map(|(values, length)| {
                    st.features.layer_lengths.insert(name.clone(), length);
                    values
                }),
            };
            st.graph.current_span = saved;
            let node = r?;
            st.env.define(name, b.name.span, "feature", Some(node))?;
            st.bindings.push((name.clone(), node));
            st.binding_spans.push(b.value.span);
            Ok(())
        }
        _ => {
            let c = column(st, &b.value)?;
            let (what, value) = match &c.column {
                Column::Numeric(n) => {
                    let saved = st.graph.current_span;
                    st.graph.current_span = Some(b.value.span);
                    let node = numeric_input(st, n, b.value.span);
                    st.graph.current_span = saved;
                    ("numeric column", Some(node))
                }
                Column::Categorical(_) => (CATEGORICAL, None),
                _ => (DENSE_COLUMN, None),
            };
            st.env.define(name, b.name.span, what, value)?;
            st.features.bound.insert(name.clone(), c);
            Ok(())
        }
    }
}

/// The error for an unknown function in the `features` block.
pub(crate) fn unknown(call: &Call) -> Diagnostic {
    let mut d = Diagnostic::new(
        Code::UnknownFunction,
        call.func.span,
        format!("unknown feature column `{}`", call.func.name),
    )
    .with_label("not a feature column");
    if let Some(s) = args::suggest(&call.func.name, FEATURE_FUNCTIONS.iter().copied()) {
        d = d.with_help(format!("did you mean `{s}`?"));
    }
    d.with_help(
        "feature columns: numeric_column, bucketized_column, categorical_column_with_hash_bucket, \
         categorical_column_with_identity, categorical_column_with_vocabulary_list, \
         categorical_column_with_vocabulary_file, crossed_column, weighted_categorical_column, \
         indicator_column, embedding_column, shared_embeddings, sequence_numeric_column, \
         sequence_categorical_column_with_identity, sequence_categorical_column_with_hash_bucket, \
         sequence_categorical_column_with_vocabulary_list, \
         sequence_categorical_column_with_vocabulary_file; layers: input_layer, linear_model, \
         sequence_input_layer (its length: sequence_length) (and the plain numeric, integer)",
    )
}

fn bad(code: Code, span: Span, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::new(code, span, msg).with_label(label)
}

/// A raw feature key: an identifier or a string.
fn key(e: &Expr) -> R<String> {
    match &e.kind {
        ExprKind::Ident(s) | ExprKind::Str(s) if !s.is_empty() => Ok(s.clone()),
        _ => Err(bad(
            Code::ArgumentType,
            e.span,
            format!(
                "expected a feature key (a name or a string), found {}",
                args::describe(e)
            ),
            "not a feature key",
        )),
    }
}

fn key_dtype(e: Option<&Expr>) -> R<KeyDType> {
    let Some(e) = e else {
        return Ok(KeyDType::String);
    };
    match &e.kind {
        ExprKind::Ident(s) | ExprKind::Str(s) => match s.as_str() {
            "string" | "tf.string" => Ok(KeyDType::String),
            "int64" | "tf.int64" => Ok(KeyDType::Int64),
            other => Err(bad(
                Code::UnknownChoice,
                e.span,
                format!("unknown dtype `{other}`"),
                "expected string or int64",
            )),
        },
        _ => Err(bad(
            Code::ArgumentType,
            e.span,
            format!("expected `string` or `int64`, found {}", args::describe(e)),
            "expected string or int64",
        )),
    }
}

/// A positive count that fits an int32 id (`what` names the argument).
fn bucket_count(e: &Expr, what: &str) -> R<u64> {
    let v = args::eval_count(e, what)?;
    if v == 0 || v > i32::MAX as u64 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be in [1, 2^31), got {v}"),
            if v == 0 { "zero" } else { "too large" },
        ));
    }
    Ok(v)
}

fn max_values(e: Option<&Expr>) -> R<usize> {
    let Some(e) = e else { return Ok(1) };
    let v = args::eval_count(e, "max_values")?;
    if v == 0 || v > 1 << 16 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            e.span,
            format!("max_values must be in [1, 65536], got {v}"),
            "out of range",
        )
        .with_help("max_values bounds the values one example has for this key"));
    }
    Ok(v as usize)
}

/// A column expression: a binding's name or a column call.
fn column(st: &mut State, e: &Expr) -> R<Spanned> {
    let spanned = |column| Spanned {
        column,
        span: e.span,
    };
    match &e.kind {
        ExprKind::Ident(n) => {
            if let Some(c) = st.features.bound.get(n) {
                return Ok(Spanned {
                    column: c.column.clone(),
                    span: e.span,
                });
            }
            match st.env.entries.get(n) {
                Some(entry) if entry.value.is_none() => {
                    Err(Diagnostic::new(Code::Poisoned, e.span, ""))
                }
                Some(entry) => Err(Diagnostic::new(
                    Code::ArgumentType,
                    e.span,
                    format!("`{n}` is a {}, not a feature column", entry.what),
                )
                .with_label("not a feature column")
                .with_secondary(entry.span, "defined here")
                .with_help(
                    "columns are bound in the features block, e.g. age = numeric_column(age)",
                )),
                None => {
                    let mut d = Diagnostic::new(
                        Code::UnknownName,
                        e.span,
                        format!("unknown feature column `{n}`"),
                    )
                    .with_label("not defined");
                    if let Some(s) = args::suggest(n, st.features.bound.keys().map(|k| k.as_str()))
                    {
                        d = d.with_help(format!("did you mean `{s}`?"));
                    } else {
                        d = d.with_help(
                            "bind the column first in the features block, e.g. city = categorical_column_with_hash_bucket(city, 100)",
                        );
                    }
                    Err(d)
                }
            }
        }
        ExprKind::Call(c) => {
            let col = match c.func.name.as_str() {
                "numeric_column" => Column::Numeric(numeric_column(c)?),
                "bucketized_column" => bucketized_column(st, c)?,
                "categorical_column_with_hash_bucket" => hash_bucket(c)?,
                "categorical_column_with_identity" => identity(c)?,
                "categorical_column_with_vocabulary_list" => vocabulary_list(c)?,
                "categorical_column_with_vocabulary_file" => vocabulary_file(st, c)?,
                "crossed_column" => crossed_column(st, c)?,
                "weighted_categorical_column" => weighted(st, c)?,
                "indicator_column" => {
                    let b = args::bind("indicator_column", c, &[req("categorical_column")])?;
                    Column::Indicator(categorical(st, b.req(0))?)
                }
                "embedding_column" => embedding_column(st, c)?,
                "shared_embeddings" => shared_embeddings(st, c)?,
                "sequence_numeric_column" => sequence_numeric_column(c)?,
                "sequence_categorical_column_with_identity" => sequence(c, identity(c)?)?,
                "sequence_categorical_column_with_hash_bucket" => sequence(c, hash_bucket(c)?)?,
                "sequence_categorical_column_with_vocabulary_list" => {
                    sequence(c, vocabulary_list(c)?)?
                }
                "sequence_categorical_column_with_vocabulary_file" => {
                    sequence(c, vocabulary_file(st, c)?)?
                }
                "input_layer" | "linear_model" | "sequence_input_layer" | "sequence_length" => {
                    return Err(Diagnostic::new(
                        Code::ArgumentType,
                        e.span,
                        format!("`{}` gives a tensor, not a feature column", c.func.name),
                    )
                    .with_label("not a feature column")
                    .with_help(
                        "bind it in the features block and use the binding in the computation",
                    ))
                }
                _ => return Err(unknown(c)),
            };
            Ok(spanned(col))
        }
        _ => Err(bad(
            Code::ArgumentType,
            e.span,
            format!("expected a feature column, found {}", args::describe(e)),
            "not a feature column",
        )),
    }
}

/// A column expression that must be categorical.
fn categorical(st: &mut State, e: &Expr) -> R<Categorical> {
    let c = column(st, e)?;
    match c.column {
        Column::Categorical(cat) => Ok(cat),
        other => Err(bad(Code::ArgumentType,
            e.span,
            format!(
                "`{}` is not a categorical column",
                other.name()
            ),
            "not categorical",
        )
        .with_help("expected a categorical_column_with_*, bucketized_column, crossed_column or weighted_categorical_column")),
    }
}

fn numeric_column(c: &Call) -> R<NumericColumn> {
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
    let normalizer = b.get(4).map(super::inputs::norm_expr).transpose()?;
    Ok(NumericColumn {
        key,
        shape,
        default_value,
        normalizer,
    })
}

fn bucketized_column(st: &mut State, c: &Call) -> R<Column> {
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

fn hash_bucket(c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("hash_bucket_size"),
            opt("dtype"),
            opt("max_values"),
        ],
    )?;
    let key = key(b.req(0))?;
    let size = bucket_count(b.req(1), "hash_bucket_size")?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::HashBucket {
            key,
            hash_bucket_size: nonzero(size),
            dtype: key_dtype(b.get(2))?,
        },
        max_values: max_values(b.get(3))?,
        sequence: false,
    }))
}

fn nonzero(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap_or(NonZeroU64::MIN)
}

fn identity(c: &Call) -> R<Column> {
    let b = args::bind(
        &c.func.name,
        c,
        &[
            req("key"),
            req("num_buckets"),
            opt("default_value"),
            opt("max_values"),
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
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Identity {
            key,
            num_buckets: n,
            default_value,
        },
        max_values: max_values(b.get(3))?,
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

fn vocabulary_list(c: &Call) -> R<Column> {
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
        ],
    )?;
    let key = key(b.req(0))?;
    let vocabulary = vocabulary(b.req(1), b.get(2))?;
    let (default_value, num_oov_buckets) = oov(b.get(3), b.get(4))?;
    check_buckets(c.span, vocabulary.len() as u64 + num_oov_buckets)?;
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Vocabulary {
            key,
            vocabulary,
            vocabulary_file: None,
            num_oov_buckets,
            default_value,
        },
        max_values: max_values(b.get(5))?,
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

fn vocabulary_file(st: &mut State, c: &Call) -> R<Column> {
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
    Ok(Column::Categorical(Categorical {
        column: CategoricalColumn::Vocabulary {
            key,
            vocabulary,
            vocabulary_file: Some(path),
            num_oov_buckets,
            default_value,
        },
        max_values: max_values(b.get(6))?,
        sequence: false,
    }))
}

fn crossed_column(st: &mut State, c: &Call) -> R<Column> {
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
    for it in items {
        match &it.kind {
            ExprKind::Str(s) if !s.is_empty() => keys.push(CrossKey::Raw {
                key: s.clone(),
                dtype: KeyDType::String,
            }),
            ExprKind::Call(k) if k.func.name == "int64" || k.func.name == "string" => {
                let kb = args::bind(&k.func.name, k, &[req("key")])?;
                keys.push(CrossKey::Raw {
                    key: key(kb.req(0))?,
                    dtype: if k.func.name == "int64" {
                        KeyDType::Int64
                    } else {
                        KeyDType::String
                    },
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
    let max_values = match b.get(3) {
        Some(e) => max_values(Some(e))?,
        None => product,
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

fn weighted(st: &mut State, c: &Call) -> R<Column> {
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

/// `dimension`, `combiner`, `initializer`, `max_norm`, `trainable` of an
/// embedding column (bound at `first`).
fn embedding_args(
    b: &args::Bound,
    first: usize,
    table_name: &str,
    rows: u64,
) -> R<(u32, Combiner, Initializer, Option<f32>, bool)> {
    let de = b.req(first);
    let dimension = args::eval_count(de, "dimension")?;
    if dimension == 0 || dimension > 1 << 20 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            de.span,
            format!("dimension must be in [1, 2^20], got {dimension}"),
            if dimension == 0 { "zero" } else { "too large" },
        ));
    }
    let combiner = b
        .get(first + 1)
        .map(Combiner::parse)
        .transpose()?
        .unwrap_or(Combiner::Mean);
    let initializer = match b.get(first + 2) {
        Some(e) if !args::is_none(e) => {
            super::params::initializer(e, table_name, &[rows as u32, dimension as u32])?
        }
        // TF: truncated_normal(mean 0, stddev 1/sqrt(dimension)); the seed is
        // derived from the table's name, like a parameter's.
        _ => Initializer::TruncatedNormal {
            mean: 0.0,
            stddev: (1.0 / (dimension as f64).sqrt()) as f32,
            seed: fnv1a64(table_name.as_bytes()),
        },
    };
    let max_norm = match b.get(first + 3) {
        Some(e) if !args::is_none(e) => Some(args::eval_positive(e, "max_norm")?),
        _ => None,
    };
    let trainable = b
        .get(first + 4)
        .map(args::eval_bool)
        .transpose()?
        .unwrap_or(true);
    Ok((dimension as u32, combiner, initializer, max_norm, trainable))
}

const EMBEDDING_ARGS: [args::Param; 5] = [
    req("dimension"),
    opt("combiner"),
    opt("initializer"),
    opt("max_norm"),
    opt("trainable"),
];

fn embedding_column(st: &mut State, c: &Call) -> R<Column> {
    let mut params = vec![req("categorical_column")];
    params.extend(EMBEDDING_ARGS);
    let b = args::bind("embedding_column", c, &params)?;
    let cat = categorical(st, b.req(0))?;
    // The table's name in an input_layer (the initializer's default seed).
    let table = format!("{}_embedding/embedding_weights", cat.column.name());
    let (dimension, combiner, initializer, max_norm, trainable) =
        embedding_args(&b, 1, &table, cat.column.num_buckets())?;
    Ok(Column::Embedding(Box::new(Embedding {
        categorical: cat,
        dimension,
        combiner,
        initializer,
        max_norm,
        trainable,
        shared: None,
    })))
}

fn shared_embeddings(st: &mut State, c: &Call) -> R<Column> {
    let mut params = vec![req("categorical_columns")];
    params.extend(EMBEDDING_ARGS);
    params.push(opt("shared_embedding_collection_name"));
    let b = args::bind("shared_embeddings", c, &params)?;
    let le = b.req(0);
    let ExprKind::List(items) = &le.kind else {
        return Err(bad(
            Code::ArgumentType,
            le.span,
            format!(
                "categorical_columns must be a list, found {}",
                args::describe(le)
            ),
            "not a list",
        ));
    };
    if items.is_empty() {
        return Err(bad(
            Code::EmptyArgument,
            le.span,
            "shared_embeddings needs at least one column",
            "empty",
        ));
    }
    let mut cats = Vec::new();
    for it in items {
        let cat = categorical(st, it)?;
        if cat.sequence {
            return Err(sequence_refused(
                it.span,
                &cat.column.name(),
                "shared_embeddings",
            ));
        }
        if let Some(first) = cats.first() {
            let first: &Categorical = first;
            if first.column.num_buckets() != cat.column.num_buckets() {
                return Err(bad(Code::ConflictingArguments,
                    it.span,
                    format!(
                        "all columns of shared_embeddings have the same number of buckets: `{}` has {}, `{}` has {}",
                        first.column.name(),
                        first.column.num_buckets(),
                        cat.column.name(),
                        cat.column.num_buckets()
                    ),
                    "different num_buckets",
                ));
            }
        }
        cats.push(cat);
    }
    let name = match b.get(6) {
        Some(e) => args::eval_string(e)?.to_string(),
        None => {
            let mut names: Vec<String> = cats.iter().map(|c| c.column.name()).collect();
            names.sort();
            format!("{}_shared_embedding", names.join("_"))
        }
    };
    let table = format!("{name}/embedding_weights");
    let rows = cats[0].column.num_buckets();
    let (dimension, combiner, initializer, max_norm, trainable) =
        embedding_args(&b, 1, &table, rows)?;
    Ok(Column::Shared(
        cats.into_iter()
            .map(|categorical| Embedding {
                categorical,
                dimension,
                combiner,
                initializer: initializer.clone(),
                max_norm,
                trainable,
                shared: Some(name.clone()),
            })
            .collect(),
    ))
}

/// A graph input name not taken yet (`name`, else `name_1`, ...).
fn unique_input_name(st: &State, name: &str) -> String {
    let taken = |n: &str| st.graph.inputs.iter().any(|l| l.name == n);
    if !taken(name) {
        return name.to_string();
    }
    (1..)
        .map(|i| format!("{name}_{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| name.to_string())
}

fn add_input(
    st: &mut State,
    name: &str,
    span: Span,
    dtype: DType,
    shape: Shape,
    spec: InputSpec,
) -> NodeId {
    let name = unique_input_name(st, name);
    let spec = InputSpec {
        name: name.clone(),
        ..spec
    };
    let i = st.graph.add_input(&name, dtype, shape);
    st.inputs.push(InputInfo {
        role: InputRole::Feature,
        spec,
        span,
    });
    st.graph.input(i)
}

/// The dense input of a numeric column, f32 `[B, shape]` (created once).
fn numeric_input(st: &mut State, n: &NumericColumn, span: Span) -> NodeId {
    if let Some((_, node)) = st.features.numeric_inputs.iter().find(|(c, _)| c == n) {
        return *node;
    }
    let node = add_input(
        st,
        &n.name(),
        span,
        DType::F32,
        Shape(vec![Dim::Batch, Dim::Fixed(n.shape as u32)]),
        InputSpec {
            name: String::new(),
            columns: vec![n.key.clone()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Dense(n.clone())),
        },
    );
    st.features.numeric_inputs.push((n.clone(), node));
    node
}

/// The raw keys a categorical column reads.
fn raw_keys(c: &CategoricalColumn, out: &mut Vec<String>) {
    match c {
        CategoricalColumn::HashBucket { key, .. }
        | CategoricalColumn::Identity { key, .. }
        | CategoricalColumn::Vocabulary { key, .. } => out.push(key.clone()),
        CategoricalColumn::Bucketized { source, .. } => out.push(source.key.clone()),
        CategoricalColumn::Crossed { keys, .. } => {
            for k in keys {
                match k {
                    CrossKey::Raw { key, .. } => out.push(key.clone()),
                    CrossKey::Column(c) => raw_keys(c, out),
                }
            }
        }
        CategoricalColumn::Weighted {
            categorical,
            weight_feature_key,
        } => {
            raw_keys(categorical, out);
            out.push(weight_feature_key.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|k| seen.insert(k.clone()));
}

/// The ids `[B, max_values]` (i32) and weights (f32) of a categorical
/// column, created on first use; `check_range` (an embedding or
/// `linear_model` looks the ids up) is sticky. `prune_nonpositive`: the
/// consumer combines by `mean` or `sqrtn`, for which TF's
/// `safe_embedding_lookup_sparse` drops the ids of weights `<= 0` (it keeps
/// them for `sum`); a weighted column's ids are then a second ids input in
/// which those slots are padding, so the sparse update touches none of their
/// rows. The weights input is the same.
fn categorical_inputs(
    st: &mut State,
    cat: &Categorical,
    check_range: bool,
    prune_nonpositive: bool,
    span: Span,
) -> (NodeId, NodeId) {
    let n = cat.column.num_buckets();
    // Only a weighted column has weights other than 1.
    let prune = prune_nonpositive && matches!(cat.column, CategoricalColumn::Weighted { .. });
    if let Some(k) = st
        .features
        .categorical_inputs
        .iter()
        .position(|c| c.categorical == *cat && c.prune == prune)
    {
        let entry = &mut st.features.categorical_inputs[k];
        if check_range && !entry.check_range {
            entry.check_range = true;
            let spec = &mut st.inputs[entry.ids_input as usize].spec;
            spec.kind = InputKind::ClassId {
                num_classes: Some(n as u32),
            };
            if let Some(FeatureInput::Ids { check_range, .. }) = &mut spec.feature {
                *check_range = true;
            }
        }
        return (entry.ids, entry.weights);
    }
    let mut keys = Vec::new();
    raw_keys(&cat.column, &mut keys);
    let name = cat.column.name();
    let shape = Shape(vec![Dim::Batch, Dim::Fixed(cat.max_values as u32)]);
    let ids_input = st.graph.inputs.len() as u32;
    let ids_name = if prune {
        format!("{name}/positive_weight_ids")
    } else {
        format!("{name}/ids")
    };
    let ids = add_input(
        st,
        &ids_name,
        span,
        DType::I32,
        shape.clone(),
        InputSpec {
            name: String::new(),
            columns: keys.clone(),
            kind: InputKind::ClassId {
                num_classes: check_range.then_some(n as u32),
            },
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Ids {
                column: cat.column.clone(),
                max_values: cat.max_values,
                check_range,
                prune_nonpositive_weights: prune,
            }),
        },
    );
    let shared = st
        .features
        .categorical_inputs
        .iter()
        .find(|c| c.categorical == *cat)
        .map(|c| c.weights);
    let weights = match shared {
        Some(w) => w,
        None => add_input(
            st,
            &format!("{name}/weights"),
            span,
            DType::F32,
            shape,
            InputSpec {
                name: String::new(),
                columns: keys,
                kind: InputKind::Float,
                normalizer: Normalizer::None,
                feature: Some(FeatureInput::Weights {
                    column: cat.column.clone(),
                    max_values: cat.max_values,
                }),
            },
        ),
    };
    st.features.categorical_inputs.push(CatInputs {
        categorical: cat.clone(),
        prune,
        ids_input,
        ids,
        weights,
        check_range,
    });
    (ids, weights)
}

/// A variable created by a layer (by TF name; a second request returns it).
fn variable(
    st: &mut State,
    name: &str,
    dims: &[u32],
    init: Initializer,
    trainable: bool,
    span: Span,
) -> NodeId {
    if let Some(&v) = st.features.vars.get(name) {
        return v;
    }
    let v = st.graph.add_var(name, DType::F32, Shape::fixed(dims));
    st.vars.push(VarInfo {
        kind: VarKind::Param { trainable },
        init,
        span: Some(span),
    });
    let node = st.graph.var(v);
    st.features.vars.insert(name.to_string(), node);
    node
}

/// TF's scope name for the next layer: `input_layer`, `input_layer_1`, ...
fn scope(st: &mut State, base: &'static str) -> String {
    let n = st.features.scopes.entry(base).or_insert(0);
    let s = if *n == 0 {
        base.to_string()
    } else {
        format!("{base}_{n}")
    };
    *n += 1;
    s
}

/// `[B, K]` weights as `[B, K, d]` (for rows `[B, K, d]`).
fn spread(st: &mut State, w: NodeId, d: u32) -> NodeId {
    let g = &mut st.graph;
    let mut s = g.shape(w).clone();
    s.0.push(Dim::Fixed(1));
    let w3 = g.reshape(w, &s);
    s.0.pop();
    s.0.push(Dim::Fixed(d));
    g.broadcast_to(w3, &s)
}

/// A per-row `[B]` divisor as `[B, d]`; 0 becomes 1 (a row without ids
/// stays 0, as TF's safe lookup gives).
fn row_divisor(st: &mut State, den: NodeId, d: u32) -> NodeId {
    let g = &mut st.graph;
    let zero = g.scalar(0.0);
    let zs = g.shape(den).clone();
    let zero = g.broadcast_to(zero, &zs);
    let is_zero = g.binary(BinaryOp::Eq, den, zero);
    let den = g.add(den, is_zero);
    let mut s = g.shape(den).clone();
    s.0.push(Dim::Fixed(1));
    let den2 = g.reshape(den, &s);
    s.0.pop();
    s.0.push(Dim::Fixed(d));
    g.broadcast_to(den2, &s)
}

/// TF's `safe_embedding_lookup_sparse(table, ids, weights, combiner,
/// max_norm)` over `[B, K]` ids and weights (padding: id -1, weight 0, which
/// gathers zeros and touches no row of the table's update): rows
/// gathered, clipped to `max_norm`, weighted, summed over K, and divided by
/// the row's weight sum (`mean`) or the root of its squared weights
/// (`sqrtn`); non-positive weights are pruned for those two, as TF does.
/// Gives `[B, D]`. The table's gradient is one `gather`'s (an IndexedSlices).
fn lookup(
    st: &mut State,
    table: NodeId,
    ids: NodeId,
    weights: NodeId,
    combiner: Combiner,
    max_norm: Option<f32>,
) -> NodeId {
    let d = st.graph.shape(table).0[1].fixed().unwrap_or(1);
    let mut rows = st.graph.gather(table, ids);
    if let Some(clip_norm) = max_norm {
        let mut r = [rows];
        crate::optim::clip::apply(
            &mut st.graph,
            &ClipKind::ByNorm {
                clip_norm,
                axes: Some(vec![2]),
            },
            &mut r,
        );
        rows = r[0];
    }
    let w = if combiner == Combiner::Sum {
        weights
    } else {
        let zero = st.graph.scalar(0.0);
        let s = st.graph.shape(weights).clone();
        let zero = st.graph.broadcast_to(zero, &s);
        st.graph.binary(BinaryOp::Max, weights, zero)
    };
    let wb = spread(st, w, d);
    let weighted = st.graph.mul(rows, wb);
    let sum = st.graph.reduce_sum(weighted, &[1]);
    match combiner {
        Combiner::Sum => sum,
        Combiner::Mean => {
            let ws = st.graph.reduce_sum(w, &[1]);
            let den = row_divisor(st, ws, d);
            st.graph.div(sum, den)
        }
        Combiner::Sqrtn => {
            let w2 = st.graph.mul(w, w);
            let ws = st.graph.reduce_sum(w2, &[1]);
            let root = st.graph.unary(UnaryOp::Sqrt, ws);
            let den = row_divisor(st, root, d);
            st.graph.div(sum, den)
        }
    }
}

/// `indicator_column`: per example, the sum over its slots of weight ×
/// one_hot(id, num_buckets) (counts for repeated ids, the weights of a
/// weighted column; an id out of range contributes nothing).
fn indicator(st: &mut State, cat: &Categorical, span: Span) -> NodeId {
    let (ids, w) = categorical_inputs(st, cat, false, false, span);
    let n = cat.column.num_buckets() as u32;
    let hot = st.graph.one_hot(ids, n);
    let wb = spread(st, w, n);
    let weighted = st.graph.mul(hot, wb);
    st.graph.reduce_sum(weighted, &[1])
}

/// The embedding table of a column in a layer's scope (a shared table is
/// one variable, named by its collection, whatever the layer).
fn embedding_table(st: &mut State, e: &Embedding, scope: &str, span: Span) -> NodeId {
    let name = match &e.shared {
        Some(collection) => format!("{collection}/embedding_weights"),
        None => format!(
            "{scope}/{}_embedding/embedding_weights",
            e.categorical.column.name()
        ),
    };
    let rows = e.categorical.column.num_buckets() as u32;
    // The default initializer's seed is derived from the name without the
    // scope (the same in every layer).
    variable(
        st,
        &name,
        &[rows, e.dimension],
        e.initializer.clone(),
        e.trainable,
        span,
    )
}

/// A dense-valued column's tensor `[B, width]` in a layer.
fn dense(st: &mut State, c: &Spanned, scope: &str, layer: &str) -> R<NodeId> {
    Ok(match &c.column {
        Column::Numeric(n) => numeric_input(st, n, c.span),
        Column::Categorical(cat) => match cat.column {
            // TF's bucketized column is dense too: its one-hot.
            CategoricalColumn::Bucketized { .. } => indicator(st, cat, c.span),
            _ => {
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    c.span,
                    format!(
                        "`{}` is a categorical column: {layer} needs dense columns",
                        cat.column.name()
                    ),
                )
                .with_label("categorical column")
                .with_help("wrap it in indicator_column or embedding_column inside input_layer"))
            }
        },
        Column::Indicator(cat) => indicator(st, cat, c.span),
        Column::Embedding(e) => {
            let table = embedding_table(st, e, scope, c.span);
            let prune = e.combiner != Combiner::Sum;
            let (ids, w) = categorical_inputs(st, &e.categorical, true, prune, c.span);
            lookup(st, table, ids, w, e.combiner, e.max_norm)
        }
        Column::Shared(_) => unreachable_shared(c.span)?,
        Column::SequenceNumeric { column, .. } => {
            return Err(sequence_refused(c.span, &column.name(), layer))
        }
    })
}

fn unreachable_shared(span: Span) -> R<NodeId> {
    Err(bad(
        Code::InternalError,
        span,
        "shared_embeddings columns are expanded first",
        "internal",
    ))
}

/// The columns of a layer call, shared embeddings expanded, sorted by TF's
/// column name (a duplicate name is an error, as in TF).
fn layer_columns(st: &mut State, what: &str, call: &Call, exprs: &[&Expr]) -> R<Vec<Spanned>> {
    if exprs.is_empty() {
        return Err(Diagnostic::new(
            Code::MissingArgument,
            call.span,
            format!("`{what}` needs at least one feature column"),
        )
        .with_label("no columns"));
    }
    let mut cols = Vec::new();
    for e in exprs {
        let c = column(st, e)?;
        match c.column {
            Column::Shared(list) => cols.extend(list.into_iter().map(|e| Spanned {
                column: Column::Embedding(Box::new(e)),
                span: c.span,
            })),
            column => cols.push(Spanned {
                column,
                span: c.span,
            }),
        }
    }
    cols.sort_by_key(|c| c.column.name());
    for w in cols.windows(2) {
        if w[0].column.name() == w[1].column.name() {
            return Err(Diagnostic::new(
                Code::DuplicateValue,
                w[1].span,
                format!("two columns of `{what}` are named `{}`", w[1].column.name()),
            )
            .with_label("same name")
            .with_secondary(w[0].span, "the other one")
            .with_help("TF refuses duplicate feature column names in one layer"));
        }
    }
    Ok(cols)
}

/// TF's `input_layer` and `linear_model` refuse sequence columns.
fn refuse_sequences(cols: &[Spanned], layer: &str) -> R<()> {
    match cols.iter().find(|c| c.column.is_sequence()) {
        Some(c) => Err(sequence_refused(c.span, &c.column.name(), layer)),
        None => Ok(()),
    }
}

/// `input_layer(columns..)`: the dense columns' tensors concatenated along
/// axis 1 in TF's order (sorted by column name), `[B, total width]`.
fn input_layer(st: &mut State, call: &Call) -> R<NodeId> {
    let (exprs, _) = args::bind_variadic("input_layer", call, "COLUMNS", &[])?;
    let cols = layer_columns(st, "input_layer", call, &exprs)?;
    refuse_sequences(&cols, "input_layer")?;
    let scope = scope(st, "input_layer");
    let mut parts = Vec::new();
    for c in &cols {
        parts.push(dense(st, c, &scope, "input_layer")?);
    }
    Ok(if parts.len() == 1 {
        parts[0]
    } else {
        st.graph.concat(&parts, 1)
    })
}

/// `linear_model(columns.., units = 1, sparse_combiner = "sum")`: per
/// categorical column a weight table `[num_buckets, units]` looked up with
/// the combiner, per dense column `x @ W` with `W [width, units]`, summed in
/// TF's order (by column name), plus a bias `[units]`; all zero-initialized.
fn linear_model(st: &mut State, call: &Call) -> R<NodeId> {
    let (exprs, b) = args::bind_variadic(
        "linear_model",
        call,
        "COLUMNS",
        &[opt("units"), opt("sparse_combiner"), opt("trainable")],
    )?;
    let units = match b.get(0) {
        Some(e) => {
            let u = args::eval_count(e, "units")?;
            if u == 0 || u > 1 << 20 {
                return Err(bad(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("units must be in [1, 2^20], got {u}"),
                    "out of range",
                ));
            }
            u as u32
        }
        None => 1,
    };
    let combiner = b
        .get(1)
        .map(Combiner::parse)
        .transpose()?
        .unwrap_or(Combiner::Sum);
    let trainable = b.get(2).map(args::eval_bool).transpose()?.unwrap_or(true);
    let cols = layer_columns(st, "linear_model", call, &exprs)?;
    refuse_sequences(&cols, "linear_model")?;
    let scope = scope(st, "linear_model");
    let mut sum: Option<NodeId> = None;
    for c in &cols {
        let name = format!("{scope}/{}/weights", c.column.name());
        let term = match &c.column {
            Column::Categorical(cat) => {
                let n = cat.column.num_buckets() as u32;
                let w = variable(
                    st,
                    &name,
                    &[n, units],
                    Initializer::Zeros,
                    trainable,
                    c.span,
                );
                let prune = combiner != Combiner::Sum;
                let (ids, weights) = categorical_inputs(st, cat, true, prune, c.span);
                lookup(st, w, ids, weights, combiner, None)
            }
            _ => {
                let x = dense(st, c, &scope, "linear_model")?;
                let width = st.graph.shape(x).0[1].fixed().unwrap_or(1);
                let w = variable(
                    st,
                    &name,
                    &[width, units],
                    Initializer::Zeros,
                    trainable,
                    c.span,
                );
                st.graph.matmul(x, w, false, false)
            }
        };
        sum = Some(match sum {
            Some(s) => st.graph.add(s, term),
            None => term,
        });
    }
    let bias = variable(
        st,
        &format!("{scope}/bias_weights"),
        &[units],
        Initializer::Zeros,
        trainable,
        call.span,
    );
    let sum =
        sum.ok_or_else(|| bad(Code::MissingArgument, call.span, "no columns", "no columns"))?;
    let s = st.graph.shape(sum).clone();
    let bias = st.graph.broadcast_to(bias, &s);
    Ok(st.graph.add(sum, bias))
}

/// A `sequence_categorical_column_with_*` call: its base column's
/// description, as a sequence (TF's `SequenceCategoricalColumn`).
fn sequence(c: &Call, base: Column) -> R<Column> {
    match base {
        Column::Categorical(cat) => Ok(Column::Categorical(Categorical {
            sequence: true,
            ..cat
        })),
        _ => Err(bad(
            Code::InternalError,
            c.span,
            "not a categorical column",
            "internal",
        )),
    }
}

/// `sequence_numeric_column(key, shape = (1,), default_value = 0.0, dtype,
/// normalizer_fn, max_values)`: `shape` values per step, `max_values` steps
/// at most (default 1).
fn sequence_numeric_column(c: &Call) -> R<Column> {
    let b = args::bind(
        "sequence_numeric_column",
        c,
        &[
            req("key"),
            opt("shape"),
            opt("default_value"),
            opt("dtype"),
            opt("normalizer_fn"),
            opt("max_values"),
        ],
    )?;
    if let Some(e) = b.get(2) {
        if matches!(e.kind, ExprKind::List(_)) {
            return Err(bad(
                Code::ArgumentType,
                e.span,
                "a sequence_numeric_column's default_value is one number",
                "not a number",
            ));
        }
    }
    // The numeric_column arguments, without max_values.
    let base = Call {
        args: c
            .args
            .iter()
            .enumerate()
            .filter(|(i, a)| a.name.as_ref().map_or(*i < 5, |n| n.name != "max_values"))
            .map(|(_, a)| a.clone())
            .collect(),
        ..c.clone()
    };
    let mut column = numeric_column(&base)?;
    let default = match b.get(2) {
        Some(e) => args::eval_number(e)?,
        None => 0.0,
    };
    column.default_value = Some(vec![default; column.shape]);
    let max_steps = max_values(b.get(5))?;
    if (column.shape as u64).saturating_mul(max_steps as u64) > 1 << 20 {
        return Err(bad(
            Code::ArgumentOutOfRange,
            c.span,
            "a sequence numeric column of more than 2^20 values per example",
            "too large",
        ));
    }
    Ok(Column::SequenceNumeric { column, max_steps })
}

/// The error for a sequence column where TF takes none.
fn sequence_refused(span: Span, name: &str, what: &str) -> Diagnostic {
    bad(
        Code::ArgumentType,
        span,
        format!(
            "`{name}` is a sequence column: {what} takes no sequence columns (TF refuses them)"
        ),
        "sequence column",
    )
    .with_help(
        "sequence columns go in sequence_input_layer (TF's SequenceFeatures); \
         use categorical_column_with_* / numeric_column here",
    )
}

/// The `[B, max_steps * shape]` input of a sequence numeric column (created
/// once).
fn sequence_dense_input(st: &mut State, n: &NumericColumn, max_steps: usize, span: Span) -> NodeId {
    if let Some((_, _, node)) = st
        .features
        .sequence_dense_inputs
        .iter()
        .find(|(c, t, _)| c == n && *t == max_steps)
    {
        return *node;
    }
    let node = add_input(
        st,
        &n.name(),
        span,
        DType::F32,
        Shape(vec![Dim::Batch, Dim::Fixed((max_steps * n.shape) as u32)]),
        InputSpec {
            name: String::new(),
            columns: vec![n.key.clone()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::SequenceDense {
                column: n.clone(),
                max_steps,
            }),
        },
    );
    st.features
        .sequence_dense_inputs
        .push((n.clone(), max_steps, node));
    node
}

/// The i32 `[B]` length input `<name>/sequence_length` of a sequence column
/// (created once).
fn sequence_length_input(
    st: &mut State,
    column: SequenceColumn,
    max_steps: usize,
    span: Span,
) -> NodeId {
    if let Some((_, _, node)) = st
        .features
        .sequence_length_inputs
        .iter()
        .find(|(c, t, _)| *c == column && *t == max_steps)
    {
        return *node;
    }
    let feature = FeatureInput::SequenceLength {
        column: column.clone(),
        max_steps,
    };
    let node = add_input(
        st,
        &format!("{}/sequence_length", column.name()),
        span,
        DType::I32,
        Shape(vec![Dim::Batch]),
        InputSpec {
            name: String::new(),
            columns: feature.raw_keys(),
            kind: InputKind::ClassId { num_classes: None },
            normalizer: Normalizer::None,
            feature: Some(feature),
        },
    );
    st.features
        .sequence_length_inputs
        .push((column, max_steps, node));
    node
}

/// A sequence column's `[B, T, D]` values and `[B]` length (TF's
/// `get_sequence_dense_tensor`): a numeric column's steps; an embedding's
/// rows, one per step (no combining across steps: with one id per step
/// every combiner gives the row), zeros past the length; an indicator's
/// one-hot per step.
fn sequence_dense(st: &mut State, c: &Spanned, scope: &str) -> R<(NodeId, NodeId, usize)> {
    Ok(match &c.column {
        Column::SequenceNumeric { column, max_steps } => {
            let x = sequence_dense_input(st, column, *max_steps, c.span);
            let shape = Shape(vec![
                Dim::Batch,
                Dim::Fixed(*max_steps as u32),
                Dim::Fixed(column.shape as u32),
            ]);
            let values = st.graph.reshape(x, &shape);
            let length = sequence_length_input(
                st,
                SequenceColumn::Numeric(column.clone()),
                *max_steps,
                c.span,
            );
            (values, length, *max_steps)
        }
        Column::Indicator(cat) => {
            let (ids, w) = categorical_inputs(st, cat, false, false, c.span);
            let n = cat.column.num_buckets() as u32;
            let hot = st.graph.one_hot(ids, n);
            let wb = spread(st, w, n);
            let values = st.graph.mul(hot, wb);
            let length = sequence_length_input(
                st,
                SequenceColumn::Categorical(cat.column.clone()),
                cat.max_values,
                c.span,
            );
            (values, length, cat.max_values)
        }
        Column::Embedding(e) => {
            let table = embedding_table(st, e, scope, c.span);
            let (ids, w) = categorical_inputs(st, &e.categorical, true, false, c.span);
            let mut rows = st.graph.gather(table, ids);
            if let Some(clip_norm) = e.max_norm {
                let mut r = [rows];
                crate::optim::clip::apply(
                    &mut st.graph,
                    &ClipKind::ByNorm {
                        clip_norm,
                        axes: Some(vec![2]),
                    },
                    &mut r,
                );
                rows = r[0];
            }
            let wb = spread(st, w, e.dimension);
            let values = st.graph.mul(rows, wb);
            let length = sequence_length_input(
                st,
                SequenceColumn::Categorical(e.categorical.column.clone()),
                e.categorical.max_values,
                c.span,
            );
            (values, length, e.categorical.max_values)
        }
        other => {
            return Err(bad(
                Code::ArgumentType,
                c.span,
                format!(
                    "`{}` is not a sequence column: sequence_input_layer takes \
                     sequence columns only (TF's SequenceFeatures refuses others)",
                    other.name()
                ),
                "not a sequence column",
            )
            .with_help(match other {
                Column::Categorical(cat) if cat.sequence => {
                    "wrap it in indicator_column or embedding_column"
                }
                _ => {
                    "give sequence_numeric_column, or indicator_column / embedding_column of a \
                     sequence_categorical_column_with_*"
                }
            }))
        }
    })
}

/// `sequence_input_layer(columns..)` (TF's `SequenceFeatures`, formerly
/// `tf.contrib.feature_column.sequence_input_layer`): the columns' `[B, T,
/// D_i]` concatenated along the last axis in TF's order (by column name),
/// and the sequence length `[B]`: the first column's, the others checked
/// equal to it at run time (TF's `_assert_all_equal_and_return`).
fn sequence_input_layer(st: &mut State, call: &Call) -> R<(NodeId, NodeId)> {
    let (exprs, _) = args::bind_variadic("sequence_input_layer", call, "COLUMNS", &[])?;
    let cols = layer_columns(st, "sequence_input_layer", call, &exprs)?;
    let scope = scope(st, "sequence_input_layer");
    let mut parts = Vec::new();
    let mut lengths: Vec<(NodeId, String)> = Vec::new();
    let mut steps: Option<(usize, &Spanned)> = None;
    for c in &cols {
        let (values, length, t) = sequence_dense(st, c, &scope)?;
        match steps {
            Some((t0, c0)) if t0 != t => {
                return Err(bad(
                    Code::ConflictingArguments,
                    c.span,
                    format!(
                        "the columns of sequence_input_layer have different max_values: \
                         `{}` has {t0} steps, `{}` has {t}",
                        c0.column.name(),
                        c.column.name()
                    ),
                    "different max_values",
                )
                .with_secondary(c0.span, format!("{t0} steps"))
                .with_help("give every sequence column of one layer the same max_values"))
            }
            Some(_) => {}
            None => steps = Some((t, c)),
        }
        parts.push(values);
        if !lengths.iter().any(|(l, _)| *l == length) {
            lengths.push((length, c.column.name()));
        }
    }
    let values = if parts.len() == 1 {
        parts[0]
    } else {
        st.graph.concat(&parts, 2)
    };
    let (first, first_name) = lengths[0].clone();
    let first_f = st.graph.cast(first, DType::F32);
    for (length, name) in &lengths[1..] {
        let l = st.graph.cast(*length, DType::F32);
        let ne = st.graph.binary(BinaryOp::Ne, l, first_f);
        let count = st.graph.sum_all(ne);
        st.assertions.push(Assertion {
            kind: "assert_equal",
            condition: format!("sequence_length(`{first_name}`) == sequence_length(`{name}`)"),
            message: format!(
                "sequence_input_layer: the sequence lengths of `{first_name}` and `{name}` \
                 differ (TF: \"Condition x == y did not hold element-wise\")"
            ),
            span: call.span,
            value: AssertionValue::Count,
            node: count,
        });
    }
    Ok((values, first))
}

/// `sequence_length(layer)`: the `[B]` int32 sequence length of a
/// `sequence_input_layer` binding (TF's second output of `SequenceFeatures`).
fn sequence_length(st: &mut State, call: &Call) -> R<NodeId> {
    let b = args::bind("sequence_length", call, &[req("sequence_input_layer")])?;
    let e = b.req(0);
    let ExprKind::Ident(n) = &e.kind else {
        return Err(bad(
            Code::ArgumentType,
            e.span,
            format!(
                "expected a sequence_input_layer binding, found {}",
                args::describe(e)
            ),
            "not a sequence_input_layer binding",
        ));
    };
    if let Some(&length) = st.features.layer_lengths.get(n) {
        return Ok(length);
    }
    let mut d = bad(
        Code::ArgumentType,
        e.span,
        format!("`{n}` is not a sequence_input_layer binding"),
        "not a sequence_input_layer binding",
    );
    if let Some(entry) = st.env.entries.get(n) {
        if entry.value.is_none() && !st.features.bound.contains_key(n) {
            return Err(Diagnostic::new(Code::Poisoned, e.span, ""));
        }
        d = d.with_secondary(entry.span, "defined here");
    } else if let Some(s) = args::suggest(n, st.features.layer_lengths.keys().map(|k| k.as_str())) {
        d = d.with_help(format!("did you mean `{s}`?"));
    }
    Err(d.with_help("e.g. seq = sequence_input_layer(..) then seq_length = sequence_length(seq)"))
}
