//! Sliced tensors in TF's tensor bundle: how a partitioned variable (TF's
//! `partitioner`, `save_slice_info`) is saved and read back.
//!
//! Owns: [`TensorSlice`] (`tensor_slice.proto`'s `TensorSliceProto`: one
//! [`Extent`] per dimension, `start`/`length`, no length = the whole
//! dimension), [`encode_tensor_name_slice`] / [`decode_tensor_name_slice`]
//! (the key of one slice's data, `saved_tensor_slice_util.cc`'s
//! `EncodeTensorNameSlice`: OrderedCode of `0`, the name, the rank, then
//! each dimension's signed start and length, `-1` for a whole dimension),
//! [`Partitions`] (which tensors a save writes in slices, and their rows),
//! the expansion of a save's tensors into index items, and the reads of a
//! row range from any slicing ([`BundleReader::load_rows_into`],
//! [`BundleReader::load_rows_f32_into`]).
//!
//! Invariants: a partitioned tensor is saved as TF's `BundleWriter::AddSlice`
//! saves it: an entry under its full name with its dtype, full shape and
//! `slices` (no data), and one ordinary entry per slice under the encoded
//! key (which begins with the byte `0`, so slice keys sort before names);
//! a tensor of one partition is saved as an ordinary entry (TF's
//! `IsFullSlice`). A row read streams each overlapping slice (or the whole
//! entry) in bounded chunks, checks its CRC over all its bytes, copies only
//! the rows asked for, and fails unless the slices cover every row asked.

use std::collections::HashMap;
use std::ops::Range;

use super::bundle::{BundleEntry, BundleReader};
use super::tensor::{shape_string, DType, TensorRef};
use super::CheckpointError;
use super::CheckpointErrorKind::{Corrupt, Io, Mismatch};
use crate::io::crc;
use crate::io::proto::{fields, Encoder, Value};

/// Which tensors a save writes in slices: TF name → each partition's rows
/// along axis 0, in order (a variable's `partitions` in the layout).
pub type Partitions = HashMap<String, Vec<usize>>;

/// Bytes read at a time from a slice whose rows are streamed.
const READ_CHUNK: usize = 1 << 20;

/// One dimension of a [`TensorSlice`]: `start` and `length`, `None` for the
/// whole dimension (TF's `kFullExtent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: i64,
    pub length: Option<i64>,
}

/// TF's `TensorSlice`: a box of a tensor, one [`Extent`] per dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSlice {
    pub extents: Vec<Extent>,
}

impl TensorSlice {
    /// The rows `rows` of a tensor of shape `full_shape`, every other
    /// dimension whole, with explicit extents as TF's Python `SaveSliceInfo`
    /// writes them (`"0,3:0,4"`).
    pub fn rows(full_shape: &[usize], rows: Range<usize>) -> TensorSlice {
        let mut extents = vec![Extent {
            start: rows.start as i64,
            length: Some(rows.len() as i64),
        }];
        extents.extend(full_shape.iter().skip(1).map(|&d| Extent {
            start: 0,
            length: Some(d as i64),
        }));
        TensorSlice { extents }
    }

    /// `(start, length)` of each dimension in a tensor of shape `full`,
    /// checked to lie inside it.
    pub fn bounds(&self, full: &[usize]) -> Result<Vec<(usize, usize)>, String> {
        if self.extents.len() != full.len() {
            return Err(format!(
                "a slice of rank {} of a tensor of shape {}",
                self.extents.len(),
                shape_string(full)
            ));
        }
        let mut out = Vec::with_capacity(full.len());
        for (d, (e, &n)) in self.extents.iter().zip(full).enumerate() {
            let (start, len) = match e.length {
                None => (0, n),
                Some(l) => match (usize::try_from(e.start), usize::try_from(l)) {
                    (Ok(s), Ok(l)) if s.checked_add(l).is_some_and(|end| end <= n) => (s, l),
                    _ => {
                        return Err(format!(
                            "slice extent {},{} of dimension {d} is outside {}",
                            e.start,
                            l,
                            shape_string(full)
                        ))
                    }
                },
            };
            out.push((start, len));
        }
        Ok(out)
    }

    /// TF's text form (`TensorSlice::DebugString`): `start,length` per
    /// dimension joined by `:`, `-` for a whole dimension.
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .extents
            .iter()
            .map(|e| match e.length {
                None => "-".to_string(),
                Some(l) => format!("{},{l}", e.start),
            })
            .collect();
        parts.join(":")
    }

    /// The `TensorSliceProto` bytes (proto3: a zero start is left out, a
    /// length, in a oneof, is always written when there is one).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        self.encode_into(&mut e);
        e.finish()
    }

    pub(crate) fn encode_into(&self, e: &mut Encoder) {
        for x in &self.extents {
            e.message(1, |m| {
                if let Some(l) = x.length {
                    if x.start != 0 {
                        m.int64(1, x.start);
                    }
                    m.int64(2, l);
                }
            });
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<TensorSlice, String> {
        let mut extents = Vec::new();
        for f in fields(bytes) {
            let (n, v) = f.map_err(|e| format!("malformed TensorSliceProto: {e}"))?;
            if let (1, Value::Bytes(b)) = (n, v) {
                let (mut start, mut length) = (0i64, None);
                for f in fields(b) {
                    match f.map_err(|e| format!("malformed slice extent: {e}"))? {
                        (1, Value::Varint(x)) => start = x as i64,
                        (2, Value::Varint(x)) => length = Some(x as i64),
                        _ => {}
                    }
                }
                extents.push(Extent { start, length });
            }
        }
        Ok(TensorSlice { extents })
    }
}

/// OrderedCode's `WriteNumIncreasing`: a length byte, then the value's
/// big-endian bytes without leading zeros.
fn write_num_increasing(out: &mut Vec<u8>, v: u64) {
    let bytes = v.to_be_bytes();
    let skip = (v.leading_zeros() / 8) as usize;
    out.push((8 - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

/// OrderedCode's `WriteString`: `0x00` as `00 ff`, `0xff` as `ff 00`, then
/// the separator `00 01`.
fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        match b {
            0x00 => out.extend_from_slice(&[0x00, 0xff]),
            0xff => out.extend_from_slice(&[0xff, 0x00]),
            b => out.push(b),
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// OrderedCode's `WriteSignedNumIncreasing`: a sign bit (1 = not
/// negative), as many further copies of it as bytes follow the first, a
/// delimiter bit, then the two's-complement value big-endian; `n` bytes
/// hold `[-2^(7n-1), 2^(7n-1))`.
fn write_signed_num_increasing(out: &mut Vec<u8>, v: i64) {
    let x = if v < 0 { !v as u64 } else { v as u64 };
    let bits = 64 - x.leading_zeros() as usize;
    let len = bits / 7 + 1;
    // v sign-extended to 10 bytes, big-endian.
    let sign = if v < 0 { 0xff } else { 0x00 };
    let mut buf = [sign; 10];
    buf[2..].copy_from_slice(&(v as u64).to_be_bytes());
    let enc = &mut buf[10 - len..];
    // The header, xor-ed into the first two bytes: the top `len` bits set
    // (the sign bit and `len - 1` size bits); the bit after them is the
    // delimiter.
    let header = !(u16::MAX >> len);
    enc[0] ^= (header >> 8) as u8;
    if len >= 2 {
        enc[1] ^= header as u8;
    }
    out.extend_from_slice(enc);
}

/// The key of one slice's data (`checkpoint::EncodeTensorNameSlice`).
pub fn encode_tensor_name_slice(name: &str, slice: &TensorSlice) -> Vec<u8> {
    let mut out = Vec::new();
    write_num_increasing(&mut out, 0);
    write_string(&mut out, name.as_bytes());
    write_num_increasing(&mut out, slice.extents.len() as u64);
    for e in &slice.extents {
        write_signed_num_increasing(&mut out, e.start);
        write_signed_num_increasing(&mut out, e.length.unwrap_or(-1));
    }
    out
}

fn read_num_increasing(src: &mut &[u8]) -> Option<u64> {
    let (&len, rest) = src.split_first()?;
    let len = len as usize;
    if len > 8 || rest.len() < len {
        return None;
    }
    let v = rest[..len]
        .iter()
        .fold(0u64, |v, &b| (v << 8) | u64::from(b));
    *src = &rest[len..];
    Some(v)
}

fn read_string(src: &mut &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < src.len() {
        match (src[i], src[i + 1]) {
            (0x00, 0x01) => {
                *src = &src[i + 2..];
                return Some(out);
            }
            (0x00, 0xff) => out.push(0x00),
            (0xff, 0x00) => out.push(0xff),
            (0x00 | 0xff, _) => return None,
            (b, _) => {
                out.push(b);
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    None
}

fn read_signed_num_increasing(src: &mut &[u8]) -> Option<i64> {
    let first = *src.first()?;
    let negative = first & 0x80 == 0;
    let flip = if negative { 0xff } else { 0x00 };
    // The length: the run of sign bits at the top of the first two bytes.
    let top = (u16::from(first ^ flip) << 8) | u16::from(src.get(1).map_or(0, |b| b ^ flip));
    let len = top.leading_ones() as usize;
    if len == 0 || len > 10 || src.len() < len {
        return None;
    }
    let mut v: i128 = if negative { -1 } else { 0 };
    for &b in &src[..len] {
        v = (v << 8) | i128::from(b);
    }
    // Clear the header bits (len + 1 bits below the sign-extended top).
    let payload_bits = 8 * len - (len + 1);
    let mask = (1i128 << payload_bits) - 1;
    let value = if negative {
        (v & mask) | !mask
    } else {
        v & mask
    };
    *src = &src[len..];
    i64::try_from(value).ok()
}

/// The name and slice of a slice key ([`encode_tensor_name_slice`]'s
/// inverse, TF's `DecodeTensorNameSlice`); `None` if `key` is not one.
pub fn decode_tensor_name_slice(key: &[u8]) -> Option<(String, TensorSlice)> {
    let mut src = key;
    if read_num_increasing(&mut src)? != 0 {
        return None;
    }
    let name = String::from_utf8(read_string(&mut src)?).ok()?;
    let rank = read_num_increasing(&mut src)?;
    if rank == 0 || rank > 64 {
        return None;
    }
    let mut extents = Vec::with_capacity(rank as usize);
    for _ in 0..rank {
        let start = read_signed_num_increasing(&mut src)?;
        let length = read_signed_num_increasing(&mut src)?;
        extents.push(Extent {
            start: if length < 0 { 0 } else { start },
            length: (length >= 0).then_some(length),
        });
    }
    src.is_empty().then_some((name, TensorSlice { extents }))
}

/// One thing of a save's index: a tensor's (or a slice's) data, or the
/// full-name entry of a sliced tensor.
pub(crate) enum Item<'a> {
    Data {
        key: Vec<u8>,
        name: &'a str,
        dtype: DType,
        shape: Vec<usize>,
        bytes: &'a [u8],
    },
    Sliced {
        key: Vec<u8>,
        entry: BundleEntry,
    },
}

impl Item<'_> {
    pub(crate) fn key(&self) -> &[u8] {
        match self {
            Item::Data { key, .. } | Item::Sliced { key, .. } => key,
        }
    }
}

/// The partition rows `partitions` gives `name` if they slice a tensor of
/// `shape` (more than one, summing to its first dimension).
fn row_slices<'p>(partitions: &'p Partitions, name: &str, shape: &[usize]) -> Option<&'p [usize]> {
    let p = partitions.get(name)?;
    (p.len() > 1 && !shape.is_empty() && p.iter().sum::<usize>() == shape[0])
        .then_some(p.as_slice())
}

/// The items of a save of `tensors`, sorted by key: a partitioned tensor
/// becomes its full-name entry and one data item per partition.
pub(crate) fn items<'a, S: AsRef<str>>(
    tensors: &'a [(S, TensorRef<'a>)],
    partitions: &Partitions,
) -> Vec<Item<'a>> {
    let mut out = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let name = name.as_ref();
        let Some(parts) = row_slices(partitions, name, t.shape) else {
            out.push(Item::Data {
                key: name.as_bytes().to_vec(),
                name,
                dtype: t.dtype,
                shape: t.shape.to_vec(),
                bytes: t.bytes(),
            });
            continue;
        };
        let row_bytes = t.bytes().len() / t.shape[0].max(1);
        let mut slices = Vec::with_capacity(parts.len());
        let mut start = 0;
        for &n in parts {
            let slice = TensorSlice::rows(t.shape, start..start + n);
            let mut shape = t.shape.to_vec();
            shape[0] = n;
            out.push(Item::Data {
                key: encode_tensor_name_slice(name, &slice),
                name,
                dtype: t.dtype,
                shape,
                bytes: &t.bytes()[start * row_bytes..(start + n) * row_bytes],
            });
            slices.push(slice);
            start += n;
        }
        out.push(Item::Sliced {
            key: name.as_bytes().to_vec(),
            entry: BundleEntry::sliced(t.dtype, t.shape.to_vec(), slices),
        });
    }
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out
}

/// A stored block of a tensor: its entry and where it sits in the full
/// tensor (`(start, length)` per dimension).
struct Block<'a> {
    key: String,
    entry: &'a BundleEntry,
    bounds: Vec<(usize, usize)>,
}

impl BundleReader {
    /// The slices tensor `name` is stored in (empty: one ordinary entry).
    pub fn slices(&self, name: &str) -> &[TensorSlice] {
        self.entry(name).map_or(&[], |e| e.slices.as_slice())
    }

    /// Reads rows `rows` (of the first axis) of tensor `name` into `dst`
    /// (exactly their bytes), from whatever slicing the checkpoint has: one
    /// ordinary entry, or the slices of any partitioning. Reads only the
    /// slices that overlap the rows, each streamed in bounded chunks with
    /// its CRC checked over all its bytes.
    pub fn load_rows_into(
        &self,
        name: &str,
        rows: Range<usize>,
        dst: &mut [u8],
    ) -> Result<(), CheckpointError> {
        let index = self.index_file();
        let e = self.entry(name).ok_or_else(|| {
            CheckpointError::tensor(Mismatch, index, name, "not in the checkpoint")
        })?;
        let mismatch = |m: String| CheckpointError::tensor(Mismatch, index, name, m);
        if e.shape.is_empty() {
            return Err(mismatch("is a scalar: it has no rows".to_string()));
        }
        if rows.start > rows.end || rows.end > e.shape[0] {
            return Err(mismatch(format!(
                "rows {}..{} of a tensor of shape {}",
                rows.start,
                rows.end,
                shape_string(&e.shape)
            )));
        }
        let mut want: Vec<(usize, usize)> = e.shape.iter().map(|&d| (0, d)).collect();
        want[0] = (rows.start, rows.len());
        let volume: usize = want.iter().map(|w| w.1).product();
        if dst.len() != volume * e.dtype.size() {
            return Err(mismatch(format!(
                "rows {}..{} have {} bytes, the destination {}",
                rows.start,
                rows.end,
                volume * e.dtype.size(),
                dst.len()
            )));
        }
        let blocks: Vec<Block<'_>> = if e.slices.is_empty() {
            vec![Block {
                key: name.to_string(),
                entry: e,
                bounds: e.shape.iter().map(|&d| (0, d)).collect(),
            }]
        } else {
            let mut v = Vec::new();
            for s in &e.slices {
                let key = encode_tensor_name_slice(name, s);
                let (Some(entry), Ok(bounds)) = (self.slice_entry(&key), s.bounds(&e.shape)) else {
                    // `open` checked both.
                    continue;
                };
                v.push(Block {
                    key: format!("{name} (slice {})", s.text()),
                    entry,
                    bounds,
                });
            }
            v
        };
        let mut covered = 0usize;
        for b in &blocks {
            let overlap: Vec<(usize, usize)> = want
                .iter()
                .zip(&b.bounds)
                .map(|(&(ws, wl), &(bs, bl))| (ws.max(bs), (ws + wl).min(bs + bl)))
                .collect();
            if overlap.iter().any(|&(lo, hi)| lo >= hi) {
                continue;
            }
            covered += overlap.iter().map(|&(lo, hi)| hi - lo).product::<usize>();
            self.stream_block(b, &want, &overlap, e.dtype.size(), dst)?;
        }
        if covered != volume {
            return Err(mismatch(format!(
                "its slices do not cover rows {}..{} ({covered} of {volume} elements)",
                rows.start, rows.end
            )));
        }
        Ok(())
    }

    /// [`BundleReader::load_rows_into`] of a float32 tensor.
    pub fn load_rows_f32_into(
        &self,
        name: &str,
        rows: Range<usize>,
        dst: &mut [f32],
    ) -> Result<(), CheckpointError> {
        match self.entry(name) {
            Some(e) if e.dtype != DType::Float => Err(CheckpointError::tensor(
                Mismatch,
                self.index_file(),
                name,
                format!("is {}, not float32", e.dtype),
            )),
            _ => self.load_rows_into(name, rows, bytemuck::cast_slice_mut(dst)),
        }
    }

    /// Reads block `b` in chunks of whole rows, checking its CRC, and copies
    /// its part `overlap` (`[lo, hi)` per dimension) into `dst` (the box
    /// `want`).
    fn stream_block(
        &self,
        b: &Block<'_>,
        want: &[(usize, usize)],
        overlap: &[(usize, usize)],
        esize: usize,
        dst: &mut [u8],
    ) -> Result<(), CheckpointError> {
        let (file, path) = self.shard_file(b.entry.shard_id);
        let rows = b.bounds[0].1;
        let row_bytes = (b.entry.size as usize).checked_div(rows).unwrap_or(0);
        let chunk_rows = (READ_CHUNK / row_bytes.max(1)).max(1);
        let mut buf = vec![0u8; chunk_rows.min(rows) * row_bytes];
        let mut crc = 0u32;
        let mut r = 0;
        while r < rows {
            let n = chunk_rows.min(rows - r);
            let chunk = &mut buf[..n * row_bytes];
            super::bundle::read_at(file, chunk, b.entry.offset + (r * row_bytes) as u64).map_err(
                |err| CheckpointError::tensor(Io, path, &b.key, format!("cannot read: {err}")),
            )?;
            crc = crc::extend(crc, chunk);
            // The rows of this chunk, in the full tensor's coordinates.
            let (r0, r1) = (b.bounds[0].0 + r, b.bounds[0].0 + r + n);
            let lo0 = overlap[0].0.max(r0);
            let hi0 = overlap[0].1.min(r1);
            if lo0 < hi0 {
                let mut src_box = b.bounds.clone();
                src_box[0] = (r0, n);
                let mut part = overlap.to_vec();
                part[0] = (lo0, hi0);
                copy_box(chunk, &src_box, dst, want, &part, esize);
            }
            r += n;
        }
        let actual = crc::mask(crc);
        if actual != b.entry.crc32c {
            return Err(CheckpointError::tensor(
                Corrupt,
                path,
                &b.key,
                format!(
                    "bytes {}..{} fail their CRC32C check (index says {:#010x}, data gives {actual:#010x}): corrupt",
                    b.entry.offset,
                    b.entry.offset + b.entry.size,
                    b.entry.crc32c
                ),
            ));
        }
        Ok(())
    }
}

/// Copies the box `part` (`[lo, hi)` per dimension, full-tensor
/// coordinates) from `src` (a row-major box `src_box`, `(start, length)`
/// per dimension) into `dst` (the box `dst_box`); elements of `esize`
/// bytes. `part` lies inside both boxes.
fn copy_box(
    src: &[u8],
    src_box: &[(usize, usize)],
    dst: &mut [u8],
    dst_box: &[(usize, usize)],
    part: &[(usize, usize)],
    esize: usize,
) {
    let rank = part.len();
    let strides = |b: &[(usize, usize)]| {
        let mut s = vec![esize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            s[d] = s[d + 1] * b[d + 1].1;
        }
        s
    };
    let (ss, ds) = (strides(src_box), strides(dst_box));
    let last = rank - 1;
    let run = (part[last].1 - part[last].0) * esize;
    let mut idx: Vec<usize> = part.iter().map(|p| p.0).collect();
    loop {
        let so: usize = (0..rank).map(|d| (idx[d] - src_box[d].0) * ss[d]).sum();
        let dof: usize = (0..rank).map(|d| (idx[d] - dst_box[d].0) * ds[d]).sum();
        dst[dof..dof + run].copy_from_slice(&src[so..so + run]);
        // The next index over every dimension but the last.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < part[d].1 {
                break;
            }
            idx[d] = part[d].0;
        }
    }
}

#[cfg(test)]
#[path = "slices_tests.rs"]
mod tests;
