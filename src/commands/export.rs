//! `specc export SPEC --checkpoint DIR --format tflite -o model.tflite`: the
//! trained inference graph as a TensorFlow Lite model.
//!
//! Owns: choosing what is exported (the spec's `outputs` item, or the
//! bindings `--fetch` names; the feature inputs they need, in the spec's
//! order), reading the
//! parameters from the checkpoint (each averaged one from its moving
//! average with `--use-averages`, `specc::averages`), and writing the file (a temporary file
//! renamed into place), and the post-training quantization asked for
//! (`--quantize dynamic|int8`: `specc_tflite::quantize`, the
//! calibration rows `calibrate`; `--inference-input-type` and
//! `--inference-output-type`, the types of a full-integer model's
//! boundary, `tflite_boundary`), and `<file>.features.json` (with each
//! input's and output's type, scale and zero point for TF Lite). The lowering is `specc_compiler::export::tflite`,
//! the format `specc_tflite`.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use specc_compiler::export::tflite::raw::{with_raw_inputs, RawSource, RAW_INPUTS_METADATA};
use specc_compiler::export::tflite::{export_tflite, TfliteExport};
use specc_compiler::model::InputRole;
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::io::atomic::write_atomic;
use specc_tflite::quantize::{
    quantize_dynamic, quantize_int8, set_inference_types, trained_ranges, InferenceType,
};

use super::{report, tflite_boundary};
use crate::Failure;
use specc::spec::read_spec;

pub struct ExportOptions<'a> {
    /// The trained variables; `None`: a dry run (every parameter zero,
    /// nothing written) that says whether the export would be refused —
    /// `specc run --export-on-save` asks before training.
    pub checkpoint: Option<&'a Path>,
    pub output: &'a Path,
    /// Bindings to export as the model's outputs (`--fetch`; default: the
    /// spec's `outputs` item).
    pub outputs: &'a [String],
    /// A fixed batch size instead of a dynamic one.
    pub batch: Option<u32>,
    /// Post-training quantization.
    pub quantize: Quantize<'a>,
    /// `--use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
    /// `--raw-inputs`: the model takes the raw columns
    /// (`specc_compiler::export::tflite::raw`).
    pub raw_inputs: bool,
}

/// `--quantize`: what `tf.lite.Optimize.DEFAULT` does.
#[derive(Clone, Copy, Debug)]
pub enum Quantize<'a> {
    /// A float model.
    None,
    /// Dynamic-range: int8 FULLY_CONNECTED weights, float activations.
    Dynamic,
    /// Full-integer int8: the ranges of the spec's fake quantizations, the
    /// others calibrated on the first `samples` rows of `data` (none: every
    /// activation needs a fake quantization), its inputs and float outputs
    /// of the types `interface` names (`--inference-input-type`,
    /// `--inference-output-type`).
    Int8 {
        data: Option<&'a Path>,
        samples: usize,
        interface: (InferenceType, InferenceType),
    },
}

pub fn run(spec: &Path, o: &ExportOptions<'_>) -> Result<(), Failure> {
    if let Quantize::Int8 {
        interface: (input, _),
        ..
    } = o.quantize
    {
        if o.raw_inputs && input != InferenceType::Float32 {
            return Err(format!(
                "--raw-inputs: the model takes raw strings and float32 values, so its inputs \
                 cannot be {} (--inference-input-type); leave it float32",
                input.name()
            )
            .into());
        }
    }
    let src = read_spec(spec)?;
    let mut model = specc_compiler::check(&src).map_err(|d| report(&d, &src))?;
    // The spec's `outputs` item, or the bindings `--fetch` names.
    let spec_outputs: Vec<(String, specc_compiler::ir::NodeId)> = match &model.functions.predict {
        Some(p) if o.outputs.is_empty() => {
            p.outputs.iter().map(|o| (o.name.clone(), o.node)).collect()
        }
        None if o.outputs.is_empty() => {
            let known: Vec<&str> = model.bindings.iter().map(|(b, _)| b.as_str()).collect();
            return Err(format!(
                "{}: the spec has no `outputs` item: add one, or name the values to export \
                 with --fetch NAME (the spec binds: {})",
                spec.display(),
                known.join(", ")
            )
            .into());
        }
        _ => Vec::new(),
    };
    let names: Vec<String> = if spec_outputs.is_empty() {
        o.outputs.to_vec()
    } else {
        spec_outputs.iter().map(|(n, _)| n.clone()).collect()
    };
    let mut outputs = spec_outputs;
    for name in o.outputs {
        let Some(&(_, node)) = model.bindings.iter().find(|(b, _)| b == name) else {
            let known: Vec<&str> = model.bindings.iter().map(|(b, _)| b.as_str()).collect();
            return Err(format!(
                "{}: no binding `{name}` to export (the spec binds: {}); name one with --fetch",
                spec.display(),
                known.join(", ")
            )
            .into());
        };
        outputs.push((name.clone(), node));
    }
    // The outputs as the inference function, simplified as the compiled
    // `predict` is: the training flag 0 (dropout and batch normalization
    // keep their inference branch), constants folded.
    let mut predict = specc_compiler::ir::Function::new("predict");
    predict.outputs = outputs
        .iter()
        .map(|(name, node)| specc_compiler::ir::Output {
            name: name.clone(),
            node: *node,
        })
        .collect();
    model.functions.predict = Some(predict);
    specc_compiler::passes::optimize(&mut model);
    let outputs: Vec<(String, specc_compiler::ir::NodeId)> = model
        .functions
        .predict
        .as_ref()
        .map(|p| p.outputs.iter().map(|o| (o.name.clone(), o.node)).collect())
        .unwrap_or_default();
    let g = &model.graph;
    let roots: Vec<_> = outputs.iter().map(|o| o.1).collect();
    let live = g.reachable(&roots);
    let mut inputs = Vec::new();
    for (id, n) in g.nodes() {
        if let specc_compiler::ir::Op::Input(i) = n.op {
            if live[id.index()] {
                let info = &model.inputs[i as usize];
                if info.role == InputRole::Label {
                    return Err(format!(
                        "{}: the exported outputs read the label `{}`; export what inference computes",
                        spec.display(),
                        info.spec.name
                    )
                    .into());
                }
                inputs.push(i);
            }
        }
    }
    inputs.sort_unstable();
    inputs.dedup();
    let inputs: Vec<String> = inputs
        .iter()
        .map(|&i| g.inputs[i as usize].name.clone())
        .collect();

    // Each averaged parameter from its moving average with --use-averages.
    let serving = specc::averages::Serving::resolve(&model, o.use_averages, spec)?;
    let reader = match o.checkpoint {
        Some(c) => {
            let prefix = specc::run::restore::checkpoint_prefix(c)?;
            let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
            serving.check(&reader)?;
            Some(reader)
        }
        None => None,
    };
    let stored = reader.as_ref().map(BundleReader::list_variables);
    let mut params = HashMap::new();
    for (id, n) in g.nodes() {
        let specc_compiler::ir::Op::Var(v) = n.op else {
            continue;
        };
        if !live[id.index()] {
            continue;
        }
        let name = &g.vars[v as usize].name;
        let (Some(reader), Some(stored)) = (&reader, &stored) else {
            // A dry run: zeros of the parameter's shape.
            let shape: Vec<usize> = g.vars[v as usize]
                .shape
                .0
                .iter()
                .map(|d| d.fixed().unwrap_or(1) as usize)
                .collect();
            params.insert(name.clone(), ArrayD::zeros(IxDyn(&shape)));
            continue;
        };
        let tensor = serving.tensor(name);
        let Some((_, _, shape)) = stored.iter().find(|(s, _, _)| *s == tensor) else {
            return Err(format!(
                "{}: no variable `{tensor}`, which the model needs",
                reader.index_file().display()
            )
            .into());
        };
        let mut values = vec![0f32; shape.iter().product()];
        reader
            .load_f32_into(&tensor, &mut values)
            .map_err(|e| e.to_string())?;
        let array = ArrayD::from_shape_vec(IxDyn(shape), values).map_err(|e| e.to_string())?;
        params.insert(name.clone(), array);
    }
    let request = TfliteExport {
        graph: g,
        params: &params,
        inputs: &inputs,
        outputs: &outputs,
        batch: o.batch,
    };
    let tflite = specc_compiler::guard(|| export_tflite(&request).map_err(|d| vec![d]))
        .map_err(|d| report(&d, &src))?;
    // The feature columns in front (`--raw-inputs`): after quantization, so
    // the calibration and the quantized operators see the dense inputs.
    let with_raw = |tflite| -> Result<_, Failure> {
        let sources = inputs
            .iter()
            .map(|name| {
                let info = model
                    .inputs
                    .iter()
                    .find(|i| i.spec.name == *name)
                    .ok_or_else(|| format!("{}: no input `{name}`", spec.display()))?;
                Ok(RawSource {
                    name,
                    spec: &info.spec,
                    span: info.span,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        specc_compiler::guard(|| with_raw_inputs(&tflite, &sources, o.batch).map_err(|d| vec![d]))
            .map_err(|d| report(&d, &src))
    };
    if o.checkpoint.is_none() {
        // A dry run: every refusal, the raw inputs' included.
        if o.raw_inputs {
            with_raw(tflite)?;
        }
        return Ok(());
    }
    let tflite = match o.quantize {
        Quantize::None => tflite,
        Quantize::Dynamic => {
            let (m, n) = quantize_dynamic(&tflite)?;
            println!(
                "{}: dynamic-range quantization: {n} weight tensor{} to int8",
                o.output.display(),
                if n == 1 { "" } else { "s" }
            );
            m
        }
        Quantize::Int8 {
            data,
            samples,
            interface: (input, output),
        } => {
            let trained = trained_ranges(&tflite);
            if data.is_none() && trained == 0 {
                return Err(Failure::from(
                    "--quantize int8 needs --representative-data FILE (rows to calibrate on): the spec has no fake quantization to take ranges from",
                ));
            }
            let calibration = data
                .map(|data| super::calibrate::calibrate(&src, &tflite, data, samples))
                .transpose()?;
            let m = quantize_int8(&tflite, calibration.as_ref())
                .and_then(|m| set_inference_types(&m, input, output))
                .map_err(|e| format!("{}: {e}", o.output.display()))?;
            let mut how = Vec::new();
            if trained > 0 {
                how.push(format!(
                    "with the ranges of {trained} fake quantization{}",
                    if trained == 1 { "" } else { "s" }
                ));
            }
            if let (Some(c), Some(data)) = (&calibration, data) {
                how.push(format!(
                    "calibrated on {} row{} of {}",
                    c.rows(),
                    if c.rows() == 1 { "" } else { "s" },
                    data.display()
                ));
            }
            println!(
                "{}: int8 quantization {}; {} inputs, {} outputs",
                o.output.display(),
                how.join(", "),
                input.name(),
                output.name()
            );
            m
        }
    };
    // The feature columns in front, after quantization: the calibration
    // and the quantized operators see the dense inputs, as without.
    let tflite = if o.raw_inputs {
        with_raw(tflite)?
    } else {
        tflite
    };
    let bytes = specc_tflite::to_bytes(&tflite);
    write_atomic(o.output, |f| {
        f.write_all(&bytes).map_err(|e| cannot_write(o.output, e))
    })?;
    write_features(&model, spec, &inputs, o.output, Some(&tflite))?;
    let g0 = &tflite.subgraphs[0];
    // The model's inputs: the dense ones, or the raw columns.
    let taken: Vec<String> = match tflite.metadata_string(RAW_INPUTS_METADATA) {
        Some(columns) => columns.lines().map(String::from).collect(),
        None => inputs.clone(),
    };
    println!(
        "{}: {} operators, {} tensors; inputs {}; outputs {}{}",
        o.output.display(),
        g0.operators.len(),
        g0.tensors.len(),
        taken.join(", "),
        names.join(", "),
        serving.note()
    );
    Ok(())
}

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
pub(crate) fn write_features(
    model: &specc_compiler::Model,
    spec: &Path,
    inputs: &[String],
    exported: &Path,
    tflite: Option<&specc_tflite::Model>,
) -> Result<std::path::PathBuf, Failure> {
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
                tflite.and_then(|m| tflite_boundary::describe(m, name, true)),
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
                    let b = tflite_boundary::describe(m, c, true).unwrap_or_default();
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
        doc["outputs"] = tflite_boundary::outputs(m).into();
    }
    let mut name = exported.as_os_str().to_owned();
    name.push(".features.json");
    let path = std::path::PathBuf::from(name);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    write_atomic(&path, |f| {
        f.write_all((text + "\n").as_bytes())
            .map_err(|e| cannot_write(&path, e))
    })?;
    Ok(path)
}

/// The error of a write to the file `path` is written to.
fn cannot_write(path: &std::path::Path, e: std::io::Error) -> String {
    format!("cannot write {}: {e}", path.display())
}
