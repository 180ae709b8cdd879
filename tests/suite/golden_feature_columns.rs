//! The runtime's feature-column transforms (`specc_runtime::feature_column`)
//! against TF 2.21 (`golden/feature_columns.json`): the ids (and weights) of
//! every case of `categorical_columns`, `identity_out_of_range`, the
//! numeric, bucketized and indicator cases of `input_layer`,
//! `hash_bucket_column_on_20_strings` and `hash_bucket_column_on_ints`, and
//! `parse_example_numeric_default` (defaults, normalizer, parse spec, the
//! missing-feature error).
//!
//! Every column, hyperparameter, input and expected value comes from the
//! file: the columns are parsed from the Python calls it records
//! (`common::tf_call`; the remarks after a call are never read). Inputs are
//! fed as `tf.train.Example` features: `inputs.dense_features` rows as
//! dense rows (TF's dense tensors, where '' and -1 are missing), and the
//! keys a case fed TF as SparseTensors of the non-missing entries (the
//! crosses' `sparse_raw` keys of `crossed_id_reimplementation_check`, and
//! the key of each case of [`SPARSE_INPUT_CASES`]) as the lists
//! `VarLenFeature` would give, without the missing entries. TF's SparseTensor
//! is read back from our `[rows, max_values]` ids and weights: the slots
//! whose id is not the padding id -1, plus, as id -1, the padding slots
//! where the input has a value TF keeps (a negative id, TF's
//! `default_value=-1`, which every consumer ignores); every padding slot
//! must have weight 0.
//!
//! Indices: a single-key column puts the value at position p of its input
//! row at index `[row, p]`, in TF and in specc alike. TF's SparseTensor
//! inputs keep each value at its position in the dense row (a row `['',
//! 'tokyo']` gives `'tokyo'` at `[row, 1]`), while a `VarLenFeature` list
//! has no gaps (`'tokyo'` is its value 0): the read-back puts the value of
//! list position j at the dense position of the row's j-th non-missing
//! entry, which is where TF's input had it.

use crate::common;

use std::collections::BTreeMap;

use common::golden;
use common::tf_call::{self, Py};
use serde_json::Value;
use specc_runtime::data::columns::{Cell, CellRows, ColumnTransform, ValuesMut};
use specc_runtime::feature_column::{
    make_parse_example_spec, tf_repr, CategoricalColumn, CategoricalOutput, CategoricalTransform,
    DenseTransform, FeatureInput, KeyDType, PADDING_ID,
};
use specc_runtime::io::example::{Example, Feature};

const FILE: &str = "feature_columns.json";

fn g() -> Value {
    golden(FILE)
}

/// The dtype of a raw key: the type of its dense input's entries.
fn input_dtype(g: &Value, key: &str) -> KeyDType {
    let rows = &g["inputs"]["dense_features"][key];
    match rows[0][0] {
        Value::String(_) => KeyDType::String,
        Value::Number(ref n) if n.is_i64() => KeyDType::Int64,
        ref other => panic!("{FILE}: input {key:?} has entries like {other}, not strings or ints"),
    }
}

/// A missing entry of a dense input ('' or -1).
fn missing(v: &Value) -> bool {
    v.as_str() == Some("") || v.as_i64() == Some(-1)
}

/// A JSON row of a dense input as a feature (`dense`: every entry, else
/// only the present ones, as a SparseTensor of them).
fn feature_of(row: &Value, dense: bool) -> Feature {
    let all = row.as_array().expect("a row");
    let items: Vec<&Value> = all.iter().filter(|v| dense || !missing(v)).collect();
    // The kind is the row's, even when no entry is left.
    match all.first() {
        Some(Value::String(_)) => Feature::BytesList(
            items
                .iter()
                .map(|v| v.as_str().expect("a string").as_bytes().to_vec())
                .collect(),
        ),
        Some(Value::Number(n)) if n.is_i64() => {
            Feature::Int64List(items.iter().map(|v| common::int(v)).collect())
        }
        Some(_) => Feature::FloatList(items.iter().map(|v| common::num(v) as f32).collect()),
        None => Feature::Int64List(Vec::new()),
    }
}

/// The rows of the sparse weight input named `key` (the key of
/// `inputs` that is `key` or starts with `key` and a space).
fn sparse_rows(g: &Value, key: &str) -> Option<Vec<Feature>> {
    let (_, sp) = g["inputs"]
        .as_object()?
        .iter()
        .find(|(k, _)| *k == key || k.starts_with(&format!("{key} ")))?;
    let rows = sp["dense_shape"][0].as_u64()? as usize;
    let mut out = vec![Vec::new(); rows];
    for (ix, v) in sp["indices"]
        .as_array()?
        .iter()
        .zip(sp["values"].as_array()?)
    {
        out[ix[0].as_u64()? as usize].push(common::num(v) as f32);
    }
    Some(out.into_iter().map(Feature::FloatList).collect())
}

/// The `categorical_columns` cases that are not crosses and were fed TF
/// with their key as a SparseTensor of the non-missing entries (case names
/// are fixed across draws; a cross's inputs are its `key_kinds` in
/// `crossed_id_reimplementation_check`).
const SPARSE_INPUT_CASES: &[&str] = &["hash_city_10_sparse_input"];

/// The keys case `name` fed TF as SparseTensors: a cross's `sparse_raw`
/// keys (`crossed_id_reimplementation_check`; `sparse_ids` is a column's
/// ids, over a dense raw key), every raw key of a case of
/// [`SPARSE_INPUT_CASES`], none otherwise.
fn sparse_keys(g: &Value, name: &str, keys: &[String]) -> Vec<String> {
    let crossed = g["crossed_id_reimplementation_check"]["cases"]
        .as_array()
        .expect("crossed_id_reimplementation_check.cases")
        .iter()
        .find(|k| k["name"] == name);
    if let Some(k) = crossed {
        let kinds = k["key_kinds"].as_object().expect("key_kinds");
        return keys
            .iter()
            .filter(
                |key| match kinds.get(key.as_str()).and_then(Value::as_str) {
                    Some("sparse_raw") => true,
                    // A categorical column's ids: its raw key is a dense input.
                    Some("dense_raw" | "sparse_ids") | None => false,
                    Some(other) => panic!("{name}: unknown key kind {other:?} of {key}"),
                },
            )
            .cloned()
            .collect();
    }
    if SPARSE_INPUT_CASES.contains(&name) {
        return keys.to_vec();
    }
    Vec::new()
}

/// The dense positions of the non-missing entries of each row of the dense
/// input `key`: where TF's SparseTensor of them has each value.
fn present_positions(g: &Value, key: &str) -> Vec<Vec<usize>> {
    g["inputs"]["dense_features"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{FILE}: no dense input {key:?}"))
        .iter()
        .map(|r| {
            r.as_array()
                .expect("a row")
                .iter()
                .enumerate()
                .filter(|(_, v)| !missing(v))
                .map(|(p, _)| p)
                .collect()
        })
        .collect()
}

/// The features of every row, by key: `inputs.dense_features`, the sparse
/// keys without their missing entries, a sparse weight input.
fn features(g: &Value, keys: &[String], sparse: &[String]) -> Vec<Vec<Feature>> {
    let mut by_key = Vec::new();
    for key in keys {
        let rows = match g["inputs"]["dense_features"][key].as_array() {
            Some(rows) => rows
                .iter()
                .map(|r| feature_of(r, !sparse.contains(key)))
                .collect(),
            None => sparse_rows(g, key).unwrap_or_else(|| panic!("{FILE}: no input {key:?}")),
        };
        by_key.push(rows);
    }
    let rows = by_key.first().map_or(0, Vec::len);
    (0..rows)
        .map(|r| by_key.iter().map(|k| k[r].clone()).collect())
        .collect()
}

/// Runs `t` over rows of features (one per column of `t`, in its order).
fn run_i32(t: &mut dyn ColumnTransform, rows: &[Vec<Feature>]) -> Result<Vec<i32>, String> {
    let cells: Vec<Cell> = rows
        .iter()
        .flat_map(|r| r.iter().map(|f| Cell::Feature(Some(f))))
        .collect();
    let mut out = vec![0i32; rows.len() * t.width()];
    t.transform(
        &CellRows::cells(&cells, t.columns().len()),
        ValuesMut::I32(&mut out),
    )
    .map_err(|e| {
        format!(
            "row {} column {}: {}",
            e.row,
            t.columns()[e.column],
            e.message
        )
    })?;
    Ok(out)
}

fn run_f32(t: &mut dyn ColumnTransform, cells: &[Cell], rows: usize) -> Result<Vec<f32>, String> {
    let mut out = vec![0f32; rows * t.width()];
    t.transform(
        &CellRows::cells(cells, t.columns().len()),
        ValuesMut::F32(&mut out),
    )
    .map_err(|e| {
        format!(
            "row {} column {}: {}",
            e.row,
            t.columns()[e.column],
            e.message
        )
    })?;
    Ok(out)
}

fn feature_cells(rows: &[Vec<Feature>]) -> Vec<Cell<'_>> {
    rows.iter()
        .flat_map(|r| r.iter().map(|f| Cell::Feature(Some(f))))
        .collect()
}

/// A column's ids and weights over the rows, `[rows, max_values]` each.
struct Output {
    ids: Vec<i32>,
    weights: Vec<f32>,
    max_values: usize,
}

fn transform(
    column: &CategoricalColumn,
    max_values: usize,
    dense: &[&str],
    rows: &[Vec<Feature>],
) -> Result<Output, String> {
    let mut ids_t = CategoricalTransform::new(
        column,
        max_values,
        CategoricalOutput::Ids { check_range: false },
    )
    .with_dense_features(dense);
    let mut w_t = CategoricalTransform::new(column, max_values, CategoricalOutput::Weights)
        .with_dense_features(dense);
    let ids = run_i32(&mut ids_t, rows)?;
    let weights = run_f32(&mut w_t, &feature_cells(rows), rows.len())?;
    Ok(Output {
        ids,
        weights,
        max_values,
    })
}

/// TF's SparseTensor read back (see the module doc): `present(row, slot)`
/// says whether the input has a value TF keeps at that slot, `position(row,
/// slot)` is TF's column index of that slot's value.
fn sparse_of(
    out: &Output,
    present: &dyn Fn(usize, usize) -> bool,
    position: &dyn Fn(usize, usize) -> usize,
) -> (Vec<[usize; 2]>, Vec<i64>, Vec<f64>) {
    let (mut indices, mut values, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (&id, &w)) in out.ids.iter().zip(&out.weights).enumerate() {
        let (r, j) = (k / out.max_values, k % out.max_values);
        if id != PADDING_ID {
            indices.push([r, position(r, j)]);
            values.push(i64::from(id));
            weights.push(f64::from(w));
            continue;
        }
        assert_eq!(w, 0.0, "padding slot [{r}, {j}] has weight {w}");
        if present(r, j) {
            indices.push([r, position(r, j)]);
            values.push(-1);
            weights.push(0.0);
        }
    }
    (indices, values, weights)
}

fn golden_sparse(v: &Value) -> (Vec<[usize; 2]>, Vec<f64>, [usize; 2]) {
    let indices = v["indices"]
        .as_array()
        .expect("indices")
        .iter()
        .map(|ix| [common::int(&ix[0]) as usize, common::int(&ix[1]) as usize])
        .collect();
    let values = v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(common::num)
        .collect();
    let shape = [
        common::int(&v["dense_shape"][0]) as usize,
        common::int(&v["dense_shape"][1]) as usize,
    ];
    (indices, values, shape)
}

fn case(g: &Value, name: &str) -> Value {
    g["categorical_columns"]
        .as_array()
        .expect("categorical_columns")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{FILE}: no categorical_columns case {name:?}"))
        .clone()
}

fn run_case(name: &str) {
    let g = g();
    let c = case(&g, name);
    let text = c["column"].as_str().expect("column");
    let (call, _) = tf_call::parse(text);
    let column = tf_call::categorical_column(&call, &|k| input_dtype(&g, k));
    assert_eq!(
        column.name(),
        c["column_name"].as_str().expect("column_name"),
        "{name}: name"
    );
    assert_eq!(
        column.num_buckets(),
        c["num_buckets"].as_u64().expect("num_buckets"),
        "{name}: num_buckets"
    );
    let keys = FeatureInput::Ids {
        column: column.clone(),
        max_values: 1,
        check_range: false,
        prune_nonpositive_weights: false,
    }
    .raw_keys();
    let sparse = sparse_keys(&g, name, &keys);
    let dense: Vec<&str> = keys
        .iter()
        .filter(|k| !sparse.contains(k))
        .map(String::as_str)
        .collect();
    let rows = features(&g, &keys, &sparse);
    let (want_ix, want_ids, shape) = golden_sparse(&c["ids"]);
    assert_eq!(shape[0], rows.len(), "{name}: rows");
    let out = transform(&column, shape[1], &dense, &rows).unwrap_or_else(|e| panic!("{name}: {e}"));
    // A slot where the key has a value TF keeps (single-key columns: a
    // negative id reads back as -1).
    let single_key = !matches!(column, CategoricalColumn::Crossed { .. });
    let present = |r: usize, j: usize| {
        single_key && {
            let f = &rows[r][0];
            let dense_key = dense.contains(&keys[0].as_str());
            match f {
                Feature::BytesList(v) => v.get(j).is_some_and(|s| !(dense_key && s.is_empty())),
                Feature::Int64List(v) => v.get(j).is_some_and(|&x| !(dense_key && x == -1)),
                _ => false,
            }
        }
    };
    // TF's index of slot j: a single key fed as a SparseTensor has its
    // values at their dense positions (see the module doc).
    let positions =
        (single_key && sparse.contains(&keys[0])).then(|| present_positions(&g, &keys[0]));
    let position = |r: usize, j: usize| {
        positions.as_ref().map_or(j, |p| {
            *p[r]
                .get(j)
                .unwrap_or_else(|| panic!("{name}: row {r} has an id at slot {j} past its values"))
        })
    };
    let (ix, ids, weights) = sparse_of(&out, &present, &position);
    let want_ids: Vec<i64> = want_ids.iter().map(|&v| v as i64).collect();
    assert_eq!(ix, want_ix, "{name}: indices");
    assert_eq!(ids, want_ids, "{name}: ids");
    if let Some(w) = c.get("weights") {
        let (wix, wv, _) = golden_sparse(w);
        assert_eq!(ix, wix, "{name}: weight indices");
        let want: Vec<f32> = wv.iter().map(|&x| x as f32).collect();
        let got: Vec<f32> = weights.iter().map(|&x| x as f32).collect();
        assert_eq!(got, want, "{name}: weights");
    }
    // The fewest slots the rows fit in (at most TF's width): one fewer is
    // an error naming the limit, never a truncation.
    let fits = (1..=shape[1])
        .find(|&m| transform(&column, m, &dense, &rows).is_ok())
        .unwrap_or_else(|| panic!("{name}: the rows do not fit TF's width {}", shape[1]));
    if fits > 1 {
        let e = transform(&column, fits - 1, &dense, &rows)
            .err()
            .expect("fewer slots than fit");
        assert!(
            e.contains(&format!("more than max_values = {}", fits - 1)),
            "{name}: {e}"
        );
    }
}

macro_rules! categorical_cases {
    ($($test:ident => $name:literal,)*) => {
        $( #[test] fn $test() { run_case($name); } )*
        const CATEGORICAL_CASES: &[&str] = &[$($name),*];
    };
}

categorical_cases! {
    hash_city_10 => "hash_city_10",
    hash_city_1000 => "hash_city_1000",
    hash_cid_int_1000 => "hash_cid_int_1000",
    vocab_city_oov2 => "vocab_city_oov2",
    vocab_city_default => "vocab_city_default",
    vocab_city_default7 => "vocab_city_default7",
    vocab_cid_int_oov3 => "vocab_cid_int_oov3",
    identity_5 => "identity_5",
    identity_3_default0 => "identity_3_default0",
    bucketized_as_categorical => "bucketized_as_categorical",
    weighted_identity => "weighted_identity",
    cross_city_cid_1000 => "cross_city_cid_1000",
    cross_cid_city_1000 => "cross_cid_city_1000",
    cross_city_bucketized_1000 => "cross_city_bucketized_1000",
    cross_city_ids_identity_1000 => "cross_city_ids_identity_1000",
    cross_3way_1000 => "cross_3way_1000",
    cross_city_cid_hashkey => "cross_city_cid_hashkey",
    cross_city_cid_sparse_input_1000 => "cross_city_cid_sparse_input_1000",
    cross_city_sparse_cid_dense_1000 => "cross_city_sparse_cid_dense_1000",
    hash_city_10_sparse_input => "hash_city_10_sparse_input",
}

#[test]
fn every_categorical_case_has_a_test() {
    let g = g();
    let missing: Vec<String> = g["categorical_columns"]
        .as_array()
        .expect("categorical_columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_string())
        .filter(|n| !CATEGORICAL_CASES.contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{FILE}: cases without a test: {missing:?}"
    );
}

/// Every case [`SPARSE_INPUT_CASES`] names is in the file, and none of them
/// is a cross (whose inputs `crossed_id_reimplementation_check` records).
#[test]
fn sparse_input_cases_are_in_the_file() {
    let g = g();
    for name in SPARSE_INPUT_CASES {
        let c = case(&g, name);
        let (call, _) = tf_call::parse(c["column"].as_str().expect("column"));
        assert_ne!(call.call_name(), Some("crossed_column"), "{name}");
    }
}

fn identity_out_of_range_column(g: &Value) -> (CategoricalColumn, Vec<Vec<Feature>>, Value) {
    let oor = &g["identity_out_of_range"];
    let (call, _) = tf_call::parse(oor["column"].as_str().expect("column"));
    let column = tf_call::categorical_column(&call, &|_| KeyDType::Int64);
    let rows = oor["input_ids_dense"]
        .as_array()
        .expect("input_ids_dense")
        .iter()
        .map(|r| vec![feature_of(r, true)])
        .collect();
    (column, rows, oor.clone())
}

#[test]
fn identity_out_of_range_passes_ids_through() {
    let g = g();
    let (column, rows, oor) = identity_out_of_range_column(&g);
    let key = column.name();
    let (want_ix, want, shape) = golden_sparse(&oor["ids"]);
    let out = transform(&column, shape[1], &[key.as_str()], &rows).expect("transform");
    let (ix, ids, _) = sparse_of(&out, &|_, _| false, &|_, j| j);
    assert_eq!(ix, want_ix);
    assert_eq!(ids, want.iter().map(|&v| v as i64).collect::<Vec<_>>());
    // indicator_column over the ids: out-of-range ids count nowhere.
    let (dims, want) = common::array(&oor["indicator_column_input_layer"]);
    let nb = dims[1];
    assert_eq!(nb as u64, column.num_buckets());
    let mut got = vec![0f32; rows.len() * nb];
    for (k, (&id, &w)) in out.ids.iter().zip(&out.weights).enumerate() {
        if (id as usize) < nb {
            got[(k / out.max_values) * nb + id as usize] += w;
        }
    }
    common::assert_all_close("indicator", &got, &want, common::Tol::relative(0.0));
}

/// With `check_range` (an embedding consumes the ids) the first id out of
/// range, in row-major order, is an error naming its row and TF's range.
#[test]
fn identity_out_of_range_with_check_range_is_an_error() {
    let g = g();
    let (column, rows, oor) = identity_out_of_range_column(&g);
    let tf = oor["embedding_column_sum_input_layer"]["error"]
        .as_str()
        .expect("error");
    // "indices[1] == 3 out of range [0, 3)"
    let after = tf.split("== ").nth(1).expect("TF's message names the id");
    let bad: i64 = after
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .expect("the id");
    let range = &after[after.find('[').expect("range")..=after.find(')').expect("range")];
    let (ix, vals, shape) = golden_sparse(&oor["ids"]);
    let first = ix
        .iter()
        .zip(&vals)
        .find(|(_, &v)| v as u64 >= column.num_buckets())
        .map(|(ix, &v)| (ix[0], v as i64))
        .expect("an id out of range");
    assert_eq!(first.1, bad, "TF's first bad id");
    let key = column.name();
    let mut t = CategoricalTransform::new(
        &column,
        shape[1],
        CategoricalOutput::Ids { check_range: true },
    )
    .with_dense_features(&[key.as_str()]);
    let e = run_i32(&mut t, &rows).unwrap_err();
    assert!(
        e.starts_with(&format!("row {} column {key}:", first.0)),
        "{e}"
    );
    assert!(
        e.contains(&format!("id {bad} ")) && e.contains(range),
        "{e}"
    );
}

/// The dense output of a numeric or bucketized column (one-hot of its ids,
/// as input_layer gives), or of an indicator column (weights summed by
/// id), over the dense inputs. `None` for other columns.
fn dense_output(g: &Value, v: &Py) -> Option<(String, usize, Vec<f32>)> {
    match v.call_name()? {
        "numeric_column" => {
            let c = tf_call::numeric_column(v);
            let rows: Vec<Vec<Feature>> = g["inputs"]["dense_features"][&c.key]
                .as_array()?
                .iter()
                .map(|r| vec![feature_of(r, true)])
                .collect();
            let mut t = DenseTransform::new(c.clone());
            let out = run_f32(&mut t, &feature_cells(&rows), rows.len()).expect("numeric");
            Some((c.name(), c.shape, out))
        }
        "bucketized_column" | "indicator_column" => {
            let inner = if v.call_name()? == "indicator_column" {
                v.arg(0, "categorical_column")?
            } else {
                v
            };
            let column = tf_call::categorical_column(inner, &|k| input_dtype(g, k));
            let keys = FeatureInput::Weights {
                column: column.clone(),
                max_values: 1,
            }
            .raw_keys();
            let rows = features(g, &keys, &[]);
            let dense: Vec<&str> = keys.iter().map(String::as_str).collect();
            let max_values = rows
                .iter()
                .flat_map(|r| r.iter().map(Feature::len))
                .max()
                .unwrap_or(1);
            let out = transform(&column, max_values, &dense, &rows).expect("transform");
            let nb = column.num_buckets() as usize;
            let mut dense_out = vec![0f32; rows.len() * nb];
            for (k, (&id, &w)) in out.ids.iter().zip(&out.weights).enumerate() {
                if (id as usize) < nb {
                    dense_out[(k / max_values) * nb + id as usize] += w;
                }
            }
            let name = if v.call_name()? == "indicator_column" {
                format!("{}_indicator", column.name())
            } else {
                column.name()
            };
            Some((name, nb, dense_out))
        }
        _ => None,
    }
}

fn run_input_layer(name: &str) {
    let g = g();
    let c = g["input_layer"]
        .as_array()
        .expect("input_layer")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{FILE}: no input_layer case {name:?}"))
        .clone();
    let text = c["columns"].as_str().expect("columns");
    let (call, _) = tf_call::parse(text);
    let columns: Vec<Py> = match call.call_name() {
        Some("input_layer") => call
            .arg(1, "feature_columns")
            .expect("columns")
            .list()
            .to_vec(),
        _ => vec![call],
    };
    let mut outs: Vec<(String, usize, Vec<f32>)> = columns
        .iter()
        .map(|v| dense_output(&g, v).unwrap_or_else(|| panic!("{name}: unsupported {v:?}")))
        .collect();
    let given: Vec<&str> = outs.iter().map(|o| o.0.as_str()).collect();
    let want_given: Vec<&str> = c["column_names_in_given_order"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n.as_str().expect("name"))
        .collect();
    assert_eq!(given, want_given, "{name}: column names");
    // input_layer orders its columns by name.
    outs.sort_by(|a, b| a.0.cmp(&b.0));
    let sorted: Vec<&str> = outs.iter().map(|o| o.0.as_str()).collect();
    let want_sorted: Vec<&str> = c["column_names_in_output_order"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n.as_str().expect("name"))
        .collect();
    assert_eq!(sorted, want_sorted, "{name}: output order");
    let (dims, want) = common::array(&c["output"]);
    let rows = dims[0];
    let mut got = Vec::with_capacity(want.len());
    for r in 0..rows {
        for (_, w, v) in &outs {
            got.extend_from_slice(&v[r * w..(r + 1) * w]);
        }
    }
    let scale = common::scale(&want);
    common::assert_all_close(name, &got, &want, common::Tol::scaled(1e-6, 1e-6, scale));
}

macro_rules! input_layer_cases {
    ($($test:ident => $name:literal,)*) => {
        $( #[test] fn $test() { run_input_layer($name); } )*
    };
}

input_layer_cases! {
    input_layer_numeric => "numeric",
    input_layer_numeric_shape2_normalizer => "numeric_shape2_normalizer",
    input_layer_bucketized => "bucketized",
    input_layer_bucketized_shape2 => "bucketized_shape2",
    input_layer_multi_column_order => "multi_column_order",
    input_layer_indicator_vocab => "indicator_vocab",
    input_layer_indicator_identity_dup => "indicator_identity_dup",
    input_layer_indicator_hash => "indicator_hash",
}

fn numeric_default_case(g: &Value) -> (Vec<tf_call::Py>, Vec<Example>) {
    let p = &g["parse_example_numeric_default"];
    let columns = p["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| tf_call::parse(c.as_str().expect("a column")).0)
        .collect();
    let examples = p["examples_values"]
        .as_array()
        .expect("examples_values")
        .iter()
        .map(|e| Example {
            features: e
                .as_object()
                .expect("an example")
                .iter()
                .map(|(k, v)| {
                    let vals = v.as_array().expect("values").iter();
                    (
                        k.clone(),
                        Feature::FloatList(vals.map(|x| common::num(x) as f32).collect()),
                    )
                })
                .collect(),
        })
        .collect();
    (columns, examples)
}

/// Each example through the Example wire format, as a TFRecord source
/// reads it.
fn round_trip(examples: &[Example]) -> Vec<Example> {
    examples
        .iter()
        .enumerate()
        .map(|(i, e)| Example::decode(&e.encode(), i).expect("decode"))
        .collect()
}

#[test]
fn parse_example_numeric_default_values() {
    let g = g();
    let p = &g["parse_example_numeric_default"];
    let (columns, examples) = numeric_default_case(&g);
    let examples = round_trip(&examples);
    let present: Vec<Vec<String>> = p["examples_present_features"]
        .as_array()
        .expect("present")
        .iter()
        .map(|e| {
            e.as_array()
                .expect("names")
                .iter()
                .map(|n| n.as_str().expect("name").to_string())
                .collect()
        })
        .collect();
    for (e, names) in examples.iter().zip(&present) {
        let have: Vec<&String> = e.features.keys().collect();
        let mut want: Vec<&String> = names.iter().collect();
        want.sort();
        assert_eq!(have, want, "examples_present_features");
    }
    let mut outs: Vec<(String, usize, Vec<f32>)> = columns
        .iter()
        .map(|v| {
            let c = tf_call::numeric_column(v);
            let cells: Vec<Cell> = examples
                .iter()
                .map(|e| Cell::Feature(e.features.get(&c.key)))
                .collect();
            let mut t = DenseTransform::new(c.clone());
            let out = run_f32(&mut t, &cells, examples.len()).expect("numeric");
            (c.name(), c.shape, out)
        })
        .collect();
    outs.sort_by(|a, b| a.0.cmp(&b.0));
    let key = p
        .as_object()
        .expect("case")
        .keys()
        .find(|k| k.starts_with("input_layer_output"))
        .expect("input_layer_output");
    let (dims, want) = common::array(&p[key]);
    let mut got = Vec::new();
    for r in 0..dims[0] {
        for (_, w, v) in &outs {
            got.extend_from_slice(&v[r * w..(r + 1) * w]);
        }
    }
    // Signs of zeros matter too (-0.0 in the file stays -0.0).
    let bits_got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
    let bits_want: Vec<u32> = want.iter().map(|&x| (x as f32).to_bits()).collect();
    assert_eq!(bits_got, bits_want, "values {got:?} want {want:?}");
}

#[test]
fn parse_example_numeric_default_spec() {
    let g = g();
    let p = &g["parse_example_numeric_default"];
    let (columns, _) = numeric_default_case(&g);
    let inputs: Vec<FeatureInput> = columns
        .iter()
        .map(|v| FeatureInput::Dense(tf_call::numeric_column(v)))
        .collect();
    let spec = make_parse_example_spec(&inputs).expect("spec");
    let got: BTreeMap<String, String> = spec.iter().map(|(k, s)| (k.clone(), tf_repr(s))).collect();
    let want: BTreeMap<String, String> = p["parse_example_spec"]
        .as_object()
        .expect("parse_example_spec")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a spec").to_string()))
        .collect();
    assert_eq!(got, want);
}

/// TF: "Feature: price (data type: float) is required but could not be
/// found": the column named there, without its default, fails on the first
/// example that lacks it, naming the row.
#[test]
fn parse_example_missing_feature_without_default_is_an_error() {
    let g = g();
    let p = &g["parse_example_numeric_default"];
    let tf = p["missing_feature_without_default_error"]
        .as_str()
        .expect("error");
    let key = tf
        .split("Feature: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("TF's message names the feature");
    let (columns, examples) = numeric_default_case(&g);
    let mut c = columns
        .iter()
        .map(tf_call::numeric_column)
        .find(|c| c.key == key)
        .expect("the column TF names");
    c.default_value = None;
    let first = examples
        .iter()
        .position(|e| !e.features.contains_key(key))
        .expect("an example without the feature");
    let cells: Vec<Cell> = examples
        .iter()
        .map(|e| Cell::Feature(e.features.get(key)))
        .collect();
    let mut t = DenseTransform::new(c);
    let e = run_f32(&mut t, &cells, examples.len()).unwrap_err();
    assert_eq!(
        e,
        format!("row {first} column {key}: missing value and the column has no default_value")
    );
}

/// `hash_bucket_column_on_20_strings`: a `[20, 1]` SparseTensor of strings
/// (so '' is kept and hashed), for every bucket count.
#[test]
fn hash_bucket_column_on_20_strings() {
    let g = g();
    let h = &g["hash_bucket_column_on_20_strings"];
    let (call, _) = tf_call::parse(h["column"].as_str().expect("column"));
    let key = call.arg(0, "key").expect("key").str().to_string();
    for case in h["by_num_buckets"].as_array().expect("by_num_buckets") {
        let n = case["num_buckets"].as_u64().expect("num_buckets");
        let column = CategoricalColumn::HashBucket {
            key: key.clone(),
            hash_bucket_size: std::num::NonZeroU64::new(n).expect("positive"),
            dtype: KeyDType::String,
            values: Default::default(),
        };
        let rows: Vec<Vec<Feature>> = case["strings"]
            .as_array()
            .expect("strings")
            .iter()
            .map(|s| {
                vec![Feature::BytesList(vec![s
                    .as_str()
                    .expect("a string")
                    .as_bytes()
                    .to_vec()])]
            })
            .collect();
        let out = transform(&column, 1, &[], &rows).expect("transform");
        let want: Vec<i32> = common::ints(&case["ids"])
            .iter()
            .map(|&v| v as i32)
            .collect();
        assert_eq!(out.ids, want, "{n} buckets");
        assert!(
            out.weights.iter().all(|&w| w == 1.0),
            "every string is a value"
        );
    }
}

/// `hash_bucket_column_on_ints`: a dense int64 `[9, 1]` input; -1 is
/// missing, other ints hash through their decimal string.
#[test]
fn hash_bucket_column_on_ints() {
    let g = g();
    let h = &g["hash_bucket_column_on_ints"];
    let (call, _) = tf_call::parse(h["column"].as_str().expect("column"));
    let column = tf_call::categorical_column(&call, &|_| KeyDType::Int64);
    let key = column.name();
    let rows: Vec<Vec<Feature>> = common::ints(&h["inputs"])
        .into_iter()
        .map(|v| vec![Feature::Int64List(vec![v])])
        .collect();
    let (want_ix, want, shape) = golden_sparse(&h["ids"]);
    assert_eq!(shape, [rows.len(), 1]);
    let out = transform(&column, 1, &[key.as_str()], &rows).expect("transform");
    let (ix, ids, _) = sparse_of(&out, &|_, _| false, &|_, j| j);
    assert_eq!(ix, want_ix);
    assert_eq!(ids, want.iter().map(|&v| v as i64).collect::<Vec<_>>());
}
