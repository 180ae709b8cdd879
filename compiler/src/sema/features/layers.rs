//! `input_layer` and `linear_model`: the layers over feature columns, with
//! their variables (TF1's names: `input_layer/<name>_embedding/
//! embedding_weights`, `linear_model/<name>/weights`,
//! `linear_model/bias_weights`) and scopes (`input_layer`, `input_layer_1`,
//! ...).
//!
//! Invariants: a layer's columns are sorted by TF's column name (shared
//! embeddings expanded first), and two with one name are an error; a
//! variable is created once per TF name; neither layer takes a sequence
//! column; `linear_model`'s variables start at zero.

use specc_grammar::ast::{Call, Expr, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::feature_column::CategoricalColumn;
use specc_runtime::init::Initializer;

use super::embedding::{embedding_table, indicator, lookup};
use super::inputs::{categorical_inputs, numeric_input};
use super::sequence::sequence_refused;
use super::{bad, column, Column, Combiner, Spanned};
use crate::ir::{DType, NodeId, Shape};
use crate::model::{VarInfo, VarKind};
use crate::sema::args::{self, opt};
use crate::sema::expr::R;
use crate::sema::{partitioner, State};

/// A variable created by a layer (by TF name; a second request returns it).
pub(super) fn variable(
    st: &mut State,
    name: &str,
    dims: &[u32],
    init: Initializer,
    trainable: bool,
    span: Span,
    partitions: Vec<u64>,
) -> NodeId {
    if let Some(&v) = st.features.vars.get(name) {
        return v;
    }
    let v = st.graph.add_var(name, DType::F32, Shape::fixed(dims));
    st.vars.push(VarInfo {
        kind: VarKind::Param { trainable },
        init,
        span: Some(span),
        partitions,
    });
    let node = st.graph.var(v);
    st.features.vars.insert(name.to_string(), node);
    node
}

/// TF's scope name for the next layer: `input_layer`, `input_layer_1`, ...
pub(super) fn scope(st: &mut State, base: &'static str) -> String {
    let n = st.features.scopes.entry(base).or_insert(0);
    let s = if *n == 0 {
        base.to_string()
    } else {
        format!("{base}_{n}")
    };
    *n += 1;
    s
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
pub(super) fn layer_columns(
    st: &mut State,
    what: &str,
    call: &Call,
    exprs: &[&Expr],
) -> R<Vec<Spanned>> {
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
pub(super) fn input_layer(st: &mut State, call: &Call) -> R<NodeId> {
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
pub(super) fn linear_model(st: &mut State, call: &Call) -> R<NodeId> {
    let (exprs, b) = args::bind_variadic(
        "linear_model",
        call,
        "COLUMNS",
        &[
            opt("units"),
            opt("sparse_combiner"),
            opt("trainable"),
            opt("partitioner"),
        ],
    )?;
    // TF1's linear_model under `variable_scope(partitioner=...)`: every
    // variable it makes (weights and bias) is partitioned.
    let partitioner = partitioner::argument(b.get(3))?;
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
                let dims = [cat.column.num_buckets() as u32, units];
                let w = variable(
                    st,
                    &name,
                    &dims,
                    Initializer::Zeros,
                    trainable,
                    c.span,
                    partitioner::of_float32(partitioner, &dims),
                );
                let prune = combiner != Combiner::Sum;
                let (ids, weights) = categorical_inputs(st, cat, true, prune, c.span);
                lookup(st, w, ids, weights, combiner, None)
            }
            _ => {
                let x = dense(st, c, &scope, "linear_model")?;
                let width = st.graph.shape(x).0[1].fixed().unwrap_or(1);
                let dims = [width, units];
                let w = variable(
                    st,
                    &name,
                    &dims,
                    Initializer::Zeros,
                    trainable,
                    c.span,
                    partitioner::of_float32(partitioner, &dims),
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
        partitioner::of_float32(partitioner, &[units]),
    );
    let sum =
        sum.ok_or_else(|| bad(Code::MissingArgument, call.span, "no columns", "no columns"))?;
    let s = st.graph.shape(sum).clone();
    let bias = st.graph.broadcast_to(bias, &s);
    Ok(st.graph.add(sum, bias))
}
