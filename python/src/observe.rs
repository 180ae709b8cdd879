//! What `Model.fit` hears from a run while the GIL is released: Ctrl-C and
//! the package's watcher (its callbacks and progress bar).
//!
//! Owns: [`PyObserver`], the run's [`Observer`] under `fit`. After a step,
//! at most every [`SIGNAL_PERIOD`], it takes the GIL for a moment to run
//! Python's signal handlers (`check_signals`: the default SIGINT handler
//! raises KeyboardInterrupt);
//! every `every` global steps it calls the watcher's `step`, and it passes
//! on `begin`, the periodic evaluations and the end.
//!
//! Invariants: a raised exception (KeyboardInterrupt, a callback's) or a
//! watcher asking to stop ends the run at that step boundary, as a hook's
//! `request_stop` does (the checkpoint of the step is written); the first
//! exception is kept for `fit` to raise once the trained state is in the
//! model. Nothing here changes a step's numbers.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use specc::run::Observer;
use specc_runtime::train::{Evaluation, StepValues};

/// How often, at most, a run checks Python's signals: taking the GIL after
/// every step cost titanic's 6 µs steps 2 %; this keeps Ctrl-C within a
/// step and a millisecond.
pub const SIGNAL_PERIOD: Duration = Duration::from_millis(1);

/// The observer of a run under `Model.fit`.
pub struct PyObserver {
    /// The package's watcher: an object with `begin(start, last)`,
    /// `step(global_step, logs) -> bool` (true: stop after this step),
    /// `evaluation(global_step, loss, rows, metrics) -> bool` (true: stop
    /// after the next step: the evaluation follows the step's report) and
    /// `end()`; `None`: signals only.
    watcher: Option<Py<PyAny>>,
    /// The watcher's `step` is called every this many global steps.
    every: u64,
    /// The first exception raised (KeyboardInterrupt, a watcher's).
    pub error: Option<PyErr>,
    /// The run was asked to stop (an exception, or the watcher).
    pub stopped: bool,
    /// When the signals were last checked.
    signals_checked: Instant,
}

impl PyObserver {
    /// An observer calling `watcher` every `every` global steps (at least 1).
    pub fn new(watcher: Option<Py<PyAny>>, every: u64) -> PyObserver {
        PyObserver {
            watcher,
            every: every.max(1),
            error: None,
            stopped: false,
            signals_checked: Instant::now(),
        }
    }

    /// Calls the watcher's `method` with the GIL held; an exception stops
    /// the run (StopIteration quietly); a true result of `step` too.
    fn call(&mut self, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<bool>) {
        if self.error.is_some() {
            return;
        }
        let Some(w) = self.watcher.as_ref() else {
            return;
        };
        let r = Python::attach(|py| {
            f(py, w.bind(py)).map_err(|e| (e.is_instance_of::<PyStopIteration>(py), e))
        });
        match r {
            Ok(stop) => self.stopped |= stop,
            Err((true, _)) => self.stopped = true,
            Err((false, e)) => {
                self.error = Some(e);
                self.stopped = true;
            }
        }
    }
}

impl Observer for PyObserver {
    fn begin(&mut self, start: i64, last: u64) {
        self.call(|_, w| {
            w.call_method1("begin", (start, last))?;
            Ok(false)
        });
    }

    fn step(&mut self, v: &StepValues) {
        if self.error.is_none() && self.signals_checked.elapsed() >= SIGNAL_PERIOD {
            self.signals_checked = Instant::now();
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                self.error = Some(e);
                self.stopped = true;
                return;
            }
        }
        if self.watcher.is_some() && (v.global_step as u64).is_multiple_of(self.every) {
            self.call(|py, w| {
                let logs = pyo3::types::PyDict::new(py);
                logs.set_item("loss", v.loss)?;
                logs.set_item("rows", v.rows)?;
                if let Some(lr) = v.learning_rate {
                    logs.set_item("learning_rate", lr)?;
                }
                if let Some(n) = v.global_norm {
                    logs.set_item("global_norm", n)?;
                }
                w.call_method1("step", (v.global_step, logs))?.is_truthy()
            });
        }
    }

    fn stop_requested(&mut self) -> bool {
        self.stopped
    }

    fn evaluation(&mut self, global_step: i64, e: &Evaluation) {
        self.call(|_, w| {
            let metrics: Vec<(String, f64)> = e.metrics.clone();
            w.call_method1("evaluation", (global_step, e.loss, e.rows, metrics))?
                .is_truthy()
        });
    }

    fn end(&mut self, _last: Option<&StepValues>) {
        self.call(|_, w| {
            w.call_method0("end")?;
            Ok(false)
        });
    }
}
