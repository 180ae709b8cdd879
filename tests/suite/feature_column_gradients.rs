//! Gradients of the feature-column layers: the JIT-compiled gradient of
//! `loss = sum(layer * w)` (w a per-example input, to catch transpositions)
//! for embedding columns (each combiner, weighted, `max_norm`) and
//! `linear_model`, against central differences of the same loss in float64
//! by the reference interpreter. The batch has repeated ids, padding slots
//! and an example without ids. Then the sparse update: Adagrad on an
//! embedding column and FTRL on `linear_model` change exactly the rows the
//! batch's ids touch.

use crate::common;

use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::feature_column::{CategoricalColumn, FeatureInput, PADDING_ID};

const BATCH: usize = 5;
const SLOTS: usize = 3;
const BUCKETS: usize = 7;
/// The ids of the batch, `None` for padding (example 2 has none).
const IDS: [[Option<i32>; SLOTS]; BATCH] = [
    [Some(1), Some(1), Some(3)],
    [Some(4), None, None],
    [None, None, None],
    [Some(2), Some(5), Some(6)],
    [Some(3), None, Some(5)],
];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f32 {
        (lo + (hi - lo) * self.next()) as f32
    }
}

/// The inputs of a model: the ids above (padding id -1), weights 1 per id
/// (or random positive weights for a weighted column), random loss weights.
fn dataset(model: &specc_compiler::Model, width: usize, rng: &mut Rng) -> Dataset {
    let mut inputs = Vec::new();
    for info in &model.inputs {
        let name = info.spec.name.clone();
        let d = match info.spec.feature.as_ref().expect("feature inputs only") {
            FeatureInput::Ids { .. } => {
                let v = IDS
                    .iter()
                    .flatten()
                    .map(|i| i.unwrap_or(PADDING_ID))
                    .collect();
                InputData::new(name, SLOTS, Values::I32(v))
            }
            FeatureInput::Weights { column, .. } => {
                let weighted = matches!(column, CategoricalColumn::Weighted { .. });
                let v = IDS
                    .iter()
                    .flatten()
                    .map(|i| match (i, weighted) {
                        (None, _) => 0.0,
                        (Some(_), false) => 1.0,
                        (Some(_), true) => rng.uniform(0.25, 2.0),
                    })
                    .collect();
                InputData::new(name, SLOTS, Values::F32(v))
            }
            FeatureInput::Dense(n) => {
                let w = if n.key == "w" { width } else { n.shape };
                let v = (0..BATCH * w).map(|_| rng.uniform(-1.0, 1.0)).collect();
                InputData::new(name, w, Values::F32(v))
            }
            FeatureInput::LabelVocabulary { .. }
            | FeatureInput::SequenceDense { .. }
            | FeatureInput::SequenceLength { .. } => panic!("no labels or sequences"),
        };
        inputs.push(d);
    }
    Dataset::from_inputs(BATCH, inputs).unwrap()
}

fn spec(columns: &str, layer: &str, width: usize, optimizer: &str) -> String {
    format!(
        "model fc_grad\n\
         data synthetic(rows = 8, features = 1)\n\
         features {{\n  ids = categorical_column_with_identity(ids, {BUCKETS}, max_values = {SLOTS})\n\
         \x20 weighted = weighted_categorical_column(ids, wt)\n\
         \x20 x = numeric_column(x, shape = 2)\n\
         \x20 out = {layer}({columns})\n\
         \x20 w = input_layer(numeric_column(w, shape = {width}))\n}}\n\
         loss = reduce_sum(out * w)\n\
         optimizer {optimizer}\n\
         train {{ batch = {BATCH}, steps = 1 }}\n"
    )
}

/// The compiled gradient of every trainable variable against float64
/// central differences of the interpreter's loss.
fn check(name: &str, columns: &str, layer: &str, width: usize) {
    let text = spec(
        columns,
        layer,
        width,
        "gradient_descent(learning_rate = 0.1)",
    );
    let src = SourceFile::new(format!("{name}.spec"), text.clone());
    let program = compile(&src, Functions::ALL).unwrap_or_else(|d| {
        panic!(
            "{name}: {:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let model = &program.model;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let ds = dataset(model, width, &mut rng);
    let mut s = program.session().unwrap();
    // linear_model's variables start at zero: move them off it.
    for leaf in &model.graph.vars {
        if let Some(v) = s.var_mut(&leaf.name) {
            for x in v.iter_mut() {
                *x = rng.uniform(-1.0, 1.0);
            }
        }
    }
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..BATCH as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, BATCH).unwrap();

    let (inputs, mut vars) = common::interp_leaves(model, &ds, &s, BATCH);
    let jit = s.output(gf, "loss", BATCH).unwrap()[0] as f64;
    let reference = common::interp_loss(model, &inputs, &vars, BATCH);
    assert!(
        (jit - reference).abs() <= 1e-5 * reference.abs().max(1.0),
        "{name}: compiled loss {jit} vs reference {reference}"
    );
    let params = model.trainable_params();
    assert!(!params.is_empty(), "{name}: something to train");
    for p in params {
        let var = model.var_name(p).to_string();
        let grad = s
            .output(gf, &format!("grad/{var}"), BATCH)
            .unwrap()
            .to_vec();
        let scale = grad.iter().fold(0f64, |m, &g| m.max((g as f64).abs()));
        assert!(scale > 0.0, "{name}: the gradient of {var} is not all zero");
        for (i, &gi) in grad.iter().enumerate() {
            let fd = common::central_difference(model, &inputs, &mut vars, BATCH, p as usize, i);
            let g = gi as f64;
            assert!(
                (g - fd).abs() <= 1e-3 * g.abs().max(fd.abs()) + 1e-5 * scale,
                "{name}: d loss / d {var}[{i}]: compiled {g:e}, finite differences {fd:e}\n{text}"
            );
        }
    }
}

#[test]
fn embedding_sum_gradient() {
    check(
        "embedding_sum",
        "embedding_column(ids, dimension = 3, combiner = \"sum\")",
        "input_layer",
        3,
    );
}

#[test]
fn embedding_mean_gradient() {
    check(
        "embedding_mean",
        "embedding_column(ids, dimension = 3, combiner = \"mean\")",
        "input_layer",
        3,
    );
}

#[test]
fn embedding_sqrtn_gradient() {
    check(
        "embedding_sqrtn",
        "embedding_column(ids, dimension = 3, combiner = \"sqrtn\")",
        "input_layer",
        3,
    );
}

#[test]
fn weighted_embedding_mean_gradient() {
    check(
        "weighted_mean",
        "embedding_column(weighted, dimension = 2, combiner = \"mean\")",
        "input_layer",
        2,
    );
}

#[test]
fn weighted_embedding_sqrtn_gradient() {
    check(
        "weighted_sqrtn",
        "embedding_column(weighted, dimension = 2, combiner = \"sqrtn\")",
        "input_layer",
        2,
    );
}

#[test]
fn embedding_max_norm_gradient() {
    // Rows of 4 values in [-1, 1] (the stored initial values are redrawn
    // uniformly): norms up to 2, so a max_norm of 0.6 clips most rows and
    // leaves some.
    check(
        "embedding_max_norm",
        "embedding_column(ids, dimension = 4, combiner = \"mean\", max_norm = 0.6)",
        "input_layer",
        4,
    );
}

#[test]
fn input_layer_of_several_columns_gradient() {
    check(
        "input_layer_mixed",
        "x, indicator_column(ids), embedding_column(weighted, dimension = 2, combiner = \"sum\")",
        "input_layer",
        2 + BUCKETS + 2,
    );
}

#[test]
fn linear_model_gradient() {
    check(
        "linear_model",
        "x, ids, weighted, units = 2",
        "linear_model",
        2,
    );
}

#[test]
fn linear_model_mean_combiner_gradient() {
    check(
        "linear_model_mean",
        "ids, weighted, sparse_combiner = \"mean\"",
        "linear_model",
        1,
    );
}

/// One step of `optimizer` on `layer(columns)`: the rows of `table` the
/// batch's ids touch change, every other row stays bit for bit, and the
/// update is the sparse one (a dense Adagrad or FTRL step from these states
/// would leave untouched rows equal too, so the update's form is checked).
fn only_touched_rows_change(
    columns: &str,
    layer: &str,
    width: usize,
    optimizer: &str,
    table: &str,
) {
    let text = spec(columns, layer, width, optimizer);
    let src = SourceFile::new("sparse.spec", text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let model = &program.model;
    let mut rng = Rng(7);
    let ds = dataset(model, width, &mut rng);
    let mut s = program.session().unwrap();
    let before = s
        .var(table)
        .unwrap_or_else(|| panic!("no variable {table}"))
        .to_vec();
    let row = before.len() / BUCKETS;
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..BATCH as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let step = s.function_index("step").unwrap();
    s.call(step, BATCH).unwrap();
    let after = s.var(table).unwrap();
    let touched: Vec<usize> = IDS
        .iter()
        .flatten()
        .flatten()
        .map(|&i| i as usize)
        .collect();
    for r in 0..BUCKETS {
        let (b, a) = (
            &before[r * row..(r + 1) * row],
            &after[r * row..(r + 1) * row],
        );
        if touched.contains(&r) {
            assert!(b != a, "{table}: row {r} is in the batch and should move");
        } else {
            assert!(
                b.iter().zip(a).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{table}: row {r} is not in the batch but changed: {b:?} -> {a:?}"
            );
        }
    }
    // The update is the lazy sparse one (the table's gradient stayed an
    // IndexedSlices): rows scattered back at the batch's ids.
    let v = model
        .graph
        .vars
        .iter()
        .position(|l| l.name == table)
        .expect("the table") as u32;
    let step = model.functions.step.as_ref().expect("a step");
    let (_, update) = step
        .updates
        .iter()
        .find(|(var, _)| *var == v)
        .expect("the table is updated");
    assert_eq!(
        model.graph.op(*update),
        &specc_compiler::ir::Op::ScatterRows,
        "{table}: a sparse update"
    );
}

#[test]
fn adagrad_updates_only_the_embedding_rows_of_the_batch() {
    only_touched_rows_change(
        "embedding_column(ids, dimension = 3, combiner = \"mean\")",
        "input_layer",
        3,
        "adagrad(learning_rate = 0.5)",
        "input_layer/ids_embedding/embedding_weights",
    );
}

#[test]
fn ftrl_updates_only_the_linear_model_rows_of_the_batch() {
    only_touched_rows_change(
        "ids",
        "linear_model",
        1,
        "ftrl(learning_rate = 0.5)",
        "linear_model/ids/weights",
    );
}
