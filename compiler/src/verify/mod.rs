//! The verifier between passes (as Cranelift's verifier and XLA's
//! `HloVerifier`): the stated invariants of the IR, the layout and the plan,
//! checked after every pass that produces them, so that a compiler bug is
//! reported at the pass that broke an invariant, naming both, instead of
//! surfacing later as a panic in another stage or as a wrong number in a
//! user's run.
//!
//! Owns: [`Violation`] (an invariant, by name, and what breaks it), the
//! checks — [`ir`] (the graph and the model's functions), [`layout`]
//! (arenas and offsets), [`plan`] (kernels, views, buffers, scratch,
//! threads) — each invariant written down once, in the doc of its
//! submodule, next to the function that checks it; and how a violation is
//! reported: [`after`] turns it into an `internal-error` diagnostic naming
//! the pass and the invariant ("internal compiler error: after
//! `passes::optimize`, operands-precede-users does not hold: %7 reads
//! %9"), [`assert_after`] panics with the same text where a pass cannot
//! return a diagnostic (inside the planner), which [`crate::guard`] turns
//! into the same diagnostic.
//!
//! Where it runs (the passes are sequenced in `crate::build_replicated_with`,
//! `crate::check` and `driver::plan_model_with`; the planner's phases in
//! `plan::Planner::run` and `finish`): after `sema` (the forward IR), after
//! `optim::build` (autodiff, clipping, the optimizer's updates, replicas),
//! after `debug::add_check_function`, after each `passes::optimize` and
//! `passes::winograd`, after `layout::place` (and after the `--emit step`
//! dump's `passes::optimize`), and in the planner once the kernels are
//! ordered (what each kernel is, as `plan::lower` made it; how they follow
//! each other, as `plan::order` placed them), after `plan::merge`,
//! `plan::winofuse` and `plan::epilogue`, after the scratch offsets
//! (`plan::memory`), the barriers (`plan::threads`) and the outputs (the
//! last check covers the whole plan). Verification runs in debug builds,
//! so in every test ([`ENABLED`]); a release build skips it and compiles
//! in milliseconds as before. Every check is linear in the nodes, kernels
//! and accesses (the scratch check in the scratch blocks live at once),
//! without hashing nodes and without recursion: a 100,000-term sum
//! verifies in a small part of its compile time.
//!
//! A panic inside a pass (a compiler bug that an assertion or an `expect`
//! meets first) names its pass too: each pass runs [`in_pass`], and
//! [`crate::guard`] reports "internal compiler error in `plan::lower`: ...".
//!
//! Invariant: the verifier only reads; a plan or model that passes it is
//! the one the next stage gets.

pub mod ir;
pub mod layout;
pub mod plan;

use std::cell::Cell;
use std::fmt;

use specc_grammar::{Code, Diagnostic};

/// One broken invariant: its name (as written in the submodule docs) and
/// what breaks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

/// The result of a check.
pub type Verdict = Result<(), Violation>;

/// A violation of `invariant`.
pub(crate) fn broken(invariant: &'static str, detail: impl Into<String>) -> Violation {
    Violation {
        invariant,
        detail: detail.into(),
    }
}

/// Fails with `invariant` when `ok` is false (`detail` is built only then).
pub(crate) fn require(
    ok: bool,
    invariant: &'static str,
    detail: impl FnOnce() -> String,
) -> Verdict {
    if ok {
        Ok(())
    } else {
        Err(broken(invariant, detail()))
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} does not hold: {}", self.invariant, self.detail)
    }
}

impl Violation {
    /// The message of the internal error: the pass after which the
    /// invariant broke, the invariant and the evidence.
    pub fn message(&self, pass: &str) -> String {
        format!("internal compiler error: after `{pass}`, {self}")
    }

    /// The `internal-error` diagnostic of [`Violation::message`].
    pub fn diagnostic(&self, pass: &str) -> Diagnostic {
        internal_error(self.message(pass))
    }
}

/// An `internal-error` diagnostic with `message` (a compiler bug).
pub(crate) fn internal_error(message: String) -> Diagnostic {
    Diagnostic::new(Code::InternalError, Default::default(), message)
        .with_help("this is a bug in specc; please report it with the spec that triggers it")
}

/// Whether the passes are verified: in debug builds (every test).
pub const ENABLED: bool = cfg!(debug_assertions);

/// Runs `check` after `pass` when verification is [`ENABLED`]; a violation
/// is an `internal-error` diagnostic naming the pass and the invariant.
pub fn after(pass: &str, check: impl FnOnce() -> Verdict) -> Result<(), Vec<Diagnostic>> {
    if !ENABLED {
        return Ok(());
    }
    check().map_err(|v| vec![v.diagnostic(pass)])
}

/// [`after`] for a pass that cannot return a diagnostic (the planner's
/// phases): a violation panics with the same message, and
/// [`crate::guard`] turns the panic into the diagnostic.
pub fn assert_after(pass: &str, check: impl FnOnce() -> Verdict) {
    if !ENABLED {
        return;
    }
    if let Err(v) = check() {
        panic!("{}", v.message(pass));
    }
}

thread_local! {
    /// The innermost pass a panic unwound out of (see [`in_pass`]).
    static PANICKED_IN: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Marks a pass as running; dropped by a panic, it records the pass.
struct Running(&'static str);

impl Drop for Running {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The innermost pass unwinds first; keep it.
            PANICKED_IN.with(|p| {
                if p.get().is_none() {
                    p.set(Some(self.0));
                }
            });
        }
    }
}

/// Runs pass `name`: a panic inside it (a compiler bug) is reported by
/// [`crate::guard`] as an internal error in that pass. Costs nothing
/// otherwise.
pub fn in_pass<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let _running = Running(name);
    f()
}

/// The pass the last panic unwound out of, if any, cleared.
pub(crate) fn take_panicked_pass() -> Option<&'static str> {
    PANICKED_IN.with(|p| p.take())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod report_tests {
    use super::*;

    #[test]
    fn a_violation_names_the_pass_and_the_invariant() {
        let v = broken("operands-precede-users", "%3 reads %5");
        let d = v.diagnostic("passes::optimize");
        assert_eq!(d.code, Code::InternalError);
        assert_eq!(
            d.message,
            "internal compiler error: after `passes::optimize`, operands-precede-users does not hold: %3 reads %5"
        );
    }

    #[test]
    fn a_panic_inside_a_pass_names_the_pass() {
        let _ = take_panicked_pass();
        let r = crate::guard::<()>(|| {
            in_pass("outer", || {
                in_pass("plan::lower", || panic!("no view for copy of %28"))
            })
        });
        let d = &r.expect_err("the panic is a diagnostic")[0];
        assert_eq!(
            d.message,
            "internal compiler error in `plan::lower`: no view for copy of %28"
        );
        assert_eq!(take_panicked_pass(), None, "guard consumed it");
    }
}
