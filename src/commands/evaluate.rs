//! `specc evaluate SPEC (--checkpoint CKPT | --checkpoint-dir DIR [--watch]
//! [--timeout S]) [--data FILE] [--use-averages[=BOOL]] [--json]`: the loss
//! and metrics of trained checkpoints (TF's `evaluate_once`, and with a
//! directory its continuous evaluation over `checkpoints_iterator`).
//!
//! Owns: the command's choices — the `eval` function compiled alone (no
//! gradients, no optimizer state) for the spec's batch; the checkpoint
//! resolved as `specc inspect` does and only its parameters restored (each
//! averaged one from its moving average with `--use-averages` or the spec's
//! `ema ..., use_averages = true`, `specc::averages`); the rows: `--data`
//! (a CSV file, or for an image model what `specc run --eval-data` takes),
//! else the spec's `eval_data`, else the held-out rows of the spec's data
//! (the split `specc run` evaluates, so the numbers are its `held-out`
//! line's); one line of results on stdout (`--json`: one JSON object). With
//! `--checkpoint-dir`: every checkpoint of the directory, each once in step
//! order ([`specc::run::checkpoints_iterator`]), with `--watch` the new ones
//! as they appear until the run's last step or `--timeout`; each result is
//! also written at its global step to `DIR/eval/` (the tags `specc run`'s
//! evaluations write there, so TensorBoard draws them beside training).
//! Invariant: one checkpoint writes nothing; a failure exits non-zero before
//! printing its result.

use std::path::Path;
use std::time::Duration;

use specc_compiler::driver::{compile, Functions, ProgramSession};
use specc_compiler::model::Model;
use specc_runtime::checkpoint::{BundleReader, Tensor};
use specc_runtime::pipeline::StreamingBatches;
use specc_runtime::summary::hooks::create_eval_writer;
use specc_runtime::summary::{write_evaluation, SummaryWriter};
use specc_runtime::train::{evaluate, evaluate_rows, Evaluation};

use super::report;
use super::run::{eval_json, line};
use crate::Failure;
use specc::averages::Serving;
use specc::run::checkpoints_iterator::{
    last_step, CheckpointsIterator, Next, SystemClock, Unreadable,
};
use specc::run::data::{self, EvalData, TrainingData};
use specc::run::restore::checkpoint_prefix;
use specc::spec::read_spec;

pub struct EvaluateOptions<'a> {
    /// The trained parameters: a checkpoint directory (its latest) or prefix.
    pub checkpoint: Option<&'a Path>,
    /// Every checkpoint of this directory instead, each once.
    pub checkpoint_dir: Option<&'a Path>,
    /// With `checkpoint_dir`: keep evaluating new checkpoints as they appear.
    pub watch: bool,
    /// With `watch`: the longest wait for a new checkpoint, in seconds.
    pub timeout: Option<f64>,
    /// The rows to evaluate instead of the spec's `eval_data` or held-out rows.
    pub data: Option<&'a Path>,
    /// `--use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
    pub json: bool,
}

/// The rows every checkpoint is evaluated on, opened once.
enum Rows {
    Memory(specc_runtime::data::Dataset),
    Stream(specc_runtime::pipeline::StreamSpec),
    HeldOut(TrainingData, Vec<u32>),
}

/// The compiled `eval` function, its session and the rows.
struct Evaluator<'m> {
    model: &'m Model,
    serving: Serving,
    session: ProgramSession<'m>,
    rows: Rows,
    /// What the rows are, for messages.
    what: String,
}

impl Evaluator<'_> {
    /// The loss and metrics with `reader`'s parameters, and its global step.
    fn evaluate(&mut self, reader: &BundleReader) -> Result<(Evaluation, Option<i64>), Failure> {
        self.serving.restore(&mut self.session, reader)?;
        let global_step = match reader.load(specc_runtime::checkpoint::session::GLOBAL_STEP) {
            Ok(Tensor::I64(a)) => a.iter().next().copied(),
            Ok(Tensor::I32(a)) => a.iter().next().map(|&s| i64::from(s)),
            _ => None,
        };
        let metrics = &self.model.metrics;
        let session = &mut *self.session;
        let e = match &self.rows {
            Rows::Memory(d) => {
                let rows: Vec<u32> = (0..d.rows as u32).collect();
                evaluate_rows(session, d, &rows, metrics)?
            }
            Rows::Stream(s) => {
                let (inputs, layout) = (self.model.input_specs(), session.layout.clone());
                let mut batches =
                    StreamingBatches::new(s, &inputs, &layout, session.max_batch(), 0, 0)
                        .map_err(|e| format!("{}: {e}", self.what))?;
                evaluate(session, &mut batches, metrics)?
            }
            Rows::HeldOut(training, held_out) => {
                let d = training
                    .dataset()
                    .expect("held-out rows come from a dataset");
                evaluate_rows(session, d, held_out, metrics)?
            }
        };
        Ok((e, global_step))
    }

    fn label(&self) -> &'static str {
        if self.serving.uses_averages() {
            "eval ema"
        } else {
            "eval"
        }
    }

    /// The `--json` object of one checkpoint's result.
    fn json(&self, prefix: &Path, global_step: Option<i64>, e: &Evaluation) -> String {
        let mut obj = serde_json::Map::new();
        obj.insert("model".into(), self.model.name.clone().into());
        obj.insert("checkpoint".into(), prefix.display().to_string().into());
        obj.insert(
            "global_step".into(),
            global_step.map_or(serde_json::Value::Null, Into::into),
        );
        obj.insert("use_averages".into(), self.serving.uses_averages().into());
        obj.insert("data".into(), self.what.clone().into());
        obj.insert("eval".into(), eval_json(e));
        serde_json::Value::Object(obj).to_string()
    }
}

pub fn run(spec: &Path, opts: &EvaluateOptions<'_>) -> Result<(), Failure> {
    if opts.timeout.is_some() && !opts.watch {
        return Err(
            "--timeout S is how long --watch waits for a new checkpoint: give --watch".into(),
        );
    }
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
    // A single checkpoint that does not open fails before the rows are read.
    let single = match opts.checkpoint {
        Some(c) => {
            let prefix = checkpoint_prefix(c)?;
            let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
            Some((prefix, reader))
        }
        None => None,
    };
    let session = program.session()?;
    let (what, rows) = open_rows(model, spec, opts.data)?;
    let mut ev = Evaluator {
        model,
        serving,
        session,
        rows,
        what,
    };
    match (single, opts.checkpoint_dir) {
        (Some((prefix, reader)), _) => {
            let (evaluation, global_step) = ev.evaluate(&reader)?;
            eprintln!(
                "specc: evaluated {}{}{} on {}",
                prefix.display(),
                global_step.map_or_else(String::new, |s| format!(" at global step {s}")),
                ev.serving.note(),
                ev.what
            );
            println!("{}", line(ev.label(), &evaluation));
            if opts.json {
                println!("{}", ev.json(&prefix, global_step, &evaluation));
            }
            Ok(())
        }
        (None, Some(dir)) => evaluate_dir(&mut ev, spec, dir, opts),
        (None, None) => Err("give --checkpoint CKPT or --checkpoint-dir DIR".into()),
    }
}

/// The rows to evaluate on and what they are: `--data`, else the spec's
/// `eval_data`, else the held-out rows of its data.
fn open_rows(model: &Model, spec: &Path, data: Option<&Path>) -> Result<(String, Rows), Failure> {
    if let Some(source) = data::eval_data_source(model, spec, data)? {
        let name = data::source_name(&source);
        let rows = match EvalData::open(model, &source)? {
            EvalData::Memory(d) => Rows::Memory(d),
            EvalData::Stream(s) => Rows::Stream(s),
        };
        return Ok((name, rows));
    }
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
    Ok((
        format!("{name} (held-out rows)"),
        Rows::HeldOut(training, held_out),
    ))
}

/// `--checkpoint-dir DIR [--watch] [--timeout S]`: each checkpoint of `dir`
/// once, in step order, written to `DIR/eval/` as it is evaluated.
fn evaluate_dir(
    ev: &mut Evaluator<'_>,
    spec: &Path,
    dir: &Path,
    opts: &EvaluateOptions<'_>,
) -> Result<(), Failure> {
    let last = last_step(dir, ev.model);
    let timeout = opts.timeout.map(Duration::from_secs_f64);
    let mut it = CheckpointsIterator::new(dir, opts.watch, timeout, last);
    if opts.watch {
        eprintln!(
            "specc: watching {} for checkpoints{}{}",
            dir.display(),
            last.map_or_else(
                || format!(
                    " (the last step is unknown: {} trains for epochs)",
                    spec.display()
                ),
                |s| format!(" until global step {s}")
            ),
            opts.timeout
                .map_or_else(String::new, |t| format!(", at most {t} s apart"))
        );
    }
    let mut writer: Option<SummaryWriter> = None;
    let mut steps: Vec<u64> = Vec::new();
    let mut clock = SystemClock;
    let end = loop {
        match it.next(&mut clock) {
            Next::Checkpoint {
                step,
                prefix,
                reader,
                passed_over,
            } => {
                for u in &passed_over {
                    eprintln!(
                        "specc: warning: passed over {} (step {}), which does not open ({}): \
                         a newer checkpoint does",
                        u.prefix.display(),
                        u.step,
                        u.error
                    );
                }
                let (evaluation, global_step) = ev.evaluate(&reader)?;
                let at = global_step.unwrap_or(step as i64);
                let w = match &mut writer {
                    Some(w) => w,
                    None => writer.insert(create_eval_writer(dir).map_err(|e| e.to_string())?),
                };
                write_evaluation(w, at, &evaluation)
                    .and_then(|()| w.flush())
                    .map_err(|e| e.to_string())?;
                eprintln!(
                    "specc: evaluated {} at global step {at}{} on {}",
                    prefix.display(),
                    ev.serving.note(),
                    ev.what
                );
                println!("{}", line(&format!("{} {at}", ev.label()), &evaluation));
                if opts.json {
                    println!("{}", ev.json(&prefix, Some(at), &evaluation));
                }
                steps.push(step);
            }
            end => break end,
        }
    };
    if let Some(w) = &writer {
        w.close().map_err(|e| e.to_string())?;
    }
    let n = steps.len();
    let evaluated = match (steps.first(), steps.last()) {
        (Some(a), Some(b)) if n > 1 => format!("{n} checkpoints (global steps {a}..{b})"),
        (Some(a), _) => format!("1 checkpoint (global step {a})"),
        _ => "no checkpoint".to_string(),
    };
    let into = if n > 0 {
        format!("; results in {}", dir.join("eval").display())
    } else {
        String::new()
    };
    let unreadable_note = |u: &[Unreadable]| -> String {
        u.iter()
            .map(|u| format!("\n  {} (step {}): {}", u.prefix.display(), u.step, u.error))
            .collect()
    };
    match end {
        Next::LastStep(s) => {
            eprintln!("specc: evaluated {evaluated}{into}; reached the run's last step, {s}");
            Ok(())
        }
        Next::TimedOut { unreadable } => {
            let t = opts.timeout.unwrap_or_default();
            let still = if unreadable.is_empty() {
                String::new()
            } else {
                format!("; still not readable:{}", unreadable_note(&unreadable))
            };
            let short = match (last, it.yielded()) {
                (Some(l), Some(y)) => format!(" before the run's last step {l} (reached {y})"),
                (Some(l), None) => format!(" before the run's last step {l}"),
                _ => String::new(),
            };
            eprintln!(
                "specc: evaluated {evaluated}{into}; stopped: no new checkpoint in {t} s \
                 (--timeout){short}{still}"
            );
            Ok(())
        }
        Next::Exhausted { unreadable } if !unreadable.is_empty() => Err(format!(
            "{}: evaluated {evaluated}{into}; these checkpoints do not open \
             (partly written? --watch retries them):{}",
            dir.display(),
            unreadable_note(&unreadable)
        )
        .into()),
        Next::Exhausted { .. } if n == 0 => Err(format!(
            "{}: no checkpoint (no model.ckpt-N.index file; give --watch to wait for one)",
            dir.display()
        )
        .into()),
        _ => {
            eprintln!("specc: evaluated {evaluated}{into}");
            Ok(())
        }
    }
}
