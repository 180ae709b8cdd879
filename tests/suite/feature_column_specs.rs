//! The shipped feature-column specs learn what numbers alone cannot: on the
//! same held-out rows (the same stratified split, optimizer and duration),
//! `specs/titanic.spec` and `specs/credit.spec` beat a logistic regression on
//! their numeric columns alone (`specs/baselines/*_numeric.spec`) in
//! held-out accuracy and AUC, and `specs/ctr_ftrl.spec` (W5) trains from
//! hashed strings to a held-out AUC above chance. Each spec runs through the
//! CLI (`specc run --json`), from its CSV to its metrics. A bag-of-words
//! spec (`tests/data/bag_of_words.spec`) learns from the words `sep` splits
//! a sentence into.

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

/// Wide & Deep with FTRL on the linear part and Adagrad on the DNN (one
/// optimizer per part) beats the numeric baseline too.
#[test]
fn wide_deep_with_two_optimizers_beats_numeric_logistic_regression() {
    beats_numeric_baseline(
        "specs/wide_deep.spec",
        "specs/baselines/titanic_numeric.spec",
    );
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

/// `specc bench` on W5's spec (the bundled sample): the one-pass contract,
/// and the same trained model whether the plain CSV streams through the
/// pipeline or a gzip copy is loaded into memory first.
#[test]
fn ctr_bench_one_pass_streamed_equals_in_memory() {
    use std::io::Write;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = root.join("specs/data/ctr_sample.csv");
    let dir = std::env::temp_dir().join(format!("specc-ctr-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gz = dir.join("ctr_sample.csv.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(&std::fs::read(&sample).unwrap()).unwrap();
    enc.finish().unwrap();
    let bench = |data: &Path| -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_specc"))
            .arg("bench")
            .arg(root.join("specs/ctr_ftrl.spec"))
            .arg("--data")
            .arg(data)
            .output()
            .expect("runs specc");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap()
    };
    let streamed = bench(&sample);
    let in_memory = bench(&gz);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(streamed["input"], "streamed");
    assert_eq!(in_memory["input"], "in memory");
    let rows = std::fs::read_to_string(&sample).unwrap().lines().count() - 1;
    let train = (rows as f64 * 0.8).floor() as u64;
    for r in [&streamed, &in_memory] {
        assert_eq!(r["rows"], rows as u64);
        assert_eq!(r["train_rows"], train);
        assert_eq!(r["heldout_rows"], rows as u64 - train);
        assert_eq!(r["steps"], train.div_ceil(256));
        assert!(r["heldout_auc"].as_f64().unwrap() > 0.55, "{r}");
    }
    assert_eq!(streamed["heldout_logloss"], in_memory["heldout_logloss"]);
    assert_eq!(streamed["heldout_auc"], in_memory["heldout_auc"]);
}

/// `tests/data/bag_of_words.spec`: a linear model over the words of a
/// sentence (`sep = whitespace`) classifies every held-out sentence of
/// `tests/data/sentences.csv` (each new, its words not); the same model
/// over whole cells (no `sep`: each sentence one id, in so many buckets
/// that none collide) has seen none of them and is at chance.
#[test]
fn bag_of_words_learns_from_the_words_of_split_sentences() {
    // TF's AUC (200 thresholds) of a perfect ranking is 1 up to rounding.
    let (acc, auc) = held_out("tests/data/bag_of_words.spec");
    assert!(acc == 1.0 && (auc - 1.0).abs() < 1e-6, "{acc} {auc}");

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bag_of_words_whole");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        root.join("tests/data/sentences.csv"),
        dir.join("sentences.csv"),
    )
    .unwrap();
    let spec = std::fs::read_to_string(root.join("tests/data/bag_of_words.spec")).unwrap();
    let whole = spec.replace(
        "hash_bucket(text, 1000, sep = whitespace, max_values = 12)",
        "hash_bucket(text, 1000000)",
    );
    assert_ne!(whole, spec);
    std::fs::write(dir.join("whole.spec"), whole).unwrap();
    let (acc, auc) = held_out(dir.join("whole.spec").to_str().unwrap());
    assert!(acc == 0.5 && (auc - 0.5).abs() < 1e-6, "{acc} {auc}");
}
