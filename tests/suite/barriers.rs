//! The barriers of two-thread plans against the exact bytes each thread
//! touches: between two barriers, no thread writes a byte the other reads
//! or writes, at every batch size tried (the plans are laid out for the
//! spec's batch; the last batch of an epoch is smaller).
//!
//! Loops and single products are enumerated element by element over each
//! thread's part, from the levels and cuts codegen emits (`plan::nest`), so
//! a barrier the analysis (`plan::threads::syncs`) leaves out between two
//! kernels split alike (a product's rows, then the loops over them) is
//! checked here without its reasoning. Other kernels count as their whole
//! buffers on the threads that run them (a split one's two parts are not
//! compared with each other: codegen gives each thread its own images or
//! groups). Scalars are read by both threads before each kernel.

use std::collections::HashSet;

use specc_compiler::driver::{plan_model_with, Functions, Options, Planned};
use specc_compiler::ir::{Graph, NodeId, Op};
use specc_compiler::plan::nest::{gemm_split, AccessKind, GemmSplit};
use specc_compiler::plan::{scalar_operands, BufId, Kernel, Lin, Loc, Mode, Plan, Source, View};
use specc_grammar::SourceFile;

/// A memory space and a byte range `[lo, hi)` in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Space {
    Input(u32),
    Arena(u32),
    Output(u32),
    Scratch,
}

#[derive(Clone, Copy, Debug)]
struct Run {
    space: Space,
    lo: i64,
    hi: i64,
    /// The kernel, and whether its two parts may be compared (false for a
    /// split kernel counted whole on both threads).
    kernel: usize,
    exact: bool,
}

/// What one thread read and wrote since the last barrier.
#[derive(Default)]
struct Touched {
    reads: Vec<Run>,
    writes: Vec<Run>,
}

struct Sim<'a> {
    g: &'a Graph,
    plan: &'a Plan,
    batch: i64,
}

impl Sim<'_> {
    fn base(&self, b: BufId) -> (Space, i64) {
        match self.plan.buffer(b).loc {
            Loc::Input(i) => (Space::Input(i), 0),
            Loc::Arena { arena, offset } => (Space::Arena(arena), offset as i64 * 4),
            Loc::Output(i) => (Space::Output(i), 0),
            Loc::Scratch { offset } => (Space::Scratch, offset as i64),
        }
    }

    fn whole(&self, b: BufId, kernel: usize) -> Run {
        let (space, base) = self.base(b);
        let bytes = self.plan.buffer(b).shape.numel(self.plan.max_batch) as i64 * 4;
        Run {
            space,
            lo: base,
            hi: base + bytes.max(4),
            kernel,
            exact: false,
        }
    }

    /// The bytes `v` reaches over the index box `ranges` (one `[lo, hi)`
    /// per stride), merged into runs.
    fn elements(
        &self,
        v: &View,
        strides: &[Lin],
        ranges: &[(i64, i64)],
        kernel: usize,
    ) -> Vec<Run> {
        let (space, base) = self.base(v.buf);
        let st: Vec<i64> = strides.iter().map(|s| s.eval(self.batch)).collect();
        let mut offs = vec![v.offset.eval(self.batch)];
        for (d, &(lo, hi)) in ranges.iter().enumerate() {
            let mut next = Vec::with_capacity(offs.len() * (hi - lo).max(0) as usize);
            for &o in &offs {
                for i in lo..hi {
                    next.push(o + i * st[d]);
                }
            }
            offs = next;
        }
        offs.sort_unstable();
        offs.dedup();
        let mut runs: Vec<Run> = Vec::new();
        for o in offs {
            let b = base + 4 * o;
            match runs.last_mut() {
                Some(r) if r.hi == b => r.hi = b + 4,
                _ => runs.push(Run {
                    space,
                    lo: b,
                    hi: b + 4,
                    kernel,
                    exact: true,
                }),
            }
        }
        runs
    }

    /// The memory read to compute scalar `n` (loads and scalar variables).
    fn scalar_reads(&self, n: NodeId, kernel: usize, out: &mut Vec<Run>) {
        let mut stack = vec![n];
        let mut seen = HashSet::new();
        while let Some(m) = stack.pop() {
            if !seen.insert(m) {
                continue;
            }
            if let Some((v, _)) = self.plan.scalar_loads.get(&m) {
                out.extend(self.elements(v, &[], &[], kernel));
            } else if let Op::Var(var) = self.g.op(m) {
                let (arena, offset) = self.plan.var_locs[*var as usize];
                let lo = offset as i64 * 4;
                out.push(Run {
                    space: Space::Arena(arena as u32),
                    lo,
                    hi: lo + 4,
                    kernel,
                    exact: true,
                });
            }
            stack.extend_from_slice(scalar_operands(self.g, &self.plan.scalar_loads, m));
        }
    }

    /// What thread `t` touches in kernel `i`.
    fn kernel(&self, i: usize, t: usize) -> Touched {
        let k = &self.plan.kernels[i];
        let mode = self.plan.modes[i];
        let mut out = Touched::default();
        if let Kernel::Loop(l) = k {
            for (_, s) in &l.sources {
                if let Source::Scalar(n) = s {
                    self.scalar_reads(*n, i, &mut out.reads);
                }
            }
        }
        // This thread's range of a cut dimension of `size`.
        let range = |size: Lin, cut: Option<specc_compiler::plan::nest::Cut>| {
            let n = size.eval(self.batch);
            match (mode, cut) {
                (Mode::Split, Some(c)) => {
                    let at = c.at(self.batch);
                    if t == 0 {
                        (0, at)
                    } else {
                        (at, n)
                    }
                }
                _ if t == 0 => (0, n),
                _ => (0, 0),
            }
        };
        match k {
            Kernel::Loop(l) => {
                let nest = l.nest();
                let split = match mode {
                    Mode::Split => nest.split(),
                    Mode::Single => None,
                };
                // Thread 1 runs a loop only when it is cut.
                if t == 1 && split.is_none() {
                    return out;
                }
                let ranges: Vec<(i64, i64)> = nest
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(lv, level)| match split {
                        Some((s, cut)) if s == lv => range(level.size, Some(cut)),
                        _ => (0, level.size.eval(self.batch)),
                    })
                    .collect();
                for (acc, strides) in l.accesses().iter().zip(&nest.strides) {
                    let runs = self.elements(acc.view, strides, &ranges, i);
                    match acc.kind {
                        AccessKind::Load => out.reads.extend(runs),
                        AccessKind::Store => out.writes.extend(runs),
                        AccessKind::Accumulate => {
                            out.reads.extend(runs.iter().copied());
                            out.writes.extend(runs);
                        }
                    }
                }
            }
            Kernel::Gemm {
                a,
                b,
                c,
                ta,
                tb,
                m,
                k: kk,
                n,
                groups: None,
                epilogue,
                ..
            } => {
                let rc = |v: &View, tr: bool| {
                    if tr {
                        [v.strides[1], v.strides[0]]
                    } else {
                        [v.strides[0], v.strides[1]]
                    }
                };
                let all = |d: Lin| (0, d.eval(self.batch));
                let (rows, cols) = match gemm_split(*m, *n, self.plan.max_batch as i64) {
                    GemmSplit::Rows(cut) => (range(*m, Some(cut)), all(*n)),
                    GemmSplit::Columns(cut) => (all(*m), range(*n, Some(cut))),
                };
                let runs = rows.1 > rows.0 && cols.1 > cols.0;
                if runs {
                    let ks = all(*kk);
                    out.reads
                        .extend(self.elements(a, &rc(a, *ta), &[rows, ks], i));
                    out.reads
                        .extend(self.elements(b, &rc(b, *tb), &[ks, cols], i));
                    out.writes
                        .extend(self.elements(c, &rc(c, false), &[rows, cols], i));
                    if let Some(bias) = epilogue.as_ref().and_then(|e| e.bias.as_ref()) {
                        out.reads.push(self.whole(bias.buf, i));
                    }
                }
            }
            _ => {
                if t == 0 || mode == Mode::Split {
                    let (r, w) = k.reads_writes();
                    out.reads.extend(r.into_iter().map(|b| self.whole(b, i)));
                    out.writes.extend(w.into_iter().map(|b| self.whole(b, i)));
                }
            }
        }
        out
    }
}

fn clash(a: &[Run], b: &[Run]) -> Option<(Run, Run)> {
    for x in a {
        for y in b {
            let same_kernel_whole = x.kernel == y.kernel && !(x.exact && y.exact);
            if x.space == y.space && x.lo < y.hi && y.lo < x.hi && !same_kernel_whole {
                return Some((*x, *y));
            }
        }
    }
    None
}

/// Checks every barrier-free stretch of `plan` at `batch`.
fn check(g: &Graph, plan: &Plan, batch: i64, what: &str) {
    let sim = Sim { g, plan, batch };
    let mut seg = [Touched::default(), Touched::default()];
    let flush = |seg: &mut [Touched; 2], at: usize| {
        let [t0, t1] = &*seg;
        for (x, y) in [
            (&t0.writes, &t1.writes),
            (&t0.writes, &t1.reads),
            (&t1.writes, &t0.reads),
        ] {
            if let Some((p, q)) = clash(x, y) {
                panic!(
                    "{what}, batch {batch}: no barrier between kernels k{} and k{} (before k{at}), \
                     and the threads share bytes {p:?} / {q:?}",
                    p.kernel, q.kernel
                );
            }
        }
        seg[0] = Touched::default();
        seg[1] = Touched::default();
    };
    for i in 0..plan.kernels.len() {
        if plan.syncs.before[i] {
            flush(&mut seg, i);
        }
        for (t, s) in seg.iter_mut().enumerate() {
            let k = sim.kernel(i, t);
            s.reads.extend(k.reads);
            s.writes.extend(k.writes);
        }
    }
    flush(&mut seg, plan.kernels.len());
}

/// The training functions of `specs/{spec}`, planned for two threads.
fn planned(spec: &str) -> Planned {
    let path = format!("{}/specs/{spec}", env!("CARGO_MANIFEST_DIR"));
    let src = SourceFile::new(spec, std::fs::read_to_string(path).unwrap());
    let options = Options {
        threads: 2,
        ..Options::default()
    };
    plan_model_with(&src, Functions::TRAIN, &options).unwrap()
}

/// Every two-thread plan of `spec`, at batch sizes around the cuts' alignments.
fn check_spec(spec: &str) {
    let planned = planned(spec);
    let g = &planned.model.graph;
    let mut checked = 0;
    for plan in planned.plans.iter().filter(|p| p.threads == 2) {
        let max = plan.max_batch as i64;
        let mut batches: Vec<i64> = [1, 2, 7, 8, 9, 15, 16, 17, 31, 33, max / 2 + 1, max - 1, max]
            .into_iter()
            .filter(|&b| b >= 1 && b <= max)
            .collect();
        batches.sort_unstable();
        batches.dedup();
        for b in batches {
            check(g, plan, b, &format!("{spec} {}", plan.name));
        }
        checked += 1;
    }
    assert!(checked > 0, "{spec}: no two-thread plan");
}

#[test]
fn digits_mlp_threads_share_no_bytes_between_barriers() {
    check_spec("digits_mlp.spec");
}

#[test]
fn digits_mlp_ema_threads_share_no_bytes_between_barriers() {
    check_spec("digits_mlp_ema.spec");
}

#[test]
fn digits_embedding_threads_share_no_bytes_between_barriers() {
    check_spec("digits_embedding.spec");
}

#[test]
fn digits_cnn_threads_share_no_bytes_between_barriers() {
    check_spec("digits_cnn.spec");
}

#[test]
fn wide_mlp_threads_share_no_bytes_between_barriers() {
    check_spec("wide_mlp.spec");
}

/// The check finds a missing barrier: digits_mlp's plan with every barrier
/// removed fails it.
#[test]
fn a_plan_without_barriers_fails_the_check() {
    let planned = planned("digits_mlp.spec");
    let mut plan = planned.plans.into_iter().find(|p| p.threads == 2).unwrap();
    for b in &mut plan.syncs.before {
        *b = false;
    }
    let g = &planned.model.graph;
    let max = plan.max_batch as i64;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check(g, &plan, max, "no barriers")
    }));
    assert!(r.is_err(), "a plan without barriers passed the check");
}

/// Each barrier of digits_mlp's two-thread plan is needed: without any one
/// of them, the threads share bytes (the check finds each missing one, and
/// the analysis keeps none it could drop).
#[test]
fn every_barrier_of_digits_mlp_is_needed() {
    let planned = planned("digits_mlp.spec");
    let plan = planned.plans.iter().find(|p| p.threads == 2).unwrap();
    let g = &planned.model.graph;
    let max = plan.max_batch as i64;
    let barriers: Vec<usize> = (0..plan.kernels.len())
        .filter(|&i| plan.syncs.before[i])
        .collect();
    assert!(!barriers.is_empty());
    for i in barriers {
        let mut p = plan.clone();
        p.syncs.before[i] = false;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(g, &p, max, "one barrier fewer")
        }));
        assert!(r.is_err(), "the barrier before k{i} is not needed");
    }
}
