//! Checkpoints of a run whose tables are sharded across replicas
//! ([`super::sharded`]): every replica writes its own rows, as TF's
//! parameter servers write a sharded checkpoint.
//!
//! Owns: [`ShardedSaverHook`], the checkpoint hook of such a run. On every
//! step replica 0 says whether it saves (its timer may count seconds, which
//! the replicas do not share). A save writes one data file per replica,
//! `PREFIX.data-<rank>-of-<replicas>`:
//! - every replica's file holds its partitions of each sharded table, its
//!   slots and moving average, one slice per partition (TF's
//!   `save_slice_info`);
//! - replica 0's file also holds every replicated variable, the global
//!   step and the batch order.
//!
//! Then replica 0, with every replica's entries, writes `PREFIX.index` (TF's
//! `MergeBundles`) and lists the checkpoint in the state file. It deletes
//! the checkpoints that fell out of `max_to_keep` (TF's `_sweep`) and tells
//! the others which, and each of them deletes its data files of those in
//! its own directory: without a shared file system, no other process can.
//!
//! Invariants: every replica installs the hook when the run saves
//! checkpoints, and calls the collectives in the same order (one broadcast
//! a step; a save's prefix, its outcome, its entries and the checkpoints
//! swept, which every replica learns from replica 0's manager, the one
//! state there is); a replica deletes only checkpoints the state file no
//! longer lists, after replica 0 has written that state; no replica holds
//! more than its own rows; a checkpoint is listed only when every replica
//! wrote its file, so a failed save leaves the last good one the latest; its
//! tensors are the logical ones, so a run resumes from it with any number of
//! replicas, or in one process.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::checkpoint_saver::BATCH_ORDER;
use super::hooks::{Hook, RunContext, StepValues};
use super::replicas::Collective;
use super::sharded::Ownership;
use super::timer::Timer;
use super::TrainError;
use crate::checkpoint::session::GLOBAL_STEP;
use crate::checkpoint::{delete_data_files, write_shard, CheckpointManager, ShardSlice, TensorRef};
use crate::session::Session;

/// What is told of each checkpoint written.
pub type Report<'r> = Box<dyn FnMut(&Path) + 'r>;

/// Replica 0's part: the manager that lists the checkpoints, its timer, and
/// who is told of each one written.
pub struct Leader<'r> {
    pub manager: CheckpointManager,
    pub timer: Timer,
    pub report: Option<Report<'r>>,
}

/// The checkpoint hook of a run with sharded tables (see the module doc).
pub struct ShardedSaverHook<'r> {
    comm: Rc<dyn Collective>,
    /// Replica 0's part (`None` on the others).
    leader: Option<Leader<'r>>,
    /// The global step of the last save.
    saved_step: Option<i64>,
    /// The last checkpoint written (replica 0).
    pub last_saved: Option<PathBuf>,
    /// Where a replica other than 0 writes its data files: its checkpoint
    /// directory (on its machine; `None`: replica 0's directory).
    dir: Option<PathBuf>,
}

impl<'r> ShardedSaverHook<'r> {
    /// `leader` is replica 0's part (and `None` on every other replica).
    pub fn new(comm: Rc<dyn Collective>, leader: Option<Leader<'r>>) -> Self {
        ShardedSaverHook {
            comm,
            leader,
            saved_step: None,
            last_saved: None,
            dir: None,
        }
    }

    /// A replica other than 0 writes its data files into `dir`, its own
    /// checkpoint directory (the run's on its machine; a test's own),
    /// instead of the path of replica 0's.
    pub fn with_directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Where this replica writes its part of the checkpoint replica 0
    /// names `prefix`.
    fn local_prefix(&self, prefix: &Path) -> PathBuf {
        match (&self.dir, &self.leader, prefix.file_name()) {
            (Some(dir), None, Some(name)) => dir.join(name),
            _ => prefix.to_path_buf(),
        }
    }

    fn save(&mut self, ctx: &RunContext<'_>) -> Result<(), TrainError> {
        let step = ctx.global_step();
        if self.saved_step == Some(step) {
            return Ok(());
        }
        let (rank, n) = (self.comm.rank(), self.comm.replicas());
        // Where: replica 0's manager names the checkpoint.
        let prefix = self
            .leader
            .as_ref()
            .map(|l| l.manager.prefix_for(step))
            .unwrap_or_default();
        let prefix = PathBuf::from(broadcast_text(&*self.comm, &prefix.to_string_lossy()));
        let position = if rank == 0 {
            ctx.source_position()
        } else {
            None
        };
        let local = self.local_prefix(&prefix);
        let written = write_part(ctx.session(), rank, n, &local, step, position.as_deref());
        // Every replica's outcome and entries' size, then the entries.
        let entries = written.as_ref().map(Vec::as_slice).unwrap_or(&[]);
        let mut outcome = vec![0u32; 2 * n];
        let counts = vec![2i32; n];
        let displs: Vec<i32> = (0..n as i32).map(|r| 2 * r).collect();
        let mine = [u32::from(written.is_ok()), entries.len() as u32];
        self.comm.all_gather(&mine, &mut outcome, &counts, &displs);
        if let Err(e) = written {
            return Err(TrainError::Hook(format!("cannot save the checkpoint: {e}")));
        }
        if let Some(r) = (0..n).find(|&r| outcome[2 * r] == 0) {
            return Err(TrainError::Hook(format!(
                "cannot save the checkpoint: replica {r} could not write its part"
            )));
        }
        let lens: Vec<usize> = (0..n).map(|r| outcome[2 * r + 1] as usize).collect();
        let all = gather_bytes(&*self.comm, entries, &lens);
        self.saved_step = Some(step);
        let listed = match self.leader.as_mut() {
            Some(l) => l.manager.save_sharded(step, &all).map(Some),
            None => Ok(None),
        };
        // The checkpoints replica 0 swept, by name (none when the save
        // failed: the state is as it was); every replica, even then.
        let swept = match (&listed, &self.leader) {
            (Ok(Some(_)), Some(l)) => l.manager.swept().join("\0"),
            _ => String::new(),
        };
        let swept = broadcast_text(&*self.comm, &swept);
        if self.leader.is_none() {
            for name in swept.split('\0').filter(|n| !n.is_empty()) {
                sweep_part(&local, name);
            }
        }
        let listed =
            listed.map_err(|e| TrainError::Hook(format!("cannot save the checkpoint: {e}")))?;
        if let (Some(prefix), Some(l)) = (listed, self.leader.as_mut()) {
            if let Some(report) = l.report.as_mut() {
                report(&prefix);
            }
            self.last_saved = Some(prefix);
        }
        Ok(())
    }
}

/// A slice to write: name, logical shape, rows, shape of the part, values.
type Part<'a> = (
    &'a str,
    Vec<usize>,
    std::ops::Range<usize>,
    Vec<usize>,
    &'a [f32],
);

/// Writes this replica's data file of the checkpoint at `prefix` (see the
/// module doc); its entries.
fn write_part(
    session: &Session,
    rank: usize,
    n: usize,
    prefix: &Path,
    step: i64,
    position: Option<&[i64]>,
) -> Result<Vec<u8>, String> {
    let layout = &session.layout;
    let mut parts: Vec<Part<'_>> = Vec::new();
    for v in layout.vars.iter().filter(|v| v.kind.is_state()) {
        let values = session
            .var(&v.name)
            .ok_or_else(|| format!("no variable `{}`", v.name))?;
        let row_len: usize = v.shape.iter().skip(1).product();
        let (full, ranges, local) = match layout.shard_of(v) {
            Some(t) => {
                let mut full = v.shape.clone();
                full[0] = t.rows;
                let own = Ownership::new(&v.partitions, t.replicas);
                (full, own.ranges(rank), true)
            }
            None if rank != 0 => continue,
            // A replicated variable, partitioned in the checkpoint or whole.
            None if v.partitions.is_empty() || v.shape.is_empty() => {
                let rows = v.shape.first().copied().unwrap_or(0);
                (v.shape.clone(), vec![(0, rows)], false)
            }
            None => {
                let mut at = 0;
                let ranges = v
                    .partitions
                    .iter()
                    .map(|&r| {
                        at += r;
                        (at - r, r)
                    })
                    .collect();
                (v.shape.clone(), ranges, false)
            }
        };
        let mut at = 0;
        for (start, rows) in ranges {
            let mut shape = full.clone();
            if !shape.is_empty() {
                shape[0] = rows;
            }
            let from = if local { at } else { start * row_len };
            let len = if full.is_empty() { 1 } else { rows * row_len };
            parts.push((
                &v.name,
                full.clone(),
                start..start + rows,
                shape,
                &values[from..from + len],
            ));
            at += len;
        }
    }
    let mut slices = Vec::with_capacity(parts.len() + 2);
    for (name, full, rows, shape, values) in &parts {
        slices.push(ShardSlice {
            name,
            full_shape: full,
            rows: rows.clone(),
            values: TensorRef::f32(shape, values)?,
        });
    }
    let steps = [step];
    let no_dims: [usize; 0] = [];
    let order_shape = [position.map_or(0, <[i64]>::len)];
    if rank == 0 {
        slices.push(ShardSlice {
            name: GLOBAL_STEP,
            full_shape: &no_dims,
            rows: 0..0,
            values: TensorRef::i64(&no_dims, &steps)?,
        });
        if let Some(p) = position {
            slices.push(ShardSlice {
                name: BATCH_ORDER,
                full_shape: &order_shape,
                rows: 0..p.len(),
                values: TensorRef::i64(&order_shape, p)?,
            });
        }
    }
    write_shard(prefix, rank as u32, n as u32, &slices).map_err(|e| e.to_string())
}

/// Deletes this replica's data files of the swept checkpoint `name` (as
/// the state file named it, relative to the directory) from the directory
/// of `local`, this replica's prefix of the checkpoint just written.
fn sweep_part(local: &Path, name: &str) {
    let dir = local.parent().unwrap_or(Path::new(""));
    // A name the state file gave with directories: its last component, in
    // this replica's directory.
    if let Some(file) = Path::new(name).file_name() {
        delete_data_files(&dir.join(file));
    }
}

/// Replica 0's `text` on every replica.
fn broadcast_text(comm: &dyn Collective, text: &str) -> String {
    let mut len = [text.len() as u32];
    comm.broadcast(&mut len);
    let mut words = vec![0u32; (len[0] as usize).div_ceil(4)];
    for (w, chunk) in words.iter_mut().zip(text.as_bytes().chunks(4)) {
        let mut b = [0u8; 4];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u32::from_le_bytes(b);
    }
    comm.broadcast(&mut words);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes[..len[0] as usize]).into_owned()
}

/// Every replica's `bytes` (replica r's being `lens[r]` long) on replica 0,
/// in replica order (empty elsewhere).
fn gather_bytes(comm: &dyn Collective, bytes: &[u8], lens: &[usize]) -> Vec<Vec<u8>> {
    let (rank, n) = (comm.rank(), comm.replicas());
    let words = |len: usize| len.div_ceil(4);
    let mut send = vec![0u32; words(bytes.len())];
    for (w, chunk) in send.iter_mut().zip(bytes.chunks(4)) {
        let mut b = [0u8; 4];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u32::from_le_bytes(b);
    }
    let mut send_counts = vec![0i32; n];
    send_counts[0] = send.len() as i32;
    let zeros = vec![0i32; n];
    let (mut recv_counts, mut recv_displs) = (vec![0i32; n], vec![0i32; n]);
    let mut total = 0;
    if rank == 0 {
        for r in 0..n {
            recv_counts[r] = words(lens[r]) as i32;
            recv_displs[r] = total as i32;
            total += words(lens[r]);
        }
    }
    let mut recv = vec![0u32; total];
    comm.all_to_all(
        &send,
        &send_counts,
        &zeros,
        &mut recv,
        &recv_counts,
        &recv_displs,
    );
    if rank != 0 {
        return Vec::new();
    }
    (0..n)
        .map(|r| {
            let at = recv_displs[r] as usize;
            let b: Vec<u8> = recv[at..at + words(lens[r])]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            b[..lens[r]].to_vec()
        })
        .collect()
}

impl Hook for ShardedSaverHook<'_> {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        // The timer counts from the start (a resumed run: from its step).
        if let Some(l) = self.leader.as_mut() {
            l.timer.triggered(0);
        }
        self.saved_step = Some(ctx.global_step());
        Ok(())
    }

    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        let mut due = [u32::from(
            self.leader.as_ref().is_some_and(|l| l.timer.due(v.step)),
        )];
        self.comm.broadcast(&mut due);
        if due[0] == 0 {
            return Ok(());
        }
        if let Some(l) = self.leader.as_mut() {
            l.timer.triggered(v.step);
        }
        self.save(ctx)
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.save(ctx)
    }
}
