//! Writing event files (TF's `EventsWriter` behind `tf.compat.v1.summary.FileWriter`).
//!
//! Owns: [`SummaryWriter`] — one event file
//! `DIR/events.out.tfevents.<unix seconds, 10 digits>.<hostname>` (TF's name
//! for the v1 writer; if that name exists, `.1`, `.2`, ... is appended
//! rather than overwriting it), its first record the
//! `Event{wall_time, file_version: "brain.Event:2"}`, then one `Event` per
//! [`SummaryWriter::add`] in TFRecord framing — and the background thread
//! that computes histograms, encodes and writes.
//!
//! Flush policy: the writer thread writes through a buffer and flushes it
//! whenever its queue is empty, that is after each batch of summaries the
//! hooks hand it (TF flushes every `flush_secs = 120`; specc flushes at the
//! end of every write interval so that a killed run keeps everything written
//! before its last interval), on [`SummaryWriter::flush`], and at
//! [`SummaryWriter::close`], which also fsyncs the file.
//!
//! Invariants: the training thread only copies values into a
//! [`SummaryBatch`] and sends it (histograms are bucketed, events encoded
//! and written on the writer thread, which runs at a lower priority, nice
//! 10, so that it yields to training threads); the queue is bounded, so a slow disk
//! slows training rather than growing memory. Handles are clones of one
//! writer (TF's `FileWriterCache`: every hook of a directory writes the
//! same file). The first I/O error is kept and returned, naming the file, by
//! every later call; nothing is written after it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use super::event::{Event, SessionLog, Summary, SummaryValue, What, FILE_VERSION};
use super::histogram::{Histogram, HistogramProto};
use super::SummaryError;
use crate::io::tfrecord::write_record;

/// `source_metadata.writer` of the files specc writes.
pub const SOURCE_WRITER: &str = "specc";

/// Summaries queued before the training thread waits for the writer.
const QUEUE: usize = 16;

/// Seconds since the Unix epoch, now.
pub fn wall_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The machine's host name (TF's `port::Hostname`): `gethostname`, else
/// `/proc/sys/kernel/hostname`, else `localhost`.
pub fn hostname() -> String {
    #[cfg(target_os = "linux")]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            if end > 0 {
                return String::from_utf8_lossy(&buf[..end]).into_owned();
            }
        }
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The values of one summary event, as the training thread hands them over:
/// scalars by tag, and tensors whose histograms the writer thread computes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryBatch {
    pub step: i64,
    pub wall_time: f64,
    /// `(tag, simple_value)`, written first, in order.
    pub scalars: Vec<(String, f32)>,
    /// `(tag, values)`: each becomes a histogram with TF's default buckets.
    pub histograms: Vec<(String, Vec<f32>)>,
    /// `(tag, histogram)` counted already (a table sharded across
    /// replicas, [`super::sharded`]), written after `histograms`.
    pub counted: Vec<(String, HistogramProto)>,
    /// Images of a batch: each becomes up to `max_images` PNG image
    /// summaries (TF's `ImageSummary`), normalized and encoded on the
    /// writer thread.
    pub images: Vec<ImageBatch>,
}

/// A batch of float images `[rows, H, W, C]` for an image summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImageBatch {
    pub name: String,
    pub values: Vec<f32>,
    pub rows: usize,
    pub hwc: [usize; 3],
    pub max_images: usize,
}

impl SummaryBatch {
    /// An empty batch at `step`, stamped now.
    pub fn new(step: i64) -> SummaryBatch {
        SummaryBatch {
            step,
            wall_time: wall_time(),
            scalars: Vec::new(),
            histograms: Vec::new(),
            counted: Vec::new(),
            images: Vec::new(),
        }
    }

    /// Adds a scalar.
    pub fn scalar(mut self, tag: &str, value: f32) -> SummaryBatch {
        self.scalars.push((tag.to_string(), value));
        self
    }

    /// Adds a histogram of `values`.
    pub fn histogram(mut self, tag: &str, values: &[f32]) -> SummaryBatch {
        self.histograms.push((tag.to_string(), values.to_vec()));
        self
    }
}

enum Msg {
    Batch(SummaryBatch),
    Event(Event),
    Flush(SyncSender<()>),
    Close(SyncSender<()>),
}

struct Shared {
    path: PathBuf,
    /// The first failure of the writer thread.
    error: Mutex<Option<String>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A handle on one event file; clones write the same file.
#[derive(Clone)]
pub struct SummaryWriter {
    tx: SyncSender<Msg>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SummaryWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryWriter")
            .field("path", &self.shared.path)
            .finish()
    }
}

impl SummaryWriter {
    /// Creates `dir` (and its parents) and a new event file in it, and
    /// writes the `file_version` event. Errors name the directory or file.
    pub fn create(dir: impl AsRef<Path>) -> Result<SummaryWriter, SummaryError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|error| SummaryError::Io {
            path: dir.to_path_buf(),
            action: "create the directory",
            error,
        })?;
        let now = wall_time();
        let base = format!("events.out.tfevents.{:010}.{}", now as u64, hostname());
        let mut n = 0u32;
        let (path, file) = loop {
            let name = if n == 0 {
                base.clone()
            } else {
                format!("{base}.{n}")
            };
            let path = dir.join(name);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => break (path, f),
                Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(error) => {
                    return Err(SummaryError::Io {
                        path,
                        action: "create",
                        error,
                    })
                }
            }
        };
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let first = Event {
            wall_time: now.trunc(),
            step: 0,
            what: What::FileVersion(FILE_VERSION.to_string()),
            source_writer: Some(SOURCE_WRITER.to_string()),
        };
        let mut payload = Vec::new();
        first.encode(&mut payload);
        write_record(&mut out, &payload)
            .and_then(|()| out.flush())
            .map_err(|error| SummaryError::Io {
                path: path.clone(),
                action: "write",
                error,
            })?;
        SummaryWriter::start(path, out)
    }

    /// Starts the writer thread on `out`, an event file at `path` whose
    /// `file_version` event is written.
    fn start(path: PathBuf, out: BufWriter<File>) -> Result<SummaryWriter, SummaryError> {
        let shared = Arc::new(Shared {
            path,
            error: Mutex::new(None),
            thread: Mutex::new(None),
        });
        let (tx, rx) = sync_channel(QUEUE);
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("specc-summaries".into())
            .spawn(move || run(out, rx, &s))
            .map_err(|error| SummaryError::Io {
                path: shared.path.clone(),
                action: "start the writer thread for",
                error,
            })?;
        if let Ok(mut t) = shared.thread.lock() {
            *t = Some(handle);
        }
        Ok(SummaryWriter { tx, shared })
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    fn check(&self) -> Result<(), SummaryError> {
        let e = self.shared.error.lock().ok().and_then(|e| e.clone());
        match e {
            Some(message) => Err(SummaryError::Write {
                path: self.shared.path.clone(),
                message,
            }),
            None => Ok(()),
        }
    }

    fn send(&self, msg: Msg) -> Result<(), SummaryError> {
        self.check()?;
        self.tx.send(msg).map_err(|_| SummaryError::Write {
            path: self.shared.path.clone(),
            message: "the writer is closed".into(),
        })
    }

    /// Queues one summary event (scalars, then histograms).
    pub fn add(&self, batch: SummaryBatch) -> Result<(), SummaryError> {
        self.send(Msg::Batch(batch))
    }

    /// Queues scalars at `step`, stamped now.
    pub fn add_scalars(&self, step: i64, values: &[(&str, f32)]) -> Result<(), SummaryError> {
        let mut b = SummaryBatch::new(step);
        b.scalars = values.iter().map(|&(t, v)| (t.to_string(), v)).collect();
        self.add(b)
    }

    /// Queues `texts` (`(tag, Markdown)`) as `tf.summary.text` values of
    /// one event at `step`, stamped now.
    pub fn add_texts(&self, step: i64, texts: &[(&str, &str)]) -> Result<(), SummaryError> {
        self.add_event(Event {
            wall_time: wall_time(),
            step,
            what: What::Summary(Summary {
                values: texts
                    .iter()
                    .map(|&(t, x)| SummaryValue::text(t, x))
                    .collect(),
            }),
            source_writer: None,
        })
    }

    /// Queues any event.
    pub fn add_event(&self, event: Event) -> Result<(), SummaryError> {
        self.send(Msg::Event(event))
    }

    /// Queues `SessionLog{status: START}` at `step`: TensorBoard discards
    /// events of an earlier, crashed run at or after it.
    pub fn add_session_start(&self, step: i64) -> Result<(), SummaryError> {
        self.add_event(Event {
            wall_time: wall_time(),
            step,
            what: What::SessionLog(SessionLog {
                status: super::event::SESSION_LOG_START,
                ..SessionLog::default()
            }),
            source_writer: None,
        })
    }

    /// Waits until everything queued is written to the file (not fsynced).
    pub fn flush(&self) -> Result<(), SummaryError> {
        let (ack, done) = sync_channel(1);
        self.send(Msg::Flush(ack))?;
        let _ = done.recv();
        self.check()
    }

    /// Writes everything queued, fsyncs the file and stops the writer
    /// thread; later calls on any clone fail.
    pub fn close(&self) -> Result<(), SummaryError> {
        let (ack, done) = sync_channel(1);
        if self.tx.send(Msg::Close(ack)).is_ok() {
            let _ = done.recv();
        }
        let handle = self.shared.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
        self.check()
    }
}

/// Lowers the calling thread's scheduling priority (nice 10): on a machine
/// whose cores the training threads keep busy, the writer yields to them.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread; a failure changes nothing.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
    }
}

/// The writer thread: handles messages, flushing whenever the queue is empty.
fn run(mut out: BufWriter<File>, rx: Receiver<Msg>, shared: &Shared) {
    lower_priority();
    let mut w = Worker {
        histogram: Histogram::new(),
        payload: Vec::new(),
        failed: false,
    };
    let fail = |e: std::io::Error, what: &str| {
        if let Ok(mut slot) = shared.error.lock() {
            slot.get_or_insert_with(|| format!("cannot {what}: {e}"));
        }
    };
    while let Ok(mut msg) = rx.recv() {
        loop {
            match msg {
                Msg::Batch(b) => match b.into_event(&mut w.histogram) {
                    Ok(ev) => w.write(&mut out, &ev, &fail),
                    Err(e) => {
                        w.failed = true;
                        fail(std::io::Error::other(e), "encode a summary");
                    }
                },
                Msg::Event(ev) => w.write(&mut out, &ev, &fail),
                Msg::Flush(ack) => {
                    w.flush(&mut out, &fail);
                    let _ = ack.send(());
                }
                Msg::Close(ack) => {
                    w.flush(&mut out, &fail);
                    if !w.failed {
                        if let Err(e) = out.get_ref().sync_all() {
                            fail(e, "sync");
                        }
                    }
                    let _ = ack.send(());
                    return;
                }
            }
            match rx.try_recv() {
                Ok(m) => msg = m,
                Err(_) => break,
            }
        }
        w.flush(&mut out, &fail);
    }
    w.flush(&mut out, &fail);
}

struct Worker {
    histogram: Histogram,
    payload: Vec<u8>,
    failed: bool,
}

impl Worker {
    fn write(
        &mut self,
        out: &mut BufWriter<File>,
        ev: &Event,
        fail: &dyn Fn(std::io::Error, &str),
    ) {
        if self.failed {
            return;
        }
        self.payload.clear();
        ev.encode(&mut self.payload);
        if let Err(e) = write_record(out, &self.payload) {
            self.failed = true;
            fail(e, "write");
        }
    }

    fn flush(&mut self, out: &mut BufWriter<File>, fail: &dyn Fn(std::io::Error, &str)) {
        if self.failed {
            return;
        }
        if let Err(e) = out.flush() {
            self.failed = true;
            fail(e, "write");
        }
    }
}

impl SummaryBatch {
    /// The event this batch becomes (histograms computed with `h`).
    fn into_event(self, h: &mut Histogram) -> Result<Event, String> {
        let mut values: Vec<SummaryValue> = self
            .scalars
            .iter()
            .map(|(t, v)| SummaryValue::scalar(t, *v))
            .collect();
        for (tag, xs) in &self.histograms {
            h.clear();
            for &x in xs {
                h.add_f32(x);
            }
            values.push(SummaryValue::histogram(tag, h.to_proto()));
        }
        for (tag, p) in self.counted {
            values.push(SummaryValue::histogram(&tag, p));
        }
        for b in &self.images {
            values.extend(super::image::image_values(
                &b.name,
                &b.values,
                b.rows,
                b.hwc,
                b.max_images,
            )?);
        }
        Ok(Event {
            wall_time: self.wall_time,
            step: self.step,
            what: What::Summary(Summary { values }),
            source_writer: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk (`/dev/full`): the write error comes back from `flush`
    /// naming the file, and every later call fails too.
    #[test]
    fn a_full_disk_is_an_error_naming_the_file_and_it_sticks() {
        let path = PathBuf::from("/dev/full");
        let Ok(file) = OpenOptions::new().write(true).open(&path) else {
            return; // no /dev/full on this system
        };
        let w = SummaryWriter::start(path.clone(), BufWriter::new(file)).unwrap();
        w.add_scalars(1, &[("loss", 1.0)]).unwrap();
        let e = w.flush().unwrap_err();
        let text = e.to_string();
        assert!(text.contains("/dev/full"), "{text}");
        assert!(text.contains("cannot write"), "{text}");
        assert_eq!(e.path(), path);
        assert!(w.add_scalars(2, &[("loss", 1.0)]).is_err());
        assert!(w.close().is_err());
    }

    /// Creating a writer where no directory can be made names the directory.
    #[test]
    fn an_impossible_directory_is_an_error_naming_it() {
        let e = SummaryWriter::create("/dev/null/summaries").unwrap_err();
        assert!(e.to_string().contains("/dev/null/summaries"), "{e}");
    }
}
