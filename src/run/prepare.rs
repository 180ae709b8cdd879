//! A run up to its first step: the settings resolved, the spec compiled,
//! the session made, the data opened.
//!
//! Owns: [`prepare`] and [`Prepared`]. The order is the contract: the
//! settings are resolved and checked (the spec as written, then with every
//! override) before anything is compiled; the session is made before the
//! data is read (a model that does not fit in memory is refused first);
//! the evaluation data is checked before the training data is read and
//! read after it.
//!
//! Invariants: a prepared run has at least one step to take (or a data
//! stream that ends it); its held-out rows and training rows are disjoint;
//! nothing has been trained or written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_grammar::SourceFile;
use specc_runtime::data::{load_frame, FrameColumn};
use specc_runtime::train::Duration;

use super::data::{self, EvalData, TrainingData};
use super::observer::Observer;
use super::replicas::Replicas;
use super::settings::{self, ConfigError, Resolved};
use super::{Error, Request};
use crate::Model;

/// A run ready to train (see [`prepare`]); [`Prepared::fit`] trains it.
pub struct Prepared<'r> {
    /// The compiled program and its fresh (or warm-started) session.
    pub(crate) trained: Model,
    pub(crate) resolved: Resolved,
    pub(crate) spec: PathBuf,
    pub(crate) replicas: Option<&'r Replicas>,
    pub(crate) eval_with_averages: bool,
    pub(crate) exchange_timeout: f64,
    pub(crate) compile_s: f64,
    pub(crate) data: TrainingData,
    pub(crate) data_name: String,
    pub(crate) eval: Option<EvalData>,
    pub(crate) train_rows: Vec<u32>,
    pub(crate) eval_rows: Vec<u32>,
    pub(crate) steps: u64,
}

impl Prepared<'_> {
    /// Where and how often the run saves checkpoints (resolved: the spec,
    /// the config, `--set` and the flags).
    pub fn checkpoint_config(&self) -> &specc_runtime::config::CheckpointConfig {
        &self.resolved.config.checkpoint
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.trained.program.model.name
    }

    /// The global step training ends at (a streamed run may end before, at
    /// the data's end; `i64::MAX` when only the data's end ends it).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The training rows in memory (none for a stream).
    pub fn train_rows(&self) -> &[u32] {
        &self.train_rows
    }

    /// The held-out rows (none with evaluation data or a stream).
    pub fn held_out_rows(&self) -> &[u32] {
        &self.eval_rows
    }

    /// How the data is named in messages (its file, pattern or directory).
    pub fn data_name(&self) -> &str {
        &self.data_name
    }

    /// The settings in effect: the spec with every override, and the rest.
    pub fn settings(&self) -> &Resolved {
        &self.resolved
    }
}

/// What a run is handed instead of what its request would read (the
/// Python package's `Model.fit`): the spec's text, the training rows in
/// memory, the model whose state training starts from. Each is `None` by
/// default: the run reads it as `specc run` does.
#[derive(Default)]
pub struct Given<'g> {
    /// The spec's text (a spec written in a program, not a file): the
    /// request's `spec` is then only its name in messages and the base of
    /// its relative paths (its parent directory).
    pub spec: Option<SourceFile>,
    /// The training data as named columns in memory (a DataFrame's) and
    /// how messages name it: read through the spec's columns and feature
    /// columns as a CSV file's columns are (`runtime::data::load_frame`),
    /// in place of the spec's `data` (and `--data`), and split into
    /// training and held-out rows as the spec's data would be.
    pub frame: Option<(&'g [FrameColumn<'g>], String)>,
    /// The evaluation data as named columns in memory (a DataFrame's) and
    /// how messages name it, read as `frame` is, in place of the spec's
    /// `eval_data` (and `--eval-data`): evaluations read every row of it
    /// instead of a held-out split.
    pub eval_frame: Option<(&'g [FrameColumn<'g>], String)>,
    /// A model of the same spec whose variables and global step the session
    /// starts from (before a warm start or a resume, which overwrite them);
    /// its variables must have the run's shapes.
    pub start: Option<&'g Model>,
}

/// Resolves `request`'s settings, compiles its spec (for the replicas of a
/// data-parallel job when `replicas` is given), makes the session and
/// opens the data; tells `observer` what it compiled and read.
pub fn prepare<'r>(
    request: &Request,
    replicas: Option<&'r Replicas>,
    observer: &mut dyn Observer,
) -> Result<Prepared<'r>, Error> {
    prepare_given(request, Given::default(), replicas, observer)
}

/// [`prepare`] with what `given` hands the run in place of the request's
/// spec file, data, or fresh variables (see [`Given`]).
pub fn prepare_given<'r>(
    request: &Request,
    given: Given<'_>,
    replicas: Option<&'r Replicas>,
    observer: &mut dyn Observer,
) -> Result<Prepared<'r>, Error> {
    // A replica other than the first trains quietly and writes nothing.
    let leader = replicas.is_none_or(Replicas::is_leader);
    let spec = request.spec.as_path();
    let (steps, eval_fraction) = (request.flags.steps, request.flags.eval_fraction);
    // The spec with the config file's, `--set`'s and the flags' overrides
    // written into it, checked; and the run's settings.
    let run = resolve(request, given.spec)?;
    let config = &run.config;
    let src = &run.source;
    let t0 = Instant::now();
    let options = Options {
        replicas: replicas.map(|r| r.size() as u32),
        shared_exchange: replicas.is_some_and(Replicas::shared_exchange),
        ..Options::default()
    };
    let program =
        compile_with(src, Functions::TRAIN, &options).map_err(|diagnostics| Error::Spec {
            source: src.clone(),
            diagnostics,
        })?;
    let compile_s = t0.elapsed().as_secs_f64();
    observer.compiled(&program.model.name, compile_s);
    if request.eval_with_averages && program.model.ema.is_none() {
        return Err(Error::Settings(format!(
            "--eval-with-averages: {} has no moving averages; add `ema DECAY` to the spec",
            spec.display()
        )));
    }
    // The session first: a model that does not fit in memory is refused
    // before its data is read.
    let mut trained = Model::from_program(program, src.clone()).map_err(Error::Session)?;
    if let Some(start) = given.start {
        trained.copy_state_from(start).map_err(|e| {
            Error::Checkpoint(format!("the model to start from does not fit the run: {e}"))
        })?;
    }
    // A replica's sharded tables hold its rows.
    if let Some(r) = replicas {
        trained
            .session
            .set_replica(r.rank())
            .map_err(Error::Session)?;
    }
    let model = &trained.program.model;
    // `eval_data` (or `--eval-data`), checked before the data is read.
    let eval_source = data::eval_data_source(model, spec, request.eval_data.as_deref())?;
    // A streaming source (TFRecord, glob, pipeline options) is read by the
    // input pipeline as training goes; anything else is loaded in memory.
    // An image input with random transforms: the data set holds their
    // evaluation form; the augmenter redraws them for every training batch.
    let (mut data, data_name) = match given.frame {
        Some((columns, name)) => (
            TrainingData::Memory {
                dataset: load_frame(&name, columns, &model.input_specs())
                    .map_err(|e| Error::Data(e.to_string()))?,
                augmenter: None,
                image_input: None,
            },
            name,
        ),
        None => {
            let source = data::data_source(model, spec, config.data.as_deref())?;
            let name = data::source_name(&source);
            (TrainingData::open(model, source, true)?, name)
        }
    };
    // `eval_data` (or `--eval-data`): evaluations read it instead of a
    // held-out split; loaded whole (a single CSV) or streamed, one pass each.
    let (eval, eval_name) = match given.eval_frame {
        Some((columns, name)) => (
            Some(EvalData::Memory(
                load_frame(&name, columns, &model.input_specs())
                    .map_err(|e| Error::Data(e.to_string()))?,
            )),
            Some(name),
        ),
        None => (
            eval_source
                .as_ref()
                .map(|s| EvalData::open(model, s))
                .transpose()?,
            eval_source.as_ref().map(data::source_name),
        ),
    };

    let fraction = eval_fraction.unwrap_or(model.train.eval_fraction);
    if !(0.0..1.0).contains(&fraction) {
        return Err(Error::Settings(format!(
            "--eval-fraction must be in [0, 1), got {fraction}"
        )));
    }
    let (train_rows, eval_rows) = match &data {
        TrainingData::Memory { dataset, .. } if eval.is_some() => {
            ((0..dataset.rows as u32).collect(), Vec::new())
        }
        TrainingData::Memory { dataset, .. } => model.held_out_split(dataset, fraction),
        TrainingData::Stream(_) => (Vec::new(), Vec::new()),
    };
    // Streaming: `steps` is an upper bound, and the data's end (its
    // `num_epochs`, or the `train` item's `epochs`) ends the run.
    if let TrainingData::Stream(s) = &mut data {
        if let (None, Duration::Epochs(e)) = (s.num_epochs, model.train.duration) {
            s.num_epochs = Some(e);
        }
    }
    let streamed = matches!(data, TrainingData::Stream(_));
    let steps = match (streamed, steps, model.train.duration) {
        (_, Some(s), _) => s,
        (true, None, Duration::Epochs(_)) => i64::MAX as u64,
        (_, None, _) => model.train.steps(train_rows.len()),
    };
    if steps == 0 {
        return Err(Error::Settings(format!(
            "{}: nothing to train: {} training rows come to 0 steps",
            spec.display(),
            train_rows.len()
        )));
    }
    let eval_what = match (&eval_name, &eval) {
        (Some(n), Some(EvalData::Memory(d))) => format!("; eval data {n}: {} rows", d.rows),
        (Some(n), _) => format!("; eval data {n}: streamed"),
        _ => String::new(),
    };
    // `total_num_replicas`: the job must have that many ranks.
    if let Some(sync) = model.train.sync_replicas {
        let ranks = replicas.map_or(1, Replicas::size);
        if replicas.is_some() && ranks != sync.total as usize {
            return Err(Error::Replicas(format!(
                "{}: the spec trains with total_num_replicas = {}, but the MPI job has {ranks} \
                 rank{}: start it with mpirun -np {}",
                spec.display(),
                sync.total,
                if ranks == 1 { "" } else { "s" },
                sync.total
            )));
        }
        if replicas.is_none() && sync.total > 1 {
            observer.note(&format!(
                "the spec is written for {} replicas; this run is one process, which \
                 trains on the whole global batch (the same model)",
                sync.total
            ));
        }
    }
    if let Some(r) = replicas.filter(|_| leader) {
        observer.note(&format!(
            "replica 0 of {} on {} node{}: each replica trains on {} rows of every \
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
        ));
    }
    if leader {
        let ms = compile_s * 1e3;
        let rows = data.dataset().map_or(0, |d| d.rows);
        observer.note(&if streamed {
            format!(
                "compiled `{}` in {ms:.1} ms; data {data_name}: streamed{}",
                model.name,
                if eval_what.is_empty() {
                    " (no held-out split)"
                } else {
                    &eval_what
                },
            )
        } else if !eval_what.is_empty() {
            format!(
                "compiled `{}` in {ms:.1} ms; data {data_name}: {rows} rows (all train){eval_what}",
                model.name,
            )
        } else {
            format!(
                "compiled `{}` in {ms:.1} ms; data {data_name}: {rows} rows ({} train, {} held out)",
                model.name,
                train_rows.len(),
                eval_rows.len()
            )
        });
    }
    Ok(Prepared {
        trained,
        resolved: run,
        spec: spec.to_path_buf(),
        replicas,
        eval_with_averages: request.eval_with_averages,
        exchange_timeout: request.exchange_timeout,
        compile_s,
        data,
        data_name,
        eval,
        train_rows,
        eval_rows,
        steps,
    })
}

/// The run's settings: the spec at `request.spec` (or its given text), then
/// its config file, `--set`s and flags ([`settings::resolve`]).
fn resolve(request: &Request, text: Option<SourceFile>) -> Result<Resolved, Error> {
    let flags = &request.flags;
    // The flag's own range check, before it reaches the spec.
    if let Some(f) = flags.eval_fraction {
        if !(0.0..1.0).contains(&f) {
            return Err(Error::Settings(format!(
                "--eval-fraction must be in [0, 1), got {f}"
            )));
        }
    }
    let spec: &Path = &request.spec;
    let src = match text {
        Some(t) => t,
        None => crate::spec::read_spec(spec).map_err(Error::Io)?,
    };
    settings::resolve(&src, spec, request.config.as_deref(), &request.sets, flags).map_err(|e| {
        match e {
            ConfigError::Spec {
                source,
                diagnostics,
            } => Error::Spec {
                source,
                diagnostics,
            },
            ConfigError::Other(msg) => Error::Settings(msg),
        }
    })
}
