//! TFRecord framing (`tf.io.TFRecordWriter`, TF's event files): each record
//! is `uint64 length`, `uint32 masked_crc32c(length bytes)`, the payload,
//! `uint32 masked_crc32c(payload)`, all little-endian.
//!
//! Owns: [`write_record`] and [`RecordReader`]; [`Compression`]
//! (`tf.io.TFRecordOptions(compression_type=...)`: none, GZIP, ZLIB, the
//! whole file compressed as one stream around the framing), [`RecordWriter`]
//! and [`open_reader`] over it, and [`read_file`] (every record of a file,
//! errors naming the file and the record number).
//!
//! Invariants: the reader checks both CRCs of every record and says at which
//! byte offset (of the uncompressed stream) a record is truncated or
//! corrupt; it never allocates more than the bytes actually present (a
//! corrupt length cannot make it reserve gigabytes) and never panics. A
//! damaged compressed stream (bad header, bad deflate data, bad trailer
//! checksum, truncation) is an error, never a silently shorter file.

use std::fmt;
use std::io::{self, Read, Write};

use std::path::{Path, PathBuf};

use flate2::read::{MultiGzDecoder, ZlibDecoder};
use flate2::write::{GzEncoder, ZlibEncoder};

use super::crc::masked_crc32c;

/// How a TFRecord file is compressed (`TFRecordOptions.compression_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `""` / `None`: the framing as is.
    None,
    /// `"GZIP"`: one gzip stream (RFC 1952) around the framing.
    Gzip,
    /// `"ZLIB"`: one zlib stream (RFC 1950) around the framing.
    Zlib,
}

impl Compression {
    /// TF's name for it: `""`, `"GZIP"` or `"ZLIB"`.
    pub fn tf_name(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => "GZIP",
            Compression::Zlib => "ZLIB",
        }
    }

    /// Parses TF's `compression_type` (`""`, `"NONE"`, `"GZIP"`, `"ZLIB"`).
    pub fn from_tf_name(name: &str) -> Option<Compression> {
        match name {
            "" | "NONE" => Some(Compression::None),
            "GZIP" => Some(Compression::Gzip),
            "ZLIB" => Some(Compression::Zlib),
            _ => None,
        }
    }

    /// TF's guess from a file name (`.gz` → GZIP, `.zlib` → ZLIB, else none),
    /// as `tf.data` users name their files.
    pub fn from_path(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") | Some("gzip") => Compression::Gzip,
            Some("zlib") | Some("zz") => Compression::Zlib,
            _ => Compression::None,
        }
    }
}

/// Writes records into `W`, compressed as TF's `TFRecordWriter(options=...)`.
pub struct RecordWriter<W: Write> {
    inner: Inner<W>,
}

enum Inner<W: Write> {
    Plain(W),
    Gzip(GzEncoder<W>),
    Zlib(ZlibEncoder<W>),
}

impl<W: Write> RecordWriter<W> {
    /// A writer; gzip headers are TF's (no name, mtime 0, OS 3).
    pub fn new(w: W, compression: Compression) -> RecordWriter<W> {
        let level = flate2::Compression::default();
        let inner = match compression {
            Compression::None => Inner::Plain(w),
            Compression::Gzip => Inner::Gzip(
                flate2::GzBuilder::new()
                    .mtime(0)
                    .operating_system(3)
                    .write(w, level),
            ),
            Compression::Zlib => Inner::Zlib(ZlibEncoder::new(w, level)),
        };
        RecordWriter { inner }
    }

    /// Writes one record.
    pub fn write(&mut self, payload: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            Inner::Plain(w) => write_record(w, payload),
            Inner::Gzip(w) => write_record(w, payload),
            Inner::Zlib(w) => write_record(w, payload),
        }
    }

    /// Ends the compressed stream and returns the underlying writer (flushed).
    pub fn finish(self) -> io::Result<W> {
        let mut w = match self.inner {
            Inner::Plain(w) => w,
            Inner::Gzip(w) => w.finish()?,
            Inner::Zlib(w) => w.finish()?,
        };
        w.flush()?;
        Ok(w)
    }
}

/// A record reader over `r`, decompressing as `compression` says.
pub fn open_reader<'a, R: Read + 'a>(
    r: R,
    compression: Compression,
) -> RecordReader<Box<dyn Read + 'a>> {
    let r: Box<dyn Read + 'a> = match compression {
        Compression::None => Box::new(r),
        Compression::Gzip => Box::new(MultiGzDecoder::new(r)),
        Compression::Zlib => Box::new(ZlibDecoder::new(r)),
    };
    RecordReader::new(r)
}

/// A TFRecord file that could not be read: the file, the record (counted
/// from 0) and why.
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    /// The record being read; `None` when the file could not be opened.
    pub record: Option<usize>,
    pub error: RecordError,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(n) => write!(f, "{}: record {n}: {}", self.path.display(), self.error),
            None => write!(f, "{}: {}", self.path.display(), self.error),
        }
    }
}

impl std::error::Error for FileError {}

/// Every record of a TFRecord file.
pub fn read_file(path: &Path, compression: Compression) -> Result<Vec<Vec<u8>>, FileError> {
    let file = std::fs::File::open(path).map_err(|error| FileError {
        path: path.to_path_buf(),
        record: None,
        error: RecordError::Io { offset: 0, error },
    })?;
    let mut out = Vec::new();
    for (n, r) in open_reader(io::BufReader::new(file), compression).enumerate() {
        out.push(r.map_err(|error| FileError {
            path: path.to_path_buf(),
            record: Some(n),
            error,
        })?);
    }
    Ok(out)
}

/// Writes one record.
pub fn write_record(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = (payload.len() as u64).to_le_bytes();
    let mut header = [0u8; 12];
    header[..8].copy_from_slice(&len);
    header[8..].copy_from_slice(&masked_crc32c(&len).to_le_bytes());
    w.write_all(&header)?;
    w.write_all(payload)?;
    w.write_all(&masked_crc32c(payload).to_le_bytes())
}

/// The bytes [`write_record`] writes for `payload`.
pub fn framed_len(payload: usize) -> usize {
    payload + 16
}

/// Why a record could not be read.
#[derive(Debug)]
pub enum RecordError {
    Io {
        offset: u64,
        error: io::Error,
    },
    /// The file ends inside a record.
    Truncated {
        offset: u64,
    },
    /// A CRC does not match (`what`: "length" or "data").
    Corrupt {
        offset: u64,
        what: &'static str,
    },
    /// A record longer than the reader's limit.
    TooLong {
        offset: u64,
        len: u64,
        limit: u64,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Io { offset, error } => write!(f, "read error at byte {offset}: {error}"),
            RecordError::Truncated { offset } => {
                write!(f, "the record at byte {offset} is truncated")
            }
            RecordError::Corrupt { offset, what } => write!(
                f,
                "the record at byte {offset} is corrupt: its {what} CRC does not match"
            ),
            RecordError::TooLong { offset, len, limit } => write!(
                f,
                "the record at byte {offset} claims {len} bytes, more than the limit of {limit}"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// Reads records one at a time.
pub struct RecordReader<R> {
    r: R,
    offset: u64,
    limit: u64,
    /// Set after an error: the framing is lost, iteration ends.
    failed: bool,
}

impl<R: Read> RecordReader<R> {
    /// A reader of records of at most 1 GiB.
    pub fn new(r: R) -> RecordReader<R> {
        RecordReader {
            r,
            offset: 0,
            limit: 1 << 30,
            failed: false,
        }
    }

    /// Sets the longest record accepted.
    pub fn with_limit(mut self, limit: u64) -> RecordReader<R> {
        self.limit = limit;
        self
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next record into `payload`; `Ok(false)` at a clean end of input.
    pub fn read_into(&mut self, payload: &mut Vec<u8>) -> Result<bool, RecordError> {
        let start = self.offset;
        let io_err = |error| RecordError::Io {
            offset: start,
            error,
        };
        let mut header = [0u8; 12];
        let got = read_full(&mut self.r, &mut header).map_err(io_err)?;
        if got == 0 {
            return Ok(false);
        }
        if got < header.len() {
            return Err(RecordError::Truncated { offset: start });
        }
        let (len_bytes, crc) = header.split_at(8);
        if masked_crc32c(len_bytes) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            return Err(RecordError::Corrupt {
                offset: start,
                what: "length",
            });
        }
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap_or([0; 8]));
        if len > self.limit {
            return Err(RecordError::TooLong {
                offset: start,
                len,
                limit: self.limit,
            });
        }
        payload.clear();
        let n = (&mut self.r)
            .take(len)
            .read_to_end(payload)
            .map_err(io_err)?;
        let mut crc = [0u8; 4];
        if (n as u64) < len || read_full(&mut self.r, &mut crc).map_err(io_err)? < 4 {
            return Err(RecordError::Truncated { offset: start });
        }
        if masked_crc32c(payload) != u32::from_le_bytes(crc) {
            return Err(RecordError::Corrupt {
                offset: start,
                what: "data",
            });
        }
        self.offset = start + 16 + len;
        Ok(true)
    }
}

impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<Vec<u8>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut v = Vec::new();
        match self.read_into(&mut v) {
            Ok(true) => Some(Ok(v)),
            Ok(false) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(records: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            write_record(&mut out, r).unwrap();
        }
        out
    }

    #[test]
    fn round_trips() {
        let bytes = framed(&[b"", b"hello", &[7u8; 1000]]);
        assert_eq!(
            bytes.len(),
            framed_len(0) + framed_len(5) + framed_len(1000)
        );
        let got: Vec<Vec<u8>> = RecordReader::new(&bytes[..]).map(Result::unwrap).collect();
        assert_eq!(got, vec![b"".to_vec(), b"hello".to_vec(), vec![7u8; 1000]]);
    }

    #[test]
    fn every_truncation_and_bit_flip_is_an_error() {
        let bytes = framed(&[b"hello", b"world!"]);
        for cut in 1..bytes.len() {
            if cut == framed_len(5) {
                continue; // a clean boundary
            }
            let r: Result<Vec<_>, _> = RecordReader::new(&bytes[..cut]).collect();
            assert!(r.is_err(), "cut at {cut}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let r: Result<Vec<_>, _> = RecordReader::new(&b[..]).collect();
            assert!(r.is_err(), "bit {bit}");
        }
    }

    #[test]
    fn a_huge_length_is_refused_without_allocating_it() {
        let mut bytes = Vec::new();
        let len = (u64::MAX / 2).to_le_bytes();
        bytes.extend_from_slice(&len);
        bytes.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
        let mut r = RecordReader::new(&bytes[..]);
        assert!(matches!(r.next(), Some(Err(RecordError::TooLong { .. }))));
        let mut r = RecordReader::new(&bytes[..]).with_limit(u64::MAX);
        assert!(matches!(r.next(), Some(Err(RecordError::Truncated { .. }))));
    }

    fn compressed(c: Compression, records: &[&[u8]]) -> Vec<u8> {
        let mut w = RecordWriter::new(Vec::new(), c);
        for r in records {
            w.write(r).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn every_compression_round_trips() {
        let records: [&[u8]; 3] = [b"", b"hello", &[7u8; 1000]];
        for c in [Compression::None, Compression::Gzip, Compression::Zlib] {
            let bytes = compressed(c, &records);
            let got: Vec<Vec<u8>> = open_reader(&bytes[..], c).map(Result::unwrap).collect();
            assert_eq!(got, records.map(<[u8]>::to_vec), "{c:?}");
            assert_eq!(Compression::from_tf_name(c.tf_name()), Some(c));
        }
        assert_eq!(
            compressed(Compression::None, &records),
            framed(&records),
            "uncompressed is the plain framing"
        );
        let gz = compressed(Compression::Gzip, &records);
        assert_eq!(
            &gz[..10],
            [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3],
            "TF's gzip header"
        );
    }

    #[test]
    fn damaged_compressed_streams_are_errors() {
        let records: [&[u8]; 2] = [b"hello", b"world!"];
        for c in [Compression::Gzip, Compression::Zlib] {
            let bytes = compressed(c, &records);
            for cut in 0..bytes.len() {
                let r: Result<Vec<_>, _> = open_reader(&bytes[..cut], c).collect();
                // Only the empty input is a clean (empty) file.
                assert!(r.is_err() || cut == 0, "{c:?} cut at {cut}");
            }
            for bit in 0..bytes.len() * 8 {
                let mut b = bytes.clone();
                b[bit / 8] ^= 1 << (bit % 8);
                let r: Result<Vec<_>, _> = open_reader(&b[..], c).collect();
                if let Ok(got) = r {
                    // A flip in a field the formats do not check (gzip's
                    // mtime, OS byte, unused flags) must leave the records intact.
                    assert_eq!(got, records.map(<[u8]>::to_vec), "{c:?} bit {bit}");
                }
            }
        }
    }
}
