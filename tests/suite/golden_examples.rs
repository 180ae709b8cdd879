//! tf.train.Example records against TensorFlow's: `examples.json` says what
//! TF wrote into `examples.tfrecord` (plain) and `examples.gz.tfrecord`
//! (GZIP) — each record's features, kinds and values, its serialized bytes,
//! offset and CRCs — and what `tf.io.parse_example` returned for a parse
//! spec over all records. Every name, value, kind, shape and spec is taken
//! from the JSON (another draw of TF's numbers has other values under the
//! same keys). Then specc's own files: written plain/GZIP/ZLIB and read
//! back, byte-equal to TF's where the format fixes the bytes, and damaged
//! copies that must fail naming the file and the record.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{golden, golden_dir};
use serde_json::Value as Json;
use specc_runtime::io::crc::masked_crc32c;
use specc_runtime::io::example::{
    parse_example, read_examples, DType, Example, Feature, FeatureSpec, Parsed, Values,
};
use specc_runtime::io::tfrecord::{self, Compression, RecordWriter};

fn examples_json() -> Json {
    golden("examples.json")
}

fn records(j: &Json) -> &Vec<Json> {
    j["records"].as_array().expect("records")
}

fn plain_file() -> PathBuf {
    golden_dir().join("examples.tfrecord")
}

fn gzip_file() -> PathBuf {
    golden_dir().join("examples.gz.tfrecord")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "specc-golden-examples-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn base64(s: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = alphabet.iter().position(|&a| a == c).expect("base64") as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn f32_of(v: &Json) -> f32 {
    common::num(v) as f32
}

fn i64_of(v: &Json) -> i64 {
    v.as_i64().expect("int64 value")
}

/// A string value of the JSON: text, or `{"hex": ...}` for non-UTF-8 bytes.
fn bytes_of(v: &Json) -> Vec<u8> {
    match v {
        Json::String(s) => s.as_bytes().to_vec(),
        other => hex(other["hex"].as_str().expect("hex bytes")),
    }
}

/// The feature as the JSON records what TF wrote.
fn feature_of(f: &Json) -> Feature {
    let vals = f["values"].as_array().expect("values");
    match f["kind"].as_str().expect("kind") {
        "float_list" => Feature::FloatList(vals.iter().map(f32_of).collect()),
        "int64_list" => Feature::Int64List(vals.iter().map(i64_of).collect()),
        "bytes_list" => Feature::BytesList(
            f["values_hex"]
                .as_array()
                .expect("values_hex")
                .iter()
                .map(|h| hex(h.as_str().expect("hex")))
                .collect(),
        ),
        other => panic!("unknown kind {other}"),
    }
}

/// The Example as the JSON records it (built from the JSON, not decoded).
fn example_of(r: &Json) -> Example {
    Example {
        features: r["features"]
            .as_object()
            .expect("features")
            .iter()
            .map(|(k, f)| (k.clone(), feature_of(f)))
            .collect(),
    }
}

fn golden_examples(j: &Json) -> Vec<Example> {
    records(j).iter().map(example_of).collect()
}

fn same_floats(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a.to_bits() == b.to_bits())
}

#[test]
fn every_record_decodes_to_what_tf_wrote() {
    let j = examples_json();
    let got = read_examples(&plain_file(), Compression::None).expect("read");
    assert_eq!(got.len(), records(&j).len(), "record count");
    for (r, ex) in records(&j).iter().zip(&got) {
        let i = r["index"].as_u64().expect("index");
        let want = example_of(r);
        assert_eq!(
            ex.features.keys().collect::<Vec<_>>(),
            want.features.keys().collect::<Vec<_>>(),
            "record {i}: feature names"
        );
        for (name, w) in &want.features {
            let g = &ex.features[name];
            assert_eq!(g.kind(), w.kind(), "record {i} feature {name}: kind");
            match (g, w) {
                (Feature::FloatList(a), Feature::FloatList(b)) => {
                    assert!(
                        same_floats(a, b),
                        "record {i} feature {name}: {a:?} vs {b:?}"
                    )
                }
                _ => assert_eq!(g, w, "record {i} feature {name}"),
            }
        }
        for m in r["missing_features"].as_array().expect("missing") {
            let m = m.as_str().expect("name");
            assert!(
                !ex.features.contains_key(m),
                "record {i}: {m} is missing in TF's"
            );
        }
    }
}

#[test]
fn the_gzip_file_holds_the_plain_files_records() {
    let plain = tfrecord::read_file(&plain_file(), Compression::None).expect("plain");
    let gz = tfrecord::read_file(&gzip_file(), Compression::Gzip).expect("gzip");
    assert_eq!(gz, plain);
    let j = examples_json();
    let header = hex(j["files"]["examples.gz.tfrecord"]["gzip_header_hex"]
        .as_str()
        .expect("gzip_header_hex"));
    let bytes = std::fs::read(gzip_file()).expect("gz bytes");
    assert_eq!(&bytes[..header.len()], &header[..], "TF's gzip header");
}

#[test]
fn records_sit_at_tfs_offsets_with_tfs_bytes_and_crcs() {
    let j = examples_json();
    let bytes = std::fs::read(plain_file()).expect("plain bytes");
    assert_eq!(
        bytes.len() as u64,
        j["files"]["examples.tfrecord"]["size"]
            .as_u64()
            .expect("size")
    );
    for r in records(&j) {
        let i = r["index"].as_u64().expect("index");
        let off = r["file_offset"].as_u64().expect("offset") as usize;
        let len = r["serialized_length"].as_u64().expect("length") as usize;
        let data = base64(r["serialized_base64"].as_str().expect("base64"));
        assert_eq!(data.len(), len, "record {i}: length");
        assert_eq!(
            &bytes[off..off + 8],
            &(len as u64).to_le_bytes(),
            "record {i}: length field"
        );
        assert_eq!(
            u64::from(masked_crc32c(&bytes[off..off + 8])),
            r["length_masked_crc32c"].as_u64().expect("crc"),
            "record {i}: length CRC"
        );
        assert_eq!(
            &bytes[off + 12..off + 12 + len],
            &data[..],
            "record {i}: data"
        );
        assert_eq!(
            u64::from(masked_crc32c(&data)),
            r["data_masked_crc32c"].as_u64().expect("crc"),
            "record {i}: data CRC"
        );
    }
}

#[test]
fn our_serialization_of_tfs_examples_is_tfs_bytes() {
    let j = examples_json();
    for r in records(&j) {
        let i = r["index"].as_u64().expect("index");
        let data = base64(r["serialized_base64"].as_str().expect("base64"));
        // Built from the JSON: TF's deterministic serialization sorts map keys.
        assert_eq!(example_of(r).encode(), data, "record {i}: from the JSON");
        // And decoding then encoding changes nothing.
        let decoded = Example::decode(&data, i as usize).expect("decode");
        assert_eq!(decoded.encode(), data, "record {i}: decode → encode");
    }
}

#[test]
fn our_plain_file_of_tfs_examples_is_tfs_file() {
    let j = examples_json();
    let mut w = RecordWriter::new(Vec::new(), Compression::None);
    for ex in golden_examples(&j) {
        w.write(&ex.encode()).expect("write");
    }
    let ours = w.finish().expect("finish");
    assert_eq!(ours, std::fs::read(plain_file()).expect("plain bytes"));
}

fn round_trip(c: Compression) {
    let j = examples_json();
    let want = golden_examples(&j);
    let path = scratch(c.tf_name()).join("examples.tfrecord");
    let file = std::fs::File::create(&path).expect("create");
    let mut w = RecordWriter::new(file, c);
    for ex in &want {
        w.write(&ex.encode()).expect("write");
    }
    w.finish().expect("finish");
    let got = read_examples(&path, c).expect("read back");
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.encode(), w.encode(), "record {i}");
    }
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

#[test]
fn round_trip_plain() {
    round_trip(Compression::None);
}

#[test]
fn round_trip_gzip() {
    round_trip(Compression::Gzip);
}

#[test]
fn round_trip_zlib() {
    round_trip(Compression::Zlib);
}

/// TF's spec text, e.g. `VarLenFeature(tf.float32)`, `FixedLenFeature([1], tf.int64)`.
fn feature_spec(text: &str) -> FeatureSpec {
    let (ctor, args) = text.split_once('(').expect("spec call");
    let args = args.strip_suffix(')').expect("spec call");
    match ctor {
        "VarLenFeature" => FeatureSpec::VarLen {
            dtype: DType::from_tf_name(args.trim()).expect("dtype"),
        },
        "FixedLenFeature" => {
            let (shape, dtype) = args.rsplit_once(',').expect("shape, dtype");
            let shape = shape.trim().trim_start_matches('[').trim_end_matches(']');
            FeatureSpec::FixedLen {
                shape: shape
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse().expect("dim"))
                    .collect(),
                dtype: DType::from_tf_name(dtype.trim()).expect("dtype"),
                default: None,
            }
        }
        other => panic!("spec {other} not in this test"),
    }
}

fn golden_spec(j: &Json) -> BTreeMap<String, FeatureSpec> {
    j["tf_parse_example_of_all_records"]["spec"]
        .as_object()
        .expect("spec")
        .iter()
        .map(|(k, v)| (k.clone(), feature_spec(v.as_str().expect("spec text"))))
        .collect()
}

fn assert_values(name: &str, got: &Values, want: &[Json]) {
    match got {
        Values::Float32(g) => {
            let w: Vec<f32> = want.iter().map(f32_of).collect();
            assert!(same_floats(g, &w), "{name}: {g:?} vs {w:?}");
        }
        Values::Int64(g) => assert_eq!(g, &want.iter().map(i64_of).collect::<Vec<_>>(), "{name}"),
        Values::String(g) => {
            assert_eq!(g, &want.iter().map(bytes_of).collect::<Vec<_>>(), "{name}")
        }
    }
}

fn flatten(v: &Json, out: &mut Vec<Json>, shape: &mut Vec<usize>, depth: usize) {
    match v {
        Json::Array(a) => {
            if shape.len() == depth {
                shape.push(a.len());
            }
            for x in a {
                flatten(x, out, shape, depth + 1);
            }
        }
        x => out.push(x.clone()),
    }
}

fn parsed_by_us() -> (Json, BTreeMap<String, Parsed>) {
    let j = examples_json();
    let exs = read_examples(&plain_file(), Compression::None).expect("read");
    let got = parse_example(&exs, &golden_spec(&j)).expect("parse_example");
    (j, got)
}

#[test]
fn parse_example_var_len_features_are_tfs_sparse_tensors() {
    let (j, got) = parsed_by_us();
    let parsed = &j["tf_parse_example_of_all_records"]["parsed"];
    let mut seen = 0;
    for (name, want) in parsed.as_object().expect("parsed") {
        if want["kind"] != "SparseTensor" {
            continue;
        }
        seen += 1;
        let g = &got[name];
        assert!(matches!(g, Parsed::Sparse { .. }), "{name}: sparse");
        let indices: Vec<[usize; 2]> = want["indices"]
            .as_array()
            .expect("indices")
            .iter()
            .map(|ix| {
                let ix = ix.as_array().expect("index pair");
                [
                    ix[0].as_u64().expect("i") as usize,
                    ix[1].as_u64().expect("j") as usize,
                ]
            })
            .collect();
        assert_eq!(g.sparse_indices(), indices, "{name}: indices");
        let shape: Vec<usize> = want["dense_shape"]
            .as_array()
            .expect("dense_shape")
            .iter()
            .map(|d| d.as_u64().expect("dim") as usize)
            .collect();
        assert_eq!(
            g.sparse_dense_shape().to_vec(),
            shape,
            "{name}: dense_shape"
        );
        assert_values(name, g.values(), want["values"].as_array().expect("values"));
    }
    assert!(seen > 0, "the golden spec has VarLenFeatures");
}

#[test]
fn parse_example_fixed_len_features_are_tfs_dense_tensors() {
    let (j, got) = parsed_by_us();
    let parsed = &j["tf_parse_example_of_all_records"]["parsed"];
    let mut seen = 0;
    for (name, want) in parsed.as_object().expect("parsed") {
        if want["kind"] != "dense" {
            continue;
        }
        seen += 1;
        let (mut flat, mut shape) = (Vec::new(), Vec::new());
        flatten(&want["values"], &mut flat, &mut shape, 0);
        match &got[name] {
            Parsed::Dense { shape: s, values } => {
                assert_eq!(s, &shape, "{name}: shape");
                assert_values(name, values, &flat);
            }
            other => panic!("{name}: dense, not {other:?}"),
        }
    }
    assert!(seen > 0, "the golden spec has FixedLenFeatures");
}

/// A record lacking a feature (from `missing_features`) and that feature's
/// dtype and length where another record has it.
fn a_missing_feature(j: &Json) -> (usize, String, Feature) {
    let exs = golden_examples(j);
    for r in records(j) {
        for m in r["missing_features"].as_array().expect("missing") {
            let m = m.as_str().expect("name");
            if let Some(f) = exs.iter().filter_map(|e| e.features.get(m)).next() {
                return (
                    r["index"].as_u64().expect("index") as usize,
                    m.to_string(),
                    f.clone(),
                );
            }
        }
    }
    panic!("no record of the golden set lacks a feature another has");
}

fn dtype_of(f: &Feature) -> DType {
    match f {
        Feature::FloatList(_) | Feature::Unset => DType::Float32,
        Feature::Int64List(_) => DType::Int64,
        Feature::BytesList(_) => DType::String,
    }
}

#[test]
fn a_missing_fixed_len_feature_without_default_is_an_error_naming_record_and_feature() {
    let j = examples_json();
    let (record, name, f) = a_missing_feature(&j);
    let exs = golden_examples(&j);
    let spec = BTreeMap::from([(
        name.clone(),
        FeatureSpec::FixedLen {
            shape: vec![f.len()],
            dtype: dtype_of(&f),
            default: None,
        },
    )]);
    // The records before it given the feature at the right length: the
    // error must be the missing one.
    let mut exs = exs[..=record].to_vec();
    for ex in &mut exs[..record] {
        ex.features.insert(name.clone(), f.clone());
    }
    let e = parse_example(&exs, &spec).expect_err("an error");
    let text = e.to_string();
    assert_eq!(e.feature.as_deref(), Some(name.as_str()), "{text}");
    assert_eq!(e.record, Some(record), "{text}");
    assert!(text.contains("missing"), "{text}");
    assert!(
        text.contains(&name) && text.contains(&format!("record {record}")),
        "{text}"
    );
}

#[test]
fn a_missing_fixed_len_feature_takes_the_default() {
    let j = examples_json();
    let (record, name, f) = a_missing_feature(&j);
    let exs = [golden_examples(&j).swap_remove(record)];
    let default = match &f {
        Feature::FloatList(v) => Values::Float32(v.iter().map(|x| x + 1.0).collect()),
        Feature::Int64List(v) => Values::Int64(v.iter().map(|x| x.wrapping_add(1)).collect()),
        Feature::BytesList(v) => {
            Values::String(v.iter().map(|b| [b, &b"!"[..]].concat()).collect())
        }
        Feature::Unset => Values::Float32(Vec::new()),
    };
    let spec = BTreeMap::from([(
        name.clone(),
        FeatureSpec::FixedLen {
            shape: vec![f.len()],
            dtype: dtype_of(&f),
            default: Some(default.clone()),
        },
    )]);
    let got = parse_example(&exs, &spec).expect("parse");
    assert_eq!(
        got[&name],
        Parsed::Dense {
            shape: vec![1, f.len()],
            values: default
        }
    );
}

#[test]
fn a_fixed_len_feature_of_the_wrong_length_is_an_error_naming_record_and_feature() {
    let j = examples_json();
    let exs = golden_examples(&j);
    // The first feature whose length differs between two records.
    for ex in &exs {
        for (name, f) in &ex.features {
            if let Some((k, _)) = exs
                .iter()
                .enumerate()
                .find(|(_, e)| e.features.get(name).is_some_and(|g| g.len() != f.len()))
            {
                let spec = BTreeMap::from([(
                    name.clone(),
                    FeatureSpec::FixedLen {
                        shape: vec![f.len()],
                        dtype: dtype_of(f),
                        default: Some(match dtype_of(f) {
                            DType::Float32 => Values::Float32(vec![0.0; f.len()]),
                            DType::Int64 => Values::Int64(vec![0; f.len()]),
                            DType::String => Values::String(vec![Vec::new(); f.len()]),
                        }),
                    },
                )]);
                let pair = [ex.clone(), exs[k].clone()];
                let e = parse_example(&pair, &spec).expect_err("wrong length");
                assert_eq!(
                    (e.record, e.feature.as_deref()),
                    (Some(1), Some(name.as_str())),
                    "{e}"
                );
                return;
            }
        }
    }
    panic!("no feature of the golden set changes length between records");
}

/// `bytes` written to a scratch file; the error reading it as Examples.
fn read_damaged(tag: &str, bytes: &[u8], c: Compression) -> (PathBuf, Option<String>) {
    let path = scratch(tag).join("damaged.tfrecord");
    std::fs::write(&path, bytes).expect("write");
    let r = read_examples(&path, c).err().map(|e| e.to_string());
    (path, r)
}

fn assert_names(path: &Path, err: &str, record: usize) {
    assert!(
        err.contains(&path.display().to_string()),
        "names the file: {err}"
    );
    assert!(
        err.contains(&format!("record {record}")),
        "names record {record}: {err}"
    );
}

#[test]
fn a_flipped_bit_in_any_record_is_an_error_naming_file_and_record() {
    let j = examples_json();
    let bytes = std::fs::read(plain_file()).expect("plain bytes");
    for r in records(&j) {
        let i = r["index"].as_u64().expect("index") as usize;
        let off = r["file_offset"].as_u64().expect("offset") as usize;
        let len = r["serialized_length"].as_u64().expect("length") as usize;
        // In the length, the length CRC, the data and the data CRC.
        for at in [off, off + 9, off + 12 + len / 2, off + 12 + len + 1] {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            let (path, err) = read_damaged("flip", &b, Compression::None);
            assert_names(&path, &err.expect("an error"), i);
        }
    }
}

#[test]
fn a_truncated_file_is_an_error_naming_file_and_record() {
    let j = examples_json();
    let bytes = std::fs::read(plain_file()).expect("plain bytes");
    for r in records(&j) {
        let i = r["index"].as_u64().expect("index") as usize;
        let off = r["file_offset"].as_u64().expect("offset") as usize;
        let len = r["serialized_length"].as_u64().expect("length") as usize;
        for cut in [off + 5, off + 12 + len / 2, off + 12 + len + 2] {
            let (path, err) = read_damaged("cut", &bytes[..cut], Compression::None);
            assert_names(&path, &err.expect("an error"), i);
        }
    }
}

#[test]
fn a_damaged_gzip_file_is_an_error_naming_the_file() {
    let bytes = std::fs::read(gzip_file()).expect("gz bytes");
    let n = bytes.len();
    // Bad magic, a flipped byte in the deflate body, a bad CRC in the
    // trailer, a bad length in the trailer, a truncated body.
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    for (tag, at) in [
        ("magic", 0),
        ("body", n / 2),
        ("crc", n - 6),
        ("isize", n - 2),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x55;
        cases.push((tag, b));
    }
    cases.push(("truncated", bytes[..n / 2].to_vec()));
    cases.push(("no-trailer", bytes[..n - 8].to_vec()));
    for (tag, b) in cases {
        let (path, err) = read_damaged(tag, &b, Compression::Gzip);
        let err = err.unwrap_or_else(|| panic!("{tag}: no error"));
        assert!(err.contains(&path.display().to_string()), "{tag}: {err}");
        assert!(err.contains("record "), "{tag}: names the record: {err}");
    }
}

#[test]
fn the_plain_file_read_as_gzip_is_an_error() {
    let (path, err) = read_damaged(
        "not-gzip",
        &std::fs::read(plain_file()).expect("plain bytes"),
        Compression::Gzip,
    );
    assert_names(&path, &err.expect("an error"), 0);
}

/// `parse_single_example` of each record equals that record's row of TF's
/// batch: dense values of the row (the spec's shape), a VarLenFeature's
/// values of the row with positions `[j]` and `dense_shape` its count.
#[test]
fn parse_single_example_of_each_record_is_its_row_of_tfs_batch() {
    let j = examples_json();
    let spec = golden_spec(&j);
    let exs = read_examples(&plain_file(), Compression::None).expect("read");
    let parsed = &j["tf_parse_example_of_all_records"]["parsed"];
    assert_eq!(exs.len(), records(&j).len());
    for (r, ex) in exs.iter().enumerate() {
        let got = specc_runtime::io::example::parse_single_example(ex, &spec)
            .unwrap_or_else(|e| panic!("record {r}: {e}"));
        for (name, want) in parsed.as_object().expect("parsed") {
            let g = &got[name];
            if want["kind"] == "SparseTensor" {
                let rows: Vec<usize> = want["indices"]
                    .as_array()
                    .expect("indices")
                    .iter()
                    .enumerate()
                    .filter(|(_, ix)| ix[0].as_u64() == Some(r as u64))
                    .map(|(k, _)| k)
                    .collect();
                let values: Vec<Json> = rows.iter().map(|&k| want["values"][k].clone()).collect();
                let positions: Vec<usize> = rows
                    .iter()
                    .map(|&k| want["indices"][k][1].as_u64().expect("j") as usize)
                    .collect();
                match g {
                    Parsed::SparseTensor {
                        indices,
                        values: v,
                        dense_shape,
                    } => {
                        assert_eq!(indices, &positions, "record {r}, {name}: indices");
                        assert_eq!(dense_shape, &vec![rows.len()], "record {r}, {name}");
                        assert_values(name, v, &values);
                    }
                    other => panic!("record {r}, {name}: sparse, not {other:?}"),
                }
            } else {
                let (mut flat, mut shape) = (Vec::new(), Vec::new());
                flatten(&want["values"][r], &mut flat, &mut shape, 0);
                match g {
                    Parsed::Dense { shape: s, values } => {
                        assert_eq!(s, &shape, "record {r}, {name}: shape");
                        assert_values(name, values, &flat);
                    }
                    other => panic!("record {r}, {name}: dense, not {other:?}"),
                }
            }
        }
    }
}
