//! `eval_data` (and `--eval-data`): evaluations read a separate file instead
//! of a held-out split of `data`, loaded whole or streamed (one pass each),
//! also when the training data streams. The digits data is split into a
//! training file and a test file; every evaluation must cover exactly the
//! test file's rows, and the streamed evaluation must give the same numbers,
//! bit for bit, as the in-memory one.

use crate::cli;

use std::path::{Path, PathBuf};

use cli::{fails, specc};

const SUITE: &str = "eval_data";
/// Rows of digits.csv that train; the rest are the test file.
const TRAIN_ROWS: usize = 1400;

fn spec(data: &str, eval_data: Option<&str>, train: &str) -> String {
    let eval = eval_data.map_or(String::new(), |e| format!("eval_data {e}\n"));
    format!(
        "model digits_eval\n\
         data {data}\n\
         {eval}\
         label label: int\n\
         features {{ pixels = numeric(px0..px63, normalizer = x / 16) }}\n\
         params {{\n  W: [64, 10] = glorot_uniform(seed = 1)\n  b: [10] = zeros\n}}\n\
         logits = pixels @ W + b\n\
         loss = mean(sparse_softmax_cross_entropy(label, logits))\n\
         optimizer adam(learning_rate = 0.01)\n\
         train {{ {train} }}\n\
         metrics {{\n  accuracy(label, argmax(logits))\n  mean(reduce_max(softmax(logits), [1]))\n}}\n"
    )
}

/// A work directory with `train.csv` (the first `TRAIN_ROWS` rows of
/// digits.csv) and `test.csv` (the others); returns it and the test rows.
fn workdir(name: &str) -> (PathBuf, usize) {
    let dir = cli::workdir(SUITE, name);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("specs/data/digits.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() > TRAIN_ROWS);
    let write = |file: &str, part: &[&str]| {
        let mut t = format!("{header}\n");
        for r in part {
            t += r;
            t.push('\n');
        }
        std::fs::write(dir.join(file), t).unwrap();
    };
    write("train.csv", &rows[..TRAIN_ROWS]);
    write("test.csv", &rows[TRAIN_ROWS..]);
    (dir.clone(), rows.len() - TRAIN_ROWS)
}

fn run(dir: &Path, spec_text: &str, extra: &[&str]) -> serde_json::Value {
    std::fs::write(dir.join("spec.spec"), spec_text).unwrap();
    let mut args = vec!["run", "spec.spec", "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = specc(dir, &args);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().last().expect("a JSON line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

const TRAIN: &str = "batch = 64, steps = 200, shuffle = 1400, seed = 7";

#[test]
fn eval_data_replaces_the_held_out_split() {
    let (dir, test_rows) = workdir("in_memory");
    let json = run(
        &dir,
        &spec("csv(\"train.csv\")", Some("csv(\"test.csv\")"), TRAIN),
        &[],
    );
    assert_eq!(json["train"]["rows"], TRAIN_ROWS as u64, "{json}");
    assert_eq!(json["eval"]["rows"], test_rows as u64, "{json}");
    let accuracy = json["eval"]["accuracy"].as_f64().unwrap();
    assert!(accuracy > 0.85, "test accuracy {accuracy}: {json}");
}

#[test]
fn streamed_eval_data_gives_the_in_memory_numbers() {
    let (dir, test_rows) = workdir("streamed");
    let in_memory = run(
        &dir,
        &spec("csv(\"train.csv\")", Some("csv(\"test.csv\")"), TRAIN),
        &[],
    );
    let streamed = run(
        &dir,
        &spec(
            "csv(\"train.csv\")",
            Some("csv(\"test.csv\", stream = true)"),
            TRAIN,
        ),
        &[],
    );
    assert_eq!(streamed["eval"]["rows"], test_rows as u64, "{streamed}");
    assert_eq!(streamed["eval"], in_memory["eval"]);
    // The flag gives the same as the item.
    let flag = run(
        &dir,
        &spec("csv(\"train.csv\")", None, TRAIN),
        &["--eval-data", "test.csv"],
    );
    assert_eq!(flag["eval"], in_memory["eval"]);
}

#[test]
fn data_flags_replace_a_streamed_items_files_and_keep_its_format() {
    let (dir, test_rows) = workdir("stream_flags");
    let train = "batch = 64, epochs = 2, shuffle = 256, seed = 7";
    let csv = |data: &str, eval: &str| {
        spec(
            &format!("csv(\"{data}\", stream = true)"),
            Some(&format!("csv(\"{eval}\", stream = true)")),
            train,
        )
    };
    let named = run(&dir, &csv("train.csv", "test.csv"), &[]);
    assert_eq!(named["eval"]["rows"], test_rows as u64, "{named}");
    // The flags name the files the streamed items read: the same run (a
    // CSV loaded into memory would also evaluate the training rows).
    let flags = ["--data", "train.csv", "--eval-data", "test.csv"];
    let flagged = run(&dir, &csv("elsewhere.csv", "nowhere.csv"), &flags);
    assert_eq!(flagged["train"], serde_json::Value::Null, "{flagged}");
    assert_eq!(flagged["eval"], named["eval"]);
    assert_eq!(flagged["last_loss"], named["last_loss"]);
    // TFRecord items read the flags' files as TFRecord.
    std::fs::write(dir.join("spec.spec"), csv("train.csv", "test.csv")).unwrap();
    for part in ["train", "test"] {
        let (code, _, err) = specc(
            &dir,
            &[
                "convert",
                "spec.spec",
                "--data",
                &format!("{part}.csv"),
                "-o",
                &format!("{part}.tfrecord"),
            ],
        );
        assert_eq!(code, 0, "{err}");
    }
    let tfrecord = |data: &str, eval: &str| {
        spec(
            &format!("tfrecord(\"{data}\")"),
            Some(&format!("tfrecord(\"{eval}\")")),
            train,
        )
    };
    let named = run(&dir, &tfrecord("train.tfrecord", "test.tfrecord"), &[]);
    let flags = ["--data", "train.tfrecord", "--eval-data", "test.tfrecord"];
    let flagged = run(&dir, &tfrecord("a.tfrecord", "b.tfrecord"), &flags);
    assert_eq!(named["eval"]["rows"], test_rows as u64, "{named}");
    assert_eq!(flagged["eval"], named["eval"]);
    assert_eq!(flagged["last_loss"], named["last_loss"]);
}

#[test]
fn a_streamed_training_run_evaluates_on_eval_data() {
    let (dir, test_rows) = workdir("stream_train");
    let json = run(
        &dir,
        &spec(
            "csv(\"train.csv\", stream = true)",
            Some("csv(\"test.csv\")"),
            "batch = 64, epochs = 8, shuffle = 256, seed = 7",
        ),
        &[],
    );
    assert_eq!(json["train"], serde_json::Value::Null, "{json}");
    assert_eq!(json["eval"]["rows"], test_rows as u64, "{json}");
    let accuracy = json["eval"]["accuracy"].as_f64().unwrap();
    assert!(accuracy > 0.85, "test accuracy {accuracy}: {json}");
}

#[test]
fn periodic_evaluations_read_the_whole_eval_data_each_time() {
    let (dir, test_rows) = workdir("periodic");
    let text = spec(
        "csv(\"train.csv\", stream = true)",
        Some("csv(\"test.csv\", stream = true)"),
        "batch = 64, steps = 150, shuffle = 256, seed = 7",
    ) + "evaluate { every_steps = 50 }\n";
    std::fs::write(dir.join("spec.spec"), text).unwrap();
    let (code, out, err) = specc(&dir, &["run", "spec.spec", "--json"]);
    assert_eq!(code, 0, "{err}");
    let evals: Vec<&str> = err
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("eval @ "))
        .collect();
    assert_eq!(evals.len(), 3, "{err}");
    for (k, l) in evals.iter().enumerate() {
        assert!(l.starts_with(&format!("eval @ {}: ", 50 * (k + 1))), "{l}");
        assert!(l.ends_with(&format!("({test_rows} rows)")), "{l}");
    }
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(json["eval"]["rows"], test_rows as u64, "{json}");
}

#[test]
fn synthetic_eval_data_is_an_error() {
    let (dir, _) = workdir("synthetic");
    let text = spec(
        "csv(\"train.csv\")",
        Some("synthetic(rows = 10, features = 64)"),
        TRAIN,
    );
    std::fs::write(dir.join("spec.spec"), &text).unwrap();
    let err = fails(SUITE, "synthetic_check", &text, "unknown-function");
    assert!(err.contains("not an evaluation data source"), "{err}");
}

#[test]
fn standardize_with_eval_data_is_an_error() {
    let text = spec("csv(\"train.csv\")", Some("csv(\"test.csv\")"), TRAIN)
        .replace("normalizer = x / 16", "normalizer = standardize");
    let err = fails(SUITE, "standardize", &text, "eval-data-standardize");
    assert!(err.contains("eval_data"), "{err}");
}

#[test]
fn a_missing_eval_file_is_an_error_naming_it() {
    let (dir, _) = workdir("missing");
    std::fs::write(
        dir.join("spec.spec"),
        spec("csv(\"train.csv\")", Some("csv(\"nope.csv\")"), TRAIN),
    )
    .unwrap();
    let (code, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nope.csv"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_eval_file_without_the_label_is_an_error() {
    let (dir, _) = workdir("no_label");
    let test = std::fs::read_to_string(dir.join("test.csv")).unwrap();
    let without: String = test
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.pop();
            f.join(",") + "\n"
        })
        .collect();
    assert!(test.lines().next().unwrap().ends_with(",label"));
    std::fs::write(dir.join("test.csv"), without).unwrap();
    std::fs::write(
        dir.join("spec.spec"),
        spec("csv(\"train.csv\")", Some("csv(\"test.csv\")"), TRAIN),
    )
    .unwrap();
    let (code, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("test.csv") && err.contains("label"), "{err}");
}
