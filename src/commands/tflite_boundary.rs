//! The boundary of an exported TF Lite model: the types of its inputs and
//! outputs. Owns validating `specc export --inference-input-type` and
//! `--inference-output-type` (only with `--quantize int8`; TF's converter's
//! `inference_input_type`, `inference_output_type`), and describing each
//! signature input and output for `.features.json` (`{"dtype", "scale",
//! "zero_point"}`, the last two when it is quantized: what a caller
//! converts its values with).
//!
//! Invariants: the description is the model's own (its signature's
//! tensors, as written), so it cannot drift from the file.

use specc_tflite::quantize::InferenceType;

use crate::Failure;

/// `--inference-input-type` and `--inference-output-type` (default float32)
/// for `--quantize` (`Some(true)`: int8, `Some(false)`: dynamic): the types
/// of a full-integer model's boundary, an error with any other
/// quantization.
pub fn interface(
    int8: Option<bool>,
    input: Option<InferenceType>,
    output: Option<InferenceType>,
) -> Result<(InferenceType, InferenceType), Failure> {
    if int8 != Some(true) {
        if let Some((flag, t)) = [("input", input), ("output", output)]
            .into_iter()
            .find_map(|(f, t)| Some((f, t?)))
        {
            let with = match int8 {
                Some(_) => "--quantize dynamic keeps float activations",
                None => "a float model's inputs and outputs are float32",
            };
            return Err(format!(
                "--inference-{flag}-type {} is for --quantize int8 (full-integer quantization); {with}",
                t.name()
            )
            .into());
        }
    }
    Ok((
        input.unwrap_or(InferenceType::Float32),
        output.unwrap_or(InferenceType::Float32),
    ))
}

/// The model's `serving_default` signature (or its first).
pub(crate) fn signature(m: &specc_tflite::Model) -> Option<&specc_tflite::SignatureDef> {
    m.signature_defs
        .iter()
        .find(|s| s.signature_key == specc_tflite::SERVING_DEFAULT)
        .or(m.signature_defs.first())
}

/// The type of the signature's input (or output) `name`, and its scale and
/// zero point when it is quantized: what a caller converts its values with.
pub(crate) fn describe(
    m: &specc_tflite::Model,
    name: &str,
    input: bool,
) -> Option<serde_json::Value> {
    let s = signature(m)?;
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
pub(crate) fn outputs(m: &specc_tflite::Model) -> Vec<serde_json::Value> {
    signature(m)
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
