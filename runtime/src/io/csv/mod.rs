//! `tf.io.decode_csv`: one CSV record into typed fields, with TensorFlow's
//! semantics (tensorflow/core/kernels/decode_csv_op.cc).
//!
//! Owns: [`CsvOptions`] (`record_defaults`, `field_delim`, `use_quote_delim`,
//! `na_value`, `select_cols`), [`CsvDecoder`] (decodes records into reused
//! buffers: no allocation per record once they have grown) and
//! [`decode_csv`] (the same, into owned [`Field`]s); its parts are the
//! tokenizer (`fields`: TF's `ExtractFields`), typed parsing
//! (`numbers`) and [`CsvError`] (`error`).
//!
//! This is the op, record by record. Files are read by the one CSV file
//! reader, [`crate::data::csv_file`] (`specc run`, the pipeline,
//! `specc predict`, `specc convert`), whose quoting is more lenient than
//! TF's (see there).
//!
//! TF's rules, kept exactly:
//! - Fields are split at `field_delim`; with `use_quote_delim` a field that
//!   starts with `"` is quoted: it ends at a `"` followed by the delimiter or
//!   the end of the record, and `""` inside it is one `"` (RFC 4180). A
//!   quote inside an unquoted field, a lone quote inside a quoted one, or a
//!   quoted field that does not end so, is an error; so is a CR or LF inside
//!   an unquoted field. A CR or LF where a field starts is skipped.
//! - An empty record has no fields; a record ending in the delimiter has an
//!   empty last field. The number of fields must equal the number of
//!   `record_defaults` (with `select_cols`: of selected columns found).
//! - `select_cols` (strictly increasing) picks columns in order; fields after
//!   the last selected one are not looked at.
//! - A field that is empty (also `""` quoted) or equal to `na_value` is
//!   missing: it takes its column's default, or is an error when the column
//!   is required (TF's empty default).
//! - Numbers may have ASCII whitespace around them; int32/int64 are decimal
//!   with an optional sign, out of range is an error; float32/float64 are
//!   correctly rounded decimals (`inf`, `nan` in any case, `1e40` → inf in
//!   float32) or hexadecimal integers (`0x10`). Strings are verbatim.
//!
//! [`RecordDefault::Missing`] is specc's addition for readers that apply
//! their own defaults (a feature column's `default_value`, or an Example
//! that leaves the feature out): a missing field is reported as
//! [`Value::Missing`] instead of a value.
//!
//! Invariants: no bytes make it panic; every error says which column (its
//! number in the record, from 0) and, when the caller gives it, which line.

use std::ops::Range;

mod error;
mod fields;
mod numbers;

pub use error::CsvError;
use fields::extract_fields;
pub(crate) use numbers::{parse_float, parse_float32, parse_int};

/// A field's type (`record_defaults`' dtypes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsvType {
    Float32,
    Float64,
    Int32,
    Int64,
    String,
}

impl CsvType {
    /// TF's name (`float32`, ..., `string`).
    pub fn tf_name(self) -> &'static str {
        match self {
            CsvType::Float32 => "float32",
            CsvType::Float64 => "float64",
            CsvType::Int32 => "int32",
            CsvType::Int64 => "int64",
            CsvType::String => "string",
        }
    }
}

/// One column's entry of `record_defaults`.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordDefault {
    /// TF's empty default (`tf.constant([], dtype)`): a missing field is an error.
    Required(CsvType),
    /// specc's: a missing field is [`Value::Missing`].
    Missing(CsvType),
    Float32(f32),
    Float64(f64),
    Int32(i32),
    Int64(i64),
    String(Vec<u8>),
}

impl RecordDefault {
    pub fn dtype(&self) -> CsvType {
        match self {
            RecordDefault::Required(t) | RecordDefault::Missing(t) => *t,
            RecordDefault::Float32(_) => CsvType::Float32,
            RecordDefault::Float64(_) => CsvType::Float64,
            RecordDefault::Int32(_) => CsvType::Int32,
            RecordDefault::Int64(_) => CsvType::Int64,
            RecordDefault::String(_) => CsvType::String,
        }
    }

    fn value(&self) -> Value<'_> {
        match self {
            RecordDefault::Required(_) | RecordDefault::Missing(_) => Value::Missing,
            RecordDefault::Float32(x) => Value::Float32(*x),
            RecordDefault::Float64(x) => Value::Float64(*x),
            RecordDefault::Int32(x) => Value::Int32(*x),
            RecordDefault::Int64(x) => Value::Int64(*x),
            RecordDefault::String(s) => Value::String(s),
        }
    }
}

/// `tf.io.decode_csv`'s arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvOptions {
    /// One per output column (per selected column with `select_cols`).
    pub record_defaults: Vec<RecordDefault>,
    /// TF's default `,`.
    pub field_delim: u8,
    /// TF's default true: `"` quotes fields.
    pub use_quote_delim: bool,
    /// A field equal to it is missing (TF's default `""`: only empty fields).
    pub na_value: Vec<u8>,
    /// The columns to read (from 0, strictly increasing); `None`: all.
    pub select_cols: Option<Vec<usize>>,
}

impl CsvOptions {
    /// TF's defaults with these `record_defaults`.
    pub fn new(record_defaults: Vec<RecordDefault>) -> CsvOptions {
        CsvOptions {
            record_defaults,
            field_delim: b',',
            use_quote_delim: true,
            na_value: Vec::new(),
            select_cols: None,
        }
    }

    /// TF's checks of the arguments.
    pub fn validate(&self) -> Result<(), CsvError> {
        let err = |what: String| Err(CsvError::new(None, what));
        if self.record_defaults.is_empty() {
            return err("record_defaults is empty: decode_csv needs at least one column".into());
        }
        if self.use_quote_delim && self.field_delim == b'"' {
            return err("field_delim cannot be '\"' when quotes delimit fields".into());
        }
        if matches!(self.field_delim, b'\n' | b'\r') {
            return err("field_delim cannot be a line break".into());
        }
        if let Some(cols) = &self.select_cols {
            if cols.windows(2).any(|w| w[0] >= w[1]) {
                return err(format!("select_cols {cols:?} is not strictly increasing"));
            }
            if cols.len() != self.record_defaults.len() {
                return err(format!(
                    "select_cols has {} columns but record_defaults {}: they must have the same length",
                    cols.len(),
                    self.record_defaults.len()
                ));
            }
        }
        Ok(())
    }

    /// The record's column number of output `i`.
    pub fn source_column(&self, i: usize) -> usize {
        match &self.select_cols {
            Some(cols) => cols.get(i).copied().unwrap_or(i),
            None => i,
        }
    }
}

/// A decoded field, borrowed from the decoder (strings) or the options
/// (string defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Float32(f32),
    Float64(f64),
    Int32(i32),
    Int64(i64),
    String(&'a [u8]),
    /// Missing, for a [`RecordDefault::Missing`] column.
    Missing,
}

/// A decoded field, owned ([`decode_csv`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Float32(f32),
    Float64(f64),
    Int32(i32),
    Int64(i64),
    String(Vec<u8>),
    Missing,
}

impl From<Value<'_>> for Field {
    fn from(v: Value<'_>) -> Field {
        match v {
            Value::Float32(x) => Field::Float32(x),
            Value::Float64(x) => Field::Float64(x),
            Value::Int32(x) => Field::Int32(x),
            Value::Int64(x) => Field::Int64(x),
            Value::String(s) => Field::String(s.to_vec()),
            Value::Missing => Field::Missing,
        }
    }
}

/// A decoded field, before it is borrowed.
#[derive(Clone, Debug)]
enum Slot {
    Float32(f32),
    Float64(f64),
    Int32(i32),
    Int64(i64),
    Text(Range<usize>),
    Default,
}

/// Decodes records under one [`CsvOptions`], reusing its buffers.
#[derive(Clone, Debug)]
pub struct CsvDecoder {
    opts: CsvOptions,
    text: Vec<u8>,
    ranges: Vec<Range<usize>>,
    slots: Vec<Slot>,
}

/// One decoded record: [`Value`]s borrowed from the decoder.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    dec: &'a CsvDecoder,
}

impl<'a> Record<'a> {
    /// The number of fields (of `record_defaults`).
    pub fn len(&self) -> usize {
        self.dec.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dec.slots.is_empty()
    }

    /// Field `i` (panics when `i >= len()`, like a slice).
    pub fn get(&self, i: usize) -> Value<'a> {
        match &self.dec.slots[i] {
            Slot::Float32(x) => Value::Float32(*x),
            Slot::Float64(x) => Value::Float64(*x),
            Slot::Int32(x) => Value::Int32(*x),
            Slot::Int64(x) => Value::Int64(*x),
            Slot::Text(r) => Value::String(&self.dec.text[r.clone()]),
            Slot::Default => self.dec.opts.record_defaults[i].value(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Value<'a>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl CsvDecoder {
    /// A decoder; the options are checked as TF checks them.
    pub fn new(opts: CsvOptions) -> Result<CsvDecoder, CsvError> {
        opts.validate()?;
        let n = opts.record_defaults.len();
        Ok(CsvDecoder {
            opts,
            text: Vec::new(),
            ranges: Vec::with_capacity(n),
            slots: Vec::with_capacity(n),
        })
    }

    pub fn options(&self) -> &CsvOptions {
        &self.opts
    }

    /// Decodes one record (without its line terminator). Errors name the
    /// column; add the line with [`CsvError::at_line`].
    pub fn decode(&mut self, record: &[u8]) -> Result<Record<'_>, CsvError> {
        let opts = &self.opts;
        extract_fields(
            record,
            opts.field_delim,
            opts.use_quote_delim,
            opts.select_cols.as_deref(),
            &mut self.text,
            &mut self.ranges,
        )
        .map_err(|(c, what)| CsvError::new(Some(c), what.into()))?;
        let want = opts.record_defaults.len();
        if self.ranges.len() != want {
            return Err(CsvError::new(
                None,
                format!(
                    "expected {want} {}fields but found {}",
                    if opts.select_cols.is_some() {
                        "selected "
                    } else {
                        ""
                    },
                    self.ranges.len(),
                ),
            ));
        }
        self.slots.clear();
        for (i, (r, default)) in self.ranges.iter().zip(&opts.record_defaults).enumerate() {
            let bytes = &self.text[r.clone()];
            let column = opts.source_column(i);
            if bytes.is_empty() || bytes == opts.na_value.as_slice() {
                if let RecordDefault::Required(t) = default {
                    return Err(CsvError::new(
                        Some(column),
                        format!(
                            "the field is required (no default {} value) but missing",
                            t.tf_name()
                        ),
                    ));
                }
                self.slots.push(Slot::Default);
                continue;
            }
            let dtype = default.dtype();
            let bad = || {
                CsvError::new(
                    Some(column),
                    format!(
                        "'{}' is not a valid {}",
                        String::from_utf8_lossy(bytes),
                        dtype.tf_name()
                    ),
                )
            };
            let slot = match dtype {
                CsvType::String => Slot::Text(r.clone()),
                CsvType::Int32 => Slot::Int32(parse_int::<i32>(bytes).ok_or_else(bad)?),
                CsvType::Int64 => Slot::Int64(parse_int::<i64>(bytes).ok_or_else(bad)?),
                CsvType::Float32 => Slot::Float32(parse_float32(bytes).ok_or_else(bad)?),
                CsvType::Float64 => Slot::Float64(parse_float(bytes).ok_or_else(bad)?),
            };
            self.slots.push(slot);
        }
        Ok(Record { dec: self })
    }
}

/// `tf.io.decode_csv` of one record into owned fields.
pub fn decode_csv(record: &[u8], opts: &CsvOptions) -> Result<Vec<Field>, CsvError> {
    let mut dec = CsvDecoder::new(opts.clone())?;
    let rec = dec.decode(record)?;
    Ok(rec.iter().map(Field::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(d: Vec<RecordDefault>) -> CsvOptions {
        CsvOptions::new(d)
    }

    fn dec(line: &str, o: &CsvOptions) -> Result<Vec<Field>, CsvError> {
        decode_csv(line.as_bytes(), o)
    }

    fn s(x: &str) -> Field {
        Field::String(x.as_bytes().to_vec())
    }

    use RecordDefault as D;

    #[test]
    fn typed_defaults_fill_empty_fields() {
        let o = opts(vec![D::Int32(0), D::Float32(9.5), D::String(b"d".to_vec())]);
        assert_eq!(
            dec("1,2,3", &o).unwrap(),
            [Field::Int32(1), Field::Float32(2.0), s("3")]
        );
        assert_eq!(
            dec("1,,", &o).unwrap(),
            [Field::Int32(1), Field::Float32(9.5), s("d")]
        );
        assert_eq!(
            dec(r#"""," 2 ",x"#, &o).unwrap(),
            [Field::Int32(0), Field::Float32(2.0), s("x")]
        );
    }

    #[test]
    fn a_required_field_that_is_empty_names_its_column() {
        let o = opts(vec![D::Int32(0), D::Required(CsvType::Float64)]);
        let e = dec("1,", &o).unwrap_err();
        assert_eq!(e.column, Some(1));
        let e = e.at_line(7).with_names(&["a", "b"]);
        assert_eq!(
            e.to_string(),
            "line 7, column 1 ('b'): the field is required (no default float64 value) but missing"
        );
    }

    #[test]
    fn quotes_follow_rfc_4180_and_tf() {
        let o = opts(vec![D::String(vec![]), D::Int64(0), D::String(vec![])]);
        assert_eq!(
            dec(r#""a,b",2,"x""y""#, &o).unwrap(),
            [s("a,b"), Field::Int64(2), s("x\"y")]
        );
        assert_eq!(
            dec("\"a\nb\",2,\"\"\"\"", &o).unwrap(),
            [s("a\nb"), Field::Int64(2), s("\"")]
        );
        for bad in [
            r#"a"b,2,3"#,
            r#""ab"c,2,3"#,
            r#""ab,2,3"#,
            "a\rb,2,3",
            r#"1,2,""#,
        ] {
            assert!(dec(bad, &o).is_err(), "{bad}");
        }
        assert_eq!(dec(r#"a"b,2,3"#, &o).unwrap_err().column, Some(0));
        // Without quoting, quotes are data.
        let mut q = o.clone();
        q.use_quote_delim = false;
        assert_eq!(
            dec(r#""a",2,b"c"#, &q).unwrap(),
            [s("\"a\""), Field::Int64(2), s("b\"c")]
        );
    }

    #[test]
    fn field_counts_are_checked() {
        let o = opts(vec![D::Int32(0), D::Int32(0), D::String(b"z".to_vec())]);
        assert!(dec("1,2", &o).is_err());
        assert!(dec("1,2,3,4", &o).is_err());
        assert!(dec("", &o).is_err());
        assert_eq!(
            dec("1,2,", &o).unwrap(),
            [Field::Int32(1), Field::Int32(2), s("z")]
        );
        let one = opts(vec![D::Int32(5)]);
        assert!(dec("", &one).is_err(), "an empty record has no fields");
    }

    #[test]
    fn na_value_counts_as_missing_quoted_or_not() {
        let mut o = opts(vec![D::Int32(7), D::Int32(0), D::String(b"d".to_vec())]);
        o.na_value = b"NA".to_vec();
        assert_eq!(
            dec(r#""NA",2,NA"#, &o).unwrap(),
            [Field::Int32(7), Field::Int32(2), s("d")]
        );
        // An empty field is still missing.
        assert_eq!(
            dec(",2,", &o).unwrap(),
            [Field::Int32(7), Field::Int32(2), s("d")]
        );
    }

    #[test]
    fn select_cols_reads_only_those_columns() {
        let mut o = opts(vec![D::Int32(0), D::String(vec![])]);
        o.select_cols = Some(vec![1, 3]);
        assert_eq!(dec("1,2,3,x,5", &o).unwrap(), [Field::Int32(2), s("x")]);
        // Fields after the last selected column are not looked at.
        assert_eq!(dec("1,2,3,x,a\"b", &o).unwrap(), [Field::Int32(2), s("x")]);
        // Before it, they are.
        assert!(dec("a\"b,2,3,x", &o).is_err());
        assert!(dec("1,2,3", &o).is_err());
        // The empty last field can be selected.
        assert_eq!(
            dec(
                "1,2,3,",
                &opts_sel(vec![D::Int32(0), D::String(b"e".to_vec())], &[1, 3])
            )
            .unwrap(),
            [Field::Int32(2), s("e")]
        );
        for bad in [vec![3, 1], vec![1, 1]] {
            o.select_cols = Some(bad);
            assert!(CsvDecoder::new(o.clone()).is_err());
        }
        o.select_cols = Some(vec![1]);
        assert!(CsvDecoder::new(o).is_err(), "lengths differ");
    }

    fn opts_sel(d: Vec<RecordDefault>, cols: &[usize]) -> CsvOptions {
        let mut o = opts(d);
        o.select_cols = Some(cols.to_vec());
        o
    }

    #[test]
    fn field_delim() {
        let mut o = opts(vec![D::Int32(0), D::String(vec![]), D::Int32(0)]);
        o.field_delim = b';';
        assert_eq!(
            dec(r#"1;"a;b";3"#, &o).unwrap(),
            [Field::Int32(1), s("a;b"), Field::Int32(3)]
        );
        assert!(dec("1,2,3", &o).is_err());
        o.field_delim = b'"';
        assert!(CsvDecoder::new(o).is_err());
    }

    #[test]
    fn numbers_as_tf_reads_them() {
        let i32s = opts(vec![D::Int32(0)]);
        assert_eq!(dec(" +5 ", &i32s).unwrap(), [Field::Int32(5)]);
        for bad in ["1.5", "x", "99999999999", "1 2", "0x10", "--1"] {
            let e = dec(bad, &i32s).unwrap_err();
            assert!(e.what.contains("not a valid int32"), "{bad}: {e}");
        }
        let i64s = opts(vec![D::Int64(0)]);
        assert_eq!(
            dec("99999999999", &i64s).unwrap(),
            [Field::Int64(99999999999)]
        );
        assert_eq!(
            dec("-9223372036854775808", &i64s).unwrap(),
            [Field::Int64(i64::MIN)]
        );
        assert!(dec("9223372036854775808", &i64s).is_err());
        let f32s = opts(vec![D::Float32(0.0)]);
        let f = |t: &str| match dec(t, &f32s).unwrap()[0] {
            Field::Float32(x) => x,
            _ => unreachable!(),
        };
        assert_eq!(f("1e40"), f32::INFINITY);
        assert_eq!(f("-INFINITY"), f32::NEG_INFINITY);
        assert!(f("NaN").is_nan());
        assert_eq!(f("0x10"), 16.0);
        assert_eq!(f("1."), 1.0);
        assert_eq!(f(".5"), 0.5);
        // float32 rounded once from the decimal (not via float64).
        assert_eq!(f("1.00000005960464477539062500001"), 1.0000001);
        for bad in ["1.5x", "1_0", "infin", "e5", "."] {
            assert!(dec(bad, &f32s).is_err(), "{bad}");
        }
        let f64s = opts(vec![D::Float64(0.0)]);
        assert_eq!(dec("0.1", &f64s).unwrap(), [Field::Float64(0.1)]);
    }

    #[test]
    fn missing_default_reports_missing() {
        let o = opts(vec![
            D::Missing(CsvType::Int64),
            D::Missing(CsvType::String),
        ]);
        assert_eq!(dec(",", &o).unwrap(), [Field::Missing, Field::Missing]);
        assert_eq!(dec("3,x", &o).unwrap(), [Field::Int64(3), s("x")]);
    }

    #[test]
    fn the_decoder_reuses_its_buffers() {
        let mut d = CsvDecoder::new(opts(vec![D::String(vec![]), D::Int32(0)])).unwrap();
        let r = d.decode(br#""a""b",1"#).unwrap();
        assert_eq!(r.get(0), Value::String(b"a\"b"));
        let cap = (d.text.capacity(), d.slots.capacity(), d.ranges.capacity());
        for _ in 0..100 {
            let r = d.decode(b"xy,2").unwrap();
            assert_eq!(
                (r.get(0), r.get(1)),
                (Value::String(b"xy"), Value::Int32(2))
            );
        }
        assert_eq!(
            cap,
            (d.text.capacity(), d.slots.capacity(), d.ranges.capacity())
        );
    }

    #[test]
    fn no_bytes_make_it_panic() {
        let o = opts(vec![D::String(vec![]), D::Int32(0), D::Float32(0.0)]);
        let mut d = CsvDecoder::new(o.clone()).unwrap();
        let mut ds =
            CsvDecoder::new(opts_sel(vec![D::String(vec![]), D::Int32(0)], &[0, 2])).unwrap();
        let alphabet = [b'"', b',', b'\n', b'\r', b'1', b'a', b' '];
        // Every string of up to 5 symbols.
        let mut buf = Vec::new();
        for len in 0..=5u32 {
            for mut k in 0..alphabet.len().pow(len) {
                buf.clear();
                for _ in 0..len {
                    buf.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                let _ = d.decode(&buf);
                let _ = ds.decode(&buf);
            }
        }
    }
}
