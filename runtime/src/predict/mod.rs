//! Inference with a trained model: the `predict` function over any number
//! of rows, its outputs written one line per input row.
//!
//! Owns: [`restore_parameters`] (a model's parameters from a checkpoint,
//! nothing else: a checkpoint without optimizer slots serves), [`run`] (the
//! loop: the source fills a batch of up to `max_batch` rows, one call of the
//! compiled `predict`, its outputs to the [`PredictionWriter`]) and
//! [`PredictError`]; the file formats are [`write`](mod@write)'s.
//!
//! Invariants: rows come out in the order the source gives them, one output
//! row per input row, the last batch as short as the data; a refused restore
//! changes nothing; nothing allocates per batch or per row once the first
//! batch is written.

pub mod write;

use std::fmt;
use std::path::PathBuf;

use crate::abi::{ElemType, VarRole};
use crate::checkpoint::bundle::BundleReader;
use crate::checkpoint::tensor::{shape_string, DType};
use crate::checkpoint::{CheckpointError, CheckpointErrorKind};
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

/// Copies every parameter of the session's model (`VarRole::Param`, TF's
/// variable names) from `reader`; optimizer slots, moving averages and the
/// global step are not needed. Every parameter is checked (present, float32,
/// the model's shape) before any is loaded.
pub fn restore_parameters(
    session: &mut Session,
    reader: &BundleReader,
) -> Result<(), CheckpointError> {
    let index = reader.index_file().to_path_buf();
    let mut names = Vec::new();
    for v in &session.layout.vars {
        if !matches!(v.kind, VarRole::Param { .. }) {
            continue;
        }
        let e = reader.entry(&v.name).ok_or_else(|| {
            let known: Vec<&str> = reader.entries().iter().map(|(n, _)| n.as_str()).collect();
            let mut m = "the model's parameter is not in the checkpoint".to_string();
            if let Some(s) = crate::suggest::closest(&v.name, known.iter().copied()) {
                m.push_str(&format!(" (it has `{s}`)"));
            }
            CheckpointError::tensor(CheckpointErrorKind::Mismatch, &index, &v.name, m)
        })?;
        if e.dtype != DType::Float || e.shape != v.shape {
            return Err(CheckpointError::tensor(
                CheckpointErrorKind::Mismatch,
                &index,
                &v.name,
                format!(
                    "the checkpoint has a {} tensor of shape {}, the model a float32 parameter of shape {}",
                    e.dtype,
                    shape_string(&e.shape),
                    shape_string(&v.shape)
                ),
            ));
        }
        names.push(v.name.clone());
    }
    for name in &names {
        if let Some(dst) = session.var_mut(name) {
            reader.load_f32_into(name, dst)?;
        }
    }
    Ok(())
}

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
