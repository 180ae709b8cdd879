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
use super::winograd::{winograd_images, WinogradTiles};
use crate::ir::{Window, WinogradTile};
use crate::plan::{Mode, WindowKernel, WindowOp};

/// Pointers and sizes of a window kernel, computed on the spine.
pub struct WindowPrep {
    op: WindowOp,
    grad: bool,
    channels: u32,
    window: Window,
    tile: Option<WinogradTile>,
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
        tile: k.tile,
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
pub(super) fn inside(e: &mut Emitter, i: Value, size: u32) -> Value {
    e.b.ins()
        .icmp_imm_u(IntCC::UnsignedLessThan, i, i64::from(size))
}

/// `v` as a value of `ty` (f32 or a splat).
pub(super) fn fill(e: &mut Emitter, ty: types::Type, v: f32) -> Value {
    let s = e.b.ins().f32const(v);
    if ty == types::F32 {
        s
    } else {
        e.b.ins().splat(ty, s)
    }
}

/// A Winograd transform (`WindowOp::Winograd*`) of images `lo..hi`, unfused
/// (`codegen::winograd`).
fn winograd(e: &mut Emitter, p: &WindowPrep, lo: Value, hi: Value) {
    let tile = p.tile.expect("a Winograd window kernel has a tile");
    let [th, tw] = p.window.winograd_tiles(tile);
    let tiles_len = i64::from(th * tw) * i64::from(p.channels);
    // Bytes between the groups of the tile tensor: all the images' tiles.
    let group = e.b.ins().imul_imm_s(p.images, tiles_len * 4);
    let (image_base, tile_base) = match p.op {
        WindowOp::WinogradInput | WindowOp::WinogradOutputGrad => (p.src, p.dst),
        _ => (p.dst, p.src),
    };
    let t = WinogradTiles {
        op: p.op,
        window: p.window,
        tile,
        channels: p.channels,
        image_base,
        tile_base,
        group,
    };
    winograd_images(e, &t, lo, hi);
}
