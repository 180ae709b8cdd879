//! Compile latency: spec text to callable native step (parse, check, autodiff,
//! optimizer IR, passes, planning, Cranelift codegen, JIT) for the shipped specs.
//! The goal for digits_mlp is well under 50 ms (JAX's jit takes about 1 s).
//!
//! `compile_scaling` compiles generated specs of growing size — chains of `n`
//! bindings (`h1 = h0 + b`, ...) and MLPs of `n` layers — with the size as the
//! throughput, so criterion's time per element stays flat when compile time is
//! linear in the spec's size and grows when a stage is super-linear.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;

const HEAD: &str = "data synthetic(rows = 256, features = 16, classes = 4, seed = 1)\n\
    label label: int\n\
    features { x = numeric(x0..x15) }\n";
const TAIL: &str = "optimizer adam(learning_rate = 0.001)\ntrain { batch = 32, steps = 10 }\n";

/// `n` chained bindings after one matmul.
fn chain_spec(n: usize) -> String {
    let mut s = format!("model chain\n{HEAD}params {{\n  W: [16, 4] = glorot_uniform(seed = 1)\n  b: [4] = zeros\n}}\nh0 = x @ W\n");
    for i in 1..=n {
        s.push_str(&format!("h{i} = h{} + b\n", i - 1));
    }
    s.push_str(&format!(
        "loss = mean(sparse_softmax_cross_entropy(label, h{n}))\n{TAIL}"
    ));
    s
}

/// An MLP of `n` layers of width 16 (relu between them).
fn mlp_spec(n: usize) -> String {
    let mut s = format!("model mlp\n{HEAD}params {{\n");
    for i in 0..n {
        let out = if i + 1 == n { 4 } else { 16 };
        s.push_str(&format!(
            "  W{i}: [16, {out}] = glorot_uniform(seed = {})\n  b{i}: [{out}] = zeros\n",
            i + 1
        ));
    }
    s.push_str("}\nh0 = x\n");
    for i in 0..n {
        if i + 1 == n {
            s.push_str(&format!("logits = h{i} @ W{i} + b{i}\n"));
        } else {
            s.push_str(&format!("h{} = relu(h{i} @ W{i} + b{i})\n", i + 1));
        }
    }
    s.push_str(&format!(
        "loss = mean(sparse_softmax_cross_entropy(label, logits))\n{TAIL}"
    ));
    s
}

fn shipped(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    for name in ["digits_mlp", "cancer_logreg", "wide_mlp"] {
        let path = format!("{}/specs/{name}.spec", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        g.bench_function(name, |b| {
            b.iter(|| {
                let src = SourceFile::new(path.clone(), text.clone());
                compile(&src, Functions::TRAIN).unwrap()
            })
        });
    }
    g.finish();
}

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile_scaling");
    g.sample_size(10);
    type Generator = fn(usize) -> String;
    let cases: [(&str, Generator, &[usize]); 2] = [
        ("chain", chain_spec, &[2_500, 5_000, 10_000, 20_000]),
        ("mlp", mlp_spec, &[10, 20, 40, 80]),
    ];
    for (name, generate, sizes) in cases {
        for &n in sizes {
            let text = generate(n);
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(name, n), &text, |b, text| {
                b.iter(|| {
                    let src = SourceFile::new(format!("{name}.spec"), text.clone());
                    compile(&src, Functions::TRAIN).unwrap()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, shipped, scaling);
criterion_main!(benches);
