//! Issue 30, "the model of step time at 8-512 nodes extended with the
//! all-to-all term": the exchanges of tables sharded by row across N ranks
//! (docs/sharded-tables.md), from a simulated Zipf id stream, on top of the
//! dense allreduce of `allreduce_scale` (shared: `scale_model/allreduce.rs`).
//!
//! ```text
//! cargo run --release --example alltoall_scale                      # W5's CTR model
//! cargo run --release --example alltoall_scale -- --tables 26 --dim 64 --rows 10000000 \
//!     --dense-params 499521 --compute-ms 3                           # a Criteo-like DLRM
//! ```
//!
//! The model needs no MPI and runs without `mpirun`. With `--measure` (the
//! `mpi` feature, under `mpirun`; `scale_model/measure.rs`), this job's ranks
//! run one simulated step's exchanges instead, timed:
//!
//! ```text
//! cargo build --release --features mpi --example alltoall_scale
//! mpirun --allow-run-as-root -np 2 target/release/examples/alltoall_scale --measure
//! ```
//!
//! Simulated (`scale_model/ids.rs`), per table and step (`--steps` steps, each table its own
//! stream): each of N ranks draws `--batch` × `--ids-per-example` ids, Zipf
//! ranks (`--zipf` s; 0 is uniform) over `--rows` R, each rank hashed to a
//! row as a hash bucket does (so the hot ids land on arbitrary rows, and two
//! values may share a row). Each rank dedupes its ids (what specc's fetch
//! sends) and sends every lookup's gradient entry (not deduplicated). Rows
//! live in TF's contiguous partitions (`--partitions`, or specc's automatic
//! `min_max_variable_partitioner(max_partitions = N, min_slice_size = 256 KiB)`),
//! partition p on rank p mod N: `specc_compiler`'s and `specc_runtime`'s
//! own functions. Ranks sit `--ranks-per-node` G to a node, in blocks.
//!
//! Modelled, per table and step, the six `MPI_Alltoallv`s of one table (fetch:
//! counts, ids, rows; gradient: counts, ids, rows) as Open MPI's pairwise
//! all-to-all: N−1 rounds, (G−1) of them over shared memory, so
//! (G−1)·α_s + (N−G)·α of latency, plus the busiest node's network bytes
//! (the larger of what its ranks send off the node and receive) over β and
//! the busiest rank's bytes within its node over β_s. The step: compute +
//! dense allreduce + all-to-all (sequential, no overlap), table by table as
//! specc's first version ran them; and `fused`: the same six all-to-alls once
//! per step for all tables together, which specc runs (as TorchRec does).

use clap::Parser;
use serde_json::json;
use specc_runtime::train::sharded::Ownership;

#[path = "scale_model/allreduce.rs"]
mod allreduce_model;
#[path = "scale_model/ids.rs"]
mod ids;
use allreduce_model::{
    efficiency, hierarchical_allreduce_s, parse_link, recursive_doubling_allreduce_s,
    ring_allreduce_s, step_s, Link,
};
#[cfg(feature = "mpi")]
#[path = "scale_model/measure.rs"]
mod measure;
use ids::{simulate_table_step, table_partitions, Busiest, TableCounts, TableStep, Zipf};

/// The defaults are W5's CTR model scaled up (`specs/ctr_ftrl.spec`): ten
/// `linear_model` tables of 2^24 rows (the spec has 2^18), one weight per
/// row, one id per example and table, batch 256 per rank.
#[derive(Parser, Debug, Clone)]
#[command(about = "Sharded tables' all-to-all: simulated id stream, modelled step time at N ranks")]
struct Args {
    /// Rank counts to model.
    #[arg(long, value_delimiter = ',', default_value = "8,64,512")]
    ranks: Vec<usize>,
    /// Network links to model, GBIT:LATENCY_US (Gbit/s per node, µs per message).
    #[arg(long, value_delimiter = ',', default_value = "100:5,25:5", value_parser = parse_link)]
    link: Vec<Link>,
    /// Ranks per node G (1: every peer over the network).
    #[arg(long, default_value_t = 1)]
    ranks_per_node: usize,
    /// Intra-node (shared memory) bandwidth per rank, GB/s (as `allreduce_scale`).
    #[arg(long, default_value_t = 10.0)]
    shm_gbps: f64,
    /// Intra-node latency per message, µs (as `allreduce_scale`).
    #[arg(long, default_value_t = 1.0)]
    shm_us: f64,
    /// Examples per rank and step.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Ids per example and table (k).
    #[arg(long, default_value_t = 1)]
    ids_per_example: usize,
    /// Sharded tables (each looked up by its own id input).
    #[arg(long, default_value_t = 10)]
    tables: usize,
    /// Floats per row (d).
    #[arg(long, default_value_t = 1)]
    dim: usize,
    /// Rows per table (R).
    #[arg(long, default_value_t = 1 << 24)]
    rows: u64,
    /// Zipf exponents s of the id stream (0: uniform).
    #[arg(long, value_delimiter = ',', default_value = "0,1.05")]
    zipf: Vec<f64>,
    /// Partitions per table; default: specc's automatic ones at each N.
    #[arg(long)]
    partitions: Option<u64>,
    /// float32 parameters allreduced densely. Default: W5's 4 (the bias and
    /// three numeric columns' weights).
    #[arg(long, default_value_t = 4)]
    dense_params: usize,
    /// Per-rank compute of one step, ms. Default: W5's one pass, 0.447 s for
    /// 800,000 rows (docs/performance.md) = 3,125 steps of 256, 0.143 ms each.
    #[arg(long, default_value_t = 0.143)]
    compute_ms: f64,
    /// Simulated steps to average over.
    #[arg(long, default_value_t = 4)]
    steps: u64,
    /// Seed of the simulated id streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One JSON line per row instead of the tables.
    #[arg(long)]
    json: bool,
    /// Measure instead (under `mpirun`, built with `--features mpi`): this
    /// job's ranks run one simulated step's exchanges (step 0 of the
    /// stream), and rank 0 prints the median next to the model on one node.
    #[arg(long)]
    measure: bool,
    /// Timed repetitions of `--measure` (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Untimed repetitions before them.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
}

/// Latency of one pairwise all-to-all of `n` ranks, `g` per node: n−1
/// rounds, g−1 of them to ranks of the node.
fn pairwise_latency_s(n: usize, g: usize, net: Link, shm: Link) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let g = g.clamp(1, n);
    (g - 1) as f64 * shm.alpha_s + (n - g) as f64 * net.alpha_s
}

/// One pairwise `MPI_Alltoallv` of entries of `bytes` each whose busiest
/// node and rank carry `busy`: its latency plus the busiest node's network
/// bytes over β and the busiest rank's node bytes over β_s. (The busiest
/// node and the busiest rank need not be in the same round: a lower bound
/// on the bytes' time, an upper one on the latency.)
fn alltoallv_s(n: usize, g: usize, busy: Busiest, bytes: f64, net: Link, shm: Link) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    pairwise_latency_s(n, g, net, shm)
        + busy.net as f64 * bytes / net.beta
        + busy.shm as f64 * bytes / shm.beta
}

/// The all-to-all of the counts: 4 bytes from every rank to every other.
fn counts_busiest(n: usize, g: usize) -> Busiest {
    let g = g.clamp(1, n.max(1));
    let node = g.min(n) as u64;
    Busiest {
        net: node * (n as u64 - node),
        shm: node.saturating_sub(1),
        owner: n as u64,
        sender: n as u64,
    }
}

/// The time of one table's exchanges in one step, by phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Exchanges {
    /// Fetch: counts, ids (4 B each), rows (4·d B each, back).
    fetch_s: f64,
    /// Gradient: counts, local rows (4 B each), rows (4·d B each).
    grad_s: f64,
    /// The six all-to-alls' latency (in `fetch_s` and `grad_s`).
    latency_s: f64,
}

impl Exchanges {
    fn total_s(&self) -> f64 {
        self.fetch_s + self.grad_s
    }
}

/// The six all-to-alls of one table's step. Directions do not matter: each
/// all-to-all's time takes the larger of a node's (rank's) out and in.
fn table_exchanges(
    n: usize,
    g: usize,
    t: &TableStep,
    dim: usize,
    net: Link,
    shm: Link,
) -> Exchanges {
    let row = 4.0 * dim as f64;
    let counts = alltoallv_s(n, g, counts_busiest(n, g), 4.0, net, shm);
    Exchanges {
        fetch_s: counts
            + alltoallv_s(n, g, t.fetch, 4.0, net, shm)
            + alltoallv_s(n, g, t.fetch, row, net, shm),
        grad_s: counts
            + alltoallv_s(n, g, t.grad, 4.0, net, shm)
            + alltoallv_s(n, g, t.grad, row, net, shm),
        latency_s: 6.0 * pairwise_latency_s(n, g, net, shm),
    }
}

/// The dense allreduce: the fastest of the ring, recursive doubling (both
/// over the network) and, with g > 1, the hierarchical allreduce.
fn dense_allreduce_s(n: usize, g: usize, bytes: f64, net: Link, shm: Link) -> f64 {
    let mut t = ring_allreduce_s(n, bytes, net).min(recursive_doubling_allreduce_s(n, bytes, net));
    if g > 1 {
        t = t.min(hierarchical_allreduce_s(n, g, bytes, net, shm));
    }
    t
}

/// One simulation: a rank count and skew, every table and step.
struct Simulated {
    n: usize,
    s: f64,
    /// Ranks that own rows of a table (partitions on fewer ranks than N
    /// leave the rest without).
    owners: usize,
    partitions: usize,
    /// `[step][table]`.
    steps: Vec<Vec<TableStep>>,
    /// `[step]`: every table's entries in one all-to-all per exchange
    /// (the fused exchange specc runs, as TorchRec does).
    fused: Vec<TableStep>,
}

impl Simulated {
    fn run(args: &Args, n: usize, s: f64) -> Result<Simulated, String> {
        let zipf = Zipf::new(args.rows, s)?;
        let parts = table_partitions(args.rows, args.dim, n, args.partitions);
        let own = Ownership::new(&parts, n);
        let owners = (0..n).filter(|&r| !own.ranges(r).is_empty()).count();
        let (mut steps, mut fused) = (Vec::new(), Vec::new());
        for step in 0..args.steps {
            let (g, k) = (args.ranks_per_node, args.ids_per_example);
            let tables: Vec<TableCounts> = (0..args.tables as u64)
                .map(|t| simulate_table_step(n, g, args.batch, k, &zipf, &own, t, step, args.seed))
                .collect();
            let mut all = tables[0].clone();
            for t in &tables[1..] {
                all.distinct += t.distinct;
                all.fetch.merge(&t.fetch);
                all.grad.merge(&t.grad);
            }
            steps.push(tables.iter().map(TableCounts::busiest).collect());
            fused.push(all.busiest());
        }
        Ok(Simulated {
            n,
            s,
            owners,
            partitions: parts.len(),
            steps,
            fused,
        })
    }

    /// The mean over steps and tables of `f`.
    fn mean(&self, f: impl Fn(&TableStep) -> f64) -> f64 {
        let all: Vec<f64> = self.steps.iter().flatten().map(f).collect();
        all.iter().sum::<f64>() / all.len().max(1) as f64
    }

    /// The mean over steps of the sum over tables of `f`.
    fn per_step(&self, f: impl Fn(&TableStep) -> Exchanges) -> Exchanges {
        let mut e = Exchanges::default();
        for step in &self.steps {
            for t in step {
                let x = f(t);
                e.fetch_s += x.fetch_s;
                e.grad_s += x.grad_s;
                e.latency_s += x.latency_s;
            }
        }
        let k = self.steps.len().max(1) as f64;
        Exchanges {
            fetch_s: e.fetch_s / k,
            grad_s: e.grad_s / k,
            latency_s: e.latency_s / k,
        }
    }

    /// The mean over steps of `f` of the fused exchange.
    fn fused_per_step(&self, f: impl Fn(&TableStep) -> Exchanges) -> Exchanges {
        let k = self.fused.len().max(1) as f64;
        let mut e = Exchanges::default();
        for x in self.fused.iter().map(f) {
            e.fetch_s += x.fetch_s / k;
            e.grad_s += x.grad_s / k;
            e.latency_s += x.latency_s / k;
        }
        e
    }
}

/// A row of the model: one simulation on one link.
struct Row {
    link: Link,
    a2a: Exchanges,
    /// The same ids in six all-to-alls per step, all tables fused.
    fused: Exchanges,
    dense_s: f64,
    step_s: f64,
    fused_step_s: f64,
}

fn model_row(args: &Args, sim: &Simulated, link: Link, shm: Link) -> Row {
    let (n, g) = (sim.n, args.ranks_per_node);
    let a2a = sim.per_step(|t| table_exchanges(n, g, t, args.dim, link, shm));
    let fused = sim.fused_per_step(|t| table_exchanges(n, g, t, args.dim, link, shm));
    let dense_s = dense_allreduce_s(n, g, args.dense_params as f64 * 4.0, link, shm);
    let compute_s = args.compute_ms * 1e-3;
    Row {
        link,
        a2a,
        fused,
        fused_step_s: step_s(compute_s, dense_s + fused.total_s(), false),
        dense_s,
        step_s: step_s(compute_s, dense_s + a2a.total_s(), false),
    }
}

fn print_sim(args: &Args, sim: &Simulated) {
    let lookups = (args.batch * args.ids_per_example) as f64;
    let uniq = sim.mean(|t| t.distinct as f64) / sim.n as f64;
    println!();
    println!(
        "N = {}, Zipf s = {}: {} partitions on {} owners; per table, rank and step {} ids, \
         {:.1} distinct (dedup saves {:.1} %)",
        sim.n,
        sim.s,
        sim.partitions,
        sim.owners,
        lookups,
        uniq,
        100.0 * (1.0 - uniq / lookups)
    );
    let fair = |total: f64| total / sim.owners as f64;
    let fetch_owner = sim.mean(|t| t.fetch.owner as f64);
    let grad_owner = sim.mean(|t| t.grad.owner as f64);
    println!(
        "  busiest owner per table: fetch {:.0} ids ({:.2}x its fair share), gradient {:.0} \
         entries ({:.2}x); busiest sender {:.0} ids",
        fetch_owner,
        fetch_owner / fair(uniq * sim.n as f64),
        grad_owner,
        grad_owner / fair(lookups * sim.n as f64),
        sim.mean(|t| t.fetch.sender as f64),
    );
}

fn print_row(args: &Args, sim: &Simulated, r: &Row) {
    let compute_s = args.compute_ms * 1e-3;
    if args.json {
        let lookups = (args.batch * args.ids_per_example) as f64;
        let line = json!({
            "kind": "model",
            "link_gbit": r.link.gbit(),
            "alpha_us": r.link.alpha_s * 1e6,
            "ranks": sim.n,
            "ranks_per_node": args.ranks_per_node,
            "zipf": sim.s,
            "tables": args.tables,
            "dim": args.dim,
            "rows": args.rows,
            "batch": args.batch,
            "ids_per_example": args.ids_per_example,
            "partitions": sim.partitions,
            "owners": sim.owners,
            "ids_per_rank": lookups,
            "distinct_ids_per_rank": sim.mean(|t| t.distinct as f64) / sim.n as f64,
            "busiest_owner_fetch_ids": sim.mean(|t| t.fetch.owner as f64),
            "busiest_owner_grad_entries": sim.mean(|t| t.grad.owner as f64),
            "busiest_node_fetch_net_ids": sim.mean(|t| t.fetch.net as f64),
            "busiest_node_grad_net_entries": sim.mean(|t| t.grad.net as f64),
            "fetch_ms": r.a2a.fetch_s * 1e3,
            "grad_ms": r.a2a.grad_s * 1e3,
            "alltoall_ms": r.a2a.total_s() * 1e3,
            "alltoall_latency_ms": r.a2a.latency_s * 1e3,
            "dense_params": args.dense_params,
            "dense_ms": r.dense_s * 1e3,
            "compute_ms": args.compute_ms,
            "step_ms": r.step_s * 1e3,
            "efficiency": efficiency(compute_s, r.step_s),
            "fused_alltoall_ms": r.fused.total_s() * 1e3,
            "fused_alltoall_latency_ms": r.fused.latency_s * 1e3,
            "fused_step_ms": r.fused_step_s * 1e3,
            "fused_efficiency": efficiency(compute_s, r.fused_step_s),
            "steps_simulated": args.steps,
            "seed": args.seed,
        });
        println!("{line}");
        return;
    }
    println!(
        "  {:>4.0} Gbit/s {:>4.1} us | all-to-all {:>7.3} ms (fetch {:>6.3}, gradient {:>6.3}; \
         latency {:>6.3}) | dense {:>6.3} | step {:>7.3} ms, {:>3.0} % | fused: all-to-all \
         {:>6.3}, step {:>7.3} ms, {:>3.0} %",
        r.link.gbit(),
        r.link.alpha_s * 1e6,
        r.a2a.total_s() * 1e3,
        r.a2a.fetch_s * 1e3,
        r.a2a.grad_s * 1e3,
        r.a2a.latency_s * 1e3,
        r.dense_s * 1e3,
        r.step_s * 1e3,
        100.0 * efficiency(compute_s, r.step_s),
        r.fused.total_s() * 1e3,
        r.fused_step_s * 1e3,
        100.0 * efficiency(compute_s, r.fused_step_s),
    );
}

fn check(args: &Args) -> Result<(), String> {
    let positive = [
        ("--batch", args.batch),
        ("--ids-per-example", args.ids_per_example),
        ("--tables", args.tables),
        ("--dim", args.dim),
        ("--ranks-per-node", args.ranks_per_node),
        ("--steps", args.steps as usize),
        ("--reps", args.reps),
    ];
    if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
        return Err(format!("{name} must be positive"));
    }
    if args.rows == 0 || args.ranks.contains(&0) || args.partitions == Some(0) {
        return Err("--rows, --ranks and --partitions must be positive".into());
    }
    if (args.dim as u64)
        .checked_mul(4)
        .and_then(|row| row.checked_mul(args.rows))
        .is_none_or(|bytes| usize::try_from(bytes).is_err())
    {
        return Err(format!(
            "--rows {} of --dim {} floats: the table's bytes overflow",
            args.rows, args.dim
        ));
    }
    if !(args.shm_gbps > 0.0 && args.shm_us >= 0.0 && args.compute_ms >= 0.0) {
        return Err("--shm-gbps must be positive, --shm-us and --compute-ms not negative".into());
    }
    if let Some(s) = args.zipf.iter().find(|s| !(**s >= 0.0 && s.is_finite())) {
        return Err(format!("--zipf {s}: the exponent must be >= 0"));
    }
    Ok(())
}

/// `--measure`: one simulated step's exchanges on this job's ranks, timed,
/// beside the model of the same step with every rank on one node.
#[cfg(feature = "mpi")]
fn measured(args: &Args, shm: Link) -> Result<(), String> {
    use mpi::traits::Communicator;
    let universe = mpi::initialize().ok_or("MPI is already initialized")?;
    let world = universe.world();
    let n = world.size() as usize;
    for &s in &args.zipf {
        let zipf = Zipf::new(args.rows, s)?;
        let own = Ownership::new(
            &table_partitions(args.rows, args.dim, n, args.partitions),
            n,
        );
        let k = args.ids_per_example;
        let stream = (0, args.seed);
        let mut plan = measure::Plan::new(
            &world,
            args.tables,
            args.batch,
            k,
            args.dim,
            &zipf,
            &own,
            stream,
        );
        let t = measure::measure_step_s(&world, &mut plan, false, args.warmup, args.reps);
        let t_fused = measure::measure_step_s(&world, &mut plan, true, args.warmup, args.reps);
        if world.rank() != 0 {
            continue;
        }
        let one_node = Args {
            ranks_per_node: n,
            steps: 1,
            ..args.clone()
        };
        let sim = Simulated::run(&one_node, n, s)?;
        let row = model_row(&one_node, &sim, shm, shm);
        let (model, model_fused) = (row.a2a, row.fused);
        if args.json {
            let line = json!({
                "kind": "measured",
                "ranks": n,
                "zipf": s,
                "tables": args.tables,
                "dim": args.dim,
                "batch": args.batch,
                "alltoall_ms": t * 1e3,
                "model_one_node_alltoall_ms": model.total_s() * 1e3,
                "fused_alltoall_ms": t_fused * 1e3,
                "model_one_node_fused_alltoall_ms": model_fused.total_s() * 1e3,
                "reps": args.reps,
            });
            println!("{line}");
        } else {
            println!(
                "measured, {n} rank(s), Zipf s = {s}: one step's all-to-alls, table by table \
                 {:.3} ms, fused {:.3} ms (medians of {}, slowest rank); the model on one node \
                 ({} GB/s, {} us): {:.3} ms and {:.3} ms",
                t * 1e3,
                t_fused * 1e3,
                args.reps,
                args.shm_gbps,
                args.shm_us,
                model.total_s() * 1e3,
                model_fused.total_s() * 1e3
            );
        }
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = check(&args) {
        eprintln!("alltoall_scale: {e}");
        std::process::exit(2);
    }
    let shm = Link {
        alpha_s: args.shm_us * 1e-6,
        beta: args.shm_gbps * 1e9,
    };
    if args.measure {
        #[cfg(feature = "mpi")]
        let done = measured(&args, shm);
        #[cfg(not(feature = "mpi"))]
        let done: Result<(), String> =
            Err("--measure needs MPI: build with `--features mpi` and run under mpirun".into());
        if let Err(e) = done {
            eprintln!("alltoall_scale: {e}");
            std::process::exit(2);
        }
        return;
    }
    if !args.json {
        println!(
            "{} tables x {} rows x {} floats; batch {} per rank, {} ids per example and table; \
             {} dense float32; compute {} ms; {} rank(s) per node (shared memory {} GB/s, {} us); \
             mean of {} simulated steps, seed {}",
            args.tables,
            args.rows,
            args.dim,
            args.batch,
            args.ids_per_example,
            args.dense_params,
            args.compute_ms,
            args.ranks_per_node,
            args.shm_gbps,
            args.shm_us,
            args.steps,
            args.seed
        );
    }
    for &s in &args.zipf {
        for &n in &args.ranks {
            let sim = match Simulated::run(&args, n, s) {
                Ok(sim) => sim,
                Err(e) => {
                    eprintln!("alltoall_scale: {e}");
                    std::process::exit(2);
                }
            };
            if !args.json {
                print_sim(&args, &sim);
            }
            for &link in &args.link {
                print_row(&args, &sim, &model_row(&args, &sim, link, shm));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: Link = Link {
        alpha_s: 5e-6,
        beta: 12.5e9,
    };
    const SHM: Link = Link {
        alpha_s: 1e-6,
        beta: 10e9,
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
    }

    /// Frequencies of `draws` samples of ranks 1..=n.
    #[test]
    fn pairwise_latency_counts_rounds() {
        assert_eq!(pairwise_latency_s(1, 1, NET, SHM), 0.0);
        assert!(close(pairwise_latency_s(512, 1, NET, SHM), 511.0 * 5e-6));
        // 64 ranks, 8 per node: 7 rounds within the node, 56 across.
        assert!(close(
            pairwise_latency_s(64, 8, NET, SHM),
            7e-6 + 56.0 * 5e-6
        ));
        // One node.
        assert!(close(pairwise_latency_s(8, 8, NET, SHM), 7e-6));
    }

    #[test]
    fn alltoallv_time() {
        let busy = Busiest {
            net: 1000,
            shm: 100,
            owner: 0,
            sender: 0,
        };
        // 1000 rows of 256 B over 12.5 GB/s, 100 over 10 GB/s, 7 + 56 latencies.
        let t = alltoallv_s(64, 8, busy, 256.0, NET, SHM);
        assert!(close(
            t,
            7e-6 + 56.0 * 5e-6 + 256_000.0 / 12.5e9 + 25_600.0 / 10e9
        ));
        assert_eq!(alltoallv_s(1, 1, busy, 256.0, NET, SHM), 0.0);
        // The counts: 4 B to each of the other ranks.
        let c = counts_busiest(64, 8);
        assert_eq!((c.net, c.shm), (8 * 56, 7));
        assert_eq!(counts_busiest(8, 1).net, 7);
    }

    #[test]
    fn a_tables_six_exchanges() {
        let t = TableStep {
            distinct: 0,
            fetch: Busiest {
                net: 200,
                ..Busiest::default()
            },
            grad: Busiest {
                net: 300,
                ..Busiest::default()
            },
        };
        let e = table_exchanges(8, 1, &t, 64, NET, SHM);
        let lat = 7.0 * 5e-6;
        let counts = lat + 7.0 * 4.0 / 12.5e9;
        assert!(close(
            e.fetch_s,
            counts + 2.0 * lat + 200.0 * (4.0 + 256.0) / 12.5e9
        ));
        assert!(close(
            e.grad_s,
            counts + 2.0 * lat + 300.0 * (4.0 + 256.0) / 12.5e9
        ));
        assert!(close(e.latency_s, 6.0 * lat));
        assert!(close(e.total_s(), e.fetch_s + e.grad_s));
    }

    #[test]
    fn dense_term_takes_the_fastest_allreduce() {
        // W5's 16 bytes at 512 ranks: recursive doubling's 9 rounds.
        assert!(close(
            dense_allreduce_s(512, 1, 16.0, NET, SHM),
            recursive_doubling_allreduce_s(512, 16.0, NET)
        ));
        // 2 MB at 8 ranks: the ring.
        assert!(close(
            dense_allreduce_s(8, 1, 2e6, NET, SHM),
            ring_allreduce_s(8, 2e6, NET)
        ));
        // 8 MB at 512 ranks, 8 per node: the hierarchical one (4.7 ms; the
        // ring 6.4, recursive doubling 5.8).
        let h = hierarchical_allreduce_s(512, 8, 8e6, NET, SHM);
        assert!(close(dense_allreduce_s(512, 8, 8e6, NET, SHM), h));
        assert!(h < recursive_doubling_allreduce_s(512, 8e6, NET));
        assert!(h < ring_allreduce_s(512, 8e6, NET));
        let node = allreduce_model::reduce_to_one_s(8, 8e6, SHM);
        assert!(close(2.0 * node + ring_allreduce_s(64, 8e6, NET), h));
        // 2 MB at 512 ranks: recursive doubling's 9 rounds beat both.
        assert!(close(
            dense_allreduce_s(512, 8, 2e6, NET, SHM),
            recursive_doubling_allreduce_s(512, 2e6, NET)
        ));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let parse = |extra: &[&str]| {
            let mut v = vec!["alltoall_scale"];
            v.extend_from_slice(extra);
            check(&Args::try_parse_from(v).unwrap())
        };
        assert!(parse(&[]).is_ok());
        assert!(parse(&["--batch", "0"]).unwrap_err().contains("--batch"));
        assert!(parse(&["--zipf=-1"]).unwrap_err().contains("--zipf"));
        assert!(parse(&["--ranks", "8,0"]).is_err());
        let huge = parse(&["--rows", "1000000000000000000", "--dim", "64"]);
        assert!(huge.unwrap_err().contains("overflow"));
        assert!(parse(&["--rows", "10000000", "--dim", "64"]).is_ok());
        assert!(Args::try_parse_from(["a", "--link", "100"]).is_err());
    }
}
