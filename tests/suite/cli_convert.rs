//! `specc convert`: CSV to TFRecord of tf.train.Example under a spec's
//! parse spec and back. TF's own file (`golden/examples*.tfrecord`) converts
//! to the CSV of the values `examples.json` records (keys, records and
//! values all from the JSON); a multi-valued feature is refused naming the
//! first record that has one. specc's conversions round-trip (plain, GZIP,
//! ZLIB), leave missing cells out of the Example, and bad rows are errors
//! naming the file, line and column, with no output left behind. A key a
//! column splits by `sep` converts to the list of its pieces and back.

use crate::cli;
use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use specc_runtime::io::example::{read_examples, Example, Feature};
use specc_runtime::io::tfrecord::Compression;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_convert")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn convert(dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli::specc(dir, &[&["convert"], args].concat())
}

/// A column name quoted for a spec (any name a golden draw may use).
fn quoted(name: &str) -> String {
    format!("{name:?}")
}

/// A spec whose label is the int column `label` and whose features are the
/// float columns `floats` (a softmax over `classes` classes).
fn spec(label: &str, classes: u64, floats: &[&str]) -> String {
    let floats: Vec<String> = floats.iter().map(|f| quoted(f)).collect();
    format!(
        "model conv\ndata csv(\"data.csv\")\nlabel y: int from {}\nfeatures {{\n  x = numeric({})\n}}\n\
         params {{\n  W: [{n}, {classes}] = zeros\n}}\nlogits = x @ W\n\
         loss = mean(sparse_softmax_cross_entropy(y, logits))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 2, steps = 1 }}\n",
        quoted(label),
        floats.join(", "),
        n = floats.len()
    )
}

/// A spec reading only the int column `label` (as the label and as ids;
/// `specc convert` does not look at the values, so any ids do).
fn label_only_spec(label: &str) -> String {
    format!(
        "model conv\ndata csv(\"data.csv\")\nlabel y: int from {k}\nfeatures {{\n  \
         ids = integer({k}, num_buckets = 2)\n}}\n\
         params {{\n  E: [2, 2] = zeros\n}}\n\
         logits = reshape(embedding_lookup(E, ids), [B, 2])\n\
         loss = mean(sparse_softmax_cross_entropy(y, logits))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 2, steps = 1 }}\n",
        k = quoted(label)
    )
}

fn examples_json() -> Json {
    common::golden("examples.json")
}

/// The key of the golden parse spec whose entry starts with `prefix` and
/// names `dtype` (e.g. `FixedLenFeature`, `tf.int64`).
fn golden_key(j: &Json, prefix: &str, dtype: &str) -> String {
    j["tf_parse_example_of_all_records"]["spec"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, v)| {
            let v = v.as_str().unwrap();
            v.starts_with(prefix) && v.contains(dtype)
        })
        .map(|(k, _)| k.clone())
        .unwrap_or_else(|| panic!("the golden spec has a {prefix} of {dtype}"))
}

/// Each golden record's values of an int64 feature (none when missing).
fn golden_ints(j: &Json, key: &str) -> Vec<Vec<i64>> {
    j["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match r["features"][key]["values"].as_array() {
            Some(v) => v.iter().map(|x| x.as_i64().unwrap()).collect(),
            None => Vec::new(),
        })
        .collect()
}

/// The CSV text of a header `key` (quoted when it must be) and one cell per
/// record: its one value, or empty.
fn csv_of(key: &str, values: &[Vec<i64>]) -> String {
    let header = if key.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", key.replace('"', "\"\""))
    } else {
        key.to_string()
    };
    let mut out = format!("{header}\n");
    for v in values {
        if let Some(x) = v.first() {
            out.push_str(&x.to_string());
        }
        out.push('\n');
    }
    out
}

fn tfs_file_converts_to_the_csv_of_its_values(file: &str, name: &str) {
    let j = examples_json();
    let key = golden_key(&j, "FixedLenFeature", "tf.int64");
    let want = golden_ints(&j, &key);
    let d = dir(name);
    std::fs::write(d.join("s.spec"), label_only_spec(&key)).unwrap();
    let input = common::golden_dir().join(file);
    let (code, _, err) = convert(
        &d,
        &["s.spec", "--data", input.to_str().unwrap(), "-o", "out.csv"],
    );
    match want.iter().position(|v| v.len() > 1) {
        None => {
            assert_eq!(code, 0, "{err}");
            let text = std::fs::read_to_string(d.join("out.csv")).unwrap();
            assert_eq!(text, csv_of(&key, &want));
        }
        // A draw with a longer FixedLenFeature: refused at its first record.
        Some(r) => {
            assert_eq!(code, 1, "{err}");
            assert!(
                err.contains(&format!("record {r}, feature '{key}'")),
                "{err}"
            );
        }
    }
}

#[test]
fn tfs_plain_file_converts_to_the_csv_of_its_values() {
    tfs_file_converts_to_the_csv_of_its_values("examples.tfrecord", "tf_plain");
}

#[test]
fn tfs_gzip_file_converts_to_the_csv_of_its_values() {
    tfs_file_converts_to_the_csv_of_its_values("examples.gz.tfrecord", "tf_gzip");
}

/// A golden float feature with several values in some record: refused,
/// naming the first such record and the feature.
#[test]
fn a_multi_valued_feature_of_tfs_file_is_refused_naming_record_and_feature() {
    let j = examples_json();
    let label = golden_key(&j, "FixedLenFeature", "tf.int64");
    let key = golden_key(&j, "VarLenFeature", "tf.float32");
    // The first record with several values of either key (the label's
    // column comes first in a row).
    let (first, which) = j["records"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| {
            [&label, &key].into_iter().find_map(|k| {
                r["features"][k.as_str()]["values"]
                    .as_array()
                    .is_some_and(|v| v.len() > 1)
                    .then(|| (r["index"].as_u64().unwrap(), k.clone()))
            })
        })
        .expect("a record with several values");
    let d = dir("tf_multi");
    std::fs::write(d.join("s.spec"), spec(&label, 2, &[&key])).unwrap();
    let input = common::golden_dir().join("examples.tfrecord");
    let (code, _, err) = convert(
        &d,
        &["s.spec", "--data", input.to_str().unwrap(), "-o", "out.csv"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("record {first}, feature '{which}'")),
        "{err}"
    );
    assert!(!d.join("out.csv").exists(), "no partial output");
}

const DATA: &str =
    "x0,note,x1,y\n1.5,\"a,b\",-2,0\n,x,3e-3,1\n0.25,,\" 7 \",2\n-0,\"q\"\"\",inf,1\n";

fn f(x: f32) -> Feature {
    Feature::FloatList(vec![x])
}

fn i(x: i64) -> Feature {
    Feature::Int64List(vec![x])
}

/// What `DATA` becomes: missing cells are left out.
fn want_examples() -> Vec<Example> {
    let rows: [&[(&str, Feature)]; 4] = [
        &[("x0", f(1.5)), ("x1", f(-2.0)), ("y", i(0))],
        &[("x1", f(3e-3)), ("y", i(1))],
        &[("x0", f(0.25)), ("x1", f(7.0)), ("y", i(2))],
        &[("x0", f(-0.0)), ("x1", f(f32::INFINITY)), ("y", i(1))],
    ];
    rows.iter()
        .map(|r| Example {
            features: r.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        })
        .collect()
}

fn round_trip(name: &str, compression: Option<&str>, out: &str, c: Compression) {
    let d = dir(name);
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let mut args = vec!["s.spec", "--data", "data.csv", "-o", out];
    if let Some(c) = compression {
        args.extend(["--compression", c]);
    }
    let (code, _, err) = convert(&d, &args);
    assert_eq!(code, 0, "{err}");
    let got = read_examples(&d.join(out), c).unwrap();
    assert_eq!(got.len(), 4);
    for (g, w) in got.iter().zip(want_examples()) {
        assert_eq!(g.features.len(), w.features.len(), "{g:?}");
        for (k, v) in &w.features {
            match (&g.features[k], v) {
                (Feature::FloatList(a), Feature::FloatList(b)) => {
                    assert_eq!(a[0].to_bits(), b[0].to_bits(), "{k}")
                }
                (a, b) => assert_eq!(a, b, "{k}"),
            }
        }
    }
    // And back: the spec's keys, missing cells empty.
    let (code, _, err) = convert(&d, &["s.spec", "--data", out, "-o", "back.csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("back.csv")).unwrap(),
        "y,x0,x1\n0,1.5,-2.0\n1,,0.003\n2,0.25,7.0\n1,-0.0,inf\n"
    );
}

#[test]
fn csv_to_tfrecord_and_back_plain() {
    round_trip("plain", None, "out.tfrecord", Compression::None);
}

#[test]
fn csv_to_tfrecord_and_back_gzip_by_flag() {
    round_trip("gzip_flag", Some("GZIP"), "out.tfrecord", Compression::Gzip);
}

#[test]
fn csv_to_tfrecord_and_back_gzip_by_name() {
    round_trip("gzip_name", None, "out.tfrecord.gz", Compression::Gzip);
}

#[test]
fn csv_to_tfrecord_and_back_zlib() {
    round_trip("zlib", Some("ZLIB"), "out.tfrecord", Compression::Zlib);
}

/// Runs a conversion of `data` that must fail with a message containing
/// every one of `want`, leaving no output.
fn fails(name: &str, data: &str, want: &[&str]) {
    let d = dir(name);
    std::fs::write(d.join("data.csv"), data).unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "out.tfrecord"]);
    assert_eq!(code, 1, "{err}");
    for w in want {
        assert!(err.contains(w), "{name}: {w:?} not in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("out"))
        .collect();
    assert!(left.is_empty(), "{name}: output left behind: {left:?}");
}

#[test]
fn a_bad_number_names_file_line_and_column() {
    fails(
        "bad_number",
        "x0,x1,y\n1,2,0\n1,abc,0\n",
        &["data.csv:3: column `x1`: cannot parse \"abc\" as a number"],
    );
}

#[test]
fn a_float_where_the_spec_reads_int64_is_an_error() {
    fails(
        "bad_int",
        "x0,x1,y\n1,2,0.5\n",
        &["data.csv:2: column `y`: an id must be a non-negative integer, got 0.5"],
    );
}

#[test]
fn a_row_with_too_few_fields_names_its_line() {
    fails(
        "short_row",
        "x0,x1,y\n1,2,0\n\n1,2\n",
        &["data.csv:4: the row has 2 fields but the header has 3"],
    );
}

/// A quote inside an unquoted field is data (as `specc run` reads it), so
/// here a number that does not parse.
#[test]
fn a_quote_inside_an_unquoted_number_names_line_and_column() {
    fails(
        "bad_quote",
        "x0,x1,y\n1,2,0\n1,2\"x,0\n",
        &["data.csv:3: column `x1`: cannot parse \"2\\\"x\" as a number"],
    );
}

#[test]
fn a_key_missing_from_the_header_is_named() {
    fails(
        "no_column",
        "x0,y\n1,0\n",
        &["data.csv: column `x1`: not found in the header; did you mean `x0`?"],
    );
}

#[test]
fn a_quoted_field_across_lines_counts_its_lines() {
    let d = dir("multiline");
    std::fs::write(
        d.join("data.csv"),
        "x0,note,x1,y\n1,\"two\nlines\",2,0\n1,x,bad,0\n",
    )
    .unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "o.tfrecord"]);
    assert_eq!(code, 1);
    assert!(err.contains("data.csv:4: column `x1`"), "{err}");
}

#[test]
fn a_bad_compression_flag_is_refused() {
    let d = dir("bad_flag");
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let (code, _, err) = convert(
        &d,
        &[
            "s.spec",
            "--data",
            "data.csv",
            "-o",
            "o.tfrecord",
            "--compression",
            "LZ4",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("--compression must be GZIP, ZLIB or NONE"),
        "{err}"
    );
}

#[test]
fn a_damaged_tfrecord_names_file_and_record() {
    let d = dir("damaged");
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "o.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let mut bytes = std::fs::read(d.join("o.tfrecord")).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 1;
    std::fs::write(d.join("o.tfrecord"), &bytes).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "o.tfrecord", "-o", "back.csv"]);
    assert_eq!(code, 1);
    assert!(err.contains("o.tfrecord: record 3"), "{err}");
    assert!(!d.join("back.csv").exists());
}

#[test]
fn gzip_csv_in_and_out() {
    use std::io::{Read, Write};
    let d = dir("gzip_csv");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(DATA.as_bytes()).unwrap();
    std::fs::write(d.join("data.csv.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(d.join("s.spec"), spec("y", 3, &["x0", "x1"])).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv.gz", "-o", "o.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let got = read_examples(&d.join("o.tfrecord"), Compression::None).unwrap();
    assert_eq!(got.len(), want_examples().len());
    let (code, _, err) = convert(&d, &["s.spec", "--data", "o.tfrecord", "-o", "back.csv.gz"]);
    assert_eq!(code, 0, "{err}");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(d.join("back.csv.gz")).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(
        text,
        "y,x0,x1\n0,1.5,-2.0\n1,,0.003\n2,0.25,7.0\n1,-0.0,inf\n"
    );
}

/// The values of `key` in each Example (one float each; absent: `None`).
fn floats_of(examples: &[Example], key: &str) -> Vec<Option<f32>> {
    examples
        .iter()
        .map(|e| match e.features.get(key) {
            None => None,
            Some(Feature::FloatList(v)) if v.len() == 1 => Some(v[0]),
            Some(other) => panic!("{key}: {other:?}"),
        })
        .collect()
}

/// A CSV that `specc convert` once read otherwise than `specc run` (it had
/// its own record reader, `tf.io.decode_csv`'s): a BOM and spaces around
/// the header's names, CRLF and a lone CR ending records, a blank line, a
/// quoted number, a quoted note with a delimiter, escaped quotes and a line
/// break, a quote inside an unquoted field, and a class id written `2.0`.
/// `specc run`'s loader and `specc convert`'s Examples now give the same
/// values, bit for bit.
#[test]
fn a_csv_reads_the_same_by_run_and_by_convert() {
    let d = dir("same_as_run");
    let csv = "\u{feff}x0, x1 ,note,y\r\n\
               1.5,\"2\",\"a,\"\"b\"\"\nc\",0\r\n\
               \r\n\
               -3,0.25,it's 5\"9,2.0\r\
               -0.5,  4 ,,1\n";
    std::fs::write(d.join("data.csv"), csv).unwrap();
    let text = spec("y", 3, &["x0", "x1"]);
    std::fs::write(d.join("s.spec"), &text).unwrap();
    let model = specc_compiler::build(&specc_grammar::SourceFile::new("s.spec", &text))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let ds = specc_runtime::data::load(&model.data_source(&d), &model.input_specs()).unwrap();
    let specc_runtime::data::Values::F32(x) = &ds.input("x").unwrap().values else {
        panic!("x is not float32");
    };
    let specc_runtime::data::Values::I32(y) = &ds.input("y").unwrap().values else {
        panic!("y is not int32");
    };

    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "o.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let got = read_examples(&d.join("o.tfrecord"), Compression::None).unwrap();
    assert_eq!(got.len(), ds.rows);
    let bits =
        |v: Vec<Option<f32>>| -> Vec<u32> { v.iter().map(|x| x.unwrap().to_bits()).collect() };
    let run_bits =
        |c: usize| -> Vec<u32> { x.iter().skip(c).step_by(2).map(|v| v.to_bits()).collect() };
    assert_eq!(bits(floats_of(&got, "x0")), run_bits(0));
    assert_eq!(bits(floats_of(&got, "x1")), run_bits(1));
    let labels: Vec<i64> = got
        .iter()
        .map(|e| match &e.features["y"] {
            Feature::Int64List(v) => v[0],
            other => panic!("y: {other:?}"),
        })
        .collect();
    assert_eq!(labels, y.iter().map(|&v| i64::from(v)).collect::<Vec<_>>());
    assert_eq!(labels, [0, 2, 1]);
}

/// The spec's `na_value` is a missing cell for `specc convert` as for
/// `specc run`: left out of the Example.
#[test]
fn the_specs_na_value_is_a_missing_cell() {
    let d = dir("na_value");
    std::fs::write(d.join("data.csv"), "x0,x1,y\n1,NA,0\nNA,2,1\n").unwrap();
    let text = spec("y", 3, &["x0", "x1"]).replace(
        "data csv(\"data.csv\")",
        "data csv(\"data.csv\", na_value = \"NA\")",
    );
    std::fs::write(d.join("s.spec"), text).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "o.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let got = read_examples(&d.join("o.tfrecord"), Compression::None).unwrap();
    assert_eq!(floats_of(&got, "x0"), [Some(1.0), None]);
    assert_eq!(floats_of(&got, "x1"), [None, Some(2.0)]);
}

/// A bad cell after CRLF line ends and a blank line: `specc run`'s loader
/// and `specc convert` name the same line, the one the row is on (the
/// reader once numbered a record by the line where the previous one ended).
#[test]
fn a_bad_cell_is_named_at_its_line_by_run_and_by_convert() {
    let d = dir("crlf_line");
    std::fs::write(d.join("data.csv"), "x0,x1,y\r\n1,2,0\r\n\r\n1,abc,0\r\n").unwrap();
    let text = spec("y", 3, &["x0", "x1"]);
    std::fs::write(d.join("s.spec"), &text).unwrap();
    let want = "data.csv:4: column `x1`: cannot parse \"abc\" as a number";
    let model = specc_compiler::build(&specc_grammar::SourceFile::new("s.spec", &text))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let e = specc_runtime::data::load(&model.data_source(&d), &model.input_specs()).unwrap_err();
    assert!(e.to_string().ends_with(want), "{e}");
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "o.tfrecord"]);
    assert_eq!(code, 1);
    assert!(err.contains(want), "{err}");
}

/// A spec whose columns split `text` by whitespace and `g` (int64s) by `|`.
fn split_spec(text_sep: &str) -> String {
    format!(
        "model conv\ndata csv(\"data.csv\")\nlabel y: int\nfeatures {{\n  \
         words = categorical_column_with_hash_bucket(text, 10, max_values = 4{text_sep})\n  \
         genres = categorical_column_with_identity(g, 5, sep = \"|\", max_values = 3)\n  \
         wide = linear_model(words, genres)\n}}\n\
         loss = mean(sigmoid_cross_entropy(cast(y, float32), reshape(wide, [B])))\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 2, steps = 1 }}\n"
    )
}

/// A key a column splits by `sep` becomes the list of the cell's pieces
/// (a column never splits an Example feature), and joins back.
#[test]
fn split_keys_convert_to_their_pieces_and_back() {
    let d = dir("split");
    std::fs::write(
        d.join("data.csv"),
        "text,g,y\n\" good  movie\",1| 3,0\n,,1\nbad,4,0\n",
    )
    .unwrap();
    std::fs::write(d.join("s.spec"), split_spec(", sep = whitespace")).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "out.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let got = read_examples(&d.join("out.tfrecord"), Compression::None).unwrap();
    let bytes = |v: &[&str]| Feature::BytesList(v.iter().map(|s| s.as_bytes().to_vec()).collect());
    let want: [&[(&str, Feature)]; 3] = [
        &[
            ("text", bytes(&["good", "movie"])),
            ("g", Feature::Int64List(vec![1, 3])),
            ("y", i(0)),
        ],
        &[("y", i(1))],
        &[("text", bytes(&["bad"])), ("g", i(4)), ("y", i(0))],
    ];
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.features.len(), w.len(), "{g:?}");
        for (k, v) in w {
            assert_eq!(&g.features[*k], v, "{k}");
        }
    }
    let (code, _, err) = convert(&d, &["s.spec", "--data", "out.tfrecord", "-o", "back.csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("back.csv")).unwrap(),
        "y,g,text\n0,1|3,good movie\n1,,\n0,4,bad\n"
    );
    // A value holding the separator cannot be one piece of a cell: the
    // same text converted whole, then read back split, is refused.
    std::fs::write(d.join("whole.spec"), split_spec("")).unwrap();
    let (code, _, err) = convert(
        &d,
        &["whole.spec", "--data", "data.csv", "-o", "w.tfrecord"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = convert(&d, &["s.spec", "--data", "w.tfrecord", "-o", "w.csv"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("record 0, feature 'text': its 1 value(s) do not survive being joined by sep = whitespace"),
        "{err}"
    );
}

/// One key read whole by one column and split by another: an Example
/// holds one list for it, so the conversion is refused naming both.
#[test]
fn a_key_read_whole_and_split_is_refused() {
    let d = dir("split_conflict");
    std::fs::write(d.join("data.csv"), "text,g,y\na b,1,0\n").unwrap();
    let spec = split_spec(", sep = whitespace")
        .replace(
            "  wide = linear_model(words, genres)",
            "  title = categorical_column_with_hash_bucket(text, 10)\n  \
             wide = linear_model(words, genres)\n  whole = linear_model(title)",
        )
        .replace("reshape(wide, [B])", "reshape(wide + whole, [B])");
    std::fs::write(d.join("s.spec"), spec).unwrap();
    let (code, _, err) = convert(&d, &["s.spec", "--data", "data.csv", "-o", "out.tfrecord"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("reads the feature 'text' both")
            && err.contains("split by sep = whitespace")
            && err.contains("whole (no sep)"),
        "{err}"
    );
}
