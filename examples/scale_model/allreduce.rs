//! The α–β cost model of an allreduce that `allreduce_scale` and
//! `alltoall_scale` share (`#[path]` modules of both examples; cargo builds
//! no example of its own from this directory, which has no `main.rs`).
//!
//! Owns: [`Link`] (α seconds per message, β bytes/s) and its `GBIT:US`
//! parsing, the ring, recursive-doubling and hierarchical allreduce times,
//! and the step time and efficiency from compute and communication.
//! Invariants: every time is 0 for one rank; times never decrease with the
//! bytes or (for the ring) with the ranks.

/// A link of the cost model: `alpha_s` seconds per message, `beta` bytes/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub alpha_s: f64,
    pub beta: f64,
}

impl Link {
    pub fn gbit(self) -> f64 {
        self.beta * 8.0 / 1e9
    }
}

/// `GBIT:US` (e.g. `100:5`, 100 Gbit/s and 5 µs) as a [`Link`].
pub fn parse_link(s: &str) -> Result<Link, String> {
    let (gbit, us) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected GBIT:LATENCY_US, e.g. 100:5"))?;
    let gbit: f64 = gbit.trim().parse().map_err(|e| format!("`{gbit}`: {e}"))?;
    let us: f64 = us.trim().parse().map_err(|e| format!("`{us}`: {e}"))?;
    if !(gbit > 0.0 && gbit.is_finite() && us >= 0.0 && us.is_finite()) {
        return Err(format!("`{s}`: bandwidth must be > 0 and latency >= 0"));
    }
    Ok(Link {
        alpha_s: us / 1e6,
        beta: gbit * 1e9 / 8.0,
    })
}

/// Ring allreduce of `bytes` over `n` ranks (reduce-scatter, then allgather):
/// 2(n−1) steps, each one message of bytes/n per rank, so
/// 2(n−1)·α + 2(n−1)/n · bytes/β. Every step waits for the slowest hop, so
/// with several ranks per node the network link bounds it. Zero for n ≤ 1.
pub fn ring_allreduce_s(n: usize, bytes: f64, link: Link) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    2.0 * (n - 1.0) * link.alpha_s + 2.0 * (n - 1.0) / n * bytes / link.beta
}

/// Recursive-doubling allreduce of `bytes` over `n` ranks (what Open MPI
/// picks for small messages): ⌈log2 n⌉ rounds, each exchanging all the
/// bytes, so ⌈log2 n⌉·(α + bytes/β). Zero for n ≤ 1.
#[allow(dead_code)] // `alltoall_scale`'s, not `allreduce_scale`'s
pub fn recursive_doubling_allreduce_s(n: usize, bytes: f64, link: Link) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let rounds = f64::from(usize::BITS - (n - 1).leading_zeros());
    rounds * (link.alpha_s + bytes / link.beta)
}

/// Reduce of `bytes` from `g` ranks to one (a ring reduce-scatter, then a
/// gather to the leader): 2(g−1)·α + 2(g−1)/g · bytes/β. A broadcast (scatter,
/// then ring allgather) costs the same.
pub fn reduce_to_one_s(g: usize, bytes: f64, link: Link) -> f64 {
    // The same two half-rings as an allreduce, the second one ending at the leader.
    ring_allreduce_s(g, bytes, link)
}

/// Hierarchical allreduce over `n` ranks, `g` per node: the node's ranks reduce
/// to a leader over shared memory (`shm`), the ⌈n/g⌉ leaders run a ring over
/// the network (`net`), the leaders broadcast over shared memory.
pub fn hierarchical_allreduce_s(n: usize, g: usize, bytes: f64, net: Link, shm: Link) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let g = g.clamp(1, n);
    let nodes = n.div_ceil(g);
    2.0 * reduce_to_one_s(g, bytes, shm) + ring_allreduce_s(nodes, bytes, net)
}

/// Step time from per-rank compute and allreduce time: communication after
/// the backward pass (`compute + comm`), or fully hidden behind it
/// (`max(compute, comm)`, the best overlap can do).
pub fn step_s(compute_s: f64, comm_s: f64, overlap: bool) -> f64 {
    if overlap {
        compute_s.max(comm_s)
    } else {
        compute_s + comm_s
    }
}

/// Weak-scaling efficiency: N ranks do N times one rank's work in `step_s`
/// instead of `compute_s`, so the efficiency is compute / step.
pub fn efficiency(compute_s: f64, step_s: f64) -> f64 {
    compute_s / step_s
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: Link = Link {
        alpha_s: 5e-6,
        beta: 12.5e9,
    };

    /// W3 `wide_mlp`'s gradient bytes (`allreduce_scale`'s `W3_PARAMS` · 4).
    const W3_BYTES: f64 = 7_454_760.0;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
    }

    #[test]
    fn links_parse() {
        assert_eq!(parse_link("100:5").unwrap(), NET);
        assert_eq!(parse_link("25:5").unwrap().beta, 3.125e9);
        assert_eq!(parse_link("25:5").unwrap().gbit(), 25.0);
        assert!(parse_link("100").is_err());
        assert!(parse_link("0:5").is_err());
        assert!(parse_link("100:-1").is_err());
        assert!(parse_link("x:5").is_err());
    }

    #[test]
    fn ring_cost() {
        assert_eq!(ring_allreduce_s(1, 1e9, NET), 0.0);
        // N = 2: 2 steps of α, each rank sends bytes/2 twice.
        assert!(close(ring_allreduce_s(2, 12.5e9, NET), 2.0 * 5e-6 + 1.0));
        // N = 512, W3: 2·511·5 µs = 5.11 ms latency + 2·511/512 · 7,454,760 / 12.5e9.
        let t = ring_allreduce_s(512, W3_BYTES, NET);
        assert!(close(t, 5.11e-3 + 2.0 * 511.0 / 512.0 * W3_BYTES / 12.5e9));
        // The bandwidth term tends to 2·bytes/β, the latency term grows with N.
        let no_latency = Link {
            alpha_s: 0.0,
            ..NET
        };
        assert!(ring_allreduce_s(512, W3_BYTES, no_latency) < 2.0 * W3_BYTES / NET.beta);
        assert!(ring_allreduce_s(64, W3_BYTES, NET) < ring_allreduce_s(512, W3_BYTES, NET));
    }

    #[test]
    fn recursive_doubling_cost() {
        assert_eq!(recursive_doubling_allreduce_s(1, 16.0, NET), 0.0);
        // 512 ranks: 9 rounds of 5 µs plus 16 bytes each.
        assert!(close(
            recursive_doubling_allreduce_s(512, 16.0, NET),
            9.0 * (5e-6 + 16.0 / 12.5e9)
        ));
        // 5 ranks need 3 rounds, 2 ranks 1.
        assert!(close(recursive_doubling_allreduce_s(5, 0.0, NET), 15e-6));
        assert!(close(recursive_doubling_allreduce_s(2, 0.0, NET), 5e-6));
        // Small messages: fewer latencies than the ring; W3's gradient: more bytes.
        assert!(recursive_doubling_allreduce_s(512, 16.0, NET) < ring_allreduce_s(512, 16.0, NET));
        assert!(
            recursive_doubling_allreduce_s(8, W3_BYTES, NET) > ring_allreduce_s(8, W3_BYTES, NET)
        );
    }

    #[test]
    fn hierarchical_cost() {
        let shm = Link {
            alpha_s: 1e-6,
            beta: 10e9,
        };
        let bytes = 8e6;
        // One node: only the two shared-memory phases.
        assert!(close(
            hierarchical_allreduce_s(8, 8, bytes, NET, shm),
            2.0 * (14.0 * 1e-6 + 14.0 / 8.0 * bytes / 10e9)
        ));
        // G = 1 is the plain ring.
        assert!(close(
            hierarchical_allreduce_s(64, 1, bytes, NET, shm),
            ring_allreduce_s(64, bytes, NET)
        ));
        // 512 ranks, 8 per node: a ring of 64 nodes plus the node phases.
        let t = hierarchical_allreduce_s(512, 8, bytes, NET, shm);
        assert!(close(
            t,
            2.0 * ring_allreduce_s(8, bytes, shm) + ring_allreduce_s(64, bytes, NET)
        ));
        // At 512 ranks the ring's 1022 latencies cost more than the node phases.
        assert!(t < ring_allreduce_s(512, bytes, NET));
        assert_eq!(hierarchical_allreduce_s(1, 8, bytes, NET, shm), 0.0);
    }

    #[test]
    fn steps_and_efficiency() {
        assert_eq!(step_s(10e-3, 4e-3, false), 14e-3);
        assert_eq!(step_s(10e-3, 4e-3, true), 10e-3);
        assert_eq!(step_s(10e-3, 14e-3, true), 14e-3);
        assert_eq!(efficiency(10e-3, 10e-3), 1.0);
        assert!(close(efficiency(10e-3, 12.5e-3), 0.8));
    }
}
