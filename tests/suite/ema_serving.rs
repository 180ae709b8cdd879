//! Serving with moving averages: `--use-averages[=BOOL]` on `predict`,
//! `export` and `evaluate`, the `ema` item's `use_averages = true` (the
//! default it sets) and `var_list` (TF's `apply(var_list)`: which
//! parameters have shadows, and so which are swapped). A linear softmax
//! model is trained with `ema` by `specc run`; its predictions, both
//! exports (the TF Lite model run by specc's interpreter, the object file
//! linked into `tests/aot/predict.c`) and its evaluated loss are checked
//! against the model's math computed here from the checkpoint's tensors —
//! each averaged parameter's `W/ExponentialMovingAverage`, every other
//! parameter's own tensor (TF's `variables_to_restore`) — and the trained
//! values without the flag; `evaluate` without `--data` gives `specc run`'s
//! held-out numbers (with and without the averages). Then the errors:
//! averages of a spec without `ema`, a checkpoint without an average the
//! spec asks for (naming the variable and the checkpoint; nothing written),
//! `--tflite` with the flag, and the `ema` item's diagnostics
//! (snapshotted).

use crate::cli;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use specc_runtime::checkpoint::{latest_checkpoint, BundleReader, Tensor};

const SUITE: &str = "ema_serving";

/// Three features, three classes; `EMA` is replaced by the `ema` item.
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
EMA
train { batch = 8, steps = 40, shuffle = 40, seed = 1 }
metrics { accuracy(y, argmax(logits, 1)) }
outputs {
  logits = logits
}
"#;

/// A deterministic value in [-4, 4) (splitmix64).
fn value(i: u64) -> f64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
}

/// `n` rows of x0, x1, x2 (two decimals) and their class `y`.
fn rows(n: u64, seed: u64) -> (String, Vec<([f64; 3], usize)>) {
    let mut text = String::from("x0,x1,x2,y\n");
    let mut out = Vec::new();
    for r in 0..n {
        let x: [f64; 3] =
            std::array::from_fn(|j| (value(seed + 3 * r + j as u64) * 100.0).round() / 100.0);
        let y = if x[0] > x[1] {
            0
        } else if x[1] > x[2] {
            1
        } else {
            2
        };
        writeln!(text, "{},{},{},{y}", x[0], x[1], x[2]).unwrap();
        out.push((x, y));
    }
    (text, out)
}

fn spec(ema: &str) -> String {
    LINEAR.replace("EMA", ema)
}

/// A work directory with the linear spec (its `ema` item `ema`) trained to
/// a checkpoint in `ckpt/`, and 37 new rows in `new.csv`.
fn trained(name: &str, ema: &str) -> (PathBuf, Vec<([f64; 3], usize)>) {
    let dir = cli::workdir(SUITE, name);
    std::fs::write(dir.join("linear.spec"), spec(ema)).unwrap();
    std::fs::write(dir.join("train.csv"), rows(40, 1000).0).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, _, err) = cli::specc(&dir, &["run", "linear.spec", "--checkpoint-dir", "ckpt"]);
    assert_eq!(code, 0, "{err}");
    let (text, new) = rows(37, 7);
    std::fs::write(dir.join("new.csv"), text).unwrap();
    (dir, new)
}

fn reader(dir: &Path) -> BundleReader {
    BundleReader::open(latest_checkpoint(dir.join("ckpt")).unwrap().unwrap()).unwrap()
}

/// A tensor of the checkpoint in `dir/ckpt`, or `None` when it has none.
fn tensor(dir: &Path, name: &str) -> Option<Vec<f64>> {
    let r = reader(dir);
    r.entry(name)?;
    match r.load(name).unwrap() {
        Tensor::F32(a) => Some(a.iter().map(|&v| f64::from(v)).collect()),
        t => panic!("{name}: {t:?}"),
    }
}

/// `W` and `b` as `variables_to_restore` maps them: each named in
/// `averaged` from its moving average, the other from itself.
fn weights(dir: &Path, averaged: &[&str]) -> (Vec<f64>, Vec<f64>) {
    let get = |p: &str| {
        let name = if averaged.contains(&p) {
            format!("{p}/ExponentialMovingAverage")
        } else {
            p.to_string()
        };
        tensor(dir, &name).unwrap_or_else(|| panic!("no {name}"))
    };
    (get("W"), get("b"))
}

/// logits = x @ W + b.
fn logits((w, b): &(Vec<f64>, Vec<f64>), x: &[f64; 3]) -> [f64; 3] {
    std::array::from_fn(|k| (0..3).map(|j| x[j] * w[j * 3 + k]).sum::<f64>() + b[k])
}

/// The mean softmax cross-entropy of `rows` and their accuracy.
fn loss_and_accuracy(wb: &(Vec<f64>, Vec<f64>), rows: &[([f64; 3], usize)]) -> (f64, f64) {
    let (mut loss, mut right) = (0.0, 0);
    for (x, y) in rows {
        let l = logits(wb, x);
        let m = l.iter().copied().fold(f64::MIN, f64::max);
        let lse = m + l.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        loss += lse - l[*y];
        let class = (0..3).fold(0, |best, k| if l[k] > l[best] { k } else { best });
        right += usize::from(class == *y);
    }
    let n = rows.len() as f64;
    (loss / n, right as f64 / n)
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

/// Checks the logits `table` (one row per line, after a header) against the
/// model with `wb`.
fn assert_logits(table: &str, wb: &(Vec<f64>, Vec<f64>), rows: &[([f64; 3], usize)], what: &str) {
    let mut lines = table.lines();
    assert_eq!(lines.next(), Some("logits_0,logits_1,logits_2"), "{what}");
    let lines: Vec<&str> = lines.collect();
    assert_eq!(lines.len(), rows.len(), "{what}");
    for (r, (line, (x, _))) in lines.iter().zip(rows).enumerate() {
        let want = logits(wb, x);
        for (k, cell) in line.split(',').enumerate() {
            close(
                cell.parse().unwrap(),
                want[k],
                &format!("{what} row {r} logits_{k}"),
            );
        }
    }
}

fn predict(dir: &Path, extra: &[&str]) -> String {
    let args = [
        &[
            "predict",
            "linear.spec",
            "--checkpoint",
            "ckpt",
            "--data",
            "new.csv",
        ],
        extra,
    ]
    .concat();
    let (code, out, err) = cli::specc(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// The averages moved away from the trained values (or the test could not
/// tell them apart).
fn assert_apart(dir: &Path, p: &str) {
    let (raw, avg) = (
        tensor(dir, p).unwrap(),
        tensor(dir, &format!("{p}/ExponentialMovingAverage")).unwrap(),
    );
    let d = raw
        .iter()
        .zip(&avg)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(d > 1e-2, "{p}: the average is within {d} of the value");
}

#[test]
fn predict_uses_the_averages_with_the_flag_and_the_trained_values_without() {
    let (dir, new) = trained("predict", "ema 0.9");
    assert_apart(&dir, "W");
    assert_apart(&dir, "b");
    let (raw, avg) = (weights(&dir, &[]), weights(&dir, &["W", "b"]));
    assert_logits(&predict(&dir, &[]), &raw, &new, "no flag");
    assert_logits(
        &predict(&dir, &["--use-averages=false"]),
        &raw,
        &new,
        "=false",
    );
    assert_logits(
        &predict(&dir, &["--use-averages"]),
        &avg,
        &new,
        "--use-averages",
    );
    assert_logits(
        &predict(&dir, &["--use-averages=true"]),
        &avg,
        &new,
        "=true",
    );
}

#[test]
fn a_var_list_averages_and_swaps_only_its_parameters() {
    let (dir, new) = trained("var_list", "ema 0.9, var_list = \"W\"");
    assert_apart(&dir, "W");
    assert!(tensor(&dir, "b/ExponentialMovingAverage").is_none());
    let avg = weights(&dir, &["W"]);
    assert_logits(
        &predict(&dir, &["--use-averages"]),
        &avg,
        &new,
        "W averaged",
    );
    assert_logits(&predict(&dir, &[]), &weights(&dir, &[]), &new, "raw");
}

#[test]
fn use_averages_in_the_spec_is_the_default() {
    let (dir, new) = trained("spec_default", "ema 0.9, use_averages = true");
    let (raw, avg) = (weights(&dir, &[]), weights(&dir, &["W", "b"]));
    assert_logits(&predict(&dir, &[]), &avg, &new, "the spec's default");
    assert_logits(
        &predict(&dir, &["--use-averages=false"]),
        &raw,
        &new,
        "=false",
    );
}

#[test]
fn the_tflite_export_holds_the_averages() {
    let (dir, new) = trained("tflite", "ema 0.9, var_list = [\"W\", \"b\"]");
    for (file, flag, wb) in [
        ("avg.tflite", "--use-averages", weights(&dir, &["W", "b"])),
        ("raw.tflite", "--use-averages=false", weights(&dir, &[])),
    ] {
        let (code, out, err) = cli::specc(
            &dir,
            &[
                "export",
                "linear.spec",
                "--checkpoint",
                "ckpt",
                "--format",
                "tflite",
                "-o",
                file,
                flag,
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out.contains("(moving averages)"),
            flag == "--use-averages",
            "{out}"
        );
        let (code, table, err) = cli::specc(
            &dir,
            &[
                "predict",
                "linear.spec",
                "--tflite",
                file,
                "--data",
                "new.csv",
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert_logits(&table, &wb, &new, file);
    }
}

#[test]
fn the_object_export_holds_the_averages() {
    let (dir, new) = trained("object", "ema 0.9, use_averages = true");
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "export",
            "linear.spec",
            "--checkpoint",
            "ckpt",
            "--format",
            "object",
            "-o",
            "model.o",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(moving averages)"), "{out}");
    let exe = crate::aot_export::link_c(&dir, "predict");
    let bytes: Vec<u8> = new
        .iter()
        .flat_map(|(x, _)| x.map(|v| v as f32))
        .flat_map(f32::to_ne_bytes)
        .collect();
    std::fs::write(dir.join("in.bin"), bytes).unwrap();
    let r = Command::new(&exe)
        .arg(dir.join("in.bin"))
        .arg(dir.join("out.bin"))
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let got: Vec<f64> = std::fs::read(dir.join("out.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    assert_eq!(got.len(), 3 * new.len());
    let avg = weights(&dir, &["W", "b"]);
    for (r, (x, _)) in new.iter().enumerate() {
        let want = logits(&avg, x);
        for k in 0..3 {
            close(
                got[3 * r + k],
                want[k],
                &format!("object row {r} logits_{k}"),
            );
        }
    }
}

#[test]
fn evaluate_reports_the_loss_of_the_averages() {
    let (dir, new) = trained("evaluate", "ema 0.9");
    for (flag, wb) in [
        ("--use-averages", weights(&dir, &["W", "b"])),
        ("--use-averages=false", weights(&dir, &[])),
    ] {
        let (code, out, err) = cli::specc(
            &dir,
            &[
                "evaluate",
                "linear.spec",
                "--checkpoint",
                "ckpt",
                "--data",
                "new.csv",
                "--json",
                flag,
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("at global step 40"), "{err}");
        let j: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(j["use_averages"], flag == "--use-averages", "{out}");
        assert_eq!(j["global_step"], 40, "{out}");
        let (loss, accuracy) = loss_and_accuracy(&wb, &new);
        assert_eq!(j["eval"]["rows"], new.len(), "{out}");
        close(
            j["eval"]["loss"].as_f64().unwrap(),
            loss,
            &format!("{flag} loss"),
        );
        close(
            j["eval"]["accuracy"].as_f64().unwrap(),
            accuracy,
            &format!("{flag} accuracy"),
        );
    }
}

/// Without `--data` and `eval_data`, `evaluate` takes the rows `specc run`
/// holds out: its numbers are the run's `held-out` and `held-out ema` ones.
#[test]
fn evaluate_without_data_gives_the_runs_held_out_numbers() {
    let (dir, _) = trained("held_out", "ema 0.9");
    let _ = std::fs::remove_dir_all(dir.join("ckpt"));
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "run",
            "linear.spec",
            "--checkpoint-dir",
            "ckpt",
            "--eval-with-averages",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let run: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    for (flag, key) in [
        ("--use-averages=false", "eval"),
        ("--use-averages", "eval_averages"),
    ] {
        let args = [
            "evaluate",
            "linear.spec",
            "--checkpoint",
            "ckpt",
            "--json",
            flag,
        ];
        let (code, out, err) = cli::specc(&dir, &args);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("train.csv (held-out rows)"), "{err}");
        let j: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        let want = &run[key];
        assert_eq!(j["eval"]["rows"], want["rows"], "{key}");
        assert!(want["rows"].as_u64().unwrap() > 0, "{run}");
        for m in ["loss", "accuracy"] {
            let (got, want) = (j["eval"][m].as_f64().unwrap(), want[m].as_f64().unwrap());
            close(got, want, &format!("{key} {m}"));
        }
    }
    // No held-out rows: nothing to evaluate without --data.
    let no_split = spec("ema 0.9").replace("seed = 1 }", "seed = 1, eval_fraction = 0 }");
    std::fs::write(dir.join("linear.spec"), no_split).unwrap();
    refused(
        &dir,
        &["evaluate", "linear.spec", "--checkpoint", "ckpt"],
        &["nothing to evaluate", "--data FILE"],
        &[],
    );
}

/// `specc ARGS` must fail with exit 1 and a message holding every one of
/// `says`, writing none of `files`.
fn refused(dir: &Path, args: &[&str], says: &[&str], files: &[&str]) {
    for f in files {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let (code, out, err) = cli::specc(dir, args);
    assert_eq!(code, 1, "{args:?}: {out}{err}");
    for s in says {
        assert!(err.contains(s), "{args:?}: no {s:?} in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    for f in files {
        assert!(!dir.join(f).exists(), "{args:?} wrote {f}");
    }
}

/// Each command's arguments with the checkpoint, writing `out`.
fn commands(out: &str) -> [Vec<&str>; 4] {
    let ck = ["--checkpoint", "ckpt"];
    [
        [
            &["predict", "linear.spec"][..],
            &ck,
            &["--data", "new.csv", "-o", out],
        ]
        .concat(),
        [
            &["evaluate", "linear.spec"][..],
            &ck,
            &["--data", "new.csv"],
        ]
        .concat(),
        [
            &["export", "linear.spec"][..],
            &ck,
            &["--format", "tflite", "-o", out],
        ]
        .concat(),
        [
            &["export", "linear.spec"][..],
            &ck,
            &["--format", "object", "-o", out],
        ]
        .concat(),
    ]
}

#[test]
fn averages_of_a_spec_without_ema_are_refused() {
    let (dir, _) = trained("no_ema", "");
    for args in commands("out.x") {
        let args = [&args[..], &["--use-averages"]].concat();
        refused(
            &dir,
            &args,
            &[
                "--use-averages",
                "linear.spec has no moving averages",
                "ema DECAY",
            ],
            &["out.x", "out.h", "out.x.features.json"],
        );
    }
}

#[test]
fn a_checkpoint_without_an_average_the_spec_asks_for_is_refused() {
    let (dir, _) = trained("missing_average", "ema 0.9, var_list = \"W\"");
    let prefix = latest_checkpoint(dir.join("ckpt")).unwrap().unwrap();
    let prefix = prefix.strip_prefix(&dir).unwrap().display().to_string();
    // The spec now averages `b` too: the checkpoint has no `b` average.
    for (ema, flag, why) in [
        ("ema 0.9", &["--use-averages"][..], "--use-averages"),
        ("ema 0.9, use_averages = true", &[], "use_averages = true"),
    ] {
        std::fs::write(dir.join("linear.spec"), spec(ema)).unwrap();
        for args in commands("out.x") {
            let args = [&args[..], flag].concat();
            let says = [
                why,
                &format!("the checkpoint {prefix} has no moving average of `b`"),
                "b/ExponentialMovingAverage",
            ];
            refused(
                &dir,
                &args,
                &says,
                &["out.x", "out.h", "out.x.features.json"],
            );
        }
    }
    // Without the averages the same checkpoint serves.
    let (code, _, err) = cli::specc(
        &dir,
        &[&commands("out.csv")[0][..], &["--use-averages=false"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn tflite_predictions_take_no_averages() {
    let (dir, _) = trained("tflite_flag", "ema 0.9");
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "export",
            "linear.spec",
            "--checkpoint",
            "ckpt",
            "--format",
            "tflite",
            "-o",
            "m.tflite",
        ],
    );
    assert_eq!(code, 0, "{err}");
    refused(
        &dir,
        &[
            "predict",
            "linear.spec",
            "--tflite",
            "m.tflite",
            "--data",
            "new.csv",
            "--use-averages",
        ],
        &["--tflite", "export it with --use-averages"],
        &[],
    );
}

macro_rules! spec_error {
    ($name:ident, $ema:literal, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &spec($ema), $code);
            insta::assert_snapshot!(err);
        }
    };
}

spec_error!(
    a_var_list_pattern_matching_nothing,
    "ema 0.9, var_list = [\"W\", \"bias\"]",
    "var-list"
);
spec_error!(
    two_var_lists,
    "ema 0.9, var_list = \"W\", var_list = \"b\"",
    "duplicate-argument"
);
spec_error!(
    a_var_list_of_numbers,
    "ema 0.9, var_list = [1]",
    "argument-type"
);
spec_error!(
    an_unknown_ema_option,
    "ema 0.9, serve = true",
    "unknown-argument"
);
spec_error!(
    use_averages_not_a_flag,
    "ema 0.9, use_averages = 1",
    "argument-type"
);
