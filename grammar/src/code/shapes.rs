//! Explanations of the codes about shapes, axes, indices and dtypes.

use super::{Example, Explanation};

pub(super) const BAD_SHAPE: Explanation = Explanation {
    text: "\
A tensor has a shape the operation does not accept, or a declared shape is
not valid: a parameter's dimension that is not a positive integer, or the
batch dimension `B` in a parameter (parameters have fixed shapes); an
operation that needs a given rank (images `[N, H, W, C]`, a scalar
learning rate, a vector of one value per channel) given another, or a
kernel larger than its padded input. The message gives the shape found.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 0] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("[4, 0]", "[4, 3]")],
    }),
};

pub(super) const BROADCAST_SHAPE: Explanation = Explanation {
    text: "\
The operands of an elementwise operation (`+`, `-`, `*`, `/`, a comparison,
`where`, `bias_add`...) have shapes that do not broadcast. Broadcasting is
NumPy's and TensorFlow's: shapes are aligned at their last dimension, and
two dimensions match when they are equal or one of them is 1. A bias of a
layer `x @ W + b` has the size of `W`'s last dimension.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params {
  W: [4, 3] = zeros
  b: [4] = zeros
}
loss = mean(sparse_softmax_cross_entropy(y, x @ W + b))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("b: [4]", "b: [3]")],
    }),
};

pub(super) const MATMUL_SHAPE: Explanation = Explanation {
    text: "\
The operands of `@` (matmul) are not matrices whose inner dimensions
match: `[n, k] @ [k, m]` gives `[n, m]`, and a batch of matrices on the left
`[..., n, k] @ [k, m]` gives `[..., n, m]`. A feature of 4 columns is
`[B, 4]`, so the weights it multiplies have 4 rows. Two batches of
matrices multiply when their batch axes (all but the last two) broadcast,
as NumPy's: `[B, H, n, k] @ [B, H, k, m]` and `[H, n, k] @ [B, H, k, m]`
give `[B, H, n, m]`; the batch `B` can only be the first batch axis.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [3, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("[3, 3]", "[4, 3]")],
    }),
};

pub(super) const EINSUM_EQUATION: Explanation = Explanation {
    text: "\
The equation of `einsum` (TF's `tf.einsum`) is malformed or does not fit
its operands. An equation names each operand's axes by letters, the
operands separated by `,`, then `->` and the result's axes: `btd,de->bte`
is `[B, T, D] @ [D, E]`. A letter in two operands is one axis (the same
size in both); a letter missing from the result is summed over. Each
operand has as many letters as axes; each letter of the result appears in
an operand and once in the result; the letters are `a`-`z` and `A`-`Z`.
Without `->`, the result is the letters used once, in alphabetical order.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, einsum(\"bd,de->bf\", x, W)))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("->bf", "->be")],
    }),
};

pub(super) const RESHAPE_SHAPE: Explanation = Explanation {
    text: "\
The target shape of `reshape` is not valid: more than one dimension is -1
(the one whose size is inferred), a dimension is zero or negative, or the
number of elements differs from the input's.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, reshape(x, [-1, -1]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("[-1, -1]", "[-1, 4]")],
    }),
};

pub(super) const SHAPE_MISMATCH: Explanation = Explanation {
    text: "\
Two tensors that must have the same shape do not: the labels and the
logits (or predictions) of a loss or a metric, two images compared by
`ssim` or `psnr`, a gradient and its clipping bound. For class ids, the
labels are `[B]` and the logits `[B, classes]`; an `accuracy` compares ids
with ids, so it takes `argmax(logits, 1)`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
metrics { accuracy(y, x @ W) }
",
        fix: &[("accuracy(y, x @ W)", "accuracy(y, argmax(x @ W, 1))")],
    }),
};

pub(super) const BAD_AXIS: Explanation = Explanation {
    text: "\
An axis is out of range for the tensor's rank (a rank-2 tensor has axes 0
and 1, or -2 and -1), is given twice in one list, or the operation needs
an axis the tensor does not have (`argmax` or `softmax` of a scalar, logits
without a class axis, `moments` over no axes).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
metrics { accuracy(y, argmax(x @ W, 2)) }
",
        fix: &[("argmax(x @ W, 2)", "argmax(x @ W, 1)")],
    }),
};

pub(super) const BAD_INDEX: Explanation = Explanation {
    text: "\
An index or slice is out of range for its dimension, is empty, or indexes
the batch dimension: the batch dimension `B` can only be taken whole
(`:`), since a step's batch has any number of rows. Columns of a feature
`[B, n]` are taken as `x[:, i]` or `x[:, a:b]`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [2, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x[0:2] @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x[0:2]", "x[:, 0:2]")],
    }),
};

pub(super) const DTYPE_MISMATCH: Explanation = Explanation {
    text: "\
A tensor is int32 where float32 is needed: arithmetic and most functions
take float32 (comparisons take either). Int32 tensors are class-id labels
(`label y: int`), id features, and what `argmax` returns; convert one with
`cast(x, float32)`, or declare a label that holds values as
`label y: float`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { w: [4] = zeros }
loss = mean(square(reduce_sum(x * w, axis = 1) - y))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("label y: int", "label y: float")],
    }),
};

pub(super) const LABEL_KIND: Explanation = Explanation {
    text: "\
A label, or ids, of the wrong kind for its use: `sparse_softmax_cross_entropy`
and `embedding_lookup` take int32 class ids (`label y: int`, an `integer`
feature), `softmax_cross_entropy` and the regression losses take float
values (`label y: float`). Also: an int label of several columns (a class
id is one column), a vocabulary label of several columns, and one label
used with different numbers of classes.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: float
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("label y: float", "label y: int")],
    }),
};

pub(super) const LOSS_NOT_SCALAR: Explanation = Explanation {
    text: "\
The `loss` is not a float32 scalar. A per-example loss (`[B]`) is reduced
to one number for the optimizer to minimize, usually by `mean` (TF's
`reduce_mean`).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = sparse_softmax_cross_entropy(y, x @ W)
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "loss = sparse_softmax_cross_entropy(y, x @ W)",
            "loss = mean(sparse_softmax_cross_entropy(y, x @ W))",
        )],
    }),
};

pub(super) const TENSOR_TOO_LARGE: Explanation = Explanation {
    text: "\
A tensor has more than 2^40 elements (4 TiB of float32) at the spec's batch
size, or the model's tensors add up to more than 2^44 elements: more than
any machine specc runs on holds, and more than its indices count. A tensor
`[B, n]` counts `batch * n` elements.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 300000000] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4096, steps = 10 }
",
        fix: &[("[4, 300000000]", "[4, 3]")],
    }),
};

pub(super) const NON_FINITE_CONSTANT: Explanation = Explanation {
    text: "\
A constant is beyond float32's range (about 3.4e38), or a constant
expression evaluates to an infinity or NaN (`1 / 0`, `log(0)`). Tensors are
float32, so such a constant would make every value it touches infinite.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = 1e39 * mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("1e39 *", "1e3 *")],
    }),
};

pub(super) const BAD_OUTPUT: Explanation = Explanation {
    text: "\
An entry of `outputs` is not per example: what `specc predict` writes is
one value (or one row) per input row, so an output's first dimension is
the batch `B`. Reduce over the other axes only.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
outputs { total = reduce_sum(x @ W) }
",
        fix: &[("reduce_sum(x @ W)", "reduce_sum(x @ W, 1)")],
    }),
};

pub(super) const IMAGE_SHAPE: Explanation = Explanation {
    text: "\
An image transform cannot apply to the images it receives (a crop larger
than the image, a color transform of one-channel images), or the images
have no static shape after the last transform: an input is one tensor
`[B, H, W, C]`, so images of different sizes need a `resize` (or a crop)
to one size, and `decode_image` needs its `channels`.",
    example: Some(Example {
        wrong: "\
data image_dataset_from_directory(\"digits\")
label label: int
features {
  image = image(decode_image(channels = 1))
}
params { W: [256, 10] = zeros }
loss = mean(sparse_softmax_cross_entropy(label, reshape(image, [-1, 256]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "decode_image(channels = 1))",
            "decode_image(channels = 1), resize([16, 16]))",
        )],
    }),
};
