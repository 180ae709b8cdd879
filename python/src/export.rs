//! `specc._specc.export_tflite` and `export_object`: a model's current
//! values exported through the library's `specc::export`, the code `specc
//! export` runs on a checkpoint.
//!
//! Owns: the options' conversion from Python (the quantization and
//! boundary types by their TF names) and what an export wrote as a dict.
//!
//! Invariants: the file written for a model is the one `specc export`
//! writes from a checkpoint of the same values, with the same options (the
//! same library call, only the source of the values differs); the GIL is
//! released while the model is lowered, quantized and written.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use specc::export::InferenceType;
use specc::export::{self, ObjectOptions, Quantize, Quantized, TfliteOptions, Weights};

use crate::errors::run_error;
use crate::model::Model;

/// A TF name of a model boundary's type (`float32`, `int8`, `uint8`).
fn inference_type(name: Option<&str>, what: &str) -> PyResult<Option<InferenceType>> {
    Ok(match name {
        None => None,
        Some("float32") => Some(InferenceType::Float32),
        Some("int8") => Some(InferenceType::Int8),
        Some("uint8") => Some(InferenceType::Uint8),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "{what} {other:?}: one of \"float32\", \"int8\", \"uint8\""
            )))
        }
    })
}

/// Writes the model as a TF Lite model at `path` (and
/// `<path>.features.json`), as `specc export --format tflite` does from a
/// checkpoint; a dict of what was written.
#[pyfunction]
#[pyo3(signature = (model, path, fetch=Vec::new(), batch=None, quantize=None, representative_data=None, samples=32, inference_input_type=None, inference_output_type=None, use_averages=None, raw_inputs=false))]
#[allow(clippy::too_many_arguments)]
pub fn export_tflite<'py>(
    py: Python<'py>,
    model: PyRef<'py, Model>,
    path: PathBuf,
    fetch: Vec<String>,
    batch: Option<u32>,
    quantize: Option<String>,
    representative_data: Option<PathBuf>,
    samples: usize,
    inference_input_type: Option<String>,
    inference_output_type: Option<String>,
    use_averages: Option<bool>,
    raw_inputs: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let int8 = match quantize.as_deref() {
        None => None,
        Some("dynamic") => Some(false),
        Some("int8") => Some(true),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "quantize {other:?}: \"dynamic\" or \"int8\" (or None: a float model)"
            )))
        }
    };
    if samples == 0 {
        return Err(PyValueError::new_err(
            "samples: the rows to calibrate on, a positive number",
        ));
    }
    let input = inference_type(inference_input_type.as_deref(), "inference_input_type")?;
    let output = inference_type(inference_output_type.as_deref(), "inference_output_type")?;
    let quantize =
        Quantize::from_flags(int8, representative_data.as_deref(), samples, input, output)
            .map_err(|e| run_error(py, e))?;
    let options = TfliteOptions {
        outputs: &fetch,
        batch,
        quantize,
        use_averages,
        raw_inputs,
    };
    let model: &Model = &model;
    let written = py
        .detach(|| {
            let m = model.lock();
            export::tflite(m.source(), Weights::Model(&m), &path, &options)
        })
        .map_err(|e| run_error(py, e))?;
    let d = PyDict::new(py);
    d.set_item("path", written.path.as_os_str())?;
    d.set_item("features", written.features.as_os_str())?;
    d.set_item("bytes", written.bytes)?;
    d.set_item("operators", written.operators)?;
    d.set_item("tensors", written.tensors)?;
    d.set_item("inputs", &written.inputs)?;
    d.set_item("outputs", &written.outputs)?;
    d.set_item("moving_averages", written.serving.uses_averages())?;
    let q = match &written.quantized {
        None => None,
        Some(Quantized::Dynamic { weights }) => {
            let q = PyDict::new(py);
            q.set_item("mode", "dynamic")?;
            q.set_item("weights", weights)?;
            Some(q)
        }
        Some(Quantized::Int8 {
            trained,
            calibrated,
            input,
            output,
        }) => {
            let q = PyDict::new(py);
            q.set_item("mode", "int8")?;
            q.set_item("trained_ranges", trained)?;
            q.set_item("calibrated_rows", calibrated.as_ref().map(|c| c.0))?;
            q.set_item("inference_input_type", input.name())?;
            q.set_item("inference_output_type", output.name())?;
            Some(q)
        }
    };
    d.set_item("quantization", q)?;
    Ok(d)
}

/// Writes the model as a relocatable object file at `path`, its C header
/// (`path` with the extension `.h`) and `<path>.features.json`, as `specc
/// export --format object` does from a checkpoint; a dict of what was
/// written.
#[pyfunction]
#[pyo3(signature = (model, path, fetch=Vec::new(), symbol="specc_predict".to_string(), use_averages=None))]
pub fn export_object<'py>(
    py: Python<'py>,
    model: PyRef<'py, Model>,
    path: PathBuf,
    fetch: Vec<String>,
    symbol: String,
    use_averages: Option<bool>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = ObjectOptions {
        fetch: &fetch,
        symbol: &symbol,
        use_averages,
    };
    let model: &Model = &model;
    let written = py
        .detach(|| {
            let m = model.lock();
            export::object(m.source(), Weights::Model(&m), &path, &options)
        })
        .map_err(|e| run_error(py, e))?;
    let d = PyDict::new(py);
    d.set_item("path", written.path.as_os_str())?;
    d.set_item("header", written.header.as_os_str())?;
    d.set_item("features", written.features.as_os_str())?;
    d.set_item("bytes", written.bytes)?;
    d.set_item("symbol", &written.symbol)?;
    d.set_item("in_width", written.in_width)?;
    d.set_item("out_width", written.out_width)?;
    d.set_item("max_batch", written.max_batch)?;
    d.set_item("raw_keys", written.raw_keys.as_ref().ok())?;
    d.set_item("moving_averages", written.serving.uses_averages())?;
    Ok(d)
}
