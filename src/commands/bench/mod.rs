//! `specc bench SPEC --steps N`: the benchmark contract of `../shared/bench/WORKLOADS.md`.
//!
//! "Model defined" is the moment the spec text and the data are in memory, so
//! `first_step_s` covers parsing, checking, autodiff, planning, Cranelift code
//! generation, JIT, variable initialization and the first step. Training uses
//! every row (no held-out split), in the bench batch order.
//!
//! A spec that trains one pass in file order and holds out the last rows
//! (`train { epochs = 1, shuffle = 0, eval_split = "last" }`, W5) is timed
//! end to end instead: see [`one_pass`].

use std::path::Path;
use std::time::Instant;

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::plan::Kernel;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::{
    evaluate_rows, fit, Hook, RunContext, StepValues, StopAtStepHook, TrainError,
};

use crate::commands::report;
use specc::run::data::load_data;
use specc::spec::read_spec;

mod one_pass;
use crate::Failure;

/// The bench's clock, as a hook: the first step (from "model defined"), the
/// second step, and the steady state from the end of the warm-up to the end.
struct BenchClock {
    model_defined: Instant,
    warmup: u64,
    first_loss: f32,
    first_step_s: f64,
    second_start: Option<Instant>,
    second_step_s: f64,
    steady_start: Option<Instant>,
    steady_s: f64,
}

impl Hook for BenchClock {
    #[inline]
    fn after_run(&mut self, _ctx: &mut RunContext<'_>, v: &StepValues) -> Result<(), TrainError> {
        if v.step <= 2 {
            if v.step == 1 {
                self.first_loss = v.loss;
                self.first_step_s = self.model_defined.elapsed().as_secs_f64();
                self.second_start = Some(Instant::now());
            } else if let Some(t) = self.second_start {
                self.second_step_s = t.elapsed().as_secs_f64();
            }
        }
        if v.step == self.warmup {
            self.steady_start = Some(Instant::now());
        }
        Ok(())
    }

    fn end(&mut self, _ctx: &mut RunContext<'_>) -> Result<(), TrainError> {
        self.steady_s = self
            .steady_start
            .map_or(f64::NAN, |t| t.elapsed().as_secs_f64());
        Ok(())
    }
}

pub fn run(
    spec: &Path,
    steps: Option<u64>,
    warmup: Option<u64>,
    data: Option<&Path>,
    profile: bool,
) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    // Load the data first (it needs the checked model's input declarations).
    let checked = specc_compiler::check(&src).map_err(|d| report(&d, &src))?;
    if one_pass::applies(&checked) && steps.is_none() {
        return one_pass::run(spec, &src, data);
    }
    let (dataset, _) = load_data(&checked, spec, data)?;
    let batch = checked.train.batch as usize;
    let rows: Vec<u32> = (0..dataset.rows as u32).collect();
    let steps = steps.unwrap_or_else(|| checked.train.steps(rows.len()));
    if steps < 3 {
        return Err(Failure::Other("bench needs at least 3 steps".into()));
    }
    let warm = warmup
        .unwrap_or(if steps >= 1000 { 100 } else { steps / 10 })
        .clamp(2, steps - 1);

    // Model defined.
    let t0 = Instant::now();
    let program = compile_with(
        &src,
        Functions::TRAIN,
        &Options {
            profile,
            ..Options::default()
        },
    )
    .map_err(|d| report(&d, &src))?;
    let compile_s = t0.elapsed().as_secs_f64();
    let model = &program.model;
    let mut session = program.session()?;
    let cfg = model.train.config(steps);
    let mut batches = ShuffledBatches::new(
        &dataset,
        &session.layout,
        rows.clone(),
        cfg.batch,
        cfg.shuffle,
        cfg.seed,
    )?;
    let mut clock = BenchClock {
        model_defined: t0,
        warmup: warm,
        first_loss: f32::NAN,
        first_step_s: f64::NAN,
        second_start: None,
        second_step_s: f64::NAN,
        steady_start: None,
        steady_s: f64::NAN,
    };
    fit(
        &mut session,
        &mut batches,
        &mut [&mut StopAtStepHook::num_steps(steps), &mut clock],
    )?;
    let steady = (steps - warm) as f64 / clock.steady_s;
    if profile {
        print_profile(&program, steps);
    }
    let ev = evaluate_rows(&mut session, &dataset, &rows, &model.metrics)?;
    let accuracy = ev
        .metrics
        .iter()
        .find(|(n, _)| n.contains("accuracy"))
        .map(|(_, v)| *v);
    let threads = specc_runtime::settings::value(specc_runtime::settings::THREADS)
        .unwrap_or_else(|| "default".into());
    let out = serde_json::json!({
        "workload": model.name,
        "peer": "specc",
        "batch": batch,
        "steps": steps,
        "warmup_steps_excluded": warm,
        "threads": threads,
        "first_step_s": clock.first_step_s,
        "second_step_s": clock.second_step_s,
        "steady_steps_per_s": steady,
        "examples_per_s": steady * batch as f64,
        "final_train_accuracy": accuracy,
        "final_train_loss": ev.loss,
        "first_loss": clock.first_loss,
        "compile_s": compile_s,
        "step_threads": program.plans[0].threads,
        // Calls of a short two-thread step run on two threads and on its
        // one-thread twin (`specc_runtime::twin`); null without a twin.
        "twin_calls": session.twin_counts(0),
        "gemm_isa": specc_runtime::sgemm::Isa::active().name(),
        "specc_version": env!("CARGO_PKG_VERSION"),
    });
    println!("{out}");
    Ok(())
}

/// The per-kernel time table of a profiled run (stderr).
fn print_profile(program: &specc_compiler::driver::Program, steps: u64) {
    let totals = specc_runtime::profile::totals();
    let plan = &program.plans[0];
    let all: f64 = totals.iter().map(|t| t.1).sum();
    eprintln!("kernel  us/step   share  what");
    for (k, kernel) in plan.kernels.iter().enumerate() {
        let (_, secs) = totals.get(k).copied().unwrap_or((0, 0.0));
        let what = match kernel {
            Kernel::Gemm {
                node,
                m,
                k,
                n,
                groups,
                epilogue,
                ..
            } => {
                let batch = groups.map_or(String::new(), |g| format!(" groups={}", g.count));
                let ep = epilogue.as_ref().map_or(String::new(), |e| {
                    let bias = if e.bias.is_some() { " bias" } else { "" };
                    let relu = if e.relu { " relu" } else { "" };
                    format!(" epilogue{bias}{relu}")
                });
                format!("gemm {node} m={m} k={k} n={n}{batch}{ep}")
            }
            Kernel::ArgMax { node, .. } => format!("argmax {node}"),
            Kernel::Recurrence(r) => format!(
                "{} {} rows={} steps={}",
                if r.grad {
                    "recurrence_grad"
                } else {
                    "recurrence"
                },
                r.node,
                r.rows,
                r.steps
            ),
            Kernel::Window(w) => format!("{} {} {:?}", w.op.name(), w.node, w.window),
            Kernel::Winograd(w) => format!(
                "winograd {} {} {} block={} C={} O={}",
                w.node,
                w.tile.name(),
                if w.y.is_some() { "forward" } else { "backward" },
                w.block,
                w.window.channels,
                w.out_channels
            ),
            Kernel::Rows(r) => format!("{:?} {} n={} row_len={}", r.op, r.node, r.n, r.row_len),
            Kernel::Loop(l) => format!(
                "{} over {} ({} ops, {} stores)",
                if l.reductions.is_empty() {
                    "loop"
                } else {
                    "reduce"
                },
                l.domain,
                l.body.len(),
                l.stores.len()
            ),
        };
        eprintln!(
            "k{k:<5} {:>8.2} {:>6.1}%  {what}",
            secs / steps as f64 * 1e6,
            100.0 * secs / all.max(1e-12)
        );
    }
    eprintln!("total   {:>8.2} us/step", all / steps as f64 * 1e6);
}
