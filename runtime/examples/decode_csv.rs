//! Runs specc's `tf.io.decode_csv` over records from a JSON description,
//! for the interop tests with TensorFlow (`interop/test_decode_csv.py`).
//!
//! `decode_csv SPEC.json`, where SPEC.json is `{"record_defaults": [{"type":
//! "float32" | "float64" | "int32" | "int64" | "string", "default": VALUE or
//! null (required)}], "field_delim": ",", "use_quote_delim": true,
//! "na_value": "", "select_cols": null or [..], "records": ["..."]}`.
//! Prints one JSON array: per record `{"ok": [values]}` (floats as numbers or
//! "nan"/"inf"/"-inf", strings as hex) or `{"error": message}`. Exit 1 with a
//! message when the description itself is bad.

use std::process::ExitCode;

use serde_json::{json, Value as Json};
use specc_runtime::io::csv::{CsvDecoder, CsvOptions, CsvType, RecordDefault, Value};

fn default(d: &Json) -> Result<RecordDefault, String> {
    let t = match d["type"].as_str() {
        Some("float32") => CsvType::Float32,
        Some("float64") => CsvType::Float64,
        Some("int32") => CsvType::Int32,
        Some("int64") => CsvType::Int64,
        Some("string") => CsvType::String,
        other => return Err(format!("bad type {other:?}")),
    };
    let v = &d["default"];
    if v.is_null() {
        return Ok(RecordDefault::Required(t));
    }
    let bad = || format!("bad default {v} for {}", t.tf_name());
    Ok(match t {
        CsvType::Float32 => RecordDefault::Float32(v.as_f64().ok_or_else(bad)? as f32),
        CsvType::Float64 => RecordDefault::Float64(v.as_f64().ok_or_else(bad)?),
        CsvType::Int32 => RecordDefault::Int32(
            v.as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or_else(bad)?,
        ),
        CsvType::Int64 => RecordDefault::Int64(v.as_i64().ok_or_else(bad)?),
        CsvType::String => RecordDefault::String(v.as_str().ok_or_else(bad)?.as_bytes().to_vec()),
    })
}

fn float(x: f64) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

fn run() -> Result<(), String> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: decode_csv SPEC.json")?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let spec: Json = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut opts = CsvOptions::new(
        spec["record_defaults"]
            .as_array()
            .ok_or("no record_defaults")?
            .iter()
            .map(default)
            .collect::<Result<_, _>>()?,
    );
    if let Some(d) = spec["field_delim"].as_str() {
        opts.field_delim = *d.as_bytes().first().ok_or("empty field_delim")?;
    }
    if let Some(q) = spec["use_quote_delim"].as_bool() {
        opts.use_quote_delim = q;
    }
    if let Some(na) = spec["na_value"].as_str() {
        opts.na_value = na.as_bytes().to_vec();
    }
    if let Some(cols) = spec["select_cols"].as_array() {
        opts.select_cols = Some(
            cols.iter()
                .map(|c| c.as_u64().map(|c| c as usize).ok_or("bad select_cols"))
                .collect::<Result<_, _>>()?,
        );
    }
    let mut dec = CsvDecoder::new(opts).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for r in spec["records"].as_array().ok_or("no records")? {
        let r = r.as_str().ok_or("a record is not a string")?;
        out.push(match dec.decode(r.as_bytes()) {
            Ok(rec) => json!({"ok": rec
                .iter()
                .map(|v| match v {
                    Value::Float32(x) => float(f64::from(x)),
                    Value::Float64(x) => float(x),
                    Value::Int32(x) => json!(x),
                    Value::Int64(x) => json!(x),
                    Value::String(s) => json!(s.iter().map(|b| format!("{b:02x}")).collect::<String>()),
                    Value::Missing => Json::Null,
                })
                .collect::<Vec<_>>()}),
            Err(e) => json!({"error": e.to_string()}),
        });
    }
    println!("{}", Json::Array(out));
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
