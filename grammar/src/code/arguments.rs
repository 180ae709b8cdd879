//! Explanations of the codes about the arguments of calls, the settings of
//! blocks, and the values they are given.

use super::{Example, Explanation};

pub(super) const UNKNOWN_ARGUMENT: Explanation = Explanation {
    text: "\
A keyword argument names no parameter of the function, a setting names
nothing its block has (`train`, `checkpoint`, `summaries`...), or an option of
a declaration (`trainable = false`) is not one the declaration takes.
Argument names are TensorFlow's (`beta1`, `hash_bucket_size`, `rate`); the
help gives the signature and a close name.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01, beta = 0.9)
train { batch = 4, steps = 10 }
",
        fix: &[("beta =", "beta1 =")],
    }),
};

pub(super) const MISSING_ARGUMENT: Explanation = Explanation {
    text: "\
A call leaves out an argument that has no default: TensorFlow's required
arguments are required here too (`momentum` of `momentum`,
`hash_bucket_size` of `categorical_column_with_hash_bucket`). The help gives
the signature. The code is also used for a layer or feature column given no
columns, `integer(..)` without `num_buckets`, and a vocabulary label without
its values.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer momentum(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "momentum(learning_rate = 0.01)",
            "momentum(learning_rate = 0.01, momentum = 0.9)",
        )],
    }),
};

pub(super) const DUPLICATE_ARGUMENT: Explanation = Explanation {
    text: "\
The same argument is given twice in one call (by position and by name, or
by name twice), or a block sets the same setting twice. The secondary mark
shows the first value; keep one.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01, learning_rate = 0.1)
train { batch = 4, steps = 10 }
",
        fix: &[(", learning_rate = 0.1", "")],
    }),
};

pub(super) const WRONG_ARITY: Explanation = Explanation {
    text: "\
The positional arguments of a call do not fit its signature. Arguments bind
as in Python: positional ones first, in the signature's order, then keyword
ones; a positional argument after a keyword argument is an error, and so is
one more than the function has parameters. The options of a declaration
(`trainable = false`) are always named, and `init_from_checkpoint` takes
exactly a checkpoint path and an assignment map.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01, 0.9)
train { batch = 4, steps = 10 }
",
        fix: &[("0.01, 0.9", "0.01, beta1 = 0.9")],
    }),
};

pub(super) const ARGUMENT_TYPE: Explanation = Explanation {
    text: "\
An argument is given the wrong kind of value: a string or a name where a
number goes (arguments such as `alpha`, `rate` or `hash_bucket_size` are
constants written in the spec, not tensors), a number where a string goes, a
single value where a list goes, a parameter or a feature column where a
tensor is computed, a tensor where a feature column goes, a categorical
column where `input_layer` needs a dense one (wrap it in `indicator_column`
or `embedding_column`), a sequence column where a layer takes none.

This is about the kind of value; a tensor of the wrong dtype is
`dtype-mismatch`, of the wrong shape `bad-shape`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, leaky_relu(x @ W, alpha = \"0.2\")))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("alpha = \"0.2\"", "alpha = 0.2")],
    }),
};

pub(super) const ARGUMENT_OUT_OF_RANGE: Explanation = Explanation {
    text: "\
A number is outside the range its argument allows: a learning rate or a
size that must be positive, a rate or decay that must be in [0, 1], a count
that must not be negative, an integer too large, a value that must be
finite, an id past the number of buckets. The message gives the range and
the value; the ranges are TensorFlow's (which refuses the same values), or
specc's limits where it has them (at most 2^20 embedding dimensions, 64
reader threads).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = -0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("learning_rate = -0.01", "learning_rate = 0.01")],
    }),
};

pub(super) const UNKNOWN_CHOICE: Explanation = Explanation {
    text: "\
An argument that takes one of a few names (or numbers) is given another:
`padding` (`\"SAME\"`, `\"VALID\"` or a list of pairs), `combiner` (`\"mean\"`,
`\"sqrtn\"`, `\"sum\"`), a dtype (`float32`, `int32`; `string`, `int64` for a
feature key), `compression` (`\"GZIP\"`, `\"ZLIB\"`, `\"\"`), `on_bad_record`
(`\"error\"`, `\"skip\"`), a resize method, the `channels` of
`decode_image` (0, 1, 3, 4). The message lists the choices; the help
suggests a close one.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\", on_bad_record = \"ignore\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("\"ignore\"", "\"skip\"")],
    }),
};

pub(super) const EMPTY_ARGUMENT: Explanation = Explanation {
    text: "\
A list, string, path or map is empty, or has fewer entries than it needs:
an empty file name, an empty `concat` or constant list, a vocabulary or
`boundaries` without entries, a cross of fewer than 2 keys, a label
vocabulary of fewer than 2 values, an image input without transforms, an
`init_from_checkpoint` without a path or with an empty assignment map.",
    example: Some(Example {
        wrong: "\
data csv(\"\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("csv(\"\")", "csv(\"data.csv\")")],
    }),
};

pub(super) const DUPLICATE_VALUE: Explanation = Explanation {
    text: "\
A list whose entries must be distinct has one twice: a vocabulary (of a
label, of a categorical column, or a vocabulary file's lines), or the
columns of one layer (two columns with the same name). TensorFlow refuses
duplicates too: an entry's position is its id. The secondary mark shows the
first one.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: vocabulary [\"no\", \"yes\", \"no\"]
features { x = numeric(x0..x3) }
params { W: [4, 2] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("[\"no\", \"yes\", \"no\"]", "[\"no\", \"yes\"]")],
    }),
};

pub(super) const MALFORMED_ARGUMENT: Explanation = Explanation {
    text: "\
An argument has the right kind of value but the wrong form: a list of the
wrong length (`strides` as an integer, `[h, w]` or `[1, h, w, 1]`), a list
not in order (`boundaries` must increase), a ragged list constant, explicit
padding that is not one `[before, after]` pair of non-negative integers per
dimension, a line of a vocabulary file that is not of the column's dtype.
The message gives the expected form.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = piecewise_constant(global_step, [200, 100], [0.01, 0.005, 0.001]))
train { batch = 4, steps = 10 }
",
        fix: &[("[200, 100]", "[100, 200]")],
    }),
};

pub(super) const CONFLICTING_ARGUMENTS: Explanation = Explanation {
    text: "\
Two arguments contradict each other, or an argument contradicts the model:
`clip_value_min` above `clip_value_max`, both `default_value` and
`num_oov_buckets`, `piecewise_constant` values that are not one more than
its boundaries, an `output_shape` whose batch is not the input's, columns of
one layer with different `max_values`, a streaming option on a source that
does not stream. Marks show both places; change one of them.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
clip by_value(clip_value_min = 1.0, clip_value_max = -1.0)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "clip_value_min = 1.0, clip_value_max = -1.0",
            "clip_value_min = -1.0, clip_value_max = 1.0",
        )],
    }),
};

pub(super) const UNSUPPORTED_ARGUMENT: Explanation = Explanation {
    text: "\
A well-formed value that the function cannot take here: a numeric column of
a dtype other than float32, explicit padding for a pooling op that takes
only `\"SAME\"` or `\"VALID\"`, `cache` on an image source (it would keep one
epoch's random augmentations), `stream = false` on a source that always
streams, `preserve_aspect_ratio = true` (an input needs one static shape), a
weighted column in a cross, an operation other than `+ - * /` in a
normalizer. The message says why; the help gives what to write instead.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features {
  a = numeric_column(x0, dtype = int64)
  x = input_layer(a)
}
params { W: [1, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(", dtype = int64", "")],
    }),
};

pub(super) const UNREADABLE_FILE: Explanation = Explanation {
    text: "\
A file the spec names, and that is read when the spec is checked (the
`vocabulary_file` of a categorical column), cannot be read: it does not
exist, or it cannot be opened. A path in a spec is relative to the spec's
directory. (A data file is read when the spec runs; its errors name the
file, row and column.)",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features {
  city = categorical_column_with_vocabulary_file(x0, \"no-such-cities.txt\")
  x = input_layer(indicator_column(city))
}
params { W: [2, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "categorical_column_with_vocabulary_file(x0, \"no-such-cities.txt\")",
            "categorical_column_with_vocabulary_list(x0, [\"paris\", \"rome\"])",
        )],
    }),
};

pub(super) const BAD_SETTING: Explanation = Explanation {
    text: "\
A setting of a block (`train`, `checkpoint`, `summaries`, `logging`,
`evaluate`) is missing, out of range or contradicts another: `train` needs
a `batch` (1 to 2^24) and `steps` or `epochs` (not both), a checkpoint
`dir` is not empty, `every_steps` and `every_secs` exclude each other, a
replicated run's batch divides by the replicas. The same checks apply to a
setting given by `--set` or a run configuration file.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 0, steps = 10 }
",
        fix: &[("batch = 0", "batch = 4")],
    }),
};

pub(super) const BAD_INITIALIZER: Explanation = Explanation {
    text: "\
A parameter's initializer is not one specc has, is not a call or name of
one, or has bad arguments (`random_uniform` with `minval` not below
`maxval`, a negative `stddev`). The initializers are TensorFlow's:
`zeros`, `ones`, `constant`, `random_uniform`, `random_normal`,
`truncated_normal`, `glorot_uniform`, `glorot_normal`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = glorot(seed = 1) }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("glorot(", "glorot_uniform(")],
    }),
};

pub(super) const BAD_PARTITIONER: Explanation = Explanation {
    text: "\
A `partitioner = ...` argument (of a parameter, `embedding_column`,
`shared_embedding_columns` or `linear_model`) is not one of TensorFlow's
partitioners, has bad arguments, or is given to a scalar, which has no
first axis to split. The partitioners are TF's
`fixed_size_partitioner(num_shards)` (`num_shards` at least 1) and
`min_max_variable_partitioner(max_partitions, min_slice_size = 262144)`
(`max_partitions` at least 1, `min_slice_size` in bytes, at least 1).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros, partitioner = fixed_size_partitioner(0) }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("fixed_size_partitioner(0)", "fixed_size_partitioner(2)")],
    }),
};

pub(super) const BAD_METRIC: Explanation = Explanation {
    text: "\
An entry of `metrics` is not a metric specc has (TensorFlow's
`tf.compat.v1.metrics`: `accuracy(labels, predictions)`,
`auc(labels, probabilities)`, `mean(values)`), is not computed from a
per-example tensor (its first dimension is the batch B), or has bad
arguments (`num_thresholds` of `auc` between 2 and 100000).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
metrics { accurracy(y, argmax(x @ W, 1)) }
",
        fix: &[("accurracy", "accuracy")],
    }),
};

pub(super) const BAD_COLUMN_RANGE: Explanation = Explanation {
    text: "\
A range of CSV columns is written as the first and last column names with
the same prefix, the first number not above the last: `x0..x63` is the 64
columns `x0`, `x1`, ..., `x63`. A range whose names have different
prefixes, no numbers, or a first number above the last is an error.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x3..x0) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x3..x0", "x0..x3")],
    }),
};
