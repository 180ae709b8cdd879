//! The Winograd F(2×2, 3×3) rewrite of 3×3 convolutions (Lavin & Gray 2015).
//!
//! Owns: replacing, in a differentiated and simplified graph, the three
//! products of a convolution `patches(x) @ K` (3×3 kernel, stride 1,
//! dilation 1, zero padding: SAME, VALID or explicit; any output size, odd
//! ones cropped) by the same value computed with 2.25× fewer multiplies:
//! - forward `patches(x) @ K` → `winograd_output(batch_matmul(V, U))`,
//! - input gradient `patches_grad(dY @ Kᵀ)` →
//!   `winograd_input_grad(batch_matmul(winograd_output_grad(dY), U, tb))`,
//! - filter gradient `patches(x)ᵀ @ dY` → `Gᵀ dU G` as the matmul
//!   `(G⊗G)ᵀ @ batch_matmul(V, winograd_output_grad(dY), ta)`,
//!
//! with `V = winograd_input(x)` `[16, N, TH, TW, C]` and the filter transform
//! `U = (G⊗G) @ K` (`K` as `[9, C·O]`, `G⊗G` a `[16, 9]` constant) as an
//! ordinary matmul. Hash-consing shares `V`, `U` and `winograd_output_grad(dY)`
//! between the products. The backward rewrites are the forward's adjoint
//! (the ops' VJPs in `autodiff::rules`), so the gradients stay exact
//! derivatives of what is computed, up to rounding.
//!
//! Policy ([`Winograd::Auto`]): convolutions with at least
//! [`MIN_CHANNELS`] input and output channels (below that the 16 small
//! GEMMs and the transforms cost more than the 9·C·O products they save;
//! W7's first convolution, C = 1, stays direct).
//!
//! Invariant: the rebuilt graph computes every root's value (up to the
//! rounding of a different summation); dead direct products are dropped by
//! the next `passes::optimize`.

use crate::ir::{DType, Graph, NodeId, Op, Shape, Window, WINOGRAD_G};
use crate::model::Model;

/// Which convolutions are computed by Winograd F(2×2, 3×3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Winograd {
    /// Those the cost model favours (see the module doc).
    Auto,
    /// Every one that fits (3×3, stride 1, dilation 1), whatever its channels.
    Always,
    /// None: every convolution direct (`SPECC_WINOGRAD=never`).
    Never,
}

impl Default for Winograd {
    /// `Auto`: with the transforms and products fused by blocks of images
    /// (`plan::winofuse`) W7 runs faster than with direct convolution.
    fn default() -> Winograd {
        Winograd::Auto
    }
}

impl Winograd {
    /// The mode `SPECC_WINOGRAD` names (`never` or `off`, `always`;
    /// otherwise, and unset, `Auto`).
    pub fn from_env() -> Winograd {
        match std::env::var("SPECC_WINOGRAD").as_deref() {
            Ok("never" | "off") => Winograd::Never,
            Ok("always") => Winograd::Always,
            _ => Winograd::Auto,
        }
    }
}

/// Fewest input and output channels `Winograd::Auto` rewrites.
pub const MIN_CHANNELS: u32 = 16;

/// Rewrites the model's graph in place (`mode` chooses the convolutions).
pub fn rewrite(model: &mut Model, mode: Winograd) {
    if mode == Winograd::Never {
        return;
    }
    let old = &model.graph;
    let fits = |w: &Window, o: u32| -> bool {
        w.winograd_fits()
            && match mode {
                Winograd::Always => true,
                Winograd::Auto => w.channels >= MIN_CHANNELS && o >= MIN_CHANNELS,
                Winograd::Never => false,
            }
    };
    // The window of a zero-padded patches node Winograd takes, by node.
    let window_of = |p: NodeId, o: u32| -> Option<Window> {
        match *old.op(p) {
            Op::Patches { window, pad: 0 } if fits(&window, o) => Some(window),
            _ => None,
        }
    };
    let last = |s: &Shape| s.0[s.rank() - 1].fixed();
    let mut g = Graph::new();
    g.inputs = old.inputs.clone();
    g.vars = old.vars.clone();
    g.consts = old.consts.clone();
    let mut map: Vec<Option<NodeId>> = Vec::with_capacity(old.len());
    let mut rewritten = false;
    for (id, node) in old.nodes() {
        let at = |n: NodeId| map[n.index()].expect("inputs precede their users");
        g.current_span = old.span(id);
        let new = match (&node.op, node.inputs.as_slice()) {
            // Forward: patches(x) @ K.
            (
                Op::MatMul {
                    ta: false,
                    tb: false,
                },
                &[p, k],
            ) => last(old.shape(k))
                .and_then(|o| Some((o, window_of(p, o)?)))
                .map(|(o, w)| {
                    let x = at(old.inputs_of(p)[0]);
                    let v = g.winograd_input(x, w);
                    let u = filter(&mut g, at(k), w.channels, o);
                    let m = g.batch_matmul(v, u, false, false);
                    g.winograd_output(m, w)
                }),
            // Filter gradient: patches(x)ᵀ @ dY.
            (
                Op::MatMul {
                    ta: true,
                    tb: false,
                },
                &[p, dy],
            ) if old.shape(dy).rank() == 4 => last(old.shape(dy))
                .and_then(|o| Some((o, window_of(p, o)?)))
                .map(|(o, w)| {
                    let x = at(old.inputs_of(p)[0]);
                    let v = g.winograd_input(x, w);
                    let dm = g.winograd_output_grad(at(dy), w);
                    let du = g.batch_matmul(v, dm, true, false);
                    let du = g.reshape(du, &Shape::fixed(&[16, w.channels * o]));
                    let gg = transform_matrix(&mut g);
                    let dk = g.matmul(gg, du, true, false);
                    g.reshape(dk, &node.shape)
                }),
            // Input gradient: patches_grad(dY @ Kᵀ).
            (Op::PatchesGrad(w), &[prod]) => match (old.op(prod), old.inputs_of(prod)) {
                (
                    Op::MatMul {
                        ta: false,
                        tb: true,
                    },
                    &[dy, k],
                ) if old.shape(dy).rank() == 4 => {
                    last(old.shape(k)).filter(|&o| fits(w, o)).map(|o| {
                        let dm = g.winograd_output_grad(at(dy), *w);
                        let u = filter(&mut g, at(k), w.channels, o);
                        let dv = g.batch_matmul(dm, u, false, true);
                        g.winograd_input_grad(dv, *w)
                    })
                }
                _ => None,
            },
            _ => None,
        };
        rewritten |= new.is_some();
        let new = new.unwrap_or_else(|| {
            let inputs: Vec<NodeId> = node.inputs.iter().map(|&i| at(i)).collect();
            match &node.op {
                Op::Input(i) => g.input(*i),
                Op::Var(i) => g.var(*i),
                op => g.intern(op.clone(), inputs, node.dtype, node.shape.clone()),
            }
        });
        map.push(Some(new));
    }
    g.current_span = None;
    if rewritten {
        super::remap(model, &map);
        model.graph = g;
    }
}

/// `G⊗G` as a `[16, 9]` constant: row `4i + j`, column `3u + v` is
/// `G[i][u]·G[j][v]`, so `U = (G⊗G) @ K[9, ·]` is `G g Gᵀ` per channel pair.
fn transform_matrix(g: &mut Graph) -> NodeId {
    let mut values = Vec::with_capacity(16 * 9);
    for gi in &WINOGRAD_G {
        for gj in &WINOGRAD_G {
            for &a in gi {
                for &b in gj {
                    values.push(a * b);
                }
            }
        }
    }
    g.tensor(DType::F32, Shape::fixed(&[16, 9]), values)
}

/// The filter transform of `k` (`[9·C, O]`): `U` `[16, C, O]`.
fn filter(g: &mut Graph, k: NodeId, c: u32, o: u32) -> NodeId {
    let k9 = g.reshape(k, &Shape::fixed(&[9, c * o]));
    let gg = transform_matrix(g);
    let u = g.matmul(gg, k9, false, false);
    g.reshape(u, &Shape::fixed(&[16, c, o]))
}
