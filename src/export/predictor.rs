//! An exported TensorFlow Lite model run by specc's own interpreter
//! (`specc_tflite`) on rows preprocessed by the spec's feature columns:
//! `specc predict SPEC --tflite model.tflite --data FILE`, and the
//! calibration of `--quantize int8` ([`super::calibrate`]).
//!
//! Owns: binding a model's `serving_default` signature to the spec — every
//! signature input is one of the spec's dense inputs by name (what
//! `specc export` writes), every signature output a column of the
//! predictions — and the batch loop: the session's input pipeline fills a
//! batch, the batch becomes the interpreter's inputs, its outputs go to the
//! [`PredictionWriter`].
//!
//! Invariants: a model whose signature names an input the spec does not
//! have, or an output of a type the writer cannot print, is refused before
//! any row is read, with an error naming the file; a model exported with a
//! fixed batch runs batches of exactly that many rows (the last one padded
//! with zeros, the padding rows' outputs dropped); rows come out in input
//! order, one per input row.

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use specc_runtime::abi::ElemType;
use specc_runtime::predict::{OutputColumn, OutputValues, PredictionWriter};
use specc_runtime::session::Session;
use specc_runtime::source::BatchSource;
use specc_tflite::{Interpreter, Model, SignatureDef, TensorType, Value};

/// One signature input: the session's input it is fed from.
struct Feed {
    /// Index in the session's layout.
    input: usize,
    /// Index in the subgraph's inputs.
    position: usize,
    /// Values per row.
    per_row: usize,
    /// The model's dimensions after the batch dimension.
    dims: Vec<usize>,
    int: bool,
}

/// An exported model bound to a spec's session.
pub struct TflitePredictor {
    model: Model,
    feeds: Vec<Feed>,
    /// `(index in the subgraph's outputs, column)`, in the signature's order.
    outputs: Vec<(usize, OutputColumn)>,
    /// The model's fixed batch, if it has one.
    fixed_batch: Option<usize>,
}

impl TflitePredictor {
    /// Binds `model` (named `path` in errors) to the session's inputs.
    pub fn new(model: Model, path: &Path, session: &Session) -> Result<TflitePredictor, String> {
        let file = path.display();
        let g = model
            .subgraphs
            .first()
            .ok_or_else(|| format!("{file}: the model has no subgraph"))?;
        let sig = signature(&model, path)?;
        let layout = &session.layout;
        let mut feeds = Vec::new();
        let mut fixed_batch = None;
        for m in &sig.inputs {
            let t = &g.tensors[m.tensor_index as usize];
            let input = layout
                .inputs
                .iter()
                .position(|l| l.name == m.name)
                .ok_or_else(|| {
                    let known: Vec<&str> = layout.inputs.iter().map(|l| l.name.as_str()).collect();
                    format!(
                        "{file}: the model's input `{}` is not an input of the spec (it has: {})",
                        m.name,
                        known.join(", ")
                    )
                })?;
            let position = subgraph_input(g, m, path)?;
            let l = &layout.inputs[input];
            let int = match (t.tensor_type, l.elem) {
                (TensorType::Float32, ElemType::F32) => false,
                // An integer-only model (`--inference-input-type int8|uint8`):
                // the values quantized with the input's scale and zero point.
                (TensorType::Int8 | TensorType::Uint8, ElemType::F32) => {
                    quantized(t)
                        .map_err(|e| format!("{file}: the model's input `{}`: {e}", m.name))?;
                    false
                }
                (TensorType::Int32, ElemType::I32) => true,
                (tt, _) => {
                    return Err(format!(
                        "{file}: the model's input `{}` is {tt}, the spec's input is {}",
                        m.name,
                        if l.elem == ElemType::F32 {
                            "float32"
                        } else {
                            "int32"
                        }
                    ))
                }
            };
            let dims: Vec<usize> = t.shape.iter().skip(1).map(|&d| d.max(0) as usize).collect();
            let per_row: usize = dims.iter().product();
            if t.shape.is_empty() || per_row != l.per_example {
                return Err(format!(
                    "{file}: the model's input `{}` has shape {:?}, the spec's has {} values per row",
                    m.name, t.shape, l.per_example
                ));
            }
            if t.shape_signature.as_ref().is_none_or(|s| s[0] >= 0) {
                let b = t.shape[0].max(1) as usize;
                if fixed_batch.is_some_and(|f| f != b) {
                    return Err(format!(
                        "{file}: the model's inputs have different batch sizes"
                    ));
                }
                fixed_batch = Some(b);
            }
            feeds.push(Feed {
                input,
                position,
                per_row,
                dims,
                int,
            });
        }
        if feeds.len() != g.inputs.len() {
            return Err(format!(
                "{file}: the signature names {} of the subgraph's {} inputs",
                feeds.len(),
                g.inputs.len()
            ));
        }
        let outputs = bind_outputs(&model, path)?;
        Interpreter::new(&model).map_err(|e| format!("{file}: {e}"))?;
        Ok(TflitePredictor {
            model,
            feeds,
            outputs,
            fixed_batch,
        })
    }

    /// `model` bound by its outputs alone: a raw-input model, which
    /// `predict_raw` feeds from the CSV's cells.
    pub fn outputs_only(model: Model, path: &Path) -> Result<TflitePredictor, String> {
        let outputs = bind_outputs(&model, path)?;
        Ok(TflitePredictor {
            model,
            feeds: Vec::new(),
            outputs,
            fixed_batch: None,
        })
    }

    /// The session inputs the model reads, by layout index.
    pub fn reads(&self, inputs: usize) -> Vec<bool> {
        let mut r = vec![false; inputs];
        for f in &self.feeds {
            r[f.input] = true;
        }
        r
    }

    /// The columns of the predictions, in the signature's order.
    pub fn columns(&self) -> Vec<OutputColumn> {
        self.outputs.iter().map(|(_, c)| c.clone()).collect()
    }

    /// The batch the model was exported with, if fixed.
    pub fn fixed_batch(&self) -> Option<usize> {
        self.fixed_batch
    }

    /// The model's inputs (in the subgraph's order) from the first `rows`
    /// rows of the session's input buffers; with `pad`, a fixed-batch
    /// model's batch is filled up with zeros.
    pub fn batch_inputs(
        &self,
        session: &Session,
        rows: usize,
        pad: bool,
    ) -> Result<Vec<Value>, String> {
        let run_rows = match self.fixed_batch {
            Some(b) if pad => b.max(rows),
            _ => rows,
        };
        let mut values: Vec<Option<Value>> = vec![None; self.model.subgraphs[0].inputs.len()];
        for f in &self.feeds {
            let mut shape = vec![run_rows];
            shape.extend_from_slice(&f.dims);
            let v = if f.int {
                let mut x = session
                    .input_i32(f.input, rows)
                    .ok_or("an int32 input was not filled")?
                    .to_vec();
                x.resize(run_rows * f.per_row, 0);
                Value::I32(ArrayD::from_shape_vec(IxDyn(&shape), x).map_err(|e| e.to_string())?)
            } else {
                let mut x = session
                    .input_f32(f.input, rows)
                    .ok_or("a float input was not filled")?
                    .to_vec();
                x.resize(run_rows * f.per_row, 0.0);
                let x = ArrayD::from_shape_vec(IxDyn(&shape), x).map_err(|e| e.to_string())?;
                // Quantized for an INT8 or UINT8 input.
                let g = &self.model.subgraphs[0];
                Value::from_f32(x, &g.tensors[g.inputs[f.position] as usize])?
            };
            values[f.position] = Some(v);
        }
        Ok(values.into_iter().flatten().collect())
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The outputs `out` of a batch of `rows` rows (padding rows after
    /// them dropped) to `writer`.
    pub fn write_batch<W: std::io::Write>(
        &self,
        file: &Path,
        out: &[Value],
        rows: usize,
        writer: &mut PredictionWriter<W>,
    ) -> Result<(), String> {
        let cols: Vec<Result<Col, String>> = self
            .outputs
            .iter()
            .map(|(k, c)| {
                let n = rows * c.per_row();
                let v = &out[*k];
                let flat = |len: usize| {
                    if len < n {
                        Err(format!(
                            "{}: the output `{}` has {len} values for {rows} rows",
                            file.display(),
                            c.name
                        ))
                    } else {
                        Ok(())
                    }
                };
                match v {
                    Value::F32(a) => {
                        flat(a.len())?;
                        Ok(Col::F32(a.iter().take(n).copied().collect()))
                    }
                    Value::I32(a) => {
                        flat(a.len())?;
                        Ok(Col::I32(a.iter().take(n).copied().collect()))
                    }
                    Value::I64(a) => {
                        flat(a.len())?;
                        Ok(Col::I32(a.iter().take(n).map(|&x| x as i32).collect()))
                    }
                    Value::I8(_) | Value::U8(_) => {
                        let g = &self.model.subgraphs[0];
                        let a = v
                            .dequantized(&g.tensors[g.outputs[*k] as usize])
                            .map_err(|e| format!("{}: {e}", file.display()))?;
                        flat(a.len())?;
                        Ok(Col::F32(a.iter().take(n).copied().collect()))
                    }
                    other => Err(format!(
                        "{}: the output `{}` is {}",
                        file.display(),
                        c.name,
                        other.type_name()
                    )),
                }
            })
            .collect();
        let cols = cols.into_iter().collect::<Result<Vec<Col>, String>>()?;
        writer
            .write_batch(rows, |c| {
                Some(match &cols[c] {
                    Col::F32(v) => OutputValues::F32(v),
                    Col::I32(v) => OutputValues::I32(v),
                })
            })
            .map_err(|e| writer.error(e).to_string())?;
        Ok(())
    }

    /// Every batch of `source` through the model, to `writer` (not
    /// finished). Returns the rows predicted.
    pub fn run<W: std::io::Write>(
        &self,
        file: &Path,
        session: &mut Session,
        source: &mut dyn BatchSource,
        writer: &mut PredictionWriter<W>,
    ) -> Result<u64, String> {
        let interpreter =
            Interpreter::new(&self.model).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut rows_done = 0u64;
        loop {
            let rows = session.fill(source).map_err(|e| e.to_string())?;
            if rows_done == 0 {
                writer
                    .write_header()
                    .map_err(|e| writer.error(e).to_string())?;
            }
            if rows == 0 {
                break;
            }
            let values = self.batch_inputs(session, rows, true)?;
            let out = interpreter
                .invoke(values)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            self.write_batch(file, &out, rows, writer)?;
            rows_done += rows as u64;
        }
        Ok(rows_done)
    }
}

/// The model's `serving_default` signature (or its first); the error
/// names the file `path`.
pub fn signature<'m>(model: &'m Model, path: &Path) -> Result<&'m SignatureDef, String> {
    super::features::serving_signature(model).ok_or_else(|| {
        format!(
            "{}: the model has no signature naming its inputs and outputs",
            path.display()
        )
    })
}

/// The position among the subgraph's inputs of the signature's input
/// `m`; the error names the file `path`.
pub fn subgraph_input(
    g: &specc_tflite::SubGraph,
    m: &specc_tflite::TensorMap,
    path: &Path,
) -> Result<usize, String> {
    g.inputs
        .iter()
        .position(|&i| i as u32 == m.tensor_index)
        .ok_or_else(|| {
            format!(
                "{}: the signature's input `{}` is not a subgraph input",
                path.display(),
                m.name
            )
        })
}

/// The signature's outputs: `(index in the subgraph's outputs, column)`,
/// each of a type the writer prints.
fn bind_outputs(model: &Model, path: &Path) -> Result<Vec<(usize, OutputColumn)>, String> {
    let file = path.display();
    let sig = signature(model, path)?;
    let g = model
        .subgraphs
        .first()
        .ok_or_else(|| format!("{file}: the model has no subgraph"))?;
    let mut outputs = Vec::new();
    for m in &sig.outputs {
        let t = &g.tensors[m.tensor_index as usize];
        let position = g
            .outputs
            .iter()
            .position(|&i| i as u32 == m.tensor_index)
            .ok_or_else(|| {
                format!(
                    "{file}: the signature's output `{}` is not a subgraph output",
                    m.name
                )
            })?;
        match t.tensor_type {
            TensorType::Float32 | TensorType::Int32 | TensorType::Int64 => {}
            // Dequantized (`--inference-output-type int8|uint8`).
            TensorType::Int8 | TensorType::Uint8 => quantized(t)
                .map_err(|e| format!("{file}: the model's output `{}`: {e}", m.name))?,
            other => {
                return Err(format!(
                    "{file}: the model's output `{}` is {other}; predict writes FLOAT32, integer and quantized INT8 or UINT8 outputs",
                    m.name
                ))
            }
        }
        let dims = t.shape.iter().skip(1).map(|&d| d.max(0) as usize).collect();
        outputs.push((
            position,
            OutputColumn {
                name: m.name.clone(),
                dims,
            },
        ));
    }
    Ok(outputs)
}

/// Whether `t` has the per-tensor scale and zero point of an integer
/// boundary.
fn quantized(t: &specc_tflite::Tensor) -> Result<(), String> {
    match &t.quantization {
        Some(q) if q.scale.len() == 1 => Ok(()),
        _ => Err(format!(
            "{} without a scale and zero point (specc predict quantizes and dequantizes INT8 and UINT8 inputs and outputs with them)",
            t.tensor_type
        )),
    }
}

/// One output's values for a batch.
enum Col {
    F32(Vec<f32>),
    I32(Vec<i32>),
}
