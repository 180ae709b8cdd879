//! Writes a TF V2 checkpoint from a JSON description, for the interop tests
//! with TensorFlow (`interop/test_checkpoint.py`).
//!
//! `write_checkpoint SPEC.json`, where SPEC.json is
//! `{"prefix": "DIR/model.ckpt-3", "tensors": [{"name", "dtype", "shape", "values"}]}`
//! (values nested or flat, row-major; floats as JSON numbers or "nan", "inf",
//! "-inf"; float32 values must be float32-representable; bools as true/false)
//! or, instead of `prefix`, `"manager": {"dir": DIR, "step": N, "max_to_keep": K}`
//! to save through `CheckpointManager` (which also writes the state file).
//! With the manager, `"partitions": {NAME: [rows, ..]}` saves those tensors
//! in TF's slices, and `"shards": N` saves as N processes of a sharded save
//! would: each tensor's rows split into N contiguous parts (the first
//! `rows % N` one row longer; a tensor of fewer rows, or a scalar, whole in
//! shard 0), each shard's data file written by `write_shard`, then the
//! index by `CheckpointManager::save_sharded`.
//! Exit 1 with a message on any error.

use std::process::ExitCode;

use serde_json::Value;
use specc_runtime::checkpoint::{
    write_bundle, write_shard, CheckpointManager, DType, Partitions, ShardSlice, TensorRef,
};

fn leaves<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        x => out.push(x),
    }
}

fn float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!("bad number {s:?}")),
        },
        other => Err(format!("expected a number, got {other}")),
    }
}

fn int(v: &Value) -> Result<i128, String> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
        .ok_or_else(|| format!("expected an integer, got {v}"))
}

/// The little-endian bytes of `values` as `dtype`.
fn bytes(dtype: DType, values: &Value) -> Result<Vec<u8>, String> {
    let mut vals = Vec::new();
    leaves(values, &mut vals);
    let mut out = Vec::with_capacity(vals.len() * dtype.size());
    for v in vals {
        macro_rules! int_as {
            ($t:ty) => {
                out.extend(
                    <$t>::try_from(int(v)?)
                        .map_err(|e| format!("{v}: {e}"))?
                        .to_le_bytes(),
                )
            };
        }
        match dtype {
            DType::Float => out.extend((float(v)? as f32).to_le_bytes()),
            DType::Double => out.extend(float(v)?.to_le_bytes()),
            DType::Int8 => int_as!(i8),
            DType::Int16 => int_as!(i16),
            DType::Int32 => int_as!(i32),
            DType::Int64 => int_as!(i64),
            DType::UInt8 => int_as!(u8),
            DType::UInt16 => int_as!(u16),
            DType::UInt32 => int_as!(u32),
            DType::UInt64 => int_as!(u64),
            DType::Bool => out.push(u8::from(
                v.as_bool().ok_or_else(|| format!("{v} is not a bool"))?,
            )),
            DType::Half | DType::BFloat16 => int_as!(u16), // raw bits
        }
    }
    Ok(out)
}

fn run(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let spec: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut owned = Vec::new();
    for t in spec["tensors"].as_array().ok_or("no `tensors` list")? {
        let name = t["name"]
            .as_str()
            .ok_or("a tensor without a name")?
            .to_string();
        let dtype = t["dtype"]
            .as_str()
            .and_then(DType::from_name)
            .ok_or_else(|| format!("{name}: unknown dtype {}", t["dtype"]))?;
        let shape: Vec<usize> = t["shape"]
            .as_array()
            .ok_or_else(|| format!("{name}: no shape"))?
            .iter()
            .map(|d| {
                d.as_u64()
                    .map(|d| d as usize)
                    .ok_or_else(|| format!("{name}: bad dim {d}"))
            })
            .collect::<Result<_, _>>()?;
        let b = bytes(dtype, &t["values"]).map_err(|e| format!("{name}: {e}"))?;
        owned.push((name, dtype, shape, b));
    }
    let refs: Vec<(&str, TensorRef<'_>)> = owned
        .iter()
        .map(|(n, d, s, b)| {
            Ok((
                n.as_str(),
                TensorRef::from_bytes(*d, s, b).map_err(|e| format!("{n}: {e}"))?,
            ))
        })
        .collect::<Result<_, String>>()?;
    if let Some(prefix) = spec["prefix"].as_str() {
        write_bundle(prefix, &refs).map_err(|e| e.to_string())?;
    } else {
        let m = &spec["manager"];
        let dir = m["dir"]
            .as_str()
            .ok_or("neither `prefix` nor `manager.dir`")?;
        let step = m["step"]
            .as_i64()
            .ok_or("`manager.step` is not an integer")?;
        let keep = m["max_to_keep"].as_u64().map(|k| k as usize);
        let mut partitions = Partitions::new();
        if let Some(p) = spec["partitions"].as_object() {
            for (name, rows) in p {
                let rows = rows
                    .as_array()
                    .ok_or_else(|| format!("partitions of {name}: not a list"))?
                    .iter()
                    .map(|r| r.as_u64().map(|r| r as usize).ok_or("a row count"))
                    .collect::<Result<_, _>>()?;
                partitions.insert(name.clone(), rows);
            }
        }
        let mut manager = CheckpointManager::new(dir, keep, None)
            .map_err(|e| e.to_string())?
            .with_partitions(partitions);
        match spec["shards"].as_u64() {
            Some(n) => sharded(&mut manager, step, &refs, n as u32)?,
            None => {
                manager.save(step, &refs).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// Saves `refs` as `n` processes would: shard `i` holds part `i` of every
/// tensor's rows.
fn sharded(
    manager: &mut CheckpointManager,
    step: i64,
    refs: &[(&str, TensorRef<'_>)],
    n: u32,
) -> Result<(), String> {
    let prefix = manager.prefix_for(step);
    let mut shapes = Vec::new();
    for (_, t) in refs {
        let mut part = t.shape.to_vec();
        if let Some(r) = part.first_mut() {
            *r = 0;
        }
        shapes.push(part);
    }
    let mut entries = Vec::new();
    for i in 0..n as usize {
        let mut slices = Vec::new();
        for ((name, t), part) in refs.iter().zip(shapes.iter_mut()) {
            let rows = t.shape.first().copied().unwrap_or(1);
            let whole = t.shape.is_empty() || rows < n as usize;
            let range = if whole {
                if i != 0 {
                    continue;
                }
                0..rows
            } else {
                let (base, extra) = (rows / n as usize, rows % n as usize);
                let start = i * base + i.min(extra);
                start..start + base + usize::from(i < extra)
            };
            if !t.shape.is_empty() {
                part[0] = range.len();
            }
            let row_bytes = t.bytes().len() / rows.max(1);
            let bytes = &t.bytes()[range.start * row_bytes..range.end * row_bytes];
            let values = TensorRef::from_bytes(t.dtype, part, bytes)?;
            slices.push(ShardSlice {
                name,
                full_shape: t.shape,
                rows: if t.shape.is_empty() { 0..0 } else { range },
                values,
            });
        }
        entries.push(write_shard(&prefix, i as u32, n, &slices).map_err(|e| e.to_string())?);
    }
    manager
        .save_sharded(step, &entries)
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: write_checkpoint SPEC.json");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
