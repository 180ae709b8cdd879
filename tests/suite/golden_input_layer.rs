//! TF's `input_layer` (`golden/feature_columns.json`, section `input_layer`,
//! and `identity_out_of_range`) against the compiled step: each case's
//! columns are written in the spec language straight from the case's Python
//! text (`'x'` → `"x"`, `tf.int64` → `int64`, `lambda x: e` → `e`,
//! `tf.constant_initializer(table)` → `constant(value = <the table from
//! inputs.embedding_tables>)`, and `max_values` = the width of the key's
//! golden input), the layer's output is logged from the step and compared
//! with TF's.
//!
//! Inputs: the runtime's transforms (raw cells → ids, weights, dense values)
//! are tested on their own; here the step is fed what TF's columns give:
//! dense values from `inputs.dense_features` (with the column's normalizer),
//! ids from the golden `categorical_columns` case of the same column (its
//! SparseTensor laid out as `[B, max_values]` slots, weight 1 per present
//! id, the golden weights of a weighted column; padding slots hold the
//! padding id -1 with weight 0, as the runtime's transforms give), and a
//! bucketized column's ids from its boundaries. Everything comes from the
//! file: a draw with other values, shapes or names passes unchanged.
//!
//! Tolerance: 1e-6 relative with a floor of 1e-6 of the output's largest
//! magnitude (the combiners divide in float32 as TF does, the sums run over
//! the same few slots; an embedding sum of mixed signs can cancel).

use crate::common;

use common::{array, assert_all_close, golden, ints, literal, num, scale, tf_call, Tol};
use specc_compiler::driver::{compile, Functions};
use specc_compiler::model::InputInfo;
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::feature_column::{CategoricalColumn, FeatureInput, PADDING_ID};

const REL: f64 = 1e-6;
const FLOOR: f64 = 1e-6;

/// The Python call of a case's text, without the remark the file may add
/// after it (`  (row 2 has id 1 twice ..)`, ` ids`): the text
/// `common::tf_call` parses as one call.
fn strip_note(s: &str) -> &str {
    let (_, remark) = tf_call::parse(s);
    s[..s.len() - remark.len()].trim_end()
}

/// The index of the `)` closing the `(` at `open`.
fn closing(s: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced brackets in {s}")
}

/// The raw key (first argument) of the call starting at `open` (`(`).
fn first_key(s: &str, open: usize) -> String {
    let rest = &s[open + 1..];
    let rest = rest.trim_start();
    let q = rest.chars().next().expect("a key");
    assert!(q == '\'' || q == '"', "a quoted key in {s}");
    let end = rest[1..].find(q).expect("a closing quote");
    rest[1..1 + end].to_string()
}

/// A case's Python columns as spec text (see the module doc).
fn spec_columns(python: &str, fc: &serde_json::Value) -> String {
    let mut s = strip_note(python).trim().to_string();
    // `input_layer(features, [a, b])`: the columns are the list's items.
    if let Some(rest) = s.strip_prefix("input_layer(features, [") {
        s = rest
            .strip_suffix("])")
            .expect("input_layer(features, [..])")
            .to_string();
    }
    // tf.constant_initializer(table_x) → constant(value = table)
    let tables = &fc["inputs"]["embedding_tables"];
    while let Some(i) = s.find("tf.constant_initializer(") {
        let open = i + "tf.constant_initializer".len();
        let close = closing(&s, open);
        let name = s[open + 1..close].trim().to_string();
        let table = &tables[&name];
        assert!(!table.is_null(), "no embedding table {name}");
        s = format!(
            "{}constant(value = {}){}",
            &s[..i],
            literal(table),
            &s[close + 1..]
        );
    }
    // max_values: the width of the key's golden input.
    for base in [
        "categorical_column_with_hash_bucket",
        "categorical_column_with_identity",
        "categorical_column_with_vocabulary_list",
    ] {
        let mut from = 0;
        while let Some(i) = s[from..].find(base) {
            let open = from + i + base.len();
            let close = closing(&s, open);
            let key = first_key(&s, open);
            let width = input_width(fc, &key);
            s = format!("{}, max_values={width}{}", &s[..close], &s[close..]);
            from = close;
        }
    }
    s.replace('\'', "\"")
        .replace("tf.int64", "int64")
        .replace("lambda x:", "")
}

/// Values per example of a raw feature of `inputs.dense_features`.
fn input_width(fc: &serde_json::Value, key: &str) -> usize {
    let v = &fc["inputs"]["dense_features"][key];
    assert!(!v.is_null(), "no golden input {key}");
    let rows = v.as_array().expect("a list of examples");
    rows.first()
        .and_then(|r| r.as_array())
        .map_or(1, |r| r.len())
}

/// The spec of an input layer of `columns` over batches of `batch` rows.
fn spec(columns: &str, batch: usize) -> String {
    format!(
        "model feature_column_case\n\
         data synthetic(rows = {batch}, features = 1)\n\
         features {{\n  out = input_layer({columns})\n}}\n\
         params {{ probe: [1] = zeros }}\n\
         loss = reduce_sum(out) + reduce_sum(probe)\n\
         optimizer gradient_descent(learning_rate = 0.1)\n\
         train {{ batch = {batch}, steps = 1 }}\n\
         logging {{ tensors = [out] }}\n"
    )
}

/// A golden SparseTensor `{indices, values, dense_shape}` laid out as
/// `rows × width` slots (values in row-major order of their indices).
fn slots(sp: &serde_json::Value, width: usize, fill: f64) -> Vec<f64> {
    let shape = ints(&sp["dense_shape"]);
    assert!(
        shape[1] as usize <= width,
        "the SparseTensor has {} columns, the input {width}",
        shape[1]
    );
    let rows = shape[0] as usize;
    let mut out = vec![fill; rows * width];
    let values: Vec<f64> = sp["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(num)
        .collect();
    for (k, ix) in sp["indices"]
        .as_array()
        .expect("indices")
        .iter()
        .enumerate()
    {
        let ix = ints(ix);
        out[ix[0] as usize * width + ix[1] as usize] = values[k];
    }
    out
}

/// The golden `categorical_columns` case of a column: the longest case text
/// contained in the layer's Python text, weighted or not as the column is.
fn categorical_case<'a>(
    fc: &'a serde_json::Value,
    python: &str,
    column: &CategoricalColumn,
) -> &'a serde_json::Value {
    let squeeze = |s: &str| s.replace(' ', "");
    let text = squeeze(python);
    let weighted = matches!(column, CategoricalColumn::Weighted { .. });
    fc["categorical_columns"]
        .as_array()
        .expect("categorical_columns")
        .iter()
        .filter(|c| {
            let t = squeeze(strip_note(c["column"].as_str().unwrap_or_default()));
            text.contains(&t) && c.get("weights").is_some() == weighted
        })
        .max_by_key(|c| strip_note(c["column"].as_str().unwrap_or_default()).len())
        .unwrap_or_else(|| {
            panic!(
                "no categorical_columns case for `{}` in {python}",
                column.name()
            )
        })
}

/// TF's bucketize: the bucket of `v` is the number of boundaries `<= v`.
fn bucket(v: f64, boundaries: &[f64]) -> usize {
    boundaries.iter().filter(|&&b| b <= v).count()
}

/// The values of one model input for a case.
fn input_values(
    fc: &serde_json::Value,
    python: &str,
    ids_case: Option<&serde_json::Value>,
    info: &InputInfo,
) -> (usize, Values) {
    let f32s = |v: Vec<f64>| Values::F32(v.into_iter().map(|x| x as f32).collect());
    match info.spec.feature.as_ref().expect("a feature column input") {
        FeatureInput::Dense(n) => {
            let (_, raw) = array(&fc["inputs"]["dense_features"][&n.key]);
            let v = raw
                .iter()
                .map(|&x| n.normalizer.as_ref().map_or(x, |e| e.eval(x)))
                .collect();
            (n.shape, f32s(v))
        }
        FeatureInput::Ids {
            column, max_values, ..
        }
        | FeatureInput::Weights {
            column, max_values, ..
        } => {
            let ids_only = matches!(info.spec.feature, Some(FeatureInput::Ids { .. }));
            if let CategoricalColumn::Bucketized { source, boundaries } = column {
                let (_, raw) = array(&fc["inputs"]["dense_features"][&source.key]);
                assert_eq!(raw.len() % source.shape, 0);
                if !ids_only {
                    return (*max_values, f32s(vec![1.0; raw.len()]));
                }
                let n = boundaries.len() + 1;
                let ids = raw
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| ((i % source.shape) * n + bucket(v, boundaries)) as i32)
                    .collect();
                return (*max_values, Values::I32(ids));
            }
            let case = ids_case.unwrap_or_else(|| categorical_case(fc, python, column));
            if ids_only {
                let ids = slots(&case["ids"], *max_values, f64::from(PADDING_ID));
                (
                    *max_values,
                    Values::I32(ids.iter().map(|&x| x as i32).collect()),
                )
            } else if let Some(w) = case.get("weights") {
                (*max_values, f32s(slots(w, *max_values, 0.0)))
            } else {
                // Weight 1 where TF's SparseTensor has an id that names a
                // row (TF's consumers ignore a negative id).
                let present = slots(&case["ids"], *max_values, f64::NAN);
                let w = present
                    .iter()
                    .map(|&x| if x >= 0.0 { 1.0 } else { 0.0 })
                    .collect();
                (*max_values, f32s(w))
            }
        }
        FeatureInput::LabelVocabulary { .. }
        | FeatureInput::SequenceDense { .. }
        | FeatureInput::SequenceLength { .. } => panic!("no labels or sequences here"),
    }
}

/// Compiles `python`'s columns into an input_layer, feeds the inputs and
/// compares the layer's output with `want`.
fn check_layer(
    what: &str,
    python: &str,
    ids_case: Option<&serde_json::Value>,
    want: &serde_json::Value,
) {
    let fc = golden("feature_columns.json");
    // The batch: TF's rows (the inputs must have as many, `Dataset` checks).
    let (want_dims, want) = array(want);
    let rows = want_dims[0];
    let text = spec(&spec_columns(python, &fc), rows);
    let src = SourceFile::new("case.spec", text.clone());
    let model = specc_compiler::check(&src).unwrap_or_else(|d| {
        panic!(
            "{what}: {:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    });
    let program = compile(&src, Functions::TRAIN).expect("compiles");
    let inputs = model
        .inputs
        .iter()
        .map(|info| {
            let (width, values) = input_values(&fc, python, ids_case, info);
            InputData::new(info.spec.name.clone(), width, values)
        })
        .collect();
    let data = Dataset::from_inputs(rows, inputs).expect("a dataset");
    let mut s = program.session().unwrap();
    s.bind(&data).unwrap();
    let all: Vec<u32> = (0..rows as u32).collect();
    s.gather(&data, &all).unwrap();
    // The step that also returns the logged tensors.
    let step = s
        .function_index(specc_runtime::abi::SUMMARY_STEP)
        .expect("a summary step");
    s.call(step, rows).unwrap();
    let got = s.output(step, "out", rows).expect("the logged output");
    assert_all_close(what, got, &want, Tol::scaled(REL, FLOOR, scale(&want)));
}

/// The `input_layer` case called `name`.
fn check_case(name: &str) {
    let fc = golden("feature_columns.json");
    let case = fc["input_layer"]
        .as_array()
        .expect("input_layer cases")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no input_layer case {name}"));
    let python = case["columns"].as_str().expect("columns");
    // TF's output column order: the test's spec must give the same layout.
    let names: Vec<&str> = case["column_names_in_output_order"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "{name}: TF orders by column name");
    check_layer(name, python, None, &case["output"]);
}

macro_rules! input_layer_cases {
    ($($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod input_layer {
            $( #[test] fn $name() { super::check_case(stringify!($name)); } )*
        }
    };
}

input_layer_cases!(
    numeric,
    numeric_shape2_normalizer,
    bucketized,
    bucketized_shape2,
    indicator_vocab,
    indicator_identity_dup,
    indicator_hash,
    indicator_weighted,
    embedding_hash_mean,
    embedding_weighted_mean,
    embedding_identity_mean,
    embedding_hash_sum,
    embedding_weighted_sum,
    embedding_identity_sum,
    embedding_hash_sqrtn,
    embedding_weighted_sqrtn,
    embedding_identity_sqrtn,
    multi_column_order,
);

#[test]
fn input_layer_cases_without_a_test_of_their_own() {
    let fc = golden("feature_columns.json");
    let mut ran = 0;
    for case in fc["input_layer"].as_array().expect("input_layer cases") {
        let name = case["name"].as_str().expect("a name");
        if !NAMED.contains(&name) {
            check_case(name);
            ran += 1;
        }
    }
    eprintln!("{ran} unnamed input_layer cases");
}

/// `identity_out_of_range`: an indicator drops ids `>= num_buckets` (TF
/// 2.21's identity column passes them through, the one-hot ignores them).
#[test]
fn identity_out_of_range_indicator_column_input_layer() {
    let fc = golden("feature_columns.json");
    let case = &fc["identity_out_of_range"];
    let column = case["column"].as_str().expect("column");
    let python = format!("indicator_column({})", strip_note(column));
    check_layer(
        "identity_out_of_range",
        &python,
        Some(case),
        &case["indicator_column_input_layer"],
    );
}

/// TF's embedding lookup fails on the same ids: specc's ids input of an
/// embedding is range-checked (by the runtime, when it fills it).
#[test]
fn identity_out_of_range_embedding_ids_are_range_checked() {
    let fc = golden("feature_columns.json");
    let case = &fc["identity_out_of_range"];
    assert!(case["embedding_column_sum_input_layer"]["error"]
        .as_str()
        .is_some_and(|e| e.contains("out of range")));
    let column = strip_note(case["column"].as_str().expect("column"));
    let (tdims, _) = array(&case["embedding_table"]);
    let (idims, _) = array(&case["input_ids_dense"]);
    let text = spec(
        &spec_columns(
            &format!(
                "embedding_column({column}, dimension={}, combiner='sum')",
                tdims[1]
            ),
            &fc,
        ),
        idims[0],
    );
    let model = specc_compiler::check(&SourceFile::new("oor.spec", text)).expect("checks");
    let ids = model
        .inputs
        .iter()
        .find(|i| matches!(i.spec.feature, Some(FeatureInput::Ids { .. })))
        .expect("an ids input");
    let Some(FeatureInput::Ids {
        column,
        check_range,
        ..
    }) = &ids.spec.feature
    else {
        unreachable!()
    };
    assert!(*check_range, "an embedding's ids are range-checked");
    assert_eq!(column.num_buckets(), tdims[0] as u64);
    assert_eq!(
        ids.spec.kind,
        specc_runtime::data::InputKind::ClassId {
            num_classes: Some(tdims[0] as u32)
        }
    );
    let max_id = ints(&case["ids"]["values"]).into_iter().max().unwrap_or(0);
    assert!(max_id >= tdims[0] as i64, "the case has an id out of range");
}
