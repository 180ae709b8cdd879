//! Column transforms: how the raw cells of the columns an input declared
//! become that input's typed values.
//!
//! Owns: [`Cell`] (one raw cell: the bytes of a text field, or a number from a
//! typed source), [`CellRows`] (the cells of one transform's columns for a
//! chunk of rows), the [`ColumnTransform`] trait, [`ValuesMut`] (where values
//! are written: a dataset's arrays or the step's input buffers), and today's
//! transforms, chosen by [`transform_for`]:
//! - [`FloatColumns`]: parse each cell, apply the normalizer expression (if
//!   any) in f64, round to f32 once;
//! - [`ClassIdColumns`]: parse each cell, check it is an integer id in range,
//!   store it as i32;
//! - [`StandardizeColumns`]: a *fitted* transform: `(x - mean) / std` with the
//!   statistics of each column over all rows, so it sees every row before it
//!   writes any value (two passes; in-memory data only);
//! - for an input with a `feature` (`tf.feature_column`), the transforms of
//!   [`crate::feature_column::transform`].
//!
//! A transform sees the cells of several columns together, a chunk of rows at
//! a time (one row is a chunk of one), so a transform of several columns (a
//! cross) or of the bytes themselves (a hash bucket) fits the same interface.
//!
//! Invariants:
//! - A text cell is parsed exactly as Rust's `str::parse::<f64>` on the UTF-8
//!   cell trimmed of whitespace (correctly rounded); a number cell is used as
//!   it is. Parsing happens here, not in the reader.
//! - Every stored float is finite; ids are integers in `0..num_classes` (or
//!   `0..=i32::MAX` without a class count).
//! - `transform` either fills every value of the chunk or returns the first
//!   bad cell in row-major order (row, then column), so a reader reports the
//!   same cell whatever its chunk size.

use super::norm::{self, NormExpr};
use super::{InputKind, InputSpec, Normalizer};
use crate::abi::ElemType;

/// One raw cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    /// The bytes of a text field (CSV), untrimmed.
    Text(&'a [u8]),
    /// A value from a typed source (synthetic data).
    Number(f64),
    /// The values of a `tf.train.Example` feature (TFRecord sources, and a
    /// `SequenceExample`'s context); `None` when the example does not have
    /// the feature.
    Feature(Option<&'a crate::io::example::Feature>),
    /// The steps of a `tf.train.SequenceExample` feature list (a sequence
    /// column's key); `None` when the example does not have the list.
    FeatureList(Option<&'a [crate::io::example::Feature]>),
}

/// The cells of a transform's columns for `rows()` consecutive rows.
#[derive(Clone, Copy, Debug)]
pub struct CellRows<'a> {
    repr: Repr<'a>,
    rows: usize,
}

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    /// CSV records; `fields[j]` is the record field of column j.
    Records {
        records: &'a [csv::ByteRecord],
        fields: &'a [usize],
    },
    /// Text cells, row-major `[rows, columns]`.
    Text {
        cells: &'a [&'a [u8]],
        columns: usize,
    },
    /// Numbers, row-major `[rows, columns]`.
    Numbers { values: &'a [f64], columns: usize },
    /// Any cells, row-major `[rows, columns]` (a TFRecord's features).
    Cells {
        cells: &'a [Cell<'a>],
        columns: usize,
    },
}

impl<'a> CellRows<'a> {
    /// Text cells, row-major `[rows, columns]` (`cells.len()` a multiple of
    /// `columns`).
    pub fn text(cells: &'a [&'a [u8]], columns: usize) -> CellRows<'a> {
        CellRows {
            repr: Repr::Text { cells, columns },
            rows: cells.len().checked_div(columns).unwrap_or(0),
        }
    }

    /// Numbers, row-major `[rows, columns]`.
    pub fn numbers(values: &'a [f64], columns: usize) -> CellRows<'a> {
        CellRows {
            repr: Repr::Numbers { values, columns },
            rows: values.len().checked_div(columns).unwrap_or(0),
        }
    }

    /// Any cells, row-major `[rows, columns]` (the features of a chunk of
    /// `tf.train.Example`s: `Cell::Feature`).
    pub fn cells(cells: &'a [Cell<'a>], columns: usize) -> CellRows<'a> {
        CellRows {
            repr: Repr::Cells { cells, columns },
            rows: cells.len().checked_div(columns).unwrap_or(0),
        }
    }

    /// The fields `fields` of each CSV record.
    pub(crate) fn records(records: &'a [csv::ByteRecord], fields: &'a [usize]) -> CellRows<'a> {
        CellRows {
            repr: Repr::Records { records, fields },
            rows: records.len(),
        }
    }

    /// Rows `start..end` of the chunk.
    ///
    /// # Panics
    /// If `start > end` or `end > rows()`.
    pub fn slice(&self, start: usize, end: usize) -> CellRows<'a> {
        assert!(start <= end && end <= self.rows, "row range out of bounds");
        let repr = match self.repr {
            Repr::Records { records, fields } => Repr::Records {
                records: &records[start..end],
                fields,
            },
            Repr::Text { cells, columns } => Repr::Text {
                cells: &cells[start * columns..end * columns],
                columns,
            },
            Repr::Numbers { values, columns } => Repr::Numbers {
                values: &values[start * columns..end * columns],
                columns,
            },
            Repr::Cells { cells, columns } => Repr::Cells {
                cells: &cells[start * columns..end * columns],
                columns,
            },
        };
        CellRows {
            repr,
            rows: end - start,
        }
    }

    /// Number of rows in the chunk.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn columns(&self) -> usize {
        match self.repr {
            Repr::Records { fields, .. } => fields.len(),
            Repr::Text { columns, .. }
            | Repr::Numbers { columns, .. }
            | Repr::Cells { columns, .. } => columns,
        }
    }

    /// The cell of column `column` in row `row` of the chunk.
    ///
    /// # Panics
    /// If `row >= rows()` or `column >= columns()`.
    #[inline(always)]
    pub fn cell(&self, row: usize, column: usize) -> Cell<'a> {
        match self.repr {
            Repr::Records { records, fields } => {
                Cell::Text(records[row].get(fields[column]).unwrap_or(b""))
            }
            Repr::Text { cells, columns } => {
                assert!(column < columns, "column out of range");
                Cell::Text(cells[row * columns + column])
            }
            Repr::Numbers { values, columns } => {
                assert!(column < columns, "column out of range");
                Cell::Number(values[row * columns + column])
            }
            Repr::Cells { cells, columns } => {
                assert!(column < columns, "column out of range");
                cells[row * columns + column]
            }
        }
    }
}

/// Where a transform writes: `rows * width` values, row-major.
#[derive(Debug)]
pub enum ValuesMut<'a> {
    F32(&'a mut [f32]),
    I32(&'a mut [i32]),
}

impl ValuesMut<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ValuesMut::F32(v) => v.len(),
            ValuesMut::I32(v) => v.len(),
        }
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        match self {
            ValuesMut::F32(_) => ElemType::F32,
            ValuesMut::I32(_) => ElemType::I32,
        }
    }
}

/// A bad cell: its row in the chunk, its column (an index into the
/// transform's columns) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellError {
    pub row: usize,
    pub column: usize,
    pub message: String,
}

/// A fitted transform's error about a whole column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnError {
    pub column: usize,
    pub message: String,
}

/// Turns the raw cells of some columns into one input's typed values.
/// `Send`, so a reader may run transforms on a worker thread.
pub trait ColumnTransform: Send {
    /// The source columns it reads, in order.
    fn columns(&self) -> &[String];
    /// The type of the values it writes.
    fn elem(&self) -> ElemType;
    /// Values it writes per row.
    fn width(&self) -> usize;
    /// Transforms the `cells.rows()` rows of a chunk into `out`
    /// (`cells.rows() * width()` values of type `elem()`). On error, the
    /// first bad cell in row-major order; `out` is then unspecified.
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError>;
    /// True for a fitted transform, whose values depend on every row: its
    /// `transform` only observes (and writes zeros), and [`finish`](Self::finish)
    /// writes all the values once every row has been seen.
    fn is_fitted(&self) -> bool {
        false
    }
    /// Writes the values of every row observed so far (fitted transforms;
    /// `out` holds `rows * width()` values). Others write nothing.
    fn finish(&mut self, out: ValuesMut<'_>) -> Result<(), ColumnError> {
        let _ = out;
        Ok(())
    }
}

/// The transform that computes the input `spec` describes.
pub fn transform_for(spec: &InputSpec) -> Box<dyn ColumnTransform> {
    if let Some(feature) = &spec.feature {
        return crate::feature_column::transform::transform_for(feature, &spec.columns);
    }
    let columns = spec.columns.clone();
    match (spec.kind, &spec.normalizer) {
        (InputKind::ClassId { num_classes }, _) => Box::new(ClassIdColumns {
            columns,
            num_classes,
        }),
        (InputKind::Float, Normalizer::Standardize) => Box::new(StandardizeColumns {
            columns,
            raw: Vec::new(),
        }),
        (InputKind::Float, Normalizer::None) => Box::new(FloatColumns {
            columns,
            normalizer: None,
        }),
        (InputKind::Float, Normalizer::Expr(e)) => Box::new(FloatColumns {
            columns,
            normalizer: Some(e.clone()),
        }),
    }
}

/// The number in a cell: a text cell trimmed and parsed with Rust's
/// `str::parse::<f64>` (correctly rounded); must be finite.
pub fn parse_number(cell: Cell<'_>) -> Result<f64, String> {
    use crate::io::example::Feature;
    let x = match cell {
        Cell::Number(x) => x,
        Cell::Text(bytes) => return parse_text(bytes),
        Cell::Feature(None) => {
            return Err("missing feature and the column has no default".to_string())
        }
        Cell::FeatureList(_) => return Err(crate::feature_column::raw::NOT_A_LIST.to_string()),
        Cell::Feature(Some(f)) => match f {
            Feature::FloatList(v) if v.len() == 1 => f64::from(v[0]),
            Feature::Int64List(v) if v.len() == 1 => v[0] as f64,
            Feature::BytesList(v) if v.len() == 1 => return parse_text(&v[0]),
            other => {
                return Err(format!(
                    "expected one number, found {} value(s) of kind {}",
                    other.len(),
                    other.kind()
                ))
            }
        },
    };
    if !x.is_finite() {
        return Err(format!("value {x} is not a finite number"));
    }
    Ok(x)
}

/// A text cell's number: UTF-8, trimmed, Rust's correctly rounded
/// `str::parse::<f64>`, finite; an empty cell is a missing value.
pub(crate) fn parse_text(cell: &[u8]) -> Result<f64, String> {
    if let Some(x) = parse_plain_decimal(cell.trim_ascii()) {
        return Ok(x);
    }
    match read_text_number(cell)? {
        x if x.is_finite() => Ok(x),
        _ => Err(format!(
            "{:?} is not a finite number",
            String::from_utf8_lossy(cell).trim()
        )),
    }
}

/// The reading rule of a text cell's number, before the transforms' rule
/// that it be finite: UTF-8, trimmed, Rust's correctly rounded
/// `str::parse::<f64>` (`inf`, `nan` in any case, as `tf.io.decode_csv`
/// reads them); an empty cell is a missing value.
pub(crate) fn read_text_number(cell: &[u8]) -> Result<f64, String> {
    if let Some(x) = parse_plain_decimal(cell.trim_ascii()) {
        return Ok(x);
    }
    let s = std::str::from_utf8(cell).map_err(|_| {
        format!(
            "cannot parse {:?} as a number (not UTF-8)",
            String::from_utf8_lossy(cell)
        )
    })?;
    let t = s.trim();
    if t.is_empty() {
        return Err("empty cell (missing value) and the column has no default".to_string());
    }
    t.parse::<f64>()
        .map_err(|_| format!("cannot parse {t:?} as a number"))
}

/// Powers of ten exact in f64 (10^0 ..= 10^22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The common case of [`parse_text`] without the general parser: a plain
/// decimal `[+-]digits[.digits]` with at most 15 significant digits and 22
/// after the point. Its value is `m / 10^f` with `m < 10^15 < 2^53` and
/// `10^f` (f <= 22) both exact, so the one
/// IEEE division is correctly rounded: the same f64 as `str::parse`
/// (Clinger's fast path). Anything else (exponents, more digits, `inf`,
/// other bytes) is `None`, left to the general parser.
#[inline]
fn parse_plain_decimal(t: &[u8]) -> Option<f64> {
    let (negative, digits) = match t.first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (mut m, mut n, mut frac, mut dot, mut seen) = (0u64, 0usize, 0usize, false, false);
    for &c in digits {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                // Leading zeros are not significant digits.
                n += usize::from(m != 0);
                frac += usize::from(dot);
                if n > 15 || frac > 22 {
                    return None;
                }
                seen = true;
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if !seen {
        return None;
    }
    let x = m as f64 / POW10[frac];
    Some(if negative { -x } else { x })
}

/// Applies `f` to every cell of the chunk in row-major order, writing one
/// value per cell.
#[inline]
fn per_cell<T>(
    cells: &CellRows<'_>,
    out: &mut [T],
    mut f: impl FnMut(Cell<'_>) -> Result<T, String>,
) -> Result<(), CellError> {
    let cols = cells.columns();
    debug_assert_eq!(out.len(), cells.rows() * cols);
    for (row, dst) in out.chunks_exact_mut(cols.max(1)).enumerate() {
        for (column, d) in dst.iter_mut().enumerate() {
            *d = f(cells.cell(row, column)).map_err(|message| CellError {
                row,
                column,
                message,
            })?;
        }
    }
    Ok(())
}

fn wrong_output(want: ElemType) -> CellError {
    CellError {
        row: 0,
        column: 0,
        message: format!("internal error: the output buffer is not {want:?}"),
    }
}

/// float32 values: each cell parsed, mapped by the normalizer expression in
/// f64 (if any), and rounded to f32 once.
#[derive(Clone, Debug)]
pub struct FloatColumns {
    columns: Vec<String>,
    normalizer: Option<NormExpr>,
}

impl FloatColumns {
    pub fn new(columns: Vec<String>, normalizer: Option<NormExpr>) -> FloatColumns {
        FloatColumns {
            columns,
            normalizer,
        }
    }
}

impl ColumnTransform for FloatColumns {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::F32
    }
    fn width(&self) -> usize {
        self.columns.len()
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::F32(out) = out else {
            return Err(wrong_output(ElemType::F32));
        };
        let expr = self.normalizer.as_ref();
        per_cell(cells, out, |cell| {
            let x = parse_number(cell)?;
            match expr {
                None => {
                    let y = x as f32;
                    if !y.is_finite() {
                        return Err(format!("value {x} overflows float32"));
                    }
                    Ok(y)
                }
                Some(e) => {
                    let v = e.eval(x);
                    let y = v as f32;
                    if !y.is_finite() {
                        return Err(format!(
                            "normalizer `{e}` maps {x} to {v}, which is not a finite float32"
                        ));
                    }
                    Ok(y)
                }
            }
        })
    }
}

/// int32 ids (class labels, embedding ids): each cell parsed as a number that
/// must be a non-negative integer, below `num_classes` when given.
#[derive(Clone, Debug)]
pub struct ClassIdColumns {
    columns: Vec<String>,
    num_classes: Option<u32>,
}

impl ClassIdColumns {
    pub fn new(columns: Vec<String>, num_classes: Option<u32>) -> ClassIdColumns {
        ClassIdColumns {
            columns,
            num_classes,
        }
    }
}

/// The id rule of class-id inputs: `x` must be an integer in
/// `0..num_classes` (or `0..=i32::MAX`).
pub fn check_id(x: f64, num_classes: Option<u32>) -> Result<i32, String> {
    if x.fract() != 0.0 || x < 0.0 || x > f64::from(i32::MAX) {
        return Err(format!("an id must be a non-negative integer, got {x}"));
    }
    if let Some(c) = num_classes {
        if x >= f64::from(c) {
            return Err(format!("id {x} is out of range: expected 0 <= id < {c}"));
        }
    }
    Ok(x as i32)
}

impl ColumnTransform for ClassIdColumns {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::I32
    }
    fn width(&self) -> usize {
        self.columns.len()
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let ValuesMut::I32(out) = out else {
            return Err(wrong_output(ElemType::I32));
        };
        let num_classes = self.num_classes;
        per_cell(cells, out, |cell| {
            check_id(parse_number(cell)?, num_classes)
        })
    }
}

/// `f32((x - mean) / std)` per column, with the column's mean and population
/// standard deviation (ddof 0) over all rows in f64 (NumPy's summation order,
/// [`norm::mean_std`]). A constant column becomes 0.0 everywhere (as
/// scikit-learn's `StandardScaler`). Fitted: keeps every raw value until
/// [`ColumnTransform::finish`].
#[derive(Clone, Debug)]
pub struct StandardizeColumns {
    columns: Vec<String>,
    /// Raw values, row-major `[rows, columns]`.
    raw: Vec<f64>,
}

impl StandardizeColumns {
    pub fn new(columns: Vec<String>) -> StandardizeColumns {
        StandardizeColumns {
            columns,
            raw: Vec::new(),
        }
    }
}

impl ColumnTransform for StandardizeColumns {
    fn columns(&self) -> &[String] {
        &self.columns
    }
    fn elem(&self) -> ElemType {
        ElemType::F32
    }
    fn width(&self) -> usize {
        self.columns.len()
    }
    fn is_fitted(&self) -> bool {
        true
    }
    fn transform(&mut self, cells: &CellRows<'_>, out: ValuesMut<'_>) -> Result<(), CellError> {
        let start = self.raw.len();
        self.raw.resize(start + out.len(), 0.0);
        per_cell(cells, &mut self.raw[start..], parse_number)
    }
    fn finish(&mut self, out: ValuesMut<'_>) -> Result<(), ColumnError> {
        let ValuesMut::F32(out) = out else {
            return Err(ColumnError {
                column: 0,
                message: "internal error: the output buffer is not F32".into(),
            });
        };
        let width = self.columns.len();
        let rows = self.raw.len().checked_div(width).unwrap_or(0);
        let mut col = Vec::with_capacity(rows);
        let mut scratch = Vec::with_capacity(rows);
        for c in 0..width {
            col.clear();
            col.extend(self.raw.iter().skip(c).step_by(width));
            let Some(&first) = col.first() else {
                continue;
            };
            if col.iter().all(|&v| v == first) {
                // Constant column: zeros.
                for r in 0..rows {
                    out[r * width + c] = 0.0;
                }
                continue;
            }
            let (mean, std) = norm::mean_std(&col, &mut scratch);
            for (r, &x) in col.iter().enumerate() {
                let y = ((x - mean) / std) as f32;
                if !y.is_finite() {
                    return Err(ColumnError {
                        column: c,
                        message: format!(
                            "standardizing {x} (mean {mean}, std {std}) gives a non-finite float32"
                        ),
                    });
                }
                out[r * width + c] = y;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod plain_decimal_tests {
    use super::parse_plain_decimal;

    /// The fast path gives `str::parse`'s bits on plain decimals, and
    /// declines everything else.
    #[test]
    fn plain_decimals_equal_the_general_parser() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "+7",
            "0.1",
            "1.",
            ".5",
            "-.25",
            "123456789012345",
            "0.000000000000001",
            "3.14159265358979",
            "99999.9999",
            "0.3",
            "1.7976931",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..20000 {
            let digits = 1 + (next() % 15) as usize;
            let mut t: String = (0..digits)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let dot = (next() % (digits as u64 + 1)) as usize;
            t.insert(dot, '.');
            if next() % 3 == 0 {
                t.insert(0, '-');
            }
            cases.push(t);
        }
        for c in &cases {
            let fast = parse_plain_decimal(c.as_bytes()).unwrap_or_else(|| panic!("{c}"));
            let slow: f64 = c.parse().unwrap();
            assert_eq!(fast.to_bits(), slow.to_bits(), "{c}");
        }
        for c in [
            "",
            "-",
            ".",
            "1e5",
            "1.2.3",
            "inf",
            "nan",
            "1234567890123456",
            " 1",
            "0x10",
            "0.00000000000000000000001",
        ] {
            assert_eq!(parse_plain_decimal(c.as_bytes()), None, "{c:?}");
        }
    }
}
