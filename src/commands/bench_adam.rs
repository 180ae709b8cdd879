//! `specc bench-adam`: workload W4 of `../shared/bench/WORKLOADS.md`, one Adam
//! update over N float32 parameters in one flat buffer with a fixed gradient.
//!
//! The update is specc's own compiled step for the spec below: `loss =
//! reduce_sum(p * g)` with `g` a frozen parameter makes the gradient exactly
//! `g`, and compiling with `update_only` drops the loss, so the step is the
//! Adam update alone, one fused pass that reads p, g, m, v and writes p, m, v
//! (28 bytes a parameter). Timing as the peers: 3 warm-up updates, then
//! `iters` timed updates, the median per process.

use std::time::Instant;

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_grammar::SourceFile;
use specc_runtime::data::Dataset;

use crate::Failure;

/// The W4 spec for `n` parameters: p = uniform01(seed 11) - 0.5, g = (uniform01(seed 12) - 0.5) * 0.01.
fn spec(n: u64) -> String {
    format!(
        "model adam_update\n\
         data synthetic(rows = 1, features = 1)\n\
         params {{\n\
         \x20 p: [{n}] = random_uniform(minval = -0.5, maxval = 0.5, seed = 11)\n\
         \x20 g: [{n}] = random_uniform(minval = -0.005, maxval = 0.005, seed = 12), trainable = false\n\
         }}\n\
         loss = reduce_sum(p * g)\n\
         optimizer adam(learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8)\n\
         train {{ batch = 1, steps = 1 }}\n"
    )
}

pub fn run(params: u64, iters: u64, warmup: u64, threads: Option<usize>) -> Result<(), Failure> {
    if params == 0 || iters == 0 {
        return Err(Failure::Other(
            "--params and --iters must be positive".into(),
        ));
    }
    let src = SourceFile::new("adam_update.spec", spec(params));
    let mut options = Options {
        update_only: true,
        ..Options::default()
    };
    if let Some(t) = threads {
        if !(1..=2).contains(&t) {
            return Err(Failure::Other(format!("--threads must be 1 or 2, got {t}")));
        }
        options.threads = t;
    }
    let program = compile_with(&src, Functions::TRAIN, &options).map_err(|d| {
        Failure::Other(format!(
            "internal error compiling the W4 spec: {}",
            d.iter()
                .map(|d| d.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    let mut session = program.session()?;
    session.bind(&Dataset::from_inputs(1, vec![])?)?;
    let step = session
        .function_index("step")
        .ok_or("the program has no step function")?;
    for _ in 0..warmup {
        session.call(step, 1)?;
    }
    let mut ms: Vec<f64> = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        session.call(step, 1)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let median = if ms.len() % 2 == 1 {
        ms[ms.len() / 2]
    } else {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    };
    let bytes = 28 * params;
    let out = serde_json::json!({
        "workload": "adam_update",
        "peer": "specc",
        "threads": threads.map_or("default".to_string(), |t| t.to_string()),
        "step_threads": program.plans[0].threads,
        "n_params": params,
        "bytes_per_step": bytes,
        "iters": iters,
        "ms_per_step": median,
        "ms_in_process_min": ms[0],
        "ms_in_process_max": ms[ms.len() - 1],
        "gbps": bytes as f64 / (median * 1e-3) / 1e9,
        "impl": "specc compiled step: the Adam update of one [N] parameter, gradient a constant, loss dropped",
        "specc_version": env!("CARGO_PKG_VERSION"),
    });
    println!("{out}");
    Ok(())
}
