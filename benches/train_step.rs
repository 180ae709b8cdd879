//! Training-step throughput of the bench workloads, and of the specs that add a
//! schedule, clipping and moving averages, or a sparse embedding update: one
//! compiled step (gather a batch in the bench order, forward, backward,
//! update) per iteration.
//! `cargo bench --bench train_step`; the per-step time is what `specc bench`
//! reports as 1 / steady_steps_per_s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::SourceFile;
use specc_runtime::data::{self, Dataset};
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

fn load(name: &str) -> (Program, Dataset) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/specs/");
    let path = format!("{dir}{name}.spec");
    let text = std::fs::read_to_string(&path).unwrap();
    let program = compile(&SourceFile::new(path, text), Functions::TRAIN).unwrap();
    let model = &program.model;
    let ds = data::load(&model.data_source(dir.as_ref()), &model.input_specs()).unwrap();
    (program, ds)
}

fn bench_step(c: &mut Criterion, name: &str) {
    let (program, ds) = load(name);
    let t = &program.model.train;
    let cfg = t.config(0);
    let mut s = program.session().unwrap();
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut trainer = Trainer::new(&s).unwrap();
    let mut g = c.benchmark_group("train_step");
    g.throughput(Throughput::Elements(t.batch as u64));
    g.bench_function(name, |b| {
        b.iter(|| trainer.step(&mut s, &mut batches).unwrap())
    });
    g.finish();
}

fn digits(c: &mut Criterion) {
    bench_step(c, "digits_mlp");
}

fn cancer(c: &mut Criterion) {
    bench_step(c, "cancer_logreg");
}

/// Adam on a warmup + cosine schedule, global-norm clipping and moving averages.
fn digits_ema(c: &mut Criterion) {
    bench_step(c, "digits_mlp_ema");
}

/// A sparse gradient applied lazily (embedding lookups by 64 ids per example).
fn digits_embedding(c: &mut Criterion) {
    bench_step(c, "digits_embedding");
}

fn wide(c: &mut Criterion) {
    bench_step(c, "wide_mlp");
}

criterion_group! {
    name = small;
    config = Criterion::default();
    targets = digits, cancer, digits_ema, digits_embedding
}
criterion_group! {
    name = large;
    config = Criterion::default().sample_size(20);
    targets = wide
}
criterion_main!(small, large);
