//! `specc inspect model.tflite`: what a TensorFlow Lite model holds.
//!
//! Owns: recognising a TFLite file (identifier `TFL3` at byte 4, whatever its
//! name) and printing its tensors (index, name, type, shape with -1 for a
//! dynamic dimension, constant or not, quantization), operators (builtin
//! name, inputs, outputs, options), signature defs (each input and output
//! with its type, and for an integer-only model's `INT8` or `UINT8`
//! boundary its scale and zero point and how a caller converts its values)
//! and metadata, as text or one JSON object.

use std::path::Path;

use serde_json::{json, Value};
use specc_tflite::{Model, Quantization, Tensor};

use crate::Failure;

/// Whether `path` is a TFLite flatbuffer (its first 8 bytes).
pub fn looks_like_tflite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
        && specc_tflite::looks_like_tflite(&head)
}

fn shape(t: &Tensor) -> Vec<i32> {
    t.shape_signature.clone().unwrap_or_else(|| t.shape.clone())
}

fn quantization(q: &Option<Quantization>) -> String {
    match q {
        Some(q) if !q.scale.is_empty() => {
            let axis = if q.scale.len() > 1 {
                format!(" axis={}", q.quantized_dimension)
            } else {
                String::new()
            };
            format!("scale={:?} zero_point={:?}{axis}", q.scale, q.zero_point)
        }
        _ => String::new(),
    }
}

pub fn run(path: &Path, json_out: bool) -> Result<(), Failure> {
    let model = specc_tflite::read_file(path)?;
    if json_out {
        println!("{}", to_json(&model));
        return Ok(());
    }
    println!(
        "{}: TFLite schema version {}, {} subgraph(s), {} buffers{}",
        path.display(),
        model.version,
        model.subgraphs.len(),
        model.buffers.len(),
        model
            .metadata_string("min_runtime_version")
            .map(|v| format!(", min_runtime_version {v}"))
            .unwrap_or_default()
    );
    for (s, g) in model.subgraphs.iter().enumerate() {
        println!(
            "subgraph {s} `{}`: inputs {:?}, outputs {:?}",
            g.name, g.inputs, g.outputs
        );
        println!("tensors:");
        let width = g.tensors.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for (i, t) in g.tensors.iter().enumerate() {
            let constant = if t.is_variable {
                " variable"
            } else if model.buffers[t.buffer as usize].data.is_empty() {
                ""
            } else {
                " const"
            };
            println!(
                "  {i:>4}  {:width$}  {:8} {:?}{constant} {}",
                t.name,
                t.tensor_type.to_string(),
                shape(t),
                quantization(&t.quantization)
            );
        }
        println!("operators:");
        for (k, op) in g.operators.iter().enumerate() {
            let name = model.builtin(op).map_or("?".into(), |b| b.name());
            let version = version(&model, op);
            println!(
                "  {k:>4}  {name:16} v{version:<2} inputs {:?} outputs {:?} {}",
                op.inputs,
                op.outputs,
                op.options.describe()
            );
        }
    }
    for sig in &model.signature_defs {
        let maps = |m: &[specc_tflite::TensorMap]| {
            m.iter()
                .map(|m| format!("{}={}", m.name, m.tensor_index))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "signature `{}` (subgraph {}): inputs {}; outputs {}",
            sig.signature_key,
            sig.subgraph_index,
            maps(&sig.inputs),
            maps(&sig.outputs)
        );
        let Some(g) = model.subgraphs.get(sig.subgraph_index as usize) else {
            continue;
        };
        for (kind, m) in sig
            .inputs
            .iter()
            .map(|m| ("input", m))
            .chain(sig.outputs.iter().map(|m| ("output", m)))
        {
            if let Some(t) = g.tensors.get(m.tensor_index as usize) {
                println!("  {kind} {}: {}", m.name, boundary(t, kind == "input"));
            }
        }
    }
    Ok(())
}

fn to_json(model: &Model) -> Value {
    let subgraphs: Vec<Value> = model
        .subgraphs
        .iter()
        .map(|g| {
            let tensors: Vec<Value> = g
                .tensors
                .iter()
                .map(|t| {
                    let q = t.quantization.as_ref().map(|q| {
                        json!({"scale": q.scale, "zero_point": q.zero_point,
                               "quantized_dimension": q.quantized_dimension})
                    });
                    json!({"name": t.name, "type": t.tensor_type.to_string(), "shape": shape(t),
                           "constant": !model.buffers[t.buffer as usize].data.is_empty(),
                           "quantization": q})
                })
                .collect();
            let operators: Vec<Value> = g
                .operators
                .iter()
                .map(|op| {
                    let name = model.builtin(op).map_or("?".into(), |b| b.name());
                    json!({"builtin": name, "version": version(model, op),
                           "inputs": op.inputs, "outputs": op.outputs,
                           "options": op.options.describe()})
                })
                .collect();
            json!({"name": g.name, "inputs": g.inputs, "outputs": g.outputs,
                   "tensors": tensors, "operators": operators})
        })
        .collect();
    let signatures: Vec<Value> = model
        .signature_defs
        .iter()
        .map(|s| {
            let g = model.subgraphs.get(s.subgraph_index as usize);
            let maps = |m: &[specc_tflite::TensorMap]| -> Vec<Value> {
                m.iter()
                    .map(|m| {
                        let t = g.and_then(|g| g.tensors.get(m.tensor_index as usize));
                        let q = t
                            .and_then(|t| t.quantization.as_ref())
                            .filter(|q| q.scale.len() == 1);
                        json!({"name": m.name, "tensor": m.tensor_index,
                               "type": t.map(|t| t.tensor_type.to_string()),
                               "scale": q.map(|q| q.scale[0]),
                               "zero_point": q.map(|q| q.zero_point.first().copied().unwrap_or(0))})
                    })
                    .collect()
            };
            json!({"key": s.signature_key, "subgraph": s.subgraph_index,
                   "inputs": maps(&s.inputs), "outputs": maps(&s.outputs)})
        })
        .collect();
    json!({"version": model.version, "subgraphs": subgraphs, "signature_defs": signatures,
           "min_runtime_version": model.metadata_string("min_runtime_version")})
}

/// A signature tensor as a caller sees it: its type and shape, and for a
/// quantized `INT8` or `UINT8` one its scale and zero point and what to do
/// with them (an input: quantize the values; an output: dequantize them).
fn boundary(t: &Tensor, input: bool) -> String {
    let head = format!("{} {:?}", t.tensor_type, shape(t));
    let range = match t.tensor_type {
        specc_tflite::TensorType::Int8 => "[-128, 127]",
        specc_tflite::TensorType::Uint8 => "[0, 255]",
        _ => return head,
    };
    match &t.quantization {
        Some(q) if q.scale.len() == 1 => {
            let (scale, zero_point) = (q.scale[0], q.zero_point.first().copied().unwrap_or(0));
            let rule = if input {
                format!("q = round(x / scale) + zero_point, clamped to {range}")
            } else {
                "x = scale * (q - zero_point)".to_string()
            };
            format!("{head} scale={scale:?} zero_point={zero_point} ({rule})")
        }
        _ => head,
    }
}

/// The operator's version (its operator code's).
fn version(model: &specc_tflite::Model, op: &specc_tflite::Operator) -> i32 {
    model
        .operator_codes
        .get(op.opcode_index as usize)
        .map_or(0, |c| c.version)
}
