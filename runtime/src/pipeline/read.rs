//! The readers: one open file of a streaming source, read a block of
//! records at a time into a [`Chunk`] on the reader thread.
//!
//! Owns: [`FileReader`] — CSV (the source's CSV options, gzip recognised by
//! its magic bytes, the same record reading and row-length limit as the
//! in-memory loader; a row with the wrong number of fields is a bad record;
//! the options' defaults and filter are applied by the workers) and
//! TFRecord (plain, GZIP or ZLIB, both CRCs of every record checked; the
//! Examples are decoded by the workers).
//!
//! Invariants: a reader holds one record buffer per row of a chunk and
//! nothing else that grows with the file; a damaged file (I/O error, CRC
//! mismatch, truncation, a row over the limit) ends the chunk with an error
//! after the rows before it, whatever the bad-record policy.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::data::csv_file::CsvFile;
use crate::data::DataError;
use crate::io::tfrecord::{self, RecordReader};

use super::bad::OnBadRecord;
use super::chunk::{located, Chunk};
use super::images::{ImageRecords, Listing};
use super::{Format, Shard};

/// One open file.
pub(crate) enum FileReader {
    Csv {
        csv: Box<CsvFile>,
        plan: Arc<Vec<Vec<usize>>>,
        file: Arc<str>,
        shard: Shard,
        /// Records read so far (this replica's or not).
        seen: usize,
    },
    TfRecord {
        rdr: RecordReader<Box<dyn Read + Send>>,
        next: usize,
        file: Arc<str>,
        shard: Shard,
    },
    /// A directory of images: its listing's examples, by index.
    Listing {
        count: usize,
        next: usize,
        file: Arc<str>,
        shard: Shard,
    },
}

/// Whether record `k` of a file is this replica's.
fn mine(shard: Shard, k: usize) -> bool {
    k % shard.count.max(1) == shard.index
}

impl FileReader {
    /// Opens `path`; `columns[t]` are input `t`'s columns (CSV: checked
    /// against the header; an image CSV's are its path and label columns);
    /// only the records of `shard` are read into chunks. A directory of
    /// images reads its `listing`.
    pub(crate) fn open(
        format: &Format,
        path: &Path,
        columns: &[Vec<String>],
        shard: Shard,
        listing: Option<&Listing>,
    ) -> Result<FileReader, DataError> {
        let name = path.display().to_string();
        if let Format::Images(f) = format {
            return match &f.records {
                ImageRecords::Directory => Ok(FileReader::Listing {
                    count: listing.map_or(0, |l| l.len()),
                    next: 0,
                    file: Arc::from(name),
                    shard,
                }),
                ImageRecords::Csv { .. } => {
                    FileReader::open(&Format::csv(), path, &f.csv_columns(), shard, None)
                }
                ImageRecords::TfRecord { compression, .. } => FileReader::open(
                    &Format::TfRecord {
                        compression: *compression,
                        feature_lists: None,
                    },
                    path,
                    columns,
                    shard,
                    None,
                ),
            };
        }
        match format {
            Format::Images(_) => Err(DataError::new(&name, "not an image format")),
            Format::Csv(options) => {
                let csv = CsvFile::open(path, &name, options)?;
                let plan = csv.plan(&name, columns.iter().map(Vec::as_slice))?;
                Ok(FileReader::Csv {
                    csv: Box::new(csv),
                    plan: Arc::new(plan),
                    file: Arc::from(name),
                    shard,
                    seen: 0,
                })
            }
            Format::TfRecord { compression, .. } => {
                let f = std::fs::File::open(path)
                    .map_err(|e| DataError::new(&name, format!("cannot open the file: {e}")))?;
                let r = std::io::BufReader::with_capacity(64 << 10, f);
                let inner: Box<dyn Read + Send> = match compression {
                    tfrecord::Compression::None => Box::new(r),
                    tfrecord::Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
                    tfrecord::Compression::Zlib => Box::new(flate2::read::ZlibDecoder::new(r)),
                };
                Ok(FileReader::TfRecord {
                    rdr: RecordReader::new(inner),
                    next: 0,
                    file: Arc::from(name),
                    shard,
                })
            }
        }
    }

    /// The records read from the file so far, every replica's counted.
    pub(crate) fn records_seen(&self) -> u64 {
        match self {
            FileReader::Csv { seen, .. } => *seen as u64,
            FileReader::TfRecord { next, .. } | FileReader::Listing { next, .. } => *next as u64,
        }
    }

    /// Reads up to `block` records into `chunk` (reset by the caller).
    /// Returns true when the file is done: its end, or an error (then in
    /// `chunk.error`).
    pub(crate) fn read_chunk(
        &mut self,
        format: &Format,
        policy: OnBadRecord,
        chunk: &mut Chunk,
        block: usize,
    ) -> bool {
        match self {
            FileReader::Csv {
                csv,
                plan,
                file,
                shard,
                seen,
            } => {
                chunk.file = Arc::clone(file);
                chunk.plan = Arc::clone(plan);
                chunk.csv = Some(Arc::clone(&csv.columns));
                while chunk.rows < block {
                    if chunk.records.len() == chunk.rows {
                        chunk.records.push(csv::ByteRecord::new());
                    }
                    let rec = &mut chunk.records[chunk.rows];
                    let line = match csv.read(file, rec) {
                        Ok(Some(line)) => line,
                        Ok(None) => return true,
                        Err(e) => {
                            chunk.error = Some(e);
                            return true;
                        }
                    };
                    *seen += 1;
                    if !mine(*shard, *seen - 1) {
                        continue;
                    }
                    if let Err(e) = csv.columns.check_fields(file, line, rec.len()) {
                        match policy {
                            OnBadRecord::Error => {
                                chunk.error = Some(e);
                                return true;
                            }
                            OnBadRecord::Skip => {
                                chunk.skipped.push((chunk.rows, 0, e));
                                continue;
                            }
                        }
                    }
                    chunk.locations.push(line);
                    chunk.ordinals.push(*seen as u64 - 1);
                    chunk.rows += 1;
                }
                false
            }
            FileReader::TfRecord {
                rdr,
                next,
                file,
                shard,
            } => {
                chunk.file = Arc::clone(file);
                while chunk.rows < block {
                    if chunk.payloads.len() == chunk.rows {
                        chunk.payloads.push(Vec::new());
                    }
                    match rdr.read_into(&mut chunk.payloads[chunk.rows]) {
                        Ok(true) => {}
                        Ok(false) => return true,
                        Err(e) => {
                            chunk.error = Some(located(format, file, *next, None, e.to_string()));
                            return true;
                        }
                    }
                    *next += 1;
                    if !mine(*shard, *next - 1) {
                        continue;
                    }
                    chunk.locations.push(*next - 1);
                    chunk.ordinals.push(*next as u64 - 1);
                    chunk.rows += 1;
                }
                false
            }
            FileReader::Listing {
                count,
                next,
                file,
                shard,
            } => {
                chunk.file = Arc::clone(file);
                while chunk.rows < block {
                    if *next >= *count {
                        return true;
                    }
                    *next += 1;
                    if !mine(*shard, *next - 1) {
                        continue;
                    }
                    chunk.locations.push(*next - 1);
                    chunk.ordinals.push(*next as u64 - 1);
                    chunk.rows += 1;
                }
                *next >= *count
            }
        }
    }
}
