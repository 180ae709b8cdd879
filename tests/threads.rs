//! Steps on two threads (SPMD: both threads run the compiled step, splitting
//! its kernels) compute exactly the same bits as on one thread: GEMMs are
//! split by blocks of C and loops along non-reduced dimensions only.

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_grammar::SourceFile;
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

/// wide_mlp, a little smaller, so that the step is worth two threads.
fn spec() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/specs/wide_mlp.spec"))
        .unwrap()
        .replace("rows = 8192", "rows = 1024")
}

/// Variables by name after training.
type Vars = Vec<(String, Vec<f32>)>;

fn train(threads: usize, steps: usize) -> (u32, Vars, Vec<f32>) {
    let src = SourceFile::new("wide.spec", spec());
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            threads,
            ..Options::default()
        },
    )
    .unwrap();
    let plan_threads = program.plans[0].threads;
    let model = &program.model;
    assert!(matches!(
        model.data,
        specc_compiler::model::DataSource::Synthetic(_)
    ));
    let ds = data::load(&model.data_source(".".as_ref()), &model.input_specs()).unwrap();
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
    (plan_threads, vars, losses)
}

#[test]
fn two_threads_compute_the_same_bits_as_one() {
    let (t1, vars1, loss1) = train(1, 4);
    let (t2, vars2, loss2) = train(2, 4);
    assert_eq!(t1, 1);
    assert_eq!(t2, 2, "the wide step should be planned for two threads");
    assert_eq!(
        loss1.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        loss2.iter().map(|l| l.to_bits()).collect::<Vec<_>>()
    );
    for ((n1, v1), (n2, v2)) in vars1.iter().zip(&vars2) {
        assert_eq!(n1, n2);
        let diff = v1
            .iter()
            .zip(v2)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            diff, 0,
            "{n1}: {diff} values differ between one and two threads"
        );
    }
    assert!(loss1.iter().all(|l| l.is_finite()), "{loss1:?}");
}
