//! Checkpoints of a run whose tables are sharded across replicas
//! ([`super::sharded`]): every replica takes part in each save.
//!
//! Owns: [`assemble`] (a sharded variable's rows, from every replica, put
//! back together on replica 0 in the logical table's order) and
//! [`ShardedSaverHook`], the [`CheckpointSaverHook`] of such a run: on every
//! step replica 0 says whether it saves (its timer may count seconds, which
//! the replicas do not share), and when it does every replica sends its
//! rows and replica 0 writes the checkpoint, with the whole tables under
//! their TF names, as one process would.
//!
//! Invariants: every replica installs the hook when the run saves
//! checkpoints, and calls the collectives in the same order (one broadcast
//! a step; the gathers of a save, variable by variable in layout order);
//! the checkpoint holds the logical tables, so a run resumes from it with
//! any number of replicas. (Replica 0 holds one whole table at a time while
//! it saves.)

use std::rc::Rc;

use super::checkpoint_saver::CheckpointSaverHook;
use super::hooks::{Hook, RunContext, StepValues};
use super::replicas::Collective;
use super::sharded::Ownership;
use super::TrainError;
use crate::session::Session;

/// A table put back together: name, logical shape, values.
pub type Whole = (String, Vec<usize>, Vec<f32>);

/// Gathers every sharded state variable of `session` to replica 0, into
/// `whole` (there; untouched elsewhere). `scratch` is a receive buffer kept
/// between saves. A collective: every replica calls it.
pub fn assemble(
    session: &Session,
    comm: &dyn Collective,
    whole: &mut Vec<Whole>,
    scratch: &mut Vec<u32>,
) -> Result<(), String> {
    let (rank, n) = (comm.rank(), comm.replicas());
    let layout = &session.layout;
    let mut k = 0;
    for v in layout.vars.iter().filter(|v| v.kind.is_state()) {
        let Some(t) = layout.shard_of(v) else {
            continue;
        };
        let row_len: usize = v.shape[1..].iter().product();
        let own = Ownership::new(&v.partitions, t.replicas);
        let held = |r: usize| own.ranges(r).iter().map(|&(_, c)| c).sum::<usize>() * row_len;
        let local = session
            .var(&v.name)
            .ok_or_else(|| format!("no variable `{}`", v.name))?;
        let mine = held(rank);
        // SAFETY: f32 and u32 have the same size and alignment, and every
        // bit pattern is valid for both.
        let send: &[u32] =
            unsafe { std::slice::from_raw_parts(local.as_ptr().cast::<u32>(), mine) };
        let mut send_counts = vec![0i32; n];
        send_counts[0] = i32::try_from(mine).map_err(|_| too_large(&v.name))?;
        let zeros = vec![0i32; n];
        let mut recv_counts = vec![0i32; n];
        let mut recv_displs = vec![0i32; n];
        let mut total = 0usize;
        if rank == 0 {
            for r in 0..n {
                recv_counts[r] = i32::try_from(held(r)).map_err(|_| too_large(&v.name))?;
                recv_displs[r] = i32::try_from(total).map_err(|_| too_large(&v.name))?;
                total += held(r);
            }
        }
        scratch.resize(total.max(scratch.len()), 0);
        comm.all_to_all(
            send,
            &send_counts,
            &zeros,
            &mut scratch[..total],
            &recv_counts,
            &recv_displs,
        );
        if rank != 0 {
            continue;
        }
        let mut shape = v.shape.clone();
        shape[0] = t.rows;
        if whole.len() <= k {
            whole.push((String::new(), Vec::new(), Vec::new()));
        }
        let w = &mut whole[k];
        k += 1;
        w.0.clone_from(&v.name);
        w.1.clone_from(&shape);
        w.2.resize(t.rows * row_len, 0.0);
        let mut at = 0;
        for r in 0..n {
            for (start, rows) in own.ranges(r) {
                let len = rows * row_len;
                for (d, &s) in w.2[start * row_len..start * row_len + len]
                    .iter_mut()
                    .zip(&scratch[at..at + len])
                {
                    *d = f32::from_bits(s);
                }
                at += len;
            }
        }
    }
    Ok(())
}

fn too_large(name: &str) -> String {
    format!("`{name}`: more than 2^31 values to gather in one save")
}

/// The checkpoint hook of a run with sharded tables (see the module doc):
/// replica 0's [`CheckpointSaverHook`], and every replica's part in its saves.
pub struct ShardedSaverHook<'r> {
    comm: Rc<dyn Collective>,
    /// Replica 0's saver (`None` on the others).
    saver: Option<CheckpointSaverHook<'r>>,
    whole: Vec<Whole>,
    scratch: Vec<u32>,
}

impl<'r> ShardedSaverHook<'r> {
    /// `saver` is replica 0's (and `None` on every other replica).
    pub fn new(comm: Rc<dyn Collective>, saver: Option<CheckpointSaverHook<'r>>) -> Self {
        ShardedSaverHook {
            comm,
            saver,
            whole: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Replica 0's saver.
    pub fn saver(&self) -> Option<&CheckpointSaverHook<'r>> {
        self.saver.as_ref()
    }

    fn gather(&mut self, ctx: &RunContext<'_>) -> Result<(), TrainError> {
        assemble(
            ctx.session(),
            &*self.comm,
            &mut self.whole,
            &mut self.scratch,
        )
        .map_err(TrainError::Hook)
    }
}

impl Hook for ShardedSaverHook<'_> {
    fn begin(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        match self.saver.as_mut() {
            Some(s) => s.begin(ctx),
            None => Ok(()),
        }
    }

    fn after_run(&mut self, ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        let mut due = [u32::from(
            self.saver.as_ref().is_some_and(|s| s.due(v.step)),
        )];
        self.comm.broadcast(&mut due);
        if due[0] == 0 {
            return Ok(());
        }
        self.gather(ctx)?;
        match self.saver.as_mut() {
            Some(s) => s.save_now(ctx, v.step, &self.whole),
            None => Ok(()),
        }
    }

    fn end(&mut self, ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.gather(ctx)?;
        match self.saver.as_mut() {
            Some(s) => s.end_with(ctx, &self.whole),
            None => Ok(()),
        }
    }
}
