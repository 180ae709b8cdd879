//! Writes a TFRecord file of `tf.train.Example`s from a JSON description, for
//! the interop tests with TensorFlow (`interop/test_tfrecord.py`).
//!
//! `write_examples SPEC.json`, where SPEC.json is
//! `{"path": FILE, "compression": "" | "GZIP" | "ZLIB", "examples": [{NAME:
//! {"kind": "float_list" | "int64_list" | "bytes_list", "values": [...]}}]}`
//! (floats as JSON numbers, float32-representable, or "nan", "inf", "-inf";
//! bytes as hex strings). Exit 1 with a message on any error.

use std::process::ExitCode;

use serde_json::Value;
use specc_runtime::io::example::{Example, Feature};
use specc_runtime::io::tfrecord::{Compression, RecordWriter};

fn float(v: &Value) -> Result<f32, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(|x| x as f32)
            .ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f32::NAN),
            "inf" => Ok(f32::INFINITY),
            "-inf" => Ok(f32::NEG_INFINITY),
            _ => Err(format!("bad number {s:?}")),
        },
        other => Err(format!("expected a number, got {other}")),
    }
}

fn hex(v: &Value) -> Result<Vec<u8>, String> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("expected a hex string, got {v}"))?;
    if s.len() % 2 != 0 {
        return Err(format!("odd-length hex string {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex string {s:?}"))
        })
        .collect()
}

fn feature(name: &str, f: &Value) -> Result<Feature, String> {
    let values = f["values"]
        .as_array()
        .ok_or_else(|| format!("feature {name}: no values array"))?;
    let err = |e: String| format!("feature {name}: {e}");
    Ok(match f["kind"].as_str() {
        Some("float_list") => Feature::FloatList(
            values
                .iter()
                .map(float)
                .collect::<Result<_, _>>()
                .map_err(err)?,
        ),
        Some("int64_list") => Feature::Int64List(
            values
                .iter()
                .map(|v| v.as_i64().ok_or_else(|| format!("bad int64 {v}")))
                .collect::<Result<_, _>>()
                .map_err(err)?,
        ),
        Some("bytes_list") => Feature::BytesList(
            values
                .iter()
                .map(hex)
                .collect::<Result<_, _>>()
                .map_err(err)?,
        ),
        other => return Err(format!("feature {name}: unknown kind {other:?}")),
    })
}

fn run(spec_path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(spec_path).map_err(|e| format!("{spec_path}: {e}"))?;
    let spec: Value = serde_json::from_str(&text).map_err(|e| format!("{spec_path}: {e}"))?;
    let path = spec["path"]
        .as_str()
        .ok_or_else(|| format!("{spec_path}: no path"))?;
    let name = spec["compression"].as_str().unwrap_or("");
    let compression = Compression::from_tf_name(name)
        .ok_or_else(|| format!("{spec_path}: unknown compression {name:?}"))?;
    let examples = spec["examples"]
        .as_array()
        .ok_or_else(|| format!("{spec_path}: no examples array"))?;
    let file = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut w = RecordWriter::new(std::io::BufWriter::new(file), compression);
    for (i, ex) in examples.iter().enumerate() {
        let obj = ex
            .as_object()
            .ok_or_else(|| format!("{spec_path}: example {i} is not an object"))?;
        let mut example = Example::default();
        for (k, f) in obj {
            let f = feature(k, f).map_err(|e| format!("{spec_path}: example {i}: {e}"))?;
            example.features.insert(k.clone(), f);
        }
        w.write(&example.encode())
            .map_err(|e| format!("{path}: {e}"))?;
    }
    w.finish().map_err(|e| format!("{path}: {e}"))?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, spec] = &args[..] else {
        eprintln!("usage: write_examples SPEC.json");
        return ExitCode::FAILURE;
    };
    match run(spec) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("write_examples: {e}");
            ExitCode::FAILURE
        }
    }
}
