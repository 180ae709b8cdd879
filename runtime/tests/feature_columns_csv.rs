//! Feature-column inputs through `data::load` from a CSV file: the transform
//! each `InputSpec::feature` gets (ids, weights, dense values, a string
//! label), the checks on the specs, and errors naming file, line and column.

use crate::common;

use std::num::NonZeroU64;

use common::temp_file;
use specc_runtime::data::{load, InputKind, InputSpec, Normalizer, Source};
use specc_runtime::feature_column::{
    CategoricalColumn, FeatureInput, KeyDType, NumericColumn, PADDING_ID,
};
use specc_runtime::hash::hash_bucket;

fn spec(name: &str, kind: InputKind, feature: FeatureInput, columns: &[&str]) -> InputSpec {
    InputSpec {
        name: name.into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        kind,
        normalizer: Normalizer::None,
        feature: Some(feature),
    }
}

fn city() -> CategoricalColumn {
    CategoricalColumn::HashBucket {
        key: "city".into(),
        hash_bucket_size: NonZeroU64::new(10).unwrap(),
        dtype: KeyDType::String,
        values: Default::default(),
    }
}

fn weighted_ids() -> CategoricalColumn {
    CategoricalColumn::Weighted {
        categorical: Box::new(CategoricalColumn::Identity {
            key: "ids".into(),
            num_buckets: 5,
            default_value: None,
            values: Default::default(),
        }),
        weight_feature_key: "w".into(),
    }
}

fn specs() -> Vec<InputSpec> {
    let float = InputKind::Float;
    vec![
        spec(
            "city_ids",
            InputKind::ClassId { num_classes: None },
            FeatureInput::Ids {
                column: city(),
                max_values: 1,
                check_range: false,
                prune_nonpositive_weights: false,
            },
            &["city"],
        ),
        spec(
            "city_weights",
            float,
            FeatureInput::Weights {
                column: city(),
                max_values: 1,
            },
            &["city"],
        ),
        spec(
            "price",
            float,
            FeatureInput::Dense(NumericColumn {
                key: "price".into(),
                shape: 1,
                default_value: Some(vec![0.25]),
                normalizer: None,
                decode: None,
            }),
            &["price"],
        ),
        spec(
            "ids",
            InputKind::ClassId {
                num_classes: Some(5),
            },
            FeatureInput::Ids {
                column: weighted_ids(),
                max_values: 1,
                check_range: true,
                prune_nonpositive_weights: false,
            },
            &["ids", "w"],
        ),
        spec(
            "ids_weights",
            float,
            FeatureInput::Weights {
                column: weighted_ids(),
                max_values: 1,
            },
            &["ids", "w"],
        ),
        spec(
            "label",
            InputKind::ClassId {
                num_classes: Some(2),
            },
            FeatureInput::LabelVocabulary {
                vocabulary: vec![b"no".to_vec(), b"yes".to_vec()],
            },
            &["label"],
        ),
    ]
}

#[test]
fn csv_feature_columns_load() {
    let p = temp_file(
        "fc.csv",
        "city,price,ids,w,label\nparis,0.5,3,2.0,yes\n,,,1.0,no\ntokyo,-1,1,0.5,yes\n",
    );
    let d = load(&Source::csv(p), &specs()).unwrap();
    assert_eq!(d.rows, 3);
    let n = NonZeroU64::new(10).unwrap();
    let h = |s: &[u8]| hash_bucket(s, n) as i32;
    let i32s = |name: &str| d.input(name).unwrap().values.as_i32().unwrap().to_vec();
    let f32s = |name: &str| d.input(name).unwrap().values.as_f32().unwrap().to_vec();
    assert_eq!(i32s("city_ids"), [h(b"paris"), PADDING_ID, h(b"tokyo")]);
    assert_eq!(f32s("city_weights"), [1.0, 0.0, 1.0]);
    assert_eq!(f32s("price"), [0.5, 0.25, -1.0]);
    assert_eq!(i32s("ids"), [3, PADDING_ID, 1]);
    assert_eq!(f32s("ids_weights"), [2.0, 0.0, 0.5]);
    assert_eq!(i32s("label"), [1, 0, 1]);
}

#[test]
fn csv_feature_column_errors_name_file_line_and_column() {
    let p = temp_file(
        "fc_bad.csv",
        "city,price,ids,w,label\nparis,0.5,3,2.0,yes\nrome,1,1,1,maybe\n",
    );
    let e = load(&Source::csv(p.clone()), &specs()).unwrap_err();
    assert_eq!(e.row, Some(3));
    assert_eq!(e.column.as_deref(), Some("label"));
    assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
    assert_eq!(e.message, "`maybe` is not one of \"no\", \"yes\"");

    let p = temp_file(
        "fc_range.csv",
        "city,price,ids,w,label\nparis,0.5,7,2.0,yes\n",
    );
    let e = load(&Source::csv(p), &specs()).unwrap_err();
    assert_eq!((e.row, e.column.as_deref()), (Some(2), Some("ids")));
    assert_eq!(
        e.message,
        "id 7 of `ids_weighted_by_w` is out of range [0, 5)"
    );
}

#[test]
fn feature_specs_must_read_the_columns_keys() {
    let p = temp_file(
        "fc_spec.csv",
        "city,price,ids,w,label\nparis,0.5,3,2.0,yes\n",
    );
    let mut s = specs();
    s[3].columns = vec!["ids".into()];
    let e = load(&Source::csv(p.clone()), &s).unwrap_err();
    assert!(
        e.message.contains("input `ids`") && e.message.contains("\"w\""),
        "{e}"
    );
    let mut s = specs();
    s[1].kind = InputKind::ClassId { num_classes: None };
    let e = load(&Source::csv(p), &s).unwrap_err();
    assert!(e.message.contains("input `city_weights`"), "{e}");
}
