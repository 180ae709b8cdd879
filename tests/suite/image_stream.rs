//! Image sources that stream (`stream = true`, a glob pattern, or a
//! streaming-only option): the digits (`specs/data/digits.csv` as 8×8 PNGs)
//! read, decoded and augmented a chunk at a time on the input pipeline's
//! workers. A streamed run without shuffle trains to the same bits as the
//! in-memory run (the draws are keyed by seed, epoch and example index in
//! both); one and two threads, and a run stopped and resumed, give the same
//! checkpoint bytes; a bad PNG stops the run naming the file or is skipped
//! and counted; a TFRecord of encoded images (a pattern: streamed) trains
//! like the folder; an image `eval_data` is evaluated streamed; spec errors
//! have carets.

use std::path::Path;

use specc_runtime::io::example::{Example, Feature};
use specc_runtime::io::tfrecord::{Compression, RecordWriter};

use crate::cli;
use crate::common::digit_pngs;
use cli::specc;
use digit_pngs::{digits, png, write_folder};

/// An empty directory of this file's (`digit_pngs::scratch`).
fn scratch(name: &str) -> std::path::PathBuf {
    digit_pngs::scratch(module_path!(), name)
}

/// `specc run SPEC --json ARGS` in `dir`, which must succeed.
fn run_json(dir: &Path, spec: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", spec, "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = specc(dir, &all);
    assert_eq!(code, 0, "specc {all:?}\n{out}\n{err}");
    serde_json::from_str(out.lines().last().expect("a JSON line")).expect("JSON")
}

const AUGMENT: &str = "resize([10, 10]), random_crop([8, 8, 1]), random_flip_left_right(), \
                       random_brightness(8.0)";

const MLP: &str = r#"
params {
  W1: [64, 64] = glorot_uniform(seed = 1)
  b1: [64]     = zeros
  W2: [64, 10] = glorot_uniform(seed = 2)
  b2: [10]     = zeros
}
pixels = reshape(image, [-1, 64]) / 255
h      = relu(pixels @ W1 + b1)
logits = h @ W2 + b2
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.001)
metrics { accuracy(label, argmax(logits)) }
"#;

/// A spec over `data` with `train` (and `extra` items).
fn write_spec(dir: &Path, name: &str, data: &str, train: &str, extra: &str) {
    std::fs::write(
        dir.join(name),
        format!(
            "model m\ndata {data}\n{extra}\nlabel label: int\nfeatures {{\n  \
             image = image(decode_image(channels = 1), {AUGMENT})\n}}\n{MLP}\n{train}\n"
        ),
    )
    .expect("spec");
}

/// The tensors of `DIR/model.ckpt-STEP` (index and data files).
fn checkpoint(dir: &Path, step: u64) -> (Vec<u8>, Vec<u8>) {
    let p = dir.join(format!("model.ckpt-{step}"));
    (
        std::fs::read(p.with_extension(format!("ckpt-{step}.index"))).expect("index"),
        std::fs::read(p.with_extension(format!("ckpt-{step}.data-00000-of-00001"))).expect("data"),
    )
}

/// Without shuffle, the streamed folder gives the in-memory run's batches
/// (the same rows in the same order, each augmented with the same draws):
/// the same last loss and the same final model, measured by a streamed
/// evaluation of the folder (`eval_data`) in both runs, bit for bit. With
/// shuffle the two differ (the check can fail).
#[test]
fn a_streamed_folder_trains_like_the_folder_in_memory() {
    let dir = scratch("stream_vs_memory");
    let all: Vec<_> = digits().into_iter().take(320).collect();
    write_folder(&dir.join("digits"), &all);
    // 320 images, batches of 32: 10 steps an epoch, no batch straddles two
    // epochs (in memory a batch's draws are keyed by the epoch it ends in).
    let train = "train { batch = 32, steps = 30, shuffle = 0, seed = 7, eval_fraction = 0 }";
    let eval = "eval_data image_dataset_from_directory(\"digits\")";
    write_spec(
        &dir,
        "memory.spec",
        "image_dataset_from_directory(\"digits\", seed = 3)",
        train,
        eval,
    );
    write_spec(
        &dir,
        "stream.spec",
        "image_dataset_from_directory(\"digits\", seed = 3, stream = true, threads = 2, \
         block_length = 24)",
        train,
        eval,
    );
    let memory = run_json(&dir, "memory.spec", &[]);
    let stream = run_json(&dir, "stream.spec", &[]);
    assert_eq!(memory["steps"], 30);
    assert_eq!(stream["steps"], 30);
    assert!(memory["last_loss"].as_f64().is_some(), "{memory}");
    assert_eq!(memory["last_loss"], stream["last_loss"]);
    assert_eq!(stream["eval"]["rows"], 320, "{stream}");
    assert!(stream["eval"]["loss"].as_f64().is_some(), "{stream}");
    assert_eq!(memory["eval"], stream["eval"]);
    // A streamed source has no held-out split and no training-set metrics.
    assert!(stream["train"].is_null(), "{stream}");

    // Another seed of the augmentations: other batches (the comparison above
    // can fail).
    write_spec(
        &dir,
        "other.spec",
        "image_dataset_from_directory(\"digits\", seed = 4, stream = true)",
        train,
        eval,
    );
    let other = run_json(&dir, "other.spec", &[]);
    assert_ne!(other["last_loss"], stream["last_loss"]);
}

/// One and two worker threads, and a run stopped after 25 steps and
/// resumed to 60, write the same checkpoint bytes as a straight run (with a
/// shuffle buffer, several chunks, batches straddling epochs).
#[test]
fn threads_and_resume_give_the_same_checkpoint() {
    let dir = scratch("threads_resume");
    let all: Vec<_> = digits().into_iter().take(300).collect();
    write_folder(&dir.join("digits"), &all);
    let train = "train { batch = 32, steps = 60, shuffle = 100, seed = 7 }";
    for threads in [1, 2] {
        write_spec(
            &dir,
            &format!("t{threads}.spec"),
            &format!(
                "image_dataset_from_directory(\"digits\", stream = true, threads = {threads}, \
                 block_length = 40, seed = 5)"
            ),
            train,
            "",
        );
    }
    let one = run_json(&dir, "t1.spec", &["--checkpoint-dir", "one"]);
    let two = run_json(&dir, "t2.spec", &["--checkpoint-dir", "two"]);
    assert_eq!(one["steps"], 60);
    assert_eq!(one["last_loss"], two["last_loss"]);
    let first = run_json(
        &dir,
        "t2.spec",
        &["--steps", "25", "--checkpoint-dir", "resumed"],
    );
    assert_eq!(first["global_step"], 25);
    let resumed = run_json(&dir, "t2.spec", &["--checkpoint-dir", "resumed"]);
    assert_eq!(resumed["steps"], 35);
    assert_eq!(resumed["global_step"], 60);
    assert_eq!(one["last_loss"], resumed["last_loss"]);
    let a = checkpoint(&dir.join("one"), 60);
    let b = checkpoint(&dir.join("two"), 60);
    let c = checkpoint(&dir.join("resumed"), 60);
    assert!(a.0 == b.0 && a.1 == b.1, "1 and 2 threads differ");
    assert!(a.0 == c.0 && a.1 == c.1, "the resumed run differs");
    // The run is not trivially the same whatever the data: another seed
    // of the augmentations gives other bytes.
    write_spec(
        &dir,
        "seed6.spec",
        "image_dataset_from_directory(\"digits\", stream = true, block_length = 40, seed = 6)",
        train,
        "",
    );
    run_json(&dir, "seed6.spec", &["--checkpoint-dir", "seed6"]);
    assert!(checkpoint(&dir.join("seed6"), 60).1 != a.1);
}

/// A corrupt PNG in the stream: with `"error"` the run stops naming the
/// file; with `"skip"` it is skipped, counted and located, and the epoch
/// has one row fewer.
#[test]
fn a_bad_png_in_the_stream_names_its_file_or_is_skipped() {
    let dir = scratch("bad_png");
    let all: Vec<_> = digits().into_iter().take(100).collect();
    write_folder(&dir.join("digits"), &all);
    let mut bytes = png(&all[0].0);
    bytes.truncate(bytes.len() / 2);
    std::fs::write(
        dir.join(format!("digits/{}/zz_corrupt.png", all[0].1)),
        &bytes,
    )
    .expect("write");
    let train = "train { batch = 10, steps = 1000, shuffle = 0, seed = 7 }";
    write_spec(
        &dir,
        "error.spec",
        "image_dataset_from_directory(\"digits\", num_epochs = 1, threads = 2, block_length = 16)",
        train,
        "",
    );
    let (code, _, err) = specc(&dir, &["run", "error.spec"]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("zz_corrupt.png"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    write_spec(
        &dir,
        "skip.spec",
        "image_dataset_from_directory(\"digits\", num_epochs = 1, threads = 2, block_length = 16, \
         on_bad_record = \"skip\")",
        train,
        "",
    );
    let (code, out, err) = specc(&dir, &["run", "skip.spec", "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("JSON")).expect("JSON");
    assert_eq!(json["bad_records"], 1, "{json}");
    assert_eq!(json["steps"], 10, "100 good images in batches of 10");
    let locs = json["bad_record_locations"].as_array().expect("locations");
    assert!(
        locs[0].as_str().expect("text").contains("zz_corrupt.png"),
        "{locs:?}"
    );
    assert!(err.contains("skipped 1 bad record"), "{err}");
}

/// `image_tfrecord` over a pattern of two TFRecord files streams (a pattern
/// always does): with the records in the folder's order, no shuffle and one
/// file at a time, it trains to the folder's bits. A record that is not an
/// image stops the run naming the file and record; an `image_csv` row with
/// a missing file names the CSV and its line.
#[test]
fn a_tfrecord_of_encoded_images_streams_like_the_folder() {
    let dir = scratch("tfrecord");
    let all: Vec<_> = digits().into_iter().take(320).collect();
    let ordered = write_folder(&dir.join("digits"), &all);
    for (part, rows) in ordered.chunks(200).enumerate() {
        let mut records = RecordWriter::new(Vec::new(), Compression::None);
        for (px, label) in rows {
            let mut e = Example::default();
            e.features
                .insert("image/encoded".into(), Feature::BytesList(vec![png(px)]));
            e.features
                .insert("image/class/label".into(), Feature::Int64List(vec![*label]));
            records.write(&e.encode()).expect("record");
        }
        std::fs::write(
            dir.join(format!("part-{part}.tfrecord")),
            records.finish().expect("finish"),
        )
        .expect("tfrecord");
    }
    let train = "train { batch = 32, steps = 20, shuffle = 0, seed = 7 }";
    write_spec(
        &dir,
        "folder.spec",
        "image_dataset_from_directory(\"digits\", stream = true, seed = 2)",
        train,
        "",
    );
    write_spec(
        &dir,
        "tfrecord.spec",
        "image_tfrecord(\"part-*.tfrecord\", seed = 2, threads = 2, block_length = 50)",
        train,
        "",
    );
    let folder = run_json(&dir, "folder.spec", &[]);
    let tfrecord = run_json(&dir, "tfrecord.spec", &[]);
    assert_eq!(tfrecord["steps"], 20);
    assert!(tfrecord["train"].is_null(), "streamed: {tfrecord}");
    assert_eq!(folder["last_loss"], tfrecord["last_loss"]);

    // A record whose image is not an image: file and record named.
    let mut records = RecordWriter::new(Vec::new(), Compression::None);
    for (i, (px, label)) in ordered.iter().take(5).enumerate() {
        let mut e = Example::default();
        let bytes = if i == 3 {
            b"not a png".to_vec()
        } else {
            png(px)
        };
        e.features
            .insert("image/encoded".into(), Feature::BytesList(vec![bytes]));
        e.features
            .insert("image/class/label".into(), Feature::Int64List(vec![*label]));
        records.write(&e.encode()).expect("record");
    }
    std::fs::write(dir.join("bad.tfrecord"), records.finish().expect("finish")).expect("write");
    write_spec(
        &dir,
        "bad.spec",
        "image_tfrecord(\"bad.tfrecord\", stream = true)",
        train,
        "",
    );
    let (code, _, err) = specc(&dir, &["run", "bad.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.tfrecord"), "{err}");
    assert!(err.contains("record 3"), "{err}");

    // image_csv: a missing file names the CSV, its line and the image.
    let mut csv = String::from("path,label\n");
    for (i, (_, label)) in all.iter().take(6).enumerate() {
        let name = if i == 4 {
            "missing.png".to_string()
        } else {
            format!("digits/{label}/{i:05}.png")
        };
        csv += &format!("{name},{label}\n");
    }
    std::fs::write(dir.join("files.csv"), csv).expect("csv");
    write_spec(
        &dir,
        "csv.spec",
        "image_csv(\"files.csv\", stream = true)",
        train,
        "",
    );
    let (code, _, err) = specc(&dir, &["run", "csv.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("files.csv:6"), "{err}");
    assert!(err.contains("missing.png"), "{err}");
}

/// What an image source cannot do streamed is a spec error with a caret.
#[test]
fn streaming_image_spec_errors_have_carets() {
    let dir = scratch("spec_errors");
    let cases = [
        (
            "image_tfrecord(\"part-*.tfrecord\", stream = false)",
            "a glob pattern always streams",
        ),
        (
            "image_dataset_from_directory(\"d\", cache = true)",
            "`cache` is not available for an image source",
        ),
        (
            "image_csv(\"f.csv\", stream = false, num_epochs = 2)",
            "the source does not stream",
        ),
        (
            "image_dataset_from_directory(\"d\", block_length = 0)",
            "block_length must be a positive integer",
        ),
    ];
    let train = "train { batch = 8, steps = 10 }";
    for (i, (data, want)) in cases.iter().enumerate() {
        write_spec(&dir, &format!("e{i}.spec"), data, train, "");
        let (code, _, err) = specc(&dir, &["check", &format!("e{i}.spec")]);
        assert_ne!(code, 0, "{data}");
        assert!(err.contains(want), "{data}: {err}");
        assert!(err.contains('^'), "{data}: a caret\n{err}");
    }
    // An image model's evaluation data must be images.
    write_spec(
        &dir,
        "eval.spec",
        "image_dataset_from_directory(\"d\")",
        train,
        "eval_data csv(\"test.csv\")",
    );
    let (code, _, err) = specc(&dir, &["check", "eval.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("must be an image source"), "{err}");
    assert!(err.contains('^'), "{err}");
}
