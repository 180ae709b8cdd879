//! Padding slots touch no row: a categorical column's slots without an id
//! (fewer values than `max_values`, a negative id TF drops) reach the step
//! as the padding id -1 with weight 0, and the lazy sparse optimizers leave
//! every row no id names bit for bit as it was, slots included — row 0 too
//! (TF never touches a row that no id names).
//!
//! The inputs go through the runtime's own transforms (`transform_for` of
//! each model input over `tf.train.Example` features), so the padding ids
//! are the ones a real data set gives. Before the step every variable and
//! slot is redrawn (slots positive), so an update of an untouched row with
//! a zero gradient would still change it: Momentum and RMSProp decay the
//! slots, FTRL recomputes the row from its accumulators.

use crate::common;

use specc_compiler::driver::{compile, Functions};
use specc_compiler::model::VarKind;
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::feature_column::{FeatureInput, PADDING_ID};
use specc_runtime::io::example::Feature;

const BUCKETS: usize = 6;
const SLOTS: usize = 3;
/// The raw int64 values of `ids` per example: no example names id 0; short
/// lists leave padding slots, -1 (TF's missing value) is dropped, and one
/// example has no value at all.
const RAW: [&[i64]; 5] = [&[2], &[4, 4], &[], &[1, 5, 3], &[-1, 2]];

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

/// The ids the batch names (the rows a sparse update may touch).
fn touched() -> Vec<usize> {
    let mut t: Vec<usize> = RAW
        .iter()
        .flat_map(|r| r.iter())
        .filter(|&&v| v >= 0)
        .map(|&v| v as usize)
        .collect();
    t.sort_unstable();
    t.dedup();
    t
}

fn spec(layer: &str, width: usize, optimizer: &str) -> String {
    format!(
        "model fc_padding\n\
         data synthetic(rows = 8, features = 1)\n\
         features {{\n  ids = categorical_column_with_identity(ids, {BUCKETS}, max_values = {SLOTS})\n\
         \x20 out = {layer}\n\
         \x20 w = input_layer(numeric_column(w, shape = {width}))\n}}\n\
         loss = reduce_sum(out * w)\n\
         optimizer {optimizer}\n\
         train {{ batch = {}, steps = 1 }}\n",
        RAW.len()
    )
}

/// Every model input through the runtime's transform, from Example
/// features: `ids` as the int64 lists above, `w` as random floats.
fn dataset(model: &specc_compiler::Model, width: usize, rng: &mut Rng) -> Dataset {
    let ids: Vec<Feature> = RAW.iter().map(|r| Feature::Int64List(r.to_vec())).collect();
    let w: Vec<Feature> = RAW
        .iter()
        .map(|_| Feature::FloatList((0..width).map(|_| rng.uniform(0.5, 1.5)).collect()))
        .collect();
    let ds =
        common::example_features::dataset_from_features(model, RAW.len(), |key, r| match key {
            "ids" => &ids[r],
            "w" => &w[r],
            other => panic!("no feature {other}"),
        });
    let mut saw_padding = false;
    for (info, data) in model.inputs.iter().zip(&ds.inputs) {
        if let (Some(FeatureInput::Ids { .. }), Values::I32(v)) = (&info.spec.feature, &data.values)
        {
            saw_padding |= v.contains(&PADDING_ID);
            assert!(
                !v.contains(&0),
                "{}: the batch must not name id 0: {v:?}",
                info.spec.name
            );
        }
    }
    assert!(saw_padding, "the ids input has padding slots");
    ds
}

/// One step of `optimizer` on `layer` over `ids`: in `table` and each of its
/// slots, the rows the batch names move and every other row (row 0 among
/// them) stays bit for bit.
fn padding_touches_nothing(layer: &str, width: usize, optimizer: &str, table: &str) {
    let text = spec(layer, width, optimizer);
    let src = SourceFile::new("padding.spec", text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let model = &program.model;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let ds = dataset(model, width, &mut rng);
    let mut s = program.session().unwrap();
    let p = model
        .graph
        .vars
        .iter()
        .position(|l| l.name == table)
        .unwrap_or_else(|| panic!("no variable {table}")) as u32;
    let mut watched = vec![table.to_string()];
    for (k, info) in model.vars.iter().enumerate() {
        if matches!(info.kind, VarKind::Slot { param, .. } if param == p) {
            watched.push(model.var_name(k as u32).to_string());
        }
    }
    assert!(watched.len() > 1, "{optimizer}: {table} has slots");
    // Off the initial values: a zero-gradient update of an untouched row
    // would change it (slots positive: accumulators and mean squares).
    for (k, info) in model.vars.iter().enumerate() {
        let name = model.var_name(k as u32).to_string();
        let slot = matches!(info.kind, VarKind::Slot { .. });
        if let Some(v) = s.var_mut(&name) {
            for x in v.iter_mut() {
                *x = if slot {
                    rng.uniform(0.1, 1.0)
                } else {
                    rng.uniform(-1.0, 1.0)
                };
            }
        }
    }
    let before: Vec<Vec<f32>> = watched
        .iter()
        .map(|n| s.var(n).expect("a watched variable").to_vec())
        .collect();
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..RAW.len() as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let step = s.function_index("step").unwrap();
    s.call(step, RAW.len()).unwrap();
    let touched = touched();
    assert!(!touched.contains(&0), "the batch names row 0");
    for (name, b) in watched.iter().zip(&before) {
        let a = s.var(name).unwrap();
        let row = b.len() / BUCKETS;
        for r in 0..BUCKETS {
            let (b, a) = (&b[r * row..(r + 1) * row], &a[r * row..(r + 1) * row]);
            if touched.contains(&r) {
                assert!(
                    b.iter().zip(a).any(|(x, y)| x.to_bits() != y.to_bits()),
                    "{optimizer}: {name} row {r} is in the batch and should move"
                );
            } else {
                assert!(
                    b.iter().zip(a).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{optimizer}: {name} row {r} is named by no id but changed: {b:?} -> {a:?}"
                );
            }
        }
    }
}

const EMBEDDING: &str = "input_layer(embedding_column(ids, dimension = 3, combiner = \"sum\"))";
const EMBEDDING_TABLE: &str = "input_layer/ids_embedding/embedding_weights";
const LINEAR: &str = "linear_model(ids, units = 2)";
const LINEAR_TABLE: &str = "linear_model/ids/weights";

#[test]
fn momentum_embedding_padding_touches_no_row() {
    padding_touches_nothing(
        EMBEDDING,
        3,
        "momentum(learning_rate = 0.1, momentum = 0.9)",
        EMBEDDING_TABLE,
    );
}

#[test]
fn momentum_linear_model_padding_touches_no_row() {
    padding_touches_nothing(
        LINEAR,
        2,
        "momentum(learning_rate = 0.1, momentum = 0.9)",
        LINEAR_TABLE,
    );
}

#[test]
fn rmsprop_embedding_padding_touches_no_row() {
    padding_touches_nothing(
        EMBEDDING,
        3,
        "rmsprop(learning_rate = 0.1, momentum = 0.5)",
        EMBEDDING_TABLE,
    );
}

#[test]
fn rmsprop_linear_model_padding_touches_no_row() {
    padding_touches_nothing(
        LINEAR,
        2,
        "rmsprop(learning_rate = 0.1, momentum = 0.5)",
        LINEAR_TABLE,
    );
}

#[test]
fn adadelta_embedding_padding_touches_no_row() {
    padding_touches_nothing(
        EMBEDDING,
        3,
        "adadelta(learning_rate = 1.0)",
        EMBEDDING_TABLE,
    );
}

#[test]
fn ftrl_embedding_padding_touches_no_row() {
    padding_touches_nothing(
        EMBEDDING,
        3,
        "ftrl(learning_rate = 0.5, l1_regularization_strength = 0.01)",
        EMBEDDING_TABLE,
    );
}

#[test]
fn ftrl_linear_model_padding_touches_no_row() {
    padding_touches_nothing(
        LINEAR,
        2,
        "ftrl(learning_rate = 0.5, l1_regularization_strength = 0.01)",
        LINEAR_TABLE,
    );
}

/// A padding slot reads zeros, not a table row times weight 0: with row 0
/// (which no id names) infinite, the compiled loss and the gradient of the
/// table stay finite, and the gradient's row 0 is zero.
#[test]
fn padding_reads_zeros_not_row_0() {
    let text = spec(
        EMBEDDING,
        3,
        "momentum(learning_rate = 0.1, momentum = 0.9)",
    );
    let src = SourceFile::new("padding.spec", text);
    let program = compile(&src, Functions::ALL).expect("compiles");
    let model = &program.model;
    let mut rng = Rng(5);
    let ds = dataset(model, 3, &mut rng);
    let mut s = program.session().unwrap();
    let table = s.var_mut(EMBEDDING_TABLE).expect("the table");
    let row = table.len() / BUCKETS;
    table[..row].fill(f32::INFINITY);
    s.bind(&ds).unwrap();
    let rows: Vec<u32> = (0..RAW.len() as u32).collect();
    s.gather(&ds, &rows).unwrap();
    let gf = s.function_index("grad").unwrap();
    s.call(gf, RAW.len()).unwrap();
    let loss = s.output(gf, "loss", RAW.len()).unwrap()[0];
    assert!(loss.is_finite(), "loss {loss}");
    let grad = s
        .output(gf, &format!("grad/{EMBEDDING_TABLE}"), RAW.len())
        .unwrap();
    assert!(grad.iter().all(|g| g.is_finite()), "{grad:?}");
    assert!(grad[..row].iter().all(|&g| g == 0.0), "{grad:?}");
    assert!(grad.iter().any(|&g| g != 0.0), "{grad:?}");
}

/// The ids of a feature column may hold the padding id, and only it: the
/// binding refuses any other negative id, and -1 in a plain id input.
#[test]
fn only_feature_column_ids_may_hold_the_padding_id() {
    let text = spec(
        EMBEDDING,
        3,
        "momentum(learning_rate = 0.1, momentum = 0.9)",
    );
    let src = SourceFile::new("padding.spec", text);
    let program = compile(&src, Functions::TRAIN).expect("compiles");
    let model = &program.model;
    let mut rng = Rng(3);
    let ds = dataset(model, 3, &mut rng);
    let mut s = program.session().unwrap();
    s.bind(&ds).expect("-1 in a feature column's ids");
    let ids = model
        .inputs
        .iter()
        .find(|i| matches!(i.spec.feature, Some(FeatureInput::Ids { .. })))
        .expect("an ids input");
    let name = ids.spec.name.clone();
    let with_ids = |v: Vec<i32>| {
        let inputs = ds
            .inputs
            .iter()
            .map(|d| {
                if d.name == name {
                    InputData::new(d.name.clone(), d.width, Values::I32(v.clone()))
                } else {
                    d.clone()
                }
            })
            .collect();
        Dataset::from_inputs(RAW.len(), inputs)
    };
    let n = RAW.len() * SLOTS;
    let mut v = vec![1; n];
    v[SLOTS + 1] = PADDING_ID - 1;
    let e = with_ids(v).expect_err("an id below -1");
    assert!(e.contains(&name) && e.contains("row 2"), "{e}");
}

/// The ids and weights of the weighted-column tests: id 5 comes only with
/// weights `<= 0` (0 and -0.5), id 1 once with 0 and once with 2.
const WEIGHTED_IDS: [&[i64]; 4] = [&[2, 5], &[1, 4], &[5, 3], &[1]];
const WEIGHTS: [&[f32]; 4] = [&[1.5, 0.0], &[0.0, 0.5], &[-0.5, 1.0], &[2.0]];

/// One momentum step on an embedding of a weighted column with `combiner`:
/// which rows of the table and its slot moved.
fn weighted_step_moves(combiner: &str) -> Vec<usize> {
    let text = format!(
        "model weighted_padding\n\
         data synthetic(rows = 8, features = 1)\n\
         features {{\n  ids = categorical_column_with_identity(ids, {BUCKETS}, max_values = 2)\n\
         \x20 weighted = weighted_categorical_column(ids, wt)\n\
         \x20 out = input_layer(embedding_column(weighted, dimension = 3, combiner = \"{combiner}\"))\n\
         \x20 w = input_layer(numeric_column(w, shape = 3))\n}}\n\
         loss = reduce_sum(out * w)\n\
         optimizer momentum(learning_rate = 0.1, momentum = 0.9)\n\
         train {{ batch = {}, steps = 1 }}\n",
        WEIGHTED_IDS.len()
    );
    let src = SourceFile::new("weighted.spec", text.clone());
    let program = compile(&src, Functions::TRAIN).unwrap_or_else(|d| {
        panic!(
            "{:?}\n{text}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        )
    });
    let model = &program.model;
    let mut rng = Rng(11);
    let ids: Vec<Feature> = WEIGHTED_IDS
        .iter()
        .map(|r| Feature::Int64List(r.to_vec()))
        .collect();
    let wt: Vec<Feature> = WEIGHTS
        .iter()
        .map(|r| Feature::FloatList(r.to_vec()))
        .collect();
    let w: Vec<Feature> = WEIGHTED_IDS
        .iter()
        .map(|_| Feature::FloatList((0..3).map(|_| rng.uniform(0.5, 1.5)).collect()))
        .collect();
    let rows = WEIGHTED_IDS.len();
    let ds = common::example_features::dataset_from_features(model, rows, |key, r| match key {
        "ids" => &ids[r],
        "wt" => &wt[r],
        "w" => &w[r],
        other => panic!("no feature {other}"),
    });
    let mut s = program.session().unwrap();
    let table = "input_layer/ids_weighted_by_wt_embedding/embedding_weights";
    let slot = format!("{table}/Momentum");
    // Slots positive: a zero-gradient update would decay them.
    s.var_mut(&slot).unwrap().fill(0.25);
    let before: Vec<Vec<f32>> = [table, &slot]
        .iter()
        .map(|n| s.var(n).unwrap_or_else(|| panic!("no {n}")).to_vec())
        .collect();
    s.bind(&ds).unwrap();
    let all: Vec<u32> = (0..rows as u32).collect();
    s.gather(&ds, &all).unwrap();
    let step = s.function_index("step").unwrap();
    s.call(step, rows).unwrap();
    let mut moved = Vec::new();
    for r in 0..BUCKETS {
        let changed = [table, &slot].iter().zip(&before).any(|(n, b)| {
            let a = s.var(n).unwrap();
            (r * 3..(r + 1) * 3).any(|k| a[k].to_bits() != b[k].to_bits())
        });
        if changed {
            moved.push(r);
        }
    }
    moved
}

/// `mean` and `sqrtn` drop the ids of weights `<= 0`, as TF's
/// `safe_embedding_lookup_sparse` does: id 5 (weights 0 and -0.5 only) is
/// touched by no update; id 1 (weights 0 and 2) is.
#[test]
fn mean_and_sqrtn_touch_no_row_of_a_nonpositive_weight() {
    for combiner in ["mean", "sqrtn"] {
        let moved = weighted_step_moves(combiner);
        assert_eq!(moved, vec![1, 2, 3, 4], "{combiner}: rows that moved");
    }
}

/// `sum` keeps them: a negative weight has a gradient (row 5 moves); a zero
/// weight has a zero gradient, and its row is still touched.
#[test]
fn sum_keeps_the_ids_of_nonpositive_weights() {
    let moved = weighted_step_moves("sum");
    assert_eq!(moved, vec![1, 2, 3, 4, 5], "sum: rows that moved");
}
