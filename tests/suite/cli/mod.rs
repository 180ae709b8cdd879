//! The harness of the CLI error tests (`cli_errors`, `cli_errors_constants`,
//! ...): the base spec and its data (`specc_testkit::spec`), a work directory
//! per case, running this package's `specc` there, and the checks every spec
//! error must pass (exit 2, the code, file:line:column, no panic).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use specc_testkit::spec::{replace, BASE, DATA};

/// The `specc` binary cargo built for these tests.
pub const SPECC: &str = env!("CARGO_BIN_EXE_specc");

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
    specc_testkit::cli::run(Path::new(SPECC), dir, args, env)
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
