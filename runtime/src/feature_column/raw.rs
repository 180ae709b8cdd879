//! The values one raw cell gives a feature key, read without allocating.
//!
//! Owns: how each kind of [`Cell`] reads as strings, int64s or numbers, and
//! whether TF would see it as a dense tensor or as a SparseTensor:
//! - a CSV text cell is one value of a dense column (its bytes untrimmed for
//!   strings; trimmed and parsed for int64s, where an empty cell is no
//!   value; whitespace-separated numbers for a numeric column of shape k);
//! - a CSV text cell of a base column with `sep` is the SparseTensor of its
//!   pieces (`tf.strings.split`, module `split`; int64 pieces trimmed and
//!   parsed each), none dropped; an empty cell (a blank one for int64s) has
//!   no values, the missing value TF drops from a dense column;
//! - a `tf.train.Example` feature is the SparseTensor `VarLenFeature` gives
//!   (every value of its list, in order), unless the transform is told its
//!   features are dense rows (TF's dense feature dict);
//! - a number cell (synthetic data) is one value of a dense column;
//! - a `tf.train.SequenceExample` feature list is a sequence column's
//!   steps (TF's `VarLenFeature` in `sequence_features`, a SparseTensor
//!   `[steps, values in a step]`): a categorical column takes one value a
//!   step ([`each_string`], [`each_int`]: step t's value at slot t; an empty
//!   step, or one without a kind, is no value but keeps its slot), a
//!   numeric column of shape d takes d values a step or none
//!   ([`step_numbers`]); more values in a step is an error naming the step.
//!
//! Invariants: nothing here allocates; a value of the wrong kind is an error
//! saying what was expected and what was found, never a panic.

use super::split::{self, KeyValues};
use crate::data::columns::{parse_text, Cell};
use crate::io::example::Feature;

/// Whether TF sees a key's values as a dense tensor (`''` and `-1` are then
/// missing values, dropped by the categorical columns; a cross takes dense
/// inputs after sparse ones) or as a SparseTensor (every value is present).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Dense,
    Sparse,
}

/// What a transform that is not a sequence column's says about a feature
/// list (the sema check keeps feature-list keys to sequence columns).
pub(crate) const NOT_A_LIST: &str =
    "a feature list (the steps of a SequenceExample) where one feature is expected";

/// The form of a cell: text and numbers are dense; an Example feature (or
/// feature list) is sparse unless `dense_features`.
#[inline(always)]
pub(crate) fn form(cell: Cell<'_>, dense_features: bool) -> Form {
    match cell {
        Cell::Feature(_) | Cell::FeatureList(_) if !dense_features => Form::Sparse,
        _ => Form::Dense,
    }
}

/// The string values of a cell.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Strs<'a> {
    None,
    One(&'a [u8]),
    Many(&'a [Vec<u8>]),
}

impl<'a> Strs<'a> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Strs::None => 0,
            Strs::One(_) => 1,
            Strs::Many(v) => v.len(),
        }
    }

    /// Value `i < len()`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &'a [u8] {
        match *self {
            Strs::None => b"",
            Strs::One(b) => b,
            Strs::Many(v) => v.get(i).map_or(&[][..], |s| s.as_slice()),
        }
    }
}

/// The int64 values of a cell.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ints<'a> {
    None,
    One(i64),
    Many(&'a [i64]),
}

impl Ints<'_> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Ints::None => 0,
            Ints::One(_) => 1,
            Ints::Many(v) => v.len(),
        }
    }

    /// Value `i < len()`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> i64 {
        match *self {
            Ints::None => 0,
            Ints::One(v) => v,
            Ints::Many(v) => v.get(i).copied().unwrap_or(0),
        }
    }
}

fn wrong_kind(expected: &str, f: &Feature) -> String {
    format!("expected {expected}, found a {}", f.kind())
}

/// A cell's values as strings (`tf.string`).
#[inline(always)]
pub(crate) fn strings(cell: Cell<'_>) -> Result<Strs<'_>, String> {
    match cell {
        Cell::Text(b) => Ok(Strs::One(b)),
        Cell::Feature(None) | Cell::Feature(Some(Feature::Unset)) => Ok(Strs::None),
        Cell::Feature(Some(Feature::BytesList(v))) => Ok(Strs::Many(v)),
        Cell::Feature(Some(f)) => Err(wrong_kind("strings (a bytes_list)", f)),
        Cell::Number(x) => Err(format!("expected a string, found the number {x}")),
        Cell::FeatureList(_) => Err(NOT_A_LIST.to_string()),
    }
}

/// A cell's values as int64s: a text cell trimmed and parsed (empty: no
/// value), a number that must be integral.
#[inline]
pub(crate) fn ints(cell: Cell<'_>) -> Result<Ints<'_>, String> {
    match cell {
        Cell::Text(b) => {
            let t = b.trim_ascii();
            if t.is_empty() {
                return Ok(Ints::None);
            }
            parse_i64(t).map(Ints::One).ok_or_else(|| {
                format!(
                    "cannot parse {:?} as an int64",
                    String::from_utf8_lossy(t).as_ref()
                )
            })
        }
        Cell::Number(x) => {
            // 2^63 is exactly representable: `x < 2^63` keeps `as` exact.
            if x.fract() == 0.0 && x >= -(2f64.powi(63)) && x < 2f64.powi(63) {
                Ok(Ints::One(x as i64))
            } else {
                Err(format!("expected an int64, found {x}"))
            }
        }
        Cell::Feature(None) | Cell::Feature(Some(Feature::Unset)) => Ok(Ints::None),
        Cell::Feature(Some(Feature::Int64List(v))) => Ok(Ints::Many(v)),
        Cell::Feature(Some(f)) => Err(wrong_kind("int64s (an int64_list)", f)),
        Cell::FeatureList(_) => Err(NOT_A_LIST.to_string()),
    }
}

/// Calls `f(t, value)` for the one value of each step `t` of a feature list
/// that has one (`value` reads it from the step's `Feature`: `None` for an
/// empty step); returns the steps, at most `limit`. A step with more than
/// one value is an error naming it.
fn each_step<'a, T>(
    list: Option<&'a [Feature]>,
    limit: usize,
    value: impl Fn(&'a Feature) -> Result<Option<T>, String>,
    mut f: impl FnMut(usize, T),
) -> Result<usize, String> {
    let list = list.unwrap_or_default();
    let n = list.len().min(limit);
    for (t, step) in list[..n].iter().enumerate() {
        if step.len() > 1 {
            return Err(format!(
                "step {t} of the feature list has {} values; a sequence categorical column \
                 takes one value a step",
                step.len()
            ));
        }
        if let Some(v) = value(step).map_err(|e| format!("step {t} of the feature list: {e}"))? {
            f(t, v);
        }
    }
    Ok(n)
}

/// The string values of a base column's key in `cell` as TF's column sees
/// them, read by `values` (its `sep` and truncation): calls `f(p, s)` for
/// each value the column keeps, `p` its slot (TF's SparseTensor index);
/// returns how many values the key gave, those TF drops (a dense `''`)
/// included, since they keep their slot; at most `values.truncate`.
#[inline]
pub(crate) fn each_string(
    cell: Cell<'_>,
    values: &KeyValues,
    dense_features: bool,
    mut f: impl FnMut(usize, &[u8]),
) -> Result<usize, String> {
    let limit = values.truncate.unwrap_or(usize::MAX);
    if let Cell::FeatureList(list) = cell {
        return each_step(
            list,
            limit,
            |step| match step {
                Feature::Unset => Ok(None),
                Feature::BytesList(v) => Ok(v.first().map(Vec::as_slice)),
                f => Err(wrong_kind("strings (a bytes_list)", f)),
            },
            f,
        );
    }
    if let (Cell::Text(b), Some(sep)) = (cell, &values.sep) {
        if b.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        for s in split::pieces(b, sep).take(limit) {
            f(n, s);
            n += 1;
        }
        return Ok(n);
    }
    let dense = form(cell, dense_features) == Form::Dense;
    let v = strings(cell)?;
    let n = v.len().min(limit);
    for p in 0..n {
        let s = v.get(p);
        if !(dense && s.is_empty()) {
            f(p, s);
        }
    }
    Ok(n)
}

/// The int64 values of a base column's key in `cell`, as [`each_string`]
/// gives strings (TF drops a dense `-1`); a piece of a split cell that is
/// not an int64 is an error naming it and its place.
#[inline]
pub(crate) fn each_int(
    cell: Cell<'_>,
    values: &KeyValues,
    dense_features: bool,
    mut f: impl FnMut(usize, i64),
) -> Result<usize, String> {
    let limit = values.truncate.unwrap_or(usize::MAX);
    if let Cell::FeatureList(list) = cell {
        return each_step(
            list,
            limit,
            |step| match step {
                Feature::Unset => Ok(None),
                Feature::Int64List(v) => Ok(v.first().copied()),
                f => Err(wrong_kind("int64s (an int64_list)", f)),
            },
            f,
        );
    }
    if let (Cell::Text(b), Some(sep)) = (cell, &values.sep) {
        if b.trim_ascii().is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        for s in split::pieces(b, sep).take(limit) {
            let x = parse_i64(s).ok_or_else(|| {
                format!(
                    "cannot parse {:?} (value {} of the cell split by sep = {}) as an int64",
                    String::from_utf8_lossy(s).as_ref(),
                    n + 1,
                    sep.spec_text()
                )
            })?;
            f(n, x);
            n += 1;
        }
        return Ok(n);
    }
    let dense = form(cell, dense_features) == Form::Dense;
    let v = ints(cell)?;
    let n = v.len().min(limit);
    for p in 0..n {
        let x = v.get(p);
        if !(dense && x == -1) {
            f(p, x);
        }
    }
    Ok(n)
}

/// A decimal int64, surrounding ASCII whitespace trimmed (as a CSV int64
/// cell is read).
fn parse_i64(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b.trim_ascii()).ok()?.parse().ok()
}

/// Calls `f(i, x)` for each number of a cell, in order; returns how many
/// there were. Text: whitespace-separated numbers (none when the cell is
/// blank); a feature: its float or int64 values, or its strings parsed.
/// Every number is finite; text parses by the loader's one rule
/// ([`parse_text`]).
pub(crate) fn numbers(
    cell: Cell<'_>,
    mut f: impl FnMut(usize, f64) -> Result<(), String>,
) -> Result<usize, String> {
    let mut n = 0;
    let mut put = |x: f64| -> Result<(), String> {
        if !x.is_finite() {
            return Err(format!("value {x} is not a finite number"));
        }
        f(n, x)?;
        n += 1;
        Ok(())
    };
    match cell {
        Cell::Number(x) => put(x)?,
        Cell::Text(b) => {
            for word in text_words(b) {
                put(parse_text(word)?)?;
            }
        }
        Cell::Feature(None) => {}
        Cell::Feature(Some(f)) => feature_numbers(f, &mut put)?,
        Cell::FeatureList(_) => return Err(NOT_A_LIST.to_string()),
    }
    Ok(n)
}

/// Calls `put(x)` for each value of a feature: its floats or int64s, or
/// its strings parsed.
fn feature_numbers(
    f: &Feature,
    put: &mut impl FnMut(f64) -> Result<(), String>,
) -> Result<(), String> {
    match f {
        Feature::Unset => {}
        Feature::FloatList(v) => {
            for &x in v {
                put(f64::from(x))?;
            }
        }
        Feature::Int64List(v) => {
            for &x in v {
                put(x as f64)?;
            }
        }
        Feature::BytesList(v) => {
            for b in v {
                put(parse_text(b)?)?;
            }
        }
    }
    Ok(())
}

/// The steps of a `sequence_numeric_column` of shape `d` in a feature list:
/// calls `f(t * d + i, x)` for value i of each step t that has values;
/// every step has `d` values or none (an empty step reads as the column's
/// default, TF's `sparse_tensor_to_dense` of the `[steps, d]` SparseTensor).
/// Returns the steps and the length (the last step with values + 1, TF's
/// `sequence_length_from_sparse_tensor` of a rank-3 input). With `f` absent,
/// only counts and checks.
pub(crate) fn step_numbers(
    list: Option<&[Feature]>,
    d: usize,
    mut f: Option<&mut dyn FnMut(usize, f64) -> Result<(), String>>,
) -> Result<(usize, usize), String> {
    let list = list.unwrap_or_default();
    let mut length = 0;
    for (t, step) in list.iter().enumerate() {
        match step.len() {
            0 => continue,
            k if k != d => {
                return Err(format!(
                    "step {t} of the feature list has {k} values; a sequence_numeric_column \
                     of shape {d} takes {d} a step (or none)"
                ))
            }
            _ => {}
        }
        length = t + 1;
        if let Some(f) = f.as_deref_mut() {
            let mut i = 0;
            feature_numbers(step, &mut |x| {
                if !x.is_finite() {
                    return Err(format!("value {x} is not a finite number"));
                }
                f(t * d + i, x)?;
                i += 1;
                Ok(())
            })
            .map_err(|e| format!("step {t} of the feature list: {e}"))?;
        }
    }
    Ok((list.len(), length))
}

/// The whitespace-separated words of a text cell: the numbers of a numeric
/// column of shape k (none when the cell is blank).
pub(crate) fn text_words(b: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    b.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty())
}

/// How many numbers [`numbers`] would give (without checking them).
pub(crate) fn count_numbers(cell: Cell<'_>) -> usize {
    match cell {
        Cell::Number(_) => 1,
        Cell::Text(b) => text_words(b).count(),
        Cell::Feature(None) => 0,
        Cell::Feature(Some(f)) => f.len(),
        Cell::FeatureList(l) => l.unwrap_or_default().iter().map(Feature::len).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cells() {
        assert_eq!(strings(Cell::Text(b" a ")).unwrap().get(0), b" a ");
        assert_eq!(ints(Cell::Text(b" -12 ")).unwrap().get(0), -12);
        assert_eq!(ints(Cell::Text(b"  ")).unwrap().len(), 0);
        assert!(ints(Cell::Text(b"1.5")).unwrap_err().contains("\"1.5\""));
        let mut got = Vec::new();
        let n = numbers(Cell::Text(b"1 2.5\t-3"), |_, x| {
            got.push(x);
            Ok(())
        })
        .unwrap();
        assert_eq!((n, got), (3, vec![1.0, 2.5, -3.0]));
        assert_eq!(count_numbers(Cell::Text(b" 1  2 ")), 2);
    }

    #[test]
    fn feature_cells() {
        let f = Feature::FloatList(vec![1.0]);
        assert!(strings(Cell::Feature(Some(&f)))
            .unwrap_err()
            .contains("float_list"));
        assert!(ints(Cell::Number(0.5)).is_err());
        assert_eq!(ints(Cell::Number(7.0)).unwrap().get(0), 7);
        assert_eq!(form(Cell::Feature(None), false), Form::Sparse);
        assert_eq!(form(Cell::Feature(None), true), Form::Dense);
        assert_eq!(form(Cell::Text(b""), false), Form::Dense);
    }
}
