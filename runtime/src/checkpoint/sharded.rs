//! A checkpoint written by several processes (TF's sharded save: each
//! parameter server writes `PREFIX.data-SSSSS-of-NNNNN` with its part of
//! the variables, then one `PREFIX.index` lists them all, tensor_bundle's
//! `MergeBundles`).
//!
//! Owns: [`write_shard`] (one process's data file, from its slices
//! [`ShardSlice`]: a partitioned variable's rows, or a whole tensor; returns
//! the entries as [`ShardEntries`] bytes to send to the writer of the
//! index) and [`write_sharded_index`] (the index from every shard's
//! entries: each sliced tensor's full-name entry with all its slices,
//! `num_shards` = N).
//!
//! [`CheckpointManager::save_sharded`](super::CheckpointManager::save_sharded)
//! writes the index of a manager's checkpoint and then its state file.
//!
//! Invariants: both files are written atomically (a temporary, fsynced,
//! renamed); the index is written only from every shard's entries (one
//! list per shard, in shard order), after checking that each tensor has
//! one dtype and full shape, that its slices do not overlap and cover it
//! whole, and that no name is given twice; slices are written in key order
//! within their shard, as [`super::bundle`] writes one.

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use super::bundle::{data_path, encode_header, index_path, BundleEntry};
use super::slices::{encode_tensor_name_slice, TensorSlice};
use super::table;
use super::tensor::{shape_string, DType, TensorRef};
use super::CheckpointError;
use super::CheckpointErrorKind::{Corrupt, Invalid, Io};
use crate::io::atomic::{AtomicError, AtomicFile};
use crate::io::crc;
use crate::io::proto::{fields, int64s, Encoder, Value};

/// One slice a process saves: rows `rows` of tensor `name` (of shape
/// `full_shape`), `values` being exactly those rows. Rows `0..full_shape[0]`
/// (or a scalar) save the tensor as an ordinary entry.
#[derive(Clone, Debug)]
pub struct ShardSlice<'a> {
    pub name: &'a str,
    pub full_shape: &'a [usize],
    pub rows: Range<usize>,
    pub values: TensorRef<'a>,
}

/// The entries of one data shard, encoded to be sent between processes
/// (what [`write_shard`] returns and [`write_sharded_index`] takes).
pub type ShardEntries = Vec<u8>;

fn atomic_error(e: AtomicError) -> CheckpointError {
    CheckpointError::new(Io, &e.path, e.to_string())
}

/// Writes `PREFIX.data-{shard}-of-{num_shards}` holding `slices`; returns
/// their entries (for [`write_sharded_index`]). Errors on a slice whose
/// values are not its rows, an empty or repeated name.
pub fn write_shard(
    prefix: impl AsRef<Path>,
    shard: u32,
    num_shards: u32,
    slices: &[ShardSlice<'_>],
) -> Result<ShardEntries, CheckpointError> {
    let path = data_path(prefix.as_ref(), shard, num_shards);
    let invalid = |name: &str, m: String| CheckpointError::tensor(Invalid, &path, name, m);
    if shard >= num_shards {
        return Err(CheckpointError::new(
            Invalid,
            &path,
            format!("shard {shard} of {num_shards}"),
        ));
    }
    // (key, slice or none, the slice's values), by key.
    let mut items = Vec::with_capacity(slices.len());
    for s in slices {
        if s.name.is_empty() {
            return Err(invalid(s.name, "the empty name".to_string()));
        }
        let whole = s.full_shape.is_empty() || s.rows == (0..s.full_shape[0]);
        let mut want = s.full_shape.to_vec();
        if let Some(r) = want.first_mut() {
            if s.rows.start > s.rows.end || s.rows.end > *r {
                return Err(invalid(
                    s.name,
                    format!(
                        "rows {}..{} of a tensor of shape {}",
                        s.rows.start,
                        s.rows.end,
                        shape_string(s.full_shape)
                    ),
                ));
            }
            *r = s.rows.len();
        }
        if s.values.shape != want.as_slice() {
            return Err(invalid(
                s.name,
                format!(
                    "rows {}..{} of {} are of shape {}, the values of shape {}",
                    s.rows.start,
                    s.rows.end,
                    shape_string(s.full_shape),
                    shape_string(&want),
                    shape_string(s.values.shape)
                ),
            ));
        }
        let slice = (!whole).then(|| TensorSlice::rows(s.full_shape, s.rows.clone()));
        let key = match &slice {
            Some(sl) => encode_tensor_name_slice(s.name, sl),
            None => s.name.as_bytes().to_vec(),
        };
        items.push((key, slice, s));
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = items.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(invalid(w[0].2.name, "given twice".to_string()));
    }
    let mut file = AtomicFile::create(&path).map_err(atomic_error)?;
    let mut out = Encoder::new();
    let mut offset = 0u64;
    for (_, slice, s) in &items {
        let bytes = s.values.bytes();
        file.write_all(bytes).map_err(|e| {
            CheckpointError::tensor(Io, &path, s.name, format!("cannot write: {e}"))
        })?;
        let entry = BundleEntry {
            dtype: s.values.dtype,
            shape: s.values.shape.to_vec(),
            shard_id: shard,
            offset,
            size: bytes.len() as u64,
            crc32c: crc::masked_crc32c(bytes),
            slices: Vec::new(),
        };
        offset += bytes.len() as u64;
        out.message(1, |m| {
            m.bytes(1, s.name.as_bytes());
            if let Some(sl) = slice {
                m.bytes(2, &sl.encode());
            }
            m.bytes(3, &entry.encode());
            let dims: Vec<i64> = s.full_shape.iter().map(|&d| d as i64).collect();
            m.packed_int64s(4, &dims);
        });
    }
    file.persist().map_err(atomic_error)?;
    if let Some(dir) = path.parent() {
        crate::io::atomic::sync_dir(dir)
            .map_err(|e| CheckpointError::io(dir, "sync the directory", &e))?;
    }
    Ok(out.finish())
}

/// A sliced tensor being merged: name, dtype, full shape, its slices with
/// their first rows and row counts.
type Sliced = (String, DType, Vec<usize>, Vec<(usize, usize, TensorSlice)>);

/// One decoded record of [`ShardEntries`].
struct Record {
    name: String,
    slice: Option<TensorSlice>,
    entry: BundleEntry,
    full_shape: Vec<usize>,
}

fn decode_records(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    for f in fields(bytes) {
        let (n, v) = f.map_err(|e| format!("malformed shard entries: {e}"))?;
        let (1, Value::Bytes(rec)) = (n, v) else {
            continue;
        };
        let (mut name, mut slice, mut entry, mut dims) = (None, None, None, Vec::new());
        for f in fields(rec) {
            let (n, v) = f.map_err(|e| format!("malformed shard entry: {e}"))?;
            match (n, v) {
                (1, Value::Bytes(b)) => {
                    name = Some(String::from_utf8(b.to_vec()).map_err(|e| e.to_string())?)
                }
                (2, Value::Bytes(b)) => slice = Some(TensorSlice::decode(b)?),
                (3, Value::Bytes(b)) => entry = Some(BundleEntry::decode(b)?),
                (4, v) => int64s(v, &mut dims).map_err(|e| e.to_string())?,
                _ => {}
            }
        }
        let (Some(name), Some(entry)) = (name, entry) else {
            return Err("a shard entry without a name or an entry".to_string());
        };
        let full_shape = dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("negative dimension {d}")))
            .collect::<Result<_, _>>()?;
        out.push(Record {
            name,
            slice,
            entry,
            full_shape,
        });
    }
    Ok(out)
}

/// Writes `PREFIX.index` for a checkpoint of `num_shards` data shards from
/// each shard's entries (`shards[i]`: what [`write_shard`] returned for
/// shard `i`).
pub fn write_sharded_index(
    prefix: impl AsRef<Path>,
    shards: &[ShardEntries],
) -> Result<(), CheckpointError> {
    let path = index_path(prefix.as_ref());
    let num_shards = shards.len() as u32;
    let corrupt = |m: String| CheckpointError::new(Corrupt, &path, m);
    // key → entry; sliced tensors: name → (dtype, full shape, slices).
    let mut keyed: Vec<(Vec<u8>, BundleEntry)> = Vec::new();
    let mut full: Vec<Sliced> = Vec::new();
    for (i, bytes) in shards.iter().enumerate() {
        for r in decode_records(bytes).map_err(corrupt)? {
            if r.entry.shard_id as usize != i {
                return Err(CheckpointError::tensor(
                    Invalid,
                    &path,
                    &r.name,
                    format!(
                        "written to shard {}, listed as shard {i}'s",
                        r.entry.shard_id
                    ),
                ));
            }
            let Some(slice) = r.slice else {
                keyed.push((r.name.into_bytes(), r.entry));
                continue;
            };
            let bounds = slice.bounds(&r.full_shape).map_err(corrupt)?;
            keyed.push((encode_tensor_name_slice(&r.name, &slice), r.entry.clone()));
            let (start, len) = bounds[0];
            match full.iter_mut().find(|f| f.0 == r.name) {
                Some(f) => {
                    if f.1 != r.entry.dtype || f.2 != r.full_shape {
                        return Err(CheckpointError::tensor(
                            Invalid,
                            &path,
                            &r.name,
                            format!(
                                "one slice is {} of shape {}, another {} of shape {}",
                                f.1,
                                shape_string(&f.2),
                                r.entry.dtype,
                                shape_string(&r.full_shape)
                            ),
                        ));
                    }
                    f.3.push((start, len, slice));
                }
                None => full.push((
                    r.name,
                    r.entry.dtype,
                    r.full_shape,
                    vec![(start, len, slice)],
                )),
            }
        }
    }
    for (name, dtype, shape, slices) in &mut full {
        slices.sort_by_key(|s| s.0);
        let mut next = 0;
        for (start, len, _) in slices.iter() {
            if *start != next {
                return Err(CheckpointError::tensor(
                    Invalid,
                    &path,
                    name,
                    format!(
                        "its slices {} rows {next}..{start}",
                        if *start > next { "miss" } else { "overlap at" }
                    ),
                ));
            }
            next = start + len;
        }
        if next != shape[0] {
            return Err(CheckpointError::tensor(
                Invalid,
                &path,
                name,
                format!("its slices end at row {next} of {}", shape[0]),
            ));
        }
        let entry = BundleEntry::sliced(
            *dtype,
            shape.clone(),
            slices.iter().map(|s| s.2.clone()).collect(),
        );
        keyed.push((name.clone().into_bytes(), entry));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = keyed.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(CheckpointError::tensor(
            Invalid,
            &path,
            &String::from_utf8_lossy(&w[0].0),
            "given twice",
        ));
    }
    let header = encode_header(num_shards);
    let values: Vec<Vec<u8>> = keyed.iter().map(|(_, e)| e.encode()).collect();
    let keys = std::iter::once(&b""[..]).chain(keyed.iter().map(|(k, _)| k.as_slice()));
    let vals = std::iter::once(&header[..]).chain(values.iter().map(Vec::as_slice));
    let table = table::build(keys.zip(vals));
    let mut file = AtomicFile::create(&path).map_err(atomic_error)?;
    file.write_all(&table)
        .map_err(|e| CheckpointError::io(&path, "write", &e))?;
    file.persist().map_err(atomic_error)
}
