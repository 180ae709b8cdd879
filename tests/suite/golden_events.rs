//! Event files against TensorFlow's: `events.json` decodes the event file TF
//! wrote in `events/` (framing, `summary_iterator`, TensorBoard's
//! `EventAccumulator`), and specc's reader must read exactly that — every
//! record, tag, step, wall time, value and histogram field, all taken from
//! the JSON. The histograms TF computed from the recorded inputs are
//! recomputed bucket for bucket. A copy with one flipped byte fails where
//! TF's reader fails. Then specc's own files: written, read back, with TF's
//! bucket semantics.

use crate::common;

use std::path::{Path, PathBuf};

use common::{golden, golden_dir, int, num};
use serde_json::Value as Json;
use specc_runtime::io::tfrecord::RecordReader;
use specc_runtime::summary::event::{FILE_VERSION, SESSION_LOG_START};
use specc_runtime::summary::writer::{hostname, SOURCE_WRITER};
use specc_runtime::summary::{
    default_bucket_limits, event_files, read_events, Event, Histogram, HistogramProto,
    SummaryBatch, SummaryError, SummaryWriter, ValueKind, What,
};

fn events_json() -> Json {
    golden("events.json")
}

/// The golden event file named in `events.json` (its only file).
fn golden_event_file(j: &Json) -> PathBuf {
    let files = j["files"].as_object().expect("files");
    assert_eq!(files.len(), 1, "one event file");
    let name = files.keys().next().unwrap();
    golden_dir().join("events").join(name)
}

fn golden_events() -> (Json, Vec<Event>) {
    let j = events_json();
    let events = read_events(golden_event_file(&j)).unwrap_or_else(|e| panic!("{e}"));
    (j, events)
}

/// The events `summary_iterator` gave.
fn iterator_events(j: &Json) -> &Vec<Json> {
    let it = j["read_events_output"]["summary_iterator"]
        .as_array()
        .unwrap();
    assert_eq!(it.len(), 1);
    assert!(it[0]["error"].is_null());
    it[0]["events"].as_array().unwrap()
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn f64s(v: &Json) -> Vec<f64> {
    v.as_array().unwrap().iter().map(num).collect()
}

/// A double read from the JSON: Python prints the shortest repr, which
/// serde_json may parse one ulp off; four ulps of relative tolerance.
fn same(got: f64, want: f64) -> bool {
    got == want || (got - want).abs() <= 4.0 * f64::EPSILON * got.abs().max(want.abs())
}

fn assert_same(got: f64, want: f64, what: &str) {
    assert!(same(got, want), "{what}: {got:e} vs {want:e}");
}

fn assert_all_same(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_same(*g, *w, &format!("{what}[{k}]"));
    }
}

/// A histogram equals the JSON's, field by field: min, max, num, the bucket
/// limits and counts to the JSON's precision, the sums within a relative
/// 1e-12 of the scale `sqrt(sum_squares)`.
fn assert_histo_eq(got: &HistogramProto, want: &Json, what: &str) {
    assert_same(got.min, num(&want["min"]), &format!("{what}: min"));
    assert_same(got.max, num(&want["max"]), &format!("{what}: max"));
    assert_eq!(got.num, num(&want["num"]), "{what}: num");
    let scale = num(&want["sum_squares"]).sqrt().max(f64::MIN_POSITIVE);
    for (k, g) in [("sum", got.sum), ("sum_squares", got.sum_squares)] {
        let w = num(&want[k]);
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(scale),
            "{what}: {k} {g} vs {w}"
        );
    }
    assert_all_same(
        &got.bucket_limit,
        &f64s(&want["bucket_limit"]),
        &format!("{what}: bucket_limit"),
    );
    assert_eq!(got.bucket, f64s(&want["bucket"]), "{what}: bucket");
}

#[test]
fn the_golden_file_name_is_tfs_v1_name() {
    let j = events_json();
    let path = golden_event_file(&j);
    let name = path.file_name().unwrap().to_str().unwrap();
    let rest = name.strip_prefix("events.out.tfevents.").expect(name);
    let (secs, host) = rest.split_once('.').expect(name);
    assert_eq!(secs.len(), 10, "{name}: ten digits of seconds");
    // The seconds are the first event's (integral) wall time.
    let first = &iterator_events(&j)[0];
    assert_eq!(secs.parse::<f64>().unwrap(), num(&first["wall_time"]));
    assert!(!host.is_empty());
    // What specc's reader lists in the directory.
    let listed = event_files(golden_dir().join("events")).unwrap();
    let want: Vec<&str> = j["read_events_output"]["event_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    let got: Vec<&str> = listed
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn golden_framing_offsets_and_lengths() {
    let j = events_json();
    let path = golden_event_file(&j);
    let bytes = std::fs::read(&path).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(bytes.len() as i64, int(&j["files"][name]));
    let framing = &j["read_events_output"]["framing"][0];
    assert_eq!(bytes.len() as i64, int(&framing["size"]));
    let want = framing["records"].as_array().unwrap();
    let mut reader = RecordReader::new(&bytes[..]);
    let mut payload = Vec::new();
    for r in want {
        assert!(r["length_crc_ok"].as_bool().unwrap() && r["data_crc_ok"].as_bool().unwrap());
        let offset = reader.offset();
        assert_eq!(offset as i64, int(&r["offset"]), "record {}", r["index"]);
        assert!(reader.read_into(&mut payload).unwrap());
        assert_eq!(
            payload.len() as i64,
            int(&r["length"]),
            "record {}",
            r["index"]
        );
        let ev = Event::decode(&payload).unwrap();
        assert_eq!(ev.step, int(&r["step"]), "record {}", r["index"]);
        match (r["parsed_what"].as_str().unwrap(), &ev.what) {
            ("file_version", What::FileVersion(_)) => {}
            ("summary", What::Summary(s)) => {
                let tags: Vec<&str> = s.values.iter().map(|v| v.tag.as_str()).collect();
                let want: Vec<&str> = r["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v[0].as_str().unwrap())
                    .collect();
                assert_eq!(tags, want);
            }
            (w, got) => panic!("record {}: {w} vs {got:?}", r["index"]),
        }
    }
    assert!(!reader.read_into(&mut payload).unwrap(), "no more records");
}

#[test]
fn golden_events_read_as_summary_iterator_reads_them() {
    let (j, events) = golden_events();
    let want = iterator_events(&j);
    assert_eq!(events.len(), want.len());
    for (k, (ev, w)) in events.iter().zip(want).enumerate() {
        assert_same(
            ev.wall_time,
            num(&w["wall_time"]),
            &format!("event {k}: wall_time"),
        );
        assert_eq!(ev.step, int(&w["step"]), "event {k}: step");
        if let Some(writer) = w.get("source_metadata_writer") {
            assert_eq!(ev.source_writer.as_deref(), writer.as_str(), "event {k}");
        }
        match (w["what"].as_str().unwrap(), &ev.what) {
            ("file_version", What::FileVersion(v)) => {
                assert_eq!(v, w["file_version"].as_str().unwrap());
                assert_eq!(v, FILE_VERSION);
            }
            ("summary", What::Summary(s)) => {
                let wv = w["values"].as_array().unwrap();
                assert_eq!(s.values.len(), wv.len(), "event {k}");
                for (v, wv) in s.values.iter().zip(wv) {
                    let what = format!("event {k}, tag {}", v.tag);
                    assert_eq!(v.tag, wv["tag"].as_str().unwrap());
                    match (wv["kind"].as_str().unwrap(), &v.kind) {
                        ("simple_value", ValueKind::SimpleValue(x)) => {
                            assert_eq!(*x, num(&wv["value"]) as f32, "{what}")
                        }
                        ("histo", ValueKind::Histo(h)) => assert_histo_eq(h, &wv["histo"], &what),
                        ("image", ValueKind::Image(i)) => {
                            let wi = &wv["image"];
                            assert_eq!(i64::from(i.height), int(&wi["height"]), "{what}");
                            assert_eq!(i64::from(i.width), int(&wi["width"]), "{what}");
                            assert_eq!(i64::from(i.colorspace), int(&wi["colorspace"]), "{what}");
                            assert_eq!(i.encoded.len() as i64, int(&wi["encoded_length"]));
                            assert_eq!(base64(&i.encoded), wi["encoded_base64"].as_str().unwrap());
                        }
                        ("tensor", ValueKind::Tensor(t)) => {
                            assert_same(t.scalar().unwrap(), num(&wv["value"]), &what)
                        }
                        (kind, got) => panic!("{what}: {kind} vs {got:?}"),
                    }
                }
            }
            (what, got) => panic!("event {k}: {what} vs {got:?}"),
        }
    }
}

#[test]
fn golden_scalars_read_as_event_accumulator_reads_them() {
    let (j, events) = golden_events();
    let acc = &j["read_events_output"]["event_accumulator"][0];
    let tags = acc["tags"]["scalars"].as_array().unwrap();
    assert!(!tags.is_empty());
    for tag in tags {
        let tag = tag.as_str().unwrap();
        let got: Vec<(f64, i64, f64)> = events
            .iter()
            .filter_map(|e| match &e.what {
                What::Summary(s) => Some((e, s)),
                _ => None,
            })
            .flat_map(|(e, s)| {
                s.values
                    .iter()
                    .filter(|v| v.tag == tag)
                    .filter_map(move |v| Some((e.wall_time, e.step, v.as_scalar()?)))
            })
            .collect();
        let want = acc["scalars"][tag].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "scalars of {tag}");
        for ((wall, step, value), w) in got.iter().zip(want) {
            assert_same(*wall, num(&w["wall_time"]), "wall_time");
            assert_eq!(*step, int(&w["step"]));
            // A float32 value: exact after rounding the JSON's to float32.
            assert_eq!(
                *value,
                f64::from(num(&w["value"]) as f32),
                "{tag} at {step}"
            );
        }
    }
}

#[test]
fn golden_histograms_read_as_event_accumulator_reads_them() {
    let (j, events) = golden_events();
    let acc = &j["read_events_output"]["event_accumulator"][0];
    let tags = acc["tags"]["histograms"].as_array().unwrap();
    assert!(!tags.is_empty());
    for tag in tags {
        let tag = tag.as_str().unwrap();
        let got: Vec<(f64, i64, &HistogramProto)> = events
            .iter()
            .filter_map(|e| match &e.what {
                What::Summary(s) => Some((e, s)),
                _ => None,
            })
            .flat_map(|(e, s)| {
                s.values
                    .iter()
                    .filter(|v| v.tag == tag)
                    .filter_map(move |v| match &v.kind {
                        ValueKind::Histo(h) => Some((e.wall_time, e.step, h)),
                        _ => None,
                    })
            })
            .collect();
        let want = acc["histograms"][tag].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "histograms of {tag}");
        for ((wall, step, h), w) in got.iter().zip(want) {
            assert_same(*wall, num(&w["wall_time"]), "wall_time");
            assert_eq!(*step, int(&w["step"]));
            assert_histo_eq(h, &w["histo"], &format!("{tag} at step {step}"));
        }
    }
}

/// The recorded inputs of `tf.compat.v1.summary.histogram`, bucketed by
/// specc, equal TF's histograms at the same steps bucket for bucket.
#[test]
fn histograms_of_the_recorded_inputs_equal_tfs() {
    let (j, events) = golden_events();
    let acc = &j["read_events_output"]["event_accumulator"][0];
    let tags = acc["tags"]["histograms"].as_array().unwrap();
    assert_eq!(
        tags.len(),
        1,
        "one histogram tag, the one of histogram_input"
    );
    let tag = tags[0].as_str().unwrap();
    let mut checked = 0;
    for w in j["written"].as_array().unwrap() {
        let Some(input) = w.get("histogram_input") else {
            continue;
        };
        let step = int(&w["step"]);
        let mut h = Histogram::new();
        let values: Vec<f32> = f64s(input).iter().map(|&x| x as f32).collect();
        h.add_finite(&values).unwrap();
        let want = events
            .iter()
            .filter(|e| e.step == step)
            .find_map(|e| match &e.what {
                What::Summary(s) => s.values.iter().find(|v| v.tag == tag),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no histogram at step {step}"));
        let ValueKind::Histo(want) = &want.kind else {
            panic!("not a histogram")
        };
        let got = h.to_proto();
        assert_eq!(got.bucket_limit, want.bucket_limit, "step {step}: limits");
        assert_eq!(got.bucket, want.bucket, "step {step}: counts");
        assert_eq!((got.min, got.max, got.num), (want.min, want.max, want.num));
        assert_eq!(got.sum, want.sum, "step {step}: sum (float64, in order)");
        assert_eq!(
            got.sum_squares, want.sum_squares,
            "step {step}: sum_squares"
        );
        checked += 1;
    }
    assert!(checked > 0);
}

/// Every limit TF wrote is one of specc's default limits, bit for bit.
#[test]
fn golden_bucket_limits_are_tfs_default_limits() {
    let (_, events) = golden_events();
    let limits = default_bucket_limits();
    let mut seen = 0;
    for e in &events {
        if let What::Summary(s) = &e.what {
            for v in &s.values {
                if let ValueKind::Histo(h) = &v.kind {
                    for l in &h.bucket_limit {
                        assert!(limits.contains(l), "{}: limit {l:e}", v.tag);
                        seen += 1;
                    }
                }
            }
        }
    }
    assert!(seen > 0);
}

/// The recorded scalars are the ones read back at their steps.
#[test]
fn scalars_of_the_recorded_values_equal_tfs() {
    let (j, events) = golden_events();
    let acc = &j["read_events_output"]["event_accumulator"][0];
    let tags = acc["tags"]["scalars"].as_array().unwrap();
    assert_eq!(tags.len(), 1);
    let tag = tags[0].as_str().unwrap();
    let mut checked = 0;
    for w in j["written"].as_array().unwrap() {
        let Some(key) = w.as_object().unwrap().keys().find(|k| k.as_str() == tag) else {
            continue;
        };
        let step = int(&w["step"]);
        let got = events
            .iter()
            .filter(|e| e.step == step)
            .find_map(|e| match &e.what {
                What::Summary(s) => s.values.iter().find(|v| v.tag == tag),
                _ => None,
            })
            .and_then(|v| v.as_scalar());
        assert_eq!(got, Some(f64::from(num(&w[key]) as f32)), "step {step}");
        checked += 1;
    }
    assert!(checked > 0);
}

/// A copy with one data byte of a record flipped: the events before it are
/// read, then an error names the file, the record and its offset, as TF's
/// readers report it.
#[test]
fn a_flipped_byte_stops_reading_at_the_record_tf_names() {
    let j = events_json();
    let c = &j["corrupted_copy_self_test"];
    let problem = c["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["reader"] == "framing")
        .expect("a framing problem");
    let index = int(&problem["record_index"]) as usize;
    let offset = int(&problem["offset"]) as usize;
    let mut bytes = std::fs::read(golden_event_file(&j)).unwrap();
    bytes[offset + 12] ^= 0x40;
    let dir = temp_dir("corrupted");
    let path = dir.join(golden_event_file(&j).file_name().unwrap());
    std::fs::write(&path, &bytes).unwrap();
    let mut ok = 0;
    let mut error = None;
    for r in specc_runtime::summary::EventFileReader::open(&path).unwrap() {
        match r {
            Ok(_) => ok += 1,
            Err(e) => error = Some(e),
        }
    }
    let read_by_tf = c["summary_iterator"][0]["events"].as_array().unwrap().len();
    assert_eq!(ok, read_by_tf);
    let e = error.expect("an error");
    assert_eq!(e.record(), Some((index, offset as u64)));
    assert_eq!(e.path(), path);
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("data CRC"), "{text}");
    assert!(matches!(e, SummaryError::Record { .. }));
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "specc-summary-golden-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The bucket semantics TF's histograms have (visible in the golden ones):
/// bucket `i` counts the values in `[limit[i-1], limit[i])`, the first
/// bucket from -inf; runs of empty buckets are collapsed, so no two
/// neighbours are both empty; subnormal inputs count as zeros.
fn assert_tf_bucket_semantics(h: &HistogramProto, values: &[f32], what: &str) {
    assert_eq!(h.bucket_limit.len(), h.bucket.len(), "{what}");
    // TF's kernels flush subnormal inputs to zero.
    let flushed = |v: f32| if v.is_subnormal() { 0.0 } else { f64::from(v) };
    let mut lower = f64::NEG_INFINITY;
    for (k, (&limit, &count)) in h.bucket_limit.iter().zip(&h.bucket).enumerate() {
        let n = values
            .iter()
            .filter(|&&v| flushed(v) >= lower && flushed(v) < limit)
            .count();
        assert_eq!(count, n as f64, "{what}: bucket {k} [{lower:e}, {limit:e})");
        if k > 0 {
            assert!(
                count > 0.0 || h.bucket[k - 1] > 0.0,
                "{what}: two empty buckets at {k}"
            );
        }
        lower = limit;
    }
    assert_eq!(h.num, values.len() as f64, "{what}");
    let sum: f64 = values.iter().map(|&v| flushed(v)).sum();
    assert_eq!(h.sum, sum, "{what}");
    if !values.is_empty() {
        let min = values.iter().fold(f64::INFINITY, |a, &b| a.min(flushed(b)));
        let max = values
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| a.max(flushed(b)));
        assert_eq!((h.min, h.max), (min, max), "{what}");
    } else {
        assert_eq!((h.min, h.max), (f64::MAX, -f64::MAX), "{what}");
        assert_eq!(h.bucket_limit, [f64::MAX]);
    }
}

/// The distributions of the round-trip test.
fn distributions() -> Vec<(&'static str, Vec<f32>)> {
    let mut ramp: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.013).collect();
    ramp.push(0.0);
    vec![
        ("empty", vec![]),
        ("constant", vec![0.25; 17]),
        ("zeros", vec![0.0; 5]),
        ("negative", vec![-3.0, -2.5, -1e-3, -7.0, -7.0]),
        ("huge", vec![1e30, -1e30, f32::MAX, -f32::MAX, 3e38]),
        ("tiny", vec![1e-13, -1e-13, 1e-12, -1e-12, 1e-45, 0.0]),
        ("ramp", ramp),
    ]
}

#[test]
fn our_files_read_back_with_tfs_layout_and_bucket_semantics() {
    let dir = temp_dir("roundtrip");
    let w = SummaryWriter::create(&dir).unwrap();
    let name = w.path().file_name().unwrap().to_str().unwrap().to_string();
    let rest = name.strip_prefix("events.out.tfevents.").expect(&name);
    let (secs, host) = rest.split_once('.').unwrap();
    assert_eq!(secs.len(), 10);
    assert_eq!(host, hostname());
    w.add_session_start(1).unwrap();
    let mut batch = SummaryBatch::new(1)
        .scalar("loss", 0.5)
        .scalar("learning_rate", 1e-3);
    for (tag, values) in distributions() {
        batch = batch.histogram(tag, &values);
    }
    w.add(batch).unwrap();
    w.add_scalars(7, &[("loss", -2.0), ("global_step/sec", 1234.5)])
        .unwrap();
    w.close().unwrap();
    assert!(w.add_scalars(8, &[("loss", 0.0)]).is_err(), "closed");

    assert_eq!(event_files(&dir).unwrap(), [w.path().to_path_buf()]);
    let events = read_events(w.path()).unwrap();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0].what, What::FileVersion(FILE_VERSION.into()));
    assert_eq!(events[0].source_writer.as_deref(), Some(SOURCE_WRITER));
    assert_eq!(events[0].wall_time, secs.parse::<f64>().unwrap());
    match &events[1].what {
        What::SessionLog(l) => assert_eq!(l.status, SESSION_LOG_START),
        other => panic!("{other:?}"),
    }
    assert_eq!(events[1].step, 1);
    let What::Summary(s) = &events[2].what else {
        panic!("{:?}", events[2])
    };
    assert_eq!(events[2].step, 1);
    assert_eq!(s.values[0].as_scalar(), Some(0.5));
    assert_eq!(s.values[1].as_scalar(), Some(f64::from(1e-3f32)));
    for ((tag, values), v) in distributions().iter().zip(&s.values[2..]) {
        assert_eq!(&v.tag, tag);
        let ValueKind::Histo(h) = &v.kind else {
            panic!("{tag}: {:?}", v.kind)
        };
        assert_tf_bucket_semantics(h, values, tag);
        let mut want = Histogram::new();
        want.add_finite(values).unwrap();
        assert_eq!(h, &want.to_proto(), "{tag}");
    }
    let What::Summary(s) = &events[3].what else {
        panic!("{:?}", events[3])
    };
    assert_eq!(events[3].step, 7);
    let got: Vec<(&str, f64)> = s
        .values
        .iter()
        .map(|v| (v.tag.as_str(), v.as_scalar().unwrap()))
        .collect();
    assert_eq!(got, [("loss", -2.0), ("global_step/sec", 1234.5)]);
    assert!(
        events[1].wall_time <= events[2].wall_time && events[2].wall_time <= events[3].wall_time
    );
}

/// The golden inputs written by specc read back as TF's histograms.
#[test]
fn our_histograms_of_the_recorded_inputs_read_back_as_tfs() {
    let (j, events) = golden_events();
    let dir = temp_dir("recorded");
    let w = SummaryWriter::create(&dir).unwrap();
    let tag = j["read_events_output"]["event_accumulator"][0]["tags"]["histograms"][0]
        .as_str()
        .unwrap();
    let mut steps = Vec::new();
    for r in j["written"].as_array().unwrap() {
        if let Some(input) = r.get("histogram_input") {
            let values: Vec<f32> = f64s(input).iter().map(|&x| x as f32).collect();
            let step = int(&r["step"]);
            w.add(SummaryBatch::new(step).histogram(tag, &values))
                .unwrap();
            steps.push(step);
        }
    }
    w.close().unwrap();
    let ours = read_events(w.path()).unwrap();
    for step in steps {
        let find = |evs: &[Event]| -> HistogramProto {
            evs.iter()
                .filter(|e| e.step == step)
                .find_map(|e| match &e.what {
                    What::Summary(s) => s.values.iter().find_map(|v| match &v.kind {
                        ValueKind::Histo(h) if v.tag == tag => Some(h.clone()),
                        _ => None,
                    }),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no histogram at step {step}"))
        };
        assert_eq!(find(&ours), find(&events), "step {step}");
    }
}

/// Bad files are errors naming the file: missing, truncated, not an event.
#[test]
fn bad_event_files_are_errors_naming_the_file() {
    let dir = temp_dir("bad");
    let missing = dir.join("events.out.tfevents.0000000000.none");
    let e = read_events(&missing).unwrap_err();
    assert!(
        e.to_string().contains(&missing.display().to_string()),
        "{e}"
    );
    let j = events_json();
    let bytes = std::fs::read(golden_event_file(&j)).unwrap();
    let cut = dir.join("cut");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let e = read_events(&cut).unwrap_err();
    let records = j["read_events_output"]["framing"][0]["records"]
        .as_array()
        .unwrap();
    let last = records.last().unwrap();
    assert_eq!(
        e.record(),
        Some((int(&last["index"]) as usize, int(&last["offset"]) as u64))
    );
    assert!(e.to_string().contains("truncated"), "{e}");
    let junk = dir.join("junk");
    let mut f = Vec::new();
    specc_runtime::io::tfrecord::write_record(&mut f, &[0x0b, 0x01]).unwrap();
    std::fs::write(&junk, &f).unwrap();
    let e = read_events(&junk).unwrap_err();
    assert!(matches!(e, SummaryError::Decode { index: 0, .. }), "{e}");
    assert!(Path::new(e.path()) == junk);
}

/// Two writers of one directory in the same second write two files (TF's
/// name, then `.1`), never one over the other.
#[test]
fn writers_never_overwrite_each_other() {
    let dir = temp_dir("two");
    let a = SummaryWriter::create(&dir).unwrap();
    let b = SummaryWriter::create(&dir).unwrap();
    assert_ne!(a.path(), b.path());
    a.add_scalars(1, &[("loss", 1.0)]).unwrap();
    b.add_scalars(2, &[("loss", 2.0)]).unwrap();
    a.close().unwrap();
    b.close().unwrap();
    assert_eq!(event_files(&dir).unwrap().len(), 2);
    for (w, step) in [(&a, 1), (&b, 2)] {
        let events = read_events(w.path()).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].step, step);
    }
}
