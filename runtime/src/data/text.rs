//! How a CSV text cell reads as the values of the raw feature key it holds:
//! the typing half of the one CSV reader ([`super::csv_file`] splits a file
//! into records and fields; this types one field).
//!
//! Owns: [`TextRule`], the rule of each kind of input for a text cell, and
//! [`TextRule::read`] ([`TextRule::read_split`] for a key a column splits
//! by its `sep`). `specc run` applies the same rules inside its column
//! transforms ([`super::columns`] for plain inputs, the feature columns'
//! raw readers for feature columns); `specc convert` applies them here to
//! write the values `specc run` would read into a `tf.train.Example`, so a
//! CSV file and its conversion read the same.
//!
//! Invariants: each rule calls the very function `specc run` calls for it
//! (no second parser); a missing cell (see [`TextRule::read`]) is
//! [`TextValues::Missing`], never an error; errors are the messages
//! `specc run` gives for the same cell. What a model then requires of a
//! value is not a reading rule and is not checked here: that a float be
//! finite (`inf`, `nan` and `1e39` read as TF reads them: float32 `inf`,
//! `nan`, `inf`), that an id be below the class count.

use super::columns::{check_id, parse_number, read_text_number, Cell};
use crate::feature_column::{raw, KeyValues, Sep};

/// The rule a text cell is read by: the rule of the input that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextRule {
    /// A plain float input's cell: one number (trimmed, correctly rounded).
    Number,
    /// A plain class-id input's cell: one number that is a whole,
    /// non-negative id (`2`, `2.0`); the class range is the model's.
    ClassId,
    /// A feature column's float key: whitespace-separated numbers (a numeric
    /// column of shape k reads k).
    Numbers,
    /// A feature column's int64 key: one decimal integer, trimmed.
    Int64,
    /// A string key: the bytes as they are.
    String,
}

/// The values of one cell under a [`TextRule`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TextValues<'c> {
    /// No value: TF's default applies.
    Missing,
    /// float32 values, in the `floats` buffer given to [`TextRule::read`].
    Floats,
    /// int64 values, in the `ints` buffer given to [`TextRule::read`].
    Int64s,
    /// One string, the cell itself.
    Bytes(&'c [u8]),
    /// Strings, in the `strings` buffer given to [`TextRule::read_split`].
    BytesList,
}

impl TextRule {
    /// The values of `cell` (the CSV `na_value` already replaced by an
    /// empty cell). Missing: an empty cell, or for the numeric rules one of
    /// whitespace only. Numbers go to `floats` or `ints` (cleared first).
    pub fn read<'c>(
        self,
        cell: &'c [u8],
        floats: &mut Vec<f32>,
        ints: &mut Vec<i64>,
    ) -> Result<TextValues<'c>, String> {
        floats.clear();
        ints.clear();
        let blank = cell.trim_ascii().is_empty();
        Ok(match self {
            TextRule::String if cell.is_empty() => TextValues::Missing,
            TextRule::String => TextValues::Bytes(cell),
            _ if blank => TextValues::Missing,
            TextRule::Number => {
                floats.push(read_text_number(cell)? as f32);
                TextValues::Floats
            }
            TextRule::ClassId => {
                ints.push(i64::from(check_id(parse_number(Cell::Text(cell))?, None)?));
                TextValues::Int64s
            }
            TextRule::Numbers => {
                for word in raw::text_words(cell) {
                    floats.push(read_text_number(word)? as f32);
                }
                TextValues::Floats
            }
            TextRule::Int64 => match raw::ints(Cell::Text(cell))? {
                raw::Ints::One(v) => {
                    ints.push(v);
                    TextValues::Int64s
                }
                _ => TextValues::Missing,
            },
        })
    }
}

impl TextRule {
    /// The values of `cell` for a base column with `sep` (only
    /// [`TextRule::String`] and [`TextRule::Int64`] keys have one): its
    /// pieces, every one kept (none truncated), as the column's transform
    /// reads them; strings go to `strings`, int64s to `ints` (cleared
    /// first). Missing: a cell without pieces (an empty one; a blank one
    /// for int64s).
    pub fn read_split(
        self,
        cell: &[u8],
        sep: &Sep,
        strings: &mut Vec<Vec<u8>>,
        ints: &mut Vec<i64>,
    ) -> Result<TextValues<'static>, String> {
        strings.clear();
        ints.clear();
        let values = KeyValues {
            sep: Some(sep.clone()),
            truncate: None,
        };
        let n = match self {
            TextRule::Int64 => {
                raw::each_int(Cell::Text(cell), &values, false, |_, x| ints.push(x))?
            }
            _ => raw::each_string(Cell::Text(cell), &values, false, |_, s| {
                strings.push(s.to_vec())
            })?,
        };
        Ok(match (n, self) {
            (0, _) => TextValues::Missing,
            (_, TextRule::Int64) => TextValues::Int64s,
            _ => TextValues::BytesList,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rule: TextRule, cell: &str) -> Result<(TextValues<'_>, Vec<f32>, Vec<i64>), String> {
        let (mut f, mut i) = (Vec::new(), Vec::new());
        let v = rule.read(cell.as_bytes(), &mut f, &mut i)?;
        Ok((v, f, i))
    }

    #[test]
    fn each_rule_reads_as_the_transforms_do() {
        assert_eq!(
            read(TextRule::Number, " 1.5 ").unwrap(),
            (TextValues::Floats, vec![1.5], vec![])
        );
        assert_eq!(
            read(TextRule::ClassId, "2.0").unwrap(),
            (TextValues::Int64s, vec![], vec![2])
        );
        assert_eq!(
            read(TextRule::Numbers, "1 2.5\t-3").unwrap(),
            (TextValues::Floats, vec![1.0, 2.5, -3.0], vec![])
        );
        assert_eq!(
            read(TextRule::Int64, " -12 ").unwrap(),
            (TextValues::Int64s, vec![], vec![-12])
        );
        assert_eq!(
            read(TextRule::String, " a ").unwrap().0,
            TextValues::Bytes(b" a ")
        );
    }

    #[test]
    fn empty_cells_are_missing_and_blank_ones_for_numbers() {
        for rule in [
            TextRule::Number,
            TextRule::ClassId,
            TextRule::Numbers,
            TextRule::Int64,
        ] {
            assert_eq!(read(rule, "").unwrap().0, TextValues::Missing, "{rule:?}");
            assert_eq!(
                read(rule, " \t").unwrap().0,
                TextValues::Missing,
                "{rule:?}"
            );
        }
        assert_eq!(read(TextRule::String, "").unwrap().0, TextValues::Missing);
        assert_eq!(
            read(TextRule::String, " ").unwrap().0,
            TextValues::Bytes(b" ")
        );
    }

    #[test]
    fn values_a_model_refuses_still_read_as_tf_reads_them() {
        let (_, f, _) = read(TextRule::Number, "1e39").unwrap();
        assert_eq!(f, [f32::INFINITY]);
        let (_, f, _) = read(TextRule::Numbers, "-INF nan").unwrap();
        assert_eq!(f[0], f32::NEG_INFINITY);
        assert!(f[1].is_nan());
        let (_, _, i) = read(TextRule::ClassId, "7").unwrap();
        assert_eq!(i, [7], "the class range is the model's");
    }

    #[test]
    fn split_cells_read_as_the_columns_with_sep_do() {
        let (mut s, mut i) = (Vec::new(), Vec::new());
        let bar = Sep::Delimiter(b"|".to_vec());
        let v = TextRule::String.read_split(b"a||b", &bar, &mut s, &mut i);
        assert_eq!(v, Ok(TextValues::BytesList));
        assert_eq!(s, [b"a".to_vec(), vec![], b"b".to_vec()]);
        let v = TextRule::String.read_split(b"", &bar, &mut s, &mut i);
        assert_eq!((v, s.len()), (Ok(TextValues::Missing), 0));
        let v = TextRule::Int64.read_split(b" 3 -1\t4", &Sep::Whitespace, &mut s, &mut i);
        assert_eq!((v, i.as_slice()), (Ok(TextValues::Int64s), &[3, -1, 4][..]));
        let e = TextRule::Int64.read_split(b"3|x", &bar, &mut s, &mut i);
        assert_eq!(
            e,
            Err("cannot parse \"x\" (value 2 of the cell split by sep = \"|\") as an int64".into())
        );
    }

    #[test]
    fn bad_cells_give_the_transforms_messages() {
        let e = read(TextRule::Number, "abc").unwrap_err();
        assert_eq!(e, "cannot parse \"abc\" as a number");
        let e = read(TextRule::Numbers, "1 x").unwrap_err();
        assert_eq!(e, "cannot parse \"x\" as a number");
        let e = read(TextRule::ClassId, "0.5").unwrap_err();
        assert_eq!(e, "an id must be a non-negative integer, got 0.5");
        let e = read(TextRule::Int64, "1.5").unwrap_err();
        assert_eq!(e, "cannot parse \"1.5\" as an int64");
    }
}
