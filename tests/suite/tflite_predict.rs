//! `specc predict --tflite`: digits_mlp trained a few steps, exported to
//! TFLite, and run by specc's own interpreter on every row of the digits
//! data through the spec's feature columns. Its predictions must equal those
//! of the compiled `predict` function with the checkpoint: `probs` within
//! 1e-5 relative, `class` exactly, same row count and order. Also: a fixed
//! batch export (last batch padded), JSON lines, and the errors (a model
//! whose input the spec lacks, a file that is not a model, both
//! `--checkpoint` and `--tflite`). Quantized exports (`--quantize dynamic`,
//! `--quantize int8` calibrated on 300 rows) keep the float model's accuracy
//! within 1 point, int8 probabilities are multiples of 1/256, the weights
//! int8 per channel; `--quantize int8` without rows, with rows the feature
//! columns refuse, or of a model with an operator it does not cover is an
//! error and writes no file.

use crate::cli;
use crate::common::tflite_digits;

use std::path::{Path, PathBuf};

use cli::specc;
use tflite_digits::{assert_same, export_tflite, predict_rows};

const SUITE: &str = "tflite_predict";

fn digits_spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_mlp.spec")
}

fn digits_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/data/digits.csv")
}

/// A work directory with digits_mlp trained 30 steps into `ckpt/` and
/// exported (with `extra` export arguments) to `model.tflite`.
fn exported(name: &str, extra: &[&str]) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let spec = digits_spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "30", "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = export_tflite(&dir, spec, "model.tflite", extra);
    assert_eq!(code, 0, "{err}");
    dir
}

/// `predict` with `args` (after the spec and data) to `out`; the CSV
/// rows as numbers, after checking the header.
fn predict(dir: &Path, args: &[&str], out: &str) -> Vec<Vec<f64>> {
    predict_rows(dir, &digits_spec(), &digits_data(), args, out)
}

#[test]
fn tflite_predictions_equal_the_compiled_predict_function() {
    let dir = exported("float", &[]);
    let compiled = predict(&dir, &["--checkpoint", "ckpt"], "compiled.csv");
    let tflite = predict(&dir, &["--tflite", "model.tflite"], "tflite.csv");
    assert_same(&tflite, &compiled);
    // A batch that does not divide the rows: the same predictions.
    let small = predict(
        &dir,
        &["--tflite", "model.tflite", "--batch", "100"],
        "small.csv",
    );
    assert_eq!(small, tflite);
}

#[test]
fn fixed_batch_model_pads_the_last_batch() {
    let dir = exported("fixed", &["--batch", "64"]);
    let compiled = predict(&dir, &["--checkpoint", "ckpt"], "compiled.csv");
    // 1797 = 28 * 64 + 5: the last batch is padded and its padding dropped.
    let tflite = predict(&dir, &["--tflite", "model.tflite"], "tflite.csv");
    assert_same(&tflite, &compiled);
    // Calibrating a fixed-batch model on 100 rows (64 + 36 and padding):
    // the padding is not calibrated on, so the parameters and predictions
    // equal those of a dynamic-batch model calibrated on the same rows.
    let spec = digits_spec();
    let data = digits_data();
    for (out, batch) in [("fixed8.tflite", Some("64")), ("dynamic8.tflite", None)] {
        let mut extra = vec![
            "--quantize",
            "int8",
            "--representative-data",
            data.to_str().unwrap(),
            "--samples",
            "100",
        ];
        if let Some(b) = batch {
            extra.extend(["--batch", b]);
        }
        let (code, _, err) = export_tflite(&dir, spec.to_str().unwrap(), out, &extra);
        assert_eq!(code, 0, "{err}");
    }
    let quantization = |file: &str| {
        let m = specc_tflite::read_file(&dir.join(file)).unwrap();
        m.subgraphs[0]
            .tensors
            .iter()
            .map(|t| (t.name.clone(), t.quantization.clone()))
            .collect::<Vec<_>>()
    };
    let fixed = quantization("fixed8.tflite");
    assert_eq!(fixed, quantization("dynamic8.tflite"));
    assert!(fixed.iter().filter(|(_, q)| q.is_some()).count() >= 8);
    assert_eq!(
        predict(&dir, &["--tflite", "fixed8.tflite"], "fixed8.csv"),
        predict(&dir, &["--tflite", "dynamic8.tflite"], "dynamic8.csv")
    );
}

#[test]
fn tflite_predict_writes_json_lines() {
    let dir = exported("jsonl", &[]);
    let spec = digits_spec();
    let data = digits_data();
    let (code, out, err) = specc(
        &dir,
        &[
            "predict",
            spec.to_str().unwrap(),
            "--tflite",
            "model.tflite",
            "--data",
            data.to_str().unwrap(),
            "--format",
            "jsonl",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1797);
    assert!(lines[0].starts_with("{\"probs\":["), "{}", lines[0]);
    assert!(lines[0].contains("],\"class\":"), "{}", lines[0]);
}

#[test]
fn tflite_predict_errors_name_the_file() {
    let dir = exported("errors", &[]);
    let data = digits_data();
    let data = data.to_str().unwrap();
    // A spec whose input has another name.
    let other = std::fs::read_to_string(digits_spec())
        .unwrap()
        .replace("pixels", "image")
        .replace("data/digits.csv", data);
    std::fs::write(dir.join("other.spec"), other).unwrap();
    let (code, _, err) = specc(
        &dir,
        &[
            "predict",
            "other.spec",
            "--tflite",
            "model.tflite",
            "--data",
            data,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("model.tflite: the model's input `pixels` is not an input of the spec"),
        "{err}"
    );
    // Not a model.
    std::fs::write(dir.join("junk.tflite"), b"not a flatbuffer at all").unwrap();
    let spec = digits_spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["predict", spec, "--tflite", "junk.tflite", "--data", data],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("junk.tflite"), "{err}");
    // Both a checkpoint and a model.
    let (code, _, err) = specc(
        &dir,
        &[
            "predict",
            spec,
            "--tflite",
            "model.tflite",
            "--checkpoint",
            "ckpt",
            "--data",
            data,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--checkpoint"), "{err}");
}

/// The accuracy of `predict` rows against the digits labels.
fn accuracy(rows: &[Vec<f64>]) -> f64 {
    let text = std::fs::read_to_string(digits_data()).unwrap();
    let labels: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(labels.len(), rows.len());
    let right = rows
        .iter()
        .zip(&labels)
        .filter(|(r, l)| r[10] == **l)
        .count();
    right as f64 / labels.len() as f64
}

#[test]
fn quantized_models_keep_the_float_accuracy() {
    let dir = exported("quantized", &[]);
    let spec = digits_spec();
    let spec = spec.to_str().unwrap();
    let data = digits_data();
    let data = data.to_str().unwrap();
    for (out, extra) in [
        ("dynamic.tflite", vec!["--quantize", "dynamic"]),
        (
            "int8.tflite",
            vec![
                "--quantize",
                "int8",
                "--representative-data",
                data,
                "--samples",
                "300",
            ],
        ),
    ] {
        let (code, stdout, err) = export_tflite(&dir, spec, out, &extra);
        assert_eq!(code, 0, "{err}");
        if out == "int8.tflite" {
            assert!(stdout.contains("calibrated on 300 rows"), "{stdout}");
        } else {
            assert!(stdout.contains("2 weight tensors to int8"), "{stdout}");
        }
    }
    let float = predict(&dir, &["--tflite", "model.tflite"], "float.csv");
    let dynamic = predict(&dir, &["--tflite", "dynamic.tflite"], "dynamic.csv");
    let int8 = predict(&dir, &["--tflite", "int8.tflite"], "int8.csv");
    let (f, d, q) = (accuracy(&float), accuracy(&dynamic), accuracy(&int8));
    eprintln!("accuracy: float {f:.4}, dynamic {d:.4}, int8 {q:.4}");
    assert!(f > 0.5, "{f}");
    assert!((d - f).abs() <= 0.01, "dynamic {d} vs float {f}");
    assert!((q - f).abs() <= 0.01, "int8 {q} vs float {f}");
    // The int8 probabilities are multiples of 1/256.
    for r in &int8 {
        for &p in &r[..10] {
            assert_eq!((p * 256.0).fract(), 0.0, "{p}");
        }
    }
    // The model file holds int8 weights with per-channel scales.
    let model = specc_tflite::read_file(&dir.join("int8.tflite")).unwrap();
    let g = &model.subgraphs[0];
    let w1 = g.tensors.iter().find(|t| t.name == "W1/transpose").unwrap();
    assert_eq!(w1.tensor_type, specc_tflite::TensorType::Int8);
    let q = w1.quantization.as_ref().unwrap();
    assert_eq!((q.scale.len(), q.quantized_dimension), (128, 0));
    assert!(q.zero_point.iter().all(|&z| z == 0));
    // `inspect` shows the operator versions and quantization parameters.
    let (code, text, err) = specc(&dir, &["inspect", "int8.tflite"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "QUANTIZE         v1 ",
        "FULLY_CONNECTED  v4 ",
        "SOFTMAX          v2 ",
        "DEQUANTIZE       v2 ",
        "probs/int8       INT8     [-1, 10] scale=[0.00390625] zero_point=[-128]",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    let (_, text, _) = specc(&dir, &["inspect", "dynamic.tflite"]);
    assert!(
        text.contains("FULLY_CONNECTED  v12") && text.contains("asymmetric_quantize_inputs=true"),
        "{text}"
    );
}

#[test]
fn quantize_errors_name_what_is_missing() {
    let dir = exported("quantize_errors", &[]);
    let spec = digits_spec();
    let spec = spec.to_str().unwrap();
    let export = |extra: &[&str]| export_tflite(&dir, spec, "q.tflite", extra);
    let (code, _, err) = export(&["--quantize", "int8"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--quantize int8 needs --representative-data"),
        "{err}"
    );
    // Representative rows without the spec's columns.
    std::fs::write(dir.join("bad.csv"), "a,b\n1,2\n").unwrap();
    let (code, _, err) = export(&["--quantize", "int8", "--representative-data", "bad.csv"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.csv"), "{err}");
    assert!(!dir.join("q.tflite").exists());
    // An operator full-integer quantization does not cover.
    let data = digits_data();
    let text = std::fs::read_to_string(digits_spec())
        .unwrap()
        .replace("data/digits.csv", data.to_str().unwrap())
        .replace("loss = mean", "z = tanh(logits)\nloss = mean");
    std::fs::write(dir.join("tanh.spec"), text).unwrap();
    let (code, _, err) = export_tflite(
        &dir,
        "tanh.spec",
        "q.tflite",
        &[
            "--fetch",
            "z",
            "--quantize",
            "int8",
            "--representative-data",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("(TANH computing `z`)"), "{err}");
    assert!(err.contains("--quantize dynamic"), "{err}");
    assert!(!dir.join("q.tflite").exists());
}
