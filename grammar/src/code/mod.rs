//! Diagnostic codes: what kind of error a [`Diagnostic`](crate::Diagnostic) is.
//!
//! Owns: [`Code`], one variant per kind of error specc reports about a
//! user's input, with its stable kebab-case text (printed as
//! `error[argument-out-of-range]`), a one-line summary, and an
//! [`Explanation`]: what the error means and, where a spec can show it, an
//! [`Example`] of a spec with the error and the edit that fixes it (what
//! `specc explain CODE` prints, and `docs/errors.md` lists).
//!
//! Invariants: the texts are distinct kebab-case words and never change once
//! published (scripts and tests match on them); [`Code::ALL`] lists every
//! variant in the table's order; every code but [`Code::Poisoned`] (an
//! internal marker, never shown) is [shown](Code::is_shown) and
//! explained. The explanations are grouped by topic in the submodules; the
//! table below is the one list of codes.

mod arguments;
mod blocks;
mod checks;
mod csv;
mod model;
mod names;
mod shapes;
mod tools;

use std::fmt;

/// What a code means: prose, and an example where a spec can show it.
#[derive(Clone, Copy, Debug)]
pub struct Explanation {
    /// Paragraphs separated by blank lines; code in backticks.
    pub text: &'static str,
    /// A spec with the error and its fix; `None` for errors no spec text
    /// shows (an exporter's or the compiler's own, a runtime check).
    pub example: Option<Example>,
}

/// A spec that has the error, and the edits that fix it.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// A whole spec whose first error has the code.
    pub wrong: &'static str,
    /// Each `(from, to)` replaces the first `from` in the spec; applied in
    /// order to `wrong`, they give a spec without errors.
    pub fix: &'static [(&'static str, &'static str)],
}

impl Example {
    /// The spec with the fix applied.
    pub fn fixed(&self) -> String {
        let mut s = self.wrong.to_string();
        for (from, to) in self.fix {
            s = s.replacen(from, to, 1);
        }
        s
    }
}

macro_rules! codes {
    ($( $variant:ident = $text:literal, $summary:literal, $explanation:expr; )*) => {
        /// The kind of an error about the user's input (see the
        /// [module](self) and `docs/errors.md`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( #[doc = $summary] $variant, )*
        }

        impl Code {
            /// Every code, in the table's order.
            pub const ALL: &'static [Code] = &[$( Code::$variant, )*];

            /// The stable kebab-case text, as printed in `error[CODE]`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Code::$variant => $text, )*
                }
            }

            /// One line saying what the code means.
            pub const fn summary(self) -> &'static str {
                match self {
                    $( Code::$variant => $summary, )*
                }
            }

            /// What the code means, with an example where a spec can show it.
            pub const fn explanation(self) -> Explanation {
                match self {
                    $( Code::$variant => $explanation, )*
                }
            }
        }
    };
}

codes! {
    // The text of the spec.
    ParseError = "parse-error",
        "the text is not valid spec syntax",
        names::PARSE_ERROR;
    // Names and statements.
    UnknownName = "unknown-name",
        "a name is used but never defined",
        names::UNKNOWN_NAME;
    DuplicateName = "duplicate-name",
        "a name is defined twice",
        names::DUPLICATE_NAME;
    UnknownFunction = "unknown-function",
        "a call names a function, column, source, transform or check specc does not have",
        names::UNKNOWN_FUNCTION;
    UnknownOptimizer = "unknown-optimizer",
        "the optimizer is not one of TensorFlow's `tf.compat.v1.train` optimizers, an `optimizer_def` of the spec, or one of specc's optimizer library",
        names::UNKNOWN_OPTIMIZER;
    DuplicateItem = "duplicate-item",
        "a statement a spec has once is given twice",
        names::DUPLICATE_ITEM;
    MissingItem = "missing-item",
        "a statement the spec needs is missing",
        names::MISSING_ITEM;
    MissingLoss = "missing-loss",
        "the spec defines no `loss`",
        names::MISSING_LOSS;
    // Blocks, loops and variable scopes.
    RecursiveBlock = "recursive-block",
        "a block calls itself, directly or through other blocks",
        blocks::RECURSIVE_BLOCK;
    BlockReturn = "block-return",
        "a block's returned values do not fit where its call stands",
        blocks::BLOCK_RETURN;
    VariableScope = "variable-scope",
        "a variable under a block call's scope already exists, or is missing for `reuse`",
        blocks::VARIABLE_SCOPE;
    VarList = "var-list",
        "the optimizers' `var_list`s leave a trainable variable out, name it twice, or a `var_list` matches nothing",
        blocks::VAR_LIST;
    OptimizerDef = "optimizer-def",
        "an `optimizer_def` lacks its `update`, assigns what it may not, or has an entry twice",
        blocks::OPTIMIZER_DEF;
    ExpansionTooLarge = "expansion-too-large",
        "loops and block calls expand the spec beyond what specc checks",
        blocks::EXPANSION_TOO_LARGE;
    // The arguments of a call.
    UnknownArgument = "unknown-argument",
        "a call, block or declaration has no argument, setting or option of that name",
        arguments::UNKNOWN_ARGUMENT;
    MissingArgument = "missing-argument",
        "a call lacks an argument it needs",
        arguments::MISSING_ARGUMENT;
    DuplicateArgument = "duplicate-argument",
        "an argument or setting is given twice",
        arguments::DUPLICATE_ARGUMENT;
    WrongArity = "wrong-arity",
        "a call has the wrong number of positional arguments, or one where only named arguments go",
        arguments::WRONG_ARITY;
    ArgumentType = "argument-type",
        "an argument is the wrong kind of value (a name for a number, a tensor for a feature column...)",
        arguments::ARGUMENT_TYPE;
    ArgumentOutOfRange = "argument-out-of-range",
        "a number is outside the range its argument allows",
        arguments::ARGUMENT_OUT_OF_RANGE;
    UnknownChoice = "unknown-choice",
        "a value is not one of the names (or numbers) its argument accepts",
        arguments::UNKNOWN_CHOICE;
    EmptyArgument = "empty-argument",
        "a list, string, path or map argument is empty, or has fewer entries than it needs",
        arguments::EMPTY_ARGUMENT;
    DuplicateValue = "duplicate-value",
        "a list (a vocabulary, the columns of a layer) has the same entry twice",
        arguments::DUPLICATE_VALUE;
    MalformedArgument = "malformed-argument",
        "a list argument has the wrong length, order or structure",
        arguments::MALFORMED_ARGUMENT;
    ConflictingArguments = "conflicting-arguments",
        "two arguments contradict each other, or an argument contradicts the model",
        arguments::CONFLICTING_ARGUMENTS;
    UnsupportedArgument = "unsupported-argument",
        "a value the function cannot take here, though it is well formed",
        arguments::UNSUPPORTED_ARGUMENT;
    UnreadableFile = "unreadable-file",
        "a file the spec names cannot be read",
        arguments::UNREADABLE_FILE;
    BadSetting = "bad-setting",
        "a setting of `train`, `checkpoint`, `summaries`, `logging` or `evaluate` is wrong",
        arguments::BAD_SETTING;
    BadInitializer = "bad-initializer",
        "a parameter's initializer is unknown or has bad arguments",
        arguments::BAD_INITIALIZER;
    BadPartitioner = "bad-partitioner",
        "a variable's partitioner is unknown, has bad arguments, or cannot split the variable",
        arguments::BAD_PARTITIONER;
    BadMetric = "bad-metric",
        "a metric is unknown, or cannot be computed from what it is given",
        arguments::BAD_METRIC;
    BadColumnRange = "bad-column-range",
        "a column range like `x0..x63` is empty or malformed",
        arguments::BAD_COLUMN_RANGE;
    // A CSV source's columns.
    UnknownColumn = "unknown-column",
        "a CSV option, a `filter` or an input names a column the CSV source's `column_names` or `select_columns` leave out",
        csv::UNKNOWN_COLUMN;
    ColumnType = "column-type",
        "a CSV column's default, or a `filter` comparison, does not fit the type the column is read as",
        csv::COLUMN_TYPE;
    BadFilter = "bad-filter",
        "a data source's `filter` is not a condition on its columns",
        csv::BAD_FILTER;
    // Shapes and dtypes.
    BadShape = "bad-shape",
        "a tensor or parameter has a shape the operation does not accept",
        shapes::BAD_SHAPE;
    BroadcastShape = "broadcast-shape",
        "the operands of an elementwise operation do not broadcast",
        shapes::BROADCAST_SHAPE;
    MatmulShape = "matmul-shape",
        "the operands of `@` (matmul) are not matrices of matching sizes",
        shapes::MATMUL_SHAPE;
    EinsumEquation = "einsum-equation",
        "an `einsum` equation is malformed, or does not fit its operands",
        shapes::EINSUM_EQUATION;
    ReshapeShape = "reshape-shape",
        "the target shape of `reshape` is not valid for its input",
        shapes::RESHAPE_SHAPE;
    ShapeMismatch = "shape-mismatch",
        "two tensors that must have the same shape do not",
        shapes::SHAPE_MISMATCH;
    BadAxis = "bad-axis",
        "an axis is out of range, given twice, or the tensor has no axis to use",
        shapes::BAD_AXIS;
    BadIndex = "bad-index",
        "an index or slice is out of range, empty, or not allowed on that dimension",
        shapes::BAD_INDEX;
    DtypeMismatch = "dtype-mismatch",
        "a tensor has the wrong dtype (float32 or int32) for its use",
        shapes::DTYPE_MISMATCH;
    LabelKind = "label-kind",
        "a label (or ids) of the wrong kind: class ids where values are needed, or the other way round",
        shapes::LABEL_KIND;
    LossNotScalar = "loss-not-scalar",
        "the loss is not a float32 scalar",
        shapes::LOSS_NOT_SCALAR;
    TensorTooLarge = "tensor-too-large",
        "a tensor, or the whole model, is larger than specc's limit",
        shapes::TENSOR_TOO_LARGE;
    NonFiniteConstant = "non-finite-constant",
        "a constant is infinite or NaN, or beyond float32's range",
        shapes::NON_FINITE_CONSTANT;
    BadOutput = "bad-output",
        "an entry of `outputs` is not a per-example tensor",
        shapes::BAD_OUTPUT;
    ImageShape = "image-shape",
        "an image transform cannot apply to the images it receives",
        shapes::IMAGE_SHAPE;
    // The model as a whole.
    NoGradient = "no-gradient",
        "a trainable parameter does not affect the loss",
        model::NO_GRADIENT;
    NotDifferentiable = "not-differentiable",
        "the loss depends on a parameter through an operation without a gradient",
        model::NOT_DIFFERENTIABLE;
    NotAVariable = "not-a-variable",
        "a layer updates a value that is not a parameter",
        model::NOT_A_VARIABLE;
    TrainableStatistic = "trainable-statistic",
        "a statistic the step updates (a moving mean) is also trained",
        model::TRAINABLE_STATISTIC;
    UpdatedTwice = "updated-twice",
        "two layers update the same statistic",
        model::UPDATED_TWICE;
    OutputReadsLabel = "output-reads-label",
        "an output depends on the label, which prediction does not have",
        model::OUTPUT_READS_LABEL;
    EvalDataStandardize = "eval-data-standardize",
        "a standardized feature with `eval_data`, which cannot apply the training rows' statistics",
        model::EVAL_DATA_STANDARDIZE;
    StreamingStandardize = "streaming-standardize",
        "a standardized feature with a streaming source, which has no statistics before training",
        model::STREAMING_STANDARDIZE;
    FeatureListKey = "feature-list-key",
        "a SequenceExample key read both as a feature list and as a context feature",
        model::FEATURE_LIST_KEY;
    ImageEvalData = "image-eval-data",
        "the `eval_data` of an image model is not an image source",
        model::IMAGE_EVAL_DATA;
    ImageInputSource = "image-input-source",
        "an image input without an image source",
        model::IMAGE_INPUT_SOURCE;
    MissingImageInput = "missing-image-input",
        "an image source without an image input",
        model::MISSING_IMAGE_INPUT;
    // Checks.
    AssertionFailed = "assertion-failed",
        "a check of the spec (`assert_less`, `check_numerics`...) does not hold",
        checks::ASSERTION_FAILED;
    ShapeAssertion = "shape-assertion",
        "`assert_shape` does not hold",
        checks::SHAPE_ASSERTION;
    RankAssertion = "rank-assertion",
        "`assert_rank` or `assert_rank_at_least` does not hold",
        checks::RANK_ASSERTION;
    TypeAssertion = "type-assertion",
        "`assert_type` does not hold",
        checks::TYPE_ASSERTION;
    NonFiniteValue = "non-finite-value",
        "a value became infinite or NaN during training (found by `specc run` after a NaN loss)",
        checks::NON_FINITE_VALUE;
    // Exporters and the compiler itself.
    TfliteUnsupported = "tflite-unsupported",
        "the model uses something TensorFlow Lite export does not support",
        tools::TFLITE_UNSUPPORTED;
    TfliteMissingParameter = "tflite-missing-parameter",
        "the checkpoint being exported lacks a parameter, or has it with another shape",
        tools::TFLITE_MISSING_PARAMETER;
    InternalError = "internal-error",
        "specc failed in a way that is a bug in specc, not in the spec",
        tools::INTERNAL_ERROR;
    Poisoned = "poisoned",
        "an error that only repeats an earlier one (internal, never shown)",
        tools::POISONED;
}

/// Codes specc no longer reports, each with the codes that replaced it (a
/// code's text never changes meaning: a code split by what is wrong is
/// retired, and its text is not reused).
pub const RETIRED: &[(&str, &[Code])] = &[(
    "bad-argument",
    &[
        Code::ArgumentType,
        Code::ArgumentOutOfRange,
        Code::UnknownChoice,
        Code::EmptyArgument,
        Code::DuplicateValue,
        Code::MalformedArgument,
        Code::ConflictingArguments,
        Code::UnsupportedArgument,
        Code::UnreadableFile,
    ],
)];

/// What a retired code's text was replaced by, as text: the codes and their
/// summaries; `None` if `name` is not a retired code.
pub fn retired(name: &str) -> Option<String> {
    let (_, by) = RETIRED.iter().find(|(n, _)| *n == name)?;
    let mut out =
        format!("{name}: no longer reported; what it reported has one of these codes:\n\n");
    for c in *by {
        out.push_str(&format!("  {}: {}\n", c.as_str(), c.summary()));
    }
    Some(out)
}

impl Code {
    /// Whether the code is shown to users (listed by `specc explain`, in
    /// `docs/errors.md`, found by [`Code::from_name`]): all but the internal
    /// [`Code::Poisoned`].
    pub const fn is_shown(self) -> bool {
        !matches!(self, Code::Poisoned)
    }

    /// The shown codes, in the table's order.
    pub fn shown() -> impl Iterator<Item = Code> {
        Code::ALL.iter().copied().filter(|c| c.is_shown())
    }

    /// The shown code whose text is `name` (`argument-out-of-range`).
    pub fn from_name(name: &str) -> Option<Code> {
        Code::shown().find(|c| c.as_str() == name)
    }

    /// The explanation as plain text, what `specc explain CODE` prints:
    /// the code and its summary, the prose, then the example spec and the
    /// lines its fix changes (`-` before, `+` after).
    pub fn explain(self) -> String {
        let e = self.explanation();
        let mut out = format!(
            "{}: {}\n\n{}\n",
            self.as_str(),
            self.summary(),
            e.text.trim()
        );
        if let Some(ex) = e.example {
            out.push_str("\nA spec with this error:\n\n");
            out.push_str(&indent(ex.wrong));
            out.push_str("\nThe fix:\n\n");
            out.push_str(&indent(&diff(ex.wrong, &ex.fixed())));
        }
        out
    }

    /// The explanation as a Markdown section of `docs/errors.md` (the
    /// summary is in the file's index, and the prose says it at more length).
    pub fn markdown(self) -> String {
        let e = self.explanation();
        let mut out = format!("## `{}`\n\n{}\n", self.as_str(), e.text.trim());
        if let Some(ex) = e.example {
            out.push_str("\nA spec with this error:\n\n```\n");
            out.push_str(ex.wrong);
            out.push_str("```\n\nThe fix:\n\n```diff\n");
            out.push_str(&diff(ex.wrong, &ex.fixed()));
            out.push_str("```\n");
        }
        out
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `docs/errors.md`: a header saying how the file is made, an index of the
/// shown codes with their summaries, then every code's section.
pub fn markdown() -> String {
    let mut out = String::from(
        "# specc's error codes\n\n\
         <!-- Generated from `Code` in grammar/src/code/ by `specc explain --markdown`; \
         do not edit. Regenerate with\n     \
         cargo run -- explain --markdown > docs/errors.md\n     \
         (the test `tests/suite/explain.rs` fails while this file is stale). -->\n\n\
         Every error specc reports about a spec has a code, printed in brackets:\n\
         `error[argument-out-of-range]: learning_rate must be positive, got -0.01`.\n\
         `specc explain CODE` prints the code's section below; `specc explain`\n\
         lists the codes. A code's text never changes once published.\n\n",
    );
    for c in Code::shown() {
        out.push_str(&format!(
            "- [`{}`](#{}): {}\n",
            c.as_str(),
            c.as_str(),
            c.summary()
        ));
    }
    for c in Code::shown() {
        out.push('\n');
        out.push_str(&c.markdown());
    }
    out.push_str(
        "\n## Retired codes\n\nCodes specc no longer reports; their texts are not reused.\n\n",
    );
    for (name, by) in RETIRED {
        let by: Vec<String> = by.iter().map(|c| format!("[`{c}`](#{c})")).collect();
        out.push_str(&format!(
            "- `{name}`: split by what is wrong into {}.\n",
            by.join(", ")
        ));
    }
    out
}

/// Every line indented by four spaces (blank lines stay empty).
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("    {l}\n")
            }
        })
        .collect()
}

/// The lines that differ between `a` and `b`: `- ` before each line only
/// in `a`, `+ ` before each line only in `b`, in order (a longest common
/// subsequence of lines; the examples are a few lines long).
fn diff(a: &str, b: &str) -> String {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_distinct_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let t = c.as_str();
            assert!(seen.insert(t), "{t} twice");
            assert!(
                !t.is_empty()
                    && !t.starts_with('-')
                    && !t.ends_with('-')
                    && !t.contains("--")
                    && t.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'),
                "{t} is not kebab-case"
            );
        }
    }

    #[test]
    fn names_round_trip_and_poisoned_is_hidden() {
        for c in Code::shown() {
            assert_eq!(Code::from_name(c.as_str()), Some(c));
        }
        assert_eq!(Code::from_name("poisoned"), None);
        assert_eq!(Code::from_name("bad-argument"), None);
    }

    #[test]
    fn summaries_are_one_line_and_explanations_say_something() {
        for c in Code::shown() {
            assert!(
                !c.summary().contains('\n') && !c.summary().ends_with('.'),
                "{c}"
            );
            let text = c.explanation().text.trim();
            assert!(text.len() > 80, "{c}: explanation too short");
        }
    }

    #[test]
    fn examples_change_the_spec() {
        for c in Code::shown() {
            if let Some(ex) = c.explanation().example {
                for (from, _) in ex.fix {
                    assert!(
                        ex.wrong.contains(from),
                        "{c}: the fix's {from:?} is not in the spec"
                    );
                }
                assert_ne!(ex.fixed(), ex.wrong, "{c}");
                assert!(ex.wrong.ends_with('\n'), "{c}");
            }
        }
    }

    #[test]
    fn retired_codes_are_not_codes_and_name_their_replacements() {
        for (name, by) in RETIRED {
            assert!(Code::ALL.iter().all(|c| c.as_str() != *name), "{name}");
            assert!(!by.is_empty());
            let text = retired(name).unwrap();
            for c in *by {
                assert!(text.contains(c.as_str()), "{text}");
            }
        }
        assert_eq!(retired("unknown-name"), None);
    }

    #[test]
    fn diff_marks_changed_lines() {
        assert_eq!(diff("a\nb\nc\n", "a\nx\nc\n"), "- b\n+ x\n");
        assert_eq!(diff("a\nb\n", "a\nb\nc\n"), "+ c\n");
        assert_eq!(diff("a\nb\n", "b\n"), "- a\n");
        assert_eq!(diff("a\n", "a\n"), "");
    }

    #[test]
    fn explain_shows_the_example_and_its_fix() {
        let text = Code::ArgumentOutOfRange.explain();
        assert!(
            text.starts_with("argument-out-of-range: a number is outside"),
            "{text}"
        );
        let ex = Code::ArgumentOutOfRange.explanation().example.unwrap();
        for line in ex.wrong.lines().filter(|l| !l.is_empty()) {
            assert!(text.contains(&format!("    {line}\n")), "{line}");
        }
        assert!(
            text.contains("\n    - ") && text.contains("\n    + "),
            "{text}"
        );
    }
}
