//! The loop nest a loop kernel runs as, and where two threads cut a split
//! kernel.
//!
//! Owns: a loop kernel's memory accesses ([`LoopKernel::accesses`]: loads,
//! stores, reduction destinations, each with a stride per domain axis), its
//! levels ([`LoopKernel::nest`]: the domain with dimensions of size 1
//! dropped and adjacent dimensions merged where every access walks them
//! contiguously), and [`Cut`]: where the two threads of a split kernel
//! divide a loop level or a GEMM dimension ([`Nest::split`],
//! [`gemm_split`]).
//!
//! Invariants: codegen emits exactly these levels and these cuts, and the
//! barrier analysis (`plan::threads`) reasons about the same ones, so what
//! it proves about the threads' parts holds for the code. Equal `Cut`s put
//! the boundary at the same index for every batch size.

use super::{Lin, LoopKernel, Source, View};
use crate::ir::Dim;

/// `a * b`, or `None` when it would need `B * B`.
pub fn lin_mul(a: Lin, b: Lin) -> Option<Lin> {
    if a.b == 0 {
        Some(Lin {
            c: a.c * b.c,
            b: a.c * b.b,
        })
    } else if b.b == 0 {
        Some(Lin {
            c: a.c * b.c,
            b: a.b * b.c,
        })
    } else {
        None
    }
}

/// What a loop kernel's access does to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A `Source::Load`.
    Load,
    Store,
    /// A reduction's destination: read back and written.
    Accumulate,
}

/// One memory access of a loop kernel: its view and its stride (elements)
/// per domain axis (a reduction destination's are 0 on reduced axes).
#[derive(Clone, Debug)]
pub struct Access<'k> {
    pub kind: AccessKind,
    pub view: &'k View,
    pub strides: Vec<Lin>,
}

/// A loop level after collapsing: its size, whether it is reduced, its
/// domain axes (outer to inner).
#[derive(Clone, Debug)]
pub struct Level {
    pub size: Lin,
    pub reduced: bool,
    pub axes: Vec<usize>,
}

/// The levels of a loop kernel and each access's stride per level.
#[derive(Clone, Debug)]
pub struct Nest {
    pub levels: Vec<Level>,
    /// `strides[access][level]`, accesses in [`LoopKernel::accesses`] order.
    pub strides: Vec<Vec<Lin>>,
}

/// The boundary between the parts of a split kernel: thread 0 takes
/// `[0, cut)` of a loop level or GEMM dimension of `size`, thread 1
/// `[cut, size)`, where `cut = round_down(size / 2, align)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub size: Lin,
    pub align: i64,
}

impl Cut {
    /// Where the cut falls at `batch`.
    pub fn at(&self, batch: i64) -> i64 {
        let half = self.size.eval(batch) / 2;
        half - half.rem_euclid(self.align)
    }
}

/// The rows of a batch, however they are laid out (a loop level over the
/// batch, a GEMM's `m = B`), are cut at a multiple of 8: the same boundary
/// for a product and the loops that read its rows, so those need no
/// barrier between them.
const ROW_ALIGN: i64 = 8;
/// An innermost level is cut at whole vectors (4 lanes, unrolled 4 times).
const INNER_ALIGN: i64 = 16;

impl Nest {
    /// The split of a `Mode::Split` loop: its first kept level, cut at
    /// whole vectors when it is the innermost, at a multiple of 8 when its
    /// size depends on the batch, else anywhere. `None` when every level
    /// is reduced (the kernel then runs on thread 0).
    pub fn split(&self) -> Option<(usize, Cut)> {
        let l = self.levels.iter().position(|l| !l.reduced)?;
        let size = self.levels[l].size;
        let align = if l + 1 == self.levels.len() {
            INNER_ALIGN
        } else if size.b != 0 {
            ROW_ALIGN
        } else {
            1
        };
        Some((l, Cut { size, align }))
    }
}

/// How two threads share a GEMM: by blocks of C's columns or of its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmSplit {
    Columns(Cut),
    Rows(Cut),
}

/// Columns when `n` is wide and not much narrower than `m`, else rows (a
/// convolution's tall products, `m = B·OH·OW`, split by rows so each
/// thread packs only its half of A). A product whose rows the next loops
/// read stays split by columns when `n` is wide: split by rows, W1's
/// 64×64×128 halves ran 3-4 % slower as a whole step than the barrier it
/// saved (AVX2, Zen 5; a 32-row half pads to 36 rows of 6-row tiles).
pub fn gemm_split(m: Lin, n: Lin, max_batch: i64) -> GemmSplit {
    let tall = m.eval(max_batch) > 2 * n.c;
    if n.b == 0 && n.c >= 64 && !tall {
        GemmSplit::Columns(Cut {
            size: n,
            align: INNER_ALIGN,
        })
    } else {
        GemmSplit::Rows(Cut {
            size: m,
            align: ROW_ALIGN,
        })
    }
}

impl LoopKernel {
    /// The kernel's memory accesses: loads (in `sources` order), stores,
    /// then the destinations of the reductions that have one.
    pub fn accesses(&self) -> Vec<Access<'_>> {
        let rank = self.domain.rank();
        let kept: Vec<usize> = (0..rank)
            .filter(|a| !self.reduce_axes.contains(a))
            .collect();
        let mut out = Vec::new();
        for (_, s) in &self.sources {
            if let Source::Load(v, _) = s {
                out.push(Access {
                    kind: AccessKind::Load,
                    view: v,
                    strides: v.strides.clone(),
                });
            }
        }
        for (_, v) in &self.stores {
            out.push(Access {
                kind: AccessKind::Store,
                view: v,
                strides: v.strides.clone(),
            });
        }
        for r in &self.reductions {
            if let Some(v) = &r.dest {
                let mut strides = vec![Lin::ZERO; rank];
                for (i, &ax) in kept.iter().enumerate() {
                    strides[ax] = v.strides[i];
                }
                out.push(Access {
                    kind: AccessKind::Accumulate,
                    view: v,
                    strides,
                });
            }
        }
        out
    }

    /// The domain axes an `iota` source numbers (a level boundary: they
    /// are never merged).
    pub fn iota_axes(&self) -> Vec<usize> {
        self.sources
            .iter()
            .filter_map(|(_, s)| match s {
                Source::Iota { axis } => Some(*axis),
                _ => None,
            })
            .collect()
    }

    /// The levels the kernel runs as, with the strides of its
    /// [`accesses`](Self::accesses) per level.
    pub fn nest(&self) -> Nest {
        let strides: Vec<Vec<Lin>> = self.accesses().into_iter().map(|a| a.strides).collect();
        collapse(
            &self.domain.0,
            &self.reduce_axes,
            &strides,
            &self.iota_axes(),
        )
    }
}

/// Drops the dimensions of size 1, then merges each level into the next
/// inner one while both are kept or both reduced, neither is numbered by an
/// iota, and every access's outer stride is its inner stride times the
/// inner size.
fn collapse(
    domain: &[Dim],
    reduce_axes: &[usize],
    accesses: &[Vec<Lin>],
    iota_axes: &[usize],
) -> Nest {
    let mut levels = Vec::new();
    let mut strides: Vec<Vec<Lin>> = vec![Vec::new(); accesses.len()];
    for (ax, d) in domain.iter().enumerate() {
        if *d == Dim::Fixed(1) {
            continue;
        }
        levels.push(Level {
            size: Lin::of_dim(*d),
            reduced: reduce_axes.contains(&ax),
            axes: vec![ax],
        });
        for (a, acc) in accesses.iter().enumerate() {
            strides[a].push(acc[ax]);
        }
    }
    let mut i = levels.len().saturating_sub(1);
    while i > 0 {
        let (outer, inner) = (i - 1, i);
        let numbered = levels[outer]
            .axes
            .iter()
            .chain(&levels[inner].axes)
            .any(|a| iota_axes.contains(a));
        let mergeable = !numbered
            && levels[outer].reduced == levels[inner].reduced
            && strides
                .iter()
                .all(|s| lin_mul(s[inner], levels[inner].size) == Some(s[outer]));
        if mergeable {
            if let Some(size) = lin_mul(levels[outer].size, levels[inner].size) {
                let mut axes = levels[outer].axes.clone();
                axes.extend(levels[inner].axes.clone());
                levels[inner] = Level {
                    size,
                    reduced: levels[inner].reduced,
                    axes,
                };
                levels.remove(outer);
                for s in strides.iter_mut() {
                    s.remove(outer);
                }
            }
        }
        i -= 1;
    }
    Nest { levels, strides }
}
