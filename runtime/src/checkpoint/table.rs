//! The leveldb-style table of a checkpoint's `.index` file, as TF's
//! `tensorflow/core/lib/io/{table_builder,block_builder,format}.cc` write it.
//!
//! Owns: building a table from sorted `(key, value)` pairs ([`build`]) and
//! reading one back with every check ([`read`]).
//!
//! Format: data blocks of prefix-compressed entries (varint32 shared,
//! non-shared and value lengths, the key's non-shared suffix, the value) with
//! a restart point (an entry sharing nothing) every [`RESTART_INTERVAL`]
//! entries, then the restart offsets (fixed32 each) and their count; each
//! block is followed by a compression-type byte (0: none, what TF's bundle
//! writer uses) and the masked CRC32C of block and type byte. A data block
//! is cut once its size estimate reaches [`BLOCK_SIZE`] (TF's default,
//! 256 KiB). Then an empty metaindex block, the index block (restart interval
//! 1; one entry per data block: leveldb's `FindShortestSeparator` of the
//! block's last key and the next block's first key, `FindShortSuccessor` of
//! the last key for the last block, mapping to the block's varint64 offset
//! and size), and a 48-byte footer (the metaindex and index handles, zero
//! padded to 40 bytes, then the magic `0xdb4775248b80fb57`).
//!
//! Invariants: [`build`] of the same pairs is byte-identical to TF's table;
//! [`read`] never panics on any bytes: a bad footer, a block out of range, a
//! CRC mismatch, a compressed block, a malformed entry or keys out of order
//! is an error saying which.

use crate::io::crc;
use crate::io::proto::read_varint;

/// TF's `table::Options::block_size`.
pub const BLOCK_SIZE: usize = 262_144;
/// TF's `table::Options::block_restart_interval`.
pub const RESTART_INTERVAL: usize = 16;
pub const MAGIC: u64 = 0xdb47_7524_8b80_fb57;
pub const FOOTER_LEN: usize = 48;
const TRAILER_LEN: usize = 5;
/// Handles are at most two varint64s (10 bytes each).
const MAX_HANDLES_LEN: usize = 40;

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    interval: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    fn new(interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            interval,
            last_key: Vec::new(),
        }
    }

    fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.interval {
            key.iter()
                .zip(&self.last_key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
    }

    fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Appends the block with its trailer to `out`; returns its handle; resets.
    fn write_to(&mut self, out: &mut Vec<u8>) -> (u64, u64) {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        self.buf
            .extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        let handle = (out.len() as u64, self.buf.len() as u64);
        out.extend_from_slice(&self.buf);
        let type_byte = 0u8;
        let c = crc::extend(crc::crc32c(&self.buf), &[type_byte]);
        out.push(type_byte);
        out.extend_from_slice(&crc::mask(c).to_le_bytes());
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        handle
    }
}

fn encode_handle(buf: &mut Vec<u8>, (offset, size): (u64, u64)) {
    put_varint(buf, offset);
    put_varint(buf, size);
}

fn shortest_separator(start: &mut Vec<u8>, limit: &[u8]) {
    let min = start.len().min(limit.len());
    let diff = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
    if diff < min {
        let byte = start[diff];
        if byte < 0xff && byte + 1 < limit[diff] {
            start[diff] += 1;
            start.truncate(diff + 1);
        }
    }
}

fn short_successor(key: &mut Vec<u8>) {
    if let Some(i) = key.iter().position(|&b| b != 0xff) {
        key[i] += 1;
        key.truncate(i + 1);
    }
}

/// The table of `entries`, which must be sorted bytewise and unique (the
/// caller's invariant; TF asserts it too).
pub fn build<'a>(entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut data = BlockBuilder::new(RESTART_INTERVAL);
    let mut index = BlockBuilder::new(1);
    let mut last_key: Vec<u8> = Vec::new();
    let mut pending: Option<(u64, u64)> = None;
    let mut handle_buf = Vec::new();
    for (num_entries, (key, value)) in entries.into_iter().enumerate() {
        if num_entries > 0 && key.len() + value.len() >= 2 * BLOCK_SIZE && !data.is_empty() {
            pending = Some(data.write_to(&mut out));
        }
        if let Some(h) = pending.take() {
            shortest_separator(&mut last_key, key);
            handle_buf.clear();
            encode_handle(&mut handle_buf, h);
            index.add(&last_key, &handle_buf);
        }
        last_key.clear();
        last_key.extend_from_slice(key);
        data.add(key, value);
        if data.size_estimate() >= BLOCK_SIZE {
            pending = Some(data.write_to(&mut out));
        }
    }
    if !data.is_empty() {
        pending = Some(data.write_to(&mut out));
    }
    let metaindex = BlockBuilder::new(RESTART_INTERVAL).write_to(&mut out);
    if let Some(h) = pending.take() {
        short_successor(&mut last_key);
        handle_buf.clear();
        encode_handle(&mut handle_buf, h);
        index.add(&last_key, &handle_buf);
    }
    let index_handle = index.write_to(&mut out);
    let mut footer = Vec::with_capacity(FOOTER_LEN);
    encode_handle(&mut footer, metaindex);
    encode_handle(&mut footer, index_handle);
    footer.resize(MAX_HANDLES_LEN, 0);
    footer.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&footer);
    out
}

fn read_handle(bytes: &[u8], pos: &mut usize) -> Result<(u64, u64), String> {
    let offset = read_varint(bytes, pos).map_err(|e| format!("bad block handle: {e}"))?;
    let size = read_varint(bytes, pos).map_err(|e| format!("bad block handle: {e}"))?;
    Ok((offset, size))
}

/// The contents of the block at `handle`, after checking its trailer.
fn block<'a>(file: &'a [u8], (offset, size): (u64, u64), what: &str) -> Result<&'a [u8], String> {
    let body_end = file.len() - FOOTER_LEN;
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let len = usize::try_from(size).unwrap_or(usize::MAX);
    let end = start
        .checked_add(len)
        .and_then(|e| e.checked_add(TRAILER_LEN))
        .filter(|&e| e <= body_end)
        .ok_or_else(|| {
            format!(
                "the {what} at bytes {offset}..{} runs past the end of the table ({body_end} bytes before the footer): truncated or corrupt",
                offset.saturating_add(size).saturating_add(TRAILER_LEN as u64)
            )
        })?;
    let contents = &file[start..start + len];
    let type_byte = file[start + len];
    let stored = u32::from_le_bytes([file[end - 4], file[end - 3], file[end - 2], file[end - 1]]);
    let actual = crc::mask(crc::extend(crc::crc32c(contents), &[type_byte]));
    if stored != actual {
        return Err(format!(
            "the {what} at bytes {offset}..{} fails its CRC32C check (stored {stored:#010x}, computed {actual:#010x}): corrupt",
            offset + size
        ));
    }
    if type_byte != 0 {
        return Err(format!(
            "the {what} at byte {offset} is compressed (type {type_byte}); only uncompressed blocks (TF's bundle writer) are supported"
        ));
    }
    Ok(contents)
}

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// The entries of one block, appended to `out`.
fn entries(contents: &[u8], what: &str, out: &mut Vec<Pair>) -> Result<(), String> {
    let bad = |why: &str| format!("malformed {what}: {why}");
    if contents.len() < 4 {
        return Err(bad("shorter than its restart count"));
    }
    let n = contents.len();
    let num_restarts = u32::from_le_bytes([
        contents[n - 4],
        contents[n - 3],
        contents[n - 2],
        contents[n - 1],
    ]) as usize;
    let restarts_len = num_restarts
        .checked_mul(4)
        .and_then(|r| r.checked_add(4))
        .filter(|&r| r <= n)
        .ok_or_else(|| bad("restart array larger than the block"))?;
    let limit = n - restarts_len;
    let mut pos = 0;
    let mut key: Vec<u8> = Vec::new();
    while pos < limit {
        let body = &contents[..limit];
        let field = |pos: &mut usize| {
            read_varint(body, pos)
                .ok()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| bad(&format!("truncated entry header at byte {pos}")))
        };
        let at = pos;
        let shared = field(&mut pos)?;
        let non_shared = field(&mut pos)?;
        let value_len = field(&mut pos)?;
        if shared > key.len() {
            return Err(bad(&format!(
                "entry at byte {at} shares {shared} bytes with a {}-byte key",
                key.len()
            )));
        }
        let end = pos
            .checked_add(non_shared)
            .and_then(|e| e.checked_add(value_len))
            .filter(|&e| e <= limit)
            .ok_or_else(|| bad(&format!("entry at byte {at} runs past the block")))?;
        key.truncate(shared);
        key.extend_from_slice(&body[pos..pos + non_shared]);
        let value = body[pos + non_shared..end].to_vec();
        pos = end;
        out.push((key.clone(), value));
    }
    Ok(())
}

/// Every `(key, value)` of the table `file`, in order, after checking the
/// footer, every block's CRC and that keys strictly increase.
pub fn read(file: &[u8]) -> Result<Vec<Pair>, String> {
    if file.len() < FOOTER_LEN {
        return Err(format!(
            "{} bytes is too short for a table (its footer alone is {FOOTER_LEN} bytes): truncated",
            file.len()
        ));
    }
    let footer = &file[file.len() - FOOTER_LEN..];
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&footer[MAX_HANDLES_LEN..]);
    if u64::from_le_bytes(magic) != MAGIC {
        return Err(format!(
            "no table magic number at the end (found {:#018x}, expected {MAGIC:#018x}): truncated, or not a checkpoint index",
            u64::from_le_bytes(magic)
        ));
    }
    let mut pos = 0;
    let handles = &footer[..MAX_HANDLES_LEN];
    let metaindex = read_handle(handles, &mut pos)?;
    let index = read_handle(handles, &mut pos)?;
    if handles[pos..].iter().any(|&b| b != 0) {
        return Err("the footer's padding is not zero: corrupt".to_string());
    }
    block(file, metaindex, "metaindex block")?;
    let mut index_entries = Vec::new();
    entries(
        block(file, index, "index block")?,
        "index block",
        &mut index_entries,
    )?;
    let mut out = Vec::new();
    for (i, (_, handle)) in index_entries.iter().enumerate() {
        let mut p = 0;
        let h = read_handle(handle, &mut p)?;
        let what = format!("data block {i}");
        entries(block(file, h, &what)?, &what, &mut out)?;
    }
    for w in out.windows(2) {
        if w[0].0 >= w[1].0 {
            return Err(format!(
                "keys out of order: {:?} before {:?}: corrupt",
                String::from_utf8_lossy(&w[0].0),
                String::from_utf8_lossy(&w[1].0)
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_leveldb_s() {
        let mut k = b"w/Adam_1".to_vec();
        short_successor(&mut k);
        assert_eq!(k, b"x");
        let mut s = b"abcd".to_vec();
        shortest_separator(&mut s, b"abzz");
        assert_eq!(s, b"abd");
        let mut s = b"abc".to_vec();
        shortest_separator(&mut s, b"abd");
        assert_eq!(s, b"abc");
    }

    #[test]
    fn many_blocks_round_trip() {
        let keys: Vec<Vec<u8>> = (0..20_000)
            .map(|i| format!("var{i:06}").into_bytes())
            .collect();
        let values: Vec<Vec<u8>> = (0..20_000).map(|i| vec![i as u8; 30]).collect();
        let t = build(
            keys.iter()
                .map(Vec::as_slice)
                .zip(values.iter().map(Vec::as_slice)),
        );
        let back = read(&t).unwrap();
        assert_eq!(back.len(), keys.len());
        for ((k, v), (bk, bv)) in keys.iter().zip(&values).zip(&back) {
            assert_eq!((k, v), (bk, bv));
        }
    }

    #[test]
    fn empty_table_reads_empty() {
        assert!(read(&build([])).unwrap().is_empty());
    }
}
