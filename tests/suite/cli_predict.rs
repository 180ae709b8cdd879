//! `specc predict`: a model trained by `specc run --checkpoint-dir`, its
//! `outputs` for a data file. The predictions are checked against the
//! model's math computed here from the checkpoint's variables (a linear
//! softmax model), and against the eval function's accuracy (digits); row
//! order and count (not a multiple of the batch), a file without the label
//! column, JSON lines, `--output`, and the errors: no `outputs`, an output
//! that reads the label, a missing checkpoint, a bad row.

use crate::cli;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use specc_runtime::checkpoint::{latest_checkpoint, BundleReader, Tensor};

const SUITE: &str = "cli_predict";

/// Three features through a normalizer, three classes.
const LINEAR: &str = r#"model linear
data csv("train.csv")
label y: int
features {
  x = numeric(x0..x2, normalizer = x / 4)
}
params {
  W: [3, 3] = glorot_uniform(seed = 3)
  b: [3]    = zeros
}
logits = x @ W + b
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.05)
train { batch = 8, steps = 40, shuffle = 40, seed = 1 }
outputs {
  logits = logits
  probs  = softmax(logits)
  class  = argmax(logits, 1)
}
"#;

/// A deterministic value in [-4, 4) (splitmix64).
fn value(i: u64) -> f64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
}

/// `rows` rows of x0, x1, x2 (two decimals), with a class label `y` when
/// `label`.
fn rows(rows: u64, seed: u64, label: bool) -> (String, Vec<[f64; 3]>) {
    let mut text = String::from(if label { "x0,x1,x2,y\n" } else { "x0,x1,x2\n" });
    let mut xs = Vec::new();
    for r in 0..rows {
        let x: [f64; 3] =
            std::array::from_fn(|j| (value(seed + 3 * r + j as u64) * 100.0).round() / 100.0);
        write!(text, "{},{},{}", x[0], x[1], x[2]).unwrap();
        if label {
            let y = if x[0] > x[1] {
                0
            } else if x[1] > x[2] {
                1
            } else {
                2
            };
            write!(text, ",{y}").unwrap();
        }
        text.push('\n');
        xs.push(x);
    }
    (text, xs)
}

/// A work directory with the linear spec trained to a checkpoint in `ckpt/`.
fn trained(name: &str) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    std::fs::write(dir.join("linear.spec"), LINEAR).unwrap();
    std::fs::write(dir.join("train.csv"), rows(40, 1000, true).0).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, _, err) = cli::specc(&dir, &["run", "linear.spec", "--checkpoint-dir", "ckpt"]);
    assert_eq!(code, 0, "{err}");
    dir
}

fn variable(dir: &Path, name: &str) -> Vec<f64> {
    let prefix = latest_checkpoint(dir.join("ckpt")).unwrap().unwrap();
    match BundleReader::open(prefix).unwrap().load(name).unwrap() {
        Tensor::F32(a) => a.iter().map(|&v| f64::from(v)).collect(),
        t => panic!("{name}: {t:?}"),
    }
}

fn predict(dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli::specc(
        dir,
        &[&["predict", "linear.spec", "--checkpoint", "ckpt"], args].concat(),
    )
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

/// The model's outputs for `x`, computed here: logits = (x / 4) @ W + b,
/// their softmax and argmax.
fn expected(w: &[f64], b: &[f64], x: &[f64; 3]) -> ([f64; 3], [f64; 3], usize) {
    let logits: [f64; 3] =
        std::array::from_fn(|k| (0..3).map(|j| x[j] / 4.0 * w[j * 3 + k]).sum::<f64>() + b[k]);
    let m = logits.iter().copied().fold(f64::MIN, f64::max);
    let e: [f64; 3] = std::array::from_fn(|k| (logits[k] - m).exp());
    let s: f64 = e.iter().sum();
    let class = (0..3).fold(0, |best, k| if logits[k] > logits[best] { k } else { best });
    (logits, e.map(|v| v / s), class)
}

#[test]
fn csv_predictions_are_the_models_outputs_in_row_order() {
    let dir = trained("csv");
    // 103 rows without a label column, in batches of 16: the last has 7.
    let (text, xs) = rows(103, 7, false);
    std::fs::write(dir.join("new.csv"), text).unwrap();
    let (code, out, err) = predict(&dir, &["--data", "new.csv", "--batch", "16"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("predicted 103 rows"), "{err}");
    let (w, b) = (variable(&dir, "W"), variable(&dir, "b"));
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("logits_0,logits_1,logits_2,probs_0,probs_1,probs_2,class")
    );
    let lines: Vec<&str> = lines.collect();
    assert_eq!(lines.len(), 103);
    for (r, (line, x)) in lines.iter().zip(&xs).enumerate() {
        let cells: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
        assert_eq!(cells.len(), 7, "row {r}: {line}");
        let (logits, probs, class) = expected(&w, &b, x);
        for k in 0..3 {
            close(cells[k], logits[k], &format!("row {r} logits_{k}"));
            close(cells[3 + k], probs[k], &format!("row {r} probs_{k}"));
        }
        // The class is the argmax of the written logits, and the model's
        // unless two logits are within float32 rounding.
        let written = (0..3).fold(0, |best, k| if cells[k] > cells[best] { k } else { best });
        assert_eq!(cells[6], written as f64, "row {r}");
        let mut sorted = logits;
        sorted.sort_by(f64::total_cmp);
        if sorted[2] - sorted[1] > 1e-4 {
            assert_eq!(cells[6], class as f64, "row {r}");
        }
    }
}

#[test]
fn json_lines_to_a_file_equal_the_csv() {
    let dir = trained("jsonl");
    // With the label column too: it is not read.
    let (text, _) = rows(50, 99, true);
    std::fs::write(dir.join("new.csv"), text).unwrap();
    let (code, csv, err) = predict(&dir, &["--data", "new.csv"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = predict(&dir, &["--data", "new.csv", "-o", "p.jsonl"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    let json = std::fs::read_to_string(dir.join("p.jsonl")).unwrap();
    let json: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let csv: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(json.len(), 50);
    assert_eq!(csv.len(), 50);
    for (j, c) in json.iter().zip(csv) {
        let mut flat: Vec<String> = Vec::new();
        for name in ["logits", "probs"] {
            let v = j[name].as_array().unwrap();
            assert_eq!(v.len(), 3);
            flat.extend(v.iter().map(|x| format!("{}", x.as_f64().unwrap() as f32)));
        }
        flat.push(j["class"].as_i64().unwrap().to_string());
        let cells: Vec<String> = c
            .split(',')
            .map(|x| {
                let v: f64 = x.parse().unwrap();
                if x.contains('.') || x.contains('e') {
                    format!("{}", v as f32)
                } else {
                    x.to_string()
                }
            })
            .collect();
        assert_eq!(flat, cells);
    }
}

/// Digits: the predicted classes have exactly the accuracy the eval
/// function reports over the training and held-out rows.
#[test]
fn digits_classes_have_the_eval_accuracy() {
    let dir = cli::workdir(SUITE, "digits");
    let specs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs");
    let spec = specs.join("digits_mlp.spec");
    let spec = spec.to_str().unwrap();
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "run",
            spec,
            "--steps",
            "150",
            "--checkpoint-dir",
            "ckpt",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let correct =
        |part: &str| r[part]["accuracy"].as_f64().unwrap() * r[part]["rows"].as_f64().unwrap();
    let want = (correct("train") + correct("eval")).round() as usize;
    let data = specs.join("data/digits.csv");
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "predict",
            spec,
            "--checkpoint",
            "ckpt",
            "--data",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let labels: Vec<String> = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().to_string())
        .collect();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with(",probs_9,class"), "{}", lines[0]);
    assert_eq!(lines.len() - 1, labels.len());
    let mut hits = 0;
    for (line, label) in lines[1..].iter().zip(&labels) {
        let cells: Vec<&str> = line.split(',').collect();
        let probs: Vec<f64> = cells[..10].iter().map(|c| c.parse().unwrap()).collect();
        close(probs.iter().sum(), 1.0, "probabilities sum to 1");
        hits += usize::from(cells[10] == label);
    }
    assert_eq!(hits, want, "rows whose class is the label");
}

#[test]
fn a_spec_without_outputs_is_refused() {
    let dir = cli::workdir(SUITE, "no_outputs");
    std::fs::write(dir.join("spec.spec"), cli::BASE).unwrap();
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "predict",
            "spec.spec",
            "--checkpoint",
            "ckpt",
            "--data",
            "data.csv",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error[missing-item]"), "{err}");
    assert!(err.contains("spec.spec"), "{err}");
    assert!(err.contains("outputs {"), "{err}");
}

#[test]
fn outputs_are_checked() {
    let with = |outputs: &str| format!("{}outputs {{\n{outputs}\n}}\n", cli::BASE);
    let err = cli::fails(
        SUITE,
        "label",
        &with("  p = logits\n  bad = cast(y, float32)"),
        "output-reads-label",
    );
    assert!(err.contains("output `bad` reads the label `y`"), "{err}");
    assert!(err.contains("the label is declared here"), "{err}");
    // Through a binding, too.
    let base = cli::BASE.replace(
        "metrics {",
        "leak = logits + reshape(cast(y, float32), [B, 1])\nmetrics {",
    );
    let spec = format!("{base}outputs {{ p = leak }}\n");
    cli::fails(SUITE, "label_binding", &spec, "output-reads-label");
    let err = cli::fails(
        SUITE,
        "dup",
        &with("  p = logits\n  p = h"),
        "duplicate-name",
    );
    assert!(err.contains("two outputs are called `p`"), "{err}");
    let err = cli::fails(
        SUITE,
        "scalar",
        &with("  total = sum(logits)"),
        "bad-output",
    );
    assert!(err.contains("first dimension B"), "{err}");
    let err = cli::fails(SUITE, "unknown", &with("  p = logitz"), "unknown-name");
    assert!(err.contains("logits"), "did you mean: {err}");
    let err = cli::fails(
        SUITE,
        "twice",
        &format!("{}outputs {{ q = h }}\n", with("  p = logits")),
        "duplicate-item",
    );
    assert!(err.contains("a spec has one `outputs`"), "{err}");
}

#[test]
fn a_missing_checkpoint_is_an_error() {
    let dir = trained("missing_ckpt");
    std::fs::write(dir.join("new.csv"), rows(5, 3, false).0).unwrap();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "predict",
            "linear.spec",
            "--checkpoint",
            "empty",
            "--data",
            "new.csv",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    assert!(err.contains("empty") && err.contains("checkpoint"), "{err}");
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "predict",
            "linear.spec",
            "--checkpoint",
            "ckpt/model.ckpt-999",
            "--data",
            "new.csv",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("model.ckpt-999"), "{err}");
}

#[test]
fn a_checkpoint_of_another_model_is_an_error() {
    let dir = trained("other_model");
    std::fs::write(dir.join("new.csv"), rows(5, 3, false).0).unwrap();
    let wider = LINEAR
        .replace("W: [3, 3]", "W: [3, 4]")
        .replace("b: [3]", "b: [4]");
    std::fs::write(dir.join("wider.spec"), wider).unwrap();
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "predict",
            "wider.spec",
            "--checkpoint",
            "ckpt",
            "--data",
            "new.csv",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`W`") || err.contains(" W"), "{err}");
    assert!(err.contains("[3,3]") || err.contains("[3, 3]"), "{err}");
}

#[test]
fn a_bad_row_names_file_line_and_column_and_writes_nothing() {
    let dir = trained("bad_row");
    let (text, _) = rows(30, 5, false);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[21] = "0.5,abc,1".into();
    std::fs::write(dir.join("bad.csv"), lines.join("\n") + "\n").unwrap();
    let (code, _, err) = predict(
        &dir,
        &["--data", "bad.csv", "--batch", "4", "-o", "out.csv"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.csv:22"), "{err}");
    assert!(err.contains("x1"), "{err}");
    assert!(!dir.join("out.csv").exists());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A file without a feature column.
    std::fs::write(dir.join("nox.csv"), "x0,x1\n1,2\n").unwrap();
    let (code, out, err) = predict(&dir, &["--data", "nox.csv"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "", "nothing before the first batch is read");
    assert!(err.contains("nox.csv") && err.contains("x2"), "{err}");
}
