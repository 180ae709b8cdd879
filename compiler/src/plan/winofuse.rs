//! Winograd convolutions by blocks of images: the transforms and batched
//! products of one convolution pass fused into one [`WinogradKernel`].
//!
//! Owns: finding, in the ordered kernel list, the kernels `passes::winograd`
//! produced for one convolution pass and replacing them by one kernel that
//! runs transform → G GEMMs → inverse transform per block of images (G the
//! tile's groups, 16 or 36), so the tile tensors (G values per tile of
//! output cells) never exist whole and
//! each block's are read right after they are written:
//! - forward: `winograd_input` (V ← x), `V @ U` (M), `winograd_output`
//!   (y ← M), placed where `winograd_output` was;
//! - backward: `winograd_output_grad` (dM ← dy), then `dM @ Uᵀ` with
//!   `winograd_input_grad` (dx) and/or `Vᵀ @ dM` (dU, V recomputed per
//!   block from the `x` of V's `winograd_input`), placed where
//!   `winograd_output_grad` was.
//!
//! Invariants: a pattern is fused only when its intermediate tile tensors
//! (M, dM, dV) are touched by no other kernel and moving its reads and
//! writes to the fused kernel's place crosses no kernel that writes what it
//! reads or touches what it writes; V is still stored whole (`v`) when a
//! kernel left unfused reads it. Runs before scratch assignment, so the
//! fused-away tile tensors take no scratch.

use std::collections::HashSet;

use super::kernel::WinogradKernel;
use super::view::{BufId, Lin, View};
use super::{Kernel, WindowOp};
use crate::ir::{Window, WinogradTile};

/// Bytes of a block's tile tensors (per thread) the block size stays
/// under. Measured on W7 (Zen 5, batch 64): 4 images a block ran its two
/// kernels in ~880 µs a step, 8 in ~820, 32 (3 MB of tiles, one block per
/// thread) in ~770: fewer, larger GEMMs pay more than an L2-sized block
/// saves, as the transforms stream their tiles once.
const BLOCK_BUDGET: u64 = 4 << 20;

/// Bytes of one image's tile tensors for `channels` input plus output
/// channels.
fn tile_bytes(w: &Window, tile: WinogradTile, channels: u32) -> u64 {
    let [th, tw] = w.winograd_tiles(tile);
    u64::from(tile.groups() * th * tw) * u64::from(channels) * 4
}

/// Images per block for tiles of `per_image` bytes at batch `batch`
/// (`SPECC_WINOGRAD_BLOCK` overrides, for measurements): at most the
/// budget's, and of those the largest that splits the batch's blocks into
/// two halves of the fewest unequal images (the halves two threads take).
fn block_size(per_image: u64, batch: u64) -> u32 {
    if let Some(b) = specc_runtime::settings::winograd_block() {
        return b;
    }
    let batch = batch.max(1);
    let most = (BLOCK_BUDGET / per_image.max(1)).clamp(1, batch.div_ceil(2).max(1));
    (1..=most)
        .rev()
        .min_by_key(|&b| {
            let blocks = batch.div_ceil(b);
            let first = (blocks / 2 * b).min(batch);
            first.abs_diff(batch - first)
        })
        .unwrap_or(1) as u32
}

/// A batched GEMM kernel's parts.
struct Bmm<'a> {
    a: &'a View,
    b: &'a View,
    c: &'a View,
    ta: bool,
    tb: bool,
    groups: super::Groups,
}

fn bmm(k: &Kernel) -> Option<Bmm<'_>> {
    match k {
        Kernel::Gemm {
            a,
            b,
            c,
            ta,
            tb,
            groups: Some(groups),
            ..
        } => Some(Bmm {
            a,
            b,
            c,
            ta: *ta,
            tb: *tb,
            groups: *groups,
        }),
        _ => None,
    }
}

fn window(k: &Kernel, op: WindowOp) -> Option<&super::WindowKernel> {
    match k {
        Kernel::Window(w) if w.op == op => Some(w),
        _ => None,
    }
}

/// Whether `v` is a row-major `[G, C, O]` filter view (group stride
/// `C·O`, row stride `O`).
fn filter_view(v: &View, stride: Lin, c: u32, o: u32) -> bool {
    stride == Lin::constant(i64::from(c) * i64::from(o))
        && v.strides == [Lin::constant(i64::from(o)), Lin::constant(1)]
}

/// Fuses every Winograd convolution pass it can (see the module doc).
pub(super) fn fuse(kernels: Vec<Kernel>, batch: u64) -> Vec<Kernel> {
    let n = kernels.len();
    let rw: Vec<(Vec<BufId>, Vec<BufId>)> = kernels.iter().map(Kernel::reads_writes).collect();
    let touchers = |b: BufId| -> Vec<usize> {
        (0..n)
            .filter(|&i| rw[i].0.contains(&b) || rw[i].1.contains(&b))
            .collect()
    };
    let writer = |b: BufId| -> Option<usize> { (0..n).find(|&i| rw[i].1.contains(&b)) };
    // Whether the kernels `removed` can all run at `at` instead.
    let movable = |removed: &[usize], at: usize| -> bool {
        removed.iter().all(|&r| {
            let (lo, hi) = if at < r { (at, r) } else { (r, at) };
            (lo + 1..hi).filter(|q| !removed.contains(q)).all(|q| {
                let (qr, qw) = &rw[q];
                !rw[r].0.iter().any(|b| qw.contains(b))
                    && !rw[r].1.iter().any(|b| qw.contains(b) || qr.contains(b))
            })
        })
    };
    // (kernel index to place at, removed kernels, the fused kernel).
    let mut fused: Vec<(usize, Vec<usize>, WinogradKernel)> = Vec::new();
    let mut taken: HashSet<usize> = HashSet::new();
    // Backward first: it decides which kernels read V.
    for (i, k) in kernels.iter().enumerate() {
        let Some(og) = window(k, WindowOp::WinogradOutputGrad) else {
            continue;
        };
        let dm = og.dst.buf;
        let w = og.window;
        let c = w.channels;
        let o = og.channels;
        let users: Vec<usize> = touchers(dm).into_iter().filter(|&j| j != i).collect();
        let mut dx_part = None;
        let mut du_part = None;
        let mut ok = true;
        for &j in &users {
            let Some(g) = bmm(&kernels[j]) else {
                ok = false;
                break;
            };
            if !g.ta && g.tb && g.a.buf == dm && filter_view(g.b, g.groups.b, c, o) {
                // dV = dM @ Uᵀ, read only by winograd_input_grad.
                let dv = g.c.buf;
                let dv_users = touchers(dv);
                let ig = dv_users
                    .iter()
                    .copied()
                    .find(|&q| window(&kernels[q], WindowOp::WinogradInputGrad).is_some());
                match ig {
                    Some(q) if dv_users.len() == 2 && dx_part.is_none() => {
                        dx_part = Some((j, q));
                    }
                    _ => ok = false,
                }
            } else if g.ta
                && !g.tb
                && g.b.buf == dm
                && g.c.strides == [Lin::constant(i64::from(o)), Lin::constant(1)]
                && g.groups.c == Lin::constant(i64::from(c) * i64::from(o))
                && du_part.is_none()
            {
                // dU = Vᵀ @ dM, V from a winograd_input.
                // x must still hold its value at `i`.
                let vin = writer(g.a.buf).and_then(|q| {
                    let vin = window(&kernels[q], WindowOp::WinogradInput)?;
                    let kept = (q + 1..i).all(|p| !rw[p].1.contains(&vin.src.buf));
                    (kept && q < i && vin.window == w && vin.tile == og.tile).then_some(vin)
                });
                match vin {
                    Some(vin) => du_part = Some((j, vin.src.clone())),
                    None => ok = false,
                }
            } else {
                ok = false;
            }
        }
        if !ok || (dx_part.is_none() && du_part.is_none()) {
            continue;
        }
        let mut removed = vec![i];
        let mut x = None;
        let mut u = None;
        let mut dx = None;
        let mut du = None;
        if let Some((j, q)) = dx_part {
            removed.extend([j, q]);
            let Some(g) = bmm(&kernels[j]) else { continue };
            u = Some(g.b.clone());
            let Some(ig) = window(&kernels[q], WindowOp::WinogradInputGrad) else {
                continue;
            };
            dx = Some(ig.dst.clone());
        }
        if let Some((j, src)) = du_part {
            removed.push(j);
            let Some(g) = bmm(&kernels[j]) else { continue };
            du = Some(g.c.clone());
            x = Some(src);
        }
        let x = match (x, &dx) {
            (Some(x), _) => x,
            // Without a filter gradient the kernel reads no x; any image
            // view serves (it is never dereferenced).
            (None, Some(dx)) => dx.clone(),
            (None, None) => continue,
        };
        if !movable(&removed, i) || removed.iter().any(|r| taken.contains(r)) {
            continue;
        }
        let Some(tile) = og.tile else { continue };
        let kernel = WinogradKernel {
            node: og.node,
            window: w,
            tile,
            images: og.images,
            block: block_size(tile_bytes(&w, tile, c + o), batch),
            out_channels: o,
            x,
            u,
            y: None,
            v: None,
            dy: Some(og.src.clone()),
            dx,
            du,
            scratch: 0,
            acc: 0,
        };
        taken.extend(removed.iter().copied());
        fused.push((i, removed, kernel));
    }
    // Forward.
    for (l, k) in kernels.iter().enumerate() {
        let Some(out) = window(k, WindowOp::WinogradOutput) else {
            continue;
        };
        let m = out.src.buf;
        let w = out.window;
        let c = w.channels;
        let o = out.channels;
        let m_users = touchers(m);
        if m_users.len() != 2 {
            continue;
        }
        let Some(j) = m_users.iter().copied().find(|&q| q != l) else {
            continue;
        };
        let Some(g) = bmm(&kernels[j]) else { continue };
        if g.ta || g.tb || g.c.buf != m || !filter_view(g.b, g.groups.b, c, o) {
            continue;
        }
        let vbuf = g.a.buf;
        let Some(i) = writer(vbuf) else { continue };
        let Some(vin) = window(&kernels[i], WindowOp::WinogradInput) else {
            continue;
        };
        if vin.window != w || vin.tile != out.tile {
            continue;
        }
        let Some(tile) = out.tile else { continue };
        let removed = vec![i, j, l];
        if !movable(&removed, l) || removed.iter().any(|r| taken.contains(r)) {
            continue;
        }
        // V stays whole when a kernel left unfused reads it.
        let keep_v = touchers(vbuf)
            .iter()
            .any(|q| !removed.contains(q) && !taken.contains(q));
        let kernel = WinogradKernel {
            node: out.node,
            window: w,
            tile,
            images: out.images,
            block: block_size(tile_bytes(&w, tile, c + o), batch),
            out_channels: o,
            x: vin.src.clone(),
            u: Some(g.b.clone()),
            y: Some(out.dst.clone()),
            v: keep_v.then(|| vin.dst.clone()),
            dy: None,
            dx: None,
            du: None,
            scratch: 0,
            acc: 0,
        };
        taken.extend(removed.iter().copied());
        fused.push((l, removed, kernel));
    }
    if fused.is_empty() {
        return kernels;
    }
    let mut at: Vec<Option<WinogradKernel>> = vec![None; n];
    for (p, _, k) in fused {
        at[p] = Some(k);
    }
    kernels
        .into_iter()
        .enumerate()
        .filter_map(|(i, k)| match at[i].take() {
            Some(w) => Some(Kernel::Winograd(w)),
            None if taken.contains(&i) => None,
            None => Some(k),
        })
        .collect()
}

/// Gives the fused kernels their scratch after `end` (bytes, the planned
/// scratch): one pair of per-thread block regions shared by all of them
/// (they never run at the same time), then each backward kernel's second
/// accumulator. Returns the new scratch size.
pub(super) fn place_scratch(kernels: &mut [Kernel], end: u64, threads: u32) -> u64 {
    let mut block = 0u64;
    for k in kernels.iter() {
        if let Kernel::Winograd(w) = k {
            block = block.max(w.block_bytes());
        }
    }
    if block == 0 {
        return end;
    }
    let base = end.next_multiple_of(64);
    let mut next = base + block * u64::from(threads.max(1));
    for k in kernels.iter_mut() {
        if let Kernel::Winograd(w) = k {
            w.scratch = base;
            w.acc = next;
            next += w.acc_bytes();
        }
    }
    next
}
