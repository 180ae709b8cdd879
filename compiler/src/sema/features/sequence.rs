//! The sequence columns (`sequence_numeric_column`,
//! `sequence_categorical_column_with_*`, TF's `SequenceNumericColumn` and
//! `SequenceCategoricalColumn`) and `sequence_input_layer` (TF's
//! `SequenceFeatures`) with `sequence_length(layer)`.
//!
//! Invariants: a sequence column bounds its steps with `max_values` and goes
//! only in `sequence_input_layer` (anywhere else it is refused with
//! [`sequence_refused`]); the columns of one layer have the same number of
//! steps; the layer's length is its first column's, the others' equality a
//! runtime assertion; per step an embedding is one row (no combining across
//! steps), an indicator a one-hot.

use specc_grammar::ast::{Call, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::abi::AssertionValue;
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::feature_column::{FeatureInput, NumericColumn, SequenceColumn};

use super::embedding::{embedding_table, spread};
use super::inputs::{add_input, categorical_inputs};
use super::layers::{layer_columns, scope};
use super::numeric::numeric_column;
use super::{bad, max_values, Categorical, Column, Spanned};
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape};
use crate::model::{Assertion, ClipKind};
use crate::sema::args::{self, opt, req};
use crate::sema::expr::R;
use crate::sema::State;

/// A `sequence_categorical_column_with_*` call: its base column's
/// description, as a sequence (TF's `SequenceCategoricalColumn`).
pub(super) fn sequence(c: &Call, base: Column) -> R<Column> {
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
pub(super) fn sequence_numeric_column(c: &Call) -> R<Column> {
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
    if let (Some(d), ExprKind::Call(k)) = (&column.decode, &b.req(0).kind) {
        return Err(bad(
            Code::UnsupportedArgument,
            k.span,
            format!(
                "a sequence_numeric_column reads its steps' numbers, not {}",
                d.function()
            ),
            "not supported in a sequence column",
        ));
    }
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
pub(super) fn sequence_refused(span: Span, name: &str, what: &str) -> Diagnostic {
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
pub(super) fn sequence_input_layer(st: &mut State, call: &Call) -> R<(NodeId, NodeId)> {
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
pub(super) fn sequence_length(st: &mut State, call: &Call) -> R<NodeId> {
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
