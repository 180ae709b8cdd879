//! The int8 kernels of TFLite's convolution and pooling operators over NHWC
//! images: CONV_2D and DEPTHWISE_CONV_2D with per-channel weights,
//! MAX_POOL_2D, AVERAGE_POOL_2D and PAD.
//!
//! Owns: [`ConvQuant`] (a convolution's integer parameters: the input and
//! output zero points, each output channel's `QuantizeMultiplier` of
//! `input_scale * filter_scale[c] / output_scale`, computed in double as
//! TFLite's `PopulateConvolutionQuantizationParams` does, and the fused
//! activation's clamp), [`conv2d_int8`] (`reference_integer_ops::
//! ConvPerChannel`), [`depthwise_conv2d_int8`]
//! (`reference_integer_ops::DepthwiseConvPerChannel`), [`max_pool_int8`],
//! [`average_pool_int8`] (`reference_integer_ops::AveragePool`: the sum of
//! the raw int8 values inside the image divided by their count, rounded half
//! away from zero as `(sum ± count/2) / count` truncates) and [`pad_int8`]
//! (padding with the zero point); `conv2d_sums` and `depthwise_conv2d_sums`
//! (the int32 sums over a window's taps, which the hybrid kernels of
//! `crate::kernels::conv_hybrid` share).
//! Invariants: the window arithmetic and its taps are `crate::kernels::conv`'s (TFLite's
//! `ComputePaddingHeightWidth`); accumulation is int32 of
//! `filter * (input - input_zero_point)` over the taps inside the image
//! (taps outside are omitted, as the zero point would contribute nothing),
//! plus the int32 bias, then TFLite's common `MultiplyByQuantizedMultiplier`
//! as LiteRT's default build compiles it — gemmlowp's double rounding
//! (`crate::quantize::multiply_double_rounding`; LiteRT's reference
//! FULLY_CONNECTED alone inlines a single-rounding copy) — the output zero
//! point and the clamp, so the same inputs give LiteRT's reference
//! kernels' bits (`interop/test_tflite_cnn_int8.py`). A shape or parameter
//! the operator cannot take is an error, never a panic.

use ndarray::{ArrayD, IxDyn};

use crate::kernels::conv::{conv_shapes, depthwise_shapes, nhwc, Geometry, Taps};
use crate::kernels::int8::{activation_range, per_tensor};
use crate::model::Tensor;
use crate::quantize::{multiply_double_rounding, quantize_multiplier};
use crate::schema::ActivationFunctionType;

type Result<T> = std::result::Result<T, String>;

/// The integer parameters of an int8 convolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvQuant {
    pub input_zero_point: i32,
    pub output_zero_point: i32,
    /// `(multiplier, shift)` per output channel.
    pub multipliers: Vec<(i32, i32)>,
    /// The clamp of the fused activation, in output units.
    pub activation: (i32, i32),
}

impl ConvQuant {
    /// From the tensors' quantization: per-tensor input and output, the
    /// filter's scales one per output channel along `axis` (or one for all)
    /// and zero points 0.
    pub fn new(
        input: &Tensor,
        filter: &Tensor,
        output: &Tensor,
        axis: usize,
        channels: usize,
        activation: ActivationFunctionType,
    ) -> Result<ConvQuant> {
        let (x_scale, x_zp) = per_tensor(input)?;
        let (y_scale, y_zp) = per_tensor(output)?;
        let q = filter
            .quantization
            .as_ref()
            .ok_or_else(|| format!("filter `{}` has no quantization parameters", filter.name))?;
        let scales = match q.scale.len() {
            1 => vec![q.scale[0]; channels],
            n if n == channels && q.quantized_dimension as usize == axis => q.scale.clone(),
            n => {
                return Err(format!(
                    "filter `{}` has {n} scales along dimension {} for {channels} output channels along dimension {axis}",
                    filter.name, q.quantized_dimension
                ))
            }
        };
        if q.zero_point.iter().any(|&z| z != 0) {
            return Err(format!(
                "filter `{}` has a zero point other than 0 (int8 filters are symmetric)",
                filter.name
            ));
        }
        Ok(ConvQuant {
            input_zero_point: x_zp,
            output_zero_point: y_zp,
            multipliers: scales
                .iter()
                .map(|&s| {
                    quantize_multiplier(f64::from(x_scale) * f64::from(s) / f64::from(y_scale))
                })
                .collect(),
            activation: activation_range(activation, y_scale, y_zp)?,
        })
    }

    /// An accumulator (bias added) to the output value.
    fn output(&self, channel: usize, acc: i32) -> i8 {
        let (m, shift) = self.multipliers[channel];
        let v = multiply_double_rounding(acc, m, shift) + self.output_zero_point;
        v.clamp(self.activation.0, self.activation.1) as i8
    }
}

fn bias_values(bias: Option<&ArrayD<i32>>, channels: usize) -> Result<Vec<i32>> {
    match bias {
        None => Ok(vec![0; channels]),
        Some(b) if b.len() == channels => Ok(b.iter().copied().collect()),
        Some(b) => Err(format!(
            "bias of shape {:?} for {channels} output channels",
            b.shape()
        )),
    }
}

/// The values of `a` as int32, less `zero_point`.
fn widened(a: &ArrayD<i8>, zero_point: i32) -> Vec<i32> {
    a.iter().map(|&v| i32::from(v) - zero_point).collect()
}

fn check_channels(q: &ConvQuant, channels: usize) -> Result<()> {
    if q.multipliers.len() != channels {
        return Err(format!(
            "{} output multipliers for {channels} output channels",
            q.multipliers.len()
        ));
    }
    Ok(())
}

/// The int32 sums of CONV_2D over the taps inside the image, in NHWC
/// output order: `emit(image, channel, sum)` for the widened input
/// `xv [N, H, W, C]` (less its zero point) by the widened
/// `fv [O, KH, KW, C]` (`shapes` as [`conv_shapes`] gives them), over the
/// `[OH, OW]` window positions `out` of `taps`.
pub(crate) fn conv2d_sums(
    xv: &[i32],
    fv: &[i32],
    ([n, h, w, c], [o, kh, kw]): ([usize; 4], [usize; 3]),
    [oh, ow]: [usize; 2],
    taps: &Taps,
    mut emit: impl FnMut(usize, usize, i32),
) {
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for oc in 0..o {
                    let mut acc = 0i32;
                    taps.for_each([oy, ox], |ky, kx, iy, ix| {
                        let xa = ((bn * h + iy) * w + ix) * c;
                        let fa = ((oc * kh + ky) * kw + kx) * c;
                        for (xi, fi) in xv[xa..xa + c].iter().zip(&fv[fa..fa + c]) {
                            acc = acc.wrapping_add(fi * xi);
                        }
                    });
                    emit(bn, oc, acc);
                }
            }
        }
    }
}

/// The int32 sums of DEPTHWISE_CONV_2D over the taps inside the image, one
/// output cell at a time in NHWC order: `emit(image, sums)` with the `C·M`
/// sums of the cell, for the widened input `xv [N, H, W, C]` (less its zero
/// point) by the widened `fv [1, KH, KW, C·M]` (`shapes` as
/// [`depthwise_shapes`] gives them), output channel `c·M + m` reading input
/// channel `c`, over the `[OH, OW]` window positions `out` of `taps`.
pub(crate) fn depthwise_conv2d_sums(
    xv: &[i32],
    fv: &[i32],
    ([n, h, w, c], [_, kw, oc]): ([usize; 4], [usize; 3]),
    multiplier: usize,
    [oh, ow]: [usize; 2],
    taps: &Taps,
    mut emit: impl FnMut(usize, &[i32]),
) {
    let mut acc = vec![0i32; oc];
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                acc.iter_mut().for_each(|a| *a = 0);
                taps.for_each([oy, ox], |ky, kx, iy, ix| {
                    let xa = ((bn * h + iy) * w + ix) * c;
                    let fa = (ky * kw + kx) * oc;
                    for (k, a) in acc.iter_mut().enumerate() {
                        *a = a.wrapping_add(fv[fa + k] * xv[xa + k / multiplier]);
                    }
                });
                emit(bn, &acc);
            }
        }
    }
}

/// int8 CONV_2D: `x [N, H, W, C]` by `filter [O, KH, KW, C]`, plus the int32
/// `bias [O]` (TFLite's `reference_integer_ops::ConvPerChannel`).
pub fn conv2d_int8(
    x: &ArrayD<i8>,
    filter: &ArrayD<i8>,
    bias: Option<&ArrayD<i32>>,
    g: Geometry,
    q: &ConvQuant,
) -> Result<ArrayD<i8>> {
    let shapes = conv_shapes(x, filter)?;
    let ([n, h, w, _], [o, kh, kw]) = shapes;
    check_channels(q, o)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, o)?;
    let (xv, fv) = (widened(x, q.input_zero_point), widened(filter, 0));
    let mut out = Vec::with_capacity(n * oh * ow * o);
    conv2d_sums(&xv, &fv, shapes, [oh, ow], &taps, |_, oc, acc| {
        out.push(q.output(oc, acc.wrapping_add(b[oc])));
    });
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), out).map_err(|e| e.to_string())
}

/// int8 DEPTHWISE_CONV_2D: `x [N, H, W, C]` by `filter [1, KH, KW, C·M]`,
/// plus the int32 `bias [C·M]`; output channel `c·M + m` reads input
/// channel `c` (TFLite's `reference_integer_ops::DepthwiseConvPerChannel`).
pub fn depthwise_conv2d_int8(
    x: &ArrayD<i8>,
    filter: &ArrayD<i8>,
    bias: Option<&ArrayD<i32>>,
    multiplier: usize,
    g: Geometry,
    q: &ConvQuant,
) -> Result<ArrayD<i8>> {
    let shapes = depthwise_shapes(x, filter, multiplier)?;
    let ([n, h, w, _], [kh, kw, oc]) = shapes;
    check_channels(q, oc)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, oc)?;
    let (xv, fv) = (widened(x, q.input_zero_point), widened(filter, 0));
    let mut out = Vec::with_capacity(n * oh * ow * oc);
    depthwise_conv2d_sums(&xv, &fv, shapes, multiplier, [oh, ow], &taps, |_, acc| {
        out.extend(
            acc.iter()
                .zip(&b)
                .enumerate()
                .map(|(k, (&a, &b0))| q.output(k, a.wrapping_add(b0))),
        );
    });
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, oc]), out).map_err(|e| e.to_string())
}

/// The int8 pools: each output cell reads the cells of its window inside
/// the image and gives `f(values)` clamped to `activation`.
fn pool_int8(
    x: &ArrayD<i8>,
    filter: [usize; 2],
    g: Geometry,
    activation: (i32, i32),
    f: impl Fn(&[i32]) -> Result<i32>,
) -> Result<ArrayD<i8>> {
    let [n, h, w, c] = nhwc(x, "input")?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], filter, g.strides, [1, 1])?;
    let xv = widened(x, 0);
    let mut out = Vec::with_capacity(n * oh * ow * c);
    let mut cells = Vec::with_capacity(filter[0] * filter[1]);
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ch in 0..c {
                    cells.clear();
                    taps.for_each([oy, ox], |_, _, iy, ix| {
                        cells.push(xv[((bn * h + iy) * w + ix) * c + ch]);
                    });
                    let v = f(&cells)?;
                    out.push(v.clamp(activation.0, activation.1) as i8);
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, c]), out).map_err(|e| e.to_string())
}

/// int8 MAX_POOL_2D (input and output share their parameters): the largest
/// value of each window, clamped to the fused activation's range.
pub fn max_pool_int8(
    x: &ArrayD<i8>,
    filter: [usize; 2],
    g: Geometry,
    activation: (i32, i32),
) -> Result<ArrayD<i8>> {
    pool_int8(x, filter, g, activation, |cells| {
        Ok(cells.iter().copied().fold(i32::from(i8::MIN), i32::max))
    })
}

/// int8 AVERAGE_POOL_2D (input and output share their parameters): the sum
/// of each window's cells inside the image divided by their count, rounded
/// as TFLite's reference kernel does (`(sum + count/2) / count` for a
/// positive sum, `(sum - count/2) / count` otherwise, C's truncating
/// division), clamped to the fused activation's range.
pub fn average_pool_int8(
    x: &ArrayD<i8>,
    filter: [usize; 2],
    g: Geometry,
    activation: (i32, i32),
) -> Result<ArrayD<i8>> {
    pool_int8(x, filter, g, activation, |cells| {
        let count = cells.len() as i32;
        if count == 0 {
            return Err("a window with no cell inside the image".into());
        }
        let sum: i32 = cells.iter().sum();
        Ok(if sum > 0 {
            (sum + count / 2) / count
        } else {
            (sum - count / 2) / count
        })
    })
}

/// int8 PAD: `pads` (before and after, per axis) cells of `value` (the
/// zero point: the padding is the real value 0).
pub fn pad_int8(x: &ArrayD<i8>, pads: &[i64], value: i8) -> Result<ArrayD<i8>> {
    if pads.len() != 2 * x.ndim() || pads.iter().any(|&p| p < 0) {
        return Err(format!(
            "paddings {pads:?} for a tensor of rank {}",
            x.ndim()
        ));
    }
    let shape: Vec<usize> = (0..x.ndim())
        .map(|i| x.shape()[i] + (pads[2 * i] + pads[2 * i + 1]) as usize)
        .collect();
    let mut y = ArrayD::from_elem(IxDyn(&shape), value);
    let mut v = y.view_mut();
    for i in 0..x.ndim() {
        let b = pads[2 * i] as usize;
        v.slice_axis_inplace(ndarray::Axis(i), ndarray::Slice::from(b..b + x.shape()[i]));
    }
    v.assign(x);
    Ok(y)
}
