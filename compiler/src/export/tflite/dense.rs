//! FULLY_CONNECTED and BATCH_MATMUL: a matrix product by a constant
//! (sema's dense layers, and its convolutions' kernel matrix, which
//! [`Lower::fully_connected`] hands to CONV_2D) and by a computed matrix.
//!
//! Invariants: FULLY_CONNECTED's weights are TFLite's `[units, depth]`
//! (transposed from the IR's `[depth, units]` unless the matmul reads them
//! transposed), its version 5 with `keep_num_dims` (TF's converter's
//! versioning), 1 without.

use specc_tflite::{ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{NodeId, Op, Window};

impl Lower<'_> {
    /// `x @ W` with constant `W`: FULLY_CONNECTED, or CONV_2D when `x` is
    /// the patches of images (`matmul(patches(x), reshape(K))`, sema's
    /// conv2d and conv1d) or images itself (a 1×1 kernel with stride 1).
    pub(super) fn fully_connected(&self, mm: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let Op::MatMul { ta: false, tb } = *g.op(mm) else {
            return None;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return None;
        };
        if !self.foldable[w.index()] || self.foldable[x.index()] || g.shape(w).rank() != 2 {
            return None;
        }
        let depth = g.shape(w).0[if tb { 1 } else { 0 }].fixed()?;
        if depth == 0 {
            return None;
        }
        let rank = g.shape(x).rank();
        if rank == 4 {
            let conv = |x, window| Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias: None,
                act: Act::None,
            };
            if let Op::Patches { window, pad: 0 } = *g.op(x) {
                let images = g.inputs_of(x)[0];
                if window.patch_len() == depth && !self.foldable[images.index()] {
                    return Some((conv(images, window), vec![images, w]));
                }
                return None;
            }
            let s = &g.shape(x).0;
            let (h, wd) = (s[1].fixed()?, s[2].fixed()?);
            let pointwise = Window {
                input: [h, wd],
                output: [h, wd],
                kernel: [1, 1],
                strides: [1, 1],
                dilations: [1, 1],
                pad_before: [0, 0],
                channels: depth,
            };
            return Some((conv(x, pointwise), vec![x, w]));
        }
        let l = Lowering::FullyConnected {
            x,
            w,
            tb,
            bias: None,
            act: Act::None,
            keep_num_dims: rank != 2,
        };
        Some((l, vec![x, w]))
    }

    /// FULLY_CONNECTED of a [`Lowering::FullyConnected`].
    pub(super) fn emit_fully_connected(&mut self, id: NodeId, l: Lowering) -> R<()> {
        let Lowering::FullyConnected {
            x,
            w,
            tb,
            bias,
            act,
            keep_num_dims,
        } = l
        else {
            unreachable!("not a FULLY_CONNECTED: {l:?}")
        };
        let xt = self.tensor(x)?;
        let wv = &self.folded[&w];
        let (k, n) = if tb {
            (wv.dims[1], wv.dims[0])
        } else {
            (wv.dims[0], wv.dims[1])
        };
        // TFLite's weights are [units, depth].
        let mut data = vec![0f32; k * n];
        for u in 0..n {
            for d in 0..k {
                data[u * k + d] = if tb {
                    wv.data[u * k + d]
                } else {
                    wv.data[d * n + u]
                } as f32;
            }
        }
        let wname = if tb {
            self.name(w)
        } else {
            format!("{}/transpose", self.name(w))
        };
        let wt = self.m.constant_f32(&wname, &[n as i32, k as i32], &data);
        let wt = self.fake_quant_weights(w, wt, !tb);
        let bt = match bias {
            Some(b) => self.tensor(b)?,
            None => -1,
        };
        let y = self.out(id);
        // Version 5: keep_num_dims (TF's converter's versioning).
        self.m.operator_version(
            B::FullyConnected,
            if keep_num_dims { 5 } else { 1 },
            &[xt, wt, bt],
            &[y],
            BuiltinOptions::FullyConnected {
                fused_activation_function: act,
                keep_num_dims,
                asymmetric_quantize_inputs: false,
            },
        );
        Ok(())
    }

    /// BATCH_MATMUL: a matmul by a computed matrix.
    pub(super) fn batch_matmul(&mut self, id: NodeId, ta: bool, tb: bool) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let a = self.tensor(ins[0])?;
        let b = self.tensor(ins[1])?;
        let y = self.out(id);
        self.m.operator(
            B::BatchMatmul,
            &[a, b],
            &[y],
            BuiltinOptions::BatchMatMul {
                adj_x: ta,
                adj_y: tb,
            },
        );
        Ok(())
    }
}
