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
//! blank for a number) is left out of the Example, so TF's defaults apply
//! when it is parsed. The file is read by the runtime's one CSV reader
//! (`data::csv_file`: header, quoting, gzip, blank lines, field counts as
//! `specc run` reads them) and each cell by the rule of the input that
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
use specc_runtime::data::csv_file::{wrong_field_count, ByteRecord, CsvFile};
use specc_runtime::data::text::{TextRule, TextValues};
use specc_runtime::data::{DataError, InputKind, InputSpec};
use specc_runtime::feature_column::{
    make_parse_example_spec, value_text, BytesDecoder, FeatureInput, Sep,
};
use specc_runtime::io::atomic::{write_atomic, AtomicFile};
use specc_runtime::io::example::FeatureSpec;
use specc_runtime::io::example::{encode_example_into, DType, Example, Feature, FeatureRef};
use specc_runtime::io::tfrecord::{open_reader, Compression, RecordReader, RecordWriter};

use super::report;
use crate::Failure;
use specc::spec::read_spec;

/// One raw feature key of the parse spec: its type, the rule a CSV cell
/// of it is read by (that of the first input that reads it), and the `sep`
/// its columns split a cell by (the Example then holds the pieces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseKey {
    pub key: String,
    pub dtype: DType,
    pub rule: TextRule,
    pub sep: Option<Sep>,
    /// A numeric column reads the key's bytes (`decode_raw`,
    /// `parse_tensor`), `shape` values: the Example holds them encoded.
    pub decode: Option<(BytesDecoder, usize)>,
}

/// How a spec writes a key's `sep` in a message.
fn sep_text(sep: &Option<Sep>) -> String {
    match sep {
        None => "whole (no sep)".to_string(),
        Some(s) => format!("split by sep = {}", s.spec_text()),
    }
}

/// How a spec writes a key's bytes decoder in a message.
fn decode_text(d: &Option<(BytesDecoder, usize)>) -> String {
    match d {
        None => "as its values".to_string(),
        Some((d, _)) => format!("through {}", d.function()),
    }
}

/// The keys a model's inputs read, in the order the inputs first name them,
/// each once. A key read as two types, or split by two `sep`s (or split
/// and whole), is an error: an Example holds one list for it.
///
/// This is the `make_parse_example_spec` of the inputs (every key one value,
/// `FixedLenFeature([1])`-like); a multi-valued column's keys are the same.
pub fn parse_spec(inputs: &[InputSpec]) -> Result<Vec<ParseKey>, String> {
    let mut keys: Vec<ParseKey> = Vec::new();
    let mut add =
        |key: &str,
         dtype: DType,
         rule: TextRule,
         sep: Option<Sep>,
         decode: Option<(BytesDecoder, usize)>| match keys.iter().find(|k| k.key == key) {
            Some(k) if k.dtype != dtype => Err(format!(
                "the spec reads the feature '{key}' both as {} and as {}",
                k.dtype.tf_name(),
                dtype.tf_name()
            )),
            Some(k) if k.sep != sep => Err(format!(
                "the spec reads the feature '{key}' both {} and {}: \
                 a tf.train.Example holds one list of its values",
                sep_text(&k.sep),
                sep_text(&sep)
            )),
            Some(k) if k.decode != decode => Err(format!(
                "the spec reads the feature '{key}' both {} and {}: \
                 a tf.train.Example holds one list of its values",
                decode_text(&k.decode),
                decode_text(&decode)
            )),
            Some(_) => Ok(()),
            None => {
                keys.push(ParseKey {
                    key: key.to_string(),
                    dtype,
                    rule,
                    sep,
                    decode,
                });
                Ok(())
            }
        };
    // Keys in the order of the inputs; a feature column's by TF's parse spec
    // (`make_parse_example_spec`, one definition in the runtime), the other
    // inputs' by their element type.
    for input in inputs {
        match &input.feature {
            None => {
                let (dtype, rule) = match input.kind {
                    InputKind::Float => (DType::Float32, TextRule::Number),
                    InputKind::ClassId { .. } => (DType::Int64, TextRule::ClassId),
                };
                for c in &input.columns {
                    add(c, dtype, rule, None, None)?;
                }
            }
            Some(FeatureInput::LabelVocabulary { .. }) => {
                for c in &input.columns {
                    add(c, DType::String, TextRule::String, None, None)?;
                }
            }
            Some(column) => {
                let seps = column.key_seps();
                let decoded = column.decoded_columns();
                for (key, spec) in make_parse_example_spec(std::slice::from_ref(column))? {
                    let dtype = match spec {
                        FeatureSpec::FixedLen { dtype, .. }
                        | FeatureSpec::VarLen { dtype }
                        | FeatureSpec::FixedLenSequence { dtype, .. }
                        | FeatureSpec::Sparse { dtype, .. } => dtype,
                    };
                    let rule = match dtype {
                        DType::Float32 => TextRule::Numbers,
                        DType::Int64 => TextRule::Int64,
                        DType::String => TextRule::String,
                    };
                    let decode = decoded
                        .iter()
                        .find(|c| c.key == key)
                        .and_then(|c| Some((c.decode.clone()?, c.shape)));
                    let mut read = seps.iter().filter(|(k, _)| *k == key).peekable();
                    if read.peek().is_none() {
                        add(&key, dtype, rule, None, decode.clone())?;
                    }
                    for (_, sep) in read {
                        add(&key, dtype, rule, sep.clone(), decode.clone())?;
                    }
                }
            }
        }
    }
    Ok(keys)
}

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
            let na_value = csv_na_value(&model);
            csv_to_tfrecord(
                opts.data,
                tmp,
                compression,
                &keys,
                na_value.as_deref().map(str::as_bytes),
            )
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

/// The spec's CSV `na_value` (its streamed CSV source's), which `specc run`
/// and `specc predict` read as an empty cell.
fn csv_na_value(model: &Model) -> Option<String> {
    match &model.data.source {
        specc_runtime::data::Source::Stream(spec) => match &spec.format {
            specc_runtime::pipeline::Format::Csv { na_value } => na_value.clone(),
            _ => None,
        },
        _ => None,
    }
}

/// CSV → TFRecord; the number of records written. The file is read by the
/// runtime's one CSV reader and each key's cell typed by the rule of the
/// input that reads it ([`TextRule`]), as `specc run` reads it.
fn csv_to_tfrecord(
    data: &Path,
    out: &mut AtomicFile,
    compression: Compression,
    keys: &[ParseKey],
    na_value: Option<&[u8]>,
) -> Result<u64, String> {
    let file = data.display().to_string();
    let mut csv = CsvFile::open(data, &file).map_err(|e| e.to_string())?;
    let plan = csv
        .plan(&file, keys.iter().map(|k| std::slice::from_ref(&k.key)))
        .map_err(|e| e.to_string())?;
    let columns: Vec<usize> = plan.iter().map(|p| p[0]).collect();
    let fields = csv.header.len();
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
    let mut bytes = Vec::new();
    let mut count = 0u64;
    while let Some(line) = csv.read(&file, &mut record).map_err(|e| e.to_string())? {
        if record.len() != fields {
            return Err(wrong_field_count(&file, line, record.len(), fields).to_string());
        }
        kinds.clear();
        for &j in &order {
            let k = &keys[j];
            let cell = record.get(columns[j]).unwrap_or(b"");
            let cell = if na_value == Some(cell) {
                &b""[..]
            } else {
                cell
            };
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

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use specc_runtime::data::Normalizer;
    use specc_runtime::feature_column::NumericColumn;
    use specc_runtime::feature_column::{CategoricalColumn, CrossKey, KeyDType, Vocabulary};

    use super::*;

    fn input(columns: &[&str], kind: InputKind, feature: Option<FeatureInput>) -> InputSpec {
        InputSpec {
            name: "in".into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            kind,
            normalizer: Normalizer::None,
            feature,
        }
    }

    fn numeric(key: &str) -> NumericColumn {
        NumericColumn {
            key: key.into(),
            shape: 1,
            default_value: None,
            normalizer: None,
            decode: None,
        }
    }

    fn keys(inputs: &[InputSpec]) -> Vec<(String, &'static str)> {
        parse_spec(inputs)
            .unwrap()
            .into_iter()
            .map(|k| (k.key, k.dtype.tf_name()))
            .collect()
    }

    fn k(key: &str, dtype: &'static str) -> (String, &'static str) {
        (key.to_string(), dtype)
    }

    #[test]
    fn plain_inputs_are_float32_and_ids_int64_each_key_once() {
        let inputs = [
            input(&["y"], InputKind::ClassId { num_classes: None }, None),
            input(&["a", "b"], InputKind::Float, None),
            input(&["b", "a"], InputKind::Float, None),
        ];
        assert_eq!(
            keys(&inputs),
            [k("y", "int64"), k("a", "float32"), k("b", "float32")]
        );
    }

    #[test]
    fn feature_columns_read_their_raw_keys_with_tfs_types() {
        let size = NonZeroU64::new(10).unwrap();
        let hashed = CategoricalColumn::HashBucket {
            key: "city".into(),
            hash_bucket_size: size,
            dtype: KeyDType::String,
            values: Default::default(),
        };
        let crossed = CategoricalColumn::Crossed {
            keys: vec![
                CrossKey::Raw {
                    key: "ad".into(),
                    dtype: KeyDType::Int64,
                    sep: None,
                },
                CrossKey::Column(Box::new(CategoricalColumn::Bucketized {
                    source: numeric("age"),
                    boundaries: vec![18.0, 65.0],
                })),
            ],
            hash_bucket_size: size,
            hash_key: None,
        };
        let weighted = CategoricalColumn::Weighted {
            categorical: Box::new(CategoricalColumn::Vocabulary {
                key: "tag".into(),
                vocabulary: Vocabulary::Ints(vec![3, 4]),
                vocabulary_file: None,
                num_oov_buckets: 0,
                default_value: -1,
                values: Default::default(),
            }),
            weight_feature_key: "tag_w".into(),
        };
        let identity = CategoricalColumn::Identity {
            key: "id".into(),
            num_buckets: 5,
            default_value: None,
            values: Default::default(),
        };
        let ids = |c: &CategoricalColumn| FeatureInput::Ids {
            column: c.clone(),
            max_values: 1,
            check_range: false,
            prune_nonpositive_weights: false,
        };
        let float = InputKind::Float;
        let inputs = [
            input(
                &["label"],
                InputKind::ClassId {
                    num_classes: Some(2),
                },
                Some(FeatureInput::LabelVocabulary {
                    vocabulary: vec![b"No".to_vec(), b"Yes".to_vec()],
                }),
            ),
            input(&["x"], float, Some(FeatureInput::Dense(numeric("x")))),
            input(&["city"], float, Some(ids(&hashed))),
            input(
                &["city"],
                float,
                Some(FeatureInput::Weights {
                    column: hashed.clone(),
                    max_values: 1,
                }),
            ),
            input(&["ad", "age"], float, Some(ids(&crossed))),
            input(&["tag", "tag_w"], float, Some(ids(&weighted))),
            input(&["id"], float, Some(ids(&identity))),
        ];
        assert_eq!(
            keys(&inputs),
            [
                k("label", "string"),
                k("x", "float32"),
                k("city", "string"),
                k("ad", "int64"),
                k("age", "float32"),
                k("tag", "int64"),
                k("tag_w", "float32"),
                k("id", "int64"),
            ]
        );
    }

    #[test]
    fn a_key_read_as_two_types_is_an_error() {
        let inputs = [
            input(&["a"], InputKind::Float, None),
            input(&["a"], InputKind::ClassId { num_classes: None }, None),
        ];
        let e = parse_spec(&inputs).unwrap_err();
        assert!(e.contains("'a' both as float32 and as int64"), "{e}");
    }
}
