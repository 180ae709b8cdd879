//! TF's sequence feature columns (`sequence_numeric_column`,
//! `sequence_categorical_column_with_*`, `embedding_column` /
//! `indicator_column` over them) and `sequence_input_layer` (TF's
//! `SequenceFeatures`) compiled through a spec.
//!
//! There is no golden file for sequences (`tests/golden` has none): the
//! expectations are computed here from TF's documented semantics
//! (feature_column_v2 `SequenceCategoricalColumn`, `SequenceNumericColumn`,
//! `sequence_feature_column.py`): one embedding row or one-hot per step, no
//! combining across steps; a numeric column's steps of `shape` values,
//! normalized, padded with `default_value`; the columns concatenated along
//! the last axis sorted by name; the length per example the number of steps
//! (`sequence_length_from_sparse_tensor`), the columns' lengths equal.
//!
//! The inputs are computed by the runtime's transforms
//! (`feature_column::transform::transform_for`) from `tf.train.Example`
//! features (or CSV cells split by `sep`, or `tf.train.SequenceExample`
//! feature lists), so the transforms and the lowering are tested together.

use crate::common;

use std::collections::HashMap;

use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::SourceFile;
use specc_runtime::data::columns::{Cell, CellRows, ValuesMut};
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::feature_column::transform::transform_for;
use specc_runtime::io::example::Feature;

type Row = HashMap<&'static str, Feature>;

fn bytes(v: &[&str]) -> Feature {
    Feature::BytesList(v.iter().map(|s| s.as_bytes().to_vec()).collect())
}

fn program(features: &str, loss: &str, logged: &str) -> Program {
    let text = format!(
        "model sequences\n\
         data synthetic(rows = 4, features = 1)\n\
         features {{\n{features}}}\n\
         params {{ probe: [1] = zeros }}\n\
         loss = {loss} + reduce_sum(probe)\n\
         optimizer gradient_descent(learning_rate = 0.1)\n\
         train {{ batch = 4, steps = 1 }}\n\
         logging {{ tensors = [{logged}] }}\n"
    );
    let src = SourceFile::new("sequences.spec", text.clone());
    compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{:?}\n{text}",
            d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        )
    })
}

/// Every input of the model, computed by the runtime's transforms from the
/// rows' Example features.
fn dataset(program: &Program, rows: &[Row]) -> Result<Dataset, String> {
    cells_dataset(program, rows.len(), &|r, k| Cell::Feature(rows[r].get(k)))
}

/// Every input of the model, computed by the runtime's transforms from the
/// cells `cell(row, key)` of `n` rows.
fn cells_dataset<'a>(
    program: &Program,
    n: usize,
    cell: &dyn Fn(usize, &str) -> Cell<'a>,
) -> Result<Dataset, String> {
    let mut inputs = Vec::new();
    for info in &program.model.inputs {
        let feature = info.spec.feature.as_ref().expect("feature inputs only");
        let mut t = transform_for(feature, &info.spec.columns);
        let keys: Vec<String> = t.columns().to_vec();
        let cells: Vec<Cell<'_>> = (0..n)
            .flat_map(|r| keys.iter().map(move |k| cell(r, k.as_str())))
            .collect();
        let cr = CellRows::cells(&cells, keys.len());
        let width = t.width();
        let values = match t.elem() {
            specc_runtime::abi::ElemType::I32 => {
                let mut v = vec![0i32; n * width];
                t.transform(&cr, ValuesMut::I32(&mut v))
                    .map_err(|e| format!("row {} column {}: {}", e.row, e.column, e.message))?;
                Values::I32(v)
            }
            _ => {
                let mut v = vec![0f32; n * width];
                t.transform(&cr, ValuesMut::F32(&mut v))
                    .map_err(|e| format!("row {} column {}: {}", e.row, e.column, e.message))?;
                Values::F32(v)
            }
        };
        inputs.push(InputData::new(info.spec.name.clone(), width, values));
    }
    Dataset::from_inputs(n, inputs).map_err(|e| e.to_string())
}

/// Runs the summary step on `rows` and returns the logged tensors.
fn run(program: &Program, rows: &[Row], logged: &[&str]) -> Vec<Vec<f32>> {
    let data = dataset(program, rows).expect("the transforms accept the rows");
    run_data(program, &data, rows.len(), logged)
}

/// Runs the summary step on the `n` rows of `data`.
fn run_data(program: &Program, data: &Dataset, n: usize, logged: &[&str]) -> Vec<Vec<f32>> {
    let mut s = program.session().unwrap();
    s.bind(data).unwrap();
    let all: Vec<u32> = (0..n as u32).collect();
    s.gather(data, &all).unwrap();
    let step = s
        .function_index(specc_runtime::abi::SUMMARY_STEP)
        .expect("a summary step");
    s.call(step, n).unwrap();
    logged
        .iter()
        .map(|name| s.output(step, name, n).expect(name).to_vec())
        .collect()
}

/// An int32 output (the step's outputs are read as f32 bits).
fn int32(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| x.to_bits() as i32 as f64).collect()
}

fn assert_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    let scale = want.iter().fold(1e-30f64, |m, x| m.max(x.abs()));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-6 * scale,
            "{what}[{i}]: {g} vs {w}\n{got:?}\n{want:?}"
        );
    }
}

/// The embedding table (4 words: "a", "b", "c" and one OOV bucket; 2
/// dimensions) as a spec literal and as numbers.
const TABLE: [[f64; 2]; 4] = [[0.5, -1.0], [2.0, 0.25], [-3.0, 1.5], [0.75, 4.0]];
const VOCAB: [&str; 3] = ["a", "b", "c"];
const T: usize = 3;

fn table_literal() -> String {
    let rows: Vec<String> = TABLE
        .iter()
        .map(|r| format!("[{}, {}]", r[0], r[1]))
        .collect();
    format!("[{}]", rows.join(", "))
}

fn rows() -> Vec<Row> {
    vec![
        Row::from([
            ("words", bytes(&["b", "zzz"])),
            ("temp", Feature::FloatList(vec![1.0, 2.0, 3.0, 4.0])),
        ]),
        Row::from([
            ("words", bytes(&["a", "a", "c"])),
            (
                "temp",
                Feature::FloatList(vec![0.5, 0.5, 1.0, 1.0, 2.0, 2.0]),
            ),
        ]),
        Row::new(),
    ]
}

/// The id of a word (TF: its position, else `3 + Fingerprint64 % 1`).
fn word_id(w: &str) -> usize {
    VOCAB.iter().position(|v| *v == w).unwrap_or(VOCAB.len())
}

fn words_of(r: &Row) -> Vec<String> {
    match r.get("words") {
        Some(Feature::BytesList(v)) => v
            .iter()
            .map(|b| String::from_utf8(b.clone()).unwrap())
            .collect(),
        _ => Vec::new(),
    }
}

fn temps_of(r: &Row) -> Vec<f64> {
    match r.get("temp") {
        Some(Feature::FloatList(v)) => v.iter().map(|&x| x as f64).collect(),
        _ => Vec::new(),
    }
}

const FEATURES: &str = "  words = sequence_categorical_column_with_vocabulary_list(words, [\"a\", \"b\", \"c\"], num_oov_buckets = 1, max_values = 3)\n  \
     temp = sequence_numeric_column(temp, shape = 2, default_value = -1, normalizer_fn = x * 2, max_values = 3)\n";

/// TF's `SequenceFeatures` output of the rows: per step, sorted by column
/// name: `temp` (2 values), `words_embedding` (2), `words_indicator` (4).
fn expected_layer(rows: &[Row]) -> (Vec<f64>, Vec<f64>) {
    let mut out = Vec::new();
    let mut lengths = Vec::new();
    for r in rows {
        let words = words_of(r);
        let temps = temps_of(r);
        assert_eq!(temps.len() / 2, words.len(), "the rows' lengths agree");
        lengths.push(words.len() as f64);
        for t in 0..T {
            // temp: normalized values, then default_value -1 past the length.
            for j in 0..2 {
                out.push(temps.get(2 * t + j).map_or(-1.0, |x| x * 2.0));
            }
            let id = words.get(t).map(|w| word_id(w));
            // words_embedding: the row of the step's id (zeros past the end).
            out.extend(id.map_or([0.0; 2], |i| TABLE[i]));
            // words_indicator: the step's one-hot.
            for k in 0..TABLE.len() {
                out.push(if id == Some(k) { 1.0 } else { 0.0 });
            }
        }
    }
    (out, lengths)
}

#[test]
fn sequence_input_layer_concatenates_steps_by_column_name() {
    let features = format!(
        "{FEATURES}  seq = sequence_input_layer(indicator_column(words), temp, \
         embedding_column(words, dimension = 2, initializer = constant(value = {})))\n  \
         seq_len = sequence_length(seq)\n",
        table_literal()
    );
    let p = program(&features, "reduce_sum(seq)", "seq, seq_len");
    let rows = rows();
    let got = run(&p, &rows, &["seq", "seq_len"]);
    let (want, lengths) = expected_layer(&rows);
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), lengths);
    // The table is TF1 contrib's: sequence_input_layer/<name>_embedding/..
    assert!(p
        .model
        .graph
        .vars
        .iter()
        .any(|v| v.name == "sequence_input_layer/words_embedding/embedding_weights"));
}

/// CSV cells whose words `sep = whitespace` splits (runs of spaces and
/// tabs, leading and trailing ones) give the steps the Example lists of
/// `rows()` give.
#[test]
fn csv_cells_split_by_sep_give_the_steps_of_example_lists() {
    let features = format!(
        "{}  seq = sequence_input_layer(indicator_column(words), temp, \
         embedding_column(words, dimension = 2, initializer = constant(value = {})))\n  \
         seq_len = sequence_length(seq)\n",
        FEATURES.replace(
            "max_values = 3)\n  temp",
            "max_values = 3, sep = whitespace)\n  temp"
        ),
        table_literal()
    );
    assert!(features.contains("sep = whitespace"));
    let p = program(&features, "reduce_sum(seq)", "seq, seq_len");
    let text: [[&[u8]; 2]; 3] = [
        [b"b  zzz", b"1 2 3 4"],
        [b" a a\tc ", b"0.5 0.5 1 1 2 2"],
        [b"", b""],
    ];
    let data = cells_dataset(&p, 3, &|r, k| Cell::Text(text[r][usize::from(k == "temp")]))
        .expect("the transforms accept the cells");
    let got = run_data(&p, &data, 3, &["seq", "seq_len"]);
    let (want, lengths) = expected_layer(&rows());
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), lengths);
}

/// A row's features as a `tf.train.SequenceExample`'s feature lists: one
/// word a step, two temperatures a step.
fn as_feature_lists(r: &Row) -> HashMap<&'static str, Vec<Feature>> {
    let words = words_of(r).iter().map(|w| bytes(&[w])).collect();
    let temps = temps_of(r)
        .chunks(2)
        .map(|c| Feature::FloatList(c.iter().map(|&x| x as f32).collect()))
        .collect();
    HashMap::from([("words", words), ("temp", temps)])
}

fn lists_dataset(
    p: &Program,
    lists: &[HashMap<&'static str, Vec<Feature>>],
) -> Result<Dataset, String> {
    cells_dataset(p, lists.len(), &|r, k| {
        Cell::FeatureList(lists[r].get(k).map(Vec::as_slice))
    })
}

/// SequenceExample feature lists (one step a `Feature`: TF's
/// `VarLenFeature` in `sequence_features`, a `[steps, 1]` or `[steps, 2]`
/// SparseTensor) give the steps the Example lists of `rows()` give.
#[test]
fn feature_lists_give_the_steps_of_example_lists() {
    let features = format!(
        "{FEATURES}  seq = sequence_input_layer(indicator_column(words), temp, \
         embedding_column(words, dimension = 2, initializer = constant(value = {})))\n  \
         seq_len = sequence_length(seq)\n",
        table_literal()
    );
    let p = program(&features, "reduce_sum(seq)", "seq, seq_len");
    let lists: Vec<_> = rows().iter().map(as_feature_lists).collect();
    let data = lists_dataset(&p, &lists).expect("the transforms accept the lists");
    let got = run_data(&p, &data, lists.len(), &["seq", "seq_len"]);
    let (want, lengths) = expected_layer(&rows());
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), lengths);
}

/// An empty step (or one without a kind) keeps its place: a zero embedding
/// and one-hot, the numeric column's `default_value`; the length is the
/// last step with values + 1 (TF's `sequence_length_from_sparse_tensor` of
/// the rank-3 SparseTensor, `num_elements` 1): trailing empty steps do not
/// count, one in the middle does.
#[test]
fn empty_steps_keep_their_place_and_trailing_ones_do_not_count() {
    let features = format!(
        "{FEATURES}  seq = sequence_input_layer(indicator_column(words), temp, \
         embedding_column(words, dimension = 2, initializer = constant(value = {})))\n  \
         seq_len = sequence_length(seq)\n  \
         words_seq = sequence_input_layer(indicator_column(words))\n  \
         words_len = sequence_length(words_seq)\n  \
         temp_seq = sequence_input_layer(temp)\n  \
         temp_len = sequence_length(temp_seq)\n",
        table_literal()
    );
    let p = program(
        &features,
        "reduce_sum(seq)",
        "seq, seq_len, words_len, temp_len",
    );
    let f = |v: &[f32]| Feature::FloatList(v.to_vec());
    let lists = vec![
        HashMap::from([
            ("words", vec![bytes(&["c"]), Feature::Unset, bytes(&["a"])]),
            ("temp", vec![f(&[1.0, 2.0]), f(&[]), f(&[3.0, 4.0])]),
        ]),
        HashMap::from([
            ("words", vec![bytes(&["b"]), bytes(&[]), bytes(&[])]),
            ("temp", vec![f(&[5.0, 6.0]), f(&[])]),
        ]),
    ];
    let data = lists_dataset(&p, &lists).expect("the transforms accept the lists");
    let got = run_data(&p, &data, 2, &["seq", "seq_len", "words_len", "temp_len"]);
    // Per step: temp (2, normalized x * 2, default -1), embedding (2), one-hot (4).
    let step = |temp: Option<[f64; 2]>, word: Option<usize>| {
        let mut v: Vec<f64> = temp.map_or(vec![-1.0, -1.0], |t| vec![t[0] * 2.0, t[1] * 2.0]);
        v.extend(word.map_or([0.0; 2], |i| TABLE[i]));
        v.extend((0..4).map(|k| f64::from(u8::from(word == Some(k)))));
        v
    };
    let want: Vec<f64> = [
        step(Some([1.0, 2.0]), Some(2)),
        step(None, None),
        step(Some([3.0, 4.0]), Some(0)),
        step(Some([5.0, 6.0]), Some(1)),
        step(None, None),
        step(None, None),
    ]
    .concat();
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), [3.0, 1.0]);
    assert_eq!(int32(&got[2]), [3.0, 1.0]);
    assert_eq!(int32(&got[3]), [3.0, 1.0]);
}

/// A step with several values (TF would combine them per step, which
/// specc's one-id-a-step columns do not), a numeric step of another width
/// and a step of the wrong kind are errors naming the row and the step.
#[test]
fn a_step_specc_cannot_read_is_an_error_naming_it() {
    let features =
        format!("{FEATURES}  seq = sequence_input_layer(temp, indicator_column(words))\n");
    let p = program(&features, "reduce_sum(seq)", "seq");
    let f = |v: &[f32]| Feature::FloatList(v.to_vec());
    let good = || -> HashMap<&'static str, Vec<Feature>> {
        HashMap::from([
            ("words", vec![bytes(&["a"])]),
            ("temp", vec![f(&[1.0, 2.0])]),
        ])
    };
    let mut lists = vec![good(), good()];
    lists[1].insert("words", vec![bytes(&["a"]), bytes(&["b", "c"])]);
    let e = lists_dataset(&p, &lists).unwrap_err();
    assert!(
        e.contains("row 1") && e.contains("step 1 of the feature list has 2 values"),
        "{e}"
    );
    let mut lists = vec![good(), good()];
    lists[1].insert("temp", vec![f(&[1.0, 2.0]), f(&[3.0])]);
    let e = lists_dataset(&p, &lists).unwrap_err();
    assert!(
        e.contains("row 1") && e.contains("step 1 of the feature list has 1 values"),
        "{e}"
    );
    let mut lists = vec![good(), good()];
    lists[0].insert("words", vec![Feature::Int64List(vec![1])]);
    let e = lists_dataset(&p, &lists).unwrap_err();
    assert!(
        e.contains("row 0") && e.contains("step 0 of the feature list: expected strings"),
        "{e}"
    );
    let mut lists = vec![good(), good()];
    lists[0].insert("words", vec![bytes(&["a"]); 4]);
    let e = lists_dataset(&p, &lists).unwrap_err();
    assert!(
        e.contains("`words` has 4 values, more than max_values = 3"),
        "{e}"
    );
}

#[test]
fn sequence_numeric_column_alone_gives_steps_and_length() {
    let features =
        format!("{FEATURES}  seq = sequence_input_layer(temp)\n  seq_len = sequence_length(seq)\n");
    let p = program(&features, "reduce_sum(seq)", "seq, seq_len");
    let rows = rows();
    let got = run(&p, &rows, &["seq", "seq_len"]);
    let mut want = Vec::new();
    let mut lengths = Vec::new();
    for r in &rows {
        let temps = temps_of(r);
        lengths.push((temps.len() / 2) as f64);
        for i in 0..2 * T {
            want.push(temps.get(i).map_or(-1.0, |x| x * 2.0));
        }
    }
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), lengths);
}

/// An OOV word without OOV buckets is TF's id -1: a zero row, but a step.
#[test]
fn an_unknown_word_is_a_zero_step_that_counts_in_the_length() {
    let features = format!(
        "  words = sequence_categorical_column_with_vocabulary_list(words, [\"a\", \"b\", \"c\"], max_values = 3)\n  \
         seq = sequence_input_layer(embedding_column(words, dimension = 2, initializer = constant(value = {})))\n  \
         seq_len = sequence_length(seq)\n",
        table_literal_rows(3)
    );
    let p = program(&features, "reduce_sum(seq)", "seq, seq_len");
    let rows = rows();
    let got = run(&p, &rows, &["seq", "seq_len"]);
    let mut want = Vec::new();
    for r in &rows {
        let words = words_of(r);
        for t in 0..T {
            let id = words.get(t).map(|w| word_id(w)).filter(|&i| i < 3);
            want.extend(id.map_or([0.0; 2], |i| TABLE[i]));
        }
    }
    let lengths: Vec<f64> = rows.iter().map(|r| words_of(r).len() as f64).collect();
    assert_close("seq", &got[0], &want);
    assert_eq!(int32(&got[1]), lengths);
}

fn table_literal_rows(n: usize) -> String {
    let rows: Vec<String> = TABLE[..n]
        .iter()
        .map(|r| format!("[{}, {}]", r[0], r[1]))
        .collect();
    format!("[{}]", rows.join(", "))
}

/// TF's `_assert_all_equal_and_return`: columns whose lengths differ make
/// the layer's assertion count the examples that disagree.
#[test]
fn different_lengths_fail_the_layers_assertion() {
    let features =
        format!("{FEATURES}  seq = sequence_input_layer(temp, indicator_column(words))\n");
    let p = program(&features, "reduce_sum(seq)", "seq");
    assert_eq!(p.model.assertions.len(), 1);
    let mut rows = rows();
    // Example 0: 2 words, 3 steps of temp.
    rows[0].insert("temp", Feature::FloatList(vec![1.0; 6]));
    let got = run(&p, &rows, &["assert/0"]);
    assert_eq!(got[0], [1.0]);
    let got = run(&p, &self::rows(), &["assert/0"]);
    assert_eq!(got[0], [0.0]);
}

#[test]
fn more_steps_than_max_values_is_an_error_naming_the_column() {
    let features =
        format!("{FEATURES}  seq = sequence_input_layer(temp, indicator_column(words))\n");
    let p = program(&features, "reduce_sum(seq)", "seq");
    let mut rows = rows();
    rows[1].insert("words", bytes(&["a", "b", "c", "a"]));
    let e = dataset(&p, &rows).unwrap_err();
    assert!(
        e.contains("row 1") && e.contains("`words` has 4 values, more than max_values = 3"),
        "{e}"
    );
}

/// The compiled gradient of an embedding over a sequence against central
/// differences of the interpreter's loss (float64).
#[test]
fn embedding_over_a_sequence_gradient_matches_finite_differences() {
    let features = "  words = sequence_categorical_column_with_identity(words, 7, max_values = 3)\n  \
                    seq = sequence_input_layer(embedding_column(words, dimension = 2, max_norm = 0.9))\n";
    let p = program(
        features,
        "reduce_sum(seq * seq * seq) + reduce_sum(seq)",
        "seq",
    );
    let ids = |v: &[i64]| Row::from([("words", Feature::Int64List(v.to_vec()))]);
    // Repeated ids, a short sequence and an empty one.
    let rows = vec![ids(&[1, 1, 3]), ids(&[4]), ids(&[]), ids(&[0, 2])];
    let model = &p.model;
    let ds = dataset(&p, &rows).unwrap();
    let batch = rows.len();
    let mut s = p.session().unwrap();
    s.bind(&ds).unwrap();
    let all: Vec<u32> = (0..batch as u32).collect();
    s.gather(&ds, &all).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, batch).unwrap();
    let (inputs, mut vars) = common::interp_leaves(model, &ds, &s, batch);
    let jit = s.output(gf, "loss", batch).unwrap()[0] as f64;
    let reference = common::interp_loss(model, &inputs, &vars, batch);
    assert!((jit - reference).abs() <= 1e-5 * reference.abs().max(1.0));
    let table = "sequence_input_layer/words_embedding/embedding_weights";
    let p_index = model
        .graph
        .vars
        .iter()
        .position(|v| v.name == table)
        .expect("the table");
    let grad = s
        .output(gf, &format!("grad/{table}"), batch)
        .unwrap()
        .to_vec();
    let scale = grad.iter().fold(0f64, |m, &g| m.max((g as f64).abs()));
    assert!(scale > 0.0);
    for (i, &gi) in grad.iter().enumerate() {
        let fd = common::central_difference(model, &inputs, &mut vars, batch, p_index, i);
        let g = gi as f64;
        assert!(
            (g - fd).abs() <= 1e-3 * g.abs().max(fd.abs()) + 1e-5 * scale,
            "d loss / d table[{i}]: compiled {g:e}, finite differences {fd:e}"
        );
    }
    // Rows no step looks up (5 and 6) have a zero gradient.
    let used: Vec<usize> = rows
        .iter()
        .flat_map(|r| match r.get("words") {
            Some(Feature::Int64List(v)) => v.iter().map(|&i| i as usize).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert!(grad.len() / 2 > used.iter().max().copied().unwrap_or(0) + 1);
    for (r, chunk) in grad.chunks(2).enumerate() {
        if !used.contains(&r) {
            assert!(chunk.iter().all(|&g| g == 0.0));
        }
    }
}
