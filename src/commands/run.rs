//! `specc run SPEC`: compile, train with a progress bar, report metrics on the
//! training rows and on a held-out split (and, with `--eval-with-averages`,
//! again with the parameters' moving averages in their place).

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use specc_compiler::driver::{compile, Functions};
use specc_runtime::abi::{OUTPUT_GLOBAL_NORM, OUTPUT_LEARNING_RATE, OUTPUT_LOSS};
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::{
    evaluate_rows, fit, Evaluation, LoggingHook, NanTensorHook, StopAtStepHook,
};

use crate::load::{load_data, read_spec, report};
use crate::Failure;

/// The command line of `specc run`.
pub struct RunOptions {
    pub data: Option<PathBuf>,
    pub steps: Option<u64>,
    pub eval_fraction: Option<f64>,
    pub eval_with_averages: bool,
    pub json: bool,
}

/// Steps between two updates of the progress bar.
const PROGRESS_EVERY: u64 = 64;

pub fn run(spec: &Path, opts: &RunOptions) -> Result<(), Failure> {
    let RunOptions {
        steps,
        eval_fraction,
        json,
        ..
    } = *opts;
    let src = read_spec(spec)?;
    let t0 = Instant::now();
    let program = compile(&src, Functions::TRAIN).map_err(|d| report(&d, &src))?;
    let compile_s = t0.elapsed().as_secs_f64();
    let model = &program.model;
    if opts.eval_with_averages && model.ema.is_none() {
        return Err(Failure::Other(format!(
            "--eval-with-averages: {} has no moving averages; add `ema DECAY` to the spec",
            spec.display()
        )));
    }
    // The session first: a model that does not fit in memory is refused
    // before its data is read.
    let mut session = program.session()?;
    let (dataset, data_name) = load_data(model, spec, opts.data.as_deref())?;

    let fraction = eval_fraction.unwrap_or(model.train.eval_fraction);
    if !(0.0..1.0).contains(&fraction) {
        return Err(Failure::Other(format!(
            "--eval-fraction must be in [0, 1), got {fraction}"
        )));
    }
    let (train_rows, eval_rows) = model.held_out_split(&dataset, fraction);
    let batch = model.train.batch as usize;
    let steps = steps.unwrap_or_else(|| model.train.steps(train_rows.len()));
    if steps == 0 {
        return Err(Failure::Other(format!(
            "{}: nothing to train: {} training rows come to 0 steps",
            spec.display(),
            train_rows.len()
        )));
    }
    eprintln!(
        "specc: compiled `{}` in {:.1} ms; data {}: {} rows ({} train, {} held out)",
        model.name,
        compile_s * 1e3,
        data_name,
        dataset.rows,
        train_rows.len(),
        eval_rows.len()
    );

    let cfg = model.train.config(steps);
    let mut batches = ShuffledBatches::new(
        &dataset,
        &session.layout,
        train_rows.clone(),
        cfg.batch,
        cfg.shuffle,
        cfg.seed,
    )?;
    let pb = ProgressBar::new(steps);
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:32} {pos}/{len} steps  {per_sec}  loss {msg}  eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = LoggingHook::new(PROGRESS_EVERY, |v| {
        pb.set_position(v.step);
        pb.set_message(format!("{:.4}", v.loss));
    });
    let t1 = Instant::now();
    let trained = fit(
        &mut session,
        &mut batches,
        &mut [
            &mut StopAtStepHook::num_steps(steps),
            &mut progress,
            &mut NanTensorHook::default(),
        ],
    );
    let train_s = t1.elapsed().as_secs_f64();
    let trained = match trained {
        Ok(t) => t,
        Err(e) => {
            pb.abandon();
            return Err(crate::report::train_failure(e, &src, || {
                let replay = ShuffledBatches::new(
                    &dataset,
                    &session.layout,
                    train_rows.clone(),
                    cfg.batch,
                    cfg.shuffle,
                    cfg.seed,
                )?;
                Ok(Box::new(replay))
            }));
        }
    };
    pb.finish_and_clear();
    let last = trained.last.ok_or("no step ran")?;
    let metrics = &model.metrics;
    let train_eval = evaluate_rows(&mut session, &dataset, &train_rows, metrics)?;
    let held_out = if eval_rows.is_empty() {
        None
    } else {
        Some(evaluate_rows(&mut session, &dataset, &eval_rows, metrics)?)
    };
    // The last step's scalar outputs besides the loss: the learning rate and,
    // with the `global_norm` metric, the gradients' global norm.
    let last_outputs: Vec<(&str, f32)> = [
        (OUTPUT_LEARNING_RATE, last.learning_rate),
        (OUTPUT_GLOBAL_NORM, last.global_norm),
    ]
    .into_iter()
    .filter_map(|(n, v)| Some((n, v?)))
    .collect();
    let averaged = if opts.eval_with_averages {
        let (train, held) = session.with_averages(|s| {
            let train = evaluate_rows(s, &dataset, &train_rows, metrics);
            let held = if eval_rows.is_empty() {
                Ok(None)
            } else {
                evaluate_rows(s, &dataset, &eval_rows, metrics).map(Some)
            };
            (train, held)
        });
        Some((train?, held?))
    } else {
        None
    };
    let last_loss = last.loss;
    let sps = trained.steps as f64 / train_s.max(1e-9);
    let mut last = format!("last batch loss {last_loss:.4}");
    for (n, v) in &last_outputs {
        last += &format!(", {n} {v:.6}");
    }
    println!(
        "trained {} steps in {:.2} s ({:.0} steps/s, {} epochs), {last}",
        trained.steps,
        train_s,
        sps,
        batches.epochs_started()
    );
    println!("{}", line("train", &train_eval));
    if let Some(e) = &held_out {
        println!("{}", line("held-out", e));
    }
    if let Some((t, h)) = &averaged {
        println!("{}", line("train ema", t));
        if let Some(h) = h {
            println!("{}", line("held-out ema", h));
        }
    }
    if json {
        let mut obj = serde_json::Map::new();
        obj.insert("model".into(), model.name.clone().into());
        obj.insert("steps".into(), trained.steps.into());
        obj.insert("batch".into(), batch.into());
        obj.insert("compile_s".into(), compile_s.into());
        obj.insert("train_s".into(), train_s.into());
        obj.insert("steps_per_s".into(), sps.into());
        obj.insert("last_loss".into(), f64::from(last_loss).into());
        for (n, v) in &last_outputs {
            obj.insert((*n).into(), f64::from(*v).into());
        }
        obj.insert("train".into(), eval_json(&train_eval));
        obj.insert(
            "eval".into(),
            held_out
                .as_ref()
                .map(eval_json)
                .unwrap_or(serde_json::Value::Null),
        );
        if let Some((t, h)) = &averaged {
            obj.insert("train_averages".into(), eval_json(t));
            obj.insert(
                "eval_averages".into(),
                h.as_ref().map(eval_json).unwrap_or(serde_json::Value::Null),
            );
        }
        println!("{}", serde_json::Value::Object(obj));
    }
    Ok(())
}

fn line(what: &str, e: &Evaluation) -> String {
    let mut s = format!("{what:>12}: loss {:.4}", e.loss);
    for (n, v) in &e.metrics {
        s.push_str(&format!("  {n} {v:.4}"));
    }
    s.push_str(&format!("  ({} rows)", e.rows));
    s
}

fn eval_json(e: &Evaluation) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    o.insert("rows".into(), e.rows.into());
    o.insert(OUTPUT_LOSS.into(), e.loss.into());
    for (n, v) in &e.metrics {
        o.insert(n.clone(), (*v).into());
    }
    serde_json::Value::Object(o)
}
