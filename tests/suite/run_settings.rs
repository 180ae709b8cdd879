//! `specc::run::settings::resolve`: the spec, a YAML config file, `--set` and flags, in
//! that order of precedence; errors that name the file, line and column (or
//! the `--set`); overrides checked by sema like spec values; the run record.

use std::path::{Path, PathBuf};

use specc::run::settings::{self as config, ConfigError, Flags, Resolved};
use specc_grammar::SourceFile;
use specc_runtime::config::record::RunRecord;
use specc_runtime::train::Duration;

const SPEC: &str = r#"model tiny
data csv("data.csv")
label y: int
features {
  x = numeric(x0..x3)
}
params {
  W1: [4, 3] = glorot_uniform(seed = 1)
  b1: [3]    = zeros
}
h      = x @ W1 + b1
loss   = mean(sparse_softmax_cross_entropy(y, h))
optimizer adam(0.01)
train { batch = 4, steps = 10 }
"#;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("run_settings")
        .join(name);
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("data.csv"), "x0,x1,x2,x3,y\n1,2,3,4,0\n").unwrap();
    d
}

struct Case {
    dir: PathBuf,
    spec: SourceFile,
}

impl Case {
    fn new(name: &str, spec: &str) -> Case {
        let dir = dir(name);
        let path = dir.join("spec.spec");
        std::fs::write(&path, spec).unwrap();
        Case {
            spec: SourceFile::new(path.display().to_string(), spec),
            dir,
        }
    }

    fn yaml(&self, text: &str) -> PathBuf {
        let p = self.dir.join("run.yaml");
        std::fs::write(&p, text).unwrap();
        p
    }

    fn resolve(
        &self,
        file: Option<&Path>,
        sets: &[&str],
        flags: &Flags,
    ) -> Result<Resolved, ConfigError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        config::resolve(&self.spec, &self.dir.join("spec.spec"), file, &sets, flags)
    }

    fn ok(&self, file: Option<&Path>, sets: &[&str], flags: &Flags) -> Resolved {
        match self.resolve(file, sets, flags) {
            Ok(r) => r,
            Err(ConfigError::Other(m)) => panic!("{m}"),
            Err(ConfigError::Spec {
                source,
                diagnostics,
            }) => panic!(
                "{}",
                specc_grammar::diag::render_all(&diagnostics, &source, false)
            ),
        }
    }

    fn other(&self, file: Option<&Path>, sets: &[&str]) -> String {
        match self.resolve(file, sets, &Flags::default()) {
            Err(ConfigError::Other(m)) => m,
            Err(ConfigError::Spec {
                source,
                diagnostics,
            }) => panic!(
                "expected a config error, got spec errors:\n{}",
                specc_grammar::diag::render_all(&diagnostics, &source, false)
            ),
            Ok(_) => panic!("expected an error"),
        }
    }

    fn spec_error(&self, file: Option<&Path>, sets: &[&str], flags: &Flags) -> String {
        match self.resolve(file, sets, flags) {
            Err(ConfigError::Spec {
                source,
                diagnostics,
            }) => specc_grammar::diag::render_all(&diagnostics, &source, false),
            Err(ConfigError::Other(m)) => panic!("expected a spec error, got {m}"),
            Ok(_) => panic!("expected an error"),
        }
    }
}

fn steps(r: &Resolved) -> Duration {
    r.model.train.duration
}

#[test]
fn nothing_to_override_keeps_the_spec() {
    let c = Case::new("none", SPEC);
    let r = c.ok(None, &[], &Flags::default());
    assert_eq!(r.source.text, c.spec.text);
    assert_eq!(steps(&r), Duration::Steps(10));
    assert!(r.settings.is_empty());
}

#[test]
fn precedence_is_spec_then_file_then_set_then_flags() {
    let c = Case::new("precedence", SPEC);
    let file = c.yaml("steps: 20\nbatch: 2\n");
    let r = c.ok(Some(&file), &[], &Flags::default());
    assert_eq!((steps(&r), r.model.train.batch), (Duration::Steps(20), 2));
    let r = c.ok(Some(&file), &["steps=30"], &Flags::default());
    assert_eq!((steps(&r), r.model.train.batch), (Duration::Steps(30), 2));
    let flags = Flags {
        steps: Some(40),
        ..Flags::default()
    };
    let r = c.ok(Some(&file), &["steps=30"], &flags);
    assert_eq!((steps(&r), r.model.train.batch), (Duration::Steps(40), 2));
    // Later --set wins over earlier --set.
    let r = c.ok(None, &["steps=30", "steps=31"], &Flags::default());
    assert_eq!(steps(&r), Duration::Steps(31));
}

#[test]
fn steps_replace_epochs_and_the_reverse() {
    let c = Case::new("durations", &SPEC.replace("steps = 10", "epochs = 3"));
    let r = c.ok(None, &["steps=7"], &Flags::default());
    assert_eq!(steps(&r), Duration::Steps(7));
    let c = Case::new("durations2", SPEC);
    let file = c.yaml("epochs: 2\n");
    let r = c.ok(Some(&file), &[], &Flags::default());
    assert_eq!(steps(&r), Duration::Epochs(2));
    let r = c.ok(Some(&file), &["steps=5"], &Flags::default());
    assert_eq!(steps(&r), Duration::Steps(5));
    let file = c.yaml("epochs: 2\nsteps: 4\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.contains("give either `steps` or `epochs`, not both"),
        "{e}"
    );
}

#[test]
fn unknown_keys_name_the_file_line_and_column_with_a_suggestion() {
    let c = Case::new("unknown", SPEC);
    let file = c.yaml("steps: 5\ncheckpoint:\n  every_stesp: 100\n");
    let e = c.other(Some(&file), &[]);
    let at = format!(
        "{}:3:3: unknown key `checkpoint.every_stesp`; did you mean `checkpoint.every_steps`?",
        file.display()
    );
    assert!(e.starts_with(&at), "{e}");
    let file = c.yaml("step: 5\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.starts_with(&format!(
            "{}:1:1: unknown key `step`; did you mean `steps`?",
            file.display()
        )),
        "{e}"
    );
    let e = c.other(None, &["chekpoint.dir=x"]);
    assert!(
        e.starts_with("--set chekpoint.dir=x: unknown key `chekpoint`; did you mean `checkpoint`?"),
        "{e}"
    );
    let e = c.other(None, &["steps"]);
    assert!(e.contains("expected KEY=VALUE"), "{e}");
}

#[test]
fn wrong_types_name_the_file_line_and_column() {
    let c = Case::new("types", SPEC);
    let file = c.yaml("steps: ten\n");
    let e = c.other(Some(&file), &[]);
    assert_eq!(
        e,
        format!(
            "{}:1:8: steps must be an integer, found the string \"ten\"",
            file.display()
        )
    );
    let file = c.yaml("summaries:\n  histograms: 3\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.starts_with(&format!(
            "{}:2:15: summaries.histograms must be `true` or `false`",
            file.display()
        )),
        "{e}"
    );
    let file = c.yaml("checkpoint: 5\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.contains("`checkpoint` is a mapping of its settings"),
        "{e}"
    );
    let e = c.other(None, &["logging.tensors=[1, h]"]);
    assert!(e.contains("logging.tensors must be a list of names"), "{e}");
    let file = c.yaml("- steps\n");
    let e = c.other(Some(&file), &[]);
    assert!(e.contains("a run configuration is a mapping"), "{e}");
}

#[test]
fn optimizer_arguments_are_checked_against_the_optimizer() {
    let c = Case::new("optimizer", SPEC);
    let file = c.yaml("optimizer:\n  learnig_rate: 0.5\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.starts_with(&format!("{}:2:17: `adam` has no argument `learnig_rate`; did you mean `optimizer.learning_rate`?", file.display())),
        "{e}"
    );
    let e = c.other(None, &["optimizer.learning_rate=0.1) clip global_norm(1.0"]);
    assert!(
        e.contains("must be a number, `true`/`false` or one spec expression"),
        "{e}"
    );
    let e = c.other(None, &["optimizer.momentum=0.9"]);
    assert!(
        e.starts_with("--set optimizer.momentum=0.9: `adam` has no argument `momentum`"),
        "{e}"
    );
    assert!(e.contains("learning_rate, beta1, beta2, epsilon"), "{e}");
}

#[test]
fn optimizer_overrides_replace_or_add_arguments() {
    let c = Case::new("optimizer_edit", SPEC);
    // The positional learning rate is replaced; beta1 is added.
    let r = c.ok(
        None,
        &["optimizer.learning_rate=0.25", "optimizer.beta1=0.5"],
        &Flags::default(),
    );
    assert!(
        r.source.text.contains("optimizer adam(0.25, beta1 = 0.5)"),
        "{}",
        r.source.text
    );
    // An integer is written as a float32 constant.
    let r = c.ok(None, &["optimizer.learning_rate=1"], &Flags::default());
    assert!(
        r.source.text.contains("optimizer adam(1.0)"),
        "{}",
        r.source.text
    );
    // A string is a spec expression: a schedule.
    let file = c.yaml(
        "optimizer:\n  learning_rate: exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5)\n",
    );
    let r = c.ok(Some(&file), &[], &Flags::default());
    assert!(
        r.source
            .text
            .contains("adam(exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5))"),
        "{}",
        r.source.text
    );
}

#[test]
fn a_bad_override_value_is_a_spec_error_naming_its_origin() {
    let c = Case::new("bad_value", SPEC);
    let file = c.yaml("steps: 5\ncheckpoint:\n  dir: runs\n  every_steps: -5\n");
    let e = c.spec_error(Some(&file), &[], &Flags::default());
    assert!(
        e.contains("every_steps must not be negative, got -5"),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "the value of `checkpoint.every_steps` comes from {}:4:16",
            file.display()
        )),
        "{e}"
    );
    let e = c.spec_error(None, &["optimizer.learning_rate=-1"], &Flags::default());
    assert!(e.contains("learning_rate must be positive"), "{e}");
    assert!(
        e.contains("comes from --set optimizer.learning_rate=-1"),
        "{e}"
    );
    let flags = Flags {
        checkpoint_every_secs: Some(f64::NAN),
        ..Flags::default()
    };
    let e = c.spec_error(None, &[], &flags);
    assert!(e.contains("comes from --checkpoint-every-secs"), "{e}");
    // The spec itself must be valid, whatever overrides it.
    let bad = Case::new("bad_spec", &SPEC.replace("steps = 10", "steps = 0"));
    let e = bad.spec_error(None, &["steps=3"], &Flags::default());
    assert!(e.contains("steps must be at least 1, got 0"), "{e}");
}

#[test]
fn run_sections_get_tf_defaults_and_paths_from_their_origin() {
    let c = Case::new("defaults", SPEC);
    let r = c.ok(None, &[], &Flags::default());
    assert_eq!(r.config.checkpoint.dir, None);
    assert_eq!(r.config.summaries.dir, None);
    assert_eq!(r.config.logging.every_steps, Some(100));
    let sub = c.dir.join("conf");
    std::fs::create_dir_all(&sub).unwrap();
    let file = sub.join("run.yaml");
    std::fs::write(&file, "checkpoint:\n  dir: ckpt\n").unwrap();
    let r = c.ok(Some(&file), &[], &Flags::default());
    let ck = &r.config.checkpoint;
    let expected = std::path::absolute(sub.join("ckpt")).unwrap();
    assert_eq!(ck.dir.as_deref(), Some(expected.as_path()));
    // MonitoredTrainingSession: 600 s when only a directory is given, 5 kept,
    // summaries every 100 steps into the checkpoint directory.
    assert_eq!(
        (ck.every_steps, ck.every_secs, ck.keep),
        (None, Some(600.0), 5)
    );
    assert_eq!(r.config.summaries.dir, ck.dir);
    assert_eq!(r.config.summaries.every_steps, Some(100));
    // A period given replaces the default; 0 means never.
    let r = c.ok(
        Some(&file),
        &["checkpoint.every_steps=50"],
        &Flags::default(),
    );
    assert_eq!(
        (
            r.config.checkpoint.every_steps,
            r.config.checkpoint.every_secs
        ),
        (Some(50), None)
    );
    let r = c.ok(
        Some(&file),
        &["checkpoint.every_steps=0"],
        &Flags::default(),
    );
    assert_eq!(
        (
            r.config.checkpoint.every_steps,
            r.config.checkpoint.every_secs
        ),
        (None, None)
    );
    // A directory in the spec is relative to the spec's directory.
    let s = Case::new(
        "spec_dir",
        &format!("{SPEC}checkpoint {{ dir = \"runs/a\", keep = 2 }}\n"),
    );
    let r = s.ok(None, &[], &Flags::default());
    assert_eq!(r.config.checkpoint.dir, Some(s.dir.join("runs/a")));
    assert_eq!(r.config.checkpoint.keep, 2);
    let flags = Flags {
        checkpoint_dir: Some("elsewhere".into()),
        keep: Some(9),
        summary_dir: Some("tb".into()),
        ..Flags::default()
    };
    let r = s.ok(None, &[], &flags);
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(r.config.checkpoint.dir, Some(cwd.join("elsewhere")));
    assert_eq!(r.config.checkpoint.keep, 9);
    assert_eq!(r.config.summaries.dir, Some(cwd.join("tb")));
}

#[test]
fn data_comes_from_the_highest_layer() {
    let c = Case::new("data", SPEC);
    let file = c.yaml("data: other.csv\n");
    let r = c.ok(Some(&file), &[], &Flags::default());
    assert_eq!(
        r.config.data,
        Some(std::path::absolute(c.dir.join("other.csv")).unwrap())
    );
    // data alone does not rewrite the spec.
    assert_eq!(r.source.text, c.spec.text);
    let flags = Flags {
        data: Some("flag.csv".into()),
        ..Flags::default()
    };
    let r = c.ok(Some(&file), &[], &flags);
    assert_eq!(
        r.config.data,
        Some(std::env::current_dir().unwrap().join("flag.csv"))
    );
}

#[test]
fn logging_and_evaluate_blocks_are_added_when_the_spec_has_none() {
    let c = Case::new("new_blocks", SPEC);
    let r = c.ok(
        None,
        &[
            "logging.tensors=[loss, h]",
            "logging.every_steps=7",
            "evaluate.every_steps=50",
        ],
        &Flags::default(),
    );
    assert_eq!(r.config.logging.tensors, ["loss", "h"]);
    assert_eq!(r.config.logging.every_steps, Some(7));
    assert_eq!(r.config.evaluate.every_steps, Some(50));
    let e = c.spec_error(None, &["logging.tensors=[los]"], &Flags::default());
    assert!(e.contains("unknown tensor `los` in `logging`"), "{e}");
    assert!(e.contains("did you mean `loss`?"), "{e}");
    assert!(e.contains("comes from --set logging.tensors=[los]"), "{e}");
}

#[test]
fn the_record_hashes_the_spec_as_written_and_reads_back() {
    let c = Case::new("record", SPEC);
    let r = c.ok(None, &["steps=3", "optimizer.beta1=0.5"], &Flags::default());
    let rec = config::record(&r, &c.dir.join("spec.spec"), "9.9.9").unwrap();
    assert_eq!(rec.spec_text, SPEC);
    assert_eq!(
        rec.spec_sha256,
        specc_runtime::config::record::sha256_hex(SPEC.as_bytes())
    );
    assert_eq!(rec.specc_version, "9.9.9");
    assert!(
        rec.config.contains(&("steps".into(), "3".into())),
        "{:?}",
        rec.config
    );
    assert!(
        rec.config
            .contains(&("optimizer.beta1".into(), "0.5".into())),
        "{:?}",
        rec.config
    );
    assert_eq!(
        rec.overrides,
        [
            ("steps".to_string(), "3".to_string()),
            ("optimizer.beta1".to_string(), "0.5".to_string())
        ]
    );
    assert_eq!(rec.data.len(), 1);
    assert_eq!(
        rec.data[0].size,
        std::fs::metadata(c.dir.join("data.csv")).unwrap().len()
    );
    let run_dir = c.dir.join("runs");
    rec.write(&run_dir).unwrap();
    let back = RunRecord::read(&run_dir).unwrap().unwrap();
    assert_eq!(back, rec);
    // Resuming with more steps is fine; an edited spec is refused.
    let more = c.ok(
        None,
        &["steps=30", "optimizer.beta1=0.5"],
        &Flags::default(),
    );
    let now = config::record(&more, &c.dir.join("spec.spec"), "9.9.9").unwrap();
    assert!(back
        .check_resume(&now, &run_dir)
        .unwrap()
        .warnings
        .is_empty());
    let edited = Case::new("record_edited", &SPEC.replace("zeros", "ones"));
    let r = edited.ok(None, &[], &Flags::default());
    let now = config::record(&r, &edited.dir.join("spec.spec"), "9.9.9").unwrap();
    let e = back.check_resume(&now, &run_dir).unwrap_err();
    assert!(
        e.contains("the spec changed since the checkpoint in"),
        "{e}"
    );
}

#[test]
fn empty_blocks_and_calls_take_inserted_values() {
    let c = Case::new(
        "empty_blocks",
        &format!(
            "{}evaluate {{}}\n",
            SPEC.replace("adam(0.01)", "gradient_descent(learning_rate = 0.5)")
        ),
    );
    let r = c.ok(None, &["evaluate.every_steps=5"], &Flags::default());
    assert!(
        r.source.text.contains("evaluate { every_steps = 5 }"),
        "{}",
        r.source.text
    );
    assert_eq!(r.config.evaluate.every_steps, Some(5));
    let c = Case::new("empty_call", &SPEC.replace("adam(0.01)", "adam()"));
    let r = c.ok(None, &["optimizer.beta1=0.5"], &Flags::default());
    assert!(
        r.source.text.contains("adam(beta1 = 0.5)"),
        "{}",
        r.source.text
    );
    let c = Case::new(
        "empty_call_ok",
        &format!("{SPEC}checkpoint {{ }}\n")
            .replace("adam(0.01)", "adam(learning_rate = 0.01, beta2 = 0.9)"),
    );
    let r = c.ok(
        None,
        &["optimizer.epsilon=0.001", "checkpoint.keep=1"],
        &Flags::default(),
    );
    assert!(
        r.source
            .text
            .contains("adam(learning_rate = 0.01, beta2 = 0.9, epsilon = 0.001)"),
        "{}",
        r.source.text
    );
    assert!(r.source.text.contains("keep = 1 }"), "{}", r.source.text);
    assert_eq!(r.config.checkpoint.keep, 1);
}

#[test]
fn train_settings_may_be_written_as_a_train_section() {
    let c = Case::new("train_section", SPEC);
    let file = c.yaml("train:\n  steps: 6\n  batch: 2\n");
    let r = c.ok(Some(&file), &[], &Flags::default());
    assert_eq!((steps(&r), r.model.train.batch), (Duration::Steps(6), 2));
    let r = c.ok(Some(&file), &["train.steps=8"], &Flags::default());
    assert_eq!(steps(&r), Duration::Steps(8));
    let file = c.yaml("train:\n  batches: 6\n");
    let e = c.other(Some(&file), &[]);
    assert!(
        e.starts_with(&format!(
            "{}:2:3: unknown key `train.batches`; did you mean `train.batch`?",
            file.display()
        )),
        "{e}"
    );
    let e = c.other(None, &["train.data=x.csv"]);
    assert!(e.contains("unknown key `train.data`"), "{e}");
}
