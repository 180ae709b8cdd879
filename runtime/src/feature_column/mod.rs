//! `tf.feature_column`: what a spec's feature columns are, as data, and the
//! names TensorFlow gives them.
//!
//! Owns: the column descriptions ([`NumericColumn`], [`CategoricalColumn`]
//! and its kinds, [`CrossKey`]), TF's column names ([`NumericColumn::name`],
//! [`CategoricalColumn::name`]), bucket counts, and how many ids a column can
//! give one example (`max_values`, [`FeatureInput::Ids`]). The transforms that
//! turn raw cells into a column's inputs live in `transform` (next to these
//! types); the compiler's `sema::features` builds these descriptions from a
//! spec, and lowers `indicator_column`, `embedding_column`, `input_layer` and
//! `linear_model` to graph ops over the inputs below.
//!
//! How a column reaches the compiled step (the boundary between runtime and
//! compiler):
//! - a dense column (`numeric_column`) is one f32 input `[B, shape]`
//!   ([`FeatureInput::Dense`]); its key may hold the values as bytes
//!   (`decode_raw`, `parse_tensor`: [`BytesDecoder`]);
//! - a categorical column is two inputs of `[B, max_values]`: its ids (i32,
//!   [`FeatureInput::Ids`]) and its weights (f32, [`FeatureInput::Weights`];
//!   1 for a present id of an unweighted column, the weight feature's value
//!   for a weighted one). A slot without an id (padding, and the values TF
//!   drops: `""` strings, `-1` ints, negative ids) holds [`PADDING_ID`] (-1)
//!   with weight 0, so it names no row: the compiled step gathers zeros for
//!   it and its sparse updates touch no row for it (TF never touches a row
//!   that no id names). TF's SparseTensor of a row is the slots whose id is
//!   not [`PADDING_ID`], in slot order.
//! - a base categorical column with `sep` ([`KeyValues`]) splits a CSV
//!   cell into its values as `tf.strings.split` does (module `split`), and
//!   with `on_overflow = "truncate"` keeps the first `max_values` of them
//!   (a CSV cell's pieces or an Example feature's list); the values are
//!   then TF's SparseTensor, as an Example feature's list is;
//! - a string label is one i32 input `[B]` of class ids
//!   ([`FeatureInput::LabelVocabulary`]).
//! - a sequence column (`sequence_*`, TF's `SequenceCategoricalColumn` and
//!   `SequenceNumericColumn`) has at most `max_steps` = T steps per example:
//!   a sequence categorical column is the ids and weights above with
//!   `max_values` = T (slot t holds step t's id, one id per step); a
//!   sequence numeric column of shape d is one f32 input `[B, T*d]`
//!   ([`FeatureInput::SequenceDense`]; steps past the example's length hold
//!   `default_value`); each sequence column also gives its length, one i32
//!   input `[B]` ([`FeatureInput::SequenceLength`]: TF's
//!   `sequence_length_from_sparse_tensor`, the last present step + 1).
//!
//! Invariants: a description is checked when it is built (sizes are
//! positive, boundaries sorted, vocabularies without duplicates), so the
//! transforms never divide by zero or index out of range; names are TF's
//! `_FeatureColumn.name` strings, which decide `input_layer`'s output order.

use std::num::NonZeroU64;

use crate::data::NormExpr;

mod decode;
pub mod describe;
pub mod feature_lists;
mod parse_spec;
pub(crate) mod raw;
pub mod split;
pub mod transform;
pub mod vocabulary;

pub use decode::{value_text, BytesDecoder};
pub use describe::describe_input;
pub use feature_lists::{feature_list_keys, KeyConflict};
pub use parse_spec::{make_parse_example_spec, tf_repr};
pub use split::{KeyValues, Sep};
pub use transform::{
    CategoricalOutput, CategoricalTransform, DenseTransform, LabelVocabularyTransform,
    SequenceDenseTransform, SequenceLengthTransform,
};
pub use vocabulary::read_vocabulary_file;

/// The id of a categorical slot that holds no value (padding, a dropped
/// value): it names no row of any table. The only negative id an ids input
/// ([`FeatureInput::Ids`]) may hold; `InputLayout::padding` marks those
/// inputs for the id checks.
pub const PADDING_ID: i32 = -1;

/// The type TF parses a raw feature key as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyDType {
    /// `tf.string`: bytes, taken verbatim (a CSV cell is not trimmed).
    String,
    /// `tf.int64`: parsed as a decimal integer.
    Int64,
}

/// `numeric_column(key, shape, default_value, normalizer_fn)`.
#[derive(Clone, Debug, PartialEq)]
pub struct NumericColumn {
    /// The raw feature key (a CSV column, an Example feature).
    pub key: String,
    /// Values per example (`shape` flattened; TF's default `(1,)`).
    pub shape: usize,
    /// What a missing value becomes (`shape` values); `None`: an error.
    pub default_value: Option<Vec<f64>>,
    /// `normalizer_fn` as an expression in `x`, applied after the default.
    pub normalizer: Option<NormExpr>,
    /// The key holds the values as bytes: `decode_raw(key, ..)` or
    /// `parse_tensor(key, ..)` (see [`BytesDecoder`]).
    pub decode: Option<BytesDecoder>,
}

impl NumericColumn {
    /// TF's name: the key.
    pub fn name(&self) -> String {
        self.key.clone()
    }
}

/// A vocabulary of strings or of int64 ids.
#[derive(Clone, Debug, PartialEq)]
pub enum Vocabulary {
    Strings(Vec<Vec<u8>>),
    Ints(Vec<i64>),
}

impl Vocabulary {
    pub fn len(&self) -> usize {
        match self {
            Vocabulary::Strings(v) => v.len(),
            Vocabulary::Ints(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One key of a `crossed_column`.
#[derive(Clone, Debug, PartialEq)]
pub enum CrossKey {
    /// A raw feature key (TF: a string key): strings cross as their
    /// Fingerprint64, int64 values raw; with `sep`, a CSV cell's pieces
    /// (`tf.strings.split`) are its values, a SparseTensor's.
    Raw {
        key: String,
        dtype: KeyDType,
        sep: Option<Sep>,
    },
    /// A categorical column (TF: a column object): its ids cross raw.
    Column(Box<CategoricalColumn>),
}

/// A categorical column: ids in `[0, num_buckets)` per example. The base
/// columns (hash bucket, identity, vocabulary) also say how they read their
/// key ([`KeyValues`]: `sep`, `on_overflow`).
#[derive(Clone, Debug, PartialEq)]
pub enum CategoricalColumn {
    /// `categorical_column_with_hash_bucket(key, hash_bucket_size, dtype)`:
    /// Fingerprint64 of the bytes (ints: of their decimal string) modulo
    /// the size.
    HashBucket {
        key: String,
        hash_bucket_size: NonZeroU64,
        dtype: KeyDType,
        values: KeyValues,
    },
    /// `categorical_column_with_identity(key, num_buckets, default_value)`:
    /// the int64 value is the id; out of range: `default_value`, or passed
    /// through unchanged when there is none (TF 2.21 does not range-check).
    Identity {
        key: String,
        num_buckets: u64,
        default_value: Option<i64>,
        values: KeyValues,
    },
    /// `categorical_column_with_vocabulary_list(key, vocabulary_list, dtype,
    /// default_value, num_oov_buckets)` and `..._with_vocabulary_file`
    /// (the file read when the spec is checked; `vocabulary_file` keeps its
    /// path for the record): the position in the vocabulary; otherwise
    /// `vocabulary_size + hash % num_oov_buckets`, or `default_value`.
    Vocabulary {
        key: String,
        vocabulary: Vocabulary,
        vocabulary_file: Option<String>,
        num_oov_buckets: u64,
        default_value: i64,
        values: KeyValues,
    },
    /// `bucketized_column(source_column, boundaries)`: for a source of shape
    /// k, k ids: value j of an example falls in bucket b, id `j * (n + 1) + b`.
    Bucketized {
        source: NumericColumn,
        boundaries: Vec<f64>,
    },
    /// `crossed_column(keys, hash_bucket_size, hash_key)`.
    Crossed {
        keys: Vec<CrossKey>,
        hash_bucket_size: NonZeroU64,
        /// The key the chain starts from (`None`: TF's default 0xDECAFCAFFE).
        hash_key: Option<u64>,
    },
    /// `weighted_categorical_column(categorical_column, weight_feature_key)`.
    Weighted {
        categorical: Box<CategoricalColumn>,
        weight_feature_key: String,
    },
}

/// The inputs a feature column gives the compiled step (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureInput {
    /// A dense column's values, f32 `[B, shape]`.
    Dense(NumericColumn),
    /// A categorical column's ids, i32 `[B, max_values]` ([`PADDING_ID`]
    /// in slots without an id).
    Ids {
        column: CategoricalColumn,
        max_values: usize,
        /// Ids outside `[0, num_buckets)` are an error naming the row (set
        /// when an embedding or `linear_model` consumes the ids, as TF's
        /// lookup fails); otherwise they pass (an indicator drops them).
        check_range: bool,
        /// A slot whose weight is `<= 0` is padding: what TF's
        /// `safe_embedding_lookup_sparse` does for the `mean` and `sqrtn`
        /// combiners (a weighted column's ids feeding one of them).
        prune_nonpositive_weights: bool,
    },
    /// The same column's weights, f32 `[B, max_values]`.
    Weights {
        column: CategoricalColumn,
        max_values: usize,
    },
    /// A string label's class id: the position of the cell in `vocabulary`
    /// (an unknown value is an error naming the row).
    LabelVocabulary { vocabulary: Vec<Vec<u8>> },
    /// `sequence_numeric_column`'s values, f32 `[B, max_steps * shape]`:
    /// step t's `shape` values at `t * shape`, normalized; the steps past the
    /// example's length hold `default_value` (not normalized: TF densifies
    /// after the normalizer).
    SequenceDense {
        column: NumericColumn,
        max_steps: usize,
    },
    /// A sequence column's length per example, i32 `[B]`: the number of
    /// steps (a numeric column's values divided by its shape; a categorical
    /// column's last present value + 1, TF's
    /// `sequence_length_from_sparse_tensor`).
    SequenceLength {
        column: SequenceColumn,
        max_steps: usize,
    },
}

/// The column a [`FeatureInput::SequenceLength`] measures.
#[derive(Clone, Debug, PartialEq)]
pub enum SequenceColumn {
    /// `sequence_numeric_column`: its values, `shape` per step.
    Numeric(NumericColumn),
    /// `sequence_categorical_column_with_*`: one id per step.
    Categorical(CategoricalColumn),
}

impl SequenceColumn {
    /// TF's name: the key (a sequence column is named as its base column).
    pub fn name(&self) -> String {
        match self {
            SequenceColumn::Numeric(n) => n.name(),
            SequenceColumn::Categorical(c) => c.name(),
        }
    }
}

impl FeatureInput {
    /// The raw feature keys the input reads, each once, in the order the
    /// column names them (a weighted column's weight key last): the
    /// `InputSpec::columns` of the input. Empty for a string label, whose
    /// key is its input's one column.
    pub fn raw_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        match self {
            FeatureInput::Dense(c)
            | FeatureInput::SequenceDense { column: c, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Numeric(c),
                ..
            } => keys.push(c.key.clone()),
            FeatureInput::Ids { column, .. }
            | FeatureInput::Weights { column, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Categorical(column),
                ..
            } => column.raw_keys(&mut keys),
            FeatureInput::LabelVocabulary { .. } => {}
        }
        keys
    }
}

impl FeatureInput {
    /// Each raw key the input reads with the `sep` a CSV cell of it is
    /// split by (see [`CategoricalColumn::key_seps`]; numeric keys `None`).
    pub fn key_seps(&self) -> Vec<(String, Option<Sep>)> {
        let mut out = Vec::new();
        match self {
            FeatureInput::Ids { column, .. }
            | FeatureInput::Weights { column, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Categorical(column),
                ..
            } => column.key_seps(&mut out),
            other => out.extend(other.raw_keys().into_iter().map(|k| (k, None))),
        }
        out
    }
}

impl FeatureInput {
    /// The numeric columns the input reads whose keys hold bytes
    /// (`decode_raw`, `parse_tensor`): a dense column, or a bucketized
    /// column's source (in a cross or a weighted column too).
    pub fn decoded_columns(&self) -> Vec<&NumericColumn> {
        fn categorical<'a>(c: &'a CategoricalColumn, out: &mut Vec<&'a NumericColumn>) {
            match c {
                CategoricalColumn::Bucketized { source, .. } if source.decode.is_some() => {
                    out.push(source)
                }
                CategoricalColumn::Crossed { keys, .. } => {
                    for k in keys {
                        if let CrossKey::Column(c) = k {
                            categorical(c, out);
                        }
                    }
                }
                CategoricalColumn::Weighted { categorical: c, .. } => categorical(c, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        match self {
            FeatureInput::Dense(c) if c.decode.is_some() => out.push(c),
            FeatureInput::Ids { column, .. }
            | FeatureInput::Weights { column, .. }
            | FeatureInput::SequenceLength {
                column: SequenceColumn::Categorical(column),
                ..
            } => categorical(column, &mut out),
            _ => {}
        }
        out
    }
}

impl CrossKey {
    /// The name TF sorts and joins a cross's keys by.
    pub fn name(&self) -> String {
        match self {
            CrossKey::Raw { key, .. } => key.clone(),
            CrossKey::Column(c) => c.name(),
        }
    }
}

impl CategoricalColumn {
    /// TF's `name`: the key; `<key>_bucketized`; the crossed keys' names
    /// sorted and joined by `_X_`; `<name>_weighted_by_<weight key>`.
    pub fn name(&self) -> String {
        match self {
            CategoricalColumn::HashBucket { key, .. }
            | CategoricalColumn::Identity { key, .. }
            | CategoricalColumn::Vocabulary { key, .. } => key.clone(),
            CategoricalColumn::Bucketized { source, .. } => format!("{}_bucketized", source.name()),
            CategoricalColumn::Crossed { keys, .. } => {
                let mut names: Vec<String> = keys.iter().map(CrossKey::name).collect();
                names.sort();
                names.join("_X_")
            }
            CategoricalColumn::Weighted {
                categorical,
                weight_feature_key,
            } => format!("{}_weighted_by_{weight_feature_key}", categorical.name()),
        }
    }

    /// Appends the raw keys the column reads that `keys` does not hold yet,
    /// in the order the column names them.
    pub fn raw_keys(&self, keys: &mut Vec<String>) {
        fn add(keys: &mut Vec<String>, k: &str) {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
        match self {
            CategoricalColumn::HashBucket { key, .. }
            | CategoricalColumn::Identity { key, .. }
            | CategoricalColumn::Vocabulary { key, .. } => add(keys, key),
            CategoricalColumn::Bucketized { source, .. } => add(keys, &source.key),
            CategoricalColumn::Crossed { keys: ks, .. } => {
                for k in ks {
                    match k {
                        CrossKey::Raw { key, .. } => add(keys, key),
                        CrossKey::Column(c) => c.raw_keys(keys),
                    }
                }
            }
            CategoricalColumn::Weighted {
                categorical,
                weight_feature_key,
            } => {
                categorical.raw_keys(keys);
                add(keys, weight_feature_key);
            }
        }
    }

    /// Appends each raw key the column reads with the `sep` it splits a
    /// CSV cell of it by (`None`: a cell is one value), in the order of
    /// [`CategoricalColumn::raw_keys`] (a key may come twice).
    pub fn key_seps(&self, out: &mut Vec<(String, Option<Sep>)>) {
        match self {
            CategoricalColumn::HashBucket { key, values, .. }
            | CategoricalColumn::Identity { key, values, .. }
            | CategoricalColumn::Vocabulary { key, values, .. } => {
                out.push((key.clone(), values.sep.clone()))
            }
            CategoricalColumn::Bucketized { source, .. } => out.push((source.key.clone(), None)),
            CategoricalColumn::Crossed { keys, .. } => {
                for k in keys {
                    match k {
                        CrossKey::Raw { key, sep, .. } => out.push((key.clone(), sep.clone())),
                        CrossKey::Column(c) => c.key_seps(out),
                    }
                }
            }
            CategoricalColumn::Weighted {
                categorical,
                weight_feature_key,
            } => {
                categorical.key_seps(out);
                out.push((weight_feature_key.clone(), None));
            }
        }
    }

    /// TF's `num_buckets`: the ids are in `[0, num_buckets)`.
    pub fn num_buckets(&self) -> u64 {
        match self {
            CategoricalColumn::HashBucket {
                hash_bucket_size, ..
            }
            | CategoricalColumn::Crossed {
                hash_bucket_size, ..
            } => hash_bucket_size.get(),
            CategoricalColumn::Identity { num_buckets, .. } => *num_buckets,
            CategoricalColumn::Vocabulary {
                vocabulary,
                num_oov_buckets,
                ..
            } => vocabulary.len() as u64 + num_oov_buckets,
            CategoricalColumn::Bucketized { source, boundaries } => {
                (boundaries.len() as u64 + 1) * source.shape as u64
            }
            CategoricalColumn::Weighted { categorical, .. } => categorical.num_buckets(),
        }
    }
}
