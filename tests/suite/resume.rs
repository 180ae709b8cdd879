//! Resuming `specc run` from its checkpoint directory: 1,000 steps straight
//! and 400 steps, a stop, and a resume to 1,000 end with identical
//! checkpoints, byte for byte — every variable, slot, optimizer variable and
//! moving average, the global step, and the batch order's position (full
//! shuffle, a tf.data shuffle buffer, data order), with a schedule that
//! draws noise from the global step (`noisy_linear_cosine_decay`).
//!
//! Also: a checkpoint whose variable has another shape is refused, naming
//! the variable and both shapes, and nothing is written.

use crate::cli;

use std::path::{Path, PathBuf};

use cli::specc;

const SUITE: &str = "resume";

fn specs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("specs")
}

/// A work directory with `spec.spec` (and the specs' data next to it).
fn setup(name: &str, spec: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(SUITE)
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::copy(
        specs_dir().join("data/digits.csv"),
        d.join("data/digits.csv"),
    )
    .unwrap();
    std::fs::write(d.join("spec.spec"), spec).unwrap();
    d
}

fn run(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "spec.spec", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = specc(dir, &all);
    assert_eq!(code, 0, "specc {all:?}\n{err}");
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

fn files(dir: &Path, step: u64) -> (Vec<u8>, Vec<u8>) {
    let p = dir.join(format!("model.ckpt-{step}"));
    (
        std::fs::read(p.with_extension(format!("ckpt-{step}.index"))).unwrap(),
        std::fs::read(p.with_extension(format!("ckpt-{step}.data-00000-of-00001"))).unwrap(),
    )
}

fn check_resume_is_exact(name: &str, spec: &str) {
    let dir = setup(name, spec);
    let straight = run(&dir, &["--steps", "1000", "--checkpoint-dir", "straight"]);
    let first = run(&dir, &["--steps", "400", "--checkpoint-dir", "resumed"]);
    assert_eq!(first["global_step"], 400);
    let resumed = run(&dir, &["--steps", "1000", "--checkpoint-dir", "resumed"]);
    assert_eq!(resumed["steps"], 600, "the resumed run does the rest");
    assert_eq!(resumed["global_step"], 1000);
    assert_eq!(straight["last_loss"], resumed["last_loss"]);
    assert_eq!(straight["eval"], resumed["eval"]);
    let (a, b) = (
        files(&dir.join("straight"), 1000),
        files(&dir.join("resumed"), 1000),
    );
    assert!(a.0 == b.0, "{name}: the .index files differ");
    assert!(a.1 == b.1, "{name}: the .data files differ");
    // A finished run asked for no more steps trains nothing, says so and
    // reports the checkpoint's model (Estimator's "Skipping training").
    let (code, out, err) = specc(
        &dir,
        &[
            "run",
            "spec.spec",
            "--json",
            "--steps",
            "1000",
            "--checkpoint-dir",
            "resumed",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("nothing to train") && err.contains("global step 1000"),
        "{err}"
    );
    let again: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(again["steps"], 0);
    assert_eq!(again["global_step"], 1000);
    assert_eq!(again["eval"], straight["eval"]);
    assert_eq!(files(&dir.join("resumed"), 1000), b);
}

fn digits(name: &str) -> String {
    std::fs::read_to_string(specs_dir().join(name)).unwrap()
}

#[test]
fn resume_is_exact_with_a_full_shuffle() {
    check_resume_is_exact("full_shuffle", &digits("digits_mlp.spec"));
}

#[test]
fn resume_is_exact_with_a_shuffle_buffer_noise_clipping_and_moving_averages() {
    let spec = digits("digits_mlp_ema.spec")
        .replace("shuffle = 1797", "shuffle = 100")
        .replace(
            "lr = linear_warmup(cosine_decay(learning_rate = 0.003, decay_steps = 3000, alpha = 0.05), warmup_steps = 200)",
            "lr = noisy_linear_cosine_decay(learning_rate = 0.003, decay_steps = 3000, seed = 3)",
        );
    assert!(spec.contains("shuffle = 100") && spec.contains("noisy_linear_cosine_decay"));
    check_resume_is_exact("shuffle_buffer_noise_ema", &spec);
}

#[test]
fn resume_is_exact_in_data_order() {
    let spec = digits("digits_mlp.spec").replace("shuffle = 1797", "shuffle = 0");
    check_resume_is_exact("data_order", &spec);
}

#[test]
fn a_checkpoint_with_another_shape_is_refused_naming_the_variable_and_both_shapes() {
    let spec = digits("digits_mlp.spec");
    let dir = setup("other_shape", &spec);
    run(&dir, &["--steps", "10", "--checkpoint-dir", "ck"]);
    let before = std::fs::read(dir.join("ck/checkpoint")).unwrap();
    let wider = spec
        .replace("W1: [64, 128]", "W1: [64, 96]")
        .replace("b1: [128]", "b1: [96]")
        .replace("W2: [128, 10]", "W2: [96, 10]")
        .replace("assert_shape(h, [B, 128])", "assert_shape(h, [B, 96])");
    assert_ne!(wider, spec);
    std::fs::write(dir.join("spec.spec"), wider).unwrap();
    let (code, _, err) = specc(&dir, &["run", "spec.spec", "--checkpoint-dir", "ck"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("W1") && err.contains("[64, 128]") && err.contains("[64, 96]"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.join("ck/checkpoint")).unwrap(), before);
}

#[test]
fn a_changed_spec_is_refused_and_the_checkpoint_kept() {
    let spec = digits("digits_mlp.spec");
    let dir = setup("changed_spec", &spec);
    run(&dir, &["--steps", "10", "--checkpoint-dir", "ck"]);
    let before = std::fs::read(dir.join("ck/checkpoint")).unwrap();
    let edited = spec.replace("adam(learning_rate = 0.001)", "adam(learning_rate = 0.002)");
    assert_ne!(edited, spec);
    std::fs::write(dir.join("spec.spec"), edited).unwrap();
    let (code, _, err) = specc(&dir, &["run", "spec.spec", "--checkpoint-dir", "ck"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("spec changed"), "{err}");
    assert_eq!(std::fs::read(dir.join("ck/checkpoint")).unwrap(), before);
}
