//! Shared helpers of the runtime tests: the benchmark fixtures and data sets
//! of the shared reference set (`../shared` next to the repository), as
//! copied into the repository: the data sets the specs train on in
//! `specs/data`, the others and the bench fixtures in `tests/shared` (`.ci/run`
//! checks the copies against `../shared` where it exists). Missing files fail
//! loudly.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The repository's copy of `shared/REL`: `specs/REL` (the specs' data
/// sets, `data/...`) or `tests/shared/REL`.
pub fn shared(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let candidates = [
        root.join("specs").join(rel),
        root.join("tests/shared").join(rel),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "test input {rel} is missing (looked for {} and {})",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}

/// A fixture JSON file of `shared/bench/fixtures`.
pub fn fixture(name: &str) -> serde_json::Value {
    let p = shared(&format!("bench/fixtures/{name}"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn as_u64s(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("u64"))
        .collect()
}

pub fn as_f64s(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("f64"))
        .collect()
}

/// A fresh, empty temporary directory for this test process (under cargo's
/// `target/tmp`, so `cargo clean` removes it).
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "specc-runtime-test-{}-{}-{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write `text` to a new temporary file named `name` and return its path.
pub fn temp_file(name: &str, text: &str) -> PathBuf {
    let p = temp_dir(name).join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `got` is exactly the float32 value the fixture printed as `want`.
///
/// The fixtures hold float32 values printed as shortest-round-trip float64;
/// serde_json's default float parser may be 1 ulp (of f64) off, which never
/// changes the rounding to float32, so the comparison is done in float32.
pub fn assert_f32_exact(got: f32, want: f64, what: &str) {
    assert_eq!(got, want as f32, "{what}: got {got}, fixture {want}");
    assert!(
        (f64::from(got) - want).abs() <= want.abs() * 1e-15,
        "{what}: got {got}, fixture {want}"
    );
}

/// The numbers of the flat JSON array `"key": [ ... ]` in `text`, parsed with
/// Rust's correctly rounded `str::parse` (exact float64 constants, which
/// serde_json's default parser does not guarantee).
pub fn exact_f64_array(text: &str, key: &str) -> Vec<f64> {
    let start = text
        .find(&format!("\"{key}\""))
        .unwrap_or_else(|| panic!("key {key} not in fixture"));
    let open = start + text[start..].find('[').unwrap();
    let close = open + text[open..].find(']').unwrap();
    text[open + 1..close]
        .split(',')
        .map(|s| s.trim().parse::<f64>().unwrap())
        .collect()
}
