//! Typed constructors for graph nodes.
//!
//! Owns: the one place where a node's dtype and shape are derived from its op
//! and inputs. Binary builders broadcast their operands (inserting explicit
//! `BroadcastTo` nodes), so callers write math, not shape plumbing.
//!
//! Invariant: these methods assume their arguments were checked (sema checks
//! user shapes with [`super::shape`] and reports diagnostics first); a shape
//! mismatch here is a compiler bug and panics with "internal compiler error",
//! which the driver turns into a diagnostic.

use super::shape::{self, DType, Dim, Shape};
use super::{BinaryOp, Graph, NodeId, Op, ReduceKind, UnaryOp, Window, WinogradTile};

pub(crate) fn ice<T>(r: Result<T, String>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("internal compiler error: {e}"),
    }
}

impl Graph {
    pub fn input(&mut self, i: u32) -> NodeId {
        let leaf = self.inputs[i as usize].clone();
        self.intern(Op::Input(i), vec![], leaf.dtype, leaf.shape)
    }

    pub fn var(&mut self, i: u32) -> NodeId {
        let leaf = self.vars[i as usize].clone();
        self.intern(Op::Var(i), vec![], leaf.dtype, leaf.shape)
    }

    pub fn scalar(&mut self, v: f32) -> NodeId {
        self.intern(Op::Scalar(v.to_bits()), vec![], DType::F32, Shape::scalar())
    }

    /// A tensor constant; identical constants share one table entry.
    pub fn tensor(&mut self, dtype: DType, shape: Shape, values: Vec<f32>) -> NodeId {
        let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        let existing = self.consts.iter().position(|c| {
            c.shape == shape
                && c.dtype == dtype
                && c.values
                    .iter()
                    .map(|v| v.to_bits())
                    .eq(bits.iter().copied())
        });
        let id = match existing {
            Some(i) => i as u32,
            None => {
                self.consts.push(super::ConstTensor {
                    shape: shape.clone(),
                    dtype,
                    values,
                });
                (self.consts.len() - 1) as u32
            }
        };
        self.intern(Op::Tensor(id), vec![], dtype, shape)
    }

    /// A scalar constant broadcast to `shape`.
    pub fn fill(&mut self, v: f32, shape: &Shape) -> NodeId {
        let s = self.scalar(v);
        self.broadcast_to(s, shape)
    }

    /// `tf.sequence_mask(lengths, maxlen)` of f32 `lengths`: `lengths`'s
    /// shape and `[maxlen]`, 1.0 where the position is below the length.
    pub fn sequence_mask(&mut self, lengths: NodeId, maxlen: u32) -> NodeId {
        let s = self.shape(lengths).clone();
        let mut dims = s.0.clone();
        dims.push(Dim::Fixed(maxlen));
        let positions = self.iota(s.rank(), &Shape(dims));
        let mut column = s.0;
        column.push(Dim::Fixed(1));
        let lengths = self.reshape(lengths, &Shape(column));
        self.binary(BinaryOp::Lt, positions, lengths)
    }

    pub fn iota(&mut self, axis: usize, shape: &Shape) -> NodeId {
        self.intern(
            Op::Iota {
                axis: axis as u8,
                shape: shape.clone(),
            },
            vec![],
            DType::F32,
            shape.clone(),
        )
    }

    pub fn batch_size(&mut self) -> NodeId {
        self.intern(Op::BatchSize, vec![], DType::F32, Shape::scalar())
    }

    pub fn global_step(&mut self) -> NodeId {
        self.intern(Op::GlobalStep, vec![], DType::F32, Shape::scalar())
    }

    pub fn first_row(&mut self) -> NodeId {
        self.intern(Op::FirstRow, vec![], DType::F32, Shape::scalar())
    }

    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> NodeId {
        let s = self.shape(x).clone();
        self.intern(Op::Unary(op), vec![x], DType::F32, s)
    }

    /// A binary op with NumPy broadcasting of both operands.
    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> NodeId {
        let s = ice(shape::broadcast(self.shape(a), self.shape(b)));
        let a = self.broadcast_to(a, &s);
        let b = self.broadcast_to(b, &s);
        self.intern(Op::Binary(op), vec![a, b], DType::F32, s)
    }

    pub fn add(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(BinaryOp::Add, a, b)
    }
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(BinaryOp::Sub, a, b)
    }
    pub fn mul(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(BinaryOp::Mul, a, b)
    }
    pub fn div(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(BinaryOp::Div, a, b)
    }
    pub fn neg(&mut self, x: NodeId) -> NodeId {
        self.unary(UnaryOp::Neg, x)
    }
    /// `x * c` for a scalar constant `c`.
    pub fn scale(&mut self, x: NodeId, c: f32) -> NodeId {
        let c = self.scalar(c);
        self.mul(x, c)
    }

    /// `cond != 0 ? a : b`, broadcasting all three.
    pub fn select(&mut self, cond: NodeId, a: NodeId, b: NodeId) -> NodeId {
        let s = ice(shape::broadcast(self.shape(a), self.shape(b)));
        let s = ice(shape::broadcast(&s, self.shape(cond)));
        let cond = self.broadcast_to(cond, &s);
        let a = self.broadcast_to(a, &s);
        let b = self.broadcast_to(b, &s);
        self.intern(Op::Select, vec![cond, a, b], DType::F32, s)
    }

    pub fn cast(&mut self, x: NodeId, to: DType) -> NodeId {
        if self.dtype(x) == to {
            return x;
        }
        let s = self.shape(x).clone();
        self.intern(Op::Cast(to), vec![x], to, s)
    }

    /// Broadcasts `x` to `to`; the identity when the shapes already agree.
    pub fn broadcast_to(&mut self, x: NodeId, to: &Shape) -> NodeId {
        if self.shape(x) == to {
            return x;
        }
        if !shape::broadcasts_to(self.shape(x), to) {
            panic!(
                "internal compiler error: {} does not broadcast to {to}",
                self.shape(x)
            );
        }
        let dt = self.dtype(x);
        self.intern(Op::BroadcastTo(to.clone()), vec![x], dt, to.clone())
    }

    /// Sums `x` down to `to`, the inverse of broadcasting `to` up to `x`'s shape.
    pub fn sum_to(&mut self, x: NodeId, to: &Shape) -> NodeId {
        let from = self.shape(x).clone();
        if &from == to {
            return x;
        }
        let pad = from.rank() - to.rank();
        let mut axes: Vec<usize> = (0..pad).collect();
        for (i, d) in to.0.iter().enumerate() {
            if *d == Dim::Fixed(1) && from.0[pad + i] != Dim::Fixed(1) {
                axes.push(pad + i);
            }
        }
        let summed = self.reduce(ReduceKind::Sum, x, &axes);
        self.reshape(summed, to)
    }

    /// Reduces over `axes` (any order, deduplicated here), dropping them.
    pub fn reduce(&mut self, kind: ReduceKind, x: NodeId, axes: &[usize]) -> NodeId {
        let mut axes = axes.to_vec();
        axes.sort_unstable();
        axes.dedup();
        if axes.is_empty() {
            return x;
        }
        let s = shape::reduce(self.shape(x), &axes);
        self.intern(
            Op::Reduce {
                kind,
                axes: axes.iter().map(|&a| a as u8).collect(),
            },
            vec![x],
            DType::F32,
            s,
        )
    }

    pub fn reduce_sum(&mut self, x: NodeId, axes: &[usize]) -> NodeId {
        self.reduce(ReduceKind::Sum, x, axes)
    }

    /// Sum of every element.
    pub fn sum_all(&mut self, x: NodeId) -> NodeId {
        let axes: Vec<usize> = (0..self.shape(x).rank()).collect();
        self.reduce_sum(x, &axes)
    }

    /// The number of elements of `shape` over `axes`, as an f32 scalar node
    /// (involves the batch size when a reduced axis is the batch).
    pub fn count(&mut self, shape: &Shape, axes: &[usize]) -> NodeId {
        let mut fixed = 1f32;
        let mut batch = false;
        for &a in axes {
            match shape.0[a] {
                Dim::Fixed(n) => fixed *= n as f32,
                Dim::Batch => batch = true,
            }
        }
        let c = self.scalar(fixed);
        if batch {
            let b = self.batch_size();
            if fixed == 1.0 {
                b
            } else {
                self.mul(c, b)
            }
        } else {
            c
        }
    }

    /// Mean over `axes`: the sum divided by the element count, as TF's Mean.
    pub fn reduce_mean(&mut self, x: NodeId, axes: &[usize]) -> NodeId {
        let shape = self.shape(x).clone();
        let s = self.reduce_sum(x, axes);
        let n = self.count(&shape, axes);
        self.div(s, n)
    }

    pub fn argmax(&mut self, x: NodeId, axis: usize) -> NodeId {
        let s = shape::reduce(self.shape(x), &[axis]);
        self.intern(Op::ArgMax { axis: axis as u8 }, vec![x], DType::I32, s)
    }

    pub fn matmul(&mut self, a: NodeId, b: NodeId, ta: bool, tb: bool) -> NodeId {
        let s = ice(shape::matmul(self.shape(a), self.shape(b), ta, tb));
        self.intern(Op::MatMul { ta, tb }, vec![a, b], DType::F32, s)
    }

    pub fn reshape(&mut self, x: NodeId, to: &Shape) -> NodeId {
        if self.shape(x) == to {
            return x;
        }
        ice(shape::reshape(self.shape(x), to));
        let dt = self.dtype(x);
        self.intern(Op::Reshape(to.clone()), vec![x], dt, to.clone())
    }

    pub fn transpose(&mut self, x: NodeId, perm: &[usize]) -> NodeId {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return x;
        }
        let s = ice(shape::transpose(self.shape(x), perm));
        let dt = self.dtype(x);
        self.intern(
            Op::Transpose(perm.iter().map(|&p| p as u8).collect()),
            vec![x],
            dt,
            s,
        )
    }

    pub fn concat(&mut self, parts: &[NodeId], axis: usize) -> NodeId {
        if parts.len() == 1 {
            return parts[0];
        }
        let shapes: Vec<Shape> = parts.iter().map(|&p| self.shape(p).clone()).collect();
        let refs: Vec<&Shape> = shapes.iter().collect();
        let s = ice(shape::concat(&refs, axis));
        let dt = self.dtype(parts[0]);
        self.intern(Op::Concat { axis: axis as u8 }, parts.to_vec(), dt, s)
    }

    /// `tf.gather(params, ids)` along the first axis.
    pub fn gather(&mut self, params: NodeId, ids: NodeId) -> NodeId {
        let mut s = self.shape(ids).clone();
        s.0.extend(self.shape(params).0[1..].iter().copied());
        let dt = self.dtype(params);
        self.intern(Op::Gather, vec![params, ids], dt, s)
    }

    /// `base` with `updates[i]` added to row `ids[i]` (ids `[N]`, updates `[N, ..]`).
    pub fn scatter_add(&mut self, base: NodeId, ids: NodeId, updates: NodeId) -> NodeId {
        let s = self.shape(base).clone();
        self.intern(Op::ScatterAdd, vec![base, ids, updates], DType::F32, s)
    }

    /// The position of the first occurrence of each id (ids `[N]` into `rows` rows).
    pub fn first_occurrence(&mut self, ids: NodeId, rows: u32) -> NodeId {
        let s = self.shape(ids).clone();
        self.intern(Op::FirstOccurrence { rows }, vec![ids], DType::I32, s)
    }

    /// `values` summed at the first occurrence of each id (see `Op::SumDuplicates`).
    pub fn sum_duplicates(&mut self, values: NodeId, first: NodeId) -> NodeId {
        let s = self.shape(values).clone();
        self.intern(Op::SumDuplicates, vec![values, first], DType::F32, s)
    }

    /// `base` with rows replaced at first occurrences (see `Op::ScatterRows`).
    pub fn scatter_rows(
        &mut self,
        base: NodeId,
        ids: NodeId,
        first: NodeId,
        rows: NodeId,
    ) -> NodeId {
        let s = self.shape(base).clone();
        self.intern(Op::ScatterRows, vec![base, ids, first, rows], DType::F32, s)
    }

    /// Static slice starting at `begin` with result `out` (batch axes whole).
    pub fn slice(&mut self, x: NodeId, begin: &[u32], out: &Shape) -> NodeId {
        if self.shape(x) == out {
            return x;
        }
        let dt = self.dtype(x);
        self.intern(
            Op::Slice {
                begin: begin.to_vec(),
                shape: out.clone(),
            },
            vec![x],
            dt,
            out.clone(),
        )
    }

    /// Zero-pads `x` to `out`, placing it at `before`.
    pub fn pad(&mut self, x: NodeId, before: &[u32], out: &Shape) -> NodeId {
        if self.shape(x) == out {
            return x;
        }
        self.intern(
            Op::Pad {
                before: before.to_vec(),
                shape: out.clone(),
            },
            vec![x],
            DType::F32,
            out.clone(),
        )
    }

    /// 1 in the training functions, 0 in eval and predict (`Op::Training`).
    pub fn training(&mut self) -> NodeId {
        self.intern(Op::Training, vec![], DType::F32, Shape::scalar())
    }

    /// Uniform draws in `[0, 1)` of `shape`, new at every global step
    /// (`Op::UniformHash` of each element's row-major index, computed in f32:
    /// exact for the first 2²⁴ elements of a step). A leading batch axis
    /// counts rows of the global batch (`Op::FirstRow` added), so the
    /// replicas of a data-parallel job draw what one process draws; a batch
    /// axis elsewhere (a time-major `[T, B, D]`) is drawn first and moved
    /// back, so an example's draws never depend on the batch size.
    pub fn random_uniform(&mut self, seed: u32, shape: &Shape) -> NodeId {
        if let Some(k) = shape.0.iter().position(|d| *d == Dim::Batch) {
            if k > 0 {
                let first: Vec<usize> = std::iter::once(k)
                    .chain((0..shape.rank()).filter(|&a| a != k))
                    .collect();
                let leading = Shape(first.iter().map(|&a| shape.0[a]).collect());
                let drawn = self.random_uniform(seed, &leading);
                let back: Vec<usize> = (0..shape.rank())
                    .map(|a| first.iter().position(|&p| p == a).unwrap_or(a))
                    .collect();
                return self.transpose(drawn, &back);
            }
        }
        let mut index = self.scalar(0.0);
        let mut stride = self.scalar(1.0);
        for axis in (0..shape.rank()).rev() {
            let mut i = self.iota(axis, shape);
            if axis == 0 && shape.0[0] == Dim::Batch {
                let first = self.first_row();
                i = self.add(i, first);
            }
            let term = self.mul(i, stride);
            index = self.add(index, term);
            let size = match shape.0[axis] {
                Dim::Fixed(n) => self.scalar(n as f32),
                Dim::Batch => self.batch_size(),
            };
            stride = self.mul(stride, size);
        }
        let step = self.global_step();
        let step = self.broadcast_to(step, shape);
        let index = self.broadcast_to(index, shape);
        self.intern(
            Op::UniformHash { seed },
            vec![index, step],
            DType::F32,
            shape.clone(),
        )
    }

    /// The patches of the NHWC images `x` (`Op::Patches`), `pad` outside them.
    pub fn patches(&mut self, x: NodeId, window: Window, pad: f32) -> NodeId {
        let s = self.shape(x).clone();
        let out = Shape(vec![
            s.0[0],
            Dim::Fixed(window.output[0]),
            Dim::Fixed(window.output[1]),
            Dim::Fixed(window.patch_len()),
        ]);
        self.intern(
            Op::Patches {
                window,
                pad: pad.to_bits(),
            },
            vec![x],
            DType::F32,
            out,
        )
    }

    /// The batched product `a @ b` over the leading group axis (`Op::BatchMatMul`).
    pub fn batch_matmul(&mut self, a: NodeId, b: NodeId, ta: bool, tb: bool) -> NodeId {
        self.grouped_matmul(a, b, ta, tb, 1)
    }

    /// The batched product `a @ b` over the `groups` leading axes of both
    /// (`Op::BatchMatMul`).
    pub fn grouped_matmul(
        &mut self,
        a: NodeId,
        b: NodeId,
        ta: bool,
        tb: bool,
        groups: u8,
    ) -> NodeId {
        let s = ice(shape::batch_matmul(
            self.shape(a),
            self.shape(b),
            ta,
            tb,
            usize::from(groups),
        ));
        self.intern(
            Op::BatchMatMul { ta, tb, groups },
            vec![a, b],
            DType::F32,
            s,
        )
    }

    /// The Winograd F(m×m, 3×3) input transform of the images `x`
    /// (`Op::WinogradInput`): `[G, N, TH, TW, C]`.
    pub fn winograd_input(&mut self, x: NodeId, window: Window, tile: WinogradTile) -> NodeId {
        let n = self.shape(x).0[0];
        let out = tile_shape(n, window, tile, window.channels);
        self.intern(Op::WinogradInput(window, tile), vec![x], DType::F32, out)
    }

    /// The adjoint of the input transform (`Op::WinogradInputGrad`): `[N, H, W, C]`.
    pub fn winograd_input_grad(
        &mut self,
        dv: NodeId,
        window: Window,
        tile: WinogradTile,
    ) -> NodeId {
        let n = self.shape(dv).0[1];
        let out = Shape(vec![
            n,
            Dim::Fixed(window.input[0]),
            Dim::Fixed(window.input[1]),
            Dim::Fixed(window.channels),
        ]);
        self.intern(
            Op::WinogradInputGrad(window, tile),
            vec![dv],
            DType::F32,
            out,
        )
    }

    /// The Winograd output transform of the tile products `m`
    /// (`Op::WinogradOutput`): `[N, OH, OW, O]`.
    pub fn winograd_output(&mut self, m: NodeId, window: Window, tile: WinogradTile) -> NodeId {
        let s = self.shape(m).clone();
        let out = Shape(vec![
            s.0[1],
            Dim::Fixed(window.output[0]),
            Dim::Fixed(window.output[1]),
            s.0[4],
        ]);
        self.intern(Op::WinogradOutput(window, tile), vec![m], DType::F32, out)
    }

    /// The adjoint of the output transform (`Op::WinogradOutputGrad`):
    /// `[G, N, TH, TW, O]`.
    pub fn winograd_output_grad(
        &mut self,
        dy: NodeId,
        window: Window,
        tile: WinogradTile,
    ) -> NodeId {
        let s = self.shape(dy).clone();
        let o = s.0[3].fixed().expect("fixed output channels");
        let out = tile_shape(s.0[0], window, tile, o);
        self.intern(
            Op::WinogradOutputGrad(window, tile),
            vec![dy],
            DType::F32,
            out,
        )
    }

    /// The images whose patches' adjoint is `p` (`Op::PatchesGrad`).
    pub fn patches_grad(&mut self, p: NodeId, window: Window) -> NodeId {
        let s = self.shape(p).clone();
        let out = Shape(vec![
            s.0[0],
            Dim::Fixed(window.input[0]),
            Dim::Fixed(window.input[1]),
            Dim::Fixed(window.channels),
        ]);
        self.intern(Op::PatchesGrad(window), vec![p], DType::F32, out)
    }

    pub fn stop_gradient(&mut self, x: NodeId) -> NodeId {
        let s = self.shape(x).clone();
        let dt = self.dtype(x);
        self.intern(Op::StopGradient, vec![x], dt, s)
    }

    /// One-hot encoding of int class ids `[..]` into f32 `[.., depth]`.
    pub fn one_hot(&mut self, ids: NodeId, depth: u32) -> NodeId {
        let ids_f = self.cast(ids, DType::F32);
        let mut s = self.shape(ids).clone();
        let mut keep = s.clone();
        keep.0.push(Dim::Fixed(1));
        s.0.push(Dim::Fixed(depth));
        let col = self.reshape(ids_f, &keep);
        let iota = self.iota(s.rank() - 1, &s);
        let eq = self.binary(BinaryOp::Eq, col, iota);
        // Comparisons already give 1.0 / 0.0.
        eq
    }
}

impl Graph {
    /// `root` with every use of the global step replaced by `with` (the nodes
    /// that depend on it are rebuilt; the rest are shared). A walk over an
    /// explicit stack, inputs before their users in the order a recursive walk
    /// takes (a schedule's expression may be a chain of any length).
    pub fn replace_global_step(&mut self, root: NodeId, with: NodeId) -> NodeId {
        self.replace_leaf(root, &Op::GlobalStep, with)
    }

    /// `root` with every use of the leaf `leaf` replaced by `with` (as
    /// [`Graph::replace_global_step`]).
    pub fn replace_leaf(&mut self, root: NodeId, leaf: &Op, with: NodeId) -> NodeId {
        let mut memo: std::collections::HashMap<NodeId, NodeId> = std::collections::HashMap::new();
        let mut stack = vec![(root, false)];
        while let Some((n, inputs_done)) = stack.pop() {
            if memo.contains_key(&n) {
                continue;
            }
            let node = self.node(n);
            if &node.op == leaf {
                memo.insert(n, with);
                continue;
            }
            if node.inputs.is_empty() {
                memo.insert(n, n);
                continue;
            }
            if !inputs_done {
                stack.push((n, true));
                stack.extend(node.inputs.iter().rev().map(|&i| (i, false)));
                continue;
            }
            let node = node.clone();
            let inputs: Vec<NodeId> = node.inputs.iter().map(|i| memo[i]).collect();
            let r = if inputs == node.inputs {
                n
            } else {
                self.intern(node.op, inputs, node.dtype, node.shape)
            };
            memo.insert(n, r);
        }
        memo[&root]
    }
}

/// `[G, N, TH, TW, channels]`: the Winograd tiles of `window`'s output.
fn tile_shape(n: Dim, window: Window, tile: WinogradTile, channels: u32) -> Shape {
    let [th, tw] = window.winograd_tiles(tile);
    Shape(vec![
        Dim::Fixed(tile.groups()),
        n,
        Dim::Fixed(th),
        Dim::Fixed(tw),
        Dim::Fixed(channels),
    ])
}
