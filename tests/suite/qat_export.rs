//! Quantization-aware training exported to TF Lite: `digits_mlp_qat`
//! (fake quantization on the input, the weights — per tensor and per
//! channel — and every activation, ranges trained) trained 300 steps and
//! exported with `--quantize int8` and no representative data. The int8
//! model's scales and zero points are the fake quantizations' nudged
//! ranges (TF's converter's: `scale = (max − min) / 255`, the uint8 zero
//! point `round(−min / scale)` − 128; the weights `2·max|w| / 254` with
//! zero point 0), and its classes equal the compiled model's
//! fake-quantized predictions on at least 99% of the digits rows. The
//! float export keeps the fake quantizations as TF's converter does, as
//! QUANTIZE/DEQUANTIZE pairs instead of float arithmetic.

use std::path::{Path, PathBuf};

use serde_json::Value;
use specc_runtime::checkpoint::{latest_checkpoint, BundleReader};

use crate::cli::{self, specc};
use crate::common::tflite_digits::{export_tflite, predict_rows};

fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_mlp_qat.spec")
}

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/data/digits.csv")
}

/// A work directory with digits_mlp_qat trained 300 steps into `ckpt/`.
fn trained(name: &str) -> PathBuf {
    let dir = cli::workdir("qat_export", name);
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, _, err) = specc(
        &dir,
        &[
            "run",
            spec().to_str().unwrap(),
            "--steps",
            "300",
            "--checkpoint-dir",
            "ckpt",
        ],
    );
    assert_eq!(code, 0, "{err}");
    dir
}

/// A trained variable's values.
fn variable(dir: &Path, name: &str) -> Vec<f32> {
    let prefix = latest_checkpoint(dir.join("ckpt")).unwrap().unwrap();
    let reader = BundleReader::open(&prefix).unwrap();
    let (_, _, shape) = reader
        .list_variables()
        .into_iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no variable {name}"));
    let mut v = vec![0f32; shape.iter().product()];
    reader.load_f32_into(name, &mut v).unwrap();
    v
}

/// `specc inspect --json FILE`'s first subgraph.
fn inspect(dir: &Path, file: &str) -> Value {
    let (code, out, err) = specc(dir, &["inspect", "--json", file]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["subgraphs"][0].clone()
}

fn ops(g: &Value) -> Vec<String> {
    g["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["builtin"].as_str().unwrap().to_string())
        .collect()
}

/// TF's converter's int8 `(scale, zero_point)` of a fake quantization's
/// range (computed in double, the uint8 zero point shifted by 128).
fn nudged(min: f32, max: f32, narrow: bool) -> (f32, i64) {
    let qmin = if narrow { 1.0 } else { 0.0 };
    let scale = (f64::from(max) - f64::from(min)) / (255.0 - qmin);
    let zp = (qmin - f64::from(min) / scale).clamp(qmin, 255.0).round();
    (scale as f32, zp as i64 - 128)
}

/// Tensor `t`'s quantization `(scales, zero points)`.
fn quantization(g: &Value, t: usize) -> (Vec<f32>, Vec<i64>) {
    let q = &g["tensors"][t]["quantization"];
    let s = q["scale"].as_array().unwrap();
    let z = q["zero_point"].as_array().unwrap();
    (
        s.iter().map(|v| v.as_f64().unwrap() as f32).collect(),
        z.iter().map(|v| v.as_i64().unwrap()).collect(),
    )
}

/// The index of operator `k`'s input or output `i`.
fn operand(g: &Value, k: usize, side: &str, i: usize) -> usize {
    g["operators"][k][side][i].as_u64().unwrap() as usize
}

#[test]
fn int8_export_takes_the_trained_ranges_and_predicts_as_training_saw() {
    let dir = trained("int8");
    let spec = spec();
    let spec = spec.to_str().unwrap();
    let (code, out, err) = export_tflite(&dir, spec, "int8.tflite", &["--quantize", "int8"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the ranges of 5 fake quantizations"), "{out}");
    let g = inspect(&dir, "int8.tflite");
    assert_eq!(
        ops(&g),
        [
            "QUANTIZE",
            "FULLY_CONNECTED",
            "FULLY_CONNECTED",
            "ARG_MAX",
            "SOFTMAX",
            "DEQUANTIZE"
        ]
    );
    // The input's QUANTIZE: fake_quant_with_min_max_args(min = 0, max = 1).
    let (s, z) = quantization(&g, operand(&g, 0, "outputs", 0));
    assert_eq!((s, z), (vec![nudged(0.0, 1.0, false).0], vec![-128]));
    // The hidden layer and the logits: their trained ranges.
    let (h_min, h_max) = (variable(&dir, "h_min")[0], variable(&dir, "h_max")[0]);
    let (l_min, l_max) = (
        variable(&dir, "logits_min")[0],
        variable(&dir, "logits_max")[0],
    );
    assert!((h_min, h_max) != (0.0, 6.0), "the range was trained");
    for (k, (lo, hi)) in [(1, (h_min, h_max)), (2, (l_min, l_max))] {
        let (s, z) = quantization(&g, operand(&g, k, "outputs", 0));
        let (want_s, want_z) = nudged(lo, hi, false);
        assert_eq!((s, z), (vec![want_s], vec![want_z]), "operator {k}");
    }
    // The weights: W1 per tensor (one scale, as TF's converter writes it),
    // W2 per unit; symmetric narrow ranges, zero point 0.
    let w1 = variable(&dir, "W1");
    let m1 = w1.iter().fold(0f32, |m, v| m.max(v.abs()));
    let (s, z) = quantization(&g, operand(&g, 1, "inputs", 1));
    assert_eq!((s, z), (vec![nudged(-m1, m1, true).0], vec![0]));
    let w2 = variable(&dir, "W2");
    let (s, z) = quantization(&g, operand(&g, 2, "inputs", 1));
    let want: Vec<f32> = (0..10)
        .map(|u| {
            let m = (0..128).fold(0f32, |m, d| m.max(w2[d * 10 + u].abs()));
            nudged(-m, m, true).0
        })
        .collect();
    assert_eq!((s, z), (want, vec![0; 10]));
    // The classes: the compiled model's fake-quantized predictions.
    let compiled = predict_rows(
        &dir,
        Path::new(spec),
        &data(),
        &["--checkpoint", "ckpt"],
        "c.csv",
    );
    let int8 = predict_rows(
        &dir,
        Path::new(spec),
        &data(),
        &["--tflite", "int8.tflite"],
        "q.csv",
    );
    assert_eq!(int8.len(), 1797);
    let same = int8
        .iter()
        .zip(&compiled)
        .filter(|(a, b)| a[10] == b[10])
        .count();
    eprintln!("int8 classes equal to the compiled model's: {same} of 1797");
    assert!(same * 100 >= 99 * 1797, "{same} of 1797");
}

#[test]
fn float_export_keeps_fake_quantizations_as_quantize_dequantize_pairs() {
    let dir = trained("float");
    let spec = spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = export_tflite(&dir, spec, "float.tflite", &[]);
    assert_eq!(code, 0, "{err}");
    let g = inspect(&dir, "float.tflite");
    let names = ops(&g);
    assert_eq!(
        names.iter().filter(|n| *n == "QUANTIZE").count(),
        5,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "DEQUANTIZE").count(),
        5,
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n == "FLOOR"), "{names:?}");
    let compiled = predict_rows(
        &dir,
        Path::new(spec),
        &data(),
        &["--checkpoint", "ckpt"],
        "c.csv",
    );
    let float = predict_rows(
        &dir,
        Path::new(spec),
        &data(),
        &["--tflite", "float.tflite"],
        "f.csv",
    );
    let same = float
        .iter()
        .zip(&compiled)
        .filter(|(a, b)| a[10] == b[10])
        .count();
    eprintln!("float classes equal to the compiled model's: {same} of 1797");
    assert!(same * 100 >= 99 * 1797, "{same} of 1797");
}

#[test]
fn int8_export_without_a_range_for_every_activation_needs_rows() {
    // digits_mlp_qat's logits without their fake quantization: no range.
    let dir = trained("partial");
    let text = std::fs::read_to_string(spec()).unwrap().replace(
        "logits = fake_quant_with_min_max_vars(h @ W2q + b2, logits_min, logits_max)",
        "logits = h @ W2q + b2",
    );
    std::fs::write(dir.join("partial.spec"), text).unwrap();
    let _ = std::fs::remove_file(dir.join("p.tflite"));
    let (code, _, err) = export_tflite(&dir, "partial.spec", "p.tflite", &["--quantize", "int8"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("has no range") && err.contains("--representative-data"),
        "{err}"
    );
    assert!(!dir.join("p.tflite").exists());
    // With rows, the others are calibrated.
    let data = data();
    let (code, out, err) = export_tflite(
        &dir,
        "partial.spec",
        "p.tflite",
        &[
            "--quantize",
            "int8",
            "--representative-data",
            data.to_str().unwrap(),
            "--samples",
            "100",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the ranges of 4 fake quantizations, calibrated on 100 rows"),
        "{out}"
    );
}
