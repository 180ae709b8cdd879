//! The graph inputs of feature columns: a numeric column's f32 `[B, shape]`
//! input, a categorical column's ids and weights `[B, max_values]`, each
//! with the runtime's [`FeatureInput`] that fills it.
//!
//! Invariants: the inputs of one column (same description, same
//! `max_values`) are created once, on first use, and shared by every use;
//! input names are unique (`name`, `name_1`, ...); an ids input is
//! range-checked (`check_range`) once any use looks its ids up, and a
//! pruned ids input (`<name>/positive_weight_ids`) shares the weights input
//! of the column.

use specc_grammar::ast::Span;
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::feature_column::{CategoricalColumn, CrossKey, FeatureInput, NumericColumn};

use super::{CatInputs, Categorical};
use crate::ir::{DType, Dim, NodeId, Shape};
use crate::model::{InputInfo, InputRole};
use crate::sema::State;

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

pub(super) fn add_input(
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
pub(super) fn numeric_input(st: &mut State, n: &NumericColumn, span: Span) -> NodeId {
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
pub(super) fn categorical_inputs(
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
