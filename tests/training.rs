//! End-to-end training of the shipped specs through the CLI, against known
//! accuracies: digits_mlp reaches at least 97% on its held-out split and
//! cancer_logreg at least 95% (the targets of the issue; the data sets' usual
//! results for these models). Plus properties of the runtime that training
//! relies on.

use std::process::Command;

use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{self, Source};
use specc_runtime::metrics::{Metric, MetricKind};
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::{evaluate_rows, fit, StopAtStepHook};

fn run_json(spec: &str, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .arg("run")
        .arg(spec)
        .arg("--json")
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().expect("output");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
}

/// A shipped spec's text.
fn read_spec(name: &str) -> String {
    std::fs::read_to_string(format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A data file of `specs/data/` loaded for a compiled program's inputs.
fn load_csv(program: &specc_compiler::driver::Program, file: &str) -> data::Dataset {
    let path = format!("{}/specs/data/{file}", env!("CARGO_MANIFEST_DIR"));
    data::load(
        &Source::Csv { path: path.into() },
        &program.model.input_specs(),
    )
    .unwrap()
}

#[test]
fn digits_mlp_reaches_97_percent_held_out() {
    let r = run_json("specs/digits_mlp.spec", &[]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
    assert!(r["train"]["accuracy"].as_f64().unwrap() >= 0.99);
    assert_eq!(r["steps"], 3000);
}

#[test]
fn cancer_logreg_reaches_95_percent_held_out() {
    let r = run_json("specs/cancer_logreg.spec", &[]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.95, "held-out accuracy {acc}");
    let auc = r["eval"]["auc"].as_f64().unwrap();
    assert!(auc >= 0.97, "held-out auc {auc}");
}

#[test]
fn steps_and_eval_fraction_flags_override_the_spec() {
    let r = run_json(
        "specs/cancer_logreg.spec",
        &["--steps", "10", "--eval-fraction", "0.5"],
    );
    assert_eq!(r["steps"], 10);
    let (train, eval) = (
        r["train"]["rows"].as_u64().unwrap(),
        r["eval"]["rows"].as_u64().unwrap(),
    );
    assert_eq!(train + eval, 569);
    assert!((eval as i64 - 285).abs() <= 1, "eval rows {eval}");
}

/// The batch size is a runtime loop bound: evaluating 100 rows in batches of
/// 64 + 36 gives the same loss as one row at a time (up to summation order).
#[test]
fn a_short_last_batch_needs_no_recompile_and_computes_the_same() {
    let text = read_spec("digits_mlp.spec");
    let program = compile(&SourceFile::new("digits_mlp.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "digits.csv");
    let metrics = [Metric {
        name: "accuracy".into(),
        kind: MetricKind::Accuracy,
        per_example: 1,
    }];
    let rows: Vec<u32> = (0..100).collect();
    let mut s = program.session().unwrap();
    let batched = evaluate_rows(&mut s, &ds, &rows, &metrics).unwrap();
    let mut one_by_one = 0.0;
    for r in &rows {
        one_by_one += evaluate_rows(&mut s, &ds, &[*r], &metrics).unwrap().loss;
    }
    one_by_one /= rows.len() as f64;
    assert!(
        (batched.loss - one_by_one).abs() < 1e-5 * one_by_one.abs().max(1.0),
        "{} vs {one_by_one}",
        batched.loss
    );
    // Untrained, glorot-initialized: about chance.
    assert!(batched.loss > 1.5 && batched.loss < 3.5, "{}", batched.loss);
}

/// Every optimizer's example spec (`specs/optimizers/`) trains logistic
/// regression on the breast cancer data to the accuracy that model reaches.
#[test]
fn every_optimizer_example_learns_the_cancer_data() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/specs/optimizers");
    let mut specs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "spec"))
        .collect();
    specs.sort();
    assert_eq!(
        specs.len(),
        10,
        "one example per tf.compat.v1.train optimizer"
    );
    for spec in specs {
        let r = run_json(spec.to_str().unwrap(), &[]);
        let train = r["train"]["accuracy"].as_f64().unwrap();
        let held = r["eval"]["accuracy"].as_f64().unwrap();
        let name = spec.display();
        assert!(train >= 0.98, "{name}: train accuracy {train}");
        assert!(held >= 0.94, "{name}: held-out accuracy {held}");
    }
}

/// The digits MLP with a schedule, global-norm clipping and moving averages
/// learns as well as the plain one, with and without the averages, and reports
/// the last step's learning rate (the cosine schedule's end value) and norm.
#[test]
fn digits_with_clipping_and_moving_averages() {
    let r = run_json("specs/digits_mlp_ema.spec", &["--eval-with-averages"]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    let acc_avg = r["eval_averages"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
    assert!(acc_avg >= 0.97, "held-out accuracy with averages {acc_avg}");
    // cosine_decay(0.003, 3000, alpha = 0.05) at step 2999 (the last step's
    // global_step) is 0.003 * ((1 - 0.05) * 0.5 * (1 + cos(pi * 2999/3000)) + 0.05).
    let t = 2999.0f64 / 3000.0;
    let want = 0.003 * ((1.0 - 0.05) * 0.5 * (1.0 + (std::f64::consts::PI * t).cos()) + 0.05);
    let lr = r["learning_rate"].as_f64().unwrap();
    assert!(
        (lr - want).abs() < 1e-6 * want,
        "learning rate {lr}, want {want}"
    );
    let norm = r["global_norm"].as_f64().unwrap();
    assert!(norm.is_finite() && norm > 0.0, "global norm {norm}");
}

/// With `ema 1` the shadows never move: evaluating with the averages is
/// evaluating the initial model, and swapping back restores the trained one.
#[test]
fn averages_with_decay_one_stay_at_the_initial_values() {
    let text = read_spec("cancer_logreg.spec").replace("train {", "ema 1.0\ntrain {");
    let program = compile(&SourceFile::new("cancer.spec", text), Functions::TRAIN).unwrap();
    let ds = load_csv(&program, "breast_cancer.csv");
    let mut s = program.session().unwrap();
    let initial_w = s.var("W").unwrap().to_vec();
    assert_eq!(s.var("W/ExponentialMovingAverage").unwrap(), &initial_w[..]);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let before = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    let mut batches = ShuffledBatches::new(&ds, &s.layout, rows.clone(), 32, 569, 7).unwrap();
    let trained = fit(
        &mut s,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(200)],
    )
    .unwrap();
    assert_eq!(trained.steps, 200);
    let trained_w = s.var("W").unwrap().to_vec();
    assert_ne!(trained_w, initial_w);
    assert_eq!(s.var("W/ExponentialMovingAverage").unwrap(), &initial_w[..]);
    let after = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    assert!(after < before * 0.5, "{after} vs {before}");
    s.swap_averages();
    assert_eq!(s.var("W").unwrap(), &initial_w[..]);
    let averaged = evaluate_rows(&mut s, &ds, &rows, &[]).unwrap().loss;
    assert_eq!(averaged, before);
    s.swap_averages();
    assert_eq!(s.var("W").unwrap(), &trained_w[..]);
}

/// Pixel intensities as ids into an embedding table (a sparse gradient,
/// applied lazily by Adagrad) learn the digits as well as the dense MLP.
#[test]
fn digits_embedding_reaches_97_percent_held_out() {
    let r = run_json("specs/digits_embedding.spec", &[]);
    let acc = r["eval"]["accuracy"].as_f64().unwrap();
    assert!(acc >= 0.97, "held-out accuracy {acc}");
}
