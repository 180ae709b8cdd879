//! The library run example (`examples/run_spec.rs`) run as a test: a Rust
//! program does what `specc run` does through `specc::run` — the same
//! held-out numbers, bit for bit, as the CLI with the same flags, above the
//! accuracy the README quotes for digits_mlp; its observer sees every step,
//! each periodic evaluation and each checkpoint; and the last checkpoint
//! restores into a fresh model that holds the trained variables.

#[path = "../../examples/run_spec.rs"]
#[allow(dead_code)]
mod example;

use std::path::{Path, PathBuf};
use std::process::Command;

fn fresh(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("example_run_spec")
        .join(name);
    std::fs::remove_dir_all(&d).ok();
    d
}

#[test]
fn the_library_runs_a_spec_as_specc_run_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = fresh("library");
    let r = example::run(root, &dir).expect("the example runs");

    // `specc run` with the same flags.
    let cli_dir = fresh("cli");
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args([
            "run",
            "specs/digits_mlp.spec",
            "--set",
            "evaluate.every_steps=1000",
            "--checkpoint-every-steps",
            "1000",
            "--json",
            "--checkpoint-dir",
        ])
        .arg(&cli_dir)
        .current_dir(root)
        .output()
        .expect("run specc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a JSON line")).unwrap();
    let steps = json["global_step"].as_i64().unwrap();
    assert_eq!(r.global_step, steps);
    assert_eq!(r.steps_seen, json["steps"].as_u64().unwrap());
    let eval = &json["eval"];
    assert_eq!(r.held_out_rows as u64, eval["rows"].as_u64().unwrap());
    assert_eq!(r.held_out_loss, eval["loss"].as_f64().unwrap());
    assert_eq!(r.held_out_accuracy, eval["accuracy"].as_f64().unwrap());
    // The README's digits_mlp run: 0.9721 held out.
    assert!(
        r.held_out_accuracy > 0.97,
        "held-out accuracy {}",
        r.held_out_accuracy
    );

    // Every 1000 steps: an evaluation and a checkpoint; the last
    // evaluation is the outcome's.
    let at: Vec<i64> = (1..=steps / 1000).map(|k| k * 1000).collect();
    assert_eq!(
        r.evaluations.iter().map(|e| e.0).collect::<Vec<_>>(),
        at,
        "{:?}",
        r.evaluations
    );
    assert_eq!(r.evaluations.last().unwrap().1, r.held_out_accuracy);
    let written: Vec<PathBuf> = at
        .iter()
        .map(|s| dir.join(format!("model.ckpt-{s}")))
        .collect();
    assert_eq!(r.checkpoints, written);
    for p in &written {
        let index = PathBuf::from(format!("{}.index", p.display()));
        assert!(index.is_file(), "{} is written", index.display());
    }
    assert!(
        r.restored_same,
        "the restored model holds the trained variables"
    );
}
