//! TF's tensor bundle (the V2 checkpoint format of
//! `tensorflow/core/util/tensor_bundle`): `PREFIX.index` and the data shards
//! `PREFIX.data-SSSSS-of-NNNNN`.
//!
//! Owns: [`write_bundle`] (and the writer behind the manager's atomic save),
//! [`BundleReader`] (open, `list_variables`, `load`, `load_into`), and the
//! two messages of the index: `BundleHeaderProto` under the key `""`
//! (`num_shards`, `endianness`, `version`) and one `BundleEntryProto` per
//! tensor (`dtype`, `shape`, `shard_id`, `offset`, `size`, `crc32c`: the
//! masked CRC32C of the tensor's bytes), proto3-encoded (zero fields left out).
//!
//! Invariants: tensors are written in bytewise key order, back to back with
//! no padding, into one shard, and the index lists them in the same order;
//! the reader checks the table (footer, block CRCs, key order), the header
//! (little-endian, a version it can read), every entry (a known dtype, a
//! shape whose byte size is `size`, a shard that exists and holds
//! `offset + size` bytes) on open, and each tensor's CRC on load.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::slices::{self, encode_tensor_name_slice, Item, Partitions, TensorSlice};
use super::table;
use super::tensor::{num_elements, shape_string, DType, Tensor, TensorRef};
use super::CheckpointError;
use super::CheckpointErrorKind::{Corrupt, Invalid, Io, Mismatch, NotFound};
use crate::io::crc;
use crate::io::proto::{fields, Encoder, Value};

/// `tensor_bundle.h`'s `kTensorBundleVersion`.
const VERSION: u64 = 1;
/// Bytes buffered before a write to the data file (tensors at least this
/// large go straight to the file).
const WRITE_BUFFER: usize = 1 << 20;

/// `PREFIX.index`.
pub fn index_path(prefix: &Path) -> PathBuf {
    let mut p = prefix.as_os_str().to_owned();
    p.push(".index");
    PathBuf::from(p)
}

/// `PREFIX.data-SSSSS-of-NNNNN`.
pub fn data_path(prefix: &Path, shard: u32, num_shards: u32) -> PathBuf {
    let mut p = prefix.as_os_str().to_owned();
    p.push(format!(".data-{shard:05}-of-{num_shards:05}"));
    PathBuf::from(p)
}

/// One tensor's `BundleEntryProto`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleEntry {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub shard_id: u32,
    pub offset: u64,
    pub size: u64,
    /// The masked CRC32C of the tensor's bytes, as stored.
    pub crc32c: u32,
    /// A sliced (partitioned) tensor's slices, each stored as an entry of
    /// its own under [`encode_tensor_name_slice`]'s key; empty for an
    /// ordinary tensor. A sliced entry has no data (`size` 0) of its own.
    pub slices: Vec<TensorSlice>,
}

impl BundleEntry {
    /// The full-name entry of a tensor saved in `slices` (TF's
    /// `BundleWriter::AddSlice`: dtype, full shape, slices; no data).
    pub fn sliced(dtype: DType, shape: Vec<usize>, slices: Vec<TensorSlice>) -> BundleEntry {
        BundleEntry {
            dtype,
            shape,
            shard_id: 0,
            offset: 0,
            size: 0,
            crc32c: 0,
            slices,
        }
    }

    /// The `BundleEntryProto` bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        e.varint(1, self.dtype.enum_value());
        e.message(2, |s| {
            for &d in &self.shape {
                s.message(2, |dim| {
                    if d != 0 {
                        dim.int64(1, d as i64);
                    }
                });
            }
        });
        if self.shard_id != 0 {
            e.varint(3, u64::from(self.shard_id));
        }
        if self.offset != 0 {
            e.int64(4, self.offset as i64);
        }
        if self.size != 0 {
            e.int64(5, self.size as i64);
        }
        if self.crc32c != 0 {
            e.fixed32(6, self.crc32c);
        }
        for s in &self.slices {
            e.message(7, |m| s.encode_into(m));
        }
        e.finish()
    }

    /// A `BundleEntryProto`, checked (a known dtype; an ordinary entry's
    /// size is its shape's bytes).
    pub fn decode(bytes: &[u8]) -> Result<BundleEntry, String> {
        let mut dtype = 0;
        let mut shape = Vec::new();
        let mut slices = Vec::new();
        let (mut shard_id, mut offset, mut size, mut crc32c) = (0u64, 0u64, 0u64, 0u32);
        for f in fields(bytes) {
            let (n, v) = f.map_err(|e| format!("malformed BundleEntryProto: {e}"))?;
            match (n, v) {
                (1, Value::Varint(x)) => dtype = x,
                (2, Value::Bytes(b)) => shape = decode_shape(b)?,
                (3, Value::Varint(x)) => shard_id = x,
                (4, Value::Varint(x)) => offset = x,
                (5, Value::Varint(x)) => size = x,
                (6, Value::Fixed32(x)) => crc32c = x,
                (7, Value::Bytes(b)) => slices.push(TensorSlice::decode(b)?),
                (1..=7, _) => {
                    return Err(format!(
                        "BundleEntryProto field {n} has the wrong wire type"
                    ))
                }
                _ => {}
            }
        }
        let dtype = DType::from_enum(dtype).ok_or_else(|| match dtype {
            7 => "dtype string is not supported".to_string(),
            _ => format!("unsupported dtype (TF DataType {dtype})"),
        })?;
        if (offset as i64) < 0 || (size as i64) < 0 {
            return Err("negative offset or size".to_string());
        }
        let want = num_elements(&shape)
            .and_then(|n| n.checked_mul(dtype.size()))
            .ok_or_else(|| format!("shape {} is too large", shape_string(&shape)))?;
        if slices.is_empty() && want as u64 != size {
            return Err(format!(
                "a {dtype} tensor of shape {} has {want} bytes, but the entry says {size}",
                shape_string(&shape)
            ));
        }
        let shard_id =
            u32::try_from(shard_id).map_err(|_| format!("shard id {shard_id} out of range"))?;
        Ok(BundleEntry {
            dtype,
            shape,
            shard_id,
            offset,
            size,
            crc32c,
            slices,
        })
    }
}

fn decode_shape(bytes: &[u8]) -> Result<Vec<usize>, String> {
    let mut shape = Vec::new();
    for f in fields(bytes) {
        let (n, v) = f.map_err(|e| format!("malformed TensorShapeProto: {e}"))?;
        match (n, v) {
            (2, Value::Bytes(dim)) => {
                let mut size = 0i64;
                for f in fields(dim) {
                    if let (1, Value::Varint(x)) =
                        f.map_err(|e| format!("malformed shape dim: {e}"))?
                    {
                        size = x as i64;
                    }
                }
                let size =
                    usize::try_from(size).map_err(|_| format!("negative dimension {size}"))?;
                shape.push(size);
            }
            (3, Value::Varint(x)) if x != 0 => return Err("unknown rank".to_string()),
            _ => {}
        }
    }
    Ok(shape)
}

pub(super) fn encode_header(num_shards: u32) -> Vec<u8> {
    let mut e = Encoder::new();
    e.varint(1, u64::from(num_shards));
    // endianness LITTLE = 0: left out.
    e.message(3, |v| v.varint(1, VERSION));
    e.finish()
}

/// `(num_shards)` of a `BundleHeaderProto`, after TF's checks.
fn decode_header(bytes: &[u8]) -> Result<u32, String> {
    let (mut num_shards, mut endianness) = (0u64, 0u64);
    let (mut min_consumer, mut bad) = (0u64, Vec::new());
    for f in fields(bytes) {
        let (n, v) = f.map_err(|e| format!("malformed BundleHeaderProto: {e}"))?;
        match (n, v) {
            (1, Value::Varint(x)) => num_shards = x,
            (2, Value::Varint(x)) => endianness = x,
            (3, Value::Bytes(version)) => {
                for f in fields(version) {
                    match f.map_err(|e| format!("malformed VersionDef: {e}"))? {
                        (2, Value::Varint(x)) => min_consumer = x,
                        (3, Value::Varint(x)) => bad.push(x),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if endianness != 0 {
        return Err(
            "the checkpoint is big-endian; only little-endian checkpoints are supported"
                .to_string(),
        );
    }
    if min_consumer > VERSION || bad.contains(&VERSION) {
        return Err(format!(
            "the checkpoint needs a reader of bundle version {min_consumer} or later; this one reads version {VERSION}"
        ));
    }
    let num_shards =
        u32::try_from(num_shards).map_err(|_| format!("{num_shards} shards is out of range"))?;
    Ok(num_shards)
}

/// A `Write` that fails with "no space left on device" after `limit` bytes:
/// how the tests make a full disk.
pub(crate) struct LimitedWriter<W> {
    inner: W,
    left: Option<u64>,
    written: u64,
}

impl<W: Write> LimitedWriter<W> {
    pub(crate) fn new(inner: W, limit: Option<u64>) -> LimitedWriter<W> {
        LimitedWriter {
            inner,
            left: limit,
            written: 0,
        }
    }

    /// The bytes written through it.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }
}

impl<W: Write> Write for LimitedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match self.left {
            None => buf.len(),
            Some(0) if !buf.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device (the write limit of the test)",
                ))
            }
            Some(left) => buf.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
        };
        let written = self.inner.write(&buf[..n])?;
        self.written += written as u64;
        if let Some(left) = &mut self.left {
            *left -= written as u64;
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The order of `tensors` by name (bytewise); errors on an empty or
/// repeated name.
fn key_order<S: AsRef<str>>(tensors: &[(S, TensorRef<'_>)]) -> Result<Vec<usize>, String> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by(|&a, &b| tensors[a].0.as_ref().cmp(tensors[b].0.as_ref()));
    for w in order.windows(2) {
        let name = tensors[w[0]].0.as_ref();
        if name == tensors[w[1]].0.as_ref() {
            return Err(format!("two tensors are named `{name}`"));
        }
    }
    if order
        .first()
        .is_some_and(|&i| tensors[i].0.as_ref().is_empty())
    {
        return Err("a tensor has the empty name (the key of the bundle header)".to_string());
    }
    Ok(order)
}

/// Writes the items' data to `data` in key order (a partitioned tensor's
/// slices, as `partitions` says, each under its slice key); returns the
/// index table. `Err((tensor, error))` names the tensor being written.
fn write_data<S: AsRef<str>, W: Write>(
    data: &mut W,
    tensors: &[(S, TensorRef<'_>)],
    partitions: &Partitions,
) -> Result<Vec<u8>, (Option<String>, io::Error)> {
    let items = slices::items(tensors, partitions);
    let mut values = Vec::with_capacity(items.len());
    let mut offset = 0u64;
    for item in &items {
        match item {
            Item::Data {
                name,
                dtype,
                shape,
                bytes,
                ..
            } => {
                data.write_all(bytes)
                    .map_err(|e| (Some(name.to_string()), e))?;
                values.push(
                    BundleEntry {
                        dtype: *dtype,
                        shape: shape.clone(),
                        shard_id: 0,
                        offset,
                        size: bytes.len() as u64,
                        crc32c: crc::masked_crc32c(bytes),
                        slices: Vec::new(),
                    }
                    .encode(),
                );
                offset += bytes.len() as u64;
            }
            Item::Sliced { entry, .. } => values.push(entry.encode()),
        }
    }
    data.flush().map_err(|e| (None, e))?;
    let header = encode_header(1);
    let keys = std::iter::once(&b""[..]).chain(items.iter().map(Item::key));
    let vals = std::iter::once(&header[..]).chain(values.iter().map(Vec::as_slice));
    Ok(table::build(keys.zip(vals)))
}

/// Writes the data shard into `data` and the index into `index` (named
/// `data_name` and `index_name` in errors), failing with "no space left"
/// after `limit` bytes in all (tests). Returns the bytes written. Errors
/// name the file, and the tensor being written.
pub(crate) fn write_files<S: AsRef<str>>(
    index: &mut impl Write,
    index_name: &Path,
    data: &mut impl Write,
    data_name: &Path,
    tensors: &[(S, TensorRef<'_>)],
    partitions: &Partitions,
    limit: Option<u64>,
) -> Result<u64, CheckpointError> {
    key_order(tensors).map_err(|m| CheckpointError::new(Invalid, index_name, m))?;
    let mut w = BufWriter::with_capacity(WRITE_BUFFER, LimitedWriter::new(data, limit));
    let table = write_data(&mut w, tensors, partitions).map_err(|(t, e)| CheckpointError {
        kind: Io,
        file: data_name.to_path_buf(),
        tensor: t,
        message: format!("cannot write: {e}"),
    })?;
    w.flush()
        .map_err(|e| CheckpointError::io(data_name, "write", &e))?;
    let written = w.get_ref().written();
    let mut iw = LimitedWriter::new(index, limit.map(|l| l.saturating_sub(written)));
    iw.write_all(&table)
        .and_then(|()| iw.flush())
        .map_err(|e| CheckpointError::io(index_name, "write", &e))?;
    Ok(written + table.len() as u64)
}

/// Writes `PREFIX.index` and `PREFIX.data-00000-of-00001` holding `tensors`
/// (any order; saved by name, bytewise), byte-identical to TF's
/// `BundleWriter`. Not atomic: [`super::CheckpointManager::save`] is.
pub fn write_bundle<S: AsRef<str>>(
    prefix: impl AsRef<Path>,
    tensors: &[(S, TensorRef<'_>)],
) -> Result<(), CheckpointError> {
    write_partitioned_bundle(prefix, tensors, &Partitions::new())
}

/// [`write_bundle`] with the tensors `partitions` names saved in slices,
/// as TF saves a partitioned variable (see [`super::slices`]).
pub fn write_partitioned_bundle<S: AsRef<str>>(
    prefix: impl AsRef<Path>,
    tensors: &[(S, TensorRef<'_>)],
    partitions: &Partitions,
) -> Result<(), CheckpointError> {
    let prefix = prefix.as_ref();
    let (index, data) = (index_path(prefix), data_path(prefix, 0, 1));
    let create =
        |p: &Path| File::create(p).map_err(|e| CheckpointError::io(p, "create the file", &e));
    let mut data_file = create(&data)?;
    let mut index_file = create(&index)?;
    write_files(
        &mut index_file,
        &index,
        &mut data_file,
        &data,
        tensors,
        partitions,
        None,
    )
    .map(|_| ())
}

struct Shard {
    path: PathBuf,
    file: File,
    len: u64,
}

/// An open checkpoint (TF's `BundleReader` / `tf.train.load_checkpoint`).
pub struct BundleReader {
    prefix: PathBuf,
    index: PathBuf,
    /// The tensors by name (a sliced tensor's full-name entry among them).
    entries: Vec<(String, BundleEntry)>,
    /// The slices' own entries, by slice key (bytewise).
    slice_entries: Vec<(Vec<u8>, BundleEntry)>,
    shards: Vec<Shard>,
}

impl BundleReader {
    /// Opens the checkpoint `prefix` (the path without `.index`): reads and
    /// checks the whole index, and opens every data shard.
    pub fn open(prefix: impl AsRef<Path>) -> Result<BundleReader, CheckpointError> {
        let prefix = prefix.as_ref().to_path_buf();
        let index = index_path(&prefix);
        let bytes = std::fs::read(&index).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                CheckpointError::new(
                    NotFound,
                    &index,
                    "no such checkpoint index (is the prefix right?)",
                )
            } else {
                CheckpointError::io(&index, "read the checkpoint index", &e)
            }
        })?;
        let err = |m: String| CheckpointError::new(Corrupt, &index, m);
        let pairs = table::read(&bytes).map_err(err)?;
        let mut pairs = pairs.into_iter();
        let num_shards = match pairs.next() {
            Some((k, v)) if k.is_empty() => decode_header(&v).map_err(err)?,
            _ => {
                return Err(err(
                    "no bundle header (the key \"\"): not a TF V2 checkpoint index".to_string(),
                ))
            }
        };
        let mut entries = Vec::with_capacity(pairs.len());
        let mut slice_entries = Vec::new();
        for (k, v) in pairs {
            if k.first() == Some(&0) {
                // A slice's data (its key is EncodeTensorNameSlice's).
                let name = String::from_utf8_lossy(&k).into_owned();
                let entry = BundleEntry::decode(&v)
                    .map_err(|m| CheckpointError::tensor(Corrupt, &index, &name, m))?;
                if entry.shard_id >= num_shards || !entry.slices.is_empty() {
                    return Err(CheckpointError::tensor(
                        Corrupt,
                        &index,
                        &name,
                        "a slice entry with a shard out of range, or slices of its own",
                    ));
                }
                slice_entries.push((k, entry));
                continue;
            }
            let name = String::from_utf8(k).map_err(|e| {
                err(format!(
                    "a tensor name is not UTF-8: {:?}",
                    String::from_utf8_lossy(e.as_bytes())
                ))
            })?;
            let entry = BundleEntry::decode(&v)
                .map_err(|m| CheckpointError::tensor(Corrupt, &index, &name, m))?;
            if entry.shard_id >= num_shards {
                return Err(CheckpointError::tensor(
                    Corrupt,
                    &index,
                    &name,
                    format!(
                        "shard {} of a checkpoint with {num_shards} shards",
                        entry.shard_id
                    ),
                ));
            }
            entries.push((name, entry));
        }
        let mut shards = Vec::with_capacity(num_shards as usize);
        for s in 0..num_shards {
            let path = data_path(&prefix, s, num_shards);
            let file = File::open(&path).map_err(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    CheckpointError::new(NotFound, &path, "missing data shard of the checkpoint")
                } else {
                    CheckpointError::io(&path, "open the data shard", &e)
                }
            })?;
            let len = file
                .metadata()
                .map_err(|e| CheckpointError::io(&path, "stat the data shard", &e))?
                .len();
            shards.push(Shard { path, file, len });
        }
        check_slices(&index, &entries, &slice_entries)?;
        let stored = entries.iter().map(|(n, e)| (n.clone(), e));
        let sliced = slice_entries
            .iter()
            .map(|(k, e)| (String::from_utf8_lossy(k).into_owned(), e));
        for (name, e) in stored.chain(sliced) {
            if !e.slices.is_empty() {
                continue;
            }
            let shard = &shards[e.shard_id as usize];
            if e.offset
                .checked_add(e.size)
                .is_none_or(|end| end > shard.len)
            {
                return Err(CheckpointError::tensor(
                    Corrupt,
                    &shard.path,
                    &name,
                    format!(
                        "needs bytes {}..{} but the file has {} bytes: truncated",
                        e.offset,
                        e.offset.saturating_add(e.size),
                        shard.len
                    ),
                ));
            }
        }
        Ok(BundleReader {
            prefix,
            index,
            entries,
            slice_entries,
            shards,
        })
    }

    /// The entry of a slice's data, by its key.
    pub(super) fn slice_entry(&self, key: &[u8]) -> Option<&BundleEntry> {
        self.slice_entries
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
            .ok()
            .map(|i| &self.slice_entries[i].1)
    }

    /// The file and path of data shard `shard` (checked on open).
    pub(super) fn shard_file(&self, shard: u32) -> (&File, &Path) {
        let s = &self.shards[shard as usize];
        (&s.file, &s.path)
    }

    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// `PREFIX.index`.
    pub fn index_file(&self) -> &Path {
        &self.index
    }

    /// Every tensor's name and entry, in key order (a sliced tensor's
    /// full-name entry; its slices' own entries are not listed).
    pub fn entries(&self) -> &[(String, BundleEntry)] {
        &self.entries
    }

    /// `tf.train.list_variables`: (name, dtype, shape) in key order.
    pub fn list_variables(&self) -> Vec<(String, DType, Vec<usize>)> {
        self.entries
            .iter()
            .map(|(n, e)| (n.clone(), e.dtype, e.shape.clone()))
            .collect()
    }

    pub fn entry(&self, name: &str) -> Option<&BundleEntry> {
        self.entries
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| &self.entries[i].1)
    }

    fn entry_or_err(&self, name: &str) -> Result<&BundleEntry, CheckpointError> {
        self.entry(name).ok_or_else(|| {
            CheckpointError::tensor(Mismatch, &self.index, name, "not in the checkpoint")
        })
    }

    /// Reads tensor `name`'s bytes straight into `dst` (exactly its size)
    /// and checks their CRC.
    pub fn load_into(&self, name: &str, dst: &mut [u8]) -> Result<(), CheckpointError> {
        let e = self.entry_or_err(name)?;
        if !e.slices.is_empty() {
            return self.load_rows_into(name, 0..e.shape[0], dst);
        }
        let shard = &self.shards[e.shard_id as usize];
        if dst.len() as u64 != e.size {
            return Err(CheckpointError::tensor(
                Mismatch,
                &shard.path,
                name,
                format!("has {} bytes, the destination {}", e.size, dst.len()),
            ));
        }
        read_at(&shard.file, dst, e.offset).map_err(|err| {
            CheckpointError::tensor(Io, &shard.path, name, format!("cannot read: {err}"))
        })?;
        let actual = crc::masked_crc32c(dst);
        if actual != e.crc32c {
            return Err(CheckpointError::tensor(
                Corrupt,
                &shard.path,
                name,
                format!(
                    "bytes {}..{} fail their CRC32C check (index says {:#010x}, data gives {actual:#010x}): corrupt",
                    e.offset,
                    e.offset + e.size,
                    e.crc32c
                ),
            ));
        }
        Ok(())
    }

    /// Reads a float32 tensor into `dst` (its element count).
    pub fn load_f32_into(&self, name: &str, dst: &mut [f32]) -> Result<(), CheckpointError> {
        let e = self.entry_or_err(name)?;
        if e.dtype != DType::Float {
            return Err(CheckpointError::tensor(
                Mismatch,
                &self.index,
                name,
                format!("is {}, not float32", e.dtype),
            ));
        }
        self.load_into(name, bytemuck::cast_slice_mut(dst))
    }

    /// Tensor `name`'s value.
    pub fn load(&self, name: &str) -> Result<Tensor, CheckpointError> {
        let e = self.entry_or_err(name)?;
        let mut t = Tensor::zeros(e.dtype, &e.shape);
        match t.bytes_mut() {
            Some(dst) => self.load_into(name, dst)?,
            None => {
                let n = num_elements(&e.shape).unwrap_or(0) * e.dtype.size();
                let mut bytes = vec![0u8; n];
                self.load_into(name, &mut bytes)?;
                t.copy_from_bytes(&bytes);
            }
        }
        Ok(t)
    }

    /// The value of every tensor, in key order.
    pub fn load_all(&self) -> Result<Vec<(String, Tensor)>, CheckpointError> {
        self.entries
            .iter()
            .map(|(n, _)| Ok((n.clone(), self.load(n)?)))
            .collect()
    }
}

/// Checks every sliced tensor's slices against its shape and its slices'
/// entries (present, of its dtype, of the slice's shape).
fn check_slices(
    index: &Path,
    entries: &[(String, BundleEntry)],
    slice_entries: &[(Vec<u8>, BundleEntry)],
) -> Result<(), CheckpointError> {
    for (name, e) in entries {
        for s in &e.slices {
            let corrupt = |m: String| CheckpointError::tensor(Corrupt, index, name, m);
            let bounds = s.bounds(&e.shape).map_err(corrupt)?;
            let key = encode_tensor_name_slice(name, s);
            let found = slice_entries
                .binary_search_by(|(k, _)| k.as_slice().cmp(&key))
                .ok()
                .map(|i| &slice_entries[i].1);
            let Some(se) = found else {
                return Err(corrupt(format!(
                    "the data of slice {} is not in the index",
                    s.text()
                )));
            };
            let shape: Vec<usize> = bounds.iter().map(|b| b.1).collect();
            if se.dtype != e.dtype || se.shape != shape {
                return Err(corrupt(format!(
                    "slice {} is a {} tensor of shape {}, not {} of shape {}",
                    s.text(),
                    se.dtype,
                    shape_string(&se.shape),
                    e.dtype,
                    shape_string(&shape)
                )));
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
pub(super) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(not(unix))]
pub(super) fn read_at(mut f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}
