//! Encoding: `tf.train.Example`, `SequenceExample` and `Feature` into
//! protobuf's deterministic bytes. The one Example encoder, for owned
//! messages and for a row of borrowed values (`specc convert` streams every
//! CSV row through [`encode_example_into`] without allocating).
//!
//! Owns: [`FeatureRef`] (one feature's values, borrowed),
//! [`encode_example_into`] (an Example from `(key, FeatureRef)` pairs, into
//! a reused buffer), and the `encode` methods of [`Feature`], [`Example`]
//! and [`SequenceExample`]; all of them write features with the same two
//! functions (`feature_len`, `write_feature`).
//!
//! Invariants: the bytes are `SerializeToString(deterministic=True)`'s: map
//! entries in key (byte) order (a `BTreeMap`'s order; [`encode_example_into`]
//! takes the caller's, which must be sorted), lists packed, an empty list an
//! empty list message (the kind kept), [`Feature::Unset`] an empty `Feature`,
//! an Example's `features` always present. A message's length is computed
//! before it is written, so nothing is encoded twice.

use super::super::proto::{varint_len, Encoder};
use super::{Example, Feature, SequenceExample};

/// One feature's values, borrowed: what a `tf.train.Feature` holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FeatureRef<'a> {
    /// No kind set.
    Unset,
    /// A `bytes_list`.
    Bytes(&'a [Vec<u8>]),
    /// A `bytes_list` of one value.
    OneBytes(&'a [u8]),
    /// A `float_list`.
    Floats(&'a [f32]),
    /// An `int64_list`.
    Int64s(&'a [i64]),
}

impl<'a> From<&'a Feature> for FeatureRef<'a> {
    fn from(f: &'a Feature) -> FeatureRef<'a> {
        match f {
            Feature::Unset => FeatureRef::Unset,
            Feature::BytesList(v) => FeatureRef::Bytes(v),
            Feature::FloatList(v) => FeatureRef::Floats(v),
            Feature::Int64List(v) => FeatureRef::Int64s(v),
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bytes of a length-delimited field (field number below 16: a
/// one-byte key) whose payload is `len` bytes.
fn field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

/// A length-delimited field's key and length (field number below 16).
fn put_len_field(out: &mut Vec<u8>, field: u8, len: usize) {
    out.push(field << 3 | 2);
    put_varint(out, len as u64);
}

/// The kind's field number in `Feature` and the length of its list
/// message; `None` for no kind.
fn list_len(f: FeatureRef<'_>) -> Option<(u8, usize)> {
    Some(match f {
        FeatureRef::Unset => return None,
        FeatureRef::Bytes(v) => (1, v.iter().map(|b| field_len(b.len())).sum()),
        FeatureRef::OneBytes(b) => (1, field_len(b.len())),
        FeatureRef::Floats([]) => (2, 0),
        FeatureRef::Floats(v) => (2, field_len(4 * v.len())),
        FeatureRef::Int64s([]) => (3, 0),
        FeatureRef::Int64s(v) => (3, field_len(int64s_len(v))),
    })
}

fn int64s_len(v: &[i64]) -> usize {
    v.iter().map(|&x| varint_len(x as u64)).sum()
}

/// The length of a `Feature` message.
fn feature_len(f: FeatureRef<'_>) -> usize {
    list_len(f).map_or(0, |(_, l)| field_len(l))
}

/// Writes a `Feature` message's fields (lists packed, as protobuf does;
/// an empty packed list writes no value field).
fn write_feature(out: &mut Vec<u8>, f: FeatureRef<'_>) {
    let Some((kind, len)) = list_len(f) else {
        return;
    };
    put_len_field(out, kind, len);
    match f {
        FeatureRef::Unset => {}
        FeatureRef::Bytes(v) => {
            for b in v {
                put_len_field(out, 1, b.len());
                out.extend_from_slice(b);
            }
        }
        FeatureRef::OneBytes(b) => {
            put_len_field(out, 1, b.len());
            out.extend_from_slice(b);
        }
        FeatureRef::Floats(v) => {
            if !v.is_empty() {
                put_len_field(out, 1, 4 * v.len());
                for x in v {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        FeatureRef::Int64s(v) => {
            if !v.is_empty() {
                put_len_field(out, 1, int64s_len(v));
                for &x in v {
                    put_varint(out, x as u64);
                }
            }
        }
    }
}

/// The length of one `Features.feature` map entry (`key = 1`, `value = 2`).
fn entry_len(key: &[u8], f: FeatureRef<'_>) -> usize {
    field_len(key.len()) + field_len(feature_len(f))
}

/// Writes a `Features` message's map entries, in the iterator's order.
fn write_features<'a>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a [u8], FeatureRef<'a>)>,
) {
    for (key, f) in entries {
        put_len_field(out, 1, entry_len(key, f));
        put_len_field(out, 1, key.len());
        out.extend_from_slice(key);
        put_len_field(out, 2, feature_len(f));
        write_feature(out, f);
    }
}

/// The length of a `Features` message.
fn features_len<'a>(entries: impl Iterator<Item = (&'a [u8], FeatureRef<'a>)>) -> usize {
    entries.map(|(k, f)| field_len(entry_len(k, f))).sum()
}

/// Serializes the `tf.train.Example` of `features` into `out` (cleared
/// first; no allocation once it has grown). The keys must come in byte
/// order, each once, for the bytes to be the deterministic serialization
/// (the iterator is walked twice: lengths, then bytes).
pub fn encode_example_into<'a, I>(features: I, out: &mut Vec<u8>)
where
    I: IntoIterator<Item = (&'a [u8], FeatureRef<'a>)>,
    I::IntoIter: Clone,
{
    let entries = features.into_iter();
    out.clear();
    put_len_field(out, 1, features_len(entries.clone()));
    write_features(out, entries);
}

impl Feature {
    /// Encodes as protobuf does (lists packed; an empty list is an empty
    /// message, which keeps the kind).
    pub fn encode(&self, e: &mut Encoder) {
        write_feature(&mut e.buf, self.into());
    }
}

impl Example {
    /// Serializes deterministically (map keys in order), as TF's Python
    /// `SerializeToString(deterministic=True)` does.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_example_into(
            self.features.iter().map(|(k, f)| (k.as_bytes(), f.into())),
            &mut out,
        );
        out
    }
}

impl SequenceExample {
    /// Serializes deterministically (map keys in order).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        if !self.context.is_empty() {
            e.message(1, |f| {
                write_features(
                    &mut f.buf,
                    self.context.iter().map(|(k, f)| (k.as_bytes(), f.into())),
                )
            });
        }
        if !self.feature_lists.is_empty() {
            e.message(2, |lists| {
                for (name, list) in &self.feature_lists {
                    lists.message(1, |entry| {
                        entry.bytes(1, name.as_bytes());
                        entry.message(2, |fl| {
                            for feature in list {
                                fl.message(1, |f| feature.encode(f));
                            }
                        });
                    });
                }
            });
        }
        e.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::example;
    use super::*;

    /// Protobuf's encoding of an Example written field by field with
    /// nested messages (the reference the length-first encoder must equal).
    fn nested(ex: &Example) -> Vec<u8> {
        let mut e = Encoder::new();
        e.message(1, |fs| {
            for (name, feature) in &ex.features {
                fs.message(1, |entry| {
                    entry.bytes(1, name.as_bytes());
                    entry.message(2, |f| match feature {
                        Feature::Unset => {}
                        Feature::BytesList(v) => f.message(1, |l| {
                            for b in v {
                                l.bytes(1, b);
                            }
                        }),
                        Feature::FloatList(v) => f.message(2, |l| l.packed_floats(1, v)),
                        Feature::Int64List(v) => f.message(3, |l| l.packed_int64s(1, v)),
                    });
                });
            }
        });
        e.finish()
    }

    #[test]
    fn a_float_feature_is_protobufs_bytes() {
        // Example { features { feature { key: "a" value { float_list { value: 1.0 } } } } }
        let ex = Example {
            features: [("a".to_string(), Feature::FloatList(vec![1.0]))].into(),
        };
        assert_eq!(
            ex.encode(),
            [
                0x0a, 0x0f, 0x0a, 0x0d, 0x0a, 0x01, b'a', 0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00,
                0x00, 0x80, 0x3f
            ]
        );
    }

    #[test]
    fn examples_encode_as_nested_messages_do() {
        let long = vec![b'z'; 300];
        let mut cases = vec![Example::default(), example()];
        cases.push(Example {
            features: [
                ("".to_string(), Feature::Int64List(vec![i64::MAX, 0, -1])),
                ("k".to_string(), Feature::Unset),
                (
                    String::from_utf8(long.clone()).unwrap(),
                    Feature::BytesList(vec![long.clone(), vec![]]),
                ),
                ("n".to_string(), Feature::FloatList(vec![f32::NAN; 40])),
                ("z".to_string(), Feature::Int64List(vec![])),
            ]
            .into(),
        });
        for ex in &cases {
            assert_eq!(ex.encode(), nested(ex), "{ex:?}");
        }
    }

    #[test]
    fn borrowed_rows_encode_as_owned_examples_do_into_a_reused_buffer() {
        let long = vec![b'z'; 300];
        let rows: [&[(&[u8], FeatureRef<'_>)]; 4] = [
            &[],
            &[
                (b"a", FeatureRef::Floats(&[-1.5])),
                (b"b", FeatureRef::Int64s(&[-1])),
                (b"c", FeatureRef::OneBytes(b"")),
            ],
            &[
                (b"", FeatureRef::Int64s(&[i64::MAX])),
                (b"k", FeatureRef::Int64s(&[0, 300])),
                (&long, FeatureRef::OneBytes(&long)),
            ],
            &[
                (b"f", FeatureRef::Floats(&[f32::INFINITY, 2.0])),
                (b"g", FeatureRef::Unset),
            ],
        ];
        let mut out = Vec::new();
        for row in rows {
            let ex = Example {
                features: row
                    .iter()
                    .map(|&(k, f)| {
                        let f = match f {
                            FeatureRef::Unset => Feature::Unset,
                            FeatureRef::Bytes(v) => Feature::BytesList(v.to_vec()),
                            FeatureRef::OneBytes(b) => Feature::BytesList(vec![b.to_vec()]),
                            FeatureRef::Floats(v) => Feature::FloatList(v.to_vec()),
                            FeatureRef::Int64s(v) => Feature::Int64List(v.to_vec()),
                        };
                        (String::from_utf8(k.to_vec()).unwrap(), f)
                    })
                    .collect(),
            };
            encode_example_into(row.iter().copied(), &mut out);
            assert_eq!(out, ex.encode(), "{row:?}");
            assert_eq!(Example::decode(&out, 0).unwrap(), ex);
        }
    }
}
