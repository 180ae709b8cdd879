//! `specc run --export-on-save` (TF's `CheckpointSaverListener`): each
//! checkpoint the run writes is exported, and each file is byte for byte
//! what `specc export` writes from that checkpoint (with the spec's moving
//! averages when it serves them); an export that would be refused stops the
//! run before its first step.

use std::path::Path;

use crate::cli::{self, specc};

fn spec(extra: &str) -> String {
    cli::replace(
        "train { batch = 4, steps = 10 }",
        &format!(
            "train {{ batch = 4, steps = 12 }}\noutputs {{ probs = softmax(logits) }}\n{extra}"
        ),
    )
}

fn setup(name: &str, spec: &str) -> std::path::PathBuf {
    let d = cli::workdir("export_on_save", name);
    for sub in ["ckpt", "exports", "ref"] {
        let _ = std::fs::remove_dir_all(d.join(sub));
    }
    std::fs::write(d.join("spec.spec"), spec).unwrap();
    d
}

/// The checkpoint steps the directory lists, oldest first.
fn steps(dir: &Path) -> Vec<i64> {
    let mut s: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_prefix("model.ckpt-")?
                .strip_suffix(".index")?
                .parse()
                .ok()
        })
        .collect();
    s.sort();
    s
}

fn exports_equal_specc_export(
    name: &str,
    spec: &str,
    run_args: &[&str],
    export_args: &[&str],
    ext: &str,
) {
    let d = setup(name, spec);
    let mut args = vec![
        "run",
        "spec.spec",
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-every-steps",
        "5",
        "--keep",
        "0",
    ];
    args.extend_from_slice(run_args);
    let (code, _, err) = specc(&d, &args);
    assert_eq!(code, 0, "{err}");
    // Saves at 5 and 10, and the final one at 12.
    assert_eq!(steps(&d.join("ckpt")), vec![5, 10, 12]);
    std::fs::create_dir_all(d.join("ref")).unwrap();
    for step in [5, 10, 12] {
        let got = d.join(format!("exports/model-{step}.{ext}"));
        let want = d.join(format!("ref/model-{step}.{ext}"));
        let checkpoint = format!("ckpt/model.ckpt-{step}");
        let mut e = vec!["export", "spec.spec", "--checkpoint", &checkpoint, "-o"];
        let out = want.to_str().unwrap().to_string();
        e.push(&out);
        e.extend_from_slice(export_args);
        let (code, _, err) = specc(&d, &e);
        assert_eq!(code, 0, "{err}");
        let (a, b) = (std::fs::read(&got).unwrap(), std::fs::read(&want).unwrap());
        assert!(!a.is_empty());
        assert!(
            a == b,
            "step {step}: {} differs from specc export's",
            got.display()
        );
    }
    // Each step's model differs from the others (the weights moved).
    let first = std::fs::read(d.join(format!("exports/model-5.{ext}"))).unwrap();
    let last = std::fs::read(d.join(format!("exports/model-12.{ext}"))).unwrap();
    assert_ne!(first, last);
}

#[test]
fn each_checkpoint_is_exported_as_specc_export_writes_it() {
    exports_equal_specc_export(
        "tflite",
        &spec(""),
        &["--export-on-save", "exports"],
        &["--format", "tflite"],
        "tflite",
    );
}

#[test]
fn a_fixed_batch_and_the_spec_s_averages_are_exported_as_specc_export_does() {
    exports_equal_specc_export(
        "averages",
        &spec("ema 0.9, use_averages = true"),
        &["--export-on-save", "exports", "--export-batch", "3"],
        &["--format", "tflite", "--batch", "3"],
        "tflite",
    );
}

#[test]
fn the_object_format_is_exported_as_specc_export_writes_it() {
    exports_equal_specc_export(
        "object",
        &spec(""),
        &["--export-on-save", "exports", "--export-format", "object"],
        &["--format", "object"],
        "o",
    );
}

#[test]
fn a_template_names_each_file_by_its_step() {
    let d = setup("template", &spec(""));
    std::fs::create_dir_all(d.join("exports")).unwrap();
    let (code, _, err) = specc(
        &d,
        &[
            "run",
            "spec.spec",
            "--checkpoint-dir",
            "ckpt",
            "--export-on-save",
            "exports/m_{step}.tflite",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // One save, at the end (no period with every_secs' 600 s).
    assert!(d.join("exports/m_12.tflite").is_file());
    assert!(d.join("exports/m_12.tflite.features.json").is_file());
}

#[test]
fn a_refused_export_stops_the_run_before_training() {
    // No `outputs` item: `specc export` refuses, so the run does too.
    let d = setup("refused", cli::BASE);
    let (code, _, err) = specc(
        &d,
        &[
            "run",
            "spec.spec",
            "--checkpoint-dir",
            "ckpt",
            "--export-on-save",
            "exports",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the export would be refused, so nothing was trained"),
        "{err}"
    );
    assert!(err.contains("no `outputs` item"), "{err}");
    assert!(!d.join("ckpt").join("checkpoint").exists());
    // No checkpoint directory: nothing to export.
    let d = setup("no_checkpoints", &spec(""));
    let (code, _, err) = specc(&d, &["run", "spec.spec", "--export-on-save", "exports"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("this run writes none"), "{err}");
    // keep = 1 would remove a checkpoint while it is exported.
    let (code, _, err) = specc(
        &d,
        &[
            "run",
            "spec.spec",
            "--checkpoint-dir",
            "ckpt",
            "--keep",
            "1",
            "--export-on-save",
            "exports",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("keep 2 or more"), "{err}");
    assert!(!d.join("ckpt").join("checkpoint").exists());
}

#[test]
fn a_recurrent_model_without_a_fixed_batch_is_refused_before_training() {
    let d = setup("recurrent", "");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/digits_lstm.spec");
    let ckpt = d.join("ckpt");
    let (code, _, err) = specc(
        &d,
        &[
            "run",
            spec.to_str().unwrap(),
            "--steps",
            "2",
            "--checkpoint-dir",
            ckpt.to_str().unwrap(),
            "--export-on-save",
            "exports",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a recurrent layer"), "{err}");
    assert!(
        err.contains("so nothing was trained (`specc export`'s --batch is --export-batch here)"),
        "{err}"
    );
    assert!(!ckpt.join("checkpoint").exists());
}

#[test]
fn raw_inputs_reach_the_export_and_its_refusals_stop_the_run_before_training() {
    // digits' inputs are plain columns, which a raw-input model refuses:
    // the flag reaches `specc export --raw-inputs`'s dry run.
    let d = setup("raw_inputs", &spec(""));
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "spec.spec",
            "--checkpoint-dir",
            "ckpt",
            "--export-on-save",
            "exports",
            "--export-raw-inputs",
        ];
        args.extend_from_slice(extra);
        specc(&d, &args)
    };
    let (code, _, err) = run(&[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("so nothing was trained"), "{err}");
    assert!(err.contains("raw"), "{err}");
    assert!(!d.join("ckpt").join("checkpoint").exists());
    let (code, _, err) = run(&["--export-format", "object"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--export-raw-inputs is for --export-format tflite"),
        "{err}"
    );
    assert!(!d.join("ckpt").join("checkpoint").exists());
}
