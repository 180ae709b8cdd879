//! `specc predict SPEC --checkpoint DIR --data FILE [--output FILE] [--format csv|jsonl]`:
//! the spec's `outputs` for every row of a data file, from a trained
//! checkpoint.
//!
//! Owns: the command's choices — the `predict` function compiled alone (no
//! gradients, no optimizer state) for batches of `--batch` rows (default
//! the larger of 1024 and the spec's batch); the checkpoint resolved as
//! `specc inspect` does (a directory's latest checkpoint, or a prefix) and
//! only its parameters restored (each averaged one from its moving average
//! with `--use-averages`, `specc::averages`); the data streamed through the spec's
//! feature columns by the input pipeline in file order, one pass, reading
//! only the inputs `predict` needs (no label column); CSV unless the file is
//! not named `.csv`/`.csv.gz` and its first bytes are a TFRecord's; the
//! output written to stdout, or to a temporary file renamed onto `--output`
//! only when every row was predicted.
//! The loop and the formats are the runtime's (`specc_runtime::predict`).

use std::io::{BufWriter, Write};
use std::path::Path;

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::ir::Dim;
use specc_grammar::{ast::Span, Code, Diagnostic};
use specc_runtime::checkpoint::BundleReader;
use specc_runtime::data::{images, Source};
use specc_runtime::io::atomic::write_atomic;
use specc_runtime::pipeline::Format;
use specc_runtime::predict::{
    self, OutputColumn, OutputFormat, PredictionWriter, PREDICT_FUNCTION,
};

use super::predict_raw::RawPredictor;
use super::report;
use crate::Failure;
use specc::averages::Serving;
use specc::export::TflitePredictor;
use specc::run::data::open_prediction_source;
use specc::run::restore::checkpoint_prefix;
use specc::spec::read_spec;
use specc_compiler::export::tflite::raw::RAW_INPUTS_METADATA;
use specc_runtime::data::csv_file::CsvFile;

/// The smallest batch `predict` runs by default.
const DEFAULT_BATCH: u32 = 1024;

pub struct PredictOptions<'a> {
    /// The trained parameters for the compiled `predict` function.
    pub checkpoint: Option<&'a Path>,
    /// Instead of a checkpoint: an exported TFLite model run by specc's
    /// interpreter (`specc::export::predictor`).
    pub tflite: Option<&'a Path>,
    pub data: &'a Path,
    pub output: Option<&'a Path>,
    /// `None`: from the output's name (`.jsonl`, `.json`: JSON lines), else CSV.
    pub format: Option<OutputFormat>,
    pub batch: Option<u32>,
    /// `--use-averages[=BOOL]` (`None`: the spec's `ema ..., use_averages`).
    pub use_averages: Option<bool>,
}

pub fn run(spec: &Path, opts: &PredictOptions<'_>) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let checked = specc_compiler::check(&src).map_err(|d| report(&d, &src))?;
    if let Some(tflite) = opts.tflite {
        return run_tflite(&src, &checked, tflite, opts);
    }
    let checkpoint = opts
        .checkpoint
        .ok_or("specc predict needs --checkpoint DIR or --tflite MODEL")?;
    if checked.functions.predict.is_none() {
        let d = Diagnostic::new(
            Code::MissingItem,
            Span::default(),
            "the spec has no `outputs`: `specc predict` writes the outputs it names",
        )
        .with_label("`outputs` is required to predict")
        .with_help(
            "add for example: outputs { probs = softmax(logits), class = argmax(logits, 1) }",
        );
        return Err(report(&[d], &src));
    }
    let batch = opts
        .batch
        .unwrap_or_else(|| DEFAULT_BATCH.max(checked.train.batch));
    let options = Options {
        max_batch: Some(batch),
        ..Options::default()
    };
    let program = compile_with(&src, Functions::PREDICT, &options).map_err(|d| report(&d, &src))?;
    let model = &program.model;
    let function = model.functions.predict.as_ref().expect("checked above");
    let serving = Serving::resolve(model, opts.use_averages, spec)?;

    let prefix = checkpoint_prefix(checkpoint)?;
    let reader = BundleReader::open(&prefix).map_err(|e| e.to_string())?;
    let mut session = program.session()?;
    serving.restore(&mut session, &reader)?;

    // Only the inputs `predict` reads come from the file.
    let read = model.graph.inputs_read(&function.roots());
    let read_names: Vec<&str> = model
        .graph
        .inputs
        .iter()
        .zip(&read)
        .filter(|(_, r)| **r)
        .map(|(l, _)| l.name.as_str())
        .collect();
    let reads: Vec<bool> = session
        .layout
        .inputs
        .iter()
        .map(|l| read_names.contains(&l.name.as_str()))
        .collect();
    let f = session
        .function_index(PREDICT_FUNCTION)
        .ok_or("the predict function was not compiled")?;

    let columns: Vec<OutputColumn> = function
        .outputs
        .iter()
        .map(|o| OutputColumn {
            name: o.name.clone(),
            dims: model.graph.shape(o.node).0[1..]
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => *n as usize,
                    Dim::Batch => 1,
                })
                .collect(),
        })
        .collect();
    let format = opts.format.unwrap_or_else(|| format_of(opts.output));
    // An image source, in memory or streamed: its records and transforms.
    let image_source = match &model.data.source {
        Source::Images(spec) => Some((spec.source.clone(), spec.pipeline.clone(), spec.threads)),
        Source::Stream(spec) => match &spec.format {
            Format::Images(f) => Some((f.source(&spec.paths), f.pipeline.clone(), spec.threads)),
            _ => None,
        },
        _ => None,
    };
    let rows = if let Some((like, pipeline, threads)) = image_source {
        // Images: decoded and transformed as in evaluation, a batch at a
        // time, each row named by its file (the first column, `path`).
        let examples = images::list_unlabeled(opts.data, &like).map_err(|e| e.to_string())?;
        let keys = examples.iter().map(|e| e.key()).collect();
        let image = model
            .input_specs()
            .into_iter()
            .find(|i| i.columns.len() == 1 && i.columns[0] == images::IMAGE_COLUMN)
            .ok_or("the spec declares no image input")?;
        let mut source = images::ImageBatches::new(examples, pipeline, &image.name, threads);
        write_predictions(opts.output, format, columns, Some(keys), |w| {
            predict::run(&mut session, f, &mut source, w).map_err(|e| e.to_string())
        })?
    } else {
        let mut source = open_prediction_source(model, &session.layout, &reads, opts.data, batch)?;
        write_predictions(opts.output, format, columns, None, |w| {
            predict::run(&mut session, f, &mut source, w).map_err(|e| e.to_string())
        })?
    };
    let from = format!("{}{}", prefix.display(), serving.note());
    finished(rows, Path::new(&from), opts.output);
    Ok(())
}

/// `--tflite`: the exported model in specc's TFLite interpreter, fed by the
/// spec's feature columns.
fn run_tflite(
    src: &specc_grammar::SourceFile,
    checked: &specc_compiler::Model,
    tflite: &Path,
    opts: &PredictOptions<'_>,
) -> Result<(), Failure> {
    if let Some(c) = opts.checkpoint {
        return Err(format!(
            "--tflite runs the model's own weights; --checkpoint {} is not used with it",
            c.display()
        )
        .into());
    }
    if opts.use_averages == Some(true) {
        return Err(
            "--tflite runs the model's own weights; export it with --use-averages \
                    to serve the moving averages"
                .into(),
        );
    }
    let mut batch = opts
        .batch
        .unwrap_or_else(|| DEFAULT_BATCH.max(checked.train.batch));
    let model = specc_tflite::read_file(tflite)?;
    if model.metadata_string(RAW_INPUTS_METADATA).is_some() {
        return run_raw(checked, model, tflite, batch, opts);
    }
    // A session for its input buffers and pipeline (nothing is called): the
    // spec's preprocessing without its parameters.
    let compile = |batch: u32| {
        let options = Options {
            max_batch: Some(batch),
            ..Options::default()
        };
        compile_with(src, Functions::PREDICT, &options).map_err(|d| report(&d, src))
    };
    let mut program = compile(batch)?;
    let predictor = {
        let session = program.session()?;
        TflitePredictor::new(model, tflite, &session)?
    };
    if let Some(fixed) = predictor.fixed_batch() {
        if fixed as u32 != batch {
            batch = fixed as u32;
            program = compile(batch)?;
        }
    }
    let mut session = program.session()?;
    let reads = predictor.reads(session.layout.inputs.len());
    let mut source =
        open_prediction_source(&program.model, &session.layout, &reads, opts.data, batch)?;
    let format = opts.format.unwrap_or_else(|| format_of(opts.output));
    let rows = write_predictions(opts.output, format, predictor.columns(), None, |w| {
        predictor.run(tflite, &mut session, &mut source, w)
    })?;
    finished(rows, tflite, opts.output);
    Ok(())
}

/// `--tflite` with a model exported with `--raw-inputs`: the file's raw
/// cells fed to it (`predict_raw`), read with the spec's CSV options.
fn run_raw(
    checked: &specc_compiler::Model,
    model: specc_tflite::Model,
    tflite: &Path,
    batch: u32,
    opts: &PredictOptions<'_>,
) -> Result<(), Failure> {
    let mut predictor = RawPredictor::new(model, tflite)?;
    let options = checked
        .data
        .source
        .csv_options()
        .map(|o| o.without_filter())
        .unwrap_or_default();
    let file = opts.data.display().to_string();
    let csv = CsvFile::open(opts.data, &file, &options).map_err(|e| e.to_string())?;
    let format = opts.format.unwrap_or_else(|| format_of(opts.output));
    let columns = predictor.predictor().columns();
    let rows = write_predictions(opts.output, format, columns, None, |w| {
        predictor.run(tflite, opts.data, csv, batch as usize, w)
    })?;
    finished(rows, tflite, opts.output);
    Ok(())
}

/// The predictions to stdout or to `output` (written whole or not at all),
/// by `run` into a writer of `columns`.
fn write_predictions(
    output: Option<&Path>,
    format: OutputFormat,
    columns: Vec<OutputColumn>,
    keys: Option<Vec<String>>,
    run: impl FnOnce(&mut PredictionWriter<Box<dyn Write + '_>>) -> Result<u64, String>,
) -> Result<u64, String> {
    match output {
        None => {
            let out: Box<dyn Write> =
                Box::new(BufWriter::with_capacity(1 << 16, std::io::stdout().lock()));
            let mut w = keyed(PredictionWriter::new(out, "stdout", format, columns), keys);
            let rows = run(&mut w)?;
            w.finish()
                .and_then(|mut o| o.flush())
                .map_err(|e| format!("stdout: {e}"))?;
            Ok(rows)
        }
        // Written atomically: a failure leaves `path` as it was.
        Some(path) => write_atomic(path, |out| {
            let out: Box<dyn Write> = Box::new(out);
            let mut w = keyed(PredictionWriter::new(out, path, format, columns), keys);
            let rows = run(&mut w)?;
            w.finish()
                .and_then(|mut o| o.flush())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(rows)
        }),
    }
}

fn finished(rows: u64, from: &Path, output: Option<&Path>) {
    let to = output.map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
    eprintln!(
        "specc: predicted {rows} row{} from {} to {to}",
        if rows == 1 { "" } else { "s" },
        from.display()
    );
}

fn format_of(output: Option<&Path>) -> OutputFormat {
    match output.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
        Some("jsonl" | "json" | "ndjson") => OutputFormat::JsonLines,
        _ => OutputFormat::Csv,
    }
}

/// The writer with the rows' names as its first column `path`, when given.
fn keyed<W: Write>(w: PredictionWriter<W>, keys: Option<Vec<String>>) -> PredictionWriter<W> {
    match keys {
        Some(k) => w.with_keys("path", k),
        None => w,
    }
}
