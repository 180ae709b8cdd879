//! Reading event files, ours and TensorFlow's (`tf.compat.v1.train.summary_iterator`).
//!
//! Owns: [`EventFileReader`] (the events of one file, in order, every
//! record's two CRCs checked), [`read_events`] (a whole file) and
//! [`event_files`] (the event files of a directory, as TensorBoard finds
//! them: names containing `tfevents`, in name order).
//!
//! Invariants: a corrupt, truncated or undecodable record ends the reading
//! with an error naming the file, the record's index and its byte offset;
//! the events before it have been yielded. Never a panic, whatever the bytes.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::event::Event;
use super::SummaryError;
use crate::io::tfrecord::{RecordError, RecordReader};

/// The longest record accepted (TF's event records are small; an image or a
/// graph is at most tens of megabytes).
const MAX_RECORD: u64 = 1 << 30;

/// The events of one event file, in order.
pub struct EventFileReader {
    path: PathBuf,
    records: RecordReader<BufReader<File>>,
    index: usize,
    payload: Vec<u8>,
    failed: bool,
}

impl EventFileReader {
    /// Opens `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<EventFileReader, SummaryError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|error| SummaryError::Io {
            path: path.clone(),
            action: "open",
            error,
        })?;
        Ok(EventFileReader {
            path,
            records: RecordReader::new(BufReader::new(file)).with_limit(MAX_RECORD),
            index: 0,
            payload: Vec::new(),
            failed: false,
        })
    }

    /// The byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.records.offset()
    }

    /// The index of the next record (0 is the `file_version` event).
    pub fn index(&self) -> usize {
        self.index
    }

    fn read(&mut self) -> Result<Option<Event>, SummaryError> {
        let offset = self.records.offset();
        let more =
            self.records
                .read_into(&mut self.payload)
                .map_err(|error| SummaryError::Record {
                    path: self.path.clone(),
                    index: self.index,
                    offset: match &error {
                        RecordError::Io { offset, .. }
                        | RecordError::Truncated { offset }
                        | RecordError::Corrupt { offset, .. }
                        | RecordError::TooLong { offset, .. } => *offset,
                    },
                    error,
                })?;
        if !more {
            return Ok(None);
        }
        let ev = Event::decode(&self.payload).map_err(|error| SummaryError::Decode {
            path: self.path.clone(),
            index: self.index,
            offset,
            error,
        })?;
        self.index += 1;
        Ok(Some(ev))
    }
}

impl Iterator for EventFileReader {
    type Item = Result<Event, SummaryError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.read() {
            Ok(Some(ev)) => Some(Ok(ev)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Every event of the file at `path`.
pub fn read_events(path: impl AsRef<Path>) -> Result<Vec<Event>, SummaryError> {
    EventFileReader::open(path)?.collect()
}

/// The event files in `dir` (not its subdirectories): file names containing
/// `tfevents`, sorted by name (that is, by creation time), as TensorBoard
/// reads a run.
pub fn event_files(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, SummaryError> {
    let dir = dir.as_ref();
    let io_err = |error| SummaryError::Io {
        path: dir.to_path_buf(),
        action: "list",
        error,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let is_file = entry.file_type().map_err(io_err)?.is_file();
        if is_file && entry.file_name().to_string_lossy().contains("tfevents") {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}
