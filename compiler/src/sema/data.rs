//! The `data` item: where the training rows come from.
//!
//! Owns: checking `csv("file.csv")`, `tfrecord("train-*.tfrecord")` and
//! `synthetic(rows = .., features = ..)` into the model's [`DataItem`] (the
//! runtime's [`Source`] and its span),
//! the input pipeline's options (`num_epochs`, `cycle_length`,
//! `block_length`, `threads`, `on_bad_record`, `cache`, `stream`,
//! `shuffle_files`, and `compression` and `sequence_example` for
//! TFRecord), and their diagnostics; a CSV source's reading options (TF's
//! `make_csv_dataset` arguments) are `sema::csv`'s. A SequenceExample
//! source reads the sequence columns' keys from its feature lists and every
//! other key from its context (`resolve_feature_lists`, a key read both
//! ways an error at the input). A source streams ([`Source::Stream`],
//! `runtime::pipeline`) when it is a TFRecord, a glob pattern, or has any
//! pipeline option; a single CSV file without one is loaded into memory,
//! whatever its reading options. The image sources
//! (`sema::images`) follow the same rules; an `eval_data` may be one.
//! Invariant: a spec has at most one data source; a path is not empty
//! (it is resolved against the spec's directory when loaded); synthetic
//! sizes are positive and fit in 32 bits; pipeline counts are positive;
//! a streaming source has no input that needs every row first
//! (`normalizer = standardize`, `check_streaming`).

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::data::{Distribution, Normalizer, Source, SyntheticSpec};
use specc_runtime::feature_column;
use specc_runtime::io::tfrecord::Compression;
use specc_runtime::pipeline::{files, Format, OnBadRecord, StreamSpec};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::model::DataItem;

pub(crate) fn data(st: &mut State, call: &Call) -> R<()> {
    if let Some((_, prev)) = &st.data {
        return Err(Diagnostic::new(
            Code::DuplicateItem,
            call.span,
            "a spec has one `data` source",
        )
        .with_label("second data source")
        .with_secondary(*prev, "first one here"));
    }
    let source = match call.func.name.as_str() {
        "csv" | "tfrecord" => {
            let (item, spans) = stream_source(call)?;
            st.data_csv = spans;
            item
        }
        n if super::images::handles_source(n) => super::images::source(call, false)?,
        "synthetic" => {
            let b = args::bind(
                "synthetic",
                call,
                &[
                    req("rows"),
                    req("features"),
                    opt("classes"),
                    opt("seed"),
                    opt("label_seed"),
                    opt("distribution"),
                ],
            )?;
            let rows = positive(b.req(0), "rows")?;
            let features = positive(b.req(1), "features")?;
            let classes = match b.get(2) {
                Some(e) => Some(positive(e, "classes")? as u32),
                None => None,
            };
            let seed = match b.get(3) {
                Some(e) => args::eval_count(e, "seed")?,
                None => 0,
            };
            let label_seed = match b.get(4) {
                Some(e) => args::eval_count(e, "label_seed")?,
                None => seed.wrapping_add(1),
            };
            let distribution = match b.get(5) {
                None => Distribution::Normal,
                Some(e) => match args::eval_ident(e)? {
                    "normal" => Distribution::Normal,
                    "uniform" => Distribution::Uniform,
                    other => {
                        return Err(Diagnostic::new(
                            Code::UnknownChoice,
                            e.span,
                            format!("unknown distribution `{other}`"),
                        )
                        .with_label("expected normal or uniform"))
                    }
                },
            };
            DataItem {
                source: Source::Synthetic(SyntheticSpec {
                    rows: rows as usize,
                    features: features as usize,
                    classes,
                    seed,
                    label_seed,
                    distribution,
                }),
                span: call.span,
            }
        }
        other => {
            return Err(Diagnostic::new(
                Code::UnknownFunction,
                call.func.span,
                format!("unknown data source `{other}`"),
            )
            .with_label("not a data source")
            .with_help(
                "expected csv(\"file.csv\"), tfrecord(\"train-*.tfrecord\"), \
                 synthetic(rows = .., features = ..), image_dataset_from_directory(\"dir\"), \
                 image_csv(\"files.csv\") or image_tfrecord(\"images.tfrecord\")",
            ))
        }
    };
    st.data = Some((source, call.span));
    Ok(())
}

/// `eval_data csv(...)` / `tfrecord(...)`: the rows evaluations read, in
/// memory or streamed by the same rules as `data` (one pass each time).
pub(crate) fn eval_data(st: &mut State, call: &Call) -> R<()> {
    if let Some((_, prev)) = &st.eval_data {
        return Err(Diagnostic::new(
            Code::DuplicateItem,
            call.span,
            "a spec has one `eval_data` source",
        )
        .with_label("second eval_data source")
        .with_secondary(*prev, "first one here"));
    }
    let source = match call.func.name.as_str() {
        "csv" | "tfrecord" => {
            let (item, spans) = stream_source(call)?;
            st.eval_csv = spans;
            item
        }
        n if super::images::handles_source(n) => super::images::source(call, true)?,
        other => {
            return Err(Diagnostic::new(
                Code::UnknownFunction,
                call.func.span,
                format!("`{other}` is not an evaluation data source"),
            )
            .with_label("not a file source")
            .with_help(
                "expected csv(\"test.csv\"), tfrecord(\"eval-*.tfrecord\"), \
                 image_dataset_from_directory(\"dir\"), image_csv(..) or image_tfrecord(..)",
            ))
        }
    };
    st.eval_data = Some((source, call.span));
    Ok(())
}

fn positive(e: &Expr, what: &str) -> R<u64> {
    let v = args::eval_count(e, what)?;
    if v == 0 || v > u32::MAX as u64 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be a positive integer, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v)
}

/// The parameters of `csv(...)` and `tfrecord(...)` before the format's
/// own: the path and the pipeline's options.
const PIPELINE: usize = 9;

/// `csv(path, ...)` or `tfrecord(path, ...)` with the pipeline's options
/// (and a CSV source's reading options, with where they were written).
fn stream_source(call: &Call) -> R<(DataItem, Option<super::csv::CsvSpans>)> {
    let tfrecord = call.func.name == "tfrecord";
    let mut params = vec![
        req("path"),
        opt("num_epochs"),
        opt("cycle_length"),
        opt("block_length"),
        opt("threads"),
        opt("on_bad_record"),
        opt("cache"),
        opt("stream"),
        opt("shuffle_files"),
    ];
    debug_assert_eq!(params.len(), PIPELINE);
    if tfrecord {
        params.push(opt("compression"));
        params.push(opt("sequence_example"));
    } else {
        params.extend(super::csv::OPTIONS.iter().map(|n| opt(n)));
    }
    let b = args::bind(&call.func.name, call, &params)?;
    let path_expr = b.req(0);
    let path = args::eval_string(path_expr)?;
    if path.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, path_expr.span, "empty path")
                .with_label("expected a file name"),
        );
    }
    let count = |i: usize, what: &str| -> R<Option<usize>> {
        match b.get(i) {
            None => Ok(None),
            Some(e) => Ok(Some(positive(e, what)? as usize)),
        }
    };
    let num_epochs = count(1, "num_epochs")?.map(|n| n as u64);
    let cycle_length = count(2, "cycle_length")?;
    let block_length = count(3, "block_length")?;
    let threads = count(4, "threads")?;
    if let (Some(t), Some(e)) = (threads, b.get(4)) {
        if t > 64 {
            return Err(Diagnostic::new(
                Code::ArgumentOutOfRange,
                e.span,
                format!("threads must be at most 64, got {t}"),
            )
            .with_label("too many threads"));
        }
    }
    let on_bad_record = match b.get(5) {
        None => None,
        Some(e) => Some(
            OnBadRecord::from_name(args::eval_string(e)?).ok_or_else(|| {
                Diagnostic::new(
                    Code::UnknownChoice,
                    e.span,
                    "on_bad_record must be \"error\" or \"skip\"",
                )
                .with_label("unknown policy")
            })?,
        ),
    };
    let cache = b.get(6).map(args::eval_bool).transpose()?;
    let stream = b.get(7).map(args::eval_bool).transpose()?;
    let shuffle_files = b.get(8).map(args::eval_bool).transpose()?;
    let mut spans = None;
    let format = if tfrecord {
        let compression = match b.get(PIPELINE) {
            None => Compression::None,
            Some(e) => Compression::from_tf_name(args::eval_string(e)?).ok_or_else(|| {
                Diagnostic::new(
                    Code::UnknownChoice,
                    e.span,
                    "compression must be \"GZIP\", \"ZLIB\" or \"\" (none)",
                )
                .with_label("unknown compression")
            })?,
        };
        // The feature-list keys are the sequence columns', known once every
        // item is checked (`resolve_feature_lists`).
        let sequence_example = b.get(PIPELINE + 1).map(args::eval_bool).transpose()?;
        Format::TfRecord {
            compression,
            feature_lists: sequence_example.unwrap_or(false).then(Vec::new),
        }
    } else {
        let (options, s) = super::csv::options(&b, PIPELINE)?;
        spans = Some(s);
        Format::Csv(Box::new(options))
    };
    let any_option = (1..PIPELINE).any(|i| b.get(i).is_some());
    let streams = tfrecord || files::is_pattern(path) || (any_option && stream != Some(false));
    let format = match format {
        // A single CSV file without pipeline options: in memory.
        Format::Csv(options) if !streams => {
            let item = DataItem {
                source: Source::Csv {
                    path: path.into(),
                    options: *options,
                },
                span: path_expr.span,
            };
            return Ok((item, spans));
        }
        format => format,
    };
    if stream == Some(false) {
        if let Some(e) = b.get(7) {
            return Err(Diagnostic::new(
                Code::UnsupportedArgument,
                e.span,
                if tfrecord {
                    "a TFRecord source always streams"
                } else {
                    "a glob pattern always streams"
                },
            )
            .with_label("cannot be loaded into memory"));
        }
    }
    let mut spec = StreamSpec::new(format, vec![path.into()]);
    spec.num_epochs = num_epochs;
    if let Some(c) = cycle_length {
        spec.cycle_length = c;
    }
    if let Some(bl) = block_length {
        spec.block_length = bl;
    }
    if let Some(t) = threads {
        spec.threads = t;
    }
    if let Some(p) = on_bad_record {
        spec.on_bad_record = p;
    }
    spec.cache = cache.unwrap_or(false);
    spec.shuffle_files = shuffle_files.unwrap_or(false);
    let item = DataItem {
        source: Source::Stream(spec),
        span: path_expr.span,
    };
    Ok((item, spans))
}

/// A streaming source cannot give an input that needs every row before the
/// first batch: `normalizer = standardize` is an error at the input.
/// `eval_data` with `normalizer = standardize`: the statistics are the
/// training rows', which evaluation data loaded on its own would not use.
pub(crate) fn check_eval_data(st: &mut State) {
    let Some((_, span)) = &st.eval_data else {
        return;
    };
    let span = *span;
    let bad: Vec<Diagnostic> = st
        .inputs
        .iter()
        .filter(|i| i.spec.normalizer == Normalizer::Standardize)
        .map(|i| {
            Diagnostic::new(
                Code::EvalDataStandardize,
                i.span,
                format!(
                    "`{}` is standardized with statistics of the training rows, which \
                     `eval_data` cannot apply",
                    i.spec.name
                ),
            )
            .with_label("needs the training rows' statistics")
            .with_secondary(span, "evaluation data here")
            .with_help("use a normalizer expression, e.g. normalizer = (x - 3.5) / 1.2")
        })
        .collect();
    st.errors.extend(bad);
}

/// A TFRecord source of SequenceExamples (`data` or `eval_data`): its
/// feature-list keys are the sequence columns' (`feature_list_keys`); an
/// input reading one of them as a context feature is an error.
pub(crate) fn resolve_feature_lists(st: &mut State) {
    let inputs: Vec<_> = st.inputs.iter().map(|i| i.spec.clone()).collect();
    let mut reported = false;
    for item in [st.data.as_mut(), st.eval_data.as_mut()]
        .into_iter()
        .flatten()
    {
        let (DataItem { source, span }, _) = item;
        let Source::Stream(StreamSpec {
            format:
                Format::TfRecord {
                    feature_lists: Some(keys),
                    ..
                },
            ..
        }) = source
        else {
            continue;
        };
        match feature_column::feature_list_keys(&inputs) {
            Ok(k) => *keys = k,
            Err(c) if !reported => {
                reported = true;
                let (seq, ctx) = (&st.inputs[c.sequence_input], &st.inputs[c.context_input]);
                st.errors.push(
                    Diagnostic::new(
                        Code::FeatureListKey,
                        ctx.span,
                        format!(
                            "`{}` reads the key `{}` as a context feature, but the sequence \
                             column `{}` reads it as a feature list",
                            ctx.spec.name, c.key, seq.spec.name
                        ),
                    )
                    .with_label("a context feature")
                    .with_secondary(seq.span, "a feature list")
                    .with_secondary(*span, "this source holds tf.train.SequenceExamples")
                    .with_help(
                        "a SequenceExample key is a context feature or a feature list: \
                         read another key here",
                    ),
                );
            }
            Err(_) => {}
        }
    }
}

pub(crate) fn check_streaming(st: &mut State) {
    let Some((
        DataItem {
            source: Source::Stream(_),
            span,
        },
        _,
    )) = &st.data
    else {
        return;
    };
    let span = *span;
    let bad: Vec<Diagnostic> = st
        .inputs
        .iter()
        .filter(|i| i.spec.normalizer == Normalizer::Standardize)
        .map(|i| {
            Diagnostic::new(
                Code::StreamingStandardize,
                i.span,
                format!(
                    "`{}` is standardized with statistics of every row, which a streaming \
                     source does not have before training",
                    i.spec.name
                ),
            )
            .with_label("needs every row")
            .with_secondary(span, "this source streams")
            .with_help("use a normalizer expression, e.g. normalizer = (x - 3.5) / 1.2")
        })
        .collect();
    st.errors.extend(bad);
}
