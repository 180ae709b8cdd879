//! `specc run SPEC`: compile, train with a progress bar (on a terminal) or a
//! log line every few seconds (elsewhere), report metrics on the training
//! rows and on a held-out split (and, with `--eval-with-averages`, again with
//! the parameters' moving averages in their place).
//!
//! With `--json` the last line of stdout is one JSON object, also when the
//! run fails: then it holds `error` and the step the run reached.

use std::cell::Cell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use specc_compiler::driver::{compile_with, Functions, Options};
use specc_runtime::abi::{OUTPUT_GLOBAL_NORM, OUTPUT_LEARNING_RATE, OUTPUT_LOSS};
use specc_runtime::checkpoint::{BundleReader, CheckpointManager};
use specc_runtime::config::warm_start;
use specc_runtime::data::{DataError, Dataset, Source, ValuesMut};
use specc_runtime::pipeline::StreamingBatches;
use specc_runtime::source::{BatchBuffers, BatchSource, ShuffledBatches};
use specc_runtime::summary::hooks::{
    create_eval_writer, EvaluationSummaryHook, StepCounterHook, SummarySaverHook,
};
use specc_runtime::summary::SummaryWriter;
use specc_runtime::train::Duration;
use specc_runtime::train::{
    evaluate_rows, fit_with, restore_latest, seek, CheckpointSaverHook, DivergenceHook, EvalSet,
    Evaluation, EvaluationHook, Hook, LoggingHook, MakeSource, NanTensorHook, StepValues,
    StopAtStepHook, Timer, Trainer, DIVERGENCE_FACTOR,
};

use specc_compiler::config::{self, Flags};
use specc_runtime::config::record::RunRecord;

use super::run_hooks::TensorLogHook;
use crate::distributed::{Launch, Replicas};
use crate::load::{data_source, report, resolve_run, stream_name};
use crate::Failure;

/// The command line of `specc run`.
pub struct RunOptions {
    /// `--config FILE`: a YAML run configuration.
    pub config: Option<PathBuf>,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<String>,
    /// The dedicated flags (`--steps`, `--data`, `--checkpoint-dir`, ...).
    pub flags: Flags,
    pub eval_with_averages: bool,
    /// `--eval-data FILE`: evaluate on this CSV (the spec's `eval_data`).
    pub eval_data: Option<PathBuf>,
    pub json: bool,
    /// `--distributed`: whether this process is one replica of an MPI job.
    pub distributed: Launch,
    /// `--exchange-timeout`: seconds a replica waits for the others in one
    /// step's exchange before it ends the job (0: forever).
    pub exchange_timeout: f64,
}

/// Steps between two updates of the progress bar.
const PROGRESS_EVERY: u64 = 64;

/// Seconds between two log lines when stderr is not a terminal.
const LOG_EVERY_SECS: f64 = 10.0;

/// How far a run got: what `--json` reports when it fails.
#[derive(Default)]
struct Reached {
    model: Option<String>,
    last: Cell<Option<StepValues>>,
}

pub fn run(spec: &Path, opts: &RunOptions) -> Result<(), Failure> {
    let replicas = Replicas::start(opts.distributed)?;
    let mut reached = Reached::default();
    let result = train(spec, opts, &mut reached, replicas.as_ref());
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
        let last = reached.last.get();
        let mut obj = serde_json::Map::new();
        if let Some(m) = &reached.model {
            obj.insert("model".into(), m.clone().into());
        }
        let error = match failure {
            Failure::Spec => format!("{} has errors (see stderr)", spec.display()),
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

/// A float as JSON: a number, or a string (`"NaN"`, `"inf"`) where JSON has none.
fn json_f32(v: f32) -> serde_json::Value {
    if v.is_finite() {
        f64::from(v).into()
    } else {
        v.to_string().into()
    }
}

fn train(
    spec: &Path,
    opts: &RunOptions,
    reached: &mut Reached,
    replicas: Option<&Replicas>,
) -> Result<(), Failure> {
    // A replica other than the first trains quietly and writes nothing.
    let leader = replicas.is_none_or(Replicas::is_leader);
    let json = opts.json && leader;
    let (steps, eval_fraction) = (opts.flags.steps, opts.flags.eval_fraction);
    // The spec with the config file's, `--set`'s and the flags' overrides
    // written into it, checked; and the run's settings.
    let run = resolve_run(spec, opts.config.as_deref(), &opts.sets, &opts.flags)?;
    let config = &run.config;
    let src = &run.source;
    let t0 = Instant::now();
    let options = Options {
        replicas: replicas.map(|r| r.size() as u32),
        shared_exchange: replicas.is_some_and(Replicas::shared_exchange),
        ..Options::default()
    };
    let program = compile_with(src, Functions::TRAIN, &options).map_err(|d| report(&d, src))?;
    let compile_s = t0.elapsed().as_secs_f64();
    let model = &program.model;
    reached.model = Some(model.name.clone());
    if opts.eval_with_averages && model.ema.is_none() {
        return Err(Failure::Other(format!(
            "--eval-with-averages: {} has no moving averages; add `ema DECAY` to the spec",
            spec.display()
        )));
    }
    // The session first: a model that does not fit in memory is refused
    // before its data is read.
    let mut session = program.session()?;
    // `eval_data` (or `--eval-data`), checked before the data is read.
    let eval_source = crate::load::eval_data_source(model, spec, opts.eval_data.as_deref())?;
    // A streaming source (TFRecord, glob, pipeline options) is read by the
    // input pipeline as training goes; anything else is loaded in memory.
    let stream = match data_source(model, spec, config.data.as_deref())? {
        Source::Stream(s) => Some(s),
        _ => None,
    };
    // An image input with random transforms: the data set holds their
    // evaluation form; the augmenter redraws them for every training batch.
    let (dataset, data_name, augmenter) = match &stream {
        None => crate::load::load_data_for_training(model, spec, config.data.as_deref())?,
        Some(s) => (
            Dataset {
                rows: 0,
                inputs: Vec::new(),
            },
            stream_name(s),
            None,
        ),
    };
    let image_input = model
        .inputs
        .iter()
        .find(|i| i.spec.columns == [specc_runtime::data::images::IMAGE_COLUMN])
        .map(|i| i.spec.name.clone());

    // `eval_data` (or `--eval-data`): evaluations read it instead of a
    // held-out split; loaded whole (a single CSV) or streamed, one pass each.
    let eval_stream = match &eval_source {
        Some(Source::Stream(s)) => {
            let mut s = s.clone();
            s.num_epochs = Some(1);
            Some(s)
        }
        _ => None,
    };
    let eval_dataset = match &eval_source {
        Some(Source::Csv { .. }) | Some(Source::Synthetic(_)) => {
            let source = eval_source.as_ref().expect("matched");
            Some(
                specc_runtime::data::load(source, &model.input_specs())
                    .map_err(|e| Failure::Other(format!("eval data: {e}")))?,
            )
        }
        _ => None,
    };
    let eval_all: Vec<u32> = (0..eval_dataset.as_ref().map_or(0, |d| d.rows) as u32).collect();
    let eval_name = eval_source.as_ref().map(|s| match s {
        Source::Csv { path } => path.display().to_string(),
        Source::Stream(s) => stream_name(s),
        Source::Synthetic(_) => "synthetic".to_string(),
        Source::Images(s) => s.source.display(),
    });

    let fraction = eval_fraction.unwrap_or(model.train.eval_fraction);
    if !(0.0..1.0).contains(&fraction) {
        return Err(Failure::Other(format!(
            "--eval-fraction must be in [0, 1), got {fraction}"
        )));
    }
    let (train_rows, eval_rows) = match stream {
        None if eval_source.is_some() => ((0..dataset.rows as u32).collect(), Vec::new()),
        None => model.held_out_split(&dataset, fraction),
        Some(_) => (Vec::new(), Vec::new()),
    };
    let batch = model.train.batch as usize;
    // Streaming: `steps` is an upper bound, and the data's end (its
    // `num_epochs`, or the `train` item's `epochs`) ends the run.
    let stream = stream.map(|mut s| {
        if let (None, Duration::Epochs(e)) = (s.num_epochs, model.train.duration) {
            s.num_epochs = Some(e);
        }
        s
    });
    let steps = match (&stream, steps, model.train.duration) {
        (_, Some(s), _) => s,
        (Some(_), None, Duration::Epochs(_)) => i64::MAX as u64,
        (_, None, _) => model.train.steps(train_rows.len()),
    };
    if steps == 0 {
        return Err(Failure::Other(format!(
            "{}: nothing to train: {} training rows come to 0 steps",
            spec.display(),
            train_rows.len()
        )));
    }
    let eval_what = match (&eval_name, &eval_dataset) {
        (Some(n), Some(d)) => format!("; eval data {n}: {} rows", d.rows),
        (Some(n), None) => format!("; eval data {n}: streamed"),
        _ => String::new(),
    };
    // `total_num_replicas`: the job must have that many ranks.
    if let Some(sync) = model.train.sync_replicas {
        let ranks = replicas.map_or(1, Replicas::size);
        if replicas.is_some() && ranks != sync.total as usize {
            return Err(Failure::Other(format!(
                "{}: the spec trains with total_num_replicas = {}, but the MPI job has {ranks} \
                 rank{}: start it with mpirun -np {}",
                spec.display(),
                sync.total,
                if ranks == 1 { "" } else { "s" },
                sync.total
            )));
        }
        if replicas.is_none() && sync.total > 1 {
            eprintln!(
                "specc: the spec is written for {} replicas; this run is one process, which \
                 trains on the whole global batch (the same model)",
                sync.total
            );
        }
    }
    if let Some(r) = replicas.filter(|_| leader) {
        eprintln!(
            "specc: replica 0 of {} on {} node{}: each replica trains on {} rows of every \
             batch of {}; gradients exchanged {}",
            r.size(),
            r.nodes(),
            if r.nodes() == 1 { "" } else { "s" },
            specc_runtime::train::replicas::shard_rows(model.train.batch as usize, r.size())[0],
            model.train.batch,
            if r.shared_exchange() {
                "through shared memory"
            } else {
                "by allreduce"
            }
        );
    }
    if !leader {
    } else if stream.is_some() {
        eprintln!(
            "specc: compiled `{}` in {:.1} ms; data {}: streamed{}",
            model.name,
            compile_s * 1e3,
            data_name,
            if eval_what.is_empty() {
                " (no held-out split)"
            } else {
                &eval_what
            },
        );
    } else if !eval_what.is_empty() {
        eprintln!(
            "specc: compiled `{}` in {:.1} ms; data {}: {} rows (all train){eval_what}",
            model.name,
            compile_s * 1e3,
            data_name,
            dataset.rows,
        );
    } else {
        eprintln!(
            "specc: compiled `{}` in {:.1} ms; data {}: {} rows ({} train, {} held out)",
            model.name,
            compile_s * 1e3,
            data_name,
            dataset.rows,
            train_rows.len(),
            eval_rows.len()
        );
    }

    let cfg = model.train.config(steps);
    // The training batches (again for a replay that finds a NaN's origin).
    let layout = session.layout.clone();
    let inputs = model.input_specs();
    let train_batches = || -> Result<Batches<'_>, String> {
        match &stream {
            None => ShuffledBatches::new(
                &dataset,
                &layout,
                train_rows.clone(),
                cfg.batch,
                cfg.shuffle,
                cfg.seed,
            )
            .map(|b| {
                let augment = augmenter.as_ref().and_then(|a| {
                    let name = image_input.as_deref()?;
                    let i = layout.inputs.iter().position(|l| l.name == name)?;
                    Some((a, i))
                });
                Batches::Memory(b, augment)
            }),
            Some(s) => StreamingBatches::new(s, &inputs, &layout, cfg.batch, cfg.shuffle, cfg.seed)
                .map(|b| Batches::Stream(Box::new(b)))
                .map_err(|e| e.to_string()),
        }
    };
    let mut batches = train_batches()?;
    // A replica computes its slice of every global batch.
    if let Some(r) = replicas {
        batches = match batches {
            Batches::Memory(b, augment) => Batches::Memory(b.shard(r.rank(), r.size()), augment),
            Batches::Stream(_) => {
                // Its own files, or every N-th record (`tf.data`'s shard).
                let mut s = stream.clone().expect("a streamed source");
                s.shard = specc_runtime::pipeline::Shard {
                    index: r.rank(),
                    count: r.size(),
                };
                let rows = specc_runtime::train::replicas::shard_rows(cfg.batch, r.size());
                let b = StreamingBatches::new(
                    &s,
                    &inputs,
                    &layout,
                    rows[r.rank()],
                    cfg.shuffle,
                    cfg.seed,
                )
                .map_err(|e| e.to_string())?;
                Batches::Sharded(Box::new(b))
            }
            b => b,
        };
    }
    // A checkpoint directory with a checkpoint: continue from it, to the
    // same bits as a run that never stopped (MonitoredTrainingSession).
    // `init_from_checkpoint`: parameters start from another checkpoint (a
    // resumed run then overwrites them with its own).
    if let Some(ws) = &config.warm_start {
        let (n, prefix) = warm_start::apply(&mut session, ws)?;
        if leader {
            eprintln!(
                "specc: {n} parameter{} initialized from {}",
                if n == 1 { "" } else { "s" },
                prefix.display()
            );
        }
    }
    let mut saver = None;
    let mut resumed_from = None;
    let c = &config.checkpoint;
    if let Some(dir) = &c.dir {
        let keep = (c.keep > 0).then_some(c.keep as usize);
        let manager =
            CheckpointManager::new(dir, keep, c.keep_every_n_hours).map_err(|e| e.to_string())?;
        // A variable of another shape is refused first (naming it and both
        // shapes); then `run.yaml`, the record of the run (spec, its hash,
        // overrides, data), refuses a changed spec and warns about changed
        // data.
        let restored = restore_latest(dir, &mut session, &mut batches)
            .map_err(|e| format!("cannot resume from {}: {e}", dir.display()))?;
        let record = config::record(&run, spec, env!("CARGO_PKG_VERSION"))?;
        if restored.is_some() && leader {
            if let Some(old) = RunRecord::read(dir)? {
                for w in old.check_resume(&record, dir)?.warnings {
                    eprintln!("warning: {w}");
                }
            }
        }
        if leader {
            record.write(dir)?;
        }
        if let Some(r) = restored {
            resumed_from = Some(r.prefix.clone());
            // A replica's shard of a stream has no saved position (each
            // replica's differs; replica 0 saves): every step took one
            // share from each replica, so each skips as many shares.
            let sharded = matches!(batches, Batches::Sharded(_));
            if sharded {
                for _ in 0..r.global_step.max(0) {
                    if session.fill(&mut batches).map_err(|e| e.to_string())? == 0 {
                        break;
                    }
                }
            }
            if leader {
                eprintln!(
                    "specc: resumed from {} at global step {}{}",
                    r.prefix.display(),
                    r.global_step,
                    if sharded {
                        " (each replica read past its shares of the steps done)"
                    } else if r.position_restored {
                        ""
                    } else {
                        " (the checkpoint has no batch position: the data starts over)"
                    }
                );
            }
        }
        // The config has TF's defaults applied (600 s with a directory alone);
        // with neither period, the hook saves at the end only.
        let timer = Timer::new(c.every_steps, c.every_secs);
        if leader {
            saver = Some(CheckpointSaverHook::new(manager, timer)?);
        }
    }
    // Every replica runs the same spec, settings and data (else they would
    // compute different steps, or wait for each other forever), and starts
    // from replica 0's model (Horovod's broadcast_global_variables): the
    // same bits whatever each one read.
    if let Some(r) = replicas {
        let what = format!("{}\n{steps}\n{data_name}\n{}", src.text, dataset.rows);
        let hash = specc_runtime::train::replicas::hash_bytes(what.as_bytes());
        if let Err(differ) = specc_runtime::train::replicas::check_same(&*r.collective(), hash) {
            return Err(Failure::Other(format!(
                "replica{} {differ:?} run{} another spec, configuration or data than \
                 replica 0: every replica must be started with the same command",
                if differ.len() == 1 { "" } else { "s" },
                if differ.len() == 1 { "s" } else { "" },
            )));
        }
        specc_runtime::train::replicas::broadcast_state(&mut session, &*r.collective());
    }
    let start_step = session.global_step;
    let last_step = i64::try_from(steps).unwrap_or(i64::MAX);
    // A progress bar on a terminal; elsewhere (a log file, CI) a line every
    // few seconds, as TF's LoggingTensorHook and StepCounterHook print.
    let terminal = std::io::stderr().is_terminal();
    let pb = if terminal && leader {
        ProgressBar::new(steps.saturating_sub(start_step.max(0) as u64))
    } else {
        ProgressBar::hidden()
    };
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:32} {pos}/{len} steps  {per_sec}  loss {msg}  eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let last_seen = &reached.last;
    let mut reach = LoggingHook::new(1, |v| last_seen.set(Some(*v)));
    let mut progress = LoggingHook::new(PROGRESS_EVERY, |v| {
        pb.set_position(v.step);
        pb.set_message(format!("{:.4}", v.loss));
    });
    let mut since = (0u64, Instant::now());
    let log_timer = Timer::new(None, Some(LOG_EVERY_SECS));
    let mut log_lines = LoggingHook::with_timer(log_timer, |v| {
        if !terminal && leader {
            let sps = (v.step - since.0) as f64 / since.1.elapsed().as_secs_f64().max(1e-9);
            since = (v.step, Instant::now());
            eprintln!("{}", log_line(v, steps, sps));
        }
    });
    let mut divergence = DivergenceHook::new(DIVERGENCE_FACTOR, |first, now| {
        if !leader {
            return;
        }
        pb.suspend(|| {
            eprintln!(
                "warning: the loss grew from {:.4e} at step {} to {:.4e} at step {}: \
                 training is diverging; lower the learning rate",
                first.loss, first.step, now.loss, now.step
            )
        })
    });
    let mut nan = NanTensorHook::default();
    // `steps` is the global step training ends at (TF's `last_step`), so a
    // resumed run does the rest.
    let mut stop = StopAtStepHook::last_step(last_step);

    // Summaries for TensorBoard: the step's scalars (and opt-in histograms
    // of the parameters) and global_step/sec in DIR, evaluations in DIR/eval.
    let sc = &config.summaries;
    let summary_dir = sc
        .dir
        .as_ref()
        .filter(|_| sc.every_steps.is_some() && leader);
    let writer = summary_dir
        .map(SummaryWriter::create)
        .transpose()
        .map_err(|e| e.to_string())?;
    let every = sc.every_steps.unwrap_or(1);
    let mut summary_hooks = writer.as_ref().map(|w| {
        (
            SummarySaverHook::new(w.clone(), every, sc.histograms).with_metrics(&model.metrics),
            StepCounterHook::new(w.clone(), every),
        )
    });
    // Held-out evaluation: every N steps when asked, and at the end (the
    // run's final held-out numbers).
    let layout_eval = session.layout.clone();
    let eval_inputs = model.input_specs();
    let max_batch = session.max_batch();
    let eval_set = if !leader {
        None
    } else if let Some(s) = eval_stream.clone() {
        let (layout, inputs) = (&layout_eval, &eval_inputs);
        let make: MakeSource<'_> = Box::new(move || {
            StreamingBatches::new(&s, inputs, layout, max_batch, 0, 0)
                .map(|b| Box::new(b) as Box<dyn BatchSource>)
                .map_err(|e| format!("eval data: {e}"))
        });
        Some(EvalSet::Source(make))
    } else if let Some(d) = &eval_dataset {
        Some(EvalSet::Rows {
            data: d,
            rows: &eval_all,
        })
    } else if !eval_rows.is_empty() {
        Some(EvalSet::Rows {
            data: &dataset,
            rows: &eval_rows,
        })
    } else {
        None
    };
    let mut evaluation = if let Some(set) = eval_set {
        let eval_writer = summary_dir
            .map(create_eval_writer)
            .transpose()
            .map_err(|e| e.to_string())?;
        let periodic = config.evaluate.every_steps;
        let hook = EvaluationSummaryHook::new(
            EvaluationHook::over(periodic.unwrap_or(0), set, &model.metrics),
            eval_writer,
        );
        Some(match periodic {
            Some(_) => hook.reporting(|step: i64, e: &Evaluation| {
                pb.suspend(|| eprintln!("{}", line(&format!("eval @ {step}"), e)))
            }),
            None => hook,
        })
    } else {
        None
    };
    // `logging { tensors }`: the named tensors (TF's LoggingTensorHook).
    let lc = &config.logging;
    let mut tensor_log = (!lc.tensors.is_empty() && leader).then(|| {
        TensorLogHook::new(
            lc.tensors.clone(),
            &model.metrics,
            Timer::new(lc.every_steps, lc.every_secs),
            last_step,
            |l: &str| pb.suspend(|| eprintln!("{l}")),
        )
    });
    let mut hooks: Vec<&mut dyn Hook> = vec![
        &mut stop,
        &mut reach,
        &mut progress,
        &mut log_lines,
        &mut divergence,
        &mut nan,
    ];
    if let Some(h) = tensor_log.as_mut() {
        hooks.push(h);
    }
    if let Some((saver, counter)) = summary_hooks.as_mut() {
        hooks.push(saver);
        hooks.push(counter);
    }
    if let Some(e) = evaluation.as_mut() {
        hooks.push(e);
    }
    // Checkpoints last: a failing hook before it ends the run without a
    // checkpoint of its step.
    if let Some(s) = saver.as_mut() {
        hooks.push(s);
    }
    let t1 = Instant::now();
    let mut trainer = match replicas {
        Some(r) => Trainer::replicated(&session, r.collective(), stream.is_some()),
        None => Trainer::new(&session),
    }
    .map_err(Failure::Other)?;
    // MPI's collectives have no timeout: a replica that hangs without dying
    // would keep the others waiting forever.
    if let Some(r) = replicas.filter(|_| opts.exchange_timeout > 0.0) {
        let (rank, size) = (r.rank(), r.size());
        trainer.watch_exchanges(
            std::time::Duration::from_secs_f64(opts.exchange_timeout),
            Box::new(move |m| {
                eprintln!("error: replica {rank} of {size}: {m}");
                eprintln!("specc: replica {rank} of {size} gives up: stopping the job");
                // Without atexit handlers (MPI's may wait for the others);
                // mpirun ends the job when a rank exits unfinalized.
                #[cfg(unix)]
                // SAFETY: ends the process at once; nothing runs after it.
                unsafe {
                    libc::_exit(1)
                };
                #[cfg(not(unix))]
                std::process::exit(1)
            }),
        );
    }
    let trained = fit_with(trainer, &mut session, &mut batches, &mut hooks);
    drop(hooks);
    let train_s = t1.elapsed().as_secs_f64();
    if let Some(w) = &writer {
        w.close().map_err(|e| e.to_string())?;
    }
    let bad = batches.bad_records();
    if let Some(b) = bad.as_ref().filter(|b| b.count > 0) {
        pb.suspend(|| eprintln!("specc: {b}"));
    }
    let trained = match trained {
        Ok(t) => t,
        Err(e) if replicas.is_some() => return Err(Failure::from(e)),
        Err(e) => {
            // `reach` ran before the failing hook: `reached` has the step.
            pb.abandon();
            let resumed = resumed_from.as_deref();
            return Err(crate::report::train_failure(e, src, resumed, || {
                let mut replay = train_batches()?;
                if let Some(prefix) = resumed {
                    let reader = BundleReader::open(prefix).map_err(|e| e.to_string())?;
                    seek(&reader, &mut replay).map_err(|e| e.to_string())?;
                }
                Ok(Box::new(replay))
            }));
        }
    };
    pb.finish_and_clear();
    // The replicas hold the same model, bit for bit, or the run failed.
    if let Some(r) = replicas {
        let comm = r.collective();
        if let Err(differ) = specc_runtime::train::replicas::check_identical(&session, &*comm) {
            return Err(Failure::Other(format!(
                "after training, replica{} {differ:?} hold{} a model that differs from \
                 replica 0's",
                if differ.len() == 1 { "" } else { "s" },
                if differ.len() == 1 { "s" } else { "" },
            )));
        }
        if !leader {
            return Ok(());
        }
    }
    // A resumed run already at its last step trains nothing and reports
    // (Estimator's "Skipping training since max_steps has already saved").
    if trained.last.is_none() {
        eprintln!(
            "specc: nothing to train: the checkpoint is at global step {start_step}, \
             and training ends at step {steps} (raise --steps to train further)"
        );
    }
    reached.last.set(trained.last);
    let metrics = &model.metrics;
    // A streamed run has no rows in memory to evaluate on.
    let train_eval = if stream.is_none() {
        Some(evaluate_rows(&mut session, &dataset, &train_rows, metrics)?)
    } else {
        None
    };
    let mut held_out = match evaluation.as_mut() {
        Some(e) => {
            e.close().map_err(|e| e.to_string())?;
            e.evaluation.results.last().map(|(_, e)| e.clone())
        }
        None => None,
    };
    if held_out.is_none() {
        if let Some(e) = evaluation.as_mut() {
            held_out = Some(e.evaluation.set_mut().evaluate(&mut session, metrics)?);
        }
    }
    // The last step's scalar outputs besides the loss: the learning rate and,
    // with the `global_norm` metric, the gradients' global norm.
    let last_outputs: Vec<(&str, f32)> = match trained.last {
        Some(last) => [
            (OUTPUT_LEARNING_RATE, last.learning_rate),
            (OUTPUT_GLOBAL_NORM, last.global_norm),
        ]
        .into_iter()
        .filter_map(|(n, v)| Some((n, v?)))
        .collect(),
        None => Vec::new(),
    };
    let averaged = if opts.eval_with_averages && stream.is_none() {
        let mut set = evaluation.as_mut().map(|e| e.evaluation.set_mut());
        let (train, held) = session.with_averages(|s| {
            let train = evaluate_rows(s, &dataset, &train_rows, metrics);
            let held = match set.as_mut() {
                None => Ok(None),
                Some(set) => set.evaluate(s, metrics).map(Some),
            };
            (train, held)
        });
        Some((train?, held?))
    } else {
        None
    };
    let last_loss = trained.last.map(|v| v.loss);
    let sps = trained.steps as f64 / train_s.max(1e-9);
    let mut last = match last_loss {
        Some(l) => format!(", last batch loss {l:.4}"),
        None => String::new(),
    };
    for (n, v) in &last_outputs {
        last += &format!(", {n} {v:.6}");
    }
    println!(
        "trained {} steps in {:.2} s ({:.0} steps/s, {} epochs){last}",
        trained.steps,
        train_s,
        sps,
        batches.epochs_started()
    );
    if let Some(t) = &train_eval {
        println!("{}", line("train", t));
    }
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
        obj.insert("global_step".into(), session.global_step.into());
        obj.insert("batch".into(), batch.into());
        if let Some(r) = replicas {
            obj.insert("replicas".into(), r.size().into());
            obj.insert("nodes".into(), r.nodes().into());
            let how = if r.shared_exchange() {
                "shared_memory"
            } else {
                "allreduce"
            };
            obj.insert("exchange".into(), how.into());
        }
        obj.insert("compile_s".into(), compile_s.into());
        obj.insert("train_s".into(), train_s.into());
        obj.insert("steps_per_s".into(), sps.into());
        if let Some(l) = last_loss {
            obj.insert("last_loss".into(), f64::from(l).into());
        }
        for (n, v) in &last_outputs {
            obj.insert((*n).into(), f64::from(*v).into());
        }
        obj.insert(
            "train".into(),
            train_eval
                .as_ref()
                .map(eval_json)
                .unwrap_or(serde_json::Value::Null),
        );
        if let Some(b) = &bad {
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

/// The training batches: in memory, or streamed by the input pipeline.
// One per run: the size of the in-memory variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Batches<'d> {
    /// In-memory rows, and the augmenter of the image input (its index in
    /// the layout) when its transforms draw random numbers.
    Memory(
        ShuffledBatches<'d>,
        Option<(&'d specc_runtime::data::images::Augmenter, usize)>,
    ),
    Stream(Box<StreamingBatches>),
    /// A replica's shard of a stream: it keeps no position (each replica's
    /// differs, and only replica 0 saves); a resumed job reads past the
    /// shares of the steps done.
    Sharded(Box<StreamingBatches>),
}

impl Batches<'_> {
    fn epochs_started(&self) -> u64 {
        match self {
            Batches::Memory(b, _) => b.epochs_started() as u64,
            Batches::Stream(b) | Batches::Sharded(b) => b.epochs_started(),
        }
    }

    /// The streamed source's skipped records.
    fn bad_records(&self) -> Option<specc_runtime::pipeline::BadRecords> {
        match self {
            Batches::Memory(..) => None,
            Batches::Stream(b) | Batches::Sharded(b) => Some(b.bad_records().clone()),
        }
    }
}

impl BatchSource for Batches<'_> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        match self {
            Batches::Memory(b, augment) => {
                let n = b.next_batch(buffers)?;
                if let Some((a, i)) = augment {
                    // The epoch the batch ends in keys its draws.
                    let epoch = (b.epochs_started() as u64).saturating_sub(1);
                    if let ValuesMut::F32(dst) = buffers.input_mut(*i) {
                        a.fill(b.last_batch_rows(), epoch, dst)?;
                    }
                }
                Ok(n)
            }
            Batches::Stream(b) | Batches::Sharded(b) => b.next_batch(buffers),
        }
    }

    fn position(&self) -> Option<Vec<i64>> {
        match self {
            Batches::Memory(b, _) => b.position(),
            Batches::Stream(b) => b.position(),
            Batches::Sharded(_) => None,
        }
    }

    fn seek(&mut self, position: &[i64]) -> Result<(), String> {
        match self {
            Batches::Memory(b, _) => b.seek(position),
            Batches::Stream(b) => b.seek(position),
            Batches::Sharded(_) => Ok(()),
        }
    }
}
