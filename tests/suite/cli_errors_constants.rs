//! Constant expressions whose value is inf or NaN (`c = 1 / 0`) are spec
//! errors at compile time (`non-finite-constant`, exit code 2, a caret under
//! the expression), not a NaN loss later blamed on the learning rate; the
//! same for a hyperparameter that may be a schedule (`learning_rate`), which is
//! lowered like a model expression. Constants that are finite, however
//! computed, are not errors. (In compile-time values — an initializer's
//! `value`, a clipping bound — `1 / 0` writes an infinity; see golden_clipping.)

use crate::cli;

use cli::{replace, specc};

const SUITE: &str = "cli_errors_constants";

/// Runs `specc check spec.spec` on `spec`; returns (exit code, stdout, stderr).
fn check(name: &str, spec: &str) -> (i32, String, String) {
    let dir = cli::workdir(SUITE, name);
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    specc(&dir, &["check", "spec.spec"])
}

/// Checks a spec that must fail with a non-finite constant under `caret`;
/// returns the rendered diagnostic.
fn fails(name: &str, spec: &str, caret: &str) -> String {
    let err = cli::fails(SUITE, name, spec, "non-finite-constant");
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

macro_rules! case {
    ($name:ident, $spec:expr, $caret:literal) => {
        #[test]
        fn $name() {
            let err = fails(stringify!($name), &$spec, $caret);
            insta::assert_snapshot!(err);
        }
    };
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
