//! `specc export --format tflite --raw-inputs`: the feature columns in the
//! model. Titanic and credit without their hashed columns (the name's hash
//! bucket, the crosses) — numeric columns with defaults for missing cells
//! (263 missing ages, missing incomes, assets and debts) and normalizers
//! (`(x - 30) / 15`, `log1p(x) - 4`, ...), bucketized columns, vocabulary
//! columns with missing cells — trained a few steps, exported with raw
//! inputs, and run by specc's interpreter on the CSV's cells
//! (`specc predict --tflite`): the predictions equal the compiled
//! `predict` function's on the same file (probability within 1e-5
//! relative, class exactly, same rows in the same order). The model takes
//! STRING inputs for the vocabulary columns and FLOAT32 ones for the
//! numeric columns, one per raw column, and `.features.json` says so.
//! Quantized: `--quantize dynamic` keeps the predictions (1e-5 relative)
//! and `--quantize int8` of a numeric-only model stays within a few output
//! quanta. Refused, each with an error naming the column: a hashed column
//! (titanic's name), a crossed column (credit's home x job), a vocabulary
//! with OOV buckets, `--inference-input-type int8`, and `--raw-inputs` for
//! `--format object`.

use std::path::{Path, PathBuf};

use crate::cli::{self, specc};

const SUITE: &str = "tflite_raw_inputs";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data(name: &str) -> PathBuf {
    root().join("specs/data").join(name)
}

/// Titanic without the hashed name and the sex x class cross.
fn titanic_vocabulary() -> String {
    std::fs::read_to_string(root().join("specs/titanic.spec"))
        .unwrap()
        .replace(
            "  name   = categorical_column_with_hash_bucket(name, 64)\n",
            "",
        )
        .replace(
            "  cross  = crossed_column([sex, pclass], hash_bucket_size = 16)\n",
            "",
        )
        .replace(", embedding_column(name, dimension = 4))", ")")
        .replace(
            "linear_model(ages, sex, pclass, cross)",
            "linear_model(ages, sex, pclass)",
        )
        .replace("W1: [10, 8]", "W1: [6, 8]")
        .replace(
            "\"data/titanic.csv\"",
            &format!("{:?}", data("titanic.csv")),
        )
}

/// Credit without the home x job cross, with an `outputs` item.
fn credit_vocabulary() -> String {
    std::fs::read_to_string(root().join("specs/credit.spec"))
        .unwrap()
        .replace(
            "  home_x_job = crossed_column([home, job], hash_bucket_size = 64)\n",
            "",
        )
        .replace(", job, home_x_job)", ", job)")
        .replace("\"data/credit.csv\"", &format!("{:?}", data("credit.csv")))
        + "outputs {\n  probability = sigmoid(logits)\n  class       = cast(logits > 0, int32)\n}\n"
}

/// A work directory with `spec` written as `model.spec` and trained
/// `steps` steps into `ckpt/`.
fn trained(name: &str, spec: &str, steps: &str) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    std::fs::write(dir.join("model.spec"), spec).unwrap();
    let (code, _, err) = specc(
        &dir,
        &[
            "run",
            "model.spec",
            "--steps",
            steps,
            "--checkpoint-dir",
            "ckpt",
        ],
    );
    assert_eq!(code, 0, "{err}");
    dir
}

fn export(dir: &Path, out: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "export",
        "model.spec",
        "--checkpoint",
        "ckpt",
        "--format",
        "tflite",
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    specc(dir, &args)
}

/// `predict` on `data` with `args` to `out`: the rows (probability,
/// class), after checking the header.
fn predict(dir: &Path, data: &Path, args: &[&str], out: &str) -> Vec<(f64, i64)> {
    let mut all = vec![
        "predict",
        "model.spec",
        "--data",
        data.to_str().unwrap(),
        "-o",
        out,
    ];
    all.extend_from_slice(args);
    let (code, _, err) = specc(dir, &all);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join(out)).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("probability,class"));
    lines
        .map(|l| {
            let (p, c) = l.split_once(',').unwrap();
            (p.parse().unwrap(), c.parse().unwrap())
        })
        .collect()
}

/// Probabilities within `tol` relative, classes equal, same rows; and
/// the model is trained (both classes are predicted).
fn assert_same(got: &[(f64, i64)], want: &[(f64, i64)], rows: usize, tol: f64) {
    assert_eq!(got.len(), rows);
    assert_eq!(want.len(), rows);
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g.0 - w.0).abs() <= tol * w.0.abs(),
            "row {r}: probability {} vs {}",
            g.0,
            w.0
        );
        assert_eq!(g.1, w.1, "row {r}: class");
    }
    assert!(want.iter().any(|r| r.1 == 0) && want.iter().any(|r| r.1 == 1));
}

/// The signature's inputs of a model: name and type.
fn inputs(dir: &Path, file: &str) -> Vec<(String, specc_tflite::TensorType)> {
    let m = specc_tflite::read_file(&dir.join(file)).unwrap();
    let g = &m.subgraphs[0];
    m.signature_defs[0]
        .inputs
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                g.tensors[t.tensor_index as usize].tensor_type,
            )
        })
        .collect()
}

#[test]
fn titanic_raw_inputs_equal_the_compiled_predict_function() {
    use specc_tflite::TensorType::{Float32, String};
    let dir = trained("titanic", &titanic_vocabulary(), "120");
    let (code, _, err) = export(&dir, "raw.tflite", &["--raw-inputs"]);
    assert_eq!(code, 0, "{err}");
    // One input per raw column, in the order the inputs read them.
    let want = [("age", Float32), ("pclass", String), ("sex", String)];
    let want: Vec<_> = want.iter().map(|(n, t)| (n.to_string(), *t)).collect();
    assert_eq!(inputs(&dir, "raw.tflite"), want);
    let data = data("titanic.csv");
    let compiled = predict(&dir, &data, &["--checkpoint", "ckpt"], "compiled.csv");
    let raw = predict(&dir, &data, &["--tflite", "raw.tflite"], "raw.csv");
    assert_same(&raw, &compiled, 1309, 1e-5);
    // A batch that does not divide the rows, and a fixed-batch model
    // (its last batch padded with missing cells).
    let small = predict(
        &dir,
        &data,
        &["--tflite", "raw.tflite", "--batch", "100"],
        "small.csv",
    );
    assert_eq!(small, raw);
    let (code, _, err) = export(&dir, "fixed.tflite", &["--raw-inputs", "--batch", "64"]);
    assert_eq!(code, 0, "{err}");
    let fixed = predict(&dir, &data, &["--tflite", "fixed.tflite"], "fixed.csv");
    assert_same(&fixed, &compiled, 1309, 1e-5);
}

#[test]
fn credit_raw_inputs_equal_the_compiled_predict_function() {
    let dir = trained("credit", &credit_vocabulary(), "150");
    let (code, _, err) = export(&dir, "raw.tflite", &["--raw-inputs"]);
    assert_eq!(code, 0, "{err}");
    let data = data("credit.csv");
    let compiled = predict(&dir, &data, &["--checkpoint", "ckpt"], "compiled.csv");
    let raw = predict(&dir, &data, &["--tflite", "raw.tflite"], "raw.csv");
    assert_same(&raw, &compiled, 4454, 1e-5);
    // .features.json: the raw columns the model takes, and what it
    // computes from them.
    let text = std::fs::read_to_string(dir.join("raw.tflite.features.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["raw_inputs"], true);
    let names: Vec<&str> = doc["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let columns = [
        "Seniority",
        "Time",
        "Age",
        "Expenses",
        "Income",
        "Assets",
        "Debt",
        "Amount",
        "Price",
        "Home",
        "Job",
        "Marital",
        "Records",
    ];
    assert_eq!(names, columns);
    assert_eq!(doc["inputs"][9]["tflite"]["dtype"], "string");
    assert_eq!(doc["inputs"][9]["missing"], "\"\"");
    assert_eq!(doc["inputs"][4]["tflite"]["dtype"], "float32");
    assert_eq!(doc["inputs"][4]["missing"], "NaN");
    assert_eq!(doc["preprocessed"].as_array().unwrap().len(), 21);
    // Dynamic-range quantization of the exported operators: the same
    // predictions.
    let (code, _, err) = export(
        &dir,
        "dynamic.tflite",
        &["--raw-inputs", "--quantize", "dynamic"],
    );
    assert_eq!(code, 0, "{err}");
    let dynamic = predict(&dir, &data, &["--tflite", "dynamic.tflite"], "dynamic.csv");
    assert_same(&dynamic, &compiled, 4454, 1e-5);
}

#[test]
fn int8_raw_inputs_quantize_the_exported_operators() {
    // Titanic's age alone (a default and a normalizer; one FULLY_CONNECTED
    // that full-integer quantization covers), calibrated on 300 rows.
    let spec = std::fs::read_to_string(root().join("specs/baselines/titanic_numeric.spec"))
        .unwrap()
        .replace(
            "\"../data/titanic.csv\"",
            &format!("{:?}", data("titanic.csv")),
        )
        + "outputs {\n  probability = sigmoid(logits)\n}\n";
    let dir = trained("int8", &spec, "100");
    let data = data("titanic.csv");
    let calibration = [
        "--quantize",
        "int8",
        "--representative-data",
        data.to_str().unwrap(),
        "--samples",
        "300",
    ];
    let mut raw_args = calibration.to_vec();
    raw_args.push("--raw-inputs");
    for (out, args) in [
        ("dense8.tflite", &calibration[..]),
        ("raw8.tflite", &raw_args[..]),
    ] {
        let (code, _, err) = export(&dir, out, args);
        assert_eq!(code, 0, "{err}");
    }
    let probabilities = |file: &str, out: &str| -> Vec<f64> {
        let args = [
            "predict",
            "model.spec",
            "--tflite",
            file,
            "--data",
            data.to_str().unwrap(),
            "-o",
            out,
        ];
        let (code, _, err) = specc(&dir, &args);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(dir.join(out)).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("probability"));
        lines.map(|l| l.parse().unwrap()).collect()
    };
    let dense = probabilities("dense8.tflite", "dense8.csv");
    let raw = probabilities("raw8.tflite", "raw8.csv");
    assert_eq!(raw.len(), 1309);
    assert_eq!(dense.len(), 1309);
    // The same quantized operators after a float preprocessing: a
    // probability differs by at most one output quantum (1/256) where the
    // float32 normalizer rounds a value to the other side of an input
    // quantum's boundary.
    for (r, (g, w)) in raw.iter().zip(&dense).enumerate() {
        assert!((g - w).abs() <= 1.0 / 256.0 + 1e-6, "row {r}: {g} vs {w}");
    }
    let same = raw.iter().zip(&dense).filter(|(g, w)| g == w).count();
    assert!(same >= 1300, "{same} of 1309 probabilities equal");
}

#[test]
fn hashed_columns_are_refused_with_the_object_entry_point() {
    let titanic = std::fs::read_to_string(root().join("specs/titanic.spec"))
        .unwrap()
        .replace(
            "\"data/titanic.csv\"",
            &format!("{:?}", data("titanic.csv")),
        );
    let dir = trained("refusals", &titanic, "5");
    let (code, _, err) = export(&dir, "t.tflite", &["--raw-inputs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error[tflite-unsupported]: `name/ids` cannot take a raw input in TF Lite (--raw-inputs): categorical_column_with_hash_bucket hashes its values"), "{err}");
    assert!(
        err.contains("embedding_column(name, dimension = 4)"),
        "{err}"
    );
    assert!(err.contains("specc_predict_raw"), "{err}");
    assert!(!dir.join("t.tflite").exists());
    // The cross, once the name is gone.
    let crossed = titanic
        .replace(
            "  name   = categorical_column_with_hash_bucket(name, 64)\n",
            "",
        )
        .replace(", embedding_column(name, dimension = 4))", ")")
        .replace("W1: [10, 8]", "W1: [6, 8]");
    let dir_crossed = trained("refusals_crossed", &crossed, "5");
    let (code, _, err) = export(&dir_crossed, "c.tflite", &["--raw-inputs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`pclass_X_sex/ids` cannot take a raw input in TF Lite (--raw-inputs): crossed_column hashes the crossed values"), "{err}");
    // OOV buckets hash the values outside the vocabulary.
    let oov = crossed
        .replace(
            "  cross  = crossed_column([sex, pclass], hash_bucket_size = 16)\n",
            "",
        )
        .replace(
            "linear_model(ages, sex, pclass, cross)",
            "linear_model(ages, sex, pclass)",
        )
        .replace(
            "[\"1st\", \"2nd\", \"3rd\"])",
            "[\"1st\", \"2nd\", \"3rd\"], num_oov_buckets = 2)",
        )
        .replace("W1: [6, 8]", "W1: [8, 8]");
    let dir_oov = trained("refusals_oov", &oov, "5");
    let (code, _, err) = export(&dir_oov, "o.tflite", &["--raw-inputs"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the vocabulary's num_oov_buckets hash the values outside it"),
        "{err}"
    );
    // Integer inputs, and the object format.
    let data = data("titanic.csv");
    let (code, _, err) = export(
        &dir,
        "i.tflite",
        &[
            "--raw-inputs",
            "--quantize",
            "int8",
            "--representative-data",
            data.to_str().unwrap(),
            "--inference-input-type",
            "int8",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--raw-inputs: the model takes raw strings and float32 values, so its inputs cannot be int8"), "{err}");
    let (code, _, err) = specc(
        &dir,
        &[
            "export",
            "model.spec",
            "--checkpoint",
            "ckpt",
            "--format",
            "object",
            "-o",
            "m.o",
            "--raw-inputs",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--raw-inputs is for --format tflite"), "{err}");
}
