//! Shared helpers for the tests of the workspace and of the compiler crate
//! (which includes this file by path): locating and reading TF's golden data,
//! and comparing against it.
//!
//! Golden data: `tests/golden/` holds the TensorFlow reference set (a copy of
//! `../shared/golden`, checked identical by `.ci/run`); `SPECC_GOLDEN_DIR`
//! points the tests at another draw of the same files (other values, shapes,
//! ids and hyperparameters). `tests/golden/extra/` holds reference data this
//! repository generated itself with TensorFlow (`tools/`), read from the
//! repository whatever `SPECC_GOLDEN_DIR` says.
//!
//! Comparisons: [`Tol`] is relative with an absolute floor that each test
//! justifies from the scale of the quantity (a tensor's or a trajectory's
//! largest magnitude), never an absolute 1; [`assert_all_close`] checks
//! lengths before values and reports every element out of tolerance.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root (found from whichever workspace crate runs the test).
fn repository() -> PathBuf {
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

fn read_json(p: &Path) -> serde_json::Value {
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

/// A JSON value as spec literal text (nested lists of floats, full precision).
pub fn literal(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", parts.join(", "))
        }
        other => format!("{:e}", num(other)),
    }
}

/// Dims as spec shape text: `[2, 3]`.
pub fn shape_text(dims: &[usize]) -> String {
    let d: Vec<String> = dims.iter().map(|x| x.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// The largest finite magnitude of a set of values (0 if none).
pub fn scale(values: &[f64]) -> f64 {
    values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0, |m, v| m.max(v.abs()))
}

/// The scale a tolerance's floor is relative to: one for a whole tensor, or
/// one per element.
#[derive(Clone, Copy, Debug)]
pub enum Scale<'a> {
    One(f64),
    Each(&'a [f64]),
}

/// A tolerance: `|got - want| <= rel * |want| + floor * scale`. The floor is
/// for values near zero, relative to a scale each test chooses and justifies
/// for its quantity (a tensor's or a trajectory's largest magnitude).
#[derive(Clone, Copy, Debug)]
pub struct Tol<'a> {
    pub rel: f64,
    pub floor: f64,
    pub scale: Scale<'a>,
}

impl<'a> Tol<'a> {
    /// Relative `rel`, with a floor of `floor` times `scale`.
    pub fn scaled(rel: f64, floor: f64, scale: f64) -> Tol<'static> {
        Tol {
            rel,
            floor,
            scale: Scale::One(scale),
        }
    }

    /// Relative `rel`, with a floor of `floor` times each element's own scale.
    pub fn elementwise(rel: f64, floor: f64, scales: &'a [f64]) -> Tol<'a> {
        Tol {
            rel,
            floor,
            scale: Scale::Each(scales),
        }
    }

    /// Relative only: a zero must be exactly zero.
    pub fn relative(rel: f64) -> Tol<'static> {
        Tol::scaled(rel, 0.0, 0.0)
    }

    /// The scale of element `i`.
    fn scale_of(&self, i: usize) -> f64 {
        match self.scale {
            Scale::One(s) => s,
            Scale::Each(s) => s[i],
        }
    }

    /// The absolute floor of element `i`.
    fn abs(&self, i: usize) -> f64 {
        self.floor * self.scale_of(i)
    }
}

/// Whether `got` is within `rel * |want| + abs` of `want` (NaN matches NaN,
/// infinities match themselves exactly).
pub fn within(got: f64, want: f64, rel: f64, abs: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= rel * want.abs() + abs
}

/// |got - want| / |want| (0 when equal, infinite for a nonzero error on 0).
pub fn rel_error(got: f64, want: f64) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        0.0
    } else if want == 0.0 || !want.is_finite() || !got.is_finite() {
        f64::INFINITY
    } else {
        (got - want).abs() / want.abs()
    }
}

/// With `SPECC_GOLDEN_ERRORS` set, prints the worst errors of a comparison,
/// to measure what the tolerances leave: `golden-error <what>: relative <r>
/// relative-1% <r1> scaled <a>`: the largest relative error, the largest
/// relative error among values of at least 1% of their scale, and the largest
/// absolute error divided by the element's scale.
fn report(what: &str, got: &[f64], want: &[f64], tol: &Tol) {
    if std::env::var_os("SPECC_GOLDEN_ERRORS").is_none() {
        return;
    }
    let (mut rel, mut rel1, mut scaled) = (0.0f64, 0.0f64, 0.0f64);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let r = rel_error(g, w);
        let s = tol.scale_of(i);
        rel = rel.max(r);
        if w.abs() >= 0.01 * s {
            rel1 = rel1.max(r);
        }
        if g.is_finite() && w.is_finite() && s > 0.0 {
            scaled = scaled.max((g - w).abs() / s);
        }
    }
    eprintln!("golden-error {what}: relative {rel:e} relative-1% {rel1:e} scaled {scaled:e}");
}

/// Asserts one value against TF's.
pub fn assert_close(what: &str, got: f64, want: f64, tol: Tol) {
    assert_all_close_f64(what, &[got], &[want], tol);
}

/// Asserts `got` has exactly `want`'s length and every element is within
/// `tol`; the message lists every element out of tolerance.
pub fn assert_all_close(what: &str, got: &[f32], want: &[f64], tol: Tol) {
    let got: Vec<f64> = got.iter().map(|&g| f64::from(g)).collect();
    assert_all_close_f64(what, &got, want, tol);
}

/// [`assert_all_close`] for float64 results (the reference interpreter).
pub fn assert_all_close_f64(what: &str, got: &[f64], want: &[f64], tol: Tol) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, TF has {}",
        got.len(),
        want.len()
    );
    if let Scale::Each(s) = tol.scale {
        assert_eq!(s.len(), want.len(), "{what}: one scale per value");
    }
    report(what, got, want, &tol);
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|&(i, (&g, &w))| !within(g, w, tol.rel, tol.abs(i)))
        .map(|(i, (&g, &w))| {
            format!(
                "  [{i}] got {g:e}, want {w:e} (diff {:e}, relative {:e}, floor {:e})",
                (g - w).abs(),
                rel_error(g, w),
                tol.abs(i)
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} values out of tolerance (relative {:e}, floor {:e} of the scale):\n{}",
        bad.len(),
        want.len(),
        tol.rel,
        tol.floor,
        bad.join("\n")
    );
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

pub mod dense_problem;
pub mod example_features;
pub mod gradient_cases;
pub mod op_cases;
pub mod tf_call;

/// The compiler's interpreter leaves for a finite-difference check: the
/// model's inputs as `batch` rows of `ds` (shapes from the graph, the batch
/// dimension set to `batch`) and its variables as the session holds them.
pub fn interp_leaves(
    model: &specc_compiler::model::Model,
    ds: &specc_runtime::data::Dataset,
    session: &specc_runtime::session::Session,
    batch: usize,
) -> (
    Vec<specc_compiler::interp::Tensor>,
    Vec<specc_compiler::interp::Tensor>,
) {
    use specc_compiler::interp::Tensor;
    use specc_runtime::data::Values;
    let dims = |shape: &specc_compiler::ir::Shape, batch: usize| -> Vec<usize> {
        shape
            .concrete(batch as u64)
            .iter()
            .map(|&d| d as usize)
            .collect()
    };
    let inputs = model
        .graph
        .inputs
        .iter()
        .map(|leaf| {
            let d = ds.input(&leaf.name).expect("the dataset has every input");
            let data: Vec<f64> = match &d.values {
                Values::F32(v) => v[..batch * d.width].iter().map(|&x| x as f64).collect(),
                Values::I32(v) => v[..batch * d.width].iter().map(|&x| x as f64).collect(),
            };
            Tensor::new(dims(&leaf.shape, batch), data)
        })
        .collect();
    let vars = model
        .graph
        .vars
        .iter()
        .map(|leaf| {
            let v = session
                .var(&leaf.name)
                .expect("the session has every variable");
            Tensor::new(dims(&leaf.shape, 1), v.iter().map(|&x| x as f64).collect())
        })
        .collect();
    (inputs, vars)
}

/// The model's loss by the compiler's interpreter, at `vars`.
pub fn interp_loss(
    model: &specc_compiler::model::Model,
    inputs: &[specc_compiler::interp::Tensor],
    vars: &[specc_compiler::interp::Tensor],
    batch: usize,
) -> f64 {
    let env = specc_compiler::interp::Env {
        inputs,
        vars,
        batch,
        global_step: 0.0,
    };
    specc_compiler::interp::eval(&model.graph, &env, &[model.loss])[0].data[0]
}

/// The central finite difference of [`interp_loss`] in element `i` of
/// variable `p`, with step `1e-6 * max(|w|, 1)`; `vars` is left as it was.
pub fn central_difference(
    model: &specc_compiler::model::Model,
    inputs: &[specc_compiler::interp::Tensor],
    vars: &mut [specc_compiler::interp::Tensor],
    batch: usize,
    p: usize,
    i: usize,
) -> f64 {
    let w = vars[p].data[i];
    let h = 1e-6 * w.abs().max(1.0);
    vars[p].data[i] = w + h;
    let lp = interp_loss(model, inputs, vars, batch);
    vars[p].data[i] = w - h;
    let lm = interp_loss(model, inputs, vars, batch);
    vars[p].data[i] = w;
    (lp - lm) / (2.0 * h)
}
