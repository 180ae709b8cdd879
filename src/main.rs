//! `specc`: the command-line interface.
//!
//! Owns: argument parsing and the exit-code contract — 0 on success, 2 when
//! the spec has errors (diagnostics on stderr), 1 for other failures (data
//! errors, I/O). Each subcommand lives in `commands/`; what they do beyond
//! flags, progress and printing is the `specc` library's (`specc::run`).

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "specc",
    version,
    about = "Compile a .spec training spec to a fused native training step, and run it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Stage {
    /// The parsed syntax tree.
    Ast,
    /// The forward IR after checking (the eval function, and predict with `outputs`).
    Ir,
    /// The IR with gradients (the grad function), before simplification.
    Grad,
    /// The whole training step as IR: optimizer slots and updates, simplified.
    Step,
    /// Kernels and buffers of the step and eval functions.
    Plan,
    /// The Cranelift IR of the step and eval functions.
    Clif,
    /// The machine code of the step and eval functions (host-dependent; not snapshotted).
    Asm,
}

/// What `specc export` writes.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExportFormat {
    /// A TensorFlow Lite flatbuffer (`schema.fbs` v3) with a `serving_default` signature.
    Tflite,
    /// A relocatable object file with the inference function, its GEMM and
    /// the weights, and a C header next to it (`-o` with `.h`).
    Object,
}

#[derive(Subcommand)]
enum Command {
    /// Check a spec: names, dtypes, shapes, gradients.
    Check { spec: PathBuf },
    /// Print one stage of the compiler.
    Compile {
        spec: PathBuf,
        #[arg(long, value_enum)]
        emit: Stage,
        /// Compile the step split for N data-parallel replicas (as `mpirun -np N specc run` does).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        replicas: Option<u32>,
    },
    /// Train a spec and report metrics on the training data and a held-out split.
    Run {
        spec: PathBuf,
        /// Train on this CSV instead of the spec's data (path relative to the current directory);
        /// for an image source, this directory, CSV or TFRecord file (or pattern) replaces its path.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Number of training steps (overrides the spec).
        #[arg(long, allow_negative_numbers = true, value_parser = positive_steps)]
        steps: Option<u64>,
        /// Fraction of rows held out for evaluation (overrides the spec; 0 disables).
        #[arg(long, allow_negative_numbers = true)]
        eval_fraction: Option<f64>,
        /// A YAML run configuration (keys in docs/runs-and-checkpoints.md); it overrides the spec.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Override one setting, e.g. `--set optimizer.learning_rate=0.01` (repeatable; wins over --config).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Save checkpoints in this directory (the spec's `checkpoint { dir }`).
        #[arg(long, value_name = "DIR")]
        checkpoint_dir: Option<PathBuf>,
        /// Save a checkpoint every N steps (0: only at the end).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
        checkpoint_every_steps: Option<u64>,
        /// Save a checkpoint every S seconds (0: not by time).
        #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = seconds)]
        checkpoint_every_secs: Option<f64>,
        /// Keep the K most recent checkpoints (TF's max_to_keep; 0 keeps all).
        #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = count)]
        keep: Option<u64>,
        /// Also keep one checkpoint every H hours (TF's keep_checkpoint_every_n_hours).
        #[arg(long, value_name = "H", allow_negative_numbers = true, value_parser = seconds)]
        keep_every_n_hours: Option<f64>,
        /// Write TensorBoard event files in this directory (the spec's `summaries { dir }`).
        #[arg(long, value_name = "DIR")]
        summary_dir: Option<PathBuf>,
        /// Also evaluate with every parameter replaced by its moving average (the spec's `ema`).
        #[arg(long)]
        eval_with_averages: bool,
        /// Evaluate on this CSV instead of a held-out split (the spec's `eval_data`; path relative to the current directory);
        /// for an image model, this directory, CSV or TFRecord file (or pattern) of images.
        #[arg(long, value_name = "FILE")]
        eval_data: Option<PathBuf>,
        /// Print one JSON object with the results as the last line of stdout.
        #[arg(long)]
        json: bool,
        /// Train as one replica of a data-parallel MPI job (`mpirun -np N specc run ...`):
        /// auto detects an MPI launcher.
        #[arg(long, value_enum, default_value_t = specc::run::Launch::Auto)]
        distributed: specc::run::Launch,
        /// A replica waiting longer than S seconds for the others in one step's exchange ends the job (0: wait forever).
        #[arg(long, value_name = "S", default_value_t = 600.0, allow_negative_numbers = true, value_parser = seconds)]
        exchange_timeout: f64,
        /// Export the model each time a checkpoint is written (TF's CheckpointSaverListener):
        /// into this directory as model-STEP.tflite (or .o), or to this file name with `{step}`.
        #[arg(long, value_name = "DIR_OR_TEMPLATE")]
        export_on_save: Option<PathBuf>,
        /// --export-on-save: what `specc export --format` writes.
        #[arg(long, value_enum, default_value_t = ExportFormat::Tflite, requires = "export_on_save")]
        export_format: ExportFormat,
        /// --export-on-save with tflite: a fixed batch size (`specc export --batch`).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "export_on_save")]
        export_batch: Option<u32>,
        /// --export-on-save: serve the moving averages, or not (`specc export --use-averages`;
        /// default: the spec's `ema ..., use_averages`).
        #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", requires = "export_on_save")]
        export_use_averages: Option<bool>,
        /// --export-on-save with tflite: a model that takes the raw columns
        /// (`specc export --raw-inputs`).
        #[arg(long, requires = "export_on_save")]
        export_raw_inputs: bool,
    },
    /// Compare compiled gradients with finite differences on one batch.
    Gradcheck {
        spec: PathBuf,
        #[arg(long)]
        data: Option<PathBuf>,
        /// Elements checked per parameter (spread evenly; at least 1).
        #[arg(long, default_value_t = 32, allow_negative_numbers = true, value_parser = positive_samples)]
        samples: usize,
        #[arg(long)]
        json: bool,
    },
    /// Benchmark training throughput (one JSON line, the fields of shared/bench/WORKLOADS.md).
    Bench {
        spec: PathBuf,
        #[arg(long, allow_negative_numbers = true, value_parser = positive_steps)]
        steps: Option<u64>,
        /// Steps excluded from the steady-state timing (default: 100, or steps/10 below 1000 steps).
        #[arg(long, allow_negative_numbers = true, value_parser = count)]
        warmup: Option<u64>,
        #[arg(long)]
        data: Option<PathBuf>,
        /// Time every kernel of the step and print a table to stderr.
        #[arg(long)]
        profile: bool,
    },
    /// List a TF checkpoint's variables (name, dtype, shape), or print one tensor's values.
    Inspect {
        /// A checkpoint prefix (DIR/model.ckpt-100), its .index file, or a directory (its latest
        /// checkpoint); a TFRecord file of tf.train.Example (plain, GZIP or ZLIB); or a TensorFlow
        /// Lite model (tensors, operators, quantization, signatures).
        checkpoint: PathBuf,
        /// Print this tensor's values.
        #[arg(long)]
        tensor: Option<String>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Export a trained model for inference outside specc: `--format tflite`
    /// (TensorFlow Lite) or `--format object` (a native object and a C header).
    Export {
        spec: PathBuf,
        /// The trained variables: a checkpoint directory (its latest checkpoint) or prefix.
        #[arg(long)]
        checkpoint: PathBuf,
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// The file to write (for `object`: the object, and its header with the extension `.h`).
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// A binding of the spec to compute, e.g. `logits` (repeatable, in order; default: the
        /// spec's `outputs` item).
        #[arg(long, value_name = "NAME")]
        fetch: Vec<String>,
        /// `tflite`: a fixed batch size (default: a dynamic batch dimension).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        batch: Option<u32>,
        /// `tflite`: post-training quantization as `tf.lite.Optimize.DEFAULT`: `dynamic` (int8
        /// weights, float activations) or `int8` (full integer, with the ranges of the spec's
        /// fake quantizations and calibrated on --representative-data; float inputs and outputs).
        #[arg(long, value_enum)]
        quantize: Option<QuantizeMode>,
        /// `--quantize int8`: rows to calibrate on (CSV or TFRecord, through the spec's feature
        /// columns; no label needed); optional when fake quantizations give every activation
        /// its range (quantization-aware training).
        #[arg(long, value_name = "FILE")]
        representative_data: Option<PathBuf>,
        /// `--quantize int8`: calibrate on the first N rows of --representative-data.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
        samples: u64,
        /// `--quantize int8`: the type of the model's inputs (TF's `inference_input_type`):
        /// float32 (a QUANTIZE in the model), int8 or uint8 (the caller quantizes).
        #[arg(long, value_enum, value_name = "TYPE")]
        inference_input_type: Option<InferenceTypeArg>,
        /// `--quantize int8`: the type of the model's float outputs (TF's
        /// `inference_output_type`): float32 (a DEQUANTIZE in the model), int8 or uint8.
        #[arg(long, value_enum, value_name = "TYPE")]
        inference_output_type: Option<InferenceTypeArg>,
        /// `tflite`: the model takes the raw columns of a row (STRING for vocabulary columns,
        /// FLOAT32 for numeric ones; "" or NaN a missing cell) and computes the feature columns
        /// itself: vocabulary lookups, buckets, defaults and normalizers as TF Lite builtins.
        #[arg(long)]
        raw_inputs: bool,
        /// `object`: the C function's name.
        #[arg(long, default_value = "specc_predict")]
        symbol: String,
        /// Restore each parameter the spec's `ema` averages from its moving average (TF's
        /// `ExponentialMovingAverage.variables_to_restore`); `=false`: the trained values, also when
        /// the spec's `ema` says `use_averages = true`.
        #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
        use_averages: Option<bool>,
    },
    /// Convert a CSV file to a TFRecord file of tf.train.Example under the spec's parse spec, or
    /// (with `-o X.csv`) a TFRecord file back to CSV.
    Convert {
        spec: PathBuf,
        /// The input: a CSV file (gzip recognised), or a TFRecord file when the output is .csv.
        #[arg(long)]
        data: PathBuf,
        /// The output: X.csv (or .csv.gz) for CSV, anything else for TFRecord.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// TFRecord compression: GZIP, ZLIB or NONE (default: from the output's name for
        /// TFRecord output, from the input's bytes for TFRecord input).
        #[arg(long)]
        compression: Option<String>,
    },
    /// Write the spec's `outputs` for every row of a data file, from a trained checkpoint.
    Predict {
        spec: PathBuf,
        /// A checkpoint directory (its latest checkpoint) or a checkpoint prefix (DIR/model.ckpt-100).
        #[arg(long, required_unless_present = "tflite", conflicts_with = "tflite")]
        checkpoint: Option<PathBuf>,
        /// Run this exported TensorFlow Lite model (`specc export --format tflite`, float or
        /// quantized) in specc's interpreter instead of the compiled spec and a checkpoint; the
        /// spec still preprocesses the data.
        #[arg(long, value_name = "MODEL")]
        tflite: Option<PathBuf>,
        /// The rows to predict: a CSV file (gzip recognised; no label column needed) or a
        /// TFRecord file of tf.train.Example.
        #[arg(long)]
        data: PathBuf,
        /// Write here instead of stdout (written whole or not at all).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// csv (a header, then one line per row) or jsonl (one JSON object per row); default
        /// from the output's name (.jsonl, .json: jsonl), else csv.
        #[arg(long, value_enum)]
        format: Option<PredictFormat>,
        /// Rows per call of the compiled function (default: the larger of 1024 and the spec's batch).
        #[arg(long, allow_negative_numbers = true, value_parser = positive_batch)]
        batch: Option<u32>,
        /// Restore each parameter the spec's `ema` averages from its moving average (TF's
        /// `ExponentialMovingAverage.variables_to_restore`); `=false`: the trained values, also when
        /// the spec's `ema` says `use_averages = true`.
        #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
        use_averages: Option<bool>,
    },
    /// The loss and metrics of a trained checkpoint on the spec's `eval_data`, its held-out rows,
    /// or --data.
    Evaluate {
        spec: PathBuf,
        /// A checkpoint directory (its latest checkpoint) or a checkpoint prefix (DIR/model.ckpt-100).
        #[arg(
            long,
            required_unless_present = "checkpoint_dir",
            conflicts_with_all = ["checkpoint_dir", "watch", "timeout"]
        )]
        checkpoint: Option<PathBuf>,
        /// Evaluate every checkpoint of DIR once, in step order, writing the results to DIR/eval/
        /// (TF's checkpoints_iterator).
        #[arg(long, value_name = "DIR")]
        checkpoint_dir: Option<PathBuf>,
        /// With --checkpoint-dir: keep evaluating new checkpoints as they are written, until the
        /// run's last step (or --timeout).
        #[arg(long, requires = "checkpoint_dir")]
        watch: bool,
        /// With --watch: stop when no new checkpoint appears for S seconds.
        #[arg(long, value_name = "S", value_parser = seconds)]
        timeout: Option<f64>,
        /// Evaluate on this CSV (for an image model, a directory, CSV or TFRecord file of images)
        /// instead of the spec's `eval_data` or the held-out rows of its data.
        #[arg(long, value_name = "FILE", visible_alias = "eval-data")]
        data: Option<PathBuf>,
        /// Restore each parameter the spec's `ema` averages from its moving average (TF's
        /// `ExponentialMovingAverage.variables_to_restore`); `=false`: the trained values, also when
        /// the spec's `ema` says `use_averages = true`.
        #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
        use_averages: Option<bool>,
        /// Also print one JSON object with the results as the last line of stdout.
        #[arg(long)]
        json: bool,
    },
    /// Explain a diagnostic code, as printed in `error[CODE]` (e.g. `specc explain
    /// argument-out-of-range`); without a code, list every code.
    Explain {
        /// The code, e.g. `unknown-name`.
        code: Option<String>,
        /// Print every code's explanation as Markdown (what docs/errors.md holds).
        #[arg(long, conflicts_with = "code")]
        markdown: bool,
    },
    /// Print specc's layer library (the blocks `layers.dense`, `layers.conv2d`, ...) as
    /// spec text, or one block of it (e.g. `specc library dense`).
    Library {
        /// A block, e.g. `dense` or `layers.dense`.
        block: Option<String>,
    },
    /// Benchmark the fused Adam update alone (workload W4: one JSON line with `ms_per_step`, `gbps`).
    BenchAdam {
        /// Parameters in the flat buffer.
        #[arg(long, default_value_t = 16 * 1024 * 1024)]
        params: u64,
        /// Timed updates (after the warm-up).
        #[arg(long, default_value_t = 20)]
        iters: u64,
        #[arg(long, default_value_t = 3)]
        warmup: u64,
        /// Threads (1 or 2; default: SPECC_THREADS or the cores).
        #[arg(long)]
        threads: Option<usize>,
    },
}

/// `specc export --quantize`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum QuantizeMode {
    Dynamic,
    Int8,
}

/// `specc export --inference-input-type`, `--inference-output-type`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum InferenceTypeArg {
    Float32,
    Int8,
    Uint8,
}

impl InferenceTypeArg {
    fn to_tflite(self) -> specc_tflite::quantize::InferenceType {
        use specc_tflite::quantize::InferenceType as T;
        match self {
            InferenceTypeArg::Float32 => T::Float32,
            InferenceTypeArg::Int8 => T::Int8,
            InferenceTypeArg::Uint8 => T::Uint8,
        }
    }
}

/// The text format of `specc predict`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PredictFormat {
    Csv,
    Jsonl,
}

/// `--batch N`: a positive integer that fits a compiled batch.
fn positive_batch(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i128>() {
        Ok(n) if n >= 1 => {
            u32::try_from(n).map_err(|_| format!("batch must be at most {}", u32::MAX))
        }
        Ok(_) => Err("batch must be a positive integer (at least 1)".into()),
        Err(_) => Err("batch must be a positive integer".into()),
    }
}

/// `--steps N`: a positive integer.
fn positive_steps(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(n) if n >= 1 => {
            u64::try_from(n).map_err(|_| format!("steps must be at most {}", u64::MAX))
        }
        Ok(_) => Err("steps must be a positive integer (at least 1)".into()),
        Err(_) => Err("steps must be a positive integer".into()),
    }
}

/// `--samples N`: a positive integer.
fn positive_samples(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i128>() {
        Ok(n) if n >= 1 => {
            usize::try_from(n).map_err(|_| format!("samples must be at most {}", usize::MAX))
        }
        Ok(_) => Err("samples must be a positive integer (at least 1)".into()),
        Err(_) => Err("samples must be a positive integer".into()),
    }
}

/// A count that may be 0.
fn count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(n) if n >= 0 => u64::try_from(n).map_err(|_| format!("must be at most {}", u64::MAX)),
        Ok(_) | Err(_) => Err("must be a non-negative integer".into()),
    }
}

/// A number of seconds: finite, not negative.
fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err("must be a number of seconds, not negative".into()),
    }
}

/// A command's failure: spec diagnostics (exit 2) or another error (exit 1).
pub enum Failure {
    Spec,
    Other(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Other(s)
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Failure {
        Failure::Other(s.to_string())
    }
}

fn main() -> ExitCode {
    // `specc compile ... | head` ends quietly when the reader goes away, like
    // other Unix tools, instead of failing on a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Image pipelines allocate and free a buffer per example: keep freed
    // memory for reuse rather than mapping fresh pages each time.
    specc_runtime::memory::keep_freed_memory();
    let cli = Cli::parse();
    // A `SPECC_*` setting that cannot be used (a thread count that is not
    // a positive integer, a GEMM kernel the CPU cannot run, ...) is
    // refused, not replaced.
    if let Err(msg) = specc_runtime::settings::check() {
        eprintln!("error: {msg}");
        return ExitCode::from(1);
    }
    let r = match cli.command {
        Command::Check { spec } => commands::check::run(&spec),
        Command::Explain { code, markdown } => commands::explain::run(code.as_deref(), markdown),
        Command::Library { block } => commands::library::run(block.as_deref()),
        Command::Compile {
            spec,
            emit,
            replicas,
        } => commands::compile::run(&spec, emit, replicas),
        Command::Run {
            spec,
            data,
            steps,
            eval_fraction,
            config,
            set,
            checkpoint_dir,
            checkpoint_every_steps,
            checkpoint_every_secs,
            keep,
            keep_every_n_hours,
            summary_dir,
            eval_with_averages,
            eval_data,
            json,
            distributed,
            exchange_timeout,
            export_on_save,
            export_format,
            export_batch,
            export_use_averages,
            export_raw_inputs,
        } => {
            let flags = specc::run::Flags {
                data,
                steps,
                eval_fraction,
                checkpoint_dir,
                checkpoint_every_steps,
                checkpoint_every_secs,
                keep,
                keep_every_n_hours,
                summary_dir,
            };
            let request = specc::run::Request {
                spec,
                config,
                sets: set,
                flags,
                eval_with_averages,
                eval_data,
                exchange_timeout,
            };
            let export = export_on_save.map(|target| commands::export_on_save::ExportOnSave {
                target,
                format: match export_format {
                    ExportFormat::Tflite => commands::export_on_save::Format::Tflite,
                    ExportFormat::Object => commands::export_on_save::Format::Object,
                },
                batch: export_batch,
                use_averages: export_use_averages,
                raw_inputs: export_raw_inputs,
                failure: None,
                written: Vec::new(),
            });
            commands::run::run(
                &request,
                &commands::run::RunOptions {
                    json,
                    distributed,
                    export,
                },
            )
        }
        Command::Gradcheck {
            spec,
            data,
            samples,
            json,
        } => commands::gradcheck::run(&spec, data.as_deref(), samples, json),
        Command::Bench {
            spec,
            steps,
            warmup,
            data,
            profile,
        } => commands::bench::run(&spec, steps, warmup, data.as_deref(), profile),
        Command::BenchAdam {
            params,
            iters,
            warmup,
            threads,
        } => commands::bench_adam::run(params, iters, warmup, threads),
        Command::Convert {
            spec,
            data,
            output,
            compression,
        } => commands::convert::run(
            &spec,
            &commands::convert::ConvertOptions {
                data: &data,
                output: &output,
                compression: compression.as_deref(),
            },
        ),
        Command::Export {
            spec,
            checkpoint,
            format,
            output,
            fetch,
            batch,
            quantize,
            representative_data,
            samples,
            inference_input_type,
            inference_output_type,
            raw_inputs,
            symbol,
            use_averages,
        } => match format {
            ExportFormat::Tflite => {
                use specc::export::Quantize;
                let quantize = Quantize::from_flags(
                    quantize.map(|q| matches!(q, QuantizeMode::Int8)),
                    representative_data.as_deref(),
                    samples as usize,
                    inference_input_type.map(InferenceTypeArg::to_tflite),
                    inference_output_type.map(InferenceTypeArg::to_tflite),
                )
                .map_err(Failure::from);
                quantize.and_then(|quantize| {
                    commands::export::run(
                        &spec,
                        &commands::export::ExportOptions {
                            checkpoint: Some(&checkpoint),
                            output: &output,
                            tflite: specc::export::TfliteOptions {
                                outputs: &fetch,
                                batch,
                                quantize,
                                use_averages,
                                raw_inputs,
                            },
                        },
                    )
                })
            }
            ExportFormat::Object if raw_inputs => Err(Failure::from(
                "--raw-inputs is for --format tflite",
            )),
            ExportFormat::Object if quantize.is_some() => {
                Err(Failure::from("--quantize is for --format tflite"))
            }
            ExportFormat::Object
                if inference_input_type.is_some() || inference_output_type.is_some() =>
            {
                Err(Failure::from(
                    "--inference-input-type and --inference-output-type are for --format tflite --quantize int8",
                ))
            }
            ExportFormat::Object => commands::export_object::run(
                &spec,
                &commands::export_object::ObjectOptions {
                    checkpoint: Some(&checkpoint),
                    output: &output,
                    fetch: &fetch,
                    symbol: &symbol,
                    use_averages,
                },
            ),
        },
        Command::Inspect {
            checkpoint,
            tensor: None,
            json,
        } if commands::inspect_tflite::looks_like_tflite(&checkpoint) => {
            commands::inspect_tflite::run(&checkpoint, json)
        }
        Command::Predict {
            spec,
            checkpoint,
            tflite,
            data,
            output,
            format,
            batch,
            use_averages,
        } => commands::predict::run(
            &spec,
            &commands::predict::PredictOptions {
                checkpoint: checkpoint.as_deref(),
                tflite: tflite.as_deref(),
                data: &data,
                output: output.as_deref(),
                format: format.map(|f| match f {
                    PredictFormat::Csv => specc_runtime::predict::OutputFormat::Csv,
                    PredictFormat::Jsonl => specc_runtime::predict::OutputFormat::JsonLines,
                }),
                batch,
                use_averages,
            },
        ),
        Command::Evaluate {
            spec,
            checkpoint,
            checkpoint_dir,
            watch,
            timeout,
            data,
            use_averages,
            json,
        } => commands::evaluate::run(
            &spec,
            &commands::evaluate::EvaluateOptions {
                checkpoint: checkpoint.as_deref(),
                checkpoint_dir: checkpoint_dir.as_deref(),
                watch,
                timeout,
                data: data.as_deref(),
                use_averages,
                json,
            },
        ),
        Command::Inspect {
            checkpoint,
            tensor,
            json,
        } => match commands::inspect_tfrecord::looks_like_tfrecord(&checkpoint) {
            // A file of records, not a checkpoint's index.
            Some(c) if tensor.is_none() && checkpoint.is_file() => {
                commands::inspect_tfrecord::run(&checkpoint, c, json)
            }
            _ => commands::inspect::run(&checkpoint, tensor.as_deref(), json),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Spec) => ExitCode::from(2),
        Err(Failure::Other(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}
