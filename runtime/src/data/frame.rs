//! Columns in memory as a data set: a pandas DataFrame's columns, a dict of
//! numpy arrays (specc's Python package), read through the spec's columns,
//! normalizers and feature columns exactly as a CSV file's columns are.
//!
//! Owns: [`FrameColumn`] (one named column: numbers, or text cells) and
//! [`load_frame`] (the columns the inputs name, through each input's
//! [`ColumnTransform`](super::ColumnTransform), into a [`Dataset`]).
//!
//! How: the cells go to the very transforms a CSV file's cells go to
//! (the loader's `Builder`, chunk by chunk): a number column's cells are
//! [`Cell::Number`] (used as they are, as a CSV cell's parsed value is), a
//! text column's are [`Cell::Text`] (parsed by the transform, as a CSV
//! field is); a NaN number (pandas' missing value) is an empty text cell,
//! a missing CSV field, which a feature column's `default_value` fills or
//! the transform refuses. A CSV's `na_value`, `column_defaults` and
//! `filter` are the file reader's, not the transforms': a frame's values
//! are already typed, so they do not apply.
//!
//! Invariants: every input's columns are columns of the frame (an unknown
//! one is an error naming the closest); every column has the same number
//! of rows, at least one; errors name the column and the 0-based row (the
//! frame's positional index), as `FRAME:ROW: column `C`: ...`.

use super::{check_specs, Builder, Cell, CellRows, DataError, Dataset, InputSpec, MAX_ROWS};

/// Rows per chunk handed to the transforms.
const CHUNK_ROWS: usize = 4096;

/// One named column of a frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameColumn<'a> {
    /// The column's name (a CSV header's name).
    pub name: &'a str,
    /// Its cells.
    pub values: ColumnValues<'a>,
}

/// A frame column's cells.
#[derive(Clone, Copy, Debug)]
pub enum ColumnValues<'a> {
    /// Numbers (a numeric dtype, as f64: every int32, float32 and float64
    /// value, and int64 values up to 2^53, exactly).
    Numbers(&'a [f64]),
    /// Text cells (strings, bytes), each parsed by the transform as a CSV
    /// field is.
    Text(&'a [&'a [u8]]),
}

impl ColumnValues<'_> {
    fn len(&self) -> usize {
        match self {
            ColumnValues::Numbers(v) => v.len(),
            ColumnValues::Text(v) => v.len(),
        }
    }

    fn cell(&self, row: usize) -> Cell<'_> {
        match self {
            // A missing number (pandas' NaN) is a missing cell, as an
            // empty CSV field is: a default fills it, or it is an error.
            ColumnValues::Numbers(v) if v[row].is_nan() => Cell::Text(b""),
            ColumnValues::Numbers(v) => Cell::Number(v[row]),
            ColumnValues::Text(v) => Cell::Text(v[row]),
        }
    }
}

/// Reads `inputs` from `columns` (see the module doc); `frame` names the
/// frame in errors (`DataFrame`, `dict`).
pub fn load_frame(
    frame: &str,
    columns: &[FrameColumn<'_>],
    inputs: &[InputSpec],
) -> Result<Dataset, DataError> {
    check_specs(frame, inputs)?;
    let rows = match columns.first() {
        Some(c) => c.values.len(),
        None => return Err(DataError::new(frame, "it has no columns")),
    };
    for c in columns {
        if c.values.len() != rows {
            return Err(DataError::at(
                frame,
                None,
                Some(c.name),
                format!(
                    "it has {} rows but column `{}` has {rows}",
                    c.values.len(),
                    columns[0].name
                ),
            ));
        }
    }
    if rows == 0 {
        return Err(DataError::new(frame, "it has no rows"));
    }
    if rows > MAX_ROWS {
        return Err(DataError::new(
            frame,
            format!("it has more than {MAX_ROWS} rows, the most a data set may have"),
        ));
    }
    // Each input's columns, as indices into `columns`.
    let mut plan: Vec<Vec<usize>> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut idx = Vec::with_capacity(input.columns.len());
        for name in &input.columns {
            let Some(i) = columns.iter().position(|c| c.name == name) else {
                let names = columns.iter().map(|c| c.name);
                let hint = match crate::suggest::closest(name, names) {
                    Some(c) => format!(" (did you mean `{c}`?)"),
                    None => String::new(),
                };
                return Err(DataError::new(
                    frame,
                    format!(
                        "input `{}` reads column `{name}`, which it does not have{hint}",
                        input.name
                    ),
                ));
            };
            idx.push(i);
        }
        plan.push(idx);
    }
    let mut builder = Builder::new(inputs);
    builder
        .reserve(rows)
        .map_err(|e| DataError::new(frame, e))?;
    let mut cells: Vec<Vec<Cell<'_>>> = vec![Vec::new(); inputs.len()];
    let mut start = 0;
    while start < rows {
        let n = CHUNK_ROWS.min(rows - start);
        for (c, idx) in cells.iter_mut().zip(&plan) {
            c.clear();
            for r in start..start + n {
                c.extend(idx.iter().map(|&i| columns[i].values.cell(r)));
            }
        }
        builder
            .push(n, |t| CellRows::cells(&cells[t], plan[t].len()))
            .map_err(|(t, e)| {
                DataError::at(
                    frame,
                    Some(start + e.row),
                    Some(&inputs[t].columns[e.column]),
                    e.message,
                )
            })?;
        start += n;
    }
    let out = builder.finish(inputs).map_err(|(t, e)| {
        DataError::at(frame, None, Some(&inputs[t].columns[e.column]), e.message)
    })?;
    Ok(Dataset { rows, inputs: out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{csv_file, CsvReadOptions, InputKind, Normalizer, Values};

    fn spec(name: &str, columns: &[&str], kind: InputKind) -> InputSpec {
        InputSpec {
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            kind,
            normalizer: Normalizer::None,
            feature: None,
        }
    }

    /// The same values as a CSV of the same cells, number and text columns alike.
    #[test]
    fn frame_reads_as_csv() {
        let dir = std::env::temp_dir().join(format!("specc-frame-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.csv");
        std::fs::write(&path, "a,b,y\n0.1,2.5,1\n-3,1e-3,0\n7,8,2\n").unwrap();
        let inputs = vec![
            spec("x", &["a", "b"], InputKind::Float),
            spec(
                "y",
                &["y"],
                InputKind::ClassId {
                    num_classes: Some(3),
                },
            ),
        ];
        let csv = csv_file::load(&path, "f.csv", &CsvReadOptions::default(), &inputs).unwrap();
        let a = [0.1, -3.0, 7.0];
        let b: Vec<&[u8]> = vec![b"2.5", b"1e-3", b"8"];
        let y = [1.0, 0.0, 2.0];
        let cols = [
            FrameColumn {
                name: "y",
                values: ColumnValues::Numbers(&y),
            },
            FrameColumn {
                name: "a",
                values: ColumnValues::Numbers(&a),
            },
            FrameColumn {
                name: "b",
                values: ColumnValues::Text(&b),
            },
        ];
        let frame = load_frame("DataFrame", &cols, &inputs).unwrap();
        assert_eq!(frame, csv);
        assert_eq!(frame.inputs[1].values, Values::I32(vec![1, 0, 2]));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn errors_name_column_and_row() {
        let inputs = vec![spec(
            "y",
            &["label"],
            InputKind::ClassId {
                num_classes: Some(3),
            },
        )];
        let y = [1.0, 5.0];
        let cols = [FrameColumn {
            name: "labels",
            values: ColumnValues::Numbers(&y),
        }];
        let e = load_frame("DataFrame", &cols, &inputs).unwrap_err();
        assert!(e.message.contains("did you mean `labels`"), "{e}");
        let cols = [FrameColumn {
            name: "label",
            values: ColumnValues::Numbers(&y),
        }];
        let e = load_frame("DataFrame", &cols, &inputs).unwrap_err();
        assert_eq!(
            (e.row, e.column.as_deref()),
            (Some(1), Some("label")),
            "{e}"
        );
        let nan = [1.0, f64::NAN];
        let cols = [FrameColumn {
            name: "label",
            values: ColumnValues::Numbers(&nan),
        }];
        let e = load_frame("DataFrame", &cols, &inputs).unwrap_err();
        assert_eq!(
            (e.row, e.column.as_deref()),
            (Some(1), Some("label")),
            "{e}"
        );
    }
}
