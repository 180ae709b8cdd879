//! The builtin functions of the spec language, as one table.
//!
//! Owns: each builtin's name (TF's), its signature (TF's argument names) and
//! how it lowers to IR. Composite ops (softmax, the cross-entropies) lower to
//! primitive ops in the numerically stable forms TF uses, so autodiff only
//! needs primitive rules.
//! Invariant: a lowering checks dtypes and shapes before building nodes.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::activations;
use super::args::{self, opt, req, Bound, Param};
use super::convolution;
use super::expr::{ClassUse, Lowerer, R};
use super::image_ops;
use super::layers;
use super::normalization;
use crate::ir::{shape, BinaryOp, DType, Dim, NodeId, Op, ReduceKind, Shape, UnaryOp};

type Lower = fn(&mut Lowerer, &Bound, &Call) -> R<NodeId>;

pub struct Builtin {
    pub name: &'static str,
    pub params: &'static [Param],
    pub lower: Lower,
}

macro_rules! unary {
    ($name:literal, $arg:literal, $op:expr) => {
        Builtin {
            name: $name,
            params: &[req($arg)],
            lower: |lw, b, _| {
                let x = lw.float(b.req(0))?;
                Ok(lw.g.unary($op, x))
            },
        }
    };
}

/// `fused_batch_norm`'s signature, shared by its three results.
const FUSED_BATCH_NORM: &[Param] = &[
    req("x"),
    req("scale"),
    req("offset"),
    opt("mean"),
    opt("variance"),
    opt("epsilon"),
    opt("is_training"),
    opt("exponential_avg_factor"),
];

/// Every builtin. Aliases are separate rows pointing at the same lowering.
pub const BUILTINS: &[Builtin] = &[
    unary!("relu", "features", UnaryOp::Relu),
    unary!("sigmoid", "x", UnaryOp::Sigmoid),
    unary!("tanh", "x", UnaryOp::Tanh),
    unary!("exp", "x", UnaryOp::Exp),
    unary!("log", "x", UnaryOp::Log),
    unary!("log1p", "x", UnaryOp::Log1p),
    unary!("sqrt", "x", UnaryOp::Sqrt),
    unary!("square", "x", UnaryOp::Square),
    unary!("abs", "x", UnaryOp::Abs),
    unary!("sign", "x", UnaryOp::Sign),
    unary!("softplus", "features", UnaryOp::Softplus),
    unary!("reciprocal", "x", UnaryOp::Recip),
    unary!("floor", "x", UnaryOp::Floor),
    unary!("ceil", "x", UnaryOp::Ceil),
    unary!("sin", "x", UnaryOp::Sin),
    unary!("cos", "x", UnaryOp::Cos),
    Builtin {
        name: "leaky_relu",
        params: &[req("features"), opt("alpha")],
        lower: activations::leaky_relu,
    },
    Builtin {
        name: "elu",
        params: &[req("features")],
        lower: activations::elu,
    },
    Builtin {
        name: "selu",
        params: &[req("features")],
        lower: activations::selu,
    },
    Builtin {
        name: "gelu",
        params: &[req("features"), opt("approximate")],
        lower: activations::gelu,
    },
    Builtin {
        name: "silu",
        params: &[req("features")],
        lower: activations::silu,
    },
    Builtin {
        name: "swish",
        params: &[req("features"), opt("beta")],
        lower: activations::swish,
    },
    Builtin {
        name: "softsign",
        params: &[req("features")],
        lower: activations::softsign,
    },
    Builtin {
        name: "relu6",
        params: &[req("features")],
        lower: activations::relu6,
    },
    Builtin {
        name: "rsqrt",
        params: &[req("x")],
        lower: normalization::rsqrt,
    },
    Builtin {
        name: "moments_mean",
        params: &[req("x"), req("axes"), opt("shift"), opt("keepdims")],
        lower: normalization::moments_mean,
    },
    Builtin {
        name: "moments_variance",
        params: &[req("x"), req("axes"), opt("shift"), opt("keepdims")],
        lower: normalization::moments_variance,
    },
    Builtin {
        name: "batch_normalization",
        params: &[
            req("x"),
            req("mean"),
            req("variance"),
            req("offset"),
            req("scale"),
            req("variance_epsilon"),
        ],
        lower: normalization::batch_normalization,
    },
    Builtin {
        name: "fused_batch_norm",
        params: FUSED_BATCH_NORM,
        lower: normalization::fused_batch_norm_y,
    },
    Builtin {
        name: "fused_batch_norm_mean",
        params: FUSED_BATCH_NORM,
        lower: normalization::fused_batch_norm_mean,
    },
    Builtin {
        name: "fused_batch_norm_variance",
        params: FUSED_BATCH_NORM,
        lower: normalization::fused_batch_norm_variance,
    },
    Builtin {
        name: "local_response_normalization",
        params: &[
            req("input"),
            opt("depth_radius"),
            opt("bias"),
            opt("alpha"),
            opt("beta"),
        ],
        lower: normalization::local_response_normalization,
    },
    Builtin {
        name: "maximum",
        params: &[req("x"), req("y")],
        lower: |lw, b, c| elementwise2(lw, b, c, BinaryOp::Max),
    },
    Builtin {
        name: "minimum",
        params: &[req("x"), req("y")],
        lower: |lw, b, c| elementwise2(lw, b, c, BinaryOp::Min),
    },
    Builtin {
        name: "pow",
        params: &[req("x"), req("y")],
        lower: |lw, b, c| elementwise2(lw, b, c, BinaryOp::Pow),
    },
    Builtin {
        name: "where",
        params: &[req("condition"), req("x"), req("y")],
        lower: lower_where,
    },
    Builtin {
        name: "matmul",
        params: &[req("a"), req("b"), opt("transpose_a"), opt("transpose_b")],
        lower: lower_matmul,
    },
    Builtin {
        name: "bias_add",
        params: &[req("value"), req("bias")],
        lower: lower_bias_add,
    },
    Builtin {
        name: "total_variation",
        params: &[req("images")],
        lower: image_ops::total_variation,
    },
    Builtin {
        name: "image_gradients_dy",
        params: &[req("image")],
        lower: image_ops::image_gradients_dy,
    },
    Builtin {
        name: "image_gradients_dx",
        params: &[req("image")],
        lower: image_ops::image_gradients_dx,
    },
    Builtin {
        name: "sobel_edges",
        params: &[req("image")],
        lower: image_ops::sobel_edges,
    },
    Builtin {
        name: "psnr",
        params: &[req("a"), req("b"), req("max_val")],
        lower: image_ops::psnr,
    },
    Builtin {
        name: "ssim",
        params: &[
            req("img1"),
            req("img2"),
            req("max_val"),
            opt("filter_size"),
            opt("filter_sigma"),
            opt("k1"),
            opt("k2"),
        ],
        lower: image_ops::ssim,
    },
    Builtin {
        name: "layer_normalization",
        params: &[
            req("x"),
            opt("gamma"),
            opt("beta"),
            opt("epsilon"),
            opt("axis"),
        ],
        lower: normalization::layer_normalization,
    },
    Builtin {
        name: "dropout",
        params: &[req("x"), req("rate"), opt("noise_shape"), opt("seed")],
        lower: layers::dropout,
    },
    Builtin {
        name: "batch_norm",
        params: &[
            req("x"),
            req("scale"),
            req("offset"),
            req("moving_mean"),
            req("moving_variance"),
            opt("momentum"),
            opt("epsilon"),
        ],
        lower: layers::batch_norm,
    },
    Builtin {
        name: "conv2d",
        params: &[
            req("input"),
            req("filters"),
            opt("strides"),
            req("padding"),
            opt("dilations"),
        ],
        lower: convolution::conv2d,
    },
    Builtin {
        name: "convolution",
        params: &[
            req("input"),
            req("filters"),
            opt("strides"),
            opt("padding"),
            opt("dilations"),
        ],
        lower: convolution::convolution,
    },
    Builtin {
        name: "conv1d",
        params: &[
            req("input"),
            req("filters"),
            opt("stride"),
            req("padding"),
            opt("dilations"),
        ],
        lower: convolution::conv1d,
    },
    Builtin {
        name: "conv2d_transpose",
        params: &[
            req("input"),
            req("filters"),
            req("output_shape"),
            opt("strides"),
            opt("padding"),
            opt("dilations"),
        ],
        lower: convolution::conv2d_transpose,
    },
    Builtin {
        name: "atrous_conv2d_transpose",
        params: &[
            req("value"),
            req("filters"),
            req("output_shape"),
            req("rate"),
            req("padding"),
        ],
        lower: convolution::atrous_conv2d_transpose,
    },
    Builtin {
        name: "depthwise_conv2d",
        params: &[
            req("input"),
            req("filter"),
            opt("strides"),
            req("padding"),
            opt("dilations"),
        ],
        lower: convolution::depthwise_conv2d,
    },
    Builtin {
        name: "separable_conv2d",
        params: &[
            req("input"),
            req("depthwise_filter"),
            req("pointwise_filter"),
            opt("strides"),
            req("padding"),
            opt("dilations"),
        ],
        lower: convolution::separable_conv2d,
    },
    Builtin {
        name: "max_pool2d",
        params: &[req("input"), req("ksize"), opt("strides"), req("padding")],
        lower: convolution::max_pool2d,
    },
    Builtin {
        name: "max_pool",
        params: &[req("input"), req("ksize"), opt("strides"), req("padding")],
        lower: convolution::max_pool2d,
    },
    Builtin {
        name: "avg_pool2d",
        params: &[req("input"), req("ksize"), opt("strides"), req("padding")],
        lower: convolution::avg_pool2d,
    },
    Builtin {
        name: "avg_pool",
        params: &[req("input"), req("ksize"), opt("strides"), req("padding")],
        lower: convolution::avg_pool2d,
    },
    Builtin {
        name: "max_pool_with_argmax",
        params: &[
            req("input"),
            req("ksize"),
            opt("strides"),
            req("padding"),
            opt("include_batch_in_index"),
        ],
        lower: convolution::max_pool_with_argmax_output,
    },
    Builtin {
        name: "max_pool_with_argmax_argmax",
        params: &[
            req("input"),
            req("ksize"),
            opt("strides"),
            req("padding"),
            opt("include_batch_in_index"),
        ],
        lower: convolution::max_pool_with_argmax_argmax,
    },
    Builtin {
        name: "reduce_sum",
        params: &[req("input_tensor"), opt("axis"), opt("keepdims")],
        lower: |lw, b, c| lower_reduce(lw, b, c, Reduction::Sum),
    },
    Builtin {
        name: "sum",
        params: &[req("input_tensor"), opt("axis"), opt("keepdims")],
        lower: |lw, b, c| lower_reduce(lw, b, c, Reduction::Sum),
    },
    Builtin {
        name: "reduce_mean",
        params: &[req("input_tensor"), opt("axis"), opt("keepdims")],
        lower: |lw, b, c| lower_reduce(lw, b, c, Reduction::Mean),
    },
    Builtin {
        name: "mean",
        params: &[req("input_tensor"), opt("axis"), opt("keepdims")],
        lower: |lw, b, c| lower_reduce(lw, b, c, Reduction::Mean),
    },
    Builtin {
        name: "reduce_max",
        params: &[req("input_tensor"), opt("axis"), opt("keepdims")],
        lower: |lw, b, c| lower_reduce(lw, b, c, Reduction::Max),
    },
    Builtin {
        name: "softmax",
        params: &[req("logits"), opt("axis")],
        lower: |lw, b, _| {
            let (x, axis) = logits_axis(lw, b)?;
            Ok(softmax(lw, x, axis))
        },
    },
    Builtin {
        name: "log_softmax",
        params: &[req("logits"), opt("axis")],
        lower: |lw, b, _| {
            let (x, axis) = logits_axis(lw, b)?;
            Ok(log_softmax(lw, x, axis))
        },
    },
    Builtin {
        name: "reshape",
        params: &[req("tensor"), req("shape")],
        lower: lower_reshape,
    },
    Builtin {
        name: "transpose",
        params: &[req("a"), opt("perm")],
        lower: lower_transpose,
    },
    Builtin {
        name: "concat",
        params: &[req("values"), req("axis")],
        lower: lower_concat,
    },
    Builtin {
        name: "stop_gradient",
        params: &[req("input")],
        lower: |lw, b, _| {
            let x = lw.lower(b.req(0))?;
            Ok(lw.g.stop_gradient(x))
        },
    },
    Builtin {
        name: "argmax",
        params: &[req("input"), opt("axis")],
        lower: lower_argmax,
    },
    Builtin {
        name: "cast",
        params: &[req("x"), req("dtype")],
        lower: lower_cast,
    },
    Builtin {
        name: "embedding_lookup",
        params: &[req("params"), req("ids")],
        lower: lower_embedding_lookup,
    },
    Builtin {
        name: "gather",
        params: &[req("params"), req("indices")],
        lower: lower_embedding_lookup,
    },
    Builtin {
        name: "one_hot",
        params: &[req("indices"), req("depth")],
        lower: lower_one_hot,
    },
    Builtin {
        name: "sigmoid_cross_entropy",
        params: &[req("labels"), req("logits")],
        lower: lower_sigmoid_ce,
    },
    Builtin {
        name: "sigmoid_cross_entropy_with_logits",
        params: &[req("labels"), req("logits")],
        lower: lower_sigmoid_ce,
    },
    Builtin {
        name: "softmax_cross_entropy",
        params: &[req("labels"), req("logits")],
        lower: lower_softmax_ce,
    },
    Builtin {
        name: "softmax_cross_entropy_with_logits",
        params: &[req("labels"), req("logits")],
        lower: lower_softmax_ce,
    },
    Builtin {
        name: "sparse_softmax_cross_entropy",
        params: &[req("labels"), req("logits")],
        lower: lower_sparse_ce,
    },
    Builtin {
        name: "sparse_softmax_cross_entropy_with_logits",
        params: &[req("labels"), req("logits")],
        lower: lower_sparse_ce,
    },
    Builtin {
        name: "mean_squared_error",
        params: &[req("labels"), req("predictions")],
        lower: lower_mse,
    },
    Builtin {
        name: "l2_loss",
        params: &[req("t")],
        lower: |lw, b, _| {
            // TF L2Loss: sum(t * t) / 2
            let x = lw.float(b.req(0))?;
            let sq = lw.g.unary(UnaryOp::Square, x);
            let s = lw.g.sum_all(sq);
            Ok(lw.g.scale(s, 0.5))
        },
    },
];

/// Names usable as statements rather than expressions.
pub const STATEMENTS: &[&str] = &["assert_shape"];

/// Lowers a call to a builtin, or reports an unknown function.
pub fn lower_call(lw: &mut Lowerer, call: &Call) -> R<NodeId> {
    let name = call.func.name.as_str();
    let found = BUILTINS
        .iter()
        .find(|b| b.name == name)
        .or_else(|| super::schedules::find(name));
    if super::checks::is_expression(name) {
        let x = super::checks::lower(lw, call)?;
        return x.ok_or_else(|| {
            Diagnostic::new(Code::InternalError, call.span, "a check without a value")
        });
    }
    let Some(b) = found else {
        let mut d = Diagnostic::new(
            Code::UnknownFunction,
            call.func.span,
            format!("unknown function `{name}`"),
        )
        .with_label("not a builtin");
        if STATEMENTS.contains(&name) || super::checks::is_check(name) {
            d = d.with_help(format!("`{name}` is a statement; write it on its own line"));
        } else if let Some(s) = args::suggest(
            name,
            BUILTINS
                .iter()
                .chain(super::schedules::SCHEDULES)
                .map(|b| b.name),
        ) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else if lw.env.entries.contains_key(name) {
            d = d.with_help(format!("`{name}` is a tensor, not a function"));
        }
        return Err(d);
    };
    let bound = args::bind(name, call, b.params)?;
    (b.lower)(lw, &bound, call)
}

fn elementwise2(lw: &mut Lowerer, b: &Bound, c: &Call, op: BinaryOp) -> R<NodeId> {
    let (ea, eb) = (b.req(0), b.req(1));
    let x = lw.float(ea)?;
    let y = lw.float(eb)?;
    lw.check_broadcast(x, y, ea.span, eb.span, c.span, c.func.name.as_str())?;
    Ok(lw.g.binary(op, x, y))
}

fn lower_where(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let cond = lw.lower(b.req(0))?;
    let cond = lw.g.cast(cond, DType::F32);
    let (ex, ey) = (b.req(1), b.req(2));
    let x = lw.float(ex)?;
    let y = lw.float(ey)?;
    let s = lw.check_broadcast(x, y, ex.span, ey.span, c.span, "where")?;
    let cs = lw.g.shape(cond).clone();
    if shape::broadcast(&s, &cs).map(|r| r != s).unwrap_or(true) {
        return Err(Diagnostic::new(
            Code::BroadcastShape,
            b.req(0).span,
            format!("the condition {cs} does not broadcast to the values' shape {s}"),
        )
        .with_label(format!("this is {cs}")));
    }
    Ok(lw.g.select(cond, x, y))
}

fn lower_matmul(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ea, eb) = (b.req(0), b.req(1));
    let x = lw.float(ea)?;
    let y = lw.float(eb)?;
    let ta = b.flag(2)?;
    let tb = b.flag(3)?;
    lw.matmul(x, y, ta, tb, ea.span, eb.span, c.span)
}

fn lower_bias_add(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ev, eb) = (b.req(0), b.req(1));
    let v = lw.float(ev)?;
    let bias = lw.float(eb)?;
    let (vs, bs) = (lw.g.shape(v).clone(), lw.g.shape(bias).clone());
    if bs.rank() != 1 || vs.rank() < 2 || vs.0.last() != bs.0.first() {
        return Err(Diagnostic::new(
            Code::BroadcastShape,
            c.span,
            format!("bias_add needs a rank-1 bias matching the last dimension of the value: {vs} and {bs}"),
        )
        .with_secondary(ev.span, format!("this is {vs}"))
        .with_secondary(eb.span, format!("this is {bs}")));
    }
    Ok(lw.g.add(v, bias))
}

#[derive(Clone, Copy)]
enum Reduction {
    Sum,
    Mean,
    Max,
}

fn lower_reduce(lw: &mut Lowerer, b: &Bound, _c: &Call, kind: Reduction) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let s = lw.g.shape(x).clone();
    let axes = lw.axes(b.get(1), s.rank())?;
    let keepdims = b.flag(2)?;
    let r = match kind {
        Reduction::Sum => lw.g.reduce_sum(x, &axes),
        Reduction::Mean => lw.g.reduce_mean(x, &axes),
        Reduction::Max => lw.g.reduce(ReduceKind::Max, x, &axes),
    };
    if keepdims {
        let kept = shape::reduce_keepdims(&s, &axes);
        Ok(lw.g.reshape(r, &kept))
    } else {
        Ok(r)
    }
}

fn logits_axis(lw: &mut Lowerer, b: &Bound) -> R<(NodeId, usize)> {
    let x = lw.float(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    if rank == 0 {
        return Err(Diagnostic::new(
            Code::BadAxis,
            b.req(0).span,
            "softmax needs at least one axis, but this is a scalar",
        )
        .with_label("scalar"));
    }
    let axis = match b.get(1) {
        Some(e) => lw.axis(e, rank)?,
        None => rank - 1,
    };
    Ok((x, axis))
}

/// `x - stop_gradient(max(x, axis))`, the shift both softmax forms start from.
fn shifted(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let m = lw.g.reduce(ReduceKind::Max, x, &[axis]);
    let m = lw.g.stop_gradient(m);
    let m = lw.g.reshape(m, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.sub(x, m)
}

pub fn softmax(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let z = shifted(lw, x, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let sum = lw.g.reshape(sum, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.div(e, sum)
}

pub fn log_softmax(lw: &mut Lowerer, x: NodeId, axis: usize) -> NodeId {
    let s = lw.g.shape(x).clone();
    let z = shifted(lw, x, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let lse = lw.g.unary(UnaryOp::Log, sum);
    let lse = lw.g.reshape(lse, &shape::reduce_keepdims(&s, &[axis]));
    lw.g.sub(z, lse)
}

fn lower_reshape(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let from = lw.g.shape(x).clone();
    let se = b.req(1);
    let ExprKind::List(items) = &se.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            se.span,
            format!(
                "expected a shape like [B, 64], found {}",
                args::describe(se)
            ),
        )
        .with_label("expected a list of dimensions"));
    };
    let mut dims = Vec::new();
    let mut infer: Option<usize> = None;
    for (i, it) in items.iter().enumerate() {
        match &it.kind {
            ExprKind::Ident(n) if n == "B" => dims.push(Dim::Batch),
            _ => {
                let v = args::eval_int(it)?;
                if v == -1 {
                    if infer.is_some() {
                        return Err(Diagnostic::new(
                            Code::ReshapeShape,
                            it.span,
                            "only one dimension can be -1",
                        )
                        .with_label("second -1"));
                    }
                    infer = Some(i);
                    dims.push(Dim::Fixed(1));
                } else if v <= 0 {
                    return Err(Diagnostic::new(
                        Code::ReshapeShape,
                        it.span,
                        format!("dimension {v} must be positive"),
                    )
                    .with_label("not a size"));
                } else {
                    dims.push(Dim::Fixed(v as u32));
                }
            }
        }
    }
    if let Some(i) = infer {
        // -1 takes the batch dimension if the target has none, else the fixed remainder.
        let mut partial = Shape(dims.clone());
        if from.has_batch() && !partial.has_batch() {
            partial.0[i] = Dim::Batch;
            dims[i] = Dim::Batch;
            if partial.fixed_numel() != from.fixed_numel() {
                return Err(reshape_error(c, &from, &Shape(dims)));
            }
        } else {
            let rest = partial.fixed_numel();
            if rest == 0 || !from.fixed_numel().is_multiple_of(rest) {
                return Err(reshape_error(c, &from, &Shape(dims)));
            }
            dims[i] = Dim::Fixed((from.fixed_numel() / rest) as u32);
        }
    }
    let to = Shape(dims);
    if shape::reshape(&from, &to).is_err() {
        return Err(reshape_error(c, &from, &to));
    }
    Ok(lw.g.reshape(x, &to))
}

fn reshape_error(c: &Call, from: &Shape, to: &Shape) -> Diagnostic {
    let msg = shape::reshape(from, to)
        .err()
        .unwrap_or_else(|| format!("cannot reshape {from} to {to}"));
    Diagnostic::new(Code::ReshapeShape, c.span, msg)
        .with_label(format!("{from} has a different number of elements"))
}

fn lower_transpose(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    let perm: Vec<usize> = match b.get(1) {
        None => (0..rank).rev().collect(),
        Some(e) => {
            let list = args::eval_int_list(e)?;
            let mut perm = Vec::new();
            for a in list {
                perm.push(shape::axis(a, rank).map_err(|m| {
                    Diagnostic::new(Code::BadAxis, e.span, m).with_label("bad permutation")
                })?);
            }
            if let Err(m) = shape::transpose(lw.g.shape(x), &perm) {
                return Err(Diagnostic::new(Code::BadAxis, e.span, m).with_label("bad permutation"));
            }
            perm
        }
    };
    Ok(lw.g.transpose(x, &perm))
}

fn lower_concat(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let ve = b.req(0);
    let ExprKind::List(items) = &ve.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            ve.span,
            format!(
                "expected a list of tensors like [a, b], found {}",
                args::describe(ve)
            ),
        )
        .with_label("expected a list"));
    };
    if items.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, ve.span, "concat of an empty list")
                .with_label("nothing to concatenate"),
        );
    }
    let mut parts = Vec::new();
    for it in items {
        parts.push(lw.float(it)?);
    }
    let rank = lw.g.shape(parts[0]).rank();
    let axis = lw.axis(b.req(1), rank)?;
    let shapes: Vec<Shape> = parts.iter().map(|&p| lw.g.shape(p).clone()).collect();
    let refs: Vec<&Shape> = shapes.iter().collect();
    if let Err(m) = shape::concat(&refs, axis) {
        return Err(
            Diagnostic::new(Code::BroadcastShape, c.span, m).with_label("cannot concatenate")
        );
    }
    Ok(lw.g.concat(&parts, axis))
}

fn lower_argmax(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    let rank = lw.g.shape(x).rank();
    if rank == 0 {
        return Err(
            Diagnostic::new(Code::BadAxis, b.req(0).span, "argmax of a scalar")
                .with_label("scalar"),
        );
    }
    let axis = match b.get(1) {
        Some(e) => lw.axis(e, rank)?,
        None => rank - 1,
    };
    Ok(lw.g.argmax(x, axis))
}

fn lower_cast(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let x = lw.lower(b.req(0))?;
    let de = b.req(1);
    let to = match args::eval_ident(de)? {
        "float32" | "float" => DType::F32,
        "int32" | "int" => DType::I32,
        other => {
            return Err(Diagnostic::new(
                Code::UnknownChoice,
                de.span,
                format!("unknown dtype `{other}`"),
            )
            .with_label("expected float32 or int32"))
        }
    };
    if to == DType::I32 && lw.g.dtype(x) == DType::F32 {
        // TF truncates toward zero; no gradient.
        return Ok(lw.g.cast(x, DType::I32));
    }
    Ok(lw.g.cast(x, to))
}

/// Int class ids: an int32 tensor, or an integral float constant like `[2, 0]`.
fn class_ids(lw: &mut Lowerer, e: &Expr, what: &str) -> R<NodeId> {
    let v = lw.lower(e)?;
    if lw.g.dtype(v) == DType::I32 {
        return Ok(v);
    }
    if let Op::Tensor(i) = lw.g.op(v) {
        let c = lw.g.consts[*i as usize].clone();
        if c.values.iter().all(|x| x.fract() == 0.0 && *x >= 0.0) {
            return Ok(lw.g.tensor(DType::I32, c.shape, c.values));
        }
    }
    Err(Diagnostic::new(
        Code::LabelKind,
        e.span,
        format!("{what} needs int32 class ids as labels, but this is float32"),
    )
    .with_label("float32 labels")
    .with_help("declare the label column as `label NAME: int`, or use softmax_cross_entropy for one-hot or soft labels"))
}

/// `tf.nn.embedding_lookup(params, ids)` = `tf.gather(params, indices)` on
/// axis 0: rows of a table with a fixed shape, by int32 ids of any shape.
/// Its gradient is sparse (an `IndexedSlices`).
fn lower_embedding_lookup(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (ep, ei) = (b.req(0), b.req(1));
    let params = lw.float(ep)?;
    let ps = lw.g.shape(params).clone();
    if ps.rank() == 0 || ps.has_batch() {
        return Err(Diagnostic::new(
            Code::BadShape,
            ep.span,
            format!(
                "`{}` needs a table with a fixed shape [rows, ..], got {ps}",
                c.func.name
            ),
        )
        .with_label(format!("this is {ps}"))
        .with_help("look rows up in a parameter, e.g. emb: [1000, 16]"));
    }
    let ids = lw.lower(ei)?;
    let ids = match lw.g.op(ids) {
        // A literal list of whole numbers is a constant of ids.
        Op::Tensor(i) if lw.g.dtype(ids) == DType::F32 => {
            let c = lw.g.consts[*i as usize].clone();
            if c.values.iter().all(|x| x.fract() == 0.0 && *x >= 0.0) {
                lw.g.tensor(DType::I32, c.shape, c.values)
            } else {
                ids
            }
        }
        _ => ids,
    };
    if lw.g.dtype(ids) != DType::I32 {
        return Err(Diagnostic::new(
            Code::LabelKind,
            ei.span,
            format!("`{}` needs int32 ids, but this is float32", c.func.name),
        )
        .with_label("float32 values")
        .with_help(
            "declare the id columns as a feature `ids = integer(COLUMN, num_buckets = N)`",
        ));
    }
    let rows = ps.0[0].fixed().unwrap_or(1);
    if let Op::Input(i) = lw.g.op(ids) {
        lw.class_uses.push(ClassUse {
            input: *i,
            classes: rows,
            span: c.span,
            at_most: true,
        });
    }
    Ok(lw.g.gather(params, ids))
}

fn lower_one_hot(lw: &mut Lowerer, b: &Bound, _c: &Call) -> R<NodeId> {
    let ids = class_ids(lw, b.req(0), "one_hot")?;
    let depth = args::eval_count(b.req(1), "depth")?;
    if depth == 0 || depth > u32::MAX as u64 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(1).span,
            "depth must be positive",
        )
        .with_label("bad depth"));
    }
    Ok(lw.g.one_hot(ids, depth as u32))
}

fn same_shape(lw: &Lowerer, le: &Expr, l: NodeId, xe: &Expr, x: NodeId, c: &Call) -> R<()> {
    let (ls, xs) = (lw.g.shape(l), lw.g.shape(x));
    if ls != xs {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!(
                "`{}` needs labels and {} of the same shape, got {ls} and {xs}",
                c.func.name,
                if c.func.name == "mean_squared_error" {
                    "predictions"
                } else {
                    "logits"
                }
            ),
        )
        .with_secondary(le.span, format!("this is {ls}"))
        .with_secondary(xe.span, format!("this is {xs}"))
        .with_help(if ls.rank() + 1 == xs.rank() {
            format!("reshape one of them, e.g. reshape(x, {ls})")
        } else {
            "reshape one of them so the shapes agree".to_string()
        }));
    }
    Ok(())
}

fn float_labels(lw: &mut Lowerer, e: &Expr, what: &str) -> R<NodeId> {
    let v = lw.lower(e)?;
    if lw.g.dtype(v) != DType::F32 {
        return Err(Diagnostic::new(
            Code::LabelKind,
            e.span,
            format!("{what} needs float labels, but this is int32"),
        )
        .with_label("int32 labels")
        .with_help(if what == "softmax_cross_entropy" {
            "for class ids use sparse_softmax_cross_entropy".to_string()
        } else {
            "declare the label as `label NAME: float`".to_string()
        }));
    }
    Ok(v)
}

fn lower_sigmoid_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "sigmoid_cross_entropy")?;
    let logits = lw.float(xe)?;
    same_shape(lw, le, labels, xe, logits, c)?;
    // TF: relu_logits - logits * labels + log1p(exp(neg_abs_logits)),
    // with cond = logits >= 0 selecting both pieces.
    let g = &mut *lw.g;
    let zero = g.scalar(0.0);
    let cond = g.binary(BinaryOp::Ge, logits, zero);
    let relu_logits = g.select(cond, logits, zero);
    let neg = g.neg(logits);
    let neg_abs = g.select(cond, neg, logits);
    let xy = g.mul(logits, labels);
    let a = g.sub(relu_logits, xy);
    let e = g.unary(UnaryOp::Exp, neg_abs);
    let l = g.unary(UnaryOp::Log1p, e);
    Ok(g.add(a, l))
}

fn lower_softmax_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "softmax_cross_entropy")?;
    let logits = lw.float(xe)?;
    same_shape(lw, le, labels, xe, logits, c)?;
    let rank = lw.g.shape(logits).rank();
    if rank == 0 {
        return Err(
            Diagnostic::new(Code::BadAxis, xe.span, "logits must have a class axis")
                .with_label("scalar"),
        );
    }
    let ls = log_softmax(lw, logits, rank - 1);
    let p = lw.g.mul(labels, ls);
    let s = lw.g.reduce_sum(p, &[rank - 1]);
    Ok(lw.g.neg(s))
}

fn lower_sparse_ce(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, xe) = (b.req(0), b.req(1));
    let labels = class_ids(lw, le, "sparse_softmax_cross_entropy")?;
    let logits = lw.float(xe)?;
    let (ls, xs) = (lw.g.shape(labels).clone(), lw.g.shape(logits).clone());
    let ok = xs.rank() == ls.rank() + 1 && xs.0[..ls.rank()] == ls.0[..];
    let classes = xs.0.last().and_then(|d| d.fixed());
    if !ok || classes.is_none() {
        return Err(Diagnostic::new(
            Code::ShapeMismatch,
            c.span,
            format!("sparse_softmax_cross_entropy needs labels [N] and logits [N, classes], got {ls} and {xs}"),
        )
        .with_secondary(le.span, format!("this is {ls}"))
        .with_secondary(xe.span, format!("this is {xs}")));
    }
    let classes = classes.unwrap_or(1);
    if let Op::Input(i) = lw.g.op(labels) {
        lw.class_uses.push(ClassUse {
            input: *i,
            classes,
            span: c.span,
            at_most: false,
        });
    }
    // loss = logsumexp(logits) - logits[label], with the max shift of TF's kernel.
    let axis = xs.rank() - 1;
    let z = shifted(lw, logits, axis);
    let e = lw.g.unary(UnaryOp::Exp, z);
    let sum = lw.g.reduce_sum(e, &[axis]);
    let lse = lw.g.unary(UnaryOp::Log, sum);
    let onehot = lw.g.one_hot(labels, classes);
    let picked = lw.g.mul(z, onehot);
    let picked = lw.g.reduce_sum(picked, &[axis]);
    Ok(lw.g.sub(lse, picked))
}

fn lower_mse(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let (le, pe) = (b.req(0), b.req(1));
    let labels = float_labels(lw, le, "mean_squared_error")?;
    let preds = lw.float(pe)?;
    same_shape(lw, le, labels, pe, preds, c)?;
    let d = lw.g.sub(preds, labels);
    let sq = lw.g.unary(UnaryOp::Square, d);
    let rank = lw.g.shape(sq).rank();
    if rank == 0 {
        return Ok(sq);
    }
    Ok(lw.g.reduce_mean(sq, &[rank - 1]))
}
