//! `crossed_column`: TF's `SparseCross` over a row, the cartesian product
//! of its leaves' values (nested crosses flattened), each combination
//! hashed with `FingerprintCat64` into the column's buckets.
//!
//! Invariants: sparse leaves (column ids, Example features, the pieces of
//! a text cell a raw key splits by its `sep`) come before dense ones
//! (whole text cells), each group in the order the keys were given;
//! the product is enumerated last leaf fastest; a product over the
//! `max_values` limit is an error before any value is hashed; the buffers
//! live in the [`Cross`] and are reused across rows.

use std::num::NonZeroU64;

use super::categorical::{Ctx, Entry};
use super::ids::Plan;
use super::{fail, Fail};
use crate::data::columns::{Cell, CellRows};
use crate::feature_column::raw::{self, Form};
use crate::feature_column::{CategoricalColumn, CrossKey, KeyDType, KeyValues};
use crate::hash;

#[derive(Clone, Debug)]
pub(super) struct Cross {
    pub(super) leaves: Vec<Leaf>,
    pub(super) start: u64,
    pub(super) buckets: NonZeroU64,
    /// Per leaf, the row's values as the cross chains them.
    pub(super) fps: Vec<Vec<u64>>,
    /// The leaves in the op's input order (sparse first) for this row.
    pub(super) order: Vec<usize>,
    /// The row's dense leaves (then appended to `order`).
    pub(super) dense: Vec<usize>,
    pub(super) idx: Vec<usize>,
    pub(super) prefix: Vec<u64>,
}

#[derive(Clone, Debug)]
pub(super) enum Leaf {
    /// A raw key; `values.sep` splits a text cell (never truncated).
    Raw {
        col: usize,
        dtype: KeyDType,
        values: KeyValues,
    },
    Column {
        plan: Plan,
        entries: Vec<Entry>,
    },
}

/// A column's leaf-level cross keys, nested crosses flattened (TF's
/// `_collect_leaf_level_keys`).
pub(super) fn cross_leaves<'c>(keys: &'c [CrossKey], out: &mut Vec<&'c CrossKey>) {
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

impl Cross {
    pub(super) fn eval(
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
                Leaf::Raw {
                    col,
                    dtype,
                    values: split @ KeyValues { sep: Some(_), .. },
                } if matches!(cells.cell(row, *col), Cell::Text(_)) => {
                    // The pieces of a split cell: a SparseTensor, every
                    // value kept (TF's column drops nothing from it).
                    let cell = cells.cell(row, *col);
                    first_col = *col;
                    match dtype {
                        KeyDType::String => raw::each_string(cell, split, false, |_, s| {
                            f.push(if ctx.need_ids {
                                hash::fingerprint64(s)
                            } else {
                                0
                            })
                        }),
                        KeyDType::Int64 => {
                            raw::each_int(cell, split, false, |_, x| f.push(x as u64))
                        }
                    }
                    .map_err(fail(*col))?;
                    Form::Sparse
                }
                Leaf::Raw { col, dtype, .. } => {
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
