//! `specc inspect FILE.tfrecord`: what a TFRecord file of `tf.train.Example`s
//! holds — the compression (found from the bytes: gzip, zlib or none), the
//! record count, and per feature its kind (`bytes_list`, `float_list`,
//! `int64_list`), how many records have it and how many values a record
//! gives (fixed or variable length: what a parse spec needs). A file whose
//! records have feature lists is one of `tf.train.SequenceExample`s (an
//! Example never has them, and reads as a SequenceExample's context): its
//! context features as above, and per feature list its kinds, how many
//! records have it, their steps and the values of a step.
//!
//! Owns: recognising a TFRecord file ([`looks_like_tfrecord`]) and the
//! summary. Invariants: the file is streamed record by record (memory does
//! not grow with it); every CRC is checked; a bad record is an error naming
//! the file and the record.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::json;
use specc_runtime::io::example::{Example, Feature, SequenceExample};
use specc_runtime::io::tfrecord::{open_reader, Compression};

use crate::Failure;

pub use specc::run::data::looks_like_tfrecord;

/// What the records say of one feature.
#[derive(Default)]
struct FeatureStats {
    kinds: Vec<&'static str>,
    records: u64,
    min_len: usize,
    max_len: usize,
}

impl FeatureStats {
    /// One more record (or step) with `len` values of kind `k`.
    fn add(&mut self, k: &'static str, len: usize) {
        if !self.kinds.contains(&k) {
            self.kinds.push(k);
        }
        self.min_len = if self.records == 0 {
            len
        } else {
            self.min_len.min(len)
        };
        self.max_len = self.max_len.max(len);
        self.records += 1;
    }
}

/// `n` values, or `a to b values`.
fn range(s: &FeatureStats, what: &str) -> String {
    if s.min_len == s.max_len {
        format!("{} {what}", s.min_len)
    } else {
        format!("{} to {} {what}", s.min_len, s.max_len)
    }
}

fn kind(f: &Feature) -> (&'static str, usize) {
    match f {
        Feature::Unset => ("unset", 0),
        Feature::BytesList(v) => ("bytes_list", v.len()),
        Feature::FloatList(v) => ("float_list", v.len()),
        Feature::Int64List(v) => ("int64_list", v.len()),
    }
}

pub fn run(path: &Path, compression: Compression, json_out: bool) -> Result<(), Failure> {
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader = open_reader(BufReader::new(file), compression);
    let mut record = Vec::new();
    let mut count = 0usize;
    let mut features: BTreeMap<String, FeatureStats> = BTreeMap::new();
    // Per feature list: its kinds and values a step, and its steps.
    let mut lists: BTreeMap<String, (FeatureStats, FeatureStats)> = BTreeMap::new();
    loop {
        let more = reader
            .read_into(&mut record)
            .map_err(|e| format!("{}: record {count}: {e}", path.display()))?;
        if !more {
            break;
        }
        let ex = match SequenceExample::decode(&record, count) {
            Ok(ex) => ex,
            Err(_) => {
                let ex = Example::decode(&record, count)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                SequenceExample {
                    context: ex.features,
                    feature_lists: BTreeMap::new(),
                }
            }
        };
        for (name, f) in &ex.context {
            let (k, len) = kind(f);
            features.entry(name.clone()).or_default().add(k, len);
        }
        for (name, list) in &ex.feature_lists {
            let (steps, values) = lists.entry(name.clone()).or_default();
            steps.add("steps", list.len());
            for f in list {
                let (k, len) = kind(f);
                values.add(k, len);
            }
        }
        count += 1;
    }
    let compression_name = match compression {
        Compression::None => "none",
        Compression::Gzip => "GZIP",
        Compression::Zlib => "ZLIB",
    };
    if json_out {
        let feats: Vec<_> = features
            .iter()
            .map(|(n, s)| {
                json!({"name": n, "kinds": s.kinds, "records": s.records,
                       "min_values": s.min_len, "max_values": s.max_len})
            })
            .collect();
        let mut out = json!({"file": path.to_string_lossy(), "compression": compression_name,
                         "records": count, "features": feats});
        if !lists.is_empty() {
            out["message"] = json!("tf.train.SequenceExample");
            out["feature_lists"] = lists
                .iter()
                .map(|(n, (steps, values))| {
                    json!({"name": n, "kinds": values.kinds, "records": steps.records,
                           "min_steps": steps.min_len, "max_steps": steps.max_len,
                           "min_values": values.min_len, "max_values": values.max_len})
                })
                .collect();
        }
        println!("{out}");
        return Ok(());
    }
    let message = if lists.is_empty() {
        "tf.train.Example"
    } else {
        "tf.train.SequenceExample"
    };
    println!(
        "{}: {count} records of {message} (compression: {compression_name})",
        path.display()
    );
    let width = features
        .keys()
        .chain(lists.keys())
        .map(String::len)
        .max()
        .unwrap_or(0);
    if !lists.is_empty() && !features.is_empty() {
        println!("context:");
    }
    for (n, s) in &features {
        println!(
            "{n:width$}  {:10}  in {} of {count} records, {}",
            s.kinds.join("|"),
            s.records,
            range(s, "values")
        );
    }
    if !lists.is_empty() {
        println!("feature lists:");
    }
    for (n, (steps, values)) in &lists {
        println!(
            "{n:width$}  {:10}  in {} of {count} records, {}, {} a step",
            values.kinds.join("|"),
            steps.records,
            range(steps, "steps"),
            range(values, "values")
        );
    }
    Ok(())
}
