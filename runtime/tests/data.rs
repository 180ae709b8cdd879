//! Data loading: the benchmark data sets (W1 digits, W2 standardized cancer,
//! W3 synthetic), the error reports on bad files, the row limit, and the
//! column transforms the readers hand raw cells to.

use crate::common;

use common::{as_f64s, as_u64s, assert_f32_exact, exact_f64_array, fixture, shared, temp_file};
use specc_runtime::abi::ElemType;
use specc_runtime::data::columns::transform_for;
use specc_runtime::data::norm::mean_std;
use specc_runtime::data::{
    load, CellRows, Dataset, Distribution, InputData, InputKind, InputSpec, NormExpr, NormFunc,
    Normalizer, Source, SyntheticSpec, Values, ValuesMut, MAX_CSV_ROW_BYTES,
};

fn float_input(name: &str, cols: &[&str], normalizer: Normalizer) -> InputSpec {
    InputSpec {
        name: name.to_string(),
        columns: cols.iter().map(|c| c.to_string()).collect(),
        kind: InputKind::Float,
        normalizer,
        feature: None,
    }
}

fn class_input(name: &str, col: &str, num_classes: Option<u32>) -> InputSpec {
    InputSpec {
        name: name.to_string(),
        columns: vec![col.to_string()],
        kind: InputKind::ClassId { num_classes },
        normalizer: Normalizer::None,
        feature: None,
    }
}

fn csv(path: impl Into<std::path::PathBuf>) -> Source {
    Source::csv(path)
}

fn div16() -> Normalizer {
    Normalizer::Expr(NormExpr::Div(
        Box::new(NormExpr::X),
        Box::new(NormExpr::Const(16.0)),
    ))
}

/// Naive parse of a CSV without quoted fields: (header, rows of cells).
fn naive_csv(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

fn f32s(d: &Dataset, name: &str) -> Vec<f32> {
    d.input(name).unwrap().values.as_f32().unwrap().to_vec()
}

// ---------------------------------------------------------------------------
// benchmark data sets
// ---------------------------------------------------------------------------

#[test]
fn digits_w1_pixels_over_16_and_labels() {
    let path = shared("data/digits.csv");
    let cols: Vec<String> = (0..64).map(|i| format!("px{i}")).collect();
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let d = load(
        &csv(&path),
        &[
            float_input("pixels", &cols, div16()),
            class_input("label", "label", Some(10)),
        ],
    )
    .unwrap();
    assert_eq!(d.rows, 1797);
    let px = d.input("pixels").unwrap();
    assert_eq!(px.width, 64);
    let px = px.values.as_f32().unwrap();
    // First data line of the file: 0,0,5,13,9,1,0,0,...
    let first8: Vec<f32> = [0., 0., 5., 13., 9., 1., 0., 0.]
        .iter()
        .map(|v| v / 16.0)
        .collect();
    assert_eq!(&px[..8], &first8[..]);
    let labels = d.input("label").unwrap();
    assert_eq!(labels.width, 1);
    let labels = labels.values.as_i32().unwrap();
    assert_eq!(labels.len(), 1797);
    assert!(labels.iter().all(|l| (0..10).contains(l)));

    // Every value against an independent reading of the file.
    let (header, rows) = naive_csv(&path);
    assert_eq!(header.len(), 65);
    assert_eq!(rows.len(), 1797);
    for (r, row) in rows.iter().enumerate() {
        for c in 0..64 {
            let raw: f64 = row[c].parse().unwrap();
            assert_eq!(px[r * 64 + c], (raw / 16.0) as f32, "row {r} col {c}");
        }
        assert_eq!(labels[r], row[64].parse::<i32>().unwrap(), "label row {r}");
    }
}

#[test]
fn cancer_w2_standardize_matches_bench_constants() {
    let path = shared("data/breast_cancer.csv");
    let fx_text =
        std::fs::read_to_string(shared("bench/fixtures/cancer_standardize.json")).unwrap();
    let fx = fixture("cancer_standardize.json");
    let feats: Vec<String> = fx["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(feats.len(), 30);
    let mean_fx = exact_f64_array(&fx_text, "mean");
    let std_fx = exact_f64_array(&fx_text, "std_ddof0");

    // The statistics, computed the NumPy way from an independent reading of
    // the file, equal the bench's float64 constants exactly.
    let (header, rows) = naive_csv(&path);
    assert_eq!(&header[..30], &feats[..]);
    assert_eq!(rows.len(), 569);
    let mut scratch = Vec::new();
    for c in 0..30 {
        let col: Vec<f64> = rows.iter().map(|r| r[c].parse().unwrap()).collect();
        let (m, s) = mean_std(&col, &mut scratch);
        assert_eq!(m, mean_fx[c], "mean of {}", feats[c]);
        assert_eq!(s, std_fx[c], "std of {}", feats[c]);
    }

    // The loaded values are f32((x - mean) / std) with the bench constants.
    let cols: Vec<&str> = feats.iter().map(String::as_str).collect();
    let d = load(
        &csv(&path),
        &[
            float_input("x", &cols, Normalizer::Standardize),
            float_input("y", &["label"], Normalizer::None),
        ],
    )
    .unwrap();
    assert_eq!(d.rows, 569);
    let x = f32s(&d, "x");
    for (r, row) in rows.iter().enumerate() {
        for c in 0..30 {
            let raw: f64 = row[c].parse().unwrap();
            let want = ((raw - mean_fx[c]) / std_fx[c]) as f32;
            assert_eq!(x[r * 30 + c], want, "row {r} {}", feats[c]);
        }
    }
    // First row, first feature by hand: (17.99 - mean) / std.
    assert_eq!(
        x[0],
        ((17.99 - 14.127291739894552) / 3.520950760711062) as f32
    );
    let y = f32s(&d, "y");
    assert_eq!(y.len(), 569);
    assert!(y.iter().all(|&v| v == 0.0 || v == 1.0));
    assert_eq!(y[0], 0.0); // first data line ends in ",0"
}

#[test]
fn synthetic_w3_matches_bench() {
    let fx = fixture("prng_check.json");
    let spec = SyntheticSpec {
        rows: 8192,
        features: 784,
        classes: Some(10),
        seed: 42,
        label_seed: 43,
        distribution: Distribution::Uniform,
    };
    let cols: Vec<String> = (0..784).map(|i| format!("x{i}")).collect();
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let d = load(
        &Source::Synthetic(spec.clone()),
        &[
            float_input("x", &cols, Normalizer::None),
            class_input("y", "label", Some(10)),
        ],
    )
    .unwrap();
    assert_eq!(d.rows, 8192);
    let x = f32s(&d, "x");
    assert_eq!(x.len(), 8192 * 784);
    for (i, &w) in as_f64s(&fx["uniform01_f32_seed42_first5"])
        .iter()
        .enumerate()
    {
        assert_f32_exact(x[i], w, &format!("X element {i}"));
    }
    let y = d.input("y").unwrap().values.as_i32().unwrap();
    let want: Vec<i32> = as_u64s(&fx["wide_labels_first10"])
        .iter()
        .map(|&v| v as i32)
        .collect();
    assert_eq!(&y[..10], &want[..]);

    // Requesting a subset of the columns gives the same values.
    let sub = load(
        &Source::Synthetic(spec),
        &[float_input("x", &["x783", "x1"], Normalizer::None)],
    )
    .unwrap();
    let s = f32s(&sub, "x");
    for r in 0..8192 {
        assert_eq!(s[r * 2], x[r * 784 + 783]);
        assert_eq!(s[r * 2 + 1], x[r * 784 + 1]);
    }
}

#[test]
fn synthetic_normal_features_and_float_label() {
    let spec = SyntheticSpec {
        rows: 20_000,
        features: 5,
        classes: None,
        seed: 1,
        label_seed: 2,
        distribution: Distribution::Normal,
    };
    let d = load(
        &Source::Synthetic(spec),
        &[
            float_input("x", &["x0", "x1", "x2", "x3", "x4"], Normalizer::None),
            float_input("y", &["label"], Normalizer::None),
        ],
    )
    .unwrap();
    let x = f32s(&d, "x");
    // Element i is f32 of the i-th normal of stream `seed`.
    let mut s = specc_runtime::prng::SplitMix64::new(1);
    for &v in &x[..50] {
        assert_eq!(v, s.normal_f64() as f32);
    }
    let mut s = specc_runtime::prng::SplitMix64::new(2);
    let y = f32s(&d, "y");
    for &v in &y[..50] {
        assert_eq!(v, s.normal_f64() as f32);
    }
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = x
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    assert!(mean.abs() < 0.02 && (var.sqrt() - 1.0).abs() < 0.02);
}

#[test]
fn synthetic_errors() {
    let spec = SyntheticSpec {
        rows: 10,
        features: 3,
        classes: Some(10),
        seed: 1,
        label_seed: 2,
        distribution: Distribution::Uniform,
    };
    let src = Source::Synthetic(spec.clone());
    let e = load(&src, &[float_input("x", &["x3"], Normalizer::None)]).unwrap_err();
    assert_eq!(e.file, "synthetic");
    assert_eq!(e.column.as_deref(), Some("x3"));
    assert!(e.message.contains("`x0` .. `x2` and `label`"), "{e}");
    let e = load(&src, &[float_input("x", &["x01"], Normalizer::None)]).unwrap_err();
    assert_eq!(e.column.as_deref(), Some("x01"));
    // Labels 0..9 do not fit 5 classes.
    let e = load(&src, &[class_input("y", "label", Some(5))]).unwrap_err();
    assert_eq!(e.column.as_deref(), Some("label"));
    assert!(e.row.is_some() && e.message.contains("out of range"), "{e}");
    let mut zero = spec;
    zero.rows = 0;
    assert!(load(&Source::Synthetic(zero), &[]).is_err());
}

// ---------------------------------------------------------------------------
// real data with problems
// ---------------------------------------------------------------------------

#[test]
fn titanic_missing_age_names_file_row_and_column() {
    let path = shared("data/titanic.csv");
    let e = load(
        &csv(&path),
        &[float_input("age", &["age"], Normalizer::None)],
    )
    .unwrap_err();
    assert_eq!(e.column.as_deref(), Some("age"));
    let row = e.row.expect("row");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().nth(row - 1).unwrap();
    assert!(line.contains("male,,"), "line {row} is {line:?}");
    // The first such line of the file (names are quoted and contain commas).
    assert_eq!(row, 17);
    assert_eq!(
        e.to_string(),
        format!(
            "{}:17: column `age`: empty cell (missing value) and the column has no default",
            path.display()
        )
    );
}

#[test]
fn titanic_text_column_is_not_a_number() {
    let path = shared("data/titanic.csv");
    let e = load(&csv(&path), &[class_input("y", "survived", Some(2))]).unwrap_err();
    assert_eq!(e.row, Some(2));
    assert_eq!(e.message, "cannot parse \"yes\" as a number");
}

#[test]
fn missing_column_suggests_the_closest_name() {
    let path = shared("data/digits.csv");
    let e = load(&csv(&path), &[class_input("y", "lable", Some(10))]).unwrap_err();
    assert_eq!(e.file, path.display().to_string());
    assert_eq!(e.row, None);
    assert_eq!(e.column.as_deref(), Some("lable"));
    assert!(e.message.contains("did you mean `label`?"), "{e}");
    assert!(e.message.contains("65 columns: px0, px1"), "{e}");
    let e = load(
        &csv(&path),
        &[float_input("x", &["px0", "pxl3"], Normalizer::None)],
    )
    .unwrap_err();
    assert!(e.message.contains("did you mean `px3`?"), "{e}");
    let e = load(
        &csv(&path),
        &[float_input("x", &["zzzzzzzz"], Normalizer::None)],
    )
    .unwrap_err();
    assert!(!e.message.contains("did you mean"), "{e}");
}

// ---------------------------------------------------------------------------
// small files
// ---------------------------------------------------------------------------

fn x_only() -> Vec<InputSpec> {
    vec![float_input("x", &["x"], Normalizer::None)]
}

#[test]
fn unparsable_cell_exact_message() {
    let p = temp_file("bad.csv", "a,x\n1,2\n3,abc\n");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3: column `x`: cannot parse \"abc\" as a number",
            p.display()
        )
    );
}

#[test]
fn only_requested_columns_are_parsed_and_cells_are_trimmed() {
    let p = temp_file(
        "mixed.csv",
        "name, x ,y\n\"Doe, John\", 1.5 ,zzz\n\"multi\nline\",-2,\n",
    );
    let d = load(&csv(&p), &x_only()).unwrap();
    assert_eq!(d.rows, 2);
    assert_eq!(f32s(&d, "x"), vec![1.5, -2.0]);
    // A UTF-8 byte order mark before the header is not part of the first name.
    let p = temp_file("bom.csv", "\u{feff}x,y\n4,5\n");
    assert_eq!(f32s(&load(&csv(&p), &x_only()).unwrap(), "x"), vec![4.0]);
    // Line numbers count the lines of a quoted multi-line field.
    let p = temp_file("multiline.csv", "name,x\n\"multi\nline\",1\nz,oops\n");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert_eq!(e.row, Some(4));
}

#[test]
fn wrong_field_count_names_the_row() {
    let p = temp_file("ragged.csv", "a,x\n1,2\n3,4,5\n");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert_eq!(e.row, Some(3));
    assert!(
        e.message.contains("3 fields") && e.message.contains("header has 2"),
        "{e}"
    );
}

#[test]
fn class_id_validation() {
    let p = temp_file("classes.csv", "c\n0\n3.0\n2\n");
    let d = load(&csv(&p), &[class_input("c", "c", Some(4))]).unwrap();
    assert_eq!(d.input("c").unwrap().values, Values::I32(vec![0, 3, 2]));
    let e = load(&csv(&p), &[class_input("c", "c", Some(3))]).unwrap_err();
    assert_eq!((e.row, e.column.as_deref()), (Some(3), Some("c")));
    assert!(e.message.contains("out of range"), "{e}");
    for (bad, line) in [("c\n1\n2.5\n", 3), ("c\n-1\n", 2), ("c\n1e12\n", 2)] {
        let p = temp_file("badclass.csv", bad);
        let e = load(&csv(&p), &[class_input("c", "c", None)]).unwrap_err();
        assert_eq!(e.row, Some(line), "{bad:?}: {e}");
        assert!(e.message.contains("non-negative integer"), "{e}");
    }
}

#[test]
fn non_finite_and_overflowing_values_are_errors() {
    for text in ["x\ninf\n", "x\nNaN\n", "x\n1e300\n"] {
        let p = temp_file("nonfinite.csv", text);
        let e = load(&csv(&p), &x_only()).unwrap_err();
        assert_eq!(e.row, Some(2), "{text:?}: {e}");
    }
    // A normalizer that produces -inf.
    let p = temp_file("log0.csv", "x\n1\n0\n");
    let log = Normalizer::Expr(NormExpr::Func(NormFunc::Log, Box::new(NormExpr::X)));
    let e = load(&csv(&p), &[float_input("x", &["x"], log)]).unwrap_err();
    assert_eq!(e.row, Some(3));
    assert!(e.message.contains("log(x)"), "{e}");
}

#[test]
fn empty_missing_and_headless_files() {
    let p = temp_file("empty.csv", "");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert!(e.message.contains("empty"), "{e}");
    let p = temp_file("header_only.csv", "x,y\n");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert!(e.message.contains("no data rows"), "{e}");
    let missing = std::env::temp_dir().join("specc-no-such-file/nothing.csv");
    let e = load(&csv(&missing), &x_only()).unwrap_err();
    assert_eq!(e.file, missing.display().to_string());
    assert!(e.message.contains("cannot open"), "{e}");
    let p = temp_file("dup.csv", "x,x\n1,2\n");
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert!(e.message.contains("ambiguous"), "{e}");
}

#[test]
fn normalizer_expressions_in_f64_rounded_once() {
    let p = temp_file("expr.csv", "x\n0.1\n3\n7.25\n");
    // log1p(x) * 2 - sqrt(abs(-x)) + square(x) / 3
    let x = || Box::new(NormExpr::X);
    let expr = NormExpr::Add(
        Box::new(NormExpr::Sub(
            Box::new(NormExpr::Mul(
                Box::new(NormExpr::Func(NormFunc::Log1p, x())),
                Box::new(NormExpr::Const(2.0)),
            )),
            Box::new(NormExpr::Func(
                NormFunc::Sqrt,
                Box::new(NormExpr::Func(NormFunc::Abs, Box::new(NormExpr::Neg(x())))),
            )),
        )),
        Box::new(NormExpr::Div(
            Box::new(NormExpr::Func(NormFunc::Square, x())),
            Box::new(NormExpr::Const(3.0)),
        )),
    );
    assert_eq!(
        expr.to_string(),
        "(((log1p(x) * 2) - sqrt(abs(-(x)))) + (square(x) / 3))"
    );
    let d = load(
        &csv(&p),
        &[float_input("x", &["x"], Normalizer::Expr(expr))],
    )
    .unwrap();
    let want: Vec<f32> = [0.1f64, 3.0, 7.25]
        .iter()
        .map(|&v| (v.ln_1p() * 2.0 - v.sqrt() + v * v / 3.0) as f32)
        .collect();
    assert_eq!(f32s(&d, "x"), want);
    let p = temp_file("exp.csv", "x\n1\n");
    let e = NormExpr::Func(NormFunc::Exp, Box::new(NormExpr::X));
    let d = load(&csv(&p), &[float_input("x", &["x"], Normalizer::Expr(e))]).unwrap();
    assert_eq!(f32s(&d, "x"), vec![std::f64::consts::E as f32]);
}

#[test]
fn standardize_per_column_and_constant_column() {
    let p = temp_file("std.csv", "a,b\n1,5\n2,5\n3,5\n6,5\n");
    let d = load(
        &csv(&p),
        &[float_input("x", &["a", "b"], Normalizer::Standardize)],
    )
    .unwrap();
    // a: mean 3, population std sqrt((4+1+0+9)/4) = sqrt(3.5).
    let s = 3.5f64.sqrt();
    let want: Vec<f32> = [1.0, 2.0, 3.0, 6.0]
        .iter()
        .flat_map(|&a: &f64| [((a - 3.0) / s) as f32, 0.0])
        .collect();
    assert_eq!(f32s(&d, "x"), want);
}

#[test]
fn spec_errors() {
    let p = temp_file("spec.csv", "a,b\n1,2\n");
    // Ids from several columns (an `integer` feature) load row-major.
    let two = InputSpec {
        kind: InputKind::ClassId {
            num_classes: Some(3),
        },
        ..float_input("c", &["a", "b"], Normalizer::None)
    };
    let d = load(&csv(&p), std::slice::from_ref(&two)).unwrap();
    assert_eq!(d.input("c").unwrap().values, Values::I32(vec![1, 2]));
    let small = InputSpec {
        kind: InputKind::ClassId {
            num_classes: Some(2),
        },
        ..two
    };
    let e = load(&csv(&p), &[small]).unwrap_err();
    assert!(e.message.contains("out of range"), "{}", e.message);
    let normed = InputSpec {
        kind: InputKind::ClassId { num_classes: None },
        ..float_input("c", &["a"], Normalizer::Standardize)
    };
    assert!(load(&csv(&p), &[normed])
        .unwrap_err()
        .message
        .contains("normalizer"));
    let dup = [
        float_input("x", &["a"], Normalizer::None),
        float_input("x", &["b"], Normalizer::None),
    ];
    assert!(load(&csv(&p), &dup).is_err());
    assert!(load(&csv(&p), &[float_input("x", &[], Normalizer::None)]).is_err());
}

#[test]
fn in_memory_dataset() {
    let d = Dataset::from_inputs(
        2,
        vec![
            InputData::new("x", 3, Values::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
            InputData::new("y", 1, Values::I32(vec![0, 1])),
        ],
    )
    .unwrap();
    assert_eq!(d.input("y").unwrap().values.as_i32(), Some(&[0, 1][..]));
    assert!(d.input("z").is_none());
    assert!(Dataset::from_inputs(2, vec![InputData::new("x", 2, Values::F32(vec![1.0]))]).is_err());
    assert!(Dataset::from_inputs(
        1,
        vec![
            InputData::new("x", 1, Values::F32(vec![1.0])),
            InputData::new("x", 1, Values::I32(vec![1])),
        ]
    )
    .is_err());
    // Ids follow the loader's rule: non-negative (the upper bound is the
    // model's, checked when the data is bound to a session).
    let e = Dataset::from_inputs(
        2,
        vec![InputData::new("ids", 2, Values::I32(vec![0, 1, 2, -3]))],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "input `ids`, row 2: an id must be a non-negative integer, got -3"
    );
}

// ---------------------------------------------------------------------------
// bounded rows, chunks, column transforms
// ---------------------------------------------------------------------------

#[test]
fn a_csv_row_may_hold_1_mib_and_no_more() {
    assert_eq!(MAX_CSV_ROW_BYTES, 1 << 20);
    // Row 2: "1", padding spaces, "\n": exactly the limit, terminator included.
    let row = |len: usize| format!("1{}\n", " ".repeat(len - 2));
    let p = temp_file("at_limit.csv", &format!("x\n{}2\n", row(MAX_CSV_ROW_BYTES)));
    assert_eq!(
        f32s(&load(&csv(&p), &x_only()).unwrap(), "x"),
        vec![1.0, 2.0]
    );
    let p = temp_file("over.csv", &format!("x\n{}2\n", row(MAX_CSV_ROW_BYTES + 1)));
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: the row is longer than 1048576 bytes (1 MiB), the limit for one row of a CSV file",
            p.display()
        )
    );
    // Far past the limit the reader stops at the limit: the row's line.
    let p = temp_file("far.csv", &format!("x\n1\n{}\n", "7".repeat(5 << 20)));
    assert_eq!(load(&csv(&p), &x_only()).unwrap_err().row, Some(3));
    // The header is a row too.
    let header: String = (0..200_000).map(|i| format!("c{i},")).collect();
    let p = temp_file("wide.csv", &format!("{header}x\n1\n"));
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert_eq!(e.row, Some(1));
    assert!(e.message.contains("1 MiB"), "{e}");
    // A quoted field that never closes spans lines but not memory.
    let open_quote = format!("x,y\n1,\"{}", "ab\n".repeat(1 << 20));
    let p = temp_file("open_quote.csv", &open_quote);
    let e = load(&csv(&p), &x_only()).unwrap_err();
    assert!(e.message.contains("the row is longer than"), "{e}");
    // A file that never ends.
    if std::path::Path::new("/dev/zero").exists() {
        let e = load(&csv("/dev/zero"), &x_only()).unwrap_err();
        assert_eq!((e.file.as_str(), e.row), ("/dev/zero", Some(1)));
    }
}

/// A file of `rows` rows `a,b` (a = row, b = 2 * row), with `edit` applied
/// to the text of some lines (1-based, the header is line 1).
fn numbered(rows: usize, edit: &[(usize, &str)]) -> String {
    let mut lines = vec!["a,b".to_string()];
    lines.extend((1..=rows).map(|r| format!("{r},{}", 2 * r)));
    for (line, text) in edit {
        lines[line - 1] = text.to_string();
    }
    lines.join("\n") + "\n"
}

fn a_and_b() -> Vec<InputSpec> {
    vec![
        float_input("a", &["a"], Normalizer::None),
        class_input("b", "b", None),
    ]
}

/// Rows reach the transforms in chunks; whatever the chunk boundaries, every
/// value is read and the error reported is the file's first bad cell in
/// row-major order (row, then input, then column), or a bad record if it
/// comes first.
#[test]
fn the_first_bad_cell_of_the_file_is_reported_across_chunks() {
    let p = temp_file("many.csv", &numbered(1000, &[]));
    let d = load(&csv(&p), &a_and_b()).unwrap();
    assert_eq!(d.rows, 1000);
    let want_a: Vec<f32> = (1..=1000).map(|r| r as f32).collect();
    let want_b: Vec<i32> = (1..=1000).map(|r| 2 * r).collect();
    assert_eq!(f32s(&d, "a"), want_a);
    assert_eq!(d.input("b").unwrap().values, Values::I32(want_b));

    let first = |edit: &[(usize, &str)]| {
        let p = temp_file("bad_many.csv", &numbered(1000, edit));
        let e = load(&csv(&p), &a_and_b()).unwrap_err();
        (e.row, e.column)
    };
    let col = |c: &str| Some(c.to_string());
    // b's bad cell on line 300 comes before a's on line 301 (another input).
    assert_eq!(
        first(&[(301, "x,600"), (300, "299,-1")]),
        (Some(300), col("b"))
    );
    // On one line, the first input's cell.
    assert_eq!(first(&[(300, "x,-1")]), (Some(300), col("a")));
    // Across a chunk boundary (256 records a chunk): line 258 is the first
    // record of the second chunk.
    assert_eq!(first(&[(258, "y,2"), (700, "x,2")]), (Some(258), col("a")));
    // A bad cell before a ragged row is reported, and a ragged row before a
    // bad cell.
    assert_eq!(
        first(&[(499, "x,2"), (500, "1,2,3")]),
        (Some(499), col("a"))
    );
    assert_eq!(first(&[(500, "1,2,3"), (501, "x,2")]), (Some(500), None));
}

#[test]
fn column_transforms_see_raw_cells_a_chunk_at_a_time() {
    let float = float_input("x", &["p", "q"], div16());
    let mut t = transform_for(&float);
    assert_eq!(
        (t.width(), t.elem(), t.is_fitted()),
        (2, ElemType::F32, false)
    );
    assert_eq!(t.columns(), ["p", "q"]);
    let cells: Vec<&[u8]> = vec![b" 8", b"16 ", b"4", b"-2"];
    let mut out = vec![0f32; 4];
    t.transform(&CellRows::text(&cells, 2), ValuesMut::F32(&mut out))
        .unwrap();
    assert_eq!(out, [0.5, 1.0, 0.25, -0.125]);
    // Numbers (synthetic data) skip the parse; the same values.
    let numbers = [8.0, 16.0, 4.0, -2.0];
    let mut again = vec![0f32; 4];
    t.transform(&CellRows::numbers(&numbers, 2), ValuesMut::F32(&mut again))
        .unwrap();
    assert_eq!(again, out);
    // The first bad cell in row-major order: row 1, column 0.
    let bad: Vec<&[u8]> = vec![b"1", b"2", b"zz", b""];
    let e = t
        .transform(&CellRows::text(&bad, 2), ValuesMut::F32(&mut out))
        .unwrap_err();
    assert_eq!((e.row, e.column), (1, 0));
    assert_eq!(e.message, "cannot parse \"zz\" as a number");

    let ids = class_input("c", "c", Some(3));
    let mut t = transform_for(&ids);
    assert_eq!(t.elem(), ElemType::I32);
    let cells: Vec<&[u8]> = vec![b"2", b"0", b"3"];
    let mut out = vec![0i32; 3];
    let e = t
        .transform(&CellRows::text(&cells, 1), ValuesMut::I32(&mut out))
        .unwrap_err();
    assert_eq!((e.row, e.column), (2, 0));
    assert_eq!(e.message, "id 3 is out of range: expected 0 <= id < 3");

    // Standardize is fitted: it observes every chunk, then writes all rows;
    // two chunks give what one chunk gives.
    let std_spec = float_input("s", &["v"], Normalizer::Standardize);
    let column = [1.0, 2.0, 3.0, 6.0];
    let run = |chunks: &[&[f64]]| {
        let mut t = transform_for(&std_spec);
        assert!(t.is_fitted());
        let mut out = vec![0f32; 4];
        let mut at = 0;
        for c in chunks {
            t.transform(
                &CellRows::numbers(c, 1),
                ValuesMut::F32(&mut out[at..at + c.len()]),
            )
            .unwrap();
            at += c.len();
        }
        t.finish(ValuesMut::F32(&mut out)).unwrap();
        out
    };
    let whole = run(&[&column]);
    assert_eq!(run(&[&column[..1], &column[1..]]), whole);
    let s = 3.5f64.sqrt();
    let want: Vec<f32> = column.iter().map(|&v| ((v - 3.0) / s) as f32).collect();
    assert_eq!(whole, want);
}

/// A gzip CSV (recognised by its magic bytes, whatever its name) loads to
/// exactly what the plain file loads to; a corrupt gzip stream is an error
/// naming the file, never fewer rows.
#[test]
fn a_gzip_csv_loads_like_the_plain_file() {
    use std::io::Write;
    let path = shared("data/digits.csv");
    let cols: Vec<String> = (0..64).map(|i| format!("px{i}")).collect();
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let specs = [
        float_input("pixels", &cols, div16()),
        class_input("label", "label", Some(10)),
    ];
    let plain = load(&csv(&path), &specs).unwrap();
    let dir = std::env::temp_dir().join(format!("specc-gzip-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&std::fs::read(&path).unwrap()).unwrap();
    let gz = gz.finish().unwrap();
    for name in ["digits.csv.gz", "digits.csv"] {
        let p = dir.join(name);
        std::fs::write(&p, &gz).unwrap();
        let d = load(&csv(&p), &specs).unwrap();
        assert_eq!(d.rows, plain.rows, "{name}");
        assert_eq!(f32s(&d, "pixels"), f32s(&plain, "pixels"), "{name}");
        assert_eq!(
            d.input("label").unwrap().values.as_i32(),
            plain.input("label").unwrap().values.as_i32()
        );
    }
    // Cut the stream short: an error naming the file.
    let p = dir.join("cut.csv.gz");
    std::fs::write(&p, &gz[..gz.len() / 2]).unwrap();
    let e = load(&csv(&p), &specs).unwrap_err();
    assert!(e.to_string().contains("cut.csv.gz"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
