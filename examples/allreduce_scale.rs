//! Issue 11, "scale, on paper and in a simulation": the gradient allreduce of
//! one synchronous data-parallel step of W3 `wide_mlp`, measured over MPI on
//! this machine and extrapolated to 8–512 ranks with a ring and a
//! hierarchical allreduce cost model.
//!
//! ```text
//! cargo build --release --features mpi --example allreduce_scale
//! mpirun --allow-run-as-root -np 2 target/release/examples/allreduce_scale
//! mpirun --allow-run-as-root --oversubscribe -np 3 target/release/examples/allreduce_scale
//! ```
//!
//! Every rank measures; rank 0 prints. Measured: `MPI_Allreduce` (sum) of the
//! gradient's bytes, out of place (rsmpi's `all_reduce_into`) and in place
//! (`MPI_IN_PLACE`, Open MPI only), the median of `--reps` after `--warmup`;
//! an 8-byte allreduce (the latency); a memcpy of the same bytes on one core
//! (and of 128 MiB, out of the caches). With `-np 1` the allreduce is a copy.
//! On one node, also what `specc run` does instead of the allreduce: each
//! rank writes its segment of an `MPI_Win_allocate_shared` window, and after
//! a barrier sums every rank's segment (then a barrier).
//!
//! Modelled (pure functions below, with tests): for each link (`--link
//! GBIT:US`, default 100 Gbit/s and 25 Gbit/s, both 5 µs) and N in `--ranks`,
//! the communication time of a ring allreduce and of a hierarchical one
//! (`--ranks-per-node` G), and the step time with a per-rank compute time of
//! `--compute-ms`, communication after the step (compute + comm) or overlapped
//! with the backward pass (max(compute, comm), the bound). The hierarchical
//! allreduce's node phases run over shared memory (`--shm-gbps`, `--shm-us`).
//! `--json` prints a JSON line per row instead of the tables.

use std::time::{Duration, Instant};

use clap::Parser;
use mpi::collective::SystemOperation;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde_json::json;

#[path = "scale_model/allreduce.rs"]
mod allreduce_model;
use allreduce_model::{
    efficiency, hierarchical_allreduce_s, parse_link, ring_allreduce_s, step_s, Link,
};

/// W3 `wide_mlp`'s parameters (specs/wide_mlp.spec, block `params`):
/// W1 784×1024 = 802,816; b1 1,024; W2 1024×1024 = 1,048,576; b2 1,024;
/// W3 1024×10 = 10,240; b3 10. In all 1,863,690 float32 = 7,454,760 bytes
/// (7.45 MB, 7.11 MiB): one gradient per parameter, the bytes a data-parallel
/// step sums across ranks. (Adam's two slots are per rank and never sent.)
const W3_PARAMS: usize = 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10;

/// W3's batch (specs/wide_mlp.spec, `train { batch = 256 }`): each rank's
/// share of a step, so that N ranks process 256·N examples a step.
const W3_BATCH: usize = 256;

#[derive(Parser, Debug)]
#[command(about = "W3 gradient allreduce: measured over MPI, extrapolated to N ranks")]
struct Args {
    /// Timed repetitions of the gradient-sized allreduce (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Untimed repetitions before them.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// float32 elements to allreduce (default: W3 `wide_mlp`'s parameters).
    #[arg(long, default_value_t = W3_PARAMS)]
    params: usize,
    /// Per-rank compute time of one step, ms. The default is W3's one-rank
    /// step: docs/performance.md's W3 row, 100.6 steps/s (9.94 ms) on both cores with
    /// AVX-512, batch 256. (`specc bench specs/wide_mlp.spec` with
    /// `SPECC_THREADS=1`, one core as under `mpirun -np 2`: 83 steps/s, 12 ms.)
    #[arg(long, default_value_t = 10.0)]
    compute_ms: f64,
    /// Network links to model, GBIT:LATENCY_US (Gbit/s per node, µs per message).
    #[arg(long, value_delimiter = ',', default_value = "100:5,25:5", value_parser = parse_link)]
    link: Vec<Link>,
    /// Rank counts to model.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128,256,512")]
    ranks: Vec<usize>,
    /// Ranks per node G of the hierarchical allreduce.
    #[arg(long, default_value_t = 8)]
    ranks_per_node: usize,
    /// Intra-node (shared memory) bandwidth per rank and ring step, GB/s.
    /// 10: what Open MPI's in-place 2-rank allreduce of W3 reaches here
    /// (2(N-1)/N·bytes/time 10.2–11.4 GB/s); a memcpy (21 GB/s out of the
    /// caches) bounds it, a ring step also adds into the buffer.
    #[arg(long, default_value_t = 10.0)]
    shm_gbps: f64,
    /// Intra-node latency per message, µs. 1: the 8-byte allreduce takes
    /// 0.14 µs with 2 ranks on 2 cores here, 3.3 µs with 3 (oversubscribed).
    #[arg(long, default_value_t = 1.0)]
    shm_us: f64,
    /// One JSON line per row instead of the tables.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    Ring,
    Hierarchical,
}

impl Algo {
    fn name(self) -> &'static str {
        match self {
            Algo::Ring => "ring",
            Algo::Hierarchical => "hier",
        }
    }
}

/// One row of the extrapolation.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    link: Link,
    n: usize,
    nodes: usize,
    algo: Algo,
    comm_s: f64,
    serial_s: f64,
    overlap_s: f64,
}

/// The extrapolation: for each link, N and algorithm, the allreduce and step
/// times. The ring assumes one rank per node (or that the network hop bounds
/// every ring step); the hierarchical allreduce puts `g` ranks on a node.
fn model_rows(
    bytes: f64,
    compute_s: f64,
    links: &[Link],
    ranks: &[usize],
    g: usize,
    shm: Link,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &link in links {
        for &n in ranks {
            for algo in [Algo::Ring, Algo::Hierarchical] {
                let (comm_s, nodes) = match algo {
                    Algo::Ring => (ring_allreduce_s(n, bytes, link), n),
                    Algo::Hierarchical => (
                        hierarchical_allreduce_s(n, g, bytes, link, shm),
                        n.div_ceil(g.clamp(1, n.max(1))),
                    ),
                };
                rows.push(Row {
                    link,
                    n,
                    nodes,
                    algo,
                    comm_s,
                    serial_s: step_s(compute_s, comm_s, false),
                    overlap_s: step_s(compute_s, comm_s, true),
                });
            }
        }
    }
    rows
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

/// Open MPI's `MPI_IN_PLACE` (`#define MPI_IN_PLACE ((void *) 1)`, mpi.h).
/// rsmpi 0.8.2 has no in-place allreduce and mpi-sys exports no
/// `MPI_IN_PLACE`, so the in-place form runs only under Open MPI.
const OPEN_MPI_IN_PLACE: usize = 1;

/// `MPI_Allreduce(MPI_IN_PLACE, buf, len, MPI_FLOAT, MPI_SUM, comm)`.
/// Callers check that the library is Open MPI (see [`OPEN_MPI_IN_PLACE`]).
fn all_reduce_sum_in_place(comm: &SimpleCommunicator, buf: &mut [f32]) {
    let count = i32::try_from(buf.len()).expect("allreduce count fits an int");
    // SAFETY: `buf` is valid for `count` floats; Open MPI reads the send data
    // from `buf` when sendbuf is its MPI_IN_PLACE sentinel.
    let rc = unsafe {
        mpi::ffi::MPI_Allreduce(
            OPEN_MPI_IN_PLACE as *const std::os::raw::c_void,
            buf.as_mut_ptr().cast(),
            count,
            mpi::ffi::RSMPI_FLOAT,
            mpi::ffi::RSMPI_SUM,
            comm.as_raw(),
        )
    };
    assert_eq!(rc, 0, "MPI_Allreduce in place failed");
}

/// Wait for every rank without spinning: the other ranks sleep between tests
/// of a non-blocking barrier, so that a rank measuring alone (the memcpy) has
/// its core, even oversubscribed.
fn quiet_barrier(world: &SimpleCommunicator) {
    let mut req = world.immediate_barrier();
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => {
                req = r;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Median seconds of one `dst.copy_from_slice(src)` of `len` floats.
fn memcpy_s(len: usize, reps: usize) -> f64 {
    let src: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let mut dst = vec![0f32; len];
    dst.copy_from_slice(&src); // fault the pages in
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        times.push(t.elapsed().as_secs_f64());
    }
    median(&mut times)
}

/// The measurements of one run.
struct Measured {
    ranks: usize,
    bytes: f64,
    /// Median allreduce seconds, out of place, per rank.
    per_rank_s: Vec<f64>,
    allreduce_s: f64,
    in_place_s: Option<f64>,
    /// specc's exchange on one node: each rank writes its segment of a
    /// shared window; a barrier, every rank sums all segments in rank
    /// order into its own buffer, a barrier (slowest rank's median).
    shared_sum_s: Option<f64>,
    small_s: f64,
    memcpy_s: f64,
    memcpy_dram_s: f64,
    dram_bytes: f64,
}

impl Measured {
    /// Per-hop latency of the 8-byte allreduce: Open MPI sums small messages by
    /// recursive doubling, ⌈log2 N⌉ rounds.
    fn alpha_hop_s(&self) -> Option<f64> {
        (self.ranks >= 2).then(|| {
            let rounds = (self.ranks as f64).log2().ceil();
            self.small_s / rounds
        })
    }
}

/// 2(N−1)/N: the bytes each rank sends (and receives) per byte of a ring allreduce.
fn ring_factor(n: usize) -> f64 {
    if n <= 1 {
        0.0
    } else {
        2.0 * (n as f64 - 1.0) / n as f64
    }
}

fn measure(world: &SimpleCommunicator, args: &Args, open_mpi: bool) -> Measured {
    let size = world.size() as usize;
    let rank = world.rank() as usize;
    let len = args.params;
    let bytes = (len * 4) as f64;

    // The memcpy on rank 0's core alone, the other ranks asleep.
    let dram_len = 32 << 20; // 128 MiB of floats
    let (memcpy, memcpy_dram) = if rank == 0 {
        (memcpy_s(len, args.reps.max(5)), memcpy_s(dram_len, 5))
    } else {
        (0.0, 0.0)
    };
    quiet_barrier(world);

    // Gradient-sized allreduce, out of place: each rank sends rank + 1.
    let send = vec![(rank + 1) as f32; len];
    let mut recv = vec![0f32; len];
    let expect = (size * (size + 1) / 2) as f32;
    let mut times = Vec::with_capacity(args.reps);
    for i in 0..args.warmup + args.reps {
        world.barrier();
        let t = mpi::time();
        world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
        let dt = mpi::time() - t;
        if i == 0 {
            assert!(
                recv[0] == expect && recv[len - 1] == expect,
                "allreduce sum: {} and {}, expected {expect}",
                recv[0],
                recv[len - 1]
            );
        }
        if i >= args.warmup {
            times.push(dt);
        }
    }
    let mine = median(&mut times);
    let mut per_rank_s = vec![0f64; size];
    world.all_gather_into(&mine, &mut per_rank_s[..]);
    let allreduce_s = per_rank_s.iter().copied().fold(0.0, f64::max);

    // In place (MPI_IN_PLACE), refilled (untimed) before each repetition.
    let in_place_s = open_mpi.then(|| {
        let mut buf = vec![0f32; len];
        let mut times = Vec::with_capacity(args.reps);
        for i in 0..args.warmup + args.reps {
            buf.fill((rank + 1) as f32);
            world.barrier();
            let t = mpi::time();
            all_reduce_sum_in_place(world, &mut buf);
            let dt = mpi::time() - t;
            if i == 0 {
                assert!(buf[0] == expect && buf[len - 1] == expect);
            }
            if i >= args.warmup {
                times.push(dt);
            }
        }
        let mine = median(&mut times);
        let mut all = vec![0f64; size];
        world.all_gather_into(&mine, &mut all[..]);
        all.iter().copied().fold(0.0, f64::max)
    });

    let shared_sum_s = shared_sum_s(world, args, expect);

    // 8 bytes: batches of back-to-back allreduces, the median batch's mean.
    let small_send = [1f32; 2];
    let mut small_recv = [0f32; 2];
    let per_batch = 1000;
    for _ in 0..per_batch {
        world.all_reduce_into(&small_send[..], &mut small_recv[..], SystemOperation::sum());
    }
    let mut batches = Vec::new();
    for _ in 0..7 {
        world.barrier();
        let t = mpi::time();
        for _ in 0..per_batch {
            world.all_reduce_into(&small_send[..], &mut small_recv[..], SystemOperation::sum());
        }
        batches.push((mpi::time() - t) / per_batch as f64);
    }
    assert_eq!(small_recv[0], size as f32);
    let mine = median(&mut batches);
    let mut all = vec![0f64; size];
    world.all_gather_into(&mine, &mut all[..]);
    let small_s = all.iter().copied().fold(0.0, f64::max);

    Measured {
        ranks: size,
        bytes,
        per_rank_s,
        allreduce_s,
        in_place_s,
        shared_sum_s,
        small_s,
        memcpy_s: memcpy,
        memcpy_dram_s: memcpy_dram,
        dram_bytes: (dram_len * 4) as f64,
    }
}

/// The shared-memory exchange of `specc run` on one node (see
/// [`Measured::shared_sum_s`]); `None` when the ranks span nodes.
fn shared_sum_s(world: &SimpleCommunicator, args: &Args, expect: f32) -> Option<f64> {
    use mpi::ffi;
    if world.split_shared(world.rank()).size() != world.size() {
        return None;
    }
    let (size, rank, len) = (world.size() as usize, world.rank() as usize, args.params);
    let mut base: *mut f32 = std::ptr::null_mut();
    let mut win = std::mem::MaybeUninit::<ffi::MPI_Win>::uninit();
    // SAFETY: every rank allocates `len` floats of one shared window; the
    // segments are read only between barriers that follow their writes.
    let mut times = unsafe {
        ffi::MPI_Win_allocate_shared(
            (len * 4) as ffi::MPI_Aint,
            4,
            ffi::RSMPI_INFO_NULL,
            world.as_raw(),
            (&mut base as *mut *mut f32).cast(),
            win.as_mut_ptr(),
        );
        let mut win = win.assume_init();
        ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as i32, win);
        let segments: Vec<&[f32]> = (0..size as i32)
            .map(|r| {
                let (mut bytes, mut unit, mut ptr) = (0, 0, std::ptr::null_mut::<f32>());
                ffi::MPI_Win_shared_query(
                    win,
                    r,
                    &mut bytes,
                    &mut unit,
                    (&mut ptr as *mut *mut f32).cast(),
                );
                std::slice::from_raw_parts(ptr, len)
            })
            .collect();
        let mine = std::slice::from_raw_parts_mut(base, len);
        let mut sum = vec![0f32; len];
        let mut times = Vec::with_capacity(args.reps);
        for i in 0..args.warmup + args.reps {
            mine.fill((rank + 1) as f32);
            ffi::MPI_Win_sync(win);
            world.barrier();
            let t = mpi::time();
            ffi::MPI_Win_sync(win);
            // Two ranks in one pass (what the step's fused kernel reads),
            // more in one pass per further rank.
            match &segments[..] {
                [a, b, rest @ ..] => {
                    for ((s, x), y) in sum.iter_mut().zip(*a).zip(*b) {
                        *s = x + y;
                    }
                    for seg in rest {
                        for (s, x) in sum.iter_mut().zip(*seg) {
                            *s += x;
                        }
                    }
                }
                [a] => sum.copy_from_slice(a),
                [] => {}
            }
            ffi::MPI_Win_sync(win);
            world.barrier();
            let dt = mpi::time() - t;
            if i == 0 {
                assert!(sum[0] == expect && sum[len - 1] == expect);
            }
            if i >= args.warmup {
                times.push(dt);
            }
        }
        std::hint::black_box(&sum);
        ffi::MPI_Win_unlock_all(win);
        ffi::MPI_Win_free(&mut win);
        times
    };
    let mine = median(&mut times);
    let mut all = vec![0f64; size];
    world.all_gather_into(&mine, &mut all[..]);
    Some(all.iter().copied().fold(0.0, f64::max))
}

fn gbps(bytes: f64, s: f64) -> f64 {
    bytes / s / 1e9
}

fn print_measured(m: &Measured, args: &Args, library: &str, shm: Link) {
    let n = m.ranks;
    let f = ring_factor(n);
    // The cost model at this N, every hop over shared memory.
    let model_s = ring_allreduce_s(n, m.bytes, shm);
    if args.json {
        let line = json!({
            "kind": "measured",
            "ranks": n,
            "params": args.params,
            "bytes": m.bytes,
            "allreduce_ms": m.allreduce_s * 1e3,
            "allreduce_per_rank_ms": m.per_rank_s.iter().map(|s| s * 1e3).collect::<Vec<_>>(),
            "algbw_gbps": gbps(m.bytes, m.allreduce_s),
            "busbw_gbps": gbps(f * m.bytes, m.allreduce_s),
            "allreduce_in_place_ms": m.in_place_s.map(|s| s * 1e3),
            "shared_sum_ms": m.shared_sum_s.map(|s| s * 1e3),
            "small_allreduce_us": m.small_s * 1e6,
            "alpha_hop_us": m.alpha_hop_s().map(|s| s * 1e6),
            "memcpy_ms": m.memcpy_s * 1e3,
            "memcpy_gbps": gbps(m.bytes, m.memcpy_s),
            "memcpy_dram_gbps": gbps(m.dram_bytes, m.memcpy_dram_s),
            "ring_model_shm_ms": model_s * 1e3,
            "library": library,
        });
        println!("{line}");
        return;
    }
    println!(
        "{} float32 = {} bytes ({:.2} MB); {n} rank(s); {library}",
        args.params,
        m.bytes as u64,
        m.bytes / 1e6
    );
    println!(
        "memcpy, one core:  {:.2} MB {:.3} ms = {:.1} GB/s; {:.0} MiB {:.2} ms = {:.1} GB/s",
        m.bytes / 1e6,
        m.memcpy_s * 1e3,
        gbps(m.bytes, m.memcpy_s),
        m.dram_bytes / (1u64 << 20) as f64,
        m.memcpy_dram_s * 1e3,
        gbps(m.dram_bytes, m.memcpy_dram_s)
    );
    println!(
        "allreduce (sum):   {:.3} ms = {:.2} GB/s bytes/time, {:.2} GB/s 2(N-1)/N*bytes/time \
         (median of {}, slowest rank; per rank {})",
        m.allreduce_s * 1e3,
        gbps(m.bytes, m.allreduce_s),
        gbps(f * m.bytes, m.allreduce_s),
        args.reps,
        m.per_rank_s
            .iter()
            .map(|s| format!("{:.3}", s * 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    );
    match m.in_place_s {
        Some(_) if n == 1 => println!("  in place:        nothing to do with one rank"),
        Some(s) => println!(
            "  in place:        {:.3} ms = {:.2} GB/s bytes/time, {:.2} GB/s 2(N-1)/N*bytes/time",
            s * 1e3,
            gbps(m.bytes, s),
            gbps(f * m.bytes, s)
        ),
        None => {
            println!("  in place:        not measured (MPI_IN_PLACE is known for Open MPI only)")
        }
    }
    if let Some(s) = m.shared_sum_s {
        println!(
            "shared-memory sum: {:.3} ms = {:.2} GB/s bytes/time, {:.2} GB/s N*bytes read/time \
             (specc's exchange on one node: barrier, sum of every rank's segment, barrier)",
            s * 1e3,
            gbps(m.bytes, s),
            gbps(n as f64 * m.bytes, s)
        );
    }
    match m.alpha_hop_s() {
        Some(a) => println!(
            "allreduce 8 bytes: {:.2} us ({:.2} us per round of recursive doubling)",
            m.small_s * 1e6,
            a * 1e6
        ),
        None => println!(
            "allreduce 8 bytes: {:.3} us (one rank: a copy)",
            m.small_s * 1e6
        ),
    }
    if n >= 2 {
        println!(
            "ring model at N = {n} over shared memory ({:.1} GB/s, {:.2} us): {:.3} ms",
            shm.beta / 1e9,
            shm.alpha_s * 1e6,
            model_s * 1e3
        );
    }
}

fn print_model(rows: &[Row], args: &Args, compute_s: f64, shm: Link, bytes: f64) {
    if args.json {
        for r in rows {
            let line = json!({
                "kind": "model",
                "link_gbit": r.link.gbit(),
                "alpha_us": r.link.alpha_s * 1e6,
                "ranks": r.n,
                "nodes": r.nodes,
                "ranks_per_node": match r.algo { Algo::Ring => 1, Algo::Hierarchical => args.ranks_per_node },
                "algo": r.algo.name(),
                "bytes": bytes,
                "compute_ms": compute_s * 1e3,
                "comm_ms": r.comm_s * 1e3,
                "serial_step_ms": r.serial_s * 1e3,
                "serial_steps_per_s": 1.0 / r.serial_s,
                "serial_efficiency": efficiency(compute_s, r.serial_s),
                "overlap_step_ms": r.overlap_s * 1e3,
                "overlap_steps_per_s": 1.0 / r.overlap_s,
                "overlap_efficiency": efficiency(compute_s, r.overlap_s),
                "examples_per_s_serial": (r.n * W3_BATCH) as f64 / r.serial_s,
                "shm_gbps": shm.beta / 1e9,
                "shm_alpha_us": shm.alpha_s * 1e6,
            });
            println!("{line}");
        }
        return;
    }
    println!();
    println!(
        "model: compute {:.2} ms per rank and step; ring = one rank per node; hier = {} ranks per \
         node, shared memory {:.1} GB/s, {:.2} us",
        compute_s * 1e3,
        args.ranks_per_node,
        shm.beta / 1e9,
        shm.alpha_s * 1e6
    );
    println!(
        "efficiency = compute / step (each rank a batch of {W3_BATCH}, N x the examples per step)"
    );
    let mut last: Option<Link> = None;
    for r in rows {
        if last != Some(r.link) {
            last = Some(r.link);
            println!();
            println!(
                "link {:.0} Gbit/s = {:.2} GB/s, alpha {:.1} us",
                r.link.gbit(),
                r.link.beta / 1e9,
                r.link.alpha_s * 1e6
            );
            println!(
                "{:>5} {:>5} {:<5} {:>8} | {:>13} {:>8} {:>5} | {:>14} {:>8} {:>5}",
                "N",
                "nodes",
                "algo",
                "comm ms",
                "step ms (c+m)",
                "steps/s",
                "eff",
                "step ms (max)",
                "steps/s",
                "eff"
            );
        }
        println!(
            "{:>5} {:>5} {:<5} {:>8.3} | {:>13.3} {:>8.1} {:>4.0}% | {:>14.3} {:>8.1} {:>4.0}%",
            r.n,
            r.nodes,
            r.algo.name(),
            r.comm_s * 1e3,
            r.serial_s * 1e3,
            1.0 / r.serial_s,
            100.0 * efficiency(compute_s, r.serial_s),
            r.overlap_s * 1e3,
            1.0 / r.overlap_s,
            100.0 * efficiency(compute_s, r.overlap_s),
        );
    }
}

fn main() {
    let args = Args::parse();
    assert!(
        args.params > 0 && args.reps > 0,
        "--params and --reps must be positive"
    );
    assert!(
        args.shm_gbps > 0.0 && args.shm_us >= 0.0 && args.ranks_per_node > 0,
        "--shm-gbps and --ranks-per-node must be positive, --shm-us not negative"
    );
    let universe = mpi::initialize().expect("MPI initialized once");
    let world = universe.world();
    let library = mpi::environment::library_version()
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or("")
        .trim_end_matches(['\0', ','])
        .to_string();
    let open_mpi = library.contains("Open MPI");

    let m = measure(&world, &args, open_mpi);
    if world.rank() != 0 {
        return;
    }
    let shm = Link {
        alpha_s: args.shm_us * 1e-6,
        beta: args.shm_gbps * 1e9,
    };
    print_measured(&m, &args, &library, shm);
    let compute_s = args.compute_ms * 1e-3;
    let rows = model_rows(
        m.bytes,
        compute_s,
        &args.link,
        &args.ranks,
        args.ranks_per_node,
        shm,
    );
    print_model(&rows, &args, compute_s, shm, m.bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: Link = Link {
        alpha_s: 5e-6,
        beta: 12.5e9,
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
    }

    /// W3_PARAMS is the element count of specs/wide_mlp.spec's `params` block.
    #[test]
    fn w3_params_match_the_spec() {
        let spec =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/specs/wide_mlp.spec"))
                .unwrap();
        let block = spec.split("params {").nth(1).unwrap();
        let block = &block[..block.find('}').unwrap()];
        let count: usize = block
            .lines()
            .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.to_string()))
            .map(|dims| {
                dims.split(',')
                    .map(|d| d.trim().parse::<usize>().unwrap())
                    .product::<usize>()
            })
            .sum();
        assert_eq!(count, W3_PARAMS);
        assert_eq!(W3_PARAMS, 1_863_690);
        assert_eq!(W3_PARAMS * 4, 7_454_760);
    }

    #[test]
    fn rows_cover_links_ranks_and_algorithms() {
        let shm = Link {
            alpha_s: 1e-6,
            beta: 10e9,
        };
        let links = [NET, parse_link("25:5").unwrap()];
        let rows = model_rows(8e6, 10e-3, &links, &[8, 512], 8, shm);
        assert_eq!(rows.len(), 2 * 2 * 2);
        let r = &rows[3]; // 100 Gbit/s, N = 512, hierarchical
        assert_eq!((r.n, r.nodes, r.algo), (512, 64, Algo::Hierarchical));
        assert!(close(r.serial_s, 10e-3 + r.comm_s));
        assert!(close(r.overlap_s, 10e-3_f64.max(r.comm_s)));
        // A slower link never makes a step faster; one node (hier, N = 8) has no network.
        for (fast, slow) in rows[..4].iter().zip(&rows[4..]) {
            assert!(slow.comm_s >= fast.comm_s && slow.serial_s >= fast.serial_s);
            assert_eq!(slow.comm_s > fast.comm_s, fast.nodes > 1);
        }
    }

    #[test]
    fn medians() {
        assert!(median(&mut []).is_nan());
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn ring_factors() {
        assert_eq!(ring_factor(1), 0.0);
        assert_eq!(ring_factor(2), 1.0);
        assert!(close(ring_factor(3), 4.0 / 3.0));
    }
}
