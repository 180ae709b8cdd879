//! Images in a spec: the image data sources and the image input.
//!
//! Owns: checking `data image_dataset_from_directory("dir")`,
//! `data image_csv("files.csv", path_column = .., label_column = ..)` and
//! `data image_tfrecord("train-*.tfrecord", image_key = .., label_key = ..)`
//! into [`Source::Images`] (in memory) or, with `stream = true`, a glob
//! pattern or a pipeline option (`num_epochs`, `cycle_length`,
//! `block_length`), [`Source::Stream`] with `Format::Images`; an image
//! `eval_data` (always streamed, the evaluation form); and the image input
//! `features { x = image(decode_image(channels = 1), resize([16, 16]), ...) }`:
//! its transforms (TF's names and arguments, unknown ones with a "did you
//! mean"), their static shapes, and the float32 `[B, H, W, C]` input.
//! Invariants: an image input's final shape is static (a caret under the
//! transform that leaves it unknown or cannot apply); a spec with an image
//! source has exactly one image input and every other input reads the
//! `label` column; an image input needs an image source, and an image
//! model's `eval_data` is one (`check`, after every item, which also gives
//! every image source the input's pipeline); `cache` is refused on images.

use specc_grammar::ast::{Binding, Call, Expr, ExprKind, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::data::images::{
    ImageOp, ImagePipeline, ImageSource, ResizeMethod, TRANSFORM_NAMES,
};
use specc_runtime::data::{ImagesSpec, InputKind, InputSpec, Normalizer, Source};
use specc_runtime::io::tfrecord::Compression;
use specc_runtime::pipeline::{files, Format, ImageFormat, ImageRecords, OnBadRecord, StreamSpec};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::{DType, Dim, Shape};
use crate::model::DataItem;

/// The data source functions of this module.
pub(crate) fn handles_source(name: &str) -> bool {
    matches!(
        name,
        "image_dataset_from_directory" | "image_csv" | "image_tfrecord"
    )
}

fn non_empty_string<'e>(e: &'e Expr, what: &str) -> R<&'e str> {
    let s = args::eval_string(e)?;
    if s.is_empty() {
        return Err(
            Diagnostic::new(Code::EmptyArgument, e.span, format!("empty {what}"))
                .with_label("expected a non-empty string"),
        );
    }
    Ok(s)
}

/// `image_dataset_from_directory(directory, threads = 1, on_bad_record =
/// "error", seed = 0)`, `image_csv(path, path_column = "path", label_column
/// = "label", ...)`, `image_tfrecord(path, image_key = "image/encoded",
/// label_key = "image/class/label", compression = "", ...)`, each with the
/// streaming options `stream`, `num_epochs`, `cycle_length`, `block_length`.
///
/// The source streams (`Source::Stream` with `Format::Images`, read
/// and transformed on the pipeline's workers) with `stream = true`, a glob
/// pattern (`image_csv`, `image_tfrecord`), or a streaming-only option;
/// otherwise it is loaded into memory. `eval` (an `eval_data` item): always
/// streamed, one pass per evaluation, without the random transforms.
pub(crate) fn source(call: &Call, eval: bool) -> R<DataItem> {
    let name = call.func.name.as_str();
    let mut params = vec![
        req(if name == "image_dataset_from_directory" {
            "directory"
        } else {
            "path"
        }),
        opt("threads"),
        opt("on_bad_record"),
        opt("seed"),
    ];
    match name {
        "image_csv" => params.extend([opt("path_column"), opt("label_column")]),
        "image_tfrecord" => params.extend([opt("image_key"), opt("label_key"), opt("compression")]),
        _ => {}
    }
    let streaming = params.len();
    params.extend([
        opt("stream"),
        opt("num_epochs"),
        opt("cycle_length"),
        opt("block_length"),
        opt("cache"),
    ]);
    let b = args::bind(name, call, &params)?;
    let path = non_empty_string(b.req(0), "path")?.to_string();
    let threads = match b.get(1) {
        None => 1,
        Some(e) => {
            let t = args::eval_count(e, "threads")?;
            if t == 0 || t > 64 {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("threads must be in [1, 64], got {t}"),
                )
                .with_label("out of range"));
            }
            t as usize
        }
    };
    let on_bad_record = match b.get(2) {
        None => OnBadRecord::Error,
        Some(e) => OnBadRecord::from_name(args::eval_string(e)?).ok_or_else(|| {
            Diagnostic::new(
                Code::UnknownChoice,
                e.span,
                "on_bad_record must be \"error\" or \"skip\"",
            )
            .with_label("unknown policy")
        })?,
    };
    let seed = match b.get(3) {
        None => 0,
        Some(e) => args::eval_count(e, "seed")?,
    };
    let string_or = |i: usize, default: &str| -> R<String> {
        match b.get(i) {
            None => Ok(default.to_string()),
            Some(e) => Ok(non_empty_string(e, "name")?.to_string()),
        }
    };
    let source = match name {
        "image_csv" => ImageSource::Csv {
            path: path.clone().into(),
            path_column: string_or(4, "path")?,
            label_column: string_or(5, "label")?,
        },
        "image_tfrecord" => {
            let compression = match b.get(6) {
                None => Compression::None,
                Some(e) => Compression::from_tf_name(args::eval_string(e)?).ok_or_else(|| {
                    Diagnostic::new(
                        Code::UnknownChoice,
                        e.span,
                        "compression must be \"GZIP\", \"ZLIB\" or \"\"",
                    )
                    .with_label("unknown compression")
                })?,
            };
            ImageSource::TfRecord {
                paths: vec![path.clone().into()],
                compression,
                image_key: string_or(4, "image/encoded")?,
                label_key: string_or(5, "image/class/label")?,
            }
        }
        _ => ImageSource::Directory {
            dir: path.clone().into(),
        },
    };
    let stream = b.get(streaming).map(args::eval_bool).transpose()?;
    if let Some(e) = b.get(streaming + 4) {
        return Err(Diagnostic::new(
            Code::UnsupportedArgument,
            e.span,
            "`cache` is not available for an image source",
        )
        .with_label("would keep the first epoch's augmented pixels")
        .with_help("a streamed image source decodes every epoch afresh; drop `cache`"));
    }
    let count = |i: usize, what: &str| -> R<Option<u64>> {
        match b.get(i) {
            None => Ok(None),
            Some(e) => {
                let v = args::eval_count(e, what)?;
                if v == 0 || v > u32::MAX as u64 {
                    return Err(Diagnostic::new(
                        Code::ArgumentOutOfRange,
                        e.span,
                        format!("{what} must be a positive integer, got {v}"),
                    )
                    .with_label("out of range"));
                }
                Ok(Some(v))
            }
        }
    };
    let num_epochs = count(streaming + 1, "num_epochs")?;
    let cycle_length = count(streaming + 2, "cycle_length")?;
    let block_length = count(streaming + 3, "block_length")?;
    let pattern = name != "image_dataset_from_directory" && files::is_pattern(&path);
    let stream_only = (1..4).find_map(|k| b.get(streaming + k));
    if stream == Some(false) {
        let e = b.get(streaming).expect("given");
        if pattern || eval {
            return Err(Diagnostic::new(
                Code::UnsupportedArgument,
                e.span,
                if eval {
                    "an image `eval_data` always streams"
                } else {
                    "a glob pattern always streams"
                },
            )
            .with_label("cannot be loaded into memory"));
        }
        if let Some(o) = stream_only {
            return Err(Diagnostic::new(
                Code::ConflictingArguments,
                o.span,
                "this option is the input pipeline's, and the source does not stream",
            )
            .with_label("needs a streamed source")
            .with_secondary(e.span, "`stream = false` here"));
        }
    }
    let streams = eval || stream == Some(true) || pattern || stream_only.is_some();
    if streams {
        let records = match source {
            ImageSource::Directory { .. } => ImageRecords::Directory,
            ImageSource::Csv {
                path_column,
                label_column,
                ..
            } => ImageRecords::Csv {
                path_column,
                label_column,
            },
            ImageSource::TfRecord {
                compression,
                image_key,
                label_key,
                ..
            } => ImageRecords::TfRecord {
                compression,
                image_key,
                label_key,
            },
        };
        let mut spec = StreamSpec::new(
            Format::Images(Box::new(ImageFormat {
                records,
                // Filled in by `check`, after the features.
                pipeline: ImagePipeline { ops: Vec::new() },
                seed,
                training: !eval,
            })),
            vec![path.into()],
        );
        spec.threads = threads;
        spec.on_bad_record = on_bad_record;
        spec.num_epochs = num_epochs;
        if let Some(c) = cycle_length {
            spec.cycle_length = c as usize;
        }
        if let Some(bl) = block_length {
            spec.block_length = bl as usize;
        }
        return Ok(DataItem {
            source: Source::Stream(spec),
            span: call.span,
        });
    }
    Ok(DataItem {
        source: Source::Images(ImagesSpec {
            source,
            pipeline: ImagePipeline { ops: Vec::new() },
            threads,
            on_bad_record,
            // The in-memory data set holds the evaluation form; `specc run`
            // redraws the random transforms per training batch
            // (`data::images::Augmenter`).
            training: false,
            seed,
        }),
        span: call.span,
    })
}

/// The image pipeline slot of a data source that reads images (in memory
/// or streamed), `None` for the others.
fn pipeline_of(d: &mut DataItem) -> Option<&mut ImagePipeline> {
    match &mut d.source {
        Source::Images(spec) => Some(&mut spec.pipeline),
        Source::Stream(spec) => match &mut spec.format {
            Format::Images(f) => Some(&mut f.pipeline),
            _ => None,
        },
        _ => None,
    }
}

fn transform(e: &Expr) -> R<(ImageOp, Span)> {
    let ExprKind::Call(call) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!(
                "expected an image transform like resize([16, 16]), found {}",
                args::describe(e)
            ),
        )
        .with_label("not a transform"));
    };
    let name = call.func.name.as_str();
    let size_list = |e: &Expr, n: usize| -> R<Vec<usize>> {
        let v = args::eval_int_list(e)?;
        if v.len() != n || v.iter().any(|&d| d <= 0 || d > 1 << 20) {
            return Err(Diagnostic::new(
                Code::MalformedArgument,
                e.span,
                format!("`size` must be {n} positive integers, got {v:?}"),
            )
            .with_label(format!("expected {n} sizes")));
        }
        Ok(v.into_iter().map(|d| d as usize).collect())
    };
    let op = match name {
        "decode_image" => {
            let b = args::bind(name, call, &[opt("channels"), opt("expand_animations")])?;
            let channels = match b.get(0) {
                None => 0,
                Some(e) => {
                    let c = args::eval_count(e, "channels")?;
                    if ![0, 1, 3, 4].contains(&c) {
                        return Err(Diagnostic::new(
                            Code::UnknownChoice,
                            e.span,
                            format!("`channels` must be 0, 1, 3 or 4, got {c}"),
                        )
                        .with_label("TF's decode_image channels"));
                    }
                    c as usize
                }
            };
            if let Some(e) = b.get(1) {
                if args::eval_bool(e)? {
                    return Err(Diagnostic::new(
                        Code::UnsupportedArgument,
                        e.span,
                        "an image input is one image per example: `expand_animations` must be false",
                    )
                    .with_label("GIF frames would make a 4-D tensor"));
                }
            }
            ImageOp::DecodeImage { channels }
        }
        "resize" => {
            let b = args::bind(
                name,
                call,
                &[
                    req("size"),
                    opt("method"),
                    opt("antialias"),
                    opt("preserve_aspect_ratio"),
                ],
            )?;
            let size = size_list(b.req(0), 2)?;
            let method = match b.get(1) {
                Some(e) => {
                    let m = args::eval_string(e)?;
                    ResizeMethod::from_name(m).ok_or_else(|| {
                        Diagnostic::new(
                            Code::UnknownChoice,
                            e.span,
                            format!("unknown resize method \"{m}\""),
                        )
                        .with_label("not a tf.image.ResizeMethod")
                        .with_help("the methods: bilinear, nearest, bicubic, area, lanczos3, lanczos5, gaussian, mitchellcubic")
                    })?
                }
                None => ResizeMethod::Bilinear,
            };
            let antialias = match b.get(2) {
                Some(e) => args::eval_bool(e)?,
                None => false,
            };
            if let Some(e) = b.get(3) {
                if args::eval_bool(e)? {
                    return Err(Diagnostic::new(
                        Code::UnsupportedArgument,
                        e.span,
                        "`preserve_aspect_ratio = true` gives each image its own size; an input needs one static shape",
                    )
                    .with_label("the shape would depend on the image")
                    .with_help("resize to a fixed size, or use `resize_with_crop_or_pad`-style cropping with `central_crop`/`random_crop`"));
                }
            }
            if method == ResizeMethod::Bilinear && !antialias {
                ImageOp::Resize {
                    size: [size[0], size[1]],
                }
            } else {
                ImageOp::ResizeKernel {
                    size: [size[0], size[1]],
                    method,
                    antialias,
                }
            }
        }
        "central_crop" => {
            let b = args::bind(name, call, &[req("central_fraction")])?;
            ImageOp::CentralCrop {
                fraction: args::eval_number(b.req(0))?,
            }
        }
        "random_crop" => {
            let b = args::bind(name, call, &[req("size")])?;
            let s = size_list(b.req(0), 3)?;
            ImageOp::RandomCrop {
                size: [s[0], s[1], s[2]],
            }
        }
        "random_flip_left_right" => {
            args::bind(name, call, &[])?;
            ImageOp::RandomFlipLeftRight
        }
        "random_flip_up_down" => {
            args::bind(name, call, &[])?;
            ImageOp::RandomFlipUpDown
        }
        "random_brightness" => {
            let b = args::bind(name, call, &[req("max_delta")])?;
            ImageOp::RandomBrightness {
                max_delta: args::eval_number(b.req(0))? as f32,
            }
        }
        "random_contrast" | "random_saturation" => {
            let b = args::bind(name, call, &[req("lower"), req("upper")])?;
            let lower = args::eval_number(b.req(0))? as f32;
            let upper = args::eval_number(b.req(1))? as f32;
            if name == "random_contrast" {
                ImageOp::RandomContrast { lower, upper }
            } else {
                ImageOp::RandomSaturation { lower, upper }
            }
        }
        "random_hue" => {
            let b = args::bind(name, call, &[req("max_delta")])?;
            ImageOp::RandomHue {
                max_delta: args::eval_number(b.req(0))? as f32,
            }
        }
        "per_image_standardization" => {
            args::bind(name, call, &[])?;
            ImageOp::PerImageStandardization
        }
        other => {
            if let Some(op) = super::image_transforms::transform(call) {
                return Ok((op?, e.span));
            }
            let mut d = Diagnostic::new(
                Code::UnknownFunction,
                call.func.span,
                format!("unknown image transform `{other}`"),
            )
            .with_label("not an image transform");
            d = match args::suggest(other, TRANSFORM_NAMES.iter().copied()) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("the transforms: {}", TRANSFORM_NAMES.join(", "))),
            };
            return Err(d);
        }
    };
    Ok((op, e.span))
}

/// `image(decode_image(channels = C), TRANSFORM, ...)`: a float32
/// `[B, H, W, C]` input from the image source.
pub(crate) fn image_feature(st: &mut State, b: &Binding, call: &Call) -> R<()> {
    st.image_input_attempted = true;
    if let Some((_, prev)) = &st.image_input {
        return Err(Diagnostic::new(
            Code::DuplicateItem,
            b.name.span,
            "a spec has one image input",
        )
        .with_label("second image input")
        .with_secondary(*prev, "first one here"));
    }
    let (exprs, _) = args::bind_variadic("image", call, "TRANSFORMS", &[])?;
    if exprs.is_empty() {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            call.span,
            "an image input needs its transforms, starting with decode_image(channels = C)",
        )
        .with_label("no transforms"));
    }
    let mut ops = Vec::with_capacity(exprs.len());
    let mut spans = Vec::with_capacity(exprs.len());
    for e in exprs {
        let (op, span) = transform(e)?;
        ops.push(op);
        spans.push(span);
    }
    let pipeline = ImagePipeline { ops };
    let [h, w, c] = pipeline.output_shape().map_err(|(i, m)| {
        Diagnostic::new(Code::ImageShape, spans[i.min(spans.len() - 1)], m).with_label("here")
    })?;
    let dims = |n: usize| Dim::Fixed(n as u32);
    super::inputs::add_image_input(
        st,
        &b.name.name,
        b.name.span,
        InputSpec {
            name: b.name.name.clone(),
            columns: vec![specc_runtime::data::images::IMAGE_COLUMN.to_string()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: None,
        },
        DType::F32,
        Shape(vec![Dim::Batch, dims(h), dims(w), dims(c)]),
    )?;
    st.image_input = Some((pipeline, b.name.span));
    Ok(())
}

/// After every item: an image source (the data, and an image `eval_data`)
/// takes the image input's pipeline; an image input needs an image source;
/// an image source needs one; an image model's `eval_data` is an image source.
pub(crate) fn check(st: &mut State) {
    let image = st.image_input.clone();
    if let (Some((eval, eval_span)), Some((pipeline, _))) = (&mut st.eval_data, &image) {
        let eval_span = *eval_span;
        match pipeline_of(eval) {
            Some(p) => *p = pipeline.clone(),
            None => st.errors.push(
                Diagnostic::new(
                    Code::ImageEvalData,
                    eval_span,
                    "the evaluation data of an image model must be an image source",
                )
                .with_label("not an image source")
                .with_help("use eval_data image_dataset_from_directory(\"dir\"), image_csv(..) or image_tfrecord(..)"),
            ),
        }
    }
    let eval_images = st
        .eval_data
        .as_mut()
        .is_some_and(|(d, _)| pipeline_of(d).is_some());
    if eval_images && image.is_none() && !st.image_input_attempted {
        let span = st.eval_data.as_ref().map(|(_, s)| *s).expect("checked");
        st.errors.push(
            Diagnostic::new(
                Code::MissingImageInput,
                span,
                "an image source needs an image input",
            )
            .with_label("images, but no input takes them")
            .with_help(
                "add features { x = image(decode_image(channels = 3), resize([224, 224])) }",
            ),
        );
    }
    let data_images = st
        .data
        .as_mut()
        .is_some_and(|(d, _)| pipeline_of(d).is_some());
    match (&mut st.data, image) {
        (Some((d, _)), Some((pipeline, _))) if data_images => {
            if let Some(p) = pipeline_of(d) {
                *p = pipeline;
            }
        }
        (Some((_, span)), None) if data_images && !st.image_input_attempted => {
            let span = *span;
            st.errors.push(
                Diagnostic::new(
                    Code::MissingImageInput,
                    span,
                    "an image source needs an image input",
                )
                .with_label("images, but no input takes them")
                .with_help(
                    "add features { x = image(decode_image(channels = 3), resize([224, 224])) }",
                ),
            );
        }
        (Some((_, data_span)), Some((_, span))) => {
            let data_span = *data_span;
            st.errors.push(
                Diagnostic::new(
                    Code::ImageInputSource,
                    span,
                    "an image input needs an image source",
                )
                .with_label("image input")
                .with_secondary(data_span, "not an image source")
                .with_help("use data image_dataset_from_directory(\"dir\"), image_csv(..) or image_tfrecord(..)"),
            );
        }
        _ => {}
    }
}
