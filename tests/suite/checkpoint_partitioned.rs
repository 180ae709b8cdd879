//! Partitioned variables in one process: `partitioner = ...` changes only
//! how checkpoints store a variable (TF's slices), never the values or the
//! training step; checkpoints restore across partitionings (partitioned
//! into unpartitioned and back), and bad partitioners are caret errors.

use std::path::PathBuf;

use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::{Code, SourceFile};
use specc_runtime::abi::VarRole;
use specc_runtime::checkpoint::{BundleReader, CheckpointManager};
use specc_runtime::data::{self, Dataset, Source};
use specc_runtime::session::Session;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

const W1: &str = "W1: [64, 128] = glorot_uniform(seed = 1)";
const B1: &str = "b1: [128]     = zeros";

/// digits_mlp_ema.spec (Adam's two slots, moving averages), with `W1` in
/// 3 fixed-size partitions and `b1` in min_max's 4 (512 bytes, slices of
/// at least 100: ceil(5.12) = 6, at most 4) when `partitioned`.
fn program(partitioned: bool) -> (Program, Dataset) {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut text = std::fs::read_to_string(format!("{root}/specs/digits_mlp_ema.spec")).unwrap();
    assert!(text.contains(W1) && text.contains(B1));
    if partitioned {
        text = text
            .replace(
                W1,
                &format!("{W1}, partitioner = fixed_size_partitioner(3)"),
            )
            .replace(
                B1,
                &format!(
                    "{B1}, partitioner = min_max_variable_partitioner(4, min_slice_size = 100)"
                ),
            );
    }
    let program = compile(
        &SourceFile::new("digits_mlp_ema.spec", text),
        Functions::TRAIN,
    )
    .unwrap();
    let ds = data::load(
        &Source::csv(format!("{root}/specs/data/digits.csv")),
        &program.model.input_specs(),
    )
    .unwrap();
    (program, ds)
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("checkpoint_partitioned")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn train(s: &mut Session, ds: &Dataset, steps: usize, seed: u64) {
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(ds, &s.layout, rows, 32, ds.rows, seed).unwrap();
    let mut trainer = Trainer::new(s).unwrap();
    for _ in 0..steps {
        trainer.step(s, &mut batches).unwrap();
    }
}

fn values(s: &Session) -> Vec<(String, Vec<f32>)> {
    s.layout
        .vars
        .iter()
        .filter(|v| v.kind != VarRole::Constant)
        .map(|v| (v.name.clone(), s.var(&v.name).unwrap().to_vec()))
        .collect()
}

fn save(s: &Session, name: &str) -> PathBuf {
    let mut m = CheckpointManager::new(dir(name), None, None)
        .unwrap()
        .with_partitions(s.checkpoint_partitions());
    m.save(s.global_step, &s.checkpoint_tensors()).unwrap()
}

#[test]
fn partitions_reach_the_layout_slots_and_averages_included() {
    let (p, _) = program(true);
    let s = p.session().unwrap();
    let parts = |n: &str| s.layout.var(n).unwrap().partitions.clone();
    for n in ["W1", "W1/Adam", "W1/Adam_1", "W1/ExponentialMovingAverage"] {
        assert_eq!(parts(n), [22, 21, 21], "{n}");
    }
    assert_eq!(parts("b1"), [32; 4]);
    assert_eq!(parts("b1/Adam"), [32; 4]);
    assert!(parts("W2").is_empty());
    assert!(parts("beta1_power").is_empty());
    let (u, _) = program(false);
    assert!(u.session().unwrap().checkpoint_partitions().is_empty());
}

#[test]
fn a_partitioned_spec_trains_exactly_as_the_unpartitioned_one() {
    let (p, ds) = program(true);
    let (u, _) = program(false);
    let (mut a, mut b) = (p.session().unwrap(), u.session().unwrap());
    // The same initial values (TF would draw each partition separately).
    assert_eq!(values(&a), values(&b));
    train(&mut a, &ds, 6, 7);
    train(&mut b, &ds, 6, 7);
    assert_eq!(values(&a), values(&b));
}

#[test]
fn a_partitioned_checkpoint_holds_slices_of_one_logical_variable() {
    let (p, ds) = program(true);
    let (u, _) = program(false);
    let (mut a, mut b) = (p.session().unwrap(), u.session().unwrap());
    train(&mut a, &ds, 3, 7);
    train(&mut b, &ds, 3, 7);
    let (ra, rb) = (
        BundleReader::open(save(&a, "sliced")).unwrap(),
        BundleReader::open(save(&b, "whole")).unwrap(),
    );
    // The same logical variables, full shapes, values.
    assert_eq!(ra.list_variables(), rb.list_variables());
    for (name, _, _) in ra.list_variables() {
        assert_eq!(ra.load(&name).unwrap(), rb.load(&name).unwrap(), "{name}");
    }
    let texts = |n: &str| -> Vec<String> { ra.slices(n).iter().map(|s| s.text()).collect() };
    for n in ["W1", "W1/Adam", "W1/Adam_1", "W1/ExponentialMovingAverage"] {
        assert_eq!(
            texts(n),
            ["0,22:0,128", "22,21:0,128", "43,21:0,128"],
            "{n}"
        );
        assert!(rb.slices(n).is_empty());
    }
    assert_eq!(texts("b1").len(), 4);
    assert!(texts("W2").is_empty());
}

#[test]
fn checkpoints_restore_across_partitionings_and_training_goes_on_alike() {
    let (p, ds) = program(true);
    let (u, _) = program(false);
    // Partitioned into unpartitioned.
    let mut a = p.session().unwrap();
    train(&mut a, &ds, 4, 7);
    let mut b = u.session().unwrap();
    b.restore(&BundleReader::open(save(&a, "p2u")).unwrap())
        .unwrap();
    assert_eq!(values(&a), values(&b));
    assert_eq!(a.global_step, b.global_step);
    // Unpartitioned into partitioned.
    train(&mut b, &ds, 2, 11);
    let mut c = p.session().unwrap();
    c.restore(&BundleReader::open(save(&b, "u2p")).unwrap())
        .unwrap();
    assert_eq!(values(&b), values(&c));
    train(&mut b, &ds, 3, 13);
    train(&mut c, &ds, 3, 13);
    assert_eq!(values(&b), values(&c));
}

/// Compiles `text`, which must fail with `code` first, its caret under
/// exactly `under`.
fn assert_fails(text: &str, code: Code, under: &str) {
    let src = SourceFile::new("case.spec", text.to_string());
    let Err(diags) = compile(&src, Functions::TRAIN) else {
        panic!("compiled:\n{text}");
    };
    let d = &diags[0];
    assert_eq!(d.code, code, "{}", d.message);
    assert_eq!(
        &text[d.span.start as usize..d.span.end as usize],
        under,
        "{}",
        d.message
    );
}

fn spec(param: &str) -> String {
    format!(
        "data csv(\"data.csv\")\nlabel y: int\nfeatures {{ x = numeric(x0..x3) }}\n\
         params {{ {param}\n  W: [4, 3] = zeros }}\n\
         loss = mean(sparse_softmax_cross_entropy(y, x @ W))\n\
         optimizer adagrad(learning_rate = 0.1)\ntrain {{ batch = 4, steps = 10 }}\n"
    )
}

#[test]
fn zero_shards_is_a_bad_partitioner() {
    assert_fails(
        &spec("V: [4, 3] = zeros, partitioner = fixed_size_partitioner(0)"),
        Code::BadPartitioner,
        "0",
    );
}

#[test]
fn an_unknown_partitioner_is_a_bad_partitioner() {
    assert_fails(
        &spec("V: [4, 3] = zeros, partitioner = fixed_partitioner(2)"),
        Code::BadPartitioner,
        "fixed_partitioner",
    );
}

#[test]
fn a_partitioned_scalar_is_a_bad_partitioner() {
    assert_fails(
        &spec("s: [] = zeros, partitioner = fixed_size_partitioner(2)"),
        Code::BadPartitioner,
        "fixed_size_partitioner(2)",
    );
}

#[test]
fn an_embedding_columns_partitioner_is_checked() {
    let text = "data csv(\"data.csv\")\nlabel y: int\n\
        features { c = categorical_column_with_identity(c, 10)\n  \
        e = input_layer(embedding_column(c, dimension = 2, partitioner = min_max_variable_partitioner(0))) }\n\
        params { W: [2, 3] = zeros }\n\
        loss = mean(sparse_softmax_cross_entropy(y, e @ W))\n\
        optimizer adagrad(learning_rate = 0.1)\ntrain { batch = 4, steps = 10 }\n";
    assert_fails(text, Code::BadPartitioner, "0");
}
