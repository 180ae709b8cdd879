//! What `specc run` writes and prints besides training, end to end: event
//! files for TensorBoard in the checkpoint directory (train scalars, the
//! metric of each batch, global_step/sec) and its `eval/` run (periodic
//! held-out evaluations, the last equal to the run's reported held-out
//! numbers), the spec and its configuration as text, logged tensors, and
//! `init_from_checkpoint`.

use crate::cli;

use std::path::{Path, PathBuf};

use cli::specc;
use specc_runtime::checkpoint::{latest_checkpoint, BundleReader, Tensor};
use specc_runtime::summary::event::{SummaryValue, ValueKind, What};
use specc_runtime::summary::{event_files, read_events};

fn setup(name: &str, spec: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("run_hooks")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("data.csv"), cli::DATA).unwrap();
    std::fs::write(d.join("spec.spec"), spec).unwrap();
    d
}

fn run(dir: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["run", "spec.spec", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = specc(dir, &all);
    assert_eq!(code, 0, "specc {all:?}\n{err}");
    (
        serde_json::from_str(out.lines().last().unwrap()).unwrap(),
        err,
    )
}

/// `(step, value)` of every summary value in the one event file of `dir`.
fn summary_values(dir: &Path) -> Vec<(i64, SummaryValue)> {
    let files = event_files(dir).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut out = Vec::new();
    for e in read_events(&files[0]).unwrap() {
        if let What::Summary(s) = e.what {
            out.extend(s.values.into_iter().map(|v| (e.step, v)));
        }
    }
    out
}

/// `(step, tag, value)` of every scalar in the event files of `dir`.
fn scalars(dir: &Path) -> Vec<(i64, String, f32)> {
    summary_values(dir)
        .into_iter()
        .filter_map(|(step, v)| match v.kind {
            ValueKind::SimpleValue(x) => Some((step, v.tag, x)),
            _ => None,
        })
        .collect()
}

fn steps_of(s: &[(i64, String, f32)], tag: &str) -> Vec<i64> {
    s.iter().filter(|(_, t, _)| t == tag).map(|e| e.0).collect()
}

/// The base spec with 5 held-out rows of 10 and 40 steps.
fn spec() -> String {
    cli::BASE.replace(
        "train { batch = 4, steps = 10 }",
        "train { batch = 4, steps = 40, eval_fraction = 0.5 }",
    )
}

#[test]
fn summaries_hold_the_loss_learning_rate_metrics_and_evaluations() {
    let data: String = (0..10)
        .map(|i| format!("{},{},{},{},{}\n", i, 10 - i, i % 3, 1, i % 3))
        .collect();
    let dir = setup("summaries", &spec());
    std::fs::write(dir.join("data.csv"), format!("x0,x1,x2,x3,y\n{data}")).unwrap();
    let (json, _) = run(
        &dir,
        &[
            "--checkpoint-dir",
            "ck",
            "--set",
            "summaries.every_steps=10",
            "--set",
            "evaluate.every_steps=15",
        ],
    );
    let train = scalars(&dir.join("ck"));
    // TF's SummarySaverHook: the first step, then every 10 global steps.
    for tag in ["loss", "learning_rate", "accuracy"] {
        assert_eq!(steps_of(&train, tag), [1, 11, 21, 31], "{tag}: {train:?}");
    }
    assert!(!steps_of(&train, "global_step/sec").is_empty(), "{train:?}");
    let lr = train.iter().find(|s| s.1 == "learning_rate").unwrap().2;
    assert_eq!(lr, 0.01);
    for (_, tag, x) in &train {
        if tag == "accuracy" {
            assert!((0.0..=1.0).contains(x), "{x}");
        }
    }
    // Held-out evaluations at 15, 30 and the last step; the last is the
    // held-out result the run reports.
    let eval = scalars(&dir.join("ck/eval"));
    assert_eq!(steps_of(&eval, "loss"), [15, 30, 40], "{eval:?}");
    assert_eq!(steps_of(&eval, "accuracy"), [15, 30, 40], "{eval:?}");
    let last_loss = eval.iter().rfind(|s| s.1 == "loss").unwrap().2;
    assert_eq!(last_loss, json["eval"]["loss"].as_f64().unwrap() as f32);
    let last_acc = eval.iter().rfind(|s| s.1 == "accuracy").unwrap().2;
    assert_eq!(last_acc, json["eval"]["accuracy"].as_f64().unwrap() as f32);
}

/// TensorBoard's Text tab: the spec as written and the configuration the
/// run resolved (an override among it), once, at the first summaries'
/// step and after that step's session START (which would purge them).
#[test]
fn summaries_hold_the_spec_and_the_resolved_configuration_as_text() {
    let dir = setup("texts", &spec());
    run(
        &dir,
        &[
            "--checkpoint-dir",
            "ck",
            "--set",
            "summaries.every_steps=10",
            "--set",
            "train.batch=5",
        ],
    );
    let files = event_files(dir.join("ck")).unwrap();
    let events = read_events(&files[0]).unwrap();
    let mut texts = Vec::new();
    let mut start = None;
    for (k, e) in events.iter().enumerate() {
        match &e.what {
            What::SessionLog(l) if l.status == 1 => start = Some(k),
            What::Summary(s) => {
                for v in &s.values {
                    if let Some(t) = v.as_text() {
                        assert_eq!(v.plugin_name.as_deref(), Some("text"));
                        texts.push((k, e.step, v.tag.clone(), t.to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    let tags: Vec<&str> = texts.iter().map(|t| t.2.as_str()).collect();
    assert_eq!(tags, ["spec", "config"], "once each");
    for (k, step, _, _) in &texts {
        assert_eq!(*step, 1, "the first summaries' step");
        assert!(Some(*k) > start, "after the session's START");
    }
    let spec_text = std::fs::read_to_string(dir.join("spec.spec")).unwrap();
    let spec_md = &texts[0].3;
    assert!(
        spec_md.starts_with("```\n") && spec_md.ends_with("\n```"),
        "{spec_md}"
    );
    assert_eq!(&spec_md[4..spec_md.len() - 4], spec_text.trim_end());
    let config = &texts[1].3;
    for want in [
        "config:\n",
        "  batch: 5\n",
        "  summaries:\n    dir: ",
        "    every_steps: 10\n",
        "  optimizer:\n    name: \"adam\"\n",
        "  - key: \"batch\"\n    value: \"5\"",
    ] {
        assert!(config.contains(want), "{want} not in\n{config}");
    }
}

/// `histogram_tensors` and `gradient_histograms`: a histogram of a named
/// tensor of the batch (here the features, whose values are the data's)
/// and of every parameter's gradient, at every write.
#[test]
fn summaries_hold_histograms_of_named_tensors_and_gradients() {
    let spec = cli::BASE.replace(
        "metrics {",
        "summaries { every_steps = 5, histogram_tensors = [x, h], gradient_histograms = true }\nmetrics {",
    );
    let dir = setup("tensor_histograms", &spec);
    run(&dir, &["--checkpoint-dir", "ck"]);
    let histograms: Vec<_> = summary_values(&dir.join("ck"))
        .into_iter()
        .filter_map(|(step, v)| match v.kind {
            ValueKind::Histo(h) => Some((step, v.tag, h)),
            _ => None,
        })
        .collect();
    let at = |step: i64, tag: &str| {
        histograms
            .iter()
            .find(|(s, t, _)| *s == step && t == tag)
            .map(|h| &h.2)
            .unwrap_or_else(|| panic!("no histogram {tag} at step {step}"))
    };
    for step in [1, 6] {
        for (tag, num) in [
            ("x", 16.0),
            ("h", 32.0),
            ("gradients/W1", 32.0),
            ("gradients/b1", 8.0),
            ("gradients/W2", 24.0),
            ("gradients/b2", 3.0),
        ] {
            assert_eq!(at(step, tag).num, num, "{tag} at step {step}");
        }
    }
    // The first batch is the data's first four rows.
    let x = at(1, "x");
    let rows: [[f64; 4]; 4] = [
        [1.0, 2.0, 3.0, 4.0],
        [0.5, 1.0, 1.5, 2.0],
        [-1.0, 0.0, 1.0, 2.0],
        [3.0, 1.0, 4.0, 1.0],
    ];
    let flat: Vec<f64> = rows.concat();
    assert_eq!(x.sum, flat.iter().sum::<f64>());
    assert_eq!(x.min, -1.0);
    assert_eq!(x.max, 4.0);
    // relu's outputs are never negative.
    assert!(at(1, "h").min >= 0.0);
    // The softmax layer's bias gradient is the batch's mean of
    // softmax - one-hot, whose classes sum to 0.
    let b2 = at(1, "gradients/b2");
    assert!(b2.sum.abs() < 1e-6, "{}", b2.sum);
    assert!(b2.sum_squares > 0.0);
}

#[test]
fn a_histogram_of_an_unknown_tensor_is_a_caret_error() {
    let spec = cli::BASE.replace(
        "metrics {",
        "summaries { every_steps = 5, histogram_tensors = [hh] }\nmetrics {",
    );
    let dir = setup("tensor_histograms_unknown", &spec);
    let (code, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 2, "{err}");
    for want in [
        "error[unknown-name]: unknown tensor `hh` in `summaries`' histogram_tensors",
        "spec.spec:18:51",
        "did you mean `h`?",
    ] {
        assert!(err.contains(want), "{want} not in\n{err}");
    }
}

/// `image_tensors`: the first `max_images` images of the batch as PNG
/// image summaries under TF's tags, each normalized as TF's `ImageSummary`
/// does (non-negative: the maximum to 255; signed: 0 at 128, the largest
/// magnitude to 1 or 255), here 2×2 gray images of the data's first rows.
#[test]
fn summaries_hold_images_of_the_batch_as_tf_normalizes_them() {
    let spec = cli::BASE.replace(
        "metrics {",
        "img = reshape(x, [B, 2, 2, 1])\nsummaries { every_steps = 5, image_tensors = [img], max_images = 3 }\nmetrics {",
    );
    let dir = setup("images", &spec);
    run(&dir, &["--checkpoint-dir", "ck"]);
    let images: Vec<_> = summary_values(&dir.join("ck"))
        .into_iter()
        .filter_map(|(step, v)| match v.kind {
            ValueKind::Image(i) => Some((step, v.tag, i)),
            _ => None,
        })
        .collect();
    let first: Vec<&str> = images
        .iter()
        .filter(|i| i.0 == 1)
        .map(|i| i.1.as_str())
        .collect();
    assert_eq!(first, ["img/image/0", "img/image/1", "img/image/2"]);
    // Rows 1, 2, 3 of data.csv: [1, 2, 3, 4] and [0.5, 1, 1.5, 2] scale
    // their maximum to 255; [-1, 0, 1, 2] maps v to v · 127 / 2 + 128.
    let want: [[u8; 4]; 3] = [
        [63, 127, 191, 255],
        [63, 127, 191, 255],
        [64, 128, 191, 255],
    ];
    for ((_, tag, image), want) in images.iter().zip(want) {
        assert_eq!(
            (image.height, image.width, image.colorspace),
            (2, 2, 1),
            "{tag}"
        );
        let decoded =
            specc_image::codec::decode_png(&image.encoded, 0, specc_image::codec::DecodeDType::U8)
                .unwrap();
        let specc_image::Image::U8(px) = decoded else {
            panic!("{tag}: not 8-bit");
        };
        assert_eq!(px.shape(), [2, 2, 1]);
        assert_eq!(px.iter().copied().collect::<Vec<u8>>(), want, "{tag}");
    }
}

/// `draw_bounding_boxes` named in `image_tensors`: TensorBoard reads the
/// boxed image. The step draws a box (TF's default first colour, yellow)
/// on 4×4 RGB images tiled from the data's rows; each written PNG decodes
/// to the library's `draw_bounding_boxes` of the same image (checked
/// against TF in `image/tests`), normalized as TF's `ImageSummary`.
#[test]
fn image_summaries_show_the_boxes_draw_bounding_boxes_draws() {
    let spec = cli::BASE.replace(
        "metrics {",
        "canvas = tile(reshape(x, [B, 2, 2, 1]), [1, 2, 2, 3])\n\
         boxes = reshape(reduce_sum(x, axis = 1) * 0.0, [B, 1, 1]) + [[[0.0, 0.25, 0.5, 1.0]]]\n\
         drawn = draw_bounding_boxes(canvas, boxes)\n\
         summaries { every_steps = 5, image_tensors = [drawn], max_images = 3 }\nmetrics {",
    );
    let dir = setup("drawn_boxes", &spec);
    run(&dir, &["--checkpoint-dir", "ck"]);
    let images: Vec<_> = summary_values(&dir.join("ck"))
        .into_iter()
        .filter_map(|(step, v)| match v.kind {
            ValueKind::Image(i) if step == 1 => Some((v.tag, i)),
            _ => None,
        })
        .collect();
    // Rows 1, 2, 3 of data.csv, the first batch's (as above).
    let rows: [[f32; 4]; 3] = [
        [1.0, 2.0, 3.0, 4.0],
        [0.5, 1.0, 1.5, 2.0],
        [-1.0, 0.0, 1.0, 2.0],
    ];
    assert_eq!(images.len(), rows.len());
    for ((tag, image), row) in images.iter().zip(rows) {
        let canvas = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[1, 4, 4, 3]), |i| {
            row[(i[1] % 2) * 2 + i[2] % 2]
        });
        let drawn =
            specc_image::draw::draw_bounding_boxes(&canvas, &[vec![[0.0, 0.25, 0.5, 1.0]]], None)
                .unwrap();
        let pixels: Vec<f32> = drawn.iter().copied().collect();
        let want = specc_runtime::summary::image::normalize(&pixels, 3);
        assert_eq!(
            (image.height, image.width, image.colorspace),
            (4, 4, 3),
            "{tag}"
        );
        let decoded =
            specc_image::codec::decode_png(&image.encoded, 0, specc_image::codec::DecodeDType::U8)
                .unwrap();
        let specc_image::Image::U8(px) = decoded else {
            panic!("{tag}: not 8-bit");
        };
        assert_eq!(px.iter().copied().collect::<Vec<u8>>(), want, "{tag}");
        // The outline is drawn: yellow where the box's top row runs.
        let top: Vec<f32> = drawn.iter().take(4 * 3).copied().collect();
        assert_eq!(&top[3..6], &[1.0, 1.0, 0.0], "{tag}: the box's corner");
    }
}

#[test]
fn image_tensors_must_be_a_batch_of_images() {
    let spec = cli::BASE.replace(
        "metrics {",
        "summaries { every_steps = 5, image_tensors = [h] }\nmetrics {",
    );
    let dir = setup("images_not_images", &spec);
    let (code, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 2, "{err}");
    for want in [
        "`h` is f32 [B, 8], not a batch of images [B, H, W, C] with 1, 3 or 4 channels",
        "spec.spec:18:47",
    ] {
        assert!(err.contains(want), "{want} not in\n{err}");
    }
}

#[test]
fn logged_tensors_print_the_spec_names_at_their_steps() {
    let dir = setup("logging", &spec());
    let (_, err) = run(
        &dir,
        &[
            "--checkpoint-dir",
            "ck",
            "--set",
            "logging.tensors=[loss, b2, h, global_step]",
            "--set",
            "logging.every_steps=20",
        ],
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("b2 = ")).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("step 1: loss = "), "{err}");
    assert!(lines[1].starts_with("step 21: "), "{err}");
    assert!(lines[2].starts_with("step 40: "), "{err}");
    assert!(lines[2].ends_with("global_step = 40"), "{err}");
    // The last line's parameter is the one the checkpoint holds.
    let reader = BundleReader::open(latest_checkpoint(dir.join("ck")).unwrap().unwrap()).unwrap();
    let Tensor::F32(b2) = reader.load("b2").unwrap() else {
        panic!("b2 is float32")
    };
    let printed: Vec<String> = b2.iter().map(|x| x.to_string()).collect();
    assert!(
        lines[2].contains(&format!("b2 = [3] [{}]", printed.join(" "))),
        "{}",
        lines[2]
    );
    // `h` is [batch, 8]: its shape and the first values, summarized.
    assert!(lines[2].contains("h = [4, 8] ["), "{}", lines[2]);
    assert!(lines[2].contains(" ...]"), "{}", lines[2]);
}

#[test]
fn init_from_checkpoint_starts_the_parameters_from_another_run() {
    let dir = setup("warm_start", &spec());
    run(&dir, &["--checkpoint-dir", "first"]);
    // A learning rate of 1e-30: one step leaves the loaded parameters as
    // they were (to far below float32's resolution).
    let warm = spec()
        .replace(
            "adam(learning_rate = 0.01)",
            "gradient_descent(learning_rate = 1e-30)",
        )
        .replace(
            "optimizer",
            "init_from_checkpoint(\"first\", { \"W1\": \"W1\", \"b1\": \"b1\" })\noptimizer",
        );
    std::fs::write(dir.join("spec.spec"), warm).unwrap();
    let (_, err) = run(&dir, &["--checkpoint-dir", "second", "--steps", "1"]);
    assert!(err.contains("2 parameters initialized from"), "{err}");
    let first = BundleReader::open(latest_checkpoint(dir.join("first")).unwrap().unwrap()).unwrap();
    let second =
        BundleReader::open(latest_checkpoint(dir.join("second")).unwrap().unwrap()).unwrap();
    let f32s = |r: &BundleReader, name: &str| match r.load(name).unwrap() {
        Tensor::F32(a) => a.iter().copied().collect::<Vec<f32>>(),
        other => panic!("{name}: {other:?}"),
    };
    for name in ["W1", "b1"] {
        let (a, b) = (f32s(&first, name), f32s(&second, name));
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-6 * x.abs() + 1e-20,
                "{name}: {x} vs {y}"
            );
        }
    }
    // W2 was not mapped: it has its initializer's value, not the trained one.
    assert_ne!(first.load("W2").unwrap(), second.load("W2").unwrap());
}

#[test]
fn init_from_checkpoint_names_a_missing_tensor() {
    let dir = setup("warm_start_missing", &spec());
    run(&dir, &["--checkpoint-dir", "first", "--steps", "1"]);
    let warm = spec().replace(
        "optimizer",
        "init_from_checkpoint(\"first\", { \"W7\": \"W1\" })\noptimizer",
    );
    std::fs::write(dir.join("spec.spec"), warm).unwrap();
    let (code, _, err) = specc(&dir, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`W7`") && err.contains("first"), "{err}");
}

#[test]
fn the_summary_step_trains_to_the_same_bits_as_the_step() {
    // Summaries and logged tensors at every step run the summary step every
    // step; with summaries never written the plain step runs. Same updates.
    let dir = setup("summary_step_bits", &spec());
    let every = [
        "--set",
        "summaries.every_steps=1",
        "--set",
        "logging.tensors=[h, accuracy]",
        "--set",
        "logging.every_steps=1",
    ];
    let never = [
        "--set",
        "summaries.every_steps=0",
        "--set",
        "logging.tensors=[h]",
    ];
    run(&dir, &[&["--checkpoint-dir", "every"][..], &every].concat());
    run(&dir, &[&["--checkpoint-dir", "never"][..], &never].concat());
    let bytes = |d: &str| {
        let p = latest_checkpoint(dir.join(d)).unwrap().unwrap();
        std::fs::read(format!("{}.data-00000-of-00001", p.display())).unwrap()
    };
    assert!(
        bytes("every") == bytes("never"),
        "the summary step changed the training"
    );
}
