//! `specc export --format tflite` of a convolutional network: digits_cnn
//! trained a few steps, exported, and run by specc's TFLite interpreter
//! (`predict --tflite`) on every row of the digits data. Its probabilities
//! must equal the compiled `predict` function's with the checkpoint within
//! 1e-5 relative and its classes exactly; the model is the TFLite operators
//! TF's converter would write (CONV_2D with the bias and RELU fused,
//! MAX_POOL_2D, FULLY_CONNECTED, SOFTMAX), which `inspect` lists with their
//! options. Full-integer quantization does not cover convolutions: refused,
//! no file written. (The small convolution and pooling cases, one per
//! TFLite operator, are `compiler/tests/tflite_export.rs`; LiteRT runs
//! these models in `interop/test_tflite_cnn.py`.)

mod cli;

use std::path::{Path, PathBuf};

use cli::specc;
use specc_tflite::BuiltinOperator as B;

const SUITE: &str = "tflite_cnn";

fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_cnn.spec")
}

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/data/digits.csv")
}

/// A work directory with digits_cnn trained 40 steps into `ckpt/` and
/// exported to `model.tflite`.
fn exported(name: &str) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let spec = spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "40", "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = specc(
        &dir,
        &[
            "export",
            spec,
            "--checkpoint",
            "ckpt",
            "--format",
            "tflite",
            "-o",
            "model.tflite",
        ],
    );
    assert_eq!(code, 0, "{err}");
    dir
}

/// `predict` with `args` to `out`: the CSV rows as numbers.
fn predict(dir: &Path, args: &[&str], out: &str) -> Vec<Vec<f64>> {
    let (spec, data) = (spec(), data());
    let mut all = vec![
        "predict",
        spec.to_str().unwrap(),
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
    let header: Vec<String> = (0..10).map(|i| format!("probs_{i}")).collect();
    assert_eq!(lines.next().unwrap(), format!("{},class", header.join(",")));
    lines
        .map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect())
        .collect()
}

#[test]
fn digits_cnn_tflite_predictions_equal_the_compiled_predict_function() {
    let dir = exported("predict");
    let compiled = predict(&dir, &["--checkpoint", "ckpt"], "compiled.csv");
    let tflite = predict(&dir, &["--tflite", "model.tflite"], "tflite.csv");
    assert_eq!(tflite.len(), 1797);
    assert_eq!(tflite.len(), compiled.len());
    for (r, (t, c)) in tflite.iter().zip(&compiled).enumerate() {
        assert_eq!(t.len(), 11);
        for k in 0..10 {
            let tol = 1e-5 * c[k].abs().max(1e-6);
            assert!(
                (t[k] - c[k]).abs() <= tol,
                "row {r} probs_{k}: tflite {} vs compiled {}",
                t[k],
                c[k]
            );
        }
        assert_eq!(t[10], c[10], "row {r}: class");
    }
    // Trained: not every row is the same class.
    let first = compiled[0][10];
    assert!(compiled.iter().any(|c| c[10] != first));
}

#[test]
fn digits_cnn_exports_tflite_convolution_operators() {
    let dir = exported("operators");
    let model = specc_tflite::read_file(&dir.join("model.tflite")).unwrap();
    let ops: Vec<B> = model.subgraphs[0]
        .operators
        .iter()
        .map(|o| model.builtin(o).unwrap())
        .collect();
    assert_eq!(
        ops,
        vec![
            B::Reshape,
            B::Conv2d,
            B::Conv2d,
            B::MaxPool2d,
            B::Reshape,
            B::FullyConnected,
            B::FullyConnected,
            B::ArgMax,
            B::Softmax,
        ]
    );
    let (code, text, err) = specc(&dir, &["inspect", "model.tflite"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "K1/filter",
        "FLOAT32  [32, 3, 3, 1] const",
        "K2/filter",
        "FLOAT32  [64, 3, 3, 32] const",
        "padding=SAME stride_w=1 stride_h=1 dilation_w_factor=1 dilation_h_factor=1 fused_activation_function=RELU",
        "MAX_POOL_2D      v1 ",
        "padding=VALID stride_w=2 stride_h=2 filter_width=2 filter_height=2 fused_activation_function=NONE",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
}

#[test]
fn digits_cnn_int8_quantization_is_refused() {
    let dir = exported("int8");
    let (spec, data) = (spec(), data());
    let (code, _, err) = specc(
        &dir,
        &[
            "export",
            spec.to_str().unwrap(),
            "--checkpoint",
            "ckpt",
            "--format",
            "tflite",
            "-o",
            "int8.tflite",
            "--quantize",
            "int8",
            "--representative-data",
            data.to_str().unwrap(),
            "--samples",
            "50",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("CONV_2D"), "{err}");
    assert!(
        err.contains("full-integer quantization covers FULLY_CONNECTED"),
        "{err}"
    );
    assert!(!dir.join("int8.tflite").exists());
}
