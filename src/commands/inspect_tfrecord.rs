//! `specc inspect FILE.tfrecord`: what a TFRecord file of `tf.train.Example`s
//! holds — the compression (found from the bytes: gzip, zlib or none), the
//! record count, and per feature its kind (`bytes_list`, `float_list`,
//! `int64_list`), how many records have it and how many values a record
//! gives (fixed or variable length: what a parse spec needs).
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
use specc_runtime::io::example::{Example, Feature};
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
    loop {
        let more = reader
            .read_into(&mut record)
            .map_err(|e| format!("{}: record {count}: {e}", path.display()))?;
        if !more {
            break;
        }
        let ex = Example::decode(&record, count).map_err(|e| format!("{}: {e}", path.display()))?;
        for (name, f) in &ex.features {
            let (k, len) = kind(f);
            let s = features.entry(name.clone()).or_default();
            if !s.kinds.contains(&k) {
                s.kinds.push(k);
            }
            s.min_len = if s.records == 0 {
                len
            } else {
                s.min_len.min(len)
            };
            s.max_len = s.max_len.max(len);
            s.records += 1;
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
        let out = json!({"file": path.to_string_lossy(), "compression": compression_name,
                         "records": count, "features": feats});
        println!("{out}");
        return Ok(());
    }
    println!(
        "{}: {count} records of tf.train.Example (compression: {compression_name})",
        path.display()
    );
    let width = features.keys().map(String::len).max().unwrap_or(0);
    for (n, s) in &features {
        let values = if s.min_len == s.max_len {
            format!("{} values", s.min_len)
        } else {
            format!("{} to {} values", s.min_len, s.max_len)
        };
        println!(
            "{n:width$}  {:10}  in {} of {count} records, {values}",
            s.kinds.join("|"),
            s.records
        );
    }
    Ok(())
}
