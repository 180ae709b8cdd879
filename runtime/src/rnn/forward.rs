//! The forward time loop: [`forward`] fills the tape ([`Cell::tape`]) of
//! rows `rows`, step by step.
//!
//! Per step, the recurrent products of all the call's active rows (the
//! smallest range of rows holding them) are one GEMM each, reading
//! `h_{t-1}` (or `r · h_{t-1}`, `m`) in place from the tape and writing the
//! slot's gate field (or `h`); then a pointwise pass over the rows
//! finishes the cell (and copies the state of inactive rows through,
//! overwriting whatever the GEMM left in their slot).
//!
//! Invariants: a row's bits depend only on its own inputs and the weights
//! (the GEMM's recipe does not depend on the rows it is given), so any
//! split of the rows between calls computes the same tape; nothing
//! allocates.

use std::ops::Range;

use super::frame::Frame;
use super::pass::{rd, run, wr, Pass};
use super::real::{with_act, Act, Real, Sigmoid};
use super::{Cell, CellKind, Forward};
use crate::sgemm::Isa;

/// Runs the forward loop of rows `rows` of the batch: writes their rows of
/// `a.tape` (slot 0 the initial state, slot `t + 1` step `t`; see
/// [`Forward`]). Uses the GEMM kernel [`Isa::active`] names.
///
/// # Safety
/// Every pointer of `a` is valid for the shapes its docs give (`B` at
/// least `rows.end`; the optional ones null or valid) and consistent with
/// `cell`; the tape does not overlap the inputs; no other thread touches
/// these rows of the tape meanwhile.
pub unsafe fn forward<R: Real>(cell: &Cell, a: &Forward<R>, rows: Range<usize>) {
    // SAFETY: the caller's contract.
    unsafe { forward_with(Isa::active(), cell, a, rows) }
}

/// [`forward`] with a chosen GEMM kernel and vector width (for tests):
/// the same bits for every `isa`.
///
/// # Safety
/// As for [`forward`].
///
/// # Panics
/// If `isa` is not available on this CPU.
pub(crate) unsafe fn forward_with<R: Real>(
    isa: Isa,
    cell: &Cell,
    a: &Forward<R>,
    rows: Range<usize>,
) {
    if rows.is_empty() {
        return;
    }
    let f = Frame::new(isa, cell, a, rows);
    // SAFETY (all below): the caller's contract; the passes address the
    // call's rows and the fields of `f.lay`.
    unsafe {
        run(
            f.isa,
            &Step {
                f: &f,
                t: 0,
                pass: Which::Init,
            },
        );
        for t in 0..f.steps {
            step(&f, t);
        }
    }
}

/// The passes of a step.
#[derive(Clone, Copy)]
enum Which {
    /// Slot 0: the initial state, other fields 0.
    Init,
    /// `h = act(z)`.
    Basic,
    /// The LSTM's gates, `c` and `m`.
    Lstm,
    /// After the projection: `proj_clip`, inactive rows' `h`.
    LstmProj,
    /// The GRU's `r`, `u` and `r · h_{t-1}`.
    GruGates,
    /// The GRU's candidate and `h`.
    GruCand,
}

struct Step<'a, 'f, R> {
    f: &'a Frame<'f, R>,
    t: usize,
    pass: Which,
}

impl<R: Real> Pass for Step<'_, '_, R> {
    #[inline(always)]
    fn run(&self) {
        let act = self.f.act;
        // SAFETY: built by `forward_with` under its caller's contract.
        unsafe {
            match self.pass {
                Which::Init => self.init(),
                Which::Basic => with_act!(act, A => self.basic::<A>()),
                Which::Lstm => with_act!(act, A => self.lstm::<A>()),
                Which::LstmProj => self.lstm_proj(),
                Which::GruGates => self.gru_gates(),
                Which::GruCand => with_act!(act, A => self.gru_cand::<A>()),
            }
        }
    }
}

/// Step `t`: the GEMMs and the passes.
///
/// # Safety
/// As for [`forward`].
unsafe fn step<R: Real>(f: &Frame<R>, t: usize) {
    // SAFETY: the caller's contract.
    let (act, all) = unsafe { f.active_rows(t) };
    // SAFETY: the passes address the call's rows.
    let pass = |pass| unsafe { run(f.isa, &Step { f, t, pass }) };
    let (lay, s, h) = (f.lay, f.stride(), f.h);
    // SAFETY: with active rows, `act.start` is one of them; the GEMMs read
    // and write the active rows' fields of slots t and t + 1 (distinct
    // fields or slots) and the weights.
    let at = |field: usize, slot: usize| unsafe { f.slot(act.start, slot).add(field) };
    let gemm = !act.is_empty();
    unsafe {
        match f.kind {
            CellKind::Basic => {
                if gemm {
                    let (h_prev, z) = (at(lay.h, t), at(lay.h, t + 1));
                    f.gemm(&act, f.p, f.g, h_prev, s, f.f.wh, (f.g, 1), false, z, s);
                }
                pass(Which::Basic);
            }
            CellKind::Lstm => {
                if gemm {
                    let (h_prev, z) = (at(lay.h, t), at(lay.gates.unwrap_or(0), t + 1));
                    f.gemm(&act, f.p, f.g, h_prev, s, f.f.wh, (f.g, 1), false, z, s);
                }
                pass(Which::Lstm);
                if let Some(m) = lay.m {
                    if gemm {
                        let (m, out) = (at(m, t + 1), at(lay.h, t + 1));
                        f.gemm(&act, h, f.p, m, s, f.f.proj, (f.p, 1), false, out, s);
                    }
                    if f.proj_clip.is_some() || !all {
                        pass(Which::LstmProj);
                    }
                }
            }
            CellKind::Gru => {
                let gates = lay.gates.unwrap_or(0);
                if gemm {
                    let (h_prev, ru) = (at(lay.h, t), at(gates, t + 1));
                    f.gemm(&act, f.p, 2 * h, h_prev, s, f.f.wh, (f.g, 1), false, ru, s);
                }
                pass(Which::GruGates);
                if gemm {
                    let (rh, cand) = (at(lay.rh.unwrap_or(0), t + 1), at(gates + 2 * h, t + 1));
                    let wc = f.f.wh.add(2 * h);
                    f.gemm(&act, h, h, rh, s, wc, (f.g, 1), false, cand, s);
                }
                pass(Which::GruCand);
            }
        }
    }
}

impl<R: Real> Step<'_, '_, R> {
    /// Slot 0 of every row: zeros, then `h0` and `c0` when given.
    #[inline(always)]
    unsafe fn init(&self) {
        let f = self.f;
        for r in f.rows.clone() {
            unsafe {
                let slot = wr(f.slot(r, 0), f.lay.width);
                slot.fill(R::ZERO);
                if !f.f.h0.is_null() {
                    slot[..f.p].copy_from_slice(rd(f.f.h0.add(r * f.p), f.p));
                }
                if let (Some(c), false) = (f.lay.c, f.f.c0.is_null()) {
                    slot[c..c + f.h].copy_from_slice(rd(f.f.c0.add(r * f.h), f.h));
                }
            }
        }
    }

    /// Copies the state fields of slot `t` to slot `t + 1` and zeroes the
    /// others (an inactive step).
    #[inline(always)]
    unsafe fn copy_through(&self, r: usize) {
        let (f, t) = (self.f, self.t);
        let state = f.p + if f.kind == CellKind::Lstm { f.h } else { 0 };
        unsafe {
            let prev = rd(f.slot(r, t), state);
            let cur = wr(f.slot(r, t + 1), f.lay.width);
            cur[..state].copy_from_slice(prev);
            cur[state..].fill(R::ZERO);
        }
    }

    #[inline(always)]
    unsafe fn basic<A: Act>(&self) {
        let (f, t, h) = (self.f, self.t, self.f.h);
        for r in f.rows.clone() {
            unsafe {
                if !f.active(r, t) {
                    self.copy_through(r);
                    continue;
                }
                let x = rd(f.xproj(r, t), h);
                let out = wr(f.slot(r, t + 1), h);
                for j in 0..h {
                    out[j] = A::f(x[j] + out[j]);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn lstm<A: Act>(&self) {
        let (f, t, h) = (self.f, self.t, self.f.h);
        let lay = f.lay;
        let (c_at, gates) = (lay.c.unwrap_or(0), lay.gates.unwrap_or(0));
        let m_at = lay.m.unwrap_or(lay.h);
        let fb = f.forget_bias;
        for r in f.rows.clone() {
            unsafe {
                if !f.active(r, t) {
                    self.copy_through(r);
                    continue;
                }
                let (prev, cur) = (f.slot(r, t), f.slot(r, t + 1));
                let x = rd(f.xproj(r, t), 4 * h);
                let z = wr(cur.add(gates), 4 * h);
                let c_prev = rd(prev.add(c_at), h);
                let c = wr(cur.add(c_at), h);
                let m = wr(cur.add(m_at), h);
                for k in 0..4 * h {
                    z[k] = x[k] + z[k];
                }
                let (zi, z) = z.split_at_mut(h);
                let (zj, z) = z.split_at_mut(h);
                let (zf, zo) = z.split_at_mut(h);
                for zf in zf.iter_mut() {
                    *zf = *zf + fb;
                }
                if f.peepholes {
                    let (wi, wf) = (f.peephole(0), f.peephole(1));
                    for k in 0..h {
                        zi[k] = zi[k] + wi[k] * c_prev[k];
                        zf[k] = zf[k] + wf[k] * c_prev[k];
                    }
                }
                for k in 0..h {
                    zi[k] = Sigmoid::f(zi[k]);
                    zj[k] = A::f(zj[k]);
                    zf[k] = Sigmoid::f(zf[k]);
                    c[k] = zf[k] * c_prev[k] + zi[k] * zj[k];
                }
                if let Some(clip) = f.cell_clip {
                    for ck in c.iter_mut() {
                        *ck = clip_value(*ck, clip);
                    }
                }
                if f.peepholes {
                    let wo = f.peephole(2);
                    for k in 0..h {
                        zo[k] = zo[k] + wo[k] * c[k];
                    }
                }
                for k in 0..h {
                    zo[k] = Sigmoid::f(zo[k]);
                    m[k] = zo[k] * A::f(c[k]);
                }
            }
        }
    }

    /// After the projection GEMM: clips `h` of the active rows, copies `h`
    /// of the inactive ones through (the GEMM may have written it).
    #[inline(always)]
    unsafe fn lstm_proj(&self) {
        let (f, t, p) = (self.f, self.t, self.f.p);
        for r in f.rows.clone() {
            unsafe {
                let out = wr(f.slot(r, t + 1), p);
                if !f.active(r, t) {
                    out.copy_from_slice(rd(f.slot(r, t), p));
                } else if let Some(clip) = f.proj_clip {
                    for o in out.iter_mut() {
                        *o = clip_value(*o, clip);
                    }
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn gru_gates(&self) {
        let (f, t, h) = (self.f, self.t, self.f.h);
        let (gates, rh_at) = (f.lay.gates.unwrap_or(0), f.lay.rh.unwrap_or(0));
        for r in f.rows.clone() {
            unsafe {
                let cur = f.slot(r, t + 1);
                let z = wr(cur.add(gates), 2 * h);
                let rh = wr(cur.add(rh_at), h);
                if !f.active(r, t) {
                    z.fill(R::ZERO);
                    rh.fill(R::ZERO);
                    continue;
                }
                let x = rd(f.xproj(r, t), 2 * h);
                let h_prev = rd(f.slot(r, t), h);
                for k in 0..2 * h {
                    z[k] = Sigmoid::f(x[k] + z[k]);
                }
                for k in 0..h {
                    rh[k] = z[k] * h_prev[k];
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn gru_cand<A: Act>(&self) {
        let (f, t, h) = (self.f, self.t, self.f.h);
        let gates = f.lay.gates.unwrap_or(0);
        for r in f.rows.clone() {
            unsafe {
                let (prev, cur) = (f.slot(r, t), f.slot(r, t + 1));
                let cand = wr(cur.add(gates + 2 * h), h);
                let out = wr(cur, h);
                if !f.active(r, t) {
                    cand.fill(R::ZERO);
                    out.copy_from_slice(rd(prev, h));
                    continue;
                }
                let x = rd(f.xproj(r, t).add(2 * h), h);
                let u = rd(cur.add(gates + h), h);
                let h_prev = rd(prev, h);
                for k in 0..h {
                    let c = A::f(x[k] + cand[k]);
                    cand[k] = c;
                    out[k] = u[k] * h_prev[k] + (R::ONE - u[k]) * c;
                }
            }
        }
    }
}

/// TF's `clip_by_value(x, -clip, clip)`; NaN passes.
#[inline(always)]
pub(super) fn clip_value<R: Real>(x: R, clip: R) -> R {
    if x > clip {
        clip
    } else if x < -clip {
        -clip
    } else {
        x
    }
}
