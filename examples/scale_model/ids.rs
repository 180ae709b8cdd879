//! The id stream of sharded tables, simulated: which ids each rank of a
//! step sends to which owner, and over which path (`alltoall_scale`'s
//! `#[path]` module).
//!
//! Owns: [`Zipf`] (rejection-inversion sampling of Zipf ranks), the hash of
//! a Zipf rank to a row ([`hashed_row`]), the partitions of a table
//! ([`table_partitions`], specc's own), and [`simulate_table_step`]: per
//! rank, b·k lookups deduplicated in first-occurrence order (the fetch) and
//! not (the gradient), each routed to its row's owner, counted in
//! [`Counters`] by path (the rank itself, its node's shared memory, the
//! network) and reduced to the loads that time an all-to-all ([`Busiest`]).
//! Invariants: deterministic in (seed, table, step, rank); every lookup is
//! one gradient entry; a rank's fetch ids are at most its lookups.

use std::collections::HashSet;

use specc_compiler::optim::sharded::{min_max_partitions, partition_rows, AUTO_MIN_SLICE_BYTES};
use specc_runtime::prng::{mix, SplitMix64};
use specc_runtime::train::sharded::Ownership;

/// Zipf(s) over ranks 1..=n, P(x) ∝ x^−s, by rejection-inversion (Hörmann
/// and Derflinger, 1996): no table, O(1) per sample for any n. The envelope
/// is 1 on [0, 1] and y^−s beyond; x = ⌊y⌋ + 1 is accepted with
/// probability x^−s / y^−s (1 when y ≤ 1).
#[derive(Clone, Copy, Debug)]
pub struct Zipf {
    pub n: u64,
    pub s: f64,
    /// The envelope's total mass, ∫₀ⁿ.
    pub t: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Result<Zipf, String> {
        if n == 0 || !(s >= 0.0 && s.is_finite()) {
            return Err(format!(
                "Zipf over {n} ranks with s = {s}: need n > 0, s >= 0"
            ));
        }
        let nf = n as f64;
        let t = if s == 1.0 {
            1.0 + nf.ln()
        } else {
            (nf.powf(1.0 - s) - s) / (1.0 - s)
        };
        Ok(Zipf { n, s, t })
    }

    /// The envelope's inverse CDF at `p` ∈ [0, 1).
    fn inv_envelope(&self, p: f64) -> f64 {
        let pt = p * self.t;
        if pt <= 1.0 {
            pt
        } else if self.s == 1.0 {
            (pt - 1.0).exp()
        } else {
            (pt * (1.0 - self.s) + self.s).powf(1.0 / (1.0 - self.s))
        }
    }

    /// One rank in 1..=n.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        loop {
            let y = self.inv_envelope(rng.uniform01_f64());
            let x = (y + 1.0).floor();
            let ratio = if x > 1.0 { (y / x).powf(self.s) } else { 1.0 };
            if rng.uniform01_f64() < ratio {
                return (x as u64).clamp(1, self.n);
            }
        }
    }
}

/// The row Zipf rank `z` lands on in table `table` of `rows`: a hash bucket,
/// each table its own hash, so two tables' hot ids have unrelated rows.
pub fn hashed_row(z: u64, table: u64, rows: u64) -> u64 {
    mix(z ^ mix(table.wrapping_add(0x5eed))) % rows
}

/// The partitions of a table at `n` ranks: `fixed` if given (at most the
/// rows), else specc's automatic ones (`specc_compiler::optim::sharded`).
pub fn table_partitions(rows: u64, dim: usize, n: usize, fixed: Option<u64>) -> Vec<usize> {
    let p = fixed.unwrap_or_else(|| {
        min_max_partitions(rows, dim as u64 * 4, n as u64, AUTO_MIN_SLICE_BYTES)
    });
    partition_rows(rows, p)
        .into_iter()
        .map(|r| r as usize)
        .collect()
}

/// Entries (ids, or gradient entries) one all-to-all moves, counted by who
/// sends and receives them and over which path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    /// Per rank: entries it sends and receives (its own included).
    pub sent: Vec<u64>,
    pub received: Vec<u64>,
    /// Per rank: to and from ranks of its node, itself excluded.
    pub shm_out: Vec<u64>,
    pub shm_in: Vec<u64>,
    /// Per node: off the node and onto it.
    pub net_out: Vec<u64>,
    pub net_in: Vec<u64>,
}

impl Counters {
    pub fn new(n: usize, g: usize) -> Counters {
        let nodes = n.div_ceil(g);
        Counters {
            sent: vec![0; n],
            received: vec![0; n],
            shm_out: vec![0; n],
            shm_in: vec![0; n],
            net_out: vec![0; nodes],
            net_in: vec![0; nodes],
        }
    }

    /// One entry from rank `src` to rank `dst`, `g` ranks per node.
    pub fn add(&mut self, src: usize, dst: usize, g: usize) {
        self.sent[src] += 1;
        self.received[dst] += 1;
        if src == dst {
            return;
        }
        if src / g == dst / g {
            self.shm_out[src] += 1;
            self.shm_in[dst] += 1;
        } else {
            self.net_out[src / g] += 1;
            self.net_in[dst / g] += 1;
        }
    }

    /// Adds `other`'s entries (another table's, for one fused all-to-all).
    pub fn merge(&mut self, other: &Counters) {
        let pairs = [
            (&mut self.sent, &other.sent),
            (&mut self.received, &other.received),
            (&mut self.shm_out, &other.shm_out),
            (&mut self.shm_in, &other.shm_in),
            (&mut self.net_out, &other.net_out),
            (&mut self.net_in, &other.net_in),
        ];
        for (a, b) in pairs {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    pub fn busiest(&self) -> Busiest {
        let max2 = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| *x.max(y)).max();
        Busiest {
            net: max2(&self.net_out, &self.net_in).unwrap_or(0),
            shm: max2(&self.shm_out, &self.shm_in).unwrap_or(0),
            owner: self.received.iter().copied().max().unwrap_or(0),
            sender: self.sent.iter().copied().max().unwrap_or(0),
        }
    }
}

/// The loads that time one all-to-all, in entries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Busiest {
    /// The busiest node's network entries: max over nodes of max(out, in).
    pub net: u64,
    /// The busiest rank's entries to or from its node's other ranks.
    pub shm: u64,
    /// The most entries any rank receives, its own included (the busiest owner).
    pub owner: u64,
    /// The most entries any rank sends, its own included.
    pub sender: u64,
}

/// One table's entries in one step, by path.
#[derive(Clone, Debug, PartialEq)]
pub struct TableCounts {
    pub distinct: u64,
    pub fetch: Counters,
    pub grad: Counters,
}

impl TableCounts {
    pub fn busiest(&self) -> TableStep {
        TableStep {
            distinct: self.distinct,
            fetch: self.fetch.busiest(),
            grad: self.grad.busiest(),
        }
    }
}

/// One table's traffic in one step (or every table's, fused).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TableStep {
    /// The distinct ids, summed over ranks.
    pub distinct: u64,
    /// The fetch: distinct ids to their owners (and rows back).
    pub fetch: Busiest,
    /// The gradient: every lookup's entry to its owner.
    pub grad: Busiest,
}

/// Where one table's stream puts rank `r`'s lookups in step `step`: for
/// each of its `batch`·`k` ids, in order, `visit(owner, first)` with the
/// row's owner and whether the id is the first of its row in this rank's
/// batch (the fetch sends those; the gradient sends them all). Returns the
/// distinct ids. Deterministic in (`seed`, `table`, `step`, `r`).
#[allow(clippy::too_many_arguments)]
pub fn rank_lookups(
    r: usize,
    batch: usize,
    k: usize,
    zipf: &Zipf,
    own: &Ownership,
    (table, step, seed): (u64, u64, u64),
    seen: &mut HashSet<u64>,
    mut visit: impl FnMut(usize, bool),
) -> u64 {
    let stream = mix(seed ^ mix(table ^ mix(step ^ mix(r as u64))));
    let mut rng = SplitMix64::new(stream);
    seen.clear();
    for _ in 0..batch * k {
        let row = hashed_row(zipf.sample(&mut rng), table, own.rows() as u64);
        visit(own.locate(row as usize).0, seen.insert(row));
    }
    seen.len() as u64
}

/// Simulates table `table`'s ids in step `step` on `n` ranks, `g` per node
/// ([`rank_lookups`] of every rank): each distinct id to its owner (the
/// fetch), each lookup's gradient entry (the gradient).
#[allow(clippy::too_many_arguments)]
pub fn simulate_table_step(
    n: usize,
    g: usize,
    batch: usize,
    k: usize,
    zipf: &Zipf,
    own: &Ownership,
    table: u64,
    step: u64,
    seed: u64,
) -> TableCounts {
    let g = g.clamp(1, n.max(1));
    let (mut fetch, mut grad) = (Counters::new(n, g), Counters::new(n, g));
    let mut seen = HashSet::with_capacity(batch * k);
    let mut distinct = 0;
    for r in 0..n {
        let stream = (table, step, seed);
        distinct += rank_lookups(r, batch, k, zipf, own, stream, &mut seen, |owner, first| {
            grad.add(r, owner, g);
            if first {
                fetch.add(r, owner, g);
            }
        });
    }
    TableCounts {
        distinct,
        fetch,
        grad,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(z: &Zipf, draws: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        let mut h = vec![0.0; z.n as usize];
        for _ in 0..draws {
            let x = z.sample(&mut rng);
            assert!((1..=z.n).contains(&x));
            h[x as usize - 1] += 1.0 / draws as f64;
        }
        h
    }

    #[test]
    fn zipf_matches_its_pmf() {
        for s in [0.0, 0.5, 1.0, 1.05, 2.0] {
            let z = Zipf::new(6, s).unwrap();
            let norm: f64 = (1..=6).map(|x| (x as f64).powf(-s)).sum();
            let h = histogram(&z, 400_000, 7);
            for (i, f) in h.iter().enumerate() {
                let p = ((i + 1) as f64).powf(-s) / norm;
                // 4 standard deviations of a frequency of 400,000 draws.
                let sd = (p * (1.0 - p) / 400_000.0).sqrt();
                assert!(
                    (f - p).abs() < 4.0 * sd,
                    "s = {s}, rank {}: {f} vs {p}",
                    i + 1
                );
            }
        }
    }

    #[test]
    fn zipf_over_many_rows_has_its_head() {
        // s = 1.05 over 2^24: P(1) = 1 / Σ x^-1.05, the sum ≈ ζ(1.05) − the
        // tail's ∫ = 20.58 − n^-0.05/0.05 = 20.58 − 8.71 = 11.87 (±0.02).
        let z = Zipf::new(1 << 24, 1.05).unwrap();
        let h = histogram(&z, 200_000, 3);
        let p1 = 1.0 / 11.87;
        assert!((h[0] - p1).abs() < 0.003, "{} vs {p1}", h[0]);
        assert!((h[1] - p1 * 2f64.powf(-1.05)).abs() < 0.003);
        assert!(Zipf::new(0, 1.0).is_err());
        assert!(Zipf::new(10, -1.0).is_err());
        assert!(Zipf::new(10, f64::NAN).is_err());
    }

    #[test]
    fn hashed_rows_are_fixed_per_table_and_in_range() {
        let rows = 1000;
        for z in 1..200 {
            assert!(hashed_row(z, 0, rows) < rows);
            assert_eq!(hashed_row(z, 3, rows), hashed_row(z, 3, rows));
        }
        // Another table hashes the hot ids elsewhere.
        let moved = (1..100)
            .filter(|&z| hashed_row(z, 0, rows) != hashed_row(z, 1, rows))
            .count();
        assert!(moved > 90);
    }

    #[test]
    fn partitions_follow_specc() {
        // W5 at 2^24 rows of 4 bytes: 64 MiB = 256 slices of 256 KiB.
        assert_eq!(table_partitions(1 << 24, 1, 8, None).len(), 8);
        assert_eq!(table_partitions(1 << 24, 1, 512, None).len(), 256);
        // DLRM: 10^7 rows of 256 bytes = 9,766 slices, capped at N.
        assert_eq!(table_partitions(10_000_000, 64, 512, None).len(), 512);
        let p = table_partitions(10, 1, 4, Some(3));
        assert_eq!(p, vec![4, 3, 3]);
    }

    #[test]
    fn counters_split_node_and_network() {
        // 4 ranks, 2 per node: nodes {0, 1} and {2, 3}.
        let mut c = Counters::new(4, 2);
        c.add(0, 0, 2); // itself: no path
        c.add(1, 0, 2); // within node 0
        c.add(2, 0, 2); // node 1 to node 0
        c.add(3, 0, 2);
        c.add(0, 3, 2); // node 0 to node 1
        assert_eq!(c.received, vec![4, 0, 0, 1]);
        assert_eq!(c.sent, vec![2, 1, 1, 1]);
        assert_eq!((c.shm_out, c.shm_in), (vec![0, 1, 0, 0], vec![1, 0, 0, 0]));
        assert_eq!((c.net_out, c.net_in), (vec![1, 2], vec![2, 1]));
        let mut c = Counters::new(4, 2);
        c.add(1, 0, 2);
        c.add(2, 0, 2);
        c.add(3, 0, 2);
        c.add(0, 3, 2);
        c.add(0, 0, 2);
        assert_eq!(
            c.busiest(),
            Busiest {
                net: 2,
                shm: 1,
                owner: 4,
                sender: 2
            }
        );
    }

    #[test]
    fn fused_counters_add_up() {
        let z = Zipf::new(1000, 1.05).unwrap();
        let own = Ownership::new(&table_partitions(1000, 1, 4, Some(4)), 4);
        let a = simulate_table_step(4, 2, 16, 2, &z, &own, 0, 0, 5);
        let b = simulate_table_step(4, 2, 16, 2, &z, &own, 1, 0, 5);
        let mut all = a.fetch.clone();
        all.merge(&b.fetch);
        for r in 0..4 {
            assert_eq!(all.sent[r], a.fetch.sent[r] + b.fetch.sent[r]);
            assert_eq!(all.shm_in[r], a.fetch.shm_in[r] + b.fetch.shm_in[r]);
        }
        assert_eq!(all.net_out[1], a.fetch.net_out[1] + b.fetch.net_out[1]);
        // Every rank's 32 lookups leave it, once per table.
        let mut grad = a.grad.clone();
        grad.merge(&b.grad);
        assert_eq!(grad.sent, vec![64; 4]);
        assert_eq!(grad.received.iter().sum::<u64>(), 4 * 64);
    }

    /// One row: every id is row 0, on rank 0.
    #[test]
    fn one_row_goes_to_one_owner() {
        let z = Zipf::new(1, 0.0).unwrap();
        let own = Ownership::new(&[1], 4);
        let t = simulate_table_step(4, 1, 3, 2, &z, &own, 0, 0, 9).busiest();
        // Each rank sends 1 distinct id; rank 0 keeps its own.
        assert_eq!(t.distinct, 4);
        assert_eq!(
            t.fetch,
            Busiest {
                net: 3,
                shm: 0,
                owner: 4,
                sender: 1
            }
        );
        // Every one of the 4·3·2 lookups sends its gradient entry.
        assert_eq!(
            t.grad,
            Busiest {
                net: 18,
                shm: 0,
                owner: 24,
                sender: 6
            }
        );
        // Two ranks per node: rank 1's entries go over shared memory.
        let t = simulate_table_step(4, 2, 3, 2, &z, &own, 0, 0, 9).busiest();
        assert_eq!((t.fetch.net, t.fetch.shm), (2, 1));
        assert_eq!((t.grad.net, t.grad.shm), (12, 6));
    }

    #[test]
    fn uniform_ids_over_many_rows_barely_repeat() {
        // 256 uniform ids over 2^24 rows: 256·255/2 / 2^24 = 0.002 expected
        // repeats per rank; 8 ranks spread evenly over 8 owners.
        let z = Zipf::new(1 << 24, 0.0).unwrap();
        let own = Ownership::new(&table_partitions(1 << 24, 1, 8, None), 8);
        let t = simulate_table_step(8, 1, 256, 1, &z, &own, 0, 0, 1).busiest();
        assert!(t.distinct >= 8 * 256 - 1);
        // Each owner gets about 256 of the 2,048; the busiest a few sd more.
        assert!((256..330).contains(&t.grad.owner), "{}", t.grad.owner);
        // Deterministic in the seed, not in the table.
        let again = |table| simulate_table_step(8, 1, 256, 1, &z, &own, table, 0, 1).busiest();
        assert_eq!(t, again(0));
        assert_ne!(t, again(1));
    }

    #[test]
    fn skewed_ids_repeat_and_load_the_hot_owner() {
        // s = 1.05 over 2^24: rank 1 has P ≈ 1/11.87, so about 22 of a
        // rank's 256 lookups; deduplication keeps one.
        let rows = 1 << 24;
        let z = Zipf::new(rows, 1.05).unwrap();
        let own = Ownership::new(&table_partitions(rows, 1, 8, None), 8);
        let t = simulate_table_step(8, 1, 256, 1, &z, &own, 0, 0, 1).busiest();
        let per_rank = t.distinct as f64 / 8.0;
        assert!(per_rank < 0.8 * 256.0, "{per_rank}");
        // The hot ids' owner receives each rank's ~22 entries of rank 1
        // alone, beyond its even share of 256 entries.
        assert!(t.grad.owner as f64 > 256.0 + 8.0 * 15.0, "{}", t.grad.owner);
    }
}
