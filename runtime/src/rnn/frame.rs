//! One call's view of a forward pass's operands: the sizes, the rows,
//! each row's length, and the addresses of tape slots and inputs. Shared
//! by [`super::forward`] and [`super::backward`].
//!
//! Invariants: row `r`'s slot `s` of the tape starts at
//! `tape + (r (T + 1) + s) W`; `xproj`'s step `t` of row `r` at
//! `xproj + (r T + t) G`; a row is active at step `t` when `t < len(r)`,
//! `len(r)` the row's length truncated to an integer and clamped to
//! `0..=T` (NaN: 0).

use std::ops::Range;

use super::pass::rd;
use super::real::Real;
use super::{Activation, Cell, CellKind, Forward, TapeLayout};
use crate::sgemm::Isa;

pub(super) struct Frame<'a, R> {
    pub isa: Isa,
    pub f: &'a Forward<R>,
    pub rows: Range<usize>,
    pub steps: usize,
    /// `H`, `P`, `G`.
    pub h: usize,
    pub p: usize,
    pub g: usize,
    pub kind: CellKind,
    pub lay: TapeLayout,
    pub act: Activation,
    pub proj: bool,
    pub peepholes: bool,
    pub forget_bias: R,
    pub cell_clip: Option<R>,
    pub proj_clip: Option<R>,
}

impl<'a, R: Real> Frame<'a, R> {
    pub fn new(isa: Isa, cell: &Cell, f: &'a Forward<R>, rows: Range<usize>) -> Self {
        assert!(
            isa.is_available(),
            "rnn: {isa:?} is not supported by this CPU"
        );
        debug_assert!(cell.kind == CellKind::Lstm || cell.num_proj.is_none());
        let lstm = cell.kind == CellKind::Lstm;
        let bits = |b: u32| R::from_f32(f32::from_bits(b));
        Frame {
            isa,
            f,
            rows,
            steps: f.steps,
            h: cell.units as usize,
            p: cell.output_size(),
            g: cell.gate_width(),
            kind: cell.kind,
            lay: cell.tape(),
            act: cell.activation,
            proj: lstm && cell.num_proj.is_some(),
            peepholes: lstm && cell.use_peepholes,
            forget_bias: bits(cell.forget_bias),
            cell_clip: cell.cell_clip.filter(|_| lstm).map(bits),
            proj_clip: cell.proj_clip.filter(|_| lstm).map(bits),
        }
    }

    /// Row `r`'s length.
    ///
    /// # Safety
    /// `lengths` is null or valid for row `r`.
    #[inline(always)]
    pub unsafe fn len(&self, r: usize) -> usize {
        if self.f.lengths.is_null() {
            return self.steps;
        }
        // SAFETY: the caller's contract.
        let v = unsafe { *self.f.lengths.add(r) }.to_f64();
        // `as` saturates and maps NaN to 0.
        (v as usize).min(self.steps)
    }

    /// Whether row `r` runs step `t`.
    ///
    /// # Safety
    /// As for [`Frame::len`].
    #[inline(always)]
    pub unsafe fn active(&self, r: usize, t: usize) -> bool {
        // SAFETY: the caller's contract.
        t < unsafe { self.len(r) }
    }

    /// The smallest range of the call's rows holding every row active at
    /// step `t` (empty if none), and whether every row is active.
    ///
    /// # Safety
    /// As for [`Frame::len`], for every row of the call.
    pub unsafe fn active_rows(&self, t: usize) -> (Range<usize>, bool) {
        if self.f.lengths.is_null() {
            return (self.rows.clone(), true);
        }
        let (mut lo, mut hi, mut all) = (self.rows.end, self.rows.start, true);
        for r in self.rows.clone() {
            // SAFETY: the caller's contract.
            if unsafe { self.active(r, t) } {
                lo = lo.min(r);
                hi = r + 1;
            } else {
                all = false;
            }
        }
        (lo..hi.max(lo), all)
    }

    /// The tape's row stride, `(T + 1) W`.
    #[inline(always)]
    pub fn stride(&self) -> usize {
        (self.steps + 1) * self.lay.width
    }

    /// The start of row `r`'s slot `s` of the tape.
    ///
    /// # Safety
    /// Row `r` is a row of the tape, `s <= T`.
    #[inline(always)]
    pub unsafe fn slot(&self, r: usize, s: usize) -> *mut R {
        // SAFETY: the caller's contract.
        unsafe { self.f.tape.add(r * self.stride() + s * self.lay.width) }
    }

    /// Row `r`'s `xproj` at step `t` (`G` wide).
    ///
    /// # Safety
    /// Row `r` is a row of `xproj`, `t < T`.
    #[inline(always)]
    pub unsafe fn xproj(&self, r: usize, t: usize) -> *const R {
        // SAFETY: the caller's contract.
        unsafe { self.f.xproj.add((r * self.steps + t) * self.g) }
    }

    /// Peephole row `k` (`0`: `w_i`, `1`: `w_f`, `2`: `w_o`).
    ///
    /// # Safety
    /// The cell has peepholes and `peepholes` is valid for `[3, H]`.
    #[inline(always)]
    pub unsafe fn peephole(&self, k: usize) -> &'a [R] {
        // SAFETY: the caller's contract.
        unsafe { rd(self.f.peepholes.add(k * self.h), self.h) }
    }

    /// `C = A @ B (+ C)` over rows `rows` of two tape-like operands: A at
    /// `a` (row `rows.start`), row stride `rsa`, `k` wide; C at `c`, row
    /// stride `rsc`, `n` wide; B `[k, n]` at `b` with strides `(rsb, csb)`.
    ///
    /// # Safety
    /// As for [`Real::gemm`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn gemm(
        &self,
        rows: &Range<usize>,
        k: usize,
        n: usize,
        a: *const R,
        rsa: usize,
        b: *const R,
        (rsb, csb): (usize, usize),
        accumulate: bool,
        c: *mut R,
        rsc: usize,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            R::gemm(
                self.isa,
                rows.len(),
                k,
                n,
                a,
                rsa as isize,
                1,
                b,
                rsb as isize,
                csb as isize,
                accumulate,
                c,
                rsc as isize,
                1,
            )
        }
    }
}
