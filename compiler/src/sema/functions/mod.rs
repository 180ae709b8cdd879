//! The builtin functions of the spec language, as one table.
//!
//! Owns: each builtin's name (TF's), its signature (TF's argument names) and
//! how it lowers to IR. Composite ops (softmax, the cross-entropies) lower to
//! primitive ops in the numerically stable forms TF uses, so autodiff only
//! needs primitive rules.
//! Invariant: a lowering checks dtypes and shapes before building nodes.
//!
//! The table is here, with [`lower_call`]; the lowerings that are not one
//! line live by family: `math` (elementwise binaries, `where`, `matmul`,
//! `bias_add`, reductions, `argmax`, the softmaxes), `array_ops` (`reshape`,
//! `transpose`, `concat`, `cast`, `one_hot`), `gather` (`gather` with any
//! axis and `batch_dims`, `embedding_lookup`),
//! `shape_ops` (`expand_dims`, `squeeze`, `stack`, `tile`, `sequence_mask`),
//! `einsum` and `losses` (the cross-entropies, `mean_squared_error`); the other
//! families have sema modules of their own ([`activations`],
//! [`normalization`], [`layers`], [`convolution`]); the `tf.image` ops'
//! rows are a table of their own, in `image`.

use specc_grammar::ast::Call;
use specc_grammar::{Code, Diagnostic};

use super::activations;
use super::args::{self, opt, req, Bound, Param};
use super::convolution;
use super::expr::{Lowerer, R};
use super::layers;
use super::normalization;
use crate::ir::{BinaryOp, NodeId, UnaryOp};

mod array_ops;
mod einsum;
mod gather;
mod image;
pub(crate) use gather::select_gather;
mod losses;
mod math;
mod quantization;
mod shape_ops;

pub(crate) use shape_ops::tuple_builtin;

use array_ops::{lower_cast, lower_concat, lower_one_hot, lower_reshape, lower_transpose};
use gather::{lower_embedding_lookup, lower_gather};
use losses::{lower_mse, lower_sigmoid_ce, lower_softmax_ce, lower_sparse_ce};
use math::{
    elementwise2, logits_axis, lower_argmax, lower_bias_add, lower_matmul, lower_reduce,
    lower_softmax, lower_where, Reduction,
};
pub use math::{log_softmax, softmax};

type Lower = fn(&mut Lowerer, &Bound, &Call) -> R<NodeId>;

pub struct Builtin {
    pub name: &'static str,
    /// The signature; none for a builtin whose lowering binds its own
    /// arguments (`einsum(equation, *inputs)`).
    pub params: &'static [Param<'static>],
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
        name: "fake_quant_with_min_max_vars",
        params: &[
            req("inputs"),
            req("min"),
            req("max"),
            opt("num_bits"),
            opt("narrow_range"),
        ],
        lower: quantization::with_min_max_vars,
    },
    Builtin {
        name: "fake_quant_with_min_max_vars_per_channel",
        params: &[
            req("inputs"),
            req("min"),
            req("max"),
            opt("num_bits"),
            opt("narrow_range"),
        ],
        lower: quantization::with_min_max_vars_per_channel,
    },
    Builtin {
        name: "fake_quant_with_min_max_args",
        params: &[
            req("inputs"),
            opt("min"),
            opt("max"),
            opt("num_bits"),
            opt("narrow_range"),
        ],
        lower: quantization::with_min_max_args,
    },
    Builtin {
        name: "is_nan",
        params: &[req("x")],
        lower: math::is_nan,
    },
    Builtin {
        name: "is_inf",
        params: &[req("x")],
        lower: math::is_inf,
    },
    Builtin {
        name: "is_finite",
        params: &[req("x")],
        lower: math::is_finite,
    },
    Builtin {
        name: "zero_fraction",
        params: &[req("value")],
        lower: math::zero_fraction,
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
        name: "einsum",
        params: &[],
        lower: einsum::lower_einsum,
    },
    Builtin {
        name: "bias_add",
        params: &[req("value"), req("bias")],
        lower: lower_bias_add,
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
        params: &[req("logits"), opt("axis"), opt("mask")],
        lower: lower_softmax,
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
        name: "expand_dims",
        params: &[req("input"), req("axis")],
        lower: shape_ops::lower_expand_dims,
    },
    Builtin {
        name: "squeeze",
        params: &[req("input"), opt("axis")],
        lower: shape_ops::lower_squeeze,
    },
    Builtin {
        name: "stack",
        params: &[req("values"), opt("axis")],
        lower: shape_ops::lower_stack,
    },
    Builtin {
        name: "tile",
        params: &[req("input"), req("multiples")],
        lower: shape_ops::lower_tile,
    },
    Builtin {
        name: "sequence_mask",
        params: &[req("lengths"), req("maxlen")],
        lower: shape_ops::lower_sequence_mask,
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
        params: &[
            req("params"),
            req("indices"),
            opt("axis"),
            opt("batch_dims"),
        ],
        lower: lower_gather,
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

/// Whether `name` is a builtin function (an op, a schedule or a check).
pub fn is_builtin(name: &str) -> bool {
    BUILTINS
        .iter()
        .chain(image::IMAGE_BUILTINS)
        .any(|b| b.name == name)
        || shape_ops::TUPLE_BUILTINS.contains(&name)
        || super::recurrent::CELLS.contains(&name)
        || super::schedules::find(name).is_some()
        || super::checks::is_check(name)
        || super::blocks::specialize::STATIC_FUNCTIONS.contains(&name)
}

/// Lowers a call to a builtin, or reports an unknown function.
pub fn lower_call(lw: &mut Lowerer, call: &Call) -> R<NodeId> {
    let name = call.func.name.as_str();
    let found = BUILTINS
        .iter()
        .chain(image::IMAGE_BUILTINS)
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
        if let Some((lib, _)) = name.split_once('.') {
            let names = super::blocks::library::names(lib);
            d = d.with_label(if names.is_empty() {
                "no such library".to_string()
            } else {
                format!("not a block of specc's `{lib}` library")
            });
            if let Some(s) = args::suggest(name, names.iter().map(String::as_str)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else if names.is_empty() {
                d = d.with_help("specc's library is `layers` (`specc library` prints it)");
            }
        } else if super::recurrent::CELLS.contains(&name) {
            d = Diagnostic::new(
                Code::ArgumentType,
                call.func.span,
                format!("`{name}` makes a recurrent cell, not a tensor"),
            )
            .with_label("a cell")
            .with_help(format!(
                "`{name}(...)` is the first argument of `dynamic_rnn`"
            ));
        } else if name == "dynamic_rnn" || name == "bidirectional_dynamic_rnn" {
            d = Diagnostic::new(
                Code::BlockReturn,
                call.span,
                format!("`{name}` returns several values: its outputs and the final state"),
            )
            .with_label("bind them by a tuple")
            .with_help(
                "e.g. `outputs, h = dynamic_rnn(gru_cell(64), x)`; an LSTM's state is two tensors: `outputs, c, h = ...`",
            );
        } else if STATEMENTS.contains(&name) || super::checks::is_check(name) {
            d = d.with_help(format!("`{name}` is a statement; write it on its own line"));
        } else if let Some(s) = args::suggest(
            name,
            BUILTINS
                .iter()
                .chain(image::IMAGE_BUILTINS)
                .chain(super::schedules::SCHEDULES)
                .map(|b| b.name),
        ) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else if lw.env.entries.contains_key(name) {
            d = d.with_help(format!("`{name}` is a tensor, not a function"));
        }
        return Err(d);
    };
    let bound = if b.params.is_empty() {
        args::Bound {
            args: vec![],
            call_span: call.span,
        }
    } else {
        args::bind(name, call, b.params)?
    };
    (b.lower)(lw, &bound, call)
}
