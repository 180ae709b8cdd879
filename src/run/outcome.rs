//! What a finished run gives back.
//!
//! Owns: [`Outcome`] — the trained model, the training summary, the
//! evaluations (on the training rows, the held-out rows or the evaluation
//! data, and again with the moving averages), the skipped records, the
//! last checkpoint written and the timings — and [`ReplicaInfo`].
//!
//! Invariants: the numbers are the ones `specc run` prints (`--json`);
//! evaluations a run does not make are `None` (a streamed run has no rows
//! in memory to evaluate on; a replica other than the first evaluates
//! nothing).

use std::path::PathBuf;

use specc_runtime::pipeline::BadRecords;
use specc_runtime::train::{Evaluation, StepValues};

use crate::Model;

/// The result of a run.
pub struct Outcome {
    /// The trained model: the run's compiled program (its `step` and `eval`
    /// functions, not `predict`) and session, for more steps, evaluations,
    /// its variables or a checkpoint.
    pub model: Model,
    /// The model's name.
    pub name: String,
    /// Steps this run took (a resumed run: since its checkpoint).
    pub steps: u64,
    /// TF's `global_step` at the end.
    pub global_step: i64,
    /// The global step the run started from (0, or its checkpoint's).
    pub start_step: i64,
    /// The global step training ends at (its `steps`); `u64::MAX`-like when
    /// the data's end ends it.
    pub last_step: u64,
    /// The training batch (global, for replicas).
    pub batch: usize,
    /// The last step's values (none when a resumed run had nothing left).
    pub last: Option<StepValues>,
    /// Epochs begun over the training data.
    pub epochs: u64,
    /// The loss and metrics on the training rows (in memory only).
    pub train: Option<Evaluation>,
    /// The last held-out evaluation (of the held-out rows, or of the
    /// evaluation data).
    pub held_out: Option<Evaluation>,
    /// With `eval_with_averages`: the training rows and the held-out
    /// evaluation again with every parameter replaced by its moving average.
    pub averaged: Option<(Evaluation, Option<Evaluation>)>,
    /// A streamed source's skipped records (none for data in memory).
    pub bad_records: Option<BadRecords>,
    /// The last checkpoint written (an [`Observer`](super::Observer) is
    /// told each one).
    pub checkpoint: Option<PathBuf>,
    /// The checkpoint the run resumed from.
    pub resumed_from: Option<PathBuf>,
    /// Seconds compiling took.
    pub compile_s: f64,
    /// Seconds training took (the loop, its hooks included).
    pub train_s: f64,
    /// The data-parallel job, when this process is one of its replicas.
    pub replicas: Option<ReplicaInfo>,
    /// Seconds replica 0 spent moving the rows of sharded tables (fetching
    /// them, routing their gradient); `None` without sharded tables.
    pub sharded_exchange_s: Option<f64>,
}

/// A data-parallel job as one replica saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// This replica's rank (0: the leader, which writes).
    pub rank: usize,
    /// Replicas in the job.
    pub size: usize,
    /// Nodes (machines) they run on.
    pub nodes: usize,
    /// They exchange through shared memory (one node) rather than an allreduce.
    pub shared_exchange: bool,
    /// Each replica's peak resident memory (bytes), in replica order.
    pub peak_rss: Vec<u64>,
}

/// This process's peak resident memory so far, in bytes (`getrusage`'s
/// `ru_maxrss`); 0 where the system does not say.
pub fn peak_rss_bytes() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; it is zeroed first.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    if !ok {
        return 0;
    }
    // SAFETY: initialized (zeroed, then filled by a successful call).
    let usage = unsafe { usage.assume_init() };
    // Linux reports kibibytes.
    u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024
}

impl Outcome {
    /// Training steps per second.
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.train_s.max(1e-9)
    }
}
