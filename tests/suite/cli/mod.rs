//! The harness of the CLI error tests (`cli_errors.rs`,
//! `cli_errors_constants.rs`): a valid base spec and its data, a work
//! directory per case, running `specc` there, and the checks every spec error
//! must pass (exit 2, the code, file:line:column, no panic).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A valid spec; each case replaces one piece of it.
pub const BASE: &str = r#"model tiny
data csv("data.csv")
label y: int
features {
  x = numeric(x0..x3)
}
params {
  W1: [4, 8] = glorot_uniform(seed = 1)
  b1: [8]    = zeros
  W2: [8, 3] = glorot_uniform(seed = 2)
  b2: [3]    = zeros
}
h      = relu(x @ W1 + b1)
logits = h @ W2 + b2
loss   = mean(sparse_softmax_cross_entropy(y, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
metrics { accuracy(y, argmax(logits)) }
"#;

/// The base spec's `data.csv`.
pub const DATA: &str =
    "x0,x1,x2,x3,y\n1,2,3,4,0\n0.5,1,1.5,2,1\n-1,0,1,2,2\n3,1,4,1,0\n2,7,1,8,1\n";

/// The base spec with the first `from` replaced by `to`.
pub fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "base spec has no {from:?}");
    BASE.replacen(from, to, 1)
}

/// A fresh directory for case `name` of test file `suite`, holding `data.csv`.
pub fn workdir(suite: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(suite)
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    d
}

/// Runs `specc ARGS` in `dir`; returns (exit code, stdout, stderr).
pub fn specc(dir: &Path, args: &[&str]) -> (i32, String, String) {
    specc_env(dir, args, &[])
}

/// [`specc`] with extra environment variables.
pub fn specc_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run specc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `specc check` on `spec` (case `name` of `suite`), which must fail with
/// `code`: exit 2, file:line:column, no panic. Returns the rendered
/// diagnostics.
pub fn fails(suite: &str, name: &str, spec: &str, code: &str) -> String {
    let dir = workdir(suite, name);
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (status, _, err) = specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 2, "{name}: expected exit 2, got {status}\n{err}");
    assert!(
        err.contains(&format!("error[{code}]")),
        "{name}: expected error[{code}], got:\n{err}"
    );
    assert!(
        err.contains("spec.spec:"),
        "{name}: no file:line:column\n{err}"
    );
    assert!(!err.contains("panicked"), "{name}: panic\n{err}");
    err
}
