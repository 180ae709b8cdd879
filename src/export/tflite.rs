//! The trained inference graph as a TensorFlow Lite model (`specc export
//! --format tflite`, `Model.export_tflite` in Python).
//!
//! Owns: choosing what is exported (the spec's `outputs` item, or the
//! bindings [`TfliteOptions::outputs`] names; the feature inputs they need,
//! in the spec's order), reading the parameters ([`super::Weights`]: each
//! averaged one from its moving average with the averages,
//! `crate::averages`), the post-training quantization asked for
//! ([`Quantize`]: `specc_tflite::quantize`, the calibration rows
//! [`super::calibrate`]; a full-integer model's boundary types), the raw
//! columns in front ([`TfliteOptions::raw_inputs`]), and writing the file
//! and `<file>.features.json` ([`super::features`]). The lowering is
//! `specc_compiler::export::tflite`, the format `specc_tflite`.
//!
//! Invariants: a dry run ([`check`]) refuses exactly what an export of the
//! same spec and options refuses before its values are read (`specc run
//! --export-on-save` asks it before training); nothing is written unless
//! the whole model was made.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use specc_compiler::export::tflite::raw::{with_raw_inputs, RawSource, RAW_INPUTS_METADATA};
use specc_compiler::export::tflite::{export_tflite, TfliteExport as Request};
use specc_compiler::ir::{Function, NodeId, Op, Output};
use specc_compiler::model::InputRole;
use specc_grammar::SourceFile;
use specc_runtime::io::atomic::write_atomic;
use specc_tflite::quantize::{
    quantize_dynamic, quantize_int8, set_inference_types, trained_ranges, InferenceType,
};

use super::{cannot_write, features::write_features, Values, Weights};
use crate::averages::Serving;
use crate::run::Error;

/// What to export and how.
#[derive(Clone, Copy, Debug)]
pub struct TfliteOptions<'a> {
    /// Bindings to export as the model's outputs (`--fetch`; empty: the
    /// spec's `outputs` item).
    pub outputs: &'a [String],
    /// A fixed batch size instead of a dynamic one.
    pub batch: Option<u32>,
    /// Post-training quantization.
    pub quantize: Quantize<'a>,
    /// Whether to use the moving averages (`None`: the spec's `ema ...,
    /// use_averages`).
    pub use_averages: Option<bool>,
    /// The model takes the raw columns (`specc_compiler::export::tflite::raw`).
    pub raw_inputs: bool,
}

impl Default for TfliteOptions<'_> {
    fn default() -> Self {
        TfliteOptions {
            outputs: &[],
            batch: None,
            quantize: Quantize::None,
            use_averages: None,
            raw_inputs: false,
        }
    }
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
        /// The representative rows (a CSV or TFRecord file the spec reads).
        data: Option<&'a Path>,
        /// How many of them to calibrate on.
        samples: usize,
        /// The types of the model's inputs and of its float outputs.
        interface: (InferenceType, InferenceType),
    },
}

impl<'a> Quantize<'a> {
    /// The quantization `--quantize` (`Some(true)`: int8, `Some(false)`:
    /// dynamic), `--representative-data`, `--samples`,
    /// `--inference-input-type` and `--inference-output-type` (TF's
    /// converter's `inference_input_type`, `inference_output_type`; float32
    /// when not given) ask for: an error names an option that does not go
    /// with the others.
    pub fn from_flags(
        quantize: Option<bool>,
        data: Option<&'a Path>,
        samples: usize,
        input: Option<InferenceType>,
        output: Option<InferenceType>,
    ) -> Result<Quantize<'a>, Error> {
        if quantize != Some(true) {
            if let Some((flag, t)) = [("input", input), ("output", output)]
                .into_iter()
                .find_map(|(f, t)| Some((f, t?)))
            {
                let with = match quantize {
                    Some(_) => "--quantize dynamic keeps float activations",
                    None => "a float model's inputs and outputs are float32",
                };
                return Err(Error::Settings(format!(
                    "--inference-{flag}-type {} is for --quantize int8 (full-integer \
                     quantization); {with}",
                    t.name()
                )));
            }
        }
        match (quantize, data) {
            (None, None) => Ok(Quantize::None),
            (Some(false), None) => Ok(Quantize::Dynamic),
            (Some(true), data) => Ok(Quantize::Int8 {
                data,
                samples,
                interface: (
                    input.unwrap_or(InferenceType::Float32),
                    output.unwrap_or(InferenceType::Float32),
                ),
            }),
            (_, Some(_)) => Err(Error::Settings(
                "--representative-data is for --quantize int8".into(),
            )),
        }
    }
}

/// The quantization a written model has.
#[derive(Clone, Debug, PartialEq)]
pub enum Quantized {
    /// Dynamic-range: this many weight tensors became int8.
    Dynamic {
        /// The weight tensors quantized.
        weights: usize,
    },
    /// Full-integer int8.
    Int8 {
        /// Activations whose ranges came from the spec's fake quantizations.
        trained: usize,
        /// The rows calibrated on and their file, if any.
        calibrated: Option<(usize, PathBuf)>,
        /// The type of the model's inputs.
        input: InferenceType,
        /// The type of its float outputs.
        output: InferenceType,
    },
}

/// What [`tflite`] wrote.
#[derive(Clone, Debug)]
pub struct TfliteExport {
    /// The model file.
    pub path: PathBuf,
    /// Its `<file>.features.json`.
    pub features: PathBuf,
    /// The file's size.
    pub bytes: usize,
    /// Operators and tensors of its subgraph.
    pub operators: usize,
    /// Tensors of its subgraph.
    pub tensors: usize,
    /// What the model takes: the dense inputs, or the raw columns.
    pub inputs: Vec<String>,
    /// Its outputs, in the signature's order.
    pub outputs: Vec<String>,
    /// The quantization, if any.
    pub quantized: Option<Quantized>,
    /// Where the parameters came from (the moving averages or not).
    pub serving: Serving,
}

/// The model of `src` with `weights`' values, written to `output` (and
/// `<output>.features.json`).
pub fn tflite(
    src: &SourceFile,
    weights: Weights<'_>,
    output: &Path,
    o: &TfliteOptions<'_>,
) -> Result<TfliteExport, Error> {
    let written = export(src, Some(weights), output, o)?;
    written.ok_or_else(|| Error::Session("the export wrote nothing".into()))
}

/// Whether [`tflite`] would refuse `src` with these options, before
/// anything is trained: every parameter zero, nothing written.
pub fn check(src: &SourceFile, o: &TfliteOptions<'_>) -> Result<(), Error> {
    export(src, None, Path::new("model.tflite"), o).map(|_| ())
}

/// The export; `weights` `None`: a dry run.
fn export(
    src: &SourceFile,
    weights: Option<Weights<'_>>,
    output: &Path,
    o: &TfliteOptions<'_>,
) -> Result<Option<TfliteExport>, Error> {
    if let Quantize::Int8 {
        interface: (input, _),
        ..
    } = o.quantize
    {
        if o.raw_inputs && input != InferenceType::Float32 {
            return Err(Error::Settings(format!(
                "--raw-inputs: the model takes raw strings and float32 values, so its inputs \
                 cannot be {} (--inference-input-type); leave it float32",
                input.name()
            )));
        }
    }
    let spec = Path::new(&src.path);
    let spec_error = |diagnostics| Error::Spec {
        source: src.clone(),
        diagnostics,
    };
    let mut model = specc_compiler::check(src).map_err(spec_error)?;
    let outputs = chosen_outputs(&model, spec, o.outputs)?;
    let names: Vec<String> = outputs.iter().map(|(n, _)| n.clone()).collect();
    // The outputs as the inference function, simplified as the compiled
    // `predict` is: the training flag 0 (dropout and batch normalization
    // keep their inference branch), constants folded.
    let mut predict = Function::new("predict");
    predict.outputs = outputs
        .iter()
        .map(|(name, node)| Output {
            name: name.clone(),
            node: *node,
        })
        .collect();
    model.functions.predict = Some(predict);
    specc_compiler::passes::optimize(&mut model);
    let outputs: Vec<(String, NodeId)> = model
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
        if let Op::Input(i) = n.op {
            if live[id.index()] {
                let info = &model.inputs[i as usize];
                if info.role == InputRole::Label {
                    return Err(Error::Settings(format!(
                        "{}: the exported outputs read the label `{}`; export what inference computes",
                        spec.display(),
                        info.spec.name
                    )));
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

    // Each averaged parameter from its moving average with the averages.
    let serving = Serving::resolve(&model, o.use_averages, spec).map_err(Error::Settings)?;
    let values = weights.map(|w| Values::open(w, &serving)).transpose()?;
    let mut params = HashMap::new();
    for (id, n) in g.nodes() {
        let Op::Var(v) = n.op else {
            continue;
        };
        if !live[id.index()] {
            continue;
        }
        let var = &g.vars[v as usize];
        let array = match &values {
            Some(values) => values.load(&serving.tensor(&var.name))?,
            // A dry run: zeros of the parameter's shape.
            None => {
                let shape: Vec<usize> = var
                    .shape
                    .0
                    .iter()
                    .map(|d| d.fixed().unwrap_or(1) as usize)
                    .collect();
                ArrayD::zeros(IxDyn(&shape))
            }
        };
        params.insert(var.name.clone(), array);
    }
    let request = Request {
        graph: g,
        params: &params,
        inputs: &inputs,
        outputs: &outputs,
        batch: o.batch,
    };
    let tflite = specc_compiler::guard(|| export_tflite(&request).map_err(|d| vec![d]))
        .map_err(spec_error)?;
    // The feature columns in front (`raw_inputs`): after quantization, so
    // the calibration and the quantized operators see the dense inputs.
    let with_raw = |tflite| -> Result<_, Error> {
        let sources = inputs
            .iter()
            .map(|name| {
                let info = model
                    .inputs
                    .iter()
                    .find(|i| i.spec.name == *name)
                    .ok_or_else(|| {
                        Error::Settings(format!("{}: no input `{name}`", spec.display()))
                    })?;
                Ok(RawSource {
                    name,
                    spec: &info.spec,
                    span: info.span,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        specc_compiler::guard(|| with_raw_inputs(&tflite, &sources, o.batch).map_err(|d| vec![d]))
            .map_err(spec_error)
    };
    if values.is_none() {
        // A dry run: every refusal, the raw inputs' included.
        if o.raw_inputs {
            with_raw(tflite)?;
        }
        return Ok(None);
    }
    let (tflite, quantized) = quantize(src, tflite, output, o.quantize)?;
    let tflite = if o.raw_inputs {
        with_raw(tflite)?
    } else {
        tflite
    };
    let bytes = specc_tflite::to_bytes(&tflite);
    write_atomic(output, |f| {
        f.write_all(&bytes).map_err(|e| cannot_write(output, e))
    })
    .map_err(Error::Io)?;
    let features = write_features(&model, spec, &inputs, output, Some(&tflite))?;
    let g0 = &tflite.subgraphs[0];
    // The model's inputs: the dense ones, or the raw columns.
    let taken: Vec<String> = match tflite.metadata_string(RAW_INPUTS_METADATA) {
        Some(columns) => columns.lines().map(String::from).collect(),
        None => inputs,
    };
    Ok(Some(TfliteExport {
        path: output.to_path_buf(),
        features,
        bytes: bytes.len(),
        operators: g0.operators.len(),
        tensors: g0.tensors.len(),
        inputs: taken,
        outputs: names,
        quantized,
        serving,
    }))
}

/// The exported values: the bindings `fetch` names, or else the spec's
/// `outputs` item.
fn chosen_outputs(
    model: &specc_compiler::Model,
    spec: &Path,
    fetch: &[String],
) -> Result<Vec<(String, NodeId)>, Error> {
    let known = || -> String {
        let known: Vec<&str> = model.bindings.iter().map(|(b, _)| b.as_str()).collect();
        known.join(", ")
    };
    let mut outputs: Vec<(String, NodeId)> = match &model.functions.predict {
        Some(p) if fetch.is_empty() => p.outputs.iter().map(|o| (o.name.clone(), o.node)).collect(),
        None if fetch.is_empty() => {
            return Err(Error::Settings(format!(
                "{}: the spec has no `outputs` item: add one, or name the values to export \
                 with --fetch NAME (the spec binds: {})",
                spec.display(),
                known()
            )));
        }
        _ => Vec::new(),
    };
    for name in fetch {
        let Some(&(_, node)) = model.bindings.iter().find(|(b, _)| b == name) else {
            return Err(Error::Settings(format!(
                "{}: no binding `{name}` to export (the spec binds: {}); name one with --fetch",
                spec.display(),
                known()
            )));
        };
        outputs.push((name.clone(), node));
    }
    Ok(outputs)
}

/// `tflite` quantized as `how` asks (`output`: the file, for messages).
fn quantize(
    src: &SourceFile,
    tflite: specc_tflite::Model,
    output: &Path,
    how: Quantize<'_>,
) -> Result<(specc_tflite::Model, Option<Quantized>), Error> {
    match how {
        Quantize::None => Ok((tflite, None)),
        Quantize::Dynamic => {
            let (m, weights) = quantize_dynamic(&tflite).map_err(Error::Settings)?;
            Ok((m, Some(Quantized::Dynamic { weights })))
        }
        Quantize::Int8 {
            data,
            samples,
            interface: (input, output_type),
        } => {
            let trained = trained_ranges(&tflite);
            if data.is_none() && trained == 0 {
                return Err(Error::Settings(
                    "--quantize int8 needs --representative-data FILE (rows to calibrate on): \
                     the spec has no fake quantization to take ranges from"
                        .into(),
                ));
            }
            let calibration = data
                .map(|data| super::calibrate::calibrate(src, &tflite, data, samples))
                .transpose()?;
            let m = quantize_int8(&tflite, calibration.as_ref())
                .and_then(|m| set_inference_types(&m, input, output_type))
                .map_err(|e| Error::Settings(format!("{}: {e}", output.display())))?;
            let calibrated = calibration
                .as_ref()
                .zip(data)
                .map(|(c, d)| (c.rows(), d.to_path_buf()));
            Ok((
                m,
                Some(Quantized::Int8 {
                    trained,
                    calibrated,
                    input,
                    output: output_type,
                }),
            ))
        }
    }
}
