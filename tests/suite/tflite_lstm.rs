//! `specc export --format tflite` of a recurrent network: digits_lstm (W8)
//! trained, exported with a fixed batch, and run by specc's TFLite
//! interpreter (`predict --tflite`) on every digits row. Its probabilities
//! equal the compiled `predict` function's within 1e-5 relative and its
//! classes exactly; the LSTM is one UNIDIRECTIONAL_SEQUENCE_LSTM whose
//! state is two variable tensors, which `inspect` marks. Dynamic-range
//! quantization makes it TF Lite's hybrid LSTM (every weight int8 per
//! tensor, version 4), within a point of the float model's accuracy. An
//! export without `--batch` is refused at the layer's call and writes no
//! file. text_lstm (embeddings, dropout, lengths) exports and predicts as
//! the compiled function does. (Each cell and option against the reference interpreter:
//! `compiler/tests/tflite_recurrent.rs`; in LiteRT:
//! `interop/test_tflite_rnn.py`.)

use crate::cli;
use crate::common::tflite_digits;

use std::path::{Path, PathBuf};

use cli::specc;
use specc_tflite::{BuiltinOperator as B, TensorType};
use tflite_digits::{accuracy, assert_same, export_tflite, labels, predict_rows};

const SUITE: &str = "tflite_lstm";

fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_lstm.spec")
}

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/data/digits.csv")
}

/// A work directory with digits_lstm trained `steps` steps into `ckpt/`,
/// exported with a batch of 64 to `model.tflite` and dynamic-range
/// quantized to `dynamic.tflite`.
fn exported(name: &str, steps: &str) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let spec = spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", steps, "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    for (out, extra) in [
        ("model.tflite", &["--batch", "64"][..]),
        (
            "dynamic.tflite",
            &["--batch", "64", "--quantize", "dynamic"][..],
        ),
    ] {
        let (code, _, err) = export_tflite(&dir, spec, out, extra);
        assert_eq!(code, 0, "{err}");
    }
    dir
}

fn predict(dir: &Path, args: &[&str], out: &str) -> Vec<Vec<f64>> {
    predict_rows(dir, &spec(), &data(), args, out)
}

#[test]
fn digits_lstm_tflite_predictions_equal_the_compiled_predict_function() {
    let dir = exported("predict", "60");
    let compiled = predict(&dir, &["--checkpoint", "ckpt"], "compiled.csv");
    let tflite = predict(&dir, &["--tflite", "model.tflite"], "tflite.csv");
    assert_same(&tflite, &compiled);
}

#[test]
fn digits_lstm_is_one_unidirectional_sequence_lstm() {
    let dir = exported("operators", "5");
    let model = specc_tflite::read_file(&dir.join("model.tflite")).unwrap();
    let g = &model.subgraphs[0];
    let lstm: Vec<_> = g
        .operators
        .iter()
        .filter(|o| model.builtin(o) == Some(B::UnidirectionalSequenceLstm))
        .collect();
    assert_eq!(lstm.len(), 1);
    let tensor = |i: i32| &g.tensors[i as usize];
    // The rows of 8 pixels, the weights of each gate [128, 8] and [128, 128].
    assert_eq!(tensor(lstm[0].inputs[0]).shape, [64, 8, 8]);
    assert_eq!(tensor(lstm[0].inputs[1]).shape, [128, 8]);
    assert_eq!(tensor(lstm[0].inputs[5]).shape, [128, 128]);
    assert!(tensor(lstm[0].inputs[18]).is_variable);
    assert!(tensor(lstm[0].inputs[19]).is_variable);
    let (code, text, err) = specc(&dir, &["inspect", "model.tflite"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "UNIDIRECTIONAL_SEQUENCE_LSTM v1 ",
        "fused_activation_function=TANH cell_clip=0 proj_clip=0 time_major=false",
        "FLOAT32  [64, 128] variable",
        "recurrence_",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
}

/// digits_lstm after 500 steps (over 90% right; measured 95.4%), quantized: the hybrid
/// LSTM's accuracy is the float model's within one point (18 of 1,797
/// rows; measured: the same 95.4%); every weight is int8 with one scale.
#[test]
fn digits_lstm_dynamic_range_quantization_keeps_the_float_accuracy() {
    let dir = exported("dynamic", "500");
    let model = specc_tflite::read_file(&dir.join("dynamic.tflite")).unwrap();
    let g = &model.subgraphs[0];
    let op = g
        .operators
        .iter()
        .find(|o| model.builtin(o) == Some(B::UnidirectionalSequenceLstm))
        .unwrap();
    assert_eq!(model.operator_codes[op.opcode_index as usize].version, 4);
    for i in 1..=8 {
        let t = &g.tensors[op.inputs[i] as usize];
        assert_eq!(t.tensor_type, TensorType::Int8, "input {i}");
        assert_eq!(t.quantization.as_ref().unwrap().scale.len(), 1);
    }
    let float = predict(&dir, &["--tflite", "model.tflite"], "float.csv");
    let hybrid = predict(&dir, &["--tflite", "dynamic.tflite"], "dynamic.csv");
    let labels = labels(&data());
    let (af, aq) = (accuracy(&float, &labels), accuracy(&hybrid, &labels));
    eprintln!("digits_lstm accuracy: float {af:.4} dynamic {aq:.4}");
    assert!(af > 0.9, "float accuracy {af}");
    assert!((aq - af).abs() <= 0.01, "dynamic {aq} vs float {af}");
}

#[test]
fn a_recurrent_export_without_a_batch_is_refused_at_the_call() {
    let dir = cli::workdir(SUITE, "no_batch");
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let spec = spec();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "1", "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_file(dir.join("model.tflite"));
    let (code, _, err) = export_tflite(&dir, spec, "model.tflite", &[]);
    assert_eq!(code, 2, "{err}");
    for want in [
        "error[tflite-unsupported]: a recurrent layer exports to TensorFlow Lite only with a fixed batch size",
        "digits_lstm.spec:26:",
        "^^^^ a recurrent layer",
        "give `--batch N`",
    ] {
        assert!(err.contains(want), "{want} not in\n{err}");
    }
    assert!(!dir.join("model.tflite").exists(), "no file is written");
}

/// The rows of a `predict` CSV as numbers (after its header).
fn rows(path: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect()
}

/// text_lstm (hashed words, embeddings, dropout, an LSTM over each
/// snippet's length, a mean over its steps) trained a few steps: exported
/// with the inference branch of its dropout, its predictions of every
/// snippet equal the compiled `predict` function's (1e-5 relative, the
/// classes exactly).
#[test]
fn text_lstm_with_dropout_and_lengths_exports_as_it_predicts() {
    let dir = cli::workdir(SUITE, "text_lstm");
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let spec = root.join("specs/text_lstm.spec");
    let data = root.join("specs/data/rotten_tomatoes.csv");
    let (spec, data) = (spec.to_str().unwrap(), data.to_str().unwrap());
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "20", "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = export_tflite(&dir, spec, "model.tflite", &["--batch", "32"]);
    assert_eq!(code, 0, "{err}");
    for (args, out) in [
        (["--checkpoint", "ckpt"], "compiled.csv"),
        (["--tflite", "model.tflite"], "tflite.csv"),
    ] {
        let mut all = vec!["predict", spec, "--data", data, "-o", out];
        all.extend(args);
        let (code, _, err) = specc(&dir, &all);
        assert_eq!(code, 0, "{err}");
    }
    let (compiled, tflite) = (
        rows(&dir.join("compiled.csv")),
        rows(&dir.join("tflite.csv")),
    );
    assert_eq!(compiled.len(), 4863);
    assert_eq!(tflite.len(), compiled.len());
    for (r, (t, c)) in tflite.iter().zip(&compiled).enumerate() {
        assert_eq!(t.len(), 3, "probs_0, probs_1, class");
        for k in 0..2 {
            assert!(
                (t[k] - c[k]).abs() <= 1e-5 * c[k].abs().max(1e-6),
                "row {r} probs_{k}: tflite {} vs compiled {}",
                t[k],
                c[k]
            );
        }
        assert_eq!(t[2], c[2], "row {r}: class");
    }
}
