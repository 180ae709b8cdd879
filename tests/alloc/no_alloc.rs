//! A training step allocates nothing: after a few warm-up steps (the GEMM's
//! per-thread packing buffers are allocated once), a counting global
//! allocator sees no allocation over 200 steps of the digits MLP, on one
//! thread, over the steps of a sparse (embedding) model, and over steps of the
//! wide MLP on two threads (the worker thread included). The steps run in the
//! runtime's training loop (`fit`) with its hooks (stop at step, NaN check),
//! so the loop around the step is measured too.
//!
//! It counts every thread's allocations, so it runs alone in a child
//! process of the test binary (`alone_in_process`).

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::passes::winograd::Winograd;
use specc_grammar::SourceFile;
use specc_runtime::data;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::{
    fit, Hook, NanTensorHook, RunContext, StepValues, StopAtStepHook, TrainError,
};
use specc_testkit::alloc::{alone_in_process, process_allocations};

/// Counts the allocations between the end of step `from` and the end of
/// step `to`, and sums the losses of those steps.
struct CountAllocations {
    from: u64,
    to: u64,
    before: usize,
    allocations: Option<usize>,
    loss: f32,
}

impl Hook for CountAllocations {
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if v.step == self.from {
            self.before = process_allocations();
        } else if v.step > self.from {
            self.loss += v.loss;
        }
        if v.step == self.to {
            self.allocations = Some(process_allocations() - self.before);
        }
        Ok(())
    }
}

/// Allocations over `measured` steps after 20 warm-up steps; also the
/// step's thread count.
fn steps_allocate(spec: &str, threads: usize, measured: u64) -> (usize, u32) {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/specs/{spec}")).unwrap();
    steps_allocate_text(spec, text, threads, measured)
}

/// [`steps_allocate`] of a spec's text (data paths relative to `specs/`).
fn steps_allocate_text(spec: &str, text: String, threads: usize, measured: u64) -> (usize, u32) {
    let options = Options {
        threads,
        ..Options::default()
    };
    steps_allocate_with(spec, text, &options, measured)
}

/// [`steps_allocate_text`] compiled with `options`.
fn steps_allocate_with(spec: &str, text: String, options: &Options, measured: u64) -> (usize, u32) {
    let root = env!("CARGO_MANIFEST_DIR");
    let program = compile_with(&SourceFile::new(spec, text), Functions::TRAIN, options).unwrap();
    let model = &program.model;
    let spec_dir = format!("{root}/specs");
    let ds = data::load(&model.data_source(spec_dir.as_ref()), &model.input_specs()).unwrap();
    let mut s = program.session().unwrap();
    let cfg = model.train.config(300);
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches =
        ShuffledBatches::new(&ds, &s.layout, rows, cfg.batch, cfg.shuffle, cfg.seed).unwrap();
    let mut count = CountAllocations {
        from: 20,
        to: 20 + measured,
        before: 0,
        allocations: None,
        loss: 0.0,
    };
    let summary = fit(
        &mut s,
        &mut batches,
        &mut [
            &mut StopAtStepHook::num_steps(20 + measured),
            &mut NanTensorHook::default(),
            &mut count,
        ],
    )
    .unwrap();
    assert_eq!(summary.steps, 20 + measured);
    assert!(count.loss.is_finite() && count.loss > 0.0, "{}", count.loss);
    (
        count.allocations.expect("measured"),
        program.plans[0].threads,
    )
}

#[test]
fn training_steps_allocate_nothing() {
    // The worker thread's allocations count: no other test may run meanwhile.
    if !alone_in_process() {
        return;
    }
    assert_eq!(steps_allocate("digits_mlp.spec", 1, 200), (0, 1), "digits");
    assert_eq!(
        steps_allocate("digits_cnn.spec", 1, 50),
        (0, 1),
        "convolutions and pooling"
    );
    // W7 with its second convolution as Winograd F(2×2, 3×3), on both
    // threads: the tile tensors live in the scratch arena. (In this test:
    // the allocation counter is global, so no other test may run meanwhile.)
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/specs/digits_cnn.spec")).unwrap();
    let options = Options {
        threads: 2,
        winograd: Winograd::Auto,
        ..Options::default()
    };
    assert_eq!(
        steps_allocate_with("digits_cnn.spec", text, &options, 50),
        (0, 2),
        "Winograd convolutions"
    );
    assert_eq!(
        steps_allocate("digits_embedding.spec", 1, 200),
        (0, 1),
        "sparse updates"
    );
    // The wide MLP runs on both threads (the worker's GEMM buffers included).
    assert_eq!(
        steps_allocate("wide_mlp.spec", 2, 10),
        (0, 2),
        "two threads"
    );
    steps_with_runtime_checks_allocate_nothing();
}

/// Runtime checks (`check_numerics`, `assert_*`) read after every step
/// allocate nothing either. (Called from the one test of this file: the
/// allocation counter is global, so measurements must not overlap.)
fn steps_with_runtime_checks_allocate_nothing() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/specs/digits_mlp.spec"))
        .unwrap()
        .replacen(
            "relu(pixels @ W1 + b1)",
            "check_numerics(relu(pixels @ W1 + b1), \"hidden layer\")",
            1,
        )
        .replacen("\nloss = ", "\nassert_non_negative(h)\nloss = ", 1);
    assert!(text.contains("check_numerics") && text.contains("assert_non_negative"));
    assert_eq!(
        steps_allocate_text("digits_checked.spec", text, 1, 200),
        (0, 1)
    );
}
