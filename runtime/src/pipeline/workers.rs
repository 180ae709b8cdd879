//! The threads of a streaming source: one reader, `threads` workers, and
//! the bounded queues between them and the training thread (TF's
//! `QueueRunner` and `Coordinator`, `tf.data`'s prefetch, in spirit).
//!
//! Owns: [`Pipeline`]: the reader thread walks the files in the interleave
//! order (`cycle_length` files open, `block_length` records from each in
//! turn, a finished file replaced by the next one in its slot, as
//! `Dataset.interleave`), numbering each chunk; with `shuffle_files` the
//! file list of each epoch is a permutation drawn from the seed and the
//! epoch ([`file_order`]); workers transform chunks in
//! any order; [`Pipeline::next`] hands them to the training thread in their
//! numbered order; the training thread gives each chunk back
//! ([`Pipeline::recycle`]) for the reader to fill again.
//!
//! Invariants:
//! - Bounded: exactly `depth` chunks exist; the reader waits for a recycled
//!   one, so memory is `depth * block_length` records whatever the file
//!   size, and the channels (all of capacity `depth`) never block a sender
//!   that holds a chunk.
//! - Deterministic: the chunk order is the reader's, and a chunk's values
//!   depend only on its records, so the stream is the same for any number
//!   of workers; an epoch's file order depends only on the seed and the
//!   epoch, so a resumed run reads the files as the first run did.
//! - A clean stop: dropping the pipeline closes its channels, the reader and
//!   the workers see it at their next send or receive and end, and the drop
//!   joins them (no thread outlives the source). An error (a damaged file, a
//!   bad record under `"error"`) travels in its chunk and ends the stream
//!   there; a panicking worker or reader becomes an error chunk, never a
//!   hang.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::abi::ElemType;
use crate::data::{DataError, InputSpec};

use super::bad::OnBadRecord;
use super::chunk::{Chunk, Kind, Transformer};
use super::images::Listing;
use super::read::FileReader;
use super::Format;

/// What every thread of a pipeline reads.
pub(crate) struct Shared {
    pub(crate) files: Vec<PathBuf>,
    /// Every file's records shared between replicas (see [`super::Shard`]).
    pub(crate) record_shard: super::Shard,
    pub(crate) format: Format,
    pub(crate) inputs: Vec<InputSpec>,
    pub(crate) elems: Vec<ElemType>,
    /// Each input's values per row.
    pub(crate) widths: Vec<usize>,
    /// A directory of images: its examples, listed once.
    pub(crate) listing: Option<Listing>,
    pub(crate) num_classes: Vec<Option<u32>>,
    pub(crate) policy: OnBadRecord,
    pub(crate) block_length: usize,
    pub(crate) cycle_length: usize,
    /// `shuffle_files`: the seed of every epoch's file order (`None`:
    /// sorted).
    pub(crate) file_seed: Option<u64>,
}

/// The order the files of epoch `epoch` (the run's, from 0) are read in:
/// `0..n` without a seed; with one, a uniform permutation (Fisher–Yates)
/// drawn from a stream of the seed and the epoch — a new order every
/// epoch, as `Dataset.list_files(shuffle=True)` (`reshuffle_each_iteration`).
pub(crate) fn file_order(n: usize, seed: Option<u64>, epoch: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if let Some(seed) = seed {
        // A stream of its own per epoch, apart from the shuffle buffer's.
        let salt = crate::prng::mix(epoch.wrapping_add(0x6669_6c65_7321)); // "files!"
        let mut rng = crate::prng::SplitMix64::new(crate::prng::mix(seed ^ salt));
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
    }
    order
}

/// The running threads of one pass over epochs `first..=last` (`None`:
/// endless).
pub(crate) struct Pipeline {
    recycle: Option<SyncSender<Chunk>>,
    done: Option<Receiver<Chunk>>,
    /// Chunks that arrived before their turn, by `seq % depth`.
    ring: Vec<Option<Chunk>>,
    next_seq: u64,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Pipeline {
    /// Starts the threads for `epochs` passes (0: endless), the first one
    /// being epoch `first_epoch` (from 0) of the run.
    pub(crate) fn start(
        shared: Arc<Shared>,
        first_epoch: u64,
        epochs: u64,
        threads: usize,
        depth: usize,
    ) -> Result<Pipeline, DataError> {
        let threads = threads.max(1);
        let depth = depth.max(threads + 1);
        let (recycle_tx, recycle_rx) = sync_channel::<Chunk>(depth);
        let (work_tx, work_rx) = sync_channel::<Chunk>(depth);
        let (done_tx, done_rx) = sync_channel::<Chunk>(depth);
        for _ in 0..depth {
            // Cannot fail: the receiver is alive and there is room.
            let _ = recycle_tx.try_send(Chunk::new(&shared.inputs, &shared.elems));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let spawn_error = |e: std::io::Error| {
            DataError::new("input pipeline", format!("cannot start a thread: {e}"))
        };
        let mut handles = Vec::with_capacity(threads + 1);
        {
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            let h = std::thread::Builder::new()
                .name("specc-reader".into())
                .spawn(move || reader(&shared, first_epoch, epochs, &recycle_rx, &work_tx, &stop))
                .map_err(spawn_error)?;
            handles.push(h);
        }
        let work_rx = Arc::new(Mutex::new(work_rx));
        for i in 0..threads {
            let shared = Arc::clone(&shared);
            let work_rx = Arc::clone(&work_rx);
            let done_tx = done_tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("specc-input-{i}"))
                .spawn(move || worker(&shared, &work_rx, &done_tx))
                .map_err(spawn_error)?;
            handles.push(h);
        }
        drop(done_tx);
        Ok(Pipeline {
            recycle: Some(recycle_tx),
            done: Some(done_rx),
            ring: (0..depth).map(|_| None).collect(),
            next_seq: 0,
            stop,
            threads: handles,
        })
    }

    /// The next chunk in the reader's order (waits for it).
    pub(crate) fn next(&mut self) -> Result<Chunk, DataError> {
        let depth = self.ring.len() as u64;
        let slot = (self.next_seq % depth) as usize;
        loop {
            if let Some(c) = self.ring[slot].take() {
                self.next_seq += 1;
                return Ok(c);
            }
            let got = self.done.as_ref().and_then(|d| d.recv().ok());
            let Some(c) = got else {
                return Err(DataError::new(
                    "input pipeline",
                    "the reader and workers stopped before the end of the data",
                ));
            };
            let k = (c.seq % depth) as usize;
            self.ring[k] = Some(c);
        }
    }

    /// Gives a consumed chunk back to the reader.
    pub(crate) fn recycle(&mut self, chunk: Chunk) {
        if let Some(r) = &self.recycle {
            // Never blocks: at most `depth` chunks exist. A stopped reader
            // just drops it.
            let _ = r.try_send(chunk);
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.recycle = None;
        self.done = None;
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// The reader thread: epochs `0..epochs` (0: endless) of the files in the
/// interleave order, then stops. Each chunk carries its epoch (the run's,
/// from `first_epoch`) and the place of its first record in the epoch.
fn reader(
    shared: &Shared,
    first_epoch: u64,
    epochs: u64,
    recycle: &Receiver<Chunk>,
    work: &SyncSender<Chunk>,
    stop: &AtomicBool,
) {
    let mut seq = 0u64;
    let mut send = |mut c: Chunk| -> bool {
        c.seq = seq;
        seq += 1;
        work.send(c).is_ok()
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let columns: Vec<Vec<String>> = shared.inputs.iter().map(|i| i.columns.clone()).collect();
        let mut epoch = 0u64;
        while epochs == 0 || epoch < epochs {
            epoch += 1;
            let order = file_order(
                shared.files.len(),
                shared.file_seed,
                first_epoch + epoch - 1,
            );
            let mut index = 0u64;
            let mut slots: Vec<Option<FileReader>> =
                (0..shared.cycle_length.max(1)).map(|_| None).collect();
            // A record shard read one file at a time: the unsharded
            // stream's place of the open file's first record (the records
            // of the files before it, every replica's).
            let by_ordinal = shared.record_shard.count > 1 && slots.len() == 1;
            let mut file_base = 0u64;
            let mut next_file = 0usize;
            let mut open = 0usize;
            let mut cursor = 0usize;
            let mut spare: Option<Chunk> = None;
            loop {
                if slots[cursor].is_none() {
                    if next_file < shared.files.len() {
                        let Ok(mut c) = spare.take().map_or_else(|| recycle.recv(), Ok) else {
                            return;
                        };
                        match FileReader::open(
                            &shared.format,
                            &shared.files[order[next_file]],
                            &columns,
                            shared.record_shard,
                            shared.listing.as_ref(),
                        ) {
                            Ok(r) => {
                                slots[cursor] = Some(r);
                                open += 1;
                                spare = Some(c);
                            }
                            Err(e) => {
                                c.reset(Kind::Rows);
                                c.error = Some(e);
                                send(c);
                                return;
                            }
                        }
                        next_file += 1;
                    } else if open == 0 {
                        break;
                    } else {
                        cursor = (cursor + 1) % slots.len();
                        continue;
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut c) = spare.take().map_or_else(|| recycle.recv(), Ok) else {
                    return;
                };
                c.reset(Kind::Rows);
                let Some(r) = slots[cursor].as_mut() else {
                    spare = Some(c);
                    continue;
                };
                let done = r.read_chunk(&shared.format, shared.policy, &mut c, shared.block_length);
                c.epoch = first_epoch + epoch - 1;
                c.first_index = index;
                index += c.rows as u64;
                if by_ordinal {
                    c.index_base = Some(file_base);
                }
                if done {
                    file_base += r.records_seen();
                    slots[cursor] = None;
                    open -= 1;
                }
                let failed = c.error.is_some();
                if c.rows > 0 || failed || !c.skipped.is_empty() {
                    if !send(c) || failed {
                        return;
                    }
                } else {
                    spare = Some(c);
                }
                cursor = (cursor + 1) % slots.len();
            }
            let Ok(mut c) = spare.take().map_or_else(|| recycle.recv(), Ok) else {
                return;
            };
            c.reset(Kind::EndOfEpoch);
            if !send(c) {
                return;
            }
        }
    }));
    if result.is_err() {
        if let Ok(mut c) = recycle.recv() {
            c.reset(Kind::Rows);
            c.error = Some(DataError::new(
                "input pipeline",
                "internal error: the reader thread panicked",
            ));
            send(c);
        }
    }
}

/// A worker thread: transforms chunks until the reader is gone.
fn worker(shared: &Shared, work: &Mutex<Receiver<Chunk>>, done: &SyncSender<Chunk>) {
    let new = || {
        Transformer::new(
            &shared.inputs,
            &shared.widths,
            shared.num_classes.clone(),
            shared.format.clone(),
            shared.policy,
            shared.listing.clone(),
        )
    };
    let mut t = new();
    loop {
        let next = match work.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut c) = next else {
            return;
        };
        if catch_unwind(AssertUnwindSafe(|| t.run(&mut c))).is_err() {
            c.good = 0;
            c.error = Some(DataError::new(
                &c.file,
                "internal error: an input worker panicked transforming this file",
            ));
            t = new();
        }
        if done.send(c).is_err() {
            return;
        }
    }
}
