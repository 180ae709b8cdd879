//! `specc inspect CHECKPOINT`: what a TF V2 checkpoint holds
//! (`tf.train.list_variables`), and any tensor's values
//! (`tf.train.load_checkpoint(...).get_tensor`).
//!
//! Owns: resolving CHECKPOINT (a prefix, a prefix's `.index` file, or a
//! directory: its latest checkpoint per the `checkpoint` state file) and the
//! two outputs: text (a table, a partitioned variable's slices after its
//! shape; values nested like numpy, floats as the
//! shortest text that reads back to the same value) and `--json` (values
//! exact, a partitioned variable's `slices`; float32 as the float64 of its value, non-finite as "nan", "inf",
//! "-inf", integers as JSON integers).

use std::path::Path;

use serde_json::{json, Value};
use specc_runtime::checkpoint::tensor::shape_string;
use specc_runtime::checkpoint::{BundleReader, Tensor};

use crate::Failure;

pub fn run(checkpoint: &Path, tensor: Option<&str>, json_out: bool) -> Result<(), Failure> {
    let prefix = specc::run::restore::checkpoint_prefix(checkpoint)?;
    let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
    match tensor {
        None if json_out => {
            let vars: Vec<Value> = reader
                .list_variables()
                .into_iter()
                .map(|(n, d, s)| {
                    let mut v = json!({"name": n, "dtype": d.name(), "shape": s});
                    let slices = reader.slices(&n);
                    if !slices.is_empty() {
                        let texts: Vec<String> = slices.iter().map(|s| s.text()).collect();
                        v["slices"] = json!(texts);
                    }
                    v
                })
                .collect();
            let out = json!({"checkpoint": prefix.to_string_lossy(), "variables": vars});
            println!("{out}");
        }
        None => {
            let vars = reader.list_variables();
            let width = vars.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
            for (n, d, s) in vars {
                let slices = reader.slices(&n);
                if slices.is_empty() {
                    println!("{n:width$}  {:8}  {}", d.name(), shape_string(&s));
                } else {
                    // A partitioned variable: its slices, TF's text form.
                    let texts: Vec<String> = slices.iter().map(|s| s.text()).collect();
                    println!(
                        "{n:width$}  {:8}  {}  slices {}",
                        d.name(),
                        shape_string(&s),
                        texts.join(" ")
                    );
                }
            }
        }
        Some(name) => {
            if reader.entry(name).is_none() {
                let names: Vec<String> = reader.entries().iter().map(|(n, _)| n.clone()).collect();
                let hint = names
                    .iter()
                    .map(|n| (specc_runtime::suggest::edit_distance(name, n), n))
                    .filter(|(d, n)| *d <= (n.len() / 3).max(2))
                    .min()
                    .map(|(_, s)| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "{}: no tensor `{name}` in the checkpoint{hint}",
                    reader.index_file().display()
                )
                .into());
            }
            let t = reader.load(name).map_err(|e| e.to_string())?;
            if json_out {
                let out = json!({
                    "name": name,
                    "dtype": t.dtype().name(),
                    "shape": t.shape(),
                    "values": nest(t.shape(), &json_values(&t)),
                });
                println!("{out}");
            } else {
                println!("{name}  {}  {}", t.dtype().name(), shape_string(t.shape()));
                let texts = text_values(&t);
                println!("{}", nest_text(t.shape(), &texts, 0));
            }
        }
    }
    Ok(())
}

fn json_float(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// Every element as exact JSON.
fn json_values(t: &Tensor) -> Vec<Value> {
    match t {
        Tensor::I32(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::I64(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::U8(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::I8(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::I16(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::U16(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::U32(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::U64(a) => a.iter().map(|&x| json!(x)).collect(),
        Tensor::Bool(a) => a.iter().map(|&x| json!(x)).collect(),
        other => other.to_f64_vec().into_iter().map(json_float).collect(),
    }
}

fn float_text(s: String) -> String {
    if s == "NaN" {
        "nan".to_string()
    } else {
        s
    }
}

/// Every element as numpy prints it (floats: shortest round-trip text of
/// their own precision).
fn text_values(t: &Tensor) -> Vec<String> {
    match t {
        Tensor::F32(a) => a.iter().map(|x| float_text(format!("{x:?}"))).collect(),
        Tensor::F64(a) => a.iter().map(|x| float_text(format!("{x:?}"))).collect(),
        Tensor::Bool(a) => a
            .iter()
            .map(|&x| if x { "True" } else { "False" }.to_string())
            .collect(),
        Tensor::F16(_) | Tensor::BF16(_) => t
            .to_f64_vec()
            .into_iter()
            .map(|x| float_text(format!("{:?}", x as f32)))
            .collect(),
        other => json_values(other).iter().map(Value::to_string).collect(),
    }
}

fn nest(shape: &[usize], flat: &[Value]) -> Value {
    match shape.split_first() {
        None => flat.first().cloned().unwrap_or(Value::Null),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            Value::Array(
                (0..n)
                    .map(|i| nest(rest, flat.get(i * step..(i + 1) * step).unwrap_or(&[])))
                    .collect(),
            )
        }
    }
}

fn nest_text(shape: &[usize], flat: &[String], depth: usize) -> String {
    match shape.split_first() {
        None => flat.first().cloned().unwrap_or_default(),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            let parts: Vec<String> = (0..n)
                .map(|i| {
                    nest_text(
                        rest,
                        flat.get(i * step..(i + 1) * step).unwrap_or(&[]),
                        depth + 1,
                    )
                })
                .collect();
            let sep = if rest.is_empty() {
                ", ".to_string()
            } else {
                format!(",\n{}", " ".repeat(depth + 1))
            };
            format!("[{}]", parts.join(&sep))
        }
    }
}
