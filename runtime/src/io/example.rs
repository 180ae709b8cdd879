//! `tf.train.Example` and `tf.train.SequenceExample`, and `tf.io.parse_example`.
//!
//! The protos (tensorflow/core/example/{example,feature}.proto) are a
//! handful of small messages, so they are decoded and encoded by hand with
//! [`super::proto`] rather than with a code generator:
//! `Example { Features features = 1 }`, `Features { map<string, Feature>
//! feature = 1 }`, `Feature { oneof kind { BytesList bytes_list = 1;
//! FloatList float_list = 2; Int64List int64_list = 3 } }` (each list:
//! `repeated value = 1`, floats and int64s packed or not),
//! `SequenceExample { Features context = 1; FeatureLists feature_lists = 2 }`,
//! `FeatureLists { map<string, FeatureList> feature_list = 1 }`,
//! `FeatureList { repeated Feature feature = 1 }`.
//!
//! Owns: [`Example`], [`SequenceExample`], [`Feature`] (decode/encode);
//! [`FeatureSpec`] (`FixedLenFeature`, `VarLenFeature`,
//! `FixedLenSequenceFeature`, `SparseFeature`) and [`parse_example`] /
//! [`parse_single_example`] into plain Rust values ([`Parsed`]: dense
//! tensors, sparse values with per-example row lengths, or SparseTensors
//! with explicit indices); [`read_examples`] (a TFRecord file of Examples).
//!
//! Invariants: decoding never panics on any bytes; every error says which
//! record and which feature. Maps are `BTreeMap`s, so encoding writes map
//! entries in key order: the bytes equal protobuf's deterministic
//! serialization (`SerializeToString(deterministic=True)`). Decoding follows
//! protobuf's merge rules: a repeated map key keeps the last entry; a
//! repeated `kind` of the same list appends to it, of another list replaces
//! it; unknown fields are skipped.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use super::proto::{self, fields, Encoder, ProtoError, Value};
use super::tfrecord::{self, Compression};

/// One feature: the `kind` oneof of `tf.train.Feature`.
#[derive(Clone, Debug, PartialEq)]
pub enum Feature {
    /// A `Feature` with no kind set (decodes as zero values of any type).
    Unset,
    BytesList(Vec<Vec<u8>>),
    FloatList(Vec<f32>),
    Int64List(Vec<i64>),
}

/// `tf.train.Features`: feature name → feature.
pub type Features = BTreeMap<String, Feature>;

/// `tf.train.Example`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Example {
    pub features: Features,
}

/// `tf.train.SequenceExample`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SequenceExample {
    pub context: Features,
    pub feature_lists: BTreeMap<String, Vec<Feature>>,
}

/// A value type of parsing (`tf.float32`, `tf.int64`, `tf.string`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    Float32,
    Int64,
    String,
}

impl DType {
    /// TF's name (`float32`, `int64`, `string`).
    pub fn tf_name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Int64 => "int64",
            DType::String => "string",
        }
    }

    /// Parses `float32`/`int64`/`string` (with or without `tf.`).
    pub fn from_tf_name(name: &str) -> Option<DType> {
        match name.strip_prefix("tf.").unwrap_or(name) {
            "float32" | "float" => Some(DType::Float32),
            "int64" => Some(DType::Int64),
            "string" => Some(DType::String),
            _ => None,
        }
    }
}

/// Values of one type, flat.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Float32(Vec<f32>),
    Int64(Vec<i64>),
    String(Vec<Vec<u8>>),
}

impl Values {
    fn empty(dtype: DType) -> Values {
        match dtype {
            DType::Float32 => Values::Float32(Vec::new()),
            DType::Int64 => Values::Int64(Vec::new()),
            DType::String => Values::String(Vec::new()),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Values::Float32(_) => DType::Float32,
            Values::Int64(_) => DType::Int64,
            Values::String(_) => DType::String,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Float32(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::String(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `n` zeros (empty strings).
    fn pad(&mut self, n: usize) {
        match self {
            Values::Float32(v) => v.resize(v.len() + n, 0.0),
            Values::Int64(v) => v.resize(v.len() + n, 0),
            Values::String(v) => v.resize(v.len() + n, Vec::new()),
        }
    }

    /// Appends `other`'s values (same type: callers check).
    fn extend_from(&mut self, other: &Values) {
        match (self, other) {
            (Values::Float32(a), Values::Float32(b)) => a.extend_from_slice(b),
            (Values::Int64(a), Values::Int64(b)) => a.extend_from_slice(b),
            (Values::String(a), Values::String(b)) => a.extend_from_slice(b),
            _ => {}
        }
    }

    /// Appends `other[order[0]], other[order[1]], ...` (same type).
    fn extend_permuted(&mut self, other: &Values, order: &[usize]) {
        match (self, other) {
            (Values::Float32(a), Values::Float32(b)) => a.extend(order.iter().map(|&k| b[k])),
            (Values::Int64(a), Values::Int64(b)) => a.extend(order.iter().map(|&k| b[k])),
            (Values::String(a), Values::String(b)) => a.extend(order.iter().map(|&k| b[k].clone())),
            _ => {}
        }
    }

    /// Appends a feature's values; false when its type is not this one.
    fn extend_from_feature(&mut self, f: &Feature) -> bool {
        match (self, f) {
            (_, Feature::Unset) => {}
            (Values::Float32(a), Feature::FloatList(b)) => a.extend_from_slice(b),
            (Values::Int64(a), Feature::Int64List(b)) => a.extend_from_slice(b),
            (Values::String(a), Feature::BytesList(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }
}

impl Feature {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            Feature::Unset => 0,
            Feature::BytesList(v) => v.len(),
            Feature::FloatList(v) => v.len(),
            Feature::Int64List(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty feature of the same kind (for type checks).
    fn kind_of(f: &Feature) -> Feature {
        match f {
            Feature::Unset => Feature::Unset,
            Feature::BytesList(_) => Feature::BytesList(Vec::new()),
            Feature::FloatList(_) => Feature::FloatList(Vec::new()),
            Feature::Int64List(_) => Feature::Int64List(Vec::new()),
        }
    }

    /// TF's name of the kind (`bytes_list`, `float_list`, `int64_list`).
    pub fn kind(&self) -> &'static str {
        match self {
            Feature::Unset => "kind not set",
            Feature::BytesList(_) => "bytes_list",
            Feature::FloatList(_) => "float_list",
            Feature::Int64List(_) => "int64_list",
        }
    }

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

    /// Encodes as protobuf does (lists packed; an empty list is an empty
    /// message, which keeps the kind).
    pub fn encode(&self, e: &mut Encoder) {
        match self {
            Feature::Unset => {}
            Feature::BytesList(v) => e.message(1, |l| {
                for b in v {
                    l.bytes(1, b);
                }
            }),
            Feature::FloatList(v) => e.message(2, |l| l.packed_floats(1, v)),
            Feature::Int64List(v) => e.message(3, |l| l.packed_int64s(1, v)),
        }
    }
}

/// Why a record could not be decoded or parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct ExampleError {
    /// The record (example) number, from 0; `None` when the parse spec
    /// itself is wrong.
    pub record: Option<usize>,
    /// The feature concerned, where there is one.
    pub feature: Option<String>,
    pub what: String,
}

impl fmt::Display for ExampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(r) => write!(f, "record {r}")?,
            None => write!(f, "the parse spec")?,
        }
        if let Some(name) = &self.feature {
            write!(f, ", feature '{name}'")?;
        }
        write!(f, ": {}", self.what)
    }
}

impl std::error::Error for ExampleError {}

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

fn encode_features(e: &mut Encoder, features: &Features) {
    for (name, feature) in features {
        e.message(1, |entry| {
            entry.bytes(1, name.as_bytes());
            entry.message(2, |f| feature.encode(f));
        });
    }
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

    /// Serializes deterministically (map keys in order), as TF's Python
    /// `SerializeToString(deterministic=True)` does.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        e.message(1, |f| encode_features(f, &self.features));
        e.finish()
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

    /// Serializes deterministically (map keys in order).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        if !self.context.is_empty() {
            e.message(1, |f| encode_features(f, &self.context));
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

/// How `parse_example` reads one feature.
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureSpec {
    /// `tf.io.FixedLenFeature(shape, dtype, default_value)`: exactly
    /// `prod(shape)` values in every example; a missing feature takes the
    /// default (`prod(shape)` values), or is an error without one.
    FixedLen {
        shape: Vec<usize>,
        dtype: DType,
        default: Option<Values>,
    },
    /// `tf.io.VarLenFeature(dtype)`: any number of values (a SparseTensor).
    VarLen { dtype: DType },
    /// `tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing,
    /// default_value)`: a multiple of `prod(shape)` values, stacked into
    /// `[batch, rows, *shape]`, short examples padded with the default
    /// (one scalar) or zeros.
    FixedLenSequence {
        shape: Vec<usize>,
        dtype: DType,
        allow_missing: bool,
        default: Option<Values>,
    },
    /// `tf.io.SparseFeature(index_key, value_key, dtype, size,
    /// already_sorted)`: a SparseTensor `[batch, *size]` whose indices come
    /// from the int64 features `index_keys` (one per dimension of `size`)
    /// and whose values come from `value_key`; every example has as many
    /// indices in each index feature as values (both missing: no values).
    /// Indices are sorted (row-major) unless `already_sorted`; the values
    /// of a repeated index keep their order (TF's `sparse_reorder` leaves
    /// them in its unstable `std::sort`'s order). An index
    /// outside `[0, size)` is an error (TF 2.21 builds the invalid
    /// SparseTensor and fails later, in the first op that checks).
    Sparse {
        index_keys: Vec<String>,
        value_key: String,
        dtype: DType,
        size: Vec<usize>,
        already_sorted: bool,
    },
}

/// What `parse_example` returns for one feature.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// A dense tensor, row-major; `shape[0]` is the batch.
    Dense { shape: Vec<usize>, values: Values },
    /// A `[batch, max row length]` SparseTensor: the values of every example
    /// one after the other, and how many each example has.
    Sparse {
        values: Values,
        row_lengths: Vec<usize>,
    },
    /// A SparseTensor with explicit indices (a `SparseFeature`, or any
    /// sparse result of [`parse_single_example`]): `indices` row-major
    /// `[values, dense_shape.len()]`.
    SparseTensor {
        indices: Vec<usize>,
        values: Values,
        dense_shape: Vec<usize>,
    },
}

impl Parsed {
    /// A sparse result's `indices` as TF returns them (`[example, position]`;
    /// a [`Parsed::SparseTensor`] of another rank than 2: none, see its
    /// `indices`).
    pub fn sparse_indices(&self) -> Vec<[usize; 2]> {
        match self {
            Parsed::Dense { .. } => Vec::new(),
            Parsed::SparseTensor {
                indices,
                dense_shape,
                ..
            } => match dense_shape.len() {
                2 => indices.chunks_exact(2).map(|p| [p[0], p[1]]).collect(),
                _ => Vec::new(),
            },
            Parsed::Sparse { row_lengths, .. } => row_lengths
                .iter()
                .enumerate()
                .flat_map(|(i, &n)| (0..n).map(move |j| [i, j]))
                .collect(),
        }
    }

    /// A sparse result's `dense_shape`: `[batch, longest row]`.
    pub fn sparse_dense_shape(&self) -> [usize; 2] {
        match self {
            Parsed::Dense { shape, .. } => [shape.first().copied().unwrap_or(0), 0],
            Parsed::Sparse { row_lengths, .. } => [
                row_lengths.len(),
                row_lengths.iter().copied().max().unwrap_or(0),
            ],
            Parsed::SparseTensor { dense_shape, .. } => [
                dense_shape.first().copied().unwrap_or(0),
                dense_shape.get(1).copied().unwrap_or(0),
            ],
        }
    }

    pub fn values(&self) -> &Values {
        match self {
            Parsed::Dense { values, .. }
            | Parsed::Sparse { values, .. }
            | Parsed::SparseTensor { values, .. } => values,
        }
    }

    /// The result without its batch dimension, for a batch of one example
    /// ([`parse_single_example`]): a dense tensor's shape loses its first
    /// dimension; a sparse one becomes a [`Parsed::SparseTensor`] whose
    /// indices and shape lose their first column.
    fn unbatched(self) -> Parsed {
        match self {
            Parsed::Dense { mut shape, values } => {
                if !shape.is_empty() {
                    shape.remove(0);
                }
                Parsed::Dense { shape, values }
            }
            Parsed::Sparse {
                values,
                row_lengths,
            } => {
                let n = row_lengths.first().copied().unwrap_or(0);
                Parsed::SparseTensor {
                    indices: (0..n).collect(),
                    values,
                    dense_shape: vec![n],
                }
            }
            Parsed::SparseTensor {
                indices,
                values,
                mut dense_shape,
            } => {
                let rank = dense_shape.len();
                if rank == 0 {
                    return Parsed::SparseTensor {
                        indices,
                        values,
                        dense_shape,
                    };
                }
                dense_shape.remove(0);
                let indices = indices
                    .chunks_exact(rank)
                    .flat_map(|ix| ix[1..].iter().copied())
                    .collect();
                Parsed::SparseTensor {
                    indices,
                    values,
                    dense_shape,
                }
            }
        }
    }
}

fn spec_error(feature: &str, what: String) -> ExampleError {
    ExampleError {
        record: None,
        feature: Some(feature.to_string()),
        what,
    }
}

/// `tf.io.parse_example` over a batch of Examples: one [`Parsed`] per spec
/// entry. Errors name the example (its index in `examples`) and the feature.
pub fn parse_example(
    examples: &[Example],
    spec: &BTreeMap<String, FeatureSpec>,
) -> Result<BTreeMap<String, Parsed>, ExampleError> {
    let mut out = BTreeMap::new();
    for (name, fs) in spec {
        let wrong_type = |record: usize, f: &Feature, dtype: DType| ExampleError {
            record: Some(record),
            feature: Some(name.clone()),
            what: format!(
                "the data type does not match: {} in the example, {} in the spec",
                f.kind(),
                dtype.tf_name()
            ),
        };
        let parsed = match fs {
            FeatureSpec::FixedLen {
                shape,
                dtype,
                default,
            } => {
                let n: usize = shape.iter().product();
                if let Some(d) = default {
                    if d.dtype() != *dtype || d.len() != n {
                        return Err(spec_error(
                            name,
                            format!(
                                "the default value has {} {} values; the spec wants {n} {}",
                                d.len(),
                                d.dtype().tf_name(),
                                dtype.tf_name()
                            ),
                        ));
                    }
                }
                let mut values = Values::empty(*dtype);
                for (i, ex) in examples.iter().enumerate() {
                    match ex.features.get(name) {
                        Some(f) => {
                            if f.len() != n {
                                return Err(ExampleError {
                                    record: Some(i),
                                    feature: Some(name.clone()),
                                    what: format!(
                                        "{} values where the shape {shape:?} wants {n}",
                                        f.len()
                                    ),
                                });
                            }
                            if !values.extend_from_feature(f) {
                                return Err(wrong_type(i, f, *dtype));
                            }
                        }
                        None => match default {
                            Some(d) => values.extend_from(d),
                            None => {
                                return Err(ExampleError {
                                    record: Some(i),
                                    feature: Some(name.clone()),
                                    what: "the feature is required (no default value) \
                                           but missing"
                                        .into(),
                                })
                            }
                        },
                    }
                }
                let mut full = vec![examples.len()];
                full.extend_from_slice(shape);
                Parsed::Dense {
                    shape: full,
                    values,
                }
            }
            FeatureSpec::VarLen { dtype } => {
                let mut values = Values::empty(*dtype);
                let mut row_lengths = Vec::with_capacity(examples.len());
                for (i, ex) in examples.iter().enumerate() {
                    match ex.features.get(name) {
                        Some(f) => {
                            if !values.extend_from_feature(f) {
                                return Err(wrong_type(i, f, *dtype));
                            }
                            row_lengths.push(f.len());
                        }
                        None => row_lengths.push(0),
                    }
                }
                Parsed::Sparse {
                    values,
                    row_lengths,
                }
            }
            FeatureSpec::FixedLenSequence {
                shape,
                dtype,
                allow_missing,
                default,
            } => {
                let n: usize = shape.iter().product();
                if let Some(d) = default {
                    if d.dtype() != *dtype || d.len() != 1 {
                        return Err(spec_error(
                            name,
                            format!(
                                "the default value must be one {} value, not {} {} values",
                                dtype.tf_name(),
                                d.len(),
                                d.dtype().tf_name()
                            ),
                        ));
                    }
                }
                // Rows per example, checked first.
                let mut rows = Vec::with_capacity(examples.len());
                for (i, ex) in examples.iter().enumerate() {
                    let count = match ex.features.get(name) {
                        Some(f) => f.len(),
                        None if *allow_missing => 0,
                        None => {
                            return Err(ExampleError {
                                record: Some(i),
                                feature: Some(name.clone()),
                                what: "the feature is missing and allow_missing is false".into(),
                            })
                        }
                    };
                    if (n == 0 && count != 0) || (n != 0 && count % n != 0) {
                        return Err(ExampleError {
                            record: Some(i),
                            feature: Some(name.clone()),
                            what: format!(
                                "{count} values, not a multiple of the {n} of the shape {shape:?}"
                            ),
                        });
                    }
                    rows.push(count.checked_div(n).unwrap_or(0));
                }
                let max_rows = rows.iter().copied().max().unwrap_or(0);
                let mut values = Values::empty(*dtype);
                for (i, ex) in examples.iter().enumerate() {
                    if let Some(f) = ex.features.get(name) {
                        if !values.extend_from_feature(f) {
                            return Err(wrong_type(i, f, *dtype));
                        }
                    }
                    let pad = (max_rows - rows[i]) * n;
                    match default {
                        Some(d) => (0..pad).for_each(|_| values.extend_from(d)),
                        None => values.pad(pad),
                    }
                }
                let mut full = vec![examples.len(), max_rows];
                full.extend_from_slice(shape);
                Parsed::Dense {
                    shape: full,
                    values,
                }
            }
            FeatureSpec::Sparse {
                index_keys,
                value_key,
                dtype,
                size,
                already_sorted,
            } => parse_sparse_feature(
                examples,
                name,
                index_keys,
                value_key,
                *dtype,
                size,
                *already_sorted,
            )?,
        };
        out.insert(name.clone(), parsed);
    }
    Ok(out)
}

/// `tf.io.parse_single_example`: [`parse_example`] of one example, every
/// result without the batch dimension (dense: the spec's shape; sparse:
/// indices `[values, rank]` with `dense_shape` the spec's `size`, or
/// `[values]` for a `VarLenFeature`). Errors say record 0.
pub fn parse_single_example(
    example: &Example,
    spec: &BTreeMap<String, FeatureSpec>,
) -> Result<BTreeMap<String, Parsed>, ExampleError> {
    let batch = parse_example(std::slice::from_ref(example), spec)?;
    Ok(batch
        .into_iter()
        .map(|(name, parsed)| (name, parsed.unbatched()))
        .collect())
}

/// A `SparseFeature`: its index features and its value feature, merged
/// into one SparseTensor `[batch, *size]`.
fn parse_sparse_feature(
    examples: &[Example],
    name: &str,
    index_keys: &[String],
    value_key: &str,
    dtype: DType,
    size: &[usize],
    already_sorted: bool,
) -> Result<Parsed, ExampleError> {
    if index_keys.is_empty() || index_keys.len() != size.len() {
        return Err(spec_error(
            name,
            format!(
                "{} index keys for the {} dimensions of size {size:?}: one index key per dimension",
                index_keys.len(),
                size.len()
            ),
        ));
    }
    let rank = size.len() + 1;
    let err = |record: usize, feature: &str, what: String| ExampleError {
        record: Some(record),
        feature: Some(feature.to_string()),
        what,
    };
    let mut indices: Vec<usize> = Vec::new();
    let mut values = Values::empty(dtype);
    let mut order: Vec<usize> = Vec::new();
    let mut sorted_indices: Vec<usize> = Vec::new();
    for (i, ex) in examples.iter().enumerate() {
        let value = ex.features.get(value_key);
        if let Some(f) = value {
            if !Values::empty(dtype).extend_from_feature(&Feature::kind_of(f)) {
                return Err(wrong_type_error(i, value_key, f, dtype));
            }
        }
        let n = value.map_or(0, Feature::len);
        let start = indices.len() / rank;
        indices.resize(indices.len() + n * rank, i);
        for (d, key) in index_keys.iter().enumerate() {
            let ids: &[i64] = match ex.features.get(key) {
                Some(Feature::Int64List(v)) => v,
                Some(Feature::Unset) | None => &[],
                Some(f) => {
                    return Err(err(
                        i,
                        key,
                        format!(
                        "the index feature of SparseFeature '{name}' must be int64_list, not {}",
                        f.kind()
                    ),
                    ))
                }
            };
            if ids.len() != n {
                return Err(err(
                    i,
                    key,
                    format!(
                        "{} indices but {n} values in '{value_key}': SparseFeature '{name}' needs as many of each",
                        ids.len()
                    ),
                ));
            }
            for (k, &id) in ids.iter().enumerate() {
                let ix = usize::try_from(id)
                    .ok()
                    .filter(|&ix| ix < size[d])
                    .ok_or_else(|| {
                        err(
                            i,
                            key,
                            format!(
                                "index {id} of SparseFeature '{name}' is outside [0, {})",
                                size[d]
                            ),
                        )
                    })?;
                indices[(start + k) * rank + 1 + d] = ix;
            }
        }
        match value {
            None => {}
            Some(f) => {
                if already_sorted {
                    if !values.extend_from_feature(f) {
                        return Err(wrong_type_error(i, value_key, f, dtype));
                    }
                } else {
                    // Sort this example's entries by their indices (stable:
                    // equal indices keep the order of the values).
                    let mut row_values = Values::empty(dtype);
                    if !row_values.extend_from_feature(f) {
                        return Err(wrong_type_error(i, value_key, f, dtype));
                    }
                    let rows = &indices[start * rank..];
                    order.clear();
                    order.extend(0..n);
                    order.sort_by(|&a, &b| {
                        rows[a * rank..(a + 1) * rank].cmp(&rows[b * rank..(b + 1) * rank])
                    });
                    sorted_indices.clear();
                    for &k in &order {
                        sorted_indices.extend_from_slice(&rows[k * rank..(k + 1) * rank]);
                    }
                    indices.truncate(start * rank);
                    indices.extend_from_slice(&sorted_indices);
                    values.extend_permuted(&row_values, &order);
                }
            }
        }
    }
    let mut dense_shape = vec![examples.len()];
    dense_shape.extend_from_slice(size);
    Ok(Parsed::SparseTensor {
        indices,
        values,
        dense_shape,
    })
}

fn wrong_type_error(record: usize, name: &str, f: &Feature, dtype: DType) -> ExampleError {
    ExampleError {
        record: Some(record),
        feature: Some(name.to_string()),
        what: format!(
            "the data type does not match: {} in the example, {} in the spec",
            f.kind(),
            dtype.tf_name()
        ),
    }
}

/// Why a TFRecord file of Examples could not be read.
#[derive(Debug)]
pub enum ReadError {
    Record(tfrecord::FileError),
    Example {
        path: std::path::PathBuf,
        error: ExampleError,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Record(e) => e.fmt(f),
            ReadError::Example { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ReadError {}

/// Every Example of a TFRecord file.
pub fn read_examples(path: &Path, compression: Compression) -> Result<Vec<Example>, ReadError> {
    let records = tfrecord::read_file(path, compression).map_err(ReadError::Record)?;
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Example::decode(r, i).map_err(|error| ReadError::Example {
                path: path.to_path_buf(),
                error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Example {
        let mut ex = Example::default();
        ex.features
            .insert("b".into(), Feature::BytesList(vec![b"x".to_vec(), vec![]]));
        ex.features
            .insert("f".into(), Feature::FloatList(vec![1.5, -2.0]));
        ex.features
            .insert("i".into(), Feature::Int64List(vec![-1, i64::MAX]));
        ex.features.insert("e".into(), Feature::FloatList(vec![]));
        ex
    }

    #[test]
    fn examples_and_sequence_examples_round_trip() {
        let ex = example();
        assert_eq!(Example::decode(&ex.encode(), 0).unwrap(), ex);
        let seq = SequenceExample {
            context: ex.features.clone(),
            feature_lists: [(
                "s".to_string(),
                vec![Feature::Int64List(vec![1, 2]), Feature::Unset],
            )]
            .into(),
        };
        assert_eq!(SequenceExample::decode(&seq.encode(), 0).unwrap(), seq);
    }

    #[test]
    fn unpacked_lists_decode_like_packed() {
        // Feature { float_list { value: 1.0 value: 2.0 } } unpacked, and
        // int64_list with an unpacked -1.
        let mut e = Encoder::new();
        e.message(2, |l| {
            l.float(1, 1.0);
            l.float(1, 2.0);
        });
        assert_eq!(
            Feature::decode(&e.finish()).unwrap(),
            Feature::FloatList(vec![1.0, 2.0])
        );
        let mut e = Encoder::new();
        e.message(3, |l| l.int64(1, -1));
        assert_eq!(
            Feature::decode(&e.finish()).unwrap(),
            Feature::Int64List(vec![-1])
        );
    }

    #[test]
    fn no_bytes_make_it_panic() {
        let good = example().encode();
        for cut in 0..good.len() {
            let _ = Example::decode(&good[..cut], 0);
            let _ = SequenceExample::decode(&good[..cut], 0);
        }
        for bit in 0..good.len() * 8 {
            let mut b = good.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let _ = Example::decode(&b, 0);
            let _ = SequenceExample::decode(&b, 0);
        }
    }

    #[test]
    fn parse_example_errors_name_record_and_feature() {
        let exs = [example(), Example::default()];
        let spec = |fs| BTreeMap::from([("f".to_string(), fs)]);
        let fixed = |n, default| FeatureSpec::FixedLen {
            shape: vec![n],
            dtype: DType::Float32,
            default,
        };
        let e = parse_example(&exs, &spec(fixed(2, None))).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(1), Some("f")));
        let e = parse_example(&exs, &spec(fixed(3, None))).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("f")));
        let got =
            parse_example(&exs, &spec(fixed(2, Some(Values::Float32(vec![7.0, 8.0]))))).unwrap();
        assert_eq!(
            got["f"],
            Parsed::Dense {
                shape: vec![2, 2],
                values: Values::Float32(vec![1.5, -2.0, 7.0, 8.0])
            }
        );
        let e = parse_example(
            &exs,
            &spec(FeatureSpec::VarLen {
                dtype: DType::Int64,
            }),
        )
        .unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("f")));
        let seq = FeatureSpec::FixedLenSequence {
            shape: vec![],
            dtype: DType::Float32,
            allow_missing: true,
            default: Some(Values::Float32(vec![-1.0])),
        };
        assert_eq!(
            parse_example(&exs, &spec(seq)).unwrap()["f"],
            Parsed::Dense {
                shape: vec![2, 2],
                values: Values::Float32(vec![1.5, -2.0, -1.0, -1.0])
            }
        );
    }

    fn sparse_spec(keys: &[&str], size: &[usize], sorted: bool) -> BTreeMap<String, FeatureSpec> {
        BTreeMap::from([(
            "sp".to_string(),
            FeatureSpec::Sparse {
                index_keys: keys.iter().map(|k| k.to_string()).collect(),
                value_key: "val".into(),
                dtype: DType::Float32,
                size: size.to_vec(),
                already_sorted: sorted,
            },
        )])
    }

    fn ex(features: &[(&str, Feature)]) -> Example {
        Example {
            features: features
                .iter()
                .map(|(k, f)| (k.to_string(), f.clone()))
                .collect(),
        }
    }

    fn sparse(indices: &[usize], values: &[f32], dense_shape: &[usize]) -> Parsed {
        Parsed::SparseTensor {
            indices: indices.to_vec(),
            values: Values::Float32(values.to_vec()),
            dense_shape: dense_shape.to_vec(),
        }
    }

    // The expected values below are what TF 2.21's `tf.io.parse_example`
    // returned for the same Examples and SparseFeatures (run by hand;
    // examples.json has no SparseFeature).
    #[test]
    fn sparse_feature_sorts_indices_unless_already_sorted() {
        let exs = [
            ex(&[
                ("ix", Feature::Int64List(vec![3, 1])),
                ("val", Feature::FloatList(vec![30.0, 10.0])),
            ]),
            ex(&[]),
            ex(&[
                ("ix", Feature::Int64List(vec![0])),
                ("val", Feature::FloatList(vec![5.0])),
            ]),
        ];
        let got = parse_example(&exs, &sparse_spec(&["ix"], &[5], false)).unwrap();
        assert_eq!(
            got["sp"],
            sparse(&[0, 1, 0, 3, 2, 0], &[10.0, 30.0, 5.0], &[3, 5])
        );
        assert_eq!(got["sp"].sparse_indices(), [[0, 1], [0, 3], [2, 0]]);
        let got = parse_example(&exs, &sparse_spec(&["ix"], &[5], true)).unwrap();
        assert_eq!(
            got["sp"],
            sparse(&[0, 3, 0, 1, 2, 0], &[30.0, 10.0, 5.0], &[3, 5])
        );
        // Duplicates stay, in the order of the values (TF: as std::sort leaves them).
        let dup = [ex(&[
            ("ix", Feature::Int64List(vec![2, 0, 2])),
            ("val", Feature::FloatList(vec![1.0, 9.0, 2.0])),
        ])];
        let got = parse_example(&dup, &sparse_spec(&["ix"], &[5], false)).unwrap();
        assert_eq!(
            got["sp"],
            sparse(&[0, 0, 0, 2, 0, 2], &[9.0, 1.0, 2.0], &[1, 5])
        );
    }

    #[test]
    fn sparse_feature_of_two_dimensions_sorts_row_major() {
        let exs = [ex(&[
            ("i0", Feature::Int64List(vec![1, 0])),
            ("i1", Feature::Int64List(vec![2, 3])),
            ("val", Feature::FloatList(vec![1.0, 2.0])),
        ])];
        let got = parse_example(&exs, &sparse_spec(&["i0", "i1"], &[2, 4], false)).unwrap();
        assert_eq!(
            got["sp"],
            sparse(&[0, 0, 3, 0, 1, 2], &[2.0, 1.0], &[1, 2, 4])
        );
        let e = parse_example(&exs, &sparse_spec(&["i0", "i1"], &[2, 3], false)).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("i1")));
        let e = parse_example(&exs, &sparse_spec(&["i0"], &[2, 3], false)).unwrap_err();
        assert_eq!((e.record, e.feature.as_deref()), (None, Some("sp")));
    }

    #[test]
    fn sparse_feature_errors_name_record_and_feature() {
        let spec = sparse_spec(&["ix"], &[5], false);
        let bad = |features: &[(&str, Feature)]| {
            let exs = [ex(&[]), ex(features)];
            let e = parse_example(&exs, &spec).unwrap_err();
            assert_eq!(e.record, Some(1), "{e}");
            e.feature.unwrap_or_default()
        };
        // Counts differ, or one of the two is missing.
        let ix = |v: Vec<i64>| ("ix", Feature::Int64List(v));
        let val = |v: Vec<f32>| ("val", Feature::FloatList(v));
        assert_eq!(bad(&[ix(vec![3, 1]), val(vec![30.0])]), "ix");
        assert_eq!(bad(&[ix(vec![3]), val(vec![30.0, 1.0])]), "ix");
        assert_eq!(bad(&[ix(vec![1])]), "ix");
        assert_eq!(bad(&[val(vec![1.0])]), "ix");
        // Out of [0, size).
        assert_eq!(bad(&[ix(vec![5]), val(vec![1.0])]), "ix");
        assert_eq!(bad(&[ix(vec![-1]), val(vec![1.0])]), "ix");
        // Types.
        assert_eq!(
            bad(&[ix(vec![1]), ("val", Feature::Int64List(vec![1]))]),
            "val"
        );
        assert_eq!(
            bad(&[("ix", Feature::FloatList(vec![1.0])), val(vec![1.0])]),
            "ix"
        );
    }

    #[test]
    fn parse_single_example_drops_the_batch_dimension() {
        let e = ex(&[
            ("ix", Feature::Int64List(vec![4, 0])),
            ("val", Feature::FloatList(vec![4.0, 0.5])),
            ("a", Feature::FloatList(vec![1.0, 2.0])),
        ]);
        let mut spec = sparse_spec(&["ix"], &[5], false);
        spec.insert(
            "a".into(),
            FeatureSpec::FixedLen {
                shape: vec![2],
                dtype: DType::Float32,
                default: None,
            },
        );
        spec.insert(
            "v".into(),
            FeatureSpec::VarLen {
                dtype: DType::Float32,
            },
        );
        spec.insert(
            "val2".into(),
            FeatureSpec::VarLen {
                dtype: DType::Float32,
            },
        );
        spec.insert(
            "s".into(),
            FeatureSpec::FixedLenSequence {
                shape: vec![],
                dtype: DType::Int64,
                allow_missing: true,
                default: None,
            },
        );
        let got = parse_single_example(&e, &spec).unwrap();
        assert_eq!(got["sp"], sparse(&[0, 4], &[0.5, 4.0], &[5]));
        assert_eq!(
            got["a"],
            Parsed::Dense {
                shape: vec![2],
                values: Values::Float32(vec![1.0, 2.0])
            }
        );
        assert_eq!(got["v"], sparse(&[], &[], &[0]));
        assert_eq!(
            got["s"],
            Parsed::Dense {
                shape: vec![0],
                values: Values::Int64(vec![])
            }
        );
        let mut e2 = e.clone();
        e2.features
            .insert("v".into(), Feature::FloatList(vec![7.0, 8.0]));
        let got = parse_single_example(&e2, &spec).unwrap();
        assert_eq!(got["v"], sparse(&[0, 1], &[7.0, 8.0], &[2]));
    }
}
