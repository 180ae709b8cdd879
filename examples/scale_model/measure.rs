//! The measured all-to-all of `alltoall_scale --measure` (under `mpirun`,
//! the `mpi` feature): this job's ranks run the exchanges of one modelled
//! step, sized by the simulated id stream, and time them.
//!
//! Owns: [`Plan`] (per table, the counts each rank sends in the fetch and
//! the gradient, from `ids::rank_lookups`, the model's own stream) and
//! [`measure_step_s`] (the six `MPI_Alltoallv`s a step that specc runs for
//! every table together, or six per table as its first version did, with
//! buffers of those sizes; the median of the repetitions, from the
//! slowest rank). Invariants: every rank runs the same collectives in the
//! same order; buffers are allocated before the timed loop; the contents are
//! zeros (only the sizes matter).

use std::collections::HashSet;

use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use specc_runtime::train::sharded::Ownership;

use super::ids::{rank_lookups, Zipf};

/// One direction of one all-to-all: counts and displacements per rank.
struct Side {
    counts: Vec<i32>,
    displs: Vec<i32>,
    buf: Vec<u32>,
}

impl Side {
    /// `counts` entries of `width` u32 each.
    fn new(counts: &[i32], width: usize) -> Side {
        let counts: Vec<i32> = counts.iter().map(|&c| c * width as i32).collect();
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0;
        for &c in &counts {
            displs.push(at);
            at += c;
        }
        Side {
            counts,
            displs,
            buf: vec![0; at as usize],
        }
    }
}

/// One `MPI_Alltoallv` from `send` into `recv`.
fn exchange(world: &SimpleCommunicator, send: &Side, recv: &mut Side) {
    let from = Partition::new(&send.buf[..], &send.counts[..], &send.displs[..]);
    let mut into = PartitionMut::new(&mut recv.buf[..], &recv.counts[..], &recv.displs[..]);
    world.all_to_all_varcount_into(&from, &mut into);
}

/// One table's exchanges on this rank: the counts (one u32 to every rank),
/// then for the fetch and the gradient the ids out, and the rows (back, for
/// the fetch).
struct TablePlan {
    counts_send: Side,
    counts_recv: Side,
    fetch_ids: (Side, Side),
    fetch_rows: (Side, Side),
    grad_ids: (Side, Side),
    grad_rows: (Side, Side),
}

impl TablePlan {
    /// The exchanges of `fetch` ids and `grad` entries sent to each rank,
    /// `fetch_in` and `grad_in` received from each, rows of `dim` floats.
    fn new(fetch: &[i32], grad: &[i32], fetch_in: &[i32], grad_in: &[i32], dim: usize) -> Self {
        let ones = vec![1; fetch.len()];
        TablePlan {
            counts_send: Side::new(&ones, 1),
            counts_recv: Side::new(&ones, 1),
            fetch_ids: (Side::new(fetch, 1), Side::new(fetch_in, 1)),
            // The owner answers: it sends what it received.
            fetch_rows: (Side::new(fetch_in, dim), Side::new(fetch, dim)),
            grad_ids: (Side::new(grad, 1), Side::new(grad_in, 1)),
            grad_rows: (Side::new(grad, dim), Side::new(grad_in, dim)),
        }
    }

    /// The counts, ids and rows of the fetch, then of the gradient.
    fn run(&mut self, world: &SimpleCommunicator) {
        exchange(world, &self.counts_send, &mut self.counts_recv);
        exchange(world, &self.fetch_ids.0, &mut self.fetch_ids.1);
        exchange(world, &self.fetch_rows.0, &mut self.fetch_rows.1);
        exchange(world, &self.counts_send, &mut self.counts_recv);
        exchange(world, &self.grad_ids.0, &mut self.grad_ids.1);
        exchange(world, &self.grad_rows.0, &mut self.grad_rows.1);
    }
}

/// Every table's exchanges of one step on this rank, table by table and
/// fused (every table in each message: what specc runs).
pub struct Plan {
    tables: Vec<TablePlan>,
    fused: TablePlan,
}

impl Plan {
    /// The step `step` of `tables` tables of the model's stream, on this
    /// job's ranks: what this rank sends to each owner, exchanged once
    /// (untimed) so that each rank knows what it receives.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        world: &SimpleCommunicator,
        tables: usize,
        batch: usize,
        k: usize,
        dim: usize,
        zipf: &Zipf,
        own: &Ownership,
        (step, seed): (u64, u64),
    ) -> Plan {
        let n = world.size() as usize;
        let rank = world.rank() as usize;
        let ones = vec![1; n];
        let mut seen = HashSet::new();
        // Every table's counts per rank: what the fused exchange moves.
        let mut totals = (vec![0i32; n], vec![0i32; n], vec![0i32; n], vec![0i32; n]);
        let plans = (0..tables as u64)
            .map(|t| {
                let (mut fetch, mut grad) = (vec![0i32; n], vec![0i32; n]);
                let stream = (t, step, seed);
                rank_lookups(rank, batch, k, zipf, own, stream, &mut seen, |o, first| {
                    grad[o] += 1;
                    if first {
                        fetch[o] += 1;
                    }
                });
                let got = |send: &[i32]| {
                    let out = Side {
                        buf: send.iter().map(|&c| c as u32).collect(),
                        ..Side::new(&ones, 1)
                    };
                    let mut back = Side::new(&ones, 1);
                    exchange(world, &out, &mut back);
                    back.buf.iter().map(|&c| c as i32).collect::<Vec<i32>>()
                };
                let (fetch_in, grad_in) = (got(&fetch), got(&grad));
                for (all, one) in [
                    (&mut totals.0, &fetch),
                    (&mut totals.1, &grad),
                    (&mut totals.2, &fetch_in),
                    (&mut totals.3, &grad_in),
                ] {
                    all.iter_mut().zip(one).for_each(|(a, b)| *a += b);
                }
                TablePlan::new(&fetch, &grad, &fetch_in, &grad_in, dim)
            })
            .collect();
        let fused = TablePlan::new(&totals.0, &totals.1, &totals.2, &totals.3, dim);
        Plan {
            tables: plans,
            fused,
        }
    }

    /// One step's exchanges: six all-to-alls per table, or (`fused`) six
    /// for every table together.
    fn run(&mut self, world: &SimpleCommunicator, fused: bool) {
        if fused {
            self.fused.run(world);
        } else {
            self.tables.iter_mut().for_each(|t| t.run(world));
        }
    }
}

/// The median of `v` (sorted in place); NaN when empty.
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// Seconds of one step's exchanges of `plan` (`fused` or table by table): each rank's median of `reps`
/// after `warmup`, each repetition between barriers; the slowest rank's.
pub fn measure_step_s(
    world: &SimpleCommunicator,
    plan: &mut Plan,
    fused: bool,
    warmup: usize,
    reps: usize,
) -> f64 {
    let mut times = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        world.barrier();
        let t = mpi::time();
        plan.run(world, fused);
        let dt = mpi::time() - t;
        if i >= warmup {
            times.push(dt);
        }
    }
    let mine = median(&mut times);
    let mut all = vec![0f64; world.size() as usize];
    world.all_gather_into(&mine, &mut all[..]);
    all.iter().copied().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_place_entries_of_a_width() {
        let s = Side::new(&[2, 0, 3], 4);
        assert_eq!(s.counts, vec![8, 0, 12]);
        assert_eq!(s.displs, vec![0, 8, 8]);
        assert_eq!(s.buf.len(), 20);
    }

    #[test]
    fn medians() {
        assert!(median(&mut []).is_nan());
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
