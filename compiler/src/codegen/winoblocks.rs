//! A fused Winograd convolution pass ([`WinogradKernel`]) by blocks of
//! images: per block the transforms of `window::winograd_images` into the
//! thread's block tiles, the G GEMMs of the block (one `specc_sgemm` call
//! per group; G = 16 for F(2×2), 36 for F(4×4)), the inverse transform out
//! of them.
//!
//! Invariants: the forward and the input gradient are per image, so any
//! split of the blocks gives the same bits; the filter gradient is summed
//! block by block in order within two fixed halves of the blocks (the first
//! into `du`, the second into the kernel's accumulator), then `du += acc`:
//! with two threads each takes one half (a barrier before the add, each
//! thread adding half the groups), with one thread the halves run one after
//! the other, so the bits do not depend on the thread count.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};

use super::emit::Emitter;
use super::loops::counted_loop;
use super::rows::{for_row, ld, st};
use super::winograd::{winograd_images, WinogradTiles};
use crate::plan::{Mode, WindowOp, WinogradKernel};
use specc_runtime::winograd;

/// Spine values of the kernel.
struct Prep {
    images: Value,
    x: Value,
    u: Option<Value>,
    y: Option<Value>,
    v: Option<Value>,
    dy: Option<Value>,
    dx: Option<Value>,
    du: Option<Value>,
    scratch: Value,
    acc: Value,
}

pub fn emit(e: &mut Emitter, k: &WinogradKernel, mode: Mode) {
    let opt = |e: &mut Emitter, v: &Option<crate::plan::View>| v.as_ref().map(|v| e.view_ptr(v));
    let p = Prep {
        images: e.lin(k.images),
        x: e.view_ptr(&k.x),
        u: opt(e, &k.u),
        y: opt(e, &k.y),
        v: opt(e, &k.v),
        dy: opt(e, &k.dy),
        dx: opt(e, &k.dx),
        du: opt(e, &k.du),
        scratch: e.scratch_ptr(k.scratch),
        acc: e.scratch_ptr(k.acc),
    };
    let split = e.threads > 1 && mode == Mode::Split;
    if split {
        body(e, k, &p, true);
    } else {
        e.only_thread0(|e| body(e, k, &p, false));
    }
}

/// Sizes in elements.
struct Dims {
    c: i64,
    o: i64,
    /// Tiles an image.
    t: i64,
    /// Images a block.
    nb: i64,
    /// Groups (values a tile per channel).
    g: i64,
}

fn body(e: &mut Emitter, k: &WinogradKernel, p: &Prep, split: bool) {
    e.region += 1;
    let d = Dims {
        c: i64::from(k.window.channels),
        o: i64::from(k.out_channels),
        t: k.tiles() as i64,
        nb: i64::from(k.block),
        g: k.groups() as i64,
    };
    // This thread's block tiles: input tiles, then output (gradient) tiles.
    let region = match (split, e.tid) {
        (true, Some(tid)) => {
            let off = e.b.ins().imul_imm_s(tid, k.block_bytes() as i64);
            e.b.ins().iadd(p.scratch, off)
        }
        _ => p.scratch,
    };
    let vb = region;
    let mb =
        e.b.ins()
            .iadd_imm_s(region, d.g * k.group_bytes(k.window.channels) as i64);
    let nb1 = e.b.ins().iadd_imm_s(p.images, d.nb - 1);
    let nbv = e.b.ins().iconst(types::I64, d.nb);
    let nblk = e.b.ins().udiv(nb1, nbv);
    let zero = e.b.ins().iconst(types::I64, 0);
    if k.y.is_some() {
        let (lo, hi) = if split {
            e.thread_range(nblk, 1)
        } else {
            (zero, nblk)
        };
        counted_loop(e, lo, hi, 1, &mut |e, b| {
            forward_block(e, k, p, &d, vb, mb, b)
        });
    } else {
        let h = e.b.ins().ushr_imm_u(nblk, 1);
        let du = p.du;
        let half = |e: &mut Emitter, lo: Value, hi: Value, acc: Option<Value>| {
            if let Some(acc) = acc {
                zero_groups(e, acc, &d);
            }
            counted_loop(e, lo, hi, 1, &mut |e, b| {
                backward_block(e, k, p, &d, vb, mb, b, acc)
            });
        };
        match (split, e.tid) {
            (true, Some(tid)) => {
                let first = e.b.ins().icmp_imm_s(IntCC::Equal, tid, 0);
                let lo = e.b.ins().select(first, zero, h);
                let hi = e.b.ins().select(first, h, nblk);
                let acc = du.map(|du| e.b.ins().select(first, du, p.acc));
                half(e, lo, hi, acc);
            }
            _ => {
                half(e, zero, h, du);
                let acc = du.map(|_| p.acc);
                half(e, h, nblk, acc);
            }
        }
        if let Some(du) = du {
            // du += acc, by groups.
            let groups = e.b.ins().iconst(types::I64, d.g);
            let (glo, ghi) = if split {
                e.barrier();
                e.thread_range(groups, 1)
            } else {
                (zero, groups)
            };
            let len = d.c * d.o;
            counted_loop(e, glo, ghi, 1, &mut |e, g| {
                let off = e.b.ins().imul_imm_s(g, len * 4);
                let dst = e.b.ins().iadd(du, off);
                let src = e.b.ins().iadd(p.acc, off);
                for_row(e, len, &mut |e, ty, dd, o| {
                    let a = ld(e, ty, dst, dd, o);
                    let b = ld(e, ty, src, dd, o);
                    let s = e.b.ins().fadd(a, b);
                    st(e, s, dst, dd, o);
                });
            });
        }
    }
    e.region -= 1;
}

/// Zeroes a `[G, C, O]` accumulator.
fn zero_groups(e: &mut Emitter, acc: Value, d: &Dims) {
    let len = d.g * d.c * d.o;
    for_row(e, len, &mut |e, ty, dd, o| {
        let z = e.b.ins().f32const(0.0);
        let z = if ty == types::F32 {
            z
        } else {
            e.b.ins().splat(ty, z)
        };
        st(e, z, acc, dd, o);
    });
}

/// Images `[n0, n1)` of block `b`.
fn block_images(e: &mut Emitter, p: &Prep, d: &Dims, b: Value) -> (Value, Value, Value) {
    let n0 = e.b.ins().imul_imm_s(b, d.nb);
    let end = e.b.ins().iadd_imm_s(n0, d.nb);
    let over = e.b.ins().icmp(IntCC::SignedGreaterThan, end, p.images);
    let n1 = e.b.ins().select(over, p.images, end);
    let cnt = e.b.ins().isub(n1, n0);
    (n0, n1, cnt)
}

/// Tile tensor operands of a block buffer at `buf` with `ch` channels:
/// (base such that image `n0` is at `buf`, group stride in bytes,
/// [`WinogradKernel::group_bytes`]).
fn block_tiles(
    e: &mut Emitter,
    k: &WinogradKernel,
    d: &Dims,
    buf: Value,
    n0: Value,
    ch: i64,
) -> (Value, Value) {
    let back = e.b.ins().imul_imm_s(n0, d.t * ch * 4);
    let base = e.b.ins().isub(buf, back);
    let group =
        e.b.ins()
            .iconst(types::I64, k.group_bytes(ch as u32) as i64);
    (base, group)
}

/// The address of group `g`'s first tile of image `n0` in a tile tensor.
fn tile_at(
    e: &mut Emitter,
    d: &Dims,
    base: Value,
    group: Value,
    g: Value,
    n0: Value,
    ch: i64,
) -> Value {
    let goff = e.b.ins().imul(g, group);
    let noff = e.b.ins().imul_imm_s(n0, d.t * ch * 4);
    let p = e.b.ins().iadd(base, goff);
    e.b.ins().iadd(p, noff)
}

#[allow(clippy::too_many_arguments)]
fn transform(
    e: &mut Emitter,
    k: &WinogradKernel,
    op: WindowOp,
    channels: i64,
    image_base: Value,
    tiles: (Value, Value),
    n0: Value,
    n1: Value,
) {
    if let Some(f) = e.winograd {
        let w = k.window;
        let code = match op {
            WindowOp::WinogradInput => winograd::INPUT,
            WindowOp::WinogradInputGrad => winograd::INPUT_GRAD,
            WindowOp::WinogradOutput => winograd::OUTPUT,
            _ => winograd::OUTPUT_GRAD,
        };
        let mut args: Vec<Value> = [
            code,
            i64::from(k.tile.m()),
            channels,
            i64::from(w.input[0]),
            i64::from(w.input[1]),
            i64::from(w.output[0]),
            i64::from(w.output[1]),
            i64::from(w.pad_before[0]),
            i64::from(w.pad_before[1]),
        ]
        .iter()
        .map(|&v| e.b.ins().iconst(types::I64, v))
        .collect();
        args.extend([image_base, tiles.0, tiles.1, n0, n1]);
        e.b.ins().call(f, &args);
        return;
    }
    let t = WinogradTiles {
        op,
        window: k.window,
        tile: k.tile,
        channels: channels as u32,
        image_base,
        tile_base: tiles.0,
        group: tiles.1,
    };
    winograd_images(e, &t, n0, n1);
}

/// The `groups` GEMMs `C_g = op(A_g) @ op(B_g)` (beta 0 or 1) of one block.
#[allow(clippy::too_many_arguments)]
fn gemms(
    e: &mut Emitter,
    groups: i64,
    [m, kk, n]: [Value; 3],
    a: &dyn Fn(&mut Emitter, Value) -> Value,
    [rsa, csa]: [i64; 2],
    b: &dyn Fn(&mut Emitter, Value) -> Value,
    [rsb, csb]: [i64; 2],
    c: &dyn Fn(&mut Emitter, Value) -> Value,
    rsc: i64,
    beta: f32,
) {
    let zero = e.b.ins().iconst(types::I64, 0);
    let count = e.b.ins().iconst(types::I64, groups);
    counted_loop(e, zero, count, 1, &mut |e, g| {
        let pa = a(e, g);
        let pb = b(e, g);
        let pc = c(e, g);
        let mut i = |v: i64| e.b.ins().iconst(types::I64, v);
        let (rsa, csa, rsb, csb, rsc, one) = (i(rsa), i(csa), i(rsb), i(csb), i(rsc), i(1));
        let alpha = e.b.ins().f32const(1.0);
        let beta = e.b.ins().f32const(beta);
        e.call_gemm(&[
            m, kk, n, alpha, pa, rsa, csa, pb, rsb, csb, beta, pc, rsc, one,
        ]);
    });
}

/// Forward block `b`: V ← x, M = V @ U, y ← M.
fn forward_block(
    e: &mut Emitter,
    k: &WinogradKernel,
    p: &Prep,
    d: &Dims,
    vb: Value,
    mb: Value,
    b: Value,
) {
    let (n0, n1, cnt) = block_images(e, p, d, b);
    let vt = match p.v {
        Some(v) => {
            let group = e.b.ins().imul_imm_s(p.images, d.t * d.c * 4);
            (v, group)
        }
        None => block_tiles(e, k, d, vb, n0, d.c),
    };
    let mt = block_tiles(e, k, d, mb, n0, d.o);
    transform(e, k, WindowOp::WinogradInput, d.c, p.x, vt, n0, n1);
    let m = e.b.ins().imul_imm_s(cnt, d.t);
    let kk = e.b.ins().iconst(types::I64, d.c);
    let n = e.b.ins().iconst(types::I64, d.o);
    let u = p.u.expect("a forward kernel reads U");
    let (c, o) = (d.c, d.o);
    gemms(
        e,
        d.g,
        [m, kk, n],
        &|e, g| tile_at(e, d, vt.0, vt.1, g, n0, c),
        [c, 1],
        &|e, g| filter_group(e, u, g, c * o),
        [o, 1],
        &|e, g| tile_at(e, d, mt.0, mt.1, g, n0, o),
        o,
        0.0,
    );
    let y = p.y.expect("a forward kernel writes y");
    transform(e, k, WindowOp::WinogradOutput, d.o, y, mt, n0, n1);
}

/// Backward block `b`: dM ← dy; `acc += Vᵀ @ dM` with V ← x; dV = dM @ Uᵀ
/// (into V's block tiles), dx ← dV.
#[allow(clippy::too_many_arguments)]
fn backward_block(
    e: &mut Emitter,
    k: &WinogradKernel,
    p: &Prep,
    d: &Dims,
    vb: Value,
    mb: Value,
    b: Value,
    acc: Option<Value>,
) {
    let (n0, n1, cnt) = block_images(e, p, d, b);
    let vt = block_tiles(e, k, d, vb, n0, d.c);
    let mt = block_tiles(e, k, d, mb, n0, d.o);
    let dy = p.dy.expect("a backward kernel reads dy");
    transform(e, k, WindowOp::WinogradOutputGrad, d.o, dy, mt, n0, n1);
    let rows = e.b.ins().imul_imm_s(cnt, d.t);
    let (c, o) = (d.c, d.o);
    let ci = e.b.ins().iconst(types::I64, c);
    let oi = e.b.ins().iconst(types::I64, o);
    if let Some(acc) = acc {
        transform(e, k, WindowOp::WinogradInput, d.c, p.x, vt, n0, n1);
        // acc_g += V_gᵀ [C, tiles] @ dM_g [tiles, O]
        gemms(
            e,
            d.g,
            [ci, rows, oi],
            &|e, g| tile_at(e, d, vt.0, vt.1, g, n0, c),
            [1, c],
            &|e, g| tile_at(e, d, mt.0, mt.1, g, n0, o),
            [o, 1],
            &|e, g| filter_group(e, acc, g, c * o),
            o,
            1.0,
        );
    }
    if let (Some(u), Some(dx)) = (p.u, p.dx) {
        // dV_g [tiles, C] = dM_g [tiles, O] @ U_gᵀ (U_g is [C, O]).
        gemms(
            e,
            d.g,
            [rows, oi, ci],
            &|e, g| tile_at(e, d, mt.0, mt.1, g, n0, o),
            [o, 1],
            &|e, g| filter_group(e, u, g, c * o),
            [1, o],
            &|e, g| tile_at(e, d, vt.0, vt.1, g, n0, c),
            c,
            0.0,
        );
        transform(e, k, WindowOp::WinogradInputGrad, d.c, dx, vt, n0, n1);
    }
}

/// Group `g` of a `[G, C, O]` filter-sized tensor at `base` (`len = C·O`
/// floats a group): U, or the filter gradient's accumulator.
fn filter_group(e: &mut Emitter, base: Value, g: Value, len: i64) -> Value {
    let off = e.b.ins().imul_imm_s(g, len * 4);
    e.b.ins().iadd(base, off)
}
