//! The feature-column transforms: raw cells to a column's inputs, as TF
//! 2.21's `tf.feature_column` computes them.
//!
//! Owns: [`DenseTransform`] (`numeric_column`: `shape` f32 values),
//! [`CategoricalTransform`] (a categorical column's ids or weights,
//! `[rows, max_values]`), [`LabelVocabularyTransform`] (a string label's
//! class id), the sequence columns' [`SequenceDenseTransform`]
//! (`sequence_numeric_column`: `[rows, max_steps * shape]`) and
//! [`SequenceLengthTransform`] (a sequence column's length, `[rows]`), and
//! [`transform_for`], which [`crate::data::columns::transform_for`]
//! calls for every input with a `feature`.
//!
//! Sequences (TF's `SequenceCategoricalColumn`, `SequenceNumericColumn`): a
//! sequence categorical column's ids and weights are the ones above with one
//! value per step (`max_values` = the most steps); a sequence numeric column
//! of shape d reads its values (an Example's float_list, a CSV cell's
//! whitespace-separated numbers) as steps of d values, normalized, and pads
//! the steps past the example's length with `default_value` (TF's
//! `sparse_tensor_to_dense` after the normalizer). The length of an example
//! is its number of steps: values / d for a numeric column (a count that is
//! not a multiple of d is an error), the last present value + 1 for a
//! categorical one (TF's `sequence_length_from_sparse_tensor`: values TF
//! keeps with id -1 count, the `''`/`-1` it drops from dense CSV cells do
//! not).
//!
//! How ids are computed (per raw value of the key):
//! - `categorical_column_with_hash_bucket`: `Fingerprint64(bytes) % size`
//!   (an int64 through its decimal string);
//! - `categorical_column_with_identity`: the value; outside
//!   `[0, num_buckets)` it becomes `default_value` when there is one, else it
//!   passes unchanged (TF 2.21 does not range-check there);
//! - vocabulary columns: the position of the value's first occurrence;
//!   otherwise `size + Fingerprint64 % num_oov_buckets`, or `default_value`;
//! - `bucketized_column`: value j of the source (after its default and
//!   normalizer) in bucket b (the number of boundaries `<=` it, compared in
//!   float32 as TF's `Bucketize`) gives `j * (len(boundaries) + 1) + b`;
//! - `crossed_column`: TF's `SparseCross` (see [`crate::hash`]): per row the
//!   cartesian product of the leaves' values, the sparse leaves (column ids,
//!   and raw keys read from Example features) before the dense ones (raw
//!   keys of text cells), each group in the order the keys were given; raw
//!   strings cross as their Fingerprint64, int64s and ids raw; nothing is
//!   dropped from a raw key (a dense `''` or `-1` is crossed);
//! - `weighted_categorical_column`: the inner column's ids, each weighted by
//!   the weight feature's value paired with it: the k-th weight with the
//!   k-th value that gives an id (TF's order), or by position when the
//!   weights are a dense row (a CSV cell) or as long as the id row; other
//!   counts are an error naming both keys.
//!
//! Slots: a row's value at position p of its key (its index in the dense
//! row, or in the Example feature's list; the p-th element of a cross's
//! product) goes to slot p, TF's SparseTensor index `[row, p]`. A value TF
//! drops (dense `''` or `-1`), a negative id (TF's `-1` default, which every
//! consumer ignores), an id that does not fit int32, and padding all read as
//! [`PADDING_ID`] (-1) with weight 0: a slot that names no row, so the
//! compiled step neither reads nor updates a table row for it.
//!
//! Invariants:
//! - A row whose key gives more values than `max_values` is an error naming
//!   the row and column and the limit, never truncated.
//! - With `check_range`, an id `>= num_buckets` is an error (TF's embedding
//!   lookup fails on it); without, it passes (an indicator ignores it).
//! - The ids and weights transforms of one column agree slot by slot: they
//!   run the same code, the weights one skipping only the hashing of columns
//!   whose ids are always valid; so an unweighted column's weight is 1
//!   exactly where its id is not padding (the input pipeline derives it so).
//!   The one exception is deliberate: ids with `prune_nonpositive_weights`
//!   (a weighted column feeding a `mean` or `sqrtn` combiner) make the
//!   slots of weights `<= 0` padding, while the weights keep their values
//!   (the compiled lookup clamps them at 0).
//! - No allocation per row or per cell: buffers live in the transform and
//!   are reused; strings are hashed from the cell's bytes.

use std::collections::HashMap;
use std::num::NonZeroU64;

use super::raw::{self, Form};
use super::{
    CategoricalColumn, CrossKey, FeatureInput, KeyDType, NumericColumn, SequenceColumn, Vocabulary,
    PADDING_ID,
};
use crate::abi::ElemType;
use crate::data::columns::{Cell, CellError, CellRows, ColumnTransform, ValuesMut};
use crate::hash;

/// The transform that computes feature input `input`; `columns` are the
/// input's source columns (used by a string label, whose description does
/// not name its key; the other inputs read [`FeatureInput::raw_keys`]).
pub fn transform_for(input: &FeatureInput, columns: &[String]) -> Box<dyn ColumnTransform> {
    match input {
        FeatureInput::Dense(c) => Box::new(DenseTransform::new(c.clone())),
        FeatureInput::Ids {
            column,
            max_values,
            check_range,
            prune_nonpositive_weights,
        } => {
            let mut t = CategoricalTransform::new(
                column,
                *max_values,
                CategoricalOutput::Ids {
                    check_range: *check_range,
                },
            );
            t.prune_nonpositive_weights = *prune_nonpositive_weights;
            Box::new(t)
        }
        FeatureInput::Weights { column, max_values } => Box::new(CategoricalTransform::new(
            column,
            *max_values,
            CategoricalOutput::Weights,
        )),
        FeatureInput::LabelVocabulary { vocabulary } => Box::new(LabelVocabularyTransform::new(
            columns.to_vec(),
            vocabulary.clone(),
        )),
        FeatureInput::SequenceDense { column, max_steps } => {
            Box::new(SequenceDenseTransform::new(column.clone(), *max_steps))
        }
        FeatureInput::SequenceLength { column, max_steps } => {
            Box::new(SequenceLengthTransform::new(column, *max_steps))
        }
    }
}

fn wrong_output(want: ElemType) -> CellError {
    CellError {
        row: 0,
        column: 0,
        message: format!("internal error: the output buffer is not {want:?}"),
    }
}

/// A bad cell inside a transform: its column (an index into `columns()`).
struct Fail {
    column: usize,
    message: String,
}

fn fail(column: usize) -> impl Fn(String) -> Fail {
    move |message| Fail { column, message }
}

/// The f32 value of a numeric column: `x` through the normalizer (in f64),
/// rounded once, finite.
fn numeric_value(col: &NumericColumn, x: f64) -> Result<f32, String> {
    match &col.normalizer {
        None => {
            let y = x as f32;
            if y.is_finite() {
                Ok(y)
            } else {
                Err(format!("value {x} overflows float32"))
            }
        }
        Some(e) => {
            let v = e.eval(x);
            let y = v as f32;
            if y.is_finite() {
                Ok(y)
            } else {
                Err(format!(
                    "normalizer `{e}` maps {x} to {v}, which is not a finite float32"
                ))
            }
        }
    }
}

/// One example of a numeric column into `out` (`shape` values): the cell's
/// values, or the default when it has none; then the normalizer.
fn numeric_row(col: &NumericColumn, cell: Cell<'_>, out: &mut [f32]) -> Result<(), String> {
    let shape = col.shape;
    let n = raw::count_numbers(cell);
    if n == 0 {
        let Some(d) = &col.default_value else {
            return Err("missing value and the column has no default_value".to_string());
        };
        if d.len() != shape || out.len() != shape {
            return Err(format!(
                "internal error: default_value has {} values, the shape is {shape}",
                d.len()
            ));
        }
        for (o, &x) in out.iter_mut().zip(d) {
            *o = numeric_value(col, x)?;
        }
        return Ok(());
    }
    if n != shape || out.len() != shape {
        return Err(format!("has {n} values, but the column's shape is {shape}"));
    }
    raw::numbers(cell, |i, x| {
        if let Some(o) = out.get_mut(i) {
            *o = numeric_value(col, x)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// `numeric_column`: `shape` float32 values per example (see `numeric_row`):
/// a text cell holds them separated by whitespace, an Example feature as its
/// list; a missing value takes `default_value` (before the normalizer, as
/// TF's parsing applies it) or is an error.
#[derive(Clone, Debug)]
pub struct DenseTransform {
    columns: Vec<String>,
    column: NumericColumn,
}

impl DenseTransform {
    pub fn new(column: NumericColumn) -> DenseTransform {
        DenseTransform {
            columns: vec![column.key.clone()],
            column,
        }
    }
}

impl ColumnTransform for DenseTransform {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::F32
    }
    fn width(&self) -> usize {
        self.column.shape
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::F32(out) = out else {
            return Err(wrong_output(ElemType::F32));
        };
        let width = self.column.shape.max(1);
        for (row, dst) in out.chunks_exact_mut(width).take(cells.rows()).enumerate() {
            numeric_row(&self.column, cells.cell(row, 0), dst).map_err(|message| CellError {
                row,
                column: 0,
                message,
            })?;
        }
        Ok(())
    }
}

/// What a [`CategoricalTransform`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CategoricalOutput {
    /// The i32 ids; `check_range`: an id `>= num_buckets` is an error.
    Ids { check_range: bool },
    /// The f32 weights.
    Weights,
}

/// One value of a row: its slot, its id (TF's, possibly negative or out of
/// range) and its weight.
#[derive(Clone, Copy, Debug)]
struct Entry {
    pos: usize,
    id: i64,
    weight: f32,
}

#[derive(Clone, Copy, Debug)]
struct Ctx<'a> {
    /// Per column: its Example features are dense rows.
    dense_features: &'a [bool],
    /// False: only which values there are and their weights matter (the
    /// weights output), so always-valid ids (hashes, crosses) are not hashed.
    need_ids: bool,
    /// The most values a row may give.
    limit: usize,
}

/// A categorical column, ready to run: keys resolved to column indices,
/// vocabularies indexed, buffers for crosses.
#[derive(Clone, Debug)]
enum Plan {
    Hash {
        col: usize,
        dtype: KeyDType,
        buckets: NonZeroU64,
    },
    Identity {
        col: usize,
        num_buckets: u64,
        default: Option<i64>,
    },
    VocabStrings {
        col: usize,
        index: HashMap<Vec<u8>, i64>,
        size: i64,
        oov: Option<NonZeroU64>,
        default: i64,
    },
    VocabInts {
        col: usize,
        index: HashMap<i64, i64>,
        size: i64,
        oov: Option<NonZeroU64>,
        default: i64,
    },
    Bucketized {
        col: usize,
        source: NumericColumn,
        /// TF's `Bucketize` keeps its boundaries as float32.
        boundaries: Vec<f32>,
        values: Vec<f32>,
    },
    Crossed(Box<Cross>),
    Weighted {
        inner: Box<Plan>,
        weight_col: usize,
        inner_name: String,
        weight_key: String,
    },
}

#[derive(Clone, Debug)]
struct Cross {
    leaves: Vec<Leaf>,
    start: u64,
    buckets: NonZeroU64,
    /// Per leaf, the row's values as the cross chains them.
    fps: Vec<Vec<u64>>,
    /// The leaves in the op's input order (sparse first) for this row.
    order: Vec<usize>,
    /// The row's dense leaves (then appended to `order`).
    dense: Vec<usize>,
    idx: Vec<usize>,
    prefix: Vec<u64>,
}

#[derive(Clone, Debug)]
enum Leaf {
    Raw { col: usize, dtype: KeyDType },
    Column { plan: Plan, entries: Vec<Entry> },
}

/// The index of `key` in `keys`, added when new.
fn key_index(keys: &mut Vec<String>, key: &str) -> usize {
    match keys.iter().position(|k| k == key) {
        Some(i) => i,
        None => {
            keys.push(key.to_string());
            keys.len() - 1
        }
    }
}

/// A column's leaf-level cross keys, nested crosses flattened (TF's
/// `_collect_leaf_level_keys`).
fn cross_leaves<'c>(keys: &'c [CrossKey], out: &mut Vec<&'c CrossKey>) {
    for k in keys {
        match k {
            CrossKey::Column(c) => match c.as_ref() {
                CategoricalColumn::Crossed { keys, .. } => cross_leaves(keys, out),
                _ => out.push(k),
            },
            CrossKey::Raw { .. } => out.push(k),
        }
    }
}

impl Plan {
    fn build(column: &CategoricalColumn, keys: &mut Vec<String>) -> Plan {
        match column {
            CategoricalColumn::HashBucket {
                key,
                hash_bucket_size,
                dtype,
            } => Plan::Hash {
                col: key_index(keys, key),
                dtype: *dtype,
                buckets: *hash_bucket_size,
            },
            CategoricalColumn::Identity {
                key,
                num_buckets,
                default_value,
            } => Plan::Identity {
                col: key_index(keys, key),
                num_buckets: *num_buckets,
                default: *default_value,
            },
            CategoricalColumn::Vocabulary {
                key,
                vocabulary,
                num_oov_buckets,
                default_value,
                ..
            } => {
                let col = key_index(keys, key);
                let size = vocabulary.len() as i64;
                let oov = NonZeroU64::new(*num_oov_buckets);
                let default = *default_value;
                match vocabulary {
                    Vocabulary::Strings(v) => {
                        let mut index = HashMap::with_capacity(v.len());
                        for (i, s) in v.iter().enumerate() {
                            index.entry(s.clone()).or_insert(i as i64);
                        }
                        Plan::VocabStrings {
                            col,
                            index,
                            size,
                            oov,
                            default,
                        }
                    }
                    Vocabulary::Ints(v) => {
                        let mut index = HashMap::with_capacity(v.len());
                        for (i, &s) in v.iter().enumerate() {
                            index.entry(s).or_insert(i as i64);
                        }
                        Plan::VocabInts {
                            col,
                            index,
                            size,
                            oov,
                            default,
                        }
                    }
                }
            }
            CategoricalColumn::Bucketized { source, boundaries } => Plan::Bucketized {
                col: key_index(keys, &source.key),
                source: source.clone(),
                boundaries: boundaries.iter().map(|&b| b as f32).collect(),
                values: vec![0.0; source.shape],
            },
            CategoricalColumn::Crossed {
                keys: cross_keys,
                hash_bucket_size,
                hash_key,
            } => {
                let mut flat = Vec::new();
                cross_leaves(cross_keys, &mut flat);
                let leaves: Vec<Leaf> = flat
                    .into_iter()
                    .map(|k| match k {
                        CrossKey::Raw { key, dtype } => Leaf::Raw {
                            col: key_index(keys, key),
                            dtype: *dtype,
                        },
                        CrossKey::Column(c) => Leaf::Column {
                            plan: Plan::build(c, keys),
                            entries: Vec::new(),
                        },
                    })
                    .collect();
                let n = leaves.len();
                Plan::Crossed(Box::new(Cross {
                    leaves,
                    start: hash::cross_start(hash_key.unwrap_or(0)),
                    buckets: *hash_bucket_size,
                    fps: vec![Vec::new(); n],
                    order: Vec::with_capacity(n),
                    dense: Vec::with_capacity(n),
                    idx: vec![0; n],
                    prefix: vec![0; n + 1],
                }))
            }
            CategoricalColumn::Weighted {
                categorical,
                weight_feature_key,
            } => {
                let inner = Box::new(Plan::build(categorical, keys));
                Plan::Weighted {
                    inner,
                    weight_col: key_index(keys, weight_feature_key),
                    inner_name: categorical.name(),
                    weight_key: weight_feature_key.clone(),
                }
            }
        }
    }

    /// The column index errors about the column's ids name.
    fn first_col(&self) -> usize {
        match self {
            Plan::Hash { col, .. }
            | Plan::Identity { col, .. }
            | Plan::VocabStrings { col, .. }
            | Plan::VocabInts { col, .. }
            | Plan::Bucketized { col, .. } => *col,
            Plan::Crossed(c) => match c.leaves.first() {
                Some(Leaf::Raw { col, .. }) => *col,
                Some(Leaf::Column { plan, .. }) => plan.first_col(),
                None => 0,
            },
            Plan::Weighted { inner, .. } => inner.first_col(),
        }
    }

    /// Appends the row's present values to `out` (slot, TF's id, weight 1
    /// or the weight feature's); returns how many values the key gave
    /// (dropped ones included: they still take their slot).
    fn eval(
        &mut self,
        cells: &CellRows<'_>,
        row: usize,
        ctx: Ctx<'_>,
        out: &mut Vec<Entry>,
    ) -> Result<usize, Fail> {
        let mut push = |pos: usize, id: i64| {
            out.push(Entry {
                pos,
                id,
                weight: 1.0,
            })
        };
        match self {
            Plan::Hash {
                col,
                dtype: KeyDType::String,
                buckets,
            } => {
                let cell = cells.cell(row, *col);
                let dense = raw::form(cell, ctx.dense_features[*col]) == Form::Dense;
                let v = raw::strings(cell).map_err(fail(*col))?;
                for p in 0..v.len() {
                    let s = v.get(p);
                    if dense && s.is_empty() {
                        continue;
                    }
                    let id = if ctx.need_ids {
                        hash::hash_bucket(s, *buckets) as i64
                    } else {
                        0
                    };
                    push(p, id);
                }
                Ok(v.len())
            }
            Plan::Hash {
                col,
                dtype: KeyDType::Int64,
                buckets,
            } => {
                let cell = cells.cell(row, *col);
                let dense = raw::form(cell, ctx.dense_features[*col]) == Form::Dense;
                let v = raw::ints(cell).map_err(fail(*col))?;
                for p in 0..v.len() {
                    let x = v.get(p);
                    if dense && x == -1 {
                        continue;
                    }
                    let id = if ctx.need_ids {
                        hash::hash_bucket_i64(x, *buckets) as i64
                    } else {
                        0
                    };
                    push(p, id);
                }
                Ok(v.len())
            }
            Plan::Identity {
                col,
                num_buckets,
                default,
            } => {
                let cell = cells.cell(row, *col);
                let dense = raw::form(cell, ctx.dense_features[*col]) == Form::Dense;
                let v = raw::ints(cell).map_err(fail(*col))?;
                for p in 0..v.len() {
                    let x = v.get(p);
                    if dense && x == -1 {
                        continue;
                    }
                    let id = match default {
                        Some(d) if x < 0 || x as u64 >= *num_buckets => *d,
                        _ => x,
                    };
                    push(p, id);
                }
                Ok(v.len())
            }
            Plan::VocabStrings {
                col,
                index,
                size,
                oov,
                default,
            } => {
                let cell = cells.cell(row, *col);
                let dense = raw::form(cell, ctx.dense_features[*col]) == Form::Dense;
                let v = raw::strings(cell).map_err(fail(*col))?;
                for p in 0..v.len() {
                    let s = v.get(p);
                    if dense && s.is_empty() {
                        continue;
                    }
                    let id = match (index.get(s), *oov) {
                        (Some(&i), _) => i,
                        (None, Some(n)) => *size + hash::hash_bucket(s, n) as i64,
                        (None, None) => *default,
                    };
                    push(p, id);
                }
                Ok(v.len())
            }
            Plan::VocabInts {
                col,
                index,
                size,
                oov,
                default,
            } => {
                let cell = cells.cell(row, *col);
                let dense = raw::form(cell, ctx.dense_features[*col]) == Form::Dense;
                let v = raw::ints(cell).map_err(fail(*col))?;
                for p in 0..v.len() {
                    let x = v.get(p);
                    if dense && x == -1 {
                        continue;
                    }
                    let id = match (index.get(&x), *oov) {
                        (Some(&i), _) => i,
                        (None, Some(n)) => *size + hash::hash_bucket_i64(x, n) as i64,
                        (None, None) => *default,
                    };
                    push(p, id);
                }
                Ok(v.len())
            }
            Plan::Bucketized {
                col,
                source,
                boundaries,
                values,
            } => {
                numeric_row(source, cells.cell(row, *col), values).map_err(fail(*col))?;
                let per = boundaries.len() as i64 + 1;
                for (j, &x) in values.iter().enumerate() {
                    // TF's Bucketize: upper_bound, the boundaries <= x.
                    let b = boundaries.partition_point(|&bd| bd <= x) as i64;
                    push(j, j as i64 * per + b);
                }
                Ok(values.len())
            }
            Plan::Crossed(c) => c.eval(cells, row, ctx, out),
            Plan::Weighted {
                inner,
                weight_col,
                inner_name,
                weight_key,
            } => {
                let start = out.len();
                let n_raw = inner.eval(cells, row, ctx, out)?;
                let entries = &mut out[start..];
                let n_present = entries.len();
                let cell = cells.cell(row, *weight_col);
                let n_w = raw::count_numbers(cell);
                let dense_w = raw::form(cell, ctx.dense_features[*weight_col]) == Form::Dense;
                // TF pairs the k-th weight with the k-th id; a dense weight
                // row (a CSV cell), or one as long as the id row, pairs by
                // position (the weights of dropped values unused).
                let positional = if n_w == n_present {
                    false
                } else if (dense_w || n_w == n_raw) && entries.iter().all(|e| e.pos < n_w) {
                    true
                } else {
                    return Err(Fail {
                        column: *weight_col,
                        message: format!(
                            "`{inner_name}` has {n_present} value(s) but its weight feature \
                             `{weight_key}` has {n_w}"
                        ),
                    });
                };
                let mut at = 0;
                raw::numbers(cell, |i, w| {
                    if positional {
                        while at < entries.len() && entries[at].pos < i {
                            at += 1;
                        }
                        if let Some(e) = entries.get_mut(at).filter(|e| e.pos == i) {
                            e.weight = w as f32;
                        }
                    } else if let Some(e) = entries.get_mut(i) {
                        e.weight = w as f32;
                    }
                    Ok(())
                })
                .map_err(fail(*weight_col))?;
                Ok(n_raw)
            }
        }
    }
}

impl Cross {
    fn eval(
        &mut self,
        cells: &CellRows<'_>,
        row: usize,
        ctx: Ctx<'_>,
        out: &mut Vec<Entry>,
    ) -> Result<usize, Fail> {
        let Cross {
            leaves,
            start,
            buckets,
            fps,
            order,
            dense,
            idx,
            prefix,
        } = self;
        let inner = Ctx {
            limit: usize::MAX,
            ..ctx
        };
        let mut total: usize = 1;
        let mut first_col = 0;
        order.clear();
        dense.clear();
        for (i, (leaf, f)) in leaves.iter_mut().zip(fps.iter_mut()).enumerate() {
            f.clear();
            let form = match leaf {
                Leaf::Raw { col, dtype } => {
                    let cell = cells.cell(row, *col);
                    first_col = *col;
                    match dtype {
                        KeyDType::String => {
                            let v = raw::strings(cell).map_err(fail(*col))?;
                            for p in 0..v.len() {
                                f.push(if ctx.need_ids {
                                    hash::fingerprint64(v.get(p))
                                } else {
                                    0
                                });
                            }
                        }
                        KeyDType::Int64 => {
                            let v = raw::ints(cell).map_err(fail(*col))?;
                            for p in 0..v.len() {
                                f.push(v.get(p) as u64);
                            }
                        }
                    }
                    raw::form(cell, ctx.dense_features[*col])
                }
                Leaf::Column { plan, entries } => {
                    entries.clear();
                    plan.eval(cells, row, inner, entries)?;
                    f.extend(entries.iter().map(|e| e.id as u64));
                    first_col = plan.first_col();
                    Form::Sparse
                }
            };
            total = total.saturating_mul(f.len());
            // Sparse leaves first, then dense ones, each in the keys' order.
            match form {
                Form::Sparse => order.push(i),
                Form::Dense => dense.push(i),
            }
        }
        order.extend_from_slice(dense);
        if order.is_empty() {
            return Ok(0);
        }
        if total > ctx.limit {
            return Err(Fail {
                column: first_col,
                message: format!(
                    "the cross gives {} values, more than max_values = {}",
                    if total == usize::MAX {
                        "too many".to_string()
                    } else {
                        total.to_string()
                    },
                    ctx.limit
                ),
            });
        }
        if total == 0 {
            return Ok(0);
        }
        if !ctx.need_ids {
            out.extend((0..total).map(|pos| Entry {
                pos,
                id: 0,
                weight: 1.0,
            }));
            return Ok(total);
        }
        // An odometer over the product, last input fastest; prefix[d] is
        // the chain over the first d inputs.
        let k = order.len();
        prefix[0] = *start;
        for d in 0..k {
            idx[d] = 0;
            prefix[d + 1] = hash::fingerprint_cat64(prefix[d], fps[order[d]][0]);
        }
        let mut pos = 0;
        loop {
            out.push(Entry {
                pos,
                id: hash::bucket(prefix[k], *buckets) as i64,
                weight: 1.0,
            });
            pos += 1;
            let mut d = k;
            loop {
                if d == 0 {
                    return Ok(total);
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < fps[order[d]].len() {
                    break;
                }
                idx[d] = 0;
            }
            for e in d..k {
                prefix[e + 1] = hash::fingerprint_cat64(prefix[e], fps[order[e]][idx[e]]);
            }
        }
    }
}

/// A categorical column's ids (i32) or weights (f32), `[rows, max_values]`
/// (see the module doc). Columns: the column's raw keys
/// ([`CategoricalColumn::raw_keys`]).
#[derive(Clone, Debug)]
pub struct CategoricalTransform {
    columns: Vec<String>,
    plan: Plan,
    name: String,
    num_buckets: u64,
    max_values: usize,
    output: CategoricalOutput,
    /// Per column: read its Example features as dense rows.
    dense_features: Vec<bool>,
    /// Values with a weight `<= 0` are left out (padding).
    prune_nonpositive_weights: bool,
    entries: Vec<Entry>,
}

impl CategoricalTransform {
    pub fn new(
        column: &CategoricalColumn,
        max_values: usize,
        output: CategoricalOutput,
    ) -> CategoricalTransform {
        let mut columns = Vec::new();
        let plan = Plan::build(column, &mut columns);
        CategoricalTransform {
            dense_features: vec![false; columns.len()],
            prune_nonpositive_weights: false,
            columns,
            plan,
            name: column.name(),
            num_buckets: column.num_buckets(),
            max_values,
            output,
            entries: Vec::with_capacity(max_values),
        }
    }

    /// Reads the Example features of `keys` as dense rows (TF's dense
    /// tensors in a feature dict: `''` and `-1` are missing values, a cross
    /// takes them after its sparse inputs) instead of the SparseTensors of
    /// `VarLenFeature`s. Keys the column does not read are ignored.
    pub fn with_dense_features(mut self, keys: &[&str]) -> CategoricalTransform {
        for (c, d) in self.columns.iter().zip(&mut self.dense_features) {
            *d = keys.contains(&c.as_str());
        }
        self
    }

    /// The length of a row as a sequence: its last present value + 1 (TF's
    /// `sequence_length_from_sparse_tensor`), at most `max_values`.
    fn sequence_length(&mut self, cells: &CellRows<'_>, row: usize) -> Result<usize, CellError> {
        let ctx = Ctx {
            dense_features: &self.dense_features,
            need_ids: false,
            limit: self.max_values,
        };
        self.entries.clear();
        let n = self
            .plan
            .eval(cells, row, ctx, &mut self.entries)
            .map_err(|f| CellError {
                row,
                column: f.column,
                message: f.message,
            })?;
        if n > self.max_values {
            return Err(CellError {
                row,
                column: self.plan.first_col(),
                message: format!(
                    "`{}` has {n} values, more than max_values = {}",
                    self.name, self.max_values
                ),
            });
        }
        Ok(self.entries.iter().map(|e| e.pos + 1).max().unwrap_or(0))
    }

    /// One row into `ids` / `weights` (`max_values` slots each, the one
    /// `output` asks for).
    fn row(
        &mut self,
        cells: &CellRows<'_>,
        row: usize,
        mut ids: Option<&mut [i32]>,
        mut weights: Option<&mut [f32]>,
    ) -> Result<(), CellError> {
        let err = |f: Fail| CellError {
            row,
            column: f.column,
            message: f.message,
        };
        let ctx = Ctx {
            dense_features: &self.dense_features,
            need_ids: ids.is_some(),
            limit: self.max_values,
        };
        self.entries.clear();
        let n = self
            .plan
            .eval(cells, row, ctx, &mut self.entries)
            .map_err(err)?;
        if n > self.max_values {
            return Err(CellError {
                row,
                column: self.plan.first_col(),
                message: format!(
                    "`{}` has {n} values, more than max_values = {}",
                    self.name, self.max_values
                ),
            });
        }
        if let Some(ids) = ids.as_deref_mut() {
            ids.fill(PADDING_ID);
        }
        if let Some(w) = weights.as_deref_mut() {
            w.fill(0.0);
        }
        let check_range = matches!(self.output, CategoricalOutput::Ids { check_range: true });
        for e in &self.entries {
            if check_range && e.id >= 0 && e.id as u64 >= self.num_buckets {
                return Err(CellError {
                    row,
                    column: self.plan.first_col(),
                    message: format!(
                        "id {} of `{}` is out of range [0, {})",
                        e.id, self.name, self.num_buckets
                    ),
                });
            }
            // Negative ids (TF's -1 default) and ids beyond int32 are
            // values no consumer uses: padding (PADDING_ID, weight 0).
            let Ok(id) = i32::try_from(e.id) else {
                continue;
            };
            if id < 0 || (self.prune_nonpositive_weights && e.weight <= 0.0) {
                continue;
            }
            if let Some(slot) = ids.as_deref_mut().and_then(|s| s.get_mut(e.pos)) {
                *slot = id;
            }
            if let Some(slot) = weights.as_deref_mut().and_then(|s| s.get_mut(e.pos)) {
                *slot = e.weight;
            }
        }
        Ok(())
    }
}

impl ColumnTransform for CategoricalTransform {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        match self.output {
            CategoricalOutput::Ids { .. } => ElemType::I32,
            CategoricalOutput::Weights => ElemType::F32,
        }
    }
    fn width(&self) -> usize {
        self.max_values
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let width = self.max_values.max(1);
        match (self.output, out) {
            (CategoricalOutput::Ids { .. }, ValuesMut::I32(out)) => {
                for (row, dst) in out.chunks_exact_mut(width).take(cells.rows()).enumerate() {
                    self.row(cells, row, Some(dst), None)?;
                }
                Ok(())
            }
            (CategoricalOutput::Weights, ValuesMut::F32(out)) => {
                for (row, dst) in out.chunks_exact_mut(width).take(cells.rows()).enumerate() {
                    self.row(cells, row, None, Some(dst))?;
                }
                Ok(())
            }
            (CategoricalOutput::Ids { .. }, _) => Err(wrong_output(ElemType::I32)),
            (CategoricalOutput::Weights, _) => Err(wrong_output(ElemType::F32)),
        }
    }
}

/// The number of steps of a `sequence_numeric_column` in `cell`: its values
/// divided by the shape (a whole number of steps, at most `max_steps`).
fn numeric_steps(col: &NumericColumn, cell: Cell<'_>, max_steps: usize) -> Result<usize, String> {
    let n = raw::count_numbers(cell);
    let d = col.shape.max(1);
    if !n.is_multiple_of(d) {
        return Err(format!(
            "`{}` has {n} values, not a whole number of steps of shape {d}",
            col.name()
        ));
    }
    let steps = n / d;
    if steps > max_steps {
        return Err(format!(
            "`{}` has {steps} steps, more than max_values = {max_steps}",
            col.name()
        ));
    }
    Ok(steps)
}

/// `sequence_numeric_column(key, shape, default_value, normalizer_fn)`:
/// `max_steps * shape` f32 values per example (see the module doc).
#[derive(Clone, Debug)]
pub struct SequenceDenseTransform {
    columns: Vec<String>,
    column: NumericColumn,
    max_steps: usize,
    /// The padding of one step: `default_value` as float32.
    padding: Vec<f32>,
}

impl SequenceDenseTransform {
    pub fn new(column: NumericColumn, max_steps: usize) -> SequenceDenseTransform {
        let shape = column.shape.max(1);
        let padding = match &column.default_value {
            Some(d) => (0..shape)
                .map(|i| d.get(i).or(d.first()).copied().unwrap_or(0.0) as f32)
                .collect(),
            None => vec![0.0; shape],
        };
        SequenceDenseTransform {
            columns: vec![column.key.clone()],
            column,
            max_steps,
            padding,
        }
    }

    fn row(&self, cell: Cell<'_>, out: &mut [f32]) -> Result<(), String> {
        let steps = numeric_steps(&self.column, cell, self.max_steps)?;
        let d = self.padding.len();
        let (values, pad) = out.split_at_mut((steps * d).min(out.len()));
        raw::numbers(cell, |i, x| {
            if let Some(o) = values.get_mut(i) {
                *o = numeric_value(&self.column, x)?;
            }
            Ok(())
        })?;
        for step in pad.chunks_mut(d) {
            step.copy_from_slice(&self.padding[..step.len()]);
        }
        Ok(())
    }
}

impl ColumnTransform for SequenceDenseTransform {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::F32
    }
    fn width(&self) -> usize {
        self.max_steps * self.column.shape
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::F32(out) = out else {
            return Err(wrong_output(ElemType::F32));
        };
        let width = self.width().max(1);
        for (row, dst) in out.chunks_exact_mut(width).take(cells.rows()).enumerate() {
            self.row(cells.cell(row, 0), dst)
                .map_err(|message| CellError {
                    row,
                    column: 0,
                    message,
                })?;
        }
        Ok(())
    }
}

/// A sequence column's length per example, i32 (see the module doc); more
/// than `max_steps` steps is an error naming the row and column.
#[derive(Clone, Debug)]
pub struct SequenceLengthTransform {
    columns: Vec<String>,
    of: LengthOf,
}

#[derive(Clone, Debug)]
enum LengthOf {
    Numeric {
        column: NumericColumn,
        max_steps: usize,
    },
    /// The column's transform (it gives the slots of the present values).
    Categorical(Box<CategoricalTransform>),
}

impl SequenceLengthTransform {
    pub fn new(column: &SequenceColumn, max_steps: usize) -> SequenceLengthTransform {
        match column {
            SequenceColumn::Numeric(n) => SequenceLengthTransform {
                columns: vec![n.key.clone()],
                of: LengthOf::Numeric {
                    column: n.clone(),
                    max_steps,
                },
            },
            SequenceColumn::Categorical(c) => {
                let t = CategoricalTransform::new(c, max_steps, CategoricalOutput::Weights);
                SequenceLengthTransform {
                    columns: t.columns.clone(),
                    of: LengthOf::Categorical(Box::new(t)),
                }
            }
        }
    }
}

impl ColumnTransform for SequenceLengthTransform {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::I32
    }
    fn width(&self) -> usize {
        1
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::I32(out) = out else {
            return Err(wrong_output(ElemType::I32));
        };
        for (row, dst) in out.iter_mut().take(cells.rows()).enumerate() {
            let steps = match &mut self.of {
                LengthOf::Numeric { column, max_steps } => {
                    numeric_steps(column, cells.cell(row, 0), *max_steps).map_err(|message| {
                        CellError {
                            row,
                            column: 0,
                            message,
                        }
                    })?
                }
                LengthOf::Categorical(t) => t.sequence_length(cells, row)?,
            };
            *dst = i32::try_from(steps).unwrap_or(i32::MAX);
        }
        Ok(())
    }
}

/// A string label: the i32 position of the cell's bytes (verbatim) in the
/// vocabulary; an unknown or missing value is an error listing the
/// vocabulary.
#[derive(Clone, Debug)]
pub struct LabelVocabularyTransform {
    columns: Vec<String>,
    vocabulary: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, i32>,
}

impl LabelVocabularyTransform {
    pub fn new(columns: Vec<String>, vocabulary: Vec<Vec<u8>>) -> LabelVocabularyTransform {
        let mut index = HashMap::with_capacity(vocabulary.len());
        for (i, v) in vocabulary.iter().enumerate() {
            let id = i32::try_from(i).unwrap_or(i32::MAX);
            index.entry(v.clone()).or_insert(id);
        }
        LabelVocabularyTransform {
            columns,
            vocabulary,
            index,
        }
    }

    fn listing(&self) -> String {
        const SHOWN: usize = 20;
        let mut s: Vec<String> = self
            .vocabulary
            .iter()
            .take(SHOWN)
            .map(|v| format!("{:?}", String::from_utf8_lossy(v)))
            .collect();
        if self.vocabulary.len() > SHOWN {
            s.push(format!("... ({} in all)", self.vocabulary.len()));
        }
        s.join(", ")
    }

    fn id(&self, cell: Cell<'_>) -> Result<i32, String> {
        let v = raw::strings(cell)?;
        if v.len() != 1 {
            return Err(format!(
                "expected one label value, found {}; the labels are {}",
                v.len(),
                self.listing()
            ));
        }
        let s = v.get(0);
        self.index.get(s).copied().ok_or_else(|| {
            format!(
                "`{}` is not one of {}",
                String::from_utf8_lossy(s),
                self.listing()
            )
        })
    }
}

impl ColumnTransform for LabelVocabularyTransform {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::I32
    }
    fn width(&self) -> usize {
        1
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::I32(out) = out else {
            return Err(wrong_output(ElemType::I32));
        };
        for (row, dst) in out.iter_mut().take(cells.rows()).enumerate() {
            *dst = self.id(cells.cell(row, 0)).map_err(|message| CellError {
                row,
                column: 0,
                message,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::NormExpr;
    use crate::io::example::Feature;

    fn hash_col(key: &str, size: u64) -> CategoricalColumn {
        CategoricalColumn::HashBucket {
            key: key.into(),
            hash_bucket_size: NonZeroU64::new(size).unwrap(),
            dtype: KeyDType::String,
        }
    }

    fn identity(key: &str, n: u64) -> CategoricalColumn {
        CategoricalColumn::Identity {
            key: key.into(),
            num_buckets: n,
            default_value: None,
        }
    }

    fn ids(t: &mut CategoricalTransform, cells: &CellRows<'_>) -> Result<Vec<i32>, CellError> {
        let mut out = vec![-7; cells.rows() * t.width()];
        t.transform(cells, ValuesMut::I32(&mut out)).map(|_| out)
    }

    fn weights(t: &mut CategoricalTransform, cells: &CellRows<'_>) -> Vec<f32> {
        let mut out = vec![-7.0; cells.rows() * t.width()];
        t.transform(cells, ValuesMut::F32(&mut out)).unwrap();
        out
    }

    fn pair(column: &CategoricalColumn, max_values: usize) -> [CategoricalTransform; 2] {
        [
            CategoricalTransform::new(
                column,
                max_values,
                CategoricalOutput::Ids { check_range: false },
            ),
            CategoricalTransform::new(column, max_values, CategoricalOutput::Weights),
        ]
    }

    #[test]
    fn csv_cells_hash_and_an_empty_cell_is_no_value() {
        let c = hash_col("city", 10);
        let [mut i, mut w] = pair(&c, 1);
        assert_eq!(i.columns(), ["city"]);
        let cells: [&[u8]; 3] = [b"paris", b"", b" paris"];
        let rows = CellRows::text(&cells, 1);
        let want = |s: &[u8]| hash::hash_bucket(s, NonZeroU64::new(10).unwrap()) as i32;
        assert_eq!(
            ids(&mut i, &rows).unwrap(),
            [want(b"paris"), PADDING_ID, want(b" paris")]
        );
        assert_eq!(weights(&mut w, &rows), [1.0, 0.0, 1.0]);
    }

    /// TF 2.21 drops `''` and `-1` only from dense inputs: a SparseTensor's
    /// `''` is hashed and its `-1` kept (as an id no consumer uses).
    #[test]
    fn example_features_keep_empty_strings_and_minus_one() {
        let c = hash_col("city", 10);
        let [mut i, mut w] = pair(&c, 2);
        let f = Feature::BytesList(vec![b"".to_vec(), b"paris".to_vec()]);
        let cells = [Cell::Feature(Some(&f))];
        let rows = CellRows::cells(&cells, 1);
        let h = |s: &[u8]| hash::hash_bucket(s, NonZeroU64::new(10).unwrap()) as i32;
        assert_eq!(ids(&mut i, &rows).unwrap(), [h(b""), h(b"paris")]);
        assert_eq!(weights(&mut w, &rows), [1.0, 1.0]);
        let mut i = i.with_dense_features(&["city"]);
        assert_eq!(ids(&mut i, &rows).unwrap(), [PADDING_ID, h(b"paris")]);
        let [mut i, mut w] = pair(&identity("ids", 3), 2);
        let f = Feature::Int64List(vec![-1, 2]);
        let cells = [Cell::Feature(Some(&f))];
        let rows = CellRows::cells(&cells, 1);
        assert_eq!(ids(&mut i, &rows).unwrap(), [PADDING_ID, 2]);
        assert_eq!(weights(&mut w, &rows), [0.0, 1.0]);
    }

    #[test]
    fn too_many_values_is_an_error_naming_the_limit() {
        let c = hash_col("city", 10);
        let [mut i, _] = pair(&c, 2);
        let ok = Feature::BytesList(vec![b"a".to_vec()]);
        let three = Feature::BytesList(vec![b"a".to_vec(), b"b".to_vec(), b"".to_vec()]);
        let cells = [Cell::Feature(Some(&ok)), Cell::Feature(Some(&three))];
        let e = ids(&mut i, &CellRows::cells(&cells, 1)).unwrap_err();
        assert_eq!((e.row, e.column), (1, 0));
        assert_eq!(e.message, "`city` has 3 values, more than max_values = 2");
    }

    #[test]
    fn check_range_names_the_id_and_range() {
        let c = identity("ids", 5);
        let mut t = CategoricalTransform::new(&c, 1, CategoricalOutput::Ids { check_range: true });
        let cells: [&[u8]; 2] = [b"4", b"7"];
        let e = ids(&mut t, &CellRows::text(&cells, 1)).unwrap_err();
        assert_eq!(e.row, 1);
        assert_eq!(e.message, "id 7 of `ids` is out of range [0, 5)");
        // Without check_range the id passes; -1 (dense) and -3 are no id.
        let [mut i, mut w] = pair(&c, 1);
        let cells: [&[u8]; 3] = [b"7", b"-1", b"-3"];
        let rows = CellRows::text(&cells, 1);
        assert_eq!(ids(&mut i, &rows).unwrap(), [7, PADDING_ID, PADDING_ID]);
        assert_eq!(weights(&mut w, &rows), [1.0, 0.0, 0.0]);
        let cells: [&[u8]; 1] = [b"x1"];
        let e = ids(&mut i, &CellRows::text(&cells, 1)).unwrap_err();
        assert_eq!(e.message, "cannot parse \"x1\" as an int64");
    }

    #[test]
    fn weighted_pairs_weights_and_checks_counts() {
        let c = CategoricalColumn::Weighted {
            categorical: Box::new(identity("ids", 5)),
            weight_feature_key: "w".into(),
        };
        let [mut i, mut w] = pair(&c, 3);
        assert_eq!(i.columns(), ["ids", "w"]);
        let id_f = Feature::Int64List(vec![1, 4]);
        let w_f = Feature::FloatList(vec![0.5, 2.0]);
        let w_bad = Feature::FloatList(vec![0.5]);
        let cells = [Cell::Feature(Some(&id_f)), Cell::Feature(Some(&w_f))];
        let rows = CellRows::cells(&cells, 2);
        assert_eq!(ids(&mut i, &rows).unwrap(), [1, 4, PADDING_ID]);
        assert_eq!(weights(&mut w, &rows), [0.5, 2.0, 0.0]);
        let cells = [Cell::Feature(Some(&id_f)), Cell::Feature(Some(&w_bad))];
        let e = ids(&mut i, &CellRows::cells(&cells, 2)).unwrap_err();
        assert_eq!(e.column, 1);
        assert_eq!(
            e.message,
            "`ids` has 2 value(s) but its weight feature `w` has 1"
        );
        // CSV: an empty id cell keeps its weight cell out of the way.
        let cells: [&[u8]; 4] = [b"3", b"1.5", b"", b"2"];
        let rows = CellRows::text(&cells, 2);
        assert_eq!(weights(&mut w, &rows), [1.5, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn cross_takes_column_ids_before_raw_text_keys() {
        let bucketized = CategoricalColumn::Bucketized {
            source: NumericColumn {
                key: "price".into(),
                shape: 1,
                default_value: None,
                normalizer: None,
            },
            boundaries: vec![0.0, 1.0],
        };
        let size = NonZeroU64::new(1000).unwrap();
        let c = CategoricalColumn::Crossed {
            keys: vec![
                CrossKey::Raw {
                    key: "city".into(),
                    dtype: KeyDType::String,
                },
                CrossKey::Column(Box::new(bucketized)),
            ],
            hash_bucket_size: size,
            hash_key: None,
        };
        let [mut i, mut w] = pair(&c, 1);
        assert_eq!(i.columns(), ["city", "price"]);
        let cells: [&[u8]; 4] = [b"paris", b"0.5", b"", b"7"];
        let rows = CellRows::text(&cells, 2);
        let mut want = Vec::new();
        hash::cross_row(
            &[&[1], &[hash::fingerprint64(b"paris")]],
            0,
            size,
            &mut want,
        );
        // A dense '' is crossed too (TF's SparseCross keeps it).
        hash::cross_row(&[&[2], &[hash::fingerprint64(b"")]], 0, size, &mut want);
        let want: Vec<i32> = want.iter().map(|&x| x as i32).collect();
        assert_eq!(ids(&mut i, &rows).unwrap(), want);
        assert_eq!(weights(&mut w, &rows), [1.0, 1.0]);
    }

    #[test]
    fn vocabulary_ids_oov_and_default() {
        let c = CategoricalColumn::Vocabulary {
            key: "n".into(),
            vocabulary: Vocabulary::Ints(vec![10, 20, 10]),
            vocabulary_file: None,
            num_oov_buckets: 0,
            default_value: 7,
        };
        let [mut i, _] = pair(&c, 1);
        let cells: [&[u8]; 3] = [b"20", b" 10 ", b"30"];
        assert_eq!(ids(&mut i, &CellRows::text(&cells, 1)).unwrap(), [1, 0, 7]);
    }

    #[test]
    fn dense_values_defaults_and_errors() {
        let col = NumericColumn {
            key: "p".into(),
            shape: 2,
            default_value: Some(vec![1.5, 2.0]),
            normalizer: Some(NormExpr::Mul(
                Box::new(NormExpr::X),
                Box::new(NormExpr::Const(10.0)),
            )),
        };
        let mut t = DenseTransform::new(col.clone());
        let cells: [&[u8]; 2] = [b"1 2", b" "];
        let mut out = vec![0.0; 4];
        t.transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out))
            .unwrap();
        assert_eq!(out, [10.0, 20.0, 15.0, 20.0]);
        let cells: [&[u8]; 1] = [b"1 2 3"];
        let e = t
            .transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out[..2]))
            .unwrap_err();
        assert_eq!(e.message, "has 3 values, but the column's shape is 2");
        let mut t = DenseTransform::new(NumericColumn {
            default_value: None,
            ..col
        });
        let cells: [&[u8]; 2] = [b"1 2", b""];
        let e = t
            .transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out))
            .unwrap_err();
        assert_eq!(
            (e.row, e.message.as_str()),
            (1, "missing value and the column has no default_value")
        );
    }

    #[test]
    fn string_label_lists_the_vocabulary() {
        let mut t =
            LabelVocabularyTransform::new(vec!["y".into()], vec![b"no".to_vec(), b"yes".to_vec()]);
        let cells: [&[u8]; 2] = [b"yes", b"no"];
        let mut out = vec![0; 2];
        t.transform(&CellRows::text(&cells, 1), ValuesMut::I32(&mut out))
            .unwrap();
        assert_eq!(out, [1, 0]);
        let cells: [&[u8]; 2] = [b"no", b"maybe"];
        let e = t
            .transform(&CellRows::text(&cells, 1), ValuesMut::I32(&mut out))
            .unwrap_err();
        assert_eq!(e.row, 1);
        assert_eq!(e.message, "`maybe` is not one of \"no\", \"yes\"");
    }

    fn seq_numeric(shape: usize, default: f64) -> NumericColumn {
        NumericColumn {
            key: "temp".into(),
            shape,
            default_value: Some(vec![default; shape]),
            normalizer: Some(NormExpr::Mul(
                Box::new(NormExpr::X),
                Box::new(NormExpr::Const(2.0)),
            )),
        }
    }

    fn lengths(
        t: &mut SequenceLengthTransform,
        cells: &CellRows<'_>,
    ) -> Result<Vec<i32>, CellError> {
        let mut out = vec![-7; cells.rows()];
        t.transform(cells, ValuesMut::I32(&mut out)).map(|_| out)
    }

    #[test]
    fn sequence_numeric_steps_are_normalized_and_padded_with_the_default() {
        let col = seq_numeric(2, -1.0);
        let mut t = SequenceDenseTransform::new(col.clone(), 3);
        assert_eq!(t.width(), 6);
        let a = Feature::FloatList(vec![1.0, 2.0, 3.0, 4.0]);
        let cells = [Cell::Feature(Some(&a)), Cell::Feature(None)];
        let rows = CellRows::cells(&cells, 1);
        let mut out = vec![9.0; 12];
        t.transform(&rows, ValuesMut::F32(&mut out)).unwrap();
        // The values through the normalizer, the padding not.
        assert_eq!(
            out,
            [2.0, 4.0, 6.0, 8.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]
        );
        let mut l = SequenceLengthTransform::new(&SequenceColumn::Numeric(col), 3);
        assert_eq!(l.elem(), ElemType::I32);
        assert_eq!(lengths(&mut l, &rows).unwrap(), [2, 0]);
        // CSV: whitespace-separated numbers in one cell.
        let text: [&[u8]; 2] = [b"0.5 1 1.5 2 2.5 3", b" "];
        let rows = CellRows::text(&text, 1);
        t.transform(&rows, ValuesMut::F32(&mut out)).unwrap();
        assert_eq!(&out[..6], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&out[6..], [-1.0; 6]);
        assert_eq!(lengths(&mut l, &rows).unwrap(), [3, 0]);
    }

    #[test]
    fn sequence_numeric_errors_name_the_row_and_column() {
        let col = seq_numeric(2, 0.0);
        let mut t = SequenceDenseTransform::new(col.clone(), 2);
        let mut l = SequenceLengthTransform::new(&SequenceColumn::Numeric(col), 2);
        let text: [&[u8]; 2] = [b"1 2", b"1 2 3"];
        let rows = CellRows::text(&text, 1);
        let mut out = vec![0.0; 8];
        let e = t.transform(&rows, ValuesMut::F32(&mut out)).unwrap_err();
        assert_eq!(
            (e.row, e.column, e.message.as_str()),
            (
                1,
                0,
                "`temp` has 3 values, not a whole number of steps of shape 2"
            )
        );
        let e = lengths(&mut l, &rows).unwrap_err();
        assert_eq!(e.row, 1);
        let text: [&[u8]; 1] = [b"1 2 3 4 5 6"];
        let rows = CellRows::text(&text, 1);
        let e = t.transform(&rows, ValuesMut::F32(&mut out)).unwrap_err();
        assert_eq!(e.message, "`temp` has 3 steps, more than max_values = 2");
        let e = lengths(&mut l, &rows).unwrap_err();
        assert_eq!(e.message, "`temp` has 3 steps, more than max_values = 2");
    }

    #[test]
    fn sequence_categorical_length_counts_the_steps_tf_keeps() {
        // A vocabulary without OOV buckets: an unknown word is id -1 (weight
        // 0) but still a step of the sequence, as in TF's SparseTensor.
        let col = CategoricalColumn::Vocabulary {
            key: "words".into(),
            vocabulary: Vocabulary::Strings(vec![b"a".to_vec(), b"b".to_vec()]),
            vocabulary_file: None,
            num_oov_buckets: 0,
            default_value: -1,
        };
        let [mut i, mut w] = pair(&col, 3);
        let mut l = SequenceLengthTransform::new(&SequenceColumn::Categorical(col.clone()), 3);
        let f0 = Feature::BytesList(vec![b"b".to_vec(), b"zzz".to_vec()]);
        let f1 = Feature::BytesList(vec![b"a".to_vec(), b"a".to_vec(), b"b".to_vec()]);
        let cells = [
            Cell::Feature(Some(&f0)),
            Cell::Feature(Some(&f1)),
            Cell::Feature(None),
        ];
        let rows = CellRows::cells(&cells, 1);
        assert_eq!(
            ids(&mut i, &rows).unwrap(),
            [1, -1, -1, 0, 0, 1, -1, -1, -1]
        );
        assert_eq!(
            weights(&mut w, &rows),
            [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(lengths(&mut l, &rows).unwrap(), [2, 3, 0]);
        // A CSV cell is one step; an empty cell (TF drops `''`) none.
        let text: [&[u8]; 2] = [b"a", b""];
        assert_eq!(lengths(&mut l, &CellRows::text(&text, 1)).unwrap(), [1, 0]);
        // More steps than max_values: an error naming the row and the limit.
        let mut l = SequenceLengthTransform::new(&SequenceColumn::Categorical(col), 2);
        let e = lengths(&mut l, &rows).unwrap_err();
        assert_eq!(
            (e.row, e.message.as_str()),
            (1, "`words` has 3 values, more than max_values = 2")
        );
    }
}
