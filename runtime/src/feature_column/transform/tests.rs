//! The feature-column transforms, checked on CSV cells and Example features.

use std::num::NonZeroU64;

use super::*;
use crate::data::columns::{Cell, CellRows, ValuesMut};
use crate::data::NormExpr;
use crate::feature_column::{
    CategoricalColumn, CrossKey, KeyDType, NumericColumn, SequenceColumn, Vocabulary, PADDING_ID,
};
use crate::hash;
use crate::io::example::Feature;

fn hash_col(key: &str, size: u64) -> CategoricalColumn {
    CategoricalColumn::HashBucket {
        key: key.into(),
        hash_bucket_size: NonZeroU64::new(size).unwrap(),
        dtype: KeyDType::String,
        values: Default::default(),
    }
}

fn identity(key: &str, n: u64) -> CategoricalColumn {
    CategoricalColumn::Identity {
        key: key.into(),
        num_buckets: n,
        default_value: None,
        values: Default::default(),
    }
}

fn ids(t: &mut CategoricalTransform, cells: &CellRows<'_>) -> Result<Vec<i32>, CellError> {
    let mut out = vec![-7; cells.rows() * t.width()];
    t.transform(cells, ValuesMut::I32(&mut out)).map(|_| out)
}

fn weights(t: &mut CategoricalTransform, cells: &CellRows<'_>) -> Vec<f32> {
    let mut out = vec![-7.0; cells.rows() * t.width()];
    t.transform(cells, ValuesMut::F32(&mut out)).unwrap();
    out
}

fn pair(column: &CategoricalColumn, max_values: usize) -> [CategoricalTransform; 2] {
    [
        CategoricalTransform::new(
            column,
            max_values,
            CategoricalOutput::Ids { check_range: false },
        ),
        CategoricalTransform::new(column, max_values, CategoricalOutput::Weights),
    ]
}

#[test]
fn csv_cells_hash_and_an_empty_cell_is_no_value() {
    let c = hash_col("city", 10);
    let [mut i, mut w] = pair(&c, 1);
    assert_eq!(i.columns(), ["city"]);
    let cells: [&[u8]; 3] = [b"paris", b"", b" paris"];
    let rows = CellRows::text(&cells, 1);
    let want = |s: &[u8]| hash::hash_bucket(s, NonZeroU64::new(10).unwrap()) as i32;
    assert_eq!(
        ids(&mut i, &rows).unwrap(),
        [want(b"paris"), PADDING_ID, want(b" paris")]
    );
    assert_eq!(weights(&mut w, &rows), [1.0, 0.0, 1.0]);
}

/// TF 2.21 drops `''` and `-1` only from dense inputs: a SparseTensor's
/// `''` is hashed and its `-1` kept (as an id no consumer uses).
#[test]
fn example_features_keep_empty_strings_and_minus_one() {
    let c = hash_col("city", 10);
    let [mut i, mut w] = pair(&c, 2);
    let f = Feature::BytesList(vec![b"".to_vec(), b"paris".to_vec()]);
    let cells = [Cell::Feature(Some(&f))];
    let rows = CellRows::cells(&cells, 1);
    let h = |s: &[u8]| hash::hash_bucket(s, NonZeroU64::new(10).unwrap()) as i32;
    assert_eq!(ids(&mut i, &rows).unwrap(), [h(b""), h(b"paris")]);
    assert_eq!(weights(&mut w, &rows), [1.0, 1.0]);
    let mut i = i.with_dense_features(&["city"]);
    assert_eq!(ids(&mut i, &rows).unwrap(), [PADDING_ID, h(b"paris")]);
    let [mut i, mut w] = pair(&identity("ids", 3), 2);
    let f = Feature::Int64List(vec![-1, 2]);
    let cells = [Cell::Feature(Some(&f))];
    let rows = CellRows::cells(&cells, 1);
    assert_eq!(ids(&mut i, &rows).unwrap(), [PADDING_ID, 2]);
    assert_eq!(weights(&mut w, &rows), [0.0, 1.0]);
}

#[test]
fn too_many_values_is_an_error_naming_the_limit() {
    let c = hash_col("city", 10);
    let [mut i, _] = pair(&c, 2);
    let ok = Feature::BytesList(vec![b"a".to_vec()]);
    let three = Feature::BytesList(vec![b"a".to_vec(), b"b".to_vec(), b"".to_vec()]);
    let cells = [Cell::Feature(Some(&ok)), Cell::Feature(Some(&three))];
    let e = ids(&mut i, &CellRows::cells(&cells, 1)).unwrap_err();
    assert_eq!((e.row, e.column), (1, 0));
    assert_eq!(
        e.message,
        "`city` has 3 values, more than max_values = 2 (on_overflow = \"truncate\" keeps the first 2)"
    );
}

#[test]
fn check_range_names_the_id_and_range() {
    let c = identity("ids", 5);
    let mut t = CategoricalTransform::new(&c, 1, CategoricalOutput::Ids { check_range: true });
    let cells: [&[u8]; 2] = [b"4", b"7"];
    let e = ids(&mut t, &CellRows::text(&cells, 1)).unwrap_err();
    assert_eq!(e.row, 1);
    assert_eq!(e.message, "id 7 of `ids` is out of range [0, 5)");
    // Without check_range the id passes; -1 (dense) and -3 are no id.
    let [mut i, mut w] = pair(&c, 1);
    let cells: [&[u8]; 3] = [b"7", b"-1", b"-3"];
    let rows = CellRows::text(&cells, 1);
    assert_eq!(ids(&mut i, &rows).unwrap(), [7, PADDING_ID, PADDING_ID]);
    assert_eq!(weights(&mut w, &rows), [1.0, 0.0, 0.0]);
    let cells: [&[u8]; 1] = [b"x1"];
    let e = ids(&mut i, &CellRows::text(&cells, 1)).unwrap_err();
    assert_eq!(e.message, "cannot parse \"x1\" as an int64");
}

#[test]
fn weighted_pairs_weights_and_checks_counts() {
    let c = CategoricalColumn::Weighted {
        categorical: Box::new(identity("ids", 5)),
        weight_feature_key: "w".into(),
    };
    let [mut i, mut w] = pair(&c, 3);
    assert_eq!(i.columns(), ["ids", "w"]);
    let id_f = Feature::Int64List(vec![1, 4]);
    let w_f = Feature::FloatList(vec![0.5, 2.0]);
    let w_bad = Feature::FloatList(vec![0.5]);
    let cells = [Cell::Feature(Some(&id_f)), Cell::Feature(Some(&w_f))];
    let rows = CellRows::cells(&cells, 2);
    assert_eq!(ids(&mut i, &rows).unwrap(), [1, 4, PADDING_ID]);
    assert_eq!(weights(&mut w, &rows), [0.5, 2.0, 0.0]);
    let cells = [Cell::Feature(Some(&id_f)), Cell::Feature(Some(&w_bad))];
    let e = ids(&mut i, &CellRows::cells(&cells, 2)).unwrap_err();
    assert_eq!(e.column, 1);
    assert_eq!(
        e.message,
        "`ids` has 2 value(s) but its weight feature `w` has 1"
    );
    // CSV: an empty id cell keeps its weight cell out of the way.
    let cells: [&[u8]; 4] = [b"3", b"1.5", b"", b"2"];
    let rows = CellRows::text(&cells, 2);
    assert_eq!(weights(&mut w, &rows), [1.5, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn cross_takes_column_ids_before_raw_text_keys() {
    let bucketized = CategoricalColumn::Bucketized {
        source: NumericColumn {
            key: "price".into(),
            shape: 1,
            default_value: None,
            normalizer: None,
            decode: None,
        },
        boundaries: vec![0.0, 1.0],
    };
    let size = NonZeroU64::new(1000).unwrap();
    let c = CategoricalColumn::Crossed {
        keys: vec![
            CrossKey::Raw {
                key: "city".into(),
                dtype: KeyDType::String,
                sep: None,
            },
            CrossKey::Column(Box::new(bucketized)),
        ],
        hash_bucket_size: size,
        hash_key: None,
    };
    let [mut i, mut w] = pair(&c, 1);
    assert_eq!(i.columns(), ["city", "price"]);
    let cells: [&[u8]; 4] = [b"paris", b"0.5", b"", b"7"];
    let rows = CellRows::text(&cells, 2);
    let mut want = Vec::new();
    hash::cross_row(
        &[&[1], &[hash::fingerprint64(b"paris")]],
        0,
        size,
        &mut want,
    );
    // A dense '' is crossed too (TF's SparseCross keeps it).
    hash::cross_row(&[&[2], &[hash::fingerprint64(b"")]], 0, size, &mut want);
    let want: Vec<i32> = want.iter().map(|&x| x as i32).collect();
    assert_eq!(ids(&mut i, &rows).unwrap(), want);
    assert_eq!(weights(&mut w, &rows), [1.0, 1.0]);
}

#[test]
fn vocabulary_ids_oov_and_default() {
    let c = CategoricalColumn::Vocabulary {
        key: "n".into(),
        vocabulary: Vocabulary::Ints(vec![10, 20, 10]),
        vocabulary_file: None,
        num_oov_buckets: 0,
        default_value: 7,
        values: Default::default(),
    };
    let [mut i, _] = pair(&c, 1);
    let cells: [&[u8]; 3] = [b"20", b" 10 ", b"30"];
    assert_eq!(ids(&mut i, &CellRows::text(&cells, 1)).unwrap(), [1, 0, 7]);
}

#[test]
fn dense_values_defaults_and_errors() {
    let col = NumericColumn {
        key: "p".into(),
        shape: 2,
        default_value: Some(vec![1.5, 2.0]),
        normalizer: Some(NormExpr::Mul(
            Box::new(NormExpr::X),
            Box::new(NormExpr::Const(10.0)),
        )),
        decode: None,
    };
    let mut t = DenseTransform::new(col.clone());
    let cells: [&[u8]; 2] = [b"1 2", b" "];
    let mut out = vec![0.0; 4];
    t.transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out))
        .unwrap();
    assert_eq!(out, [10.0, 20.0, 15.0, 20.0]);
    let cells: [&[u8]; 1] = [b"1 2 3"];
    let e = t
        .transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out[..2]))
        .unwrap_err();
    assert_eq!(e.message, "has 3 values, but the column's shape is 2");
    let mut t = DenseTransform::new(NumericColumn {
        default_value: None,
        ..col
    });
    let cells: [&[u8]; 2] = [b"1 2", b""];
    let e = t
        .transform(&CellRows::text(&cells, 1), ValuesMut::F32(&mut out))
        .unwrap_err();
    assert_eq!(
        (e.row, e.message.as_str()),
        (1, "missing value and the column has no default_value")
    );
}

#[test]
fn string_label_lists_the_vocabulary() {
    let mut t =
        LabelVocabularyTransform::new(vec!["y".into()], vec![b"no".to_vec(), b"yes".to_vec()]);
    let cells: [&[u8]; 2] = [b"yes", b"no"];
    let mut out = vec![0; 2];
    t.transform(&CellRows::text(&cells, 1), ValuesMut::I32(&mut out))
        .unwrap();
    assert_eq!(out, [1, 0]);
    let cells: [&[u8]; 2] = [b"no", b"maybe"];
    let e = t
        .transform(&CellRows::text(&cells, 1), ValuesMut::I32(&mut out))
        .unwrap_err();
    assert_eq!(e.row, 1);
    assert_eq!(e.message, "`maybe` is not one of \"no\", \"yes\"");
}

fn seq_numeric(shape: usize, default: f64) -> NumericColumn {
    NumericColumn {
        key: "temp".into(),
        shape,
        default_value: Some(vec![default; shape]),
        normalizer: Some(NormExpr::Mul(
            Box::new(NormExpr::X),
            Box::new(NormExpr::Const(2.0)),
        )),
        decode: None,
    }
}

fn lengths(t: &mut SequenceLengthTransform, cells: &CellRows<'_>) -> Result<Vec<i32>, CellError> {
    let mut out = vec![-7; cells.rows()];
    t.transform(cells, ValuesMut::I32(&mut out)).map(|_| out)
}

#[test]
fn sequence_numeric_steps_are_normalized_and_padded_with_the_default() {
    let col = seq_numeric(2, -1.0);
    let mut t = SequenceDenseTransform::new(col.clone(), 3);
    assert_eq!(t.width(), 6);
    let a = Feature::FloatList(vec![1.0, 2.0, 3.0, 4.0]);
    let cells = [Cell::Feature(Some(&a)), Cell::Feature(None)];
    let rows = CellRows::cells(&cells, 1);
    let mut out = vec![9.0; 12];
    t.transform(&rows, ValuesMut::F32(&mut out)).unwrap();
    // The values through the normalizer, the padding not.
    assert_eq!(
        out,
        [2.0, 4.0, 6.0, 8.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]
    );
    let mut l = SequenceLengthTransform::new(&SequenceColumn::Numeric(col), 3);
    assert_eq!(l.elem(), ElemType::I32);
    assert_eq!(lengths(&mut l, &rows).unwrap(), [2, 0]);
    // CSV: whitespace-separated numbers in one cell.
    let text: [&[u8]; 2] = [b"0.5 1 1.5 2 2.5 3", b" "];
    let rows = CellRows::text(&text, 1);
    t.transform(&rows, ValuesMut::F32(&mut out)).unwrap();
    assert_eq!(&out[..6], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(&out[6..], [-1.0; 6]);
    assert_eq!(lengths(&mut l, &rows).unwrap(), [3, 0]);
}

#[test]
fn sequence_numeric_errors_name_the_row_and_column() {
    let col = seq_numeric(2, 0.0);
    let mut t = SequenceDenseTransform::new(col.clone(), 2);
    let mut l = SequenceLengthTransform::new(&SequenceColumn::Numeric(col), 2);
    let text: [&[u8]; 2] = [b"1 2", b"1 2 3"];
    let rows = CellRows::text(&text, 1);
    let mut out = vec![0.0; 8];
    let e = t.transform(&rows, ValuesMut::F32(&mut out)).unwrap_err();
    assert_eq!(
        (e.row, e.column, e.message.as_str()),
        (
            1,
            0,
            "`temp` has 3 values, not a whole number of steps of shape 2"
        )
    );
    let e = lengths(&mut l, &rows).unwrap_err();
    assert_eq!(e.row, 1);
    let text: [&[u8]; 1] = [b"1 2 3 4 5 6"];
    let rows = CellRows::text(&text, 1);
    let e = t.transform(&rows, ValuesMut::F32(&mut out)).unwrap_err();
    assert_eq!(e.message, "`temp` has 3 steps, more than max_values = 2");
    let e = lengths(&mut l, &rows).unwrap_err();
    assert_eq!(e.message, "`temp` has 3 steps, more than max_values = 2");
}

#[test]
fn sequence_categorical_length_counts_the_steps_tf_keeps() {
    // A vocabulary without OOV buckets: an unknown word is id -1 (weight
    // 0) but still a step of the sequence, as in TF's SparseTensor.
    let col = CategoricalColumn::Vocabulary {
        key: "words".into(),
        vocabulary: Vocabulary::Strings(vec![b"a".to_vec(), b"b".to_vec()]),
        vocabulary_file: None,
        num_oov_buckets: 0,
        default_value: -1,
        values: Default::default(),
    };
    let [mut i, mut w] = pair(&col, 3);
    let mut l = SequenceLengthTransform::new(&SequenceColumn::Categorical(col.clone()), 3);
    let f0 = Feature::BytesList(vec![b"b".to_vec(), b"zzz".to_vec()]);
    let f1 = Feature::BytesList(vec![b"a".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    let cells = [
        Cell::Feature(Some(&f0)),
        Cell::Feature(Some(&f1)),
        Cell::Feature(None),
    ];
    let rows = CellRows::cells(&cells, 1);
    assert_eq!(
        ids(&mut i, &rows).unwrap(),
        [1, -1, -1, 0, 0, 1, -1, -1, -1]
    );
    assert_eq!(
        weights(&mut w, &rows),
        [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(lengths(&mut l, &rows).unwrap(), [2, 3, 0]);
    // A CSV cell is one step; an empty cell (TF drops `''`) none.
    let text: [&[u8]; 2] = [b"a", b""];
    assert_eq!(lengths(&mut l, &CellRows::text(&text, 1)).unwrap(), [1, 0]);
    // More steps than max_values: an error naming the row and the limit.
    let mut l = SequenceLengthTransform::new(&SequenceColumn::Categorical(col), 2);
    let e = lengths(&mut l, &rows).unwrap_err();
    assert_eq!(
        (e.row, e.message.as_str()),
        (
            1,
            "`words` has 3 values, more than max_values = 2 \
             (on_overflow = \"truncate\" keeps the first 2)"
        )
    );
}
