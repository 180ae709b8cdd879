//! Snapshots of every compiler stage (`specc compile --emit STAGE`) for every spec
//! shipped in `specs/`. A change to a pass shows up as a reviewed snapshot diff.
//! The CLIF snapshots are x86-64 System V text (the platform CI runs on).

use std::path::PathBuf;
use std::process::Command;

const STAGES: &[&str] = &["ast", "ir", "grad", "step", "plan", "clif"];

/// Specs whose CLIF text is too large to keep as a snapshot (the W9
/// transformer's is 1.9 MB), or repeats another's (digits_layers is
/// digits_cnn's kernels again; text_lstm's is digits_lstm's loop again):
/// their plans are snapshotted, and their
/// training is checked by `training.rs`.
const NO_CLIF_SNAPSHOT: &[&str] = &["text_transformer", "digits_layers", "text_lstm"];

fn specs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "spec"))
        .collect();
    v.sort();
    v
}

fn emit(spec: &std::path::Path, stage: &str) -> String {
    emit_with(spec, stage, &[])
}

fn emit_with(spec: &std::path::Path, stage: &str, extra: &[&str]) -> String {
    emit_env(spec, stage, extra, &[])
}

fn emit_env(spec: &std::path::Path, stage: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["compile", "--emit", stage])
        .args(extra)
        .envs(env.iter().copied())
        .env("SPECC_THREADS", "2")
        .arg(spec.file_name().unwrap())
        .current_dir(spec.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        spec.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_stage_of_every_shipped_spec() {
    let specs = specs();
    assert!(specs.len() >= 3, "specs/ should hold the bench workloads");
    for spec in &specs {
        let name = spec.file_stem().unwrap().to_string_lossy().into_owned();
        for stage in STAGES {
            if *stage == "clif" && NO_CLIF_SNAPSHOT.contains(&name.as_str()) {
                continue;
            }
            let text = emit(spec, stage);
            insta::assert_snapshot!(format!("{name}.{stage}"), text);
        }
    }
}

/// W7's plan with every convolution direct (`SPECC_WINOGRAD=never`; the
/// default `digits_cnn.plan` has its second convolution as Winograd
/// F(2×2, 3×3) kernels by blocks of images): im2col, col2im and the three
/// products of each convolution.
#[test]
fn the_direct_convolution_plan() {
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/digits_cnn.spec");
    let text = emit_env(&spec, "plan", &[], &[("SPECC_WINOGRAD", "never")]);
    insta::assert_snapshot!("digits_cnn.plan.direct", text);
}

/// The step split for data-parallel replicas (`--replicas N`): the
/// `replica_grad` function writing the exchange variables, the `step`
/// reading them; dense (2 replicas: the sum scaled by 1/2 in the step;
/// 3 replicas of a batch of 64: each replica weighs by its rows) and sparse
/// (the gathered ids and rows); tables sharded across the replicas (the
/// CTR spec's hashed tables: the lookups read the fetched rows, each table
/// holds a replica's rows and a spare, the routed gradient updates them).
#[test]
fn the_replicated_step() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs");
    for (spec, n) in [
        ("digits_mlp", "2"),
        ("digits_mlp", "3"),
        ("digits_embedding", "2"),
        ("ctr_ftrl", "2"),
    ] {
        let path = dir.join(format!("{spec}.spec"));
        for stage in ["step", "plan"] {
            let text = emit_with(&path, stage, &["--replicas", n]);
            insta::assert_snapshot!(format!("{spec}.replicas{n}.{stage}"), text);
        }
    }
}

#[test]
fn emitting_is_deterministic() {
    for spec in specs() {
        for stage in STAGES {
            assert_eq!(
                emit(&spec, stage),
                emit(&spec, stage),
                "{} {stage}",
                spec.display()
            );
        }
    }
}

/// The training step of every optimizer example: the slots with TF's names
/// (`W/Ftrl`, `W/Ftrl_1`, ...) and the update rules as IR.
#[test]
fn step_of_every_optimizer_example() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/optimizers");
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "spec"))
        .collect();
    specs.sort();
    for spec in &specs {
        let name = spec.file_stem().unwrap().to_string_lossy().into_owned();
        insta::assert_snapshot!(format!("optimizers_{name}.step"), emit(spec, "step"));
    }
}
