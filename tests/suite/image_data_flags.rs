//! `--data` and `--eval-data` for image models: the path replaces the image
//! source's directory, CSV or TFRecord path (its options kept), for
//! `specc run`, `specc bench` and evaluation; a path that does not fit the
//! source's kind is an error naming the flag. Each run with a flag gives
//! exactly the numbers of the same spec naming that path itself.

use std::path::Path;

use crate::cli;
use crate::common::digit_pngs;
use digit_pngs::{digits, png, write_folder};

/// An empty directory of this file's (`digit_pngs::scratch`).
fn scratch(name: &str) -> std::path::PathBuf {
    digit_pngs::scratch(module_path!(), name)
}

/// Runs `specc ARGS` in the package directory (the tests' paths are
/// absolute); (exit code, stdout, stderr).
fn specc(args: &[&str]) -> (i32, String, String) {
    cli::specc(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// `specc run --json SPEC ARGS`: the JSON line, without the timings.
fn run_json(spec: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "--json", spec.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    let (code, out, err) = specc(&all);
    assert_eq!(code, 0, "{out}\n{err}");
    let mut json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("a JSON line")).expect("JSON");
    let obj = json.as_object_mut().expect("an object");
    for timing in ["compile_s", "train_s", "steps_per_s", "peak_rss_bytes"] {
        obj.remove(timing);
    }
    json
}

const MODEL: &str = r#"label label: int
features {
  image = image(decode_image(channels = 1), resize([8, 8]))
}
params {
  W1: [64, 32] = glorot_uniform(seed = 1)
  b1: [32]     = zeros
  W2: [32, 10] = glorot_uniform(seed = 2)
  b2: [10]     = zeros
}
pixels = reshape(image, [-1, 64]) / 255
logits = relu(pixels @ W1 + b1) @ W2 + b2
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer adam(learning_rate = 0.01)
train { batch = 16, steps = 40, shuffle = 64, seed = 7 }
metrics { accuracy(label, argmax(logits)) }
"#;

/// Writes `dir/NAME.spec` with the items `data` (the data and eval_data lines).
fn spec(dir: &Path, name: &str, data: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{name}.spec"));
    // One model name, so that the JSON of two specs can be equal.
    std::fs::write(&p, format!("model m\n{data}\n{MODEL}")).expect("spec");
    p
}

/// Folders `a` (digits 0..300, and one file that is not an image) and `b`
/// (digits 300..500) under `dir`, and `a.csv`, a CSV of `a`'s images.
fn folders(dir: &Path) {
    let all = digits();
    write_folder(&dir.join("a"), &all[..300]);
    std::fs::write(dir.join("a/3/broken.png"), b"not a png").expect("broken");
    write_folder(&dir.join("b"), &all[300..500]);
    let mut csv = String::from("file,digit\n");
    for (i, (px, label)) in all[..300].iter().enumerate() {
        let name = format!("csv_images/{i}.png");
        std::fs::create_dir_all(dir.join("csv_images")).expect("dir");
        std::fs::write(dir.join(&name), png(px)).expect("png");
        csv.push_str(&format!("{name},{label}\n"));
    }
    std::fs::write(dir.join("a.csv"), csv).expect("csv");
}

#[test]
fn data_replaces_an_image_directory_and_keeps_its_options() {
    let dir = scratch("data_directory");
    folders(&dir);
    // `on_bad_record = "skip"` is the source's option: kept with --data.
    let options = "threads = 2, on_bad_record = \"skip\", seed = 3";
    let named = spec(
        &dir,
        "named",
        &format!("data image_dataset_from_directory(\"a\", {options})"),
    );
    let other = spec(
        &dir,
        "other",
        &format!("data image_dataset_from_directory(\"b\", {options})"),
    );
    let want = run_json(&named, &[]);
    // The broken file skipped: 300 images, training and held out.
    let rows = |j: &serde_json::Value| {
        j["train"]["rows"].as_u64().unwrap() + j["eval"]["rows"].as_u64().unwrap()
    };
    assert_eq!(rows(&want), 300, "{want}");
    let a = dir.join("a");
    let got = run_json(&other, &["--data", a.to_str().unwrap()]);
    assert_eq!(got, want);
    // b's own run differs: the flag did change the data.
    assert_ne!(run_json(&other, &[])["last_loss"], want["last_loss"]);

    // Streamed (`stream = true`): the stream's path is replaced.
    let named = spec(
        &dir,
        "named_stream",
        &format!("data image_dataset_from_directory(\"a\", stream = true, {options})"),
    );
    let other = spec(
        &dir,
        "other_stream",
        &format!("data image_dataset_from_directory(\"missing\", stream = true, {options})"),
    );
    let want = run_json(&named, &[]);
    assert_eq!(run_json(&other, &["--data", a.to_str().unwrap()]), want);
}

#[test]
fn data_replaces_an_image_csv_in_memory_or_streamed() {
    let dir = scratch("data_csv");
    folders(&dir);
    let columns = "path_column = \"file\", label_column = \"digit\"";
    let csv = dir.join("a.csv");
    for stream in ["", ", stream = true"] {
        let named = spec(
            &dir,
            "named",
            &format!("data image_csv(\"a.csv\", {columns}{stream})"),
        );
        let other = spec(
            &dir,
            "other",
            &format!("data image_csv(\"elsewhere/missing.csv\", {columns}{stream})"),
        );
        let want = run_json(&named, &[]);
        assert_eq!(
            run_json(&other, &["--data", csv.to_str().unwrap()]),
            want,
            "stream: {stream:?}"
        );
    }
}

#[test]
fn eval_data_replaces_the_image_eval_source_or_evaluates_the_data_source_on_it() {
    let dir = scratch("eval_data");
    folders(&dir);
    let b = dir.join("b");
    let named = spec(
        &dir,
        "named",
        "data image_dataset_from_directory(\"a\", on_bad_record = \"skip\")\n\
         eval_data image_dataset_from_directory(\"b\")",
    );
    let want = run_json(&named, &[]);
    assert_eq!(want["eval"]["rows"], 200, "{want}");
    // The spec's eval_data path replaced.
    let other = spec(
        &dir,
        "other",
        "data image_dataset_from_directory(\"a\", on_bad_record = \"skip\")\n\
         eval_data image_dataset_from_directory(\"missing\")",
    );
    assert_eq!(
        run_json(&other, &["--eval-data", b.to_str().unwrap()]),
        want
    );
    // No eval_data: the data source's kind and options, in evaluation form.
    let plain = spec(
        &dir,
        "plain",
        "data image_dataset_from_directory(\"a\", on_bad_record = \"skip\")",
    );
    let held_out = run_json(&plain, &[]);
    assert_ne!(held_out["eval"]["rows"], 200, "{held_out}");
    assert_eq!(
        run_json(&plain, &["--eval-data", b.to_str().unwrap()]),
        want
    );
}

#[test]
fn bench_reads_an_image_directory_from_data() {
    let dir = scratch("bench_data");
    folders(&dir);
    let other = spec(
        &dir,
        "other",
        "data image_dataset_from_directory(\"missing\", on_bad_record = \"skip\")",
    );
    let a = dir.join("a");
    let (code, out, err) = specc(&[
        "bench",
        other.to_str().unwrap(),
        "--data",
        a.to_str().unwrap(),
        "--steps",
        "5",
        "--warmup",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("a JSON line")).expect("JSON");
    assert!(json.is_object(), "{out}");
}

/// `specc run SPEC FLAG PATH` fails (exit 1) with `message` on stderr.
fn refused(spec: &Path, flag: &str, path: &Path, message: &str) {
    let (code, out, err) = specc(&["run", spec.to_str().unwrap(), flag, path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    let want = format!("{flag} {}: {message}", path.display());
    assert!(err.contains(&want), "want {want:?} in:\n{err}");
}

#[test]
fn a_path_that_does_not_fit_the_image_source_is_an_error_naming_the_flag() {
    let dir = scratch("data_errors");
    folders(&dir);
    let folder = spec(&dir, "folder", "data image_dataset_from_directory(\"a\")");
    let csv = spec(&dir, "csv", "data image_csv(\"a.csv\", stream = true)");
    let records = spec(&dir, "records", "data image_tfrecord(\"a.tfrecord\")");
    let (a, a_csv, missing) = (dir.join("a"), dir.join("a.csv"), dir.join("missing"));
    let folder_needs = "the spec's image_dataset_from_directory reads a directory with one sub-directory of images per class";
    refused(
        &folder,
        "--data",
        &a_csv,
        &format!("a file, but {folder_needs}"),
    );
    refused(
        &folder,
        "--data",
        &missing,
        &format!("no such directory ({folder_needs})"),
    );
    refused(
        &folder,
        "--data",
        &dir.join("a/*"),
        &format!("a glob pattern, but {folder_needs}"),
    );
    refused(
        &folder,
        "--eval-data",
        &a_csv,
        &format!("a file, but {folder_needs}"),
    );
    refused(
        &csv,
        "--data",
        &a,
        "a directory, but the spec's image_csv reads a CSV file of image paths and labels (a file or a glob pattern of files)",
    );
    refused(
        &csv,
        "--data",
        &missing,
        "no such file (the spec's image_csv reads a CSV file of image paths and labels)",
    );
    refused(
        &records,
        "--eval-data",
        &a,
        "a directory, but the spec's image_tfrecord reads TFRecord files of encoded images and labels (a file or a glob pattern of files)",
    );
}
