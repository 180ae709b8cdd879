//! Explanations of the codes about blocks, loops and variable scopes.

use super::{Example, Explanation};

pub(super) const RECURSIVE_BLOCK: Explanation = Explanation {
    text: "\
A block calls itself, directly or through other blocks. A block is expanded
at each call, as a Python function that builds a TensorFlow graph runs, so a
call of the block being expanded would never end. Repeat a block with a
`for` loop over a static `range` instead.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
block layer(h, units) {
  params { kernel: [shape(h)[-1], units] = glorot_uniform }
  return layer(h @ kernel, units)
}
loss = mean(sparse_softmax_cross_entropy(y, layer(x, 3)))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("return layer(h @ kernel, units)", "return h @ kernel")],
    }),
};

pub(super) const BLOCK_RETURN: Explanation = Explanation {
    text: "\
The values a block returns do not fit where its call stands: a call used as
one value returns a tuple (`return a, b`) or nothing, a tuple binding
`a, b = block(...)` names more or fewer values than the block returns, a
tuple binding's value is not a block call, or `return` stands outside a
block.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
block affine(h, units) {
  params {
    kernel: [shape(h)[-1], units] = glorot_uniform
    bias: [units] = zeros
  }
  return h @ kernel + bias, kernel
}
loss = mean(sparse_softmax_cross_entropy(y, affine(x, 3)))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "loss = mean(sparse_softmax_cross_entropy(y, affine(x, 3)))",
            "logits, kernel = affine(x, 3)\nloss = mean(sparse_softmax_cross_entropy(y, logits))",
        )],
    }),
};

pub(super) const VARIABLE_SCOPE: Explanation = Explanation {
    text: "\
A variable's name under TensorFlow's variable scopes is taken or missing.
Each block call declares its parameters under its scope (`dense/kernel`,
`dense_1/kernel`, ... for unnamed calls, `NAME/kernel` for `name = \"NAME\"`),
as `tf.compat.v1.variable_scope` names them. Two calls with the same `name`
would declare the same variables: TF refuses that (\"Variable ... already
exists, disallowed\"), and so does specc. To share the variables, pass
`reuse = true` to the later call: it then declares none and uses the first
call's, which must exist with the same shapes. `reuse` needs a `name` (an
unnamed call always makes new variables), and `params` in a loop outside a
block would declare the same variables every iteration.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
block affine(h, units) {
  params { kernel: [shape(h)[-1], units] = glorot_uniform }
  return h @ kernel
}
a = affine(x, 3, name = \"shared\")
b = affine(x * 2, 3, name = \"shared\")
loss = mean(sparse_softmax_cross_entropy(y, a + b))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "affine(x * 2, 3, name = \"shared\")",
            "affine(x * 2, 3, name = \"shared\", reuse = true)",
        )],
    }),
};

pub(super) const EXPANSION_TOO_LARGE: Explanation = Explanation {
    text: "\
Loops and block calls expand a spec, and this one expands to more statements
than specc checks (200,000): loops nested in loops multiply. A model that
large is beyond one spec; check the loops' bounds.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
h = x
for i in range(1000) {
  for j in range(1000) {
    h = h * 1.0
  }
}
loss = mean(sparse_softmax_cross_entropy(y, h @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("range(1000) {\n    h", "range(2) {\n    h")],
    }),
};

pub(super) const VAR_LIST: Explanation = Explanation {
    text: "\
The `var_list`s of the optimizers (and clips) do not divide the trainable
variables. A spec may train parts of a model with different optimizers, as
TF's `DNNLinearCombinedClassifier` trains its linear part with FTRL and its
deep part with Adagrad: each `optimizer` then names the variables it trains,
`var_list = \"dnn/*\"` or a list of patterns over TF names (`*` matches any
text). Every trainable variable must be in exactly one optimizer's
`var_list`, each pattern must match some trainable variable, and with
several optimizers none may leave out its `var_list`. The patterns of a
`clip`'s or an `ema`'s `var_list` (`ema 0.999, var_list = \"dnn/*\"`, TF's
`ExponentialMovingAverage.apply(var_list)`) must match some trainable
variable too.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
block affine(h, units) {
  params { kernel: [shape(h)[-1], units] = glorot_uniform }
  return h @ kernel
}
logits = affine(x, 3, name = \"wide\") + affine(relu(x), 3, name = \"deep\")
loss = mean(sparse_softmax_cross_entropy(y, logits))
optimizer ftrl(learning_rate = 0.1, var_list = \"wide/*\")
optimizer adagrad(learning_rate = 0.05, var_list = \"dep/*\")
train { batch = 4, steps = 10 }
",
        fix: &[("\"dep/*\"", "\"deep/*\"")],
    }),
};

pub(super) const OPTIMIZER_DEF: Explanation = Explanation {
    text: "\
An `optimizer_def` (docs/optimizers.md, \"Writing your own optimizer\") is
malformed: it has no `update { ... }` (the dense rule), its `update` does not
assign `var`, an assignment's target is not something that section may
change (`update` and `sparse` assign `var`, slots and new local names;
`finish` assigns non-slot `global`s and locals; a hyperparameter, `grad` or
`step` is never assigned), a section or a name is given twice, a `sparse`
mode is not `rows` or `densify`, a name is called as a function, or an
initial value is not `zeros`, `ones`, a number or a hyperparameter.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer_def sgd(learning_rate) {
  update { grad = grad * learning_rate }
}
optimizer sgd(learning_rate = 0.1)
train { batch = 4, steps = 10 }
",
        fix: &[(
            "grad = grad * learning_rate",
            "var = var - learning_rate * grad",
        )],
    }),
};
