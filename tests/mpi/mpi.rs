//! `mpirun -np N specc run`: data-parallel jobs of real processes over
//! OpenMPI (the `mpi` feature), against one process training on the global
//! batch, and what happens when a replica dies or disagrees.
//!
//! The models are compared through their checkpoints (tests/mpi/mpi_jobs.rs).
//! Replica counts 2 and 3 (`--oversubscribe`: this machine may have fewer
//! cores than ranks). Ranks on several nodes: tests/mpi/mpi_hosts.rs.
#![cfg(feature = "mpi")]

use crate::mpi_jobs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mpi_jobs::*;

/// `mpirun` for this machine: as root if need be, more ranks than cores,
/// on the loopback.
pub(crate) fn mpirun(np: usize) -> Command {
    let mut c = mpirun_command();
    c.args([
        "--oversubscribe",
        "--bind-to",
        "none",
        "-np",
        &np.to_string(),
    ]);
    c
}

/// Trains `spec` for `steps` steps into `dir` with `np` ranks (0: one
/// process without mpirun).
pub(crate) fn train(spec_name: &str, np: usize, steps: u64, dir: &Path) -> Output {
    train_exchanging(spec_name, np, steps, dir, true)
}

/// [`train`]; the ranks exchange through shared memory when `shared` (they
/// run on one node), else by allreduce (`SPECC_SHARED_EXCHANGE=0`).
pub(crate) fn train_exchanging(
    spec_name: &str,
    np: usize,
    steps: u64,
    dir: &Path,
    shared: bool,
) -> Output {
    let args = [
        "run".to_string(),
        spec(spec_name),
        "--steps".into(),
        steps.to_string(),
        "--checkpoint-dir".into(),
        dir.display().to_string(),
    ];
    if np == 0 {
        let mut c = Command::new(SPECC);
        c.args(&args);
        run_ok(c)
    } else {
        let mut c = mpirun(np);
        c.env("SPECC_SHARED_EXCHANGE", if shared { "1" } else { "0" })
            .args(["-x", "SPECC_SHARED_EXCHANGE"])
            .arg(SPECC)
            .args(&args);
        run_ok(c)
    }
}

/// digits_mlp with its data path made absolute, `options` added to its
/// `data csv(..)` and `edits` (text, its replacement) applied, written as
/// `name` in a temporary directory.
fn digits_variant(name: &str, options: &str, edits: &[(&str, String)]) -> PathBuf {
    let dir = temp_dir(name);
    let mut text = std::fs::read_to_string(spec("digits_mlp.spec")).unwrap();
    let data = format!("{}/specs/data/digits.csv", env!("CARGO_MANIFEST_DIR"));
    let edits = [(
        "csv(\"data/digits.csv\")",
        format!("csv({data:?}{options})"),
    )]
    .into_iter()
    .chain(edits.iter().map(|(a, b)| (*a, b.clone())));
    for (from, to) in edits {
        assert!(text.contains(from), "digits_mlp.spec has no `{from}`");
        text = text.replace(from, &to);
    }
    let path = dir.join(format!("{name}.spec"));
    std::fs::write(&path, text).unwrap();
    path
}

fn ranks_match_one_process(spec_name: &str, np: usize) {
    let tag = Path::new(spec_name).file_name().unwrap().to_string_lossy();
    let one = temp_dir(&format!("{tag}-one-{np}"));
    let many = temp_dir(&format!("{tag}-{np}"));
    train(spec_name, 0, 200, &one);
    let out = train(spec_name, np, 200, &many);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("replica 0 of {np} on 1 node:")),
        "the job says it runs {np} replicas on this node: {stderr}"
    );
    assert!(
        stderr.contains("gradients exchanged through shared memory"),
        "the ranks of one node share memory: {stderr}"
    );
    assert_close(
        &checkpoint(&one),
        &checkpoint(&many),
        &format!("{spec_name}, {np} ranks"),
    );
}

#[test]
fn two_ranks_train_the_global_batch_dense() {
    ranks_match_one_process("digits_mlp.spec", 2);
}

#[test]
fn three_ranks_train_the_global_batch_dense() {
    ranks_match_one_process("digits_mlp.spec", 3);
}

#[test]
fn two_ranks_train_the_global_batch_sparse() {
    ranks_match_one_process("digits_embedding.spec", 2);
}

#[test]
fn three_ranks_train_the_global_batch_sparse() {
    ranks_match_one_process("digits_embedding.spec", 3);
}

/// The shared exchange and the allreduce train the same model (the
/// tolerance of one process against replicas).
#[test]
fn the_shared_exchange_trains_the_allreduce_model() {
    for spec_name in ["digits_mlp.spec", "digits_embedding.spec"] {
        let shared = temp_dir(&format!("{spec_name}-shared"));
        let reduced = temp_dir(&format!("{spec_name}-allreduce"));
        train_exchanging(spec_name, 2, 200, &shared, true);
        let out = train_exchanging(spec_name, 2, 200, &reduced, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("gradients exchanged by allreduce"),
            "SPECC_SHARED_EXCHANGE=0: {stderr}"
        );
        assert_close(
            &checkpoint(&reduced),
            &checkpoint(&shared),
            &format!("{spec_name}: shared memory against allreduce"),
        );
    }
}

/// A long job of `np` ranks writing a checkpoint every 500 steps.
fn long_job(np: usize, dir: &Path) -> std::process::Child {
    let mut c = mpirun(np);
    c.arg(SPECC)
        .args(["run", &spec("digits_mlp.spec"), "--steps", "100000000"])
        .arg("--checkpoint-dir")
        .arg(dir)
        .args(["--checkpoint-every-steps", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().unwrap()
}

#[test]
fn a_killed_job_resumes_from_its_last_checkpoint() {
    let dir = temp_dir("resume");
    let mut job = long_job(2, &dir);
    wait_for_checkpoint(&mut job, &dir, 1000);
    // The whole job dies at once (a lost allocation, a power cut): every
    // rank, then mpirun.
    let ranks = ranks_of(job.id());
    assert_eq!(ranks.len(), 2, "mpirun's children: {ranks:?}");
    for pid in ranks.into_iter().chain([job.id() as i32]) {
        // SAFETY: signalling processes this test's job started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let out = wait_for_end(job);
    assert!(!out.status.success());
    let at = checkpoint_step(&dir).expect("the checkpoint waited for");
    assert!(at >= 1000, "the latest checkpoint is at step {at}");
    // The job started again to `at + 300` resumes; one that never stopped
    // reaches the same model, bit for bit.
    let resumed = train("digits_mlp.spec", 2, at as u64 + 300, &dir);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.contains("resumed from") && stderr.contains(&format!("global step {at}")),
        "{stderr}"
    );
    let straight = temp_dir("resume-straight");
    train("digits_mlp.spec", 2, at as u64 + 300, &straight);
    assert_same_bits(&dir, &straight, "resumed against a job that never stopped");
}

/// The ranks mpirun started (its children running specc).
pub(crate) fn ranks_of(mpirun_pid: u32) -> Vec<i32> {
    let children =
        std::fs::read_to_string(format!("/proc/{mpirun_pid}/task/{mpirun_pid}/children"))
            .unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_dead_rank_stops_the_job() {
    let dir = temp_dir("dead-rank");
    let mut job = long_job(2, &dir);
    wait_for_checkpoint(&mut job, &dir, 500);
    let ranks = ranks_of(job.id());
    assert_eq!(ranks.len(), 2, "mpirun's children: {ranks:?}");
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(ranks[1], libc::SIGKILL) };
    let out = wait_for_end(job);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exited on signal 9"), "{stderr}");
}

#[test]
fn a_replica_that_fails_stops_the_others() {
    // Rank 1 reads a CSV with a cell that is not a number: it reports
    // where, and the job ends instead of rank 0 waiting for it.
    let dir = temp_dir("bad-data");
    let good = format!("{}/specs/data/digits.csv", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&good).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "px10").unwrap();
    let mut cells: Vec<String> = lines[7].split(',').map(str::to_string).collect();
    cells[col] = "seven".into();
    lines[7] = cells.join(",");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let mut c = mpirun(1);
    c.args([SPECC, "run", &spec("digits_mlp.spec"), "--steps", "100"])
        .args(["--data", &good, ":", "-np", "1", SPECC, "run"])
        .args([&spec("digits_mlp.spec"), "--steps", "100", "--data"])
        .arg(&bad);
    let stderr = failing(c);
    assert!(
        stderr.contains("bad.csv:8: column `px10`"),
        "names the file, line and column: {stderr}"
    );
    assert!(stderr.contains("replica 1 of 2 failed"), "{stderr}");
}

#[test]
fn replicas_started_differently_are_refused() {
    // Rank 1 would stop 100 steps early and leave rank 0 waiting.
    let mut c = mpirun(1);
    c.args([SPECC, "run", &spec("digits_mlp.spec"), "--steps", "200"])
        .args([":", "-np", "1", SPECC, "run", &spec("digits_mlp.spec")])
        .args(["--steps", "100"]);
    let stderr = failing(c);
    assert!(
        stderr.contains("another spec, configuration or data"),
        "{stderr}"
    );
}

#[test]
fn repeated_jobs_give_the_same_bits() {
    let (a, b) = (temp_dir("repeat-a"), temp_dir("repeat-b"));
    train("digits_embedding.spec", 3, 150, &a);
    train("digits_embedding.spec", 3, 150, &b);
    assert_same_bits(&a, &b, "two runs of the same job");
}

/// digits_mlp written for `n` replicas (TF's SyncReplicasOptimizer
/// arguments in the `train` item), in a temporary directory.
fn spec_for_replicas(n: usize) -> PathBuf {
    digits_variant(
        &format!("sync-{n}"),
        "",
        &[(
            "seed = 7 }",
            format!("seed = 7, replicas_to_aggregate = {n}, total_num_replicas = {n} }}"),
        )],
    )
}

#[test]
fn total_num_replicas_is_the_number_of_ranks() {
    let path = spec_for_replicas(2);
    let mut c = mpirun(2);
    c.arg(SPECC).arg("run").arg(&path).args(["--steps", "20"]);
    run_ok(c);
    let mut c = mpirun(3);
    c.arg(SPECC).arg("run").arg(&path).args(["--steps", "20"]);
    let stderr = failing(c);
    assert!(
        stderr.contains("total_num_replicas = 2, but the MPI job has 3 ranks"),
        "{stderr}"
    );
}

/// digits_mlp streamed from its CSV in data order (no shuffle): record `i`
/// of a step's 64 goes to replica `i % n`, so within the first epoch the
/// replicas' rows together are the batch one process streams.
#[test]
fn two_ranks_share_a_streamed_file_by_record() {
    let path = digits_variant(
        "stream",
        ", stream = true",
        &[("shuffle = 1797", "shuffle = 0".into())],
    );
    let dir = path.parent().unwrap();
    // 25 steps of 64 rows stay within the first epoch of 1797.
    let (one, many) = (dir.join("one"), dir.join("many"));
    let mut c = Command::new(SPECC);
    c.arg("run")
        .arg(&path)
        .args(["--steps", "25", "--checkpoint-dir"])
        .arg(&one);
    run_ok(c);
    let mut c = mpirun(2);
    c.arg(SPECC)
        .arg("run")
        .arg(&path)
        .args(["--steps", "25", "--checkpoint-dir"])
        .arg(&many);
    run_ok(c);
    assert_close(&checkpoint(&one), &checkpoint(&many), "streamed, 2 ranks");
}

/// A stream that ends (`num_epochs`) ends for every replica at the same
/// step, even when the shards have different lengths (1797 records: 899
/// and 898): no replica waits for one that stopped.
#[test]
fn replicas_stop_together_when_a_stream_ends() {
    let path = digits_variant("stream-end", ", num_epochs = 1", &[]);
    let mut c = mpirun(2);
    c.arg(SPECC)
        .arg("run")
        .arg(&path)
        .args(["--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_for_end(c.spawn().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(json["replicas"], 2, "{stdout}");
    assert_eq!(json["exchange"], "shared_memory", "{stdout}");
    assert_eq!(json["nodes"], 1, "{stdout}");
    // 898 rows of the shorter shard give 28 full shares of 32 rows.
    assert_eq!(json["steps"], 898 / 32, "{stdout}");
}

/// A streamed job resumed from its checkpoint reaches the same model as one
/// that never stopped: each replica reads past its shares of the steps done.
#[test]
fn a_streamed_job_resumes_past_its_shares() {
    let path = digits_variant("stream-resume", ", stream = true, threads = 2", &[]);
    let dir = path.parent().unwrap();
    let (resumed, straight) = (dir.join("resumed"), dir.join("straight"));
    let job = |steps: &str, out: &Path| {
        let mut c = mpirun(2);
        c.arg(SPECC)
            .arg("run")
            .arg(&path)
            .args(["--steps", steps, "--checkpoint-dir"])
            .arg(out);
        run_ok(c)
    };
    job("40", &resumed);
    let out = job("70", &resumed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("resumed from") && stderr.contains("read past its shares"),
        "{stderr}"
    );
    job("70", &straight);
    assert_same_bits(
        &resumed,
        &straight,
        "a resumed stream against a straight one",
    );
}

/// A replica that hangs without dying (here: stopped) would keep the others
/// waiting in the exchange forever, as MPI's collectives have no timeout;
/// with `--exchange-timeout` the waiting replica gives up, naming the step,
/// and the job ends. The timeout is 20 s: a replica of a running job never
/// waits that long for the others, however loaded the machine (a rank's
/// checkpoint save, an fsync on a slow disk, is the longest wait), so only
/// the stopped rank triggers it.
#[test]
fn a_hanging_rank_is_given_up_on() {
    let dir = temp_dir("hang");
    let mut c = mpirun(2);
    c.arg(SPECC)
        .args(["run", &spec("digits_mlp.spec"), "--steps", "100000000"])
        .args([
            "--exchange-timeout",
            "20",
            "--checkpoint-every-steps",
            "500",
        ])
        .arg("--checkpoint-dir")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut job = c.spawn().unwrap();
    wait_for_checkpoint(&mut job, &dir, 500);
    let ranks = ranks_of(job.id());
    assert_eq!(ranks.len(), 2, "mpirun's children: {ranks:?}");
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(ranks[1], libc::SIGSTOP) };
    let out = wait_for_end(job);
    for &pid in &ranks {
        // SAFETY: as above; a rank already gone is not signalled twice.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: replica 0 of 2: waited more than 20 s for the other replicas"),
        "{stderr}"
    );
}

/// `dropout`'s mask keys on each row's place in the global batch, so two
/// ranks drop what one process drops: the same model.
#[test]
fn two_ranks_drop_out_as_one_process() {
    let path = digits_variant(
        "dropout",
        "",
        &[(
            "h      = relu(pixels @ W1 + b1)",
            "h = dropout(relu(pixels @ W1 + b1), 0.3, seed = 11)".into(),
        )],
    );
    ranks_match_one_process(path.to_str().unwrap(), 2);
}

/// `batch_norm` normalizes with each rank's batch statistics (TF's layer
/// under SyncReplicasOptimizer, not SyncBatchNorm) and the ranks average the
/// moving statistics: after one step the moving mean is one process's (the
/// mean of equal shares' means); the job ends with identical replicas.
#[test]
fn two_ranks_average_the_batch_norm_moving_mean() {
    let path = digits_variant(
        "batch-norm",
        "",
        &[
            (
                "  b1: [128]     = zeros\n",
                "  b1: [128]     = zeros\n  gamma: [128] = ones\n  beta: [128] = zeros\n  \
                 mm: [128] = zeros, trainable = false\n  mv: [128] = ones, trainable = false\n"
                    .into(),
            ),
            (
                "h      = relu(pixels @ W1 + b1)",
                "z = reshape(pixels @ W1 + b1, [B, 1, 1, 128])\n\
                 h = relu(reshape(batch_norm(z, gamma, beta, mm, mv, momentum = 0.9), [B, 128]))"
                    .into(),
            ),
        ],
    );
    let path = path.to_str().unwrap();
    let (one, many) = (temp_dir("batch-norm-one"), temp_dir("batch-norm-two"));
    train(path, 0, 1, &one);
    train(path, 2, 1, &many);
    let mm = |dir: &Path| {
        checkpoint(dir)
            .into_iter()
            .find(|(n, _)| n == "mm")
            .expect("the moving mean is checkpointed")
            .1
    };
    let (a, b) = (mm(&one), mm(&many));
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "one step moves the moving mean");
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-6 * scale,
            "mm[{k}]: {x} on one process, {y} on two ranks"
        );
    }
    let longer = temp_dir("batch-norm-longer");
    let out = train(path, 2, 100, &longer);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("replica 0 of 2"),
        "the job ran two replicas"
    );
}
