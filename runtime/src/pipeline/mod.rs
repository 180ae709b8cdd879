//! The streaming input pipeline: training data read from files in chunks on
//! worker threads, never held whole (unless `cache`), fed to the step in a
//! deterministic order — TF's `tf.data` (`list_files`, `interleave`,
//! `shuffle`, `repeat`, `batch`, `cache`, `prefetch`) and `QueueRunner`, in
//! one [`BatchSource`](crate::source::BatchSource).
//!
//! Owns, one concept per file: [`files`] (paths and glob patterns to a
//! sorted file list), `read` (a CSV or TFRecord file read a block of
//! records at a time), `chunk` (a block of records and its transformation
//! into the step's format, the bad-record policy applied), `workers` (the
//! reader and worker threads, the bounded queues, the reordering), `shuffle`
//! (the shuffle buffer), `source` ([`StreamingBatches`]: epochs, cache,
//! position), [`bad`] (the bad-record policy and report), [`images`]
//! (image sources streamed: records to decoded, transformed pixels on the
//! workers, random draws keyed by the chunk's epoch and record index).
//!
//! Invariants:
//! - Memory is bounded whatever the file size: `2 * threads + 2` chunks of
//!   `block_length` records, the shuffle buffer, and (only with `cache`)
//!   the first epoch's rows.
//! - The same files, spec, shuffle buffer and seed give the same batches
//!   whatever the number of threads.
//! - Errors are [`DataError`](crate::data::DataError)s naming the file, the
//!   line (CSV) or record (TFRecord, from 0) and the column or feature;
//!   they reach the training thread in stream order, after the rows before
//!   them; nothing panics, nothing hangs, no thread outlives the source.
//! - The column transforms are the in-memory loader's
//!   ([`crate::data::columns::transform_for`]), except the fitted ones
//!   (`normalizer = standardize`, which need every row first): refused.
//!   An image stream runs no column transform: its records go through the
//!   image input's pipeline ([`images`]), the in-memory loader's
//!   [`ImagePipeline::apply`](crate::data::images::ImagePipeline::apply).

pub mod bad;
mod chunk;
pub mod files;
pub mod images;
mod read;
mod shuffle;
mod source;
mod workers;

use std::path::PathBuf;

use crate::io::tfrecord::Compression;

pub use bad::{BadRecords, OnBadRecord};
pub use images::{ImageFormat, ImageRecords};
pub use source::StreamingBatches;

/// Records per chunk by default (`block_length`).
pub const DEFAULT_BLOCK_LENGTH: usize = 1024;

/// The record format of a streaming source.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    /// CSV files (each may be gzip) read under TF's CSV options (a header
    /// row, `na_value`, `column_defaults`, `filter`, ...: see
    /// [`crate::data::csv_options`]).
    Csv(Box<crate::data::CsvReadOptions>),
    /// TFRecord files of `tf.train.Example`, compressed as `compression`
    /// (`TFRecordOptions.compression_type`); with `feature_lists`, of
    /// `tf.train.SequenceExample`: the keys `feature_lists` names are read
    /// from its feature lists (a sequence column's steps), every other key
    /// from its `context` ([`crate::feature_column::feature_list_keys`]).
    TfRecord {
        compression: Compression,
        feature_lists: Option<Vec<String>>,
    },
    /// Images: a directory's files, CSV rows of paths and labels, or
    /// TFRecord Examples of encoded bytes, decoded and transformed by the
    /// image input's pipeline on the workers ([`images`]).
    Images(Box<ImageFormat>),
}

/// A streaming source as the `data` item describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    pub format: Format,
    /// Paths or glob patterns (relative ones already resolved).
    pub paths: Vec<PathBuf>,
    /// Passes over the files before the source is exhausted; `None`:
    /// endless (the run stops at its step count).
    pub num_epochs: Option<u64>,
    /// Files read at once, a block from each in turn (`interleave`).
    pub cycle_length: usize,
    /// Records per block, and per chunk.
    pub block_length: usize,
    /// Worker threads parsing and transforming chunks.
    pub threads: usize,
    pub on_bad_record: OnBadRecord,
    /// Keep the first epoch's rows in memory for the next epochs.
    pub cache: bool,
    /// Read the files in a new random order every epoch (drawn from the
    /// run's seed and the epoch), as `Dataset.list_files(shuffle=True)`
    /// and `make_csv_dataset(shuffle=True)` do; `false`: sorted.
    pub shuffle_files: bool,
    /// A replica's share of the data in a data-parallel run (`tf.data`'s
    /// `shard`): see [`Shard`].
    pub shard: Shard,
}

/// Which part of the data one replica of `count` reads (`index`): whole
/// files when there are at least `count` of them (file `i` of the sorted
/// list goes to replica `i % count`, TF's `list_files(..).shard(..)`), else
/// every `count`-th record of each file, from record `index` (the
/// `Dataset.shard` of the records). `count = 1`: everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { index: 0, count: 1 }
    }
}

impl Format {
    /// CSV files with TF's default options.
    pub fn csv() -> Format {
        Format::Csv(Box::default())
    }
}

impl StreamSpec {
    /// A spec with the defaults: endless, one file at a
    /// time, [`DEFAULT_BLOCK_LENGTH`], one worker, errors on bad records,
    /// no cache, files in sorted order.
    pub fn new(format: Format, paths: Vec<PathBuf>) -> StreamSpec {
        StreamSpec {
            format,
            paths,
            num_epochs: None,
            cycle_length: 1,
            block_length: DEFAULT_BLOCK_LENGTH,
            threads: 1,
            on_bad_record: OnBadRecord::Error,
            cache: false,
            shuffle_files: false,
            shard: Shard::default(),
        }
    }
}
