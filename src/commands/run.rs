//! `specc run SPEC`: the library's run (`specc::run`) with a progress bar
//! (on a terminal) or a log line every few seconds (elsewhere), and the
//! metrics on the training rows and on a held-out split (and, with
//! `--eval-with-averages`, again with the parameters' moving averages in
//! their place) printed.
//!
//! Owns: the command line as a [`Request`], the [`Progress`] observer (the
//! bar, the log lines, the run's notes and warnings on stderr, and
//! `--export-on-save`'s export of each written checkpoint,
//! `export_on_save`) and the printing. With `--json` the last line of stdout is one JSON object, also
//! when the run fails: then it holds `error` and the step the run reached.
//! A replica of a data-parallel job that fails ends the whole job.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use specc::run::{self, Launch, Observer, Outcome, Replicas, Request};
use specc_runtime::abi::{OUTPUT_GLOBAL_NORM, OUTPUT_LEARNING_RATE, OUTPUT_LOSS};
use specc_runtime::train::{Evaluation, StepValues, Timer};

use crate::Failure;

/// The command line of `specc run` besides the run's own request.
pub struct RunOptions {
    /// `--json`: one JSON object as the last line of stdout.
    pub json: bool,
    /// `--distributed`: whether this process is one replica of an MPI job.
    pub distributed: Launch,
    /// `--export-on-save`: export the model at each checkpoint.
    pub export: Option<super::export_on_save::ExportOnSave>,
}

/// Steps between two updates of the progress bar.
const PROGRESS_EVERY: u64 = 64;

/// Seconds between two log lines when stderr is not a terminal.
const LOG_EVERY_SECS: f64 = 10.0;

pub fn run(request: &Request, opts: &RunOptions) -> Result<(), Failure> {
    let replicas = Replicas::start(opts.distributed)?;
    // A replica other than the first trains quietly and writes nothing.
    let leader = replicas.as_ref().is_none_or(Replicas::is_leader);
    let mut progress = Progress::new(leader);
    progress.export = opts
        .export
        .clone()
        .filter(|_| leader)
        .map(|e| (request.spec.clone(), e));
    let result = run::prepare(request, replicas.as_ref(), &mut progress)
        .map_err(Failure::from)
        .and_then(|p| {
            // An export that would be refused is refused before training.
            if let Some((spec, e)) = &progress.export {
                let c = p.checkpoint_config();
                e.check(spec, c.dir.as_deref(), c.keep)?;
            }
            p.fit(&mut progress).map_err(Failure::from)
        });
    let result = match result {
        Ok(outcome) => {
            progress.last = outcome.last;
            if leader {
                print(&outcome, opts.json);
            }
            match progress.export.as_mut().and_then(|(_, e)| e.failure.take()) {
                Some(m) => Err(Failure::Other(m)),
                None => Ok(()),
            }
        }
        Err(e) => {
            progress.pb.abandon();
            Err(e)
        }
    };
    // A replica that fails ends the whole job: the others would wait for it
    // in the next exchange.
    if let (Err(failure), Some(r)) = (&result, &replicas) {
        if r.size() > 1 {
            if let Failure::Other(m) = failure {
                eprintln!("error: replica {} of {}: {m}", r.rank(), r.size());
            }
            eprintln!(
                "specc: replica {} of {} failed: stopping every replica of the job",
                r.rank(),
                r.size()
            );
            r.abort(if matches!(failure, Failure::Spec) {
                2
            } else {
                1
            });
        }
    }
    if let (Err(failure), true) = (&result, opts.json) {
        let last = progress.last;
        let mut obj = serde_json::Map::new();
        if let Some(m) = &progress.model {
            obj.insert("model".into(), m.clone().into());
        }
        let error = match failure {
            Failure::Spec => format!("{} has errors (see stderr)", request.spec.display()),
            Failure::Other(m) => m.clone(),
        };
        obj.insert("error".into(), error.into());
        obj.insert("steps".into(), last.map_or(0, |v| v.step).into());
        obj.insert(
            "global_step".into(),
            last.map_or(0, |v| v.global_step).into(),
        );
        if let Some(v) = last {
            obj.insert("last_loss".into(), json_f32(v.loss));
        }
        println!("{}", serde_json::Value::Object(obj));
    }
    result
}

/// The run as `specc run` shows it: a progress bar on a terminal;
/// elsewhere (a log file, CI) a line every few seconds, as TF's
/// `LoggingTensorHook` and `StepCounterHook` print; the run's notes and
/// warnings above the bar. It also keeps how far the run got, for `--json`
/// when it fails.
struct Progress {
    leader: bool,
    terminal: bool,
    pb: ProgressBar,
    /// The global step training ends at.
    steps: u64,
    /// The bar's updates: every [`PROGRESS_EVERY`] steps and the last.
    bar: Timer,
    /// The log lines: every [`LOG_EVERY_SECS`] and the last step.
    log: Timer,
    /// The step and time of the last log line (its rate).
    since: (u64, Instant),
    /// The model's name, once compiled.
    model: Option<String>,
    /// The last step's values.
    last: Option<StepValues>,
    /// `--export-on-save` (the leader's) and the spec it exports.
    export: Option<(std::path::PathBuf, super::export_on_save::ExportOnSave)>,
}

impl Progress {
    fn new(leader: bool) -> Progress {
        Progress {
            leader,
            terminal: std::io::stderr().is_terminal(),
            pb: ProgressBar::hidden(),
            steps: 0,
            bar: Timer::every_steps(PROGRESS_EVERY),
            log: Timer::new(None, Some(LOG_EVERY_SECS)),
            since: (0, Instant::now()),
            model: None,
            last: None,
            export: None,
        }
    }

    fn draw(&mut self, v: &StepValues) {
        self.pb.set_position(v.step);
        self.pb.set_message(format!("{:.4}", v.loss));
        self.bar.triggered(v.step);
    }

    fn log_line(&mut self, v: &StepValues) {
        if !self.terminal && self.leader {
            let sps =
                (v.step - self.since.0) as f64 / self.since.1.elapsed().as_secs_f64().max(1e-9);
            self.since = (v.step, Instant::now());
            eprintln!("{}", log_line(v, self.steps, sps));
        }
        self.log.triggered(v.step);
    }
}

impl Observer for Progress {
    fn compiled(&mut self, model: &str, _seconds: f64) {
        self.model = Some(model.to_string());
    }

    fn note(&mut self, text: &str) {
        self.pb.suspend(|| eprintln!("specc: {text}"));
    }

    fn warning(&mut self, text: &str) {
        self.pb.suspend(|| eprintln!("warning: {text}"));
    }

    fn begin(&mut self, start: i64, last: u64) {
        self.steps = last;
        self.pb = if self.terminal && self.leader {
            ProgressBar::new(last.saturating_sub(start.max(0) as u64))
        } else {
            ProgressBar::hidden()
        };
        self.pb.set_style(
            ProgressStyle::with_template(
                "{bar:32} {pos}/{len} steps  {per_sec}  loss {msg}  eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    }

    fn step(&mut self, v: &StepValues) {
        self.last = Some(*v);
        if self.bar.due(v.step) {
            self.draw(v);
        }
        if self.log.due(v.step) {
            self.log_line(v);
        }
    }

    fn end(&mut self, last: Option<&StepValues>) {
        // The last step is shown (TF's `at_end`), if it was not already.
        if let Some(v) = last {
            if self.bar.last_step() != Some(v.step) {
                self.draw(v);
            }
            if self.log.last_step() != Some(v.step) {
                self.log_line(v);
            }
        }
        self.pb.finish_and_clear();
    }

    fn evaluation(&mut self, step: i64, e: &Evaluation) {
        self.pb
            .suspend(|| eprintln!("{}", line(&format!("eval @ {step}"), e)));
    }

    fn tensors(&mut self, text: &str) {
        self.pb.suspend(|| eprintln!("{text}"));
    }

    fn checkpoint(&mut self, prefix: &std::path::Path) {
        if let Some((spec, e)) = self.export.as_mut() {
            self.pb.suspend(|| e.after_save(spec, prefix));
        }
    }
}

/// The run's results on stdout: the training line, the evaluations, and
/// with `json` one JSON object last.
fn print(o: &Outcome, json: bool) {
    // The last step's scalar outputs besides the loss: the learning rate and,
    // with the `global_norm` metric, the gradients' global norm.
    let last_outputs: Vec<(&str, f32)> = match o.last {
        Some(last) => [
            (OUTPUT_LEARNING_RATE, last.learning_rate),
            (OUTPUT_GLOBAL_NORM, last.global_norm),
        ]
        .into_iter()
        .filter_map(|(n, v)| Some((n, v?)))
        .collect(),
        None => Vec::new(),
    };
    let last_loss = o.last.map(|v| v.loss);
    let sps = o.steps_per_s();
    let mut last = match last_loss {
        Some(l) => format!(", last batch loss {l:.4}"),
        None => String::new(),
    };
    for (n, v) in &last_outputs {
        last += &format!(", {n} {v:.6}");
    }
    println!(
        "trained {} steps in {:.2} s ({:.0} steps/s, {} epochs){last}",
        o.steps, o.train_s, sps, o.epochs
    );
    if let Some(r) = &o.replicas {
        let mib: Vec<String> = r
            .peak_rss
            .iter()
            .map(|b| format!("{:.0}", *b as f64 / (1 << 20) as f64))
            .collect();
        println!("peak memory per replica: {} MiB", mib.join(", "));
    }
    if let (Some(s), true) = (o.sharded_exchange_s, o.steps > 0) {
        println!(
            "sharded tables: {:.3} ms a step fetching rows and routing their gradient ({:.0} % of training)",
            s * 1e3 / o.steps as f64,
            100.0 * s / o.train_s.max(1e-9)
        );
    }
    if let Some(t) = &o.train {
        println!("{}", line("train", t));
    }
    if let Some(e) = &o.held_out {
        println!("{}", line("held-out", e));
    }
    if let Some((t, h)) = &o.averaged {
        println!("{}", line("train ema", t));
        if let Some(h) = h {
            println!("{}", line("held-out ema", h));
        }
    }
    if !json {
        return;
    }
    let mut obj = serde_json::Map::new();
    obj.insert("model".into(), o.name.clone().into());
    obj.insert("steps".into(), o.steps.into());
    obj.insert("global_step".into(), o.global_step.into());
    obj.insert("batch".into(), o.batch.into());
    if let Some(r) = &o.replicas {
        obj.insert("replicas".into(), r.size.into());
        obj.insert("nodes".into(), r.nodes.into());
        let how = if r.shared_exchange {
            "shared_memory"
        } else {
            "allreduce"
        };
        obj.insert("exchange".into(), how.into());
        obj.insert("peak_rss_bytes".into(), r.peak_rss.clone().into());
        if let Some(s) = o.sharded_exchange_s {
            obj.insert("sharded_exchange_s".into(), s.into());
        }
    } else {
        let peak = vec![specc::run::peak_rss_bytes()];
        obj.insert("peak_rss_bytes".into(), peak.into());
    }
    obj.insert("compile_s".into(), o.compile_s.into());
    obj.insert("train_s".into(), o.train_s.into());
    obj.insert("steps_per_s".into(), sps.into());
    if let Some(l) = last_loss {
        obj.insert("last_loss".into(), f64::from(l).into());
    }
    for (n, v) in &last_outputs {
        obj.insert((*n).into(), f64::from(*v).into());
    }
    obj.insert(
        "train".into(),
        o.train
            .as_ref()
            .map(eval_json)
            .unwrap_or(serde_json::Value::Null),
    );
    if let Some(b) = &o.bad_records {
        obj.insert("bad_records".into(), b.count.into());
        obj.insert(
            "bad_record_locations".into(),
            b.first
                .iter()
                .map(|e| serde_json::Value::from(e.to_string()))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    obj.insert(
        "eval".into(),
        o.held_out
            .as_ref()
            .map(eval_json)
            .unwrap_or(serde_json::Value::Null),
    );
    if let Some((t, h)) = &o.averaged {
        obj.insert("train_averages".into(), eval_json(t));
        obj.insert(
            "eval_averages".into(),
            h.as_ref().map(eval_json).unwrap_or(serde_json::Value::Null),
        );
    }
    println!("{}", serde_json::Value::Object(obj));
}

/// A float as JSON: a number, or a string (`"NaN"`, `"inf"`) where JSON has none.
fn json_f32(v: f32) -> serde_json::Value {
    if v.is_finite() {
        f64::from(v).into()
    } else {
        v.to_string().into()
    }
}

/// A log line: `step 1000/5000  loss 0.2345  12345 steps/s  learning_rate 0.01`
/// (`step 1000` when a stream's end, not a step count, ends the run).
fn log_line(v: &StepValues, steps: u64, steps_per_s: f64) -> String {
    let of = if steps >= i64::MAX as u64 {
        String::new()
    } else {
        format!("/{steps}")
    };
    let mut s = format!(
        "step {}{of}  loss {:.4}  {steps_per_s:.0} steps/s",
        v.global_step, v.loss
    );
    if let Some(lr) = v.learning_rate {
        s.push_str(&format!("  {OUTPUT_LEARNING_RATE} {lr}"));
    }
    if let Some(n) = v.global_norm {
        s.push_str(&format!("  {OUTPUT_GLOBAL_NORM} {n:.4}"));
    }
    s
}

pub(crate) fn line(what: &str, e: &Evaluation) -> String {
    let mut s = format!("{what:>12}: loss {:.4}", e.loss);
    for (n, v) in &e.metrics {
        s.push_str(&format!("  {n} {v:.4}"));
    }
    s.push_str(&format!("  ({} rows)", e.rows));
    s
}

pub(crate) fn eval_json(e: &Evaluation) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    o.insert("rows".into(), e.rows.into());
    o.insert(OUTPUT_LOSS.into(), e.loss.into());
    for (n, v) in &e.metrics {
        o.insert(n.clone(), (*v).into());
    }
    serde_json::Value::Object(o)
}
