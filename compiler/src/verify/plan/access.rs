//! What each kernel reads and writes, view by view, and the bounds check.
//!
//! Owns: [`accesses`] (every view a kernel indexes, over which dimensions,
//! read or written: the one description of a kernel's memory the checks
//! share), and the arithmetic of what a view reaches as a function of the
//! batch size: offsets, strides and dimensions are linear in `B`, so a
//! reach is a quadratic in `B`, and its distance to the buffer's end is
//! smallest at `B = 1`, at the largest batch, or at the vertex.
//!
//! | invariant | what holds |
//! |---|---|
//! | `accesses-in-bounds` | every element a kernel reads or writes lies inside its view's buffer, for every batch size from 1 to the plan's largest (a merged update run: inside its arena, or its scratch chain) |

use super::super::{broken, Verdict};
use super::Parts;
use crate::ir::{Dim, Shape};
use crate::plan::{BufId, Kernel, Lin, Loc, RowOp, Source, View};

/// How a kernel uses a view.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Use {
    Read,
    Write,
    ReadWrite,
}

impl Use {
    pub(super) fn reads(self) -> bool {
        self != Use::Write
    }
    pub(super) fn writes(self) -> bool {
        self != Use::Read
    }
}

/// One view a kernel indexes, over `dims` with `strides` (one per dim; a
/// row-major run of elements from the view's offset is one dim of stride 1).
pub(super) struct Access<'k> {
    pub view: &'k View,
    pub strides: Vec<Lin>,
    pub dims: Vec<Lin>,
    pub usage: Use,
    pub what: &'static str,
}

pub(super) fn dims_of(s: &Shape) -> Vec<Lin> {
    s.0.iter().map(|&d| Lin::of_dim(d)).collect()
}

pub(super) fn access<'k>(
    view: &'k View,
    dims: Vec<Lin>,
    usage: Use,
    what: &'static str,
) -> Access<'k> {
    Access {
        view,
        strides: view.strides.clone(),
        dims,
        usage,
        what,
    }
}

pub(super) fn numel(s: &Shape) -> Lin {
    crate::plan::view::numel(s).unwrap_or(Lin {
        c: i64::MAX / 4,
        b: 0,
    })
}

/// Every access of kernel `k`, after [`views_address_buffers`] held.
pub(super) fn accesses<'k>(p: &Parts, k: &'k Kernel) -> Vec<Access<'k>> {
    let g = p.g;
    let mut out = Vec::new();
    match k {
        Kernel::Loop(l) => {
            let dims = dims_of(&l.domain);
            let kept: Vec<usize> = (0..l.domain.rank())
                .filter(|a| !l.reduce_axes.contains(a))
                .collect();
            for (_, s) in &l.sources {
                if let Source::Load(v, _) = s {
                    out.push(access(v, dims.clone(), Use::Read, "a load"));
                }
            }
            for (_, v) in &l.stores {
                out.push(access(v, dims.clone(), Use::Write, "a store"));
            }
            for r in &l.reductions {
                if let Some(v) = &r.dest {
                    let d = kept.iter().map(|&a| dims[a]).collect();
                    out.push(access(v, d, Use::Write, "a reduction's destination"));
                }
            }
        }
        Kernel::Gemm {
            a,
            b,
            c,
            ta,
            tb,
            m,
            k: kk,
            n,
            groups,
            epilogue,
            ..
        } => {
            let grouped = |v: &'k View, d: [Lin; 2], stride: Option<Lin>, usage, what| {
                let mut x = access(v, d.to_vec(), usage, what);
                if let (Some(gr), Some(s)) = (groups, stride) {
                    x.dims.insert(0, gr.count);
                    x.strides.insert(0, s);
                }
                x
            };
            let (gs_a, gs_b, gs_c) = match groups {
                Some(gr) => (Some(gr.a), Some(gr.b), Some(gr.c)),
                None => (None, None, None),
            };
            let da = if *ta { [*kk, *m] } else { [*m, *kk] };
            let db = if *tb { [*n, *kk] } else { [*kk, *n] };
            out.push(grouped(a, da, gs_a, Use::Read, "a GEMM's A"));
            out.push(grouped(b, db, gs_b, Use::Read, "a GEMM's B"));
            out.push(grouped(c, [*m, *n], gs_c, Use::Write, "a GEMM's C"));
            if let Some(bias) = epilogue.as_ref().and_then(|e| e.bias.as_ref()) {
                out.push(access(bias, vec![*m, *n], Use::Read, "a GEMM's bias"));
            }
        }
        Kernel::ArgMax {
            src,
            shape,
            axis,
            dst,
            ..
        } => {
            out.push(access(src, dims_of(shape), Use::Read, "an argmax's input"));
            let kept = crate::ir::shape::reduce(shape, &[*axis]);
            out.push(access(
                dst,
                dims_of(&kept),
                Use::Write,
                "an argmax's result",
            ));
        }
        Kernel::Recurrence(r) => {
            for (v, &x) in r.inputs.iter().zip(g.inputs_of(r.node)) {
                out.push(access(
                    v,
                    dims_of(g.shape(x)),
                    Use::Read,
                    "a recurrence's input",
                ));
            }
            out.push(access(
                &r.dst,
                dims_of(g.shape(r.node)),
                Use::Write,
                "a recurrence's tape",
            ));
        }
        Kernel::Window(w) => {
            let x = g.inputs_of(w.node)[0];
            out.push(access(
                &w.src,
                dims_of(g.shape(x)),
                Use::Read,
                "a window's input",
            ));
            out.push(access(
                &w.dst,
                dims_of(g.shape(w.node)),
                Use::Write,
                "a window's output",
            ));
        }
        Kernel::Rows(r) => {
            let ins = g.inputs_of(r.node);
            let shape = |i: usize| dims_of(g.shape(ins[i]));
            let node = dims_of(g.shape(r.node));
            let (ids, src, first, dst_use) = match r.op {
                RowOp::Gather => (shape(1), Some((shape(0), Use::Read)), None, Use::Write),
                RowOp::ScatterAdd => (shape(1), Some((shape(2), Use::Read)), None, Use::ReadWrite),
                RowOp::ScatterRows => (
                    shape(1),
                    Some((shape(3), Use::Read)),
                    Some(shape(2)),
                    Use::ReadWrite,
                ),
                RowOp::FirstOccurrence | RowOp::FirstOccurrenceHashed { .. } => {
                    let marker = r.src.as_ref().map(|v| dims_of(&p.buffer(v.buf).shape));
                    (
                        shape(0),
                        marker.map(|d| (d, Use::ReadWrite)),
                        None,
                        Use::Write,
                    )
                }
                RowOp::SumDuplicates => (
                    shape(1),
                    Some((shape(0), Use::Read)),
                    Some(shape(1)),
                    Use::Write,
                ),
            };
            out.push(access(&r.ids, ids, Use::Read, "a row kernel's ids"));
            if let (Some(v), Some((d, u))) = (&r.src, src) {
                out.push(access(v, d, u, "a row kernel's source"));
            }
            if let (Some(v), Some(d)) = (&r.first, first) {
                out.push(access(v, d, Use::Read, "a row kernel's first occurrences"));
            }
            out.push(access(&r.dst, node, dst_use, "a row kernel's destination"));
        }
        Kernel::Winograd(w) => {
            let win = &w.window;
            let n = w.images;
            let fixed = |d: &[u32]| d.iter().map(|&x| Dim::Fixed(x)).collect::<Vec<_>>();
            let images = |hw: [u32; 2], c: u32| {
                let mut s = vec![Dim::Fixed(1)];
                s.extend(fixed(&[hw[0], hw[1], c]));
                (Shape(s), n)
            };
            let (c, o) = (win.channels, w.out_channels);
            let [th, tw] = win.winograd_tiles(w.tile);
            let groups = w.tile.groups();
            // (view, per-image shape, images, use, what)
            let parts = [
                (
                    Some(&w.x),
                    images(win.input, c),
                    Use::Read,
                    "a Winograd kernel's x",
                ),
                (
                    w.u.as_ref(),
                    (Shape::fixed(&[groups, c, o]), Lin::constant(1)),
                    Use::Read,
                    "a Winograd kernel's U",
                ),
                (
                    w.y.as_ref(),
                    images(win.output, o),
                    Use::Write,
                    "a Winograd kernel's y",
                ),
                (
                    w.v.as_ref(),
                    (Shape::fixed(&[groups, th, tw, c]), n),
                    Use::Write,
                    "a Winograd kernel's V",
                ),
                (
                    w.dy.as_ref(),
                    images(win.output, o),
                    Use::Read,
                    "a Winograd kernel's dy",
                ),
                (
                    w.dx.as_ref(),
                    images(win.input, c),
                    Use::Write,
                    "a Winograd kernel's dx",
                ),
                (
                    w.du.as_ref(),
                    (Shape::fixed(&[groups, c, o]), Lin::constant(1)),
                    Use::Write,
                    "a Winograd kernel's dU",
                ),
            ];
            for (v, (shape, count), usage, what) in parts {
                if let Some(v) = v {
                    let per = numel(&shape);
                    let total = Lin {
                        c: per.c * count.c,
                        b: per.c * count.b,
                    };
                    out.push(Access {
                        view: v,
                        strides: vec![Lin::constant(1)],
                        dims: vec![total],
                        usage,
                        what,
                    });
                }
            }
        }
    }
    out
}

/// The buffers a kernel reads and writes, by [`accesses`].
pub(super) fn reads_writes(p: &Parts, k: &Kernel) -> (Vec<BufId>, Vec<BufId>) {
    let mut r = Vec::new();
    let mut w = Vec::new();
    for a in accesses(p, k) {
        if a.usage.reads() {
            r.push(a.view.buf);
        }
        if a.usage.writes() {
            w.push(a.view.buf);
        }
    }
    (r, w)
}

/// `c0 + c1·B + c2·B²`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Quad([i128; 3]);

impl Quad {
    fn lin(l: Lin) -> Quad {
        Quad([i128::from(l.c), i128::from(l.b), 0])
    }
    fn mul(a: Lin, b: Lin) -> Quad {
        let (a0, a1, b0, b1) = (
            i128::from(a.c),
            i128::from(a.b),
            i128::from(b.c),
            i128::from(b.b),
        );
        Quad([a0 * b0, a0 * b1 + a1 * b0, a1 * b1])
    }
    fn add(self, o: Quad) -> Quad {
        Quad([self.0[0] + o.0[0], self.0[1] + o.0[1], self.0[2] + o.0[2]])
    }
    fn neg(self) -> Quad {
        Quad([-self.0[0], -self.0[1], -self.0[2]])
    }
    fn eval(self, b: i64) -> i128 {
        let b = i128::from(b);
        self.0[0] + self.0[1] * b + self.0[2] * b * b
    }
    /// The batch size in `1..=m` where the quadratic is smallest, and its value.
    fn min_over(self, m: i64) -> (i64, i128) {
        let mut candidates = vec![1, m];
        if self.0[2] > 0 {
            let v = -self.0[1] / (2 * self.0[2]);
            for c in [v - 1, v, v + 1] {
                if (1..=i128::from(m)).contains(&c) {
                    candidates.push(c as i64);
                }
            }
        }
        candidates
            .into_iter()
            .map(|b| (b, self.eval(b)))
            .min_by_key(|&(_, v)| v)
            .expect("candidates")
    }
}

/// The polynomial `l1 · l2` equals `l3` at every batch size.
pub(super) fn same_count(l1: Lin, l2: Lin, l3: Lin) -> bool {
    let q = Quad::mul(l1, l2).add(Quad::lin(l3).neg());
    (1..=3).all(|b| q.eval(b) == 0)
}

/// What `a` reaches, in elements from its buffer's start: `(lo, hi)` with
/// `hi` exclusive, as quadratics in the batch size (`None`: it reaches
/// nothing at some batch size, or a stride changes sign between 1 and
/// `m`; then [`in_bounds`] evaluates batch by batch).
pub(super) fn reach(a: &Access, m: i64) -> Option<(Quad, Quad)> {
    let mut lo = Quad::lin(a.view.offset);
    let mut hi = lo.add(Quad([1, 0, 0]));
    for (&d, &s) in a.dims.iter().zip(&a.strides) {
        if d.eval(1) < 1 || d.eval(m) < 1 {
            return None;
        }
        let t = Quad::mul(Lin { c: d.c - 1, b: d.b }, s);
        match (t.eval(1) >= 0, t.eval(m) >= 0) {
            (true, true) => hi = hi.add(t),
            (false, false) => lo = lo.add(t),
            _ => return None,
        }
    }
    Some((lo, hi))
}

/// `(lo, hi)` of `a` at batch `b`, or `None` when it reaches nothing.
pub(super) fn reach_at(a: &Access, b: i64) -> Option<(i128, i128)> {
    let mut lo = i128::from(a.view.offset.eval(b));
    let mut hi = lo + 1;
    for (&d, &s) in a.dims.iter().zip(&a.strides) {
        let d = i128::from(d.eval(b));
        if d < 1 {
            return None;
        }
        let t = (d - 1) * i128::from(s.eval(b));
        if t < 0 {
            lo += t;
        } else {
            hi += t;
        }
    }
    Some((lo, hi))
}

/// Whether `a` stays in `[lo, hi)` (elements from its buffer's start) at
/// every batch size in `1..=m`; `Err((batch, reached lo, reached hi))`.
pub(super) fn in_bounds(a: &Access, m: i64, lo: Lin, hi: Lin) -> Result<(), (i64, i128, i128)> {
    if let Some((rlo, rhi)) = reach(a, m) {
        let below = rlo.add(Quad::lin(lo).neg());
        let above = Quad::lin(hi).add(rhi.neg());
        for slack in [below, above] {
            let (b, v) = slack.min_over(m);
            if v < 0 {
                let (l, h) = reach_at(a, b).unwrap_or((0, 0));
                return Err((b, l, h));
            }
        }
        return Ok(());
    }
    // A stride that changes sign, or an empty dimension: batch by batch
    // (bounded; such views do not occur in practice).
    for b in 1..=m.min(1 << 16) {
        if let Some((l, h)) = reach_at(a, b) {
            if l < i128::from(lo.eval(b)) || h > i128::from(hi.eval(b)) {
                return Err((b, l, h));
            }
        }
    }
    Ok(())
}

/// `accesses-in-bounds` for kernel `k` (`merged`: a merged update run).
pub(super) fn bounds(p: &Parts, k: &Kernel, merged: bool) -> Verdict {
    let m = p.max_batch.max(1) as i64;
    for a in accesses(p, k) {
        let b = a.view.buf;
        let buf = p.buffer(b);
        let (lo, hi) = if merged {
            match buf.loc {
                Loc::Arena { arena, offset } => {
                    let len = p
                        .place
                        .layout
                        .arenas
                        .get(arena as usize)
                        .map_or(0, |a| a.len);
                    (
                        Lin::constant(-(offset as i64)),
                        Lin::constant(len as i64 - offset as i64),
                    )
                }
                Loc::Scratch { .. } => match p
                    .chains
                    .iter()
                    .find(|c| c.members.first().map(|m| m.0) == Some(b))
                {
                    Some(c) => (Lin::ZERO, Lin::constant(c.len as i64)),
                    None => (Lin::ZERO, numel(&buf.shape)),
                },
                _ => (Lin::ZERO, numel(&buf.shape)),
            }
        } else {
            (Lin::ZERO, numel(&buf.shape))
        };
        if let Err((batch, l, h)) = in_bounds(&a, m, lo, hi) {
            return Err(broken(
                "accesses-in-bounds",
                format!(
                    "{} reaches elements [{l}, {h}) of {b} ({}, {:?}, {} elements) at batch {batch}",
                    a.what,
                    buf.shape,
                    buf.loc,
                    numel(&buf.shape).eval(batch)
                ),
            ));
        }
    }
    Ok(())
}
