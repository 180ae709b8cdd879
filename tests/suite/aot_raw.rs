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
//! wrong cell count, a NULL cell and a negative row count. Also every other
//! column kind compiled (a spec of its own), the bundled CTR spec (string
//! hashes of 2^18 buckets, crosses of raw keys) and digits (plain numeric
//! inputs) against `specc predict`, and a model the entry point cannot
//! compile (the reason in the command's output and the header).

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
    crate::aot_export::link_c(dir, "predict_raw")
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

/// Every other kind of column the raw entry point compiles: an int64 hash
/// (a bucket count that is not a power of two), identity columns with and
/// without a default, a string vocabulary with OOV buckets, an int64
/// vocabulary with a default, a string hash, a normalizer of every
/// function, a bucketized column, a cross of a column, a raw string
/// key, a raw int64 key and a bucketized column, and the CSV's `na_value`
/// (`?`: a missing cell).
const KINDS: &str = "model kinds\n\
data csv(\"kinds.csv\", na_value = \"?\")\n\
label y: float\n\
features {\n\
\x20 uid   = categorical_column_with_hash_bucket(uid, 97, dtype = int64)\n\
\x20 slot  = categorical_column_with_identity(slot, 5, default_value = 0)\n\
\x20 slot2 = categorical_column_with_identity(slot2, 4)\n\
\x20 color = categorical_column_with_vocabulary_list(color, [\"red\", \"green\", \"blue\"], num_oov_buckets = 3)\n\
\x20 size  = categorical_column_with_vocabulary_list(size, [10, 20, 30], default_value = 1)\n\
\x20 city  = categorical_column_with_hash_bucket(city, 16)\n\
\x20 x     = numeric_column(x, default_value = 1, normalizer_fn = log1p(abs(x)) - sqrt(abs(x)) + square(x) / 100 + exp(-abs(x)) - log(abs(x) + 2))\n\
\x20 xb    = bucketized_column(numeric_column(x, default_value = 1), boundaries = [-1, 0, 0.5, 2])\n\
\x20 cross = crossed_column([color, \"city\", int64(\"uid\"), xb], hash_bucket_size = 50)\n\
\x20 logits = linear_model(uid, slot, slot2, color, size, city, xb, cross, x)\n\
}\n\
logit = reshape(logits, [B])\n\
loss  = mean(sigmoid_cross_entropy(y, logit))\n\
optimizer adam(learning_rate = 0.05)\n\
train { batch = 32, steps = 200, shuffle = 400, seed = 3 }\n\
outputs { probability = sigmoid(logit) }\n";

/// The CSV of [`KINDS`]: every spelling and missing value each key meets.
fn kinds_csv(rows: usize) -> String {
    let mut x: u64 = 12345;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let pick = |i: u64, v: &[&str]| v[i as usize % v.len()].to_string();
    let mut text = String::from("y,uid,slot,slot2,color,size,city,x\n");
    for _ in 0..rows {
        let uid = match next(8) {
            0 => String::new(),
            1 => "-1".into(),
            2 => format!(" +{} ", next(50)),
            3 => format!("00{}", next(1000)),
            4 => "-9223372036854775808".into(),
            _ => format!("{}", next(100_000) as i64 - 500),
        };
        let slot = pick(
            next(12),
            &[
                "", "-1", "-2", "0", "1", "2", "3", "4", "5", "7", " 3 ", "?",
            ],
        );
        let slot2 = pick(next(6), &["", "-1", "0", "1", "2", "3"]);
        let color = pick(
            next(8),
            &["red", "green", "blue", "purple", "", "Grün", "RED", "?"],
        );
        let size = pick(next(7), &["10", "20", "30", "40", "", "-1", " 20"]);
        let city = pick(
            next(6),
            &[
                "Paris",
                "Zürich",
                "",
                "東京",
                "a city with a long name, quoted",
                "x",
            ],
        );
        let xv = match next(8) {
            0 => pick(next(2), &["", "?"]),
            1 => format!("{}e-2", next(1000) as i64 - 500),
            2 => format!(" {}.{} ", next(5), next(100)),
            3 => format!("-.{}", next(1000)),
            4 => "0".into(),
            5 => "2".into(),
            _ => format!("{}", (next(20000) as f64 - 10000.0) / 997.0),
        };
        let y = next(2);
        let q = |s: &str| format!("\"{s}\"");
        text += &format!(
            "{y},{},{},{slot2},{color},{},{},{}\n",
            q(&uid),
            q(&slot),
            q(&size),
            q(&city),
            q(&xv)
        );
    }
    text
}

/// The raw keys' names from a header's `..._RAW_COLUMN_NAMES` line.
fn raw_names(header: &str) -> Vec<String> {
    let line = header
        .lines()
        .find(|l| l.starts_with("#define SPECC_PREDICT_RAW_COLUMN_NAMES"))
        .expect("a raw entry point");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_column_kind_gives_what_specc_predict_gives() {
    let dir = fresh("kinds");
    std::fs::write(dir.join("kinds.spec"), KINDS).unwrap();
    std::fs::write(dir.join("kinds.csv"), kinds_csv(600)).unwrap();
    let (code, _, err) = specc(&dir, &["run", "kinds.spec", "--checkpoint-dir", "ck"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = specc(
        &dir,
        &[
            "export",
            "kinds.spec",
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            "model.o",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("specc_predict_raw(cells[rows][7]"), "{out}");
    let exe = crate::aot_export::link_c(&dir, "predict_raw");

    let csv = dir.join("kinds.csv");
    let (code, out, err) = specc(
        &dir,
        &[
            "predict",
            "kinds.spec",
            "--checkpoint",
            "ck",
            "--data",
            "kinds.csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let want: Vec<(f32, f32)> = out
        .lines()
        .skip(1)
        .map(|l| (l.parse().unwrap(), 0.0))
        .collect();
    assert_eq!(want.len(), 600);
    let got: Vec<(f32, f32)> = {
        let r = Command::new(&exe).arg(&csv).output().unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8_lossy(&r.stdout)
            .lines()
            .skip(1)
            .map(|l| (l.parse().unwrap(), 0.0))
            .collect()
    };
    assert_same(&got, &want, "kinds.csv");
    let spread = want.iter().map(|r| r.0).fold(f32::NAN, f32::max)
        - want.iter().map(|r| r.0).fold(f32::NAN, f32::min);
    assert!(spread > 0.1, "a trained model: {spread}");

    // Codes: an identity id out of range for the model (-2); int64 cells
    // Rust refuses (-4), one at the edge of the range (0).
    let h = std::fs::read_to_string(dir.join("model.h")).unwrap();
    let names = raw_names(&h);
    let row = |over: &[(&str, &str)]| -> Vec<String> {
        names
            .iter()
            .map(|n| {
                over.iter()
                    .find(|o| o.0 == n)
                    .map_or(
                        match n.as_str() {
                            "color" => "red",
                            "city" => "Paris",
                            "x" => "0.5",
                            _ => "1",
                        },
                        |o| o.1,
                    )
                    .to_string()
            })
            .collect()
    };
    let rc = |over: &[(&str, &str)]| {
        let cells = row(over);
        let r = Command::new(&exe)
            .arg("--cells")
            .args(&cells)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&r.stdout).to_string();
        out.lines().next().unwrap_or_default().to_string()
    };
    assert_eq!(rc(&[]), "rc 0");
    assert_eq!(rc(&[("slot2", "4")]), "rc -2");
    assert_eq!(rc(&[("slot", "9")]), "rc 0", "identity with a default");
    for uid in [
        "1.5",
        "99999999999999999999",
        "9223372036854775808",
        "+",
        "-",
        "1 2",
        "0x1",
    ] {
        assert_eq!(rc(&[("uid", uid)]), "rc -4", "uid {uid:?}");
    }
    assert_eq!(rc(&[("uid", "9223372036854775807")]), "rc 0");
    assert_eq!(rc(&[("size", "2.0")]), "rc -4");
    // specc predict refuses the out-of-range id too.
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "y,uid,slot,slot2,color,size,city,x\n0,1,1,4,red,10,Paris,1\n",
    )
    .unwrap();
    let (code, _, err) = specc(
        &dir,
        &[
            "predict",
            "kinds.spec",
            "--checkpoint",
            "ck",
            "--data",
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("out of range"), "{err}");
}

/// A column the raw entry point does not compile (`sep` splits a cell):
/// the object has `specc_predict` only, and the command and the header say
/// why.
#[test]
fn a_model_with_split_cells_gets_no_raw_entry_point_and_says_why() {
    let dir = fresh("split");
    std::fs::write(
        dir.join("split.spec"),
        "model split\n\
         data csv(\"split.csv\")\n\
         label y: float\n\
         features {\n\
         \x20 g = categorical_column_with_identity(g, 5, sep = \"|\", max_values = 3)\n\
         \x20 logits = linear_model(g)\n\
         }\n\
         logit = reshape(logits, [B])\n\
         loss = mean(sigmoid_cross_entropy(y, logit))\n\
         optimizer gradient_descent(learning_rate = 0.1)\n\
         train { batch = 2, steps = 2 }\n\
         outputs { probability = sigmoid(logit) }\n",
    )
    .unwrap();
    std::fs::write(dir.join("split.csv"), "y,g\n1,1|2\n0,3\n1,\n0,4|0|1\n").unwrap();
    let (code, _, err) = specc(&dir, &["run", "split.spec", "--checkpoint-dir", "ck"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = specc(
        &dir,
        &[
            "export",
            "split.spec",
            "--checkpoint",
            "ck",
            "--format",
            "object",
            "-o",
            "model.o",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let why = "input `g/ids`: `g` splits its cells (`sep`): not compiled into the object";
    assert!(
        out.contains(&format!("(no raw-features entry point: {why})")),
        "{out}"
    );
    let h = std::fs::read_to_string(dir.join("model.h")).unwrap();
    assert!(
        h.contains(&format!(
            " * No raw-features entry point (specc_predict_raw): {why}."
        )),
        "{h}"
    );
    assert!(!h.contains("int specc_predict_raw("), "{h}");
    assert!(!h.contains("RAW_COLUMNS"), "{h}");
}

/// Trains a bundled spec for `steps`, exports it, and checks that the raw
/// entry point on its CSV gives every value `specc predict` gives (1e-5
/// relative; integer outputs exactly).
fn bundled_spec_equals_predict(name: &str, spec: &str, steps: &str, csv: &str) {
    let dir = fresh(name);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let spec = root.join(spec);
    let spec = spec.to_str().unwrap();
    let csv = root.join(csv);
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", steps, "--checkpoint-dir", "ck"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = specc(
        &dir,
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
    assert!(out.contains("specc_predict_raw("), "{out}");
    let exe = crate::aot_export::link_c(&dir, "predict_raw");
    let (code, out, err) = specc(
        &dir,
        &[
            "predict",
            spec,
            "--checkpoint",
            "ck",
            "--data",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let want: Vec<Vec<f32>> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    let r = Command::new(&exe).arg(&csv).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let got: Vec<Vec<f32>> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(got.len(), want.len(), "{name}: rows");
    assert!(want.len() > 1000, "{name}: {} rows", want.len());
    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len(), "{name}: row {r}: values");
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(f32::MIN_POSITIVE),
                "{name}: row {r} value {j}: {a} (object) vs {b} (specc)"
            );
        }
    }
}

/// The CTR spec: eight string hash columns of 2^18 buckets, two crosses of
/// raw keys, `log1p` normalizers and a default for empty cells.
#[test]
fn the_ctr_spec_from_raw_cells_equals_specc_predict() {
    bundled_spec_equals_predict(
        "ctr",
        "specs/ctr_ftrl.spec",
        "10",
        "specs/data/ctr_sample.csv",
    );
}

/// Plain `numeric` inputs (digits: 64 pixels, `x / 16`).
#[test]
fn plain_numeric_inputs_from_raw_cells_equal_specc_predict() {
    bundled_spec_equals_predict(
        "digits",
        "specs/digits_mlp.spec",
        "40",
        "specs/data/digits.csv",
    );
}
