//! The runtime's dense Adam update (`specc_adam`, called for the update
//! loops `plan::adam::recognise` accepts) trains to exactly the bits of
//! Cranelift's loops (`Options::runtime_adam = false`, what
//! `SPECC_RUNTIME_ADAM=never` sets): every variable (parameters, slots,
//! `beta1_power`...) and every loss after training, on one thread and on
//! two (the update loop split between them). Checked on the digits MLP
//! (its four parameters merged into one loop), the same with a learning
//! rate schedule and global-norm clipping (the gradient scaled inside the
//! loop), with moving averages too (fused into the update loop), and
//! wide_mlp at a batch worth two threads. A near miss (RMSProp: a square
//! root and a division too) stays Cranelift's loop.

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::plan::adam::recognise;
use specc_compiler::plan::{Kernel, Mode};
use specc_grammar::SourceFile;
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

fn read_spec(name: &str) -> String {
    std::fs::read_to_string(format!("{}/specs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Variables by name after training.
type Vars = Vec<(String, Vec<f32>)>;

/// What the step's plan holds: its threads, and per recognised Adam loop
/// its element count, whether it scales the gradient, whether it updates
/// moving averages, and its mode.
type Recognised = (u32, Vec<(u64, bool, bool, Mode)>);

fn train(
    text: &str,
    threads: usize,
    steps: usize,
    runtime_adam: bool,
) -> (Recognised, Vars, Vec<f32>) {
    let src = SourceFile::new("spec.spec", text.to_string());
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads,
            runtime_adam,
            ..Options::default()
        },
    )
    .unwrap();
    let step = &program.plans[0];
    let adam: Vec<(u64, bool, bool, Mode)> = step
        .kernels
        .iter()
        .zip(&step.modes)
        .filter_map(|(k, &mode)| match k {
            Kernel::Loop(l) => recognise(&program.model.graph, l)
                .map(|a| (a.count, a.scale.is_some(), a.average.is_some(), mode)),
            _ => None,
        })
        .collect();
    let model = &program.model;
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/specs"));
    let ds = data::load(&model.data_source(dir), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let cfg = model.train.config(steps as u64);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut trainer = Trainer::new(&s).unwrap();
    let losses: Vec<f32> = (0..steps)
        .map(|_| trainer.step(&mut s, &mut batches).unwrap().unwrap().loss)
        .collect();
    let vars = s
        .layout
        .vars
        .iter()
        .map(|v| (v.name.clone(), s.var(&v.name).unwrap().to_vec()))
        .collect();
    ((step.threads, adam), vars, losses)
}

/// Trains with the runtime kernel and with Cranelift's loops; asserts the
/// same bits and returns what the plan recognised.
fn same_bits(what: &str, text: &str, threads: usize, steps: usize) -> Recognised {
    let (rec, vars_rt, loss_rt) = train(text, threads, steps, true);
    let (rec_clif, vars_clif, loss_clif) = train(text, threads, steps, false);
    assert_eq!(rec, rec_clif, "{what}: the same plan either way");
    assert_eq!(
        loss_rt.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        loss_clif.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        "{what}: losses"
    );
    assert_eq!(vars_rt.len(), vars_clif.len());
    for ((n1, v1), (n2, v2)) in vars_rt.iter().zip(&vars_clif) {
        assert_eq!(n1, n2);
        let diff = v1
            .iter()
            .zip(v2)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(diff, 0, "{what}: {n1}: {diff} values differ");
    }
    assert!(loss_rt.iter().all(|l| l.is_finite()), "{what}: {loss_rt:?}");
    assert!(
        loss_rt.windows(2).any(|w| w[0] != w[1]),
        "{what}: training moved: {loss_rt:?}"
    );
    rec
}

#[test]
fn digits_mlp_merged_update_gives_the_loop_bits() {
    let text = read_spec("digits_mlp.spec");
    for threads in [1, 2] {
        let (_, adam) = same_bits("digits_mlp", &text, threads, 60);
        // W1 8192 + b1 128 + W2 1280 + b2 10, one flat loop.
        assert_eq!(adam.len(), 1, "{threads} thread(s): {adam:?}");
        assert_eq!((adam[0].0, adam[0].1, adam[0].2), (9610, false, false));
    }
}

#[test]
fn schedule_and_global_norm_clipping_give_the_loop_bits() {
    // digits_mlp_ema without the moving averages.
    let full = read_spec("digits_mlp_ema.spec");
    let line = "ema 0.99, num_updates = true\n";
    assert!(full.contains(line) && full.contains("clip global_norm"));
    let text = full.replace(line, "");
    let (_, adam) = same_bits("clipped", &text, 1, 60);
    assert_eq!(adam.len(), 1, "{adam:?}");
    assert_eq!(
        (adam[0].0, adam[0].1, adam[0].2),
        (9610, true, false),
        "the gradient is scaled"
    );
    // With the moving averages fused into the update loop.
    for threads in [1, 2] {
        let (_, adam) = same_bits("ema", &full, threads, 60);
        assert_eq!(adam.len(), 1, "{adam:?}");
        assert_eq!((adam[0].0, adam[0].1, adam[0].2), (9610, true, true));
    }
}

#[test]
fn rmsprop_stays_a_cranelift_loop() {
    let text = read_spec("digits_mlp.spec");
    let line = "optimizer adam(learning_rate = 0.001)";
    assert!(text.contains(line));
    let text = text.replace(line, "optimizer rmsprop(learning_rate = 0.001)");
    let ((_, adam), _, losses) = train(&text, 1, 5, true);
    assert!(adam.is_empty(), "{adam:?}");
    assert!(losses.iter().all(|l| l.is_finite()));
}

#[test]
fn two_threads_split_the_update_with_the_same_bits() {
    let spec = read_spec("wide_mlp.spec");
    assert!(spec.contains("rows = 8192") && spec.contains("batch = 256"));
    let text = spec.replace("rows = 8192", "rows = 1024");
    let (t1, adam1) = same_bits("wide_mlp, 1 thread", &text, 1, 6);
    let (t2, adam2) = same_bits("wide_mlp, 2 threads", &text, 2, 6);
    assert_eq!((t1, t2), (1, 2), "wide_mlp's step is worth two threads");
    assert!(!adam1.is_empty());
    assert!(
        adam2.iter().any(|a| a.3 == Mode::Split),
        "an update loop split between the threads: {adam2:?}"
    );
    // And one thread's bits are two threads' bits.
    let (_, v1, l1) = train(&text, 1, 6, true);
    let (_, v2, l2) = train(&text, 2, 6, true);
    assert_eq!(
        l1.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        l2.iter().map(|l| l.to_bits()).collect::<Vec<_>>()
    );
    for ((n, a), (_, b)) in v1.iter().zip(&v2) {
        assert!(
            a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{n} differs between one and two threads"
        );
    }
}

/// The digits MLP's step refers to `specc_sgemm` or `specc_sgemm_ep` (its
/// five GEMMs) and to
/// `specc_adam` once (the merged update), nothing else (the invariant of
/// `codegen`: generated code calls only the runtime's kernels).
#[test]
fn the_step_calls_the_runtime_update_once() {
    use specc_compiler::codegen;
    use specc_compiler::driver::plan_model_with;
    let src = SourceFile::new("digits_mlp.spec", read_spec("digits_mlp.spec"));
    let planned = plan_model_with(&src, Functions::TRAIN, &Options::default()).unwrap();
    let step = &planned.plans[0];
    let targets = codegen::relocation_targets(&planned.model.graph, step).unwrap();
    let count = |name: &str| targets.iter().filter(|t| *t == name).count();
    assert_eq!(count("specc_adam"), 1, "{targets:?}");
    // The hidden layer's product carries its bias and relu (`specc_sgemm_ep`).
    assert_eq!(
        count("specc_sgemm") + count("specc_sgemm_ep"),
        5,
        "{targets:?}"
    );
    assert_eq!(targets.len(), 6, "{targets:?}");
}
