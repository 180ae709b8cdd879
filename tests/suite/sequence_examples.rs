//! `data tfrecord(.., sequence_example = true)`: TFRecord files of
//! `tf.train.SequenceExample` through `specc run` and `specc predict`. The
//! sequence columns read the records' feature lists, every other input
//! their context, so the same data written as SequenceExamples and as
//! Examples (the steps flattened into one list per key) trains to the same
//! checkpoint, byte for byte, and predicts the same values; a record specc
//! cannot read is an error naming the file, the record and the feature;
//! a key read both ways is a caret error (`feature-list-key`).

use std::path::{Path, PathBuf};

use crate::cli;
use specc_runtime::io::example::{Example, Feature, SequenceExample};
use specc_runtime::io::tfrecord::{Compression, RecordWriter};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sequence_examples")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const WORDS: [&str; 5] = ["a", "b", "c", "d", "zz"];

/// Record `i`: label `y`, context `age` (missing in some), a sentence of
/// 0..=4 `words`, one a step, and two `temp`s a step.
fn record(i: usize) -> (i64, Option<f32>, Vec<&'static str>, Vec<[f32; 2]>) {
    let steps = (i * 7) % 5;
    let words = (0..steps).map(|t| WORDS[(i * 3 + t * 2) % 5]).collect();
    let temps = (0..steps)
        .map(|t| [(i as f32 - 10.0) * 0.25, (t as f32 + 1.0) * 0.5])
        .collect();
    let age = (i % 4 != 1).then_some(20.0 + i as f32);
    (i64::from(i.is_multiple_of(3)), age, words, temps)
}

fn bytes(s: &str) -> Feature {
    Feature::BytesList(vec![s.as_bytes().to_vec()])
}

fn context(i: usize) -> std::collections::BTreeMap<String, Feature> {
    let (y, age, _, _) = record(i);
    let mut c = std::collections::BTreeMap::from([("y".to_string(), Feature::Int64List(vec![y]))]);
    if let Some(a) = age {
        c.insert("age".into(), Feature::FloatList(vec![a]));
    }
    c
}

fn sequence_example(i: usize) -> SequenceExample {
    let (_, _, words, temps) = record(i);
    SequenceExample {
        context: context(i),
        feature_lists: [
            (
                "words".to_string(),
                words.iter().map(|w| bytes(w)).collect(),
            ),
            (
                "temp".to_string(),
                temps
                    .iter()
                    .map(|t| Feature::FloatList(t.to_vec()))
                    .collect(),
            ),
        ]
        .into(),
    }
}

fn example(i: usize) -> Example {
    let (_, _, words, temps) = record(i);
    let mut features = context(i);
    features.insert(
        "words".into(),
        Feature::BytesList(words.iter().map(|w| w.as_bytes().to_vec()).collect()),
    );
    features.insert(
        "temp".into(),
        Feature::FloatList(temps.iter().flatten().copied().collect()),
    );
    Example { features }
}

fn write(path: &Path, records: impl Iterator<Item = Vec<u8>>) {
    let mut w = RecordWriter::new(std::fs::File::create(path).unwrap(), Compression::None);
    for r in records {
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
}

const ROWS: usize = 37;

fn spec(data: &str) -> String {
    format!(
        "model seq\n\
         data {data}\n\
         label y: int\n\
         features {{\n\
         \x20 words = sequence_categorical_column_with_vocabulary_list(words, [\"a\", \"b\", \"c\", \"d\"], num_oov_buckets = 1, max_values = 4)\n\
         \x20 temp = sequence_numeric_column(temp, shape = 2, max_values = 4)\n\
         \x20 age = numeric_column(age, default_value = 30, normalizer_fn = (x - 30) / 10)\n\
         \x20 seq = sequence_input_layer(embedding_column(words, dimension = 3), temp)\n\
         \x20 ctx = input_layer(age)\n\
         }}\n\
         params {{\n\
         \x20 W: [5, 2] = glorot_uniform(seed = 1)\n\
         \x20 V: [1, 2] = zeros\n\
         }}\n\
         logits = reduce_sum(seq, 1) @ W + ctx @ V\n\
         loss = mean(sparse_softmax_cross_entropy(y, logits))\n\
         outputs {{ probs = softmax(logits) }}\n\
         optimizer adam(learning_rate = 0.05)\n\
         train {{ batch = 4, epochs = 3, shuffle = 8, seed = 3 }}\n"
    )
}

/// A directory with both files and a spec reading `data`.
fn setup(name: &str, data: &str) -> PathBuf {
    let d = dir(name);
    write(
        &d.join("seq.tfrecord"),
        (0..ROWS).map(|i| sequence_example(i).encode()),
    );
    write(
        &d.join("ex.tfrecord"),
        (0..ROWS).map(|i| example(i).encode()),
    );
    std::fs::write(d.join("spec.spec"), spec(data)).unwrap();
    d
}

fn run(d: &Path) -> serde_json::Value {
    let (code, out, err) = cli::specc(
        d,
        &["run", "spec.spec", "--json", "--checkpoint-dir", "ckpt"],
    );
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

fn checkpoint_data(d: &Path) -> Vec<u8> {
    let ckpt = d.join("ckpt");
    let mut names: Vec<_> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".data-"))
        .collect();
    names.sort();
    let last = names.last().expect("a checkpoint");
    std::fs::read(ckpt.join(last)).unwrap()
}

#[test]
fn sequence_examples_train_as_the_same_examples_do() {
    let seq = setup(
        "train_seq",
        "tfrecord(\"seq.tfrecord\", sequence_example = true)",
    );
    let ex = setup("train_ex", "tfrecord(\"ex.tfrecord\")");
    let (a, b) = (run(&seq), run(&ex));
    assert_eq!(a["steps"], b["steps"]);
    assert_eq!(a["steps"], serde_json::json!((ROWS * 3).div_ceil(4)));
    assert_eq!(a["loss"], b["loss"]);
    assert_eq!(checkpoint_data(&seq), checkpoint_data(&ex));
    // Predict reads a TFRecord of SequenceExamples as the spec's data does.
    let predict = |d: &Path, data: &str| {
        let (code, out, err) = cli::specc(
            d,
            &[
                "predict",
                "spec.spec",
                "--checkpoint",
                "ckpt",
                "--data",
                data,
            ],
        );
        assert_eq!(code, 0, "{err}");
        out
    };
    let got = predict(&seq, "seq.tfrecord");
    assert_eq!(got.lines().count(), ROWS + 1);
    assert_eq!(got, predict(&ex, "ex.tfrecord"));
}

fn fails(name: &str, records: Vec<Vec<u8>>) -> String {
    let d = setup(name, "tfrecord(\"seq.tfrecord\", sequence_example = true)");
    write(&d.join("seq.tfrecord"), records.into_iter());
    let (code, _, err) = cli::specc(&d, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{name}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn a_record_specc_cannot_read_names_file_record_and_feature() {
    let records = |bad: usize, f: &dyn Fn(&mut SequenceExample)| {
        (0..ROWS)
            .map(|i| {
                let mut r = sequence_example(i);
                if i == bad {
                    f(&mut r);
                }
                r.encode()
            })
            .collect::<Vec<_>>()
    };
    let err = fails(
        "two_words_a_step",
        records(7, &|r| {
            r.feature_lists.get_mut("words").unwrap()[0] =
                Feature::BytesList(vec![b"a".to_vec(), b"b".to_vec()])
        }),
    );
    assert!(
        err.contains(
            "seq.tfrecord: record 7, feature `words`: step 0 of the feature list has 2 values"
        ),
        "{err}"
    );
    let err = fails(
        "wrong_kind",
        records(12, &|r| {
            r.feature_lists.get_mut("words").unwrap()[1] = Feature::Int64List(vec![1])
        }),
    );
    assert!(
        err.contains(
            "seq.tfrecord: record 12, feature `words`: step 1 of the feature list: expected strings"
        ),
        "{err}"
    );
    let err = fails(
        "no_label",
        records(11, &|r| {
            r.context.remove("y");
        }),
    );
    assert!(
        err.contains("seq.tfrecord: record 11, feature `y`"),
        "{err}"
    );
    // The label is a context feature: a feature list of that name is not it.
    let err = fails(
        "label_as_a_list",
        records(2, &|r| {
            r.context.remove("y");
            r.feature_lists
                .insert("y".into(), vec![Feature::Int64List(vec![1])]);
        }),
    );
    assert!(err.contains("seq.tfrecord: record 2, feature `y`"), "{err}");
    let mut garbage = records(0, &|_| {});
    garbage[3] = vec![0x12, 0x05, 0x0a];
    let err = fails("not_a_sequence_example", garbage);
    assert!(
        err.contains("seq.tfrecord: record 3: not a tf.train.SequenceExample"),
        "{err}"
    );
}

#[test]
fn a_key_read_as_context_and_feature_list_is_a_caret_error() {
    let text = spec("tfrecord(\"seq.tfrecord\", sequence_example = true)")
        .replace("numeric_column(age,", "numeric_column(temp,");
    let err = cli::fails(
        "sequence_examples",
        "feature_list_key",
        &text,
        "feature-list-key",
    );
    assert!(
        err.contains("reads the key `temp` as a context feature, but the sequence column"),
        "{err}"
    );
    // The same spec over Examples has no feature lists: no error.
    let d = dir("feature_list_key_examples");
    std::fs::write(
        d.join("spec.spec"),
        text.replace(", sequence_example = true", ""),
    )
    .unwrap();
    let (code, _, err) = cli::specc(&d, &["check", "spec.spec"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn inspect_tells_a_file_of_sequence_examples_by_its_feature_lists() {
    let d = setup(
        "inspect",
        "tfrecord(\"seq.tfrecord\", sequence_example = true)",
    );
    let (code, out, err) = cli::specc(&d, &["inspect", "seq.tfrecord"]);
    assert_eq!(code, 0, "{err}");
    let ages = (0..ROWS).filter(|&i| record(i).1.is_some()).count();
    let most = (0..ROWS).map(|i| record(i).2.len()).max().unwrap();
    assert_eq!(
        out,
        format!(
            "seq.tfrecord: {ROWS} records of tf.train.SequenceExample (compression: none)\n\
             context:\n\
             age    float_list  in {ages} of {ROWS} records, 1 values\n\
             y      int64_list  in {ROWS} of {ROWS} records, 1 values\n\
             feature lists:\n\
             temp   float_list  in {ROWS} of {ROWS} records, 0 to {most} steps, 2 values a step\n\
             words  bytes_list  in {ROWS} of {ROWS} records, 0 to {most} steps, 1 values a step\n"
        )
    );
    let (code, out, _) = cli::specc(&d, &["inspect", "ex.tfrecord"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("ex.tfrecord: {ROWS} records of tf.train.Example")));
}
