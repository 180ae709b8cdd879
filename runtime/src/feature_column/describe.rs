//! A model input's preprocessing as JSON: what an exported model (TFLite,
//! an object file) leaves to its caller.
//!
//! Owns: [`describe_input`] — for each input the TF feature column that
//! makes it (`categorical_column_with_hash_bucket` with its key and
//! `hash_bucket_size`, how a base column splits a CSV cell (`split`) and
//! bounds its values (`on_overflow`), a vocabulary's list, a bucketized column's
//! boundaries, a cross's keys, a numeric column's default and normalizer),
//! in TF's argument names, so a program in another language can compute
//! the same inputs (TF's hashing: FarmHash `Fingerprint64` modulo the bucket
//! count; crosses: `FingerprintCat64` from `0xDECAFCAFFE`).
//!
//! Invariants: the description is complete — every value a transform uses
//! is in it — and strings are given as UTF-8 text when they are, else as
//! byte arrays.

use serde_json::{json, Value};

use super::{
    CategoricalColumn, CrossKey, FeatureInput, KeyDType, KeyValues, NumericColumn, Sep,
    SequenceColumn, Vocabulary,
};

/// One model input (`name`, its description if it is a feature column's,
/// the raw `columns` it reads) as a JSON object.
pub fn describe_input(name: &str, feature: Option<&FeatureInput>, columns: &[String]) -> Value {
    let mut o = json!({ "name": name, "columns": columns });
    let detail = match feature {
        None => {
            json!({ "kind": "dense", "note": "the columns' numbers, after the spec's normalizer" })
        }
        Some(FeatureInput::Dense(c)) => json!({ "kind": "dense", "column": numeric(c) }),
        Some(FeatureInput::Ids {
            column,
            max_values,
            prune_nonpositive_weights,
            ..
        }) => json!({
            "kind": "ids",
            "max_values": max_values,
            "padding_id": super::PADDING_ID,
            "prune_nonpositive_weights": prune_nonpositive_weights,
            "column": categorical(column),
        }),
        Some(FeatureInput::Weights { column, max_values }) => json!({
            "kind": "weights",
            "max_values": max_values,
            "column": categorical(column),
        }),
        Some(FeatureInput::LabelVocabulary { vocabulary }) => json!({
            "kind": "label_vocabulary",
            "vocabulary": vocabulary.iter().map(|v| text(v)).collect::<Vec<_>>(),
        }),
        Some(FeatureInput::SequenceDense { column, max_steps }) => json!({
            "kind": "sequence_dense",
            "max_steps": max_steps,
            "column": numeric(column),
        }),
        Some(FeatureInput::SequenceLength { column, max_steps }) => json!({
            "kind": "sequence_length",
            "max_steps": max_steps,
            "column": match column {
                SequenceColumn::Numeric(c) => numeric(c),
                SequenceColumn::Categorical(c) => categorical(c),
            },
        }),
    };
    if let (Value::Object(o), Value::Object(d)) = (&mut o, detail) {
        o.extend(d);
    }
    o
}

fn numeric(c: &NumericColumn) -> Value {
    let mut v = json!({
        "type": "numeric_column",
        "key": c.key,
        "shape": c.shape,
        "default_value": c.default_value,
        "normalizer_fn": c.normalizer.as_ref().map(|n| n.to_string()),
    });
    if let (Some(d), Value::Object(o)) = (&c.decode, &mut v) {
        o.insert("decode".into(), decode(d));
    }
    v
}

/// A key's bytes decoder in TF's argument names.
fn decode(d: &super::BytesDecoder) -> Value {
    match d {
        super::BytesDecoder::DecodeRaw {
            out_type,
            little_endian,
            fixed_length,
        } => json!({
            "function": "decode_raw",
            "out_type": out_type.tf_name(),
            "little_endian": little_endian,
            "fixed_length": fixed_length,
        }),
        super::BytesDecoder::ParseTensor { out_type, .. } => json!({
            "function": "parse_tensor",
            "out_type": out_type.tf_name(),
        }),
    }
}

fn dtype(d: KeyDType) -> &'static str {
    match d {
        KeyDType::String => "string",
        KeyDType::Int64 => "int64",
    }
}

fn categorical(c: &CategoricalColumn) -> Value {
    match c {
        CategoricalColumn::HashBucket {
            key,
            hash_bucket_size,
            dtype: d,
            values,
        } => with_values(
            json!({
                "type": "categorical_column_with_hash_bucket",
                "key": key,
                "hash_bucket_size": hash_bucket_size.get(),
                "dtype": dtype(*d),
            }),
            values,
        ),
        CategoricalColumn::Identity {
            key,
            num_buckets,
            default_value,
            values,
        } => with_values(
            json!({
                "type": "categorical_column_with_identity",
                "key": key,
                "num_buckets": num_buckets,
                "default_value": default_value,
            }),
            values,
        ),
        CategoricalColumn::Vocabulary {
            key,
            vocabulary,
            vocabulary_file,
            num_oov_buckets,
            default_value,
            values,
        } => with_values(
            json!({
                "type": if vocabulary_file.is_some() {
                    "categorical_column_with_vocabulary_file"
                } else {
                    "categorical_column_with_vocabulary_list"
                },
                "key": key,
                "vocabulary_list": match vocabulary {
                    Vocabulary::Strings(v) => v.iter().map(|s| text(s)).collect::<Vec<_>>(),
                    Vocabulary::Ints(v) => v.iter().map(|&i| json!(i)).collect(),
                },
                "vocabulary_file": vocabulary_file,
                "num_oov_buckets": num_oov_buckets,
                "default_value": default_value,
            }),
            values,
        ),
        CategoricalColumn::Bucketized { source, boundaries } => json!({
            "type": "bucketized_column",
            "source_column": numeric(source),
            "boundaries": boundaries,
        }),
        CategoricalColumn::Crossed {
            keys,
            hash_bucket_size,
            hash_key,
        } => json!({
            "type": "crossed_column",
            "keys": keys.iter().map(|k| match k {
                CrossKey::Raw { key, dtype: d, sep } => {
                    json!({ "key": key, "dtype": dtype(*d), "split": split(sep) })
                }
                CrossKey::Column(c) => categorical(c),
            }).collect::<Vec<_>>(),
            "hash_bucket_size": hash_bucket_size.get(),
            "hash_key": hash_key.map_or(json!("0xDECAFCAFFE"), |k| json!(k)),
        }),
        CategoricalColumn::Weighted {
            categorical: inner,
            weight_feature_key,
        } => json!({
            "type": "weighted_categorical_column",
            "categorical_column": categorical(inner),
            "weight_feature_key": weight_feature_key,
        }),
    }
}

/// A base column's description with how it reads its key: `split`, the
/// `tf.strings.split` a CSV cell goes through (`null`: none; `{"sep":
/// null}`: runs of whitespace; `{"sep": "|"}`: that delimiter), and
/// `on_overflow` (`"error"` or `"truncate"` to `max_values`).
fn with_values(mut column: Value, values: &KeyValues) -> Value {
    if let Value::Object(o) = &mut column {
        o.insert("split".into(), split(&values.sep));
        o.insert(
            "on_overflow".into(),
            json!(if values.truncate.is_some() {
                "truncate"
            } else {
                "error"
            }),
        );
    }
    column
}

/// The `tf.strings.split` a CSV cell of a key goes through (see
/// [`with_values`]).
fn split(sep: &Option<Sep>) -> Value {
    match sep {
        None => Value::Null,
        Some(Sep::Whitespace) => json!({ "sep": null }),
        Some(Sep::Delimiter(d)) => json!({ "sep": text(d) }),
    }
}

/// UTF-8 text as a string, other bytes as an array of numbers.
fn text(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => json!(s),
        Err(_) => json!(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU64;

    #[test]
    fn a_cross_names_its_keys_and_buckets() {
        let cross = CategoricalColumn::Crossed {
            keys: vec![
                CrossKey::Raw {
                    key: "a".into(),
                    dtype: KeyDType::String,
                    sep: None,
                },
                CrossKey::Column(Box::new(CategoricalColumn::Identity {
                    key: "b".into(),
                    num_buckets: 7,
                    default_value: None,
                    values: Default::default(),
                })),
            ],
            hash_bucket_size: NonZeroU64::new(100).unwrap(),
            hash_key: None,
        };
        let d = describe_input(
            "a_X_b/ids",
            Some(&FeatureInput::Ids {
                column: cross,
                max_values: 1,
                check_range: true,
                prune_nonpositive_weights: false,
            }),
            &["a".into(), "b".into()],
        );
        assert_eq!(d["kind"], "ids");
        assert_eq!(d["column"]["type"], "crossed_column");
        assert_eq!(d["column"]["hash_bucket_size"], 100);
        assert_eq!(d["column"]["keys"][0]["key"], "a");
        assert_eq!(d["column"]["keys"][1]["num_buckets"], 7);
        assert_eq!(d["padding_id"], -1);
    }

    #[test]
    fn a_base_column_says_how_it_splits_and_bounds_its_values() {
        let column = |sep, truncate| CategoricalColumn::HashBucket {
            key: "text".into(),
            hash_bucket_size: NonZeroU64::new(100).unwrap(),
            dtype: KeyDType::String,
            values: KeyValues { sep, truncate },
        };
        let describe = |c: CategoricalColumn| {
            describe_input(
                "text/weights",
                Some(&FeatureInput::Weights {
                    column: c,
                    max_values: 8,
                }),
                &["text".into()],
            )["column"]
                .clone()
        };
        let d = describe(column(None, None));
        assert_eq!(
            (&d["split"], &d["on_overflow"]),
            (&json!(null), &json!("error"))
        );
        let d = describe(column(Some(Sep::Whitespace), Some(8)));
        assert_eq!(d["split"], json!({ "sep": null }));
        assert_eq!(d["on_overflow"], "truncate");
        let d = describe(column(Some(Sep::Delimiter(b"|".to_vec())), None));
        assert_eq!(d["split"], json!({ "sep": "|" }));
    }

    #[test]
    fn bytes_that_are_not_text_stay_bytes() {
        assert_eq!(text(b"yes"), json!("yes"));
        assert_eq!(text(&[0xff, 0x00]), json!([255, 0]));
    }
}
