//! One iteration of a loop kernel: the access addresses at an innermost
//! index, the loads (hoisted broadcasts, partial vectors), the fused
//! operations of the body, the stores, and combining a value into a
//! reduction (its identity, the horizontal reduction of a vector, the
//! first-iteration select of a memory destination).
//!
//! Invariants: a body is the same operations for 1, 2, 3 or 4 lanes (lanes
//! are independent); int32 values are converted at loads and stores only;
//! a `select` on a comparison of the same body picks with the comparison
//! itself.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, Type, Value};

use super::KernelCtx;
use crate::codegen::emit::{trusted, Emitter};
use crate::codegen::ops;
use crate::ir::{DType, NodeId, Op, ReduceKind};
use crate::plan::Source;

pub(super) fn identity(kind: ReduceKind) -> f32 {
    match kind {
        ReduceKind::Sum => 0.0,
        ReduceKind::Max => f32::NEG_INFINITY,
    }
}

pub(super) fn combine(e: &mut Emitter, ty: Type, kind: ReduceKind, acc: Value, x: Value) -> Value {
    match kind {
        ReduceKind::Sum => e.b.ins().fadd(acc, x),
        ReduceKind::Max => ops::binary(e.b, ty, crate::ir::BinaryOp::Max, acc, x),
    }
}

/// Horizontal reduction of an f32x4.
pub(super) fn hreduce(e: &mut Emitter, kind: ReduceKind, v: Value) -> Value {
    let l: Vec<Value> = (0..4u8).map(|i| e.b.ins().extractlane(v, i)).collect();
    let a = combine(e, types::F32, kind, l[0], l[1]);
    let b = combine(e, types::F32, kind, l[2], l[3]);
    combine(e, types::F32, kind, a, b)
}

/// Whether every reduced level outside the innermost is at its first index
/// (the iteration that initializes a memory destination). An i8 0/1.
pub(super) fn first_iteration(e: &mut Emitter, c: &KernelCtx, idx: &[Value]) -> Value {
    let mut first = e.b.ins().iconst(types::I8, 1);
    for (l, &i) in idx.iter().enumerate() {
        if c.nest.levels[l].reduced {
            let z = e.b.ins().icmp_imm_s(IntCC::Equal, i, 0);
            first = e.b.ins().band(first, z);
        }
    }
    first
}

/// Adds a finished per-row value into its destination (memory or SSA
/// total); `first` (an i8) says the memory destination starts from `x`.
#[allow(clippy::too_many_arguments)]
pub(super) fn accumulate_scalar(
    e: &mut Emitter,
    c: &KernelCtx,
    ri: usize,
    kind: ReduceKind,
    ptrs: &[Value],
    x: Value,
    first: Value,
) {
    match (c.totals[ri], c.map.dest[ri]) {
        (Some(t), _) => {
            let acc = e.b.use_var(t);
            let n = combine(e, types::F32, kind, acc, x);
            e.b.def_var(t, n);
        }
        (None, Some(a)) => {
            let p = ptrs[a];
            let old = e.b.ins().load(types::F32, trusted(), p, 0);
            let n = combine(e, types::F32, kind, old, x);
            let v = e.b.ins().select(first, x, n);
            e.b.ins().store(trusted(), v, p, 0);
        }
        (None, None) => {}
    }
}

/// Access addresses at innermost index `j`.
pub(super) fn inner_ptrs(e: &mut Emitter, c: &KernelCtx, ptrs: &[Value], j: Value) -> Vec<Value> {
    let nl = c.nest.levels.len();
    ptrs.iter()
        .enumerate()
        .map(|(a, &p)| {
            let s = c.prep.inner_stride[a];
            if s.is_zero() {
                p
            } else {
                let off = e.b.ins().imul(j, c.prep.bstrides[a][nl - 1]);
                e.b.ins().iadd(p, off)
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn body(
    e: &mut Emitter,
    c: &KernelCtx,
    ty: Type,
    ptrs: &[Value],
    j: Value,
    idx: &[Value],
    lanes: u8,
    hoisted: &HashMap<NodeId, (Value, Option<Value>)>,
) -> HashMap<NodeId, Value> {
    // `lanes`: 1 scalar, 4 a full vector, 2 or 3 the first lanes of a vector
    // (loaded one element at a time; the other lanes hold 0).
    let vector = lanes > 1;
    let mut vals: HashMap<NodeId, Value> = HashMap::new();
    let nl = c.nest.levels.len();
    for (n, s) in &c.k.sources {
        let v = match s {
            Source::Load(_, dt) => {
                if let Some((sv, vv)) = hoisted.get(n) {
                    if vector {
                        vv.expect("vector splat")
                    } else {
                        *sv
                    }
                } else {
                    let p = ptrs[c.map.source[n]];
                    if lanes == 1 || lanes == 4 {
                        load(e, ty, p, *dt)
                    } else {
                        let mut v = ops::constant(e.b, ty, 0.0);
                        for l in 0..lanes {
                            let x = e.b.ins().iadd_imm_s(p, 4 * i64::from(l));
                            let x = e.load_scalar(x, *dt);
                            v = e.b.ins().insertlane(v, x, l);
                        }
                        v
                    }
                }
            }
            Source::Scalar(_) | Source::Const(_) => {
                let (sv, vv) = c.prep.scalars[n];
                if vector {
                    vv.expect("vector splat")
                } else {
                    sv
                }
            }
            Source::Iota { axis } => {
                let lvl = c.nest.levels.iter().position(|l| l.axes.contains(axis));
                match lvl {
                    None => ops::constant(e.b, ty, 0.0),
                    Some(l) if l + 1 == nl => {
                        let f = e.b.ins().fcvt_from_sint(types::F32, j);
                        if vector {
                            let s = e.b.ins().splat(types::F32X4, f);
                            e.b.ins().fadd(s, c.prep.lane_iota.expect("lane iota"))
                        } else {
                            f
                        }
                    }
                    Some(l) => {
                        let f = e.b.ins().fcvt_from_sint(types::F32, idx[l]);
                        if vector {
                            e.b.ins().splat(types::F32X4, f)
                        } else {
                            f
                        }
                    }
                }
            }
        };
        vals.insert(*n, v);
    }
    // Comparisons of this body: a `select` on one picks with the comparison
    // itself (`p cc q ? x : y`, the same result as testing its 1.0 / 0.0
    // against zero, without materializing it).
    let mut compares: HashMap<NodeId, (FloatCC, Value, Value)> = HashMap::new();
    for &n in &c.k.body {
        let inputs = e.g.inputs_of(n).to_vec();
        let arg = |i: usize| vals[&inputs[i]];
        let v = match e.g.op(n).clone() {
            Op::Unary(u) => ops::unary(e.b, ty, u, arg(0)),
            Op::Binary(b) => {
                if let Some(cc) = ops::compare_cc(b) {
                    compares.insert(n, (cc, arg(0), arg(1)));
                }
                ops::binary(e.b, ty, b, arg(0), arg(1))
            }
            Op::Select => match compares.get(&inputs[0]) {
                Some(&(cc, p, q)) => ops::select_cmp(e.b, ty, cc, p, q, arg(1), arg(2)),
                None => ops::select(e.b, ty, arg(0), arg(1), arg(2)),
            },
            Op::Cast(DType::I32) => ops::truncate(e.b, arg(0)),
            Op::Cast(DType::F32) => arg(0),
            Op::UniformHash { seed } => ops::uniform_hash(e.b, ty, seed, arg(0), arg(1)),
            other => panic!("internal compiler error: {other:?} in a loop body"),
        };
        vals.insert(n, v);
    }
    vals
}

fn load(e: &mut Emitter, ty: Type, p: Value, dt: DType) -> Value {
    match dt {
        DType::F32 => e.b.ins().load(ty, trusted(), p, 0),
        DType::I32 => {
            let it = ops::int_type(ty);
            let i = e.b.ins().load(it, trusted(), p, 0);
            e.b.ins().fcvt_from_sint(ty, i)
        }
    }
}

pub(super) fn store_all(
    e: &mut Emitter,
    c: &KernelCtx,
    ty: Type,
    ptrs: &[Value],
    _j: Value,
    vals: &HashMap<NodeId, Value>,
    _vector: bool,
) {
    for (si, (n, _)) in c.k.stores.iter().enumerate() {
        let p = ptrs[c.map.store[si]];
        let v = vals[n];
        if e.g.dtype(*n) == DType::I32 {
            let iv = e.b.ins().fcvt_to_sint_sat(ops::int_type(ty), v);
            e.b.ins().store(trusted(), iv, p, 0);
        } else {
            e.b.ins().store(trusted(), v, p, 0);
        }
    }
}
