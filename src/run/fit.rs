//! Training a prepared run: from its batches to its [`Outcome`].
//!
//! Owns: [`Prepared::fit`] — the training batches (a replica's shard of
//! them), the warm start, resuming from the checkpoint directory, the
//! replicas' agreement before and after, the hooks ([`RunHooks`]), the loop
//! (`runtime::train::fit_with`), a failure explained against the spec
//! (`replay`), and the evaluations after training.
//!
//! Invariants: the warm start comes before the resume (a resumed run
//! overwrites its parameters with its own); every replica starts from
//! replica 0's state; a failed run returns its error after its last good
//! checkpoint is complete; the evaluations after training see the trained
//! variables, and those with the moving averages leave them as they were.

use std::time::Instant;

use specc_runtime::checkpoint::BundleReader;
use specc_runtime::pipeline::Shard;
use specc_runtime::source::BatchSource;
use specc_runtime::train::{
    evaluate_rows, fit_with, seek, CheckpointSaverHook, EvalSet, MakeSource, Timer, TrainError,
    Trainer,
};

use super::data::{EvalData, TrainingData};
use super::hooks::{RunHooks, SummaryExtras, Watch};
use super::observer::Observer;
use super::outcome::{Outcome, ReplicaInfo};
use super::prepare::Prepared;
use super::replicas::Replicas;
use super::{replay, restore, Error, TrainingFailure};

impl Prepared<'_> {
    /// Trains the prepared run to its last step (or the data's end),
    /// telling `observer` as it goes, and evaluates the result.
    pub fn fit(self, observer: &mut dyn Observer) -> Result<Outcome, Error> {
        let Prepared {
            mut trained,
            resolved,
            spec,
            replicas,
            eval_with_averages,
            exchange_timeout,
            compile_s,
            data,
            data_name,
            eval,
            train_rows,
            eval_rows,
            steps,
        } = self;
        let watch = Watch::new(observer);
        let leader = replicas.is_none_or(Replicas::is_leader);
        let config = &resolved.config;
        let src = &resolved.source;
        let program = &*trained.program;
        let session = &mut trained.session;
        let model = &program.model;
        let cfg = model.train.config(steps);
        // The training batches (again for a replay that finds a NaN's
        // origin); a replica computes its slice of every global batch.
        let layout = session.layout.clone();
        let inputs = model.input_specs();
        let shard = replicas.map(|r| Shard {
            index: r.rank(),
            count: r.size(),
        });
        let mut batches = data.batches(&layout, &inputs, train_rows.clone(), &cfg, shard)?;
        // `init_from_checkpoint`: parameters start from another checkpoint
        // (a resumed run then overwrites them with its own).
        if let Some(ws) = &config.warm_start {
            let (n, prefix) = restore::warm_start(session, ws)?;
            if leader {
                watch.note(&format!(
                    "{n} parameter{} initialized from {}",
                    if n == 1 { "" } else { "s" },
                    prefix.display()
                ));
            }
        }
        // A checkpoint directory with a checkpoint: continue from it, to the
        // same bits as a run that never stopped (MonitoredTrainingSession).
        let mut saver = None;
        // Tables sharded across the replicas: every replica writes its
        // rows of each checkpoint (the leader's manager lists them).
        let sharded = replicas.is_some() && !session.layout.sharded.is_empty();
        let mut sharded_saves = None;
        let mut resumed_from = None;
        let c = &config.checkpoint;
        if let Some(dir) = &c.dir {
            let r = restore::resume(
                c,
                dir,
                &resolved,
                &spec,
                session,
                &mut batches,
                leader,
                &watch,
            )?;
            resumed_from = r.restored.map(|r| r.prefix);
            // The config has TF's defaults applied (600 s with a directory
            // alone); with neither period, the hook saves at the end only.
            let timer = Timer::new(c.every_steps, c.every_secs);
            if sharded {
                sharded_saves = Some(leader.then_some((r.manager, timer)));
            } else if leader {
                saver = Some(CheckpointSaverHook::new(r.manager, timer).map_err(Error::Io)?);
            }
        }
        let dataset_rows = data.dataset().map_or(0, |d| d.rows);
        // Every replica runs the same spec, settings and data (else they
        // would compute different steps, or wait for each other forever),
        // and starts from replica 0's model (Horovod's
        // broadcast_global_variables): the same bits whatever each one read.
        if let Some(r) = replicas {
            let what = format!("{}\n{steps}\n{data_name}\n{dataset_rows}", src.text);
            r.check_same(&what)?;
            specc_runtime::train::replicas::broadcast_state(session, &*r.collective());
        }
        let start_step = session.global_step;
        let last_step = i64::try_from(steps).unwrap_or(i64::MAX);
        watch.with(|o| o.begin(start_step, steps));
        // Held-out evaluation: every N steps when asked, and at the end (the
        // run's final held-out numbers).
        let max_batch = session.max_batch();
        let eval_all: Vec<u32> = match &eval {
            Some(EvalData::Memory(d)) => (0..d.rows as u32).collect(),
            _ => Vec::new(),
        };
        // Tables sharded across the replicas: every replica evaluates the
        // same batches together, fetching the rows each batch looks up.
        if let (true, Some(r)) = (sharded, replicas) {
            let grad = session.function_index(specc_runtime::abi::REPLICA_GRAD);
            let eval = session.function_index("eval");
            if let (Some(grad), Some(eval)) = (grad, eval) {
                let tables = specc_runtime::train::sharded::ShardedTables::new(
                    session,
                    r.collective(),
                    grad,
                )
                .map_err(Error::Session)?;
                if let Some(t) = tables {
                    session.set_prologue(eval, Box::new(t));
                }
            }
            if leader {
                let n = session.layout.sharded.len();
                watch.note(&format!(
                    "{n} table{} sharded across the replicas; they evaluate together",
                    if n == 1 { " is" } else { "s are" }
                ));
            }
        }
        let eval_set = if !leader && !sharded {
            None
        } else if let Some(EvalData::Stream(s)) = &eval {
            let (layout, inputs) = (&layout, &inputs);
            let make: MakeSource<'_> = Box::new(move || {
                specc_runtime::pipeline::StreamingBatches::new(s, inputs, layout, max_batch, 0, 0)
                    .map(|b| Box::new(b) as Box<dyn BatchSource>)
                    .map_err(|e| format!("eval data: {e}"))
            });
            Some(EvalSet::Source(make))
        } else if let Some(EvalData::Memory(d)) = &eval {
            Some(EvalSet::Rows {
                data: d,
                rows: &eval_all,
            })
        } else {
            match data.dataset() {
                Some(d) if !eval_rows.is_empty() => Some(EvalSet::Rows {
                    data: d,
                    rows: &eval_rows,
                }),
                _ => None,
            }
        };
        // The spec as written and the configuration the run resolved, for
        // TensorBoard's Text tab (with the first summaries).
        let config_text = super::settings::config_record(&resolved, &spec).config_yaml();
        let texts = vec![
            ("spec".to_string(), markdown_code(&resolved.original.text)),
            ("config".to_string(), markdown_code(&config_text)),
        ];
        let mut hooks = RunHooks::new(
            config,
            &model.metrics,
            last_step,
            eval_set,
            saver,
            leader,
            &watch,
            SummaryExtras {
                texts,
                images: image_summaries(model),
            },
        )?;
        if let (Some(r), Some(parts), Some(dir)) = (replicas, sharded_saves, &c.dir) {
            hooks.share_saves(r.collective(), dir, parts);
        }
        if let (true, Some(r)) = (sharded, replicas) {
            hooks.share_histograms(r.collective(), session);
        }
        let t1 = Instant::now();
        let streamed = matches!(data, TrainingData::Stream(_));
        let mut trainer = match replicas {
            Some(r) => Trainer::replicated(session, r.collective(), streamed),
            None => Trainer::new(session),
        }
        .map_err(Error::Session)?;
        if let Some(r) = replicas {
            r.watch_exchanges(&mut trainer, exchange_timeout);
        }
        let trained_run = fit_with(trainer, session, &mut batches, &mut hooks.all());
        let train_s = t1.elapsed().as_secs_f64();
        hooks.close_summaries()?;
        let bad = batches.bad_records();
        if let Some(b) = bad.as_ref().filter(|b| b.count > 0) {
            watch.note(&b.to_string());
        }
        let summary = match trained_run {
            Ok(t) => t,
            Err(e) if replicas.is_some() => return Err(failed(e, src)),
            Err(e) => {
                let resumed = resumed_from.as_deref();
                return Err(replay::explain(e, src, resumed, || {
                    let mut replay = data
                        .batches(&layout, &inputs, train_rows.clone(), &cfg, None)
                        .map_err(|e| e.to_string())?;
                    if let Some(prefix) = resumed {
                        let reader = BundleReader::open(prefix).map_err(|e| e.to_string())?;
                        seek(&reader, &mut replay).map_err(|e| e.to_string())?;
                    }
                    Ok(Box::new(replay))
                }));
            }
        };
        let info = replicas.map(|r| ReplicaInfo {
            rank: r.rank(),
            size: r.size(),
            nodes: r.nodes(),
            shared_exchange: r.shared_exchange(),
            peak_rss: peak_rss_of_replicas(&*r.collective()),
        });
        // The replicas hold the same model, bit for bit, or the run failed.
        if let Some(r) = replicas {
            r.check_identical(session)?;
        }
        // A resumed run already at its last step trains nothing and reports
        // (Estimator's "Skipping training since max_steps has already saved").
        if summary.last.is_none() && leader {
            watch.note(&format!(
                "nothing to train: the checkpoint is at global step {start_step}, \
                 and training ends at step {steps} (raise --steps to train further)"
            ));
        }
        let metrics = &model.metrics;
        let mut train_eval = None;
        let mut held_out = None;
        let mut averaged = None;
        // With sharded tables every replica takes part in each evaluation.
        if leader || sharded {
            // A streamed run has no rows in memory to evaluate on.
            if let Some(d) = data.dataset() {
                train_eval = Some(
                    evaluate_rows(session, d, &train_rows, metrics).map_err(|e| failed(e, src))?,
                );
            }
            if let Some(e) = hooks.evaluation.as_mut() {
                e.close().map_err(|e| Error::Io(e.to_string()))?;
                held_out = e.evaluation.results.last().map(|(_, e)| e.clone());
                if held_out.is_none() {
                    held_out = Some(
                        e.evaluation
                            .set_mut()
                            .evaluate(session, metrics)
                            .map_err(|e| failed(e, src))?,
                    );
                }
            }
            if let (true, Some(d)) = (eval_with_averages, data.dataset()) {
                let mut set = hooks.evaluation.as_mut().map(|e| e.evaluation.set_mut());
                let (train, held) = session.with_averages(|s| {
                    let train = evaluate_rows(s, d, &train_rows, metrics);
                    let held = match set.as_mut() {
                        None => Ok(None),
                        Some(set) => set.evaluate(s, metrics).map(Some),
                    };
                    (train, held)
                });
                averaged = Some((
                    train.map_err(|e| failed(e, src))?,
                    held.map_err(|e| failed(e, src))?,
                ));
            }
        }
        let checkpoint = hooks.last_saved();
        let epochs = batches.epochs_started();
        let global_step = session.global_step;
        drop(hooks);
        drop(batches);
        Ok(Outcome {
            name: model.name.clone(),
            steps: summary.steps,
            global_step,
            start_step,
            last_step: steps,
            batch: model.train.batch as usize,
            last: summary.last,
            epochs,
            train: train_eval,
            held_out,
            averaged,
            bad_records: bad,
            checkpoint,
            resumed_from,
            compile_s,
            train_s,
            replicas: info,
            sharded_exchange_s: summary.sharded_exchange_s,
            model: trained,
        })
    }
}

/// Every replica's peak resident memory, in replica order (a collective).
fn peak_rss_of_replicas(comm: &dyn specc_runtime::train::replicas::Collective) -> Vec<u64> {
    let n = comm.replicas();
    let mine = super::outcome::peak_rss_bytes();
    let mut all = vec![0u32; 2 * n];
    let counts = vec![2i32; n];
    let displs: Vec<i32> = (0..n as i32).map(|r| 2 * r).collect();
    comm.all_gather(
        &[mine as u32, (mine >> 32) as u32],
        &mut all,
        &counts,
        &displs,
    );
    all.chunks(2)
        .map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32))
        .collect()
}

/// A training error that is not explained against the spec (a replica's,
/// an evaluation's): a data error, or the failure as it is.
fn failed(e: TrainError, src: &specc_grammar::SourceFile) -> Error {
    match e {
        TrainError::Data(d) => Error::Data(d.to_string()),
        error => Error::Training(Box::new(TrainingFailure {
            error,
            source: src.clone(),
            diagnostic: None,
            origin_unknown: None,
        })),
    }
}

/// `text` as a Markdown code block (TensorBoard renders text summaries as
/// Markdown: a spec's `#` comments would become headings), fenced with
/// more backticks than any run in it.
fn markdown_code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}\n{}\n{fence}", text.trim_end())
}

/// Each `image/<name>` output of the summary step (`summaries {
/// image_tensors }`): its name and its images' `[H, W, C]`.
fn image_summaries(model: &specc_compiler::Model) -> Vec<(String, [usize; 3])> {
    let Some(f) = model.functions.summary_step.as_ref() else {
        return Vec::new();
    };
    f.outputs
        .iter()
        .filter_map(|o| {
            let name = o
                .name
                .strip_prefix(specc_runtime::abi::IMAGE_OUTPUT_PREFIX)?;
            let dims = &model.graph.shape(o.node).0;
            let [_, h, w, c] = dims[..] else {
                return None;
            };
            Some((
                name.to_string(),
                [
                    h.fixed()? as usize,
                    w.fixed()? as usize,
                    c.fixed()? as usize,
                ],
            ))
        })
        .collect()
}
