//! The counting global allocator of the allocation tests. A test binary
//! installs it once:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: specc_testkit::alloc::Counting = specc_testkit::alloc::Counting;
//! ```
//!
//! It forwards to the system allocator and counts two ways:
//! - per thread ([`ThreadCount`]): a test arms a count on its own thread and
//!   reads the allocations that thread made since, whatever the other tests'
//!   threads (the harness runs tests in parallel) allocate meanwhile;
//! - per process ([`process_allocations`], [`live_bytes`], [`peak_bytes`]):
//!   for what spans threads (a step's worker thread, a reader thread's
//!   chunks). Other tests would disturb these, so such a test runs alone in a
//!   child process of its binary ([`alone_in_process`]).
//!
//! Invariant: counting never allocates (thread-locals with `const`
//! initializers, atomics), and allocations while a thread is torn down are
//! not counted for it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The counting allocator (see the module doc).
pub struct Counting;

thread_local! {
    /// Allocations of this thread so far.
    static THREAD: Cell<usize> = const { Cell::new(0) };
}

static PROCESS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// One allocation (or growth by `grown` bytes).
fn allocated(grown: usize) {
    // `try_with`: allocations during thread teardown are not counted.
    let _ = THREAD.try_with(|c| c.set(c.get() + 1));
    PROCESS.fetch_add(1, Ordering::Relaxed);
    let now = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            allocated(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            allocated(layout.size());
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // The old block until the copy is done, then the new one.
            allocated(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// The allocations this thread has made so far.
pub fn thread_allocations() -> usize {
    THREAD.with(Cell::get)
}

/// A count of the current thread's allocations, armed when made.
#[derive(Debug)]
pub struct ThreadCount {
    start: usize,
}

impl ThreadCount {
    /// Arms a count on the current thread.
    pub fn start() -> ThreadCount {
        ThreadCount {
            start: thread_allocations(),
        }
    }

    /// The allocations the current thread made since [`ThreadCount::start`]
    /// (read it on the thread that armed it).
    pub fn allocations(&self) -> usize {
        thread_allocations() - self.start
    }
}

/// The allocations of every thread of the process so far.
pub fn process_allocations() -> usize {
    PROCESS.load(Ordering::SeqCst)
}

/// The bytes allocated and not yet freed, all threads.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::SeqCst)
}

/// The most [`live_bytes`] since the last [`reset_peak`] (or the start).
pub fn peak_bytes() -> usize {
    PEAK.load(Ordering::SeqCst)
}

/// Starts [`peak_bytes`] over from the current [`live_bytes`].
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::SeqCst), Ordering::SeqCst);
}

/// Whether the calling test runs alone in its process, as process-wide
/// counts need. In the test binary the harness started, it runs this same
/// test (found by its thread's name, which the harness sets to the test's
/// name) in a child process of the binary, alone (`--exact NAME
/// --test-threads=1`), asserts that it ran and passed, and returns false: the
/// caller returns. In that child it returns true: the caller measures.
///
/// ```ignore
/// #[test]
/// fn measured() {
///     if !specc_testkit::alloc::alone_in_process() {
///         return;
///     }
///     // ... process_allocations() ...
/// }
/// ```
pub fn alone_in_process() -> bool {
    const VAR: &str = "SPECC_TESTKIT_ALONE";
    let name = std::thread::current()
        .name()
        .expect("a test thread (named after its test)")
        .to_string();
    if std::env::var_os(VAR).is_some_and(|v| v == name.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(&exe)
        .args(["--exact", &name, "--test-threads=1", "--nocapture"])
        .env(VAR, &name)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, alone in a child process: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    // The child's own report (what it measured).
    eprint!("{stderr}");
    false
}
