//! MAX_POOL_2D and AVERAGE_POOL_2D: sema's max and average pools over the
//! taps of a window (`taps(x)`: the image patches reshaped to `[N, OH, OW,
//! KH·KW, C]`, or, for windows tiling the image, its view
//! `reshape(transpose(reshape(x)))`).
//!
//! Invariants: an average pool matches only when its divisor is each
//! window's count of cells inside the image (TF's and TFLite's SAME
//! average); a pool whose explicit padding is neither SAME nor VALID is
//! recognized and refused (PAD's zeros could win a max; TF's converter
//! refuses it too).

use specc_tflite::{ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, Padding};

use super::conv::{window_padding, WindowPadding};
use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Op, ReduceKind, Window};

impl Lower<'_> {
    /// The images and window of `taps(x)` (see [`Lower::pattern`]), and the
    /// patches' padding value (`None` for the tiling view, which has none).
    fn taps(&self, p: NodeId) -> Option<(NodeId, Window, Option<u32>)> {
        let g = self.g;
        if !matches!(g.op(p), Op::Reshape(_)) || g.shape(p).rank() != 5 {
            return None;
        }
        let q = g.inputs_of(p)[0];
        let s = &g.shape(p).0;
        match *g.op(q) {
            Op::Patches { window, pad } => {
                let want = [
                    Dim::Fixed(window.output[0]),
                    Dim::Fixed(window.output[1]),
                    Dim::Fixed(window.kernel[0] * window.kernel[1]),
                    Dim::Fixed(window.channels),
                ];
                (s[1..] == want).then(|| (g.inputs_of(q)[0], window, Some(pad)))
            }
            Op::Transpose(ref perm) if perm[..] == [0, 1, 3, 2, 4, 5] => {
                let split = g.inputs_of(q)[0];
                if !matches!(g.op(split), Op::Reshape(_)) {
                    return None;
                }
                let x = g.inputs_of(split)[0];
                let d: Vec<u32> = g.shape(split).0[1..]
                    .iter()
                    .map(|d| d.fixed())
                    .collect::<Option<_>>()?;
                let [oh, kh, ow, kw, c] = d[..] else {
                    return None;
                };
                let xs = &g.shape(x).0;
                let image = [Dim::Fixed(oh * kh), Dim::Fixed(ow * kw), Dim::Fixed(c)];
                if xs.len() != 4 || xs[1..] != image || s[3] != Dim::Fixed(kh * kw) {
                    return None;
                }
                let window = Window {
                    input: [oh * kh, ow * kw],
                    output: [oh, ow],
                    kernel: [kh, kw],
                    strides: [kh, kw],
                    dilations: [1, 1],
                    pad_before: [0, 0],
                    channels: c,
                };
                Some((x, window, None))
            }
            _ => None,
        }
    }

    /// sema's max_pool2d: `sum(select(iota == argmax(t), t, 0), taps)` of
    /// `t = taps(x)` (`-inf` outside the image).
    pub(super) fn max_pool(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let sel = self.is_reduce(id, ReduceKind::Sum, &[3])?;
        if g.op(sel) != &Op::Select {
            return None;
        }
        let [cond, t, zero] = g.inputs_of(sel)[..] else {
            return None;
        };
        if g.op(cond) != &Op::Binary(BinaryOp::Eq) || !self.is_scalar(zero, 0.0) {
            return None;
        }
        let c = g.inputs_of(cond);
        let (a, b) = (self.strip_broadcast(c[0]), self.strip_broadcast(c[1]));
        let first = if matches!(g.op(a), Op::Iota { axis: 3, .. }) {
            b
        } else if matches!(g.op(b), Op::Iota { axis: 3, .. }) {
            a
        } else {
            return None;
        };
        let cast = self.strip_reshape(first);
        if g.op(cast) != &Op::Cast(DType::F32) {
            return None;
        }
        let am = g.inputs_of(cast)[0];
        if g.op(am) != &(Op::ArgMax { axis: 3 }) || g.inputs_of(am)[0] != t {
            return None;
        }
        let (x, window, pad) = self.taps(t)?;
        // An explicit padding that is neither SAME nor VALID is recognized
        // too, so that its refusal names the pool (see `Lowering::Pool`).
        let ok = pad.is_none_or(|p| p == f32::NEG_INFINITY.to_bits()) && !self.foldable[x.index()];
        ok.then(|| {
            let l = Lowering::Pool {
                x,
                window,
                max: true,
            };
            (l, vec![x])
        })
    }

    /// sema's avg_pool2d: `sum(taps(x), taps) / count`, `count` each
    /// window's cells inside the image (as TF's and TFLite's SAME average).
    pub(super) fn average_pool(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let t = self.is_reduce(ins[0], ReduceKind::Sum, &[3])?;
        let (x, w, pad) = self.taps(t)?;
        if pad.is_some_and(|p| p != 0) || self.foldable[x.index()] {
            return None;
        }
        if matches!(window_padding(&w), WindowPadding::Explicit(_)) {
            return None;
        }
        let inside = |a: usize, o: u32| {
            (0..w.kernel[a])
                .filter(|&k| w.source(a, o, k).is_some())
                .count()
        };
        let mut counts = Vec::new();
        for oy in 0..w.output[0] {
            for ox in 0..w.output[1] {
                counts.push((inside(0, oy) * inside(1, ox)) as f32);
            }
        }
        let den = self.strip_broadcast(ins[1]);
        let ok = match g.op(den) {
            Op::Scalar(_) => counts.iter().all(|&c| Some(c) == g.op(den).scalar_value()),
            Op::Tensor(i) => {
                let c = &g.consts[*i as usize];
                c.shape.0
                    == [
                        Dim::Fixed(w.output[0]),
                        Dim::Fixed(w.output[1]),
                        Dim::Fixed(1),
                    ]
                    && c.values == counts
            }
            _ => false,
        };
        ok.then(|| {
            let l = Lowering::Pool {
                x,
                window: w,
                max: false,
            };
            (l, vec![x])
        })
    }

    /// MAX_POOL_2D (`max`) or AVERAGE_POOL_2D of `x` over `window`.
    pub(super) fn emit_pool(&mut self, id: NodeId, x: NodeId, window: Window, max: bool) -> R<()> {
        let padding = match window_padding(&window) {
            WindowPadding::Same => Padding::Same,
            WindowPadding::Valid => Padding::Valid,
            WindowPadding::Explicit(_) => {
                // TF's converter refuses it too (tf.MaxPool with
                // EXPLICIT padding is neither a builtin nor a flex
                // op); PAD would pad with zeros, which can win a max.
                return Err(self.unsupported(
                    id,
                    "MAX_POOL_2D takes SAME or VALID padding, and this explicit padding is neither (TF's converter refuses it too)",
                ));
            }
        };
        let xt = self.tensor(x)?;
        let y = self.out(id);
        self.m.operator(
            if max { B::MaxPool2d } else { B::AveragePool2d },
            &[xt],
            &[y],
            BuiltinOptions::Pool2D {
                padding,
                stride_w: window.strides[1] as i32,
                stride_h: window.strides[0] as i32,
                filter_width: window.kernel[1] as i32,
                filter_height: window.kernel[0] as i32,
                fused_activation_function: Act::None,
            },
        );
        Ok(())
    }
}
