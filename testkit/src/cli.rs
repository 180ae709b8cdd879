//! Running the `specc` binary from a test: in a directory, with extra
//! environment variables, without colors, and its exit code and output.
//!
//! Where the binary is: the `specc` package's tests pass
//! `env!("CARGO_BIN_EXE_specc")`, which cargo sets for them; a test of
//! another crate (whose cargo knows no `specc` binary) uses [`specc_binary`],
//! `target/<profile>/specc` next to the running test binary, which
//! `cargo test --workspace` builds.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `bin ARGS` in `dir` with `NO_COLOR=1` and `env`; returns (exit code,
/// stdout, stderr), the exit code -1 when a signal ended it.
pub fn run(bin: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `target/<profile>/specc` of the running test binary's target directory
/// (a test binary is `target/<profile>/deps/NAME-HASH`); it must exist.
pub fn specc_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary in target/<profile>/deps");
    let bin = profile.join(format!("specc{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it (`cargo build`, or `cargo test --workspace`)",
        bin.display()
    );
    bin
}
