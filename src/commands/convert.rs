//! `specc convert SPEC --data IN -o OUT`: a CSV file to a TFRecord file of
//! `tf.train.Example`s under the spec's parse spec, and back.
//!
//! Owns: the parse spec of a model's inputs ([`parse_spec`]: each raw
//! feature key the inputs read, with the type TF parses it as — `float32`
//! for numeric values, `int64` for ids and integer keys, `string` (bytes) for
//! string keys), and the two conversions. The direction is the output's:
//! `-o X.csv` (or `.csv.gz`) reads a TFRecord file (compression from
//! `--compression`, else recognised from its bytes) and writes CSV;
//! anything else reads CSV (gzip recognised from its bytes) and writes
//! TFRecord (compression from `--compression`, else from the name: `.gz`
//! GZIP, `.zlib` ZLIB).
//!
//! CSV → TFRecord: one Example per data row, with one feature per key of
//! the parse spec; a missing cell (empty, `""`, the spec's `na_value`, or
//! blank for a number, and no value in `column_defaults`) is left out of the
//! Example, so TF's defaults apply when it is parsed. The file is read by
//! the runtime's one CSV reader under the `data` item's CSV options
//! (`data::csv_file`: header, quoting, gzip, blank lines, field counts,
//! `column_defaults` and `filter` as `specc run` reads them) and each cell by the rule of the input that
//! reads its key (`data::text::TextRule`: a numeric column of shape k
//! gives k floats, a class id may be written `2.0`); the Example is
//! encoded by the runtime's one encoder (`io::example::encode_example_into`).
//! A key a column splits by `sep` is written as the cell's pieces (a
//! `bytes_list`, or an `int64_list` of the parsed pieces: the values the
//! column reads from the CSV cell), since a column never splits an Example
//! feature; so the TFRecord file reads as the CSV file does. A key a
//! numeric column reads through `decode_raw` or `parse_tensor` is written
//! as those bytes (`feature_column::BytesDecoder`: the cell's numbers, each
//! as its `out_type` stores it, raw or as a serialized `TensorProto` of the
//! column's shape), for the same reason.
//! TFRecord → CSV: a header of the keys, one row per Example; a feature
//! absent or empty is an empty cell; a feature with more than one value is
//! an error (a CSV cell holds one value), unless its key is split by `sep`:
//! then its values are joined by the separator (a space for `whitespace`),
//! an error if they would not split back into the same values; a decoded
//! key's bytes are decoded, their values written space-separated. Strings
//! are quoted when they hold
//! the delimiter, a quote or a line break.
//!
//! Invariants: both directions stream (one row or record in memory at a
//! time); bad input is an error naming the file, the line (CSV) or record
//! (TFRecord) and the column or feature; the output is written atomically
//! (the runtime's `io::atomic`), so a failure never leaves a partial
//! output behind.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use specc_compiler::model::Model;
use specc_runtime::data::columns::Cell;
use specc_runtime::data::csv_file::{ByteRecord, CsvFile};
use specc_runtime::data::text::{TextRule, TextValues};
use specc_runtime::data::{CsvReadOptions, DataError};
use specc_runtime::feature_column::{value_text, BytesDecoder, Sep};
use specc_runtime::io::atomic::{write_atomic, AtomicFile};
use specc_runtime::io::example::{encode_example_into, DType, Example, Feature, FeatureRef};
use specc_runtime::io::tfrecord::{open_reader, Compression, RecordReader, RecordWriter};

use specc_runtime::data::text::{parse_spec, ParseKey};

use super::report;
use crate::Failure;
use specc::spec::read_spec;

/// The options of `specc convert`.
pub struct ConvertOptions<'a> {
    pub data: &'a Path,
    pub output: &'a Path,
    /// `GZIP`, `ZLIB` or `NONE`/`""`.
    pub compression: Option<&'a str>,
}

/// Whether `-o` names a CSV file (the TFRecord → CSV direction).
fn is_csv_name(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".csv") || name.ends_with(".csv.gz")
}

pub fn run(spec: &Path, opts: &ConvertOptions<'_>) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let model: Model = specc_compiler::check(&src).map_err(|d| report(&d, &src))?;
    let keys = parse_spec(&model.input_specs()).map_err(|e| format!("{}: {e}", spec.display()))?;
    let compression = match opts.compression {
        None => None,
        Some(c) => Some(
            Compression::from_tf_name(&c.to_ascii_uppercase())
                .ok_or_else(|| format!("--compression must be GZIP, ZLIB or NONE, not '{c}'"))?,
        ),
    };
    let out = opts.output;
    let n = write_atomic(out, |tmp| {
        if is_csv_name(out) {
            let compression = match compression {
                Some(c) => c,
                None => crate::commands::inspect_tfrecord::looks_like_tfrecord(opts.data)
                    .unwrap_or(Compression::None),
            };
            tfrecord_to_csv(opts.data, compression, tmp, out, &keys)
        } else {
            let compression = compression.unwrap_or_else(|| Compression::from_path(out));
            let csv = model.data.source.csv_options().cloned().unwrap_or_default();
            csv_to_tfrecord(opts.data, tmp, compression, &keys, &csv)
        }
    })?;
    eprintln!(
        "{}: {n} {} from {}",
        out.display(),
        if is_csv_name(out) { "rows" } else { "records" },
        opts.data.display()
    );
    Ok(())
}

/// CSV → TFRecord; the number of records written. The file is read by the
/// runtime's one CSV reader under the `data` item's CSV options (`na_value`,
/// `column_defaults`, `filter`, ...: the rows `specc run` trains on) and
/// each key's cell typed by the rule of the input that reads it
/// ([`TextRule`]), as `specc run` reads it.
fn csv_to_tfrecord(
    data: &Path,
    out: &mut AtomicFile,
    compression: Compression,
    keys: &[ParseKey],
    options: &CsvReadOptions,
) -> Result<u64, String> {
    let file = data.display().to_string();
    let mut csv = CsvFile::open(data, &file, options).map_err(|e| e.to_string())?;
    let plan = csv
        .plan(&file, keys.iter().map(|k| std::slice::from_ref(&k.key)))
        .map_err(|e| e.to_string())?;
    let columns: Vec<usize> = plan.iter().map(|p| p[0]).collect();
    let dest = out.path().to_path_buf();
    let tmp = dest.as_path();
    let mut writer = RecordWriter::new(out, compression);
    // The keys in the order an Example's map is serialized (byte order).
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].key.as_bytes().cmp(keys[b].key.as_bytes()));
    let mut floats: Vec<Vec<f32>> = vec![Vec::new(); keys.len()];
    let mut ints: Vec<Vec<i64>> = vec![Vec::new(); keys.len()];
    let mut strings: Vec<Vec<Vec<u8>>> = vec![Vec::new(); keys.len()];
    // A decoded key's values, and their bytes.
    let mut decoded: Vec<Vec<f64>> = vec![Vec::new(); keys.len()];
    let mut encoded: Vec<Vec<u8>> = vec![Vec::new(); keys.len()];
    let mut kinds: Vec<(usize, Kind)> = Vec::with_capacity(keys.len());
    let mut record = ByteRecord::new();
    let mut scratch = ByteRecord::new();
    let mut bytes = Vec::new();
    let mut count = 0u64;
    while let Some(line) = csv
        .read_kept(&file, &mut record, &mut scratch)
        .map_err(|e| e.to_string())?
    {
        kinds.clear();
        for &j in &order {
            let k = &keys[j];
            let cell = record.get(columns[j]).unwrap_or(b"");
            let at = |e: String| DataError::at(&file, Some(line), Some(&k.key), e).to_string();
            if let Some((d, shape)) = &k.decode {
                let kind =
                    encode_cell(d, *shape, cell, &mut decoded[j], &mut encoded[j]).map_err(at)?;
                kinds.push((j, kind));
                continue;
            }
            let v = match &k.sep {
                None => k.rule.read(cell, &mut floats[j], &mut ints[j]),
                Some(sep) => k.rule.read_split(cell, sep, &mut strings[j], &mut ints[j]),
            }
            .map_err(at)?;
            kinds.push((j, Kind::of(v)));
        }
        let features = kinds.iter().filter_map(|&(j, kind)| {
            let f = match kind {
                Kind::Missing => return None,
                Kind::Floats => FeatureRef::Floats(&floats[j]),
                Kind::Int64s => FeatureRef::Int64s(&ints[j]),
                Kind::Bytes => FeatureRef::OneBytes(record.get(columns[j]).unwrap_or(b"")),
                Kind::BytesList => FeatureRef::Bytes(&strings[j]),
                Kind::Encoded => FeatureRef::OneBytes(&encoded[j]),
            };
            Some((keys[j].key.as_bytes(), f))
        });
        encode_example_into(features, &mut bytes);
        writer
            .write(&bytes)
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        count += 1;
    }
    writer
        .finish()
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    Ok(count)
}

/// A decoded key's cell as the bytes its column decodes: the numbers of the
/// cell as the column reads them from CSV (each stored as `out_type`
/// stores it), `shape` of them, encoded (`decode_raw`'s raw values,
/// `serialize_tensor`'s TensorProto); missing when the cell is blank.
fn encode_cell(
    d: &BytesDecoder,
    shape: usize,
    cell: &[u8],
    values: &mut Vec<f64>,
    bytes: &mut Vec<u8>,
) -> Result<Kind, String> {
    values.clear();
    let n = d.numbers(Cell::Text(cell), |_, x| {
        values.push(x);
        Ok(())
    })?;
    if n == 0 {
        return Ok(Kind::Missing);
    }
    if n != shape {
        return Err(format!("has {n} values, but the column's shape is {shape}"));
    }
    d.encode(values, bytes);
    Ok(Kind::Encoded)
}

/// What a row's cell gave its key ([`TextValues`] without the borrow of
/// the record, so the buffer of them is reused from row to row).
#[derive(Clone, Copy, Debug)]
enum Kind {
    Missing,
    Floats,
    Int64s,
    Bytes,
    BytesList,
    /// A decoded key's bytes (`decode_raw`, `serialize_tensor`).
    Encoded,
}

impl Kind {
    fn of(v: TextValues<'_>) -> Kind {
        match v {
            TextValues::Missing => Kind::Missing,
            TextValues::Floats => Kind::Floats,
            TextValues::Int64s => Kind::Int64s,
            TextValues::Bytes(_) => Kind::Bytes,
            TextValues::BytesList => Kind::BytesList,
        }
    }
}

/// A CSV field: quoted when it holds a delimiter, a quote or a line break.
fn write_field(w: &mut impl Write, s: &[u8]) -> std::io::Result<()> {
    if s.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r')) {
        w.write_all(b"\"")?;
        for part in s.split(|&c| c == b'"').enumerate() {
            if part.0 > 0 {
                w.write_all(b"\"\"")?;
            }
            w.write_all(part.1)?;
        }
        w.write_all(b"\"")
    } else {
        w.write_all(s)
    }
}

/// TFRecord → CSV; the number of rows written.
fn tfrecord_to_csv(
    data: &Path,
    compression: Compression,
    raw: &mut AtomicFile,
    out: &Path,
    keys: &[ParseKey],
) -> Result<u64, String> {
    let file = data.display();
    let f = File::open(data).map_err(|e| format!("cannot open {file}: {e}"))?;
    let mut reader = open_reader(BufReader::new(f), compression);
    let tmp = out;
    let wr = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
    if out.to_string_lossy().ends_with(".gz") {
        let mut g = flate2::write::GzEncoder::new(raw, flate2::Compression::default());
        let n = write_rows(&mut reader, &mut g, data, tmp, keys)?;
        g.finish().and_then(|f| f.flush()).map_err(wr)?;
        Ok(n)
    } else {
        let mut raw = raw;
        let n = write_rows(&mut reader, &mut raw, data, tmp, keys)?;
        raw.flush().map_err(wr)?;
        Ok(n)
    }
}

/// The header and one row per record.
fn write_rows(
    reader: &mut RecordReader<Box<dyn Read + '_>>,
    w: &mut impl Write,
    data: &Path,
    tmp: &Path,
    keys: &[ParseKey],
) -> Result<u64, String> {
    let file = data.display();
    let wr = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            w.write_all(b",").map_err(wr)?;
        }
        write_field(w, k.key.as_bytes()).map_err(wr)?;
    }
    w.write_all(b"\n").map_err(wr)?;
    let mut record = Vec::new();
    let mut count = 0u64;
    let mut text = String::new();
    while reader
        .read_into(&mut record)
        .map_err(|e| format!("{file}: record {count}: {e}"))?
    {
        let ex = Example::decode(&record, count as usize).map_err(|e| format!("{file}: {e}"))?;
        let at = |k: &ParseKey, what: String| {
            format!("{file}: record {count}, feature '{}': {what}", k.key)
        };
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                w.write_all(b",").map_err(wr)?;
            }
            let f = match ex.features.get(&k.key) {
                None | Some(Feature::Unset) => continue,
                Some(f) => f,
            };
            if let Some((d, _)) = &k.decode {
                text.clear();
                d.numbers(Cell::Feature(Some(f)), |i, x| {
                    if i > 0 {
                        text.push(' ');
                    }
                    value_text(d.out_type(), x, &mut text);
                    Ok(())
                })
                .map_err(|e| at(k, e))?;
                write_field(w, text.as_bytes()).map_err(wr)?;
                continue;
            }
            if let Some(sep) = &k.sep {
                let cell = joined(f, sep).map_err(|e| at(k, e))?;
                write_field(w, &cell).map_err(wr)?;
                continue;
            }
            if f.len() > 1 {
                return Err(at(
                    k,
                    format!(
                        "{} values; a CSV cell holds one, so multi-valued features cannot be written as CSV",
                        f.len()
                    ),
                ));
            }
            text.clear();
            use std::fmt::Write as _;
            match (f, k.dtype) {
                (Feature::FloatList(v), DType::Float32) => {
                    if let Some(x) = v.first() {
                        let _ = write!(text, "{x:?}");
                    }
                }
                (Feature::Int64List(v), DType::Int64) => {
                    if let Some(x) = v.first() {
                        let _ = write!(text, "{x}");
                    }
                }
                (Feature::BytesList(v), DType::String) => {
                    if let Some(s) = v.first() {
                        write_field(w, s).map_err(wr)?;
                    }
                    continue;
                }
                (f, dtype) => {
                    return Err(at(
                        k,
                        format!(
                            "the data type does not match: {} in the example, {} in the spec",
                            f.kind(),
                            dtype.tf_name()
                        ),
                    ))
                }
            }
            w.write_all(text.as_bytes()).map_err(wr)?;
        }
        w.write_all(b"\n").map_err(wr)?;
        count += 1;
    }
    Ok(count)
}

/// The CSV cell of a feature whose key a column splits by `sep`: its
/// values joined by the delimiter (a space for `whitespace`), checked to
/// split back into the very same values.
fn joined(f: &Feature, sep: &Sep) -> Result<Vec<u8>, String> {
    let glue: &[u8] = match sep {
        Sep::Whitespace => b" ",
        Sep::Delimiter(d) => d,
    };
    let mut cell = Vec::new();
    let values: Vec<Vec<u8>> = match f {
        Feature::BytesList(v) => v.clone(),
        Feature::Int64List(v) => v.iter().map(|x| x.to_string().into_bytes()).collect(),
        other => {
            return Err(format!(
                "expected a list to join by sep, found a {}",
                other.kind()
            ))
        }
    };
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            cell.extend_from_slice(glue);
        }
        cell.extend_from_slice(v);
    }
    let rule = match f {
        Feature::Int64List(_) => TextRule::Int64,
        _ => TextRule::String,
    };
    let (mut strings, mut ints) = (Vec::new(), Vec::new());
    rule.read_split(&cell, sep, &mut strings, &mut ints)?;
    let back: Vec<Vec<u8>> = match f {
        Feature::Int64List(_) => ints.iter().map(|x| x.to_string().into_bytes()).collect(),
        _ => strings,
    };
    if back != values {
        return Err(format!(
            "its {} value(s) do not survive being joined by sep = {} into one CSV cell \
             (a value holds the separator, or is empty)",
            values.len(),
            sep.spec_text()
        ));
    }
    Ok(cell)
}
