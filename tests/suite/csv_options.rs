//! A CSV source's options through the CLI (`sema::csv`): each error is exit
//! 2 with its code and a caret under the offending text (snapshotted); the
//! options reach every command that reads the data: `specc run` (in memory,
//! streamed, `--data`, `eval_data`) trains on the rows the filter keeps,
//! `specc predict` reads every row with the same dialect (one prediction
//! per row), `specc convert` writes the kept rows; a bad field names the
//! file, the line and the column.

use crate::cli;

use cli::replace;

const SUITE: &str = "csv_options";

/// The base spec with its `data` item's arguments after the path.
fn data(options: &str) -> String {
    replace(
        "data csv(\"data.csv\")",
        &format!("data csv(\"data.csv\", {options})"),
    )
}

macro_rules! case {
    ($name:ident, $spec:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &$spec, $code);
            insta::assert_snapshot!(err);
        }
    };
}

case!(
    filter_names_a_column_the_source_leaves_out,
    data(
        "header = false, column_names = [\"x0\", \"x1\", \"x2\", \"x3\", \"y\"], \
         filter = x0 > 0 and x4 < 1"
    ),
    "unknown-column"
);
case!(
    an_input_reads_a_column_not_selected,
    data("select_columns = [\"x0\", \"x1\", \"x2\", \"y\"]"),
    "unknown-column"
);
case!(
    select_columns_names_a_column_column_names_lacks,
    data(
        "column_names = [\"x0\", \"x1\", \"x2\", \"x3\", \"y\"], select_columns = [\"x0\", \"z\"]"
    ),
    "unknown-column"
);
case!(
    a_number_column_compared_with_a_string,
    data("filter = x1 == \"big\""),
    "column-type"
);
case!(
    an_integer_label_compared_with_a_fraction,
    data("filter = y != 1.5"),
    "column-type"
);
case!(
    a_string_column_compared_by_order,
    data(
        "column_names = [\"x0\", \"x1\", \"x2\", \"x3\", \"y\", \"city\"], \
         column_defaults = [0.0, 0.0, 0.0, 0.0, 0, \"\"], filter = city < \"m\""
    ),
    "column-type"
);
case!(
    a_default_of_another_type,
    data(
        "column_names = [\"x0\", \"x1\", \"x2\", \"x3\", \"y\"], \
         column_defaults = [0.0, \"none\", 0.0, 0.0, int32]"
    ),
    "column-type"
);
case!(
    one_default_per_selected_column,
    data("select_columns = [0, 1, 2, 3, 4], column_defaults = [0.0, 0.0, int64]"),
    "malformed-argument"
);
case!(
    an_unknown_dtype_default,
    data("column_defaults = [0.0, 0.0, 0.0, 0.0, uint8]"),
    "unknown-choice"
);
case!(
    a_filter_that_is_arithmetic,
    data("filter = x0 + x1"),
    "bad-filter"
);
case!(
    a_filter_comparing_two_columns,
    data("filter = x0 < x1"),
    "bad-filter"
);
case!(
    no_header_and_no_column_names,
    data("header = false"),
    "missing-argument"
);
case!(
    a_delimiter_of_two_characters,
    data("field_delim = \";;\""),
    "malformed-argument"
);
case!(
    the_quote_as_delimiter,
    data("field_delim = \"\\\"\""),
    "conflicting-arguments"
);
case!(
    a_column_named_twice,
    data("column_names = [\"x0\", \"x1\", \"x0\"]"),
    "duplicate-value"
);
case!(
    and_between_tensors,
    replace(
        "h      = relu(x @ W1 + b1)",
        "h      = relu(x @ W1 + b1)\nm = x > 0 and x < 1"
    ),
    "unsupported-argument"
);

/// `x0..x3` and `y` of row `i` (`x0 = i`), `;`-delimited, the label `NA`
/// every 4th row, a `kind` column (`keep` or `drop`, every 3rd) the model
/// does not read.
fn rows(n: usize) -> String {
    (0..n)
        .map(|i| {
            let y = if i % 4 == 1 {
                "NA".to_string()
            } else {
                (i % 3).to_string()
            };
            let kind = if i % 3 == 2 { "drop" } else { "keep" };
            format!("{i};{};{};{};{y};{kind}\n", i % 5, i % 2, i % 7)
        })
        .collect()
}

/// A spec reading `rows` without a header, comments allowed, NA labels
/// taking the class 2, `drop` rows filtered out; `extra` after the options.
fn options_spec(extra: &str) -> String {
    data(&format!(
        "header = false, field_delim = \";\", comment = \"#\", na_value = \"NA\", \
         column_names = [\"x0\", \"x1\", \"x2\", \"x3\", \"y\", \"kind\"], \
         column_defaults = [float32, float32, float32, float32, 2, \"\"], \
         filter = kind == \"keep\" or x0 < 3{extra}"
    ))
    .replace(
        "train { batch = 4, steps = 10 }",
        "train { batch = 4, steps = 2 }",
    )
    .replace("metrics {", "outputs { logits = logits }\nmetrics {")
}

/// The rows `options_spec` keeps of `rows(n)`.
fn kept(n: usize) -> usize {
    (0..n).filter(|&i| i % 3 != 2 || i < 3).count()
}

#[test]
fn run_predict_and_convert_read_with_the_options() {
    let dir = cli::workdir(SUITE, "commands");
    let n = 40;
    std::fs::write(
        dir.join("data.csv"),
        format!("# x0;x1;x2;x3;y;kind\n{}", rows(n)),
    )
    .unwrap();
    std::fs::write(dir.join("spec.spec"), options_spec("")).unwrap();
    let (code, _, err) = cli::specc(&dir, &["run", "spec.spec", "--checkpoint-dir", "ckpt"]);
    assert_eq!(code, 0, "{err}");
    // The held-out split is of the kept rows.
    let kept = kept(n);
    assert!(
        err.contains(&format!("data data.csv: {kept} rows")),
        "{err}"
    );
    // predict: every row, with the same dialect.
    let (code, out, err) = cli::specc(
        &dir,
        &[
            "predict",
            "spec.spec",
            "--checkpoint",
            "ckpt",
            "--data",
            "data.csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().count(),
        1 + n,
        "a header and one line per row\n{out}"
    );
    // convert: the kept rows, NA labels as their default.
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "convert",
            "spec.spec",
            "--data",
            "data.csv",
            "-o",
            "rows.tfrecord",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("{kept} records")), "{err}");
    let (code, _, err) = cli::specc(
        &dir,
        &[
            "convert",
            "spec.spec",
            "--data",
            "rows.tfrecord",
            "-o",
            "back.csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let back = std::fs::read_to_string(dir.join("back.csv")).unwrap();
    let labels: Vec<&str> = back
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    let want: Vec<String> = (0..n)
        .filter(|&i| i % 3 != 2 || i < 3)
        .map(|i| {
            if i % 4 == 1 {
                "2".into()
            } else {
                (i % 3).to_string()
            }
        })
        .collect();
    assert_eq!(labels, want, "{back}");
}

#[test]
fn a_streamed_source_and_data_flag_keep_the_options() {
    let dir = cli::workdir(SUITE, "streamed");
    let n = 30;
    std::fs::write(dir.join("data.csv"), rows(n)).unwrap();
    std::fs::write(dir.join("other.csv"), rows(n + 9)).unwrap();
    let spec = options_spec(", threads = 2, num_epochs = 1").replace(
        "train { batch = 4, steps = 2 }",
        "train { batch = 1, steps = 1000 }",
    );
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    // One epoch of batch 1: a step per kept row.
    let (code, out, err) = cli::specc(&dir, &["run", "spec.spec", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("\"steps\":{}", kept(n))), "{out}");
    // `--data` replaces the file and keeps the options (in memory).
    std::fs::write(dir.join("mem.spec"), options_spec("")).unwrap();
    let (code, _, err) = cli::specc(&dir, &["run", "mem.spec", "--data", "other.csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("{} rows", kept(n + 9))), "{err}");
}

#[test]
fn a_bad_field_names_the_file_line_and_column() {
    let dir = cli::workdir(SUITE, "bad_field");
    // The label required: row 1's `NA` (line 3, after a comment) is missing.
    std::fs::write(dir.join("data.csv"), format!("#\n{}", rows(12))).unwrap();
    let spec = options_spec("").replace("float32, 2, \"\"]", "float32, int32, \"\"]");
    std::fs::write(dir.join("spec.spec"), spec).unwrap();
    let (code, _, err) = cli::specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("data.csv:3: column `y`: the field is required (no default int32 value"),
        "{err}"
    );
}
