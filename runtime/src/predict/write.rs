//! The predictions as text: CSV with a header, or JSON lines.
//!
//! Owns: [`PredictionWriter`] and the two formats ([`OutputFormat`]):
//! - CSV: a header of the output names, an output with more than one value
//!   per row as one column per value, named by its index (`probs_0`,
//!   `probs_1`, ...; `x_0_1` for a matrix per row, row-major), then one line
//!   per input row.
//! - JSON lines: one object per input row, the outputs by name in the
//!   spec's order, a number per row as a number, a vector as an array
//!   (nested for a matrix per row).
//!
//! Invariants: floats are written as the shortest text that reads back as
//! the same float32 (`ryu`), integers exactly; a non-finite value is `nan`,
//! `inf`, `-inf` in CSV and `NaN`, `Infinity`, `-Infinity` in JSON (as
//! Python's `json` writes and reads them); a batch is formatted into one
//! reused buffer and written with one call: nothing allocates per row (but
//! a key that needs CSV quotes). With keys ([`PredictionWriter::with_keys`],
//! an image's file) they are the first column, named in the header.

use std::io::{self, Write};
use std::path::PathBuf;

use super::PredictError;

/// How predictions are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Csv,
    JsonLines,
}

/// One output of the predict function: its name and the shape of its value
/// for one row (`[]`: a number per row, `[10]`: a vector).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputColumn {
    pub name: String,
    pub dims: Vec<usize>,
}

impl OutputColumn {
    /// Values per row.
    pub fn per_row(&self) -> usize {
        self.dims.iter().product()
    }
}

/// One output's values for a batch: `rows * per_row` elements, row-major.
#[derive(Clone, Copy, Debug)]
pub enum OutputValues<'a> {
    F32(&'a [f32]),
    I32(&'a [i32]),
}

/// Writes predictions to `out` (named `file` in errors).
pub struct PredictionWriter<W: Write> {
    out: W,
    file: PathBuf,
    format: OutputFormat,
    columns: Vec<OutputColumn>,
    buf: Vec<u8>,
    floats: ryu::Buffer,
    ints: itoa::Buffer,
    /// A first column naming each row (an image's file), and the rows written.
    keys: Option<(String, Vec<String>)>,
    written: usize,
}

impl<W: Write> PredictionWriter<W> {
    pub fn new(
        out: W,
        file: impl Into<PathBuf>,
        format: OutputFormat,
        columns: Vec<OutputColumn>,
    ) -> PredictionWriter<W> {
        PredictionWriter {
            out,
            file: file.into(),
            format,
            columns,
            buf: Vec::new(),
            floats: ryu::Buffer::new(),
            ints: itoa::Buffer::new(),
            keys: None,
            written: 0,
        }
    }

    /// Writes a first column `name` whose value in row `r` (counted over
    /// every batch) is `keys[r]`: CSV-quoted when it needs it, a JSON string.
    pub fn with_keys(mut self, name: &str, keys: Vec<String>) -> PredictionWriter<W> {
        self.keys = Some((name.to_string(), keys));
        self
    }

    /// The outputs written, in order.
    pub fn columns(&self) -> &[OutputColumn] {
        &self.columns
    }

    /// A write error of this writer's file.
    pub fn error(&self, error: io::Error) -> PredictError {
        PredictError::Write {
            file: self.file.clone(),
            error,
        }
    }

    /// The CSV header (nothing for JSON lines).
    pub fn write_header(&mut self) -> io::Result<()> {
        if self.format != OutputFormat::Csv {
            return Ok(());
        }
        let mut line = String::new();
        if let Some((name, _)) = &self.keys {
            line.push_str(name);
        }
        for c in &self.columns {
            for i in 0..c.per_row() {
                if !line.is_empty() {
                    line.push(',');
                }
                line.push_str(&c.name);
                let mut rest = i;
                let mut index = Vec::with_capacity(c.dims.len());
                for &d in c.dims.iter().rev() {
                    index.push(rest % d.max(1));
                    rest /= d.max(1);
                }
                for k in index.iter().rev() {
                    line.push('_');
                    line.push_str(&k.to_string());
                }
            }
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    /// Writes `rows` rows; `column(c)` gives the values of column `c` for
    /// the batch (at least `rows * per_row` of them).
    pub fn write_batch<'a>(
        &mut self,
        rows: usize,
        column: impl Fn(usize) -> Option<OutputValues<'a>>,
    ) -> io::Result<()> {
        self.buf.clear();
        for r in 0..rows {
            match self.format {
                OutputFormat::Csv => self.csv_row(r, &column)?,
                OutputFormat::JsonLines => self.json_row(r, &column)?,
            }
            self.buf.push(b'\n');
        }
        self.written += rows;
        self.out.write_all(&self.buf)
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn values<'a>(
        &self,
        c: usize,
        r: usize,
        column: &impl Fn(usize) -> Option<OutputValues<'a>>,
    ) -> io::Result<OutputValues<'a>> {
        let n = self.columns[c].per_row();
        let short = || {
            io::Error::other(format!(
                "output `{}` has fewer values than the batch",
                self.columns[c].name
            ))
        };
        Ok(match column(c).ok_or_else(short)? {
            OutputValues::F32(v) => OutputValues::F32(v.get(r * n..(r + 1) * n).ok_or_else(short)?),
            OutputValues::I32(v) => OutputValues::I32(v.get(r * n..(r + 1) * n).ok_or_else(short)?),
        })
    }

    fn csv_row<'a>(
        &mut self,
        r: usize,
        column: &impl Fn(usize) -> Option<OutputValues<'a>>,
    ) -> io::Result<()> {
        let mut first = true;
        if let Some((_, keys)) = &self.keys {
            let key = keys.get(self.written + r).map_or("", String::as_str);
            if key.contains([',', '"', '\n', '\r']) {
                self.buf.push(b'"');
                self.buf
                    .extend_from_slice(key.replace('"', "\"\"").as_bytes());
                self.buf.push(b'"');
            } else {
                self.buf.extend_from_slice(key.as_bytes());
            }
            first = false;
        }
        for c in 0..self.columns.len() {
            let v = self.values(c, r, column)?;
            let n = self.columns[c].per_row();
            for i in 0..n {
                if !first {
                    self.buf.push(b',');
                }
                first = false;
                self.value(v, i, OutputFormat::Csv);
            }
        }
        Ok(())
    }

    fn json_row<'a>(
        &mut self,
        r: usize,
        column: &impl Fn(usize) -> Option<OutputValues<'a>>,
    ) -> io::Result<()> {
        self.buf.push(b'{');
        if let Some((name, keys)) = &self.keys {
            let key = keys.get(self.written + r).map_or("", String::as_str);
            push_json_string(&mut self.buf, name);
            self.buf.push(b':');
            push_json_string(&mut self.buf, key);
        }
        for c in 0..self.columns.len() {
            let v = self.values(c, r, column)?;
            if c > 0 || self.keys.is_some() {
                self.buf.push(b',');
            }
            self.buf.push(b'"');
            self.buf.extend_from_slice(self.columns[c].name.as_bytes());
            self.buf.extend_from_slice(b"\":");
            let rank = self.columns[c].dims.len();
            self.nested(c, v, 0, 0, rank);
        }
        self.buf.push(b'}');
        Ok(())
    }

    /// The values of dimension `axis` from flat index `at` (nested arrays).
    fn nested(&mut self, c: usize, v: OutputValues<'_>, axis: usize, at: usize, rank: usize) {
        if axis == rank {
            self.value(v, at, OutputFormat::JsonLines);
            return;
        }
        let d = self.columns[c].dims[axis];
        let stride: usize = self.columns[c].dims[axis + 1..].iter().product();
        self.buf.push(b'[');
        for i in 0..d {
            if i > 0 {
                self.buf.push(b',');
            }
            self.nested(c, v, axis + 1, at + i * stride, rank);
        }
        self.buf.push(b']');
    }

    fn value(&mut self, v: OutputValues<'_>, i: usize, format: OutputFormat) {
        match v {
            OutputValues::I32(x) => {
                let s = self.ints.format(x[i]);
                self.buf.extend_from_slice(s.as_bytes());
            }
            OutputValues::F32(x) => {
                let x = x[i];
                let text: &str = if x.is_finite() {
                    self.floats.format_finite(x)
                } else {
                    match (format, x.is_nan(), x > 0.0) {
                        (OutputFormat::Csv, true, _) => "nan",
                        (OutputFormat::Csv, false, true) => "inf",
                        (OutputFormat::Csv, false, false) => "-inf",
                        (OutputFormat::JsonLines, true, _) => "NaN",
                        (OutputFormat::JsonLines, false, true) => "Infinity",
                        (OutputFormat::JsonLines, false, false) => "-Infinity",
                    }
                };
                self.buf.extend_from_slice(text.as_bytes());
            }
        }
    }
}

/// Appends `s` as a JSON string literal.
fn push_json_string(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    for ch in s.chars() {
        match ch {
            '"' => buf.extend_from_slice(b"\\\""),
            '\\' => buf.extend_from_slice(b"\\\\"),
            '\n' => buf.extend_from_slice(b"\\n"),
            '\r' => buf.extend_from_slice(b"\\r"),
            '\t' => buf.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let hex = b"0123456789abcdef";
                let v = c as usize;
                buf.extend_from_slice(b"\\u00");
                buf.push(hex[v >> 4]);
                buf.push(hex[v & 15]);
            }
            c => {
                let mut utf8 = [0u8; 4];
                buf.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(format: OutputFormat) -> String {
        let columns = vec![
            OutputColumn {
                name: "p".into(),
                dims: vec![2],
            },
            OutputColumn {
                name: "class".into(),
                dims: vec![],
            },
            OutputColumn {
                name: "m".into(),
                dims: vec![2, 2],
            },
        ];
        let mut w = PredictionWriter::new(Vec::new(), "out", format, columns);
        w.write_header().unwrap();
        let p = [0.1f32, 0.9, f32::NAN, f32::NEG_INFINITY];
        let class = [1i32, -7];
        let m = [1.0f32, 2.5e-8, 3.0, 4.0, 5.0, 6.0, 7.0, 1e30];
        w.write_batch(2, |c| match c {
            0 => Some(OutputValues::F32(&p)),
            1 => Some(OutputValues::I32(&class)),
            _ => Some(OutputValues::F32(&m)),
        })
        .unwrap();
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    #[test]
    fn csv_has_a_column_per_value() {
        assert_eq!(
            write(OutputFormat::Csv),
            "p_0,p_1,class,m_0_0,m_0_1,m_1_0,m_1_1\n\
             0.1,0.9,1,1.0,2.5e-8,3.0,4.0\n\
             nan,-inf,-7,5.0,6.0,7.0,1e30\n"
        );
    }

    #[test]
    fn json_lines_nest_arrays() {
        assert_eq!(
            write(OutputFormat::JsonLines),
            "{\"p\":[0.1,0.9],\"class\":1,\"m\":[[1.0,2.5e-8],[3.0,4.0]]}\n\
             {\"p\":[NaN,-Infinity],\"class\":-7,\"m\":[[5.0,6.0],[7.0,1e30]]}\n"
        );
    }

    #[test]
    fn a_short_output_is_an_error() {
        let columns = vec![OutputColumn {
            name: "p".into(),
            dims: vec![3],
        }];
        let mut w = PredictionWriter::new(Vec::new(), "out", OutputFormat::Csv, columns);
        let e = w
            .write_batch(2, |_| Some(OutputValues::F32(&[1.0; 5])))
            .unwrap_err();
        assert!(e.to_string().contains("`p` has fewer values"), "{e}");
    }
}
