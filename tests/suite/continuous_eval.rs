//! Continuous evaluation: `specc evaluate --checkpoint-dir DIR [--watch]
//! [--timeout S]` (TF's `checkpoints_iterator` with `evaluate_once`). A
//! linear softmax model is trained for 40 steps with a checkpoint every
//! 10; evaluating the directory gives one result per checkpoint, in step
//! order, each equal to `specc evaluate --checkpoint DIR/model.ckpt-N` of
//! that checkpoint, and writes them at their global steps to `DIR/eval/`
//! (read back here). `--watch --timeout 1` on the finished run stops at its
//! last step; on a copy holding only the first checkpoints (the last step
//! never comes) it stops on the timeout saying so; a checkpoint whose data
//! is truncated is an error of a single pass, and is retried (reported as
//! still unreadable) by a watch. The polling itself (a checkpoint that
//! becomes whole is then evaluated) is unit-tested in
//! `specc::run::checkpoints_iterator` with a fake clock.

use crate::cli;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use specc_runtime::summary::{event_files, read_events, What};

const SUITE: &str = "continuous_eval";

const LINEAR: &str = r#"model linear
data csv("train.csv")
label y: int
features {
  x = numeric(x0..x2)
}
params {
  W: [3, 3] = glorot_uniform(seed = 3)
  b: [3]    = zeros
}
logits = x @ W + b
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.05)
train { batch = 8, steps = 40, shuffle = 40, seed = 1 }
metrics { accuracy(y, argmax(logits, 1)) }
"#;

/// 60 rows of x0, x1, x2 (a deterministic pattern) and their class.
fn rows() -> String {
    let mut text = String::from("x0,x1,x2,y\n");
    for r in 0..60u64 {
        let x: [f64; 3] =
            std::array::from_fn(|j| (((r * 7 + j as u64 * 13) % 17) as f64) / 4.0 - 2.0);
        let y = if x[0] > x[1] {
            0
        } else if x[1] > x[2] {
            1
        } else {
            2
        };
        writeln!(text, "{},{},{},{y}", x[0], x[1], x[2]).unwrap();
    }
    text
}

/// A work directory with the spec trained into `ckpt/`, a checkpoint every
/// 10 steps, all kept.
fn trained(name: &str) -> PathBuf {
    let dir = cli::workdir(SUITE, name);
    std::fs::write(dir.join("linear.spec"), LINEAR).unwrap();
    std::fs::write(dir.join("train.csv"), rows()).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "run",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every-steps",
            "10",
            "--keep",
            "0",
        ],
    );
    assert_eq!(code, 0, "{err}");
    dir
}

/// The JSON lines of stdout.
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (global step, loss) of each JSON line.
fn losses(out: &str) -> Vec<(i64, f64)> {
    json_lines(out)
        .iter()
        .map(|j| {
            (
                j["global_step"].as_i64().unwrap(),
                j["eval"]["loss"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The `loss` scalars of the event files `files`, as (step, value).
fn event_losses(files: &[PathBuf]) -> Vec<(i64, f64)> {
    let mut out = Vec::new();
    for f in files {
        for e in read_events(f).unwrap() {
            if let What::Summary(s) = &e.what {
                for v in &s.values {
                    if v.tag == "loss" {
                        out.push((e.step, v.as_scalar().unwrap()));
                    }
                }
            }
        }
    }
    out
}

/// Copies the checkpoints of `from` up to `last` (files only, no state
/// file or run record) into a fresh `to`.
fn copy_until(from: &Path, to: &Path, last: u64) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix("model.ckpt-") else {
            continue;
        };
        let step: u64 = rest.split('.').next().unwrap().parse().unwrap();
        if step <= last {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn every_checkpoint_is_evaluated_once_as_evaluate_checkpoint_does() {
    let dir = trained("every");
    // `specc run` wrote its held-out evaluation at the last step there too.
    let eval_dir = dir.join("ckpt/eval");
    let before = event_files(&eval_dir).unwrap_or_default();
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "evaluate",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let got = losses(&out);
    let steps: Vec<i64> = got.iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [10, 20, 30, 40], "{out}");
    for (step, loss) in &got {
        let prefix = format!("ckpt/model.ckpt-{step}");
        let (code, one, err) = cli::specc(
            &dir,
            &["evaluate", "linear.spec", "--checkpoint", &prefix, "--json"],
        );
        assert_eq!(code, 0, "{err}");
        let want = losses(&one);
        assert_eq!(want, [(*step, *loss)], "{prefix}");
    }
    // The losses differ from checkpoint to checkpoint (training moved them).
    assert!(got.windows(2).all(|w| w[0].1 != w[1].1), "{got:?}");
    // Written at their global steps to ckpt/eval, as float32.
    let new: Vec<PathBuf> = event_files(&eval_dir)
        .unwrap()
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    let events = event_losses(&new);
    let want: Vec<(i64, f64)> = got
        .iter()
        .map(|(s, l)| (*s, f64::from(*l as f32)))
        .collect();
    assert_eq!(events, want);
    // `--eval-data` is `--data`; the train rows give other numbers.
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "evaluate",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--eval-data",
            "train.csv",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let all = json_lines(&out);
    assert_eq!(all.len(), 4);
    assert_eq!(all[3]["eval"]["rows"], 60);
}

#[test]
fn a_watch_of_a_finished_run_stops_at_its_last_step() {
    let dir = trained("finished");
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "evaluate",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--watch",
            "--timeout",
            "1",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let steps: Vec<i64> = losses(&out).iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [10, 20, 30, 40]);
    assert!(err.contains("reached the run's last step, 40"), "{err}");
}

#[test]
fn a_watch_whose_last_step_never_comes_ends_on_the_timeout() {
    let dir = trained("timeout");
    let part = dir.join("part");
    copy_until(&dir.join("ckpt"), &part, 20);
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "evaluate",
            "linear.spec",
            "--checkpoint-dir",
            "part",
            "--watch",
            "--timeout",
            "1",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let steps: Vec<i64> = losses(&out).iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [10, 20]);
    assert!(
        err.contains(
            "no new checkpoint in 1 s (--timeout) before the run's last step 40 (reached 20)"
        ),
        "{err}"
    );
}

#[test]
fn a_truncated_checkpoint_is_an_error_of_a_pass_and_retried_by_a_watch() {
    let dir = trained("truncated");
    let part = dir.join("part");
    copy_until(&dir.join("ckpt"), &part, 40);
    let data = part.join("model.ckpt-40.data-00000-of-00001");
    let bytes = std::fs::read(&data).unwrap();
    std::fs::write(&data, &bytes[..bytes.len() / 2]).unwrap();

    let args = [
        "evaluate",
        "linear.spec",
        "--checkpoint-dir",
        "part",
        "--json",
    ];
    let (code, out, err) = cli::specc(&dir, &args);
    assert_eq!(code, 1, "{err}");
    assert_eq!(json_lines(&out).len(), 3);
    assert!(err.contains("model.ckpt-40"), "{err}");
    assert!(err.contains("truncated"), "{err}");

    let _ = std::fs::remove_dir_all(part.join("eval"));
    let mut watch = args.to_vec();
    watch.extend(["--watch", "--timeout", "1"]);
    let (code, out, err) = cli::specc(&dir, &watch);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_lines(&out).len(), 3);
    assert!(err.contains("still not readable"), "{err}");
    assert!(err.contains("model.ckpt-40"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn the_flags_are_checked() {
    let dir = trained("flags");
    for (args, what) in [
        (&["evaluate", "linear.spec"][..], "--checkpoint"),
        (
            &["evaluate", "linear.spec", "--checkpoint", "ckpt", "--watch"][..],
            "cannot be used with",
        ),
        (
            &[
                "evaluate",
                "linear.spec",
                "--checkpoint",
                "ckpt",
                "--timeout",
                "1",
            ][..],
            "cannot be used with",
        ),
        (
            &[
                "evaluate",
                "linear.spec",
                "--checkpoint",
                "ckpt",
                "--checkpoint-dir",
                "ckpt",
            ][..],
            "cannot be used with",
        ),
    ] {
        let (code, _, err) = cli::specc(&dir, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
    }
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "evaluate",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--timeout",
            "1",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("give --watch"), "{err}");
    let (code, _, err) = cli::specc(
        &dir,
        &["evaluate", "linear.spec", "--checkpoint-dir", "nothing"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nothing: no checkpoint"), "{err}");
}
