//! A chunk: up to `block_length` consecutive records of one file, read by
//! the reader thread, transformed by a worker into the step's value format,
//! and handed to the training thread in order.
//!
//! Owns: [`Chunk`] (the raw records, their locations, the transformed
//! values, the skipped records, a trailing error) and [`Transformer`] (one
//! worker's column transforms: decoding Examples or SequenceExamples (a
//! sequence column's key from the feature lists, every other key from the
//! context), the CSV options' `na_value`, `column_defaults` and `filter`,
//! the bad-record policy, the model's id ranges).
//!
//! Invariants: chunks are recycled (the training thread returns each one to
//! the reader), so in steady state nothing is allocated for them; the
//! transformed values of a chunk depend only on its records (transforms see
//! no other state), which is what makes the stream the same whatever the
//! number of workers; `good` rows are exactly the records that were not
//! skipped nor dropped by the filter, in file order; an `error` comes after the `good` rows (the first
//! bad record with `on_bad_record = "error"`, or a damaged file).

use std::sync::Arc;

use crate::abi::ElemType;
use crate::data::{CellRows, ColumnTransform, DataError, InputSpec, Values, ValuesMut};
use crate::feature_column::{CategoricalColumn, FeatureInput, PADDING_ID};
use crate::io::example::{Example, SequenceExample};

use super::bad::{BadRecords, OnBadRecord};
use super::images::{ImageInputs, ImageRecords, ImageRows, Listing, Record};
use super::Format;

/// What a chunk carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Records of a file.
    Rows,
    /// Every file of the epoch has been read.
    EndOfEpoch,
}

/// A chunk of records (see the module doc).
pub(crate) struct Chunk {
    pub(crate) seq: u64,
    pub(crate) kind: Kind,
    /// The epoch (from 0) the records belong to, and the place of the
    /// first one in that epoch's stream (the random draws of an image
    /// stream's transforms are keyed by them).
    pub(crate) epoch: u64,
    pub(crate) first_index: u64,
    /// A replica's record shard (one file at a time): the place of the
    /// file's first record in the epoch's unsharded stream, so that a row's
    /// place is this plus its ordinal, as in one process (`None`: the
    /// rows' places follow `first_index`).
    pub(crate) index_base: Option<u64>,
    /// Each row's record number in its file, every replica's records
    /// counted.
    pub(crate) ordinals: Vec<u64>,
    /// The file, as errors name it.
    pub(crate) file: Arc<str>,
    /// CSV: the field of every column of every input in this file.
    pub(crate) plan: Arc<Vec<Vec<usize>>>,
    /// CSV: the file's columns under the source's options (defaults,
    /// filter).
    pub(crate) csv: Option<Arc<crate::data::csv_options::CsvColumns>>,
    /// CSV records (the first `rows`).
    pub(crate) records: Vec<csv::ByteRecord>,
    /// Serialized Examples (the first `rows`).
    pub(crate) payloads: Vec<Vec<u8>>,
    /// The line (CSV) or record number from 0 (TFRecord) of each row.
    pub(crate) locations: Vec<usize>,
    /// Records read.
    pub(crate) rows: usize,
    /// Transformed values by input, `good * width` each.
    pub(crate) values: Vec<Values>,
    /// Rows kept after the bad-record policy.
    pub(crate) good: usize,
    /// Records skipped in this chunk.
    pub(crate) bad: BadRecords,
    /// Records skipped while reading and transforming, before they are
    /// counted in `bad` in file order: `(row they precede or are, 0 for the
    /// reader / 1 for the transforms, error)`.
    pub(crate) skipped: Vec<(usize, u8, DataError)>,
    /// The error that ends the stream after the `good` rows.
    pub(crate) error: Option<DataError>,
}

impl Chunk {
    pub(crate) fn new(inputs: &[InputSpec], elems: &[ElemType]) -> Chunk {
        Chunk {
            seq: 0,
            kind: Kind::Rows,
            epoch: 0,
            first_index: 0,
            index_base: None,
            ordinals: Vec::new(),
            file: Arc::from(""),
            plan: Arc::new(Vec::new()),
            csv: None,
            records: Vec::new(),
            payloads: Vec::new(),
            locations: Vec::new(),
            rows: 0,
            values: inputs
                .iter()
                .zip(elems)
                .map(|(_, e)| match e {
                    ElemType::F32 => Values::F32(Vec::new()),
                    ElemType::I32 => Values::I32(Vec::new()),
                })
                .collect(),
            good: 0,
            bad: BadRecords::default(),
            skipped: Vec::new(),
            error: None,
        }
    }

    /// Empties the chunk for reuse (keeping its allocations).
    pub(crate) fn reset(&mut self, kind: Kind) {
        self.kind = kind;
        self.rows = 0;
        self.good = 0;
        self.csv = None;
        self.locations.clear();
        self.ordinals.clear();
        self.index_base = None;
        self.bad.clear();
        self.skipped.clear();
        self.error = None;
    }

    /// The error of a record at row `r` (its line, or its record number).
    pub(crate) fn error_at(
        &self,
        format: &Format,
        r: usize,
        column: Option<&str>,
        message: impl Into<String>,
    ) -> DataError {
        located(format, &self.file, self.locations[r], column, message)
    }
}

/// The input holding the ids of `input` when `input` is the weights of an
/// unweighted categorical column: every present id has weight 1, so the
/// weights follow from the ids (see the feature_column::transform invariant
/// that the two transforms agree slot by slot).
fn weights_source(inputs: &[InputSpec], input: &InputSpec) -> Option<usize> {
    let Some(FeatureInput::Weights { column, max_values }) = &input.feature else {
        return None;
    };
    if matches!(column, CategoricalColumn::Weighted { .. }) {
        return None;
    }
    inputs.iter().position(|i| {
        matches!(&i.feature, Some(FeatureInput::Ids { column: c, max_values: m, .. })
            if c == column && m == max_values)
    })
}

/// An error about the record at `location` of `file`: a CSV line, or a
/// TFRecord record number (from 0, as `tf.data` counts).
pub(crate) fn located(
    format: &Format,
    file: &str,
    location: usize,
    column: Option<&str>,
    message: impl Into<String>,
) -> DataError {
    match format {
        Format::Csv(_) => DataError::at(file, Some(location), column, message),
        Format::Images(f) if !matches!(f.records, ImageRecords::TfRecord { .. }) => {
            DataError::at(file, Some(location), column, message)
        }
        Format::TfRecord { .. } | Format::Images(_) => {
            let m = message.into();
            let what = match column {
                Some(c) => format!("record {location}, feature `{c}`: {m}"),
                None => format!("record {location}: {m}"),
            };
            DataError::at(file, None, None, what)
        }
    }
}

/// Rows a worker runs every transform over before going on (see
/// [`Transformer::segment`]).
const SEGMENT_BLOCK: usize = 256;

/// One worker's transforms and scratch.
pub(crate) struct Transformer {
    transforms: Vec<Box<dyn ColumnTransform>>,
    /// Each input's values per row.
    widths: Vec<usize>,
    /// An image stream's per-record work (then `transforms` is empty).
    images: Option<ImageRows>,
    /// A directory stream's examples (chunk locations index them).
    listing: Option<Listing>,
    /// The model's id range of each input (`None`: any id >= 0).
    num_classes: Vec<Option<u32>>,
    /// Whether each input is a feature column's ids, which may hold the
    /// padding id -1.
    padding: Vec<bool>,
    /// `Some(u)`: input t is the weights of an unweighted categorical column
    /// whose ids are input u; its values are derived from them (1 where an
    /// id is present, 0 at padding) instead of parsing the cells again.
    weights_of: Vec<Option<usize>>,
    names: Vec<String>,
    format: Format,
    policy: OnBadRecord,
    /// A TFRecord chunk's records, decoded (an Example's features as the
    /// context of a SequenceExample without feature lists).
    examples: Vec<SequenceExample>,
    /// Per transform, per column: read from the records' feature lists
    /// (a SequenceExample source's sequence columns) rather than the
    /// context.
    lists: Vec<Vec<bool>>,
    keep: Vec<bool>,
    scratch: csv::ByteRecord,
}

impl Transformer {
    pub(crate) fn new(
        inputs: &[InputSpec],
        widths: &[usize],
        num_classes: Vec<Option<u32>>,
        format: Format,
        policy: OnBadRecord,
        listing: Option<Listing>,
    ) -> Transformer {
        let images = match &format {
            Format::Images(f) => Some(ImageRows::new(
                (**f).clone(),
                ImageInputs::new(inputs, &num_classes),
            )),
            _ => None,
        };
        let transforms: Vec<Box<dyn ColumnTransform>> = if images.is_some() {
            Vec::new()
        } else {
            inputs
                .iter()
                .map(crate::data::columns::transform_for)
                .collect()
        };
        let lists = transforms
            .iter()
            .map(|t| {
                t.columns()
                    .iter()
                    .map(|c| match &format {
                        Format::TfRecord {
                            feature_lists: Some(keys),
                            ..
                        } => keys.contains(c),
                        _ => false,
                    })
                    .collect()
            })
            .collect();
        Transformer {
            transforms,
            lists,
            widths: widths.to_vec(),
            images,
            listing,
            num_classes,
            padding: inputs
                .iter()
                .map(|i| matches!(i.feature, Some(FeatureInput::Ids { .. })))
                .collect(),
            weights_of: inputs.iter().map(|i| weights_source(inputs, i)).collect(),
            names: inputs.iter().map(|i| i.name.clone()).collect(),
            format,
            policy,
            examples: Vec::new(),
            keep: Vec::new(),
            scratch: csv::ByteRecord::new(),
        }
    }

    /// A bad record at row `r`: the end of the chunk (`Error`) or skipped.
    /// Returns true when the chunk ends there.
    fn bad(&mut self, chunk: &mut Chunk, r: usize, e: DataError) -> bool {
        match self.policy {
            OnBadRecord::Error => {
                chunk.error = Some(e);
                true
            }
            OnBadRecord::Skip => {
                chunk.skipped.push((r, 1, e));
                self.keep[r] = false;
                false
            }
        }
    }

    /// Transforms the chunk's records into its values (see the module doc).
    pub(crate) fn run(&mut self, chunk: &mut Chunk) {
        if chunk.kind != Kind::Rows {
            return;
        }
        let mut n = chunk.rows;
        self.keep.clear();
        self.keep.resize(n, true);
        if self.images.is_some() {
            n = self.run_images(chunk, n);
            self.compact(chunk, n);
            return;
        }
        // CSV: `na_value` and `column_defaults` applied, the filter's
        // rows dropped (not bad records), a required field missing or a
        // field the filter cannot compare a bad record.
        if let Some(columns) = chunk.csv.clone() {
            for r in 0..n {
                match columns.prepare(&mut chunk.records[r], &mut self.scratch) {
                    Ok(true) => {}
                    Ok(false) => self.keep[r] = false,
                    Err((i, m)) => {
                        let e = chunk.error_at(&self.format, r, Some(columns.name(i)), m);
                        if self.bad(chunk, r, e) {
                            n = r;
                            break;
                        }
                    }
                }
            }
        }
        // TFRecord: decode every Example (SequenceExample) first; one that
        // does not decode is a bad record.
        if let Format::TfRecord { feature_lists, .. } = &self.format {
            let sequence = feature_lists.is_some();
            self.examples.clear();
            for r in 0..n {
                let (payload, record) = (&chunk.payloads[r], chunk.locations[r]);
                let decoded = if sequence {
                    SequenceExample::decode(payload, record)
                } else {
                    Example::decode(payload, record).map(|ex| SequenceExample {
                        context: ex.features,
                        feature_lists: Default::default(),
                    })
                };
                match decoded {
                    Ok(ex) => self.examples.push(ex),
                    Err(e) => {
                        self.examples.push(SequenceExample::default());
                        let what = if sequence {
                            "tf.train.SequenceExample"
                        } else {
                            "tf.train.Example"
                        };
                        let err = chunk.error_at(
                            &self.format,
                            r,
                            None,
                            format!("not a {what}: {}", e.what),
                        );
                        if self.bad(chunk, r, err) {
                            n = r;
                            break;
                        }
                    }
                }
            }
        }
        self.size_values(chunk, n);
        // Transform [a, n); at the first bad row r, redo [a, r) (the failing
        // transform's values there are unspecified) and go on after r.
        let mut a = 0;
        while a < n {
            if !self.keep[a] {
                a += 1;
                continue;
            }
            // The rows up to the next already-refused one.
            let b = (a..n).find(|&r| !self.keep[r]).unwrap_or(n);
            match self.segment(chunk, a, b) {
                None => a = b,
                Some((r, e)) => {
                    if r > a {
                        // Cannot fail: the first bad row is r.
                        let _ = self.segment(chunk, a, r);
                    }
                    if self.bad(chunk, r, e) {
                        n = r;
                        break;
                    }
                    a = r + 1;
                }
            }
        }
        self.compact(chunk, n);
    }

    /// Sizes every input's values for `n` rows (allocations kept).
    fn size_values(&self, chunk: &mut Chunk, n: usize) {
        for (v, &w) in chunk.values.iter_mut().zip(&self.widths) {
            match v {
                Values::F32(v) => v.resize(n * w, 0.0),
                Values::I32(v) => v.resize(n * w, 0),
            }
        }
    }

    /// An image stream's chunk: each of the first `n` records read, decoded
    /// and transformed into its row; returns the rows before the first bad
    /// record under `"error"` (else `n`).
    fn run_images(&mut self, chunk: &mut Chunk, n: usize) -> usize {
        self.size_values(chunk, n);
        let Some(img) = self.images.as_mut() else {
            return n;
        };
        let image_width = self.widths.get(img.image_input()).copied().unwrap_or(0);
        let file = std::sync::Arc::clone(&chunk.file);
        for r in 0..n {
            let location = chunk.locations[r];
            let record = match (&self.format, &self.listing) {
                (_, Some(listing)) => match listing.get(location) {
                    Some(ex) => Record::Listed(ex),
                    None => {
                        chunk.error = Some(DataError::new(&file, "the listing changed"));
                        return r;
                    }
                },
                (Format::Images(f), None) if matches!(f.records, ImageRecords::Csv { .. }) => {
                    let rec = &chunk.records[r];
                    let field = |k: usize| {
                        chunk
                            .plan
                            .get(k)
                            .and_then(|p| p.first())
                            .and_then(|&i| rec.get(i))
                            .unwrap_or(b"")
                    };
                    Record::Csv {
                        file: &file,
                        line: location,
                        path: field(0),
                        label: field(1),
                    }
                }
                _ => Record::Example {
                    file: &file,
                    record: location,
                    payload: &chunk.payloads[r],
                },
            };
            let index = match chunk.index_base {
                Some(base) => base + chunk.ordinals[r],
                None => chunk.first_index + r as u64,
            };
            let result = img.row(
                record,
                chunk.epoch,
                index,
                &mut chunk.values,
                image_width,
                r,
            );
            if let Err(e) = result {
                match self.policy {
                    OnBadRecord::Error => {
                        chunk.error = Some(e);
                        return r;
                    }
                    OnBadRecord::Skip => {
                        chunk.skipped.push((r, 1, e));
                        self.keep[r] = false;
                    }
                }
            }
        }
        n
    }

    /// Moves the kept rows among the first `n` together, counts the skipped
    /// ones in file order.
    fn compact(&mut self, chunk: &mut Chunk, n: usize) {
        // Compact the kept rows.
        let mut good = 0;
        for r in 0..n {
            if !self.keep[r] {
                continue;
            }
            if good != r {
                for (v, &w) in chunk.values.iter_mut().zip(&self.widths) {
                    match v {
                        Values::F32(v) => v.copy_within(r * w..(r + 1) * w, good * w),
                        Values::I32(v) => v.copy_within(r * w..(r + 1) * w, good * w),
                    }
                }
            }
            good += 1;
        }
        for (v, &w) in chunk.values.iter_mut().zip(&self.widths) {
            match v {
                Values::F32(v) => v.truncate(good * w),
                Values::I32(v) => v.truncate(good * w),
            }
        }
        chunk.good = good;
        chunk.skipped.sort_by_key(|(r, k, _)| (*r, *k));
        for (_, _, e) in chunk.skipped.drain(..) {
            chunk.bad.add(e);
        }
    }

    /// Runs every transform over rows `[a, b)`; the first bad row (row, then
    /// input, then column) and its error.
    fn segment(&mut self, chunk: &mut Chunk, a: usize, b: usize) -> Option<(usize, DataError)> {
        // Blocks of rows small enough that their records stay in cache while
        // every transform reads them; the first block with a bad row has the
        // first bad row.
        let mut s = a;
        while s < b {
            let e = (s + SEGMENT_BLOCK).min(b);
            if let Some(bad) = self.block(chunk, s, e) {
                return Some(bad);
            }
            s = e;
        }
        None
    }

    /// [`segment`](Self::segment) over one block of rows `[a, b)`.
    fn block(&mut self, chunk: &mut Chunk, a: usize, b: usize) -> Option<(usize, DataError)> {
        let mut first: Option<(usize, usize, usize, String)> = None;
        let mut cells: Vec<crate::data::Cell<'_>> = Vec::new();
        for (t, transform) in self.transforms.iter_mut().enumerate() {
            if self.weights_of[t].is_some() {
                continue;
            }
            let w = transform.width();
            let out = match &mut chunk.values[t] {
                Values::F32(v) => ValuesMut::F32(&mut v[a * w..b * w]),
                Values::I32(v) => ValuesMut::I32(&mut v[a * w..b * w]),
            };
            let result = match &self.format {
                Format::Csv(_) => transform.transform(
                    &CellRows::records(&chunk.records[a..b], &chunk.plan[t]),
                    out,
                ),
                Format::TfRecord { .. } => {
                    cells.clear();
                    let cols = transform.columns().len();
                    for ex in &self.examples[a..b] {
                        for (c, &list) in transform.columns().iter().zip(&self.lists[t]) {
                            cells.push(if list {
                                crate::data::Cell::FeatureList(
                                    ex.feature_lists.get(c).map(Vec::as_slice),
                                )
                            } else {
                                crate::data::Cell::Feature(ex.context.get(c))
                            });
                        }
                    }
                    transform.transform(&CellRows::cells(&cells, cols), out)
                }
                // Image streams do not run column transforms (`run_images`).
                Format::Images(_) => Ok(()),
            };
            let mut found = result.err().map(|e| (a + e.row, e.column, e.message));
            // The model's id range (the compiled step clamps ids, so an id
            // out of range must not reach it).
            if let (Some(c), Values::I32(v)) = (self.num_classes[t], &chunk.values[t]) {
                let end = found.as_ref().map_or(b, |f| f.0);
                let padding = self.padding[t];
                let bad = |id: i32| {
                    if id < 0 {
                        !(padding && id == PADDING_ID)
                    } else {
                        id as u32 >= c
                    }
                };
                if let Some(k) = v[a * w..end * w].iter().position(|&id| bad(id)) {
                    let id = v[a * w + k];
                    found = Some((
                        a + k / w.max(1),
                        k % w.max(1),
                        format!("id {id} is out of range: expected 0 <= id < {c}"),
                    ));
                }
            }
            if let Some((r, col, m)) = found {
                let earlier = first.as_ref().is_none_or(|f| r < f.0);
                if earlier {
                    first = Some((r, t, col, m));
                }
            }
        }
        for (t, u) in self.weights_of.iter().enumerate() {
            let Some(u) = *u else { continue };
            let w = self.transforms[t].width();
            let (ids, weights) = if u < t {
                let (head, tail) = chunk.values.split_at_mut(t);
                (&head[u], &mut tail[0])
            } else {
                let (head, tail) = chunk.values.split_at_mut(u);
                (&tail[0], &mut head[t])
            };
            if let (Values::I32(ids), Values::F32(weights)) = (ids, weights) {
                for (x, &id) in weights[a * w..b * w].iter_mut().zip(&ids[a * w..b * w]) {
                    *x = if id >= 0 { 1.0 } else { 0.0 };
                }
            }
        }
        let (r, t, col, m) = first?;
        let column = self.transforms[t]
            .columns()
            .get(col)
            .cloned()
            .unwrap_or_else(|| self.names[t].clone());
        Some((r, chunk.error_at(&self.format, r, Some(&column), m)))
    }
}
