//! `<file>.features.json`: the preprocessing an exported model leaves to
//! its caller, and the types at a TF Lite model's boundary.
//!
//! Owns: [`write_features`] (per model input, the TF feature column that
//! makes it; for a TF Lite model each input's and output's type, scale
//! and zero point) and [`describe`] / [`outputs`], the boundary of a TF
//! Lite model's `serving_default` signature (TF's converter's
//! `inference_input_type`, `inference_output_type`: what a caller converts
//! its values with).
//!
//! Invariants: a description is the model's own (its signature's tensors,
//! as written), so it cannot drift from the file; the file is written to
//! a temporary file and renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use specc_compiler::export::tflite::raw::RAW_INPUTS_METADATA;
use specc_runtime::io::atomic::write_atomic;

use super::cannot_write;
use crate::run::Error;

/// The preprocessing an exported model leaves to its caller, next to it as
/// `<file>.features.json`: per model input the exported model reads (in
/// its order), the TF feature column that makes it
/// (`specc_runtime::feature_column::describe_input`); for a TF Lite model,
/// each input's and output's type at the model's boundary (`"tflite":
/// {"dtype", "scale", "zero_point"}`, the last two for a quantized one) and
/// the outputs in the signature's order. A raw-input model's `inputs` are
/// its raw columns (`"raw_inputs": true`; each with its dtype and what a
/// missing cell is: `""` or `NaN`), and the dense inputs it computes from
/// them are `preprocessed`. Written to a temporary file and
/// renamed.
pub fn write_features(
    model: &specc_compiler::Model,
    spec: &Path,
    inputs: &[String],
    exported: &Path,
    tflite: Option<&specc_tflite::Model>,
) -> Result<PathBuf, Error> {
    let described: Vec<serde_json::Value> = inputs
        .iter()
        .map(|name| {
            let info = model.inputs.iter().find(|i| &i.spec.name == name);
            let mut d = specc_runtime::feature_column::describe_input(
                name,
                info.and_then(|i| i.spec.feature.as_ref()),
                info.map_or(&[][..], |i| &i.spec.columns),
            );
            if let (Some(b), Some(o)) = (
                tflite.and_then(|m| describe(m, name, true)),
                d.as_object_mut(),
            ) {
                o.insert("tflite".into(), b);
            }
            d
        })
        .collect();
    let raw = tflite.and_then(|m| m.metadata_string(RAW_INPUTS_METADATA));
    let mut doc =
        match (raw, tflite) {
            // A raw-input model: its inputs are the raw columns, and the
            // dense inputs the model computes from them are "preprocessed".
            (Some(columns), Some(m)) => {
                let raw: Vec<serde_json::Value> = columns
                .lines()
                .map(|c| {
                    let b = describe(m, c, true).unwrap_or_default();
                    let missing = if b["dtype"] == "string" { "\"\"" } else { "NaN" };
                    serde_json::json!({ "name": c, "column": c, "tflite": b, "missing": missing })
                })
                .collect();
                let inside: Vec<serde_json::Value> = described
                    .into_iter()
                    .map(|mut d| {
                        if let Some(o) = d.as_object_mut() {
                            o.remove("tflite");
                        }
                        d
                    })
                    .collect();
                serde_json::json!({
                    "spec": spec.display().to_string(),
                    "model": model.name,
                    "raw_inputs": true,
                    "inputs": raw,
                    "preprocessed": inside,
                })
            }
            _ => serde_json::json!({
                "spec": spec.display().to_string(),
                "model": model.name,
                "inputs": described,
            }),
        };
    if let Some(m) = tflite {
        doc["outputs"] = outputs(m).into();
    }
    let mut name = exported.as_os_str().to_owned();
    name.push(".features.json");
    let path = PathBuf::from(name);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Io(e.to_string()))?;
    write_atomic(&path, |f| {
        f.write_all((text + "\n").as_bytes())
            .map_err(|e| cannot_write(&path, e))
    })
    .map_err(Error::Io)?;
    Ok(path)
}

/// The model's `serving_default` signature (or its first).
pub fn serving_signature(m: &specc_tflite::Model) -> Option<&specc_tflite::SignatureDef> {
    m.signature_defs
        .iter()
        .find(|s| s.signature_key == specc_tflite::SERVING_DEFAULT)
        .or(m.signature_defs.first())
}

/// The type of the signature's input (or output) `name`, and its scale and
/// zero point when it is quantized: what a caller converts its values with.
pub fn describe(m: &specc_tflite::Model, name: &str, input: bool) -> Option<serde_json::Value> {
    let s = serving_signature(m)?;
    let maps = if input { &s.inputs } else { &s.outputs };
    let index = maps.iter().find(|t| t.name == name)?.tensor_index;
    let t = m
        .subgraphs
        .get(s.subgraph_index as usize)?
        .tensors
        .get(index as usize)?;
    let dtype = t.tensor_type.to_string().to_lowercase();
    Some(match &t.quantization {
        Some(q) if q.scale.len() == 1 => serde_json::json!({
            "dtype": dtype,
            "scale": q.scale[0],
            "zero_point": q.zero_point.first().copied().unwrap_or(0),
        }),
        _ => serde_json::json!({ "dtype": dtype }),
    })
}

/// Each output of the model's signature, in its order, with its
/// [`describe`]d boundary: `{"name", "tflite": {...}}`.
pub fn outputs(m: &specc_tflite::Model) -> Vec<serde_json::Value> {
    serving_signature(m)
        .map(|s| {
            s.outputs
                .iter()
                .filter_map(|t| {
                    let b = describe(m, &t.name, false)?;
                    Some(serde_json::json!({ "name": t.name, "tflite": b }))
                })
                .collect()
        })
        .unwrap_or_default()
}
