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

pub(super) fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("pipeline")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `x` (f32, columns a, b) and `label` (class id < 3).
pub(super) fn inputs() -> Vec<InputSpec> {
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

pub(super) fn layout(max_batch: usize) -> Layout {
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
        sharded: Vec::new(),
    }
}

/// Row `i` of the test data: `a = i`, `b = i / 4`, `y = i % 3`.
pub(super) fn row(i: usize) -> (f32, f32, i32) {
    (i as f32, i as f32 / 4.0, (i % 3) as i32)
}

/// A CSV of rows `rows` (columns in the order `b, y, a`: the header decides).
pub(super) fn write_csv(path: &Path, rows: std::ops::Range<usize>, gzip: bool) {
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
pub(super) fn batches(
    source: &mut StreamingBatches,
    batch: usize,
    limit: usize,
) -> Vec<Vec<(f32, f32, i32)>> {
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

pub(super) fn source(
    spec: &StreamSpec,
    batch: usize,
    shuffle: usize,
    seed: u64,
) -> StreamingBatches {
    StreamingBatches::new(spec, &inputs(), &layout(batch), batch, shuffle, seed).unwrap()
}

pub(super) fn csv_spec(paths: Vec<PathBuf>) -> StreamSpec {
    let mut s = StreamSpec::new(Format::csv(), paths);
    s.num_epochs = Some(1);
    s
}

pub(super) fn a_column(got: &[Vec<(f32, f32, i32)>]) -> Vec<usize> {
    got.iter().flatten().map(|r| r.0 as usize).collect()
}

/// Every row delivered is the row its `a` names.
pub(super) fn check_rows(got: &[Vec<(f32, f32, i32)>]) {
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

pub(super) fn write_tfrecord(path: &Path, rows: std::ops::Range<usize>, compression: Compression) {
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
        Format::TfRecord {
            compression,
            feature_lists: None,
        },
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
            feature_lists: None,
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

pub(super) fn resume_case(spec: &StreamSpec, shuffle: usize, stop: usize, total: usize) {
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

mod csv_options;
mod runs;
