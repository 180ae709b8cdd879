//! Window kernels: im2col (`Op::Patches`) and col2im (`Op::PatchesGrad`)
//! over NHWC images, the data movement of every convolution and pooling.
//!
//! Owns: the loop nest image → output row → output column → tap row → tap
//! column, moving one pixel's `C` contiguous channels per tap (f32x4 chunks
//! and a scalar tail, as the row kernels do). A tap outside the image writes
//! the padding value (im2col) or adds nowhere (col2im); the inside test is
//! one unsigned compare per axis, so no address outside the image is formed.
//!
//! Invariants: every view is row-major; with two threads each takes a
//! contiguous range of images (col2im zeroes and accumulates only its own
//! images), so the result does not depend on the thread count; col2im adds
//! the taps of each image cell in output-cell order, as the interpreter does.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};

use super::emit::Emitter;
use super::loops::counted_loop;
use super::rows::{for_row, if_else, ld, row_ptr, st};
use crate::ir::Window;
use crate::plan::{Mode, WindowKernel, WindowOp};

/// Pointers and sizes of a window kernel, computed on the spine.
pub struct WindowPrep {
    op: WindowOp,
    grad: bool,
    channels: u32,
    window: Window,
    pad: f32,
    images: Value,
    src: Value,
    dst: Value,
}

pub fn prepare(e: &mut Emitter, k: &WindowKernel) -> WindowPrep {
    WindowPrep {
        op: k.op,
        grad: k.op == WindowOp::PatchesGrad,
        channels: k.channels,
        window: k.window,
        pad: k.pad,
        images: e.lin(k.images),
        src: e.view_ptr(&k.src),
        dst: e.view_ptr(&k.dst),
    }
}

pub fn emit(e: &mut Emitter, p: &WindowPrep, mode: Mode) {
    let (lo, hi) = match mode {
        Mode::Split => e.thread_range(p.images, 1),
        Mode::Single => {
            let zero = e.b.ins().iconst(types::I64, 0);
            (zero, p.images)
        }
    };
    e.region += 1;
    if !matches!(p.op, WindowOp::Patches | WindowOp::PatchesGrad) {
        winograd(e, p, lo, hi);
        e.region -= 1;
        return;
    }
    let w = p.window;
    let c = i64::from(w.channels);
    let image_len = i64::from(w.input[0] * w.input[1] * w.channels);
    let patches_len = i64::from(w.output[0] * w.output[1] * w.patch_len());
    // im2col reads images and writes patches; col2im the other way round.
    let (image_base, patch_base) = if p.grad {
        (p.dst, p.src)
    } else {
        (p.src, p.dst)
    };
    counted_loop(e, lo, hi, 1, &mut |e, n| {
        let image = row_ptr(e, image_base, n, image_len);
        let patch = row_ptr(e, patch_base, n, patches_len);
        if p.grad {
            for_row(e, image_len, &mut |e, ty, d, off| {
                let z = fill(e, ty, 0.0);
                st(e, z, image, d, off);
            });
        }
        let start = e.b.ins().iconst(types::I64, 0);
        let rows = e.b.ins().iconst(types::I64, i64::from(w.output[0]));
        counted_loop(e, start, rows, 1, &mut |e, oy| {
            let cols = e.b.ins().iconst(types::I64, i64::from(w.output[1]));
            counted_loop(e, start, cols, 1, &mut |e, ox| {
                // The first tap of this output cell's patch.
                let cell = e.b.ins().imul_imm_s(oy, i64::from(w.output[1]));
                let cell = e.b.ins().iadd(cell, ox);
                let first = row_ptr(e, patch, cell, i64::from(w.patch_len()));
                let y0 = origin(e, oy, w, 0);
                let x0 = origin(e, ox, w, 1);
                for ky in 0..w.kernel[0] {
                    let iy = e.b.ins().iadd_imm_s(y0, i64::from(ky * w.dilations[0]));
                    let in_y = inside(e, iy, w.input[0]);
                    for kx in 0..w.kernel[1] {
                        let ix = e.b.ins().iadd_imm_s(x0, i64::from(kx * w.dilations[1]));
                        let in_x = inside(e, ix, w.input[1]);
                        let ok = e.b.ins().band(in_y, in_x);
                        let tap = i64::from(ky * w.kernel[1] + kx) * c * 4;
                        let tap_ptr = e.b.ins().iadd_imm_s(first, tap);
                        emit_tap(e, p, w, image, tap_ptr, iy, ix, ok);
                    }
                }
            });
        });
    });
    e.region -= 1;
}

/// Moves one tap: the pixel `(iy, ix)` of `image` to or from `tap`.
#[allow(clippy::too_many_arguments)]
fn emit_tap(
    e: &mut Emitter,
    p: &WindowPrep,
    w: Window,
    image: Value,
    tap: Value,
    iy: Value,
    ix: Value,
    ok: Value,
) {
    let c = i64::from(w.channels);
    let pixel = |e: &mut Emitter| {
        let at = e.b.ins().imul_imm_s(iy, i64::from(w.input[1]));
        let at = e.b.ins().iadd(at, ix);
        row_ptr(e, image, at, c)
    };
    if p.grad {
        if_else(
            e,
            ok,
            &mut |e| {
                let px = pixel(e);
                for_row(e, c, &mut |e, ty, d, off| {
                    let a = ld(e, ty, px, d, off);
                    let x = ld(e, ty, tap, d, off);
                    let s = e.b.ins().fadd(a, x);
                    st(e, s, px, d, off);
                });
            },
            &mut |_| {},
        );
    } else {
        if_else(
            e,
            ok,
            &mut |e| {
                let px = pixel(e);
                for_row(e, c, &mut |e, ty, d, off| {
                    let x = ld(e, ty, px, d, off);
                    st(e, x, tap, d, off);
                });
            },
            &mut |e| {
                for_row(e, c, &mut |e, ty, d, off| {
                    let v = fill(e, ty, p.pad);
                    st(e, v, tap, d, off);
                });
            },
        );
    }
}

/// The image coordinate of tap 0 of output cell `o` along `axis`: `o·s − pad`.
fn origin(e: &mut Emitter, o: Value, w: Window, axis: usize) -> Value {
    let at = e.b.ins().imul_imm_s(o, i64::from(w.strides[axis]));
    e.b.ins().iadd_imm_s(at, -i64::from(w.pad_before[axis]))
}

/// `0 <= i < size` as one unsigned compare.
fn inside(e: &mut Emitter, i: Value, size: u32) -> Value {
    e.b.ins()
        .icmp_imm_u(IntCC::UnsignedLessThan, i, i64::from(size))
}

/// `v` as a value of `ty` (f32 or a splat).
fn fill(e: &mut Emitter, ty: types::Type, v: f32) -> Value {
    let s = e.b.ins().f32const(v);
    if ty == types::F32 {
        s
    } else {
        e.b.ins().splat(ty, s)
    }
}

/// A Winograd F(2×2, 3×3) transform (`WindowOp::Winograd*`) of images
/// `lo..hi`: per image, per tile (row-major), per `f32x4` chunk of the
/// channels (then a scalar tail), the tile's values loaded, transformed by
/// the factored matrices (adds and subtracts only) and stored; the input
/// adjoint zeroes its image first and adds each tile's cells in tile order,
/// so the result does not depend on the thread count.
fn winograd(e: &mut Emitter, p: &WindowPrep, lo: Value, hi: Value) {
    let [th, tw] = p.window.tiles();
    let tiles_len = i64::from(th * tw) * i64::from(p.channels);
    // Bytes between the 16 groups of the tile tensor: all the images' tiles.
    let group = e.b.ins().imul_imm_s(p.images, tiles_len * 4);
    let (image_base, tile_base) = match p.op {
        WindowOp::WinogradInput | WindowOp::WinogradOutputGrad => (p.src, p.dst),
        _ => (p.dst, p.src),
    };
    let t = WinogradTiles {
        op: p.op,
        window: p.window,
        channels: p.channels,
        image_base,
        tile_base,
        group,
    };
    winograd_images(e, &t, lo, hi);
}

/// A Winograd transform's operands: image `n` of the images is at
/// `image_base + n·image_len`, its tiles of group `g` at
/// `tile_base + g·group + n·tiles_len` (bytes; `tile_base` may point
/// before a block buffer that holds only some images).
pub struct WinogradTiles {
    pub op: WindowOp,
    pub window: Window,
    /// Channels of a cell (`C` for the input transforms, `O` for the output ones).
    pub channels: u32,
    pub image_base: Value,
    pub tile_base: Value,
    pub group: Value,
}

/// The transform `t.op` of images `lo..hi` (as `winograd` describes).
pub fn winograd_images(e: &mut Emitter, t: &WinogradTiles, lo: Value, hi: Value) {
    let w = t.window;
    let c = i64::from(t.channels);
    let [th, tw] = w.tiles();
    let image_cells = if matches!(t.op, WindowOp::WinogradInput | WindowOp::WinogradInputGrad) {
        w.input
    } else {
        w.output
    };
    let image_len = i64::from(image_cells[0] * image_cells[1]) * c;
    let tiles_len = i64::from(th * tw) * c;
    let (image_base, tile_base, group) = (t.image_base, t.tile_base, t.group);
    let p = t;
    counted_loop(e, lo, hi, 1, &mut |e, n| {
        let image = row_ptr(e, image_base, n, image_len);
        let tiles = row_ptr(e, tile_base, n, tiles_len);
        if p.op == WindowOp::WinogradInputGrad {
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
                let groups: Vec<Value> = (0..16)
                    .map(|g| {
                        if g == 0 {
                            tile
                        } else {
                            let off = e.b.ins().imul_imm_s(group, g);
                            e.b.ins().iadd(tile, off)
                        }
                    })
                    .collect();
                match p.op {
                    WindowOp::WinogradInput | WindowOp::WinogradInputGrad => {
                        let taps = input_taps(e, w, image, ty_, tx_, c);
                        tile_input(e, p.op, c, &taps, &groups);
                    }
                    _ => {
                        let cells = output_cells(e, w, image, ty_, tx_, c);
                        tile_output(e, p.op, c, &cells, &groups);
                    }
                }
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

/// The 4×4 input cells of tile `(ty, tx)`, row-major.
fn input_taps(e: &mut Emitter, w: Window, image: Value, ty: Value, tx: Value, c: i64) -> Vec<Tap> {
    let coords = |e: &mut Emitter, t: Value, axis: usize| -> Vec<(Value, Value)> {
        let at = e.b.ins().imul_imm_s(t, 2);
        let at = e.b.ins().iadd_imm_s(at, -i64::from(w.pad_before[axis]));
        (0..4)
            .map(|r| {
                let i = e.b.ins().iadd_imm_s(at, r);
                let ok = inside(e, i, w.input[axis]);
                let zero = e.b.ins().iconst(types::I64, 0);
                (e.b.ins().select(ok, i, zero), ok)
            })
            .collect()
    };
    let ys = coords(e, ty, 0);
    let xs = coords(e, tx, 1);
    let mut taps = Vec::with_capacity(16);
    for &(iy, oky) in &ys {
        for &(ix, okx) in &xs {
            let at = e.b.ins().imul_imm_s(iy, i64::from(w.input[1]));
            let at = e.b.ins().iadd(at, ix);
            let ptr = row_ptr(e, image, at, c);
            let ok = e.b.ins().band(oky, okx);
            taps.push(Tap { ptr, ok });
        }
    }
    taps
}

/// The 2×2 output cells of tile `(ty, tx)`, row-major.
fn output_cells(
    e: &mut Emitter,
    w: Window,
    image: Value,
    ty: Value,
    tx: Value,
    c: i64,
) -> Vec<Tap> {
    let coords = |e: &mut Emitter, t: Value, axis: usize| -> Vec<(Value, Value)> {
        let at = e.b.ins().imul_imm_s(t, 2);
        (0..2)
            .map(|a| {
                let i = e.b.ins().iadd_imm_s(at, a);
                let ok = inside(e, i, w.output[axis]);
                let zero = e.b.ins().iconst(types::I64, 0);
                (e.b.ins().select(ok, i, zero), ok)
            })
            .collect()
    };
    let ys = coords(e, ty, 0);
    let xs = coords(e, tx, 1);
    let mut cells = Vec::with_capacity(4);
    for &(iy, oky) in &ys {
        for &(ix, okx) in &xs {
            let at = e.b.ins().imul_imm_s(iy, i64::from(w.output[1]));
            let at = e.b.ins().iadd(at, ix);
            let ptr = row_ptr(e, image, at, c);
            let ok = e.b.ins().band(oky, okx);
            cells.push(Tap { ptr, ok });
        }
    }
    cells
}

/// `Bᵀ v`: `[v0 − v2, v1 + v2, v2 − v1, v1 − v3]`.
fn bt4(e: &mut Emitter, v: [Value; 4]) -> [Value; 4] {
    let b = &mut e.b;
    [
        b.ins().fsub(v[0], v[2]),
        b.ins().fadd(v[1], v[2]),
        b.ins().fsub(v[2], v[1]),
        b.ins().fsub(v[1], v[3]),
    ]
}

/// `B v`: `[v0, v1 − v2 + v3, v1 + v2 − v0, −v3]`.
fn b4(e: &mut Emitter, v: [Value; 4]) -> [Value; 4] {
    let b = &mut e.b;
    let d = b.ins().fsub(v[1], v[2]);
    let s = b.ins().fadd(v[1], v[2]);
    [
        v[0],
        b.ins().fadd(d, v[3]),
        b.ins().fsub(s, v[0]),
        b.ins().fneg(v[3]),
    ]
}

/// `Aᵀ v`: `[v0 + v1 + v2, v1 − v2 − v3]`.
fn at4(e: &mut Emitter, v: [Value; 4]) -> [Value; 2] {
    let b = &mut e.b;
    let s = b.ins().fadd(v[0], v[1]);
    let d = b.ins().fsub(v[1], v[2]);
    [b.ins().fadd(s, v[2]), b.ins().fsub(d, v[3])]
}

/// `A v`: `[v0, v0 + v1, v0 − v1, −v1]`.
fn a2(e: &mut Emitter, v: [Value; 2]) -> [Value; 4] {
    let b = &mut e.b;
    [
        v[0],
        b.ins().fadd(v[0], v[1]),
        b.ins().fsub(v[0], v[1]),
        b.ins().fneg(v[1]),
    ]
}

/// `M · X · Mᵀ` of a row-major `R×R` block by a vector map `f` (`R` to
/// `S` entries): `f` down each column, then along each row.
fn sandwich<const R: usize, const S: usize>(
    e: &mut Emitter,
    x: &[Value],
    f: fn(&mut Emitter, [Value; R]) -> [Value; S],
) -> Vec<Value> {
    // cols[s][i]: f applied down column s.
    let cols: Vec<[Value; S]> = (0..R)
        .map(|s| f(e, std::array::from_fn(|r| x[r * R + s])))
        .collect();
    let rows: [[Value; R]; S] = std::array::from_fn(|i| std::array::from_fn(|s| cols[s][i]));
    let mut out = Vec::with_capacity(S * S);
    for row in rows {
        out.extend(f(e, row));
    }
    out
}

/// The input transform (or its adjoint) of one tile: `taps` are its 4×4
/// image cells, `groups` its 16 places in the tile tensor.
fn tile_input(e: &mut Emitter, op: WindowOp, c: i64, taps: &[Tap], groups: &[Value]) {
    for_row(e, c, &mut |e, ty, d, off| {
        if op == WindowOp::WinogradInput {
            let zero = fill(e, ty, 0.0);
            let x: Vec<Value> = taps
                .iter()
                .map(|t| {
                    let v = ld(e, ty, t.ptr, d, off);
                    e.b.ins().select(t.ok, v, zero)
                })
                .collect();
            let v = sandwich::<4, 4>(e, &x, bt4);
            for (g, &val) in v.iter().enumerate() {
                st(e, val, groups[g], d, off);
            }
        } else {
            let dv: Vec<Value> = groups.iter().map(|&g| ld(e, ty, g, d, off)).collect();
            let dx = sandwich::<4, 4>(e, &dv, b4);
            for (t, &val) in taps.iter().zip(&dx) {
                if_else(
                    e,
                    t.ok,
                    &mut |e| {
                        let old = ld(e, ty, t.ptr, d, off);
                        let s = e.b.ins().fadd(old, val);
                        st(e, s, t.ptr, d, off);
                    },
                    &mut |_| {},
                );
            }
        }
    });
}

/// The output transform (or its adjoint) of one tile: `cells` are its 2×2
/// output cells, `groups` its 16 places in the tile tensor.
fn tile_output(e: &mut Emitter, op: WindowOp, c: i64, cells: &[Tap], groups: &[Value]) {
    for_row(e, c, &mut |e, ty, d, off| {
        if op == WindowOp::WinogradOutput {
            let m: Vec<Value> = groups.iter().map(|&g| ld(e, ty, g, d, off)).collect();
            let y = sandwich::<4, 2>(e, &m, at4);
            for (t, &val) in cells.iter().zip(&y) {
                if_else(e, t.ok, &mut |e| st(e, val, t.ptr, d, off), &mut |_| {});
            }
        } else {
            let zero = fill(e, ty, 0.0);
            let dy: Vec<Value> = cells
                .iter()
                .map(|t| {
                    let v = ld(e, ty, t.ptr, d, off);
                    e.b.ins().select(t.ok, v, zero)
                })
                .collect();
            let dm = sandwich::<2, 4>(e, &dy, a2);
            for (g, &val) in dm.iter().enumerate() {
                st(e, val, groups[g], d, off);
            }
        }
    });
}
