//! Exporting a trained model: a TensorFlow Lite flatbuffer ([`tflite()`],
//! `specc export --format tflite`) or a relocatable object file with its C
//! header ([`object()`], `--format object`), each with
//! `<file>.features.json` beside it ([`features`]).
//!
//! Owns: where the trained values come from ([`Weights`]: a TF checkpoint,
//! or a [`Model`](crate::Model) trained in this process), each averaged
//! parameter from its moving average when asked
//! ([`crate::averages::Serving`]), what each export writes and what it
//! reports back ([`TfliteExport`], [`ObjectExport`]), the calibration of a
//! full-integer model ([`calibrate`]) and specc's interpreter bound to a
//! spec ([`TflitePredictor`]). The lowerings are `specc_compiler::export`
//! (`tflite`, `aot`); the file format is `specc_tflite`.
//!
//! Invariants: nothing here prints: a spec's errors come back as
//! [`Error::Spec`] with their diagnostics, the
//! others as the [`Error`] variant of their kind, and
//! what was written as a value the caller shows (the CLI prints it, the
//! Python package returns it); every file is written to a temporary file
//! and renamed into place, so a failure leaves no half-written file; the
//! same spec, flags and values write the same bytes whichever caller asks.

pub mod calibrate;
pub mod features;
pub mod object;
pub mod predictor;
pub mod tflite;

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::session::Session;

use crate::averages::Serving;
use crate::run::Error;

pub use object::{object, ObjectExport, ObjectOptions};
pub use predictor::TflitePredictor;
pub use specc_tflite::quantize::InferenceType;
pub use tflite::{tflite, Quantize, Quantized, TfliteExport, TfliteOptions};

/// Where an export's trained values come from.
#[derive(Clone, Copy)]
pub enum Weights<'a> {
    /// A TF checkpoint: a prefix (`DIR/model.ckpt-100`) or a directory (its
    /// latest checkpoint).
    Checkpoint(&'a Path),
    /// The current values of a model of the same spec (trained in this
    /// process).
    Model(&'a crate::Model),
}

/// [`Weights`] opened: a checkpoint's reader, or a model's session.
pub(crate) enum Values<'a> {
    Checkpoint(BundleReader),
    Session(&'a Session),
}

impl Values<'_> {
    /// Opens `weights`, checked to hold what `serving` reads.
    pub(crate) fn open<'a>(weights: Weights<'a>, serving: &Serving) -> Result<Values<'a>, Error> {
        match weights {
            Weights::Checkpoint(path) => {
                let prefix =
                    crate::run::restore::checkpoint_prefix(path).map_err(|e| checkpoint(&e))?;
                let reader = BundleReader::open(&prefix).map_err(|e| checkpoint(&e))?;
                serving.check(&reader).map_err(Error::Checkpoint)?;
                Ok(Values::Checkpoint(reader))
            }
            Weights::Model(model) => {
                serving
                    .check_session(&model.session)
                    .map_err(Error::Settings)?;
                Ok(Values::Session(&model.session))
            }
        }
    }

    /// The tensor `name`'s values; the error names it and where it was
    /// looked for.
    pub(crate) fn load(&self, name: &str) -> Result<ArrayD<f32>, Error> {
        match self {
            Values::Checkpoint(reader) => {
                let Some(entry) = reader.entry(name) else {
                    return Err(Error::Checkpoint(format!(
                        "{}: no variable `{name}`, which the model needs",
                        reader.index_file().display()
                    )));
                };
                let shape = entry.shape.clone();
                let mut values = vec![0f32; shape.iter().product()];
                reader
                    .load_f32_into(name, &mut values)
                    .map_err(|e| checkpoint(&e))?;
                ArrayD::from_shape_vec(IxDyn(&shape), values)
                    .map_err(|e| Error::Checkpoint(format!("`{name}`: {e}")))
            }
            Values::Session(session) => {
                session.variable(name).map(|v| v.to_owned()).ok_or_else(|| {
                    Error::Settings(format!(
                        "the model has no variable `{name}`, which it needs"
                    ))
                })
            }
        }
    }

    /// Sets every parameter of `session` (a session of the same spec) from
    /// these values, each averaged one from its moving average with the
    /// averages. From a checkpoint without the averages, every variable it
    /// has (`Session::restore`).
    pub(crate) fn restore(&self, session: &mut Session, serving: &Serving) -> Result<(), Error> {
        match self {
            Values::Checkpoint(reader) if serving.uses_averages() => {
                serving.restore(session, reader).map_err(Error::Checkpoint)
            }
            Values::Checkpoint(reader) => session.restore(reader).map_err(|e| checkpoint(&e)),
            Values::Session(from) => serving.copy_params(session, from).map_err(Error::Settings),
        }
    }
}

/// A checkpoint error as the run's.
fn checkpoint(e: &impl std::fmt::Display) -> Error {
    Error::Checkpoint(e.to_string())
}

/// The error of a write to `path`.
pub(crate) fn cannot_write(path: &Path, e: std::io::Error) -> String {
    format!("cannot write {}: {e}", path.display())
}
