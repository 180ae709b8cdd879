//! `specc inspect` on the checkpoint TensorFlow wrote (`tests/golden/ckpt`):
//! `list_variables` as a table and as JSON, a prefix or a directory, one
//! tensor's exact values, and clear errors.

use crate::cli;
use crate::common;

use std::path::PathBuf;

use serde_json::Value;

fn ckpt() -> Value {
    common::golden("ckpt.json")
}

fn ckpt_dir() -> PathBuf {
    common::golden_dir().join("ckpt")
}

/// The golden prefix as an absolute path.
fn prefix(g: &Value) -> String {
    let name = PathBuf::from(g["prefix"].as_str().unwrap());
    ckpt_dir()
        .join(name.file_name().unwrap())
        .to_string_lossy()
        .into_owned()
}

fn inspect(args: &[&str]) -> (i32, String, String) {
    cli::specc(&ckpt_dir(), &[&["inspect"], args].concat())
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = inspect(args);
    assert_eq!(code, 0, "{err}");
    out
}

fn leaves(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        x => out.push(common::num(x)),
    }
}

fn dims(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn assert_table(out: &str, g: &Value) {
    let want = g["list_variables"].as_array().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), want.len(), "{out}");
    for (line, w) in lines.iter().zip(want) {
        let name = w[0].as_str().unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], name);
        assert_eq!(words[1], g["variables"][name]["dtype"].as_str().unwrap());
        assert_eq!(words[2..].join(" "), common::shape_text(&dims(&w[1])));
    }
}

#[test]
fn lists_variables_of_a_prefix() {
    let g = ckpt();
    assert_table(&ok(&[&prefix(&g)]), &g);
}

#[test]
fn lists_variables_of_a_directory_by_its_state_file() {
    let g = ckpt();
    assert_table(&ok(&[&ckpt_dir().to_string_lossy()]), &g);
}

#[test]
fn lists_variables_of_an_index_file() {
    let g = ckpt();
    assert_table(&ok(&[&format!("{}.index", prefix(&g))]), &g);
}

#[test]
fn lists_variables_as_json() {
    let g = ckpt();
    let out: Value = serde_json::from_str(&ok(&[&prefix(&g), "--json"])).unwrap();
    let vars = out["variables"].as_array().unwrap();
    let want = g["list_variables"].as_array().unwrap();
    assert_eq!(vars.len(), want.len());
    for (v, w) in vars.iter().zip(want) {
        let name = w[0].as_str().unwrap();
        assert_eq!(v["name"], w[0]);
        assert_eq!(v["shape"], w[1]);
        assert_eq!(v["dtype"], g["variables"][name]["dtype"]);
    }
}

#[test]
fn every_tensor_as_json_is_exact() {
    let g = ckpt();
    for (name, want) in g["variables"].as_object().unwrap() {
        let out: Value =
            serde_json::from_str(&ok(&[&prefix(&g), "--json", "--tensor", name])).unwrap();
        assert_eq!(out["dtype"], want["dtype"], "{name}");
        assert_eq!(out["shape"], want["shape"], "{name}");
        let (mut got, mut exp) = (Vec::new(), Vec::new());
        leaves(&out["values"], &mut got);
        leaves(&want["values"], &mut exp);
        assert_eq!(got.len(), exp.len(), "{name}");
        for (a, b) in got.iter().zip(&exp) {
            assert_eq!(a.to_bits(), b.to_bits(), "{name}: {a} vs {b}");
        }
        if want["dtype"] == "int64" {
            assert_eq!(
                out["values"], want["values"],
                "{name}: integers print as integers"
            );
        }
    }
}

#[test]
fn a_tensor_as_text_reads_back_exactly() {
    let g = ckpt();
    for (name, want) in g["variables"].as_object().unwrap() {
        let out = ok(&[&prefix(&g), "--tensor", name]);
        let (head, body) = out.split_once('\n').unwrap();
        assert!(head.starts_with(name.as_str()), "{out}");
        assert!(head.contains(want["dtype"].as_str().unwrap()), "{out}");
        let numbers: Vec<f64> = body
            .split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse::<f64>().unwrap_or_else(|_| panic!("{w} in {out}")))
            .collect();
        let mut exp = Vec::new();
        leaves(&want["values"], &mut exp);
        assert_eq!(numbers.len(), exp.len(), "{out}");
        for (a, b) in numbers.iter().zip(&exp) {
            if want["dtype"] == "float32" {
                // Shortest float32 text: reads back to the same float32.
                assert_eq!((*a as f32).to_bits(), (*b as f32).to_bits(), "{name}");
            } else {
                assert_eq!(a, b, "{name}");
            }
        }
    }
}

#[test]
fn an_unknown_tensor_is_named_with_a_suggestion() {
    let g = ckpt();
    let name = g["list_variables"][0][0].as_str().unwrap();
    let typo = format!("{name}x");
    let (code, _, err) = inspect(&[&prefix(&g), "--tensor", &typo]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("no tensor `{typo}`")), "{err}");
    assert!(err.contains(".index"), "{err}");
    assert!(err.contains(&format!("did you mean `{name}`")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_missing_checkpoint_is_named() {
    let (code, _, err) = inspect(&["no/such/model.ckpt-1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no/such/model.ckpt-1.index"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_directory_without_state_file_is_refused() {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_inspect_empty");
    std::fs::create_dir_all(&d).unwrap();
    let (code, _, err) = cli::specc(&d, &["inspect", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("checkpoint"), "{err}");
}

/// One feature as `examples.json` describes it: name, kind, records having
/// it, fewest values, most values.
type FeatureSummary = (String, String, u64, u64, u64);

/// The record count and each feature of the golden TFRecord files.
fn example_features() -> (usize, Vec<FeatureSummary>) {
    let g = common::golden("examples.json");
    let records = g["records"].as_array().unwrap();
    let mut out: std::collections::BTreeMap<String, (String, u64, u64, u64)> = Default::default();
    for r in records {
        for (name, f) in r["features"].as_object().unwrap() {
            let n = f
                .get("values_hex")
                .or_else(|| f.get("values"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len) as u64;
            let e = out.entry(name.clone()).or_insert((
                f["kind"].as_str().unwrap().to_string(),
                0,
                u64::MAX,
                0,
            ));
            e.1 += 1;
            e.2 = e.2.min(n);
            e.3 = e.3.max(n);
        }
    }
    let features = out
        .into_iter()
        .map(|(n, (k, c, lo, hi))| (n, k, c, lo, hi))
        .collect();
    (records.len(), features)
}

fn check_tfrecord_summary(file: &str, compression: &str) {
    let path = common::golden_dir().join(file);
    let out = ok(&[path.to_str().unwrap(), "--json"]);
    let got: Value = serde_json::from_str(out.trim()).unwrap();
    let (count, features) = example_features();
    assert_eq!(got["records"].as_u64(), Some(count as u64));
    assert_eq!(got["compression"], compression);
    let listed = got["features"].as_array().unwrap();
    assert_eq!(listed.len(), features.len(), "{got}");
    for (f, (name, kind, records, lo, hi)) in listed.iter().zip(&features) {
        assert_eq!(f["name"], name.as_str());
        assert_eq!(f["kinds"], serde_json::json!([kind]), "{name}");
        assert_eq!(f["records"].as_u64(), Some(*records), "{name}");
        assert_eq!(f["min_values"].as_u64(), Some(*lo), "{name}");
        assert_eq!(f["max_values"].as_u64(), Some(*hi), "{name}");
    }
    // The text form names every feature and the count.
    let text = ok(&[path.to_str().unwrap()]);
    assert!(text.contains(&format!("{count} records")), "{text}");
    for (name, ..) in &features {
        assert!(text.contains(name.as_str()), "{text}");
    }
}

#[test]
fn inspect_summarizes_tfs_tfrecord_of_examples() {
    check_tfrecord_summary("examples.tfrecord", "none");
}

#[test]
fn inspect_summarizes_tfs_gzip_tfrecord_of_examples() {
    check_tfrecord_summary("examples.gz.tfrecord", "GZIP");
}

#[test]
fn inspect_names_the_record_of_a_corrupt_tfrecord() {
    let data = std::fs::read(common::golden_dir().join("examples.tfrecord")).unwrap();
    let dir = cli::workdir("cli_inspect", "corrupt_tfrecord");
    let mut bad = data.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1; // the last record's data CRC
    std::fs::write(dir.join("bad.tfrecord"), bad).unwrap();
    let (code, _, err) = cli::specc(&dir, &["inspect", "bad.tfrecord"]);
    assert_eq!(code, 1, "{err}");
    let records = common::golden("examples.json")["records"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        err.contains("bad.tfrecord") && err.contains(&format!("record {}", records - 1)),
        "{err}"
    );
}
