//! Exporting a trained digits model to TFLite, predicting with it and
//! comparing its predictions with the compiled `predict` function's: shared
//! by `tflite_cnn` and `tflite_predict`.
#![allow(dead_code)]

use std::path::Path;

use crate::cli::specc;

/// `specc export SPEC --checkpoint ckpt --format tflite -o OUT EXTRA...` in
/// `dir`; (exit code, stdout, stderr).
pub fn export_tflite(dir: &Path, spec: &str, out: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "export",
        spec,
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

/// `specc predict SPEC --data DATA -o OUT ARGS...` in `dir`, which must
/// succeed; the CSV rows as numbers, after checking the header
/// (`probs_0..probs_9,class`).
pub fn predict_rows(
    dir: &Path,
    spec: &Path,
    data: &Path,
    args: &[&str],
    out: &str,
) -> Vec<Vec<f64>> {
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

/// The TFLite model's predictions of the 1797 digits rows equal the
/// compiled function's: `probs` within 1e-5 relative, `class` exactly; and
/// the model is trained (not every row is the same class).
pub fn assert_same(tflite: &[Vec<f64>], compiled: &[Vec<f64>]) {
    assert_eq!(tflite.len(), 1797);
    assert_eq!(tflite.len(), compiled.len());
    for (r, (t, c)) in tflite.iter().zip(compiled).enumerate() {
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
    // The model is trained: not every row is the same class.
    let first = compiled[0][10];
    assert!(compiled.iter().any(|c| c[10] != first));
}

/// The labels of `data` (a digits CSV with a `label` column), in file order.
pub fn labels(data: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(data).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|&h| h == "label").unwrap();
    lines
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect()
}

/// The fraction of `rows` (`probs_0..probs_9,class`) whose class is the label.
pub fn accuracy(rows: &[Vec<f64>], labels: &[f64]) -> f64 {
    let right = rows.iter().zip(labels).filter(|(r, &l)| r[10] == l).count();
    right as f64 / rows.len() as f64
}
