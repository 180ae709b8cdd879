//! The second core: how many threads steps use, and the worker that runs
//! thread 1's share of an SPMD function.
//!
//! Owns: [`threads`] (from `SPECC_THREADS`, else the available cores, at most
//! 2; [`threads_from_env`] reads the variable strictly) and [`Worker`], a persistent thread that executes compiled functions for
//! thread 1 while the caller runs thread 0. Between jobs it spins briefly (steps
//! come back to back), then sleeps.
//!
//! Invariants: the worker runs with the same float mode as steps (flush
//! denormals to zero, see `session`), so both threads compute alike; a job's
//! pointers are only used while the caller waits in [`Worker::run`].

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

/// `SPECC_THREADS` read: `None` when unset or empty, the count when it is a
/// positive integer, an error saying so otherwise.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    let Some(v) = std::env::var_os("SPECC_THREADS") else {
        return Ok(None);
    };
    let s = v.to_string_lossy();
    if s.trim().is_empty() {
        return Ok(None);
    }
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "SPECC_THREADS must be a positive integer (steps use at most 2 threads), got {s:?}"
        )),
    }
}

/// How long a waiting thread spins before it sleeps or yields.
const SPIN: Duration = Duration::from_micros(100);

#[derive(Clone, Copy)]
struct Job {
    f: StepFn,
    ctx: StepCtx,
}

// The context's pointers are only used while the poster waits for completion.
unsafe impl Send for Job {}

struct Shared {
    job: Mutex<Option<Job>>,
    wake: Condvar,
    posted: AtomicU64,
    done: AtomicU64,
    sleeping: AtomicUsize,
}

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
            job: Mutex::new(None),
            wake: Condvar::new(),
            posted: AtomicU64::new(0),
            done: AtomicU64::new(0),
            sleeping: AtomicUsize::new(0),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("specc-worker".into())
            .spawn(move || work(&s))
            .expect("spawn the worker thread");
        Worker { shared }
    }

    /// Runs `f(ctx1)` on the worker while `local` runs here; returns when both are done.
    ///
    /// # Safety
    /// `f` must be safe to call with `ctx1` concurrently with `local`.
    pub unsafe fn run(&self, f: StepFn, ctx1: StepCtx, local: impl FnOnce()) {
        let s = &self.shared;
        let ticket = {
            let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            *g = Some(Job { f, ctx: ctx1 });
            s.posted.fetch_add(1, Ordering::AcqRel) + 1
        };
        if s.sleeping.load(Ordering::SeqCst) == 1 {
            let _g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_one();
        }
        local();
        let t = Instant::now();
        while s.done.load(Ordering::Acquire) < ticket {
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
        // Post an empty job: the worker exits when it sees `None` after a post.
        let s = &self.shared;
        let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
        *g = None;
        s.posted.fetch_add(1, Ordering::AcqRel);
        s.sleeping.store(2, Ordering::SeqCst);
        s.wake.notify_one();
    }
}

fn work(s: &Shared) {
    crate::session::flush_denormals_for_this_thread();
    let mut seen = 0u64;
    loop {
        let t = Instant::now();
        while s.posted.load(Ordering::Acquire) == seen && t.elapsed() < SPIN {
            std::hint::spin_loop();
        }
        if s.posted.load(Ordering::Acquire) == seen {
            let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            if s.sleeping.load(Ordering::SeqCst) != 2 {
                s.sleeping.store(1, Ordering::SeqCst);
            }
            while s.posted.load(Ordering::Acquire) == seen {
                g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            if s.sleeping.load(Ordering::SeqCst) == 1 {
                s.sleeping.store(0, Ordering::SeqCst);
            }
        }
        seen = s.posted.load(Ordering::Acquire);
        let job = s.job.lock().unwrap_or_else(|e| e.into_inner()).take();
        match job {
            Some(mut j) => {
                // SAFETY: `run`'s contract.
                unsafe { (j.f)(&mut j.ctx) };
                s.done.store(seen, Ordering::Release);
            }
            None => return,
        }
    }
}
