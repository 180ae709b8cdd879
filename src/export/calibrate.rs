//! The calibration rows of a full-integer model (`specc export --quantize
//! int8 --representative-data FILE [--samples N]`).
//!
//! Owns: reading the first `samples` rows of the representative data
//! through the spec's feature columns and input pipeline (as `specc predict`
//! reads data: CSV or TFRecord, no label needed) and running them through
//! the float model in specc's interpreter to record every activation's
//! range (`specc_tflite::quantize::Calibration`).
//!
//! Invariants: exactly `min(samples, rows in the file)` rows are
//! calibrated on, in file order (a fixed-batch model runs padded batches
//! whose padding rows are not calibrated on); a file with no rows, or rows the spec's
//! feature columns refuse, is an error naming the file.

use std::path::Path;

use specc_compiler::driver::{compile_with, Functions, Options, Program, ProgramSession};
use specc_grammar::SourceFile;
use specc_tflite::quantize::Calibration;
use specc_tflite::{Interpreter, Model};

use super::predictor::TflitePredictor;
use crate::run::data::open_prediction_source;
use crate::run::Error;

/// Rows per batch while calibrating.
const BATCH: u32 = 256;

/// The ranges of `model`'s activations over the first `samples` rows of
/// `data`.
pub fn calibrate(
    src: &SourceFile,
    model: &Model,
    data: &Path,
    samples: usize,
) -> Result<Calibration, Error> {
    let compile = |batch: u32| {
        let options = Options {
            max_batch: Some(batch),
            ..Options::default()
        };
        compile_with(src, Functions::PREDICT, &options).map_err(|diagnostics| Error::Spec {
            source: src.clone(),
            diagnostics,
        })
    };
    let mut program = compile(BATCH)?;
    let name = Path::new("the exported model");
    let mut predictor =
        TflitePredictor::new(model.clone(), name, &*session(&program)?).map_err(Error::Settings)?;
    // A fixed-batch model: batches of its size, the last one padded.
    let batch = match predictor.fixed_batch() {
        Some(b) if b as u32 != BATCH => {
            program = compile(b as u32)?;
            predictor = TflitePredictor::new(model.clone(), name, &*session(&program)?)
                .map_err(Error::Settings)?;
            b as u32
        }
        _ => BATCH,
    };
    let mut session = session(&program)?;
    let reads = predictor.reads(session.layout.inputs.len());
    let mut source = open_prediction_source(&program.model, &session.layout, &reads, data, batch)?;
    let interpreter =
        Interpreter::new(predictor.model()).map_err(|e| Error::Settings(e.to_string()))?;
    let mut calibration = Calibration::new(predictor.model());
    while calibration.rows() < samples {
        let rows = session
            .fill(&mut source)
            .map_err(|e| Error::Data(e.to_string()))?;
        if rows == 0 {
            break;
        }
        let rows = rows.min(samples - calibration.rows());
        let inputs = predictor
            .batch_inputs(&session, rows, true)
            .map_err(Error::Data)?;
        calibration
            .run(&interpreter, inputs, rows)
            .map_err(|e| Error::Data(format!("{}: {e}", data.display())))?;
    }
    if calibration.rows() == 0 {
        return Err(Error::Data(format!(
            "{}: no rows to calibrate on",
            data.display()
        )));
    }
    Ok(calibration)
}

/// A session of `program`; the error is the session's (memory).
fn session(program: &Program) -> Result<ProgramSession<'_>, Error> {
    program.session().map_err(Error::Session)
}
