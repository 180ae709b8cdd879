//! Writes event files from a JSON description, for the interop tests
//! (`interop/test_summaries.py` reads them with TensorBoard and TensorFlow).
//!
//! Usage: `write_events DESCRIPTION.json`, where the description is
//! `{"dir": "...", "events": [{"step": 1, "scalars": {"loss": 0.5},
//! "histograms": {"W": [1.0, 2.0]}}], "eval": [{"step": 1, "loss": 0.4,
//! "metrics": {"accuracy": 0.9}}]}` (`eval` optional: written to `dir/eval`
//! as `write_evaluation` writes an evaluation). Prints the event files
//! written, one per line (the training run's first).

use std::process::ExitCode;

use serde_json::Value;
use specc_runtime::summary::hooks::{create_eval_writer, write_evaluation};
use specc_runtime::summary::{SummaryBatch, SummaryWriter};
use specc_runtime::train::Evaluation;

fn run(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let desc: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let dir = desc["dir"]
        .as_str()
        .ok_or_else(|| format!("{path}: no \"dir\""))?;
    let number = |v: &Value, what: &str| {
        v.as_f64()
            .ok_or_else(|| format!("{path}: {what} is not a number"))
    };
    let writer = SummaryWriter::create(dir).map_err(|e| e.to_string())?;
    for (k, ev) in desc["events"].as_array().into_iter().flatten().enumerate() {
        let step = ev["step"]
            .as_i64()
            .ok_or_else(|| format!("{path}: events[{k}].step is not an integer"))?;
        let mut batch = SummaryBatch::new(step);
        for (tag, v) in ev["scalars"].as_object().into_iter().flatten() {
            batch = batch.scalar(tag, number(v, tag)? as f32);
        }
        for (tag, vs) in ev["histograms"].as_object().into_iter().flatten() {
            let values = vs
                .as_array()
                .ok_or_else(|| format!("{path}: histogram {tag} is not a list"))?
                .iter()
                .map(|v| number(v, tag).map(|x| x as f32))
                .collect::<Result<Vec<f32>, String>>()?;
            batch = batch.histogram(tag, &values);
        }
        writer.add(batch).map_err(|e| e.to_string())?;
    }
    writer.close().map_err(|e| e.to_string())?;
    println!("{}", writer.path().display());
    if let Some(evals) = desc["eval"].as_array() {
        let w = create_eval_writer(dir).map_err(|e| e.to_string())?;
        for (k, e) in evals.iter().enumerate() {
            let step = e["step"]
                .as_i64()
                .ok_or_else(|| format!("{path}: eval[{k}].step is not an integer"))?;
            let metrics = e["metrics"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(n, v)| Ok((n.clone(), number(v, n)?)))
                .collect::<Result<Vec<_>, String>>()?;
            let evaluation = Evaluation {
                rows: 0,
                loss: number(&e["loss"], "loss")?,
                metrics,
            };
            write_evaluation(&w, step, &evaluation).map_err(|e| e.to_string())?;
        }
        w.close().map_err(|e| e.to_string())?;
        println!("{}", w.path().display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: write_events DESCRIPTION.json");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
