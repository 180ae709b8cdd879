//! TensorFlow V2 checkpoints: what training keeps, readable by TF and from TF.
//!
//! Owns: [`tensor`] (dtypes and tensor values), [`table`] (the leveldb-style
//! table of the `.index` file), [`bundle`] (TF's tensor bundle: `PREFIX.index`
//! and `PREFIX.data-00000-of-00001`, [`write_bundle`] and [`BundleReader`]),
//! [`state`] (the `checkpoint` state file and [`latest_checkpoint`]),
//! [`manager`] ([`CheckpointManager`]: atomic saves, `max_to_keep`,
//! `keep_checkpoint_every_n_hours`, resume), [`session`] (a session's
//! variables to and from a checkpoint), and [`CheckpointError`].
//!
//! Invariants: the bytes written equal TF's for the same tensors (the
//! `.index` table and data layout of `tensor_bundle.cc`); every read checks
//! every CRC (table blocks on open, a tensor's bytes on load) and never
//! panics; every error names the file, and the tensor when there is one; a
//! save through the manager never leaves the latest listed checkpoint
//! incomplete, whenever it stops.

pub mod bundle;
pub mod manager;
pub mod session;
pub mod state;
pub mod table;
pub mod tensor;

use std::fmt;
use std::path::{Path, PathBuf};

pub use bundle::{data_path, index_path, write_bundle, BundleEntry, BundleReader};
pub use manager::{CheckpointManager, Snapshot};
pub use session::Selection;
pub use state::{latest_checkpoint, CheckpointState};
pub use tensor::{DType, Tensor, TensorRef};

/// A checkpoint error: the file, the tensor when there is one, what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointError {
    pub file: PathBuf,
    pub tensor: Option<String>,
    pub message: String,
}

impl CheckpointError {
    pub fn new(file: impl AsRef<Path>, message: impl Into<String>) -> CheckpointError {
        CheckpointError {
            file: file.as_ref().to_path_buf(),
            tensor: None,
            message: message.into(),
        }
    }

    pub fn tensor(
        file: impl AsRef<Path>,
        tensor: &str,
        message: impl Into<String>,
    ) -> CheckpointError {
        CheckpointError {
            tensor: Some(tensor.to_string()),
            ..CheckpointError::new(file, message)
        }
    }

    /// An I/O error while doing `what` on `file`.
    pub fn io(file: impl AsRef<Path>, what: &str, e: &std::io::Error) -> CheckpointError {
        CheckpointError::new(file, format!("cannot {what}: {e}"))
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
