//! Decoding: `tf.train.Example`, `SequenceExample` and `Feature` from
//! their wire bytes.
//!
//! Owns: [`Feature::decode`], [`Example::decode`],
//! [`SequenceExample::decode`] and the map-entry reading they share.
//!
//! Invariants: no bytes make it panic; every error is an [`ExampleError`]
//! naming the record and, where known, the feature. Protobuf's merge rules:
//! a repeated map key keeps the last entry; a repeated `kind` of the same
//! list appends to it, of another list replaces it; floats and int64s are
//! read packed or not; unknown fields are skipped.

use super::super::proto::{self, fields, ProtoError, Value};
use super::{Example, ExampleError, Feature, Features, SequenceExample};

impl Feature {
    /// Decodes a `tf.train.Feature`.
    pub fn decode(bytes: &[u8]) -> Result<Feature, ProtoError> {
        let mut out = Feature::Unset;
        for f in fields(bytes) {
            let (n, v) = f?;
            let list = match n {
                1..=3 => v.as_bytes().ok_or(ProtoError {
                    offset: 0,
                    what: "a Feature list that is not a message",
                })?,
                _ => continue,
            };
            match n {
                1 => {
                    if !matches!(out, Feature::BytesList(_)) {
                        out = Feature::BytesList(Vec::new());
                    }
                    if let Feature::BytesList(vals) = &mut out {
                        for f in fields(list) {
                            if let (1, v) = f? {
                                let b = v.as_bytes().ok_or(ProtoError {
                                    offset: 0,
                                    what: "a bytes_list value that is not bytes",
                                })?;
                                vals.push(b.to_vec());
                            }
                        }
                    }
                }
                2 => {
                    if !matches!(out, Feature::FloatList(_)) {
                        out = Feature::FloatList(Vec::new());
                    }
                    if let Feature::FloatList(vals) = &mut out {
                        for f in fields(list) {
                            if let (1, v) = f? {
                                proto::floats(v, vals)?;
                            }
                        }
                    }
                }
                _ => {
                    if !matches!(out, Feature::Int64List(_)) {
                        out = Feature::Int64List(Vec::new());
                    }
                    if let Feature::Int64List(vals) = &mut out {
                        for f in fields(list) {
                            if let (1, v) = f? {
                                proto::int64s(v, vals)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

fn proto_error(record: usize, feature: Option<&str>, e: ProtoError) -> ExampleError {
    ExampleError {
        record: Some(record),
        feature: feature.map(str::to_string),
        what: format!("malformed protobuf: {e}"),
    }
}

/// A map entry that could not be decoded: the key, where known, and why.
type EntryError = (Option<String>, ProtoError);

/// Decodes one map entry (`key = 1`, `value = 2`): the key and the value bytes.
fn map_entry(entry: &[u8]) -> Result<(String, &[u8]), EntryError> {
    let mut key = Vec::new();
    let mut value: &[u8] = &[];
    for f in fields(entry) {
        match f.map_err(|e| (None, e))? {
            (1, v) => {
                key = v
                    .as_bytes()
                    .ok_or((
                        None,
                        ProtoError {
                            offset: 0,
                            what: "a map key that is not a string",
                        },
                    ))?
                    .to_vec()
            }
            (2, v) => {
                value = v.as_bytes().ok_or((
                    Some(String::from_utf8_lossy(&key).into_owned()),
                    ProtoError {
                        offset: 0,
                        what: "a map value that is not a message",
                    },
                ))?
            }
            _ => {}
        }
    }
    let key = String::from_utf8(key).map_err(|e| {
        (
            Some(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ProtoError {
                offset: 0,
                what: "a feature name that is not UTF-8",
            },
        )
    })?;
    Ok((key, value))
}

/// Decodes a `tf.train.Features` message into `out`.
fn decode_features(bytes: &[u8], record: usize, out: &mut Features) -> Result<(), ExampleError> {
    for f in fields(bytes) {
        let (n, v) = f.map_err(|e| proto_error(record, None, e))?;
        if n != 1 {
            continue;
        }
        let entry = v.as_bytes().ok_or_else(|| ExampleError {
            record: Some(record),
            feature: None,
            what: "a Features entry that is not a message".into(),
        })?;
        let (key, value) =
            map_entry(entry).map_err(|(name, e)| proto_error(record, name.as_deref(), e))?;
        let feature = Feature::decode(value).map_err(|e| proto_error(record, Some(&key), e))?;
        out.insert(key, feature);
    }
    Ok(())
}

/// The message bytes of a field that must be a message.
fn message<'a>(v: Value<'a>, record: usize, what: &str) -> Result<&'a [u8], ExampleError> {
    v.as_bytes().ok_or_else(|| ExampleError {
        record: Some(record),
        feature: None,
        what: format!("{what} is not a message"),
    })
}

impl Example {
    /// Decodes a serialized `tf.train.Example` (`record`: for errors).
    pub fn decode(bytes: &[u8], record: usize) -> Result<Example, ExampleError> {
        let mut ex = Example::default();
        for f in fields(bytes) {
            if let (1, v) = f.map_err(|e| proto_error(record, None, e))? {
                decode_features(
                    message(v, record, "Example.features")?,
                    record,
                    &mut ex.features,
                )?;
            }
        }
        Ok(ex)
    }
}

impl SequenceExample {
    /// Decodes a serialized `tf.train.SequenceExample`.
    pub fn decode(bytes: &[u8], record: usize) -> Result<SequenceExample, ExampleError> {
        let mut ex = SequenceExample::default();
        for f in fields(bytes) {
            match f.map_err(|e| proto_error(record, None, e))? {
                (1, v) => decode_features(
                    message(v, record, "SequenceExample.context")?,
                    record,
                    &mut ex.context,
                )?,
                (2, v) => {
                    let lists = message(v, record, "SequenceExample.feature_lists")?;
                    for f in fields(lists) {
                        let (n, v) = f.map_err(|e| proto_error(record, None, e))?;
                        if n != 1 {
                            continue;
                        }
                        let entry = message(v, record, "a FeatureLists entry")?;
                        let (key, value) = map_entry(entry)
                            .map_err(|(name, e)| proto_error(record, name.as_deref(), e))?;
                        let mut list = Vec::new();
                        for f in fields(value) {
                            let (n, v) = f.map_err(|e| proto_error(record, Some(&key), e))?;
                            if n != 1 {
                                continue;
                            }
                            let b = v.as_bytes().ok_or_else(|| ExampleError {
                                record: Some(record),
                                feature: Some(key.clone()),
                                what: "a FeatureList element that is not a message".into(),
                            })?;
                            list.push(
                                Feature::decode(b)
                                    .map_err(|e| proto_error(record, Some(&key), e))?,
                            );
                        }
                        ex.feature_lists.insert(key, list);
                    }
                }
                _ => {}
            }
        }
        Ok(ex)
    }
}
