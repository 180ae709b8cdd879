//! Scratch memory: offsets and lifetimes.
//!
//! Of the scratch chains (`plan::merge`), checked by [`chains`] with the
//! kernels (after `plan::merge` and every later rewrite), and of the
//! scratch offsets (`plan::memory`, `plan::winofuse`), checked by
//! [`scratch`]:
//!
//! | invariant | what holds |
//! |---|---|
//! | `scratch-chains` | a chain's members are scratch buffers, each in one chain only and once, the first at element 0, each inside the chain's span; once offsets are assigned, each lies at its element offset from the first (the merged loop reads them all through the first) |
//! | `scratch-offsets` | scratch buffers start on 64-byte boundaries, and every scratch byte a kernel touches is below `scratch_bytes` |
//! | `scratch-lifetimes` | two scratch buffers (a chain of `plan::merge` counts as one block) live at the same kernel share no byte; a buffer lives from the first kernel that touches it to the last, to the end when read lazily as a scalar, always when it is a persistent marker table |
//! | `winograd-scratch` | a fused Winograd kernel's per-thread block tiles and second accumulator lie in scratch and share no byte with a buffer live at that kernel |

use std::collections::{HashMap, HashSet};

use super::super::{broken, require, Verdict};
use super::access::{accesses, reach_at};
use super::order::persistent;
use super::Parts;
use crate::plan::{BufId, Kernel, Loc, Plan};

/// A block of scratch bytes live over a span of kernels.
#[derive(Clone, Debug)]
struct Block {
    what: String,
    lo: i128,
    hi: i128,
    first: usize,
    last: usize,
}

/// `scratch-chains` of `p`'s chains, except where they lie (see
/// [`scratch`]).
pub fn chains(p: &Parts) -> Verdict {
    let mut seen: HashMap<BufId, usize> = HashMap::new();
    for (c, chain) in p.chains.iter().enumerate() {
        require(
            chain.members.first().is_some_and(|m| m.1 == 0),
            "scratch-chains",
            || format!("chain {c} does not start at element 0: {:?}", chain.members),
        )?;
        for &(b, off) in &chain.members {
            require((b.0 as usize) < p.buffers.len(), "scratch-chains", || {
                format!("chain {c} names {b}, of {} buffers", p.buffers.len())
            })?;
            let buf = p.buffer(b);
            require(
                matches!(buf.loc, Loc::Scratch { .. }),
                "scratch-chains",
                || format!("chain {c}'s {b} ({}) is at {:?}", buf.node, buf.loc),
            )?;
            let n = buf.shape.fixed_numel();
            require(
                !buf.shape.has_batch() && off + n <= chain.len,
                "scratch-chains",
                || {
                    format!(
                        "chain {c}'s {b} ({}, {}) at element {off} of {}",
                        buf.node, buf.shape, chain.len
                    )
                },
            )?;
            if let Some(d) = seen.insert(b, c) {
                return Err(broken(
                    "scratch-chains",
                    if d == c {
                        format!("{b} ({}) is twice in chain {c}", buf.node)
                    } else {
                        format!("{b} ({}) is in chains {d} and {c}", buf.node)
                    },
                ));
            }
        }
    }
    Ok(())
}

/// `scratch-offsets`, `scratch-chains` (where the members lie),
/// `scratch-lifetimes` and `winograd-scratch` of plan `pl`.
pub fn scratch(p: &Parts, pl: &Plan) -> Verdict {
    chains(p)?;
    for (c, chain) in p.chains.iter().enumerate() {
        let at = |b: BufId| match p.buffer(b).loc {
            Loc::Scratch { offset } => offset,
            _ => unreachable!("checked by `chains`"),
        };
        let base = at(chain.members[0].0);
        for &(b, off) in &chain.members {
            require(at(b) == base + 4 * off, "scratch-chains", || {
                format!(
                    "chain {c}'s {b} ({}) at byte {}, not {} (element {off} from byte {base})",
                    p.buffer(b).node,
                    at(b),
                    base + 4 * off
                )
            })?;
        }
    }
    let m = p.max_batch.max(1) as i64;
    let end = p.kernels.len();
    let persistent = persistent(p);
    let pinned: HashSet<BufId> = pl.scalar_loads.values().map(|(v, _)| v.buf).collect();
    // Each scratch buffer's footprint (bytes) and live kernels.
    let mut touch: HashMap<BufId, (usize, usize, i128, i128)> = HashMap::new();
    for (i, k) in p.kernels.iter().enumerate() {
        for a in accesses(p, k) {
            let b = a.view.buf;
            let Loc::Scratch { offset } = p.buffer(b).loc else {
                continue;
            };
            let o = i128::from(offset);
            let e = touch.entry(b).or_insert((i, i, i128::MAX, i128::MIN));
            e.1 = i;
            for batch in [1, m] {
                if let Some((lo, hi)) = reach_at(&a, batch) {
                    e.2 = e.2.min(o + 4 * lo);
                    e.3 = e.3.max(o + 4 * hi);
                }
            }
        }
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut chained: HashMap<BufId, usize> = HashMap::new();
    for (c, chain) in p.chains.iter().enumerate() {
        for &(b, _) in &chain.members {
            chained.insert(b, c);
        }
    }
    let mut chain_blocks: Vec<Option<Block>> = vec![None; p.chains.len()];
    for (j, buf) in p.buffers.iter().enumerate() {
        let b = BufId(j as u32);
        let Loc::Scratch { offset } = buf.loc else {
            continue;
        };
        let lives = touch.get(&b).copied();
        let used = lives.is_some() || pinned.contains(&b) || persistent.contains(&b);
        if !used {
            continue;
        }
        let size = (i128::from(buf.shape.numel(p.max_batch)) * 4 + 63) / 64 * 64;
        require(offset % 64 == 0, "scratch-offsets", || {
            format!("{b} ({}) at byte {offset}", buf.node)
        })?;
        let o = i128::from(offset);
        let (mut first, mut last, lo, hi) = match lives {
            Some((f, l, lo, hi)) => (f, l, lo.min(o), hi.max(o + size)),
            None => (0, 0, o, o + size),
        };
        if pinned.contains(&b) {
            last = end;
        }
        if persistent.contains(&b) {
            first = 0;
            last = end;
        }
        require(
            lo >= 0 && hi <= i128::from(pl.scratch_bytes),
            "scratch-offsets",
            || {
                format!(
                    "{b} ({}) reaches bytes [{lo}, {hi}) of {} scratch bytes",
                    buf.node, pl.scratch_bytes
                )
            },
        )?;
        let block = Block {
            what: format!("{b} ({})", buf.node),
            lo,
            hi,
            first,
            last,
        };
        match chained.get(&b) {
            Some(&c) => {
                let joined = match chain_blocks[c].take() {
                    Some(x) => Block {
                        what: x.what,
                        lo: x.lo.min(block.lo),
                        hi: x.hi.max(block.hi),
                        first: x.first.min(block.first),
                        last: x.last.max(block.last),
                    },
                    None => Block {
                        what: format!("the chain of {b}"),
                        ..block
                    },
                };
                chain_blocks[c] = Some(joined);
            }
            None => blocks.push(block),
        }
    }
    blocks.extend(chain_blocks.into_iter().flatten());
    for (i, k) in p.kernels.iter().enumerate() {
        if let Kernel::Winograd(w) = k {
            let tiles = i128::from(w.block_bytes()) * i128::from(pl.threads.max(1));
            for (what, lo, len) in [
                ("block tiles", w.scratch, tiles),
                ("second accumulator", w.acc, i128::from(w.acc_bytes())),
            ] {
                if len == 0 {
                    continue;
                }
                let (lo, hi) = (i128::from(lo), i128::from(lo) + len);
                require(
                    hi <= i128::from(pl.scratch_bytes),
                    "winograd-scratch",
                    || format!("k{i}'s {what} reach byte {hi} of {}", pl.scratch_bytes),
                )?;
                if let Some(x) = blocks
                    .iter()
                    .find(|x| x.first <= i && i <= x.last && x.lo < hi && lo < x.hi)
                {
                    return Err(broken(
                        "winograd-scratch",
                        format!(
                            "k{i}'s {what} [{lo}, {hi}) share bytes with {} [{}, {})",
                            x.what, x.lo, x.hi
                        ),
                    ));
                }
            }
        }
    }
    // Blocks by first kernel; each against the earlier ones still live.
    blocks.sort_by_key(|x| (x.first, x.lo));
    let mut live: Vec<&Block> = Vec::new();
    for x in &blocks {
        live.retain(|y| y.last >= x.first);
        if let Some(y) = live
            .iter()
            .find(|y| y.lo < x.hi && x.lo < y.hi && x.hi > x.lo && y.hi > y.lo)
        {
            return Err(broken(
                "scratch-lifetimes",
                format!(
                    "{} (bytes [{}, {}), kernels {}..={}) and {} (bytes [{}, {}), kernels {}..={})",
                    y.what, y.lo, y.hi, y.first, y.last, x.what, x.lo, x.hi, x.first, x.last
                ),
            ));
        }
        live.push(x);
    }
    Ok(())
}
