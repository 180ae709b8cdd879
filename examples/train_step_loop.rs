//! The Rust side of `benches/python_overhead.py`'s `train_step` part: what
//! one `specc::Model::train_step` call costs from Rust, to set against the
//! same call from Python (`specc.Model.train_step`) on the same arrays.
//!
//! ```text
//! cargo build --release --example train_step_loop
//! target/release/examples/train_step_loop SPEC [ROWS] [WARMUP] [BLOCKS] [CALLS]
//! ```
//!
//! Compiles SPEC, makes one fixed batch of ROWS rows (default: the spec's
//! batch) for every model input, takes WARMUP steps, then BLOCKS timed
//! blocks of CALLS steps each, and prints one JSON line: the nanoseconds
//! per call of each block, their median, and the last loss (its f32 bits
//! too, so the harness can check that Python trained the same thing). The
//! arrays are [`batch_value`]'s: the harness builds the same ones in numpy.

use std::time::Instant;

use specc::ndarray::{ArrayD, IxDyn};
use specc::{InputInfo, Model};

/// Element `k` (row major over `[rows, per_example]`) of input `j` of the
/// model: `k % 2` for an id input (a class, a feature id: 0 and 1 are in
/// every range) or a label, otherwise `((k * 7919 + j * 104729) % 1000) /
/// 1000` (one correctly rounded f32 division, so numpy computes the same
/// bits).
pub fn batch_value(input: &InputInfo, j: usize, k: usize) -> f32 {
    if input.integer || input.label {
        (k % 2) as f32
    } else {
        ((k * 7919 + j * 104_729) % 1000) as f32 / 1000.0
    }
}

/// The fixed batch: one `[rows, per_example]` array per model input.
fn batch(model: &Model, rows: usize) -> Vec<(String, ArrayD<f32>)> {
    model
        .inputs()
        .iter()
        .enumerate()
        .map(|(j, input)| {
            let n = rows * input.per_example;
            let values = (0..n).map(|k| batch_value(input, j, k)).collect();
            let a = ArrayD::from_shape_vec(IxDyn(&[rows, input.per_example]), values)
                .expect("rows * per_example values");
            (input.name.clone(), a)
        })
        .collect()
}

/// The `i`th positional argument as a number, or `default`.
fn arg(args: &[String], i: usize, default: usize) -> Result<usize, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {i}: `{s}` is not a whole number")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(spec) = args.get(1) else {
        return Err("usage: train_step_loop SPEC [ROWS] [WARMUP] [BLOCKS] [CALLS]".into());
    };
    let mut model = Model::from_path(spec)?;
    let rows = arg(&args, 2, model.max_batch())?;
    let (warmup, blocks, calls) = (
        arg(&args, 3, 1000)?,
        arg(&args, 4, 11)?,
        arg(&args, 5, 1000)?,
    );
    if blocks == 0 || calls == 0 {
        return Err("BLOCKS and CALLS must be at least 1".into());
    }
    let owned = batch(&model, rows);
    let views: Vec<(&str, specc::ndarray::ArrayViewD<'_, f32>)> =
        owned.iter().map(|(n, a)| (n.as_str(), a.view())).collect();
    let mut loss = f32::NAN;
    for _ in 0..warmup {
        loss = model.train_step(&views)?;
    }
    let mut per_call = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        let t = Instant::now();
        for _ in 0..calls {
            loss = model.train_step(&views)?;
        }
        per_call.push(t.elapsed().as_nanos() as f64 / calls as f64);
    }
    let mut sorted = per_call.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let blocks_json: Vec<String> = per_call.iter().map(|v| format!("{v:.1}")).collect();
    println!(
        "{{\"model\":\"{}\",\"rows\":{rows},\"warmup\":{warmup},\"calls\":{calls},\"ns_per_call\":{median:.1},\"blocks_ns\":[{}],\"global_step\":{},\"loss\":{},\"loss_bits\":{}}}",
        model.name(),
        blocks_json.join(","),
        model.global_step(),
        f64::from(loss),
        loss.to_bits()
    );
    Ok(())
}
