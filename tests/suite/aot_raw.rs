//! `specc export --format object`'s raw-features entry point
//! (`specc_predict_raw`): a trained `titanic` (a hashed name with an
//! embedding, vocabulary columns for sex and class, an age with a default
//! and a normalizer, age buckets, a sex x class cross) linked into a C
//! program (`tests/aot/predict_raw.c`) that feeds it the CSV's records as
//! strings. Its outputs must equal `specc predict` on the same CSV (the
//! runtime's feature columns and the JIT's model): the probability within
//! 1e-5 relative, the class exactly, for every row of the data set and for
//! rows of awkward cells (non-ASCII, empty, unknown values, numbers in
//! every spelling); and the documented error codes for a bad number, a
//! wrong cell count, a NULL cell and a negative row count.

use crate::cli;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli::specc;

fn fresh(name: &str) -> PathBuf {
    let dir = cli::workdir("aot_raw", name);
    std::fs::remove_dir_all(&dir).unwrap();
    cli::workdir("aot_raw", name)
}

fn titanic() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("specs/titanic.spec")
}

/// Trains titanic into `dir/ck`, exports it to `dir/model.o` and compiles
/// `predict_raw.c` against it.
fn setup(dir: &Path) -> PathBuf {
    let spec = titanic();
    let spec = spec.to_str().unwrap();
    let (code, _, err) = specc(
        dir,
        &["run", spec, "--steps", "300", "--checkpoint-dir", "ck"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = specc(
        dir,
        &[
            "export",
            spec,
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            "model.o",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("specc_predict_raw(cells[rows][4]"), "{out}");
    let exe = dir.join("predict_raw");
    let c = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/aot/predict_raw.c");
    let cc = Command::new("cc")
        .args(["-O2", "-std=c99", "-Wall", "-Werror", "-I"])
        .arg(dir)
        .arg(&c)
        .arg(dir.join("model.o"))
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("the C compiler `cc` runs");
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}

/// `specc predict` on `csv`: (probability, class) per row.
fn predict(dir: &Path, csv: &Path) -> Vec<(f32, f32)> {
    let spec = titanic();
    let (code, out, err) = specc(
        dir,
        &[
            "predict",
            spec.to_str().unwrap(),
            "--checkpoint",
            "ck",
            "--data",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("probability,class"));
    lines
        .map(|l| {
            let (p, c) = l.split_once(',').unwrap();
            (p.parse().unwrap(), c.parse().unwrap())
        })
        .collect()
}

/// The C program on `csv`: (probability, class) per row.
fn run_c(exe: &Path, csv: &Path) -> Vec<(f32, f32)> {
    let r = Command::new(exe).arg(csv).output().unwrap();
    assert!(
        r.status.success(),
        "predict_raw: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let out = String::from_utf8_lossy(&r.stdout);
    let mut lines = out.lines();
    let rows: usize = lines
        .next()
        .and_then(|l| l.strip_prefix("rows "))
        .unwrap()
        .parse()
        .unwrap();
    let v: Vec<(f32, f32)> = lines
        .map(|l| {
            let (p, c) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), c.parse().unwrap())
        })
        .collect();
    assert_eq!(v.len(), rows);
    v
}

fn assert_same(object: &[(f32, f32)], specc: &[(f32, f32)], what: &str) {
    assert_eq!(object.len(), specc.len(), "{what}: rows");
    for (r, (o, s)) in object.iter().zip(specc).enumerate() {
        let tol = 1e-5 * s.0.abs().max(f32::MIN_POSITIVE);
        assert!(
            (o.0 - s.0).abs() <= tol,
            "{what}: row {r}: probability {} (object) vs {} (specc)",
            o.0,
            s.0
        );
        assert_eq!(o.1, s.1, "{what}: row {r}: class");
    }
}

/// One row of cells (in the header's order: age, name, pclass, sex)
/// through `--cells`: the return code and the outputs.
fn cells(exe: &Path, row: &[&str]) -> (i32, Option<(f32, f32)>) {
    let r = Command::new(exe).arg("--cells").args(row).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let out = String::from_utf8_lossy(&r.stdout);
    let mut lines = out.lines();
    let rc: i32 = lines
        .next()
        .unwrap()
        .strip_prefix("rc ")
        .unwrap()
        .parse()
        .unwrap();
    let v = lines.next().map(|l| {
        let (p, c) = l.split_once(' ').unwrap();
        (p.parse().unwrap(), c.parse().unwrap())
    });
    (rc, v)
}

#[test]
fn the_raw_entry_point_predicts_every_csv_row_as_specc_predict() {
    let dir = fresh("titanic");
    let exe = setup(&dir);
    let h = std::fs::read_to_string(dir.join("model.h")).unwrap();
    for line in [
        "int specc_predict_raw(const char *const *cells, int columns, float *out, int rows);",
        "#define SPECC_PREDICT_RAW_COLUMNS 4",
        "#define SPECC_PREDICT_RAW_COLUMN_NAMES { \"age\", \"name\", \"pclass\", \"sex\" }",
        "  SPECC_PREDICT_RAW_NAME = 1,",
        "  SPECC_PREDICT_RAW_SEX = 3,",
    ] {
        assert!(h.lines().any(|l| l == line), "no line {line:?} in\n{h}");
    }
    let csv = titanic().parent().unwrap().join("data/titanic.csv");
    let want = predict(&dir, &csv);
    assert_eq!(want.len(), 1309);
    let got = run_c(&exe, &csv);
    assert_same(&got, &want, "titanic.csv");
    // Both classes occur, and the probabilities vary (a trained model).
    assert!(want.iter().any(|r| r.1 == 0.0) && want.iter().any(|r| r.1 == 1.0));
}

#[test]
fn awkward_cells_give_what_specc_predict_gives() {
    let dir = fresh("awkward");
    let exe = setup(&dir);
    // Names of every length class of the hash (0..16, 17..32, 33..64, 65+),
    // non-ASCII and empty; an unknown sex and class (no id), empty ones;
    // ages in every spelling Rust and strtod both read, blank (the default)
    // and at the bucket boundaries.
    let long = "Ö".repeat(40) + " the Younger, of a rather long family name";
    let rows = [
        ("Zoë Ñúñez-Łukasiewicz", "yes", "female", "29", "1st"),
        ("", "no", "male", "", "3rd"),
        ("x", "no", "unknown", " 41.5 ", "2nd"),
        ("Allen, Miss. Elisabeth Walton", "yes", "", "+1e1", "first"),
        ("\"Quoted\" name", "no", "male", ".5", ""),
        (long.as_str(), "yes", "female", "60", "1st"),
        ("日本語の名前", "no", "female", "30.", "3rd"),
        (
            "a somewhat longer name of 48 bytes, exactly.....",
            "no",
            "male",
            "1E2",
            "2nd",
        ),
        ("short", "no", "male", "-0", "1st"),
        ("tabs\tand spaces ", "yes", "female", "\t7\t", "2nd"),
        ("boundary", "yes", "male", "20", "2nd"),
        ("underflow", "yes", "male", "1e-320", "3rd"),
    ];
    let mut text = String::from("name,survived,sex,age,pclass\n");
    for (name, survived, sex, age, pclass) in rows {
        let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        text += &format!("{},{survived},{sex},{},{pclass}\n", q(name), q(age));
    }
    let csv = dir.join("awkward.csv");
    std::fs::write(&csv, text).unwrap();
    let want = predict(&dir, &csv);
    assert_eq!(want.len(), rows.len());
    assert_same(&run_c(&exe, &csv), &want, "awkward.csv");
    // One row at a time through --cells: the same.
    for (r, (name, _, sex, age, pclass)) in rows.iter().enumerate() {
        let (rc, out) = cells(&exe, &[age, name, pclass, sex]);
        assert_eq!(rc, 0, "row {r}");
        assert_same(&[out.unwrap()], &want[r..r + 1], "--cells");
    }
}

#[test]
fn bad_cells_and_arguments_return_the_documented_codes() {
    let dir = fresh("errors");
    let exe = setup(&dir);
    let (rc, out) = cells(&exe, &["29", "Zoë", "1st", "female"]);
    assert_eq!(rc, 0);
    assert!(out.is_some());
    // -4: a cell training refuses (not a number, two numbers, not finite,
    // a hexadecimal strtod alone would read), or a NULL cell.
    for age in [
        "abc", "12 13", "1e400", "inf", "nan", "0x10", "1,5", "--1", "1e", ".",
    ] {
        let (rc, out) = cells(&exe, &[age, "Zoë", "1st", "female"]);
        assert_eq!(rc, -4, "age {age:?}");
        assert!(out.is_none());
    }
    for k in 0..4 {
        let mut row = ["29", "Zoë", "1st", "female"];
        row[k] = "NULL";
        assert_eq!(cells(&exe, &row).0, -4, "NULL cell {k}");
    }
    let rc = |flag: &str, n: &str| {
        let r = Command::new(&exe).args([flag, n]).output().unwrap();
        String::from_utf8_lossy(&r.stdout).trim().to_string()
    };
    // -3: a wrong number of cells per row.
    assert_eq!(rc("--columns", "3"), "rc -3");
    assert_eq!(rc("--columns", "5"), "rc -3");
    assert_eq!(rc("--columns", "4"), "rc 0");
    // -1: a negative row count; 0 rows read nothing.
    assert_eq!(rc("--rows", "-1"), "rc -1");
    assert_eq!(rc("--rows", "0"), "rc 0");
    // specc predict refuses the bad number too (a CSV with one).
    let csv = dir.join("bad.csv");
    std::fs::write(&csv, "name,survived,sex,age,pclass\nx,no,male,abc,1st\n").unwrap();
    let (code, _, err) = specc(
        &dir,
        &[
            "predict",
            titanic().to_str().unwrap(),
            "--checkpoint",
            "ck",
            "--data",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("abc"), "{err}");
}
