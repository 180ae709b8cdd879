//! Where a run's variables start: a warm start from another checkpoint, and
//! resuming from the run's own checkpoint directory.
//!
//! Owns: [`checkpoint_prefix`] (what a checkpoint path names: a prefix, its
//! `.index` file, or a directory's latest checkpoint — for `run`,
//! `predict`, `export`, `inspect` and [`Model::load_checkpoint`](crate::Model::load_checkpoint)),
//! [`warm_start`] (TF's `init_from_checkpoint`: the assignment map resolved
//! by the runtime's `config::warm_start::resolve`, its parameters set by the
//! one checkpoint restore, `Session::restore_selected`), and `resume`
//! (TF's `MonitoredTrainingSession` with a `checkpoint_dir` that holds a
//! checkpoint: every variable, the global step and the batch position, then
//! the directory's `run.yaml` checked and written).
//!
//! Invariants: a refused restore changes nothing in the session (every
//! tensor is checked before any is loaded); a resume refuses a variable of
//! another shape (naming it and both shapes) before it reads `run.yaml`,
//! then refuses a changed spec and warns about changed data; a resumed run
//! continues to the same bits as one that never stopped (a replica's shard
//! of a stream, which saves no position, reads past the shares of the
//! steps done).

use std::path::{Path, PathBuf};

use specc_runtime::checkpoint::{
    latest_checkpoint, BundleReader, CheckpointError, CheckpointErrorKind, CheckpointManager,
    Selection,
};
use specc_runtime::config::record::RunRecord;
use specc_runtime::config::warm_start::{resolve, Named};
use specc_runtime::config::{CheckpointConfig, WarmStart};
use specc_runtime::session::Session;
use specc_runtime::train::{restore_latest, Restored};

use super::data::Batches;
use super::hooks::Watch;
use super::settings::{record, Resolved};
use super::Error;

/// The checkpoint `path` names: a prefix (`DIR/model.ckpt-100`), its
/// `.index` file, or a directory (its latest checkpoint, by its
/// `checkpoint` state file).
pub fn checkpoint_prefix(path: &Path) -> Result<PathBuf, CheckpointError> {
    if path.is_dir() {
        return latest_checkpoint(path)?.ok_or_else(|| {
            CheckpointError::new(
                CheckpointErrorKind::NotFound,
                path,
                "has no checkpoint: a directory without a `checkpoint` state file (give a checkpoint prefix such as DIR/model.ckpt-100)",
            )
        });
    }
    let s = path.to_string_lossy();
    Ok(match s.strip_suffix(".index") {
        Some(p) if path.is_file() => PathBuf::from(p),
        _ => path.to_path_buf(),
    })
}

/// Sets the parameters `ws`'s assignment map names from its checkpoint —
/// TF's `init_from_checkpoint` applied to a session. Returns how many
/// parameters were set and the checkpoint's prefix; a missing tensor or a
/// shape mismatch is an error naming both, before any parameter is written.
pub fn warm_start(session: &mut Session, ws: &WarmStart) -> Result<(usize, PathBuf), Error> {
    let fail = |m: String| Error::Checkpoint(format!("init_from_checkpoint: {m}"));
    let what = ws.path.display().to_string();
    let prefix = checkpoint_prefix(&ws.path).map_err(|e| fail(e.to_string()))?;
    let reader = BundleReader::open(&prefix).map_err(|e| fail(e.to_string()))?;
    let dims = |s: &[usize]| -> Vec<u64> { s.iter().map(|&d| d as u64).collect() };
    let tensor_shapes: Vec<(String, Vec<u64>)> = reader
        .list_variables()
        .into_iter()
        .map(|(n, _, s)| (n, dims(&s)))
        .collect();
    let param_shapes: Vec<(String, Vec<u64>)> = session
        .layout
        .vars
        .iter()
        .filter(|v| matches!(v.kind, specc_runtime::abi::VarRole::Param { .. }))
        .map(|v| (v.name.clone(), dims(&v.shape)))
        .collect();
    fn named(v: &[(String, Vec<u64>)]) -> Vec<Named<'_>> {
        v.iter().map(|(n, s)| Named { name: n, shape: s }).collect()
    }
    let assignments = resolve(
        &ws.assignment_map,
        &named(&tensor_shapes),
        &named(&param_shapes),
        &what,
    )
    .map_err(|e| Error::Checkpoint(e.to_string()))?;
    session
        .restore_selected(&reader, Selection::Assignments(&assignments))
        .map_err(|e| fail(e.to_string()))?;
    Ok((assignments.len(), prefix))
}

/// What [`resume`] found and set up in a checkpoint directory.
pub(crate) struct Resume {
    /// The checkpoint the run continues from, if the directory held one.
    pub restored: Option<Restored>,
    /// The directory's manager, for the run's own saves.
    pub manager: CheckpointManager,
}

/// Resumes from the latest checkpoint of `dir` (the session, the batch
/// position), checks the directory's `run.yaml` against this run and
/// writes this run's record (the leader only); a replica's shard of a
/// stream reads past its shares of the steps done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resume(
    c: &CheckpointConfig,
    dir: &Path,
    resolved: &Resolved,
    spec: &Path,
    session: &mut Session,
    batches: &mut Batches<'_>,
    leader: bool,
    watch: &Watch<'_>,
) -> Result<Resume, Error> {
    let keep = (c.keep > 0).then_some(c.keep as usize);
    let manager = CheckpointManager::new(dir, keep, c.keep_every_n_hours)
        .map_err(|e| Error::Checkpoint(e.to_string()))?;
    // A variable of another shape is refused first (naming it and both
    // shapes); then `run.yaml`, the record of the run (spec, its hash,
    // overrides, data), refuses a changed spec and warns about changed
    // data.
    let restored = restore_latest(dir, session, batches)
        .map_err(|e| Error::Checkpoint(format!("cannot resume from {}: {e}", dir.display())))?;
    let record = record(resolved, spec, env!("CARGO_PKG_VERSION")).map_err(Error::Data)?;
    if restored.is_some() && leader {
        if let Some(old) = RunRecord::read(dir).map_err(Error::Checkpoint)? {
            let check = old.check_resume(&record, dir).map_err(Error::Checkpoint)?;
            for w in check.warnings {
                watch.warning(&w);
            }
        }
    }
    if leader {
        record.write(dir).map_err(Error::Checkpoint)?;
    }
    if let Some(r) = &restored {
        // A replica's shard of a stream has no saved position (each
        // replica's differs; replica 0 saves): every step took one
        // share from each replica, so each skips as many shares.
        let sharded = matches!(batches, Batches::Sharded(_));
        if sharded {
            for _ in 0..r.global_step.max(0) {
                if session
                    .fill(batches)
                    .map_err(|e| Error::Data(e.to_string()))?
                    == 0
                {
                    break;
                }
            }
        }
        if leader {
            watch.note(&format!(
                "resumed from {} at global step {}{}",
                r.prefix.display(),
                r.global_step,
                if sharded {
                    " (each replica read past its shares of the steps done)"
                } else if r.position_restored {
                    ""
                } else {
                    " (the checkpoint has no batch position: the data starts over)"
                }
            ));
        }
    }
    Ok(Resume { restored, manager })
}
