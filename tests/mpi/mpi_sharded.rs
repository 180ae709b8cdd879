//! `mpirun -np N specc run` with tables sharded across the ranks
//! (`optim::sharded`, `train::sharded`): the CTR spec's ten hashed
//! `linear_model` tables (2^18 rows each, so sharded without a
//! `partitioner`) under FTRL, against one process on the global batch,
//! through the checkpoints replica 0 writes with the whole tables.
#![cfg(feature = "mpi")]

use crate::mpi::{train, train_exchanging};
use crate::mpi_jobs::*;

const CTR: &str = "ctr_ftrl.spec";
const STEPS: u64 = 40;

/// `np` ranks sharding the tables train the model one process trains.
fn sharded_ranks_match_one_process(np: usize, shared: bool) {
    let one = temp_dir(&format!("sharded-one-{np}-{shared}"));
    let many = temp_dir(&format!("sharded-{np}-{shared}"));
    train(CTR, 0, STEPS, &one);
    let out = train_exchanging(CTR, np, STEPS, &many, shared);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("10 tables are sharded across the replicas"),
        "the job says it shards the tables: {stderr}"
    );
    assert_close(
        &checkpoint(&one),
        &checkpoint(&many),
        &format!("{CTR}, {np} ranks sharding its tables"),
    );
}

#[test]
fn two_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(2, true);
}

#[test]
fn three_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(3, true);
}

#[test]
fn four_ranks_shard_the_tables() {
    sharded_ranks_match_one_process(4, true);
}

#[test]
fn two_ranks_shard_the_tables_over_allreduce() {
    sharded_ranks_match_one_process(2, false);
}

/// The checkpoint holds whole tables: a job of 2 ranks continues with 3,
/// then 4 with one process, and ends where one process does.
#[test]
fn a_sharded_job_resumes_with_other_numbers_of_ranks() {
    let dir = temp_dir("sharded-resume");
    train(CTR, 2, STEPS / 4, &dir);
    for (np, steps) in [(3, STEPS / 2), (1, 3 * STEPS / 4), (4, STEPS)] {
        let out = train(CTR, np, steps, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("resumed from"), "{np} ranks: {stderr}");
    }
    let one = temp_dir("sharded-resume-one");
    train(CTR, 0, STEPS, &one);
    assert_close(
        &checkpoint(&one),
        &checkpoint(&dir),
        "resumed on 2, 3, 1 and 4 ranks",
    );
}
