//! How each kind of categorical column gives a row's ids: a column ready to
//! run ([`Plan`]: keys resolved to column indices, vocabularies indexed) and
//! its evaluation, per kind: `categorical_column_with_hash_bucket`,
//! `_identity`, `_vocabulary_list` / `_vocabulary_file`,
//! `bucketized_column`, `weighted_categorical_column` (crosses in
//! `crossed`). The module doc of `transform` gives TF's rules.
//!
//! Invariants: a plan appends a row's present values in slot order and
//! returns how many values the key gave (dropped ones included: they keep
//! their slot); without `need_ids` it hashes nothing; a weighted column's
//! weights pair with its ids by TF's order, or by position, and any other
//! count is an error naming both keys.

use std::collections::HashMap;
use std::num::NonZeroU64;

use super::categorical::{Ctx, Entry};
use super::crossed::{cross_leaves, Cross, Leaf};
use super::fail;
use super::numeric::numeric_row;
use super::Fail;
use crate::data::columns::CellRows;
use crate::feature_column::raw::{self, Form};
use crate::feature_column::split::KeyValues;
use crate::feature_column::{CategoricalColumn, CrossKey, KeyDType, NumericColumn, Vocabulary};
use crate::hash;

/// A categorical column, ready to run: keys resolved to column indices,
/// vocabularies indexed, buffers for crosses.
#[derive(Clone, Debug)]
pub(super) enum Plan {
    Hash {
        col: usize,
        dtype: KeyDType,
        buckets: NonZeroU64,
        values: KeyValues,
    },
    Identity {
        col: usize,
        num_buckets: u64,
        default: Option<i64>,
        values: KeyValues,
    },
    VocabStrings {
        col: usize,
        index: HashMap<Vec<u8>, i64>,
        size: i64,
        oov: Option<NonZeroU64>,
        default: i64,
        values: KeyValues,
    },
    VocabInts {
        col: usize,
        index: HashMap<i64, i64>,
        size: i64,
        oov: Option<NonZeroU64>,
        default: i64,
        values: KeyValues,
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

impl Plan {
    pub(super) fn build(column: &CategoricalColumn, keys: &mut Vec<String>) -> Plan {
        match column {
            CategoricalColumn::HashBucket {
                key,
                hash_bucket_size,
                dtype,
                values,
            } => Plan::Hash {
                col: key_index(keys, key),
                dtype: *dtype,
                buckets: *hash_bucket_size,
                values: values.clone(),
            },
            CategoricalColumn::Identity {
                key,
                num_buckets,
                default_value,
                values,
            } => Plan::Identity {
                col: key_index(keys, key),
                num_buckets: *num_buckets,
                default: *default_value,
                values: values.clone(),
            },
            CategoricalColumn::Vocabulary {
                key,
                vocabulary,
                num_oov_buckets,
                default_value,
                values,
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
                            values: values.clone(),
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
                            values: values.clone(),
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
                        CrossKey::Raw { key, dtype, sep } => Leaf::Raw {
                            col: key_index(keys, key),
                            dtype: *dtype,
                            values: KeyValues {
                                sep: sep.clone(),
                                truncate: None,
                            },
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
    pub(super) fn first_col(&self) -> usize {
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
    pub(super) fn eval(
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
        let cell = |col: usize| cells.cell(row, col);
        let dense = |col: usize| ctx.dense_features[col];
        match self {
            Plan::Hash {
                col,
                dtype: KeyDType::String,
                buckets,
                values,
            } => raw::each_string(cell(*col), values, dense(*col), |p, s| {
                let id = if ctx.need_ids {
                    hash::hash_bucket(s, *buckets) as i64
                } else {
                    0
                };
                push(p, id)
            })
            .map_err(fail(*col)),
            Plan::Hash {
                col,
                dtype: KeyDType::Int64,
                buckets,
                values,
            } => raw::each_int(cell(*col), values, dense(*col), |p, x| {
                let id = if ctx.need_ids {
                    hash::hash_bucket_i64(x, *buckets) as i64
                } else {
                    0
                };
                push(p, id)
            })
            .map_err(fail(*col)),
            Plan::Identity {
                col,
                num_buckets,
                default,
                values,
            } => raw::each_int(cell(*col), values, dense(*col), |p, x| {
                let id = match default {
                    Some(d) if x < 0 || x as u64 >= *num_buckets => *d,
                    _ => x,
                };
                push(p, id)
            })
            .map_err(fail(*col)),
            Plan::VocabStrings {
                col,
                index,
                size,
                oov,
                default,
                values,
            } => raw::each_string(cell(*col), values, dense(*col), |p, s| {
                let id = match (index.get(s), *oov) {
                    (Some(&i), _) => i,
                    (None, Some(n)) => *size + hash::hash_bucket(s, n) as i64,
                    (None, None) => *default,
                };
                push(p, id)
            })
            .map_err(fail(*col)),
            Plan::VocabInts {
                col,
                index,
                size,
                oov,
                default,
                values,
            } => raw::each_int(cell(*col), values, dense(*col), |p, x| {
                let id = match (index.get(&x), *oov) {
                    (Some(&i), _) => i,
                    (None, Some(n)) => *size + hash::hash_bucket_i64(x, n) as i64,
                    (None, None) => *default,
                };
                push(p, id)
            })
            .map_err(fail(*col)),
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
