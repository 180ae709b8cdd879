//! When a periodic hook acts: every N steps and/or every S seconds (TF's
//! `SecondOrStepTimer`).
//!
//! Owns: [`Timer`]. Invariants: it triggers at the first step it is asked
//! about, then when either period has elapsed since it last triggered; it
//! reads the clock at most once every [`CLOCK_EVERY`] steps, so a step of a
//! few microseconds does not pay for a clock read.

use std::time::Instant;

/// Steps between two clock reads of a timer with a period in seconds.
pub const CLOCK_EVERY: u64 = 8;

/// Every `steps` steps and/or every `secs` seconds (whichever comes first).
#[derive(Clone, Debug)]
pub struct Timer {
    steps: Option<u64>,
    secs: Option<f64>,
    last: Option<(u64, Instant)>,
}

impl Timer {
    /// A timer; a period of `None` (or 0) is not used. With neither, it
    /// triggers at the first step only.
    pub fn new(steps: Option<u64>, secs: Option<f64>) -> Timer {
        Timer {
            steps: steps.filter(|&s| s > 0),
            secs: secs.filter(|&s| s > 0.0),
            last: None,
        }
    }

    /// Every `steps` steps.
    pub fn every_steps(steps: u64) -> Timer {
        Timer::new(Some(steps), None)
    }

    /// True if the hook should act at `step` (it then calls [`Timer::triggered`]).
    #[inline]
    pub fn due(&self, step: u64) -> bool {
        let Some((last, at)) = self.last else {
            return true;
        };
        if self.steps.is_some_and(|n| step >= last + n) {
            return true;
        }
        match self.secs {
            Some(s) if step.is_multiple_of(CLOCK_EVERY) => at.elapsed().as_secs_f64() >= s,
            _ => false,
        }
    }

    /// Records that the hook acted at `step`.
    pub fn triggered(&mut self, step: u64) {
        self.last = Some((step, Instant::now()));
    }

    /// The step the timer last triggered at.
    pub fn last_step(&self) -> Option<u64> {
        self.last.map(|(s, _)| s)
    }

    /// Seconds since the timer last triggered (`None` before the first).
    pub fn elapsed_secs(&self) -> Option<f64> {
        self.last.map(|(_, at)| at.elapsed().as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_period() {
        let mut t = Timer::every_steps(3);
        let fired: Vec<u64> = (1..=10)
            .filter(|&s| {
                let d = t.due(s);
                if d {
                    t.triggered(s);
                }
                d
            })
            .collect();
        assert_eq!(fired, [1, 4, 7, 10]);
    }

    #[test]
    fn seconds_period_reads_the_clock() {
        let mut t = Timer::new(None, Some(1e-9));
        t.triggered(1);
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(!t.due(CLOCK_EVERY + 1), "no clock read between");
        assert!(t.due(CLOCK_EVERY * 2));
        let mut never = Timer::new(None, None);
        assert!(never.due(1));
        never.triggered(1);
        assert!(!never.due(1 << 40));
    }
}
