//! Saving checkpoints during training: TF's `tf.train.CheckpointManager`
//! (and `tf.compat.v1.train.Saver`'s bookkeeping) over a directory.
//!
//! Owns: [`CheckpointManager`] (`save(step, tensors)` to `DIR/model.ckpt-STEP`,
//! `max_to_keep`, `keep_checkpoint_every_n_hours`, picking up an existing
//! state file to resume) and [`Snapshot`] (an owned copy of the tensors, with
//! buffers reused from save to save, for saving from another thread).
//!
//! Invariants (crash safety): a save writes the data shard and the index to
//! temporary files in the directory, fsyncs them, renames them into place
//! and fsyncs the directory; only then is the state file rewritten the same
//! way (temporary file, fsync, rename, fsync), and only after that are the
//! checkpoints that fell out of `max_to_keep` deleted. Whenever the process
//! stops, the state file names a complete checkpoint: the new one or the
//! previous one. A failed save removes its temporary files, leaves the
//! state file and the manager as they were, and names the file (and tensor).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::bundle::{data_path, index_path, write_files, LimitedWriter};
use super::sharded::{write_sharded_index, ShardEntries};
use super::slices::Partitions;
use super::state::{CheckpointState, STATE_FILE};
use super::tensor::{DType, TensorRef};
use super::CheckpointError;
use crate::io::atomic::{self, AtomicError, AtomicFile};

/// The checkpoints' name (`DIR/model.ckpt-STEP`, TF's default).
const BASENAME: &str = "model.ckpt";

/// An owned copy of the tensors to save: capture it on the training thread
/// (cheap: one memcpy per tensor, no allocation once the sizes are known),
/// hand it with the manager to a background thread that saves it.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    tensors: Vec<(String, DType, Vec<usize>, Vec<u8>)>,
}

impl Snapshot {
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// Copies `tensors` in, reusing this snapshot's buffers.
    pub fn capture<S: AsRef<str>>(&mut self, tensors: &[(S, TensorRef<'_>)]) {
        self.tensors.truncate(tensors.len());
        for (i, (name, t)) in tensors.iter().enumerate() {
            if i == self.tensors.len() {
                self.tensors
                    .push((String::new(), t.dtype, Vec::new(), Vec::new()));
            }
            let slot = &mut self.tensors[i];
            if slot.0 != name.as_ref() {
                slot.0.clear();
                slot.0.push_str(name.as_ref());
            }
            slot.1 = t.dtype;
            if slot.2 != t.shape {
                slot.2.clear();
                slot.2.extend_from_slice(t.shape);
            }
            slot.3.clear();
            slot.3.extend_from_slice(t.bytes());
        }
    }

    /// Views of the captured tensors, for [`CheckpointManager::save`].
    pub fn tensors(&self) -> Vec<(&str, TensorRef<'_>)> {
        self.tensors
            .iter()
            .filter_map(|(n, d, s, b)| Some((n.as_str(), TensorRef::from_bytes(*d, s, b).ok()?)))
            .collect()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.tensors.iter().map(|t| t.3.len()).sum()
    }
}

/// Seconds since the epoch, as TF's `time.time()`.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// TF's `tf.train.CheckpointManager` over `directory`, saving
/// `directory/model.ckpt-STEP`.
#[derive(Debug)]
pub struct CheckpointManager {
    dir: PathBuf,
    basename: String,
    max_to_keep: Option<usize>,
    keep_checkpoint_every_n_hours: Option<f64>,
    /// The checkpoints that `max_to_keep` may delete, oldest first: (prefix
    /// as the state file has it, save time).
    maybe_delete: Vec<(String, f64)>,
    latest: Option<String>,
    last_preserved_timestamp: f64,
    write_limit: Option<u64>,
    /// The tensors saved in slices (partitioned variables).
    partitions: Partitions,
    /// The checkpoints the last save deleted (`max_to_keep`), as the state
    /// file named them.
    swept: Vec<String>,
}

impl CheckpointManager {
    /// A manager of `dir` (created if missing). An existing state file is
    /// picked up: its checkpoints are the ones `max_to_keep` counts
    /// (`None`: keep all), and its latest is where training resumes.
    pub fn new(
        dir: impl AsRef<Path>,
        max_to_keep: Option<usize>,
        keep_checkpoint_every_n_hours: Option<f64>,
    ) -> Result<CheckpointManager, CheckpointError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| CheckpointError::io(&dir, "create the checkpoint directory", &e))?;
        CheckpointManager::sweep_temporaries(&dir);
        let mut m = CheckpointManager {
            basename: BASENAME.to_string(),
            max_to_keep,
            keep_checkpoint_every_n_hours,
            maybe_delete: Vec::new(),
            latest: None,
            last_preserved_timestamp: now(),
            write_limit: None,
            partitions: Partitions::new(),
            swept: Vec::new(),
            dir,
        };
        if let Some(st) = CheckpointState::read(&m.dir)? {
            for (i, p) in st.all_model_checkpoint_paths.iter().enumerate() {
                let ts = match st.all_model_checkpoint_timestamps.get(i) {
                    Some(&t) => t,
                    None => modified(&index_path(&CheckpointState::resolve(&m.dir, p))),
                };
                m.maybe_delete.push((p.clone(), ts));
            }
            if let Some(t) = st.last_preserved_timestamp {
                m.last_preserved_timestamp = t;
            }
            m.latest = Some(st.model_checkpoint_path);
        }
        Ok(m)
    }

    /// Saves to `directory/BASENAME-STEP` instead of `model.ckpt-STEP`.
    pub fn with_basename(mut self, basename: &str) -> CheckpointManager {
        self.basename = basename.to_string();
        self
    }

    /// Saves the tensors `partitions` names in slices, as TF saves a
    /// partitioned variable ([`super::slices`]); the session's are
    /// [`Session::checkpoint_partitions`](crate::session::Session::checkpoint_partitions).
    pub fn with_partitions(mut self, partitions: Partitions) -> CheckpointManager {
        self.partitions = partitions;
        self
    }

    /// The prefix a save at `step` writes, `directory/model.ckpt-STEP`.
    pub fn prefix_for(&self, step: i64) -> PathBuf {
        self.dir.join(format!("{}-{step}", self.basename))
    }

    /// Test hook: every later save fails with "no space left on device"
    /// after `limit` bytes (data and index together).
    #[doc(hidden)]
    pub fn set_write_limit(&mut self, limit: Option<u64>) {
        self.write_limit = limit;
    }

    pub fn directory(&self) -> &Path {
        &self.dir
    }

    /// The latest checkpoint's prefix (where training resumes).
    pub fn latest_checkpoint(&self) -> Option<PathBuf> {
        self.latest
            .as_deref()
            .map(|p| CheckpointState::resolve(&self.dir, p))
    }

    /// The checkpoints the last save deleted (fell out of `max_to_keep`),
    /// as the state file named them (`model.ckpt-STEP`, relative to the
    /// directory): what processes that wrote data files of them elsewhere
    /// (a sharded save without a shared file system) delete of theirs.
    pub fn swept(&self) -> &[String] {
        &self.swept
    }

    /// The checkpoints kept and listed, oldest first.
    pub fn checkpoints(&self) -> Vec<PathBuf> {
        self.maybe_delete
            .iter()
            .map(|(p, _)| CheckpointState::resolve(&self.dir, p))
            .collect()
    }

    /// Saves `tensors` as `directory/model.ckpt-STEP` (atomically, see the
    /// module doc), lists it as the latest, and deletes what `max_to_keep`
    /// lets go. Returns the prefix.
    pub fn save<S: AsRef<str>>(
        &mut self,
        step: i64,
        tensors: &[(S, TensorRef<'_>)],
    ) -> Result<PathBuf, CheckpointError> {
        self.save_at(step, tensors, now())
    }

    /// [`CheckpointManager::save`] with the save time given (seconds since
    /// the epoch), for tests of `keep_checkpoint_every_n_hours`.
    #[doc(hidden)]
    pub fn save_at<S: AsRef<str>>(
        &mut self,
        step: i64,
        tensors: &[(S, TensorRef<'_>)],
        timestamp: f64,
    ) -> Result<PathBuf, CheckpointError> {
        let name = format!("{}-{step}", self.basename);
        let prefix = self.dir.join(&name);
        let (index, data) = (index_path(&prefix), data_path(&prefix, 0, 1));
        let mut index_file = AtomicFile::create(&index).map_err(checkpoint_error)?;
        let mut data_file = AtomicFile::create(&data).map_err(checkpoint_error)?;
        let (tmp_index, tmp_data) = (
            index_file.temp_path().to_path_buf(),
            data_file.temp_path().to_path_buf(),
        );
        let mut bundle_bytes = 0;
        // The data shard, then the index, renamed into place; the directory
        // synced once, after both (dropped on failure, the temporaries go).
        let written = write_files(
            &mut index_file,
            &tmp_index,
            &mut data_file,
            &tmp_data,
            tensors,
            &self.partitions,
            self.write_limit,
        )
        .map(|n| bundle_bytes = n)
        .and_then(|()| data_file.persist().map_err(checkpoint_error))
        .and_then(|()| index_file.persist().map_err(checkpoint_error))
        .and_then(|()| sync_dir(&self.dir));
        if let Err(mut e) = written {
            // Name the file being saved; say which temporary failed.
            for (tmp, file) in [(&tmp_index, &index), (&tmp_data, &data)] {
                if e.file == *tmp {
                    e.file = file.clone();
                    e.message = format!("{} (writing it as {})", e.message, tmp.display());
                }
            }
            return Err(e);
        }
        self.list(&name, timestamp, bundle_bytes)?;
        Ok(prefix)
    }

    /// The last step of a checkpoint several processes write (TF's sharded
    /// save; see [`super::sharded`]): every process has written its data
    /// file with [`write_shard`](super::write_shard)`(self.prefix_for(step),
    /// rank, N, ..)` and sent the entries here; this writes the index from
    /// them (`shards[i]`: shard `i`'s), then lists the checkpoint as the
    /// latest and deletes what `max_to_keep` lets go, as
    /// [`CheckpointManager::save`] does. Returns the prefix.
    pub fn save_sharded(
        &mut self,
        step: i64,
        shards: &[ShardEntries],
    ) -> Result<PathBuf, CheckpointError> {
        let name = format!("{}-{step}", self.basename);
        let prefix = self.dir.join(&name);
        write_sharded_index(&prefix, shards)?;
        sync_dir(&self.dir)?;
        self.list(&name, now(), 0)?;
        Ok(prefix)
    }

    /// Lists the complete checkpoint `name` as the latest (the state file,
    /// atomically), then deletes what `max_to_keep` lets go.
    fn list(
        &mut self,
        name: &str,
        timestamp: f64,
        bundle_bytes: u64,
    ) -> Result<(), CheckpointError> {
        self.swept.clear();
        let name = name.to_string();
        // The new state, then the sweep of max_to_keep (TF's `_sweep`).
        let mut maybe_delete = self.maybe_delete.clone();
        maybe_delete.retain(|(p, _)| *p != name);
        maybe_delete.push((name.clone(), timestamp));
        let mut last_preserved = self.last_preserved_timestamp;
        let mut delete = Vec::new();
        if let Some(max) = self.max_to_keep {
            while maybe_delete.len() > max {
                let (p, ts) = maybe_delete.remove(0);
                match self.keep_checkpoint_every_n_hours {
                    Some(h) if ts - h * 3600.0 >= last_preserved => last_preserved = ts,
                    _ => delete.push(p),
                }
            }
        }
        let state = CheckpointState {
            model_checkpoint_path: name.clone(),
            all_model_checkpoint_paths: maybe_delete.iter().map(|(p, _)| p.clone()).collect(),
            all_model_checkpoint_timestamps: maybe_delete.iter().map(|&(_, t)| t).collect(),
            last_preserved_timestamp: Some(last_preserved),
        };
        self.write_state(
            &state,
            self.write_limit.map(|l| l.saturating_sub(bundle_bytes)),
        )?;
        self.maybe_delete = maybe_delete;
        self.last_preserved_timestamp = last_preserved;
        self.latest = Some(name);
        delete.retain(|p| p != self.latest.as_deref().unwrap_or_default());
        for p in &delete {
            delete_checkpoint(&CheckpointState::resolve(&self.dir, p));
        }
        self.swept = delete;
        Ok(())
    }

    /// Removes the temporary files a killed save left in the directory
    /// (`NAME.tmpPID-N` of its checkpoints and state file, never listed in
    /// the state file; best effort). Only its own: another writer's in the
    /// same directory (`run.yaml`, written by the leader while every replica
    /// opens its manager) is left alone.
    fn sweep_temporaries(dir: &Path) {
        atomic::sweep_temporaries(dir, BASENAME);
        atomic::sweep_temporaries(dir, STATE_FILE);
    }

    fn write_state(
        &mut self,
        state: &CheckpointState,
        limit: Option<u64>,
    ) -> Result<(), CheckpointError> {
        let file = self.dir.join(STATE_FILE);
        atomic::write_atomic(&file, |f| {
            let tmp = f.temp_path().to_path_buf();
            LimitedWriter::new(f, limit)
                .write_all(state.to_text().as_bytes())
                .map_err(|e| CheckpointError::io(&tmp, "write", &e))
        })
    }
}

fn modified(p: &Path) -> f64 {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
        .unwrap_or_else(now)
}

/// A failed step of an atomic write, as a checkpoint error naming its file.
fn checkpoint_error(e: AtomicError) -> CheckpointError {
    CheckpointError::io(&e.path, e.step, &e.error)
}

impl From<AtomicError> for CheckpointError {
    fn from(e: AtomicError) -> CheckpointError {
        checkpoint_error(e)
    }
}

/// Makes the renames in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), CheckpointError> {
    atomic::sync_dir(dir).map_err(|e| CheckpointError::io(dir, "sync the directory", &e))
}

/// Deletes a checkpoint's index and data shards (what is missing is skipped).
fn delete_checkpoint(prefix: &Path) {
    let _ = std::fs::remove_file(index_path(prefix));
    delete_data_files(prefix);
}

/// Deletes the data files of the checkpoint at `prefix` in its directory,
/// `PREFIX.data-*` whatever their shard counts, not temporaries being
/// written (what is missing is skipped; best effort).
pub fn delete_data_files(prefix: &Path) {
    let (Some(dir), Some(name)) = (prefix.parent(), prefix.file_name()) else {
        return;
    };
    let mut shard_prefix = name.to_os_string();
    shard_prefix.push(".data-");
    let shard_prefix = shard_prefix.to_string_lossy().into_owned();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n.starts_with(&shard_prefix) && !n.contains(".tmp") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}
