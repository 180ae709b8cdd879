//! The hybrid kernels (int8 filters, float activations: dynamic-range
//! quantization) of TFLite's convolutions over NHWC images: CONV_2D,
//! DEPTHWISE_CONV_2D and TRANSPOSE_CONV.
//!
//! Owns: [`filter_scales`] (a filter's scales, one per output channel along
//! its quantized dimension), [`conv2d_hybrid`] (LiteRT's `EvalHybridPerChannel`
//! with `reference_ops::HybridConvPerChannel`, or, when every channel has
//! the same scale, `EvalHybrid` with `optimized_ops::HybridConv`, the one
//! implementation LiteRT has of it), [`depthwise_conv2d_hybrid`]
//! (`reference_integer_ops::DepthwiseConvHybridPerChannel`) and
//! [`transpose_conv_hybrid`] (`reference_ops::HybridTransposeConv`, which
//! LiteRT runs whatever kernel it was asked for).
//!
//! Each image of the batch (all its `H·W·C` values) is quantized to int8
//! with one scale and zero point (`crate::quantize::asymmetric_quantize_row`;
//! the per-tensor CONV_2D quantizes symmetrically,
//! `crate::quantize::symmetric_quantize_row`), the taps inside the image
//! accumulate `filter · (q − zero_point)` in int32 (a tap outside adds
//! nothing: the real 0), and the sum is rescaled to float in the order each
//! LiteRT kernel multiplies: CONV_2D `(acc · filter_scale[c]) · input_scale`,
//! DEPTHWISE_CONV_2D `acc · (filter_scale[c] · input_scale)`, the per-tensor
//! CONV_2D `acc · (input_scale · filter_scale)`, then the float bias.
//! TRANSPOSE_CONV scatters: each input value's products
//! `((q − zp) · w · filter_scale[c]) · input_scale` are added to the float
//! outputs it reaches, input cell by input cell (row, column, channel, then
//! filter row and column), and the bias is added last.
//!
//! Invariants: the same inputs give LiteRT's reference kernels' bits
//! (`interop/test_tflite_cnn_dynamic.py`); the window arithmetic and its
//! taps are `crate::kernels::conv`'s, the int32 sums of CONV_2D and
//! DEPTHWISE_CONV_2D `crate::kernels::conv_int8`'s; the fused activation is
//! the caller's (`crate::interpreter`), a clamp as LiteRT's; a shape or
//! parameter the operator cannot take is an error, never a panic.

use ndarray::{ArrayD, IxDyn};

use crate::kernels::conv::{conv_shapes, depthwise_shapes, transpose_conv_shapes, Geometry, Taps};
use crate::kernels::conv_int8::{conv2d_sums, depthwise_conv2d_sums};
use crate::model::Tensor;
use crate::quantize::{asymmetric_quantize_row, symmetric_quantize_row};

type Result<T> = std::result::Result<T, String>;

/// The scales of an int8 `filter` with `channels` output channels along
/// dimension `axis`: one per channel along `axis`, or (when `one_for_all`:
/// CONV_2D and TRANSPOSE_CONV take it, DEPTHWISE_CONV_2D does not) one for
/// all. The zero points must be 0 (hybrid filters are symmetric).
pub fn filter_scales(
    filter: &Tensor,
    axis: usize,
    channels: usize,
    one_for_all: bool,
) -> Result<Vec<f32>> {
    let q = filter
        .quantization
        .as_ref()
        .filter(|q| !q.scale.is_empty())
        .ok_or_else(|| format!("int8 filter `{}` has no scales", filter.name))?;
    if q.zero_point.iter().any(|&z| z != 0) {
        return Err(format!(
            "int8 filter `{}` has a zero point other than 0 (hybrid filters are symmetric)",
            filter.name
        ));
    }
    match q.scale.len() {
        n if n == channels && q.quantized_dimension as usize == axis => Ok(q.scale.clone()),
        1 if one_for_all => Ok(vec![q.scale[0]; channels]),
        n => Err(format!(
            "int8 filter `{}` has {n} scales along dimension {} for {channels} output channels along dimension {axis}",
            filter.name, q.quantized_dimension
        )),
    }
}

/// The float bias of `channels` output channels (none: no addition).
fn bias_values(bias: Option<&ArrayD<f32>>, channels: usize) -> Result<Option<Vec<f32>>> {
    match bias {
        None => Ok(None),
        Some(b) if b.len() == channels => Ok(Some(b.iter().copied().collect())),
        Some(b) => Err(format!(
            "bias of shape {:?} for {channels} output channels",
            b.shape()
        )),
    }
}

fn check_scales(scales: &[f32], channels: usize) -> Result<()> {
    if scales.len() != channels {
        return Err(format!(
            "{} filter scales for {channels} output channels",
            scales.len()
        ));
    }
    Ok(())
}

/// Each of the `n` images of `x` quantized asymmetrically: the values less
/// their image's zero point (as int32) and each image's scale.
fn quantize_images(x: &ArrayD<f32>, n: usize) -> (Vec<i32>, Vec<f32>) {
    let xs: Vec<f32> = x.iter().copied().collect();
    let size = xs.len().checked_div(n).unwrap_or(0);
    let mut q = vec![0i8; size];
    let mut widened = Vec::with_capacity(xs.len());
    let mut scales = Vec::with_capacity(n);
    for image in xs.chunks(size.max(1)).take(n) {
        let (scale, zp) = asymmetric_quantize_row(image, &mut q);
        widened.extend(q.iter().map(|&v| i32::from(v) - zp));
        scales.push(scale);
    }
    (widened, scales)
}

/// Hybrid CONV_2D: `x [N, H, W, C]` by the int8 `filter [O, KH, KW, C]`
/// with `scales[O]`, plus the float `bias [O]`, before the fused activation.
/// Filters whose channels all have one scale take LiteRT's per-tensor
/// kernel (symmetric input quantization), the others the per-channel one.
pub fn conv2d_hybrid(
    x: &ArrayD<f32>,
    filter: &ArrayD<i8>,
    scales: &[f32],
    bias: Option<&ArrayD<f32>>,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, c], [o, kh, kw]) = conv_shapes(x, filter)?;
    check_scales(scales, o)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, o)?;
    let fv: Vec<i32> = filter.iter().map(|&v| i32::from(v)).collect();
    // LiteRT: per channel when the filter has several scales, not all equal.
    let per_channel = scales.iter().any(|&s| s != scales[0]);
    let (xv, image_scales) = if per_channel {
        quantize_images(x, n)
    } else {
        let xs: Vec<f32> = x.iter().copied().collect();
        let size = h * w * c;
        let mut q = vec![0i8; size];
        let mut widened = Vec::with_capacity(xs.len());
        let mut image_scales = Vec::with_capacity(n);
        for image in xs.chunks(size.max(1)).take(n) {
            // `scaling_factors_ptr[b] *= scale`: one float product.
            image_scales.push(symmetric_quantize_row(image, &mut q) * scales[0]);
            widened.extend(q.iter().map(|&v| i32::from(v)));
        }
        (widened, image_scales)
    };
    let mut out = Vec::with_capacity(n * oh * ow * o);
    // The sums of the images quantized: none when the images are empty.
    let shapes = ([image_scales.len(), h, w, c], [o, kh, kw]);
    conv2d_sums(&xv, &fv, shapes, [oh, ow], &taps, |bn, oc, acc| {
        let mut y = if per_channel {
            acc as f32 * scales[oc] * image_scales[bn]
        } else {
            acc as f32 * image_scales[bn]
        };
        if let Some(b) = &b {
            y += b[oc];
        }
        out.push(y);
    });
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), out).map_err(|e| e.to_string())
}

/// Hybrid DEPTHWISE_CONV_2D: `x [N, H, W, C]` by the int8
/// `filter [1, KH, KW, C·M]` with `scales[C·M]`, plus the float
/// `bias [C·M]`, before the fused activation; output channel `c·M + m`
/// reads input channel `c`.
pub fn depthwise_conv2d_hybrid(
    x: &ArrayD<f32>,
    filter: &ArrayD<i8>,
    scales: &[f32],
    bias: Option<&ArrayD<f32>>,
    multiplier: usize,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, c], [kh, kw, oc]) = depthwise_shapes(x, filter, multiplier)?;
    check_scales(scales, oc)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, oc)?;
    let fv: Vec<i32> = filter.iter().map(|&v| i32::from(v)).collect();
    let (xv, image_scales) = quantize_images(x, n);
    let mut out = Vec::with_capacity(n * oh * ow * oc);
    // The sums of the images quantized: none when the images are empty.
    let shapes = ([image_scales.len(), h, w, c], [kh, kw, oc]);
    depthwise_conv2d_sums(&xv, &fv, shapes, multiplier, [oh, ow], &taps, |bn, acc| {
        let sf = image_scales[bn];
        out.extend(acc.iter().enumerate().map(|(k, &a)| {
            let y = a as f32 * (scales[k] * sf);
            b.as_ref().map_or(y, |b| y + b[k])
        }));
    });
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, oc]), out).map_err(|e| e.to_string())
}

/// Hybrid TRANSPOSE_CONV: `x [N, H, W, I]` by the int8
/// `weights [O, KH, KW, I]` with `scales[O]` to `output_shape
/// [N, OH, OW, O]`, plus the float `bias [O]`, before the fused activation;
/// the padding is computed from the output size, as the float kernel's.
pub fn transpose_conv_hybrid(
    output_shape: &[i64],
    weights: &ArrayD<i8>,
    scales: &[f32],
    x: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, i], [o, kh, kw], [oh, ow]) = transpose_conv_shapes(output_shape, weights, x)?;
    check_scales(scales, o)?;
    let taps = Taps::transposed(g.padding, [oh, ow], [kh, kw], g.strides)?;
    let b = bias_values(bias, o)?;
    let wv: Vec<i32> = weights.iter().map(|&v| i32::from(v)).collect();
    let (xv, image_scales) = quantize_images(x, n);
    let mut y = vec![0f32; n * oh * ow * o];
    for (bn, &sf) in image_scales.iter().enumerate() {
        for iy in 0..h {
            for ix in 0..w {
                for k in 0..i {
                    let xq = xv[((bn * h + iy) * w + ix) * i + k];
                    taps.for_each([iy, ix], |ky, kx, oy, ox| {
                        let ya = ((bn * oh + oy) * ow + ox) * o;
                        for c in 0..o {
                            let acc = xq.wrapping_mul(wv[((c * kh + ky) * kw + kx) * i + k]);
                            y[ya + c] += acc as f32 * scales[c] * sf;
                        }
                    });
                }
            }
        }
    }
    if let Some(b) = &b {
        for (k, v) in y.iter_mut().enumerate() {
            *v += b[k % o];
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), y).map_err(|e| e.to_string())
}
