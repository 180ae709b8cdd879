//! [`LabelVocabularyTransform`]: a string label's class id, its position
//! in the label vocabulary.
//!
//! Invariants: the cell's bytes are compared verbatim; a row without
//! exactly one value, or with a value not in the vocabulary, is an error
//! listing (the first 20 of) the vocabulary.

use std::collections::HashMap;

use super::wrong_output;
use crate::abi::ElemType;
use crate::data::columns::{Cell, CellError, CellRows, ColumnTransform, ValuesMut};
use crate::feature_column::raw;

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
