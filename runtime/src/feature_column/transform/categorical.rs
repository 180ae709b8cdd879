//! [`CategoricalTransform`]: a categorical column's ids (i32) or weights
//! (f32), `[rows, max_values]`: a row's values (see `ids` and `crossed`)
//! into their slots, with the padding, the `max_values` limit, the range
//! check and the pruning of non-positive weights the module doc of
//! `transform` describes.
//!
//! Invariants: the ids and the weights of one column run the same code, so
//! they agree slot by slot (but for `prune_nonpositive_weights`); a row
//! over `max_values` is an error naming the count (a base column with
//! `on_overflow = "truncate"` never gives more: its plan keeps the first
//! `max_values`); a slot without a usable id holds [`PADDING_ID`] with
//! weight 0.

use super::ids::Plan;
use super::wrong_output;
use crate::abi::ElemType;
use crate::data::columns::{CellError, CellRows, ColumnTransform, ValuesMut};
use crate::feature_column::{CategoricalColumn, PADDING_ID};

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
pub(super) struct Entry {
    pub(super) pos: usize,
    pub(super) id: i64,
    pub(super) weight: f32,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Ctx<'a> {
    /// Per column: its Example features are dense rows.
    pub(super) dense_features: &'a [bool],
    /// False: only which values there are and their weights matter (the
    /// weights output), so always-valid ids (hashes, crosses) are not hashed.
    pub(super) need_ids: bool,
    /// The most values a row may give.
    pub(super) limit: usize,
}

/// A categorical column's ids (i32) or weights (f32), `[rows, max_values]`
/// (see the module doc). Columns: the column's raw keys
/// ([`CategoricalColumn::raw_keys`]).
#[derive(Clone, Debug)]
pub struct CategoricalTransform {
    pub(super) columns: Vec<String>,
    plan: Plan,
    name: String,
    num_buckets: u64,
    max_values: usize,
    output: CategoricalOutput,
    /// Per column: read its Example features as dense rows.
    dense_features: Vec<bool>,
    /// Values with a weight `<= 0` are left out (padding).
    pub(super) prune_nonpositive_weights: bool,
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
    pub(super) fn sequence_length(
        &mut self,
        cells: &CellRows<'_>,
        row: usize,
    ) -> Result<usize, CellError> {
        self.eval_row(cells, row, false)?;
        Ok(self.entries.iter().map(|e| e.pos + 1).max().unwrap_or(0))
    }

    /// The row's values into `entries`; more than `max_values` of them is
    /// an error naming the row, the column and the count.
    fn eval_row(
        &mut self,
        cells: &CellRows<'_>,
        row: usize,
        need_ids: bool,
    ) -> Result<(), CellError> {
        let ctx = Ctx {
            dense_features: &self.dense_features,
            need_ids,
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
                    "`{}` has {n} values, more than max_values = {} \
                     (on_overflow = \"truncate\" keeps the first {})",
                    self.name, self.max_values, self.max_values
                ),
            });
        }
        Ok(())
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
        self.eval_row(cells, row, ids.is_some())?;
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
