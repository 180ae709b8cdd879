//! Explanations of the codes about the spec's text, its names and its
//! statements.

use super::{Example, Explanation};

pub(super) const PARSE_ERROR: Explanation = Explanation {
    text: "\
The spec could not be read as spec syntax. The message says what the parser
expected at the caret and what it found instead; a bracket left open is
marked where it was opened.

Common causes: a `(`, `[` or `{` without its closing bracket; a `;` (a
statement ends at the end of its line); `**` (write `square(x)` or `x * x`);
`.5` or `5.` (write `0.5` and `5.0`); `==` where a binding `NAME = EXPRESSION`
was meant; an expression standing alone as a statement (only a call, such as
a check, can; bind a value to a name).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W)
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x @ W)\n", "x @ W))\n")],
    }),
};

pub(super) const UNKNOWN_NAME: Explanation = Explanation {
    text: "\
An expression uses a name that nothing in the spec defines. A name is a
parameter of `params`, a feature of `features`, the `label`, a binding
(`NAME = EXPRESSION`) or `global_step`. The help suggests a defined name
close to the one written.

The same code is used for a tensor `logging` names, a feature column a layer
names, and a parameter or scope `init_from_checkpoint` maps to, when none of
those exists.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ V))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x @ V", "x @ W")],
    }),
};

pub(super) const DUPLICATE_NAME: Explanation = Explanation {
    text: "\
A name is defined twice: two bindings, or a binding and a parameter, feature
or label of the same name (or two metrics, or two outputs, called the same).
A spec describes a graph, not a sequence of assignments: each name is one
tensor, so at the top level a value is never rebound. Give the new value its
own name. Inside a `for` loop and a block's body, a binding (or a block's
argument) may be bound again (`h = dense(h, 64)`): that is how a loop carries
a value. A loop variable, a static argument and a parameter are never
rebound.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
h = x @ W
h = relu(h)
loss = mean(sparse_softmax_cross_entropy(y, h))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[
            ("h = relu(h)", "logits = relu(h)"),
            ("(y, h)", "(y, logits)"),
        ],
    }),
};

pub(super) const UNKNOWN_FUNCTION: Explanation = Explanation {
    text: "\
A call names something specc does not have in that place: a function of an
expression, a feature column, a data source, an image transform, a clipping
rule, a check, or a statement. Names are TensorFlow's (`relu`,
`sparse_softmax_cross_entropy`, `numeric_column`, `decode_image`,
`assert_less`...); the help suggests a close one, or lists what the place
accepts.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, rellu(x @ W)))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("rellu", "relu")],
    }),
};

pub(super) const UNKNOWN_OPTIMIZER: Explanation = Explanation {
    text: "\
The `optimizer` statement names an optimizer specc does not have. The
optimizers are TensorFlow's `tf.compat.v1.train` ones, by their snake_case
names and with their argument names: `gradient_descent`, `momentum`,
`adagrad`, `adagrad_da`, `adadelta`, `adam`, `ftrl`, `rmsprop`,
`proximal_adagrad`, `proximal_gradient_descent`; besides them, an
optimizer the spec defines (`optimizer_def NAME(...) { ... }`) and those
of specc's optimizer library (`adamw`, `lamb`: `specc library
optimizers`).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer sgd(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("sgd", "gradient_descent")],
    }),
};

pub(super) const DUPLICATE_ITEM: Explanation = Explanation {
    text: "\
A statement that a spec has at most once is given a second time: `model`,
`data`, `eval_data`, `label`, a block such as `train` or `checkpoint`, or the
image input. The secondary mark shows the first one; keep one of the two.
(Several `optimizer` items are allowed when each names its `var_list`: see
`var-list`.)",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
train { batch = 8, steps = 10 }
",
        fix: &[("train { batch = 8, steps = 10 }\n", "")],
    }),
};

pub(super) const MISSING_ITEM: Explanation = Explanation {
    text: "\
The spec lacks a statement it needs: every spec has `data`, `optimizer` and
`train` (and a `loss`, see `missing-loss`); `specc predict` also needs
`outputs`. The help shows the statement's form.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
",
        fix: &[(
            "optimizer adam(learning_rate = 0.01)\n",
            "optimizer adam(learning_rate = 0.01)\ntrain { batch = 4, steps = 10 }\n",
        )],
    }),
};

pub(super) const MISSING_LOSS: Explanation = Explanation {
    text: "\
Nothing in the spec is called `loss`. The optimizer minimizes the binding
named `loss`, a float32 scalar (usually the `mean` of a per-example loss).",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\")
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
cost = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("cost =", "loss =")],
    }),
};
