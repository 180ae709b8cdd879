//! The diagnostic codes' explanations: every example spec fails with exactly
//! its code and compiles once fixed; `docs/errors.md` is what
//! `specc explain --markdown` prints; `specc explain` explains a code,
//! suggests one for a typo (exit 1), lists them, and names what replaced a
//! retired code.

use std::path::PathBuf;
use std::process::Command;

use specc_grammar::code::{self, Code};
use specc_grammar::diag::render_all;
use specc_grammar::SourceFile;

/// The shown codes that no spec checked by `specc check` shows: an
/// exporter's, a run's, or the compiler's own.
const WITHOUT_EXAMPLE: &[Code] = &[
    Code::NonFiniteValue,
    Code::TfliteUnsupported,
    Code::TfliteMissingParameter,
    Code::InternalError,
];

fn workdir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("explain");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn specc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run specc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks one code's example; an error says what is wrong.
fn check_example(c: Code) -> Result<(), String> {
    let Some(ex) = c.explanation().example else {
        return if WITHOUT_EXAMPLE.contains(&c) {
            Ok(())
        } else {
            Err(format!("{c}: no example"))
        };
    };
    if WITHOUT_EXAMPLE.contains(&c) {
        return Err(format!("{c}: has an example, but is listed without one"));
    }
    let path = workdir().join(format!("{c}.spec"));
    let wrong = SourceFile::new(path.to_string_lossy(), ex.wrong);
    match specc_compiler::build(&wrong) {
        Ok(_) => return Err(format!("{c}: the example compiles:\n{}", ex.wrong)),
        Err(d) if d.iter().any(|d| d.code != c) => {
            return Err(format!(
                "{c}: the example fails with other codes:\n{}",
                render_all(&d, &wrong, false)
            ))
        }
        Err(_) => {}
    }
    let fixed = SourceFile::new(path.to_string_lossy(), ex.fixed());
    specc_compiler::build(&fixed).map_err(|d| {
        format!(
            "{c}: the fixed example fails:\n{}",
            render_all(&d, &fixed, false)
        )
    })?;
    Ok(())
}

#[test]
fn every_example_fails_with_its_code_and_compiles_once_fixed() {
    let failures: Vec<String> = Code::shown()
        .filter_map(|c| check_example(c).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_poisoned_marker_is_not_shown() {
    assert!(!Code::Poisoned.is_shown());
    assert!(Code::shown().all(|c| c != Code::Poisoned));
}

#[test]
fn docs_errors_md_is_generated_from_the_codes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == code::markdown(),
        "docs/errors.md is stale: regenerate it with\n  \
         cargo run -- explain --markdown > docs/errors.md"
    );
    for c in Code::shown() {
        assert!(on_disk.contains(&format!("## `{c}`")), "{c}");
    }
}

#[test]
fn explain_prints_a_codes_explanation() {
    let (status, out, err) = specc(&["explain", "argument-out-of-range"]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, Code::ArgumentOutOfRange.explain());
    assert!(
        out.starts_with(
            "argument-out-of-range: a number is outside the range its argument allows\n"
        ),
        "{out}"
    );
    // As printed in a diagnostic, too.
    let (status, again, _) = specc(&["explain", "error[argument-out-of-range]"]);
    assert_eq!((status, again), (0, out));
}

#[test]
fn explain_of_an_unknown_code_suggests_one_and_fails() {
    let (status, out, err) = specc(&["explain", "argument-out-of-rnage"]);
    assert_eq!(status, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "error: no diagnostic code `argument-out-of-rnage`; did you mean \
         `argument-out-of-range`? (`specc explain` lists the codes)\n"
    );
}

#[test]
fn explain_without_a_code_lists_every_code() {
    let (status, out, err) = specc(&["explain"]);
    assert_eq!(status, 0, "{err}");
    let listed: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let shown: Vec<&str> = Code::shown().map(Code::as_str).collect();
    assert_eq!(listed, shown);
}

#[test]
fn explain_markdown_prints_docs_errors_md() {
    let (status, out, err) = specc(&["explain", "--markdown"]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, code::markdown());
}

#[test]
fn explain_of_the_retired_bad_argument_names_its_replacements() {
    let (status, out, err) = specc(&["explain", "bad-argument"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("bad-argument: no longer reported"), "{out}");
    for c in [
        Code::ArgumentType,
        Code::ArgumentOutOfRange,
        Code::UnknownChoice,
        Code::ConflictingArguments,
    ] {
        assert!(out.contains(&format!("  {c}: {}\n", c.summary())), "{out}");
    }
}
