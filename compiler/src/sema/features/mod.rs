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
//!   a base column's `sep` splits a CSV cell into its values, and
//!   `on_overflow = "truncate"` keeps the first `max_values` (module
//!   `split`);
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
//!
//! Modules, one per kind of column function, as the runtime's
//! `feature_column::transform` is split:
//! - this one: the columns as the spec built them ([`Column`]), the
//!   feature-column state of a spec ([`Features`]), the `features` block's
//!   entry points, and resolving a column expression (a binding's name or a
//!   column call) with the argument checks the column functions share;
//! - `numeric`: `numeric_column` and `bucketized_column`;
//! - `categorical`: `categorical_column_with_{hash_bucket, identity,
//!   vocabulary_list, vocabulary_file}` and `weighted_categorical_column`;
//! - `crossed`: `crossed_column`;
//! - `embedding`: `embedding_column`, `shared_embeddings` and their
//!   [`Combiner`]s, and the lowering of an embedding (TF's
//!   `safe_embedding_lookup_sparse`) and of an `indicator_column`;
//! - `inputs`: the graph inputs of a column (created once per column);
//! - `layers`: `input_layer` and `linear_model`, with their variables and
//!   scopes;
//! - `sequence`: the sequence columns and `sequence_input_layer`;
//! - `split`: `sep` and `on_overflow` of the base categorical columns (a
//!   CSV cell split as `tf.strings.split` does, values past `max_values`
//!   an error or truncated).

use std::collections::HashMap;

use specc_grammar::ast::{Binding, Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::feature_column::{CategoricalColumn, KeyDType, NumericColumn, SequenceColumn};
use specc_runtime::init::Initializer;

use super::args::{self, req};
use super::expr::R;
use super::State;
use crate::ir::NodeId;

mod categorical;
mod crossed;
mod embedding;
mod inputs;
mod layers;
mod numeric;
mod sequence;
mod split;

use categorical::{hash_bucket, identity, vocabulary_file, vocabulary_list, weighted};
use crossed::crossed_column;
pub use embedding::Combiner;
use embedding::{embedding_column, shared_embeddings};
use inputs::numeric_input;
use layers::{input_layer, linear_model};
use numeric::{bucketized_column, numeric_column};
use sequence::{sequence, sequence_input_layer, sequence_length, sequence_numeric_column};

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
    /// `partitioner = ...`: the table's partitioner (TF's
    /// `variable_scope(partitioner=...)` around the layer).
    pub partitioner: Option<crate::sema::partitioner::Partitioner>,
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
            if !c.func.name.starts_with("categorical_column_with_")
                && !c.func.name.starts_with("sequence_categorical_column_with_")
            {
                if let Some(d) = split::refused(c) {
                    return Err(d);
                }
            }
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
