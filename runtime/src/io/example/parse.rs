//! `tf.io.parse_example` and `parse_single_example`: a batch of Examples
//! into plain Rust values under a parse spec.
//!
//! Owns: [`FeatureSpec`] (`FixedLenFeature`, `VarLenFeature`,
//! `FixedLenSequenceFeature`, `SparseFeature`), [`Values`] and [`Parsed`]
//! (dense tensors, sparse values with per-example row lengths, or
//! SparseTensors with explicit indices), [`parse_example`],
//! [`parse_single_example`], and [`read_examples`] (a TFRecord file of
//! Examples).
//!
//! Invariants: every error names the record (its index in the batch) and
//! the feature; a spec that cannot be satisfied is an error naming the
//! feature, never a panic.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use super::super::tfrecord::{self, Compression};
use super::{DType, Example, ExampleError, Feature, Features};

/// Values of one type, flat.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Float32(Vec<f32>),
    Int64(Vec<i64>),
    String(Vec<Vec<u8>>),
}

impl Values {
    pub(super) fn empty(dtype: DType) -> Values {
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
    pub(super) fn pad(&mut self, n: usize) {
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
    pub(super) fn unbatched(self) -> Parsed {
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
    let features: Vec<&Features> = examples.iter().map(|e| &e.features).collect();
    parse_features(&features, spec)
}

/// [`parse_example`] over each example's `Features` (an Example's, or a
/// SequenceExample's `context`).
pub(super) fn parse_features(
    examples: &[&Features],
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
                    match ex.get(name) {
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
                    match ex.get(name) {
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
                    let count = match ex.get(name) {
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
                    if let Some(f) = ex.get(name) {
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
    examples: &[&Features],
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
        let value = ex.get(value_key);
        if let Some(f) = value {
            if !Values::empty(dtype).extend_from_feature(&Feature::kind_of(f)) {
                return Err(wrong_type_error(i, value_key, f, dtype));
            }
        }
        let n = value.map_or(0, Feature::len);
        let start = indices.len() / rank;
        indices.resize(indices.len() + n * rank, i);
        for (d, key) in index_keys.iter().enumerate() {
            let ids: &[i64] = match ex.get(key) {
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
