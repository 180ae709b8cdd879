//! The two ways a sparse update finds each id's first occurrence give the
//! same step, bit for bit: a marker per table row (small tables) and a hash
//! table of about twice the batch's ids (tables much larger than a batch,
//! `first_occurrence hashed=N` in the plan).
//!
//! Two models differ only in the number of buckets of one categorical
//! column: a small table (marker) and a large one (hash table). The batches
//! name only rows of the small one, with many repeated ids and padding slots
//! (fewer values than `max_values`), and both tables start with the same
//! values in those rows. After a few steps of each lazy optimizer every row
//! the small table has, and every slot row, must be the same bits in both;
//! the large table's other rows must not have moved.

use crate::common;
use specc_compiler::driver::{compile, plan_model, Functions};
use specc_compiler::model::VarKind;
use specc_compiler::plan::{Kernel, RowOp};
use specc_grammar::SourceFile;

use specc_runtime::data::Dataset;
use specc_runtime::io::example::Feature;
use specc_runtime::session::Session;

const SMALL: usize = 64;
const LARGE: usize = 200_000;
const SLOTS: usize = 3;
const BATCH: usize = 48;
const STEPS: usize = 3;
/// The ids name rows below this (so many repeat within a batch).
const NAMED: u64 = 20;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f32 {
        (lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)) as f32
    }
}

fn spec(buckets: usize, layer: &str, width: usize, optimizer: &str) -> String {
    format!(
        "model first_occurrence\n\
         data synthetic(rows = 8, features = 1)\n\
         features {{\n  ids = categorical_column_with_identity(ids, {buckets}, max_values = {SLOTS})\n\
         \x20 out = {layer}\n\
         \x20 w = input_layer(numeric_column(w, shape = {width}))\n}}\n\
         loss = reduce_sum(out * w)\n\
         optimizer {optimizer}\n\
         train {{ batch = {BATCH}, steps = {STEPS} }}\n"
    )
}

/// `STEPS * BATCH` examples: 0 to `SLOTS` ids below `NAMED` each (repeats
/// and padding slots), and random dense weights.
fn dataset(model: &specc_compiler::Model, width: usize) -> Dataset {
    let rows = STEPS * BATCH;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let ids: Vec<Feature> = (0..rows)
        .map(|_| {
            let n = (rng.next() % (SLOTS as u64 + 1)) as usize;
            Feature::Int64List((0..n).map(|_| (rng.next() % NAMED) as i64).collect())
        })
        .collect();
    let w: Vec<Feature> = (0..rows)
        .map(|_| Feature::FloatList((0..width).map(|_| rng.uniform(-1.0, 1.0)).collect()))
        .collect();
    common::example_features::dataset_from_features(model, rows, |key, r| match key {
        "ids" => &ids[r],
        "w" => &w[r],
        other => panic!("no feature {other}"),
    })
}

/// The first-occurrence kernels of the step of a spec.
fn first_occurrence_ops(text: &str) -> Vec<RowOp> {
    let planned = plan_model(&SourceFile::new("fo.spec", text), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    planned.plans[0]
        .kernels
        .iter()
        .filter_map(|k| match k {
            Kernel::Rows(r) => Some(r.op),
            _ => None,
        })
        .filter(|op| {
            matches!(
                op,
                RowOp::FirstOccurrence | RowOp::FirstOccurrenceHashed { .. }
            )
        })
        .collect()
}

/// Every variable from its own stream, element by element (slots positive,
/// so a zero-gradient update of an untouched row would still change it): the
/// rows two tables both have start equal.
fn draw_initial(model: &specc_compiler::Model, s: &mut Session) {
    for (k, info) in model.vars.iter().enumerate() {
        let name = model.var_name(k as u32).to_string();
        let slot = matches!(info.kind, VarKind::Slot { .. });
        if let Some(v) = s.var_mut(&name) {
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (k as u64 + 1));
            for x in v.iter_mut() {
                *x = if slot {
                    rng.uniform(0.1, 1.0)
                } else {
                    rng.uniform(-1.0, 1.0)
                };
            }
        }
    }
}

/// Trains `STEPS` steps of a model with `buckets` rows in its table; every
/// variable starts from values that depend only on (variable, row, column),
/// so the rows both tables have start equal. Returns the table and its
/// slots (name, values) and the per-step losses.
fn train(
    buckets: usize,
    layer: &str,
    width: usize,
    optimizer: &str,
    table: &str,
) -> (Vec<(String, Vec<f32>)>, Vec<f32>) {
    let text = spec(buckets, layer, width, optimizer);
    let program = compile(&SourceFile::new("fo.spec", text), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    let model = &program.model;
    let ds = dataset(model, width);
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
    draw_initial(model, &mut s);
    s.bind(&ds).unwrap();
    let step = s.function_index("step").unwrap();
    let mut losses = Vec::new();
    for k in 0..STEPS {
        let rows: Vec<u32> = ((k * BATCH) as u32..((k + 1) * BATCH) as u32).collect();
        s.gather(&ds, &rows).unwrap();
        s.call(step, BATCH).unwrap();
        losses.push(s.output(step, "loss", BATCH).unwrap()[0]);
    }
    let values = watched
        .into_iter()
        .map(|n| {
            let v = s.var(&n).expect("a watched variable").to_vec();
            (n, v)
        })
        .collect();
    (values, losses)
}

fn same_step_both_ways(layer: &str, width: usize, optimizer: &str, table: &str) {
    let small_ops = first_occurrence_ops(&spec(SMALL, layer, width, optimizer));
    let large_ops = first_occurrence_ops(&spec(LARGE, layer, width, optimizer));
    assert!(
        !small_ops.is_empty() && small_ops.iter().all(|op| *op == RowOp::FirstOccurrence),
        "{optimizer}: the small table uses the marker: {small_ops:?}"
    );
    assert!(
        !large_ops.is_empty()
            && large_ops
                .iter()
                .all(|op| matches!(op, RowOp::FirstOccurrenceHashed { .. })),
        "{optimizer}: the large table uses the hash table: {large_ops:?}"
    );
    let (small, small_losses) = train(SMALL, layer, width, optimizer, table);
    let (large, large_losses) = train(LARGE, layer, width, optimizer, table);
    assert_eq!(
        small_losses.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        large_losses.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        "{optimizer}: losses"
    );
    for ((name, a), (_, b)) in small.iter().zip(&large) {
        let row = a.len() / SMALL;
        assert_eq!(b.len(), row * LARGE, "{name}");
        for r in 0..SMALL {
            let (x, y) = (&a[r * row..(r + 1) * row], &b[r * row..(r + 1) * row]);
            assert!(
                x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{optimizer}: {name} row {r}: marker {x:?}, hash table {y:?}"
            );
        }
    }
    // Rows past the small table's are named by no id: unchanged from their
    // initial values in the large table (drawn again here).
    let text = spec(LARGE, layer, width, optimizer);
    let program = compile(&SourceFile::new("fo.spec", text), Functions::TRAIN).unwrap();
    let mut fresh = program.session().unwrap();
    draw_initial(&program.model, &mut fresh);
    for (name, b) in &large {
        let f = fresh.var(name).unwrap();
        let row = b.len() / LARGE;
        assert!(
            b[NAMED as usize * row..]
                .iter()
                .zip(&f[NAMED as usize * row..])
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{optimizer}: {name}: a row no id names moved"
        );
        assert!(
            b[..NAMED as usize * row]
                .iter()
                .zip(&f[..NAMED as usize * row])
                .any(|(x, y)| x.to_bits() != y.to_bits()),
            "{optimizer}: {name}: the named rows moved"
        );
    }
}

const EMBEDDING: &str = "input_layer(embedding_column(ids, dimension = 3, combiner = \"sum\"))";
const EMBEDDING_TABLE: &str = "input_layer/ids_embedding/embedding_weights";
const LINEAR: &str = "linear_model(ids, units = 2)";
const LINEAR_TABLE: &str = "linear_model/ids/weights";

#[test]
fn ftrl_linear_model_first_occurrence_hashed_equals_marker() {
    same_step_both_ways(
        LINEAR,
        2,
        "ftrl(learning_rate = 0.5, l1_regularization_strength = 0.01)",
        LINEAR_TABLE,
    );
}

#[test]
fn adagrad_embedding_first_occurrence_hashed_equals_marker() {
    same_step_both_ways(
        EMBEDDING,
        3,
        "adagrad(learning_rate = 0.1)",
        EMBEDDING_TABLE,
    );
}

#[test]
fn momentum_embedding_first_occurrence_hashed_equals_marker() {
    same_step_both_ways(
        EMBEDDING,
        3,
        "momentum(learning_rate = 0.1, momentum = 0.9)",
        EMBEDDING_TABLE,
    );
}
