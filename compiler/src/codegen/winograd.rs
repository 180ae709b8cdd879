//! The Winograd transforms in Cranelift: F(2×2, 3×3) and F(4×4, 3×3)
//! between NHWC images and tile tensors, for the unfused Winograd window
//! kernels and for fused kernels when the module does not link the
//! runtime's `specc_winograd` (an object file).
//!
//! Owns: the loop nest image → tile row → tile column → `f32x4` chunk of
//! the channels (then a scalar tail), the tile's cells loaded (zero outside
//! the image), transformed and stored; the input adjoint zeroes its image
//! first and adds each tile's cells in tile order, so the result does not
//! depend on the thread count.
//!
//! Invariant: the arithmetic is the runtime's ([`specc_runtime::winograd`]'s
//! maps and `sandwich`, instantiated here through [`Arith`] on Cranelift
//! values), so the JIT's runtime transforms and these give the same bits.

use cranelift_codegen::ir::{types, InstBuilder, Value};
use specc_runtime::winograd::{a2, a4, at4, at6, b4, b6, bt4, bt6, sandwich, Arith};

use super::emit::Emitter;
use super::loops::counted_loop;
use super::rows::{for_row, if_else, ld, row_ptr, st};
use super::window::{fill, inside};
use crate::ir::{Window, WinogradTile};
use crate::plan::WindowOp;

/// A Winograd transform's operands: image `n` of the images is at
/// `image_base + n·image_len`, its tiles of group `g` at
/// `tile_base + g·group + n·tiles_len` (bytes; `tile_base` may point
/// before a block buffer that holds only some images).
pub struct WinogradTiles {
    pub op: WindowOp,
    pub window: Window,
    pub tile: WinogradTile,
    /// Channels of a cell (`C` for the input transforms, `O` for the output ones).
    pub channels: u32,
    pub image_base: Value,
    pub tile_base: Value,
    pub group: Value,
}

/// [`Arith`] on Cranelift values of type `ty` (`f32` or `f32x4`).
struct Clif<'e, 'a, 'f> {
    e: &'e mut Emitter<'a, 'f>,
    ty: types::Type,
}

impl Arith for Clif<'_, '_, '_> {
    type V = Value;
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.e.b.ins().fadd(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.e.b.ins().fsub(a, b)
    }
    fn neg(&mut self, a: Value) -> Value {
        self.e.b.ins().fneg(a)
    }
    fn scale(&mut self, a: Value, c: f32) -> Value {
        let k = fill(self.e, self.ty, c);
        self.e.b.ins().fmul(a, k)
    }
}

/// The transform `t.op` of images `lo..hi`.
pub fn winograd_images(e: &mut Emitter, t: &WinogradTiles, lo: Value, hi: Value) {
    let w = t.window;
    let c = i64::from(t.channels);
    let [th, tw] = w.winograd_tiles(t.tile);
    let input_side = matches!(t.op, WindowOp::WinogradInput | WindowOp::WinogradInputGrad);
    let image_cells = if input_side { w.input } else { w.output };
    let image_len = i64::from(image_cells[0] * image_cells[1]) * c;
    let tiles_len = i64::from(th * tw) * c;
    let groups_n = i64::from(t.tile.groups());
    counted_loop(e, lo, hi, 1, &mut |e, n| {
        let image = row_ptr(e, t.image_base, n, image_len);
        let tiles = row_ptr(e, t.tile_base, n, tiles_len);
        if t.op == WindowOp::WinogradInputGrad {
            for_row(e, image_len, &mut |e, ty, d, off| {
                let z = fill(e, ty, 0.0);
                st(e, z, image, d, off);
            });
        }
        let start = e.b.ins().iconst(types::I64, 0);
        let rows = e.b.ins().iconst(types::I64, i64::from(th));
        counted_loop(e, start, rows, 1, &mut |e, ty_| {
            let cols = e.b.ins().iconst(types::I64, i64::from(tw));
            counted_loop(e, start, cols, 1, &mut |e, tx_| {
                let cell = e.b.ins().imul_imm_s(ty_, i64::from(tw));
                let cell = e.b.ins().iadd(cell, tx_);
                let tile = row_ptr(e, tiles, cell, c);
                let groups: Vec<Value> = (0..groups_n)
                    .map(|g| {
                        if g == 0 {
                            tile
                        } else {
                            let off = e.b.ins().imul_imm_s(t.group, g);
                            e.b.ins().iadd(tile, off)
                        }
                    })
                    .collect();
                let cells = taps(e, w, t.tile, input_side, image, ty_, tx_, c);
                tile_transform(e, t.op, t.tile, c, &cells, &groups);
            });
        });
    });
}

/// A cell of an image a tile touches: its address (clamped into the image)
/// and whether it is inside.
#[derive(Clone, Copy)]
struct Tap {
    ptr: Value,
    ok: Value,
}

/// The cells of tile `(ty, tx)`, row-major: on the input side
/// (`input_side`) its `(m+2)×(m+2)` input cells from `(m·ty − pt,
/// m·tx − pl)`, else its `m×m` output cells from `(m·ty, m·tx)`.
#[allow(clippy::too_many_arguments)]
fn taps(
    e: &mut Emitter,
    w: Window,
    tile: WinogradTile,
    input_side: bool,
    image: Value,
    ty: Value,
    tx: Value,
    c: i64,
) -> Vec<Tap> {
    let m = i64::from(tile.m());
    let (span, size) = if input_side {
        (i64::from(tile.alpha()), w.input)
    } else {
        (m, w.output)
    };
    let coords = |e: &mut Emitter, t: Value, axis: usize| -> Vec<(Value, Value)> {
        let at = e.b.ins().imul_imm_s(t, m);
        let at = if input_side {
            e.b.ins().iadd_imm_s(at, -i64::from(w.pad_before[axis]))
        } else {
            at
        };
        (0..span)
            .map(|r| {
                let i = e.b.ins().iadd_imm_s(at, r);
                let ok = inside(e, i, size[axis]);
                let zero = e.b.ins().iconst(types::I64, 0);
                (e.b.ins().select(ok, i, zero), ok)
            })
            .collect()
    };
    let ys = coords(e, ty, 0);
    let xs = coords(e, tx, 1);
    let mut taps = Vec::with_capacity((span * span) as usize);
    for &(iy, oky) in &ys {
        for &(ix, okx) in &xs {
            let at = e.b.ins().imul_imm_s(iy, i64::from(size[1]));
            let at = e.b.ins().iadd(at, ix);
            let ptr = row_ptr(e, image, at, c);
            let ok = e.b.ins().band(oky, okx);
            taps.push(Tap { ptr, ok });
        }
    }
    taps
}

/// Which map of a tile: `Bᵀ`, `B`, `Aᵀ` or `A`, down the columns and along
/// the rows of the `x` block (the runtime's `sandwich`).
#[derive(Clone, Copy)]
enum Map {
    Bt,
    B,
    At,
    A,
}

/// `map` of `tile` applied to the row-major block `x`, row-major.
fn apply(
    e: &mut Emitter,
    ty: types::Type,
    tile: WinogradTile,
    map: Map,
    x: &[Value],
) -> Vec<Value> {
    let mut a = Clif { e, ty };
    match (tile, map) {
        (WinogradTile::F2, Map::Bt) => block(&mut a, x, bt4),
        (WinogradTile::F2, Map::B) => block(&mut a, x, b4),
        (WinogradTile::F2, Map::At) => block(&mut a, x, at4),
        (WinogradTile::F2, Map::A) => block(&mut a, x, a2),
        (WinogradTile::F4, Map::Bt) => block(&mut a, x, bt6),
        (WinogradTile::F4, Map::B) => block(&mut a, x, b6),
        (WinogradTile::F4, Map::At) => block(&mut a, x, at6),
        (WinogradTile::F4, Map::A) => block(&mut a, x, a4),
    }
}

/// The runtime's `sandwich` of the row-major `R×R` block `x` by `f`.
fn block<A: Arith<V = Value>, const R: usize, const S: usize>(
    a: &mut A,
    x: &[Value],
    f: fn(&mut A, [Value; R]) -> [Value; S],
) -> Vec<Value> {
    let rows: [[Value; R]; R] = std::array::from_fn(|r| std::array::from_fn(|s| x[r * R + s]));
    sandwich(a, &rows, f).into_iter().flatten().collect()
}

/// Transform `op` of one tile: `cells` are its image cells (input or
/// output side, row-major), `groups` its places in the tile tensor. Images
/// to tiles (`WinogradInput`, `WinogradOutputGrad`): the cells, zero
/// outside the image, through the map into the groups. Tiles to images:
/// the groups through the map into the cells inside the image, stored
/// (`WinogradOutput`) or added (`WinogradInputGrad`).
fn tile_transform(
    e: &mut Emitter,
    op: WindowOp,
    tile: WinogradTile,
    c: i64,
    cells: &[Tap],
    groups: &[Value],
) {
    let map = match op {
        WindowOp::WinogradInput => Map::Bt,
        WindowOp::WinogradInputGrad => Map::B,
        WindowOp::WinogradOutput => Map::At,
        _ => Map::A,
    };
    let to_tiles = matches!(op, WindowOp::WinogradInput | WindowOp::WinogradOutputGrad);
    for_row(e, c, &mut |e, ty, d, off| {
        if to_tiles {
            let zero = fill(e, ty, 0.0);
            let x: Vec<Value> = cells
                .iter()
                .map(|t| {
                    let v = ld(e, ty, t.ptr, d, off);
                    e.b.ins().select(t.ok, v, zero)
                })
                .collect();
            let v = apply(e, ty, tile, map, &x);
            for (g, &val) in v.iter().enumerate() {
                st(e, val, groups[g], d, off);
            }
        } else {
            let t: Vec<Value> = groups.iter().map(|&g| ld(e, ty, g, d, off)).collect();
            let y = apply(e, ty, tile, map, &t);
            for (cell, &val) in cells.iter().zip(&y) {
                if_else(
                    e,
                    cell.ok,
                    &mut |e| {
                        let val = if op == WindowOp::WinogradInputGrad {
                            let old = ld(e, ty, cell.ptr, d, off);
                            e.b.ins().fadd(old, val)
                        } else {
                            val
                        };
                        st(e, val, cell.ptr, d, off);
                    },
                    &mut |_| {},
                );
            }
        }
    });
}
