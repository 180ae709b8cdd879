//! The second core: how many threads steps use, and the worker that runs
//! thread 1's share of an SPMD function.
//!
//! Owns: [`threads`] (from `SPECC_THREADS`, else the available cores, at most
//! 2; [`threads_from_env`] reads the variable strictly) and [`Worker`], a persistent thread that executes compiled functions for
//! thread 1 while the caller runs thread 0. Between jobs it spins briefly (steps
//! come back to back), then sleeps. A job is handed over in one cache line
//! (the ticket beside the job) and finished through another (`done`), so
//! starting and ending a call cost one cache-line transfer each.
//!
//! Invariants: the worker runs with the same float mode as steps (flush
//! denormals to zero, see `session`), so both threads compute alike; a job's
//! pointers are only used while the caller waits in [`Worker::run`].

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::abi::{StepCtx, StepFn};

/// The number of threads steps use (1 or 2): `SPECC_THREADS` (at most 2),
/// else the available cores (at most 2). An unreadable `SPECC_THREADS` falls
/// back to the cores here; the CLI refuses it first ([`threads_from_env`]).
pub fn threads() -> usize {
    static T: OnceLock<usize> = OnceLock::new();
    *T.get_or_init(|| {
        threads_from_env()
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            })
            .min(2)
    })
}

/// `SPECC_THREADS` read strictly ([`crate::settings::threads`]): `None`
/// when unset or empty, the count when it is a positive integer, an error
/// saying so otherwise.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    crate::settings::threads()
}

/// How long a waiting thread spins before it sleeps or yields.
const SPIN: Duration = Duration::from_micros(100);

#[derive(Clone, Copy)]
struct Job {
    f: StepFn,
    ctx: StepCtx,
}

/// A value alone on its cache line(s), so the other thread's writes to its
/// neighbours do not move it between cores.
#[repr(align(64))]
struct Line<T>(T);

/// What the caller hands the worker: the ticket and the job share a cache
/// line, so the worker's first read of the new ticket brings the job too.
struct Post {
    posted: AtomicU64,
    /// Written by the caller only while the worker is idle (between its
    /// `done` for the previous ticket and the next ticket), read by the
    /// worker only between seeing a ticket and storing `done` for it.
    job: UnsafeCell<Option<Job>>,
}

struct Shared {
    post: Line<Post>,
    /// The last ticket the worker finished (written by the worker only).
    done: Line<AtomicU64>,
    /// 1 while the worker sleeps on `wake` (or is about to), 2 once dropped.
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

// The job's pointers are only used while the poster waits for completion,
// and the job cell is handed over through `posted` and `done` (see `Post`).
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// A persistent thread for thread 1 of SPMD functions.
pub struct Worker {
    shared: Arc<Shared>,
}

impl Default for Worker {
    fn default() -> Self {
        Worker::new()
    }
}

impl Worker {
    pub fn new() -> Worker {
        let shared = Arc::new(Shared {
            post: Line(Post {
                posted: AtomicU64::new(0),
                job: UnsafeCell::new(None),
            }),
            done: Line(AtomicU64::new(0)),
            sleeping: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("specc-worker".into())
            .spawn(move || work(&s))
            .expect("spawn the worker thread");
        Worker { shared }
    }

    /// Hands `job` to the worker (which is idle) and wakes it if it sleeps.
    fn post(&self, job: Option<Job>) -> u64 {
        let s = &self.shared;
        let ticket = s.post.0.posted.load(Ordering::Relaxed) + 1;
        // SAFETY: the worker is idle (`run` waited for its previous ticket),
        // so nothing reads the cell until it sees the new ticket below.
        unsafe { *s.post.0.job.get() = job };
        // SeqCst: either the worker sees this ticket before it sleeps, or
        // this thread sees `sleeping` and wakes it (the worker stores
        // `sleeping` before reading `posted`, both SeqCst).
        s.post.0.posted.store(ticket, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) != 0 {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_one();
        }
        ticket
    }

    /// Runs `f(ctx1)` on the worker while `local` runs here; returns when both are done.
    ///
    /// # Safety
    /// `f` must be safe to call with `ctx1` concurrently with `local`.
    pub unsafe fn run(&self, f: StepFn, ctx1: StepCtx, local: impl FnOnce()) {
        let s = &self.shared;
        let ticket = self.post(Some(Job { f, ctx: ctx1 }));
        local();
        let t = Instant::now();
        while s.done.0.load(Ordering::Acquire) < ticket {
            if t.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // An empty job: the worker exits when it sees `None` after a ticket.
        self.shared.sleeping.store(2, Ordering::SeqCst);
        self.post(None);
        let s = &self.shared;
        let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
        s.wake.notify_one();
    }
}

fn work(s: &Shared) {
    crate::session::flush_denormals_for_this_thread();
    let posted = &s.post.0.posted;
    let mut seen = 0u64;
    loop {
        let t = Instant::now();
        while posted.load(Ordering::Acquire) == seen && t.elapsed() < SPIN {
            std::hint::spin_loop();
        }
        if posted.load(Ordering::Acquire) == seen {
            let mut g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            // Tell the poster to wake this thread, then check for a ticket
            // (see `Worker::post`); a dropped worker stays at 2.
            let _ = s
                .sleeping
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst);
            while posted.load(Ordering::SeqCst) == seen {
                g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            let _ = s
                .sleeping
                .compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
        seen = posted.load(Ordering::Acquire);
        // SAFETY: the poster wrote the job before the ticket and writes no
        // other until this thread stores `done` for it (see `Post`).
        let job = unsafe { *s.post.0.job.get() };
        match job {
            Some(mut j) => {
                // SAFETY: `run`'s contract.
                unsafe { (j.f)(&mut j.ctx) };
                s.done.0.store(seen, Ordering::Release);
            }
            None => return,
        }
    }
}
