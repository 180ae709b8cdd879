//! `numeric_column`: a row's float32 values (a text cell's
//! whitespace-separated numbers, an Example feature's list, or its bytes
//! through `decode_raw` / `parse_tensor`), its
//! `default_value` when it has none, through its normalizer; the values a
//! bucketized column buckets.
//!
//! Invariants: a row gives exactly `shape` values or none; every value is a
//! finite float32 after the normalizer (computed in f64, rounded once),
//! else the row is an error.

use super::wrong_output;
use crate::abi::ElemType;
use crate::data::columns::{Cell, CellError, CellRows, ColumnTransform, ValuesMut};
use crate::feature_column::raw;
use crate::feature_column::NumericColumn;

/// The f32 value of a numeric column: `x` through the normalizer (in f64),
/// rounded once, finite.
pub(super) fn numeric_value(col: &NumericColumn, x: f64) -> Result<f32, String> {
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
/// values (through the column's bytes decoder, if it has one), or the
/// default when it has none; then the normalizer.
pub(super) fn numeric_row(
    col: &NumericColumn,
    cell: Cell<'_>,
    out: &mut [f32],
) -> Result<(), String> {
    let shape = col.shape;
    let mut put = |i: usize, x: f64| {
        if let Some(o) = out.get_mut(i) {
            *o = numeric_value(col, x)?;
        }
        Ok(())
    };
    let n = match &col.decode {
        None => match raw::count_numbers(cell) {
            0 => 0,
            n if n != shape => n,
            _ => raw::numbers(cell, &mut put)?,
        },
        // Every value is decoded (and checked) to count them; a row of
        // another size is an error below.
        Some(d) => d.numbers(cell, |i, x| {
            if x.is_finite() {
                put(i, x)
            } else {
                Err(format!("value {x} is not a finite number"))
            }
        })?,
    };
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
