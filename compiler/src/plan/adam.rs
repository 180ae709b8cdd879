//! Recognising a dense Adam update loop (`optim::table::adam`'s dense
//! rule), which the JIT runs through the runtime's `specc_adam` (AVX-512 or
//! AVX2 lanes; Cranelift's x64 vectors are 128 bits and the update is bound
//! by the divider). See `codegen::adam` for the call.
//!
//! Owns: [`recognise`], a pure check of one loop kernel against the exact
//! operations of the rule, in the table's operand order:
//!
//! ```text
//! g    = grad | grad * scale                 (global-norm clipping)
//! m'   = m + (g - m) * omb1                  omb1 = 1 - beta1
//! v'   = v + (square(g) - v) * omb2          omb2 = 1 - beta2
//! var' = var - (m' * alpha) / (sqrt(v') + eps)
//! s'   = s - (s - var') * decay              (optional: the variable's
//!                                             moving average, fused in)
//! ```
//!
//! where `grad`, `m`, `v`, `var` (and `s`) are f32 loads of the loop, `scale`,
//! `omb1`, `omb2`, `alpha`, `eps` (and `decay`) are scalar sources (SSA scalars or
//! constants), the body is exactly these operations and the stores are
//! exactly `m'`, `v'`, `var'` (and `s'`). Every view must be row-major over a
//! domain without the batch dimension, so the loop is one flat run of
//! `count` elements (the parameters of adjacent variables merged by
//! `plan::merge`, or one variable). Anything else (another rule, a
//! sparse update, more fused work) stays a CLIF loop. Invariant: a
//! recognised loop computes per element exactly what `specc_adam` computes,
//! so the swap changes no bit.

use std::collections::HashSet;

use super::kernel::{LoopKernel, Source};
use super::view::View;
use crate::ir::{BinaryOp, DType, Graph, NodeId, Op, UnaryOp};

/// A recognised update: views of element 0 and the loop's nodes of its
/// scalar sources (looked up in the kernel's `sources`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdamUpdate {
    /// Elements of the flat loop.
    pub count: u64,
    pub grad: View,
    pub m: View,
    pub v: View,
    pub var: View,
    pub m_out: View,
    pub v_out: View,
    pub var_out: View,
    /// The gradient's scale (clipping), when the loop multiplies by one.
    pub scale: Option<NodeId>,
    pub omb1: NodeId,
    pub omb2: NodeId,
    pub alpha: NodeId,
    pub eps: NodeId,
    /// The moving average fused into the loop: the shadow's old and new
    /// views and the decay's source node.
    pub average: Option<(View, View, NodeId)>,
}

/// The update `k` computes, when it is exactly the dense Adam rule.
pub fn recognise(g: &Graph, k: &LoopKernel) -> Option<AdamUpdate> {
    if !k.reduce_axes.is_empty() || !k.reductions.is_empty() || !(3..=4).contains(&k.stores.len()) {
        return None;
    }
    if k.domain.has_batch() || k.body.len() > 16 {
        return None;
    }
    let count = k.domain.fixed_numel();
    let body: HashSet<NodeId> = k.body.iter().copied().collect();
    if body.len() != k.body.len() {
        return None;
    }
    let source = |n: NodeId| k.sources.iter().find(|(s, _)| *s == n).map(|(_, s)| s);
    let load = |n: NodeId| match source(n) {
        Some(Source::Load(v, DType::F32)) if v.is_row_major(&k.domain) => Some(v.clone()),
        _ => None,
    };
    let scalar = |n: NodeId| match source(n) {
        Some(Source::Scalar(_) | Source::Const(_)) => Some(n),
        _ => None,
    };
    let bin = |n: NodeId, op: BinaryOp| -> Option<(NodeId, NodeId)> {
        match (body.contains(&n), g.op(n)) {
            (true, Op::Binary(o)) if *o == op => {
                let i = g.inputs_of(n);
                Some((i[0], i[1]))
            }
            _ => None,
        }
    };
    let un = |n: NodeId, op: UnaryOp| -> Option<NodeId> {
        match (body.contains(&n), g.op(n)) {
            (true, Op::Unary(o)) if *o == op => Some(g.inputs_of(n)[0]),
            _ => None,
        }
    };
    let store = |n: NodeId| -> Option<View> {
        let mut it = k.stores.iter().filter(|(s, _)| *s == n);
        let (_, v) = it.next()?;
        (it.next().is_none() && v.is_row_major(&k.domain)).then(|| v.clone())
    };
    // var' = var - step, step = (m' * alpha) / (sqrt(v') + eps): find var'
    // among the stores.
    k.stores.iter().find_map(|&(p_new, _)| {
        let (var_n, step) = bin(p_new, BinaryOp::Sub)?;
        let var = load(var_n)?;
        let (ma, den) = bin(step, BinaryOp::Div)?;
        let (m_new, alpha_n) = bin(ma, BinaryOp::Mul)?;
        let alpha = scalar(alpha_n)?;
        let (sv, eps_n) = bin(den, BinaryOp::Add)?;
        let eps = scalar(eps_n)?;
        let v_new = un(sv, UnaryOp::Sqrt)?;
        // m' = m + (g - m) * omb1
        let (m_n, dm) = bin(m_new, BinaryOp::Add)?;
        let m = load(m_n)?;
        let (gm, omb1_n) = bin(dm, BinaryOp::Mul)?;
        let omb1 = scalar(omb1_n)?;
        let (g_n, m_again) = bin(gm, BinaryOp::Sub)?;
        // v' = v + (square(g) - v) * omb2
        let (v_n, dv) = bin(v_new, BinaryOp::Add)?;
        let v = load(v_n)?;
        let (gv, omb2_n) = bin(dv, BinaryOp::Mul)?;
        let omb2 = scalar(omb2_n)?;
        let (gg, v_again) = bin(gv, BinaryOp::Sub)?;
        let g_again = un(gg, UnaryOp::Square)?;
        if m_again != m_n || v_again != v_n || g_again != g_n {
            return None;
        }
        // g = grad, or grad * scale
        let (grad, scale, g_body) = match load(g_n) {
            Some(view) => (view, None, vec![]),
            None => {
                let (grad_n, scale_n) = bin(g_n, BinaryOp::Mul)?;
                (load(grad_n)?, Some(scalar(scale_n)?), vec![g_n])
            }
        };
        // s' = s - (s - var') * decay, the fourth store
        let (average, avg_body) = if k.stores.len() == 4 {
            let (s_new, _) = k
                .stores
                .iter()
                .find(|(n, _)| ![m_new, v_new, p_new].contains(n))?;
            let (s_n, d) = bin(*s_new, BinaryOp::Sub)?;
            let shadow = load(s_n)?;
            let (sp, decay_n) = bin(d, BinaryOp::Mul)?;
            let decay = scalar(decay_n)?;
            let (s_again, p_again) = bin(sp, BinaryOp::Sub)?;
            if s_again != s_n || p_again != p_new {
                return None;
            }
            (Some((shadow, store(*s_new)?, decay)), vec![sp, d, *s_new])
        } else {
            (None, vec![])
        };
        let ops = [gm, dm, m_new, gg, gv, dv, v_new, ma, sv, den, step, p_new];
        let extra = g_body.len() + avg_body.len();
        let mut all: HashSet<NodeId> = ops.into_iter().collect();
        all.extend(g_body);
        all.extend(avg_body);
        if all.len() != ops.len() + extra || all != body {
            return None;
        }
        Some(AdamUpdate {
            count,
            grad,
            m,
            v,
            var,
            m_out: store(m_new)?,
            v_out: store(v_new)?,
            var_out: store(p_new)?,
            scale,
            omb1,
            omb2,
            alpha,
            eps,
            average,
        })
    })
}
