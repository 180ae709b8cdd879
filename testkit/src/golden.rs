//! The golden directory and its readers: where TensorFlow's reference data
//! is (`SPECC_GOLDEN_DIR`, else the repository's `tests/golden`), the files
//! and sections every reader checks ([`GOLDEN_FILES`]), and the numbers of a
//! file (JSON numbers and the strings "nan", "inf", "-inf").
//!
//! `tests/golden/` is a copy of `../shared/golden` (checked identical by
//! `.ci/run`); `SPECC_GOLDEN_DIR` points the tests at another draw of the
//! same files (other values, shapes, ids and hyperparameters).
//! `tests/golden/extra/` holds reference data this repository generated
//! itself with TensorFlow (`tools/`), read from the repository whatever
//! `SPECC_GOLDEN_DIR` says ([`golden_extra`]).
//!
//! Every test that reads the directory is rerun by `.ci/run` against
//! `../shared/golden` when that differs: its test names must match one of the
//! filters of `tests/golden-tests.txt` (checked by the suite's
//! `golden_readers` test).

use std::path::{Path, PathBuf};

/// The repository root (the workspace holding this crate).
pub fn repository() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|a| a.join("tests/golden/README.md").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The golden directory: `SPECC_GOLDEN_DIR` (another draw of the reference
/// data), or the repository's `tests/golden`.
pub fn golden_dir() -> PathBuf {
    match std::env::var_os("SPECC_GOLDEN_DIR") {
        Some(d) => PathBuf::from(d),
        None => repository().join("tests/golden"),
    }
}

pub fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("cannot read golden file {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON in {}: {e}", p.display()))
}

/// The JSON files of the golden directory and the sections (top-level
/// keys) of each. [`golden`] checks both: a file or a
/// section no test knows fails every test that reads the directory, instead
/// of going unchecked. Which tests read what: `README.md` of the directory
/// and each test's module doc.
pub const GOLDEN_FILES: &[(&str, &[&str])] = &[
    (
        "ckpt.json",
        &[
            "_meta",
            "prefix",
            "list_variables",
            "variables",
            "checkpoint_state_file",
            "files",
            "checkpoint_values_equal_in_memory_state",
            "index_decoded",
            "in_memory_final_state",
        ],
    ),
    ("clipping.json", &["_meta", "cases"]),
    ("conv.json", &["_meta", "cases", "refused"]),
    ("ema.json", &["_meta", "cases"]),
    (
        "events.json",
        &[
            "_meta",
            "written",
            "files",
            "read_events_output",
            "corrupted_copy_self_test",
        ],
    ),
    (
        "examples.json",
        &[
            "_meta",
            "files",
            "tf_parse_example_of_all_records",
            "records",
        ],
    ),
    (
        "feature_columns.json",
        &[
            "_meta",
            "string_hashing",
            "categorical_columns",
            "hash_bucket_column_on_20_strings",
            "hash_bucket_column_on_ints",
            "identity_out_of_range",
            "hash_and_vocab_reimplementation_check",
            "crossed_id_reimplementation_check",
            "inputs",
            "input_layer",
            "parse_example_numeric_default",
            "crossed_column_default_hash_key",
        ],
    ),
    ("gradients.json", &["_meta", "cases"]),
    ("images.json", &["_meta", "cases", "codecs", "refused"]),
    (
        "optimizers.json",
        &[
            "_meta",
            "dense",
            "sparse",
            "sparse_dense_equivalent",
            "sparse_alt",
            "sparse_alt_dense_equivalent",
        ],
    ),
    ("schedules.json", &["_meta", "cases"]),
];

/// A file of the golden directory, parsed (an object's keys come in sorted
/// order, not the file's: no test may depend on it), after checking the directory's files and the file's sections
/// against [`GOLDEN_FILES`].
pub fn golden(name: &str) -> serde_json::Value {
    let dir = golden_dir();
    let unknown: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json") && !GOLDEN_FILES.iter().any(|(k, _)| k == f))
        .collect();
    assert!(
        unknown.is_empty(),
        "{}: golden files no test knows: {unknown:?}",
        dir.display()
    );
    let (_, sections) = GOLDEN_FILES
        .iter()
        .find(|(k, _)| *k == name)
        .unwrap_or_else(|| panic!("{name} is not a golden file (GOLDEN_FILES)"));
    let v = read_json(&dir.join(name));
    let mut keys: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("{name}: not a JSON object"))
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = sections.to_vec();
    keys.sort_unstable();
    want.sort_unstable();
    assert_eq!(keys, want, "{name}: its sections");
    v
}

/// A file of `tests/golden/extra` (reference data generated by `tools/`).
pub fn golden_extra(name: &str) -> serde_json::Value {
    read_json(&repository().join("tests/golden/extra").join(name))
}

/// A golden number: a JSON number or one of "nan", "inf", "-inf".
pub fn num(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Number(n) => n.as_f64().expect("number"),
        serde_json::Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            other => panic!("unexpected number string {other}"),
        },
        other => panic!("expected a number, got {other}"),
    }
}

/// A JSON integer (an id, a count, a step).
pub fn int(v: &serde_json::Value) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("expected an integer, got {v}"))
}

/// Dims and row-major values of a (nested) JSON array or a scalar. A ragged
/// array is a broken file: it panics rather than flattening to other dims.
pub fn array(v: &serde_json::Value) -> (Vec<usize>, Vec<f64>) {
    match v {
        serde_json::Value::Array(items) => {
            let mut dims0: Option<Vec<usize>> = None;
            let mut vals = Vec::new();
            for it in items {
                let (d, v) = array(it);
                if let Some(d0) = &dims0 {
                    assert_eq!(d0, &d, "ragged golden array");
                }
                dims0.get_or_insert(d);
                vals.extend(v);
            }
            let mut dims = vec![items.len()];
            dims.extend(dims0.unwrap_or_default());
            (dims, vals)
        }
        other => (vec![], vec![num(other)]),
    }
}

/// A JSON list of integers.
pub fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a list of integers, got {v}"))
        .iter()
        .map(int)
        .collect()
}

/// Runs every check, then fails listing each one that failed (so one failure
/// in a whole-file test does not hide the others). Returns how many ran.
pub fn check_all<T>(
    items: impl IntoIterator<Item = (String, T)>,
    check: impl Fn(&str, T),
) -> usize {
    let mut failed = Vec::new();
    let mut count = 0;
    for (name, item) in items {
        count += 1;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&name, item)));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{name}: {msg}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {count} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    count
}
