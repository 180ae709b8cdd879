//! Checkpoints during training: TF's `CheckpointSaverHook`, and resuming
//! from the latest checkpoint (what `MonitoredTrainingSession` does when its
//! `checkpoint_dir` holds one).
//!
//! Owns: [`CheckpointSaverHook`] (saves every N steps and/or S seconds and
//! at the end, through a [`CheckpointManager`] on a background thread),
//! [`restore_latest`], and [`BATCH_ORDER`], the name of the batch source's
//! position in a checkpoint.
//!
//! Invariants: the training thread only copies the variables into a
//! [`Snapshot`] (no allocation after the first save, no file I/O); at most
//! one save is in flight (the next one waits for it), so memory is bounded
//! by two copies of the model; a failed background save fails the run at
//! the next save or at the end, naming the file; the checkpoint written at
//! the end is complete and listed before the hook's `end` returns. A
//! checkpoint holds every variable, slot, optimizer variable and moving
//! average under its TF name, `global_step` (int64) and, where the source
//! can say, its position ([`BATCH_ORDER`], int64), so a resumed run continues
//! to the same bits as one that never stopped.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::hooks::{Hook, RunContext, StepValues};
use super::timer::Timer;
use super::TrainError;
use crate::checkpoint::{
    BundleReader, CheckpointError, CheckpointErrorKind, CheckpointManager, Snapshot, TensorRef,
};
use crate::session::Session;
use crate::source::BatchSource;

/// The checkpoint name of the batch source's position (an int64 vector;
/// TF's `tf.data` iterators are saved in checkpoints the same way).
pub const BATCH_ORDER: &str = "specc/batch_order";

type SaveResult = Result<PathBuf, CheckpointError>;

/// The background thread that writes snapshots.
struct Writer {
    to_writer: Option<SyncSender<(i64, Snapshot)>>,
    from_writer: Receiver<(Snapshot, SaveResult)>,
    thread: Option<JoinHandle<()>>,
    /// The spare snapshot (the other one may be in flight).
    spare: Option<Snapshot>,
    in_flight: bool,
}

impl Writer {
    fn spawn(mut manager: CheckpointManager) -> Result<Writer, String> {
        let (to_writer, requests) = sync_channel::<(i64, Snapshot)>(1);
        let (results, from_writer) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("specc-checkpoint".into())
            .spawn(move || {
                for (step, snap) in requests {
                    let r = manager.save(step, &snap.tensors());
                    if results.send((snap, r)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
        Ok(Writer {
            to_writer: Some(to_writer),
            from_writer,
            thread: Some(thread),
            spare: Some(Snapshot::new()),
            in_flight: false,
        })
    }

    /// Waits for the save in flight, if any; its error, if it failed.
    fn wait(&mut self) -> Result<Option<PathBuf>, TrainError> {
        if !self.in_flight {
            return Ok(None);
        }
        self.in_flight = false;
        let (snap, r) = self
            .from_writer
            .recv()
            .map_err(|_| TrainError::Hook("the checkpoint thread stopped".into()))?;
        if self.spare.is_none() {
            self.spare = Some(snap);
        }
        r.map(Some).map_err(checkpoint_error)
    }

    /// Copies `tensors` and hands them to the thread (after the previous
    /// save, whose prefix it returns).
    fn save(
        &mut self,
        step: i64,
        tensors: &[(&str, TensorRef<'_>)],
    ) -> Result<Option<PathBuf>, TrainError> {
        let mut snap = self.spare.take().unwrap_or_default();
        snap.capture(tensors);
        let previous = self.wait()?;
        let sender = self
            .to_writer
            .as_ref()
            .ok_or_else(|| TrainError::Hook("the checkpoint thread stopped".into()))?;
        sender
            .send((step, snap))
            .map_err(|_| TrainError::Hook("the checkpoint thread stopped".into()))?;
        self.in_flight = true;
        Ok(previous)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Let a save in flight finish (a failing run keeps its last good
        // checkpoint complete), then stop the thread.
        let _ = self.wait();
        self.to_writer = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn checkpoint_error(e: CheckpointError) -> TrainError {
    TrainError::Hook(format!("cannot save the checkpoint: {e}"))
}

/// What [`CheckpointSaverHook::reporting`] calls with each prefix written.
type Report<'r> = Box<dyn FnMut(&Path) + 'r>;

/// Saves checkpoints every N steps and/or S seconds, and after the last
/// step (TF's `CheckpointSaverHook`).
pub struct CheckpointSaverHook<'r> {
    timer: Timer,
    writer: Writer,
    /// The global step of the last save handed to the writer.
    saved_step: Option<i64>,
    /// The last checkpoint written (each one is told to
    /// [`CheckpointSaverHook::reporting`]'s callback).
    pub last_saved: Option<PathBuf>,
    /// Told each prefix once it is written (see [`CheckpointSaverHook::reporting`]).
    report: Option<Report<'r>>,
}

impl<'r> CheckpointSaverHook<'r> {
    /// Saves through `manager` whenever `timer` is due (not at the first
    /// step: TF saves at the start only a fresh run's initial state, which
    /// specc does not need) and at the end.
    pub fn new(
        manager: CheckpointManager,
        timer: Timer,
    ) -> Result<CheckpointSaverHook<'r>, String> {
        Ok(CheckpointSaverHook {
            timer,
            writer: Writer::spawn(manager)?,
            saved_step: None,
            last_saved: None,
            report: None,
        })
    }

    /// Calls `report` with each checkpoint's prefix once it is written
    /// (complete and listed): on the training thread, at the next save or
    /// at the end.
    pub fn reporting(mut self, report: impl FnMut(&Path) + 'r) -> CheckpointSaverHook<'r> {
        self.report = Some(Box::new(report));
        self
    }

    /// Records a written checkpoint and reports it.
    fn written(&mut self, prefix: Option<PathBuf>) {
        if let Some(p) = prefix {
            if let Some(r) = self.report.as_mut() {
                r(&p);
            }
            self.last_saved = Some(p);
        }
    }

    fn save(&mut self, ctx: &RunContext<'_>) -> Result<(), TrainError> {
        let step = ctx.global_step();
        if self.saved_step == Some(step) {
            return Ok(());
        }
        let position = ctx.source_position();
        let mut tensors = ctx.session().checkpoint_tensors();
        let shape = [position.as_ref().map_or(0, Vec::len)];
        if let Some(p) = &position {
            if let Ok(t) = TensorRef::i64(&shape, p) {
                tensors.push((BATCH_ORDER, t));
            }
        }
        let previous = self.writer.save(step, &tensors)?;
        self.saved_step = Some(step);
        self.written(previous);
        Ok(())
    }
}

impl Hook for CheckpointSaverHook<'_> {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        // The timer counts from the start (a resumed run: from its step).
        self.timer.triggered(0);
        self.saved_step = Some(ctx.global_step());
        Ok(())
    }

    #[inline]
    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if self.timer.due(v.step) {
            self.timer.triggered(v.step);
            self.save(ctx)?;
        }
        Ok(())
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.save(ctx)?;
        let last = self.writer.wait()?;
        self.written(last);
        Ok(())
    }
}

/// What [`restore_latest`] restored.
#[derive(Clone, Debug, PartialEq)]
pub struct Restored {
    /// The checkpoint's prefix.
    pub prefix: PathBuf,
    pub global_step: i64,
    /// False when the checkpoint has no position for the source (written by
    /// TF, or by a source that cannot say): the source starts over.
    pub position_restored: bool,
}

/// Restores the session (every variable and the global step) and the
/// source's position from the latest checkpoint in `dir`; `Ok(None)` when
/// `dir` has none. A variable the checkpoint lacks, or has with another
/// shape, is refused with both shapes, and the session is left as it was.
pub fn restore_latest(
    dir: &Path,
    session: &mut Session,
    source: &mut dyn BatchSource,
) -> Result<Option<Restored>, CheckpointError> {
    let Some(prefix) = crate::checkpoint::latest_checkpoint(dir)? else {
        return Ok(None);
    };
    restore(&prefix, session, source).map(Some)
}

/// Moves `source` to the position saved in the checkpoint of `reader`;
/// false if the checkpoint has none (the source is left where it is).
pub fn seek(reader: &BundleReader, source: &mut dyn BatchSource) -> Result<bool, CheckpointError> {
    if reader.entry(BATCH_ORDER).is_none() {
        return Ok(false);
    }
    let crate::checkpoint::Tensor::I64(p) = reader.load(BATCH_ORDER)? else {
        return Err(CheckpointError::tensor(
            CheckpointErrorKind::Mismatch,
            reader.index_file(),
            BATCH_ORDER,
            "is not an int64 tensor",
        ));
    };
    let p: Vec<i64> = p.iter().copied().collect();
    source.seek(&p).map_err(|m| {
        CheckpointError::tensor(
            CheckpointErrorKind::Mismatch,
            reader.index_file(),
            BATCH_ORDER,
            m,
        )
    })?;
    Ok(true)
}

/// [`restore_latest`] from the checkpoint `prefix`.
pub fn restore(
    prefix: &Path,
    session: &mut Session,
    source: &mut dyn BatchSource,
) -> Result<Restored, CheckpointError> {
    let reader = BundleReader::open(prefix)?;
    // The source first: a refused position leaves the session untouched,
    // and a refused restore leaves the session as it was.
    let position_restored = seek(&reader, source)?;
    session.restore(&reader)?;
    Ok(Restored {
        prefix: prefix.to_path_buf(),
        global_step: session.global_step,
        position_restored,
    })
}
