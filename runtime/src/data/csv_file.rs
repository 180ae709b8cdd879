//! The one CSV file reader: every CSV that specc reads (`specc run`'s
//! in-memory loader, the streaming pipeline, `specc predict --data`, an
//! image CSV's listing, and `specc convert`) is split into records and
//! fields here, so they all read a file the same way. Typing a field is
//! [`super::text`]'s (and the column transforms').
//!
//! Owns: [`CsvFile`] (open, header, the columns' field indices, records),
//! the row-length limit (`RowLimit`), [`wrong_field_count`], and the
//! in-memory loader `load`. What TF's CSV options make of the columns and
//! the records is [`super::csv_options`]'s.
//!
//! The rules (the `csv` crate's reader, RFC 4180, under the source's
//! [`CsvReadOptions`]):
//! - gzip is recognised by its magic bytes (whatever the name) and
//!   decompressed as it is read;
//! - with `header = true` (the default) the first record is the header; a
//!   UTF-8 BOM before it and whitespace around each name are removed; the
//!   columns are named by it, or by `column_names`; a requested column must
//!   be among them exactly once (a missing one is named with a "did you
//!   mean");
//! - fields are split at `field_delim` (`,`); with `use_quote_delim` (the
//!   default) a field that starts with `"` is quoted (`""` inside is one
//!   `"`, and it may span lines), a quote elsewhere is data; without it
//!   quotes are data; records end at `\n`, `\r\n` or `\r`; empty lines
//!   are skipped, and with `comment` the lines starting with it;
//! - a record must have as many fields as there are columns (with
//!   `select_columns`, the fields up to the last selected one).
//!   `tf.io.decode_csv` ([`crate::io::csv`]) is stricter about quotes (a
//!   quote inside an unquoted field, or text after a closing quote, is an
//!   error there) and splits records at `\n` only; TF's `CsvDataset`
//!   refuses an empty line.
//!
//! Row numbers in errors are 1-based line numbers in the file (the line a
//! record starts on).
//!
//! The loader splits records and hands the raw bytes of each input's columns
//! to its column transform, a chunk of records at a time (at most
//! `CHUNK_ROWS` records or `CHUNK_BYTES` bytes, so memory stays bounded);
//! a record error (wrong field count, a row over [`MAX_CSV_ROW_BYTES`], an
//! I/O error) is reported after the cells of the rows before it, so the first
//! error in the file is the one reported.
//!
//! Row length: `RowLimit` sits between the file and the `csv` parser and
//! refuses to deliver the bytes of a row beyond the limit (plus the parser's
//! read-ahead), so no row, however malformed, grows memory past it; each row
//! read is then checked against the limit exactly.

use std::cell::Cell;
use std::fmt;
use std::io::{self, Read, Seek};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use super::csv_options::{CsvColumns, CsvReadOptions};
use super::{Builder, CellRows, DataError, Dataset, InputSpec, MAX_CSV_ROW_BYTES, MAX_ROWS};

pub use ::csv::ByteRecord;

/// Records per chunk handed to the transforms.
const CHUNK_ROWS: usize = 4096;
/// Bytes of records per chunk (a chunk ends at the record that reaches it).
const CHUNK_BYTES: usize = 1 << 20;
/// The `csv` parser's read buffer: how far it may read ahead of the record it
/// is parsing.
const READ_AHEAD: usize = 64 << 10;

/// The file's bytes: decompressed as it is read when it is gzip (its first
/// two bytes are gzip's magic, whatever its name), as `tf.data`'s
/// `compression_type="GZIP"` would; else as they are.
fn open(path: &Path, file: &str) -> Result<Box<dyn Read>, DataError> {
    let cannot = |e: io::Error| DataError::new(file, format!("cannot open the file: {e}"));
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic).map_err(cannot)?;
    f.seek(io::SeekFrom::Start(0)).map_err(cannot)?;
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(f)))
    } else {
        Box::new(f)
    })
}

/// An open CSV file: the parser over the row-limited bytes, and its
/// columns under the source's options. Shared by `load`, the streaming
/// pipeline (`crate::pipeline`), `specc convert` and the image listings,
/// which read records the same way.
pub struct CsvFile {
    pub(crate) rdr: ::csv::Reader<RowLimit<Box<dyn Read>>>,
    row_start: Rc<Cell<u64>>,
    /// The columns (the header's names, a leading BOM and whitespace
    /// around each removed; or `column_names`) and what the options make
    /// of a record.
    pub columns: Arc<CsvColumns>,
}

impl CsvFile {
    /// Opens `path` (gzip by its magic bytes) and reads its header, if it
    /// has one, under `opts`.
    pub fn open(path: &Path, file: &str, opts: &CsvReadOptions) -> Result<CsvFile, DataError> {
        let f = open(path, file)?;
        let limit = RowLimit::new(f, MAX_CSV_ROW_BYTES as u64 + READ_AHEAD as u64);
        let row_start = limit.row_start();
        let mut rdr = ::csv::ReaderBuilder::new()
            .has_headers(opts.header)
            .flexible(true)
            .delimiter(opts.field_delim)
            .quoting(opts.use_quote_delim)
            .comment(opts.comment)
            .buffer_capacity(READ_AHEAD)
            .from_reader(limit);
        if !opts.header {
            let names = opts.column_names.clone().ok_or_else(|| {
                DataError::new(file, "a file without a header needs column_names")
            })?;
            let columns = CsvColumns::resolve(opts, names, None, file)?;
            return Ok(CsvFile {
                rdr,
                row_start,
                columns: Arc::new(columns),
            });
        }

        let (header, header_line): (Vec<String>, usize) = {
            let h = match rdr.byte_headers() {
                Ok(h) => h.clone(),
                Err(e) => {
                    let line = rdr.position().line() as usize;
                    return Err(read_error(file, &e, line));
                }
            };
            let start = h.position().map_or(1, |p| p.line());
            let inner = h.as_slice().iter().filter(|&&b| b == b'\n').count() as u64;
            let line = start_line(rdr.get_ref(), rdr.position(), start, inner) as usize;
            let names = h
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let s = String::from_utf8_lossy(f);
                    let s = if i == 0 {
                        s.trim_start_matches('\u{feff}')
                    } else {
                        &s
                    };
                    s.trim().to_string()
                })
                .collect();
            (names, line)
        };
        let header_end = rdr.position().byte();
        if header_end > MAX_CSV_ROW_BYTES as u64 {
            return Err(row_too_long(file, Some(header_line)));
        }
        row_start.set(header_end);
        if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
            return Err(DataError::new(
                file,
                "the file is empty: a header row with the column names is required",
            ));
        }
        let names = opts.column_names.clone().unwrap_or(header);
        let columns = CsvColumns::resolve(opts, names, Some(header_line), file)?;
        Ok(CsvFile {
            rdr,
            row_start,
            columns: Arc::new(columns),
        })
    }

    /// The field index of every column of every input (`columns[t]`: input
    /// `t`'s columns): each must be among the file's columns exactly once,
    /// and selected.
    pub fn plan<'c>(
        &self,
        file: &str,
        columns: impl IntoIterator<Item = &'c [String]>,
    ) -> Result<Vec<Vec<usize>>, DataError> {
        let mut plan: Vec<Vec<usize>> = Vec::new();
        for cols in columns {
            let mut idx = Vec::with_capacity(cols.len());
            for col in cols {
                let i = self
                    .columns
                    .field(col)
                    .map_err(|(row, m)| DataError::at(file, row, Some(col), m))?;
                idx.push(i);
            }
            plan.push(idx);
        }
        Ok(plan)
    }

    /// The columns' names, one per field.
    pub fn names(&self) -> &[String] {
        &self.columns.names
    }

    /// Reads the next record the source keeps into `rec`: its field count
    /// checked, `na_value` and `column_defaults` applied, and the rows the
    /// filter drops skipped (`scratch` is working space). `Ok(None)` at
    /// the end of the file, else its line. Every error is the file's: the
    /// in-memory loader, `specc convert` and the listings stop at it (the
    /// streaming pipeline applies its bad-record policy instead, so it
    /// reads with [`read`](Self::read) and prepares records on its workers).
    pub fn read_kept(
        &mut self,
        file: &str,
        rec: &mut ::csv::ByteRecord,
        scratch: &mut ::csv::ByteRecord,
    ) -> Result<Option<usize>, DataError> {
        loop {
            let Some(line) = self.read(file, rec)? else {
                return Ok(None);
            };
            self.columns.check_fields(file, line, rec.len())?;
            match self.columns.prepare(rec, scratch) {
                Ok(true) => return Ok(Some(line)),
                Ok(false) => continue,
                Err((i, m)) => {
                    return Err(DataError::at(
                        file,
                        Some(line),
                        Some(self.columns.name(i)),
                        m,
                    ))
                }
            }
        }
    }

    /// Reads the next record into `rec`: `Ok(None)` at the end of the file,
    /// else its line. A row over [`MAX_CSV_ROW_BYTES`] and a read error are
    /// errors; the field count is not checked here.
    pub fn read(
        &mut self,
        file: &str,
        rec: &mut ::csv::ByteRecord,
    ) -> Result<Option<usize>, DataError> {
        match self.rdr.read_byte_record(rec) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Err(read_error(file, &e, self.rdr.position().line() as usize)),
        }
        let inner = rec.as_slice().iter().filter(|&&b| b == b'\n').count() as u64;
        let start = rec.position().map_or(1, |p| p.line());
        let line = start_line(self.rdr.get_ref(), self.rdr.position(), start, inner) as usize;
        let end = self.rdr.position().byte();
        let len = end.saturating_sub(self.row_start.get());
        self.row_start.set(end);
        if len > MAX_CSV_ROW_BYTES as u64 {
            return Err(row_too_long(file, Some(line)));
        }
        Ok(Some(line))
    }
}

pub(super) fn load(
    path: &Path,
    file: &str,
    opts: &CsvReadOptions,
    inputs: &[InputSpec],
) -> Result<Dataset, DataError> {
    let mut csv = CsvFile::open(path, file, opts)?;
    let plan = csv.plan(file, inputs.iter().map(|i| i.columns.as_slice()))?;
    let mut scratch = ::csv::ByteRecord::new();
    let mut builder = Builder::new(inputs);
    let mut records: Vec<::csv::ByteRecord> = Vec::new();
    let mut lines: Vec<Option<usize>> = Vec::new();
    loop {
        // Read a chunk; stop early at a record error, reported after the
        // cells of the rows before it.
        let (mut n, mut bytes) = (0usize, 0usize);
        let mut pending: Option<DataError> = None;
        let mut eof = false;
        while n < CHUNK_ROWS && bytes < CHUNK_BYTES {
            if records.len() == n {
                records.push(::csv::ByteRecord::new());
                lines.push(None);
            }
            let rec = &mut records[n];
            let line = match csv.read_kept(file, rec, &mut scratch) {
                Ok(Some(line)) => Some(line),
                Ok(None) => {
                    eof = true;
                    break;
                }
                Err(e) => {
                    pending = Some(e);
                    break;
                }
            };
            if builder.rows() + n >= MAX_ROWS {
                pending = Some(DataError::at(
                    file,
                    line,
                    None,
                    format!("the file has more than {MAX_ROWS} rows, the most a data set may have"),
                ));
                break;
            }
            lines[n] = line;
            bytes += rec.as_slice().len();
            n += 1;
        }
        if n > 0 {
            let chunk = &records[..n];
            builder
                .reserve(n)
                .map_err(|e| DataError::at(file, lines[0], None, e))?;
            builder
                .push(n, |t| CellRows::records(chunk, &plan[t]))
                .map_err(|(t, e)| {
                    DataError::at(
                        file,
                        lines[e.row],
                        Some(&inputs[t].columns[e.column]),
                        e.message,
                    )
                })?;
        }
        if let Some(e) = pending {
            return Err(e);
        }
        if eof {
            break;
        }
    }
    let rows = builder.rows();
    if rows == 0 {
        return Err(DataError::new(
            file,
            if opts.filter.is_some() {
                "the filter keeps no row of the file"
            } else if opts.header {
                "the file has a header but no data rows"
            } else {
                "the file has no data rows"
            },
        ));
    }
    let out = builder.finish(inputs).map_err(|(t, e)| {
        DataError::at(file, None, Some(&inputs[t].columns[e.column]), e.message)
    })?;
    Ok(Dataset { rows, inputs: out })
}

/// A record whose number of fields is not the header's (every CSV source
/// refuses it with this message).
pub fn wrong_field_count(file: &str, line: usize, fields: usize, header: usize) -> DataError {
    DataError::at(
        file,
        Some(line),
        None,
        format!("the row has {fields} fields but the header has {header}"),
    )
}

fn row_too_long(file: &str, line: Option<usize>) -> DataError {
    DataError::at(
        file,
        line,
        None,
        format!(
            "the row is longer than {MAX_CSV_ROW_BYTES} bytes (1 MiB), the limit for one row of a CSV file"
        ),
    )
}

/// The line a record starts on. The `csv` crate's position of a record is
/// where the reader stood when it began (after the previous record's
/// consumed bytes: before the `\n` of a CRLF and before blank lines), so
/// its line can be earlier than the record's. The reader's position after
/// the record (`end`) counts every `\n` consumed since `start`: those
/// before the record, the `inner` ones inside its quoted fields, and its
/// terminator when that is a `\n` (consumed with it; a CRLF's `\n` is
/// consumed with the next record).
fn start_line<R>(limit: &RowLimit<R>, end: &::csv::Position, start: u64, inner: u64) -> u64 {
    let terminator = end.byte() > 0 && limit.byte_at(end.byte() - 1) == Some(b'\n');
    end.line()
        .saturating_sub(inner + u64::from(terminator))
        .max(start)
}

/// The error [`RowLimit`] raises, carried inside an `io::Error`.
#[derive(Debug)]
struct RowTooLong;

impl fmt::Display for RowTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the row is too long")
    }
}

impl std::error::Error for RowTooLong {}

/// A reader that delivers at most `limit` bytes past the start of the row
/// being parsed (`row_start`, which the caller advances after every record),
/// then fails with [`RowTooLong`]. It keeps the last [`RECENT`] bytes it
/// delivered ([`RowLimit::byte_at`]: how a record ended, for its line).
pub(crate) struct RowLimit<R> {
    inner: R,
    limit: u64,
    row_start: Rc<Cell<u64>>,
    delivered: u64,
    /// The bytes at offsets `delivered - RECENT .. delivered`, by offset
    /// modulo `RECENT`.
    recent: Vec<u8>,
}

/// How many delivered bytes [`RowLimit`] keeps: more than the parser can
/// hold unconsumed (its buffer, [`READ_AHEAD`]).
const RECENT: usize = 2 * READ_AHEAD;

impl<R> RowLimit<R> {
    /// The byte at `offset`, while it is among the last [`RECENT`] delivered.
    fn byte_at(&self, offset: u64) -> Option<u8> {
        (offset < self.delivered && self.delivered - offset <= RECENT as u64)
            .then(|| self.recent[(offset % RECENT as u64) as usize])
    }
}

impl<R: Read> RowLimit<R> {
    fn new(inner: R, limit: u64) -> RowLimit<R> {
        RowLimit {
            inner,
            limit,
            row_start: Rc::new(Cell::new(0)),
            delivered: 0,
            recent: vec![0; RECENT],
        }
    }

    fn row_start(&self) -> Rc<Cell<u64>> {
        Rc::clone(&self.row_start)
    }
}

impl<R: Read> Read for RowLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let end = self.row_start.get().saturating_add(self.limit);
        let allowed = end.saturating_sub(self.delivered);
        if allowed == 0 && !buf.is_empty() {
            // Only fail if the file really goes on.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(io::Error::new(io::ErrorKind::InvalidData, RowTooLong));
        }
        let want = buf
            .len()
            .min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        // Keep the last RECENT bytes delivered (one wrap at most).
        let keep = &buf[n.saturating_sub(RECENT)..n];
        let at = ((self.delivered + (n - keep.len()) as u64) % RECENT as u64) as usize;
        let first = keep.len().min(RECENT - at);
        self.recent[at..at + first].copy_from_slice(&keep[..first]);
        self.recent[..keep.len() - first].copy_from_slice(&keep[first..]);
        self.delivered += n as u64;
        Ok(n)
    }
}

fn io_message(e: &::csv::Error) -> String {
    match e.kind() {
        ::csv::ErrorKind::Io(io) => io.to_string(),
        _ => e.to_string(),
    }
}

/// A read error; `line` is where the parser stopped (the line of a row that
/// is too long).
fn read_error(file: &str, e: &::csv::Error, line: usize) -> DataError {
    if let ::csv::ErrorKind::Io(io) = e.kind() {
        if io.get_ref().is_some_and(|x| x.is::<RowTooLong>()) {
            return row_too_long(file, Some(line));
        }
    }
    let line = e.position().map(|p| p.line() as usize);
    DataError::at(
        file,
        line,
        None,
        format!("cannot read the file: {}", io_message(e)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line of the header and of each record of `text`.
    fn lines(name: &str, text: &[u8]) -> (usize, Vec<usize>) {
        let p = std::env::temp_dir().join(format!("specc-csv-lines-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let mut csv = CsvFile::open(&p, name, &CsvReadOptions::default()).unwrap();
        let mut rec = ByteRecord::new();
        let mut got = Vec::new();
        while let Some(line) = csv.read(name, &mut rec).unwrap() {
            got.push(line);
        }
        let _ = std::fs::remove_file(&p);
        (csv.columns.header_line.unwrap_or(0), got)
    }

    #[test]
    fn records_are_numbered_by_the_line_they_start_on() {
        assert_eq!(lines("lf", b"h\n1\n2\n"), (1, vec![2, 3]));
        assert_eq!(lines("crlf", b"h\r\n1\r\n2\r\n"), (1, vec![2, 3]));
        assert_eq!(lines("blank", b"h\n1\n\n\n2\nx"), (1, vec![2, 5, 6]));
        assert_eq!(
            lines("blank_crlf", b"\r\nh\r\n1\r\n\r\n2\r\n"),
            (2, vec![3, 5])
        );
        assert_eq!(
            lines("quoted", b"h,n\n1,\"a\nb\r\nc\"\n\n2,\"\"\n"),
            (1, vec![2, 6])
        );
        assert_eq!(
            lines("quoted_crlf", b"h,n\r\n1,\"a\r\nb\"\r\n2,x\r\n"),
            (1, vec![2, 4])
        );
    }

    #[test]
    fn line_numbers_hold_past_the_parsers_buffer() {
        // Records of every length around the read-ahead, LF and CRLF.
        let mut text = b"h\r\n".to_vec();
        let mut want = Vec::new();
        let mut line = 2;
        for (i, len) in [10, READ_AHEAD - 3, 1, READ_AHEAD + 7, 2 * READ_AHEAD, 5]
            .into_iter()
            .enumerate()
        {
            text.extend(std::iter::repeat_n(b'7', len));
            text.extend_from_slice(if i % 2 == 0 { b"\r\n\n" } else { b"\n" });
            want.push(line);
            line += if i % 2 == 0 { 2 } else { 1 };
        }
        assert_eq!(lines("long", &text), (1, want));
    }
}
