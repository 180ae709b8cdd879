//! The VJP of `Op::Recurrence`: the backward time loop, then every
//! weight's gradient as one product over all rows and steps.
//!
//! The runtime's backward loop (`Op::RecurrenceGrad`) does only what is
//! sequential: it carries `dh` (and `dc`) back through time and leaves
//! `dz`, the gradient of every step's gate pre-activations, in the
//! gradient tape. Everything else is a large product over `B·T` rows here:
//! `dW_h = Σ h_{t-1}ᵀ dz_t` (GRU: the candidate's columns through
//! `r·h_{t-1}`), the peepholes `Σ dz·c`, the projection `Σ mᵀ dproj`,
//! and `dxproj = dz`, whose own products (`xᵀ dxproj`, `dxproj W_xᵀ`) are
//! the input projection's ordinary VJP.

use specc_runtime::rnn::{Cell, CellKind};

use crate::ir::recurrence::{batch_and_steps, RnnInputs};
use crate::ir::{Dim, Graph, Node, NodeId, Op, Shape};

/// The cotangents of a recurrence's inputs (in input order), given its tape
/// `y` and the tape's cotangent `ct`.
pub fn vjp(g: &mut Graph, node: &Node, y: NodeId, ct: NodeId) -> Vec<Option<NodeId>> {
    let Op::Recurrence { cell, operands } = node.op else {
        unreachable!("recurrence VJP of another op");
    };
    let roles = RnnInputs::from_slice(&cell, operands, &node.inputs);
    let (_, t) = batch_and_steps(g.shape(roles.xproj)).expect("verified xproj");
    let (h, p, gw) = (cell.units as usize, cell.output_size(), cell.gate_width());
    let tl = cell.tape();
    let gl = cell.grad_tape();

    let dstate = g.tape_field(ct, 0, t + 1, 0, cell.state_width());
    let gt = g.recurrence_grad(cell, roles, y, dstate);
    let dz = g.tape_field(gt, 1, t, gl.dz, gw);

    let mut out = vec![Some(dz)];
    out.push(Some(recurrent_kernel_grad(g, &cell, y, dz, t)));
    if roles.peepholes.is_some() {
        out.push(Some(peephole_grad(g, &cell, y, dz, t)));
    }
    if roles.proj.is_some() {
        let m = g.tape_field(y, 1, t, tl.m.expect("projection's m"), h);
        let dproj = g.tape_field(gt, 1, t, gl.dproj.expect("projection's gradient"), p);
        out.push(Some(g.matmul(m, dproj, true, false)));
    }
    if roles.lengths.is_some() {
        out.push(None);
    }
    if roles.h0.is_some() {
        out.push(Some(slot0(g, gt, gl.dh0, p)));
    }
    if roles.c0.is_some() {
        let at = gl.dc0.expect("an LSTM's dc0");
        out.push(Some(slot0(g, gt, at, h)));
    }
    out
}

/// Field `at .. at + width` of slot 0 as `[B, width]`.
fn slot0(g: &mut Graph, gt: NodeId, at: usize, width: usize) -> NodeId {
    let v = g.tape_field(gt, 0, 1, at, width);
    let b = g.shape(gt).0[0];
    g.reshape(v, &Shape(vec![b, Dim::Fixed(width as u32)]))
}

/// `dW_h [P, G]`: `Σ_{b,t} h_{t-1}ᵀ dz_t`; the GRU's candidate columns
/// multiply `r·h_{t-1}` instead.
fn recurrent_kernel_grad(g: &mut Graph, cell: &Cell, y: NodeId, dz: NodeId, t: u32) -> NodeId {
    let (h, p) = (cell.units as usize, cell.output_size());
    let tl = cell.tape();
    let h_prev = g.tape_field(y, 0, t, tl.h, p);
    if cell.kind != CellKind::Gru {
        return g.matmul(h_prev, dz, true, false);
    }
    let dz_ru = g.tape_field(dz, 0, t, 0, 2 * h);
    let dz_cand = g.tape_field(dz, 0, t, 2 * h, h);
    let rh = g.tape_field(y, 1, t, tl.rh.expect("a GRU's r·h"), h);
    let d_ru = g.matmul(h_prev, dz_ru, true, false);
    let d_cand = g.matmul(rh, dz_cand, true, false);
    g.concat(&[d_ru, d_cand], 1)
}

/// `[3, H]`: `Σ dz_i·c_{t-1}`, `Σ dz_f·c_{t-1}`, `Σ dz_o·c_t`.
fn peephole_grad(g: &mut Graph, cell: &Cell, y: NodeId, dz: NodeId, t: u32) -> NodeId {
    let h = cell.units as usize;
    let c_at = cell.tape().c.expect("an LSTM's c");
    let c_prev = g.tape_field(y, 0, t, c_at, h);
    let c_cur = g.tape_field(y, 1, t, c_at, h);
    let gate = |g: &mut Graph, k: usize| g.tape_field(dz, 0, t, k * h, h);
    // The gates' order is i, j, f, o.
    let (dzi, dzf, dzo) = (gate(g, 0), gate(g, 2), gate(g, 3));
    let row = |g: &mut Graph, d: NodeId, c: NodeId| {
        let prod = g.mul(d, c);
        let s = g.reduce_sum(prod, &[0, 1]);
        g.reshape(s, &Shape(vec![Dim::Fixed(1), Dim::Fixed(h as u32)]))
    };
    let wi = row(g, dzi, c_prev);
    let wf = row(g, dzf, c_prev);
    let wo = row(g, dzo, c_cur);
    g.concat(&[wi, wf, wo], 0)
}
