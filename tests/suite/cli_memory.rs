//! Sizes a machine cannot hold: tensors too large to address are a compile
//! error with a caret; a model or a data set larger than the machine's
//! available memory is refused (exit 1, both numbers) before anything is
//! allocated, where it once aborted the process; `specc check` reports the
//! memory a session needs.
//!
//! The refusals assume the machine has less than 2 TiB of memory available.

use std::path::PathBuf;
use std::process::Command;

/// A model with one parameter `W` of shape `dims` on synthetic data.
fn spec(dims: &str, rows: u64, batch: u32) -> String {
    format!(
        "model sized\n\
         data synthetic(rows = {rows}, features = 1000, classes = 10, seed = 1)\n\
         label label: int\n\
         features {{ x = numeric(x0..x999) }}\n\
         params {{\n  W: {dims} = zeros\n  V: [1000, 10] = zeros\n  b: [10] = zeros\n}}\n\
         logits = x @ V + b + reduce_sum(W) * 0\n\
         loss = mean(sparse_softmax_cross_entropy(label, logits))\n\
         optimizer adam(learning_rate = 0.01)\n\
         train {{ batch = {batch}, steps = 2 }}\n"
    )
}

/// Runs `specc ARGS` on `text` written to a spec file; returns (exit code, stdout, stderr).
fn specc(name: &str, text: &str, args: &[&str]) -> (i32, String, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_memory");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.spec"));
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(args)
        .arg(&path)
        .env("NO_COLOR", "1")
        .output()
        .expect("run specc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_parameter_too_large_to_address_is_a_compile_error_with_a_caret() {
    let text = spec("[100000000, 100000000]", 64, 32);
    for cmd in ["check", "run"] {
        let (code, _, err) = specc("too_large", &text, &[cmd]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("error[tensor-too-large]"), "{err}");
        assert!(
            err.contains("parameter `W` [100000000, 100000000] has 1.0e16 elements"),
            "{err}"
        );
        assert!(err.contains("too_large.spec:6:3"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn element_counts_that_overflow_are_a_compile_error_not_a_panic() {
    let text = spec("[4000000000, 4000000000, 4000000000]", 64, 32);
    let (code, _, err) = specc("overflow", &text, &["check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has more than 1.8e19 elements"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("internal"),
        "{err}"
    );
}

#[test]
fn an_activation_too_large_at_the_batch_size_is_a_compile_error() {
    // x @ P is [B, 100000]: at the largest batch, 2^24, 1.7e12 elements.
    let text = spec("[1]", 64, 16_777_216).replace(
        "reduce_sum(W) * 0",
        "reduce_sum(W) * 0 + reduce_sum(x @ P) * 0",
    );
    let text = text.replace(
        "  b: [10] = zeros\n",
        "  b: [10] = zeros\n  P: [1000, 100000] = zeros\n",
    );
    let (code, _, err) = specc("batch_too_large", &text, &["check"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("this tensor [B, 100000] has 1.7e12 elements at batch 16777216"),
        "{err}"
    );
    // The caret sits under the product.
    let line = err
        .lines()
        .position(|l| l.contains("reduce_sum(x @ P)"))
        .expect(&err);
    let caret = err.lines().nth(line + 1).expect(&err);
    let col = err.lines().nth(line).unwrap().find("x @ P").unwrap();
    assert_eq!(caret.find('^'), Some(col), "{err}");
}

#[test]
fn check_reports_the_memory_a_session_needs() {
    // Adam keeps W, V and b with two slots each: at least 3 * 4 * 10011 bytes.
    // One batch of 32 rows of x (1000 floats) and of label (one int32).
    let text = spec("[1]", 64, 32);
    let (code, out, err) = specc("reports", &text, &["check"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("memory: "))
        .unwrap_or_else(|| panic!("no memory line in {out}"));
    assert!(line.contains("inputs 125.1 KiB"), "{line}"); // 128000 + 128 bytes
    let variables: f64 = line
        .split("variables ")
        .nth(1)
        .and_then(|r| r.split(" KiB").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no variables in KiB in {line}"));
    let least = 3.0 * 4.0 * 10011.0 / 1024.0;
    assert!(
        variables >= least && variables < least + 4.0,
        "variables {variables} KiB, expected about {least:.1} KiB: {line}"
    );
}

#[test]
fn a_model_larger_than_the_machine_is_refused_before_allocating() {
    // W alone is 2^39 floats (2 TiB), and with Adam's slots 6 TiB.
    let text = spec("[1048576, 524288]", 64, 32);
    let (code, out, _) = specc("two_tib", &text, &["check"]);
    assert_eq!(code, 0);
    assert!(out.contains("memory: 6.0 TiB"), "{out}");
    assert!(out.contains("so `specc run` would refuse it"), "{out}");
    for cmd in [&["run"][..], &["bench", "--steps", "3"], &["gradcheck"]] {
        let (code, _, err) = specc("two_tib", &text, cmd);
        assert_eq!(code, 1, "{cmd:?}: {err}");
        // gradcheck's grad function also outputs W's 2 TiB gradient.
        assert!(
            err.contains("the model needs ") && err.contains("(variables 6.0 TiB, "),
            "{cmd:?}: {err}"
        );
        assert!(err.contains("but the machine has"), "{cmd:?}: {err}");
        assert!(!err.contains("memory allocation of"), "{cmd:?}: {err}");
    }
}

#[test]
fn a_batch_larger_than_the_machine_is_refused_before_allocating() {
    // wide_mlp's shape at batch 2^24: 52 GB of inputs alone.
    let text = spec("[1]", 64, 16_777_216);
    let (code, _, err) = specc("big_batch", &text, &["run"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the model needs") && err.contains("inputs 62.6 GiB"),
        "{err}"
    );
}

#[test]
fn synthetic_data_larger_than_the_machine_is_refused_before_allocating() {
    let text = spec("[1]", 4_000_000_000, 32);
    let (code, _, err) = specc("big_data", &text, &["run"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("synthetic: 4000000000 rows take 14.6 TiB of memory, but the machine has"),
        "{err}"
    );
}
