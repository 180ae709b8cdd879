//! Tests of `parse`: `parse_example` and `parse_single_example` with every
//! feature kind, the errors naming record and feature.

use super::parse::*;
use super::testdata::example;
use super::{DType, Example, Feature};
use std::collections::BTreeMap;

#[test]
fn parse_example_errors_name_record_and_feature() {
    let exs = [example(), Example::default()];
    let spec = |fs| BTreeMap::from([("f".to_string(), fs)]);
    let fixed = |n, default| FeatureSpec::FixedLen {
        shape: vec![n],
        dtype: DType::Float32,
        default,
    };
    let e = parse_example(&exs, &spec(fixed(2, None))).unwrap_err();
    assert_eq!((e.record, e.feature.as_deref()), (Some(1), Some("f")));
    let e = parse_example(&exs, &spec(fixed(3, None))).unwrap_err();
    assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("f")));
    let got = parse_example(&exs, &spec(fixed(2, Some(Values::Float32(vec![7.0, 8.0]))))).unwrap();
    assert_eq!(
        got["f"],
        Parsed::Dense {
            shape: vec![2, 2],
            values: Values::Float32(vec![1.5, -2.0, 7.0, 8.0])
        }
    );
    let e = parse_example(
        &exs,
        &spec(FeatureSpec::VarLen {
            dtype: DType::Int64,
        }),
    )
    .unwrap_err();
    assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("f")));
    let seq = FeatureSpec::FixedLenSequence {
        shape: vec![],
        dtype: DType::Float32,
        allow_missing: true,
        default: Some(Values::Float32(vec![-1.0])),
    };
    assert_eq!(
        parse_example(&exs, &spec(seq)).unwrap()["f"],
        Parsed::Dense {
            shape: vec![2, 2],
            values: Values::Float32(vec![1.5, -2.0, -1.0, -1.0])
        }
    );
}

fn sparse_spec(keys: &[&str], size: &[usize], sorted: bool) -> BTreeMap<String, FeatureSpec> {
    BTreeMap::from([(
        "sp".to_string(),
        FeatureSpec::Sparse {
            index_keys: keys.iter().map(|k| k.to_string()).collect(),
            value_key: "val".into(),
            dtype: DType::Float32,
            size: size.to_vec(),
            already_sorted: sorted,
        },
    )])
}

fn ex(features: &[(&str, Feature)]) -> Example {
    Example {
        features: features
            .iter()
            .map(|(k, f)| (k.to_string(), f.clone()))
            .collect(),
    }
}

fn sparse(indices: &[usize], values: &[f32], dense_shape: &[usize]) -> Parsed {
    Parsed::SparseTensor {
        indices: indices.to_vec(),
        values: Values::Float32(values.to_vec()),
        dense_shape: dense_shape.to_vec(),
    }
}

// The expected values below are what TF 2.21's `tf.io.parse_example`
// returned for the same Examples and SparseFeatures (run by hand;
// examples.json has no SparseFeature).
#[test]
fn sparse_feature_sorts_indices_unless_already_sorted() {
    let exs = [
        ex(&[
            ("ix", Feature::Int64List(vec![3, 1])),
            ("val", Feature::FloatList(vec![30.0, 10.0])),
        ]),
        ex(&[]),
        ex(&[
            ("ix", Feature::Int64List(vec![0])),
            ("val", Feature::FloatList(vec![5.0])),
        ]),
    ];
    let got = parse_example(&exs, &sparse_spec(&["ix"], &[5], false)).unwrap();
    assert_eq!(
        got["sp"],
        sparse(&[0, 1, 0, 3, 2, 0], &[10.0, 30.0, 5.0], &[3, 5])
    );
    assert_eq!(got["sp"].sparse_indices(), [[0, 1], [0, 3], [2, 0]]);
    let got = parse_example(&exs, &sparse_spec(&["ix"], &[5], true)).unwrap();
    assert_eq!(
        got["sp"],
        sparse(&[0, 3, 0, 1, 2, 0], &[30.0, 10.0, 5.0], &[3, 5])
    );
    // Duplicates stay, in the order of the values (TF: as std::sort leaves them).
    let dup = [ex(&[
        ("ix", Feature::Int64List(vec![2, 0, 2])),
        ("val", Feature::FloatList(vec![1.0, 9.0, 2.0])),
    ])];
    let got = parse_example(&dup, &sparse_spec(&["ix"], &[5], false)).unwrap();
    assert_eq!(
        got["sp"],
        sparse(&[0, 0, 0, 2, 0, 2], &[9.0, 1.0, 2.0], &[1, 5])
    );
}

#[test]
fn sparse_feature_of_two_dimensions_sorts_row_major() {
    let exs = [ex(&[
        ("i0", Feature::Int64List(vec![1, 0])),
        ("i1", Feature::Int64List(vec![2, 3])),
        ("val", Feature::FloatList(vec![1.0, 2.0])),
    ])];
    let got = parse_example(&exs, &sparse_spec(&["i0", "i1"], &[2, 4], false)).unwrap();
    assert_eq!(
        got["sp"],
        sparse(&[0, 0, 3, 0, 1, 2], &[2.0, 1.0], &[1, 2, 4])
    );
    let e = parse_example(&exs, &sparse_spec(&["i0", "i1"], &[2, 3], false)).unwrap_err();
    assert_eq!((e.record, e.feature.as_deref()), (Some(0), Some("i1")));
    let e = parse_example(&exs, &sparse_spec(&["i0"], &[2, 3], false)).unwrap_err();
    assert_eq!((e.record, e.feature.as_deref()), (None, Some("sp")));
}

#[test]
fn sparse_feature_errors_name_record_and_feature() {
    let spec = sparse_spec(&["ix"], &[5], false);
    let bad = |features: &[(&str, Feature)]| {
        let exs = [ex(&[]), ex(features)];
        let e = parse_example(&exs, &spec).unwrap_err();
        assert_eq!(e.record, Some(1), "{e}");
        e.feature.unwrap_or_default()
    };
    // Counts differ, or one of the two is missing.
    let ix = |v: Vec<i64>| ("ix", Feature::Int64List(v));
    let val = |v: Vec<f32>| ("val", Feature::FloatList(v));
    assert_eq!(bad(&[ix(vec![3, 1]), val(vec![30.0])]), "ix");
    assert_eq!(bad(&[ix(vec![3]), val(vec![30.0, 1.0])]), "ix");
    assert_eq!(bad(&[ix(vec![1])]), "ix");
    assert_eq!(bad(&[val(vec![1.0])]), "ix");
    // Out of [0, size).
    assert_eq!(bad(&[ix(vec![5]), val(vec![1.0])]), "ix");
    assert_eq!(bad(&[ix(vec![-1]), val(vec![1.0])]), "ix");
    // Types.
    assert_eq!(
        bad(&[ix(vec![1]), ("val", Feature::Int64List(vec![1]))]),
        "val"
    );
    assert_eq!(
        bad(&[("ix", Feature::FloatList(vec![1.0])), val(vec![1.0])]),
        "ix"
    );
}

#[test]
fn parse_single_example_drops_the_batch_dimension() {
    let e = ex(&[
        ("ix", Feature::Int64List(vec![4, 0])),
        ("val", Feature::FloatList(vec![4.0, 0.5])),
        ("a", Feature::FloatList(vec![1.0, 2.0])),
    ]);
    let mut spec = sparse_spec(&["ix"], &[5], false);
    spec.insert(
        "a".into(),
        FeatureSpec::FixedLen {
            shape: vec![2],
            dtype: DType::Float32,
            default: None,
        },
    );
    spec.insert(
        "v".into(),
        FeatureSpec::VarLen {
            dtype: DType::Float32,
        },
    );
    spec.insert(
        "val2".into(),
        FeatureSpec::VarLen {
            dtype: DType::Float32,
        },
    );
    spec.insert(
        "s".into(),
        FeatureSpec::FixedLenSequence {
            shape: vec![],
            dtype: DType::Int64,
            allow_missing: true,
            default: None,
        },
    );
    let got = parse_single_example(&e, &spec).unwrap();
    assert_eq!(got["sp"], sparse(&[0, 4], &[0.5, 4.0], &[5]));
    assert_eq!(
        got["a"],
        Parsed::Dense {
            shape: vec![2],
            values: Values::Float32(vec![1.0, 2.0])
        }
    );
    assert_eq!(got["v"], sparse(&[], &[], &[0]));
    assert_eq!(
        got["s"],
        Parsed::Dense {
            shape: vec![0],
            values: Values::Int64(vec![])
        }
    );
    let mut e2 = e.clone();
    e2.features
        .insert("v".into(), Feature::FloatList(vec![7.0, 8.0]));
    let got = parse_single_example(&e2, &spec).unwrap();
    assert_eq!(got["v"], sparse(&[0, 1], &[7.0, 8.0], &[2]));
}
