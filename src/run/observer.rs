//! What a run tells whoever watches it.
//!
//! Owns: the [`Observer`] trait — the run's notes and warnings, the start of
//! training, every step, the periodic evaluations, the logged tensors, the
//! checkpoints written, the end — and [`Quiet`], the observer that ignores
//! everything. `specc run` draws its progress bar and prints its lines
//! through one; a library user does their own thing.
//!
//! Invariants: the calls come from the thread that trains, between steps,
//! in the order the events happen; an observer cannot change the run's
//! numbers (it sees values, never the session), so they are the same
//! whatever observes it: it can only end the run early, at a step boundary
//! ([`Observer::stop_requested`], as Ctrl-C in Python does), which then
//! ends as a run whose last step that was.

use std::path::Path;

use specc_runtime::train::{Evaluation, StepValues};

/// Callbacks of a run; every one does nothing unless implemented.
pub trait Observer {
    /// The spec compiled: the model's name and the seconds compiling took.
    fn compiled(&mut self, _model: &str, _seconds: f64) {}

    /// Something the user should know, in one line (`specc run` prints it
    /// after `specc: `): what was compiled and read, a warm start, a resume,
    /// the replicas, skipped records, nothing left to train.
    fn note(&mut self, _text: &str) {}

    /// Something that looks wrong but does not stop the run (`specc run`
    /// prints it after `warning: `): changed data since the checkpoint, a
    /// diverging loss.
    fn warning(&mut self, _text: &str) {}

    /// Training starts at global step `start` and ends at global step `last`
    /// (`u64::MAX`-like when the data's end, not a step count, ends it).
    fn begin(&mut self, _start: i64, _last: u64) {}

    /// A step's values (after its hooks that can stop the run ran).
    fn step(&mut self, _values: &StepValues) {}

    /// Asked after every step (after [`Observer::step`]): true ends the run
    /// after this step, as a hook's `request_stop` does (the hooks' ends run:
    /// a checkpoint of the step is written, the evaluations follow).
    fn stop_requested(&mut self) -> bool {
        false
    }

    /// The loop ended without an error: the last step's values, if a step ran.
    fn end(&mut self, _last: Option<&StepValues>) {}

    /// A periodic evaluation (`evaluate { every_steps }`) at `global_step`.
    fn evaluation(&mut self, _global_step: i64, _evaluation: &Evaluation) {}

    /// A line of the logged tensors (`logging { tensors }`).
    fn tensors(&mut self, _line: &str) {}

    /// A checkpoint was written (complete and listed) under `prefix`.
    fn checkpoint(&mut self, _prefix: &Path) {}
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
