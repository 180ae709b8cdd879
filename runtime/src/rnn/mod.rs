//! Recurrent cells run over time: the loop inside `tf.compat.v1.nn.dynamic_rnn`.
//!
//! Owns: the description of a cell ([`Cell`]: TF's `BasicRNNCell` /
//! `TfLiteRNNCell`, `LSTMCell` / `TFLiteLSTMCell` with peepholes, cell and
//! projection clipping, and `GRUCell`), the layout of the *tape* a forward
//! pass leaves for its backward pass ([`Cell::tape`]) and of the *gradient
//! tape* the backward pass leaves for the weight gradients
//! ([`Cell::grad_tape`]), and the two time loops: [`forward`] and
//! [`backward`] (generic over f32, the compiled step's, and f64, the
//! compiler's reference interpreter), with their C entry points for JIT code,
//! [`specc_rnn_forward`] and [`specc_rnn_backward`].
//!
//! Only the sequential part of a recurrent layer is here. The compiler does
//! everything that is one large product over all time steps in its own IR:
//! the input projection `xproj = x @ W_x + bias` before the loop, and after
//! the backward loop the weight gradients (`h_{t-1}ᵀ dz` summed over the
//! batch and the steps, the peephole and projection gradients) from
//! slices of the two tapes.
//!
//! # The cell, per time step `t` (TF's order of gates and its names)
//!
//! `z = xproj[:, t] + h_{t-1} @ W_h` (`W_h` is the kernel's rows after the
//! input's: TF's `concat([x, h]) @ kernel + bias`, split), then
//! - basic: `h = act(z)`;
//! - LSTM (`z` = `[i, j, f, o]`, `H` each): with peepholes (`w_i, w_f, w_o`)
//!   `c = σ(f + forget_bias + w_f·c_{t-1})·c_{t-1} + σ(i + w_i·c_{t-1})·act(j)`,
//!   without them `c = σ(f + forget_bias)·c_{t-1} + σ(i)·act(j)`; with
//!   `cell_clip`, `c = clip(c, ±cell_clip)`; `m = σ(o [+ w_o·c])·act(c)`;
//!   with `num_proj`, `h = m @ W_proj` (then `clip(h, ±proj_clip)` with a
//!   `proj_clip`), else `h = m`. The state is `(c, h)`.
//! - GRU (`z`'s first `2H` columns `[r, u]`, then the candidate's `H`):
//!   `r, u = σ(xproj[:, t, 0:2H] + h_{t-1} @ W_h[:, 0:2H])`,
//!   `cand = act(xproj[:, t, 2H:3H] + (r·h_{t-1}) @ W_h[:, 2H:3H])`,
//!   `h = u·h_{t-1} + (1 − u)·cand`.
//!
//! With sequence lengths, a row is *active* at step `t` when `t < len`;
//! at inactive steps its state is copied through (TF's `dynamic_rnn`:
//! the final state is the state at the row's length) and its gradient
//! passes straight through. (Outputs past the length are zeroed by the
//! compiler, in IR, not here.)
//!
//! # Invariants
//! - Every row's bits depend only on that row's inputs and the weights:
//!   a call over rows `r0..r1` computes exactly what a call over all rows
//!   computes for them (the GEMM's recipe, [`crate::sgemm`]), so two
//!   threads may each take a range of rows of the same call.
//! - Nothing allocates: every buffer is the caller's.
//! - The f32 path's `σ`, `tanh` and `exp` are specc's own polynomials (the
//!   algorithms of `compiler/src/codegen/math.rs`, without FMA), the same
//!   bits on every CPU.

//!
//! # Code map
//! - `real`: [`Real`] (f32, f64: arithmetic, `σ`, `tanh`, the activations
//!   and their derivatives, the GEMM) and the activations as types.
//! - `math`: f32 `exp`, `tanh`, `σ`: the compiled step's algorithms.
//! - `pass`: a pointwise pass and the vector ISA it is compiled for.
//! - `frame`: the addressing of one call (rows, lengths, tape slots).
//! - `forward_loop`, `backward_loop`: the two time loops.

use std::ops::Range;

mod backward_loop;
mod code;
mod forward_loop;
mod frame;
mod math;
mod pass;
mod real;
#[cfg(test)]
mod tests;

pub use backward_loop::backward;
pub use code::CellCode;
pub use forward_loop::forward;
pub use real::Real;

/// A cell's nonlinearity (`activation`; the gates always use `σ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    Tanh,
    Relu,
    Sigmoid,
    Linear,
}

/// Which cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// `BasicRNNCell` / `TfLiteRNNCell`.
    Basic,
    /// `LSTMCell` / `TFLiteLSTMCell`.
    Lstm,
    /// `GRUCell`.
    Gru,
}

/// A cell's static description. Float settings are stored as bits, so a
/// cell hashes (the compiler's IR ops are hash-consed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cell {
    pub kind: CellKind,
    /// `num_units`, `H`.
    pub units: u32,
    /// LSTM `num_proj` (`P`), else `None`.
    pub num_proj: Option<u32>,
    /// LSTM `use_peepholes`.
    pub use_peepholes: bool,
    /// LSTM `forget_bias` (f32 bits; TF's default 1.0).
    pub forget_bias: u32,
    /// LSTM `cell_clip` (f32 bits), `None`: no clipping.
    pub cell_clip: Option<u32>,
    /// LSTM `proj_clip` (f32 bits), `None`: no clipping.
    pub proj_clip: Option<u32>,
    pub activation: Activation,
}

/// Where the fields of one `(row, slot)` of a tape are, in floats from the
/// start of the slot; a tape is `[B, T + 1, width]` row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeLayout {
    pub width: usize,
    /// The output state `h` (`P` wide): every cell's, at 0.
    pub h: usize,
    /// The LSTM's cell state `c` (`H`), at `P`.
    pub c: Option<usize>,
    /// The gate values after their nonlinearity: LSTM `[i, j, f, o]` (`4H`:
    /// `σ(i..)`, `act(j)`, `σ(f..)`, `σ(o..)`), GRU `[r, u, cand]` (`3H`:
    /// `σ`, `σ`, `act`); `None` for the basic cell (its `h` is `act(z)`).
    pub gates: Option<usize>,
    /// LSTM with `num_proj`: `m` before the projection (`H`).
    pub m: Option<usize>,
    /// GRU: `r · h_{t-1}`, the candidate product's operand (`H`).
    pub rh: Option<usize>,
}

/// Where the fields of one `(row, slot)` of a gradient tape are; a gradient
/// tape is `[B, T + 1, width]` row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GradLayout {
    pub width: usize,
    /// Slot `t + 1`: `dL/dz` of step `t` (`G` wide, the gates' order as in
    /// `xproj`), zero where the row is inactive. At 0.
    pub dz: usize,
    /// Slot `t + 1`, LSTM with `num_proj`: `dL/d(m @ W_proj)` of step `t`
    /// (`P`; after the projection clip's mask), zero where inactive.
    pub dproj: Option<usize>,
    /// Slot 0: `dL/dh_{-1}` (`P`), at 0 — only with a given `h0`: without
    /// one its last product is skipped and the field means nothing.
    pub dh0: usize,
    /// Slot 0, LSTM: `dL/dc_{-1}` (`H`), at `P`.
    pub dc0: Option<usize>,
    /// Fields the backward pass uses as its own scratch (any slot); their
    /// values mean nothing to the caller.
    pub private: usize,
}

impl Cell {
    /// `P`: the width of `h` and of the outputs (`num_proj` or `units`).
    pub fn output_size(&self) -> usize {
        self.num_proj.unwrap_or(self.units) as usize
    }

    /// `G`: the width of `xproj` and of `W_h`'s columns (basic `H`, LSTM
    /// `4H`, GRU `3H`).
    pub fn gate_width(&self) -> usize {
        let h = self.units as usize;
        match self.kind {
            CellKind::Basic => h,
            CellKind::Lstm => 4 * h,
            CellKind::Gru => 3 * h,
        }
    }

    /// The state's width in a tape slot: `P + H` (LSTM) or `H`.
    pub fn state_width(&self) -> usize {
        match self.kind {
            CellKind::Lstm => self.output_size() + self.units as usize,
            _ => self.units as usize,
        }
    }

    /// The forward tape's layout: basic `[h]`; LSTM `[h (P), c (H),
    /// gates (4H), m (H, with num_proj)]`; GRU `[h, gates (3H), rh]`.
    pub fn tape(&self) -> TapeLayout {
        let h = self.units as usize;
        let p = self.output_size();
        match self.kind {
            CellKind::Basic => TapeLayout {
                width: h,
                h: 0,
                c: None,
                gates: None,
                m: None,
                rh: None,
            },
            CellKind::Lstm => TapeLayout {
                width: p + 5 * h + if self.num_proj.is_some() { h } else { 0 },
                h: 0,
                c: Some(p),
                gates: Some(p + h),
                m: self.num_proj.map(|_| p + 5 * h),
                rh: None,
            },
            CellKind::Gru => TapeLayout {
                width: 5 * h,
                h: 0,
                c: None,
                gates: Some(h),
                m: None,
                rh: Some(4 * h),
            },
        }
    }

    /// The gradient tape's layout ([`GradLayout`]): slot `t + 1` `[dz (G),
    /// dproj (P, LSTM with num_proj)]`, slot 0 `[dh0 (P), dc0 (H, LSTM)]`
    /// (the rest of slot 0 up to `private` is 0), then the private scratch
    /// (every slot): `P` wide (basic, LSTM) plus `H` (LSTM with num_proj),
    /// or `H` (GRU).
    pub fn grad_tape(&self) -> GradLayout {
        let h = self.units as usize;
        let p = self.output_size();
        let g = self.gate_width();
        let lstm = self.kind == CellKind::Lstm;
        let dproj = self.num_proj.filter(|_| lstm).map(|_| g);
        // Slot t + 1's fields end at G (+ P); slot 0's at P (+ H) <= that.
        let private = g + dproj.map_or(0, |_| p);
        let scratch = match self.kind {
            CellKind::Basic => p,
            CellKind::Lstm => p + dproj.map_or(0, |_| h),
            CellKind::Gru => h,
        };
        GradLayout {
            width: private + scratch,
            dz: 0,
            dproj,
            dh0: 0,
            dc0: lstm.then_some(p),
            private,
        }
    }
}

/// The operands of a forward pass; every buffer is row-major and
/// contiguous, `B` rows of which a call computes a range.
#[repr(C)]
pub struct Forward<R> {
    /// `T`, the time steps.
    pub steps: usize,
    /// `[B, T, G]`: the input projection with the bias (without LSTM's
    /// `forget_bias`, which the loop adds).
    pub xproj: *const R,
    /// `[P, G]`: the recurrent kernel.
    pub wh: *const R,
    /// `[3, H]`: `w_i_diag, w_f_diag, w_o_diag` (LSTM with peepholes), else null.
    pub peepholes: *const R,
    /// `[H, P]`: the projection kernel (LSTM with `num_proj`), else null.
    pub proj: *const R,
    /// `[B]`: each row's length (an integer value; clamped to `0..=T`), or
    /// null: every row runs all `T` steps.
    pub lengths: *const R,
    /// `[B, P]` initial `h`, or null: zeros.
    pub h0: *const R,
    /// `[B, H]` initial `c` (LSTM), or null: zeros.
    pub c0: *const R,
    /// `[B, T + 1, W]` ([`Cell::tape`]): written. Slot 0 holds the initial
    /// state (other fields 0), slot `t + 1` step `t`'s; at an inactive
    /// step the state fields are slot `t`'s and the other fields are 0.
    pub tape: *mut R,
}

/// The operands of a backward pass: the forward's, its tape, the gradient
/// of the loss with respect to every slot's state fields, and the
/// gradient tape it writes.
#[repr(C)]
pub struct Backward<R> {
    pub forward: Forward<R>,
    /// `[B, T + 1, S]` ([`Cell::state_width`]): `dL/d(state fields)` of
    /// every slot of the tape (`h` at 0, LSTM `c` at `P`).
    pub dstate: *const R,
    /// `[B, T + 1, WG]` ([`Cell::grad_tape`]): written.
    pub grad: *mut R,
}

/// [`forward`] over f32 for JIT code: rows `row_begin..row_end` of the
/// cell `cell` stands for (nothing for a code no cell has).
///
/// # Safety
/// `cell` and `a` point to valid values; `0 <= row_begin <= row_end`;
/// otherwise as for [`forward`].
#[no_mangle]
pub unsafe extern "C" fn specc_rnn_forward(
    cell: *const CellCode,
    a: *const Forward<f32>,
    row_begin: i64,
    row_end: i64,
) {
    // SAFETY: the caller's contract.
    let Some(cell) = Cell::from_code(unsafe { &*cell }) else {
        return;
    };
    // SAFETY: the caller's contract.
    unsafe { forward(&cell, &*a, rows(row_begin, row_end)) }
}

/// [`backward`] over f32 for JIT code: rows `row_begin..row_end` of the
/// cell `cell` stands for (nothing for a code no cell has).
///
/// # Safety
/// `cell` and `a` point to valid values; `0 <= row_begin <= row_end`;
/// otherwise as for [`backward`].
#[no_mangle]
pub unsafe extern "C" fn specc_rnn_backward(
    cell: *const CellCode,
    a: *const Backward<f32>,
    row_begin: i64,
    row_end: i64,
) {
    // SAFETY: the caller's contract.
    let Some(cell) = Cell::from_code(unsafe { &*cell }) else {
        return;
    };
    // SAFETY: the caller's contract.
    unsafe { backward(&cell, &*a, rows(row_begin, row_end)) }
}

/// The rows of a C call (negative bounds: none).
fn rows(begin: i64, end: i64) -> Range<usize> {
    let at = |v: i64| usize::try_from(v).unwrap_or(0);
    at(begin)..at(end)
}
