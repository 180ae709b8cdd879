//! Choosing, call by call, between a short step on two threads and its
//! one-thread twin.
//!
//! Owns [`StallGuard`]. The compiler plans a short step that pays on two
//! threads only on a quiet machine with a one-thread twin beside it
//! (`Plan::twin`); the session asks the guard which of the two each call
//! runs and tells it how long the call took. Both compute the same bits (a
//! plan's results never depend on its thread count), so the choice changes
//! only the speed.
//!
//! Why: on a quiet machine two threads run such a step faster (W1 on the Zen
//! 5: 66k against 59k steps/s, and 46k against 35k with the AVX2 kernels).
//! With more runnable threads than cores, a thread that reaches a barrier
//! first waits for its descheduled partner's next time slice, milliseconds
//! against a 15 us step (W1 with one other busy process: 13.7k-33.5k steps/s
//! on two threads against 60k on one).
//!
//! Invariants: the guard only reads the times it is given (no clock of its
//! own), so it is deterministic and tested with made-up times; every probe
//! times both codes alternately, so both see the same machine.

/// Which code a call of a two-thread function with a one-thread twin runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    TwoThreads,
    Twin,
}

/// Calls in a block of a probe: a probe runs [`BLOCKS`] blocks of each code,
/// alternating, starting with the twin. The first call of a block is not
/// timed: it pays for the switch (the worker waking, parameters the other
/// code updated moving between the cores' caches).
pub const BLOCK: u64 = 5;
/// Blocks of each code in a probe.
pub const BLOCKS: u64 = 8;
/// Timed calls of each code in a probe.
pub const PROBE: u64 = BLOCKS * (BLOCK - 1);
/// Calls the first hold lasts; a hold doubles (to [`MAX_HOLD`]) each time
/// the next probe picks the same code.
pub const FIRST_HOLD: u64 = 256;
/// The longest hold.
pub const MAX_HOLD: u64 = 1 << 16;
/// A twin hold after a stall that recurs lasts at least this many times the
/// time the stall lost, so that on a busy machine the probes' stalls
/// (milliseconds each: the worker waits for a time slice) cost at most about
/// 3 % whatever the holds' doubling has reached (see [`StallGuard`]).
pub const PAYBACK: u64 = 32;
/// How often (in calls) a two-thread hold compares its mean with the twin's.
pub const CHECK: u64 = 256;

/// Picks two threads or the twin for each call, by timing both.
///
/// A probe runs the two codes alternately in blocks of [`BLOCK`] calls and
/// picks the one with the lower mean over its `PROBE` timed calls (without
/// its slowest call, so one stray preemption does not decide). A two-thread
/// call (but the session's first, which starts the worker thread) that
/// alone takes longer than `PROBE` of the twin's calls ends the probe at
/// once with the twin picked: on a busy machine such a call waits for a time
/// slice (milliseconds), and each probe should cost at most one.
///
/// The pick then holds for [`FIRST_HOLD`] calls, or twice as many as last
/// time when the same code won the last time too, before the next probe.
/// While two threads hold, every [`CHECK`] calls the guard compares their
/// mean over those calls with the twin's probed mean; when two threads are
/// slower, the twin wins and holds instead. (On a busy machine the worker
/// typically runs a time slice of a few hundred fast calls and then waits a
/// time slice, stalling one call for milliseconds: a probe may miss that, a
/// window does not.) A twin hold that follows a stall which recurs lasts at
/// least [`PAYBACK`] times what the stall lost.
///
/// So a quiet machine runs two threads with one probe per hold (the probe's
/// twin calls cost it at most `PROBE` slower calls per [`FIRST_HOLD`], then
/// ever fewer), and a busy one runs the twin after at most a window or two.
#[derive(Clone, Debug)]
pub struct StallGuard {
    phase: Phase,
    /// Calls so far in this phase.
    calls: u64,
    /// A probe's sums, timed calls and slowest calls (ns), indexed by [`slot`].
    sum: [u64; 2],
    timed: [u64; 2],
    slowest: [u64; 2],
    /// The twin's mean (ns) in the last probe.
    twin_mean: u64,
    /// Nanoseconds of the current window of [`CHECK`] calls of a
    /// two-thread hold.
    held_ns: u64,
    /// The last hold's length of each code (indexed by [`slot`]), and which
    /// code won last (see [`StallGuard::hold`]).
    length: [u64; 2],
    last: Option<Run>,
    /// Calls run on two threads and on the twin.
    counts: [u64; 2],
    /// Twin holds started by a stall since two threads last finished a hold.
    stalls_in_a_row: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Probe,
    Hold(Run),
    /// Tests: alternate forever.
    Alternate,
}

fn slot(r: Run) -> usize {
    match r {
        Run::TwoThreads => 0,
        Run::Twin => 1,
    }
}

impl Default for StallGuard {
    /// A guard that starts with a probe.
    fn default() -> Self {
        StallGuard {
            phase: Phase::Probe,
            calls: 0,
            sum: [0; 2],
            timed: [0; 2],
            slowest: [0; 2],
            twin_mean: 0,
            held_ns: 0,
            length: [FIRST_HOLD; 2],
            last: None,
            counts: [0; 2],
            stalls_in_a_row: 0,
        }
    }
}

impl StallGuard {
    /// A guard that alternates the two codes call by call, whatever the
    /// times (to test that they compute the same bits).
    pub fn alternating() -> StallGuard {
        StallGuard {
            phase: Phase::Alternate,
            ..StallGuard::default()
        }
    }

    /// What the next call runs.
    pub fn next(&self) -> Run {
        match self.phase {
            Phase::Alternate if self.calls.is_multiple_of(2) => Run::TwoThreads,
            Phase::Alternate => Run::Twin,
            Phase::Probe if (self.calls / BLOCK).is_multiple_of(2) => Run::Twin,
            Phase::Probe => Run::TwoThreads,
            Phase::Hold(r) => r,
        }
    }

    /// Calls run so far on two threads and on the twin.
    pub fn counts(&self) -> (u64, u64) {
        (self.counts[0], self.counts[1])
    }

    /// Records that the call [`StallGuard::next`] chose took `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        let ran = self.next();
        self.counts[slot(ran)] += 1;
        self.calls += 1;
        match self.phase {
            Phase::Alternate => {}
            Phase::Probe => {
                let s = slot(ran);
                let timed = !(self.calls - 1).is_multiple_of(BLOCK);
                // Any two-thread call but the session's first (which starts
                // the worker thread) may end the probe.
                if ran == Run::TwoThreads
                    && self.counts[0] > 1
                    && self.timed[1] > 0
                    && ns / PROBE > self.sum[1] / self.timed[1]
                {
                    self.twin_mean = self.sum[1] / self.timed[1];
                    self.hold(Run::Twin, ns);
                    return;
                }
                if timed {
                    self.sum[s] += ns;
                    self.timed[s] += 1;
                    self.slowest[s] = self.slowest[s].max(ns);
                }
                if self.calls == 2 * BLOCKS * BLOCK {
                    let mean = |s: usize| (self.sum[s] - self.slowest[s]) / (PROBE - 1);
                    self.twin_mean = mean(1);
                    if mean(0) <= mean(1) {
                        self.hold(Run::TwoThreads, 0);
                    } else {
                        self.hold(Run::Twin, 0);
                    }
                }
            }
            Phase::Hold(Run::TwoThreads) => {
                self.held_ns = self.held_ns.saturating_add(ns);
                if self.calls.is_multiple_of(CHECK) {
                    let twin_ns = self.twin_mean * CHECK;
                    if self.held_ns > twin_ns {
                        // Stalling: the twin won, on more calls than a probe has.
                        self.hold(Run::Twin, self.held_ns - twin_ns);
                        return;
                    }
                    self.held_ns = 0;
                }
                if self.calls >= self.length[0] {
                    self.last = Some(Run::TwoThreads);
                    self.stalls_in_a_row = 0;
                    self.probe();
                }
            }
            Phase::Hold(Run::Twin) => {
                if self.calls >= self.length[1] {
                    self.probe();
                }
            }
        }
    }

    fn probe(&mut self) {
        self.phase = Phase::Probe;
        self.calls = 0;
        self.sum = [0; 2];
        self.timed = [0; 2];
        self.slowest = [0; 2];
    }

    /// Starts a hold of `run`: twice the last one if `run` also won last
    /// time, else [`FIRST_HOLD`]. A twin hold that follows a stall which
    /// lost `lost_ns` (`0`: no stall) lasts at least [`PAYBACK`] times that
    /// long (at most [`MAX_HOLD`] calls) when the hold before also followed a
    /// stall, with no two-thread hold finished since: stalls that recur are
    /// a busy machine, one alone may be a stray hiccup of a quiet one. The
    /// twin wins when it is picked; two threads win when they finish their
    /// hold without stalling.
    fn hold(&mut self, run: Run, lost_ns: u64) {
        let s = slot(run);
        let doubled = if self.last == Some(run) {
            self.length[s] * 2
        } else {
            FIRST_HOLD
        };
        let payback = if lost_ns > 0 && self.stalls_in_a_row > 0 {
            (lost_ns.saturating_mul(PAYBACK) / self.twin_mean.max(1)).min(MAX_HOLD)
        } else {
            0
        };
        if lost_ns > 0 {
            self.stalls_in_a_row += 1;
        }
        self.length[s] = doubled.min(MAX_HOLD).max(payback);
        if run == Run::Twin {
            self.last = Some(Run::Twin);
        }
        self.held_ns = 0;
        self.calls = 0;
        self.phase = Phase::Hold(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `n` calls taking `two(i)` or `twin` ns; returns (two-thread,
    /// twin) calls.
    fn run_calls(
        g: &mut StallGuard,
        two: impl Fn(usize) -> u64,
        twin: u64,
        n: usize,
    ) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for i in 0..n {
            match g.next() {
                Run::TwoThreads => {
                    a += 1;
                    g.record(two(i));
                }
                Run::Twin => {
                    b += 1;
                    g.record(twin);
                }
            }
        }
        (a, b)
    }

    /// A probe's calls.
    const P: usize = (2 * BLOCKS * BLOCK) as usize;

    /// The probes in `n` calls when every probe picks the same code: first,
    /// and after holds of FIRST_HOLD, twice that, ..., MAX_HOLD, MAX_HOLD, ...
    /// (`n` must end inside a hold).
    fn probes_in(n: usize) -> usize {
        let (mut used, mut hold, mut probes) = (0, FIRST_HOLD as usize, 0);
        while used < n {
            probes += 1;
            used += P;
            assert!(used < n, "{n} calls end inside a probe");
            used += hold;
            hold = (2 * hold).min(MAX_HOLD as usize);
        }
        probes
    }

    #[test]
    fn a_quiet_machine_runs_two_threads_and_probes_ever_less() {
        let mut g = StallGuard::default();
        let n = 300_000;
        let (two, twin) = run_calls(&mut g, |_| 15_000, 17_000, n);
        assert_eq!(two + twin, n);
        assert_eq!(twin, probes_in(n) * P / 2, "{twin} twin calls");
        assert_eq!(g.counts(), (two as u64, twin as u64));
    }

    #[test]
    fn a_busy_machine_runs_the_twin() {
        let mut g = StallGuard::default();
        let n = 300_000;
        let (two, twin) = run_calls(&mut g, |_| 30_000, 17_000, n);
        assert_eq!(two, probes_in(n) * P / 2, "{two} two-thread calls");
        assert_eq!(two + twin, n);
    }

    #[test]
    fn stalls_now_and_then_end_a_two_thread_hold() {
        // Two threads take 15 us, but every 200th call stalls 3 ms (a busy
        // machine's time slices): a probe may miss the stalls, a hold does not.
        let stalls = |i: usize| if i % 200 == 199 { 3_000_000 } else { 15_000 };
        let mut g = StallGuard::default();
        let (two, twin) = run_calls(&mut g, stalls, 17_000, 300_000);
        assert!(twin > 290_000, "{two} two-thread calls, {twin} twin calls");
    }

    #[test]
    fn one_stray_preemption_in_a_probe_does_not_decide() {
        let mut g = StallGuard::default();
        // A timed twin call of the probe is preempted; its two-thread calls
        // are a little slower than usual but still faster than the twin.
        let mut twin_calls = 0;
        for i in 0..P {
            match g.next() {
                Run::Twin => {
                    twin_calls += 1;
                    g.record(if twin_calls == 3 { 4_000_000 } else { 17_000 });
                }
                Run::TwoThreads => g.record(if i % 2 == 0 { 15_500 } else { 16_000 }),
            }
        }
        assert_eq!(twin_calls, P / 2);
        assert_eq!(g.next(), Run::TwoThreads);
    }

    #[test]
    fn a_stalled_two_thread_call_ends_a_probe_with_the_twin() {
        let mut g = StallGuard::default();
        // The first block is the twin's. The second block's first call
        // (the session's first on two threads, which starts the worker) and
        // second call stall longer than PROBE twin calls: the second ends
        // the probe.
        let stall = 17_000 * PROBE + 17_000;
        let b = BLOCK as usize;
        let (two, twin) = run_calls(
            &mut g,
            |i| if i == b || i == b + 1 { stall } else { 15_000 },
            17_000,
            b + 2,
        );
        assert_eq!((two, twin), (2, b));
        // A first stall may be a stray hiccup: the twin holds FIRST_HOLD.
        let (two, _) = run_calls(&mut g, |_| 15_000, 17_000, FIRST_HOLD as usize);
        assert_eq!(two, 0);
        // The next probe's first two-thread call stalls again: the twin
        // holds PAYBACK times the stall.
        let (two, twin) = run_calls(
            &mut g,
            |i| if i == b { stall } else { 15_000 },
            17_000,
            b + 1,
        );
        assert_eq!((two, twin), (1, b));
        let hold = (stall * PAYBACK / 17_000) as usize;
        assert!(hold > 2 * FIRST_HOLD as usize);
        let (two, _) = run_calls(&mut g, |_| 15_000, 17_000, hold);
        assert_eq!(two, 0);
        assert_eq!(g.next(), Run::Twin, "the next probe starts with the twin");
    }

    #[test]
    fn a_stall_in_a_window_ends_a_two_thread_hold() {
        let mut g = StallGuard::default();
        run_calls(&mut g, |_| 15_000, 17_000, P);
        let (two, twin) = run_calls(
            &mut g,
            |i| if i == 100 { 3_000_000 } else { 15_000 },
            17_000,
            (CHECK + FIRST_HOLD) as usize,
        );
        assert_eq!((two, twin), (CHECK as usize, FIRST_HOLD as usize));
    }

    #[test]
    fn the_choice_follows_the_machine() {
        let mut g = StallGuard::default();
        run_calls(&mut g, |_| 15_000, 17_000, 10_000);
        // The machine gets busy: within two windows (the first may be
        // mostly quiet) the twin runs, and two threads run only in the probes
        // after twin holds of FIRST_HOLD, twice that, ..., MAX_HOLD.
        let (two, _) = run_calls(&mut g, |_| 30_000, 17_000, 2 * MAX_HOLD as usize);
        let holds = (MAX_HOLD / FIRST_HOLD).trailing_zeros() as usize + 1;
        assert!(two <= 2 * CHECK as usize + holds * P / 2, "{two}");
        // Then at most one probe in a longest hold.
        let (two, _) = run_calls(&mut g, |_| 30_000, 17_000, MAX_HOLD as usize);
        assert!(two <= P / 2, "{two}");
        // Quiet again: after at most one more twin hold, two threads run but
        // in probes.
        run_calls(&mut g, |_| 15_000, 17_000, MAX_HOLD as usize + P);
        let n = 10_000;
        let (_, twin) = run_calls(&mut g, |_| 15_000, 17_000, n);
        assert!(twin <= (n / FIRST_HOLD as usize + 1) * P / 2, "{twin}");
    }

    #[test]
    fn alternating_alternates_whatever_the_times() {
        let mut g = StallGuard::alternating();
        let (two, twin) = run_calls(&mut g, |_| 1_000_000, 1, 1001);
        assert_eq!((two, twin), (501, 500));
    }
}
