//! Scratch memory: offsets for intermediates, reused by liveness.
//!
//! Owns: giving every scratch buffer a byte offset such that buffers live at
//! the same time never overlap. A buffer is live from the first kernel that
//! touches it to the last; pinned buffers (read lazily as scalars) live to the
//! end; persistent buffers (sparse deduplication markers) live always. Invariant: offsets are 64-byte aligned and sized for `max_batch`.

use std::collections::HashSet;

use super::merge::Chain;
use super::{BufId, Buffer, Kernel, Loc};

/// The buffers kernel `k` reads or writes.
pub(super) fn touched(k: &Kernel) -> Vec<BufId> {
    let (mut out, writes) = k.reads_writes();
    out.extend(writes);
    out
}

/// A block to place: (size in bytes, first kernel, last kernel, its buffers
/// with their byte offsets in the block).
type Item = (u64, usize, usize, Vec<(usize, u64)>);

/// Assigns scratch offsets; returns the scratch size in bytes. Persistent
/// buffers are live for the whole function, across calls: nothing else ever
/// shares their bytes, so they keep their contents (zero at the start). The
/// buffers of a chain are placed back to back as one block, live while any
/// of them is.
pub fn assign_scratch(
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    pinned: &HashSet<BufId>,
    persistent: &HashSet<BufId>,
    chains: &[Chain],
    max_batch: u64,
) -> u64 {
    let n = buffers.len();
    let mut first = vec![usize::MAX; n];
    let mut last = vec![0usize; n];
    for (i, k) in kernels.iter().enumerate() {
        for b in touched(k) {
            let j = b.0 as usize;
            first[j] = first[j].min(i);
            last[j] = last[j].max(i);
        }
    }
    // Buffers no kernel touches (a tile tensor a fused Winograd kernel
    // keeps in its own scratch) take no bytes.
    let untouched: Vec<bool> = first.iter().map(|&f| f == usize::MAX).collect();
    for j in 0..n {
        if first[j] == usize::MAX {
            first[j] = 0;
        }
        if pinned.contains(&BufId(j as u32)) {
            last[j] = usize::MAX;
        }
        if persistent.contains(&BufId(j as u32)) {
            first[j] = 0;
            last[j] = usize::MAX;
        }
    }
    let mut in_chain = vec![false; n];
    let mut items: Vec<Item> = Vec::new();
    for c in chains {
        let members: Vec<(usize, u64)> = c
            .members
            .iter()
            .map(|&(b, off)| (b.0 as usize, off * 4))
            .collect();
        let f = members.iter().map(|m| first[m.0]).min().unwrap_or(0);
        let l = members.iter().map(|m| last[m.0]).max().unwrap_or(0);
        for m in &members {
            in_chain[m.0] = true;
        }
        items.push(((c.len * 4).div_ceil(64) * 64, f, l, members));
    }
    for j in 0..n {
        if matches!(buffers[j].loc, Loc::Scratch { .. }) && !in_chain[j] {
            let unused = untouched[j]
                && !pinned.contains(&BufId(j as u32))
                && !persistent.contains(&BufId(j as u32));
            let size = if unused {
                0
            } else {
                (buffers[j].shape.numel(max_batch) * 4).div_ceil(64) * 64
            };
            items.push((size, first[j], last[j], vec![(j, 0)]));
        }
    }
    items.sort_by_key(|it| (it.1, it.3[0].0));
    // (offset, size, first, last) of placed items
    let mut placed: Vec<(u64, u64, usize, usize)> = Vec::new();
    let mut total = 0u64;
    for (size, f, l, members) in items {
        // Items come in order of their first kernel: one that ended before
        // `f` overlaps nothing placed from now on.
        placed.retain(|p| f <= p.3);
        let mut live: Vec<(u64, u64)> = placed
            .iter()
            .filter(|p| p.2 <= l && f <= p.3)
            .map(|p| (p.0, p.0 + p.1))
            .collect();
        live.sort_unstable();
        let mut offset = 0u64;
        for (s, e) in live {
            if offset + size <= s {
                break;
            }
            offset = offset.max(e);
        }
        placed.push((offset, size, f, l));
        for (j, off) in members {
            buffers[j].loc = Loc::Scratch {
                offset: offset + off,
            };
        }
        total = total.max(offset + size);
    }
    total
}
