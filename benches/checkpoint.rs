//! Checkpoint throughput for a ~200 MB model: 16M float32 parameters and
//! Adam's two slots (`W`, `W/Adam`, `W/Adam_1`: 192 MiB) plus the scalars.
//! `save`: `write_bundle` (buffered writes, hardware CRC32C) into new files
//! in the page cache; `save_snapshot`: capturing a `Snapshot` (the copy a background
//! save starts from); `restore`: reading every tensor straight into
//! preallocated buffers, CRCs checked. `cargo bench --bench checkpoint`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use specc_runtime::checkpoint::{
    data_path, index_path, write_bundle, BundleReader, Snapshot, TensorRef,
};

const PARAMS: usize = 16 * 1024 * 1024;

struct Model {
    vars: Vec<(&'static str, Vec<f32>)>,
    step: [i64; 1],
    beta: [f32; 1],
}

impl Model {
    fn new() -> Model {
        let v = |k: f32| (0..PARAMS).map(|i| (i as f32) * k).collect::<Vec<f32>>();
        Model {
            vars: vec![("W", v(1e-6)), ("W/Adam", v(-1e-7)), ("W/Adam_1", v(1e-9))],
            step: [1000],
            beta: [0.9],
        }
    }

    fn tensors(&self) -> Vec<(&str, TensorRef<'_>)> {
        let shape: &[usize] = &[4096, 4096];
        let mut t: Vec<(&str, TensorRef<'_>)> = self
            .vars
            .iter()
            .map(|(n, v)| (*n, TensorRef::f32(shape, v).unwrap()))
            .collect();
        t.push(("beta1_power", TensorRef::f32(&[], &self.beta).unwrap()));
        t.push(("global_step", TensorRef::i64(&[], &self.step).unwrap()));
        t
    }

    fn bytes(&self) -> u64 {
        (3 * PARAMS * 4) as u64
    }
}

fn checkpoint(c: &mut Criterion) {
    let mut model = Model::new();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench_checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("model.ckpt-1000");
    let mut g = c.benchmark_group("checkpoint");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(model.bytes()));
    // Into new files, as the manager saves (the old files are removed
    // untimed; overwriting would also time freeing their page cache).
    let remove = || {
        let _ = std::fs::remove_file(index_path(&prefix));
        let _ = std::fs::remove_file(data_path(&prefix, 0, 1));
    };
    g.bench_function("save", |b| {
        b.iter_batched(
            remove,
            |()| write_bundle(&prefix, &model.tensors()).unwrap(),
            BatchSize::PerIteration,
        )
    });
    let mut snap = Snapshot::new();
    g.bench_function("save_snapshot", |b| {
        b.iter(|| snap.capture(&model.tensors()))
    });
    g.bench_function("restore", |b| {
        b.iter(|| {
            let r = BundleReader::open(&prefix).unwrap();
            for (name, dst) in model.vars.iter_mut() {
                r.load_f32_into(name, dst).unwrap();
            }
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, checkpoint);
criterion_main!(benches);
