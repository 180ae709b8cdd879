//! Inference with a trained model: the `predict` function over any number
//! of rows, its outputs written one line per input row.
//!
//! Owns: [`run`] (the loop: the source fills a batch of up to `max_batch` rows, one call of the
//! compiled `predict`, its outputs to the [`PredictionWriter`]) and
//! [`PredictError`]; the file formats are [`write`](mod@write)'s.
//!
//! Invariants: rows come out in the order the source gives them, one output
//! row per input row, the last batch as short as the data; nothing
//! allocates per batch or per row once the first batch is written. The
//! parameters come from a checkpoint through the one restore,
//! [`Session::restore_selected`] with `Selection::Parameters`.

pub mod write;

use std::fmt;
use std::path::PathBuf;

use crate::abi::ElemType;
use crate::data::DataError;
use crate::session::Session;
use crate::source::BatchSource;

pub use write::{OutputColumn, OutputFormat, OutputValues, PredictionWriter};

/// The name of the compiled inference function.
pub const PREDICT_FUNCTION: &str = "predict";

/// Why prediction stopped.
#[derive(Debug)]
pub enum PredictError {
    /// A bad row or file (file, line, column).
    Data(DataError),
    /// The compiled function refused the batch (a bug: the source fills at
    /// most `max_batch` rows).
    Call(String),
    /// Writing the predictions failed.
    Write {
        file: PathBuf,
        error: std::io::Error,
    },
}

impl fmt::Display for PredictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PredictError::Data(e) => write!(f, "{e}"),
            PredictError::Call(m) => write!(f, "predict: {m}"),
            PredictError::Write { file, error } => {
                write!(
                    f,
                    "{}: cannot write the predictions: {error}",
                    file.display()
                )
            }
        }
    }
}

impl std::error::Error for PredictError {}

/// Runs function `f` (the model's `predict`) over every batch of `source`
/// and writes each batch's outputs, the columns `writer` was made with, by
/// name. Returns the rows predicted. The writer is not finished (flushed).
pub fn run<W: std::io::Write>(
    session: &mut Session,
    f: usize,
    source: &mut dyn BatchSource,
    writer: &mut PredictionWriter<W>,
) -> Result<u64, PredictError> {
    let layout = session.function_layout(f).clone();
    let mut outputs = Vec::with_capacity(writer.columns().len());
    for c in writer.columns() {
        let k = layout
            .outputs
            .iter()
            .position(|o| o.name == c.name)
            .ok_or_else(|| PredictError::Call(format!("no output `{}`", c.name)))?;
        outputs.push((k, layout.outputs[k].elem));
    }
    let mut rows_done = 0u64;
    loop {
        let rows = session.fill(source).map_err(PredictError::Data)?;
        // The header once the first batch is read (nothing is written
        // before an error in the first rows) or the data is empty.
        if rows_done == 0 {
            writer.write_header().map_err(|e| writer.error(e))?;
        }
        if rows == 0 {
            break;
        }
        session.call(f, rows).map_err(PredictError::Call)?;
        let s = &*session;
        let column = |c: usize| {
            let (k, elem) = outputs[c];
            match elem {
                ElemType::F32 => s.output_at(f, k, rows).map(OutputValues::F32),
                ElemType::I32 => s.output_i32_at(f, k, rows).map(OutputValues::I32),
            }
        };
        writer
            .write_batch(rows, column)
            .map_err(|e| writer.error(e))?;
        rows_done += rows as u64;
    }
    Ok(rows_done)
}
