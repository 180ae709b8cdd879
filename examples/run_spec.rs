//! specc as a library, the whole run: `specs/digits_mlp.spec` trained
//! through `specc::run` as `specc run` trains it — the spec's data, its
//! held-out split and its 3000 steps — with a checkpoint every 1000 steps
//! and an evaluation of the held-out rows every 1000 steps (`--set
//! evaluate.every_steps=1000`), watched by an observer of our own; then the
//! last checkpoint restored into a fresh `specc::Model`, which holds the
//! trained model's variables, bit for bit.
//!
//! `cargo run --release --example run_spec` (from the repository root).
//! `tests/suite/example_run_spec.rs` runs it, checks what it returns, and that
//! `specc run` with the same flags reports the same numbers.

use std::path::{Path, PathBuf};

use specc::run::{self, Flags, Observer, Request};
use specc::runtime::train::{Evaluation, StepValues};
use specc::Model;

/// What a run of the example gives.
pub struct Report {
    /// The outcome's global step at the end.
    pub global_step: i64,
    /// The held-out accuracy at the end (the spec's `accuracy` metric).
    pub held_out_accuracy: f64,
    /// The held-out rows evaluated.
    pub held_out_rows: usize,
    /// The held-out loss at the end.
    pub held_out_loss: f64,
    /// The periodic evaluations the observer saw: (global step, accuracy).
    pub evaluations: Vec<(i64, f64)>,
    /// The checkpoints the observer saw written, oldest first.
    pub checkpoints: Vec<PathBuf>,
    /// Steps the observer saw.
    pub steps_seen: u64,
    /// A fresh model restored from the last checkpoint holds the trained
    /// model's every variable and global step, bit for bit.
    pub restored_same: bool,
}

/// An observer of our own: it counts the steps and keeps the evaluations
/// and checkpoints (and prints the run's notes as `specc run` does).
#[derive(Default)]
struct Watcher {
    steps: u64,
    evaluations: Vec<(i64, f64)>,
    checkpoints: Vec<PathBuf>,
}

impl Observer for Watcher {
    fn note(&mut self, text: &str) {
        eprintln!("specc: {text}");
    }

    fn step(&mut self, _values: &StepValues) {
        self.steps += 1;
    }

    fn evaluation(&mut self, global_step: i64, e: &Evaluation) {
        self.evaluations.push((global_step, accuracy(e)));
    }

    fn checkpoint(&mut self, prefix: &Path) {
        self.checkpoints.push(prefix.to_path_buf());
    }
}

fn accuracy(e: &Evaluation) -> f64 {
    e.metrics
        .iter()
        .find(|(m, _)| m.contains("accuracy"))
        .map_or(f64::NAN, |(_, v)| *v)
}

/// Trains the spec (see the module doc), saving checkpoints in `dir` (a
/// fresh directory: a run resumes from one that holds a checkpoint); `root`
/// is the repository.
pub fn run(root: &Path, dir: &Path) -> Result<Report, Box<dyn std::error::Error>> {
    let spec = root.join("specs/digits_mlp.spec");
    let request = Request {
        sets: vec!["evaluate.every_steps=1000".into()],
        flags: Flags {
            checkpoint_dir: Some(dir.to_path_buf()),
            checkpoint_every_steps: Some(1000),
            ..Flags::default()
        },
        ..Request::new(&spec)
    };
    let mut watcher = Watcher::default();
    let outcome = run::run(&request, &mut watcher)?;
    let held_out = outcome.held_out.as_ref().ok_or("no held-out evaluation")?;

    // The last checkpoint, restored into a fresh model of the same spec.
    let mut fresh = Model::from_path(&spec)?;
    fresh.load_checkpoint(dir)?;
    let mut restored_same = fresh.global_step() == outcome.model.global_step();
    for (name, _) in outcome.model.variables() {
        let (a, b) = (outcome.model.parameter(&name)?, fresh.parameter(&name)?);
        restored_same &= a.shape() == b.shape()
            && a.iter()
                .zip(b.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits());
    }
    Ok(Report {
        global_step: outcome.global_step,
        held_out_accuracy: accuracy(held_out),
        held_out_rows: held_out.rows,
        held_out_loss: held_out.loss,
        evaluations: watcher.evaluations,
        checkpoints: watcher.checkpoints,
        steps_seen: watcher.steps,
        restored_same,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("specc-run-spec-example-{}", std::process::id()));
    let r = run(root, &dir)?;
    println!(
        "global step {}; held out ({} rows): loss {:.4}, accuracy {:.4}; evaluations {:?}; \
         checkpoints {:?}; restored model holds the same variables: {}",
        r.global_step,
        r.held_out_rows,
        r.held_out_loss,
        r.held_out_accuracy,
        r.evaluations,
        r.checkpoints,
        r.restored_same
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
