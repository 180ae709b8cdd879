//! Runs specc's `tf.io.parse_example` (or `parse_single_example` of each
//! record) over a TFRecord file of Examples, or `parse_sequence_example`
//! (`parse_single_sequence_example`) over one of SequenceExamples, for the
//! interop tests with TensorFlow (`interop/test_parse_example.py`,
//! `interop/test_sequence_example.py`).
//!
//! `parse_examples SPEC.json`, where SPEC.json is `{"path": FILE,
//! "compression": "" | "GZIP" | "ZLIB", "single": false, "spec": {NAME:
//! {"kind": "fixed", "shape": [..], "dtype": "float32" | "int64" | "string",
//! "default": [..] or null} | {"kind": "varlen", "dtype": ..} | {"kind":
//! "sparse", "index_keys": [..], "value_key": KEY, "dtype": .., "size": [..],
//! "already_sorted": bool} | {"kind": "fixed_sequence", "shape": [..], "dtype":
//! .., "allow_missing": bool}}}`. Prints one JSON value: `{"ok": RESULT}` or
//! `{"ok": [RESULT per record]}` with `"single"`, where RESULT maps each
//! name to `{"shape", "values"}` (dense) or `{"indices", "values",
//! "dense_shape"}` (sparse); or `{"error": message}`. With `"context"` and
//! `"sequence"` specs instead of `"spec"`, the records are SequenceExamples
//! and RESULT is `{"context": .., "feature_lists": .., "lengths": {NAME:
//! [steps per record]}}` (`lengths` only without `"single"`). Floats are numbers
//! (exact) or "nan"/"inf"/"-inf", bytes hex. Exit 1 when the description
//! itself is bad.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value as Json};
use specc_runtime::io::example::{
    parse_example, parse_sequence_example, parse_single_example, parse_single_sequence_example,
    read_examples, read_sequence_examples, DType, FeatureSpec, Parsed, Values,
};
use specc_runtime::io::tfrecord::Compression;

fn dtype(v: &Json) -> Result<DType, String> {
    v.as_str()
        .and_then(DType::from_tf_name)
        .ok_or_else(|| format!("bad dtype {v}"))
}

fn usizes(v: &Json) -> Result<Vec<usize>, String> {
    v.as_array()
        .ok_or_else(|| format!("expected a list, got {v}"))?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or(format!("bad size {d}"))
        })
        .collect()
}

fn values(t: DType, v: &Json) -> Result<Values, String> {
    let a = v
        .as_array()
        .ok_or_else(|| format!("expected values, got {v}"))?;
    let bad = || format!("bad values {v}");
    Ok(match t {
        DType::Float32 => Values::Float32(
            a.iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect::<Option<_>>()
                .ok_or_else(bad)?,
        ),
        DType::Int64 => Values::Int64(
            a.iter()
                .map(Json::as_i64)
                .collect::<Option<_>>()
                .ok_or_else(bad)?,
        ),
        DType::String => Values::String(
            a.iter()
                .map(|x| x.as_str().map(|s| s.as_bytes().to_vec()))
                .collect::<Option<_>>()
                .ok_or_else(bad)?,
        ),
    })
}

fn feature_spec(v: &Json) -> Result<FeatureSpec, String> {
    Ok(match v["kind"].as_str() {
        Some("fixed") => FeatureSpec::FixedLen {
            shape: usizes(&v["shape"])?,
            dtype: dtype(&v["dtype"])?,
            default: match &v["default"] {
                Json::Null => None,
                d => Some(values(dtype(&v["dtype"])?, d)?),
            },
        },
        Some("fixed_sequence") => FeatureSpec::FixedLenSequence {
            shape: usizes(&v["shape"])?,
            dtype: dtype(&v["dtype"])?,
            allow_missing: v["allow_missing"].as_bool().unwrap_or(false),
            default: None,
        },
        Some("varlen") => FeatureSpec::VarLen {
            dtype: dtype(&v["dtype"])?,
        },
        Some("sparse") => FeatureSpec::Sparse {
            index_keys: v["index_keys"]
                .as_array()
                .ok_or("index_keys")?
                .iter()
                .map(|k| k.as_str().map(str::to_string).ok_or("an index key"))
                .collect::<Result<_, _>>()?,
            value_key: v["value_key"].as_str().ok_or("value_key")?.to_string(),
            dtype: dtype(&v["dtype"])?,
            size: usizes(&v["size"])?,
            already_sorted: v["already_sorted"].as_bool().unwrap_or(false),
        },
        other => return Err(format!("bad kind {other:?}")),
    })
}

fn json_values(v: &Values) -> Json {
    match v {
        Values::Float32(x) => Json::Array(
            x.iter()
                .map(|&x| {
                    if x.is_nan() {
                        json!("nan")
                    } else if x.is_infinite() {
                        json!(if x > 0.0 { "inf" } else { "-inf" })
                    } else {
                        json!(f64::from(x))
                    }
                })
                .collect(),
        ),
        Values::Int64(x) => json!(x),
        Values::String(x) => Json::Array(
            x.iter()
                .map(|s| json!(s.iter().map(|b| format!("{b:02x}")).collect::<String>()))
                .collect(),
        ),
    }
}

fn result(parsed: &BTreeMap<String, Parsed>) -> Json {
    let mut out = serde_json::Map::new();
    for (name, p) in parsed {
        let v = match p {
            Parsed::Dense { shape, values } => {
                json!({"shape": shape, "values": json_values(values)})
            }
            Parsed::Sparse { values, .. } => json!({
                "indices": p.sparse_indices(),
                "values": json_values(values),
                "dense_shape": p.sparse_dense_shape(),
            }),
            Parsed::SparseTensor {
                indices,
                values,
                dense_shape,
            } => {
                let rank = dense_shape.len().max(1);
                json!({
                    "indices": indices.chunks(rank).collect::<Vec<_>>(),
                    "values": json_values(values),
                    "dense_shape": dense_shape,
                })
            }
        };
        out.insert(name.clone(), v);
    }
    Json::Object(out)
}

fn run() -> Result<(), String> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: parse_examples SPEC.json")?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let j: Json = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let compression = Compression::from_tf_name(j["compression"].as_str().unwrap_or(""))
        .ok_or("bad compression")?;
    let specs = |key: &str| -> Result<BTreeMap<String, FeatureSpec>, String> {
        j[key]
            .as_object()
            .ok_or(format!("no {key}"))?
            .iter()
            .map(|(k, v)| Ok((k.clone(), feature_spec(v)?)))
            .collect()
    };
    let file = j["path"].as_str().ok_or("no path")?;
    let single = j["single"].as_bool().unwrap_or(false);
    if j.get("sequence").is_some() {
        let (context, sequence) = (specs("context")?, specs("sequence")?);
        let examples =
            read_sequence_examples(Path::new(file), compression).map_err(|e| e.to_string())?;
        let out = if single {
            examples
                .iter()
                .map(|ex| {
                    parse_single_sequence_example(ex, &context, &sequence)
                        .map(|(c, f)| json!({"context": result(&c), "feature_lists": result(&f)}))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Json::Array)
        } else {
            parse_sequence_example(&examples, &context, &sequence).map(|p| {
                json!({
                    "context": result(&p.context),
                    "feature_lists": result(&p.feature_lists),
                    "lengths": p.lengths,
                })
            })
        };
        print_result(out);
        return Ok(());
    }
    let spec = specs("spec")?;
    let examples = read_examples(Path::new(file), compression).map_err(|e| e.to_string())?;
    let out = if single {
        examples
            .iter()
            .map(|ex| parse_single_example(ex, &spec).map(|p| result(&p)))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array)
    } else {
        parse_example(&examples, &spec).map(|p| result(&p))
    };
    print_result(out);
    Ok(())
}

fn print_result(out: Result<Json, specc_runtime::io::example::ExampleError>) {
    println!(
        "{}",
        match out {
            Ok(v) => json!({ "ok": v }),
            Err(e) => json!({ "error": e.to_string() }),
        }
    );
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
