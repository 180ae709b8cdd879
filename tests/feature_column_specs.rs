//! The shipped feature-column specs learn what numbers alone cannot: on the
//! same held-out rows (the same stratified split, optimizer and duration),
//! `specs/titanic.spec` and `specs/credit.spec` beat a logistic regression on
//! their numeric columns alone (`specs/baselines/*_numeric.spec`) in
//! held-out accuracy and AUC, and `specs/ctr_ftrl.spec` (W5) trains from
//! hashed strings to a held-out AUC above chance. Each spec runs through the
//! CLI (`specc run --json`), from its CSV to its metrics.

use std::path::Path;
use std::process::Command;

fn held_out(spec: &str) -> (f64, f64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .arg("run")
        .arg(root.join(spec))
        .arg("--json")
        .output()
        .expect("runs specc");
    assert!(
        out.status.success(),
        "{spec}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("a JSON line");
    let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
    let eval = &v["eval"];
    (
        eval["accuracy"].as_f64().unwrap_or(f64::NAN),
        eval["auc"].as_f64().expect("held-out auc"),
    )
}

fn beats_numeric_baseline(spec: &str, baseline: &str) {
    let (acc, auc) = held_out(spec);
    let (base_acc, base_auc) = held_out(baseline);
    assert!(
        acc > base_acc && auc > base_auc,
        "{spec}: held-out accuracy {acc:.4} auc {auc:.4}, baseline {baseline}: accuracy {base_acc:.4} auc {base_auc:.4}"
    );
}

#[test]
fn titanic_feature_columns_beat_numeric_logistic_regression() {
    beats_numeric_baseline("specs/titanic.spec", "specs/baselines/titanic_numeric.spec");
}

#[test]
fn credit_feature_columns_beat_numeric_logistic_regression() {
    beats_numeric_baseline("specs/credit.spec", "specs/baselines/credit_numeric.spec");
}

#[test]
fn ctr_ftrl_learns_from_hashed_strings() {
    let (_, auc) = held_out("specs/ctr_ftrl.spec");
    assert!(auc > 0.55, "held-out auc {auc}");
}
