//! A CSV source's options (TF's `make_csv_dataset` arguments,
//! `runtime::data::csv_options`) read the same rows in memory
//! (`data::load`) and streamed (any number of threads): `field_delim`,
//! `use_quote_delim`, `na_value`, `header` and `column_names`,
//! `select_columns`, `column_defaults`, `comment` and `filter`; a bad field
//! names the file, the line and the column; the filter's rows are not bad
//! records; `shuffle_files` reads the files in a new order every epoch,
//! the same for a seed whatever the threads, and resumes to the same
//! batches.

use std::path::{Path, PathBuf};

use specc_runtime::data::csv_filter::{CmpOp, FilterValue, RowFilter};
use specc_runtime::data::csv_options::{ColumnRef, CsvReadOptions};
use specc_runtime::data::{load, Source, Values};
use specc_runtime::io::csv::{CsvType, RecordDefault};
use specc_runtime::pipeline::{Format, OnBadRecord, StreamSpec};

use super::{a_column, batches, dir, inputs, resume_case, row, source, write_csv};

/// The rows of the test file: `i` in `0..N`, each with its `note`.
const N: usize = 60;

/// Row `i`'s cells as the file writes them: `a` (`NA` every 7th), a note
/// (quoted, holding the delimiter; `skip` every 5th), `b` (empty every
/// 6th), `y`, and an unread column.
fn cells(i: usize) -> [String; 5] {
    let (a, b, y) = row(i);
    [
        if i % 7 == 3 {
            "NA".into()
        } else {
            format!("{a}")
        },
        if i % 5 == 2 {
            "skip".into()
        } else {
            format!("\"n;{i}\"")
        },
        if i % 6 == 1 {
            String::new()
        } else {
            format!("{b}")
        },
        format!("{y}"),
        "z".into(),
    ]
}

/// The file without a header, `;`-delimited, with comment lines (one
/// before the first row, one every 9 rows); returns each row's line.
fn write_headless(path: &Path) -> Vec<usize> {
    let mut text = String::from("# generated\n");
    let mut lines = Vec::new();
    let mut line = 1;
    for i in 0..N {
        if i % 9 == 4 {
            text.push_str("#,a comment; with \"quotes\n");
            line += 1;
        }
        text.push_str(&cells(i).join(";"));
        text.push('\n');
        line += 1;
        lines.push(line);
    }
    std::fs::write(path, text).unwrap();
    lines
}

fn compare(column: &str, op: CmpOp, value: FilterValue, dtype: CsvType) -> RowFilter {
    RowFilter::Compare {
        column: column.into(),
        op,
        value,
        dtype,
    }
}

/// The options of the headless file: every one but `select_columns`.
fn headless_options() -> CsvReadOptions {
    CsvReadOptions {
        field_delim: b';',
        na_value: Some("NA".into()),
        header: false,
        column_names: Some(["a", "note", "b", "y", "unread"].map(String::from).to_vec()),
        column_defaults: Some(vec![
            RecordDefault::Float32(-1.0),
            RecordDefault::String(Vec::new()),
            RecordDefault::Float32(0.5),
            RecordDefault::Required(CsvType::Int64),
            RecordDefault::String(Vec::new()),
        ]),
        comment: Some(b'#'),
        filter: Some(RowFilter::All(vec![
            compare("a", CmpOp::Ge, FilterValue::Number(0.0), CsvType::Float32),
            compare(
                "note",
                CmpOp::Ne,
                FilterValue::String(b"skip".to_vec()),
                CsvType::String,
            ),
        ])),
        ..CsvReadOptions::default()
    }
}

/// What the headless options keep of row `i`: `(a, b, y)`.
fn kept(i: usize) -> Option<(f32, f32, i32)> {
    let (a, b, y) = row(i);
    if i % 7 == 3 || i % 5 == 2 {
        return None; // `a` is NA (-1, refused), or the note is `skip`
    }
    Some((a, if i % 6 == 1 { 0.5 } else { b }, y))
}

/// The rows `data::load` reads from `path`: `(a, b, y)`.
fn loaded(path: &Path, options: &CsvReadOptions) -> Vec<(f32, f32, i32)> {
    let source = Source::Csv {
        path: path.to_path_buf(),
        options: options.clone(),
    };
    let d = load(&source, &inputs()).unwrap();
    let (Values::F32(x), Values::I32(y)) = (&d.inputs[0].values, &d.inputs[1].values) else {
        panic!("types")
    };
    (0..d.rows)
        .map(|r| (x[2 * r], x[2 * r + 1], y[r]))
        .collect()
}

/// The rows the pipeline streams from `path` (one epoch, in file order).
fn streamed(paths: Vec<PathBuf>, options: &CsvReadOptions, threads: usize) -> Vec<(f32, f32, i32)> {
    let mut spec = StreamSpec::new(Format::Csv(Box::new(options.clone())), paths);
    spec.num_epochs = Some(1);
    spec.threads = threads;
    spec.block_length = 7;
    batches(&mut source(&spec, 4, 0, 1), 4, 1000).concat()
}

#[test]
fn every_option_reads_the_same_rows_in_memory_and_streamed() {
    let p = dir("csv_options").join("headless.csv");
    write_headless(&p);
    let o = headless_options();
    let want: Vec<_> = (0..N).filter_map(kept).collect();
    assert!(
        want.len() > N / 2 && want.len() < N,
        "the filter drops some rows"
    );
    assert_eq!(loaded(&p, &o), want);
    for threads in [1, 3] {
        assert_eq!(
            streamed(vec![p.clone()], &o, threads),
            want,
            "{threads} threads"
        );
    }
}

#[test]
fn a_header_is_skipped_under_column_names_and_fields_can_be_selected() {
    let d = dir("csv_select");
    // Header names that differ from the spec's; an extra field after the
    // last selected column on some rows (TF does not look at it).
    let mut text = String::from("A,NOTE,B,Y,EXTRA\n");
    for i in 0..20 {
        let (a, b, y) = row(i);
        let extra = if i % 3 == 0 { ",more" } else { "" };
        text.push_str(&format!("{a},\"q\",{b},{y},x{extra}\n"));
    }
    let p = d.join("sel.csv");
    std::fs::write(&p, &text).unwrap();
    let mut o = CsvReadOptions {
        column_names: Some(["a", "note", "b", "y", "extra"].map(String::from).to_vec()),
        select_columns: Some(vec![
            ColumnRef::Name("y".into()),
            ColumnRef::Index(0),
            ColumnRef::Name("b".into()),
        ]),
        ..CsvReadOptions::default()
    };
    let want: Vec<_> = (0..20).map(row).collect();
    assert_eq!(loaded(&p, &o), want);
    assert_eq!(streamed(vec![p.clone()], &o, 2), want);
    // A row without the last selected field is an error naming its line.
    std::fs::write(&p, format!("{text}7,\"q\",1\n")).unwrap();
    let e = load(
        &Source::Csv {
            path: p.clone(),
            options: o.clone(),
        },
        &inputs(),
    )
    .unwrap_err();
    assert_eq!(e.row, Some(22), "{e}");
    assert!(
        e.message.contains("select_columns reads field 4 (`y`)"),
        "{e}"
    );
    // An input cannot read a column left out.
    o.select_columns = Some(vec![
        ColumnRef::Name("a".into()),
        ColumnRef::Name("y".into()),
    ]);
    let e = load(
        &Source::Csv {
            path: p.clone(),
            options: o,
        },
        &inputs(),
    )
    .unwrap_err();
    assert_eq!(e.column.as_deref(), Some("b"), "{e}");
    assert!(e.message.contains("not among select_columns (a, y)"), "{e}");
}

#[test]
fn quotes_are_data_without_use_quote_delim() {
    let p = dir("csv_quotes").join("q.csv");
    std::fs::write(&p, "a,note,b,y\n1,\"q,2,0\n4,r\",1,1\n").unwrap();
    // Quoted, the note is `q,2,0\n4,r`: one record over two lines.
    assert_eq!(loaded(&p, &CsvReadOptions::default()), [(1.0, 1.0, 1)]);
    let plain = CsvReadOptions {
        use_quote_delim: false,
        filter: Some(compare(
            "note",
            CmpOp::Eq,
            FilterValue::String(b"\"q".to_vec()),
            CsvType::String,
        )),
        ..CsvReadOptions::default()
    };
    assert_eq!(loaded(&p, &plain), [(1.0, 2.0, 0)]);
}

#[test]
fn bad_fields_name_file_line_and_column_and_filtered_rows_are_not_bad() {
    let d = dir("csv_bad");
    let p = d.join("bad.csv");
    let lines = write_headless(&p);
    // Row 10 loses its label (required), row 20's `a` is not a number.
    let text = std::fs::read_to_string(&p).unwrap();
    let mut rows: Vec<String> = text.lines().map(String::from).collect();
    let swap = |rows: &mut Vec<String>, i: usize, cells: [String; 5]| {
        rows[lines[i] - 1] = cells.join(";");
    };
    let mut c10 = cells(10);
    c10[3] = String::new();
    swap(&mut rows, 10, c10);
    let mut c20 = cells(20);
    c20[0] = "x1".into();
    swap(&mut rows, 20, c20);
    std::fs::write(&p, rows.join("\n") + "\n").unwrap();
    let o = headless_options();
    let e = load(
        &Source::Csv {
            path: p.clone(),
            options: o.clone(),
        },
        &inputs(),
    )
    .unwrap_err();
    assert_eq!(
        (e.row, e.column.as_deref()),
        (Some(lines[10]), Some("y")),
        "{e}"
    );
    assert!(
        e.message.contains("required (no default int64 value"),
        "{e}"
    );
    let mut spec = StreamSpec::new(Format::Csv(Box::new(o)), vec![p.clone()]);
    spec.num_epochs = Some(1);
    spec.on_bad_record = OnBadRecord::Skip;
    spec.threads = 2;
    let mut src = source(&spec, 4, 0, 1);
    let got = batches(&mut src, 4, 1000).concat();
    let want: Vec<_> = (0..N)
        .filter(|&i| i != 10 && i != 20)
        .filter_map(kept)
        .collect();
    assert_eq!(got, want);
    let bad = src.bad_records();
    assert_eq!(
        bad.count, 2,
        "only the bad rows, not the filtered ones: {bad}"
    );
    let shown = bad.to_string();
    assert!(
        shown.contains(&format!("bad.csv:{}: column `a`", lines[20])),
        "{shown}"
    );
    assert!(
        shown.contains("'x1' is not a valid float32 (the filter's `a >= 0`)"),
        "{shown}"
    );
}

/// `files` files of 3 rows each (file `f` has rows `3f..3f+3`).
fn files(name: &str, files: usize) -> StreamSpec {
    let d = dir(name);
    for f in 0..files {
        write_csv(&d.join(format!("part-{f:02}.csv")), 3 * f..3 * f + 3, false);
    }
    let mut spec = StreamSpec::new(Format::csv(), vec![d.join("part-*.csv")]);
    spec.shuffle_files = true;
    spec
}

/// Each epoch's order of files, from the rows streamed in file order.
fn file_orders(spec: &StreamSpec, epochs: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut spec = spec.clone();
    spec.num_epochs = Some(epochs as u64);
    let rows = a_column(&batches(&mut source(&spec, 3, 0, seed), 3, 1000));
    let per_epoch = rows.len() / epochs;
    rows.chunks(per_epoch)
        .map(|e| e.chunks(3).map(|f| f[0] / 3).collect())
        .collect()
}

#[test]
fn shuffle_files_draws_a_new_order_every_epoch_from_the_seed() {
    let mut spec = files("shuffle_files", 6);
    let orders = file_orders(&spec, 4, 7);
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..6).collect::<Vec<_>>(),
            "each file once an epoch"
        );
    }
    assert!(
        orders.windows(2).any(|w| w[0] != w[1]),
        "the order changes from epoch to epoch: {orders:?}"
    );
    assert_ne!(
        orders,
        file_orders(&spec, 4, 8),
        "another seed, other orders"
    );
    spec.threads = 3;
    spec.cycle_length = 1;
    assert_eq!(orders, file_orders(&spec, 4, 7), "the same for any threads");
    spec.shuffle_files = false;
    let sorted = file_orders(&spec, 2, 7);
    assert_eq!(sorted, vec![(0..6).collect::<Vec<_>>(); 2]);
}

#[test]
fn shuffled_files_resume_to_the_same_batches() {
    let mut spec = files("shuffle_resume", 5);
    spec.threads = 2;
    spec.num_epochs = None;
    // Mid a later epoch, with a shuffle buffer and without.
    resume_case(&spec, 4, 9, 20);
    resume_case(&spec, 0, 5, 12);
}
