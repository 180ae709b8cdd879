//! `tf.feature_column.make_parse_example_spec`: how a TFRecord source parses
//! the features a model's columns read.
//!
//! Owns: [`make_parse_example_spec`] and [`tf_repr`] (a spec as Python
//! prints it, `FixedLenFeature(shape=(1,), dtype=tf.float32,
//! default_value=(0.5,))`).
//!
//! TF's rules: `numeric_column` → `FixedLenFeature(shape, float32,
//! default_value)` (of a `decode_raw` / `parse_tensor` key:
//! `FixedLenFeature([], string)`, the bytes an input function decodes); `bucketized_column` → its source's; hash-bucket and
//! vocabulary columns → `VarLenFeature` of their dtype; identity →
//! `VarLenFeature(int64)`; `crossed_column` → its column keys' specs and a
//! `VarLenFeature` for each raw key; `weighted_categorical_column` → the
//! inner column's and `VarLenFeature(float32)` for the weight key.
//! One deviation: TF parses every raw cross key as `tf.string` (an int64
//! feature then fails to parse); here a raw key keeps its dtype.
//!
//! Invariants: one spec per key; two columns asking different specs of one
//! key is an error (TF's `ValueError`); string labels are not included (TF
//! parses labels separately): the caller adds their key.

use std::collections::BTreeMap;

use super::{
    CategoricalColumn, CrossKey, FeatureInput, KeyDType, NumericColumn, SequenceColumn, Vocabulary,
};
use crate::io::example::{DType, FeatureSpec, Values};

fn dtype(k: KeyDType) -> DType {
    match k {
        KeyDType::String => DType::String,
        KeyDType::Int64 => DType::Int64,
    }
}

fn numeric_spec(c: &NumericColumn) -> FeatureSpec {
    if c.decode.is_some() {
        // The bytes `decode_raw` / `parse_tensor` read: one string.
        return FeatureSpec::FixedLen {
            shape: vec![],
            dtype: DType::String,
            default: None,
        };
    }
    FeatureSpec::FixedLen {
        shape: vec![c.shape],
        dtype: DType::Float32,
        default: c
            .default_value
            .as_ref()
            .map(|d| Values::Float32(d.iter().map(|&x| x as f32).collect())),
    }
}

fn categorical_specs(c: &CategoricalColumn, out: &mut Vec<(String, FeatureSpec)>) {
    match c {
        CategoricalColumn::HashBucket { key, dtype: d, .. } => {
            out.push((key.clone(), FeatureSpec::VarLen { dtype: dtype(*d) }))
        }
        CategoricalColumn::Identity { key, .. } => out.push((
            key.clone(),
            FeatureSpec::VarLen {
                dtype: DType::Int64,
            },
        )),
        CategoricalColumn::Vocabulary {
            key, vocabulary, ..
        } => out.push((
            key.clone(),
            FeatureSpec::VarLen {
                dtype: match vocabulary {
                    Vocabulary::Strings(_) => DType::String,
                    Vocabulary::Ints(_) => DType::Int64,
                },
            },
        )),
        CategoricalColumn::Bucketized { source, .. } => {
            out.push((source.key.clone(), numeric_spec(source)))
        }
        CategoricalColumn::Crossed { keys, .. } => {
            for k in keys {
                match k {
                    CrossKey::Raw { key, dtype: d, .. } => {
                        out.push((key.clone(), FeatureSpec::VarLen { dtype: dtype(*d) }))
                    }
                    CrossKey::Column(c) => categorical_specs(c, out),
                }
            }
        }
        CategoricalColumn::Weighted {
            categorical,
            weight_feature_key,
        } => {
            categorical_specs(categorical, out);
            out.push((
                weight_feature_key.clone(),
                FeatureSpec::VarLen {
                    dtype: DType::Float32,
                },
            ));
        }
    }
}

/// The parse spec of every feature the inputs read (see the module doc).
pub fn make_parse_example_spec(
    inputs: &[FeatureInput],
) -> Result<BTreeMap<String, FeatureSpec>, String> {
    let mut all = Vec::new();
    for input in inputs {
        match input {
            FeatureInput::Dense(c) => all.push((c.key.clone(), numeric_spec(c))),
            FeatureInput::Ids { column, .. }
            | FeatureInput::Weights { column, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Categorical(column),
                ..
            } => categorical_specs(column, &mut all),
            // TF's SequenceNumericColumn: a VarLenFeature of its dtype.
            FeatureInput::SequenceDense { column: c, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Numeric(c),
                ..
            } => all.push((
                c.key.clone(),
                FeatureSpec::VarLen {
                    dtype: DType::Float32,
                },
            )),
            FeatureInput::LabelVocabulary { .. } => {}
        }
    }
    let mut out: BTreeMap<String, FeatureSpec> = BTreeMap::new();
    for (key, spec) in all {
        match out.get(&key) {
            Some(prev) if *prev != spec => {
                return Err(format!(
                    "feature_columns contain different parse_spec for key {key}. Given {} and {}",
                    tf_repr(prev),
                    tf_repr(&spec)
                ))
            }
            Some(_) => {}
            None => {
                out.insert(key, spec);
            }
        }
    }
    Ok(out)
}

/// Python's `repr` of a float (shortest round trip; exponent form below
/// 1e-4 and from 1e16, two exponent digits at least).
fn py_float(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .to_string();
    }
    let e = x.abs().log10().floor();
    if (-4.0..16.0).contains(&e) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{x:e}");
        let (m, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        format!("{m}e{sign}{digits:0>2}")
    }
}

fn py_tuple(items: Vec<String>) -> String {
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

fn py_values(v: &Values) -> String {
    py_tuple(match v {
        // The f32's shortest decimal, as the Python float it came from.
        Values::Float32(v) => v
            .iter()
            .map(|x| py_float(format!("{x}").parse::<f64>().unwrap_or(f64::from(*x))))
            .collect(),
        Values::Int64(v) => v.iter().map(i64::to_string).collect(),
        Values::String(v) => v
            .iter()
            .map(|s| format!("b{:?}", String::from_utf8_lossy(s)))
            .collect(),
    })
}

/// A parse spec as Python prints TF's (`FixedLenFeature(shape=(2,),
/// dtype=tf.float32, default_value=(9.0, 8.0))`, `VarLenFeature(dtype=tf.string)`).
pub fn tf_repr(spec: &FeatureSpec) -> String {
    let shape = |s: &[usize]| py_tuple(s.iter().map(usize::to_string).collect());
    let default = |d: &Option<Values>| d.as_ref().map_or("None".to_string(), py_values);
    match spec {
        FeatureSpec::FixedLen {
            shape: s,
            dtype,
            default: d,
        } => format!(
            "FixedLenFeature(shape={}, dtype=tf.{}, default_value={})",
            shape(s),
            dtype.tf_name(),
            default(d)
        ),
        FeatureSpec::VarLen { dtype } => format!("VarLenFeature(dtype=tf.{})", dtype.tf_name()),
        FeatureSpec::FixedLenSequence {
            shape: s,
            dtype,
            allow_missing,
            default: d,
        } => format!(
            "FixedLenSequenceFeature(shape={}, dtype=tf.{}, allow_missing={}, default_value={})",
            shape(s),
            dtype.tf_name(),
            if *allow_missing { "True" } else { "False" },
            default(d)
        ),
        FeatureSpec::Sparse {
            index_keys,
            value_key,
            dtype,
            size,
            already_sorted,
        } => {
            let index_key = match index_keys.as_slice() {
                [one] => format!("'{one}'"),
                many => format!(
                    "[{}]",
                    many.iter()
                        .map(|k| format!("'{k}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let size = match size.as_slice() {
                [one] => one.to_string(),
                many => shape(many),
            };
            format!(
                "SparseFeature(index_key={index_key}, value_key='{value_key}', dtype=tf.{}, size={size}, already_sorted={})",
                dtype.tf_name(),
                if *already_sorted { "True" } else { "False" }
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        assert_eq!(py_float(0.5), "0.5");
        assert_eq!(py_float(9.0), "9.0");
        assert_eq!(py_float(-0.0), "-0.0");
        assert_eq!(py_float(1e20), "1e+20");
        assert_eq!(py_float(1.5e-5), "1.5e-05");
        assert_eq!(py_values(&Values::Float32(vec![0.1])), "(0.1,)");
        assert_eq!(
            tf_repr(&FeatureSpec::VarLen {
                dtype: DType::String
            }),
            "VarLenFeature(dtype=tf.string)"
        );
    }

    #[test]
    fn conflicting_specs_are_an_error() {
        let a = FeatureInput::Dense(NumericColumn {
            key: "x".into(),
            shape: 1,
            default_value: None,
            normalizer: None,
            decode: None,
        });
        let b = FeatureInput::Ids {
            column: CategoricalColumn::Identity {
                key: "x".into(),
                num_buckets: 3,
                default_value: None,
                values: Default::default(),
            },
            max_values: 1,
            check_range: false,
            prune_nonpositive_weights: false,
        };
        let e = make_parse_example_spec(&[a.clone(), b]).unwrap_err();
        assert!(
            e.contains("key x") && e.contains("VarLenFeature(dtype=tf.int64)"),
            "{e}"
        );
        assert_eq!(make_parse_example_spec(&[a.clone(), a]).unwrap().len(), 1);
    }
}
