//! Constant expressions whose value is inf or NaN (`c = 1 / 0`) are spec
//! errors at compile time (`non-finite-constant`, exit code 2, a caret under
//! the expression), not a NaN loss later blamed on the learning rate; the
//! same for a hyperparameter that may be a schedule (`learning_rate`), which is
//! lowered like a model expression. Constants that are finite, however
//! computed, are not errors. (In compile-time values — an initializer's
//! `value`, a clipping bound — `1 / 0` writes an infinity; see golden_clipping.)

use std::path::PathBuf;
use std::process::Command;

/// A valid spec; each case replaces one piece of it.
const BASE: &str = r#"model tiny
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

const DATA: &str = "x0,x1,x2,x3,y\n1,2,3,4,0\n0.5,1,1.5,2,1\n-1,0,1,2,2\n3,1,4,1,0\n2,7,1,8,1\n";

fn workdir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_errors_constants")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    d
}

/// Runs `specc check spec.spec` on `spec`; returns (exit code, stdout, stderr).
fn check(name: &str, spec: &str) -> (i32, String, String) {
    let dir = workdir(name);
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(["check", "spec.spec"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run specc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks a spec that must fail with a non-finite constant under `caret`;
/// returns the rendered diagnostic.
fn fails(name: &str, spec: &str, caret: &str) -> String {
    let (status, _, err) = check(name, spec);
    assert_eq!(status, 2, "{name}: expected exit 2, got {status}\n{err}");
    assert!(
        err.contains("error[non-finite-constant]"),
        "{name}: expected error[non-finite-constant], got:\n{err}"
    );
    assert!(
        err.contains("spec.spec:"),
        "{name}: no file:line:column\n{err}"
    );
    assert!(!err.contains("panicked"), "{name}: panic\n{err}");
    // The caret line is the one after the source line (`14 | ...`) holding `caret`.
    let lines: Vec<&str> = err.lines().collect();
    let src = lines
        .iter()
        .position(|l| {
            l.split_once(" | ")
                .is_some_and(|(n, t)| n.trim().parse::<u32>().is_ok() && t.contains(caret))
        })
        .unwrap_or_else(|| panic!("{name}: `{caret}` not shown\n{err}"));
    let (text, marks) = (lines[src], lines[src + 1]);
    let col = text.find(caret).unwrap();
    assert_eq!(
        marks.get(col..col + caret.len()),
        Some("^".repeat(caret.len()).as_str()),
        "{name}: the caret is not under `{caret}`\n{err}"
    );
    err
}

fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "base spec has no {from:?}");
    BASE.replacen(from, to, 1)
}

macro_rules! case {
    ($name:ident, $spec:expr, $caret:literal) => {
        #[test]
        fn $name() {
            let err = fails(stringify!($name), &$spec, $caret);
            insta::assert_snapshot!(err);
        }
    };
}

#[test]
fn base_spec_is_valid() {
    let (status, out, err) = check("valid", BASE);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("ok"), "{out}");
}

case!(
    division_by_zero,
    replace("loss   =", "c = 1 / 0\nloss   ="),
    "1 / 0"
);
case!(
    zero_over_zero_is_nan,
    replace("h @ W2 + b2", "h @ W2 + b2 * (0 / 0)"),
    "(0 / 0)"
);
case!(
    square_root_of_a_negative_number,
    replace("h @ W2 + b2", "h @ W2 + b2 * sqrt(-1.0)"),
    "sqrt(-1.0)"
);
case!(
    reciprocal_of_zero,
    replace("h @ W2 + b2", "h @ W2 + reciprocal(0.0)"),
    "reciprocal(0.0)"
);
case!(
    log_of_zero,
    replace("h @ W2 + b2", "h @ W2 + log(0.0)"),
    "log(0.0)"
);
case!(
    exp_overflows_float32,
    replace("h @ W2 + b2", "h @ W2 + exp(1000.0)"),
    "exp(1000.0)"
);
case!(
    partial_product_overflows_float32,
    replace("h @ W2 + b2", "h @ W2 + 1e30 * 1e30 * b2"),
    "1e30 * 1e30"
);
case!(
    literal_beyond_float32,
    replace("h @ W2 + b2", "h @ W2 + 1e39 * b2"),
    "1e39"
);
case!(
    list_constant_beyond_float32,
    replace("h @ W2 + b2", "h @ W2 + [1.0, 5e38, 2.0]"),
    "5e38"
);
case!(
    hyperparameter_division_by_zero,
    replace("adam(learning_rate = 0.01)", "adam(learning_rate = 1 / 0)"),
    "1 / 0"
);

/// Finite constants pass, however they are computed: values near float32's
/// limits, exp below overflow, divisions by non-zero constants, subnormals.
#[test]
fn finite_constants_are_not_errors() {
    for expr in [
        "h @ W2 + b2 * (1 / 3)",
        "h @ W2 + exp(80.0) * b2",
        "h @ W2 + 1e19 * 1e19 * b2",
        "h @ W2 + 3e38 * b2",
        "h @ W2 + 1e-40 * b2",
        "h @ W2 + log(1e-30) * b2",
        "h @ W2 + b2 / 0.5",
    ] {
        let (status, _, err) = check("finite", &replace("h @ W2 + b2", expr));
        assert_eq!(status, 0, "{expr}: {err}");
    }
}
