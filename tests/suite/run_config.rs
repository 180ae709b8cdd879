//! `specc run` with a run configuration: the spec's run items and their
//! errors (caret, did-you-mean), `--config FILE`, `--set KEY=VALUE` and the
//! dedicated flags; an optimizer override trains exactly like the edited
//! spec.

use crate::cli;

use cli::{fails, replace, specc, workdir, BASE};

const SUITE: &str = "run_config";

fn json_line(out: &str) -> serde_json::Value {
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `specc run spec.spec --json ARGS` with `spec` in a fresh directory.
fn run_json(name: &str, spec: &str, args: &[&str]) -> serde_json::Value {
    let dir = workdir(SUITE, name);
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let all = [&["run", "spec.spec", "--json"][..], args].concat();
    let (status, out, err) = specc(&dir, &all);
    assert_eq!(status, 0, "{all:?}: {err}");
    json_line(&out)
}

/// The spec's learning rate, as written in the base spec.
fn base_learning_rate() -> f64 {
    let s = BASE.split("adam(learning_rate = ").nth(1).unwrap();
    s[..s.find(')').unwrap()].parse().unwrap()
}

#[test]
fn set_learning_rate_trains_exactly_like_the_edited_spec() {
    let lr = base_learning_rate() * 5.0;
    let written = format!("adam(learning_rate = {lr:?})");
    let edited = run_json(
        "lr_edited",
        &replace(
            &format!("adam(learning_rate = {})", base_learning_rate()),
            &written,
        ),
        &[],
    );
    let set = format!("optimizer.learning_rate={lr:?}");
    let overridden = run_json("lr_set", BASE, &["--set", &set]);
    let plain = run_json("lr_plain", BASE, &[]);
    for key in ["last_loss", "learning_rate"] {
        assert_eq!(edited[key], overridden[key], "{key}");
    }
    assert_eq!(edited["train"], overridden["train"]);
    // The override did change training.
    assert_ne!(plain["last_loss"], overridden["last_loss"]);
    // The same through a config file.
    let dir = workdir(SUITE, "lr_file");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(
        dir.join("run.yaml"),
        format!("optimizer:\n  learning_rate: {lr:?}\n"),
    )
    .unwrap();
    let (status, out, err) = specc(
        &dir,
        &["run", "spec.spec", "--json", "--config", "run.yaml"],
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(json_line(&out)["last_loss"], edited["last_loss"]);
}

#[test]
fn config_file_steps_and_flag_precedence() {
    let dir = workdir(SUITE, "steps");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(dir.join("run.yaml"), "steps: 3\n").unwrap();
    let (status, out, err) = specc(&dir, &["run", "spec.spec", "--config", "run.yaml"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("trained 3 steps"), "{out}");
    let (status, out, err) = specc(
        &dir,
        &[
            "run",
            "spec.spec",
            "--config",
            "run.yaml",
            "--set",
            "steps=4",
        ],
    );
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("trained 4 steps"), "{out}");
    let (status, out, err) = specc(
        &dir,
        &[
            "run",
            "spec.spec",
            "--config",
            "run.yaml",
            "--set",
            "steps=4",
            "--steps",
            "5",
        ],
    );
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("trained 5 steps"), "{out}");
}

#[test]
fn config_file_errors_name_the_file_line_and_column() {
    let dir = workdir(SUITE, "file_errors");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    std::fs::write(
        dir.join("run.yaml"),
        "steps: 3\nsummaries:\n  evry_steps: 10\n",
    )
    .unwrap();
    let (status, out, err) = specc(&dir, &["run", "spec.spec", "--config", "run.yaml"]);
    assert_eq!(status, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("run.yaml:3:3: unknown key `summaries.evry_steps`; did you mean `summaries.every_steps`?"),
        "{err}"
    );
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--config", "missing.yaml"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("cannot read missing.yaml"), "{err}");
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--config", "/dev/zero"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("larger than 1 MiB"), "{err}");
    std::fs::write(dir.join("run.yaml"), "steps: [3\n").unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--config", "run.yaml"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("run.yaml:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_override_value_error_shows_the_spec_and_names_the_override() {
    let dir = workdir(SUITE, "override_value");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--set", "batch=0"]);
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains("error[bad-setting]: batch must be between 1 and 16777216, got 0"),
        "{err}"
    );
    assert!(
        err.contains("the value of `batch` comes from --set batch=0"),
        "{err}"
    );
    let (status, _, err) = specc(&dir, &["run", "spec.spec", "--set", "optimizer.beta3=0.5"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("`adam` has no argument `beta3`"), "{err}");
}

#[test]
fn run_flags_refuse_negative_values() {
    let dir = workdir(SUITE, "flags");
    std::fs::write(dir.join("spec.spec"), BASE).unwrap();
    for args in [
        &["--checkpoint-every-steps", "-1"][..],
        &["--checkpoint-every-secs", "-2"],
        &["--keep", "-3"],
    ] {
        let all = [&["run", "spec.spec"][..], args].concat();
        let (status, out, err) = specc(&dir, &all);
        assert_eq!(status, 2, "{all:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains(args[1]),
            "{all:?}: {err}"
        );
        assert!(out.is_empty());
    }
}

// The spec's run items: each error with its code, caret and help.

fn caret_under(err: &str, text: &str) {
    let line = err
        .lines()
        .find(|l| l.contains(" | ") && l.contains(text))
        .unwrap_or_else(|| panic!("no source line with {text:?}:\n{err}"));
    let col = line.find(text).unwrap();
    let carets = err
        .lines()
        .skip_while(|l| *l != line)
        .nth(1)
        .unwrap_or_default();
    assert_eq!(
        carets.find('^'),
        Some(col),
        "caret not under {text:?}:\n{err}"
    );
}

fn with(item: &str) -> String {
    format!("{BASE}{item}\n")
}

#[test]
fn checkpoint_unknown_key_suggests() {
    let err = fails(
        SUITE,
        "ck_key",
        &with("checkpoint { dir = \"r\", every_step = 10 }"),
        "unknown-argument",
    );
    assert!(
        err.contains("`checkpoint` has no setting `every_step`"),
        "{err}"
    );
    assert!(err.contains("did you mean `every_steps`?"), "{err}");
    caret_under(&err, "every_step ");
}

#[test]
fn checkpoint_negative_steps() {
    let err = fails(
        SUITE,
        "ck_neg",
        &with("checkpoint { dir = \"r\", every_steps = -10 }"),
        "argument-out-of-range",
    );
    assert!(
        err.contains("every_steps must not be negative, got -10"),
        "{err}"
    );
    caret_under(&err, "-10");
}

#[test]
fn checkpoint_wrong_types() {
    let err = fails(
        SUITE,
        "ck_dir",
        &with("checkpoint { dir = 5 }"),
        "argument-type",
    );
    assert!(err.contains("expected a string, found an integer"), "{err}");
    let err = fails(
        SUITE,
        "ck_secs",
        &with("checkpoint { dir = \"r\", every_secs = -1.5 }"),
        "bad-setting",
    );
    assert!(
        err.contains("every_secs must be a finite number, not negative, got -1.5"),
        "{err}"
    );
    let err = fails(
        SUITE,
        "ck_keep",
        &with("checkpoint { dir = \"r\", keep = 2.5 }"),
        "argument-type",
    );
    assert!(err.contains("expected an integer"), "{err}");
}

#[test]
fn run_items_appear_once() {
    let err = fails(
        SUITE,
        "dup",
        &with("summaries { every_steps = 10 }\nsummaries { every_steps = 20 }"),
        "duplicate-item",
    );
    assert!(err.contains("a spec has one `summaries`"), "{err}");
}

#[test]
fn summaries_histograms_is_a_flag() {
    let err = fails(
        SUITE,
        "hist",
        &with("summaries { histograms = 1 }"),
        "argument-type",
    );
    assert!(err.contains("expected `true` or `false`"), "{err}");
}

#[test]
fn logging_unknown_tensor_suggests() {
    let err = fails(
        SUITE,
        "log_name",
        &with("logging { tensors = [loss, logit] }"),
        "unknown-name",
    );
    assert!(err.contains("unknown tensor `logit` in `logging`"), "{err}");
    assert!(err.contains("did you mean `logits`?"), "{err}");
    caret_under(&err, "logit]");
}

#[test]
fn logging_tensors_are_names() {
    let err = fails(
        SUITE,
        "log_expr",
        &with("logging { tensors = [loss, h + 1] }"),
        "bad-setting",
    );
    assert!(
        err.contains("expected the name of a tensor, found an expression"),
        "{err}"
    );
}

#[test]
fn logging_takes_one_period() {
    let err = fails(
        SUITE,
        "log_both",
        &with("logging { every_steps = 5, every_secs = 2 }"),
        "bad-setting",
    );
    assert!(
        err.contains("give either `every_steps` or `every_secs`, not both"),
        "{err}"
    );
}

#[test]
fn evaluate_unknown_key() {
    let err = fails(
        SUITE,
        "eval_key",
        &with("evaluate { every_secs = 5 }"),
        "unknown-argument",
    );
    assert!(
        err.contains("`evaluate` has no setting `every_secs`"),
        "{err}"
    );
}

#[test]
fn init_from_checkpoint_unknown_parameter_suggests() {
    let err = fails(
        SUITE,
        "init_param",
        &with("init_from_checkpoint(\"pre\", { \"layer/W\": \"W3\" })"),
        "unknown-name",
    );
    assert!(err.contains("`W3` is not a parameter"), "{err}");
    assert!(
        err.contains("did you mean `W1`?") || err.contains("did you mean `W2`?"),
        "{err}"
    );
    caret_under(&err, "\"W3\"");
}

#[test]
fn init_from_checkpoint_scope_needs_a_scope() {
    let err = fails(
        SUITE,
        "init_scope",
        &with("init_from_checkpoint(\"pre\", { \"old\": \"/\" })"),
        "conflicting-arguments",
    );
    assert!(
        err.contains("`old` maps to the scope `/`, so it must be a scope too"),
        "{err}"
    );
    caret_under(&err, "\"old\"");
}

#[test]
fn init_from_checkpoint_needs_a_map() {
    let err = fails(
        SUITE,
        "init_nomap",
        &with("init_from_checkpoint(\"pre\")"),
        "wrong-arity",
    );
    assert!(
        err.contains("takes a checkpoint path and an assignment map"),
        "{err}"
    );
    let err = fails(
        SUITE,
        "init_empty",
        &with("init_from_checkpoint(\"pre\", {})"),
        "empty-argument",
    );
    assert!(err.contains("the assignment map is empty"), "{err}");
}

#[test]
fn init_from_checkpoint_may_come_before_the_params() {
    let spec = BASE.replacen(
        "params {",
        "init_from_checkpoint(\"pre\", { \"/\": \"/\" })\nparams {",
        1,
    );
    let dir = workdir(SUITE, "init_order");
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (status, _, err) = specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
}

#[test]
fn logging_accepts_every_kind_of_name() {
    let dir = workdir(SUITE, "log_names");
    let spec =
        with("logging { tensors = [loss, h, accuracy, global_step, learning_rate, W1, x, y] }");
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (status, _, err) = specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 0, "{err}");
}

/// `--set optimizer.KEY=...` overrides a hyperparameter of an optimizer
/// written in the spec (here the library's `lamb`) as editing the spec does.
#[test]
fn set_overrides_a_hyperparameter_of_a_defined_optimizer() {
    let lr = base_learning_rate();
    let spec = replace(
        &format!("adam(learning_rate = {lr})"),
        &format!("lamb(learning_rate = {lr})"),
    );
    let edited = run_json(
        "lamb_edited",
        &replace(
            &format!("adam(learning_rate = {lr})"),
            &format!("lamb(learning_rate = {lr}, weight_decay = 0.5)"),
        ),
        &[],
    );
    let overridden = run_json("lamb_set", &spec, &["--set", "optimizer.weight_decay=0.5"]);
    let plain = run_json("lamb_plain", &spec, &[]);
    assert_eq!(edited["last_loss"], overridden["last_loss"]);
    assert_eq!(edited["train"], overridden["train"]);
    assert_ne!(plain["last_loss"], overridden["last_loss"]);
    let dir = workdir(SUITE, "lamb_unknown");
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, _, err) = specc(
        &dir,
        &["run", "spec.spec", "--set", "optimizer.weight_decy=0.5"],
    );
    assert_ne!(status, 0);
    assert!(
        err.contains(
            "`lamb` has no argument `weight_decy`; did you mean `optimizer.weight_decay`?"
        ),
        "{err}"
    );
}
