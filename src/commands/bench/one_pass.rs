//! The one-pass bench (W5 ctr in `../shared/bench/WORKLOADS.md`): a spec
//! that trains one epoch in file order and holds out the last rows is timed
//! end to end, from the CSV on disk to trained weights.
//!
//! `compile_s` (parse, check, codegen, JIT; no byte of the data read) comes
//! first and is reported apart. `seconds` starts before the data file is
//! opened and ends when the last training step has returned: reading,
//! parsing, hashing, the split (which needs the row count) and every step of
//! the one pass in file order (batches of `train.batch`, the last one
//! short). The held-out evaluation comes after and is not timed:
//! `heldout_logloss` is the mean of `-(y ln p + (1-y) ln(1-p))` with `p`
//! clipped to `[1e-15, 1 - 1e-15]`, in f64; `heldout_auc` is the exact ROC
//! AUC (Mann-Whitney, tied scores get their average rank), both from the
//! per-row labels and predictions of the spec's `auc` metric.

use std::path::Path;
use std::time::Instant;

use specc_compiler::driver::{compile_with, Functions, Options};
use specc_compiler::model::{Duration, EvalSplit, Model};
use specc_runtime::metrics::{MetricKind, MetricOutput};
use specc_runtime::source::SequentialBatches;
use specc_runtime::train::{fit, StopAtStepHook};

use specc_runtime::data::DataError;
use specc_runtime::data::Source;
use specc_runtime::pipeline::{Format, StreamSpec, StreamingBatches};
use specc_runtime::source::{BatchBuffers, BatchSource};

use crate::commands::report;
use crate::Failure;
use specc::run::data::{data_source, load_data};

/// True for a spec that trains one pass in file order with the last rows
/// held out.
pub fn applies(model: &Model) -> bool {
    model.train.eval_split == EvalSplit::Last
        && model.train.duration == Duration::Epochs(1)
        && model.train.shuffle <= 1
}

pub fn run(
    spec: &Path,
    src: &specc_grammar::SourceFile,
    data: Option<&Path>,
) -> Result<(), Failure> {
    let t0 = Instant::now();
    let program =
        compile_with(src, Functions::TRAIN, &Options::default()).map_err(|d| report(&d, src))?;
    let compile_s = t0.elapsed().as_secs_f64();
    let model = &program.model;
    let auc = model
        .metrics
        .iter()
        .find(|m| matches!(m.kind, MetricKind::Auc { .. }))
        .ok_or_else(|| {
            Failure::Other(
                "the one-pass bench reads the held-out predictions of an `auc` metric; the spec has none"
                    .into(),
            )
        })?
        .clone();
    let mut session = program.session()?;
    let batch = model.train.batch as usize;

    // Timed: from before the file is opened to trained weights.
    let path = match data_source(model, spec, data)? {
        // Rows are counted by lines: a file read with TF's default options.
        Source::Csv { path, options } if options == Default::default() => Some(path),
        _ => None,
    };
    // Streamed: the time the training thread spent getting batches.
    let mut input_s = f64::NAN;
    let t = Instant::now();
    let streamed = match &path {
        Some(p) if !is_gzip(p)? => {
            // Count the rows (the split needs them), then stream the first
            // n_train through the pipeline: reading, parsing and hashing on
            // a worker thread while this one trains.
            let rows = count_rows(p)?;
            let n_train = model.train_rows(rows);
            let mut spec = StreamSpec::new(Format::csv(), vec![p.clone()]);
            spec.num_epochs = Some(1);
            let stream = StreamingBatches::new(
                &spec,
                &model.input_specs(),
                &session.layout,
                batch,
                0,
                model.train.seed,
            )
            .map_err(|e| Failure::Other(e.to_string()))?;
            let mut first = Take {
                inner: stream,
                remaining: n_train as u64,
                input: std::time::Duration::ZERO,
            };
            let steps = n_train.div_ceil(batch) as u64;
            fit(
                &mut session,
                &mut first,
                &mut [&mut StopAtStepHook::num_steps(steps)],
            )?;
            input_s = first.input.as_secs_f64();
            Some((rows, n_train, steps))
        }
        _ => None,
    };
    let (load_s, seconds, dataset, train, held_out, steps) = match streamed {
        Some((rows, n_train, steps)) => {
            let seconds = t.elapsed().as_secs_f64();
            let (dataset, _) = load_data(model, spec, data)?;
            if dataset.rows != rows {
                return Err(Failure::Other(format!(
                    "the file has {} rows but {rows} lines: the one-pass bench needs one row a line",
                    dataset.rows
                )));
            }
            let train: Vec<u32> = (0..n_train as u32).collect();
            let held_out: Vec<u32> = (n_train as u32..rows as u32).collect();
            (f64::NAN, seconds, dataset, train, held_out, steps)
        }
        None => {
            let (dataset, _) = load_data(model, spec, data)?;
            let load_s = t.elapsed().as_secs_f64();
            let (train, held_out) = model.held_out_split(&dataset, model.train.eval_fraction);
            let steps = train.len().div_ceil(batch) as u64;
            let mut batches = SequentialBatches::new(&dataset, &session.layout, &train, batch)?;
            fit(
                &mut session,
                &mut batches,
                &mut [&mut StopAtStepHook::num_steps(steps)],
            )?;
            let seconds = t.elapsed().as_secs_f64();
            (load_s, seconds, dataset, train, held_out, steps)
        }
    };

    // Held out, untimed: per-row labels and predictions.
    let f = session
        .function_index("eval")
        .ok_or_else(|| Failure::Other("the program has no eval function".into()))?;
    let index = |part| {
        session
            .output_index(f, &auc.output(part))
            .ok_or_else(|| Failure::Other(format!("eval has no output `{}`", auc.output(part))))
    };
    let (labels_at, predictions_at) = (
        index(MetricOutput::Labels)?,
        index(MetricOutput::Predictions)?,
    );
    let mut scored: Vec<(f32, bool)> = Vec::with_capacity(held_out.len());
    let mut source =
        SequentialBatches::new(&dataset, &session.layout, &held_out, session.max_batch())?;
    loop {
        let b = session
            .fill(&mut source)
            .map_err(|e| Failure::Other(e.to_string()))?;
        if b == 0 {
            break;
        }
        session.call(f, b).map_err(Failure::Other)?;
        let (Some(l), Some(p)) = (
            session.output_at(f, labels_at, b),
            session.output_at(f, predictions_at, b),
        ) else {
            return Err(Failure::Other("missing metric output".into()));
        };
        scored.extend(p.iter().zip(l).map(|(&p, &l)| (p, l > 0.5)));
    }
    let out = serde_json::json!({
        "workload": "ctr",
        "peer": "specc",
        "model": model.name,
        "threads": specc_runtime::settings::value(specc_runtime::settings::THREADS)
            .unwrap_or_else(|| "default".into()),
        "rows": dataset.rows,
        "train_rows": train.len(),
        "heldout_rows": held_out.len(),
        "batch": batch,
        "steps": steps,
        "seconds": seconds,
        "examples_per_s": train.len() as f64 / seconds,
        "heldout_logloss": log_loss(&scored),
        "heldout_auc": exact_auc(&mut scored),
        "compile_s": compile_s,
        "input_wait_s": if input_s.is_nan() { serde_json::Value::Null } else { input_s.into() },
        "input": if load_s.is_nan() { "streamed" } else { "in memory" },
        "load_s": if load_s.is_nan() { serde_json::Value::Null } else { load_s.into() },
        "specc_version": env!("CARGO_PKG_VERSION"),
    });
    println!("{out}");
    Ok(())
}

/// The first `remaining` rows of a source.
struct Take<S> {
    inner: S,
    remaining: u64,
    /// Time the training thread spent in `next_batch`: waiting for the
    /// pipeline's next chunk, and copying the batch's rows.
    input: std::time::Duration,
}

impl<S: BatchSource> BatchSource for Take<S> {
    fn next_batch(&mut self, buffers: &mut BatchBuffers<'_>) -> Result<usize, DataError> {
        if self.remaining == 0 {
            return Ok(0);
        }
        // Rows past `remaining` may be filled; the step reads only the count.
        let t = Instant::now();
        let n = self.inner.next_batch(buffers)?.min(self.remaining as usize);
        self.input += t.elapsed();
        self.remaining -= n as u64;
        Ok(n)
    }
}

fn is_gzip(path: &Path) -> Result<bool, Failure> {
    let mut magic = [0u8; 2];
    let mut f = std::fs::File::open(path)
        .map_err(|e| Failure::Other(format!("{}: {e}", path.display())))?;
    let n = std::io::Read::read(&mut f, &mut magic)
        .map_err(|e| Failure::Other(format!("{}: {e}", path.display())))?;
    Ok(n == 2 && magic == [0x1f, 0x8b])
}

/// Data rows of a CSV with a header line: its lines (a last line without a
/// newline counts), less the header (the peers' `count_rows`).
fn count_rows(path: &Path) -> Result<usize, Failure> {
    use std::io::Read;
    let err = |e: std::io::Error| Failure::Other(format!("{}: {e}", path.display()));
    let mut f = std::fs::File::open(path).map_err(err)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut lines, mut last) = (0usize, b'\n');
    loop {
        let n = f.read(&mut buf).map_err(err)?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        last = buf[n - 1];
    }
    if last != b'\n' {
        lines += 1;
    }
    Ok(lines.saturating_sub(1))
}

/// Mean log-loss in f64, predictions clipped to `[1e-15, 1 - 1e-15]`.
fn log_loss(scored: &[(f32, bool)]) -> f64 {
    let sum: f64 = scored
        .iter()
        .map(|&(p, y)| {
            let p = f64::from(p).clamp(1e-15, 1.0 - 1e-15);
            if y {
                -p.ln()
            } else {
                -(1.0 - p).ln()
            }
        })
        .sum();
    sum / scored.len().max(1) as f64
}

/// ROC AUC by Mann-Whitney: the positives' rank sum (ties share their
/// average rank); NaN without both classes.
fn exact_auc(scored: &mut [(f32, bool)]) -> f64 {
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let positives = scored.iter().filter(|s| s.1).count() as f64;
    let negatives = scored.len() as f64 - positives;
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < scored.len() {
        let mut j = i;
        while j < scored.len() && scored[j].0 == scored[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j, averaged.
        let rank = (i + 1 + j) as f64 / 2.0;
        rank_sum += rank * scored[i..j].iter().filter(|s| s.1).count() as f64;
        i = j;
    }
    (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_pairs_and_ties() {
        // Pairs (pos, neg): (0.9,0.1) win, (0.9,0.5) win, (0.5,0.1) win,
        // (0.5,0.5) tie = 1/2: 3.5 / 4.
        let mut s = vec![(0.1, false), (0.5, false), (0.5, true), (0.9, true)];
        assert_eq!(exact_auc(&mut s), 3.5 / 4.0);
        let mut perfect = vec![(0.2, false), (0.8, true)];
        assert_eq!(exact_auc(&mut perfect), 1.0);
    }

    #[test]
    fn log_loss_clips() {
        let l = log_loss(&[(1.0, false), (0.5, true)]);
        // p = 1 for a negative is clipped to 1 - 1e-15: its loss is
        // -ln(1 - (1 - 1e-15)), about 34.5, not infinite.
        let want = (-(1.0 - (1.0 - 1e-15f64)).ln() + -(0.5f64).ln()) / 2.0;
        assert!(l > 17.0 && l < 18.0, "{l}");
        assert!((l - want).abs() < 1e-12 * want);
    }
}
