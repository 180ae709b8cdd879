//! The sequence columns: [`SequenceDenseTransform`]
//! (`sequence_numeric_column`'s `[rows, max_steps * shape]` values) and
//! [`SequenceLengthTransform`] (a sequence column's length, `[rows]`).
//!
//! Invariants: a numeric row is a whole number of steps of `shape` values,
//! at most `max_steps`, padded with `default_value` past its length (a
//! SequenceExample feature list: `shape` values a step or none, an empty
//! step `default_value` too, the length its last step with values + 1); a
//! categorical column's length is its last present value + 1 (TF's
//! `sequence_length_from_sparse_tensor`), computed by the column's own
//! [`CategoricalTransform`]; more steps than `max_steps` is an error naming
//! the row and column.

use super::categorical::{CategoricalOutput, CategoricalTransform};
use super::numeric::numeric_value;
use super::wrong_output;
use crate::abi::ElemType;
use crate::data::columns::{Cell, CellError, CellRows, ColumnTransform, ValuesMut};
use crate::feature_column::raw;
use crate::feature_column::{NumericColumn, SequenceColumn};

/// The number of steps of a `sequence_numeric_column` in `cell`: its values
/// divided by the shape (a whole number of steps, at most `max_steps`).
fn numeric_steps(col: &NumericColumn, cell: Cell<'_>, max_steps: usize) -> Result<usize, String> {
    let d = col.shape.max(1);
    if let Cell::FeatureList(list) = cell {
        let (steps, length) = raw::step_numbers(list, d, None)?;
        if steps > max_steps {
            return Err(format!(
                "`{}` has {steps} steps, more than max_values = {max_steps}",
                col.name()
            ));
        }
        return Ok(length);
    }
    let n = raw::count_numbers(cell);
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
        if let Cell::FeatureList(list) = cell {
            // Padding everywhere, then the steps that have values.
            for step in out.chunks_mut(d) {
                step.copy_from_slice(&self.padding[..step.len()]);
            }
            raw::step_numbers(
                list,
                d,
                Some(&mut |i, x| {
                    if let Some(o) = out.get_mut(i) {
                        *o = numeric_value(&self.column, x)?;
                    }
                    Ok(())
                }),
            )?;
            return Ok(());
        }
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
