//! The explanations of a CSV source's errors: its columns, their defaults
//! and types, its `filter`.

use super::{Example, Explanation};

pub(super) const UNKNOWN_COLUMN: Explanation = Explanation {
    text: "\
When a CSV source names its columns (`column_names`, for a file without a
header or to rename a header's) or selects some (`select_columns`, TF's
`make_csv_dataset` arguments), every column the spec reads must be among
them: each input's columns, the names of `select_columns`, and every column
of `filter`. A column the spec reads but the source leaves out is this
error, at the name; the help suggests a close one. (Without `column_names`
the columns are the header's, known only when the file is read: a missing
column is then an error naming the file.)",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\", header = false, column_names = [\"x0\", \"x1\", \"label\"],
         filter = x2 > 0)
label label: int
features { x = numeric(x0..x1) }
params { W: [2, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(label, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x2 > 0", "x1 > 0")],
    }),
};

pub(super) const COLUMN_TYPE: Explanation = Explanation {
    text: "\
A CSV column has one type, TF's (`float32`, `float64`, `int32`, `int64`,
`string`): the type the model's inputs read it as (a numeric column reads
`float32`, an integer label or an identity column `int64`, a vocabulary or
hashed string column `string`), else the type of its default in
`column_defaults`. A default of another type (`\"none\"` for a number, `0.5`
for an integer), or a `filter` comparison of the column with a value of
another type (`label == \"cat\"` for an integer label), is this error.
Strings compare only by `==` and `!=`.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\", filter = label == \"cat\")
label label: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(label, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("label == \"cat\"", "label == 2")],
    }),
};

pub(super) const BAD_FILTER: Explanation = Explanation {
    text: "\
A CSV source's `filter` keeps the rows a condition holds for, TF's
`dataset.filter(lambda row: ...)`: comparisons of a column with a number or
a string (`age > 30`, `sex == \"male\"`, `0 <= fare`), joined by `and` and
`or` (`and` binds tighter; parentheses group). Anything else there (an
arithmetic expression, a function call, two columns compared, a bare
column name) is this error.",
    example: Some(Example {
        wrong: "\
data csv(\"data.csv\", filter = x0 + x1)
label y: int
features { x = numeric(x0..x3) }
params { W: [4, 3] = zeros }
loss = mean(sparse_softmax_cross_entropy(y, x @ W))
optimizer adam(learning_rate = 0.01)
train { batch = 4, steps = 10 }
",
        fix: &[("x0 + x1", "x0 > 0")],
    }),
};
