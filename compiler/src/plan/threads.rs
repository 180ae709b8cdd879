//! The cost model and the threading decisions.
//!
//! Owns: an estimate of the seconds of work of a node and of a kernel at the
//! largest batch (GEMMs at 100 GFLOP/s, memory-bound loops at 10 GB/s), and
//! from it two decisions: whether a function runs on one thread or two
//! ([`function_threads`]), and, in a two-thread function, whether each kernel
//! is split between the threads or run by thread 0 alone ([`kernel_modes`]).
//!
//! Invariants: only what can be split without changing results is marked
//! `Mode::Split` — a GEMM (each thread owns a block of C) or a loop with a
//! kept dimension (codegen splits along it, never along a reduced one);
//! argmax and row kernels always run whole (row kernels visit ids in order);
//! a one-thread function has only `Mode::Single` kernels.

use super::{Kernel, Mode};
use crate::ir::{Dim, Graph, NodeId, Op, Shape};

/// Work below which a function runs on one thread (thread start and barriers cost microseconds).
const PARALLEL_FUNCTION_SECONDS: f64 = 300e-6;
/// Work below which a kernel of a parallel function runs on thread 0 alone.
const PARALLEL_KERNEL_SECONDS: f64 = 10e-6;

/// Estimated seconds of work of a node at `batch` (for threading decisions).
fn cost(g: &Graph, n: NodeId, batch: u64) -> f64 {
    let node = g.node(n);
    match &node.op {
        Op::MatMul { .. } | Op::BatchMatMul { .. } => {
            let (a, b) = (g.shape(node.inputs[0]), g.shape(node.inputs[1]));
            let elems = |s: &Shape| s.numel(batch) as f64;
            // 2 m n k flops = 2 * |a| * |b| / k ... computed from the output: m n and k.
            let out = elems(&node.shape);
            let k = (elems(a) * elems(b) / out.max(1.0)).sqrt();
            2.0 * out * k / 100e9
        }
        op if op.is_elementwise() || matches!(op, Op::Reduce { .. }) => {
            node.shape
                .numel(batch)
                .max(g.shape(node.inputs[0]).numel(batch)) as f64
                * 8.0
                / 10e9
        }
        _ => 0.0,
    }
}

/// Threads a function with the live nodes `live` runs on: two when `threads`
/// allows it and its work at `batch` pays for starting them, else one.
pub(super) fn function_threads(g: &Graph, live: &[bool], batch: u64, threads: usize) -> u32 {
    let total: f64 = (0..g.len())
        .filter(|&i| live[i])
        .map(|i| cost(g, NodeId(i as u32), batch))
        .sum();
    if threads >= 2 && total >= PARALLEL_FUNCTION_SECONDS {
        2
    } else {
        1
    }
}

/// How the `threads` threads of a function share each of its kernels.
pub(super) fn kernel_modes(g: &Graph, kernels: &[Kernel], batch: u64, threads: u32) -> Vec<Mode> {
    kernels
        .iter()
        .map(|k| {
            let (work, splittable) = match k {
                Kernel::Gemm { node, .. } => (cost(g, *node, batch), true),
                Kernel::ArgMax { .. } | Kernel::Rows(_) => (0.0, false),
                Kernel::Window(w) => {
                    let n = g.shape(w.node).numel(batch) as f64;
                    (n * 8.0 / 10e9, true)
                }
                Kernel::Loop(l) => {
                    let all_reduced = !l.reductions.is_empty()
                        && (0..l.domain.rank())
                            .all(|a| l.reduce_axes.contains(&a) || l.domain.0[a] == Dim::Fixed(1));
                    // A reduction whose kept elements are a short run at the
                    // end (a bias gradient: [B, H, W] reduced, C kept) would
                    // split that run: each thread sweeps every row for a few
                    // lanes, slower than one thread sweeping them once.
                    let kept: Vec<usize> = (0..l.domain.rank())
                        .filter(|a| !l.reduce_axes.contains(a))
                        .collect();
                    let trailing = kept
                        .iter()
                        .enumerate()
                        .all(|(i, &a)| a == l.domain.rank() - kept.len() + i);
                    let short_run = !l.reductions.is_empty()
                        && trailing
                        && kept
                            .iter()
                            .map(|&a| l.domain.0[a].fixed().map_or(u64::MAX, u64::from))
                            .fold(1u64, u64::saturating_mul)
                            <= 256;
                    let all_reduced = all_reduced || short_run;
                    let n = l.domain.numel(batch) as f64;
                    (
                        n * 4.0 * (1 + l.sources.len() + l.stores.len()) as f64 / 10e9,
                        !all_reduced,
                    )
                }
            };
            if threads > 1 && splittable && work >= PARALLEL_KERNEL_SECONDS {
                Mode::Split
            } else {
                Mode::Single
            }
        })
        .collect()
}
