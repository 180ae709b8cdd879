//! The feature-column transforms allocate nothing per row: after one
//! warm-up chunk, a counting global allocator sees no allocation while the
//! ids and weights of 8 hashed columns, 2 crosses (one of a bucketized
//! column), a vocabulary column and a weighted column, columns whose cells
//! are split by `sep` (whole, truncated, crossed), and a numeric column,
//! are computed over chunks of CSV text cells (workload W5's shape).
//!
//! Only the test's own thread is counted; it is the only test in this binary.

use std::num::NonZeroU64;

use specc_runtime::data::columns::{CellRows, ColumnTransform, ValuesMut};
use specc_runtime::feature_column::{
    transform::transform_for, CategoricalColumn, CrossKey, FeatureInput, KeyDType, KeyValues,
    NumericColumn, Sep, Vocabulary,
};

use specc_testkit::alloc::thread_allocations as allocations;

fn hashed(key: &str) -> CategoricalColumn {
    CategoricalColumn::HashBucket {
        key: key.into(),
        hash_bucket_size: NonZeroU64::new(1000).unwrap(),
        dtype: KeyDType::String,
        values: Default::default(),
    }
}

fn raw(key: &str) -> CrossKey {
    CrossKey::Raw {
        key: key.into(),
        dtype: KeyDType::String,
        sep: None,
    }
}

#[test]
fn transforms_allocate_nothing_per_row() {
    const COLS: usize = 10;
    let header: Vec<String> = (0..8)
        .map(|i| format!("c{i}"))
        .chain(["x".into(), "w".into()])
        .collect();
    let price = NumericColumn {
        key: "x".into(),
        shape: 1,
        default_value: Some(vec![0.0]),
        normalizer: None,
        decode: None,
    };
    let mut columns: Vec<CategoricalColumn> = (0..8).map(|i| hashed(&format!("c{i}"))).collect();
    columns.push(CategoricalColumn::Crossed {
        keys: vec![raw("c0"), raw("c1")],
        hash_bucket_size: NonZeroU64::new(10_000).unwrap(),
        hash_key: None,
    });
    columns.push(CategoricalColumn::Crossed {
        keys: vec![
            raw("c2"),
            CrossKey::Column(Box::new(CategoricalColumn::Bucketized {
                source: price.clone(),
                boundaries: vec![0.0, 1.0, 5.0],
            })),
        ],
        hash_bucket_size: NonZeroU64::new(10_000).unwrap(),
        hash_key: None,
    });
    columns.push(CategoricalColumn::Vocabulary {
        key: "c3".into(),
        vocabulary: Vocabulary::Strings(vec![b"v1".to_vec(), b"v2".to_vec()]),
        vocabulary_file: None,
        num_oov_buckets: 3,
        default_value: -1,
        values: Default::default(),
    });
    columns.push(CategoricalColumn::Weighted {
        categorical: Box::new(hashed("c4")),
        weight_feature_key: "w".into(),
    });
    let mut columns: Vec<(CategoricalColumn, usize)> =
        columns.into_iter().map(|c| (c, 1)).collect();
    // A cell split by `sep = "_"` (`value5_17`: two pieces), truncated to
    // one piece, and crossed with a raw key.
    let split = |truncate| CategoricalColumn::HashBucket {
        key: "c5".into(),
        hash_bucket_size: NonZeroU64::new(1000).unwrap(),
        dtype: KeyDType::String,
        values: KeyValues {
            sep: Some(Sep::Delimiter(b"_".to_vec())),
            truncate,
        },
    };
    // Before the weighted column, whose weights stay last (checked below).
    let weighted = columns.pop().unwrap();
    columns.push((split(None), 2));
    columns.push((split(Some(1)), 1));
    columns.push((
        CategoricalColumn::Crossed {
            keys: vec![raw("c6"), CrossKey::Column(Box::new(split(None)))],
            hash_bucket_size: NonZeroU64::new(10_000).unwrap(),
            hash_key: None,
        },
        2,
    ));
    columns.push(weighted);
    let mut inputs: Vec<FeatureInput> = vec![FeatureInput::Dense(price)];
    for (c, max_values) in columns {
        inputs.push(FeatureInput::Ids {
            column: c.clone(),
            max_values,
            check_range: true,
            prune_nonpositive_weights: false,
        });
        inputs.push(FeatureInput::Weights {
            column: c,
            max_values,
        });
    }
    let mut transforms: Vec<(Box<dyn ColumnTransform>, Vec<usize>)> = inputs
        .iter()
        .map(|f| {
            let t = transform_for(f, &[]);
            let idx = t
                .columns()
                .iter()
                .map(|c| header.iter().position(|h| h == c).unwrap())
                .collect();
            (t, idx)
        })
        .collect();
    // 256 rows of text cells.
    let rows = 256;
    let text: Vec<Vec<u8>> = (0..rows * COLS)
        .map(|k| match k % COLS {
            8 => format!("{}", (k % 13) as f64 * 0.5).into_bytes(),
            9 => b"1.5".to_vec(),
            c => format!("value{}_{}", c, k % 97).into_bytes(),
        })
        .collect();
    let mut cells: Vec<Vec<&[u8]>> = transforms
        .iter()
        .map(|(_, idx)| {
            let mut v = Vec::with_capacity(rows * idx.len());
            for r in 0..rows {
                for &c in idx {
                    v.push(text[r * COLS + c].as_slice());
                }
            }
            v
        })
        .collect();
    let mut f32_out = vec![0f32; rows * 2];
    let mut i32_out = vec![0i32; rows * 2];
    let mut run = |transforms: &mut Vec<(Box<dyn ColumnTransform>, Vec<usize>)>| {
        for ((t, idx), c) in transforms.iter_mut().zip(cells.iter_mut()) {
            let cells = CellRows::text(c, idx.len());
            let out = match t.elem() {
                specc_runtime::abi::ElemType::F32 => ValuesMut::F32(&mut f32_out),
                specc_runtime::abi::ElemType::I32 => ValuesMut::I32(&mut i32_out),
            };
            t.transform(&cells, out).unwrap();
        }
    };
    run(&mut transforms);
    let before = allocations();
    for _ in 0..20 {
        run(&mut transforms);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "allocations while transforming");
    // The run did real work: the weights of the weighted column are 1.5.
    assert!(f32_out[..rows].iter().all(|&w| w == 1.5));
}
