//! The streaming input pipeline (`runtime::pipeline`): several files, glob
//! patterns and gzip; TFRecord plain/GZIP/ZLIB; `num_epochs` ending the data;
//! the same batches for 1, 2 and 4 threads; bad records (error vs skip);
//! a CRC flip; an error in a worker ending the stream (no hang); bounded
//! read-ahead; resume (`position`/`seek`) equal to a straight run; and
//! `specc run` streaming, stopping and resuming to the same checkpoint.
//!
//! The data is written by the tests (values chosen here, not TF's: the
//! pipeline only moves rows; the column transforms are tested elsewhere).

use crate::cli;

use std::io::Write;
use std::path::{Path, PathBuf};

use specc_runtime::abi::{ElemType, InputLayout, Layout};
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::io::example::{Example, Feature};
use specc_runtime::io::tfrecord::{Compression, RecordWriter};
use specc_runtime::memory::AlignedBuf;
use specc_runtime::pipeline::{Format, OnBadRecord, StreamSpec, StreamingBatches};
use specc_runtime::source::{BatchBuffers, BatchSource};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("pipeline")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `x` (f32, columns a, b) and `label` (class id < 3).
fn inputs() -> Vec<InputSpec> {
    vec![
        InputSpec {
            name: "x".into(),
            columns: vec!["a".into(), "b".into()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: None,
        },
        InputSpec {
            name: "label".into(),
            columns: vec!["y".into()],
            kind: InputKind::ClassId {
                num_classes: Some(3),
            },
            normalizer: Normalizer::None,
            feature: None,
        },
    ]
}

fn layout(max_batch: usize) -> Layout {
    Layout {
        arenas: Vec::new(),
        vars: Vec::new(),
        inputs: vec![
            InputLayout {
                name: "x".into(),
                elem: ElemType::F32,
                per_example: 2,
                num_classes: None,
                padding: false,
            },
            InputLayout {
                name: "label".into(),
                elem: ElemType::I32,
                per_example: 1,
                num_classes: Some(3),
                padding: false,
            },
        ],
        max_batch,
    }
}

/// Row `i` of the test data: `a = i`, `b = i / 4`, `y = i % 3`.
fn row(i: usize) -> (f32, f32, i32) {
    (i as f32, i as f32 / 4.0, (i % 3) as i32)
}

/// A CSV of rows `rows` (columns in the order `b, y, a`: the header decides).
fn write_csv(path: &Path, rows: std::ops::Range<usize>, gzip: bool) {
    let mut text = String::from("b,y,a\n");
    for i in rows {
        let (a, b, y) = row(i);
        text.push_str(&format!("{b},{y},{a}\n"));
    }
    if gzip {
        let f = std::fs::File::create(path).unwrap();
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
    } else {
        std::fs::write(path, text).unwrap();
    }
}

/// Every batch of `source` until it is exhausted (at most `limit` batches):
/// the `a` column of each row (which names the row) and the labels.
fn batches(source: &mut StreamingBatches, batch: usize, limit: usize) -> Vec<Vec<(f32, f32, i32)>> {
    let lay = layout(batch);
    let mut bufs = vec![
        AlignedBuf::zeroed(batch * 2 * 4).unwrap(),
        AlignedBuf::zeroed(batch * 4).unwrap(),
    ];
    let mut out = Vec::new();
    for _ in 0..limit {
        let mut b = BatchBuffers::new(&lay.inputs, &mut bufs, batch).unwrap();
        let n = source.next_batch(&mut b).unwrap();
        if n == 0 {
            break;
        }
        let x = bufs[0].f32s();
        let y = bufs[1].i32s();
        out.push((0..n).map(|r| (x[2 * r], x[2 * r + 1], y[r])).collect());
    }
    out
}

fn source(spec: &StreamSpec, batch: usize, shuffle: usize, seed: u64) -> StreamingBatches {
    StreamingBatches::new(spec, &inputs(), &layout(batch), batch, shuffle, seed).unwrap()
}

fn csv_spec(paths: Vec<PathBuf>) -> StreamSpec {
    let mut s = StreamSpec::new(Format::Csv { na_value: None }, paths);
    s.num_epochs = Some(1);
    s
}

fn a_column(got: &[Vec<(f32, f32, i32)>]) -> Vec<usize> {
    got.iter().flatten().map(|r| r.0 as usize).collect()
}

/// Every row delivered is the row its `a` names.
fn check_rows(got: &[Vec<(f32, f32, i32)>]) {
    for r in got.iter().flatten() {
        assert_eq!(*r, row(r.0 as usize), "a row's columns were mixed up");
    }
}

#[test]
fn several_files_glob_and_gzip_in_file_order() {
    let d = dir("glob");
    write_csv(&d.join("p-0.csv"), 0..10, false);
    write_csv(&d.join("p-1.csv.gz"), 10..25, true);
    write_csv(&d.join("p-2.csv"), 25..30, false);
    write_csv(&d.join("other.csv"), 100..110, false);
    let spec = csv_spec(vec![d.join("p-*.csv*")]);
    let mut src = source(&spec, 4, 0, 1);
    let got = batches(&mut src, 4, 100);
    assert_eq!(src.files().len(), 3);
    assert_eq!(a_column(&got), (0..30).collect::<Vec<_>>());
    check_rows(&got);
    assert_eq!(got.last().unwrap().len(), 30 % 4, "the last batch is short");
    let none = StreamingBatches::new(
        &csv_spec(vec![d.join("q-*.csv")]),
        &inputs(),
        &layout(4),
        4,
        0,
        1,
    )
    .err()
    .unwrap();
    assert!(none.to_string().contains("q-*.csv"), "{none}");
    assert!(none.to_string().contains("no file matches"), "{none}");
}

/// TF's `interleave(cycle_length, block_length)` over files of `sizes` rows:
/// the file and row of each element.
fn interleave(sizes: &[usize], cycle: usize, block: usize) -> Vec<(usize, usize)> {
    let mut slots: Vec<Option<(usize, usize)>> = vec![None; cycle];
    let (mut next, mut cursor, mut out) = (0, 0, Vec::new());
    loop {
        if slots[cursor].is_none() {
            if next < sizes.len() {
                slots[cursor] = Some((next, 0));
                next += 1;
            } else if slots.iter().all(Option::is_none) {
                return out;
            } else {
                cursor = (cursor + 1) % cycle;
                continue;
            }
        }
        let (f, pos) = slots[cursor].unwrap();
        let n = block.min(sizes[f] - pos);
        out.extend((pos..pos + n).map(|r| (f, r)));
        slots[cursor] = (pos + n < sizes[f] || n == block).then_some((f, pos + n));
        if pos + n == sizes[f] && n < block {
            slots[cursor] = None;
        }
        cursor = (cursor + 1) % cycle;
    }
}

#[test]
fn cycle_length_interleaves_blocks_of_files_as_tf() {
    let d = dir("interleave");
    let sizes = [5usize, 7, 2, 6];
    let mut start = 0;
    let mut starts = Vec::new();
    for (i, n) in sizes.iter().enumerate() {
        write_csv(&d.join(format!("f{i}.csv")), start..start + n, false);
        starts.push(start);
        start += n;
    }
    let mut spec = csv_spec(vec![d.join("f*.csv")]);
    spec.cycle_length = 2;
    spec.block_length = 3;
    let got = batches(&mut source(&spec, 5, 0, 1), 5, 100);
    let want: Vec<usize> = interleave(&sizes, 2, 3)
        .into_iter()
        .map(|(f, r)| starts[f] + r)
        .collect();
    assert_eq!(a_column(&got), want);
    check_rows(&got);
}

fn write_tfrecord(path: &Path, rows: std::ops::Range<usize>, compression: Compression) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = RecordWriter::new(f, compression);
    for i in rows {
        let (a, b, y) = row(i);
        let mut ex = Example::default();
        ex.features.insert("a".into(), Feature::FloatList(vec![a]));
        ex.features.insert("b".into(), Feature::FloatList(vec![b]));
        ex.features
            .insert("y".into(), Feature::Int64List(vec![i64::from(y)]));
        w.write(&ex.encode()).unwrap();
    }
    w.finish().unwrap();
}

fn check_tfrecord(name: &str, compression: Compression) {
    let d = dir(name);
    write_tfrecord(&d.join("t-0.tfrecord"), 0..7, compression);
    write_tfrecord(&d.join("t-1.tfrecord"), 7..20, compression);
    let mut spec = StreamSpec::new(
        Format::TfRecord { compression },
        vec![d.join("t-*.tfrecord")],
    );
    spec.num_epochs = Some(1);
    let got = batches(&mut source(&spec, 6, 0, 1), 6, 100);
    assert_eq!(a_column(&got), (0..20).collect::<Vec<_>>());
    check_rows(&got);
}

#[test]
fn tfrecord_plain() {
    check_tfrecord("tf_plain", Compression::None);
}

#[test]
fn tfrecord_gzip() {
    check_tfrecord("tf_gzip", Compression::Gzip);
}

#[test]
fn tfrecord_zlib() {
    check_tfrecord("tf_zlib", Compression::Zlib);
}

#[test]
fn num_epochs_ends_the_data_with_a_short_batch() {
    let d = dir("epochs");
    let (rows, epochs, batch) = (10usize, 3u64, 4usize);
    write_csv(&d.join("p.csv"), 0..rows, false);
    let mut spec = csv_spec(vec![d.join("p.csv")]);
    spec.num_epochs = Some(epochs);
    let mut src = source(&spec, batch, 4, 5);
    let got = batches(&mut src, batch, 1000);
    let total = rows * epochs as usize;
    assert_eq!(got.len(), total.div_ceil(batch));
    assert_eq!(got.last().unwrap().len(), total - (got.len() - 1) * batch);
    let mut seen = a_column(&got);
    seen.sort_unstable();
    let mut want: Vec<usize> = (0..rows).flat_map(|r| [r; 3]).collect();
    want.sort_unstable();
    assert_eq!(seen, want, "every row once per epoch");
    assert_eq!(src.epochs_started(), epochs);
    // Exhausted for good.
    assert!(batches(&mut src, batch, 10).is_empty());
}

fn threads_data(name: &str) -> StreamSpec {
    let d = dir(name);
    write_csv(&d.join("p-0.csv"), 0..230, false);
    write_csv(&d.join("p-1.csv"), 230..300, true);
    write_csv(&d.join("p-2.csv"), 300..500, false);
    let mut spec = csv_spec(vec![d.join("p-*.csv")]);
    spec.block_length = 16;
    spec.cycle_length = 2;
    spec.num_epochs = Some(2);
    spec
}

#[test]
fn same_batches_whatever_the_number_of_threads() {
    let mut spec = threads_data("threads");
    let mut runs = Vec::new();
    for threads in [1, 2, 4] {
        spec.threads = threads;
        runs.push(batches(&mut source(&spec, 8, 64, 9), 8, 10_000));
    }
    assert_eq!(runs[0], runs[1], "1 vs 2 threads");
    assert_eq!(runs[0], runs[2], "1 vs 4 threads");
    check_rows(&runs[0]);
    assert_eq!(a_column(&runs[0]).len(), 1000);
    let other_seed = batches(&mut source(&spec, 8, 64, 10), 8, 10_000);
    assert_ne!(runs[0], other_seed, "the seed decides the order");
}

#[test]
fn cache_gives_the_same_stream() {
    let mut spec = threads_data("cache");
    spec.num_epochs = Some(3);
    let plain = batches(&mut source(&spec, 8, 50, 3), 8, 10_000);
    spec.cache = true;
    let cached = batches(&mut source(&spec, 8, 50, 3), 8, 10_000);
    assert_eq!(plain, cached);
}

fn bad_csv(d: &Path) -> PathBuf {
    let p = d.join("bad.csv");
    let mut text = String::from("b,y,a\n");
    for i in 0..12 {
        let (a, b, y) = row(i);
        match i {
            3 => text.push_str(&format!("{b},{y},oops\n")),
            7 => text.push_str(&format!("{b},{y}\n")),
            9 => text.push_str(&format!("{b},5,{a}\n")),
            _ => text.push_str(&format!("{b},{y},{a}\n")),
        }
    }
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_record_is_an_error_naming_file_line_and_column() {
    let d = dir("bad_error");
    let p = bad_csv(&d);
    let spec = csv_spec(vec![p.clone()]);
    let mut src = source(&spec, 2, 0, 1);
    let lay = layout(2);
    let mut bufs = vec![
        AlignedBuf::zeroed(16).unwrap(),
        AlignedBuf::zeroed(8).unwrap(),
    ];
    let mut rows = 0;
    let err = loop {
        let mut b = BatchBuffers::new(&lay.inputs, &mut bufs, 2).unwrap();
        match src.next_batch(&mut b) {
            Ok(0) => panic!("no error"),
            Ok(n) => rows += n,
            Err(e) => break e,
        }
    };
    // Data row 3 is line 5 (the header is line 1); the rows before it came.
    assert_eq!(err.file, p.display().to_string());
    assert_eq!(err.row, Some(5));
    assert_eq!(err.column.as_deref(), Some("a"));
    assert!(err.message.contains("oops"), "{err}");
    assert_eq!(
        rows, 2,
        "the rows before the bad one (whole batches) were delivered"
    );
}

#[test]
fn skipped_bad_records_are_counted_and_located() {
    let d = dir("bad_skip");
    let p = bad_csv(&d);
    let mut spec = csv_spec(vec![p.clone()]);
    spec.on_bad_record = OnBadRecord::Skip;
    let mut src = source(&spec, 4, 0, 1);
    let got = batches(&mut src, 4, 100);
    let want: Vec<usize> = (0..12).filter(|i| ![3, 7, 9].contains(i)).collect();
    assert_eq!(a_column(&got), want);
    check_rows(&got);
    let bad = src.bad_records();
    assert_eq!(bad.count, 3);
    let lines: Vec<Option<usize>> = bad.first.iter().map(|e| e.row).collect();
    assert_eq!(lines, [Some(5), Some(9), Some(11)]);
    assert!(bad.first[1].message.contains("fields"), "{}", bad.first[1]);
    assert!(
        bad.first[2].message.contains("out of range"),
        "{}",
        bad.first[2]
    );
    assert!(
        bad.to_string().starts_with("skipped 3 bad records"),
        "{bad}"
    );
}

#[test]
fn a_crc_flip_is_reported_even_when_skipping() {
    let d = dir("crc");
    let p = d.join("t.tfrecord");
    write_tfrecord(&p, 0..10, Compression::None);
    let mut bytes = std::fs::read(&p).unwrap();
    // Record k starts at the sum of the earlier records' lengths.
    let mut off = 0usize;
    let flip = 4;
    for _ in 0..flip {
        let len = u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap()) as usize;
        off += 16 + len;
    }
    bytes[off + 13] ^= 0x10;
    std::fs::write(&p, &bytes).unwrap();
    let mut spec = StreamSpec::new(
        Format::TfRecord {
            compression: Compression::None,
        },
        vec![p.clone()],
    );
    spec.num_epochs = Some(1);
    spec.on_bad_record = OnBadRecord::Skip;
    let mut src = source(&spec, 1, 0, 1);
    let lay = layout(1);
    let mut bufs = vec![
        AlignedBuf::zeroed(8).unwrap(),
        AlignedBuf::zeroed(4).unwrap(),
    ];
    let mut rows = 0;
    let err = loop {
        let mut b = BatchBuffers::new(&lay.inputs, &mut bufs, 1).unwrap();
        match src.next_batch(&mut b) {
            Ok(0) => panic!("the CRC flip was not reported"),
            Ok(n) => rows += n,
            Err(e) => break e,
        }
    };
    // The rows before the damaged record, but the one the shuffle buffer
    // (of one row) holds when it tries to refill.
    assert_eq!(rows, flip - 1);
    let text = err.to_string();
    assert!(text.contains(&p.display().to_string()), "{text}");
    assert!(text.contains(&format!("record {flip}")), "{text}");
    assert!(text.contains("CRC"), "{text}");
}

#[test]
fn an_error_in_a_worker_ends_the_stream_without_a_hang() {
    let d = dir("worker_error");
    let p = d.join("big.csv");
    let mut text = String::from("b,y,a\n");
    let bad_at = 1500;
    for i in 0..5000 {
        let (a, b, y) = row(i);
        if i == bad_at {
            text.push_str(&format!("{b},{y},\n"));
        } else {
            text.push_str(&format!("{b},{y},{a}\n"));
        }
    }
    std::fs::write(&p, text).unwrap();
    for threads in [1, 4] {
        let mut spec = csv_spec(vec![p.clone()]);
        spec.threads = threads;
        spec.block_length = 8;
        spec.num_epochs = None;
        let mut src = source(&spec, 16, 0, 1);
        let lay = layout(16);
        let mut bufs = vec![
            AlignedBuf::zeroed(128).unwrap(),
            AlignedBuf::zeroed(64).unwrap(),
        ];
        let mut rows = 0;
        let err = loop {
            let mut b = BatchBuffers::new(&lay.inputs, &mut bufs, 16).unwrap();
            match src.next_batch(&mut b) {
                Ok(0) => panic!("no error"),
                Ok(n) => rows += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.row, Some(bad_at + 2), "{err}");
        assert_eq!(rows, bad_at - bad_at % 16);
        drop(src); // joins the threads
    }
    // Dropped before the first batch, or mid-stream: no thread is left.
    let spec = csv_spec(vec![p.clone()]);
    drop(source(&spec, 4, 0, 1));
    let mut src = source(&spec, 4, 0, 1);
    batches(&mut src, 4, 3);
    drop(src);
}

fn resume_case(spec: &StreamSpec, shuffle: usize, stop: usize, total: usize) {
    let straight = batches(&mut source(spec, 8, shuffle, 21), 8, total);
    let mut first = source(spec, 8, shuffle, 21);
    let head = batches(&mut first, 8, stop);
    let pos = first.position().unwrap();
    drop(first);
    let mut resumed = source(spec, 8, shuffle, 21);
    resumed.seek(&pos).unwrap();
    assert_eq!(resumed.position().unwrap(), pos);
    let tail = batches(&mut resumed, 8, total - stop);
    assert_eq!(head[..], straight[..stop]);
    assert_eq!(tail[..], straight[stop..], "the resumed batches differ");
}

#[test]
fn resume_continues_from_the_same_record() {
    let mut spec = threads_data("resume");
    spec.num_epochs = None;
    spec.threads = 2;
    // Mid first epoch, mid a later epoch, with a buffer and without.
    resume_case(&spec, 40, 37, 200);
    resume_case(&spec, 40, 150, 200);
    resume_case(&spec, 0, 71, 140);
    spec.cache = true;
    resume_case(&spec, 40, 150, 200);
    let other = threads_data("resume_other");
    let mut two = other.clone();
    two.paths.push(dir("resume_extra").join("x.csv"));
    write_csv(&two.paths[1], 0..3, false);
    let mut a = source(&other, 8, 40, 21);
    batches(&mut a, 8, 3);
    let mut b = source(&two, 8, 40, 21);
    let e = b.seek(&a.position().unwrap()).unwrap_err();
    assert!(e.contains("files"), "{e}");
}

// ---- `specc run` over a streaming source ----

/// A work directory with the digits split into three parts (the last one
/// gzip) and `spec.spec`: digits_mlp over `data` with `train`.
fn digits_stream(name: &str, data: &str, train: &str) -> (PathBuf, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = dir(name);
    std::fs::create_dir_all(d.join("data")).unwrap();
    let text = std::fs::read_to_string(root.join("specs/data/digits.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let body: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    let third = body.len().div_ceil(3);
    for (i, part) in body.chunks(third).enumerate() {
        let csv = format!("{header}\n{}\n", part.join("\n"));
        let p = d.join(format!("data/part-{i}.csv"));
        if i == 2 {
            let f = std::fs::File::create(p.with_extension("csv.gz")).unwrap();
            let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::default());
            e.write_all(csv.as_bytes()).unwrap();
            e.finish().unwrap();
        } else {
            std::fs::write(p, csv).unwrap();
        }
    }
    let spec = std::fs::read_to_string(root.join("specs/digits_mlp.spec")).unwrap();
    let spec = spec.replace("data csv(\"data/digits.csv\")", data);
    let start = spec.find("train {").unwrap();
    let end = start + spec[start..].find('}').unwrap() + 1;
    let spec = format!("{}{train}{}", &spec[..start], &spec[end..]);
    std::fs::write(d.join("spec.spec"), spec).unwrap();
    (d, body.len())
}

fn run_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "spec.spec", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = cli::specc(dir, &all);
    assert_eq!(code, 0, "specc {all:?}\n{err}");
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[test]
fn specc_run_ends_at_the_end_of_num_epochs() {
    let (batch, epochs) = (64usize, 2usize);
    let (d, rows) = digits_stream(
        "cli_epochs",
        &format!("data csv(\"data/part-*.csv*\", num_epochs = {epochs}, threads = 2)"),
        &format!("train {{ batch = {batch}, steps = 100000, shuffle = 500, seed = 7 }}"),
    );
    let out = run_json(&d, &[]);
    assert_eq!(out["steps"], (rows * epochs).div_ceil(batch) as u64);
    assert_eq!(out["bad_records"], 0);
    assert!(
        out["eval"].is_null(),
        "a streamed run has no held-out split"
    );
    // `train { epochs }` sets the passes when the data item does not.
    let (d, rows) = digits_stream(
        "cli_train_epochs",
        "data csv(\"data/part-*.csv*\")",
        &format!("train {{ batch = {batch}, epochs = 3, shuffle = 100, seed = 7 }}"),
    );
    let out = run_json(&d, &[]);
    assert_eq!(out["steps"], (rows * 3).div_ceil(batch) as u64);
}

fn checkpoint(dir: &Path, step: u64) -> (Vec<u8>, Vec<u8>) {
    let p = dir.join(format!("model.ckpt-{step}"));
    (
        std::fs::read(p.with_extension(format!("ckpt-{step}.index"))).unwrap(),
        std::fs::read(p.with_extension(format!("ckpt-{step}.data-00000-of-00001"))).unwrap(),
    )
}

#[test]
fn specc_run_resumes_a_stream_to_the_same_checkpoint() {
    let (d, _) = digits_stream(
        "cli_resume",
        "data csv(\"data/part-*.csv*\", threads = 2, cycle_length = 2, block_length = 100)",
        "train { batch = 32, steps = 200, shuffle = 300, seed = 7 }",
    );
    // 130 steps is past the first epoch (the files have ~1,800 rows).
    let straight = run_json(&d, &["--steps", "200", "--checkpoint-dir", "straight"]);
    let first = run_json(&d, &["--steps", "130", "--checkpoint-dir", "resumed"]);
    assert_eq!(first["global_step"], 130);
    let resumed = run_json(&d, &["--steps", "200", "--checkpoint-dir", "resumed"]);
    assert_eq!(resumed["steps"], 70);
    assert_eq!(straight["last_loss"], resumed["last_loss"]);
    let (a, b) = (
        checkpoint(&d.join("straight"), 200),
        checkpoint(&d.join("resumed"), 200),
    );
    assert!(a.0 == b.0, "the .index files differ");
    assert!(a.1 == b.1, "the .data files differ");
}

#[test]
fn specc_run_reports_skipped_records() {
    let (d, rows) = digits_stream(
        "cli_skip",
        "data csv(\"data/part-*.csv*\", num_epochs = 1, on_bad_record = \"skip\")",
        "train { batch = 50, steps = 100000, shuffle = 0, seed = 7 }",
    );
    // Break two rows of the first part: a bad cell and a short row.
    let p = d.join("data/part-0.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].replacen(',', ",x", 1);
    lines[6] = lines[6].split(',').skip(1).collect::<Vec<_>>().join(",");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = cli::specc(&d, &["run", "spec.spec", "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(json["bad_records"], 2);
    assert_eq!(json["steps"], (rows - 2).div_ceil(50) as u64);
    let locs = json["bad_record_locations"].as_array().unwrap();
    assert!(
        locs[0].as_str().unwrap().contains("part-0.csv:4"),
        "{locs:?}"
    );
    assert!(
        locs[1].as_str().unwrap().contains("part-0.csv:7"),
        "{locs:?}"
    );
    assert!(err.contains("skipped 2 bad records"), "{err}");
    // Without `skip`, the first one stops the run, naming file and line.
    let spec = std::fs::read_to_string(d.join("spec.spec")).unwrap();
    std::fs::write(
        d.join("spec.spec"),
        spec.replace(", on_bad_record = \"skip\"", ""),
    )
    .unwrap();
    let (code, _, err) = cli::specc(&d, &["run", "spec.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("part-0.csv:4"), "{err}");
}

#[test]
fn standardize_is_refused_with_a_caret_when_streaming() {
    let d = dir("cli_standardize");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = std::fs::read_to_string(root.join("specs/cancer_logreg.spec")).unwrap();
    let start = spec.find("data csv(").unwrap();
    let end = start + spec[start..].find(')').unwrap() + 1;
    let spec = format!(
        "{}data csv(\"parts-*.csv\"){}",
        &spec[..start],
        &spec[end..]
    );
    std::fs::write(d.join("spec.spec"), &spec).unwrap();
    let (code, _, err) = cli::specc(&d, &["check", "spec.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("streaming-standardize"), "{err}");
    assert!(err.contains("this source streams"), "{err}");
    assert!(err.contains('^'), "{err}");
}

/// A feature column's ids through the stream: a missing cell is the padding
/// id -1 (weight 0), which the model's id check lets through for an ids
/// input; an id beyond the range is still an error naming line and column.
#[test]
fn feature_column_ids_stream_padding_and_check_their_range() {
    use specc_runtime::feature_column::{CategoricalColumn, FeatureInput, PADDING_ID};
    let column = CategoricalColumn::Identity {
        key: "c".into(),
        num_buckets: 4,
        default_value: None,
    };
    let inputs = vec![
        InputSpec {
            name: "c/ids".into(),
            columns: vec!["c".into()],
            kind: InputKind::ClassId {
                num_classes: Some(4),
            },
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Ids {
                column: column.clone(),
                max_values: 1,
                check_range: true,
                prune_nonpositive_weights: false,
            }),
        },
        InputSpec {
            name: "c/weights".into(),
            columns: vec!["c".into()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Weights {
                column,
                max_values: 1,
            }),
        },
    ];
    let lay = |batch| Layout {
        arenas: Vec::new(),
        vars: Vec::new(),
        inputs: vec![
            InputLayout {
                name: "c/ids".into(),
                elem: ElemType::I32,
                per_example: 1,
                num_classes: Some(4),
                padding: true,
            },
            InputLayout {
                name: "c/weights".into(),
                elem: ElemType::F32,
                per_example: 1,
                num_classes: None,
                padding: false,
            },
        ],
        max_batch: batch,
    };
    let d = dir("feature_ids");
    let good = d.join("good.csv");
    std::fs::write(&good, "c,x\n3,0\n,0\n1,0\n").unwrap();
    let mut src = StreamingBatches::new(&csv_spec(vec![good]), &inputs, &lay(3), 3, 0, 0).unwrap();
    let layout = lay(3);
    let mut bufs = vec![
        AlignedBuf::zeroed(12).unwrap(),
        AlignedBuf::zeroed(12).unwrap(),
    ];
    let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, 3).unwrap();
    assert_eq!(src.next_batch(&mut b).unwrap(), 3);
    assert_eq!(bufs[0].i32s()[..3], [3, PADDING_ID, 1]);
    assert_eq!(bufs[1].f32s()[..3], [1.0, 0.0, 1.0]);
    let bad = d.join("bad.csv");
    std::fs::write(&bad, "c,x\n3,0\n,0\n4,0\n").unwrap();
    let mut src =
        StreamingBatches::new(&csv_spec(vec![bad.clone()]), &inputs, &lay(3), 3, 0, 0).unwrap();
    let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, 3).unwrap();
    let e = src.next_batch(&mut b).unwrap_err();
    assert_eq!(e.file, bad.display().to_string());
    assert_eq!(e.row, Some(4));
    assert_eq!(e.column.as_deref(), Some("c"));
    assert!(e.message.contains("4"), "{e}");
}

/// Feature columns stream as they load: every input of a model with hashed,
/// vocabulary (out-of-vocabulary buckets), identity, weighted and crossed
/// columns over cells that are sometimes empty, streamed in stream order
/// (the block copies of an unshuffled stream, the weights of unweighted
/// columns derived from their ids), equals the in-memory loader's rows, bit
/// for bit, batch after batch (the last one short).
#[test]
fn feature_columns_stream_as_they_load() {
    use specc_compiler::driver::{compile, Functions};
    use specc_grammar::SourceFile;
    use specc_runtime::data::{load, Source, Values};

    let d = dir("fc_stream");
    let csv = d.join("data.csv");
    let cities = ["a", "b", "c", "", "d"];
    let mut text = String::from("y,tag,city,score,n\n");
    let rows = 61;
    for i in 0..rows {
        let tag = if i % 7 == 3 {
            String::new()
        } else {
            format!("t{}", (i * 13) % 11)
        };
        // A weight for every present city (an empty city has none).
        let score = if i % 5 == 3 {
            String::new()
        } else {
            format!("{}", (i % 4) as f32 * 0.5)
        };
        let n = if i % 6 == 1 {
            String::new()
        } else {
            format!("{}", (i * 3) % 10)
        };
        text += &format!("{},{tag},{},{score},{n}\n", i % 2, cities[i % 5]);
    }
    std::fs::write(&csv, text).unwrap();
    let spec = format!(
        "model fc_stream\n\
         data csv(\"{}\")\n\
         label y: float\n\
         features {{\n\
         \x20 tag = categorical_column_with_hash_bucket(tag, 100)\n\
         \x20 city = categorical_column_with_vocabulary_list(city, [\"a\", \"b\"], num_oov_buckets = 2)\n\
         \x20 wcity = weighted_categorical_column(city, score)\n\
         \x20 n = categorical_column_with_identity(n, 10, default_value = 0)\n\
         \x20 cross = crossed_column([tag, city], hash_bucket_size = 50)\n\
         \x20 out = linear_model(tag, wcity, n, cross)\n}}\n\
         loss = sum(sigmoid_cross_entropy(y, reshape(out, [B])))\n\
         optimizer ftrl(learning_rate = 0.1)\n\
         train {{ batch = 8, steps = 1 }}\n",
        csv.display()
    );
    let program = compile(&SourceFile::new("fc_stream.spec", spec), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    let model = &program.model;
    let specs = model.input_specs();
    let session = program.session().unwrap();
    let layout = session.layout.clone();
    let batch = 8;
    let loaded = load(&Source::Csv { path: csv.clone() }, &specs).unwrap();
    assert_eq!(loaded.rows, rows);
    let mut stream =
        StreamingBatches::new(&csv_spec(vec![csv]), &specs, &layout, batch, 0, 1).unwrap();
    let mut bufs: Vec<AlignedBuf> = layout
        .inputs
        .iter()
        .map(|l| AlignedBuf::zeroed(batch * l.per_example * 4).unwrap())
        .collect();
    let mut row = 0;
    let mut weights_checked = 0;
    loop {
        let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, batch).unwrap();
        let n = stream.next_batch(&mut b).unwrap();
        if n == 0 {
            break;
        }
        for (l, buf) in layout.inputs.iter().zip(&bufs) {
            let data = loaded
                .inputs
                .iter()
                .find(|d| d.name == l.name)
                .unwrap_or_else(|| panic!("no loaded input {}", l.name));
            let w = l.per_example;
            let range = row * w..(row + n) * w;
            match &data.values {
                Values::F32(v) => {
                    let got: Vec<u32> = buf.f32s()[..n * w].iter().map(|x| x.to_bits()).collect();
                    let want: Vec<u32> = v[range].iter().map(|x| x.to_bits()).collect();
                    assert_eq!(got, want, "input {} rows {row}..{}", l.name, row + n);
                    weights_checked += usize::from(l.name.ends_with("weights"));
                }
                Values::I32(v) => {
                    assert_eq!(
                        &buf.i32s()[..n * w],
                        &v[range],
                        "input {} rows {row}..{}",
                        l.name,
                        row + n
                    );
                }
            }
        }
        row += n;
    }
    assert_eq!(row, rows);
    assert!(weights_checked >= 4, "the weights inputs were compared");
    std::fs::remove_dir_all(&d).ok();
}

/// A replica's share of a stream (`StreamSpec::shard`, for data-parallel
/// runs): whole files when there are as many as replicas, file `i` to
/// replica `i % n`; else every n-th record of each file, from the replica's
/// index (CSV rows and TFRecord records alike).
#[test]
fn replicas_read_their_own_shard() {
    use specc_runtime::pipeline::Shard;
    let d = dir("shard");
    write_csv(&d.join("p-0.csv"), 0..10, false);
    write_csv(&d.join("p-1.csv"), 10..25, false);
    write_csv(&d.join("p-2.csv"), 25..30, false);
    let read = |spec: &StreamSpec, index: usize, count: usize| {
        let mut spec = spec.clone();
        spec.shard = Shard { index, count };
        let mut src = source(&spec, 4, 0, 1);
        let got = batches(&mut src, 4, 100);
        check_rows(&got);
        a_column(&got)
    };
    // Three files, three replicas: a file each.
    let files = csv_spec(vec![d.join("p-*.csv")]);
    assert_eq!(read(&files, 0, 3), (0..10).collect::<Vec<_>>());
    assert_eq!(read(&files, 1, 3), (10..25).collect::<Vec<_>>());
    assert_eq!(read(&files, 2, 3), (25..30).collect::<Vec<_>>());
    // Two files of three (p-0, p-2) for replica 0 of 2.
    let two: Vec<usize> = (0..10).chain(25..30).collect();
    assert_eq!(read(&files, 0, 2), two);
    // One file, two replicas: alternate records.
    let one = csv_spec(vec![d.join("p-1.csv")]);
    assert_eq!(read(&one, 0, 2), (10..25).step_by(2).collect::<Vec<_>>());
    assert_eq!(read(&one, 1, 2), (11..25).step_by(2).collect::<Vec<_>>());
    let rec = d.join("r.tfrecord");
    write_tfrecord(&rec, 0..11, Compression::None);
    let mut tf = StreamSpec::new(
        Format::TfRecord {
            compression: Compression::None,
        },
        vec![rec],
    );
    tf.num_epochs = Some(1);
    assert_eq!(read(&tf, 2, 3), vec![2, 5, 8]);
    assert_eq!(read(&tf, 0, 3), vec![0, 3, 6, 9]);
}
