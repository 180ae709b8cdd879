//! The backward time loop (back-propagation through time): [`backward`]
//! fills the gradient tape ([`Cell::grad_tape`]) of rows `rows` from the
//! forward tape and the loss's gradient with respect to every slot's state.
//!
//! It runs `t = T - 1, …, 0`, carrying each row's `dL/dh` (and `dL/dc`) in
//! slot 0 of the gradient tape, where `dh0`/`dc0` end up: per step, the
//! carry plus `dstate`'s slot `t + 1` is the total gradient of slot
//! `t + 1`'s state; a pointwise pass turns it into `dz` (and `dproj`), and
//! `dh_{t-1} = dz @ W_hᵀ` is one GEMM over the call's active rows (the
//! LSTM's projection and the GRU's candidate add one more each). The GEMM
//! writes the carry directly when every row is active, else a private
//! scratch field copied to the active rows' carry, so an inactive row's
//! carry passes through untouched.
//!
//! # Clipping
//! TF's `clip_by_value` passes the gradient where `-clip <= x <= clip`.
//! `cell_clip`: the unclipped `c` is recomputed from the tape with the
//! forward's operations (the same bits), so the mask is exact.
//! `proj_clip`: the tape keeps only the clipped `h`, and `|h| >= proj_clip`
//! counts as clipped (gradient 0); this differs from TF only where the
//! unclipped value is exactly `±proj_clip`.
//!
//! Invariants: as the forward's (a row's bits depend on its own operands
//! and the weights only; nothing allocates).

use std::ops::Range;

use super::frame::Frame;
use super::pass::{rd, run, wr, Pass};
use super::real::{with_act, Act, Real, Sigmoid};
use super::{Backward, Cell, CellKind, GradLayout};
use crate::sgemm::Isa;

/// Runs the backward loop of rows `rows`: writes their rows of `a.grad`
/// ([`Cell::grad_tape`]), reading the tape [`super::forward`] wrote from
/// the same operands. Uses the GEMM kernel [`Isa::active`] names.
///
/// # Safety
/// As for [`super::forward`], and `dstate` is valid for `[B, T + 1, S]`,
/// `grad` for `[B, T + 1, WG]`, the gradient tape overlapping nothing else;
/// no other thread touches these rows of it meanwhile.
pub unsafe fn backward<R: Real>(cell: &Cell, a: &Backward<R>, rows: Range<usize>) {
    // SAFETY: the caller's contract.
    unsafe { backward_with(Isa::active(), cell, a, rows) }
}

/// [`backward`] with a chosen GEMM kernel and vector width (for tests):
/// the same bits for every `isa`.
///
/// # Safety
/// As for [`backward`].
///
/// # Panics
/// If `isa` is not available on this CPU.
pub(crate) unsafe fn backward_with<R: Real>(
    isa: Isa,
    cell: &Cell,
    a: &Backward<R>,
    rows: Range<usize>,
) {
    if rows.is_empty() {
        return;
    }
    let f = Frame::new(isa, cell, &a.forward, rows);
    let gl = cell.grad_tape();
    let g = Grads {
        f: &f,
        dstate: a.dstate,
        grad: a.grad,
        gl,
        state: cell.state_width(),
        prev: gl.private,
        mid: gl.private + if cell.kind == CellKind::Gru { 0 } else { f.p },
    };
    // SAFETY (all below): the caller's contract; the passes address the
    // call's rows and the fields of the two layouts.
    unsafe {
        g.pass(0, false, Which::Init);
        for t in (0..f.steps).rev() {
            g.step(t);
        }
        g.pass(0, false, Which::Final);
    }
}

/// The passes of a step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    /// Slot 0 (the carry) zeroed.
    Init,
    /// `dh0`, `dc0`: the carry plus `dstate`'s slot 0.
    Final,
    /// `dz = dh · act'(h)`.
    BasicDz,
    /// `dproj`: `dh` through the projection clip's mask.
    LstmDproj,
    /// The LSTM's `dz` and the `dc` carry.
    LstmDz,
    /// The GRU's `dz_u`, `dz_cand`.
    GruDzCand,
    /// The GRU's `dz_r` and the non-GEMM part of `dh_{t-1}`.
    GruDzR,
    /// The active rows' carry from the scratch the GEMM wrote.
    CarryH,
}

/// The backward operands beside the forward's [`Frame`].
struct Grads<'a, 'f, R> {
    f: &'a Frame<'f, R>,
    dstate: *const R,
    grad: *mut R,
    gl: GradLayout,
    /// `S`, `dstate`'s width.
    state: usize,
    /// Scratch: `dz @ W_hᵀ` (`P`; basic, LSTM).
    prev: usize,
    /// Scratch: the LSTM's `dm` or the GRU's `d(r·h)` (`H`).
    mid: usize,
}

struct Step<'a, 'b, 'f, R> {
    g: &'a Grads<'b, 'f, R>,
    t: usize,
    all: bool,
    pass: Which,
}

impl<R: Real> Pass for Step<'_, '_, '_, R> {
    #[inline(always)]
    fn run(&self) {
        let act = self.g.f.act;
        // SAFETY: built by `backward_with` under its caller's contract.
        unsafe {
            match self.pass {
                Which::Init => self.init(),
                Which::Final => self.finish(),
                Which::BasicDz => with_act!(act, A => self.basic_dz::<A>()),
                Which::LstmDproj => self.lstm_dproj(),
                Which::LstmDz => with_act!(act, A => self.lstm_dz::<A>()),
                Which::GruDzCand => with_act!(act, A => self.gru_dz_cand::<A>()),
                Which::GruDzR => self.gru_dz_r(),
                Which::CarryH => self.carry_from_scratch(),
            }
        }
    }
}

impl<R: Real> Grads<'_, '_, R> {
    /// The gradient tape's row stride, `(T + 1) WG`.
    #[inline(always)]
    fn stride(&self) -> usize {
        (self.f.steps + 1) * self.gl.width
    }

    /// The start of row `r`'s slot `s` of the gradient tape.
    #[inline(always)]
    unsafe fn slot(&self, r: usize, s: usize) -> *mut R {
        unsafe { self.grad.add(r * self.stride() + s * self.gl.width) }
    }

    /// Row `r`'s `dstate` of slot `s` (`h` at 0, `c` at `P`).
    #[inline(always)]
    unsafe fn dstate(&self, r: usize, s: usize) -> *const R {
        unsafe { self.dstate.add((r * (self.f.steps + 1) + s) * self.state) }
    }

    /// Row `r`'s carried `dL/dh` (`P`).
    #[inline(always)]
    unsafe fn carry_h<'x>(&self, r: usize) -> &'x mut [R] {
        unsafe { wr(self.slot(r, 0).add(self.gl.dh0), self.f.p) }
    }

    /// Row `r`'s carried `dL/dc` (`H`, LSTM).
    #[inline(always)]
    unsafe fn carry_c<'x>(&self, r: usize) -> &'x mut [R] {
        unsafe { wr(self.slot(r, 0).add(self.gl.dc0.unwrap_or(0)), self.f.h) }
    }

    #[inline(always)]
    unsafe fn pass(&self, t: usize, all: bool, pass: Which) {
        unsafe {
            run(
                self.f.isa,
                &Step {
                    g: self,
                    t,
                    all,
                    pass,
                },
            )
        }
    }

    /// Step `t`, backwards.
    unsafe fn step(&self, t: usize) {
        let f = self.f;
        let (active, all) = unsafe { f.active_rows(t) };
        let (gl, s, h) = (self.gl, self.stride(), f.h);
        // SAFETY: with active rows, `active.start` is one of them.
        let at = |field: usize, slot: usize| unsafe { self.slot(active.start, slot).add(field) };
        // Where `dh_{t-1}`'s GEMM goes: the carry when every row is active.
        let target = |scratch: usize| {
            if all {
                at(gl.dh0, 0)
            } else {
                at(scratch, t + 1)
            }
        };
        let gemm = !active.is_empty();
        // `dh_{-1}` only matters for a given initial `h`: without one, the
        // last `dz @ W_hᵀ` is skipped (`dh0` then means nothing).
        let dh_gemm = gemm && (t > 0 || !f.f.h0.is_null());
        let wh_t = (1, f.g);
        // SAFETY: the GEMMs read the active rows' fields of slot t + 1 and
        // write their scratch (or carry, in slot 0), and the weights.
        unsafe {
            match f.kind {
                CellKind::Basic => {
                    self.pass(t, all, Which::BasicDz);
                    if dh_gemm {
                        let (dz, dh) = (at(gl.dz, t + 1), target(self.prev));
                        f.gemm(&active, f.g, f.p, dz, s, f.f.wh, wh_t, false, dh, s);
                    }
                }
                CellKind::Lstm => {
                    if let Some(dproj) = gl.dproj {
                        self.pass(t, all, Which::LstmDproj);
                        if gemm {
                            let (dp, dm) = (at(dproj, t + 1), at(self.mid, t + 1));
                            f.gemm(&active, f.p, h, dp, s, f.f.proj, (1, f.p), false, dm, s);
                        }
                    }
                    self.pass(t, all, Which::LstmDz);
                    if dh_gemm {
                        let (dz, dh) = (at(gl.dz, t + 1), target(self.prev));
                        f.gemm(&active, f.g, f.p, dz, s, f.f.wh, wh_t, false, dh, s);
                    }
                }
                CellKind::Gru => {
                    self.pass(t, all, Which::GruDzCand);
                    if gemm {
                        let (dc, drh) = (at(gl.dz + 2 * h, t + 1), at(self.mid, t + 1));
                        let wc = f.f.wh.add(2 * h);
                        f.gemm(&active, h, h, dc, s, wc, wh_t, false, drh, s);
                    }
                    self.pass(t, all, Which::GruDzR);
                    // Adds to what `GruDzR` left: the carry, or the scratch
                    // the first GEMM wrote for every row it adds to.
                    if dh_gemm {
                        let (dz, dh) = (at(gl.dz, t + 1), target(self.mid));
                        f.gemm(&active, 2 * h, h, dz, s, f.f.wh, wh_t, true, dh, s);
                    }
                }
            }
            if !all && dh_gemm {
                self.pass(t, all, Which::CarryH);
            }
        }
    }
}

impl<R: Real> Step<'_, '_, '_, R> {
    /// Every row's slot 0 but the private fields: zero.
    #[inline(always)]
    unsafe fn init(&self) {
        let g = self.g;
        for r in g.f.rows.clone() {
            unsafe { wr(g.slot(r, 0), g.gl.private).fill(R::ZERO) };
        }
    }

    /// `dh0 = carry + dstate[0].h`, `dc0 = carry + dstate[0].c`.
    #[inline(always)]
    unsafe fn finish(&self) {
        let (g, p) = (self.g, self.g.f.p);
        for r in g.f.rows.clone() {
            unsafe {
                add_to(g.carry_h(r), rd(g.dstate(r, 0), p));
                if g.f.kind == CellKind::Lstm {
                    add_to(g.carry_c(r), rd(g.dstate(r, 0).add(p), g.f.h));
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn basic_dz<A: Act>(&self) {
        let (g, t, h) = (self.g, self.t, self.g.f.h);
        for r in g.f.rows.clone() {
            unsafe {
                let dh = g.carry_h(r);
                add_to(dh, rd(g.dstate(r, t + 1), h));
                let dz = wr(g.slot(r, t + 1).add(g.gl.dz), h);
                if !g.f.active(r, t) {
                    dz.fill(R::ZERO);
                    continue;
                }
                let y = rd(g.f.slot(r, t + 1), h);
                for k in 0..h {
                    dz[k] = dh[k] * A::d(y[k]);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn lstm_dproj(&self) {
        let (g, t, p) = (self.g, self.t, self.g.f.p);
        for r in g.f.rows.clone() {
            unsafe {
                let dh = g.carry_h(r);
                add_to(dh, rd(g.dstate(r, t + 1), p));
                let dproj = wr(g.slot(r, t + 1).add(g.gl.dproj.unwrap_or(0)), p);
                if !g.f.active(r, t) {
                    dproj.fill(R::ZERO);
                } else if let Some(clip) = g.f.proj_clip {
                    let y = rd(g.f.slot(r, t + 1), p);
                    for k in 0..p {
                        let pass = y[k] < clip && y[k] > -clip;
                        dproj[k] = if pass { dh[k] } else { R::ZERO };
                    }
                } else {
                    dproj.copy_from_slice(dh);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn lstm_dz<A: Act>(&self) {
        let (g, t, h) = (self.g, self.t, self.g.f.h);
        let f = g.f;
        let (c_at, gates) = (f.lay.c.unwrap_or(0), f.lay.gates.unwrap_or(0));
        for r in f.rows.clone() {
            unsafe {
                let dc = g.carry_c(r);
                add_to(dc, rd(g.dstate(r, t + 1).add(f.p), h));
                if !f.proj {
                    add_to(g.carry_h(r), rd(g.dstate(r, t + 1), h));
                }
                let dz = wr(g.slot(r, t + 1).add(g.gl.dz), 4 * h);
                if !f.active(r, t) {
                    dz.fill(R::ZERO);
                    continue;
                }
                let dm: &[R] = if f.proj {
                    rd(g.slot(r, t + 1).add(g.mid), h)
                } else {
                    g.carry_h(r)
                };
                let (prev, cur) = (f.slot(r, t), f.slot(r, t + 1));
                let c_prev = rd(prev.add(c_at), h);
                let c = rd(cur.add(c_at), h);
                let gate = |k: usize| rd(cur.add(gates + k * h), h);
                let (i, j, fg, o) = (gate(0), gate(1), gate(2), gate(3));
                let (dzi, dz) = dz.split_at_mut(h);
                let (dzj, dz) = dz.split_at_mut(h);
                let (dzf, dzo) = dz.split_at_mut(h);
                // Through m = o · act(c): dz_o and dc.
                for k in 0..h {
                    let ac = A::f(c[k]);
                    dzo[k] = dm[k] * ac * Sigmoid::d(o[k]);
                    dc[k] = dc[k] + dm[k] * o[k] * A::d(ac);
                }
                if f.peepholes {
                    let wo = f.peephole(2);
                    for k in 0..h {
                        dc[k] = dc[k] + dzo[k] * wo[k];
                    }
                }
                if let Some(clip) = f.cell_clip {
                    for k in 0..h {
                        // The forward's unclipped c, bit for bit.
                        let raw = fg[k] * c_prev[k] + i[k] * j[k];
                        let pass = raw >= -clip && raw <= clip;
                        dc[k] = if pass { dc[k] } else { R::ZERO };
                    }
                }
                // Through c = f · c_prev + i · j.
                for k in 0..h {
                    dzi[k] = dc[k] * j[k] * Sigmoid::d(i[k]);
                    dzj[k] = dc[k] * i[k] * A::d(j[k]);
                    dzf[k] = dc[k] * c_prev[k] * Sigmoid::d(fg[k]);
                    dc[k] = dc[k] * fg[k];
                }
                if f.peepholes {
                    let (wi, wf) = (f.peephole(0), f.peephole(1));
                    for k in 0..h {
                        dc[k] = dc[k] + dzi[k] * wi[k] + dzf[k] * wf[k];
                    }
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn gru_dz_cand<A: Act>(&self) {
        let (g, t, h) = (self.g, self.t, self.g.f.h);
        let f = g.f;
        let gates = f.lay.gates.unwrap_or(0);
        for r in f.rows.clone() {
            unsafe {
                let dh = g.carry_h(r);
                add_to(dh, rd(g.dstate(r, t + 1), h));
                let gslot = g.slot(r, t + 1);
                let dz = wr(gslot.add(g.gl.dz), 3 * h);
                if !f.active(r, t) {
                    dz.fill(R::ZERO);
                    continue;
                }
                let cur = f.slot(r, t + 1);
                let u = rd(cur.add(gates + h), h);
                let cand = rd(cur.add(gates + 2 * h), h);
                let h_prev = rd(f.slot(r, t), h);
                let (dzu, dzc) = dz[h..].split_at_mut(h);
                for k in 0..h {
                    dzu[k] = dh[k] * (h_prev[k] - cand[k]) * Sigmoid::d(u[k]);
                    dzc[k] = dh[k] * (R::ONE - u[k]) * A::d(cand[k]);
                }
            }
        }
    }

    /// `dz_r = d(r·h) · h_{t-1} · σ'(r)`; `d(r·h) · r + dh · u` into the
    /// carry (every row active) or the scratch, for the last GEMM to add to.
    #[inline(always)]
    unsafe fn gru_dz_r(&self) {
        let (g, t, h) = (self.g, self.t, self.g.f.h);
        let f = g.f;
        let gates = f.lay.gates.unwrap_or(0);
        for r in f.rows.clone() {
            unsafe {
                if !f.active(r, t) {
                    continue;
                }
                let gslot = g.slot(r, t + 1);
                let dzr = wr(gslot.add(g.gl.dz), h);
                let drh = wr(gslot.add(g.mid), h);
                let dh = g.carry_h(r);
                let cur = f.slot(r, t + 1);
                let (rg, u) = (rd(cur.add(gates), h), rd(cur.add(gates + h), h));
                let h_prev = rd(f.slot(r, t), h);
                if self.all {
                    for k in 0..h {
                        let d = drh[k];
                        dzr[k] = d * h_prev[k] * Sigmoid::d(rg[k]);
                        dh[k] = d * rg[k] + dh[k] * u[k];
                    }
                } else {
                    for k in 0..h {
                        let d = drh[k];
                        dzr[k] = d * h_prev[k] * Sigmoid::d(rg[k]);
                        drh[k] = d * rg[k] + dh[k] * u[k];
                    }
                }
            }
        }
    }

    /// The active rows' carry `dh` from the scratch the last GEMM wrote.
    #[inline(always)]
    unsafe fn carry_from_scratch(&self) {
        let (g, t) = (self.g, self.t);
        let scratch = if g.f.kind == CellKind::Gru {
            g.mid
        } else {
            g.prev
        };
        for r in g.f.rows.clone() {
            unsafe {
                if g.f.active(r, t) {
                    let src = rd(g.slot(r, t + 1).add(scratch), g.f.p);
                    g.carry_h(r).copy_from_slice(src);
                }
            }
        }
    }
}

/// `acc += x`, elementwise.
#[inline(always)]
fn add_to<R: Real>(acc: &mut [R], x: &[R]) {
    for (a, &x) in acc.iter_mut().zip(x) {
        *a = *a + x;
    }
}
