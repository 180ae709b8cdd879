//! The checkpoints of a directory as they appear (TF's
//! `tf.train.checkpoints_iterator`): what `specc evaluate --checkpoint-dir`
//! evaluates, each once, in step order.
//!
//! Owns: finding a directory's checkpoints ([`checkpoints`]: every
//! `PREFIX-N.index` file and every path of the `checkpoint` state file, by
//! global step `N`); the step a run ends at ([`last_step`]: its `run.yaml`
//! record's `steps`, else the spec's `train { steps }`); and the polling
//! ([`CheckpointsIterator`]).
//!
//! Invariants: a checkpoint is yielded once, and only after one of a
//! smaller step; a checkpoint is yielded only when it opens
//! ([`BundleReader::open`]: its index reads and every data shard holds
//! every tensor's bytes), so one still being written (index present, data
//! missing or short) is retried at the next poll, not an error; one
//! written while the previous was being evaluated is found at the next
//! call. An unreadable checkpoint with a readable newer one is passed over
//! (reported in [`Next::Checkpoint::passed_over`]), as TF's iterator only
//! ever yields the newest. Time is read and spent through a [`Clock`], so
//! the polling is tested without waiting.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use specc_compiler::model::Model;
use specc_runtime::checkpoint::{BundleReader, CheckpointState};
use specc_runtime::config::record::RunRecord;
use specc_runtime::train::Duration as TrainDuration;

/// How long to sleep between polls (TF's `wait_for_new_checkpoint`
/// `seconds_to_sleep`), at most the time left before the timeout.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The global step of a checkpoint prefix `.../model.ckpt-N`.
pub fn step_of(prefix: &Path) -> Option<u64> {
    let name = prefix.file_name()?.to_str()?;
    let (_, n) = name.rsplit_once('-')?;
    n.parse().ok()
}

/// The checkpoints of `dir`, by global step (one prefix a step): every
/// `PREFIX-N.index` file, and every path the `checkpoint` state file names
/// (resolved against `dir`). A missing directory has none.
pub fn checkpoints(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".index")) else {
                continue;
            };
            let prefix = dir.join(stem);
            if let Some(step) = step_of(&prefix) {
                out.push((step, prefix));
            }
        }
    }
    // A state file that does not parse yet (being rewritten) adds nothing:
    // the index files name the same checkpoints.
    if let Ok(Some(st)) = CheckpointState::read(dir) {
        for p in &st.all_model_checkpoint_paths {
            let prefix = CheckpointState::resolve(dir, p);
            if let Some(step) = step_of(&prefix) {
                out.push((step, prefix));
            }
        }
    }
    out.sort();
    out.dedup_by_key(|(step, _)| *step);
    out
}

/// The global step the run writing `dir` ends at: its `run.yaml`
/// record's `steps` (the effective value, flags and config included), else
/// the spec's `train { steps }`; `None` when neither says (a spec trained
/// for `epochs` without a record).
pub fn last_step(dir: &Path, model: &Model) -> Option<u64> {
    if let Ok(Some(record)) = RunRecord::read(dir) {
        if let Some((_, v)) = record.config.iter().find(|(k, _)| k == "steps") {
            if let Ok(s) = v.trim().parse() {
                return Some(s);
            }
        }
    }
    match model.train.duration {
        TrainDuration::Steps(s) => Some(s),
        TrainDuration::Epochs(_) => None,
    }
}

/// Where the polling gets the time and spends it.
pub trait Clock {
    /// The time now.
    fn now(&self) -> Instant;
    /// Waits `d` (a poll's interval).
    fn sleep(&mut self, d: Duration);
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A checkpoint that did not open, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreadable {
    /// Its global step.
    pub step: u64,
    /// Its prefix (`DIR/model.ckpt-N`).
    pub prefix: PathBuf,
    /// Why [`BundleReader::open`] refused it.
    pub error: String,
}

/// What [`CheckpointsIterator::next`] found.
pub enum Next {
    /// A new checkpoint that opens, with the unreadable older ones passed over.
    Checkpoint {
        /// Its global step (from its name).
        step: u64,
        /// Its prefix.
        prefix: PathBuf,
        /// The checkpoint, open.
        reader: BundleReader,
        /// Older new checkpoints that do not open, skipped.
        passed_over: Vec<Unreadable>,
    },
    /// The checkpoint at the last step has been yielded.
    LastStep(u64),
    /// Not watching, and no newer checkpoint opens; `unreadable`: the newer
    /// ones that do not.
    Exhausted {
        /// The newer checkpoints that do not open.
        unreadable: Vec<Unreadable>,
    },
    /// Watching, and no new checkpoint opened within the timeout.
    TimedOut {
        /// The newer checkpoints that still do not open.
        unreadable: Vec<Unreadable>,
    },
}

/// The polling of [`checkpoints`] (TF's `checkpoints_iterator`).
pub struct CheckpointsIterator {
    /// The directory polled.
    pub dir: PathBuf,
    /// Keep polling for new checkpoints (else one pass over the directory).
    pub watch: bool,
    /// The longest wait for a new checkpoint (`None`: no limit).
    pub timeout: Option<Duration>,
    /// The global step that ends the iteration once yielded.
    pub last_step: Option<u64>,
    /// The step of the last checkpoint yielded.
    yielded: Option<u64>,
    /// When the last checkpoint was yielded (or the iteration began).
    since: Option<Instant>,
}

impl CheckpointsIterator {
    /// An iterator over `dir` that has yielded nothing yet.
    pub fn new(
        dir: &Path,
        watch: bool,
        timeout: Option<Duration>,
        last_step: Option<u64>,
    ) -> CheckpointsIterator {
        CheckpointsIterator {
            dir: dir.to_path_buf(),
            watch,
            timeout,
            last_step,
            yielded: None,
            since: None,
        }
    }

    /// The step of the last checkpoint yielded.
    pub fn yielded(&self) -> Option<u64> {
        self.yielded
    }

    /// The next checkpoint newer than the last yielded that opens, waiting
    /// for one when watching.
    pub fn next(&mut self, clock: &mut dyn Clock) -> Next {
        let since = *self.since.get_or_insert_with(|| clock.now());
        loop {
            if let (Some(last), Some(done)) = (self.last_step, self.yielded) {
                if done >= last {
                    return Next::LastStep(done);
                }
            }
            let mut unreadable = Vec::new();
            for (step, prefix) in checkpoints(&self.dir) {
                if self.yielded.is_some_and(|done| step <= done) {
                    continue;
                }
                match BundleReader::open(&prefix) {
                    Ok(reader) => {
                        self.yielded = Some(step);
                        self.since = Some(clock.now());
                        return Next::Checkpoint {
                            step,
                            prefix,
                            reader,
                            passed_over: unreadable,
                        };
                    }
                    Err(e) => unreadable.push(Unreadable {
                        step,
                        prefix,
                        error: e.to_string(),
                    }),
                }
            }
            if !self.watch {
                return Next::Exhausted { unreadable };
            }
            let waited = clock.now().saturating_duration_since(since);
            let wait = match self.timeout {
                Some(t) if waited >= t => return Next::TimedOut { unreadable },
                Some(t) => POLL_INTERVAL.min(t - waited),
                None => POLL_INTERVAL,
            };
            clock.sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specc_runtime::checkpoint::{write_bundle, TensorRef};

    /// A clock that moves only when slept, calling `on_sleep` each time.
    struct Fake<F: FnMut(u32)> {
        now: Instant,
        sleeps: u32,
        on_sleep: F,
    }

    impl<F: FnMut(u32)> Clock for Fake<F> {
        fn now(&self) -> Instant {
            self.now
        }
        fn sleep(&mut self, d: Duration) {
            self.now += d;
            self.sleeps += 1;
            (self.on_sleep)(self.sleeps);
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("specc-ckpt-iter-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn save(dir: &Path, step: u64) -> PathBuf {
        let prefix = dir.join(format!("model.ckpt-{step}"));
        let values = vec![step as f32; 64];
        let t = TensorRef::f32(&[64], &values).unwrap();
        write_bundle(&prefix, &[("w", t)]).unwrap();
        prefix
    }

    fn data(prefix: &Path) -> PathBuf {
        PathBuf::from(format!("{}.data-00000-of-00001", prefix.display()))
    }

    fn step(n: &Next) -> Option<u64> {
        match n {
            Next::Checkpoint { step, .. } => Some(*step),
            _ => None,
        }
    }

    #[test]
    fn steps_are_read_from_prefixes() {
        assert_eq!(step_of(Path::new("d/model.ckpt-120")), Some(120));
        assert_eq!(step_of(Path::new("d/model.ckpt")), None);
    }

    /// One pass yields every checkpoint in step order (10 before 9 as
    /// text), then ends; a second iterator starts over.
    #[test]
    fn a_pass_yields_each_checkpoint_once_in_step_order() {
        let d = dir("pass");
        for s in [9, 10, 3] {
            save(&d, s);
        }
        let mut clock = Fake {
            now: Instant::now(),
            sleeps: 0,
            on_sleep: |_| {},
        };
        let mut it = CheckpointsIterator::new(&d, false, None, None);
        let got: Vec<_> = (0..4).map(|_| step(&it.next(&mut clock))).collect();
        assert_eq!(got, [Some(3), Some(9), Some(10), None]);
        assert_eq!(clock.sleeps, 0);
    }

    /// A checkpoint whose data shard is short is retried: after the shard
    /// is written whole (at the first poll) it is yielded, then the last
    /// step ends the watch.
    #[test]
    fn a_partially_written_checkpoint_is_retried() {
        let d = dir("partial");
        save(&d, 2);
        let p4 = save(&d, 4);
        let whole = std::fs::read(data(&p4)).unwrap();
        std::fs::write(data(&p4), &whole[..whole.len() / 2]).unwrap();
        let target = data(&p4);
        let mut clock = Fake {
            now: Instant::now(),
            sleeps: 0,
            on_sleep: move |n| {
                if n == 1 {
                    std::fs::write(&target, &whole).unwrap();
                }
            },
        };
        let mut it = CheckpointsIterator::new(&d, true, Some(Duration::from_secs(5)), Some(4));
        assert_eq!(step(&it.next(&mut clock)), Some(2));
        assert_eq!(clock.sleeps, 0);
        assert_eq!(step(&it.next(&mut clock)), Some(4));
        assert_eq!(clock.sleeps, 1);
        assert!(matches!(it.next(&mut clock), Next::LastStep(4)));
    }

    /// Watching past the last checkpoint ends on the timeout, reporting a
    /// checkpoint that never became readable; a newer readable one passes
    /// an unreadable one over.
    #[test]
    fn the_timeout_ends_a_watch_and_reports_unreadable_checkpoints() {
        let d = dir("timeout");
        save(&d, 1);
        let p2 = save(&d, 2);
        std::fs::remove_file(data(&p2)).unwrap();
        let mut clock = Fake {
            now: Instant::now(),
            sleeps: 0,
            on_sleep: |_| {},
        };
        let mut it = CheckpointsIterator::new(&d, true, Some(Duration::from_secs(3)), Some(100));
        assert_eq!(step(&it.next(&mut clock)), Some(1));
        match it.next(&mut clock) {
            Next::TimedOut { unreadable } => {
                assert_eq!(unreadable.len(), 1);
                assert_eq!(unreadable[0].step, 2);
                assert!(
                    unreadable[0].error.contains("missing data shard"),
                    "{unreadable:?}"
                );
            }
            _ => panic!("expected the timeout"),
        }
        assert_eq!(clock.sleeps, 3);
        save(&d, 3);
        match it.next(&mut clock) {
            Next::Checkpoint {
                step, passed_over, ..
            } => {
                assert_eq!(step, 3);
                assert_eq!(passed_over.len(), 1);
                assert_eq!(passed_over[0].step, 2);
            }
            _ => panic!("expected the checkpoint at step 3"),
        }
    }
}
