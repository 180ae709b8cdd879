//! Feature-column errors through the CLI (`sema::features`, string labels):
//! exit code 2, the diagnostic's code, file:line:column and a caret under
//! the offending text with its help (snapshotted), never a panic.

use crate::cli;

use cli::{replace, BASE};

const SUITE: &str = "cli_errors_features";

/// The base spec with `entries` added to its features block.
fn with_features(entries: &str) -> String {
    replace(
        "  x = numeric(x0..x3)\n",
        &format!("  x = numeric(x0..x3)\n{entries}"),
    )
}

macro_rules! case {
    ($name:ident, $spec:expr, $code:literal) => {
        #[test]
        fn $name() {
            let err = cli::fails(SUITE, stringify!($name), &$spec, $code);
            insta::assert_snapshot!(err);
        }
    };
}

#[test]
fn feature_columns_check() {
    let spec = with_features(
        "  city = categorical_column_with_hash_bucket(city, 100, max_values = 2)\n  \
         words = categorical_column_with_hash_bucket(text, 100, max_values = 3, sep = whitespace, \
         on_overflow = \"truncate\")\n  \
         genres = sequence_categorical_column_with_vocabulary_list(g, [\"a\"], sep = \"|\", \
         max_values = 4)\n  \
         ids = categorical_column_with_identity(ids, 10, sep = \";\", on_overflow = \"error\")\n  \
         c = crossed_column([string(text, sep = whitespace), ids], 10, max_values = 30)\n  \
         deep = input_layer(embedding_column(city, dimension = 4), numeric_column(x0))\n",
    )
    .replace("relu(x @ W1 + b1)", "relu(deep @ W1 + b1)")
    .replace("W1: [4, 8]", "W1: [5, 8]");
    let dir = cli::workdir(SUITE, "valid");
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, _, err) = cli::specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 0, "{err}\n{spec}");
    assert!(BASE.contains("numeric(x0..x3)"));
}

case!(
    categorical_column_used_as_a_tensor,
    with_features("  city = categorical_column_with_hash_bucket(city, 100)\n")
        .replace("relu(x @ W1 + b1)", "relu(city @ W1 + b1)"),
    "argument-type"
);
case!(
    unknown_feature_column,
    with_features("  city = categorical_column_with_hash_bukcet(city, 100)\n"),
    "unknown-function"
);
case!(
    zero_hash_bucket_size,
    with_features("  city = categorical_column_with_hash_bucket(city, 0)\n"),
    "argument-out-of-range"
);
case!(
    unsorted_boundaries,
    with_features("  a = bucketized_column(numeric_column(x0), boundaries = [1, 3, 2])\n"),
    "malformed-argument"
);
case!(
    duplicate_vocabulary,
    with_features("  s = categorical_column_with_vocabulary_list(s, [\"a\", \"b\", \"a\"])\n"),
    "duplicate-value"
);
case!(
    embedding_dimension_zero,
    with_features(
        "  city = categorical_column_with_hash_bucket(city, 100)\n  \
         e = input_layer(embedding_column(city, dimension = 0))\n"
    ),
    "argument-out-of-range"
);
case!(
    categorical_column_in_input_layer,
    with_features(
        "  city = categorical_column_with_hash_bucket(city, 100)\n  d = input_layer(city)\n"
    ),
    "argument-type"
);
case!(
    unknown_column_in_a_layer,
    with_features(
        "  city = categorical_column_with_hash_bucket(city, 100)\n  \
         d = input_layer(indicator_column(ctiy))\n"
    ),
    "unknown-name"
);
case!(
    unknown_embedding_argument,
    with_features(
        "  city = categorical_column_with_hash_bucket(city, 100)\n  \
         d = input_layer(embedding_column(city, dimenson = 4))\n"
    ),
    "unknown-argument"
);
case!(
    unknown_combiner,
    with_features(
        "  city = categorical_column_with_hash_bucket(city, 100)\n  \
         d = input_layer(embedding_column(city, dimension = 4, combiner = \"maen\"))\n"
    ),
    "unknown-choice"
);
case!(
    cross_of_one_key,
    with_features("  c = crossed_column([\"a\"], hash_bucket_size = 10)\n"),
    "empty-argument"
);
case!(
    duplicate_label_vocabulary,
    replace("label y: int", "label y: vocabulary [\"a\", \"b\", \"a\"]"),
    "duplicate-value"
);
case!(
    label_vocabulary_and_logits_disagree,
    replace("label y: int", "label y: vocabulary [\"a\", \"b\"]"),
    "label-kind"
);

#[test]
fn vocabulary_file_is_read_relative_to_the_spec() {
    let dir = cli::workdir(SUITE, "vocabulary_file");
    std::fs::write(dir.join("cities.txt"), "paris\nlondon\ntokyo\n").unwrap();
    let spec = with_features(
        "  city = categorical_column_with_vocabulary_file(city, \"cities.txt\", num_oov_buckets = 2)\n  \
         d = input_layer(indicator_column(city))\n",
    )
    .replace("relu(x @ W1 + b1)", "relu(d @ W1 + b1)")
    .replace("W1: [4, 8]", "W1: [5, 8]");
    std::fs::write(dir.join("spec.spec"), &spec).unwrap();
    let (status, _, err) = cli::specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 0, "{err}\n{spec}");
    // 3 entries + 2 OOV buckets: a [5, 8] W1 fits, a [4, 8] one does not.
    std::fs::write(
        dir.join("spec.spec"),
        spec.replace("W1: [5, 8]", "W1: [4, 8]"),
    )
    .unwrap();
    let (status, _, _) = cli::specc(&dir, &["check", "spec.spec"]);
    assert_eq!(status, 2);
}

case!(
    missing_vocabulary_file,
    with_features("  city = categorical_column_with_vocabulary_file(city, \"nowhere.txt\")\n"),
    "unreadable-file"
);
case!(
    sequence_column_in_input_layer,
    with_features(
        "  words = sequence_categorical_column_with_hash_bucket(words, 100, max_values = 4)\n  \
         e = input_layer(embedding_column(words, dimension = 2))\n"
    ),
    "argument-type"
);
case!(
    non_sequence_column_in_sequence_input_layer,
    with_features(
        "  words = sequence_categorical_column_with_hash_bucket(words, 100, max_values = 4)\n  \
         seq = sequence_input_layer(embedding_column(words, dimension = 2), numeric_column(x0))\n"
    ),
    "argument-type"
);
case!(
    sequence_columns_with_different_max_values,
    with_features(
        "  words = sequence_categorical_column_with_hash_bucket(words, 100, max_values = 4)\n  \
         t = sequence_numeric_column(t, max_values = 3)\n  \
         seq = sequence_input_layer(indicator_column(words), t)\n"
    ),
    "conflicting-arguments"
);
case!(
    sequence_length_of_a_non_sequence_layer,
    with_features("  n = sequence_length(x)\n"),
    "argument-type"
);
case!(
    sep_on_a_numeric_column,
    with_features("  a = numeric_column(x0, sep = whitespace)\n"),
    "unsupported-argument"
);
case!(
    sep_on_a_cross,
    with_features(
        "  words = categorical_column_with_hash_bucket(text, 100, sep = whitespace)\n  \
         c = crossed_column([words, \"sex\"], hash_bucket_size = 10, sep = \" \")\n"
    ),
    "unsupported-argument"
);
case!(
    empty_sep,
    with_features("  words = categorical_column_with_hash_bucket(text, 100, sep = \"\")\n"),
    "empty-argument"
);
case!(
    unknown_sep,
    with_features(
        "  words = sequence_categorical_column_with_hash_bucket(text, 100, sep = whitespaces)\n"
    ),
    "unknown-choice"
);
case!(
    sep_none_is_ambiguous,
    with_features("  words = categorical_column_with_identity(ids, 10, sep = None)\n"),
    "unknown-choice"
);
case!(
    unknown_on_overflow,
    with_features(
        "  g = categorical_column_with_vocabulary_list(g, [\"a\", \"b\"], sep = \"|\", \
         on_overflow = \"truncated\")\n"
    ),
    "unknown-choice"
);
case!(
    cross_of_a_split_key_without_max_values,
    with_features(
        "  g = categorical_column_with_vocabulary_list(g, [\"a\", \"b\"], sep = \"|\", max_values = 2)\n  \
         c = crossed_column([string(text, sep = whitespace), g], hash_bucket_size = 10)\n"
    ),
    "missing-argument"
);
