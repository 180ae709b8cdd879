//! `mpirun` across machines: ranks on different nodes, simulated on this one
//! by network namespaces (tools/mpi-hosts: each host its own network stack,
//! IP and hostname, behind a bridge). Between hosts the ranks share no
//! memory and talk over TCP, as on a cluster: specc must see several nodes,
//! take the allreduce (no shared-memory window can span them) and still
//! train the single process's model. Each test makes hosts of its own
//! (their names carry the test's process and name, so tests run in
//! parallel) and removes them when it ends, passed or failed.
//!
//! Needs root (network namespaces); a machine where they cannot be made
//! fails these tests rather than skipping them.
#![cfg(feature = "mpi")]

use crate::mpi_jobs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use mpi_jobs::*;

fn tool() -> String {
    format!("{}/tools/mpi-hosts", env!("CARGO_MANIFEST_DIR"))
}

/// Simulated hosts (`tools/mpi-hosts setup`), torn down when dropped.
struct Hosts {
    name: String,
    /// The tool's state: `hostfile`, `subnet`, `hosts`.
    dir: PathBuf,
    subnet: String,
}

impl Hosts {
    /// `count` hosts with `slots` slots each, named after the test.
    fn new(test: &str, count: usize, slots: usize) -> Hosts {
        let name = format!("specc-{}-{test}-h", std::process::id());
        let out = Command::new(tool())
            .args(["setup", &name, &count.to_string(), &slots.to_string()])
            .output()
            .expect("runs tools/mpi-hosts");
        // Dropped before the assertion: a half-made setup is torn down too.
        let mut hosts = Hosts {
            dir: PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
            name,
            subnet: String::new(),
        };
        assert!(
            out.status.success(),
            "cannot make the simulated hosts (network namespaces: needs root, \
             iproute2 and util-linux): tools/mpi-hosts setup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let subnet = std::fs::read_to_string(hosts.dir.join("subnet")).unwrap();
        hosts.subnet = subnet.trim().to_string();
        hosts
    }

    /// The network namespace of host `i` (from 1).
    fn namespace(&self, i: usize) -> String {
        format!("{}{i}", self.name)
    }

    /// `mpirun -np NP` over the hosts: the hostfile, the agent that starts
    /// Open MPI's daemon in a host's namespace, and TCP on the hosts'
    /// subnet only (for the daemons and for MPI's messages). The hosts'
    /// slots are more than this machine's cores (and other builds share
    /// them): a rank waiting in a collective yields its core instead of
    /// spinning on it (what `--oversubscribe` does on one node), which
    /// takes 4 ranks on 2 cores from about 14 to thousands of steps/s.
    fn mpirun(&self, np: usize) -> Command {
        let mut c = mpirun_command();
        c.arg("--hostfile")
            .arg(self.dir.join("hostfile"))
            .args(["--mca", "plm_rsh_agent", &format!("{} agent", tool())])
            .args(["--mca", "plm_rsh_no_tree_spawn", "1"])
            .args(["--mca", "oob_tcp_if_include", &self.subnet])
            .args(["--mca", "btl_tcp_if_include", &self.subnet])
            .args(["--mca", "mpi_yield_when_idle", "1"])
            .args(["--bind-to", "none", "-np", &np.to_string()]);
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(tool())
            .args(["teardown", &self.name])
            .stdout(Stdio::null())
            .status();
    }
}

/// The network namespaces of this machine.
fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_simulated_hosts_are_separate_nodes() {
    let hosts = Hosts::new("nodes", 2, 1);
    let (one, two) = (hosts.namespace(1), hosts.namespace(2));
    let mut c = hosts.mpirun(2);
    c.arg("hostname");
    let out = run_ok(c);
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    assert_eq!(names, [one.clone(), two.clone()], "one rank on each host");
    drop(hosts);
    let left = namespaces();
    assert!(
        !left
            .lines()
            .any(|l| l.starts_with(&one) || l.starts_with(&two)),
        "torn down: {left}"
    );
}

/// `specc run --json` of `np` ranks over `hosts`; its output.
fn train_on(hosts: &Hosts, spec_name: &str, np: usize, steps: u64, dir: &Path) -> Output {
    let mut c = hosts.mpirun(np);
    c.args([SPECC, "run", &spec(spec_name), "--json", "--steps"])
        .arg(steps.to_string())
        .arg("--checkpoint-dir")
        .arg(dir);
    run_ok(c)
}

/// `np` ranks on `count` hosts train `spec_name` for 200 steps: the model of
/// one process on the global batch, the gradients exchanged by allreduce.
fn hosts_match_one_process(test: &str, spec_name: &str, count: usize, np: usize) {
    let hosts = Hosts::new(test, count, np / count);
    let one = temp_dir(&format!("hosts-{test}-one"));
    let many = temp_dir(&format!("hosts-{test}-many"));
    let mut c = Command::new(SPECC);
    c.args([
        "run",
        &spec(spec_name),
        "--steps",
        "200",
        "--checkpoint-dir",
    ])
    .arg(&one);
    run_ok(c);
    let out = train_on(&hosts, spec_name, np, 200, &many);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("replica 0 of {np} on {count} nodes"))
            && stderr.contains("gradients exchanged by allreduce"),
        "{np} ranks on {count} nodes, the allreduce: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(json["replicas"], np, "{stdout}");
    assert_eq!(json["nodes"], count, "{stdout}");
    assert_eq!(json["exchange"], "allreduce", "{stdout}");
    assert_eq!(json["steps"], 200, "{stdout}");
    assert_close(
        &checkpoint(&one),
        &checkpoint(&many),
        &format!("{spec_name}, {np} ranks on {count} hosts"),
    );
}

#[test]
fn two_ranks_on_two_hosts_train_the_global_batch_dense() {
    hosts_match_one_process("dense2", "digits_mlp.spec", 2, 2);
}

#[test]
fn two_ranks_on_two_hosts_train_the_global_batch_sparse() {
    hosts_match_one_process("sparse2", "digits_embedding.spec", 2, 2);
}

/// Two ranks on each host: the ranks of a host could share memory, but
/// specc's shared exchange needs every rank in one window, so the whole job
/// takes the allreduce (Open MPI's, over shared memory within a host and
/// TCP between them).
#[test]
fn four_ranks_on_two_hosts_train_the_global_batch_dense() {
    hosts_match_one_process("dense4", "digits_mlp.spec", 2, 4);
}

#[test]
fn four_ranks_on_two_hosts_train_the_global_batch_sparse() {
    hosts_match_one_process("sparse4", "digits_embedding.spec", 2, 4);
}

/// The CTR spec's tables sharded across ranks on separate hosts: rows and
/// their gradients cross the hosts' network in the all-to-alls.
#[test]
fn two_ranks_on_two_hosts_shard_the_ctr_tables() {
    hosts_match_one_process("sharded2", "ctr_ftrl.spec", 2, 2);
}

#[test]
fn four_ranks_on_two_hosts_shard_the_ctr_tables() {
    hosts_match_one_process("sharded4", "ctr_ftrl.spec", 2, 4);
}

/// The specc processes (ranks) running in network namespace `ns`.
fn ranks_in(ns: &str) -> Vec<i32> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "specc")
        })
        .collect()
}

/// A rank killed on another host (its machine lost) ends the whole job,
/// non-zero, with mpirun saying which rank died how, within seconds.
#[test]
fn a_dead_rank_on_another_host_stops_the_job() {
    let hosts = Hosts::new("dead", 2, 1);
    let dir = temp_dir("hosts-dead-rank");
    let mut c = hosts.mpirun(2);
    c.arg(SPECC)
        .args(["run", &spec("digits_mlp.spec"), "--steps", "100000000"])
        .args(["--checkpoint-every-steps", "500", "--checkpoint-dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut job = c.spawn().unwrap();
    wait_for_checkpoint(&mut job, &dir, 500);
    let ranks = ranks_in(&hosts.namespace(2));
    assert_eq!(ranks.len(), 1, "the rank on host 2: {ranks:?}");
    let t0 = Instant::now();
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(ranks[0], libc::SIGKILL) };
    let out = wait_for_end(job);
    eprintln!(
        "the job ended {:?} after its rank on host 2 died",
        t0.elapsed()
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rank 1") && stderr.contains("exited on signal 9"),
        "{stderr}"
    );
}
