//! The feature-column transforms: raw cells to a column's inputs, as TF
//! 2.21's `tf.feature_column` computes them.
//!
//! Owns: [`DenseTransform`] (`numeric_column`: `shape` f32 values),
//! [`CategoricalTransform`] (a categorical column's ids or weights,
//! `[rows, max_values]`), [`LabelVocabularyTransform`] (a string label's
//! class id), the sequence columns' [`SequenceDenseTransform`]
//! (`sequence_numeric_column`: `[rows, max_steps * shape]`) and
//! [`SequenceLengthTransform`] (a sequence column's length, `[rows]`), and
//! [`transform_for`], which [`crate::data::columns::transform_for`]
//! calls for every input with a `feature`.
//!
//! Sequences (TF's `SequenceCategoricalColumn`, `SequenceNumericColumn`): a
//! sequence categorical column's ids and weights are the ones above with one
//! value per step (`max_values` = the most steps); a sequence numeric column
//! of shape d reads its values (an Example's float_list, a CSV cell's
//! whitespace-separated numbers) as steps of d values, normalized, and pads
//! the steps past the example's length with `default_value` (TF's
//! `sparse_tensor_to_dense` after the normalizer). The length of an example
//! is its number of steps: values / d for a numeric column (a count that is
//! not a multiple of d is an error), the last present value + 1 for a
//! categorical one (TF's `sequence_length_from_sparse_tensor`: values TF
//! keeps with id -1 count, the `''`/`-1` it drops from dense CSV cells do
//! not).
//!
//! Values of a key: a CSV cell is one value of a dense column, unless the
//! base column has `sep`: then the cell's pieces (`tf.strings.split`, see
//! [`crate::feature_column::split`]) are its values, a SparseTensor as an
//! Example feature's list is (nothing dropped; an empty cell has none, an
//! int64 piece is trimmed and parsed, an unparsable one an error naming
//! it). An Example feature is never split (TF's feature columns split
//! nothing; its list is the values).
//!
//! How ids are computed (per raw value of the key):
//! - `categorical_column_with_hash_bucket`: `Fingerprint64(bytes) % size`
//!   (an int64 through its decimal string);
//! - `categorical_column_with_identity`: the value; outside
//!   `[0, num_buckets)` it becomes `default_value` when there is one, else it
//!   passes unchanged (TF 2.21 does not range-check there);
//! - vocabulary columns: the position of the value's first occurrence;
//!   otherwise `size + Fingerprint64 % num_oov_buckets`, or `default_value`;
//! - `bucketized_column`: value j of the source (after its default and
//!   normalizer) in bucket b (the number of boundaries `<=` it, compared in
//!   float32 as TF's `Bucketize`) gives `j * (len(boundaries) + 1) + b`;
//! - `crossed_column`: TF's `SparseCross` (see [`crate::hash`]): per row the
//!   cartesian product of the leaves' values, the sparse leaves (column ids,
//!   and raw keys read from Example features) before the dense ones (raw
//!   keys of text cells), each group in the order the keys were given; raw
//!   strings cross as their Fingerprint64, int64s and ids raw; nothing is
//!   dropped from a raw key (a dense `''` or `-1` is crossed);
//! - `weighted_categorical_column`: the inner column's ids, each weighted by
//!   the weight feature's value paired with it: the k-th weight with the
//!   k-th value that gives an id (TF's order), or by position when the
//!   weights are a dense row (a CSV cell) or as long as the id row; other
//!   counts are an error naming both keys.
//!
//! Slots: a row's value at position p of its key (its index in the dense
//! row, or in the Example feature's list; the p-th element of a cross's
//! product) goes to slot p, TF's SparseTensor index `[row, p]`. A value TF
//! drops (dense `''` or `-1`), a negative id (TF's `-1` default, which every
//! consumer ignores), an id that does not fit int32, and padding all read as
//! [`PADDING_ID`](super::PADDING_ID) (-1) with weight 0: a slot that names
//! no row, so the compiled step neither reads nor updates a table row for
//! it.
//!
//! Invariants:
//! - A row whose key gives more values than `max_values` is an error naming
//!   the row and column, the count and the limit; a base column with
//!   `on_overflow = "truncate"` keeps its first `max_values` values instead
//!   (of a CSV cell's pieces, or of an Example feature's list), so a
//!   cross or sequence over it sees those only.
//! - With `check_range`, an id `>= num_buckets` is an error (TF's embedding
//!   lookup fails on it); without, it passes (an indicator ignores it).
//! - The ids and weights transforms of one column agree slot by slot: they
//!   run the same code, the weights one skipping only the hashing of columns
//!   whose ids are always valid; so an unweighted column's weight is 1
//!   exactly where its id is not padding (the input pipeline derives it so).
//!   The one exception is deliberate: ids with `prune_nonpositive_weights`
//!   (a weighted column feeding a `mean` or `sqrtn` combiner) make the
//!   slots of weights `<= 0` padding, while the weights keep their values
//!   (the compiled lookup clamps them at 0).
//! - No allocation per row or per cell: buffers live in the transform and
//!   are reused; strings are hashed from the cell's bytes.
//!
//! Modules, one per kind of column, as the compiler's `sema::features` is
//! split: this one dispatches an input to its transform ([`transform_for`]);
//! `numeric` is [`DenseTransform`]; `categorical` is
//! [`CategoricalTransform`] (a row's values into slots, padding, range
//! checks), over `ids` (how each kind of categorical column gives a row's
//! ids: hash bucket, identity, vocabulary, bucketized, weighted) and
//! `crossed` (`crossed_column`); `sequence` is [`SequenceDenseTransform`]
//! and [`SequenceLengthTransform`]; `label` is [`LabelVocabularyTransform`].

use super::FeatureInput;
use crate::abi::ElemType;
use crate::data::columns::{CellError, ColumnTransform};

mod categorical;
mod crossed;
mod ids;
mod label;
mod numeric;
mod sequence;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;

pub use categorical::{CategoricalOutput, CategoricalTransform};
pub use label::LabelVocabularyTransform;
pub use numeric::DenseTransform;
pub use sequence::{SequenceDenseTransform, SequenceLengthTransform};

/// The transform that computes feature input `input`; `columns` are the
/// input's source columns (used by a string label, whose description does
/// not name its key; the other inputs read [`FeatureInput::raw_keys`]).
pub fn transform_for(input: &FeatureInput, columns: &[String]) -> Box<dyn ColumnTransform> {
    match input {
        FeatureInput::Dense(c) => Box::new(DenseTransform::new(c.clone())),
        FeatureInput::Ids {
            column,
            max_values,
            check_range,
            prune_nonpositive_weights,
        } => {
            let mut t = CategoricalTransform::new(
                column,
                *max_values,
                CategoricalOutput::Ids {
                    check_range: *check_range,
                },
            );
            t.prune_nonpositive_weights = *prune_nonpositive_weights;
            Box::new(t)
        }
        FeatureInput::Weights { column, max_values } => Box::new(CategoricalTransform::new(
            column,
            *max_values,
            CategoricalOutput::Weights,
        )),
        FeatureInput::LabelVocabulary { vocabulary } => Box::new(LabelVocabularyTransform::new(
            columns.to_vec(),
            vocabulary.clone(),
        )),
        FeatureInput::SequenceDense { column, max_steps } => {
            Box::new(SequenceDenseTransform::new(column.clone(), *max_steps))
        }
        FeatureInput::SequenceLength { column, max_steps } => {
            Box::new(SequenceLengthTransform::new(column, *max_steps))
        }
    }
}

fn wrong_output(want: ElemType) -> CellError {
    CellError {
        row: 0,
        column: 0,
        message: format!("internal error: the output buffer is not {want:?}"),
    }
}

/// A bad cell inside a transform: its column (an index into `columns()`).
struct Fail {
    column: usize,
    message: String,
}

fn fail(column: usize) -> impl Fn(String) -> Fail {
    move |message| Fail { column, message }
}
