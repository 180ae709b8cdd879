//! Named [`ndarray`] arrays as a batch source: what a [`Model`](crate::Model)
//! call copies into the session's input buffers.
//!
//! Owns: [`InputInfo`] (what the compiled model reads) and [`ArraySource`]
//! (validated arrays, one per model input a function reads, handed out in
//! batches of at most the compiled maximum).
//!
//! Invariants: a source is built only from arrays that name model inputs,
//! agree on the number of rows, and have each input's elements per row; an
//! int32 input's values are whole numbers in its id range (the padding id
//! -1 where the input allows it), checked before any compiled code runs
//! (compiled code clamps ids, so an unchecked id would read another row).

use ndarray::ArrayViewD;
use specc_runtime::abi::{ElemType, InputLayout};
use specc_runtime::data::{DataError, ValuesMut};
use specc_runtime::feature_column::PADDING_ID;
use specc_runtime::source::{BatchBuffers, BatchSource};

use super::error::Error;

/// One input of the compiled model (in the session's order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputInfo {
    /// The input's name: a `features` binding, the label, or a feature
    /// column's `<column>/ids` and `<column>/weights`.
    pub name: String,
    /// Elements per example (the product of the non-batch dimensions).
    pub per_example: usize,
    /// An int32 input (class labels, ids): the array holds whole numbers.
    pub integer: bool,
    /// Ids must be in `0..num_classes` (when known).
    pub num_classes: Option<u32>,
    /// The label: training and evaluation read it, prediction does not.
    pub label: bool,
}

/// Arrays for the model inputs a function reads (see the module doc).
pub struct ArraySource<'a> {
    /// Per model input (the layout's order): its array, when the function
    /// reads it.
    arrays: Vec<Option<ArrayViewD<'a, f32>>>,
    rows: usize,
    next: usize,
}

impl<'a> ArraySource<'a> {
    /// Validates `batch` against `layout` for a function that reads the
    /// inputs with `reads[i]` true; every name must be a model input, and
    /// every input read must be given.
    pub fn new(
        layout: &[InputLayout],
        reads: &[bool],
        batch: &[(&str, ArrayViewD<'a, f32>)],
    ) -> Result<ArraySource<'a>, Error> {
        let mut arrays: Vec<Option<ArrayViewD<'a, f32>>> = vec![None; layout.len()];
        let mut rows: Option<(usize, &str)> = None;
        for (name, a) in batch {
            let Some(i) = layout.iter().position(|l| l.name == *name) else {
                let known: Vec<&str> = layout.iter().map(|l| l.name.as_str()).collect();
                return Err(Error::Input(format!(
                    "the model has no input `{name}`; its inputs: {}",
                    known.join(", ")
                )));
            };
            if arrays[i].is_some() {
                return Err(Error::Input(format!("input `{name}` is given twice")));
            }
            let l = &layout[i];
            let n = a.shape().first().copied().ok_or_else(|| {
                Error::Input(format!(
                    "input `{name}` is a scalar; its first axis is the batch"
                ))
            })?;
            let per: usize = a.shape()[1..].iter().product();
            if per != l.per_example {
                return Err(Error::Input(format!(
                    "input `{name}` has {per} elements per row (shape {:?}), the model reads {}",
                    a.shape(),
                    l.per_example
                )));
            }
            match rows {
                Some((r, first)) if r != n => {
                    return Err(Error::Input(format!(
                        "input `{name}` has {n} rows but `{first}` has {r}"
                    )))
                }
                _ => rows = Some((n, name)),
            }
            if l.elem == ElemType::I32 {
                check_ids(l, a)?;
            }
            arrays[i] = Some(a.clone());
        }
        for (l, (a, &read)) in layout.iter().zip(arrays.iter_mut().zip(reads)) {
            match (a.is_some(), read) {
                (false, true) => {
                    return Err(Error::Input(format!("input `{}` is missing", l.name)))
                }
                // Given but not read (a label passed to predict): ignored.
                (true, false) => *a = None,
                _ => {}
            }
        }
        Ok(ArraySource {
            arrays,
            rows: rows.map_or(0, |(r, _)| r),
            next: 0,
        })
    }

    /// The rows of the arrays.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// An int32 input's values: whole numbers, in range.
fn check_ids(l: &InputLayout, a: &ArrayViewD<'_, f32>) -> Result<(), Error> {
    for (k, &x) in a.iter().enumerate() {
        let ok = x.fract() == 0.0
            && ((x >= 0.0 && l.num_classes.is_none_or(|c| x < c as f32) && x <= i32::MAX as f32)
                || (l.padding && x == PADDING_ID as f32));
        if !ok {
            let row = k / l.per_example.max(1);
            let range = match l.num_classes {
                Some(c) => format!("a whole number in [0, {c})"),
                None => "a whole number >= 0".to_string(),
            };
            return Err(Error::Input(format!(
                "input `{}` row {row}: {x} is not an id ({range}{})",
                l.name,
                if l.padding { ", or -1 for padding" } else { "" }
            )));
        }
    }
    Ok(())
}

impl BatchSource for ArraySource<'_> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        let n = (self.rows - self.next).min(buffers.max_batch());
        if n == 0 {
            return Ok(0);
        }
        let (from, to) = (self.next, self.next + n);
        for (i, a) in self.arrays.iter().enumerate() {
            let Some(a) = a else { continue };
            let rows = a.slice_axis(ndarray::Axis(0), (from..to).into());
            // A contiguous array (the usual case) is copied as a slice; any
            // other layout element by element, in logical order.
            match (buffers.input_mut(i), rows.as_slice()) {
                (ValuesMut::F32(d), Some(s)) => {
                    let k = d.len().min(s.len());
                    d[..k].copy_from_slice(&s[..k]);
                }
                (ValuesMut::F32(d), None) => {
                    for (d, &x) in d.iter_mut().zip(rows.iter()) {
                        *d = x;
                    }
                }
                (ValuesMut::I32(d), Some(s)) => {
                    for (d, &x) in d.iter_mut().zip(s) {
                        *d = x as i32;
                    }
                }
                (ValuesMut::I32(d), None) => {
                    for (d, &x) in d.iter_mut().zip(rows.iter()) {
                        *d = x as i32;
                    }
                }
            }
        }
        self.next = to;
        Ok(n)
    }
}
