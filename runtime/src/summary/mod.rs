//! Summaries for TensorBoard: TF event files, written and read, and the
//! hooks that write them during training (TF's `tf.compat.v1.summary`,
//! `SummarySaverHook`, `StepCounterHook`, Estimator's `eval/` directory).
//!
//! Owns: [`event`] (the `Event` / `Summary` / `HistogramProto` messages and
//! their protobuf encoding), [`histogram`] (TF's `Histogram` with its default
//! exponential buckets), [`image`] (TF's `ImageSummary`: images normalized
//! to uint8 and PNG-encoded), [`writer`] ([`SummaryWriter`]: one
//! `events.out.tfevents.<secs>.<host>` file per writer, written by a
//! background thread), [`reader`] (any event file, every CRC checked),
//! [`hooks`] ([`SummarySaverHook`], [`StepCounterHook`],
//! [`EvaluationSummaryHook`], [`write_evaluation`]), [`sharded`] (the
//! histograms of tables sharded across replicas, combined) and
//! [`SummaryError`].
//!
//! Invariants: what specc writes, TensorFlow's `summary_iterator` and
//! TensorBoard's `EventAccumulator` read with the same tags, steps and
//! values; histograms are bucket for bucket TF's. Between two writes the
//! hooks do an integer comparison per step and allocate nothing; at a write
//! the training thread only copies values, the writer thread does the rest.
//! Every error names the file (and the record, with its byte offset, on read).

pub mod event;
pub mod histogram;
pub mod hooks;
pub mod image;
pub mod reader;
pub mod sharded;
pub mod writer;

use std::fmt;
use std::path::PathBuf;

pub use event::{Event, Summary, SummaryValue, ValueKind, What};
pub use histogram::{default_bucket_limits, Histogram, HistogramProto};
pub use hooks::{write_evaluation, EvaluationSummaryHook, StepCounterHook, SummarySaverHook};
pub use reader::{event_files, read_events, EventFileReader};
pub use writer::{ImageBatch, SummaryBatch, SummaryWriter};

use crate::io::tfrecord::RecordError;

/// Why an event file could not be written or read.
#[derive(Debug)]
pub enum SummaryError {
    /// An operation on a file or directory failed.
    Io {
        path: PathBuf,
        action: &'static str,
        error: std::io::Error,
    },
    /// The writer thread failed (the first error), or the writer is closed.
    Write { path: PathBuf, message: String },
    /// Record `index` (0-based, at byte `offset`) is truncated or corrupt.
    Record {
        path: PathBuf,
        index: usize,
        offset: u64,
        error: RecordError,
    },
    /// Record `index` holds bytes that are not an `Event`.
    Decode {
        path: PathBuf,
        index: usize,
        offset: u64,
        error: event::DecodeError,
    },
}

impl SummaryError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            SummaryError::Io { path, .. }
            | SummaryError::Write { path, .. }
            | SummaryError::Record { path, .. }
            | SummaryError::Decode { path, .. } => path,
        }
    }

    /// The index of the bad record, for read errors.
    pub fn record(&self) -> Option<(usize, u64)> {
        match self {
            SummaryError::Record { index, offset, .. }
            | SummaryError::Decode { index, offset, .. } => Some((*index, *offset)),
            _ => None,
        }
    }
}

impl fmt::Display for SummaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryError::Io {
                path,
                action,
                error,
            } => write!(f, "cannot {action} {}: {error}", path.display()),
            SummaryError::Write { path, message } => {
                write!(f, "event file {}: {message}", path.display())
            }
            SummaryError::Record {
                path,
                index,
                offset: _,
                error,
            } => write!(f, "event file {}: record {index}: {error}", path.display()),
            SummaryError::Decode {
                path,
                index,
                offset,
                error,
            } => write!(
                f,
                "event file {}: record {index} at byte {offset}: {error}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SummaryError {}
