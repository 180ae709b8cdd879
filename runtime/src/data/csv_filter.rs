//! A CSV source's `filter`: which rows a model trains and evaluates on, a
//! condition on the raw columns of each record — TF's
//! `dataset.filter(lambda row: ...)` after `make_csv_dataset`.
//!
//! Owns: [`RowFilter`] (comparisons of a column with a number or a string,
//! combined by `and` and `or`), its resolution against a file's columns
//! ([`RowFilter::resolve`]) and the evaluation of a record
//! ([`ResolvedFilter::keep`]).
//!
//! The rules (TF's, on the column's type):
//! - a comparison reads its field as the column's type (`dtype`, which the
//!   spec's check decides: the column's default in `column_defaults`, else
//!   the type the model's inputs read it as, else float64 for a number and
//!   string for a string), parsed as `tf.io.decode_csv` parses it
//!   (whitespace around a number allowed, float32 rounded once from the
//!   decimal); the number it is compared with is converted to that type
//!   first, as TF converts a Python number;
//! - strings compare byte for byte and only by `==` and `!=`; NaN compares
//!   as IEEE says (every comparison false but `!=`);
//! - a field is compared after `na_value` and `column_defaults` applied:
//!   a missing string is `""`; a missing number (no default) is an error,
//!   as a required field is in TF.
//!
//! - every comparison is evaluated (no short circuit), so a field that does
//!   not parse is an error whatever the others say, as in TF, which parses
//!   every column before the filter runs.
//!
//! Invariants: evaluation never panics and allocates nothing (but the
//! message of an error); an error names the field (its index in the
//! record) and says why.

use std::fmt;

use crate::io::csv::{parse_float, parse_float32, parse_int, CsvType};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The spec's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// `b op a` for `a op b` (`0 < x` is `x > 0`).
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// What a column is compared with.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterValue {
    Number(f64),
    String(Vec<u8>),
}

/// A condition on a record's raw columns.
#[derive(Clone, Debug, PartialEq)]
pub enum RowFilter {
    /// `column op value`, the field read as `dtype`.
    Compare {
        column: String,
        op: CmpOp,
        value: FilterValue,
        dtype: CsvType,
    },
    /// Every condition holds (`and`).
    All(Vec<RowFilter>),
    /// At least one holds (`or`).
    Any(Vec<RowFilter>),
}

impl RowFilter {
    /// Every column the filter reads, in order, each once.
    pub fn columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.each_comparison(&mut |c| {
            if let RowFilter::Compare { column, .. } = c {
                if !out.contains(&column.as_str()) {
                    out.push(column);
                }
            }
        });
        out
    }

    /// Calls `f` on every comparison.
    pub fn each_comparison<'a>(&'a self, f: &mut impl FnMut(&'a RowFilter)) {
        match self {
            RowFilter::Compare { .. } => f(self),
            RowFilter::All(v) | RowFilter::Any(v) => v.iter().for_each(|c| c.each_comparison(f)),
        }
    }

    /// The filter over a file's fields: `field(column)` is the column's
    /// index in a record, or why the column cannot be read.
    pub fn resolve(
        &self,
        field: &mut impl FnMut(&str) -> Result<usize, String>,
    ) -> Result<ResolvedFilter, (String, String)> {
        self.node(field).map(ResolvedFilter)
    }

    fn node(
        &self,
        field: &mut impl FnMut(&str) -> Result<usize, String>,
    ) -> Result<Node, (String, String)> {
        Ok(match self {
            RowFilter::Compare {
                column,
                op,
                value,
                dtype,
            } => {
                let index = field(column).map_err(|m| (column.clone(), m))?;
                let value = match (value, dtype) {
                    (FilterValue::String(s), _) => Value::String(s.clone()),
                    (FilterValue::Number(x), CsvType::Float32) => Value::Float32(*x as f32),
                    (FilterValue::Number(x), CsvType::Float64) => Value::Float64(*x),
                    (FilterValue::Number(x), CsvType::Int32 | CsvType::Int64) => {
                        Value::Int64(*x as i64)
                    }
                    (FilterValue::Number(x), CsvType::String) => {
                        Value::String(number_text(*x).into_bytes())
                    }
                };
                Node::Compare {
                    index,
                    op: *op,
                    value,
                    text: self.to_string(),
                }
            }
            RowFilter::All(v) => {
                Node::All(v.iter().map(|c| c.node(field)).collect::<Result<_, _>>()?)
            }
            RowFilter::Any(v) => {
                Node::Any(v.iter().map(|c| c.node(field)).collect::<Result<_, _>>()?)
            }
        })
    }
}

/// A number as a spec writes it (`3`, `2.5`).
fn number_text(x: f64) -> String {
    format!("{x}")
}

impl fmt::Display for RowFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, v: &[RowFilter], word: &str| {
            for (i, c) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, " {word} ")?;
                }
                match c {
                    RowFilter::Compare { .. } => write!(f, "{c}")?,
                    _ => write!(f, "({c})")?,
                }
            }
            Ok(())
        };
        match self {
            RowFilter::Compare {
                column, op, value, ..
            } => {
                write!(f, "{column} {} ", op.symbol())?;
                match value {
                    FilterValue::Number(x) => write!(f, "{}", number_text(*x)),
                    FilterValue::String(s) => write!(f, "{:?}", String::from_utf8_lossy(s)),
                }
            }
            RowFilter::All(v) => join(f, v, "and"),
            RowFilter::Any(v) => join(f, v, "or"),
        }
    }
}

/// The typed value of a comparison.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Float32(f32),
    Float64(f64),
    Int64(i64),
    String(Vec<u8>),
}

/// A [`RowFilter`] over one file's fields.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedFilter(Node);

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Compare {
        index: usize,
        op: CmpOp,
        value: Value,
        /// The comparison as the spec writes it (for messages).
        text: String,
    },
    All(Vec<Node>),
    Any(Vec<Node>),
}

impl ResolvedFilter {
    /// Whether the record whose field `i` is `field(i)` passes; an error
    /// names the field and says why it cannot be compared.
    pub fn keep<'r>(&self, field: &impl Fn(usize) -> &'r [u8]) -> Result<bool, (usize, String)> {
        self.0.keep(field)
    }
}

impl Node {
    fn keep<'r>(&self, field: &impl Fn(usize) -> &'r [u8]) -> Result<bool, (usize, String)> {
        match self {
            Node::Compare {
                index,
                op,
                value,
                text,
            } => {
                let cell = field(*index);
                if let Value::String(s) = value {
                    return Ok(op.holds(cell, s.as_slice()));
                }
                let what = match value {
                    Value::Float32(_) => "float32",
                    Value::Float64(_) => "float64",
                    _ => "int64",
                };
                if cell.is_empty() {
                    return Err((
                        *index,
                        format!(
                            "the filter's `{text}` compares the field as a {what} but it is \
                             missing (give the column a value in column_defaults)"
                        ),
                    ));
                }
                let bad = || {
                    (
                        *index,
                        format!(
                            "'{}' is not a valid {what} (the filter's `{text}`)",
                            String::from_utf8_lossy(cell)
                        ),
                    )
                };
                Ok(match value {
                    Value::Float32(b) => op.holds(parse_float32(cell).ok_or_else(bad)?, *b),
                    Value::Float64(b) => op.holds(parse_float(cell).ok_or_else(bad)?, *b),
                    Value::Int64(b) => op.holds(parse_int::<i64>(cell).ok_or_else(bad)?, *b),
                    Value::String(_) => false,
                })
            }
            // Every comparison is evaluated (no short circuit), so a field
            // that does not parse is an error whatever the other fields say,
            // as in TF, which parses every column before the filter runs.
            Node::All(v) => {
                let mut all = true;
                for c in v {
                    all &= c.keep(field)?;
                }
                Ok(all)
            }
            Node::Any(v) => {
                let mut any = false;
                for c in v {
                    any |= c.keep(field)?;
                }
                Ok(any)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(column: &str, op: CmpOp, value: FilterValue, dtype: CsvType) -> RowFilter {
        RowFilter::Compare {
            column: column.into(),
            op,
            value,
            dtype,
        }
    }

    /// The filter over columns `a, b, c` of `row` (split at `,`).
    fn keep(f: &RowFilter, row: &str) -> Result<bool, (usize, String)> {
        let names = ["a", "b", "c"];
        let r = f
            .resolve(&mut |c| names.iter().position(|n| *n == c).ok_or("no".into()))
            .unwrap();
        let fields: Vec<&[u8]> = row.split(',').map(str::as_bytes).collect();
        r.keep(&|i| fields[i])
    }

    #[test]
    fn numbers_compare_in_the_columns_type() {
        let f = cmp("a", CmpOp::Gt, FilterValue::Number(30.0), CsvType::Float32);
        assert_eq!(keep(&f, "31,x,1"), Ok(true));
        assert_eq!(keep(&f, " 30 ,x,1"), Ok(false));
        // float32: 30.0000001 rounds to 30, so it is not greater.
        assert_eq!(keep(&f, "30.0000001,x,1"), Ok(false));
        let f64 = cmp("a", CmpOp::Gt, FilterValue::Number(30.0), CsvType::Float64);
        assert_eq!(keep(&f64, "30.0000001,x,1"), Ok(true));
        let int = cmp("c", CmpOp::Eq, FilterValue::Number(3.0), CsvType::Int64);
        assert_eq!(keep(&int, "0,x,3"), Ok(true));
        let e = keep(&int, "0,x,3.5").unwrap_err();
        assert_eq!(e.0, 2);
        assert!(e.1.contains("'3.5' is not a valid int64"), "{}", e.1);
        let nan = cmp("a", CmpOp::Ne, FilterValue::Number(1.0), CsvType::Float32);
        assert_eq!(keep(&nan, "nan,x,1"), Ok(true));
    }

    #[test]
    fn a_missing_number_is_an_error_and_a_missing_string_is_empty() {
        let f = cmp("a", CmpOp::Ge, FilterValue::Number(0.0), CsvType::Float32);
        let e = keep(&f, ",x,1").unwrap_err();
        assert_eq!(e.0, 0);
        assert!(e.1.contains("missing"), "{}", e.1);
        let s = cmp("b", CmpOp::Ne, FilterValue::String(vec![]), CsvType::String);
        assert_eq!(keep(&s, "1,,1"), Ok(false));
        assert_eq!(keep(&s, "1,y,1"), Ok(true));
    }

    #[test]
    fn and_needs_every_condition_or_any() {
        let a = cmp("a", CmpOp::Gt, FilterValue::Number(0.0), CsvType::Float64);
        let b = cmp(
            "b",
            CmpOp::Eq,
            FilterValue::String(b"m".to_vec()),
            CsvType::String,
        );
        let both = RowFilter::All(vec![a.clone(), b.clone()]);
        let either = RowFilter::Any(vec![a, b]);
        for (row, all, any) in [
            ("1,m,0", true, true),
            ("1,f,0", false, true),
            ("-1,m,0", false, true),
            ("-1,f,0", false, false),
        ] {
            assert_eq!(keep(&both, row), Ok(all), "{row}");
            assert_eq!(keep(&either, row), Ok(any), "{row}");
        }
        // No short circuit: a bad field is an error even where the other
        // condition already decides (TF parses every column first).
        let bad_after = RowFilter::All(vec![
            cmp(
                "b",
                CmpOp::Eq,
                FilterValue::String(b"m".to_vec()),
                CsvType::String,
            ),
            cmp("a", CmpOp::Gt, FilterValue::Number(0.0), CsvType::Float64),
        ]);
        assert_eq!(keep(&bad_after, "x,f,0").unwrap_err().0, 0);
        assert_eq!(
            both.to_string(),
            "a > 0 and b == \"m\"",
            "the spec's text, for messages"
        );
    }

    #[test]
    fn unknown_columns_are_named() {
        let f = cmp("zz", CmpOp::Eq, FilterValue::Number(1.0), CsvType::Float64);
        let e = f
            .resolve(&mut |_| Err("not found".to_string()))
            .unwrap_err();
        assert_eq!(e, ("zz".to_string(), "not found".to_string()));
    }
}
