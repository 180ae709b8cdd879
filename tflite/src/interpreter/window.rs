//! The convolutions and pools: their options as the model gives them
//! (`WindowOptions`, checked positive), and each operator to its float
//! ([`crate::kernels::conv`]), int8 ([`crate::kernels::conv_int8`]) or
//! hybrid ([`crate::kernels::conv_hybrid`]) kernel.
//!
//! Invariants: options that are not the operator's own, or a stride,
//! dilation, filter size or depth multiplier that is not positive, are an
//! error; an int8 pool's input and output have the same parameters.

use ndarray::ArrayD;

use super::{Interpreter, Value};
use crate::kernels::conv;
use crate::kernels::conv_hybrid;
use crate::kernels::conv_int8;
use crate::kernels::int8;
use crate::model::{BuiltinOptions, Operator};
use crate::schema::{ActivationFunctionType, BuiltinOperator as B};

type Result<T> = std::result::Result<T, String>;

/// A positive option value as a size.
fn size(v: i32, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{what} {v} is not positive"))
}

/// The options of a convolution or pool, as the model gives them: the
/// `[height, width]` strides, dilations (1 for TRANSPOSE_CONV and the
/// pools) and filter size (0 but for the pools), the depth multiplier (0
/// but for DEPTHWISE_CONV_2D).
#[derive(Clone, Copy)]
struct WindowOptions {
    padding: crate::schema::Padding,
    strides: [i32; 2],
    dilations: [i32; 2],
    filter: [i32; 2],
    depth_multiplier: i32,
}

impl WindowOptions {
    /// The window options of a `builtin` convolution or pool, if `options`
    /// are the ones it takes.
    fn of(builtin: B, options: &BuiltinOptions) -> Result<WindowOptions> {
        let none = WindowOptions {
            padding: crate::schema::Padding::Valid,
            strides: [1, 1],
            dilations: [1, 1],
            filter: [0, 0],
            depth_multiplier: 0,
        };
        Ok(match (builtin, options) {
            (
                B::Conv2d,
                &BuiltinOptions::Conv2D {
                    padding,
                    stride_w,
                    stride_h,
                    dilation_w_factor,
                    dilation_h_factor,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                dilations: [dilation_h_factor, dilation_w_factor],
                ..none
            },
            (
                B::DepthwiseConv2d,
                &BuiltinOptions::DepthwiseConv2D {
                    padding,
                    stride_w,
                    stride_h,
                    depth_multiplier,
                    dilation_w_factor,
                    dilation_h_factor,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                dilations: [dilation_h_factor, dilation_w_factor],
                depth_multiplier,
                ..none
            },
            (
                B::TransposeConv,
                &BuiltinOptions::TransposeConv {
                    padding,
                    stride_w,
                    stride_h,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                ..none
            },
            (
                B::MaxPool2d | B::AveragePool2d,
                &BuiltinOptions::Pool2D {
                    padding,
                    stride_w,
                    stride_h,
                    filter_width,
                    filter_height,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                filter: [filter_height, filter_width],
                ..none
            },
            _ => return Err(foreign_options(options)),
        })
    }

    /// The window's geometry (positive strides and dilations).
    fn geometry(&self) -> Result<conv::Geometry> {
        let (s, d) = (self.strides, self.dilations);
        Ok(conv::Geometry {
            padding: self.padding,
            strides: [size(s[0], "stride_h")?, size(s[1], "stride_w")?],
            dilations: [
                size(d[0], "dilation_h_factor")?,
                size(d[1], "dilation_w_factor")?,
            ],
        })
    }

    /// A pool's positive `[height, width]` filter size.
    fn filter(&self) -> Result<[usize; 2]> {
        Ok([
            size(self.filter[0], "filter_height")?,
            size(self.filter[1], "filter_width")?,
        ])
    }

    /// DEPTHWISE_CONV_2D's positive depth multiplier.
    fn depth_multiplier(&self) -> Result<usize> {
        size(self.depth_multiplier, "depth_multiplier")
    }
}

/// The float bias of a windowed operator, its optional input `i`.
fn float_bias<'v>(
    opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    i: usize,
) -> Result<Option<&'v ArrayD<f32>>> {
    match opt_arg(i)? {
        Some(b) => b.f32().map(Some),
        None => Ok(None),
    }
}

/// The options of a windowed operator that are not its own.
fn foreign_options(o: &BuiltinOptions) -> String {
    format!("options {} do not belong to this operator", o.describe())
}

impl Interpreter<'_> {
    /// The int8 convolution and pooling operators
    /// (`crate::kernels::conv_int8`), their fused activation included.
    pub(super) fn windowed_int8<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
        activation: ActivationFunctionType,
    ) -> Result<ArrayD<i8>> {
        let g = &self.model.subgraphs[0];
        let tensor = |i: usize| &g.tensors[op.inputs[i] as usize];
        let out = &g.tensors[op.outputs[0] as usize];
        let int8_arg = |i: usize| -> Result<&'v ArrayD<i8>> {
            match arg(i)? {
                Value::I8(a) => Ok(a),
                v => Err(format!("input {i} of type {} (want INT8)", v.type_name())),
            }
        };
        let bias = || -> Result<Option<&'v ArrayD<i32>>> {
            match opt_arg(2)? {
                Some(Value::I32(b)) => Ok(Some(b)),
                Some(b) => Err(format!("an int8 convolution with a {} bias", b.type_name())),
                None => Ok(None),
            }
        };
        let x = int8_arg(0)?;
        // The filter and the integer parameters of a convolution whose
        // output channels are along the filter's `axis`.
        let filter = |axis: usize| -> Result<(&'v ArrayD<i8>, conv_int8::ConvQuant)> {
            let f = int8_arg(1)?;
            let channels = f.shape().get(axis).copied().unwrap_or(0);
            let q =
                conv_int8::ConvQuant::new(tensor(0), tensor(1), out, axis, channels, activation)?;
            Ok((f, q))
        };
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => {
                let (f, q) = filter(0)?;
                conv_int8::conv2d_int8(x, f, bias()?, w.geometry()?, &q)
            }
            B::DepthwiseConv2d => {
                let (f, q) = filter(3)?;
                conv_int8::depthwise_conv2d_int8(
                    x,
                    f,
                    bias()?,
                    w.depth_multiplier()?,
                    w.geometry()?,
                    &q,
                )
            }
            B::MaxPool2d | B::AveragePool2d => {
                if int8::per_tensor(tensor(0))? != int8::per_tensor(out)? {
                    return Err(
                        "an int8 pool's input and output have different quantization parameters"
                            .into(),
                    );
                }
                let (scale, zp) = int8::per_tensor(out)?;
                let act = int8::activation_range(activation, scale, zp)?;
                let filter = w.filter()?;
                let g = w.geometry()?;
                if builtin == B::MaxPool2d {
                    conv_int8::max_pool_int8(x, filter, g, act)
                } else {
                    conv_int8::average_pool_int8(x, filter, g, act)
                }
            }
            _ => Err(foreign_options(&op.options)),
        }
    }

    /// The hybrid convolutions (int8 filters, float activations:
    /// `crate::kernels::conv_hybrid`), before their fused activation.
    pub(super) fn windowed_hybrid<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    ) -> Result<ArrayD<f32>> {
        let g = &self.model.subgraphs[0];
        let tensor = |i: usize| &g.tensors[op.inputs[i] as usize];
        // The int8 filter and its scales, one per output channel along `axis`.
        let filter = |axis: usize, one_for_all: bool| -> Result<(&'v ArrayD<i8>, Vec<f32>)> {
            let f = match arg(1)? {
                Value::I8(f) => f,
                v => return Err(format!("filter of type {} (want INT8)", v.type_name())),
            };
            let channels = f.shape().get(axis).copied().unwrap_or(0);
            let scales = conv_hybrid::filter_scales(tensor(1), axis, channels, one_for_all)?;
            Ok((f, scales))
        };
        let bias = |i: usize| float_bias(opt_arg, i);
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => {
                let (f, scales) = filter(0, true)?;
                conv_hybrid::conv2d_hybrid(arg(0)?.f32()?, f, &scales, bias(2)?, w.geometry()?)
            }
            B::DepthwiseConv2d => {
                let (f, scales) = filter(3, false)?;
                conv_hybrid::depthwise_conv2d_hybrid(
                    arg(0)?.f32()?,
                    f,
                    &scales,
                    bias(2)?,
                    w.depth_multiplier()?,
                    w.geometry()?,
                )
            }
            B::TransposeConv => {
                let (f, scales) = filter(0, true)?;
                conv_hybrid::transpose_conv_hybrid(
                    &arg(0)?.ints()?,
                    f,
                    &scales,
                    arg(2)?.f32()?,
                    bias(3)?,
                    w.geometry()?,
                )
            }
            _ => Err(foreign_options(&op.options)),
        }
    }

    /// The float convolution and pooling operators (`crate::kernels::conv`),
    /// before their fused activation.
    pub(super) fn windowed<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    ) -> Result<ArrayD<f32>> {
        let bias = |i: usize| float_bias(opt_arg, i);
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => conv::conv2d(arg(0)?.f32()?, arg(1)?.f32()?, bias(2)?, w.geometry()?),
            B::DepthwiseConv2d => conv::depthwise_conv2d(
                arg(0)?.f32()?,
                arg(1)?.f32()?,
                bias(2)?,
                w.depth_multiplier()?,
                w.geometry()?,
            ),
            B::TransposeConv => conv::transpose_conv(
                &arg(0)?.ints()?,
                arg(1)?.f32()?,
                arg(2)?.f32()?,
                bias(3)?,
                w.geometry()?,
            ),
            B::MaxPool2d | B::AveragePool2d => conv::pool2d(
                arg(0)?.f32()?,
                w.filter()?,
                w.geometry()?,
                builtin == B::AveragePool2d,
            ),
            _ => Err(foreign_options(&op.options)),
        }
    }
}
