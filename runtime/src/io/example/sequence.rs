//! `tf.io.parse_sequence_example` and `parse_single_sequence_example`: a
//! batch of `tf.train.SequenceExample`s into plain Rust values, the
//! `context` under one parse spec and the `feature_lists` under another.
//!
//! Owns: [`ParsedSequence`] (context, feature lists, and the lengths of the
//! dense feature lists), [`parse_sequence_example`],
//! [`parse_single_sequence_example`] and [`read_sequence_examples`] (a
//! TFRecord file of SequenceExamples).
//!
//! TF's semantics (checked against TF 2.21 by `interop/test_sequence_example.py`):
//! - context features are `FixedLenFeature`s or `VarLenFeature`s, parsed as
//!   `parse_example` parses an Example's features;
//! - a feature list is `FixedLenSequenceFeature(shape, dtype,
//!   allow_missing)`: every step exactly `prod(shape)` values, a dense
//!   `[batch, most steps, *shape]` padded with zeros (its `default_value`
//!   must be `None`: TF refuses one), its steps per example in
//!   [`ParsedSequence::lengths`]; a missing list is an error unless
//!   `allow_missing` (then no steps); or `VarLenFeature(dtype)`: a
//!   SparseTensor `[batch, most steps, most values in a step]` with indices
//!   `[example, step, position]` (an empty step has no entry but counts as
//!   a step);
//! - a key may be both a context feature and a feature list (two
//!   different values: `context` and `feature_lists` are separate maps);
//! - a step `Feature` without a kind has no values, of any type.
//!
//! Invariants: every error names the record (its index in the batch) and
//! the feature (and the step where there is one); a spec TF refuses is an
//! error naming the feature, never a panic.

use std::collections::BTreeMap;
use std::path::Path;

use super::super::tfrecord::{self, Compression};
use super::parse::{parse_features, ReadError};
use super::{DType, ExampleError, Feature, FeatureSpec, Features, Parsed, SequenceExample, Values};

/// Parsed values by feature name.
pub type ParsedFeatures = BTreeMap<String, Parsed>;

/// What [`parse_sequence_example`] returns: TF's `(context, feature_lists,
/// feature_list_lengths)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedSequence {
    pub context: BTreeMap<String, Parsed>,
    pub feature_lists: BTreeMap<String, Parsed>,
    /// For each `FixedLenSequenceFeature`, the steps of each example.
    pub lengths: BTreeMap<String, Vec<usize>>,
}

fn spec_error(feature: &str, what: String) -> ExampleError {
    ExampleError {
        record: None,
        feature: Some(feature.to_string()),
        what,
    }
}

fn record_error(record: usize, feature: &str, what: String) -> ExampleError {
    ExampleError {
        record: Some(record),
        feature: Some(feature.to_string()),
        what,
    }
}

/// TF's name of a spec entry, for messages about where it is not allowed.
fn kind_name(fs: &FeatureSpec) -> &'static str {
    match fs {
        FeatureSpec::FixedLen { .. } => "FixedLenFeature",
        FeatureSpec::VarLen { .. } => "VarLenFeature",
        FeatureSpec::FixedLenSequence { .. } => "FixedLenSequenceFeature",
        FeatureSpec::Sparse { .. } => "SparseFeature",
    }
}

/// Appends a step's values; an error when its kind is not `dtype`'s.
fn extend_step(
    values: &mut Values,
    f: &Feature,
    record: usize,
    name: &str,
    step: usize,
    dtype: DType,
) -> Result<(), ExampleError> {
    let ok = match (&mut *values, f) {
        (_, Feature::Unset) => true,
        (Values::Float32(a), Feature::FloatList(b)) => {
            a.extend_from_slice(b);
            true
        }
        (Values::Int64(a), Feature::Int64List(b)) => {
            a.extend_from_slice(b);
            true
        }
        (Values::String(a), Feature::BytesList(b)) => {
            a.extend_from_slice(b);
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(record_error(
            record,
            name,
            format!(
                "step {step}: the data type does not match: {} in the example, {} in the spec",
                f.kind(),
                dtype.tf_name()
            ),
        ))
    }
}

/// `tf.io.parse_sequence_example` over a batch of SequenceExamples (see the
/// module doc). Errors name the example (its index in `examples`), the
/// feature and the step.
pub fn parse_sequence_example(
    examples: &[SequenceExample],
    context: &BTreeMap<String, FeatureSpec>,
    sequence: &BTreeMap<String, FeatureSpec>,
) -> Result<ParsedSequence, ExampleError> {
    for (name, fs) in context {
        if !matches!(
            fs,
            FeatureSpec::FixedLen { .. } | FeatureSpec::VarLen { .. }
        ) {
            return Err(spec_error(
                name,
                format!(
                    "a context feature is a FixedLenFeature or a VarLenFeature, not a {}",
                    kind_name(fs)
                ),
            ));
        }
    }
    let contexts: Vec<&Features> = examples.iter().map(|e| &e.context).collect();
    let context = parse_features(&contexts, context)?;
    let mut feature_lists = BTreeMap::new();
    let mut lengths = BTreeMap::new();
    for (name, fs) in sequence {
        let lists: Vec<Option<&[Feature]>> = examples
            .iter()
            .map(|e| e.feature_lists.get(name).map(Vec::as_slice))
            .collect();
        let parsed = match fs {
            FeatureSpec::FixedLenSequence {
                shape,
                dtype,
                allow_missing,
                default,
            } => {
                if default.is_some() {
                    return Err(spec_error(
                        name,
                        "a FixedLenSequenceFeature of a feature list has no default_value \
                         (TF: feature_list.dense_defaults must be None)"
                            .into(),
                    ));
                }
                let (parsed, steps) = dense_lists(&lists, name, shape, *dtype, *allow_missing)?;
                lengths.insert(name.clone(), steps);
                parsed
            }
            FeatureSpec::VarLen { dtype } => sparse_lists(&lists, name, *dtype)?,
            other => {
                return Err(spec_error(
                    name,
                    format!(
                        "a feature list is a FixedLenSequenceFeature or a VarLenFeature, not a {}",
                        kind_name(other)
                    ),
                ))
            }
        };
        feature_lists.insert(name.clone(), parsed);
    }
    Ok(ParsedSequence {
        context,
        feature_lists,
        lengths,
    })
}

/// A `FixedLenSequenceFeature` feature list: `[batch, most steps, *shape]`
/// and the steps of each example.
fn dense_lists(
    lists: &[Option<&[Feature]>],
    name: &str,
    shape: &[usize],
    dtype: DType,
    allow_missing: bool,
) -> Result<(Parsed, Vec<usize>), ExampleError> {
    let n: usize = shape.iter().product();
    let mut steps = Vec::with_capacity(lists.len());
    for (i, list) in lists.iter().enumerate() {
        let list = match list {
            Some(l) => l,
            None if allow_missing => &[][..],
            None => {
                return Err(record_error(
                    i,
                    name,
                    "the feature list is required but missing (allow_missing is false)".into(),
                ))
            }
        };
        for (step, f) in list.iter().enumerate() {
            if f.len() != n {
                return Err(record_error(
                    i,
                    name,
                    format!(
                        "step {step}: {} values where the shape {shape:?} wants {n}",
                        f.len()
                    ),
                ));
            }
        }
        steps.push(list.len());
    }
    let most = steps.iter().copied().max().unwrap_or(0);
    let mut values = Values::empty(dtype);
    for (i, list) in lists.iter().enumerate() {
        for (step, f) in list.unwrap_or_default().iter().enumerate() {
            extend_step(&mut values, f, i, name, step, dtype)?;
        }
        values.pad((most - steps[i]) * n);
    }
    let mut full = vec![lists.len(), most];
    full.extend_from_slice(shape);
    Ok((
        Parsed::Dense {
            shape: full,
            values,
        },
        steps,
    ))
}

/// A `VarLenFeature` feature list: a SparseTensor `[batch, most steps, most
/// values in a step]`.
fn sparse_lists(
    lists: &[Option<&[Feature]>],
    name: &str,
    dtype: DType,
) -> Result<Parsed, ExampleError> {
    let mut indices = Vec::new();
    let mut values = Values::empty(dtype);
    let (mut most_steps, mut most_values) = (0, 0);
    for (i, list) in lists.iter().enumerate() {
        let list = list.unwrap_or_default();
        most_steps = most_steps.max(list.len());
        for (step, f) in list.iter().enumerate() {
            extend_step(&mut values, f, i, name, step, dtype)?;
            most_values = most_values.max(f.len());
            for j in 0..f.len() {
                indices.extend_from_slice(&[i, step, j]);
            }
        }
    }
    Ok(Parsed::SparseTensor {
        indices,
        values,
        dense_shape: vec![lists.len(), most_steps, most_values],
    })
}

/// `tf.io.parse_single_sequence_example`: [`parse_sequence_example`] of one
/// example, every result without the batch dimension (TF's `(context,
/// feature_lists)`; a dense feature list is `[steps, *shape]`, a sparse one
/// has indices `[step, position]`). Errors say record 0.
pub fn parse_single_sequence_example(
    example: &SequenceExample,
    context: &BTreeMap<String, FeatureSpec>,
    sequence: &BTreeMap<String, FeatureSpec>,
) -> Result<(ParsedFeatures, ParsedFeatures), ExampleError> {
    let batch = parse_sequence_example(std::slice::from_ref(example), context, sequence)?;
    let unbatch = |m: BTreeMap<String, Parsed>| {
        m.into_iter()
            .map(|(name, parsed)| (name, parsed.unbatched()))
            .collect()
    };
    Ok((unbatch(batch.context), unbatch(batch.feature_lists)))
}

/// Every SequenceExample of a TFRecord file.
pub fn read_sequence_examples(
    path: &Path,
    compression: Compression,
) -> Result<Vec<SequenceExample>, ReadError> {
    let records = tfrecord::read_file(path, compression).map_err(ReadError::Record)?;
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            SequenceExample::decode(r, i).map_err(|error| ReadError::Example {
                path: path.to_path_buf(),
                error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(v: &[f32]) -> Feature {
        Feature::FloatList(v.to_vec())
    }

    /// The examples of the module doc's TF run: example 0 has a context
    /// `age`, steps `x` = [1, 2], [], [3, 4] and `w` = "a", -, "b" "c";
    /// example 1 has only `x` = [5, 6] and `w` = "z".
    fn examples() -> Vec<SequenceExample> {
        let bytes =
            |v: &[&str]| Feature::BytesList(v.iter().map(|s| s.as_bytes().to_vec()).collect());
        vec![
            SequenceExample {
                context: [("age".to_string(), floats(&[3.0]))].into(),
                feature_lists: [
                    (
                        "x".to_string(),
                        vec![floats(&[1.0, 2.0]), floats(&[]), floats(&[3.0, 4.0])],
                    ),
                    (
                        "w".to_string(),
                        vec![bytes(&["a"]), bytes(&[]), bytes(&["b", "c"])],
                    ),
                ]
                .into(),
            },
            SequenceExample {
                context: Features::new(),
                feature_lists: [
                    ("x".to_string(), vec![floats(&[5.0, 6.0])]),
                    ("w".to_string(), vec![bytes(&["z"])]),
                ]
                .into(),
            },
        ]
    }

    fn varlen(dtype: DType) -> FeatureSpec {
        FeatureSpec::VarLen { dtype }
    }

    // What TF 2.21's `tf.io.parse_sequence_example` returned for these
    // examples and specs (run by hand).
    #[test]
    fn var_len_feature_lists_are_rank_3_sparse_tensors() {
        let context = BTreeMap::from([(
            "age".to_string(),
            FeatureSpec::FixedLen {
                shape: vec![1],
                dtype: DType::Float32,
                default: Some(Values::Float32(vec![-1.0])),
            },
        )]);
        let sequence = BTreeMap::from([
            ("x".to_string(), varlen(DType::Float32)),
            ("w".to_string(), varlen(DType::String)),
        ]);
        let got = parse_sequence_example(&examples(), &context, &sequence).unwrap();
        assert_eq!(
            got.context["age"],
            Parsed::Dense {
                shape: vec![2, 1],
                values: Values::Float32(vec![3.0, -1.0])
            }
        );
        assert_eq!(
            got.feature_lists["w"],
            Parsed::SparseTensor {
                indices: vec![0, 0, 0, 0, 2, 0, 0, 2, 1, 1, 0, 0],
                values: Values::String(vec![
                    b"a".to_vec(),
                    b"b".to_vec(),
                    b"c".to_vec(),
                    b"z".to_vec()
                ]),
                dense_shape: vec![2, 3, 2],
            }
        );
        assert_eq!(
            got.feature_lists["x"],
            Parsed::SparseTensor {
                indices: vec![0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 2, 1, 1, 0, 0, 1, 0, 1],
                values: Values::Float32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
                dense_shape: vec![2, 3, 2],
            }
        );
        assert!(got.lengths.is_empty());
        let (ctx, lists) =
            parse_single_sequence_example(&examples()[0], &BTreeMap::new(), &sequence).unwrap();
        assert!(ctx.is_empty());
        assert_eq!(
            lists["x"],
            Parsed::SparseTensor {
                indices: vec![0, 0, 0, 1, 2, 0, 2, 1],
                values: Values::Float32(vec![1.0, 2.0, 3.0, 4.0]),
                dense_shape: vec![3, 2],
            }
        );
    }

    #[test]
    fn fixed_len_sequence_features_pad_with_zeros_and_give_lengths() {
        let mut exs = examples();
        exs[0].feature_lists.insert(
            "x".into(),
            vec![
                floats(&[1.0, 2.0]),
                floats(&[3.0, 4.0]),
                floats(&[5.0, 6.0]),
            ],
        );
        let seq = |allow_missing| FeatureSpec::FixedLenSequence {
            shape: vec![2],
            dtype: DType::Float32,
            allow_missing,
            default: None,
        };
        let sequence = BTreeMap::from([
            ("x".to_string(), seq(false)),
            (
                "m".to_string(),
                FeatureSpec::FixedLenSequence {
                    shape: vec![],
                    dtype: DType::Int64,
                    allow_missing: true,
                    default: None,
                },
            ),
        ]);
        let got = parse_sequence_example(&exs, &BTreeMap::new(), &sequence).unwrap();
        assert_eq!(
            got.feature_lists["x"],
            Parsed::Dense {
                shape: vec![2, 3, 2],
                values: Values::Float32(vec![
                    1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 5.0, 6.0, 0.0, 0.0, 0.0, 0.0
                ])
            }
        );
        assert_eq!(
            got.feature_lists["m"],
            Parsed::Dense {
                shape: vec![2, 0],
                values: Values::Int64(vec![])
            }
        );
        assert_eq!(got.lengths["x"], [3, 1]);
        assert_eq!(got.lengths["m"], [0, 0]);
        // The examples' empty step, a missing list, a default: refused.
        let e = parse_sequence_example(&examples(), &BTreeMap::new(), &sequence).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("x")));
        assert!(e.what.starts_with("step 1: 0 values"), "{e}");
        let missing = BTreeMap::from([("m".to_string(), {
            let FeatureSpec::FixedLenSequence { shape, dtype, .. } = &sequence["m"] else {
                unreachable!()
            };
            FeatureSpec::FixedLenSequence {
                shape: shape.clone(),
                dtype: *dtype,
                allow_missing: false,
                default: None,
            }
        })]);
        let e = parse_sequence_example(&exs, &BTreeMap::new(), &missing).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("m")));
        let defaulted = BTreeMap::from([(
            "x".to_string(),
            FeatureSpec::FixedLenSequence {
                shape: vec![2],
                dtype: DType::Float32,
                allow_missing: true,
                default: Some(Values::Float32(vec![0.0])),
            },
        )]);
        let e = parse_sequence_example(&exs, &BTreeMap::new(), &defaulted).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (None, Some("x")));
    }

    #[test]
    fn errors_name_record_feature_and_step() {
        let sequence = BTreeMap::from([("w".to_string(), varlen(DType::Int64))]);
        let e = parse_sequence_example(&examples(), &BTreeMap::new(), &sequence).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("w")));
        assert_eq!(
            e.to_string(),
            "record 0, feature 'w': step 0: the data type does not match: \
             bytes_list in the example, int64 in the spec"
        );
        // A required context feature that example 1 lacks.
        let context = BTreeMap::from([(
            "age".to_string(),
            FeatureSpec::FixedLen {
                shape: vec![1],
                dtype: DType::Float32,
                default: None,
            },
        )]);
        let e = parse_sequence_example(&examples(), &context, &BTreeMap::new()).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(1), Some("age")));
        // Kinds TF does not take in either place.
        let fixed = FeatureSpec::FixedLen {
            shape: vec![],
            dtype: DType::Int64,
            default: None,
        };
        let bad_list = BTreeMap::from([("x".to_string(), fixed)]);
        let e = parse_sequence_example(&examples(), &BTreeMap::new(), &bad_list).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (None, Some("x")));
        let seq_in_context = BTreeMap::from([(
            "x".to_string(),
            FeatureSpec::FixedLenSequence {
                shape: vec![],
                dtype: DType::Float32,
                allow_missing: true,
                default: None,
            },
        )]);
        let e = parse_sequence_example(&examples(), &seq_in_context, &BTreeMap::new()).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (None, Some("x")));
    }
}
