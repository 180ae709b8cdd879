//! GEMM epilogues: a bias row and/or relu folded into the GEMM that
//! produces their input.
//!
//! Owns: `fuse`, which finds, in the ordered kernel list, a plain GEMM
//! (not batched) immediately followed by a loop over the GEMM's output
//! shape that only computes `add(c, bias)`, `relu(add(c, bias))` or
//! `relu(c)` (the bias a row vector broadcast along C's rows) and stores
//! that one value, and replaces the pair by the GEMM with an epilogue
//! writing straight into the loop's output (`specc_sgemm_ep`: the runtime
//! applies it to each tile of C after its last k block). A dense layer's
//! `relu(x @ W + b)` thus costs no separate pass over its output.
//!
//! Invariants: a pair is fused only when C is a scratch buffer that no
//! other kernel touches (nor a scalar load), the loop has no reductions,
//! no other sources and exactly one store, and its output buffer is none of
//! the GEMM's operands nor the bias. The epilogue computes the loop's float
//! operations in the loop's order (`c + bias`, then `x > 0 ? x : 0`), so
//! results are bit-identical with the fusion on or off
//! (`SPECC_GEMM_EPILOGUE=never`, [`enabled_from_env`]). Runs before scratch
//! assignment, so the fused-away C takes no scratch.

use std::collections::HashSet;

use super::kernel::GemmEpilogue;
use super::view::BufId;
use super::{Buffer, Kernel, Loc, Source};
use crate::ir::{BinaryOp, DType, Graph, NodeId, Op, UnaryOp};

/// Whether fusion is on: `SPECC_GEMM_EPILOGUE` unset, empty or `auto`;
/// `never` (or `off`) turns it off. Any other value is an error
/// (read by [`specc_runtime::settings::gemm_epilogue`]).
pub fn enabled_from_env() -> Result<bool, String> {
    specc_runtime::settings::gemm_epilogue()
}

/// Fuses every GEMM + bias/relu loop pair it can (see the module docs).
pub(super) fn fuse(
    g: &Graph,
    buffers: &[Buffer],
    kernels: &mut Vec<Kernel>,
    pinned: &HashSet<BufId>,
) {
    let mut i = 0;
    while i + 1 < kernels.len() {
        if let Some(ep) = candidate(g, buffers, kernels, i, pinned) {
            let (out, ep) = ep;
            kernels.remove(i + 1);
            if let Kernel::Gemm { c, epilogue, .. } = &mut kernels[i] {
                *c = out;
                *epilogue = Some(ep);
            }
        }
        i += 1;
    }
}

/// The loop's output view and the epilogue, when kernels `i` and `i + 1`
/// can be fused.
fn candidate(
    g: &Graph,
    buffers: &[Buffer],
    kernels: &[Kernel],
    i: usize,
    pinned: &HashSet<BufId>,
) -> Option<(super::View, GemmEpilogue)> {
    let Kernel::Gemm {
        node,
        a,
        b,
        c,
        groups: None,
        epilogue: None,
        ..
    } = &kernels[i]
    else {
        return None;
    };
    let Kernel::Loop(l) = &kernels[i + 1] else {
        return None;
    };
    let shape = g.shape(*node);
    if shape.rank() < 2
        || l.domain != *shape
        || !l.reductions.is_empty()
        || !l.reduce_axes.is_empty()
        || l.stores.len() != 1
        || c.strides.len() != 2
    {
        return None;
    }
    // The loop's views over C's shape as the GEMM's matrices: its row-major
    // views (C as read, the output) and the bias row as `[rows, n]` views.
    let rank = shape.rank();
    let as_matrix = |v: &super::View| -> Option<super::View> {
        if rank == 2 {
            return Some(v.clone());
        }
        let zero_lead = v.strides[..rank - 1].iter().all(|s| s.is_zero());
        let strides = if v.is_row_major(shape) {
            vec![v.strides[rank - 2], v.strides[rank - 1]]
        } else if zero_lead {
            vec![v.strides[0], v.strides[rank - 1]]
        } else {
            return None;
        };
        Some(super::View {
            buf: v.buf,
            offset: v.offset,
            strides,
        })
    };
    if !matches!(buffers[c.buf.0 as usize].loc, Loc::Scratch { .. }) || pinned.contains(&c.buf) {
        return None;
    }
    // The loop reads C element for element, and at most a bias row.
    let mut reads_c = false;
    let mut bias = None;
    for (n, s) in &l.sources {
        let Source::Load(v, DType::F32) = s else {
            return None;
        };
        let v = as_matrix(v)?;
        if n == node && v == *c {
            reads_c = true;
        } else if bias.is_none() && v.strides[0].is_zero() {
            bias = Some((*n, v));
        } else {
            return None;
        }
    }
    if !reads_c {
        return None;
    }
    // The body: add(c, bias), then optionally relu; or relu(c) alone.
    let is_add = |x: NodeId, bn: NodeId| {
        matches!(g.op(x), Op::Binary(BinaryOp::Add)) && g.node(x).inputs == [*node, bn]
    };
    let is_relu = |x: NodeId, of: NodeId| {
        matches!(g.op(x), Op::Unary(UnaryOp::Relu)) && g.node(x).inputs == [of]
    };
    let (last, relu) = match (&l.body[..], &bias) {
        ([add], Some((bn, _))) if is_add(*add, *bn) => (*add, false),
        ([add, r], Some((bn, _))) if is_add(*add, *bn) && is_relu(*r, *add) => (*r, true),
        ([r], None) if is_relu(*r, *node) => (*r, true),
        _ => return None,
    };
    let (stored, out) = &l.stores[0];
    if *stored != last || out.strides.len() != rank {
        return None;
    }
    let out = &as_matrix(out)?;
    let bias_buf = bias.as_ref().map(|(_, v)| v.buf);
    if [a.buf, b.buf, c.buf].contains(&out.buf) || bias_buf == Some(out.buf) {
        return None;
    }
    // Nothing else touches C.
    let others = kernels
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i && *j != i + 1);
    for (_, k) in others {
        if super::memory::touched(k).contains(&c.buf) {
            return None;
        }
    }
    Some((
        out.clone(),
        GemmEpilogue {
            node: last,
            bias: bias.map(|(_, v)| v),
            relu,
        },
    ))
}
