//! TensorFlow V2 checkpoints: what training keeps, readable by TF and from TF.
//!
//! Owns: [`tensor`] (dtypes and tensor values), [`table`] (the leveldb-style
//! table of the `.index` file), [`bundle`] (TF's tensor bundle: `PREFIX.index`
//! and `PREFIX.data-00000-of-00001`, [`write_bundle`] and [`BundleReader`]),
//! [`slices`] (partitioned variables: TF's sliced entries, their keys, and
//! reading any row range from any slicing), [`sharded`] (a checkpoint
//! written by several processes: one data shard each, then one index),
//! [`state`] (the `checkpoint` state file and [`latest_checkpoint`]),
//! [`manager`] ([`CheckpointManager`]: atomic saves, `max_to_keep`,
//! `keep_checkpoint_every_n_hours`, resume), [`session`] (a session's
//! variables to and from a checkpoint), [`vocab_remap`] (a matrix remapped
//! from an old vocabulary to a new one, `warm_start`'s `VocabInfo`), and [`CheckpointError`] with its
//! [`CheckpointErrorKind`].
//!
//! Invariants: the bytes written equal TF's for the same tensors (the
//! `.index` table and data layout of `tensor_bundle.cc`); every read checks
//! every CRC (table blocks on open, a tensor's bytes on load) and never
//! panics; every error names the file, and the tensor when there is one,
//! and says its kind (not found, corrupt, mismatched, invalid, I/O); a
//! save through the manager never leaves the latest listed checkpoint
//! incomplete, whenever it stops.

pub mod bundle;
pub mod manager;
pub mod session;
pub mod sharded;
pub mod slices;
pub mod state;
pub mod table;
pub mod tensor;
pub mod vocab_remap;

use std::fmt;
use std::path::{Path, PathBuf};

pub use bundle::{
    data_path, index_path, write_bundle, write_partitioned_bundle, BundleEntry, BundleReader,
};
pub use manager::{delete_data_files, CheckpointManager, Snapshot};
pub use session::Selection;
pub use sharded::{write_shard, write_sharded_index, ShardEntries, ShardSlice};
pub use slices::{Partitions, TensorSlice};
pub use state::{latest_checkpoint, CheckpointState};
pub use tensor::{DType, Tensor, TensorRef};

/// What kind of [`CheckpointError`]: a checkpoint that is not there, one
/// whose bytes are damaged, one that does not hold what is asked, or a
/// failing file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointErrorKind {
    /// A file of the checkpoint does not exist: the index (a wrong prefix),
    /// a data shard, or the checkpoint the state file names.
    NotFound,
    /// The bytes are not a valid checkpoint: truncated, a CRC32C that does
    /// not match, a malformed index, entry, header or state file.
    Corrupt,
    /// A valid checkpoint that does not hold what is asked: a tensor that is
    /// not in it, or is of another dtype or shape than the model's variable
    /// or the destination; a saved input position the source cannot take.
    Mismatch,
    /// The tensors given to save cannot make a checkpoint (an empty or a
    /// repeated name).
    Invalid,
    /// Reading or writing failed otherwise (permissions, a full disk).
    Io,
}

/// A checkpoint error: its kind, the file, the tensor when there is one,
/// what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointError {
    pub kind: CheckpointErrorKind,
    pub file: PathBuf,
    pub tensor: Option<String>,
    pub message: String,
}

impl CheckpointError {
    pub fn new(
        kind: CheckpointErrorKind,
        file: impl AsRef<Path>,
        message: impl Into<String>,
    ) -> CheckpointError {
        CheckpointError {
            kind,
            file: file.as_ref().to_path_buf(),
            tensor: None,
            message: message.into(),
        }
    }

    /// An error about tensor `tensor` of `file`.
    pub fn tensor(
        kind: CheckpointErrorKind,
        file: impl AsRef<Path>,
        tensor: &str,
        message: impl Into<String>,
    ) -> CheckpointError {
        CheckpointError {
            tensor: Some(tensor.to_string()),
            ..CheckpointError::new(kind, file, message)
        }
    }

    /// An I/O error while doing `what` on `file`: [`CheckpointErrorKind::NotFound`]
    /// when the file does not exist, else [`CheckpointErrorKind::Io`].
    pub fn io(file: impl AsRef<Path>, what: &str, e: &std::io::Error) -> CheckpointError {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            CheckpointErrorKind::NotFound
        } else {
            CheckpointErrorKind::Io
        };
        CheckpointError::new(kind, file, format!("cannot {what}: {e}"))
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if let Some(t) = &self.tensor {
            write!(f, "tensor `{t}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for CheckpointError {}
