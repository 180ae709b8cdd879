//! `sep` and `on_overflow` through the transforms: CSV cells split into
//! ids and weights, each expectation computed by the rules of the module
//! docs (`tf.strings.split`, then TF's column over the SparseTensor).

use std::num::NonZeroU64;

use super::*;
use crate::data::columns::{Cell, CellRows, ValuesMut};
use crate::feature_column::{
    CategoricalColumn, CrossKey, KeyDType, KeyValues, Sep, SequenceColumn, Vocabulary, PADDING_ID,
};
use crate::hash;
use crate::io::example::Feature;

fn split(sep: Sep) -> KeyValues {
    KeyValues {
        sep: Some(sep),
        truncate: None,
    }
}

fn bar() -> Sep {
    Sep::Delimiter(b"|".to_vec())
}

fn words(size: u64, values: KeyValues) -> CategoricalColumn {
    CategoricalColumn::HashBucket {
        key: "text".into(),
        hash_bucket_size: NonZeroU64::new(size).unwrap(),
        dtype: KeyDType::String,
        values,
    }
}

fn identity(n: u64, default_value: Option<i64>, values: KeyValues) -> CategoricalColumn {
    CategoricalColumn::Identity {
        key: "ids".into(),
        num_buckets: n,
        default_value,
        values,
    }
}

fn genres(num_oov_buckets: u64, values: KeyValues) -> CategoricalColumn {
    CategoricalColumn::Vocabulary {
        key: "genres".into(),
        vocabulary: Vocabulary::Strings(vec![b"Animation".to_vec(), b"Children".to_vec()]),
        vocabulary_file: None,
        num_oov_buckets,
        default_value: -1,
        values,
    }
}

fn run(column: &CategoricalColumn, max_values: usize, cells: &[&[u8]]) -> (Vec<i32>, Vec<f32>) {
    let keys = {
        let mut k = Vec::new();
        column.raw_keys(&mut k);
        k.len()
    };
    let rows = CellRows::text(cells, keys);
    let mut ids = vec![-7; rows.rows() * max_values];
    let mut weights = vec![-7.0; rows.rows() * max_values];
    let out = CategoricalOutput::Ids { check_range: false };
    CategoricalTransform::new(column, max_values, out)
        .transform(&rows, ValuesMut::I32(&mut ids))
        .unwrap();
    CategoricalTransform::new(column, max_values, CategoricalOutput::Weights)
        .transform(&rows, ValuesMut::F32(&mut weights))
        .unwrap();
    (ids, weights)
}

fn error(column: &CategoricalColumn, max_values: usize, cells: &[&[u8]]) -> (usize, String) {
    let rows = CellRows::text(cells, 1);
    let mut ids = vec![0; rows.rows() * max_values];
    let out = CategoricalOutput::Ids { check_range: false };
    let e = CategoricalTransform::new(column, max_values, out)
        .transform(&rows, ValuesMut::I32(&mut ids))
        .unwrap_err();
    (e.row, e.message)
}

fn h(s: &str, size: u64) -> i32 {
    hash::hash_bucket(s.as_bytes(), NonZeroU64::new(size).unwrap()) as i32
}

#[test]
fn whitespace_runs_split_a_cell_and_leading_or_trailing_space_gives_nothing() {
    let c = words(100, split(Sep::Whitespace));
    let cells: [&[u8]; 4] = [b"good movie", b"  good \t movie\n", b"", b" \x0b "];
    let (ids, weights) = run(&c, 3, &cells);
    let p = PADDING_ID;
    let (g, m) = (h("good", 100), h("movie", 100));
    assert_eq!(ids, [g, m, p, g, m, p, p, p, p, p, p, p]);
    assert_eq!(weights, [1., 1., 0., 1., 1., 0., 0., 0., 0., 0., 0., 0.]);
}

/// `"a||b"` is `a, "", b`: the empty piece is a value of the SparseTensor
/// (hashed, or looked up: an OOV bucket, or TF's -1 without one), while an
/// empty cell is the missing value TF drops.
#[test]
fn a_delimiter_keeps_empty_pieces_as_values() {
    let c = words(100, split(bar()));
    let cells: [&[u8]; 3] = [b"a||b", b"", b"|"];
    let (ids, weights) = run(&c, 3, &cells);
    let (a, b, e, p) = (h("a", 100), h("b", 100), h("", 100), PADDING_ID);
    assert_eq!(ids, [a, e, b, p, p, p, e, e, p]);
    assert_eq!(weights, [1., 1., 1., 0., 0., 0., 1., 1., 0.]);

    let cells: [&[u8]; 2] = [b"Children||Animation", b"Comedy|Children"];
    let (ids, weights) = run(&genres(1, split(bar())), 3, &cells);
    // One OOV bucket: every unknown value (`""`, `Comedy`) is id 2.
    assert_eq!(ids, [1, 2, 0, 2, 1, p]);
    assert_eq!(weights, [1., 1., 1., 1., 1., 0.]);
    let (ids, weights) = run(&genres(0, split(bar())), 3, &cells);
    assert_eq!(ids, [1, p, 0, p, 1, p]);
    assert_eq!(weights, [1., 0., 1., 0., 1., 0.]);
}

#[test]
fn more_pieces_than_max_values_is_an_error_or_the_first_ones() {
    let c = words(100, split(Sep::Whitespace));
    let cells: [&[u8]; 2] = [b"a b", b"a b c"];
    assert_eq!(
        error(&c, 2, &cells),
        (
            1,
            "`text` has 3 values, more than max_values = 2 \
             (on_overflow = \"truncate\" keeps the first 2)"
                .to_string()
        )
    );
    let truncated = words(
        100,
        KeyValues {
            sep: Some(Sep::Whitespace),
            truncate: Some(2),
        },
    );
    let (ids, weights) = run(&truncated, 2, &cells);
    let (a, b) = (h("a", 100), h("b", 100));
    assert_eq!(ids, [a, b, a, b]);
    assert_eq!(weights, [1.; 4]);
}

/// Truncation applies to an Example feature's list too (its first values).
#[test]
fn truncation_keeps_the_first_values_of_an_example_list() {
    let c = words(
        100,
        KeyValues {
            sep: None,
            truncate: Some(1),
        },
    );
    let f = Feature::BytesList(vec![b"x".to_vec(), b"y".to_vec()]);
    let cells = [Cell::Feature(Some(&f))];
    let mut ids = [0];
    CategoricalTransform::new(&c, 1, CategoricalOutput::Ids { check_range: false })
        .transform(&CellRows::cells(&cells, 1), ValuesMut::I32(&mut ids))
        .unwrap();
    assert_eq!(ids, [h("x", 100)]);
}

/// An Example feature is a list already: `sep` leaves it as it is.
#[test]
fn an_example_feature_is_not_split() {
    let c = words(100, split(Sep::Whitespace));
    let f = Feature::BytesList(vec![b"good movie".to_vec()]);
    let cells = [Cell::Feature(Some(&f))];
    let mut ids = [0, 0];
    CategoricalTransform::new(&c, 2, CategoricalOutput::Ids { check_range: false })
        .transform(&CellRows::cells(&cells, 1), ValuesMut::I32(&mut ids))
        .unwrap();
    assert_eq!(ids, [h("good movie", 100), PADDING_ID]);
}

#[test]
fn identity_pieces_are_int64s_and_a_bad_piece_is_named() {
    let c = identity(5, None, split(bar()));
    // Pieces are trimmed, as an int64 cell is; a blank cell has no values;
    // a -1 piece is a SparseTensor value TF keeps, an id no consumer uses.
    let cells: [&[u8]; 3] = [b"4| 0", b" ", b"-1|2"];
    let (ids, weights) = run(&c, 2, &cells);
    let p = PADDING_ID;
    assert_eq!(ids, [4, 0, p, p, p, 2]);
    assert_eq!(weights, [1., 1., 0., 0., 0., 1.]);
    // With a default_value, out-of-range values (-1 included) take it.
    let (ids, _) = run(&identity(5, Some(3), split(bar())), 2, &cells);
    assert_eq!(ids, [4, 0, p, p, 3, 2]);

    let cells: [&[u8]; 2] = [b"1", b"1|x|3"];
    assert_eq!(
        error(&c, 3, &cells),
        (
            1,
            "cannot parse \"x\" (value 2 of the cell split by sep = \"|\") as an int64".into()
        )
    );
    let cells: [&[u8]; 1] = [b"1||3"];
    assert_eq!(
        error(&c, 3, &cells).1,
        "cannot parse \"\" (value 2 of the cell split by sep = \"|\") as an int64"
    );
    let ws = identity(5, None, split(Sep::Whitespace));
    let cells: [&[u8]; 1] = [b" 3 1\t4 "];
    assert_eq!(run(&ws, 3, &cells).0, [3, 1, 4]);
}

/// A cross over a split column: every combination of its pieces with the
/// other key's values (TF's `crossed_column` over the SparseTensor), the
/// column's ids (sparse) before the raw text key (dense).
#[test]
fn a_cross_of_a_split_column_takes_every_combination() {
    let size = NonZeroU64::new(1000).unwrap();
    let cross = |values: KeyValues| CategoricalColumn::Crossed {
        keys: vec![
            CrossKey::Raw {
                key: "sex".into(),
                dtype: KeyDType::String,
                sep: None,
            },
            CrossKey::Column(Box::new(words(100, values))),
        ],
        hash_bucket_size: size,
        hash_key: None,
    };
    // Columns: sex, text.
    let cells: [&[u8]; 4] = [b"f", b"good bad movie", b"m", b""];
    let fps = |s: &str| [h(s, 100) as u64];
    let mut want = Vec::new();
    for w in ["good", "bad", "movie"] {
        let sex = [hash::fingerprint64(b"f")];
        hash::cross_row(&[&fps(w), &sex], 0, size, &mut want);
    }
    let p = PADDING_ID;
    let want: Vec<i32> = want.iter().map(|&x| x as i32).chain([p, p, p]).collect();
    let (ids, weights) = run(&cross(split(Sep::Whitespace)), 3, &cells);
    assert_eq!(ids, want);
    assert_eq!(weights, [1., 1., 1., 0., 0., 0.]);
    // The column truncated to 2 values: the cross has 2.
    let truncated = KeyValues {
        sep: Some(Sep::Whitespace),
        truncate: Some(2),
    };
    let (ids, _) = run(&cross(truncated), 2, &cells);
    assert_eq!(ids, [want[0], want[1], p, p]);
}

#[test]
fn a_weighted_split_column_pairs_weights_by_position() {
    let c = CategoricalColumn::Weighted {
        categorical: Box::new(words(100, split(Sep::Whitespace))),
        weight_feature_key: "w".into(),
    };
    let cells: [&[u8]; 2] = [b"good movie", b"0.5 2"];
    let (ids, weights) = run(&c, 2, &cells);
    assert_eq!(ids, [h("good", 100), h("movie", 100)]);
    assert_eq!(weights, [0.5, 2.0]);
}

/// A sequence column's length is the count of values kept: every piece
/// (empty ones included), at most T when truncated.
#[test]
fn a_sequence_of_pieces_has_their_count_as_its_length() {
    let lengths = |c: &CategoricalColumn, t: usize, cells: &[&[u8]]| {
        let mut l = SequenceLengthTransform::new(&SequenceColumn::Categorical(c.clone()), t);
        let mut out = vec![-7; cells.len()];
        l.transform(&CellRows::text(cells, 1), ValuesMut::I32(&mut out))
            .map(|_| out)
            .map_err(|e| (e.row, e.message))
    };
    let cells: [&[u8]; 4] = [b"a||b", b"", b"c", b"|"];
    assert_eq!(
        lengths(&words(10, split(bar())), 3, &cells),
        Ok(vec![3, 0, 1, 2])
    );
    let truncated = KeyValues {
        sep: Some(bar()),
        truncate: Some(2),
    };
    assert_eq!(
        lengths(&words(10, truncated), 2, &cells),
        Ok(vec![2, 0, 1, 2])
    );
    let e = lengths(&words(10, split(bar())), 2, &cells).unwrap_err();
    assert_eq!(e.0, 0);
    assert!(e
        .1
        .starts_with("`text` has 3 values, more than max_values = 2"));
}

/// A raw cross key split by `sep` crosses the cell's pieces: a
/// SparseTensor, so before a whole text cell (dense) whatever the keys'
/// order, and nothing for an empty cell.
#[test]
fn a_raw_cross_key_split_by_sep_crosses_its_pieces_first() {
    let size = NonZeroU64::new(1000).unwrap();
    let c = CategoricalColumn::Crossed {
        keys: vec![
            CrossKey::Raw {
                key: "sex".into(),
                dtype: KeyDType::String,
                sep: None,
            },
            CrossKey::Raw {
                key: "text".into(),
                dtype: KeyDType::String,
                sep: Some(bar()),
            },
        ],
        hash_bucket_size: size,
        hash_key: None,
    };
    let cells: [&[u8]; 4] = [b"f", b"a||b", b"m", b""];
    let fp = |s: &str| hash::fingerprint64(s.as_bytes());
    let mut want = Vec::new();
    hash::cross_row(
        &[&[fp("a"), fp(""), fp("b")], &[fp("f")]],
        0,
        size,
        &mut want,
    );
    let p = PADDING_ID;
    let want: Vec<i32> = want.iter().map(|&x| x as i32).chain([p, p, p]).collect();
    let (ids, weights) = run(&c, 3, &cells);
    assert_eq!(ids, want);
    assert_eq!(weights, [1., 1., 1., 0., 0., 0.]);
}
