//! Where a run's variables start: a warm start from another checkpoint, and
//! resuming from the run's own checkpoint directory.
//!
//! Owns: [`checkpoint_prefix`] (what a checkpoint path names: a prefix, its
//! `.index` file, or a directory's latest checkpoint — for `run`,
//! `predict`, `export`, `inspect` and [`Model::load_checkpoint`](crate::Model::load_checkpoint)),
//! [`warm_start`] (TF's `init_from_checkpoint`: the assignment map resolved
//! by the runtime's `config::warm_start::resolve`, its parameters set by the
//! one checkpoint restore, `Session::restore_selected`; TF's `warm_start`:
//! `config::warm_start_settings::plan`, whole tensors the same way and each
//! vocabulary-backed variable remapped by `checkpoint::vocab_remap`), and `resume`
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

use specc_runtime::abi::VarRole;
use specc_runtime::checkpoint::vocab_remap::{generate_vocab_remapping, read_vocab, remap_matrix};
use specc_runtime::checkpoint::{
    latest_checkpoint, BundleReader, CheckpointError, CheckpointErrorKind, CheckpointManager,
    Selection,
};
use specc_runtime::config::record::RunRecord;
use specc_runtime::config::warm_start::{resolve, Named};
use specc_runtime::config::warm_start_settings::{plan, Remap, Variable};
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

/// Sets the variables `ws` names from its checkpoint — TF's
/// `init_from_checkpoint` (an assignment map) or `warm_start` (its
/// settings: whole tensors and vocabulary remaps) applied to a session.
/// Returns how many variables were set and the checkpoint's prefix; a
/// missing tensor, a shape mismatch or an unreadable vocabulary is an
/// error naming them, before any variable is written.
pub fn warm_start(session: &mut Session, ws: &WarmStart) -> Result<(usize, PathBuf), Error> {
    let api = if ws.settings.is_some() {
        "warm_start"
    } else {
        "init_from_checkpoint"
    };
    let fail = |m: String| Error::Checkpoint(format!("{api}: {m}"));
    let what = ws.path.display().to_string();
    let prefix = checkpoint_prefix(&ws.path).map_err(|e| fail(e.to_string()))?;
    let reader = BundleReader::open(&prefix).map_err(|e| fail(e.to_string()))?;
    let dims = |s: &[usize]| -> Vec<u64> { s.iter().map(|&d| d as u64).collect() };
    let tensor_shapes: Vec<(String, Vec<u64>)> = reader
        .list_variables()
        .into_iter()
        .map(|(n, _, s)| (n, dims(&s)))
        .collect();
    let tensors: Vec<Named<'_>> = tensor_shapes
        .iter()
        .map(|(n, s)| Named { name: n, shape: s })
        .collect();
    // The variables a checkpoint holds (TF's GLOBAL_VARIABLES but the
    // global step), in the layout's order.
    let vars: Vec<(String, Vec<u64>, bool)> = session
        .layout
        .vars
        .iter()
        .filter_map(|v| {
            let trainable = match &v.kind {
                VarRole::Param { trainable } => *trainable,
                VarRole::Slot { .. } | VarRole::Optimizer | VarRole::Average { .. } => false,
                _ => return None,
            };
            Some((v.name.clone(), dims(&v.shape), trainable))
        })
        .collect();
    let Some(settings) = &ws.settings else {
        let params: Vec<Named<'_>> = vars
            .iter()
            .filter(|v| session_param(session, &v.0))
            .map(|(n, s, _)| Named { name: n, shape: s })
            .collect();
        let assignments = resolve(&ws.assignment_map, &tensors, &params, &what)
            .map_err(|e| Error::Checkpoint(e.to_string()))?;
        session
            .restore_selected(&reader, Selection::Assignments(&assignments))
            .map_err(|e| fail(e.to_string()))?;
        return Ok((assignments.len(), prefix));
    };
    let variables: Vec<Variable<'_>> = vars
        .iter()
        .map(|(n, s, t)| Variable {
            name: n,
            shape: s,
            trainable: *t,
        })
        .collect();
    let plan = plan(settings, &variables, &tensors, &what)
        .map_err(|e| Error::Checkpoint(e.to_string()))?;
    // Every remap is computed before anything is written.
    let mut remapped = Vec::with_capacity(plan.remaps.len());
    for r in &plan.remaps {
        let values = remap(&reader, session, r).map_err(|m| fail(format!("`{}`: {m}", r.param)))?;
        remapped.push((r.param.as_str(), values));
    }
    session
        .restore_selected(&reader, Selection::Assignments(&plan.assignments))
        .map_err(|e| fail(e.to_string()))?;
    for (param, values) in remapped {
        if let Some(dst) = session.var_mut(param) {
            dst.copy_from_slice(&values);
        }
    }
    Ok((plan.len(), prefix))
}

/// Whether `name` is a parameter of the session (what
/// `init_from_checkpoint` assigns).
fn session_param(session: &Session, name: &str) -> bool {
    session
        .layout
        .vars
        .iter()
        .any(|v| v.name == name && matches!(v.kind, VarRole::Param { .. }))
}

/// The new value of `r.param`: the checkpoint's tensor remapped from its
/// old vocabulary to the new one (`checkpoint::vocab_remap`).
fn remap(reader: &BundleReader, session: &Session, r: &Remap) -> Result<Vec<f32>, String> {
    let v = &r.vocab;
    let var = session
        .layout
        .vars
        .iter()
        .find(|x| x.name == r.param)
        .ok_or_else(|| format!("no variable `{}`", r.param))?;
    let (_, _, old_shape) = reader
        .list_variables()
        .into_iter()
        .find(|(n, _, _)| *n == r.tensor)
        .ok_or_else(|| format!("no tensor `{}`", r.tensor))?;
    let mut old = vec![0f32; old_shape.iter().product()];
    reader
        .load_f32_into(&r.tensor, &mut old)
        .map_err(|e| e.to_string())?;
    let new = read_vocab(&v.new_vocab, Some(v.new_vocab_size), "new_vocab")?;
    // TF remaps columns against the whole old vocabulary (it passes no
    // old_vocab_size for axis 1).
    let old_size = if v.axis == 0 { v.old_vocab_size } else { None };
    let old_vocab = read_vocab(&v.old_vocab, old_size, "old_vocab")?;
    let (remapping, _) = generate_vocab_remapping(&new, &old_vocab)
        .map_err(|e| format!("old_vocab {}: {e}", v.old_vocab.display()))?;
    let two = |s: &[usize]| -> Result<[usize; 2], String> {
        s.try_into().map_err(|_| format!("{:?} is not a matrix", s))
    };
    remap_matrix(
        &old,
        two(&old_shape)?,
        two(&var.shape)?,
        v.axis,
        &remapping,
        v.num_oov_buckets as usize,
        v.backup_initializer.as_ref(),
    )
    .map_err(|e| format!("tensor `{}` in the checkpoint: {e}", r.tensor))
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
    // Partitioned variables are saved in slices, as TF saves them.
    let manager = CheckpointManager::new(dir, keep, c.keep_every_n_hours)
        .map_err(|e| Error::Checkpoint(e.to_string()))?
        .with_partitions(session.checkpoint_partitions());
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
