//! Every differentiable op, checked by finite differences: the JIT-compiled
//! gradient of `loss = sum(y * w)` (random `w`, to catch transpositions) against
//! central differences of the same loss computed in float64 by the reference
//! interpreter, on random inputs. Also checks the compiled loss against the
//! interpreter's. Inputs with a batch dimension use batch 5 (odd, so vector
//! loops run their scalar tails).
//!
//! Poolings whose windows equal their strides (`tiled_pools`, one test per
//! image shape) are also checked against a direct float64 pooling from TF's
//! definition, values and gradients; with the function output copied out of
//! a transposed view (`output_reshaped_from_a_transposed_view`) they guard
//! the planner's copies through reshapes (`plan::resolve`).
//!
//! `dynamic_rnn` (`recurrent`, one test per cell and option) is checked the
//! same way, and its interpreter's own gradients against the differences too.

use crate::common;

use specc_compiler::driver::{compile_with, Functions, Options, Program, ProgramSession};
use specc_compiler::ir::Op;
use specc_compiler::ir::WinogradTile;
use specc_compiler::passes::winograd::Winograd;
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};

const BATCH: usize = 5;

/// A deterministic stream of floats in [lo, hi), keeping `gap` away from zero.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn values(&mut self, n: usize, lo: f64, hi: f64, gap: f64) -> Vec<f64> {
        (0..n)
            .map(|_| loop {
                let v = lo + (hi - lo) * self.next();
                if v.abs() >= gap {
                    // Round to f32 so the spec literal is exact.
                    break v as f32 as f64;
                }
            })
            .collect()
    }
}

struct Param {
    name: &'static str,
    dims: &'static [usize],
    lo: f64,
    hi: f64,
    gap: f64,
}

const fn p(name: &'static str, dims: &'static [usize], lo: f64, hi: f64) -> Param {
    Param {
        name,
        dims,
        lo,
        hi,
        gap: 0.0,
    }
}

const fn away(name: &'static str, dims: &'static [usize], lo: f64, hi: f64) -> Param {
    Param {
        name,
        dims,
        lo,
        hi,
        gap: 0.05,
    }
}

/// Nested list literal of `vals` in `dims`.
fn literal(dims: &[usize], vals: &[f64]) -> String {
    if dims.is_empty() {
        return format!("{:e}", vals[0]);
    }
    let inner: usize = dims[1..].iter().product();
    let parts: Vec<String> = (0..dims[0])
        .map(|i| literal(&dims[1..], &vals[i * inner..(i + 1) * inner]))
        .collect();
    format!("[{}]", parts.join(", "))
}

struct Case {
    name: &'static str,
    params: Vec<Param>,
    /// Non-trainable constants used by the expression (labels, targets).
    consts: Vec<Param>,
    expr: String,
    /// Shape of `y` without the batch dimension, and whether it has one.
    y_batched: bool,
}

fn case(name: &'static str, params: Vec<Param>, expr: &str) -> Case {
    Case {
        name,
        params,
        consts: vec![],
        expr: expr.to_string(),
        y_batched: false,
    }
}

fn cases() -> Vec<Case> {
    let a = || p("a", &[4, 3], -2.0, 2.0);
    let b = || p("b", &[4, 3], -2.0, 2.0);
    let pos = |n| p(n, &[4, 3], 0.5, 2.0);
    let c = || p("c", &[3, 2], -1.0, 1.0);
    let mut v = vec![
        case("relu", vec![away("a", &[4, 3], -2.0, 2.0)], "relu(a)"),
        case("sigmoid", vec![a()], "sigmoid(a)"),
        case("tanh", vec![a()], "tanh(a)"),
        case("exp", vec![a()], "exp(a)"),
        case("log", vec![pos("a")], "log(a)"),
        case("log1p", vec![p("a", &[4, 3], -0.5, 2.0)], "log1p(a)"),
        case("sqrt", vec![pos("a")], "sqrt(a)"),
        case("square", vec![a()], "square(a)"),
        case("abs", vec![away("a", &[4, 3], -2.0, 2.0)], "abs(a)"),
        case("softplus", vec![p("a", &[4, 3], -4.0, 4.0)], "softplus(a)"),
        case("reciprocal", vec![pos("a")], "reciprocal(a)"),
        case("negate", vec![a()], "-a"),
        case("add", vec![a(), b()], "a + b"),
        case("subtract", vec![a(), b()], "a - b"),
        case("multiply", vec![a(), b()], "a * b"),
        case("divide", vec![a(), pos("b")], "a / b"),
        case("maximum", vec![a(), b()], "maximum(a, b)"),
        case("minimum", vec![a(), b()], "minimum(a, b)"),
        case(
            "where",
            vec![away("a", &[4, 3], -2.0, 2.0), b()],
            "where(a > 0, a * b, b)",
        ),
        case("broadcast_row", vec![a(), p("d", &[3], -1.0, 1.0)], "a * d"),
        case(
            "broadcast_outer",
            vec![p("a", &[4, 1], -1.0, 1.0), p("d", &[1, 3], -1.0, 1.0)],
            "a * d + a",
        ),
        case(
            "scalar_param",
            vec![a(), p("s", &[], -1.0, 1.0)],
            "a * s + s",
        ),
        case("matmul", vec![a(), c()], "a @ c"),
        case(
            "matmul_ta",
            vec![p("a", &[3, 4], -1.0, 1.0), c()],
            "matmul(a, c, transpose_a = true)",
        ),
        case(
            "matmul_tb",
            vec![a(), p("c", &[2, 3], -1.0, 1.0)],
            "matmul(a, c, transpose_b = true)",
        ),
        case(
            "matmul_ta_tb",
            vec![p("a", &[3, 4], -1.0, 1.0), p("c", &[2, 3], -1.0, 1.0)],
            "matmul(a, c, transpose_a = true, transpose_b = true)",
        ),
        case(
            "bias_add",
            vec![a(), p("d", &[3], -1.0, 1.0)],
            "bias_add(a, d)",
        ),
        case("reduce_sum_0", vec![a()], "reduce_sum(a, axis = 0)"),
        case(
            "reduce_sum_1_keepdims",
            vec![a()],
            "reduce_sum(a, axis = 1, keepdims = true) * a",
        ),
        case("reduce_mean_all", vec![a()], "reduce_mean(a * a)"),
        case("reduce_mean_1", vec![a()], "reduce_mean(a, axis = -1)"),
        case("reduce_max_1", vec![a()], "reduce_max(a, axis = 1)"),
        case("reduce_max_0", vec![a()], "reduce_max(a, axis = 0)"),
        case("softmax", vec![a()], "softmax(a)"),
        case("softmax_axis0", vec![a()], "softmax(a, axis = 0)"),
        case("log_softmax", vec![a()], "log_softmax(a)"),
        // Wider rows: a reduction over axis 0 into 37 kept columns runs
        // column blocks of 16, a vector and a scalar column; rows of 6 and 7
        // end in a partial vector of 2 and 3 lanes.
        case(
            "reduce_sum_0_wide",
            vec![away("a", &[5, 37], -2.0, 2.0)],
            "reduce_sum(where(a > 0, a * a, a), axis = 0)",
        ),
        case(
            "reduce_max_1_partial",
            vec![p("a", &[4, 6], -2.0, 2.0)],
            "reduce_max(a, axis = 1)",
        ),
        case(
            "softmax_partial",
            vec![p("a", &[4, 7], -2.0, 2.0)],
            "softmax(a)",
        ),
        case("reshape", vec![a()], "reshape(a, [2, 6])"),
        case("reshape_infer", vec![a()], "reshape(a, [-1])"),
        case("transpose", vec![a()], "transpose(a)"),
        case("concat_0", vec![a(), b()], "concat([a, b], axis = 0)"),
        case(
            "concat_1",
            vec![a(), p("c", &[4, 2], -1.0, 1.0)],
            "concat([a, c], axis = 1)",
        ),
        case("slice", vec![a()], "a[1:3, :]"),
        case("index", vec![a()], "a[:, 1] * a[2, :][0]"),
        case("l2_loss", vec![a()], "l2_loss(a) + 0 * a"),
        case(
            "leaky_relu",
            vec![away("a", &[4, 3], -2.0, 2.0)],
            "leaky_relu(a) + leaky_relu(a, alpha = 0.05)",
        ),
        case("elu", vec![away("a", &[4, 3], -2.0, 2.0)], "elu(a)"),
        case("selu", vec![away("a", &[4, 3], -2.0, 2.0)], "selu(a)"),
        case("gelu", vec![a()], "gelu(a)"),
        case("gelu_tanh", vec![a()], "gelu(a, approximate = true)"),
        case("silu", vec![a()], "silu(a)"),
        case("swish", vec![a()], "swish(a, beta = 1.5)"),
        case("softsign", vec![away("a", &[4, 3], -2.0, 2.0)], "softsign(a)"),
        // relu6's kinks: a at 0, b + 6 at 6 (b = 0).
        case(
            "relu6",
            vec![away("a", &[4, 3], -2.0, 2.0), away("b", &[4, 3], -2.0, 2.0)],
            "relu6(a) + relu6(b + 6)",
        ),
        case("rsqrt", vec![pos("a")], "rsqrt(a)"),
        case(
            "moments",
            vec![a()],
            "moments_mean(a, axes = [0]) * moments_variance(a, axes = [0])",
        ),
        case(
            "moments_keepdims",
            vec![a()],
            "moments_variance(a, axes = [1], keepdims = true) * a",
        ),
        case(
            "batch_normalization",
            vec![
                a(),
                p("m", &[3], -1.0, 1.0),
                p("v", &[3], 0.5, 2.0),
                p("o", &[3], -1.0, 1.0),
                p("s", &[3], -1.0, 1.0),
            ],
            "batch_normalization(a, m, v, o, s, 0.001)",
        ),
        case(
            "layer_normalization",
            vec![a(), p("s", &[3], -1.0, 1.0), p("o", &[3], -1.0, 1.0)],
            "batch_normalization(a, moments_mean(a, axes = [-1], keepdims = true), moments_variance(a, axes = [-1], keepdims = true), o, s, 0.001)",
        ),
        case(
            "fused_batch_norm",
            vec![
                p("a", &[2, 2, 2, 3], -2.0, 2.0),
                p("s", &[3], -1.0, 1.0),
                p("o", &[3], -1.0, 1.0),
            ],
            "fused_batch_norm(a, s, o, epsilon = 0.01)",
        ),
        case(
            "fused_batch_norm_inference",
            vec![
                p("a", &[2, 2, 2, 3], -2.0, 2.0),
                p("s", &[3], -1.0, 1.0),
                p("o", &[3], -1.0, 1.0),
            ],
            "fused_batch_norm(a, s, o, mean = [0.5, -0.25, 0.0], variance = [1.0, 0.5, 2.0], is_training = false)",
        ),
        case(
            "local_response_normalization",
            vec![p("a", &[1, 2, 2, 5], -2.0, 2.0)],
            "local_response_normalization(a, depth_radius = 1, bias = 0.5, alpha = 0.3, beta = 0.75)",
        ),
        case(
            "local_response_normalization_wide",
            vec![p("a", &[1, 2, 1, 4], -2.0, 2.0)],
            "local_response_normalization(a, depth_radius = 6)",
        ),
        case(
            "conv2d_same_strided",
            vec![p("a", &[2, 5, 4, 2], -2.0, 2.0), p("k", &[3, 2, 2, 3], -1.0, 1.0)],
            "conv2d(a, k, strides = [2, 1], padding = \"SAME\")",
        ),
        case(
            "conv2d_explicit_dilated",
            vec![p("a", &[1, 5, 5, 2], -2.0, 2.0), p("k", &[2, 2, 2, 2], -1.0, 1.0)],
            "conv2d(a, k, strides = 1, padding = [[0, 0], [1, 0], [0, 2], [0, 0]], dilations = 2)",
        ),
        case(
            "conv2d_pointwise",
            vec![p("a", &[2, 3, 2, 3], -2.0, 2.0), p("k", &[1, 1, 3, 2], -1.0, 1.0)],
            "conv2d(a, k, strides = 1, padding = \"VALID\")",
        ),
        case(
            "conv1d",
            vec![p("a", &[2, 7, 2], -2.0, 2.0), p("k", &[3, 2, 2], -1.0, 1.0)],
            "conv1d(a, k, stride = 2, padding = \"SAME\")",
        ),
        case(
            "conv2d_transpose",
            vec![p("a", &[2, 2, 3, 2], -2.0, 2.0), p("k", &[3, 3, 1, 2], -1.0, 1.0)],
            "conv2d_transpose(a, k, output_shape = [2, 4, 5, 1], strides = 2, padding = \"SAME\")",
        ),
        case(
            "depthwise_conv2d",
            vec![p("a", &[1, 4, 4, 2], -2.0, 2.0), p("k", &[2, 3, 2, 2], -1.0, 1.0)],
            "depthwise_conv2d(a, k, strides = [1, 2, 1, 1], padding = \"SAME\")",
        ),
        case(
            "separable_conv2d",
            vec![
                p("a", &[1, 4, 4, 2], -2.0, 2.0),
                p("k", &[2, 2, 2, 1], -1.0, 1.0),
                p("q", &[1, 1, 2, 3], -1.0, 1.0),
            ],
            "separable_conv2d(a, k, q, strides = 1, padding = \"VALID\")",
        ),
        case(
            "max_pool2d",
            vec![p("a", &[2, 5, 4, 2], -2.0, 2.0)],
            "max_pool2d(a, ksize = 3, strides = 2, padding = \"SAME\")",
        ),
        // TF's explicit padding: -inf cells that never win, the top and the
        // right padded, windows that overlap.
        case(
            "max_pool2d_explicit_padding",
            vec![p("a", &[2, 5, 4, 2], -2.0, 2.0)],
            "max_pool2d(a, ksize = [3, 2], strides = [2, 1], padding = [[0, 0], [2, 0], [0, 1], [0, 0]])",
        ),
        case(
            "avg_pool2d",
            vec![p("a", &[2, 5, 4, 2], -2.0, 2.0)],
            "avg_pool2d(a, ksize = [2, 3], strides = [1, 2], padding = \"SAME\")",
        ),
        // The step's mask (the interpreter draws the same one) times 1/(1 − rate).
        case("dropout", vec![p("a", &[4, 6], -2.0, 2.0)], "dropout(a, 0.5, seed = 3)"),
        case(
            "chain",
            vec![a(), c(), p("d", &[2], -1.0, 1.0)],
            "tanh(relu(a @ c + d) * 2 - 0.5)",
        ),
    ];
    v.push(Case {
        name: "sigmoid_cross_entropy",
        params: vec![a()],
        consts: vec![p("t", &[4, 3], 0.0, 1.0)],
        expr: "sigmoid_cross_entropy(t, a)".into(),
        y_batched: false,
    });
    v.push(Case {
        name: "softmax_cross_entropy",
        params: vec![a(), p("t", &[4, 3], 0.1, 1.0)],
        consts: vec![],
        expr: "softmax_cross_entropy(softmax(t), a)".into(),
        y_batched: false,
    });
    v.push(Case {
        name: "mean_squared_error",
        params: vec![a()],
        consts: vec![p("t", &[4, 3], -1.0, 1.0)],
        expr: "mean_squared_error(t, a)".into(),
        y_batched: false,
    });
    // Batch-shaped: x [B, 3] and integer labels from the data.
    v.push(Case {
        name: "batch_mlp",
        params: vec![c(), p("d", &[2], -1.0, 1.0)],
        consts: vec![],
        expr: "sparse_softmax_cross_entropy(label, relu(x @ c + d) + x[:, 0:2])".into(),
        y_batched: true,
    });
    v.push(Case {
        name: "batch_mean_over_rows",
        params: vec![p("d", &[3], -1.0, 1.0)],
        consts: vec![],
        expr: "reduce_mean(sigmoid(x * d), axis = 0) + reduce_sum(x * d) * d".into(),
        y_batched: false,
    });
    // Batch normalization over the batch axis (the count involves B).
    v.push(Case {
        name: "batch_normalization_over_rows",
        params: vec![p("s", &[3], -1.0, 1.0), p("o", &[3], -1.0, 1.0)],
        consts: vec![],
        expr: "reduce_sum(batch_normalization(x * s, moments_mean(x * s, axes = [0]), moments_variance(x * s, axes = [0]), o, s, 0.001), axis = 1)".into(),
        y_batched: true,
    });
    // Embedding lookups by the int labels (ids 0, 1, 0, 1, 0: repeated rows
    // accumulate in the sparse gradient).
    v.push(Case {
        name: "embedding_lookup",
        params: vec![p("e", &[4, 3], -1.0, 1.0)],
        consts: vec![],
        expr: "reduce_sum(embedding_lookup(e, label) * x, axis = 1)".into(),
        y_batched: true,
    });
    v.push(Case {
        name: "embedding_lookup_mlp",
        params: vec![p("e", &[2, 3], -1.0, 1.0), c()],
        consts: vec![],
        expr: "reduce_sum(tanh((embedding_lookup(e, label) + x) @ c), axis = 1)".into(),
        y_batched: true,
    });
    // A convolutional layer over the batch: x [B, 3] as B images of 1×3×1.
    v.push(Case {
        name: "batch_conv_pool",
        params: vec![p("k", &[1, 2, 1, 4], -1.0, 1.0)],
        consts: vec![],
        expr: "reduce_sum(max_pool2d(relu(conv2d(reshape(x, [B, 1, 3, 1]), k, padding = \"SAME\")), ksize = [1, 2], strides = 1, padding = \"VALID\"), axis = [1, 2, 3])".into(),
        y_batched: true,
    });
    // batch_norm's training value (its moving statistics are constants here).
    v.push(Case {
        name: "batch_norm_training",
        params: vec![
            p("a", &[2, 2, 2, 3], -2.0, 2.0),
            p("s", &[3], -1.0, 1.0),
            p("o", &[3], -1.0, 1.0),
        ],
        consts: vec![
            p("moving_mean", &[3], -1.0, 1.0),
            p("moving_variance", &[3], 0.5, 2.0),
        ],
        expr: "batch_norm(a, s, o, moving_mean, moving_variance, momentum = 0.9)".into(),
        y_batched: false,
    });
    // Transposes that move the batch axis (time-major `[T, B, D]` and
    // back), a reshape inside it, and a time-major stack; each weighted
    // down to `[B]` by a constant, so a transposition shows.
    let seq = "reshape(x, [B, 3, 1]) * a";
    let batched = |name: &'static str, params: Vec<Param>, expr: String| Case {
        name,
        params,
        consts: vec![],
        expr,
        y_batched: true,
    };
    let a32 = || p("a", &[3, 2], -1.0, 1.0);
    v.push(batched(
        "transpose_time_major",
        vec![a32(), p("c", &[2, 2], -1.0, 1.0)],
        format!("reduce_sum(tanh(transpose({seq}, [1, 0, 2]) @ c) * [[[0.3, -1.2]], [[0.7, 0.4]], [[-0.5, 1.1]]], axis = [0, 2])"),
    ));
    v.push(batched(
        "transpose_batch_last_and_back",
        vec![a32()],
        format!("reduce_sum(transpose(softmax(transpose({seq}, [2, 1, 0]), axis = 1) * [[[0.3], [-1.2], [0.7]], [[0.4], [-0.5], [1.1]]], [2, 0, 1]), axis = [1, 2])"),
    ));
    v.push(batched(
        "reshape_inside_the_batch",
        vec![a32()],
        format!("reduce_sum(square(reshape(transpose({seq}, [1, 0, 2]), [3, B, 1, 2])) * [[[[0.3, -1.2]]], [[[0.7, 0.4]]], [[[-0.5, 1.1]]]], axis = [0, 2, 3])"),
    ));
    v.push(batched(
        "stack_time_major",
        vec![p("c", &[3, 2], -1.0, 1.0)],
        "reduce_sum(stack([x @ c, tanh(x @ c) * 2.0]) * [[[0.3, -1.2]], [[0.7, 0.4]]], axis = [0, 2])".into(),
    ));
    // gather along any axis: of a table (a transposed `Op::Gather`, ids
    // repeated), of a sequence (`[B, T, D]` by constant ids), and per example
    // (batch_dims = 1, ids from the data and computed).
    v.push(case(
        "gather_axis_1_of_a_table",
        vec![a()],
        "gather(a, [2, 0, 2], axis = 1)",
    ));
    v.push(case(
        "gather_last_axis_by_a_matrix",
        vec![p("a", &[2, 3, 2], -1.0, 1.0)],
        "gather(a, [[1, 0], [2, 2]], axis = -2)",
    ));
    v.push(batched(
        "gather_from_a_sequence",
        vec![a32()],
        format!("reduce_sum(gather({seq}, [2, 0, 2, 1], axis = 1) * [[0.3, -1.2], [0.7, 0.4], [-0.5, 1.1], [0.9, -0.2]], axis = [1, 2])"),
    ));
    v.push(batched(
        "gather_per_example_computed_ids",
        vec![a32()],
        format!("reduce_sum(gather({seq}, argmax(reshape(x, [B, 3, 1]) * [[1.0, 0.5], [2.0, -1.0], [0.0, 1.0]], 1), axis = 1, batch_dims = 1) * [[0.3, -1.2], [0.7, 0.4]], axis = [1, 2])"),
    ));
    v.push(batched(
        "gather_per_example_ids_from_the_data",
        vec![a32()],
        format!("reduce_sum(gather(transpose({seq}, [0, 2, 1]), label, axis = 2, batch_dims = 1) * [0.3, -1.2], axis = 1)"),
    ));
    // Keras's masked softmax: a broadcast mask, a row masked whole, and a
    // per-example mask from the data.
    v.push(case(
        "softmax_mask",
        vec![a()],
        "softmax(a, mask = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]) + softmax(a, axis = 0, mask = [[1.0], [0.0], [1.0], [1.0]])",
    ));
    v.push(batched(
        "softmax_mask_per_example",
        vec![a32()],
        format!("reduce_sum(softmax({seq}, axis = 1, mask = reshape(x, [B, 3, 1]) > 0.0) * [[0.3, -1.2], [0.7, 0.4], [-0.5, 1.1]], axis = [1, 2])"),
    ));
    // tf.image's colour conversions, adjustments, crops, pads, flips and
    // rotations (`image_color`, `image_geometry`), on a batch of 2 images
    // 3×4 RGB (or grey) and on one image.
    let img = || p("a", &[2, 3, 4, 3], 0.05, 1.0);
    for (name, expr) in [
        ("rgb_to_grayscale", "rgb_to_grayscale(a)"),
        ("grayscale_to_rgb", "grayscale_to_rgb(rgb_to_grayscale(a))"),
        ("rgb_to_hsv", "rgb_to_hsv(a)"),
        ("hsv_to_rgb", "hsv_to_rgb(a)"),
        ("rgb_to_yiq", "rgb_to_yiq(a)"),
        ("yiq_to_rgb", "yiq_to_rgb(a)"),
        ("rgb_to_yuv", "rgb_to_yuv(a)"),
        ("yuv_to_rgb", "yuv_to_rgb(a)"),
        ("per_image_standardization", "per_image_standardization(a)"),
        ("adjust_brightness", "adjust_brightness(a, 0.2)"),
        ("adjust_gamma", "adjust_gamma(a, gamma = 2.2, gain = 0.8)"),
        (
            "crop_to_bounding_box",
            "crop_to_bounding_box(a, 1, 1, 2, 2)",
        ),
        ("pad_to_bounding_box", "pad_to_bounding_box(a, 1, 2, 5, 7)"),
        ("central_crop", "central_crop(a, 0.5)"),
        (
            "resize_with_crop_or_pad",
            "resize_with_crop_or_pad(a, 5, 2)",
        ),
        ("flip_left_right", "flip_left_right(a)"),
        ("flip_up_down", "flip_up_down(a)"),
        ("transpose_image", "transpose_image(a)"),
        ("rot90_k1", "rot90(a)"),
        ("rot90_k2", "rot90(a, k = 2)"),
        ("rot90_k3", "rot90(a, k = 3)"),
        (
            "extract_patches_same_rates",
            "extract_patches(a, [1, 2, 2, 1], [1, 2, 1, 1], [1, 1, 2, 1], \"SAME\")",
        ),
        ("resize_bilinear_up", "resize(a, [5, 7])"),
        (
            "resize_bicubic_down_antialias",
            "resize(a, [2, 3], method = \"bicubic\", antialias = true)",
        ),
        (
            "resize_with_pad_lanczos3",
            "resize_with_pad(a, 6, 5, method = \"lanczos3\")",
        ),
        (
            "extract_glimpse_partly_outside",
            "extract_glimpse(a, [2, 3], [[0.1, -0.3], [-0.6, 0.5]], noise = \"zero\")",
        ),
        (
            "crop_and_resize_bilinear",
            "crop_and_resize(a, [[0.1, 0.2, 0.8, 0.7], [-0.2, 0.5, 0.6, 1.3], [0.9, 0.9, 0.3, 0.1]], [1.0, 0.0, 1.0], [3, 2], extrapolation_value = -0.5)",
        ),
        (
            "crop_and_resize_nearest",
            "crop_and_resize(a, [[0.1, 0.2, 0.8, 0.7], [0.3, 0.0, 0.6, 1.0]], [0.0, 1.0], [2, 3], method = \"nearest\")",
        ),
        (
            "resize_bilinear_v1_align_corners",
            "resize_bilinear(a, [5, 3], align_corners = true)",
        ),
        (
            "resize_bicubic_v1_legacy",
            "resize_bicubic(a, [4, 6])",
        ),
        (
            "resize_area_v1_align_corners",
            "resize_area(a, [2, 3], align_corners = true)",
        ),
        (
            "ssim_index_map",
            "ssim(a, a * 0.5 + 0.2, 1.0, filter_size = 3, return_index_map = true)",
        ),
        (
            "ssim_multiscale_two_scales",
            "ssim_multiscale(a, a * 0.5 + 0.2, 1.0, power_factors = [0.4, 0.6], filter_size = 2)",
        ),
        (
            "extract_glimpse_v1_pixels",
            "extract_glimpse_v1(a, [2, 2], [[1.0, 2.0], [-1.0, 0.5]], normalized = false, uniform_noise = false)",
        ),
    ] {
        v.push(case(name, vec![img()], expr));
    }
    v.push(case(
        "per_image_standardization_one_image",
        vec![p("a", &[3, 4, 3], 0.05, 1.0)],
        "per_image_standardization(a)",
    ));
    v.push(Case {
        name: "batch_matmul_transposed",
        params: vec![p("c", &[3, 2], -1.0, 1.0)],
        consts: vec![],
        expr: "matmul(x, x @ c, transpose_a = true)".into(),
        y_batched: false,
    });
    v
}

fn data(rng: &mut Rng) -> Dataset {
    let x: Vec<f32> = rng
        .values(BATCH * 3, -1.0, 1.0, 0.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let label: Vec<i32> = (0..BATCH as i32).map(|i| i % 2).collect();
    let w: Vec<f32> = rng
        .values(BATCH * 2, -1.0, 1.0, 0.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    Dataset::from_inputs(
        BATCH,
        vec![
            InputData::new("x", 3, Values::F32(x)),
            InputData::new("label", 1, Values::I32(label)),
            InputData::new("w", 2, Values::F32(w)),
        ],
    )
    .unwrap()
}

fn check(c: &Case, seed: u64) {
    check_with(c, seed, &Options::default());
}

fn check_with(c: &Case, seed: u64, options: &Options) {
    let mut rng = Rng(seed);
    let mut params = String::new();
    for q in &c.params {
        let n: usize = q.dims.iter().product();
        let vals = rng.values(n, q.lo, q.hi, q.gap);
        params += &format!(
            "  {}: {:?} = constant(value = {})\n",
            q.name,
            q.dims,
            literal(q.dims, &vals)
        );
    }
    for q in &c.consts {
        let n: usize = q.dims.iter().product();
        let vals = rng.values(n, q.lo, q.hi, q.gap);
        params += &format!(
            "  {}: {:?} = constant(value = {}), trainable = false\n",
            q.name,
            q.dims,
            literal(q.dims, &vals)
        );
    }
    // The weights of the loss: a non-trainable param shaped like y, or the
    // batch input `w` for per-example y.
    let weights = if c.y_batched {
        "w2 = reduce_sum(w, axis = 1)\n".to_string()
    } else {
        String::new()
    };
    let text = format!(
        "model fd\ndata synthetic(rows = 8, features = 3)\nfeatures {{ x = numeric(x0..x2)\n w = numeric(w0, w1) }}\nlabel label: int\nparams {{\n{params}}}\ny = {}\n{weights}optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = {BATCH}, steps = 1 }}\n",
        c.expr
    );
    // Find y's shape to make a weight literal of the same shape.
    let probe = specc_compiler::check(&SourceFile::new(
        "probe.spec",
        format!("{text}loss = reduce_sum(y)\n"),
    ))
    .unwrap_or_else(|d| {
        panic!(
            "{}: {:?}\n{text}",
            c.name,
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let y = probe.bindings.iter().find(|b| b.0 == "y").unwrap().1;
    let yshape = probe.graph.shape(y).clone();
    let loss = if c.y_batched {
        "loss = reduce_sum(y * w2)".to_string()
    } else {
        let dims: Vec<usize> = yshape
            .concrete(BATCH as u64)
            .iter()
            .map(|&d| d as usize)
            .collect();
        let n: usize = dims.iter().product();
        let wv = rng.values(n, -1.0, 1.0, 0.1);
        format!("loss = reduce_sum(y * {})", literal(&dims, &wv))
    };
    let text = format!("{text}{loss}\n");
    let program = compile_case(c.name, &text, options);
    let ds = data(&mut rng);
    let GradRun {
        model,
        s,
        gf,
        inputs,
        mut vars,
    } = grad_run(&program, c.name, &text, &ds);
    for p in model.trainable_params() {
        let name = model.var_name(p).to_string();
        let grad = s
            .output(gf, &format!("grad/{name}"), BATCH)
            .unwrap()
            .to_vec();
        let scale = grad
            .iter()
            .fold(0f64, |m, &g| m.max((g as f64).abs()))
            .max(1e-3);
        for (i, &gi) in grad.iter().enumerate() {
            let fd = common::central_difference(model, &inputs, &mut vars, BATCH, p as usize, i);
            let g = gi as f64;
            assert!(
                (g - fd).abs() <= 1e-3 * g.abs().max(fd.abs()) + 1e-4 * scale,
                "{}: d loss / d {name}[{i}]: compiled {g:e}, finite differences {fd:e}\n{text}",
                c.name
            );
        }
    }
}

/// `text` compiled with every function.
pub(super) fn compile_case(name: &str, text: &str, options: &Options) -> Program {
    let src = SourceFile::new(format!("{name}.spec"), text.to_string());
    compile_with(&src, Functions::ALL, options).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    })
}

/// One call of a program's `grad` on the first `BATCH` rows of a data set,
/// and the interpreter's leaves for the same rows.
pub(super) struct GradRun<'p> {
    pub model: &'p specc_compiler::model::Model,
    pub s: ProgramSession<'p>,
    pub gf: usize,
    pub inputs: Vec<specc_compiler::interp::Tensor>,
    pub vars: Vec<specc_compiler::interp::Tensor>,
}

/// Calls `grad` once on `ds`'s first `BATCH` rows and checks the compiled
/// loss against the interpreter's.
pub(super) fn grad_run<'p>(
    program: &'p Program,
    name: &str,
    text: &str,
    ds: &Dataset,
) -> GradRun<'p> {
    let model = &program.model;
    let mut s = program.session().unwrap();
    s.bind(ds).unwrap();
    let rows: Vec<u32> = (0..BATCH as u32).collect();
    s.gather(ds, &rows).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, BATCH).unwrap();
    let (inputs, vars) = common::interp_leaves(model, ds, &s, BATCH);
    let jit_loss = f64::from(s.output(gf, "loss", BATCH).unwrap()[0]);
    let ref_loss = common::interp_loss(model, &inputs, &vars, BATCH);
    assert!(
        (jit_loss - ref_loss).abs() <= 1e-4 * ref_loss.abs().max(1.0),
        "{name}: compiled loss {jit_loss} vs reference {ref_loss}\n{text}"
    );
    GradRun {
        model,
        s,
        gf,
        inputs,
        vars,
    }
}

#[test]
fn every_differentiable_op_matches_finite_differences() {
    for (k, c) in cases().iter().enumerate() {
        check(c, 0x9E37_79B9_7F4A_7C15 ^ (k as u64 + 1));
    }
}

/// 3×3 stride-1 convolutions computed by Winograd with `tile` (forced):
/// the interpreter evaluates the rewritten graph (its Winograd ops by their
/// matrix definitions), the JIT its kernels; the compiled gradients (the
/// transforms' adjoints and the batched products) match central
/// differences. Odd output sizes (cropped last tiles), SAME, VALID and
/// explicit padding.
fn winograd_convolutions_match_finite_differences(tile: WinogradTile) {
    let options = Options {
        winograd: Winograd::Always,
        winograd_tile: Some(tile),
        ..Options::default()
    };
    let cases = [
        case(
            "winograd_same_odd",
            vec![
                p("a", &[2, 5, 3, 2], -2.0, 2.0),
                p("k", &[3, 3, 2, 3], -1.0, 1.0),
            ],
            "conv2d(a, k, strides = 1, padding = \"SAME\")",
        ),
        case(
            "winograd_valid",
            vec![
                p("a", &[1, 6, 5, 3], -2.0, 2.0),
                p("k", &[3, 3, 3, 2], -1.0, 1.0),
            ],
            "conv2d(a, k, strides = 1, padding = \"VALID\")",
        ),
        case(
            "winograd_explicit",
            vec![
                p("a", &[1, 4, 5, 2], -2.0, 2.0),
                p("k", &[3, 3, 2, 2], -1.0, 1.0),
            ],
            "conv2d(a, k, strides = 1, padding = [[0, 0], [2, 1], [0, 1], [0, 0]])",
        ),
    ];
    for (k, c) in cases.iter().enumerate() {
        check_with(c, 0x5EED_0000 + k as u64, &options);
    }
}

#[test]
fn winograd_f2x2_convolutions_match_finite_differences() {
    winograd_convolutions_match_finite_differences(WinogradTile::F2);
}

#[test]
fn winograd_f4x4_convolutions_match_finite_differences() {
    winograd_convolutions_match_finite_differences(WinogradTile::F4);
}

/// The rewrite does happen under `Winograd::Always` (so the test above
/// checks the Winograd path), and not under `Never`.
#[test]
fn winograd_rewrite_replaces_the_direct_products() {
    let text = "model w\ndata synthetic(rows = 8, features = 3)\nfeatures { x = numeric(x0..x2) }\nlabel label: int\nparams {\n  a: [1, 4, 4, 2] = glorot_uniform(seed = 1)\n  k: [3, 3, 2, 2] = glorot_uniform(seed = 2)\n}\ny = conv2d(a, k, strides = 1, padding = \"SAME\")\nloss = reduce_sum(y * y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain { batch = 5, steps = 1 }\n";
    let src = SourceFile::new("w.spec", text.to_string());
    let count = |mode: Winograd, tile: WinogradTile| {
        let options = Options {
            winograd: mode,
            winograd_tile: Some(tile),
            ..Options::default()
        };
        let program = compile_with(&src, Functions::ALL, &options).expect("compiles");
        let g = &program.model.graph;
        let roots: Vec<_> = program.model.functions.grad.as_ref().expect("grad").roots();
        let live = g.reachable(&roots);
        g.nodes()
            .filter(|(id, n)| {
                let winograd = matches!(
                    n.op,
                    Op::WinogradInput(_, t)
                        | Op::WinogradInputGrad(_, t)
                        | Op::WinogradOutput(_, t)
                        | Op::WinogradOutputGrad(_, t) if t == tile
                );
                live[id.index()] && (winograd || matches!(n.op, Op::BatchMatMul { .. }))
            })
            .count()
    };
    // input, output, output_grad, input_grad and three batched products.
    for tile in [WinogradTile::F2, WinogradTile::F4] {
        assert_eq!(count(Winograd::Always, tile), 7, "{tile:?}");
        assert_eq!(count(Winograd::Never, tile), 0, "{tile:?}");
    }
}

mod einsum;
mod recurrent;
mod tiled_pools;
