//! `specc predict SPEC --tflite model.tflite --data FILE` for a model
//! exported with `--raw-inputs`: specc's interpreter fed the CSV's raw
//! cells, the feature columns computed by the model itself.
//!
//! Owns: binding the model's raw inputs (the `specc_raw_inputs` metadata
//! of `specc_compiler::export::tflite::raw`) to the file's columns, and
//! the cells as the model takes them: a STRING input the cell's bytes as
//! they are (an empty cell `""`), a FLOAT32 input the cell's numbers
//! (whitespace-separated for a column of shape k > 1; an empty cell NaN,
//! which the model's default replaces).
//!
//! Invariants: the file is read with the spec's CSV options (its filter
//! aside: one prediction per row), in order, `batch` rows at a time (a
//! fixed-batch model's last batch padded with empty cells, their outputs
//! dropped); a cell that is not a number for a FLOAT32 input, or with the
//! wrong count of numbers, is an error naming the file, line and column.

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use specc_runtime::data::csv_file::{ByteRecord, CsvFile};
use specc_runtime::predict::PredictionWriter;
use specc_tflite::{Interpreter, Model, TensorType, Value};

use specc::export::predictor::{signature, subgraph_input, TflitePredictor};

/// One raw input: its field in the file, its position among the
/// subgraph's inputs, its type and values per row.
struct RawFeed {
    name: String,
    field: usize,
    position: usize,
    string: bool,
    width: usize,
}

/// A raw-input model bound to a CSV file's columns.
pub struct RawPredictor {
    predictor: TflitePredictor,
    feeds: Vec<RawFeed>,
    fixed_batch: Option<usize>,
}

impl RawPredictor {
    /// Binds `model` (named `path` in errors), whose raw inputs are the
    /// columns `columns` (its metadata), to its signature.
    pub fn new(model: Model, path: &Path) -> Result<RawPredictor, String> {
        let file = path.display();
        let sig = signature(&model, path)?;
        let g = model
            .subgraphs
            .first()
            .ok_or_else(|| format!("{file}: the model has no subgraph"))?;
        let mut feeds = Vec::new();
        let mut fixed_batch = None;
        for m in &sig.inputs {
            let t = &g.tensors[m.tensor_index as usize];
            let position = subgraph_input(g, m, path)?;
            let string = match (t.tensor_type, t.shape.len()) {
                (TensorType::String, 1) => true,
                (TensorType::Float32, 1 | 2) => false,
                (tt, _) => {
                    return Err(format!(
                        "{file}: the raw input `{}` is {tt} of shape {:?}; a raw-input model takes STRING [batch] and FLOAT32 [batch] or [batch, k]",
                        m.name, t.shape
                    ))
                }
            };
            if t.shape_signature.as_ref().is_none_or(|s| s[0] >= 0) {
                fixed_batch = Some(t.shape[0].max(1) as usize);
            }
            feeds.push(RawFeed {
                name: m.name.clone(),
                field: 0,
                position,
                string,
                width: t.shape.get(1).map_or(1, |&d| d.max(1) as usize),
            });
        }
        if feeds.len() != g.inputs.len() {
            return Err(format!(
                "{file}: the signature names {} of the subgraph's {} inputs",
                feeds.len(),
                g.inputs.len()
            ));
        }
        Interpreter::new(&model).map_err(|e| format!("{file}: {e}"))?;
        Ok(RawPredictor {
            predictor: TflitePredictor::outputs_only(model, path)?,
            feeds,
            fixed_batch,
        })
    }

    /// The predictor of the outputs (their columns, their writing).
    pub fn predictor(&self) -> &TflitePredictor {
        &self.predictor
    }

    /// Every row of the CSV file `csv` (named `data` in errors), `batch` rows at a
    /// time, through the model, to `writer` (not finished). Returns the
    /// rows predicted.
    pub fn run<W: std::io::Write>(
        &mut self,
        model_file: &Path,
        data: &Path,
        mut csv: CsvFile,
        batch: usize,
        writer: &mut PredictionWriter<W>,
    ) -> Result<u64, String> {
        let file = data.display().to_string();
        for f in &mut self.feeds {
            f.field = csv
                .columns
                .field(&f.name)
                .map_err(|(_, m)| format!("{file}: the model's raw input `{}`: {m}", f.name))?;
        }
        let batch = self.fixed_batch.unwrap_or(batch.max(1));
        let interpreter = Interpreter::new(self.predictor.model())
            .map_err(|e| format!("{}: {e}", model_file.display()))?;
        writer
            .write_header()
            .map_err(|e| writer.error(e).to_string())?;
        let (mut rec, mut scratch) = (ByteRecord::new(), ByteRecord::new());
        let mut rows_done = 0u64;
        loop {
            // The batch's cells, per feed.
            let mut strings: Vec<Vec<Vec<u8>>> = vec![Vec::new(); self.feeds.len()];
            let mut floats: Vec<Vec<f32>> = vec![Vec::new(); self.feeds.len()];
            let mut rows = 0;
            while rows < batch {
                let Some(line) = csv
                    .read_kept(&file, &mut rec, &mut scratch)
                    .map_err(|e| e.to_string())?
                else {
                    break;
                };
                for (k, f) in self.feeds.iter().enumerate() {
                    let cell = rec.get(f.field).unwrap_or_default();
                    if f.string {
                        strings[k].push(cell.to_vec());
                    } else {
                        numbers(cell, f.width, &mut floats[k])
                            .map_err(|m| format!("{file}:{line}: column `{}`: {m}", f.name))?;
                    }
                }
                rows += 1;
            }
            if rows == 0 {
                break;
            }
            let run_rows = if self.fixed_batch.is_some() {
                batch
            } else {
                rows
            };
            let mut values: Vec<Option<Value>> = vec![None; self.feeds.len()];
            for (k, f) in self.feeds.iter().enumerate() {
                let v = if f.string {
                    let mut s = std::mem::take(&mut strings[k]);
                    s.resize(run_rows, Vec::new());
                    Value::Str(
                        ArrayD::from_shape_vec(IxDyn(&[run_rows]), s).map_err(|e| e.to_string())?,
                    )
                } else {
                    let mut x = std::mem::take(&mut floats[k]);
                    x.resize(run_rows * f.width, f32::NAN);
                    let shape: Vec<usize> = if f.width == 1 {
                        vec![run_rows]
                    } else {
                        vec![run_rows, f.width]
                    };
                    Value::F32(ArrayD::from_shape_vec(IxDyn(&shape), x).map_err(|e| e.to_string())?)
                };
                values[f.position] = Some(v);
            }
            let out = interpreter
                .invoke(values.into_iter().flatten().collect())
                .map_err(|e| format!("{}: {e}", model_file.display()))?;
            self.predictor.write_batch(model_file, &out, rows, writer)?;
            rows_done += rows as u64;
        }
        Ok(rows_done)
    }
}

/// The `width` numbers of a cell into `out`: whitespace-separated, an
/// empty cell `width` NaNs (a missing value).
fn numbers(cell: &[u8], width: usize, out: &mut Vec<f32>) -> Result<(), String> {
    let text = std::str::from_utf8(cell).map_err(|_| "the cell is not UTF-8".to_string())?;
    let start = out.len();
    for word in text.split_whitespace() {
        let v: f64 = word
            .parse()
            .map_err(|_| format!("`{word}` is not a number"))?;
        out.push(v as f32);
    }
    match out.len() - start {
        0 => out.resize(start + width, f32::NAN),
        n if n == width => {}
        n => return Err(format!("{n} numbers, the model's input takes {width}")),
    }
    Ok(())
}
