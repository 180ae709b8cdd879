//! The blocked driver: cache blocks, packing decisions and buffers.
//!
//! Owns the per-thread packing buffers ([`thread_buffers`], `A_CAP` and
//! `B_CAP` floats), the [`Plan`] (which operands are read in place, the
//! block sizes) and [`drive`], the BLIS-style loops of the module docs
//! around a [`Kernel`]'s tiles, for every group of a strided batch (one
//! product is a batch of one).
//!
//! Invariants: the k blocks are [`KBlocks`]'s whatever the plan, so packing
//! and blocking change only speed; the buffers are allocated once per
//! thread at full size and never resized (no allocation after a thread's
//! first call that packs).

use std::cell::RefCell;

use super::dispatch::{Batch, Problem};
use super::epilogue::apply_ep;
use super::kernel::{ASrc, BSrc, Beta, CTile, KBlocks, Kernel};
use super::KC_MAX;

/// Capacity of the packed-A buffer, in floats: 1056 rows of `KC_MAX`.
const A_CAP: usize = 1056 * KC_MAX;
/// Capacity of the packed-B buffer, in floats: 512 columns of `KC_MAX`.
pub(super) const B_CAP: usize = 512 * KC_MAX;

/// Packing buffers, 64-byte aligned.
struct Buffers {
    a: Vec<Align64>,
    b: Vec<Align64>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Align64([f32; 16]);

impl Buffers {
    fn new() -> Buffers {
        Buffers {
            a: vec![Align64([0.0; 16]); A_CAP / 16],
            b: vec![Align64([0.0; 16]); B_CAP / 16],
        }
    }

    fn ptrs(&mut self) -> (*mut f32, *mut f32) {
        (self.a.as_mut_ptr().cast(), self.b.as_mut_ptr().cast())
    }
}

thread_local! {
    static BUFFERS: RefCell<Option<Buffers>> = const { RefCell::new(None) };
}

/// This thread's packing buffers (`A_CAP` and `B_CAP` floats), allocated on
/// first use. They stay valid while the thread lives: they are never resized
/// or freed before thread exit, and `sgemm` never re-enters itself. `None`
/// while the thread-local storage is being destroyed.
fn thread_buffers() -> Option<(*mut f32, *mut f32)> {
    BUFFERS
        .try_with(|cell| {
            cell.try_borrow_mut()
                .ok()
                .map(|mut g| g.get_or_insert_with(Buffers::new).ptrs())
        })
        .ok()
        .flatten()
}

/// Which operands are read in place and the block sizes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub a_inplace: bool,
    pub b_inplace: bool,
    /// Rows of A packed at once (multiple of MR unless A is read in place).
    pub mcb: usize,
    /// Columns of B packed at once (multiple of NR unless in place).
    pub ncb: usize,
}

impl Plan {
    #[inline(always)]
    pub(crate) fn new(
        p: &Problem,
        mr: usize,
        nr: usize,
        kc: usize,
        b_block: usize,
        pack_narrow_b: bool,
    ) -> Plan {
        let row_tiles = p.m.div_ceil(mr);
        let col_tiles = p.n.div_ceil(nr);
        // B is read in place when its rows are unit-stride and the span it
        // covers is small (no cache-set or TLB conflicts), or when there is
        // little reuse of a packed copy.
        let b_span = p.rsb.unsigned_abs() * p.k;
        // A B narrower than one panel (n = 10) may be packed zero-padded
        // instead, so that every tile runs the unmasked k loop.
        let narrow = pack_narrow_b && p.n < nr && row_tiles >= 4;
        // A row-major B of contiguous rows at most two panels wide is read
        // as its packed copy would be (short rows: no set or TLB conflicts).
        let one_panel = p.csb == 1 && p.rsb == p.n as isize && p.n <= 2 * nr;
        let b_inplace =
            p.csb == 1 && (b_span <= 64 * 1024 || row_tiles <= 1 || one_panel) && !narrow;
        // A is read in place when each packed element would be used by few
        // column tiles (packing a row-major A is a transpose).
        let a_span = p.k * p.csa.unsigned_abs() + p.m;
        // A column-major A used by at most two column tiles is read in place
        // when its span is small, or when k is long against m (a
        // convolution's filter gradient, patches^T @ dY): packing would copy
        // every element to use it once or twice.
        let a_inplace = (p.csa == 1 && (col_tiles <= 8 || p.m * p.k <= 16 * 1024))
            || (p.rsa == 1 && (col_tiles <= 2 && (a_span <= 256 * 1024 || p.k >= 8 * p.m)));
        let mcb = if a_inplace {
            p.m
        } else {
            let max_rows = (A_CAP / kc) / mr * mr;
            let chunks = p.m.div_ceil(max_rows);
            p.m.div_ceil(chunks).div_ceil(mr) * mr
        };
        let ncb = if b_inplace {
            p.n
        } else {
            let max_cols = ((b_block.min(B_CAP) / kc) / nr).max(1) * nr;
            let chunks = p.n.div_ceil(max_cols);
            p.n.div_ceil(chunks).div_ceil(nr) * nr
        };
        Plan {
            a_inplace,
            b_inplace,
            mcb,
            ncb,
        }
    }
}

/// The blocked product with kernel `K` for every group of `batch`
/// (inlined into each ISA's entry point, so it is compiled with that ISA's
/// target features). The k blocks, the plan and the buffers depend on the
/// shape and strides only, so they are decided once for all the groups;
/// each group then runs [`drive_one`] exactly as a product of its own
/// would. An operand with group stride 0 that is packed in a single piece
/// (one k block, one cache block) is packed by the first group only: the
/// buffer still holds it for the later ones.
#[inline(always)]
pub(crate) unsafe fn drive<K: Kernel>(p: &Problem, batch: &Batch) {
    let (mr_max, nr_max) = (K::MR, K::NR);
    let kb = KBlocks::new(p.k);
    let plan = Plan::new(
        p,
        mr_max,
        nr_max,
        kb.max_len(),
        K::B_BLOCK,
        K::PACK_NARROW_B,
    );
    let needs_a_buf = !plan.a_inplace || (p.csa != 1 && !p.m.is_multiple_of(mr_max));
    let mut local = None;
    let bufs = if needs_a_buf || !plan.b_inplace {
        match thread_buffers() {
            Some(ptrs) => ptrs,
            None => local.insert(Buffers::new()).ptrs(),
        }
    } else {
        (core::ptr::null_mut(), core::ptr::null_mut())
    };
    let single = kb.nb == 1;
    let share_a = batch.a == 0 && !plan.a_inplace && single && plan.mcb >= p.m;
    let share_b = batch.b == 0 && !plan.b_inplace && single && plan.ncb >= p.n;
    for g in 0..batch.count {
        let pack = Packs {
            a: !(share_a && g > 0),
            b: !(share_b && g > 0),
        };
        drive_one::<K>(&p.group(g, batch), &plan, kb, bufs, pack);
    }
}

/// Which packed operands a product packs (false: the buffer already holds
/// them, packed by an earlier group of the batch).
#[derive(Clone, Copy)]
struct Packs {
    a: bool,
    b: bool,
}

/// One product with kernel `K`: the loops of the module docs, under `plan`,
/// packing into `(abuf, bbuf)`.
#[inline(always)]
unsafe fn drive_one<K: Kernel>(
    p: &Problem,
    plan: &Plan,
    kb: KBlocks,
    (abuf, bbuf): (*mut f32, *mut f32),
    pack: Packs,
) {
    let (mr_max, nr_max) = (K::MR, K::NR);
    let at = |i: usize, pk: usize| p.a.offset(i as isize * p.rsa + pk as isize * p.csa);
    let bt = |pk: usize, j: usize| p.b.offset(pk as isize * p.rsb + j as isize * p.csb);
    for t in 0..kb.nb {
        let (pc, kc) = kb.block(t);
        let beta = if t == 0 {
            Beta::first(p.beta)
        } else {
            Beta::One
        };
        for ic in (0..p.m).step_by(plan.mcb) {
            let mcb = plan.mcb.min(p.m - ic);
            if !plan.a_inplace && pack.a {
                K::pack_a(kc, mcb, at(ic, pc), p.rsa, p.csa, abuf);
            }
            for jc in (0..p.n).step_by(plan.ncb) {
                let ncb = plan.ncb.min(p.n - jc);
                if !plan.b_inplace && pack.b {
                    K::pack_b(kc, ncb, bt(pc, jc), p.rsb, p.csb, bbuf);
                }
                // An in-place column-major A cannot be read past its last
                // row: its edge panel is packed once, up front.
                let edge = mcb - mcb % mr_max;
                if plan.a_inplace && p.csa != 1 && edge < mcb {
                    K::pack_a(kc, mcb - edge, at(ic + edge, pc), p.rsa, p.csa, abuf);
                }
                let a_src = |ir: usize| {
                    if !plan.a_inplace {
                        ASrc::Panel {
                            ptr: abuf.add(ir * kc),
                            ld: mr_max as isize,
                        }
                    } else if p.csa == 1 {
                        ASrc::Rows {
                            ptr: at(ic + ir, pc),
                            rs: p.rsa,
                            rows: mr_max.min(mcb - ir),
                        }
                    } else if ir < edge {
                        ASrc::Panel {
                            ptr: at(ic + ir, pc),
                            ld: p.csa,
                        }
                    } else {
                        ASrc::Panel {
                            ptr: abuf,
                            ld: mr_max as isize,
                        }
                    }
                };
                let b_src = |jr: usize| {
                    if plan.b_inplace {
                        BSrc {
                            ptr: bt(pc, jc + jr),
                            ld: p.rsb,
                            valid: nr_max.min(ncb - jr),
                        }
                    } else {
                        BSrc {
                            ptr: bbuf.add(jr * kc),
                            ld: nr_max as isize,
                            valid: nr_max,
                        }
                    }
                };
                let c_tile = |ir: usize, jr: usize| CTile {
                    ptr: p
                        .c
                        .offset((ic + ir) as isize * p.rsc + (jc + jr) as isize * p.csc),
                    rs: p.rsc,
                    cs: p.csc,
                    mr: mr_max.min(mcb - ir),
                    nr: nr_max.min(ncb - jr),
                };
                // The A micro-panel stays in L1 across a row of tiles while
                // B micro-panels stream from L2 (faster here than the
                // opposite order).
                for ir in (0..mcb).step_by(mr_max) {
                    let a = a_src(ir);
                    for jr in (0..ncb).step_by(nr_max) {
                        K::tile(kc, a, b_src(jr), c_tile(ir, jr), p.alpha, beta);
                    }
                }
                // The epilogue over the block of C just finished (at most
                // ~1056 x 512 floats, mostly still in cache), after its
                // last k block: long rows vectorize better than one tile's.
                if t + 1 == kb.nb {
                    if let Some(ep) = &p.ep {
                        let block = CTile {
                            ptr: c_tile(0, 0).ptr,
                            rs: p.rsc,
                            cs: p.csc,
                            mr: mcb,
                            nr: ncb,
                        };
                        apply_ep(ep, block, ic, jc);
                    }
                }
            }
        }
    }
}
