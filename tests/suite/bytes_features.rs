//! Numeric columns whose key holds bytes: `numeric_column(decode_raw(key,
//! out_type, little_endian, fixed_length), ..)` and
//! `numeric_column(parse_tensor(key, out_type), ..)`. A CSV cell holds the
//! decoded values as text; `specc convert` writes them as the bytes
//! (`decode_raw`'s raw values, `serialize_tensor`'s TensorProto) and back;
//! the CSV file and its conversion train to the same checkpoint, byte for
//! byte, and predict the same values. Bad bytes are errors naming the file,
//! record and feature; bad arguments are caret errors.

use std::path::{Path, PathBuf};

use crate::cli;
use specc_runtime::io::example::{read_examples, Example, Feature};
use specc_runtime::io::tensor::{parse_tensor, TensorDType};
use specc_runtime::io::tfrecord::{Compression, RecordWriter};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("bytes_features")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const ROWS: usize = 29;

/// Row `i`: label, four uint8 pixels (missing in some rows: the column's
/// default), a 2x3 float64 tensor, two big-endian int16s.
fn row(i: usize) -> (usize, Option<[u8; 4]>, [f64; 6], [i16; 2]) {
    let px = (i % 6 != 4).then(|| {
        [
            (i * 37 % 256) as u8,
            (i * 11) as u8,
            255,
            (i * i % 200) as u8,
        ]
    });
    let t = [
        0.5 * i as f64,
        -1.25,
        1e-3 * i as f64,
        7.0,
        (i % 3) as f64,
        -0.1,
    ];
    (i % 2, px, t, [(i as i16 - 9) * 300, -7])
}

fn join(v: impl IntoIterator<Item = String>) -> String {
    v.into_iter().collect::<Vec<_>>().join(" ")
}

fn write_csv(path: &Path) {
    let mut text = String::from("y,px,t,be\n");
    for i in 0..ROWS {
        let (y, px, t, be) = row(i);
        let px = px.map_or(String::new(), |p| join(p.iter().map(|x| x.to_string())));
        text += &format!(
            "{y},{px},{},{}\n",
            join(t.iter().map(|x| format!("{x:?}"))),
            join(be.iter().map(|x| x.to_string()))
        );
    }
    std::fs::write(path, text).unwrap();
}

const SPEC: &str = "model bytes
data csv(\"data.csv\")
label y: int
features {
  px = numeric_column(decode_raw(px, uint8), shape = 4, default_value = 128, normalizer_fn = x / 255)
  t = numeric_column(parse_tensor(t, float64), shape = [2, 3])
  be = numeric_column(decode_raw(be, int16, little_endian = false, fixed_length = 4), shape = 2, normalizer_fn = x / 1000)
  x = input_layer(px, t, be)
}
params { W: [12, 2] = glorot_uniform(seed = 4) }
logits = x @ W
loss = mean(sparse_softmax_cross_entropy(y, logits))
outputs { x = x }
optimizer adam(learning_rate = 0.02)
train { batch = 4, epochs = 2, seed = 1 }
";

fn ok(d: &Path, args: &[&str]) -> String {
    let (code, out, err) = cli::specc(d, args);
    assert_eq!(code, 0, "specc {args:?}\n{err}");
    out
}

fn checkpoint_data(d: &Path) -> Vec<u8> {
    let ckpt = d.join("ckpt");
    let mut names: Vec<_> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".data-"))
        .collect();
    names.sort();
    std::fs::read(ckpt.join(names.last().expect("a checkpoint"))).unwrap()
}

#[test]
fn a_csv_and_its_conversion_to_bytes_train_and_predict_alike() {
    let csv = dir("csv");
    write_csv(&csv.join("data.csv"));
    std::fs::write(csv.join("spec.spec"), SPEC).unwrap();
    ok(
        &csv,
        &[
            "convert",
            "spec.spec",
            "--data",
            "data.csv",
            "-o",
            "data.tfrecord",
        ],
    );
    // The bytes are TF's: raw uint8s, a float64 TensorProto, big-endian int16s.
    let examples = read_examples(&csv.join("data.tfrecord"), Compression::None).unwrap();
    assert_eq!(examples.len(), ROWS);
    for (i, ex) in examples.iter().enumerate() {
        let (y, px, t, be) = row(i);
        let one = |k: &str| match ex.features.get(k) {
            Some(Feature::BytesList(v)) if v.len() == 1 => v[0].clone(),
            other => panic!("record {i}, {k}: {other:?}"),
        };
        assert_eq!(ex.features["y"], Feature::Int64List(vec![y as i64]));
        match px {
            Some(p) => assert_eq!(one("px"), p),
            None => assert!(!ex.features.contains_key("px")),
        }
        let tensor = parse_tensor(&one("t"), TensorDType::Float64).unwrap();
        assert_eq!((tensor.dims, tensor.values), (vec![2, 3], t.to_vec()));
        let b: Vec<u8> = be.iter().flat_map(|x| x.to_be_bytes()).collect();
        assert_eq!(one("be"), b);
    }
    // Back to CSV: the values as the CSV has them.
    ok(
        &csv,
        &[
            "convert",
            "spec.spec",
            "--data",
            "data.tfrecord",
            "-o",
            "back.csv",
        ],
    );
    let back = std::fs::read_to_string(csv.join("back.csv")).unwrap();
    let first: Vec<&str> = back.lines().nth(1).unwrap().split(',').collect();
    let (y, px, t, be) = row(0);
    assert_eq!(first[0], y.to_string());
    assert_eq!(first[1], join(px.unwrap().iter().map(|x| x.to_string())));
    assert_eq!(first[2], join(t.iter().map(|x| format!("{x:?}"))));
    assert_eq!(first[3], join(be.iter().map(|x| x.to_string())));

    let tf = dir("tfrecord");
    std::fs::copy(csv.join("data.tfrecord"), tf.join("data.tfrecord")).unwrap();
    std::fs::write(
        tf.join("spec.spec"),
        SPEC.replace("data csv(\"data.csv\")", "data tfrecord(\"data.tfrecord\")")
            .replace("epochs = 2, seed = 1", "epochs = 2, shuffle = 1, seed = 1"),
    )
    .unwrap();
    // The CSV run trains on every row too (no held-out split), in order.
    std::fs::write(
        csv.join("spec.spec"),
        SPEC.replace(
            "data csv(\"data.csv\")",
            "data csv(\"data.csv\", stream = true)",
        )
        .replace("epochs = 2, seed = 1", "epochs = 2, shuffle = 1, seed = 1"),
    )
    .unwrap();
    for d in [&csv, &tf] {
        ok(d, &["run", "spec.spec", "--checkpoint-dir", "ckpt"]);
    }
    assert_eq!(checkpoint_data(&csv), checkpoint_data(&tf));
    let predict = |d: &Path, data: &str| {
        ok(
            d,
            &[
                "predict",
                "spec.spec",
                "--checkpoint",
                "ckpt",
                "--data",
                data,
            ],
        )
    };
    let got = predict(&tf, "data.tfrecord");
    assert_eq!(got, predict(&csv, "data.csv"));
    // Row 4 has no pixels: default 128, normalized (input_layer's columns
    // by name: be, px, t).
    let row4: Vec<f32> = got
        .lines()
        .nth(5)
        .unwrap()
        .split(',')
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!(&row4[2..6], &[(128.0f64 / 255.0) as f32; 4]);
}

fn run_on(name: &str, examples: &[Example]) -> String {
    let d = dir(name);
    let mut w = RecordWriter::new(
        std::fs::File::create(d.join("data.tfrecord")).unwrap(),
        Compression::None,
    );
    for ex in examples {
        w.write(&ex.encode()).unwrap();
    }
    w.finish().unwrap();
    std::fs::write(
        d.join("spec.spec"),
        SPEC.replace("data csv(\"data.csv\")", "data tfrecord(\"data.tfrecord\")"),
    )
    .unwrap();
    let (code, _, err) = cli::specc(&d, &["run", "spec.spec"]);
    assert_eq!(code, 1, "{name}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn good(i: usize) -> Example {
    let (y, _, _, _) = row(i);
    let mut t = Vec::new();
    specc_runtime::io::tensor::serialize_tensor_into(
        TensorDType::Float64,
        &[2, 3],
        [0.0; 6],
        &mut t,
    );
    Example {
        features: [
            ("y".to_string(), Feature::Int64List(vec![y as i64])),
            ("px".to_string(), Feature::BytesList(vec![vec![1, 2, 3, 4]])),
            ("t".to_string(), Feature::BytesList(vec![t])),
            ("be".to_string(), Feature::BytesList(vec![vec![0, 1, 0, 2]])),
        ]
        .into(),
    }
}

#[test]
fn bad_bytes_name_file_record_and_feature() {
    let with = |i: usize, key: &str, f: Feature| {
        let mut v: Vec<Example> = (0..6).map(good).collect();
        v[i].features.insert(key.into(), f);
        v
    };
    let err = run_on(
        "short_pixels",
        &with(3, "px", Feature::BytesList(vec![vec![1, 2, 3]])),
    );
    assert!(
        err.contains(
            "data.tfrecord: record 3, feature `px`: has 3 values, but the column's shape is 4"
        ),
        "{err}"
    );
    let mut t = Vec::new();
    specc_runtime::io::tensor::serialize_tensor_into(TensorDType::Float32, &[6], [0.0; 6], &mut t);
    let err = run_on("tensor_type", &with(2, "t", Feature::BytesList(vec![t])));
    assert!(
        err.contains(
            "data.tfrecord: record 2, feature `t`: Type mismatch between parsed tensor (float) and dtype (double)"
        ),
        "{err}"
    );
    let err = run_on(
        "not_a_tensor",
        &with(1, "t", Feature::BytesList(vec![vec![1, 2]])),
    );
    assert!(
        err.contains("record 1, feature `t`: Could not parse `serialized` as TensorProto"),
        "{err}"
    );
    let err = run_on("floats", &with(5, "px", Feature::FloatList(vec![1.0; 4])));
    assert!(
        err.contains("record 5, feature `px`: expected a bytes_list (decode_raw reads bytes), found a float_list"),
        "{err}"
    );
}

#[test]
fn bad_arguments_are_caret_errors() {
    let cases = [
        (
            "decode_raw(be, int16, little_endian = false, fixed_length = 4)",
            "decode_raw(be, int16, fixed_length = 5)",
            "argument-out-of-range",
            "fixed_length (5) must be a multiple of the size of out_type (2)",
        ),
        (
            "decode_raw(be, int16, little_endian = false, fixed_length = 4)",
            "decode_raw(be, int16, fixed_length = 6)",
            "conflicting-arguments",
            "fixed_length = 6 gives 3 int16 values, but the column's shape has 2",
        ),
        (
            "decode_raw(px, uint8)",
            "decode_raw(px, uint32)",
            "unknown-choice",
            "is not an out_type decode_raw takes",
        ),
        (
            "decode_raw(px, uint8)",
            "decode_raw(px, complex64)",
            "unknown-choice",
            "is not an out_type decode_raw takes",
        ),
        (
            "parse_tensor(t, float64)",
            "decode_csv(t, float64)",
            "argument-type",
            "found a call of `decode_csv`",
        ),
    ];
    for (i, (from, to, code, message)) in cases.iter().enumerate() {
        let text = SPEC.replace(from, to);
        assert_ne!(text, SPEC);
        let err = cli::fails("bytes_features", &format!("case{i}"), &text, code);
        assert!(err.contains(message), "{to}: {err}");
    }
    let text = SPEC.replace(
        "  x = input_layer(px, t, be)",
        "  s = sequence_numeric_column(decode_raw(px, uint8), max_values = 4)\n  x = input_layer(px, t, be)",
    );
    let err = cli::fails("bytes_features", "sequence", &text, "unsupported-argument");
    assert!(
        err.contains("a sequence_numeric_column reads its steps' numbers, not decode_raw"),
        "{err}"
    );
}
