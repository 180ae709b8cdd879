//! `specc run SPEC --export-on-save DIR_OR_TEMPLATE`: the model exported
//! each time a checkpoint is written — TF's `CheckpointSaverListener`
//! (`after_save`) running an exporter, as Estimator's exporters do on
//! each new checkpoint.
//!
//! Owns: where each export goes ([`ExportOnSave::path`]: a template with
//! `{step}`, or a directory and `model-STEP.tflite` / `model-STEP.o`), the
//! checks before training ([`ExportOnSave::check`]: the run writes
//! checkpoints, none is removed while it is exported, and `specc export`'s
//! dry run accepts the spec and flags, so a refused export costs no
//! training), and the export of each written checkpoint through `specc
//! export`'s own code path (`specc::export`) on the
//! checkpoint just saved, with the spec's choice of moving averages.
//!
//! Invariant: the file written for step N is the one `specc export SPEC
//! --checkpoint PREFIX-N` writes with the same flags; a failed export is
//! kept and reported when training ends (the training and its checkpoints
//! are kept).

use std::path::{Path, PathBuf};

use super::export::ExportOptions;
use super::export_object::ObjectOptions;
use crate::Failure;
use specc::export::TfliteOptions;

/// What `--export-format` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Tflite,
    Object,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Tflite => "tflite",
            Format::Object => "o",
        }
    }
}

/// `--export-on-save` and its options.
#[derive(Clone, Debug)]
pub struct ExportOnSave {
    /// A directory, or a file name with `{step}`.
    pub target: PathBuf,
    pub format: Format,
    /// `--export-batch`: a fixed batch size for TF Lite.
    pub batch: Option<u32>,
    /// `--export-use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
    /// `--export-raw-inputs`: a TF Lite model of the raw columns.
    pub raw_inputs: bool,
    /// The first failed export, reported when training ends.
    pub failure: Option<String>,
    /// The files written, in order.
    pub written: Vec<PathBuf>,
}

/// The global step of a checkpoint prefix `DIR/model.ckpt-STEP`.
fn step_of(prefix: &Path) -> Option<i64> {
    let name = prefix.file_name()?.to_str()?;
    name.rsplit_once('-')?.1.parse().ok()
}

impl ExportOnSave {
    /// The file the export of global step `step` goes to.
    pub fn path(&self, step: i64) -> PathBuf {
        let t = self.target.to_string_lossy();
        if t.contains("{step}") {
            PathBuf::from(t.replace("{step}", &step.to_string()))
        } else {
            self.target
                .join(format!("model-{step}.{}", self.format.extension()))
        }
    }

    fn export(&self, spec: &Path, checkpoint: Option<&Path>, output: &Path) -> Result<(), Failure> {
        match self.format {
            Format::Tflite => super::export::run(
                spec,
                &ExportOptions {
                    checkpoint,
                    output,
                    tflite: TfliteOptions {
                        batch: self.batch,
                        use_averages: self.use_averages,
                        raw_inputs: self.raw_inputs,
                        ..TfliteOptions::default()
                    },
                },
            ),
            Format::Object => super::export_object::run(
                spec,
                &ObjectOptions {
                    checkpoint,
                    output,
                    fetch: &[],
                    symbol: "specc_predict",
                    use_averages: self.use_averages,
                },
            ),
        }
    }

    /// Before training: the run saves checkpoints (`checkpoint_dir`), keeps
    /// the one being exported (`keep` is not 1), and `specc export` would
    /// accept the spec with these flags (its dry run).
    pub fn check(
        &self,
        spec: &Path,
        checkpoint_dir: Option<&Path>,
        keep: u32,
    ) -> Result<(), Failure> {
        if checkpoint_dir.is_none() {
            return Err(Failure::from(
                "--export-on-save exports each checkpoint the run writes, and this run writes none: \
                 give --checkpoint-dir DIR or the spec's `checkpoint { dir = .. }`",
            ));
        }
        if keep == 1 {
            return Err(Failure::from(
                "--export-on-save with `keep = 1`: the next save would remove each checkpoint while \
                 it is exported; keep 2 or more (--keep 2), or 0 for all",
            ));
        }
        if self.batch.is_some() && self.format == Format::Object {
            return Err(Failure::from(
                "--export-batch is for --export-format tflite",
            ));
        }
        if self.raw_inputs && self.format == Format::Object {
            return Err(Failure::from(
                "--export-raw-inputs is for --export-format tflite (an object file's raw \
                 entry point is always there)",
            ));
        }
        let t = self.target.to_string_lossy();
        if !t.contains("{step}") {
            std::fs::create_dir_all(&self.target).map_err(|e| {
                Failure::from(format!(
                    "--export-on-save {}: cannot create the directory: {e}",
                    self.target.display()
                ))
            })?;
        }
        self.export(spec, None, &self.path(0)).map_err(|f| match f {
            Failure::Other(m) => Failure::Other(format!(
                "--export-on-save: the export would be refused, so nothing was trained: {m}"
            )),
            Failure::Spec => Failure::Other(format!(
                "--export-on-save: the export would be refused (above), so nothing was trained{}",
                if self.format == Format::Tflite {
                    " (`specc export`'s --batch is --export-batch here)"
                } else {
                    ""
                }
            )),
        })
    }

    /// After a checkpoint `prefix` is written: exports it (a failure is
    /// kept for the end of the run).
    pub fn after_save(&mut self, spec: &Path, prefix: &Path) {
        if self.failure.is_some() {
            return;
        }
        let Some(step) = step_of(prefix) else {
            self.failure = Some(format!(
                "--export-on-save: {} is not a checkpoint prefix `NAME-STEP`",
                prefix.display()
            ));
            return;
        };
        let output = self.path(step);
        match self.export(spec, Some(prefix), &output) {
            Ok(()) => self.written.push(output),
            Err(Failure::Other(m)) => {
                self.failure = Some(format!(
                    "--export-on-save: exporting {}: {m}",
                    prefix.display()
                ))
            }
            Err(Failure::Spec) => {
                self.failure = Some(format!(
                    "--export-on-save: exporting {} was refused (see above)",
                    prefix.display()
                ))
            }
        }
    }
}
