//! A `tf.train.SequenceExample` source: which raw keys come from its
//! `feature_lists` and which from its `context` — what a TF user writes as
//! `tf.io.parse_sequence_example(context_features=make_parse_example_spec(
//! columns), sequence_features=make_parse_example_spec(sequence_columns))`.
//!
//! Owns: [`feature_list_keys`] (the keys of the sequence columns:
//! `sequence_numeric_column`, `sequence_categorical_column_with_*`), and
//! [`KeyConflict`], a key read both ways.
//!
//! Invariants: a key is a feature list exactly when a sequence column reads
//! it; every other key a model reads (labels, plain inputs, the other
//! columns) is a context feature; a key read both ways is refused, since one
//! parse spec cannot give it both meanings. The steps of a feature list are
//! read by the sequence transforms (`raw::each_step`, the transforms'
//! `sequence` module).

use super::{FeatureInput, SequenceColumn};
use crate::data::InputSpec;

/// A key read both as a feature list (by `sequence_input`) and as a
/// context feature (by `context_input`): indices into the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyConflict {
    pub key: String,
    pub sequence_input: usize,
    pub context_input: usize,
}

/// Whether input `i` is a sequence column's: a sequence numeric column's
/// values, a sequence column's length, or the ids or weights of a
/// categorical column some length input measures (a sequence categorical
/// column always has one).
fn is_sequence_input(inputs: &[InputSpec], i: &InputSpec) -> bool {
    match &i.feature {
        Some(FeatureInput::SequenceDense { .. } | FeatureInput::SequenceLength { .. }) => true,
        Some(FeatureInput::Ids { column, .. } | FeatureInput::Weights { column, .. }) => {
            inputs.iter().any(|j| {
                matches!(&j.feature, Some(FeatureInput::SequenceLength {
                    column: SequenceColumn::Categorical(c),
                    ..
                }) if c == column)
            })
        }
        _ => false,
    }
}

/// The keys a SequenceExample source of `inputs` reads from its
/// `feature_lists`, in the order the inputs name them, each once; the first
/// key also read as a context feature is an error.
pub fn feature_list_keys(inputs: &[InputSpec]) -> Result<Vec<String>, KeyConflict> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for (n, i) in inputs.iter().enumerate() {
        if is_sequence_input(inputs, i) {
            for c in &i.columns {
                if !keys.iter().any(|(k, _)| k == c) {
                    keys.push((c.clone(), n));
                }
            }
        }
    }
    for (n, i) in inputs.iter().enumerate() {
        if is_sequence_input(inputs, i) {
            continue;
        }
        if let Some((key, s)) = keys.iter().find(|(k, _)| i.columns.contains(k)) {
            return Err(KeyConflict {
                key: key.clone(),
                sequence_input: *s,
                context_input: n,
            });
        }
    }
    Ok(keys.into_iter().map(|(k, _)| k).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{InputKind, Normalizer};
    use crate::feature_column::{CategoricalColumn, KeyValues, NumericColumn};

    fn input(name: &str, columns: &[&str], feature: Option<FeatureInput>) -> InputSpec {
        InputSpec {
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature,
        }
    }

    #[test]
    fn sequence_columns_read_feature_lists_the_rest_the_context() {
        let words = CategoricalColumn::Identity {
            key: "w".into(),
            num_buckets: 9,
            default_value: None,
            values: KeyValues::default(),
        };
        let temp = NumericColumn {
            key: "t".into(),
            shape: 2,
            default_value: None,
            normalizer: None,
            decode: None,
        };
        let mut inputs = vec![
            input("label", &["y"], None),
            input(
                "w/ids",
                &["w"],
                Some(FeatureInput::Ids {
                    column: words.clone(),
                    max_values: 4,
                    check_range: true,
                    prune_nonpositive_weights: false,
                }),
            ),
            input(
                "w/sequence_length",
                &["w"],
                Some(FeatureInput::SequenceLength {
                    column: SequenceColumn::Categorical(words.clone()),
                    max_steps: 4,
                }),
            ),
            input(
                "t",
                &["t"],
                Some(FeatureInput::SequenceDense {
                    column: temp,
                    max_steps: 4,
                }),
            ),
            input("age", &["age"], None),
        ];
        assert_eq!(feature_list_keys(&inputs).unwrap(), ["w", "t"]);
        inputs.push(input("w_count", &["w"], None));
        assert_eq!(
            feature_list_keys(&inputs).unwrap_err(),
            KeyConflict {
                key: "w".into(),
                sequence_input: 1,
                context_input: 5,
            }
        );
    }
}
