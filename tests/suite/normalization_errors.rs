//! Bad arguments of the activation and normalization builtins are caret
//! diagnostics (code, the offending text under the caret), never panics.

use crate::common;

use specc_grammar::Code;

/// A spec with `y = EXPR` over `x: [2, 3, 4, 5]`, `s` and `o: [5]`.
fn spec(expr: &str) -> String {
    format!(
        "model errors\ndata synthetic(rows = 4, features = 1)\nparams {{\n  x: [2, 3, 4, 5] = zeros\n  s: [5] = ones\n  o: [5] = zeros\n  v: [4] = ones\n  m: [2, 3] = zeros\n}}\ny = {expr}\nloss = reduce_sum(y * y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// Compiles `y = EXPR`, which must fail with `code` and a caret under `under`.
fn fails(expr: &str, code: Code, under: &str) {
    common::op_cases::assert_fails(&spec(expr), code, under);
}

#[test]
fn moments_axis_out_of_range() {
    fails("moments_mean(x, axes = [0, 4])", Code::BadAxis, "[0, 4]");
}

#[test]
fn moments_without_axes() {
    fails("moments_variance(x, axes = [])", Code::BadAxis, "[]");
}

#[test]
fn batch_normalization_statistics_that_do_not_broadcast() {
    fails(
        "batch_normalization(x, s, v, o, s, 0.001)",
        Code::BroadcastShape,
        "v",
    );
}

#[test]
fn batch_normalization_negative_epsilon() {
    fails(
        "batch_normalization(x, s, s, o, s, -1.0)",
        Code::ArgumentOutOfRange,
        "-1.0",
    );
}

#[test]
fn fused_batch_norm_needs_rank_4_or_5() {
    fails("fused_batch_norm(m, s, o)", Code::BadShape, "m");
}

#[test]
fn fused_batch_norm_scale_per_channel() {
    fails("fused_batch_norm(x, v, o)", Code::BadShape, "v");
}

#[test]
fn fused_batch_norm_inference_needs_statistics() {
    fails(
        "fused_batch_norm(x, s, o, is_training = false)",
        Code::MissingArgument,
        "fused_batch_norm(x, s, o, is_training = false)",
    );
}

#[test]
fn fused_batch_norm_average_factor_in_range() {
    fails(
        "fused_batch_norm(x, s, o, mean = o, variance = s, exponential_avg_factor = 1.5)",
        Code::ArgumentOutOfRange,
        "1.5",
    );
}

#[test]
fn local_response_normalization_needs_rank_4() {
    fails("local_response_normalization(m)", Code::BadShape, "m");
}

#[test]
fn local_response_normalization_negative_radius() {
    fails(
        "local_response_normalization(x, depth_radius = -1)",
        Code::ArgumentOutOfRange,
        "-1",
    );
}

#[test]
fn leaky_relu_alpha_must_be_a_number() {
    fails("leaky_relu(x, alpha = s)", Code::ArgumentType, "s");
}
