//! Explanations of the codes of the spec's checks (`tf.debugging`'s
//! assertions, `assert_shape`) and of a run's non-finite values.

use super::{Example, Explanation};

pub(super) const ASSERTION_FAILED: Explanation = Explanation {
    text: "\
A check of the spec does not hold: `check_numerics` or `assert_all_finite`
found a NaN or an infinity, or a comparison (`assert_less`,
`assert_equal`, `assert_near`, `assert_positive`...) failed for some
element. A check of constants is decided when the spec is checked, as
TensorFlow decides it when building the graph; any other check runs in
every training step, and `specc run` stops at the first step where it
fails, with a caret under the check, the step, and the check's `message`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
assert_less(0.5, 0.1, message = \"the smoothing is below 0.1\")
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("assert_less(0.5, 0.1,", "assert_less(0.05, 0.1,")],
    }),
};

pub(super) const SHAPE_ASSERTION: Explanation = Explanation {
    text: "\
`assert_shape(x, [dims])` does not hold: the tensor has another rank, or a
dimension of another size. A name in the shape (`n`) takes the size it
first meets and must match it everywhere else; `B` is the batch. Shapes are
known when the spec is checked, so this is decided then.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
assert_shape(x, [B, 5])
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("[B, 5]", "[B, 4]")],
    }),
};

pub(super) const RANK_ASSERTION: Explanation = Explanation {
    text: "\
`assert_rank(x, r)` or `assert_rank_at_least(x, r)` does not hold: the
tensor has another rank (a feature of several columns is `[B, n]`, rank 2).
Ranks are known when the spec is checked, so this is decided then, as
TensorFlow decides a static rank when building the graph.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
assert_rank(x, 3)
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("assert_rank(x, 3)", "assert_rank(x, 2)")],
    }),
};

pub(super) const TYPE_ASSERTION: Explanation = Explanation {
    text: "\
`assert_type(x, dtype)` does not hold: the tensor is of the other dtype.
Class-id labels (`label y: int`) and ids are int32; features, parameters
and what is computed from them are float32. Dtypes are known when the spec
is checked, so this is decided then.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
assert_type(y, float32)
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("assert_type(y, float32)", "assert_type(y, int32)")],
    }),
};

pub(super) const NON_FINITE_VALUE: Explanation = Explanation {
    text: "\
During `specc run` the loss became NaN or infinite (TensorFlow's
`NanTensorHook` stops there too), and specc replayed the failing step to
find where: the caret is under the first value of the spec, in evaluation
order, that is not finite in that step (a binding, with the first
operation inside it that is not; a parameter an earlier update made
non-finite; a feature of the batch). Common causes: a learning rate too
high (lower it, or clip the gradients), `log` or `sqrt` of zero or a
negative value, a division by zero, a NaN or infinity in the data.

No spec shows this code when it is checked: it is a run's.",
    example: None,
};
