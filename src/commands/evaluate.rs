//! `specc evaluate SPEC --checkpoint CKPT [--data FILE] [--use-averages[=BOOL]] [--json]`:
//! the loss and metrics of one trained checkpoint (TF's `evaluate_once`).
//!
//! Owns: the command's choices — the `eval` function compiled alone (no
//! gradients, no optimizer state) for the spec's batch; the checkpoint
//! resolved as `specc inspect` does and only its parameters restored (each
//! averaged one from its moving average with `--use-averages` or the spec's
//! `ema ..., use_averages = true`, `specc::averages`); the rows: `--data`
//! (a CSV file, or for an image model what `specc run --eval-data` takes),
//! else the spec's `eval_data`, else the held-out rows of the spec's data
//! (the split `specc run` evaluates, so the numbers are its `held-out`
//! line's); one line of results on stdout (`--json`: one JSON object).
//! Invariant: nothing is written; a failure exits non-zero before printing
//! any result.

use std::path::Path;

use specc_compiler::driver::{compile, Functions};
use specc_runtime::checkpoint::{BundleReader, Tensor};
use specc_runtime::pipeline::StreamingBatches;
use specc_runtime::train::{evaluate, evaluate_rows, Evaluation};

use super::report;
use super::run::{eval_json, line};
use crate::Failure;
use specc::averages::Serving;
use specc::run::data::{self, EvalData, TrainingData};
use specc::run::restore::checkpoint_prefix;
use specc::spec::read_spec;

pub struct EvaluateOptions<'a> {
    /// The trained parameters: a checkpoint directory (its latest) or prefix.
    pub checkpoint: &'a Path,
    /// The rows to evaluate instead of the spec's `eval_data` or held-out rows.
    pub data: Option<&'a Path>,
    /// `--use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
    pub json: bool,
}

pub fn run(spec: &Path, opts: &EvaluateOptions<'_>) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let which = Functions {
        step: false,
        eval: true,
        grad: false,
        check: false,
        predict: false,
    };
    let program = compile(&src, which).map_err(|d| report(&d, &src))?;
    let model = &program.model;
    let serving = Serving::resolve(model, opts.use_averages, spec)?;
    let prefix = checkpoint_prefix(opts.checkpoint)?;
    let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
    let mut session = program.session()?;
    serving.restore(&mut session, &reader)?;
    let global_step = match reader.load(specc_runtime::checkpoint::session::GLOBAL_STEP) {
        Ok(Tensor::I64(a)) => a.iter().next().copied(),
        Ok(Tensor::I32(a)) => a.iter().next().map(|&s| i64::from(s)),
        _ => None,
    };

    let metrics = &model.metrics;
    let (what, evaluation): (String, Evaluation) =
        match data::eval_data_source(model, spec, opts.data)? {
            Some(source) => {
                let name = data::source_name(&source);
                let e = match EvalData::open(model, &source)? {
                    EvalData::Memory(d) => {
                        let rows: Vec<u32> = (0..d.rows as u32).collect();
                        evaluate_rows(&mut session, &d, &rows, metrics)?
                    }
                    EvalData::Stream(s) => {
                        let (inputs, layout) = (model.input_specs(), session.layout.clone());
                        let mut batches =
                            StreamingBatches::new(&s, &inputs, &layout, session.max_batch(), 0, 0)
                                .map_err(|e| format!("{name}: {e}"))?;
                        evaluate(&mut session, &mut batches, metrics)?
                    }
                };
                (name, e)
            }
            None => {
                // The rows `specc run` holds out of the spec's data.
                let source = data::data_source(model, spec, None)?;
                let name = data::source_name(&source);
                let nothing = || {
                    format!(
                        "{}: nothing to evaluate: the spec has no `eval_data` and {name} has no \
                         held-out rows (eval_fraction {}); give --data FILE",
                        spec.display(),
                        model.train.eval_fraction
                    )
                };
                let training = TrainingData::open(model, source, false)?;
                let Some(d) = training.dataset() else {
                    return Err(nothing().into());
                };
                let (_, held_out) = model.held_out_split(d, model.train.eval_fraction);
                if held_out.is_empty() {
                    return Err(nothing().into());
                }
                let e = evaluate_rows(&mut session, d, &held_out, metrics)?;
                (format!("{name} (held-out rows)"), e)
            }
        };
    eprintln!(
        "specc: evaluated {}{}{} on {what}",
        prefix.display(),
        global_step.map_or_else(String::new, |s| format!(" at global step {s}")),
        serving.note()
    );
    let label = if serving.uses_averages() {
        "eval ema"
    } else {
        "eval"
    };
    println!("{}", line(label, &evaluation));
    if opts.json {
        let mut obj = serde_json::Map::new();
        obj.insert("model".into(), model.name.clone().into());
        obj.insert("checkpoint".into(), prefix.display().to_string().into());
        obj.insert(
            "global_step".into(),
            global_step.map_or(serde_json::Value::Null, Into::into),
        );
        obj.insert("use_averages".into(), serving.uses_averages().into());
        obj.insert("data".into(), what.into());
        obj.insert("eval".into(), eval_json(&evaluation));
        println!("{}", serde_json::Value::Object(obj));
    }
    Ok(())
}
