//! Synchronous data-parallel training: one step on every replica, joined at
//! the gradient exchange (TF's `SyncReplicasOptimizer`, Horovod's allreduce).
//!
//! Owns: [`Collective`] (the collectives a step needs — allreduce,
//! allgather, broadcast, all-to-all — and the summaries' allgather of
//! float64 values, whatever carries them: MPI in the CLI, [`Solo`]
//! for one process), [`shard_rows`] (how a global batch is cut between
//! replicas), and [`ReplicaStep`], which the [`super::Trainer`] runs in place
//! of the plain `step`: `replica_grad` on this replica's rows, the sum of the
//! `exchange/sum` arena over the replicas, the gathered `IndexedSlices`, then
//! `step`, which applies the combined gradients. Replicas on one node share
//! memory instead ([`Collective::shared_segments`], a program compiled with
//! a shared exchange): the session's `exchange/sum` arena is this replica's
//! segment and `exchange/peer/<r>` replica r's; `replica_grad` writes its
//! own, a barrier, the `step` sums every replica's itself; another barrier
//! comes before the next `replica_grad` overwrites a segment another
//! replica may still be reading. No copy and no allreduce.
//!
//! Invariants: every replica calls the collectives in the same order with the
//! same sizes (the step is the same program everywhere, and replica `r`
//! always holds `shard_rows(batch, n)[r]` rows); the allreduce works in
//! place (MPI_IN_PLACE), or receives into a buffer allocated once and swapped
//! with the arena, so a step allocates nothing; all replicas get the same bits of every exchanged value (MPI's
//! reduction result is the same on every rank), hence identical parameters,
//! which [`fingerprint`] lets a caller verify.

use std::fmt;
use std::rc::Rc;

use crate::abi::{exchange_peer_arena, VarRole, EXCHANGE_SUM, REPLICA_GRAD};
use crate::memory::AlignedBuf;
use crate::session::Session;

/// The collectives of a data-parallel step, over `replicas()` processes.
/// Implementations block until every replica has called, and give every
/// replica the same result.
pub trait Collective {
    /// This replica's index, `0..replicas()`.
    fn rank(&self) -> usize;
    /// How many replicas train together.
    fn replicas(&self) -> usize;
    /// `recv = Σ_replicas send`, elementwise.
    fn all_reduce_sum(&self, send: &[f32], recv: &mut [f32]);
    /// `values = Σ_replicas values` in place, when the implementation can
    /// (MPI's `MPI_IN_PLACE`); false when it cannot, and `values` is untouched.
    fn all_reduce_sum_in_place(&self, _values: &mut [f32]) -> bool {
        false
    }
    /// `recv` = every replica's `send` in replica order; replica `r` sends
    /// `counts[r]` values, placed at `displs[r]`.
    fn all_gather(&self, send: &[u32], recv: &mut [u32], counts: &[i32], displs: &[i32]);
    /// `recv` = every replica's `send` in replica order; every replica
    /// sends as many values (`recv` holds `replicas()` times as many). By
    /// default an [`Collective::all_gather`] of each value's two 32-bit
    /// halves: the same bits on every replica.
    fn all_gather_f64(&self, send: &[f64], recv: &mut [f64]) {
        let n = self.replicas();
        let words: Vec<u32> = send
            .iter()
            .flat_map(|v| {
                let b = v.to_bits();
                [b as u32, (b >> 32) as u32]
            })
            .collect();
        let counts = vec![words.len() as i32; n];
        let displs: Vec<i32> = (0..n).map(|r| (r * words.len()) as i32).collect();
        let mut all = vec![0u32; n * words.len()];
        self.all_gather(&words, &mut all, &counts, &displs);
        for (r, w) in recv.iter_mut().zip(all.chunks_exact(2)) {
            *r = f64::from_bits(u64::from(w[0]) | (u64::from(w[1]) << 32));
        }
    }
    /// Replica 0's `values` on every replica.
    fn broadcast(&self, values: &mut [u32]);
    /// Every replica sends `send_counts[r]` values from
    /// `send[send_displs[r]..]` to replica r, and receives replica r's into
    /// `recv[recv_displs[r]..]` (`recv_counts[r]` of them): MPI's
    /// `Alltoallv`.
    fn all_to_all(
        &self,
        send: &[u32],
        send_counts: &[i32],
        send_displs: &[i32],
        recv: &mut [u32],
        recv_counts: &[i32],
        recv_displs: &[i32],
    );
    /// Memory every replica can read and write (replicas on one node): one
    /// segment of `bytes` per replica, in replica order, 64-byte aligned,
    /// the same segments on every replica; `None` when the replicas share no
    /// memory. Every replica calls it, with the same `bytes`; the memory
    /// lives as long as the collective.
    fn shared_segments(&self, _bytes: usize) -> Option<Vec<*mut u8>> {
        None
    }
    /// Blocks until every replica has called; what a replica wrote to the
    /// shared segments before is visible to every replica after.
    fn barrier(&self) {
        let n = self.replicas();
        let counts = vec![1i32; n];
        let displs: Vec<i32> = (0..n as i32).collect();
        self.all_gather(&[0], &mut vec![0; n], &counts, &displs);
    }
}

/// One process alone: the collectives are copies. (What a single process
/// running the replicated step sees; used by the tests of the split step.)
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl Collective for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn replicas(&self) -> usize {
        1
    }
    fn all_reduce_sum(&self, send: &[f32], recv: &mut [f32]) {
        recv[..send.len()].copy_from_slice(send);
    }
    fn all_gather(&self, send: &[u32], recv: &mut [u32], _: &[i32], displs: &[i32]) {
        let at = displs[0] as usize;
        recv[at..at + send.len()].copy_from_slice(send);
    }
    fn all_gather_f64(&self, send: &[f64], recv: &mut [f64]) {
        recv[..send.len()].copy_from_slice(send);
    }
    fn broadcast(&self, _: &mut [u32]) {}
    fn all_to_all(
        &self,
        send: &[u32],
        send_counts: &[i32],
        send_displs: &[i32],
        recv: &mut [u32],
        _: &[i32],
        recv_displs: &[i32],
    ) {
        let (from, n) = (send_displs[0] as usize, send_counts[0] as usize);
        let at = recv_displs[0] as usize;
        recv[at..at + n].copy_from_slice(&send[from..from + n]);
    }
}

/// The rows of a global batch of `batch` that each of `replicas` replicas
/// computes: contiguous slices in replica order, the first `batch %
/// replicas` one row longer.
pub fn shard_rows(batch: usize, replicas: usize) -> Vec<usize> {
    let n = replicas.max(1);
    (0..n)
        .map(|r| batch / n + usize::from(r < batch % n))
        .collect()
}

/// Where replica `rank`'s slice of a global batch starts.
pub fn shard_start(batch: usize, replicas: usize, rank: usize) -> usize {
    shard_rows(batch, replicas)[..rank].iter().sum()
}

/// A gathered exchange variable: `replica_grad`'s output of the same name
/// (this replica's rows) gathered into the variable (the global batch's).
#[derive(Debug)]
struct Gather {
    output: usize,
    var: String,
    per_row: usize,
    counts: Vec<i32>,
    displs: Vec<i32>,
}

/// How the summed exchange values reach the `step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeKind {
    /// Nothing to sum (no `exchange/sum` arena).
    None,
    /// An allreduce of the `exchange/sum` arena.
    Allreduce,
    /// Shared memory: `replica_grad` writes this replica's segment, the
    /// `step` reads every replica's and sums them in replica order.
    Shared,
}

/// The shared exchange: arena `exchange/sum` is this replica's segment,
/// arena `exchange/peer/<r>` replica r's.
struct SharedExchange {
    /// `(arena, segment)` pairs to attach, before the first step.
    attach: Vec<(usize, *mut f32)>,
    /// A step read the segments, which the next `replica_grad` overwrites
    /// only after every replica is past that step (a barrier).
    read: bool,
}

/// The replicated form of one training step (see the module doc).
pub struct ReplicaStep {
    comm: Rc<dyn Collective>,
    shared: Option<SharedExchange>,
    /// `replica_grad`'s index and the positions of its runtime checks.
    pub(super) grad: usize,
    pub(super) assertions: Vec<usize>,
    sum_arena: Option<usize>,
    spare: AlignedBuf,
    gathers: Vec<Gather>,
    send: Vec<u32>,
    recv: Vec<u32>,
    rows: usize,
    /// The index of this replica's first row in the global batch.
    first_row: usize,
    /// The source can run out (a stream's last epoch): the replicas agree
    /// on every step whether all of them have a full share.
    may_end: bool,
    /// Every replica's rows this step, for that agreement, and the counts
    /// (1 each) and places (0, 1, ..) of its allgather.
    all_rows: Vec<u32>,
    ones: Vec<i32>,
    places: Vec<i32>,
    /// Every replica's share of the global batch.
    shards: Vec<usize>,
    /// The tables whose rows are sharded across the replicas.
    sharded: Option<super::sharded::ShardedTables>,
}

impl fmt::Debug for ReplicaStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplicaStep")
            .field("rank", &self.comm.rank())
            .field("replicas", &self.comm.replicas())
            .field("rows", &self.rows)
            .field("gathers", &self.gathers)
            .finish()
    }
}

impl ReplicaStep {
    /// The replicated step of a session compiled for `comm.replicas()`
    /// replicas (it has `replica_grad` and exchange variables); the global
    /// batch is the session's `max_batch`.
    pub fn new(
        session: &Session,
        comm: Rc<dyn Collective>,
        may_end: bool,
    ) -> Result<ReplicaStep, String> {
        let grad = session.function_index(REPLICA_GRAD).ok_or(
            "the program was not compiled for replicas: it has no `replica_grad` function",
        )?;
        let assertions = super::assertion_positions(session, grad)?;
        let batch = session.max_batch();
        let (n, rank) = (comm.replicas(), comm.rank());
        let shards = shard_rows(batch, n);
        if shards.contains(&0) {
            return Err(format!(
                "a global batch of {batch} rows cannot be shared by {n} replicas: \
                 every replica needs at least one row"
            ));
        }
        let sum_arena = session.arena_index(EXCHANGE_SUM);
        let shared = match sum_arena {
            Some(own) if session.arena_index(&exchange_peer_arena(0)).is_some() => {
                Some(SharedExchange::new(session, &*comm, own)?)
            }
            _ => None,
        };
        let spare = AlignedBuf::zeroed(match (&shared, sum_arena) {
            (None, Some(a)) => session.layout.arenas[a].len * 4,
            _ => 4,
        })?;
        let mut gathers = Vec::new();
        let (mut most_sent, mut most_received) = (0, 0);
        // A sharded table's gradient is routed to its owners, not gathered.
        let routed = |name: &str| {
            session
                .layout
                .sharded
                .iter()
                .any(|s| s.grad_ids == name || s.grad_values == name)
        };
        for v in &session.layout.vars {
            if v.kind != (VarRole::Exchange { gather: true }) || routed(&v.name) {
                continue;
            }
            let output = session.output_index(grad, &v.name).ok_or_else(|| {
                format!(
                    "`{REPLICA_GRAD}` has no output for the gathered `{}`",
                    v.name
                )
            })?;
            let total: usize = v.shape.iter().product();
            let per_row = total / batch.max(1);
            let counts: Vec<i32> = shards
                .iter()
                .map(|&r| i32::try_from(r * per_row).map_err(|_| too_many(&v.name)))
                .collect::<Result<_, _>>()?;
            let mut displs = Vec::with_capacity(n);
            let mut at = 0i32;
            for &c in &counts {
                displs.push(at);
                at = at.checked_add(c).ok_or_else(|| too_many(&v.name))?;
            }
            most_sent = most_sent.max(shards[rank] * per_row);
            most_received = most_received.max(total);
            gathers.push(Gather {
                output,
                var: v.name.clone(),
                per_row,
                counts,
                displs,
            });
        }
        if !session.layout.sharded.is_empty() && session.replica() != rank {
            return Err(format!(
                "the session holds replica {}'s rows of its sharded tables, not replica \
                 {rank}'s (Session::set_replica)",
                session.replica()
            ));
        }
        let sharded = super::sharded::ShardedTables::new(session, comm.clone(), grad)?;
        Ok(ReplicaStep {
            sharded,
            comm,
            shared,
            grad,
            assertions,
            sum_arena,
            spare,
            gathers,
            send: vec![0; most_sent],
            recv: vec![0; most_received],
            rows: shards[rank],
            first_row: shard_start(batch, n, rank),
            may_end,
            all_rows: vec![0; n],
            ones: vec![1; n],
            places: (0..n as i32).collect(),
            shards,
        })
    }

    /// Whether every replica has its full share of this step's batch (always
    /// true for an endless source). When one has fewer rows (its shard of a
    /// stream ran out), no replica steps: the global batch would be partial
    /// (TF's `drop_remainder`), and a replica that stopped alone would leave
    /// the others waiting.
    pub(super) fn all_have_rows(&mut self, rows: usize) -> bool {
        if !self.may_end {
            return rows > 0;
        }
        self.comm
            .all_gather(&[rows as u32], &mut self.all_rows, &self.ones, &self.places);
        self.all_rows
            .iter()
            .zip(&self.shards)
            .all(|(&got, &share)| got as usize == share)
    }

    /// Seconds spent moving the rows of sharded tables so far (`None`
    /// without them).
    pub fn sharded_seconds(&self) -> Option<f64> {
        self.sharded.as_ref().map(|t| t.seconds)
    }

    /// The rows this replica computes each step.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The collectives.
    pub fn collective(&self) -> &dyn Collective {
        &*self.comm
    }

    /// How the summed exchange values reach the step.
    pub fn exchange_kind(&self) -> ExchangeKind {
        match (&self.shared, self.sum_arena) {
            (Some(_), _) => ExchangeKind::Shared,
            (None, Some(_)) => ExchangeKind::Allreduce,
            (None, None) => ExchangeKind::None,
        }
    }

    /// Runs `replica_grad` on the `rows` filled rows, exchanges, and leaves
    /// the combined values in the exchange variables for `step`.
    pub(super) fn exchange(&mut self, session: &mut Session, rows: usize) -> Result<(), String> {
        if rows != self.rows {
            return Err(format!(
                "replica {} got {rows} rows, not its {} of the global batch: the replicas \
                 would fall out of step",
                self.comm.rank(),
                self.rows
            ));
        }
        if let Some(s) = self.shared.as_mut() {
            if s.read {
                // Every replica is past the step that read this replica's
                // segment: it can be overwritten.
                self.comm.barrier();
                s.read = false;
            }
            for (arena, ptr) in s.attach.drain(..) {
                // SAFETY: `shared_segments`' contract: the segment holds the
                // arena (`SharedExchange::new` asked for its length), 64-byte
                // aligned, and lives as long as the collective, which the
                // session keeps; the replicas touch it only between the
                // barriers of `exchange` and `combine`.
                unsafe { session.attach_arena(arena, ptr, Box::new(self.comm.clone()))? };
            }
        }
        // Per-row random draws (dropout) key on the global row: this
        // replica's rows are the global batch's from its shard's start.
        session.first_row = self.first_row as i64;
        if let Some(t) = self.sharded.as_mut() {
            t.fetch(session, rows)?;
        }
        let called = session.call(self.grad, rows);
        session.first_row = 0;
        called
    }

    /// The collectives after `replica_grad` (and its checks) ran.
    pub(super) fn combine(&mut self, session: &mut Session) -> Result<(), String> {
        if let Some(s) = self.shared.as_mut() {
            // Every replica's segment is written: the step may read them.
            self.comm.barrier();
            s.read = true;
        } else if let Some(a) = self.sum_arena {
            if !self.comm.all_reduce_sum_in_place(session.arena_mut(a)) {
                let len = session.layout.arenas[a].len;
                self.comm
                    .all_reduce_sum(session.arena(a), &mut self.spare.f32s_mut()[..len]);
                session.swap_arena(a, &mut self.spare)?;
            }
        }
        for g in &self.gathers {
            let n = self.rows * g.per_row;
            let local = session
                .output_at(self.grad, g.output, self.rows)
                .ok_or_else(|| format!("no output for `{}`", g.var))?;
            for (d, s) in self.send[..n].iter_mut().zip(local) {
                *d = s.to_bits();
            }
            let total = self
                .recv
                .len()
                .min(g.counts.iter().map(|&c| c as usize).sum::<usize>());
            self.comm.all_gather(
                &self.send[..n],
                &mut self.recv[..total],
                &g.counts,
                &g.displs,
            );
            let var = session
                .var_mut(&g.var)
                .ok_or_else(|| format!("no variable `{}`", g.var))?;
            for (d, s) in var.iter_mut().zip(&self.recv[..total]) {
                *d = f32::from_bits(*s);
            }
        }
        if let Some(t) = self.sharded.as_mut() {
            t.route(session, self.grad, self.rows)?;
        }
        Ok(())
    }
}

impl SharedExchange {
    /// Asks `comm` for the replicas' shared segments, one `own`-arena long
    /// each (a collective: every replica constructs its step together).
    fn new(session: &Session, comm: &dyn Collective, own: usize) -> Result<SharedExchange, String> {
        let n = comm.replicas();
        let len = session.layout.arenas[own].len;
        let mut attach = vec![(own, comm.rank())];
        for r in 0..n {
            let peer = session
                .arena_index(&exchange_peer_arena(r))
                .ok_or_else(|| {
                    format!(
                    "the program was compiled for a shared exchange among fewer than {n} replicas"
                )
                })?;
            if session.layout.arenas[peer].len != len {
                return Err(format!(
                    "arena `{}` is not laid out as `{EXCHANGE_SUM}`",
                    exchange_peer_arena(r)
                ));
            }
            attach.push((peer, r));
        }
        if session.arena_index(&exchange_peer_arena(n)).is_some() {
            return Err(format!(
                "the program was compiled for a shared exchange among more than {n} replicas"
            ));
        }
        // Each peer variable `name@r` sits where `name` does in `exchange/sum`.
        for v in &session.layout.vars {
            let VarRole::ExchangePeer { replica } = v.kind else {
                continue;
            };
            let own_var = v
                .name
                .strip_suffix(&format!("@{replica}"))
                .and_then(|name| session.layout.var(name));
            if own_var.is_none_or(|o| o.arena != own || o.offset != v.offset) {
                return Err(format!(
                    "`{}` is not laid out as its replica's exchange value",
                    v.name
                ));
            }
        }
        let bytes = (len * 4).next_multiple_of(4096);
        let segments = comm.shared_segments(bytes).ok_or(
            "the program was compiled for a shared exchange, but the replicas share no memory",
        )?;
        if segments.len() != n {
            return Err(format!(
                "{} shared segments for {n} replicas",
                segments.len()
            ));
        }
        Ok(SharedExchange {
            attach: attach
                .into_iter()
                .map(|(arena, r)| (arena, segments[r].cast::<f32>()))
                .collect(),
            read: false,
        })
    }
}

fn too_many(name: &str) -> String {
    format!("`{name}`: more than 2^31 values to gather in one step")
}

/// Makes every replica hold replica 0's model state: every variable (not the
/// constants, exchange values or sharded tables' rows) and the global step
/// (Horovod's `broadcast_global_variables`).
pub fn broadcast_state(session: &mut Session, comm: &dyn Collective) {
    // A sharded table's rows (and its slots') are each replica's own.
    let state: Vec<String> = session
        .layout
        .vars
        .iter()
        .filter(|v| v.kind.is_state() && session.layout.shard_of(v).is_none())
        .map(|v| v.name.clone())
        .collect();
    let mut bits = Vec::new();
    for name in state {
        let Some(values) = session.var_mut(&name) else {
            continue;
        };
        bits.clear();
        bits.extend(values.iter().map(|v| v.to_bits()));
        comm.broadcast(&mut bits);
        for (d, s) in values.iter_mut().zip(&bits) {
            *d = f32::from_bits(*s);
        }
    }
    let step = session.global_step as u64;
    let mut words = [step as u32, (step >> 32) as u32];
    comm.broadcast(&mut words);
    session.global_step = (u64::from(words[0]) | (u64::from(words[1]) << 32)) as i64;
}

/// A 64-bit FNV-1a hash of every state variable's bits and the global step
/// (but a sharded table's, whose rows are each replica's own): equal on two
/// replicas exactly when they hold the same replicated model.
pub fn fingerprint(session: &Session) -> u64 {
    let mut bytes = Vec::new();
    for v in session
        .layout
        .vars
        .iter()
        .filter(|v| v.kind.is_state() && session.layout.shard_of(v).is_none())
    {
        if let Some(values) = session.var(&v.name) {
            bytes.extend(values.iter().flat_map(|x| x.to_bits().to_le_bytes()));
        }
    }
    bytes.extend(session.global_step.to_le_bytes());
    hash_bytes(&bytes)
}

/// Whether every replica holds the same model ([`fingerprint`]); the
/// replicas whose model differs from replica 0's otherwise.
pub fn check_identical(session: &Session, comm: &dyn Collective) -> Result<(), Vec<usize>> {
    check_same(comm, fingerprint(session))
}

/// Whether every replica passed the same `value` (a hash of what must agree:
/// the model, the run's configuration); the replicas whose value differs
/// from replica 0's otherwise.
pub fn check_same(comm: &dyn Collective, value: u64) -> Result<(), Vec<usize>> {
    let n = comm.replicas();
    let send = [value as u32, (value >> 32) as u32];
    let mut recv = vec![0u32; 2 * n];
    let counts = vec![2i32; n];
    let displs: Vec<i32> = (0..n as i32).map(|r| 2 * r).collect();
    comm.all_gather(&send, &mut recv, &counts, &displs);
    let differ: Vec<usize> = (1..n)
        .filter(|&r| recv[2 * r..2 * r + 2] != recv[..2])
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(differ)
    }
}

/// A 64-bit FNV-1a hash of bytes (what [`check_same`] compares).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Ends a replica that waits too long in an exchange: MPI has no timeout
/// on its collectives, so a replica that hangs without dying (stopped, a
/// livelocked machine, a network partition) would otherwise keep the others
/// waiting forever. A thread checks, every 100 ms, how long the trainer has
/// been inside the current step's exchange; past `limit` it calls
/// `on_timeout` once with a message naming the step (the CLI prints it and
/// ends the process, which makes `mpirun` end the job).
pub struct Watchdog {
    state: std::sync::Arc<WatchState>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct WatchState {
    epoch: std::time::Instant,
    /// Milliseconds since `epoch` + 1 when the current exchange began; 0
    /// outside an exchange.
    since: std::sync::atomic::AtomicU64,
    step: std::sync::atomic::AtomicU64,
    stop: std::sync::atomic::AtomicBool,
}

impl Watchdog {
    /// Starts the watching thread.
    pub fn start(
        limit: std::time::Duration,
        on_timeout: Box<dyn FnOnce(String) + Send>,
    ) -> Watchdog {
        use std::sync::atomic::Ordering::Relaxed;
        let state = std::sync::Arc::new(WatchState {
            epoch: std::time::Instant::now(),
            since: 0.into(),
            step: 0.into(),
            stop: false.into(),
        });
        let watched = state.clone();
        let thread = std::thread::spawn(move || {
            let limit_ms = limit.as_millis().min(u128::from(u64::MAX)) as u64;
            while !watched.stop.load(Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let since = watched.since.load(Relaxed);
                let now = watched.epoch.elapsed().as_millis() as u64 + 1;
                if since != 0 && now.saturating_sub(since) > limit_ms {
                    on_timeout(format!(
                        "waited more than {:.0} s for the other replicas in step {}: one of \
                         them hangs (stopped, or its machine unreachable)",
                        limit.as_secs_f64(),
                        watched.step.load(Relaxed)
                    ));
                    return;
                }
            }
        });
        Watchdog {
            state,
            thread: Some(thread),
        }
    }

    /// The trainer enters the exchange of `step` (1-based in this run).
    pub(super) fn enter(&self, step: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.state.step.store(step, Relaxed);
        let now = self.state.epoch.elapsed().as_millis() as u64 + 1;
        self.state.since.store(now, Relaxed);
    }

    /// The exchange is over.
    pub(super) fn leave(&self) {
        self.state
            .since
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state
            .stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watchdog").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_batch_in_order() {
        assert_eq!(shard_rows(64, 2), vec![32, 32]);
        assert_eq!(shard_rows(64, 3), vec![22, 21, 21]);
        assert_eq!(shard_rows(5, 5), vec![1; 5]);
        assert_eq!(shard_rows(2, 3), vec![1, 1, 0]);
        assert_eq!(shard_start(64, 3, 0), 0);
        assert_eq!(shard_start(64, 3, 1), 22);
        assert_eq!(shard_start(64, 3, 2), 43);
    }
}
