//! The Winograd F(m×m, 3×3) rewrite of 3×3 convolutions (Lavin & Gray 2015).
//!
//! Owns: replacing, in a differentiated and simplified graph, the three
//! products of a convolution `patches(x) @ K` (3×3 kernel, stride 1,
//! dilation 1, zero padding: SAME, VALID or explicit; any output size, the
//! last tiles cropped) by the same value computed with fewer multiplies
//! (F(2×2): 2.25×, F(4×4): 4×, less the cropped cells):
//! - forward `patches(x) @ K` → `winograd_output(batch_matmul(V, U))`,
//! - input gradient `patches_grad(dY @ Kᵀ)` →
//!   `winograd_input_grad(batch_matmul(winograd_output_grad(dY), U, tb))`,
//! - filter gradient `patches(x)ᵀ @ dY` → `Gᵀ dU G` as the matmul
//!   `(G⊗G)ᵀ @ batch_matmul(V, winograd_output_grad(dY), ta)`,
//!
//! with `V = winograd_input(x)` `[G, N, TH, TW, C]` (`G` the tile's groups,
//! 16 or 36) and the filter transform `U = (G⊗G) @ K` (`K` as `[9, C·O]`,
//! `G⊗G` a `[G, 9]` constant) as an ordinary matmul. Hash-consing shares `V`, `U` and `winograd_output_grad(dY)`
//! between the products. The backward rewrites are the forward's adjoint
//! (the ops' VJPs in `autodiff::rules`), so the gradients stay exact
//! derivatives of what is computed, up to rounding.
//!
//! Policy ([`Winograd::Auto`]): convolutions with at least
//! [`MIN_CHANNELS`] input and output channels (below that the 16 small
//! GEMMs and the transforms cost more than the 9·C·O products they save;
//! W7's first convolution, C = 1, stays direct), each with the tile of
//! fewer products for its output size ([`WinogradTile::for_window`]: W7's
//! 8×8 outputs take F(4×4)); `SPECC_WINOGRAD_TILE=2` or `4` forces one.
//!
//! Invariant: the rebuilt graph computes every root's value (up to the
//! rounding of a different summation); dead direct products are dropped by
//! the next `passes::optimize`.

use crate::ir::{DType, Graph, NodeId, Op, Shape, Window, WinogradTile};
use crate::model::Model;
use specc_runtime::settings::WinogradMode;

/// Which convolutions are computed by Winograd (F(2×2) or F(4×4), 3×3).
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
        match specc_runtime::settings::winograd() {
            WinogradMode::Never => Winograd::Never,
            WinogradMode::Always => Winograd::Always,
            WinogradMode::Auto => Winograd::Auto,
        }
    }
}

/// Fewest input and output channels `Winograd::Auto` rewrites.
pub const MIN_CHANNELS: u32 = 16;

/// The tile `SPECC_WINOGRAD_TILE` forces (`2` or `4`; unset, empty or
/// `auto`: none, each convolution takes [`WinogradTile::for_window`]'s;
/// another value: as unset here, refused by the CLI first through
/// [`tile_setting`]).
pub fn tile_from_env() -> Option<WinogradTile> {
    tile_setting().unwrap_or(None)
}

/// `SPECC_WINOGRAD_TILE` read strictly: the forced tile, or an error naming
/// the accepted values.
pub fn tile_setting() -> Result<Option<WinogradTile>, String> {
    Ok(match specc_runtime::settings::winograd_tile()? {
        Some(2) => Some(WinogradTile::F2),
        Some(_) => Some(WinogradTile::F4),
        None => None,
    })
}

/// Rewrites the model's graph in place (`mode` chooses the convolutions,
/// `tile` forces their tile).
pub fn rewrite(model: &mut Model, mode: Winograd, tile: Option<WinogradTile>) {
    let tile_of = |w: &Window| tile.unwrap_or_else(|| WinogradTile::for_window(w));
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
                    let t = tile_of(&w);
                    let x = at(old.inputs_of(p)[0]);
                    let v = g.winograd_input(x, w, t);
                    let u = filter(&mut g, at(k), w.channels, o, t);
                    let m = g.batch_matmul(v, u, false, false);
                    g.winograd_output(m, w, t)
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
                    let t = tile_of(&w);
                    let x = at(old.inputs_of(p)[0]);
                    let v = g.winograd_input(x, w, t);
                    let dm = g.winograd_output_grad(at(dy), w, t);
                    let du = g.batch_matmul(v, dm, true, false);
                    let du = g.reshape(du, &Shape::fixed(&[t.groups(), w.channels * o]));
                    let gg = transform_matrix(&mut g, t);
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
                        let t = tile_of(w);
                        let dm = g.winograd_output_grad(at(dy), *w, t);
                        let u = filter(&mut g, at(k), w.channels, o, t);
                        let dv = g.batch_matmul(dm, u, false, true);
                        g.winograd_input_grad(dv, *w, t)
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

/// `G⊗G` as a `[A², 9]` constant (`A` the tile's input side): row
/// `A·i + j`, column `3u + v` is `G[i][u]·G[j][v]` (rounded to f32), so
/// `U = (G⊗G) @ K[9, ·]` is `G g Gᵀ` per channel pair.
fn transform_matrix(g: &mut Graph, tile: WinogradTile) -> NodeId {
    let groups = tile.groups();
    let mut values = Vec::with_capacity(groups as usize * 9);
    for gi in tile.g() {
        for gj in tile.g() {
            for &a in *gi {
                for &b in *gj {
                    values.push(a * b);
                }
            }
        }
    }
    g.tensor(DType::F32, Shape::fixed(&[groups, 9]), values)
}

/// The filter transform of `k` (`[9·C, O]`): `U` `[G, C, O]`.
fn filter(g: &mut Graph, k: NodeId, c: u32, o: u32, tile: WinogradTile) -> NodeId {
    let k9 = g.reshape(k, &Shape::fixed(&[9, c * o]));
    let gg = transform_matrix(g, tile);
    let u = g.matmul(gg, k9, false, false);
    g.reshape(u, &Shape::fixed(&[tile.groups(), c, o]))
}

#[cfg(test)]
mod tests {
    use crate::ir::{Window, WinogradTile};

    fn same_3x3(size: u32) -> Window {
        Window {
            input: [size, size],
            output: [size, size],
            kernel: [3, 3],
            strides: [1, 1],
            dilations: [1, 1],
            pad_before: [1, 1],
            channels: 8,
        }
    }

    /// The default tile is the one with fewer transformed values (tiles ×
    /// groups), F(2×2) on a tie.
    #[test]
    fn the_default_tile_has_fewer_products() {
        for (size, want) in [
            // 16 tiles × 16 against 4 × 36: W7's second convolution.
            (8, WinogradTile::F4),
            // 4 × 16 against 1 × 36.
            (4, WinogradTile::F4),
            // 4 × 16 against 1 × 36 (one cropped row and column).
            (3, WinogradTile::F4),
            // 9 × 16 against 4 × 36: a tie.
            (6, WinogradTile::F2),
            (5, WinogradTile::F2),
            // 1 × 16 against 1 × 36.
            (2, WinogradTile::F2),
            (12, WinogradTile::F4),
        ] {
            assert_eq!(
                WinogradTile::for_window(&same_3x3(size)),
                want,
                "{size}×{size}"
            );
        }
    }
}
