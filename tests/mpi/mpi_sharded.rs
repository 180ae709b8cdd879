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

/// A rank killed while the job exchanges rows ends the job with an error,
/// and nobody waits forever in an all-to-all.
#[test]
fn a_dead_rank_stops_a_sharded_job() {
    let dir = temp_dir("sharded-dead-rank");
    let mut c = crate::mpi::mpirun(3);
    c.arg(SPECC)
        .args(["run", &spec(CTR), "--steps", "100000000"])
        .arg("--checkpoint-dir")
        .arg(&dir)
        .args(["--checkpoint-every-steps", "50"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut job = c.spawn().unwrap();
    wait_for_checkpoint(&mut job, &dir, 100);
    let ranks = crate::mpi::ranks_of(job.id());
    assert_eq!(ranks.len(), 3, "mpirun's children: {ranks:?}");
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(ranks[2], libc::SIGKILL) };
    let out = wait_for_end(job);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exited on signal 9"), "{stderr}");
    // The checkpoints written are whole, and one process resumes from them.
    let at = checkpoint_step(&dir).expect("a checkpoint");
    let resumed = train(CTR, 0, at as u64 + 10, &dir);
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("resumed from"),
        "one process resumes the killed job's checkpoint"
    );
}
