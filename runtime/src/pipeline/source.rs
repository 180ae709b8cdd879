//! [`StreamingBatches`]: the [`BatchSource`] of a streaming input pipeline.
//!
//! Owns: the epochs (`num_epochs`, or endless), the shuffle buffer
//! ([`RowBuffer`]) on the training thread, `cache` (the first epoch's rows
//! kept, later epochs served from memory, as `Dataset.cache()`), the
//! bad-record report, and the position a checkpoint keeps.
//!
//! The row stream of an epoch is the files in the interleave order, minus
//! the skipped records; it is the same every epoch, with or without
//! `cache`, for any number of threads. Batches are `batch` rows, straddling
//! epochs (`shuffle().repeat().batch()`); with `num_epochs` the last batch
//! may be short, then the source is exhausted (`next_batch` returns 0 and
//! `fit` ends).
//!
//! Position (`specc/batch_order`): `[version, epoch, stream state, rows
//! emitted in the epoch, in an epoch (0/1), exhausted (0/1), shuffle
//! buffer, files]` — the random stream's state at the start of the epoch
//! and how many rows the epoch has emitted. [`seek`](BatchSource::seek)
//! replays the epoch from its first record up to there (reading, not
//! training), so a resumed run draws the same batches as one that never
//! stopped; that costs at most one epoch of reading, and keeps no rows in
//! the checkpoint.
//!
//! Invariants: a batch allocates nothing on the training thread (chunks
//! are recycled, the shuffle buffer is allocated once; only the first
//! epoch of a `cache`d source grows the cache); threads start at the first
//! batch and stop when the source is dropped.

use std::path::PathBuf;
use std::sync::Arc;

use crate::abi::{ElemType, Layout};
use crate::data::{DataError, InputSpec, Normalizer, Values, ValuesMut};
use crate::prng::SplitMix64;
use crate::source::{BatchBuffers, BatchSource};

use super::bad::BadRecords;
use super::chunk::{Chunk, Kind};
use super::shuffle::{push_row, RowBuffer};
use super::workers::{Pipeline, Shared};
use super::{ImageRecords, StreamSpec};

/// The layout version of the position.
const POSITION_VERSION: i64 = 1;
const POSITION_LEN: usize = 8;

/// The first epoch's rows, kept (`cache = true`).
struct Cache {
    values: Vec<Values>,
    rows: usize,
    complete: bool,
}

/// Batches streamed from files (see the module doc).
pub struct StreamingBatches {
    shared: Arc<Shared>,
    /// `map[i]`: the pipeline input of the model's input `i` (`None`: the
    /// function does not read it; its buffer is left as it is).
    map: Vec<Option<usize>>,
    batch: usize,
    num_epochs: Option<u64>,
    threads: usize,
    pipeline: Option<Pipeline>,
    chunk: Option<Chunk>,
    cursor: usize,
    cache: Option<Cache>,
    /// This epoch's rows come from the cache, at this row.
    from_cache: Option<usize>,
    buf: RowBuffer,
    rng: SplitMix64,
    /// Epochs started.
    epoch: u64,
    epoch_rng: u64,
    emitted: u64,
    epoch_active: bool,
    /// The current epoch's rows have all been read (its end was seen).
    epoch_read: bool,
    exhausted: bool,
    /// Rows to replay before the next batch (after a seek), and the position
    /// sought.
    replay: Option<(u64, Vec<i64>)>,
    bad: BadRecords,
    rows: u64,
}

impl StreamingBatches {
    /// A source of batches of `batch` rows for a model with `layout`, its
    /// inputs computed as `inputs` say from the files of `spec`; `shuffle`
    /// and `seed` as the `train` item's (a shuffle buffer of that many rows,
    /// 0 or 1: stream order). Expands the file patterns; starts no thread.
    pub fn new(
        spec: &StreamSpec,
        inputs: &[InputSpec],
        layout: &Layout,
        batch: usize,
        shuffle: usize,
        seed: u64,
    ) -> Result<StreamingBatches, DataError> {
        let reads = vec![true; layout.inputs.len()];
        StreamingBatches::reading(spec, inputs, layout, &reads, batch, shuffle, seed)
    }

    /// [`new`](Self::new) for a function that reads only some of the
    /// model's inputs (`predict` reads no label): `reads[i]` says whether
    /// model input `i` is read. The others need not be among `inputs` (nor
    /// their columns in the files), and their buffers are left as they are.
    pub fn reading(
        spec: &StreamSpec,
        inputs: &[InputSpec],
        layout: &Layout,
        reads: &[bool],
        batch: usize,
        shuffle: usize,
        seed: u64,
    ) -> Result<StreamingBatches, DataError> {
        let first = spec
            .paths
            .first()
            .map_or_else(|| "data".to_string(), |p| p.display().to_string());
        let err = |m: String| DataError::new(&first, m);
        if batch == 0 || batch > layout.max_batch {
            return Err(err(format!(
                "the batch size must be in 1..={}, got {batch}",
                layout.max_batch
            )));
        }
        for i in inputs {
            if i.normalizer == Normalizer::Standardize {
                return Err(err(format!(
                    "input `{}`: `normalizer = standardize` needs every row before the \
                     first batch; a streaming source cannot give it (use an expression)",
                    i.name
                )));
            }
        }
        let image_format = match &spec.format {
            super::Format::Images(f) => Some(f),
            _ => None,
        };
        if image_format.is_some() && spec.cache {
            return Err(err(
                "`cache` is not available for an image source: it would keep the first \
                 epoch's augmented pixels"
                    .to_string(),
            ));
        }
        // A directory of images is one "file" whose records are its images,
        // listed once here (paths and labels, no pixels).
        let directory = image_format.is_some_and(|f| f.records == ImageRecords::Directory);
        let mut listing = None;
        let mut files = if directory {
            let dir = spec.paths.first().cloned().unwrap_or_default();
            listing = Some(Arc::new(super::images::list_directory(&dir)?));
            vec![dir]
        } else {
            super::files::expand(&spec.paths)?
        };
        // A replica's share: whole files when there are enough, else records.
        let shard = spec.shard;
        let mut record_shard = super::Shard::default();
        if shard.count > 1 {
            if files.len() >= shard.count {
                files = files
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| i % shard.count == shard.index)
                    .map(|(_, f)| f)
                    .collect();
            } else {
                record_shard = shard;
            }
        }
        let (elems, widths): (Vec<ElemType>, Vec<usize>) = match image_format {
            Some(f) => f.shapes(inputs).map_err(err)?,
            None => {
                let transforms: Vec<_> = inputs
                    .iter()
                    .map(crate::data::columns::transform_for)
                    .collect();
                (
                    transforms.iter().map(|t| t.elem()).collect(),
                    transforms.iter().map(|t| t.width()).collect(),
                )
            }
        };
        let mut map = Vec::with_capacity(layout.inputs.len());
        for (j, l) in layout.inputs.iter().enumerate() {
            if !reads.get(j).copied().unwrap_or(true) {
                map.push(None);
                continue;
            }
            let k = inputs
                .iter()
                .position(|i| i.name == l.name)
                .ok_or_else(|| err(format!("the data has no input `{}`", l.name)))?;
            if widths[k] != l.per_example || elems[k] != l.elem {
                return Err(err(format!(
                    "input `{}` does not match the model's shape or type",
                    l.name
                )));
            }
            map.push(Some(k));
        }
        let num_classes = inputs
            .iter()
            .map(|i| {
                layout
                    .inputs
                    .iter()
                    .find(|l| l.name == i.name)
                    .and_then(|l| l.num_classes)
            })
            .collect();
        let template: Vec<Values> = elems
            .iter()
            .map(|e| match e {
                ElemType::F32 => Values::F32(Vec::new()),
                ElemType::I32 => Values::I32(Vec::new()),
            })
            .collect();
        let shared = Arc::new(Shared {
            files,
            record_shard,
            format: spec.format.clone(),
            inputs: inputs.to_vec(),
            elems,
            widths: widths.clone(),
            listing,
            num_classes,
            policy: spec.on_bad_record,
            block_length: spec.block_length.max(1),
            cycle_length: spec.cycle_length.max(1),
            file_seed: spec.shuffle_files.then_some(seed),
        });
        Ok(StreamingBatches {
            map,
            batch,
            num_epochs: spec.num_epochs,
            threads: spec.threads.max(1),
            pipeline: None,
            chunk: None,
            cursor: 0,
            cache: spec.cache.then(|| Cache {
                values: template.clone(),
                rows: 0,
                complete: false,
            }),
            from_cache: None,
            buf: RowBuffer::new(&template, &widths, shuffle.max(1)),
            rng: SplitMix64::new(seed),
            epoch: 0,
            epoch_rng: seed,
            emitted: 0,
            epoch_active: false,
            epoch_read: false,
            exhausted: false,
            replay: None,
            bad: BadRecords::default(),
            rows: 0,
            shared,
        })
    }

    /// The files read, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.shared.files
    }

    /// The records skipped so far (`on_bad_record = "skip"`).
    pub fn bad_records(&self) -> &BadRecords {
        &self.bad
    }

    /// Epochs that have contributed at least one row.
    pub fn epochs_started(&self) -> u64 {
        self.epoch
    }

    /// Rows emitted in batches so far (replayed rows not counted).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn depth(&self) -> usize {
        2 * self.threads + 2
    }

    /// The next chunk of the pipeline, its skipped records counted (and
    /// its rows cached while the cache fills); `None` at the end of an
    /// epoch.
    fn next_chunk(&mut self) -> Result<Option<()>, DataError> {
        if let Some(c) = self.chunk.take() {
            if let Some(p) = self.pipeline.as_mut() {
                p.recycle(c);
            }
        }
        let Some(p) = self.pipeline.as_mut() else {
            return Ok(None);
        };
        let mut c = p.next()?;
        if c.kind == Kind::EndOfEpoch {
            p.recycle(c);
            if let Some(cache) = self.cache.as_mut() {
                cache.complete = true;
                // Later epochs come from the cache.
                self.pipeline = None;
            }
            return Ok(None);
        }
        self.bad.extend(&c.bad);
        if let Some(cache) = self.cache.as_mut().filter(|c| !c.complete) {
            for r in 0..c.good {
                for ((d, s), w) in cache.values.iter_mut().zip(&c.values).zip(&self.buf.widths) {
                    push_row(s, r, *w, d);
                }
            }
            cache.rows += c.good;
        }
        if c.good == 0 {
            if let Some(e) = c.error.take() {
                self.chunk = Some(c);
                return Err(e);
            }
        }
        self.cursor = 0;
        self.chunk = Some(c);
        Ok(Some(()))
    }

    /// Copies the next row of the epoch into slot `slot`; false at the end
    /// of the epoch.
    fn pull_into(&mut self, slot: usize) -> Result<bool, DataError> {
        if self.epoch_read {
            return Ok(false);
        }
        if let Some(row) = self.from_cache.as_mut() {
            let Some(cache) = self.cache.as_ref() else {
                return Ok(false);
            };
            if *row >= cache.rows {
                self.epoch_read = true;
                return Ok(false);
            }
            self.buf.put(slot, &cache.values, *row);
            *row += 1;
            return Ok(true);
        }
        loop {
            if let Some(c) = self.chunk.as_mut() {
                if self.cursor < c.good {
                    self.buf.put(slot, &c.values, self.cursor);
                    self.cursor += 1;
                    return Ok(true);
                }
                if let Some(e) = c.error.take() {
                    return Err(e);
                }
            }
            if self.next_chunk()?.is_none() {
                self.epoch_read = true;
                return Ok(false);
            }
        }
    }

    /// Reads the whole first epoch into the cache.
    fn fill_cache(&mut self) -> Result<(), DataError> {
        self.pipeline = Some(Pipeline::start(
            Arc::clone(&self.shared),
            0,
            1,
            self.threads,
            self.depth(),
        )?);
        while self.next_chunk()?.is_some() {
            if let Some(e) = self.chunk.as_mut().and_then(|c| c.error.take()) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Starts the next epoch: false when there is none.
    fn start_epoch(&mut self) -> Result<bool, DataError> {
        if self.num_epochs.is_some_and(|n| self.epoch >= n) {
            self.exhausted = true;
            return Ok(false);
        }
        self.epoch += 1;
        self.epoch_rng = self.rng.state();
        self.emitted = 0;
        self.from_cache = None;
        self.epoch_read = false;
        let cached = self.cache.as_ref().map(|c| c.complete);
        match cached {
            Some(true) => self.from_cache = Some(0),
            Some(false) if self.epoch > 1 => {
                // A resumed run past the first epoch: fill the cache first.
                self.chunk = None;
                self.pipeline = None;
                self.fill_cache()?;
                self.from_cache = Some(0);
            }
            Some(false) if self.pipeline.is_none() => {
                self.pipeline = Some(Pipeline::start(
                    Arc::clone(&self.shared),
                    0,
                    1,
                    self.threads,
                    self.depth(),
                )?);
            }
            None if self.pipeline.is_none() => {
                let remaining = self.num_epochs.map_or(0, |n| n - (self.epoch - 1));
                self.pipeline = Some(Pipeline::start(
                    Arc::clone(&self.shared),
                    self.epoch - 1,
                    remaining,
                    self.threads,
                    self.depth(),
                )?);
            }
            _ => {}
        }
        self.buf.len = 0;
        while self.buf.len < self.buf.capacity && self.pull_into(self.buf.len)? {
            self.buf.len += 1;
        }
        if self.buf.len == 0 {
            let what = if self.bad.count > 0 {
                format!("every record of the epoch was bad ({})", self.bad)
            } else {
                "the files have no data rows".to_string()
            };
            let file = self
                .shared
                .files
                .first()
                .map_or_else(String::new, |p| p.display().to_string());
            self.exhausted = true;
            return Err(DataError::new(&file, what));
        }
        self.epoch_active = true;
        Ok(true)
    }

    /// Without a shuffle buffer (capacity 1), rows go out in stream order:
    /// [`emit`](Self::emit) gives the buffered row, then refills the slot
    /// with the chunk's next row. This does the same for a run of rows at
    /// once: the buffered row into row `row`, the next `m` rows of the chunk
    /// copied block-wise after it, and the row after those into the slot
    /// (so it needs at least 2 rows left in the chunk). Returns the rows
    /// written (`1 + m <= max`), 0 when the run does not apply.
    fn emit_run(&mut self, dst: &mut BatchBuffers<'_>, row: usize, max: usize) -> usize {
        if self.buf.capacity != 1
            || self.buf.len != 1
            || !self.epoch_active
            || self.exhausted
            || self.epoch_read
            || self.from_cache.is_some()
            || self.cache.as_ref().is_some_and(|c| !c.complete)
        {
            return 0;
        }
        let Some(c) = self.chunk.as_ref() else {
            return 0;
        };
        let left = c.good.saturating_sub(self.cursor);
        if left < 2 || max < 2 {
            return 0;
        }
        let m = (left - 1).min(max - 1);
        let from = self.cursor;
        for (i, k) in self.map.iter().enumerate() {
            // An input the function does not read is left as it is.
            let Some(k) = *k else { continue };
            let w = self.buf.widths[k];
            self.buf.write(k, 0, dst.input_mut(i), row);
            let rows = (row + 1) * w..(row + 1 + m) * w;
            let src = from * w..(from + m) * w;
            match (&c.values[k], dst.input_mut(i)) {
                (Values::F32(s), ValuesMut::F32(d)) => d[rows].copy_from_slice(&s[src]),
                (Values::I32(s), ValuesMut::I32(d)) => d[rows].copy_from_slice(&s[src]),
                // The source checked the types against the model's when built.
                _ => {}
            }
        }
        self.buf.put(0, &c.values, from + m);
        self.cursor = from + m + 1;
        self.emitted += 1 + m as u64;
        1 + m
    }

    /// Emits one row into row `row` of `dst` (or nowhere, replaying); false
    /// when the data is exhausted.
    fn emit(&mut self, dst: Option<&mut BatchBuffers<'_>>, row: usize) -> Result<bool, DataError> {
        loop {
            if self.exhausted {
                return Ok(false);
            }
            if !self.epoch_active && !self.start_epoch()? {
                return Ok(false);
            }
            if self.buf.len > 0 {
                break;
            }
            self.epoch_active = false;
        }
        let j = if self.buf.capacity > 1 {
            (self.rng.next_u64() % self.buf.len as u64) as usize
        } else {
            0
        };
        if let Some(b) = dst {
            for (i, k) in self.map.iter().enumerate() {
                if let Some(k) = *k {
                    self.buf.write(k, j, b.input_mut(i), row);
                }
            }
        }
        if !self.pull_into(j)? {
            self.buf.len -= 1;
            self.buf.move_slot(self.buf.len, j);
        }
        self.emitted += 1;
        if self.buf.len == 0 {
            self.epoch_active = false;
        }
        Ok(true)
    }
}

impl BatchSource for StreamingBatches {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        if let Some((skip, _)) = self.replay.take() {
            for _ in 0..skip {
                if !self.emit(None, 0)? {
                    break;
                }
            }
            // The report is this run's.
            self.bad.clear();
        }
        let n = self.batch.min(buffers.max_batch());
        let mut filled = 0;
        while filled < n {
            let run = self.emit_run(buffers, filled, n - filled);
            if run > 0 {
                filled += run;
                continue;
            }
            if !self.emit(Some(buffers), filled)? {
                break;
            }
            filled += 1;
        }
        self.rows += filled as u64;
        Ok(filled)
    }

    fn position(&self) -> Option<Vec<i64>> {
        if let Some((_, p)) = &self.replay {
            return Some(p.clone());
        }
        let (rng, emitted, active) = if self.epoch_active {
            (self.epoch_rng, self.emitted, 1)
        } else {
            (self.rng.state(), 0, 0)
        };
        Some(vec![
            POSITION_VERSION,
            self.epoch as i64,
            rng as i64,
            emitted as i64,
            active,
            i64::from(self.exhausted),
            self.buf.capacity as i64,
            self.shared.files.len() as i64,
        ])
    }

    fn seek(&mut self, p: &[i64]) -> Result<(), String> {
        if p.len() != POSITION_LEN || p[0] != POSITION_VERSION {
            return Err("the saved position is not a streaming source's".into());
        }
        if p[6] != self.buf.capacity as i64 || p[7] != self.shared.files.len() as i64 {
            return Err(format!(
                "the saved position is over {} files with a shuffle buffer of {}; \
                 this run has {} files and a buffer of {}",
                p[7],
                p[6],
                self.shared.files.len(),
                self.buf.capacity
            ));
        }
        if p[1] < 0 || p[3] < 0 || !(0..=1).contains(&p[4]) || !(0..=1).contains(&p[5]) {
            return Err("the saved position is out of range".into());
        }
        if p[4] == 1 && p[1] < 1 {
            return Err("the saved position is out of range".into());
        }
        self.chunk = None;
        self.pipeline = None;
        if let Some(c) = self.cache.as_mut().filter(|c| !c.complete) {
            c.rows = 0;
            for v in &mut c.values {
                match v {
                    Values::F32(v) => v.clear(),
                    Values::I32(v) => v.clear(),
                }
            }
        }
        self.from_cache = None;
        self.buf.len = 0;
        self.exhausted = p[5] == 1;
        self.emitted = 0;
        self.epoch_active = false;
        self.epoch_read = false;
        self.bad.clear();
        if p[4] == 1 {
            self.epoch = (p[1] - 1) as u64;
            self.rng = SplitMix64::new(p[2] as u64);
            self.replay = Some((p[3] as u64, p.to_vec()));
        } else {
            self.epoch = p[1] as u64;
            self.rng = SplitMix64::new(p[2] as u64);
            self.replay = None;
        }
        Ok(())
    }
}
