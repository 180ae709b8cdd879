//! Bad arguments and shapes of the convolution and pooling builtins are
//! caret diagnostics (code, the offending text under the caret), never panics.

use crate::common;

use specc_grammar::Code;

/// A spec with `y = EXPR` over images `x: [2, 6, 5, 3]`, kernels `k: [3, 3, 3, 4]`,
/// `big: [7, 3, 3, 4]`, `k1: [3, 3, 4]`, `kt: [3, 3, 2, 3]`, a batch of rows
/// `r: [2, 30]`.
fn spec(expr: &str) -> String {
    format!(
        "model errors\ndata synthetic(rows = 4, features = 1)\nparams {{\n  x: [2, 6, 5, 3] = zeros\n  k: [3, 3, 3, 4] = zeros\n  big: [7, 3, 3, 4] = zeros\n  k1: [3, 3, 4] = zeros\n  kt: [3, 3, 2, 3] = zeros\n  r: [2, 30] = zeros\n}}\ny = {expr}\nloss = reduce_sum(y * y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// Compiles `y = EXPR`, which must fail with `code` and a caret under `under`.
fn fails(expr: &str, code: Code, under: &str) {
    common::op_cases::assert_fails(&spec(expr), code, under);
}

#[test]
fn conv2d_kernel_larger_than_its_padded_input() {
    fails(
        "conv2d(x, big, strides = 1, padding = \"VALID\")",
        Code::BadShape,
        "big",
    );
}

#[test]
fn conv2d_kernel_larger_than_explicitly_padded_input() {
    fails(
        "conv2d(x, big, padding = [[0, 0], [0, 0], [1, 1], [0, 0]])",
        Code::BadShape,
        "big",
    );
}

#[test]
fn conv2d_channels_that_do_not_match() {
    fails(
        "conv2d(x, kt, strides = 1, padding = \"SAME\")",
        Code::BadShape,
        "kt",
    );
}

#[test]
fn conv2d_needs_images_of_rank_4() {
    fails("conv2d(r, k, padding = \"SAME\")", Code::BadShape, "r");
}

#[test]
fn conv2d_unknown_padding() {
    fails(
        "conv2d(x, k, padding = \"FULL\")",
        Code::UnknownChoice,
        "\"FULL\"",
    );
}

#[test]
fn conv2d_strides_over_the_batch() {
    fails(
        "conv2d(x, k, strides = [2, 1, 1, 1], padding = \"SAME\")",
        Code::MalformedArgument,
        "[2, 1, 1, 1]",
    );
}

#[test]
fn conv2d_zero_dilation() {
    fails(
        "conv2d(x, k, padding = \"SAME\", dilations = 0)",
        Code::ArgumentOutOfRange,
        "0",
    );
}

#[test]
fn conv2d_explicit_padding_of_the_channels() {
    fails(
        "conv2d(x, k, padding = [[0, 0], [1, 1], [1, 1], [1, 0]])",
        Code::MalformedArgument,
        "[[0, 0], [1, 1], [1, 1], [1, 0]]",
    );
}

#[test]
fn conv1d_kernel_of_the_wrong_rank() {
    fails(
        "conv1d(reshape(x, [2, 30, 3]), k, stride = 1, padding = \"SAME\")",
        Code::BadShape,
        "k",
    );
}

#[test]
fn conv2d_transpose_output_shape_that_does_not_give_the_input() {
    fails(
        "conv2d_transpose(x, kt, output_shape = [2, 9, 10, 2], strides = 2, padding = \"SAME\")",
        Code::BadShape,
        "[2, 9, 10, 2]",
    );
}

#[test]
fn conv2d_transpose_batch_that_differs() {
    fails(
        "conv2d_transpose(x, kt, output_shape = [3, 6, 5, 2], strides = 1)",
        Code::ConflictingArguments,
        "[3, 6, 5, 2]",
    );
}

#[test]
fn depthwise_conv2d_channels_that_do_not_match() {
    fails(
        "depthwise_conv2d(x, kt, strides = 1, padding = \"SAME\")",
        Code::BadShape,
        "kt",
    );
}

#[test]
fn separable_conv2d_pointwise_filter_of_the_wrong_shape() {
    fails(
        "separable_conv2d(x, k, k, strides = 1, padding = \"SAME\")",
        Code::BadShape,
        "k",
    );
}

#[test]
fn max_pool2d_window_larger_than_the_input() {
    fails(
        "max_pool2d(x, ksize = [7, 2], strides = 1, padding = \"VALID\")",
        Code::BadShape,
        "[7, 2]",
    );
}

#[test]
fn avg_pool2d_explicit_padding() {
    fails(
        "avg_pool2d(x, ksize = 2, strides = 2, padding = [[0, 0], [1, 1], [1, 1], [0, 0]])",
        Code::UnsupportedArgument,
        "[[0, 0], [1, 1], [1, 1], [0, 0]]",
    );
}

#[test]
fn max_pool_with_argmax_explicit_padding() {
    fails(
        "max_pool_with_argmax(x, ksize = 2, strides = 2, padding = [[0, 0], [1, 0], [0, 0], [0, 0]])",
        Code::UnsupportedArgument,
        "[[0, 0], [1, 0], [0, 0], [0, 0]]",
    );
}

/// The cases TF's MaxPool refuses: a side padded as much as the window
/// ("Top padding 2 needs to be smaller than the window size 2"), negative
/// padding, padding of the batch or the channels.
#[test]
fn max_pool2d_explicit_padding_as_large_as_the_window() {
    for padding in [
        "[[0, 0], [2, 0], [0, 0], [0, 0]]",
        "[[0, 0], [0, 3], [0, 0], [0, 0]]",
        "[[0, 0], [0, 0], [0, 3], [0, 0]]",
        "[[0, 0], [1, 1], [3, 0], [0, 0]]",
    ] {
        fails(
            &format!("max_pool2d(x, ksize = [2, 3], strides = 1, padding = {padding})"),
            Code::ArgumentOutOfRange,
            padding,
        );
    }
}

#[test]
fn max_pool2d_negative_explicit_padding() {
    fails(
        "max_pool2d(x, ksize = 2, strides = 1, padding = [[0, 0], [-1, 0], [0, 0], [0, 0]])",
        Code::MalformedArgument,
        "[[0, 0], [-1, 0], [0, 0], [0, 0]]",
    );
}

#[test]
fn max_pool2d_explicit_padding_of_the_batch_or_the_channels() {
    for padding in [
        "[[1, 0], [0, 0], [0, 0], [0, 0]]",
        "[[0, 0], [0, 0], [0, 0], [0, 1]]",
        "[[0, 0], [1, 1], [1, 1]]",
    ] {
        fails(
            &format!("max_pool2d(x, ksize = 2, strides = 1, padding = {padding})"),
            Code::MalformedArgument,
            padding,
        );
    }
}
