//! The layout of the workspace's tests (docs/tests.md): every test file is a
//! module of one of the few test binaries (a file that is not is never
//! compiled: the packages set `autotests = false`), and every test that
//! reads the golden directory is matched by a filter of
//! `tests/golden-tests.txt`, so `.ci/run` reruns it against another draw of
//! TF's numbers; and no test changes what the tests of its binary share, the
//! process's environment and working directory.

use std::path::{Path, PathBuf};

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's package directories: the root and its members.
fn packages() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .expect("the workspace's members");
    let mut dirs = vec![root()];
    dirs.extend(line.split('"').skip(1).step_by(2).map(|m| root().join(m)));
    dirs
}

/// The `.rs` files and the directories directly in `dir`, sorted.
fn entries(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            dirs.push(p);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// The directories of the test binaries: `tests/` of a package whose test
/// is `tests/main.rs`, `tests/NAME/` of one whose tests are
/// `tests/NAME/main.rs`.
fn binaries() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pkg in packages() {
        let tests = pkg.join("tests");
        if !tests.is_dir() {
            continue;
        }
        if tests.join("main.rs").is_file() {
            out.push(tests.clone());
        }
        for d in entries(&tests).1 {
            if d.join("main.rs").is_file() {
                out.push(d);
            }
        }
    }
    out
}

/// Whether `main` declares `mod NAME;` (or `pub mod NAME;`).
fn declares(main: &str, name: &str) -> bool {
    main.lines().any(|l| {
        let l = l.trim();
        l == format!("mod {name};") || l == format!("pub mod {name};")
    })
}

#[test]
fn every_test_file_is_a_module_of_its_binary() {
    let mut stray = Vec::new();
    let bins = binaries();
    // Root tests/*.rs: no binary (autotests = false).
    let (files, _) = entries(&root().join("tests"));
    stray.extend(
        files
            .iter()
            .map(|f| format!("{}: not in a test binary", f.display())),
    );
    for bin in &bins {
        let main = std::fs::read_to_string(bin.join("main.rs")).unwrap();
        let (files, dirs) = entries(bin);
        let modules = files
            .iter()
            .filter(|f| !f.ends_with("main.rs"))
            .filter_map(|f| f.file_stem())
            .chain(
                dirs.iter()
                    .filter(|d| d.join("mod.rs").is_file())
                    .filter_map(|d| d.file_name()),
            );
        for m in modules {
            let m = m.to_string_lossy();
            if !declares(&main, &m) {
                stray.push(format!("{}: no `mod {m};`", bin.join("main.rs").display()));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "test files no binary compiles (docs/tests.md):\n{}",
        stray.join("\n")
    );
    // The suite, alloc and mpi binaries and one per member crate with tests.
    assert!(bins.len() >= 3, "test binaries: {bins:?}");
}

/// Whether the code of `text` (comments aside) reads the golden directory:
/// a reader call (`golden(`, `golden_dir(`, `golden_file(`, ...) or a helper
/// built on one.
fn reads_golden(text: &str) -> bool {
    const HELPERS: &[&str] = &[
        "op_cases",
        "gradient_cases",
        "dense_problem",
        "support::",
        "case_tests!",
    ];
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .any(|code| {
            HELPERS.iter().any(|h| code.contains(h))
                || code.match_indices("golden").any(|(i, _)| {
                    let rest = &code[i + "golden".len()..];
                    let name_end = rest
                        .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                        .unwrap_or(rest.len());
                    rest[name_end..].starts_with('(')
                })
        })
}

#[test]
fn every_golden_reader_is_rerun_by_ci() {
    let list = std::fs::read_to_string(root().join("tests/golden-tests.txt")).unwrap();
    let filters: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut missed = Vec::new();
    let mut readers = 0;
    for bin in binaries() {
        for f in entries(&bin).0 {
            let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
            // This file names the readers without calling them.
            if stem == "main" || f == root().join(file!()) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            if !reads_golden(&text) {
                continue;
            }
            readers += 1;
            // Its tests are named `STEM::...`.
            let prefix = format!("{stem}::");
            if !filters.iter().any(|flt| prefix.contains(flt)) {
                missed.push(f.display().to_string());
            }
        }
    }
    assert!(
        missed.is_empty(),
        "tests that read the golden directory but no filter of tests/golden-tests.txt matches:\n{}",
        missed.join("\n")
    );
    assert!(readers > 20, "only {readers} golden readers found");
}

/// The `.rs` files of every test binary, its helper directories included.
fn test_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let (files, dirs) = entries(dir);
        out.extend(files);
        for d in dirs {
            walk(&d, out);
        }
    }
    let mut out = Vec::new();
    for bin in binaries() {
        walk(&bin, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn no_test_changes_the_process_environment_or_directory() {
    // Split so that this file does not name them.
    let calls = [
        ["env::", "set_var"].concat(),
        ["env::", "remove_var"].concat(),
        ["set_current", "_dir"].concat(),
    ];
    let mut found = Vec::new();
    let sources = test_sources();
    for f in &sources {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if calls.iter().any(|c| code.contains(c.as_str())) {
                found.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "tests of one binary share their process: pass the setting to the child \
         (`Command::env`, `current_dir`) instead:\n{}",
        found.join("\n")
    );
    assert!(sources.len() > 100, "only {} test sources", sources.len());
}
