//! CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV: sema's convolutions by a
//! constant kernel, their filters laid out as TFLite's, and TFLite's
//! padding of a window (TF's SAME or VALID arithmetic, or a PAD operator
//! before a VALID convolution).
//!
//! Invariants: CONV_2D's and TRANSPOSE_CONV's filters are `[O, KH, KW,
//! I]`, DEPTHWISE_CONV_2D's `[1, KH, KW, C·M]`; every convolution has a
//! bias (zeros when the spec has none, as TF's converter writes it); a
//! window both SAME and VALID describe is VALID; a transposed convolution
//! with dilation or explicit padding is refused.

use specc_tflite::{
    ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, Padding, TensorType,
};

use super::lower::Lower;
use super::patterns::Lowering;
use super::R;
use crate::ir::{BinaryOp, Dim, NodeId, Op, ReduceKind, Window};

impl Lower<'_> {
    /// `reshape(reduce_sum(reshape(patches(x)) * reshape(K), [3]))` to
    /// `[N, OH, OW, C·M]`: sema's depthwise_conv2d.
    pub(super) fn depthwise_conv2d(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        if !matches!(g.op(id), Op::Reshape(_)) {
            return None;
        }
        let s = g.inputs_of(id)[0];
        let prod = self.is_reduce(s, ReduceKind::Sum, &[3])?;
        if g.op(prod) != &Op::Binary(BinaryOp::Mul) {
            return None;
        }
        let ins = g.inputs_of(prod);
        let (a, b) = (self.strip_broadcast(ins[0]), self.strip_broadcast(ins[1]));
        let (p6, k) = if self.foldable[b.index()] {
            (a, b)
        } else {
            (b, a)
        };
        if !self.foldable[k.index()] || !matches!(g.op(p6), Op::Reshape(_)) {
            return None;
        }
        let p = g.inputs_of(p6)[0];
        let Op::Patches { window, pad: 0 } = *g.op(p) else {
            return None;
        };
        let x = g.inputs_of(p)[0];
        let taps = window.kernel[0] * window.kernel[1];
        let c = window.channels;
        let kd = &g.shape(k).0;
        let m = match kd[..] {
            [Dim::Fixed(t), Dim::Fixed(kc), Dim::Fixed(m)] if t == taps && kc == c => m,
            _ => return None,
        };
        let p6_ok = g.shape(p6).0[3..] == [Dim::Fixed(taps), Dim::Fixed(c), Dim::Fixed(1)];
        let out_ok = g.shape(id).0[1..]
            == [
                Dim::Fixed(window.output[0]),
                Dim::Fixed(window.output[1]),
                Dim::Fixed(c * m),
            ];
        if !p6_ok || !out_ok || self.foldable[x.index()] {
            return None;
        }
        let l = Lowering::DepthwiseConv2D {
            x,
            w: k,
            window,
            bias: None,
            act: Act::None,
        };
        Some((l, vec![x, k]))
    }

    /// `patches_grad(x @ reshape(K)ᵀ)`: sema's conv2d_transpose, when
    /// TRANSPOSE_CONV can express its window (no dilation; SAME or VALID).
    pub(super) fn transpose_conv(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let Op::PatchesGrad(window) = *g.op(id) else {
            return None;
        };
        let mm = g.inputs_of(id)[0];
        let Op::MatMul {
            ta: false,
            tb: true,
        } = *g.op(mm)
        else {
            return None;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return None;
        };
        let ok = self.foldable[w.index()]
            && !self.foldable[x.index()]
            && g.shape(x).rank() == 4
            && g.shape(w).rank() == 2
            && window.patch_len() > 0
            && g.shape(w).0.first() == Some(&Dim::Fixed(window.patch_len()))
            && window.dilations == [1, 1]
            && !matches!(window_padding(&window), WindowPadding::Explicit(_));
        ok.then(|| (Lowering::TransposeConv { x, w, window }, vec![x, w]))
    }

    /// CONV_2D, DEPTHWISE_CONV_2D or TRANSPOSE_CONV of a convolution's
    /// [`Lowering`].
    pub(super) fn emit_conv(&mut self, id: NodeId, l: Lowering) -> R<()> {
        match l {
            Lowering::Conv2D {
                x,
                w,
                tb,
                window,
                bias,
                act,
            } => {
                let (xt, padding) = self.padded(id, x, &window)?;
                let wv = &self.folded[&w];
                let (len, units) = (
                    window.patch_len() as usize,
                    wv.data.len() / window.patch_len() as usize,
                );
                // TFLite's filter is [O, KH, KW, C]; the kernel matrix's rows
                // are (ky, kx, c).
                let mut data = vec![0f32; len * units];
                for o in 0..units {
                    for r in 0..len {
                        data[o * len + r] = if tb {
                            wv.data[o * len + r]
                        } else {
                            wv.data[r * units + o]
                        } as f32;
                    }
                }
                let [kh, kw] = window.kernel.map(|k| k as i32);
                let name = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt = self.m.constant_f32(
                    &name,
                    &[units as i32, kh, kw, window.channels as i32],
                    &data,
                );
                let bt = self.bias(id, bias, units)?;
                let y = self.out(id);
                self.m.operator(
                    B::Conv2d,
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::Conv2D {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        fused_activation_function: act,
                        dilation_w_factor: window.dilations[1] as i32,
                        dilation_h_factor: window.dilations[0] as i32,
                    },
                );
            }
            Lowering::DepthwiseConv2D {
                x,
                w,
                window,
                bias,
                act,
            } => {
                let (xt, padding) = self.padded(id, x, &window)?;
                // [KH·KW, C, M] is [1, KH, KW, C·M] in the same order.
                let wv = &self.folded[&w];
                let m = wv.dims[2];
                let data: Vec<f32> = wv.data.iter().map(|&v| v as f32).collect();
                let channels = window.channels as usize * m;
                let [kh, kw] = window.kernel.map(|k| k as i32);
                let name = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt = self
                    .m
                    .constant_f32(&name, &[1, kh, kw, channels as i32], &data);
                let bt = self.bias(id, bias, channels)?;
                let y = self.out(id);
                // Version 2: dilation (TF's converter's versioning).
                let version = if window.dilations == [1, 1] { 1 } else { 2 };
                self.m.operator_version(
                    B::DepthwiseConv2d,
                    version,
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::DepthwiseConv2D {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        depth_multiplier: m as i32,
                        fused_activation_function: act,
                        dilation_w_factor: window.dilations[1] as i32,
                        dilation_h_factor: window.dilations[0] as i32,
                    },
                );
            }
            Lowering::TransposeConv { x, w, window } => {
                let padding = match window_padding(&window) {
                    WindowPadding::Same => Padding::Same,
                    WindowPadding::Valid => Padding::Valid,
                    WindowPadding::Explicit(_) => {
                        return Err(
                            self.unsupported(id, "TRANSPOSE_CONV takes SAME or VALID padding")
                        )
                    }
                };
                let xt = self.tensor(x)?;
                // [KH·KW·O, I] with rows (ky, kx, o) to TFLite's [O, KH, KW, I].
                let wv = &self.folded[&w];
                let (o, i) = (window.channels as usize, wv.dims[1]);
                let [kh, kw] = window.kernel.map(|k| k as usize);
                let mut data = vec![0f32; wv.data.len()];
                for ky in 0..kh {
                    for kx in 0..kw {
                        for c in 0..o {
                            for k in 0..i {
                                data[((c * kh + ky) * kw + kx) * i + k] =
                                    wv.data[((ky * kw + kx) * o + c) * i + k] as f32;
                            }
                        }
                    }
                }
                let name = self.name(id);
                let wname = format!("{}/filter", self.name(self.strip_reshape(w)));
                let wt =
                    self.m
                        .constant_f32(&wname, &[o as i32, kh as i32, kw as i32, i as i32], &data);
                let [oh, ow] = window.input.map(|d| d as i32);
                let shape = match self.e.batch {
                    Some(b) => self.m.constant_i32(
                        &format!("{name}/output_shape"),
                        &[4],
                        &[b as i32, oh, ow, o as i32],
                    ),
                    None => {
                        // [N, H, W, I] · [1, 0, 0, 0] + [0, OH, OW, O].
                        let dims =
                            self.m
                                .tensor(&format!("{name}/input_shape"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Shape,
                            &[xt],
                            &[dims],
                            BuiltinOptions::Shape {
                                out_type: TensorType::Int32,
                            },
                        );
                        let keep =
                            self.m
                                .constant_i32(&format!("{name}/batch_only"), &[4], &[1, 0, 0, 0]);
                        let batch =
                            self.m
                                .tensor(&format!("{name}/batch"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Mul,
                            &[dims, keep],
                            &[batch],
                            BuiltinOptions::Mul {
                                fused_activation_function: Act::None,
                            },
                        );
                        let rest = self.m.constant_i32(
                            &format!("{name}/image_shape"),
                            &[4],
                            &[0, oh, ow, o as i32],
                        );
                        let shape =
                            self.m
                                .tensor(&format!("{name}/output_shape"), TensorType::Int32, &[4]);
                        self.m.operator(
                            B::Add,
                            &[batch, rest],
                            &[shape],
                            BuiltinOptions::Add {
                                fused_activation_function: Act::None,
                            },
                        );
                        shape
                    }
                };
                let y = self.out(id);
                self.m.operator(
                    B::TransposeConv,
                    &[shape, wt, xt],
                    &[y],
                    BuiltinOptions::TransposeConv {
                        padding,
                        stride_w: window.strides[1] as i32,
                        stride_h: window.strides[0] as i32,
                        fused_activation_function: Act::None,
                    },
                );
            }
            _ => unreachable!("not a convolution: {l:?}"),
        }
        Ok(())
    }

    /// The images `x` as a convolution over `window` reads them, and its
    /// TFLite padding: `x` itself with SAME or VALID when the window's
    /// padding is TF's arithmetic for one of them, else `x` through a PAD
    /// operator (zeros) and VALID.
    fn padded(&mut self, id: NodeId, x: NodeId, window: &Window) -> R<(i32, Padding)> {
        let xt = self.tensor(x)?;
        let pads = match window_padding(window) {
            WindowPadding::Same => return Ok((xt, Padding::Same)),
            WindowPadding::Valid => return Ok((xt, Padding::Valid)),
            WindowPadding::Explicit(p) => p,
        };
        let name = self.name(id);
        let mut dims = self.dims(self.g.shape(x));
        let mut flat = vec![0, 0];
        for (a, (b, e)) in pads.iter().enumerate() {
            dims[1 + a] += (b + e) as i32;
            flat.extend([*b as i32, *e as i32]);
        }
        flat.extend([0, 0]);
        let pt = self
            .m
            .constant_i32(&format!("{name}/paddings"), &[4, 2], &flat);
        let y = self
            .m
            .tensor(&format!("{name}/padded"), TensorType::Float32, &dims);
        self.m.operator(
            B::Pad,
            &[xt, pt],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::PAD),
        );
        Ok((y, Padding::Valid))
    }

    /// The bias of a convolution: the constant, or zeros (TF's converter
    /// gives every convolution a bias).
    fn bias(&mut self, id: NodeId, bias: Option<NodeId>, units: usize) -> R<i32> {
        match bias {
            Some(b) => self.tensor(b),
            None => {
                let name = format!("{}/bias", self.name(id));
                Ok(self
                    .m
                    .constant_f32(&name, &[units as i32], &vec![0.0; units]))
            }
        }
    }
}

/// How TFLite places a window: TF's SAME or VALID arithmetic, or explicit
/// `(before, after)` cells per spatial axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum WindowPadding {
    Same,
    Valid,
    Explicit([(u32, u32); 2]),
}

/// The TFLite padding of `w`: VALID when its output size and padding
/// before are TF's VALID arithmetic on both axes (`out = ⌊(in − k_eff)/s⌋ +
/// 1`, none before), SAME when they are SAME's (`out = ⌈in/s⌉`,
/// `⌊pad_total/2⌋` before; a window both describe is VALID), else the explicit padding a VALID window needs to give the
/// same output (after = what the last window reaches past the image).
pub(super) fn window_padding(w: &Window) -> WindowPadding {
    let mut same = true;
    let mut valid = true;
    let mut pads = [(0, 0); 2];
    for (a, pad) in pads.iter_mut().enumerate() {
        let (n, s, out, before) = (w.input[a], w.strides[a], w.output[a], w.pad_before[a]);
        let k_eff = (w.kernel[a] - 1) * w.dilations[a] + 1;
        let reach = (out.max(1) - 1) * s + k_eff;
        let same_out = n.div_ceil(s);
        let same_total = ((same_out.max(1) - 1) * s + k_eff).saturating_sub(n);
        same &= out == same_out && before == same_total / 2;
        valid &= before == 0 && n >= k_eff && out == (n - k_eff) / s + 1;
        *pad = (before, reach.saturating_sub(n + before));
    }
    if valid {
        WindowPadding::Valid
    } else if same {
        WindowPadding::Same
    } else {
        WindowPadding::Explicit(pads)
    }
}
