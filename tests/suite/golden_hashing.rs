//! TF's feature hashing (`golden/feature_columns.json`) against
//! `specc_runtime::hash`: `Fingerprint64` and `tf.fingerprint` of every string,
//! `tf.strings.to_hash_bucket_fast` / `_strong` for every bucket count and key,
//! integers through `tf.strings.as_string`, and the ids of every hashed
//! categorical column (hash buckets, vocabulary OOV buckets) and every
//! `crossed_column` of the file, which must match TF's exactly.
//!
//! Inputs, bucket counts, keys, hash keys and the crosses' op input order and
//! key kinds all come from the file; each categorical case is its own test,
//! plus one test of the hashing cases the list lacks. Missing dense entries
//! ('' and -1) are dropped before lookup (the file's `_meta.description`), but a
//! dense input of a cross keeps them (`crossed_id_reimplementation_check`).

use crate::common;

use common::golden;
use serde_json::Value;
use specc_runtime::hash::{
    cross_row, decimal, fingerprint64, fingerprint64_i64, hash_bucket, hash_bucket_i64,
    to_hash_bucket_strong, CrossValue, DEFAULT_HASH_KEY,
};
use std::num::NonZeroU64;

const FILE: &str = "feature_columns.json";

fn buckets(v: &Value) -> NonZeroU64 {
    v.as_u64()
        .and_then(NonZeroU64::new)
        .unwrap_or_else(|| panic!("bucket count {v} is not a positive integer"))
}

fn buckets_str(s: &str) -> NonZeroU64 {
    s.parse::<u64>()
        .ok()
        .and_then(NonZeroU64::new)
        .unwrap_or_else(|| panic!("bucket count {s:?} is not a positive integer"))
}

fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex byte"))
        .collect()
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a u64"))
}

/// A dense input entry: a string or an int64.
#[derive(Clone, Debug)]
enum Cell {
    Str(String),
    Int(i64),
}

impl Cell {
    fn of(v: &Value) -> Cell {
        match v {
            Value::String(s) => Cell::Str(s.clone()),
            _ => Cell::Int(v.as_i64().unwrap_or_else(|| panic!("{v} is not an int64"))),
        }
    }
    /// '' and -1 are missing in dense inputs.
    fn missing(&self) -> bool {
        match self {
            Cell::Str(s) => s.is_empty(),
            Cell::Int(v) => *v == -1,
        }
    }
    fn cross(&self) -> u64 {
        match self {
            Cell::Str(s) => CrossValue::Bytes(s.as_bytes()).fingerprint(),
            Cell::Int(v) => CrossValue::Int(*v).fingerprint(),
        }
    }
    fn fingerprint(&self) -> u64 {
        match self {
            Cell::Str(s) => fingerprint64(s.as_bytes()),
            Cell::Int(v) => fingerprint64_i64(*v),
        }
    }
}

/// The rows of a dense input feature.
fn dense_rows(g: &Value, key: &str) -> Vec<Vec<Cell>> {
    let rows = g["inputs"]["dense_features"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no dense input {key:?} in {FILE}"));
    rows.iter()
        .map(|r| r.as_array().expect("a row").iter().map(Cell::of).collect())
        .collect()
}

/// A case's sparse ids per row (from its indices and values).
fn ids_by_row(ids: &Value) -> Vec<Vec<i64>> {
    let rows = ids["dense_shape"][0].as_u64().expect("dense_shape") as usize;
    let mut out = vec![Vec::new(); rows];
    let indices = ids["indices"].as_array().expect("indices");
    let values = ids["values"].as_array().expect("values");
    assert_eq!(indices.len(), values.len(), "indices and values");
    for (ix, v) in indices.iter().zip(values) {
        let row = ix[0].as_u64().expect("row index") as usize;
        out[row].push(v.as_i64().expect("id"));
    }
    out
}

/// A row's ids, each at its column index of TF's SparseTensor.
type Row = Vec<(usize, i64)>;

/// The ids of `rows` at consecutive indices (a cross's products).
fn consecutive(rows: Vec<Vec<i64>>) -> Vec<Row> {
    rows.into_iter()
        .map(|r| r.into_iter().enumerate().collect())
        .collect()
}

/// Compares ids with TF's SparseTensor: indices, values and `dense_shape`
/// (`width`: its second dimension, the dense input's width for a column of
/// one key, the most products of a row for a cross).
fn assert_ids(name: &str, got: &[Row], width: usize, ids: &Value) {
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for (r, row) in got.iter().enumerate() {
        for &(p, id) in row {
            indices.push(vec![r as u64, p as u64]);
            values.push(id);
        }
    }
    let want_indices: Vec<Vec<u64>> = ids["indices"]
        .as_array()
        .expect("indices")
        .iter()
        .map(|ix| {
            ix.as_array()
                .expect("an index")
                .iter()
                .map(|v| v.as_u64().expect("an index"))
                .collect()
        })
        .collect();
    let want_values: Vec<i64> = ids["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|v| v.as_i64().expect("id"))
        .collect();
    assert_eq!(values, want_values, "{name}: ids");
    assert_eq!(indices, want_indices, "{name}: indices");
    let shape: Vec<u64> = [got.len(), width].iter().map(|&d| d as u64).collect();
    let want_shape: Vec<u64> = ids["dense_shape"]
        .as_array()
        .expect("dense_shape")
        .iter()
        .map(|v| v.as_u64().expect("a dim"))
        .collect();
    assert_eq!(shape, want_shape, "{name}: dense_shape");
}

/// The text between the first `open` and its matching `close` in `s`.
fn bracketed(s: &str, open: char, close: char) -> Option<&str> {
    let start = s.find(open)?;
    let mut depth = 0;
    for (i, c) in s[start..].char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(&s[start + 1..start + i]);
            }
        }
    }
    None
}

/// `name=<int>` in a column's constructor text.
fn keyword(column: &str, name: &str) -> Option<i64> {
    let at = column.find(&format!("{name}="))? + name.len() + 1;
    let digits: String = column[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

/// The vocabulary of `categorical_column_with_vocabulary_list(key, [..])`.
fn vocabulary(column: &str) -> Vec<String> {
    let list = bracketed(column, '[', ']').unwrap_or_else(|| panic!("no vocabulary in {column}"));
    list.split(',')
        .map(|w| w.trim().trim_matches('\'').trim_matches('"').to_string())
        .collect()
}

/// The ids of a hashed categorical column (hash bucket, or vocabulary list
/// with OOV buckets), computed from its dense input; `None` for columns whose
/// ids do not come from hashing.
fn categorical_ids(g: &Value, case: &Value) -> Option<(Vec<Row>, usize)> {
    let column = case["column"].as_str().expect("column");
    let key = case["column_name"].as_str().expect("column_name");
    let n = buckets(&case["num_buckets"]);
    // Each present value at its position in the dense row (TF drops the
    // missing ones and keeps the others' indices); the row's width.
    let ids = |id: &dyn Fn(&Cell) -> i64| -> (Vec<Row>, usize) {
        let rows = dense_rows(g, key);
        let width = rows.first().map_or(0, Vec::len);
        let ids = rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .filter(|(_, c)| !c.missing())
                    .map(|(p, c)| (p, id(c)))
                    .collect()
            })
            .collect();
        (ids, width)
    };
    if column.starts_with("categorical_column_with_hash_bucket(") {
        return Some(ids(&|c| (c.fingerprint() % n) as i64));
    }
    if column.starts_with("categorical_column_with_vocabulary_list(") {
        let oov = keyword(column, "num_oov_buckets").filter(|&k| k > 0)?;
        let oov = NonZeroU64::new(oov as u64)?;
        let vocab = vocabulary(column);
        return Some(ids(&|c| {
            let word = match c {
                Cell::Str(s) => s.clone(),
                Cell::Int(v) => v.to_string(),
            };
            match vocab.iter().position(|w| *w == word) {
                Some(i) => i as i64,
                None => (vocab.len() as u64 + c.fingerprint() % oov) as i64,
            }
        }));
    }
    None
}

/// The ids of a `crossed_column` case: per row, the cartesian product of its
/// op inputs (order and kinds from `crossed_id_reimplementation_check`).
fn crossed_ids(g: &Value, name: &str, case: &Value) -> Vec<Vec<i64>> {
    let column = case["column"].as_str().expect("column");
    let check = g["crossed_id_reimplementation_check"]["cases"]
        .as_array()
        .expect("crossed_id_reimplementation_check.cases")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name}: no entry in crossed_id_reimplementation_check"));
    let n = buckets(&case["num_buckets"]);
    let hash_key = u64_of(&case["hash_key_used"]);
    let order: Vec<&str> = check["op_input_order"]
        .as_array()
        .expect("op_input_order")
        .iter()
        .map(|k| k.as_str().expect("key"))
        .collect();
    // Each op input's fingerprints, per row.
    let inputs: Vec<Vec<Vec<u64>>> = order
        .iter()
        .map(|key| {
            let kind = check["key_kinds"][*key].as_str().expect("key kind");
            match kind {
                "dense_raw" | "sparse_raw" => dense_rows(g, key)
                    .iter()
                    .map(|r| {
                        r.iter()
                            .filter(|c| kind == "dense_raw" || !c.missing())
                            .map(Cell::cross)
                            .collect()
                    })
                    .collect(),
                "sparse_ids" => {
                    // The categorical column the cross holds: the non-cross
                    // case whose constructor appears in the cross's.
                    let source = g["categorical_columns"]
                        .as_array()
                        .expect("categorical_columns")
                        .iter()
                        .find(|c| {
                            let text = c["column"].as_str().unwrap_or("");
                            let ctor = &text[..text.rfind(')').map_or(0, |i| i + 1)];
                            !ctor.is_empty()
                                && !ctor.starts_with("crossed_column(")
                                && column.contains(ctor)
                        })
                        .unwrap_or_else(|| panic!("{name}: no categorical case for {key}"));
                    ids_by_row(&source["ids"])
                        .iter()
                        .map(|r| {
                            r.iter()
                                .map(|&id| CrossValue::Int(id).fingerprint())
                                .collect()
                        })
                        .collect()
                }
                other => panic!("{name}: unknown key kind {other:?}"),
            }
        })
        .collect();
    let rows = inputs.first().map_or(0, Vec::len);
    let mut out = Vec::new();
    (0..rows)
        .map(|row| {
            let columns: Vec<&[u64]> = inputs.iter().map(|i| i[row].as_slice()).collect();
            out.clear();
            cross_row(&columns, hash_key, n, &mut out);
            out.iter().map(|&id| id as i64).collect()
        })
        .collect()
}

/// Whether a categorical case's ids come from hashing.
fn is_hashing_case(g: &Value, case: &Value) -> bool {
    let column = case["column"].as_str().unwrap_or("");
    column.starts_with("crossed_column(") || categorical_ids(g, case).is_some()
}

/// specc's ids of a hashed categorical case and TF's width of them.
fn hashed_ids(g: &Value, name: &str, case: &Value) -> (Vec<Row>, usize) {
    let column = case["column"].as_str().expect("column");
    if column.starts_with("crossed_column(") {
        let rows = consecutive(crossed_ids(g, name, case));
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        (rows, width)
    } else {
        categorical_ids(g, case).unwrap_or_else(|| panic!("{name}: not a hashed column"))
    }
}

fn check_case(name: &str, case: &Value) {
    let g = golden(FILE);
    let (got, width) = hashed_ids(&g, name, case);
    assert_ids(name, &got, width, &case["ids"]);
}

fn categorical_case(g: &Value, name: &str) -> Value {
    g["categorical_columns"]
        .as_array()
        .expect("categorical_columns")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no categorical case {name} in {FILE}"))
        .clone()
}

fn run(name: &str) {
    let g = golden(FILE);
    check_case(name, &categorical_case(&g, name));
}

/// The hashing cases of the file without a test of their own; every named
/// case must be in the file.
#[test]
fn every_other_hashing_case_in_the_file() {
    let g = golden(FILE);
    let all = g["categorical_columns"]
        .as_array()
        .expect("categorical_columns");
    let others = all
        .iter()
        .filter(|c| is_hashing_case(&g, c))
        .filter(|c| !NAMED.contains(&c["name"].as_str().unwrap_or("")))
        .map(|c| (c["name"].as_str().unwrap_or("?").to_string(), c));
    common::check_all(others, check_case);
    for name in NAMED {
        assert!(
            all.iter().any(|c| c["name"] == *name),
            "no categorical case {name}"
        );
    }
}

macro_rules! cases {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The cases with a test of their own.
        const NAMED: &[&str] = &[$($name),*];
        $( #[test] fn $test() { run($name); } )*
    };
}

cases! {
    hash_bucket_strings_10 => "hash_city_10",
    hash_bucket_strings_1000 => "hash_city_1000",
    hash_bucket_int64_through_decimal => "hash_cid_int_1000",
    hash_bucket_sparse_input => "hash_city_10_sparse_input",
    vocabulary_list_oov_buckets => "vocab_city_oov2",
    vocabulary_list_int64_oov_buckets => "vocab_cid_int_oov3",
    cross_strings_and_raw_int64 => "cross_city_cid_1000",
    cross_in_reversed_key_order => "cross_cid_city_1000",
    cross_with_bucketized_ids => "cross_city_bucketized_1000",
    cross_with_identity_ids => "cross_city_ids_identity_1000",
    cross_three_way => "cross_3way_1000",
    cross_with_hash_key => "cross_city_cid_hashkey",
    cross_of_sparse_inputs => "cross_city_cid_sparse_input_1000",
    cross_of_sparse_and_dense_inputs => "cross_city_sparse_cid_dense_1000",
}

#[test]
fn default_hash_key_is_tfs() {
    let g = golden(FILE);
    let key = &g["crossed_column_default_hash_key"]["sparse_ops._DEFAULT_HASH_KEY"];
    assert_eq!(u64_of(key), DEFAULT_HASH_KEY);
}

fn strings(g: &Value) -> &Vec<Value> {
    g["string_hashing"]["strings"]
        .as_array()
        .expect("string_hashing.strings")
}

fn bytes_of(s: &Value) -> Vec<u8> {
    from_hex(s["utf8_hex"].as_str().expect("utf8_hex"))
}

#[test]
fn fingerprint64_of_every_string() {
    let g = golden(FILE);
    for s in strings(&g) {
        let bytes = bytes_of(s);
        let fp = fingerprint64(&bytes);
        let what = &s["string"];
        assert_eq!(
            fp,
            u64_of(&s["farmhash_fingerprint64_uint64"]),
            "Fingerprint64({what})"
        );
        let hex: String = fp
            .to_le_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex, s["tf_fingerprint_farmhash64_bytes_hex"],
            "tf.fingerprint({what})"
        );
    }
}

#[test]
fn to_hash_bucket_fast_of_every_string() {
    let g = golden(FILE);
    let mut count = 0;
    for s in strings(&g) {
        let bytes = bytes_of(s);
        for (n, id) in s["to_hash_bucket_fast"]
            .as_object()
            .expect("to_hash_bucket_fast")
        {
            assert_eq!(
                hash_bucket(&bytes, buckets_str(n)),
                u64_of(id),
                "to_hash_bucket_fast({}, {n})",
                s["string"]
            );
            count += 1;
        }
    }
    assert!(count > 0, "no to_hash_bucket_fast cases");
}

#[test]
fn to_hash_bucket_strong_of_every_string_and_key() {
    let g = golden(FILE);
    let mut count = 0;
    for s in strings(&g) {
        let bytes = bytes_of(s);
        let by_key = s["to_hash_bucket_strong"]
            .as_object()
            .expect("to_hash_bucket_strong");
        for (key, by_n) in by_key {
            let parts: Vec<u64> = key
                .split(',')
                .map(|k| k.trim().parse().expect("a u64 key"))
                .collect();
            assert_eq!(parts.len(), 2, "key {key:?}");
            for (n, id) in by_n.as_object().expect("buckets") {
                assert_eq!(
                    to_hash_bucket_strong(&bytes, buckets_str(n), [parts[0], parts[1]]),
                    u64_of(id),
                    "to_hash_bucket_strong({}, {n}, key=[{key}])",
                    s["string"]
                );
                count += 1;
            }
        }
    }
    assert!(count > 0, "no to_hash_bucket_strong cases");
}

#[test]
fn integers_hash_through_their_decimal_string() {
    let g = golden(FILE);
    let ints = g["string_hashing"]["int_as_string"]
        .as_array()
        .expect("int_as_string");
    assert!(!ints.is_empty());
    let mut buf = [0u8; 20];
    for case in ints {
        let v = case["int"].as_i64().expect("int64");
        let text = case["tf.strings.as_string"].as_str().expect("string");
        assert_eq!(decimal(v, &mut buf), text.as_bytes(), "as_string({v})");
        assert_eq!(fingerprint64_i64(v), fingerprint64(text.as_bytes()), "{v}");
    }
}

#[test]
fn hash_bucket_column_on_strings() {
    let g = golden(FILE);
    let by_n = g["hash_bucket_column_on_20_strings"]["by_num_buckets"]
        .as_array()
        .expect("by_num_buckets");
    assert!(!by_n.is_empty());
    for case in by_n {
        let n = buckets(&case["num_buckets"]);
        let strings = case["strings"].as_array().expect("strings");
        let ids = case["ids"].as_array().expect("ids");
        assert_eq!(strings.len(), ids.len(), "strings and ids ({n})");
        for (s, id) in strings.iter().zip(ids) {
            let s = s.as_str().expect("string");
            assert_eq!(hash_bucket(s.as_bytes(), n), u64_of(id), "{s:?} % {n}");
        }
    }
}

/// The bucket count of `categorical_column_with_hash_bucket(key, n, ...)`.
fn hash_bucket_size(column: &str) -> NonZeroU64 {
    let args = bracketed(column, '(', ')').unwrap_or_else(|| panic!("no arguments in {column}"));
    let n = args
        .split(',')
        .nth(1)
        .unwrap_or_else(|| panic!("no bucket count in {column}"));
    buckets_str(n.trim())
}

/// specc's ids of `hash_bucket_column_on_ints` (a dense `[rows, 1]` int64
/// input: -1 is missing).
fn ints_column_ids(g: &Value) -> Vec<Row> {
    let case = &g["hash_bucket_column_on_ints"];
    let n = hash_bucket_size(case["column"].as_str().expect("column"));
    let inputs = case["inputs"].as_array().expect("inputs");
    assert!(!inputs.is_empty());
    inputs
        .iter()
        .map(|v| {
            let v = v.as_i64().expect("int64 input");
            if v == -1 {
                vec![]
            } else {
                vec![(0, hash_bucket_i64(v, n) as i64)]
            }
        })
        .collect()
}

#[test]
fn hash_bucket_column_on_ints() {
    let g = golden(FILE);
    let got = ints_column_ids(&g);
    assert_ids(
        "hash_bucket_column_on_ints",
        &got,
        1,
        &g["hash_bucket_column_on_ints"]["ids"],
    );
}

fn values_of(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a list of ids, got {v}"))
        .iter()
        .map(|x| x.as_i64().expect("an id"))
        .collect()
}

/// The file's own reimplementation checks (`hash_and_vocab_reimplementation_check`,
/// `crossed_id_reimplementation_check.cases`): each entry's TF ids are the
/// ids of the case it names, and specc's ids of that case are the
/// reimplementation's `expected` ones.
#[test]
fn the_files_reimplementation_checks_agree_with_specc() {
    let g = golden(FILE);
    let ours = |name: &str| -> (Vec<i64>, Vec<i64>) {
        let (rows, tf) = if name == "hash_bucket_column_on_ints" {
            (
                ints_column_ids(&g),
                values_of(&g["hash_bucket_column_on_ints"]["ids"]["values"]),
            )
        } else {
            let case = categorical_case(&g, name);
            (
                hashed_ids(&g, name, &case).0,
                values_of(&case["ids"]["values"]),
            )
        };
        let ids = rows.into_iter().flatten().map(|(_, id)| id).collect();
        (ids, tf)
    };
    let hashed = g["hash_and_vocab_reimplementation_check"]
        .as_array()
        .expect("hash_and_vocab_reimplementation_check");
    let crossed = g["crossed_id_reimplementation_check"]["cases"]
        .as_array()
        .expect("crossed_id_reimplementation_check.cases");
    assert!(!hashed.is_empty() && !crossed.is_empty());
    let entries = hashed.iter().map(|e| (e, "tf", "expected")).chain(
        crossed
            .iter()
            .map(|e| (e, "tf_ids", "expected_by_reimplementation")),
    );
    for (e, tf_key, expected_key) in entries {
        let name = e["name"].as_str().expect("name");
        let (got, tf) = ours(name);
        assert_eq!(
            values_of(&e[tf_key]),
            tf,
            "{name}: {tf_key} are the case's ids"
        );
        assert_eq!(got, values_of(&e[expected_key]), "{name}: {expected_key}");
    }
}
