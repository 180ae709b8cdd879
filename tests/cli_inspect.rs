//! `specc inspect` on the checkpoint TensorFlow wrote (`tests/golden/ckpt`):
//! `list_variables` as a table and as JSON, a prefix or a directory, one
//! tensor's exact values, and clear errors.

mod cli;
mod common;

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
