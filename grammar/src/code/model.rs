//! Explanations of the codes about the model as a whole: gradients, the
//! statistics layers update, outputs, and how the data reaches the model.

use super::{Example, Explanation};

pub(super) const NO_GRADIENT: Explanation = Explanation {
    text: "\
A trainable parameter does not affect the loss, so it gets no gradient and
training would never change it (TensorFlow's \"No gradients provided for
any variable\"). Use it in the computation of the loss, remove it, or
declare it `trainable = false` if it is meant to stay as initialized.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params {
  W: [4, 3] = zeros
  b: [3] = zeros
}
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("(y, x @ W)", "(y, x @ W + b)")],
    }),
};

pub(super) const NOT_DIFFERENTIABLE: Explanation = Explanation {
    text: "\
The loss depends on a parameter only through an operation that has no
gradient: `argmax`, a comparison, a `cast` from int32, rounding. Gradient
descent cannot follow such a step: accuracy, for one, is not minimized
directly but through a differentiable loss such as the cross-entropy. If no
gradient should flow through the operation, wrap it in `stop_gradient(..)`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = 1.0 - mean(argmax(x @ W, 1) == y)
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "1.0 - mean(argmax(x @ W, 1) == y)",
            "mean(sparse_softmax_cross_entropy(y, x @ W))",
        )],
    }),
};

pub(super) const NOT_A_VARIABLE: Explanation = Explanation {
    text: "\
A layer that updates statistics in each training step (`batch_norm`'s
`moving_mean` and `moving_variance`, as TF's `UPDATE_OPS` do) is given a
computed value where those statistics go. They are parameters that the
step assigns: declare them in `params` with `trainable = false` and pass
them by name.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params {
  W: [4, 3] = zeros
  gamma: [4] = ones
  beta: [4] = zeros
  mv: [4] = ones, trainable = false
}
xi = reshape(x, [-1, 1, 1, 4])
h = batch_norm(xi, gamma, beta, reduce_mean(xi, [0, 1, 2]), mv)
loss = mean(sparse_softmax_cross_entropy(y, reshape(h, [-1, 4]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[
            (
                "  mv: [4] = ones, trainable = false\n",
                "  mm: [4] = zeros, trainable = false\n  mv: [4] = ones, trainable = false\n",
            ),
            ("reduce_mean(xi, [0, 1, 2])", "mm"),
        ],
    }),
};

pub(super) const TRAINABLE_STATISTIC: Explanation = Explanation {
    text: "\
A statistic that a layer updates in each step (`batch_norm`'s moving mean
and variance) is also trainable, so the optimizer would change it too.
Declare it `trainable = false`, as TF's moving statistics are.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params {
  W: [4, 3] = zeros
  gamma: [4] = ones
  beta: [4] = zeros
  mm: [4] = zeros, trainable = false
  mv: [4] = ones
}
xi = reshape(x, [-1, 1, 1, 4])
h = batch_norm(xi, gamma, beta, mm, mv)
loss = mean(sparse_softmax_cross_entropy(y, reshape(h, [-1, 4]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("mv: [4] = ones\n", "mv: [4] = ones, trainable = false\n")],
    }),
};

pub(super) const UPDATED_TWICE: Explanation = Explanation {
    text: "\
Two layers update the same statistic (the same `moving_mean` or
`moving_variance` passed to two `batch_norm` calls), so one step would
assign it twice. Each layer keeps its own statistics: declare a pair per
layer.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params {
  W: [4, 3] = zeros
  gamma: [4] = ones
  beta: [4] = zeros
  mm: [4] = zeros, trainable = false
  mv: [4] = ones, trainable = false
}
xi = reshape(x, [-1, 1, 1, 4])
h = batch_norm(xi, gamma, beta, mm, mv)
h2 = batch_norm(relu(h), gamma, beta, mm, mv)
loss = mean(sparse_softmax_cross_entropy(y, reshape(h2, [-1, 4]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[
            (
                "  mv: [4] = ones, trainable = false\n",
                "  mv: [4] = ones, trainable = false\n  mm2: [4] = zeros, trainable = false\n  mv2: [4] = ones, trainable = false\n",
            ),
            ("relu(h), gamma, beta, mm, mv", "relu(h), gamma, beta, mm2, mv2"),
        ],
    }),
};

pub(super) const OUTPUT_READS_LABEL: Explanation = Explanation {
    text: "\
An entry of `outputs` depends on the label. Outputs are what prediction
computes for rows that have no label (`specc predict`, an exported model),
so they are computed from the features and parameters only; compare them
with the labels afterwards, or in `metrics`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
outputs { correct = argmax(x @ W, 1) == y }
",
        fix: &[(
            "correct = argmax(x @ W, 1) == y",
            "class = argmax(x @ W, 1)",
        )],
    }),
};

pub(super) const EVAL_DATA_STANDARDIZE: Explanation = Explanation {
    text: "\
A feature is standardized (`normalizer = standardize`: the mean and
standard deviation of the training rows) in a spec with `eval_data`. The
evaluation data is read on its own, so it cannot be normalized with the
training rows' statistics. Write the normalizer as an expression with the
numbers, `normalizer = (x - MEAN) / STD`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
eval_data csv(\"eval.csv\")
label y: int
features { x = numeric(x0..x3, normalizer = standardize) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("normalizer = standardize", "normalizer = (x - 2.5) / 1.5")],
    }),
};

pub(super) const STREAMING_STANDARDIZE: Explanation = Explanation {
    text: "\
A feature is standardized (`normalizer = standardize`: the mean and
standard deviation of every row) but the data streams: a streamed source
is read batch by batch while training, so the statistics of every row are
not known before the first step. Write the normalizer as an expression with
the numbers, `normalizer = (x - MEAN) / STD`, or read the data into memory.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\", stream = true)
label y: int
features { x = numeric(x0..x3, normalizer = standardize) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("normalizer = standardize", "normalizer = (x - 2.5) / 1.5")],
    }),
};

pub(super) const FEATURE_LIST_KEY: Explanation = Explanation {
    text: "\
The data is `tfrecord(.., sequence_example = true)`: records of
`tf.train.SequenceExample`, whose sequence columns
(`sequence_numeric_column`, `sequence_categorical_column_with_*`) read
their keys from the record's feature lists and every other input (labels,
plain inputs, the other feature columns) from its context. A key read both
ways would need two parse specs for one name, as TF's
`parse_sequence_example(context_features=.., sequence_features=..)` would:
read the context value under another key.",
    example: Some(Example {
        wrong: "\
data tfrecord(\"train.tfrecord\", sequence_example = true)
label y: int
features {
  words = sequence_categorical_column_with_identity(w, num_buckets = 10, max_values = 5)
  seq = sequence_input_layer(embedding_column(words, dimension = 4))
  n = numeric(w)
}
params { W: [4, 2] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, reduce_sum(seq, 1) @ W + reduce_sum(n)))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("numeric(w)", "numeric(w_count)")],
    }),
};

pub(super) const IMAGE_EVAL_DATA: Explanation = Explanation {
    text: "\
The `eval_data` of a model with an image input is not an image source. The
evaluation images go through the same transforms (in their evaluation
form), so they come from an image source too: `image_dataset_from_directory`,
`image_csv` or `image_tfrecord`.",
    example: Some(Example {
        wrong: "\
data image_dataset_from_directory(\"digits\")
eval_data csv(\"eval.csv\")
label label: int
features {
  image = image(decode_image(channels = 1), resize([16, 16]))
}
params { W: [256, 10] = zeros }
loss = mean(sparse_softmax_cross_entropy(label, reshape(image, [-1, 256]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "eval_data csv(\"eval.csv\")",
            "eval_data image_dataset_from_directory(\"digits_val\")",
        )],
    }),
};

pub(super) const IMAGE_INPUT_SOURCE: Explanation = Explanation {
    text: "\
A feature is an image input (`image(decode_image(..), ..)`) but the data
is not an image source. Images are read by `image_dataset_from_directory`,
`image_csv` or `image_tfrecord`, which give the encoded images the input
decodes.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label label: int
features {
  image = image(decode_image(channels = 1), resize([16, 16]))
}
params { W: [256, 10] = zeros }
loss = mean(sparse_softmax_cross_entropy(label, reshape(image, [-1, 256]) @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "csv(\"data.csv\")",
            "image_dataset_from_directory(\"digits\")",
        )],
    }),
};

pub(super) const MISSING_IMAGE_INPUT: Explanation = Explanation {
    text: "\
The data is an image source but no feature is an image input, so nothing
would decode the images. Add one, `image = image(decode_image(channels =
C), resize([H, W]), ..)`, or read a CSV with `csv(..)`.",
    example: Some(Example {
        wrong: "\
data image_dataset_from_directory(\"digits\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "image_dataset_from_directory(\"digits\")",
            "csv(\"data.csv\")",
        )],
    }),
};
