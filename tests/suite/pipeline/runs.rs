//! `specc run` over a streaming source: stopping at the end of
//! `num_epochs`, resuming to the same checkpoint, skipped records reported,
//! `standardize` refused with a caret, feature-column ids streamed as they
//! load, and replicas reading their own shards.

use super::*;

/// A work directory with the digits split into three parts (the last one
/// gzip) and `spec.spec`: digits_mlp over `data` with `train`.
fn digits_stream(name: &str, data: &str, train: &str) -> (PathBuf, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = dir(name);
    std::fs::create_dir_all(d.join("data")).unwrap();
    let text = std::fs::read_to_string(root.join("specs/data/digits.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let body: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    let third = body.len().div_ceil(3);
    for (i, part) in body.chunks(third).enumerate() {
        let csv = format!("{header}\n{}\n", part.join("\n"));
        let p = d.join(format!("data/part-{i}.csv"));
        if i == 2 {
            let f = std::fs::File::create(p.with_extension("csv.gz")).unwrap();
            let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::default());
            e.write_all(csv.as_bytes()).unwrap();
            e.finish().unwrap();
        } else {
            std::fs::write(p, csv).unwrap();
        }
    }
    let spec = std::fs::read_to_string(root.join("specs/digits_mlp.spec")).unwrap();
    let spec = spec.replace("data csv(\"data/digits.csv\")", data);
    let start = spec.find("train {").unwrap();
    let end = start + spec[start..].find('}').unwrap() + 1;
    let spec = format!("{}{train}{}", &spec[..start], &spec[end..]);
    std::fs::write(d.join("spec.spec"), spec).unwrap();
    (d, body.len())
}

fn run_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "spec.spec", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = cli::specc(dir, &all);
    assert_eq!(code, 0, "specc {all:?}\n{err}");
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[test]
fn specc_run_ends_at_the_end_of_num_epochs() {
    let (batch, epochs) = (64usize, 2usize);
    let (d, rows) = digits_stream(
        "cli_epochs",
        &format!("data csv(\"data/part-*.csv*\", num_epochs = {epochs}, threads = 2)"),
        &format!("train {{ batch = {batch}, steps = 100000, shuffle = 500, seed = 7 }}"),
    );
    let out = run_json(&d, &[]);
    assert_eq!(out["steps"], (rows * epochs).div_ceil(batch) as u64);
    assert_eq!(out["bad_records"], 0);
    assert!(
        out["eval"].is_null(),
        "a streamed run has no held-out split"
    );
    // `train { epochs }` sets the passes when the data item does not.
    let (d, rows) = digits_stream(
        "cli_train_epochs",
        "data csv(\"data/part-*.csv*\")",
        &format!("train {{ batch = {batch}, epochs = 3, shuffle = 100, seed = 7 }}"),
    );
    let out = run_json(&d, &[]);
    assert_eq!(out["steps"], (rows * 3).div_ceil(batch) as u64);
}

fn checkpoint(dir: &Path, step: u64) -> (Vec<u8>, Vec<u8>) {
    let p = dir.join(format!("model.ckpt-{step}"));
    (
        std::fs::read(p.with_extension(format!("ckpt-{step}.index"))).unwrap(),
        std::fs::read(p.with_extension(format!("ckpt-{step}.data-00000-of-00001"))).unwrap(),
    )
}

#[test]
fn specc_run_resumes_a_stream_to_the_same_checkpoint() {
    let (d, _) = digits_stream(
        "cli_resume",
        "data csv(\"data/part-*.csv*\", threads = 2, cycle_length = 2, block_length = 100)",
        "train { batch = 32, steps = 200, shuffle = 300, seed = 7 }",
    );
    // 130 steps is past the first epoch (the files have ~1,800 rows).
    let straight = run_json(&d, &["--steps", "200", "--checkpoint-dir", "straight"]);
    let first = run_json(&d, &["--steps", "130", "--checkpoint-dir", "resumed"]);
    assert_eq!(first["global_step"], 130);
    let resumed = run_json(&d, &["--steps", "200", "--checkpoint-dir", "resumed"]);
    assert_eq!(resumed["steps"], 70);
    assert_eq!(straight["last_loss"], resumed["last_loss"]);
    let (a, b) = (
        checkpoint(&d.join("straight"), 200),
        checkpoint(&d.join("resumed"), 200),
    );
    assert!(a.0 == b.0, "the .index files differ");
    assert!(a.1 == b.1, "the .data files differ");
}

#[test]
fn specc_run_reports_skipped_records() {
    let (d, rows) = digits_stream(
        "cli_skip",
        "data csv(\"data/part-*.csv*\", num_epochs = 1, on_bad_record = \"skip\")",
        "train { batch = 50, steps = 100000, shuffle = 0, seed = 7 }",
    );
    // Break two rows of the first part: a bad cell and a short row.
    let p = d.join("data/part-0.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].replacen(',', ",x", 1);
    lines[6] = lines[6].split(',').skip(1).collect::<Vec<_>>().join(",");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = cli::specc(&d, &["run", "spec.spec", "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(json["bad_records"], 2);
    assert_eq!(json["steps"], (rows - 2).div_ceil(50) as u64);
    let locs = json["bad_record_locations"].as_array().unwrap();
    assert!(
        locs[0].as_str().unwrap().contains("part-0.csv:4"),
        "{locs:?}"
    );
    assert!(
        locs[1].as_str().unwrap().contains("part-0.csv:7"),
        "{locs:?}"
    );
    assert!(err.contains("skipped 2 bad records"), "{err}");
    // Without `skip`, the first one stops the run, naming file and line.
    let spec = std::fs::read_to_string(d.join("spec.spec")).unwrap();
    std::fs::write(
        d.join("spec.spec"),
        spec.replace(", on_bad_record = \"skip\"", ""),
    )
    .unwrap();
    let (code, _, err) = cli::specc(&d, &["run", "spec.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("part-0.csv:4"), "{err}");
}

#[test]
fn standardize_is_refused_with_a_caret_when_streaming() {
    let d = dir("cli_standardize");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = std::fs::read_to_string(root.join("specs/cancer_logreg.spec")).unwrap();
    let start = spec.find("data csv(").unwrap();
    let end = start + spec[start..].find(')').unwrap() + 1;
    let spec = format!(
        "{}data csv(\"parts-*.csv\"){}",
        &spec[..start],
        &spec[end..]
    );
    std::fs::write(d.join("spec.spec"), &spec).unwrap();
    let (code, _, err) = cli::specc(&d, &["check", "spec.spec"]);
    assert_ne!(code, 0);
    assert!(err.contains("streaming-standardize"), "{err}");
    assert!(err.contains("this source streams"), "{err}");
    assert!(err.contains('^'), "{err}");
}

/// A feature column's ids through the stream: a missing cell is the padding
/// id -1 (weight 0), which the model's id check lets through for an ids
/// input; an id beyond the range is still an error naming line and column.
#[test]
fn feature_column_ids_stream_padding_and_check_their_range() {
    use specc_runtime::feature_column::{CategoricalColumn, FeatureInput, PADDING_ID};
    let column = CategoricalColumn::Identity {
        key: "c".into(),
        num_buckets: 4,
        default_value: None,
        values: Default::default(),
    };
    let inputs = vec![
        InputSpec {
            name: "c/ids".into(),
            columns: vec!["c".into()],
            kind: InputKind::ClassId {
                num_classes: Some(4),
            },
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Ids {
                column: column.clone(),
                max_values: 1,
                check_range: true,
                prune_nonpositive_weights: false,
            }),
        },
        InputSpec {
            name: "c/weights".into(),
            columns: vec!["c".into()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: Some(FeatureInput::Weights {
                column,
                max_values: 1,
            }),
        },
    ];
    let lay = |batch| Layout {
        arenas: Vec::new(),
        vars: Vec::new(),
        inputs: vec![
            InputLayout {
                name: "c/ids".into(),
                elem: ElemType::I32,
                per_example: 1,
                num_classes: Some(4),
                padding: true,
            },
            InputLayout {
                name: "c/weights".into(),
                elem: ElemType::F32,
                per_example: 1,
                num_classes: None,
                padding: false,
            },
        ],
        max_batch: batch,
        sharded: Vec::new(),
    };
    let d = dir("feature_ids");
    let good = d.join("good.csv");
    std::fs::write(&good, "c,x\n3,0\n,0\n1,0\n").unwrap();
    let mut src = StreamingBatches::new(&csv_spec(vec![good]), &inputs, &lay(3), 3, 0, 0).unwrap();
    let layout = lay(3);
    let mut bufs = vec![
        AlignedBuf::zeroed(12).unwrap(),
        AlignedBuf::zeroed(12).unwrap(),
    ];
    let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, 3).unwrap();
    assert_eq!(src.next_batch(&mut b).unwrap(), 3);
    assert_eq!(bufs[0].i32s()[..3], [3, PADDING_ID, 1]);
    assert_eq!(bufs[1].f32s()[..3], [1.0, 0.0, 1.0]);
    let bad = d.join("bad.csv");
    std::fs::write(&bad, "c,x\n3,0\n,0\n4,0\n").unwrap();
    let mut src =
        StreamingBatches::new(&csv_spec(vec![bad.clone()]), &inputs, &lay(3), 3, 0, 0).unwrap();
    let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, 3).unwrap();
    let e = src.next_batch(&mut b).unwrap_err();
    assert_eq!(e.file, bad.display().to_string());
    assert_eq!(e.row, Some(4));
    assert_eq!(e.column.as_deref(), Some("c"));
    assert!(e.message.contains("4"), "{e}");
}

/// Feature columns stream as they load: every input of a model with hashed,
/// vocabulary (out-of-vocabulary buckets), identity, weighted and crossed
/// columns over cells that are sometimes empty, streamed in stream order
/// (the block copies of an unshuffled stream, the weights of unweighted
/// columns derived from their ids), equals the in-memory loader's rows, bit
/// for bit, batch after batch (the last one short).
#[test]
fn feature_columns_stream_as_they_load() {
    use specc_compiler::driver::{compile, Functions};
    use specc_grammar::SourceFile;
    use specc_runtime::data::{load, Source, Values};

    let d = dir("fc_stream");
    let csv = d.join("data.csv");
    let cities = ["a", "b", "c", "", "d"];
    let mut text = String::from("y,tag,city,score,n\n");
    let rows = 61;
    for i in 0..rows {
        let tag = if i % 7 == 3 {
            String::new()
        } else {
            format!("t{}", (i * 13) % 11)
        };
        // A weight for every present city (an empty city has none).
        let score = if i % 5 == 3 {
            String::new()
        } else {
            format!("{}", (i % 4) as f32 * 0.5)
        };
        let n = if i % 6 == 1 {
            String::new()
        } else {
            format!("{}", (i * 3) % 10)
        };
        text += &format!("{},{tag},{},{score},{n}\n", i % 2, cities[i % 5]);
    }
    std::fs::write(&csv, text).unwrap();
    let spec = format!(
        "model fc_stream\n\
         data csv(\"{}\")\n\
         label y: float\n\
         features {{\n\
         \x20 tag = categorical_column_with_hash_bucket(tag, 100)\n\
         \x20 city = categorical_column_with_vocabulary_list(city, [\"a\", \"b\"], num_oov_buckets = 2)\n\
         \x20 wcity = weighted_categorical_column(city, score)\n\
         \x20 n = categorical_column_with_identity(n, 10, default_value = 0)\n\
         \x20 cross = crossed_column([tag, city], hash_bucket_size = 50)\n\
         \x20 out = linear_model(tag, wcity, n, cross)\n}}\n\
         loss = sum(sigmoid_cross_entropy(y, reshape(out, [B])))\n\
         optimizer ftrl(learning_rate = 0.1)\n\
         train {{ batch = 8, steps = 1 }}\n",
        csv.display()
    );
    let program = compile(&SourceFile::new("fc_stream.spec", spec), Functions::TRAIN)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    let model = &program.model;
    let specs = model.input_specs();
    let session = program.session().unwrap();
    let layout = session.layout.clone();
    let batch = 8;
    let loaded = load(&Source::csv(csv.clone()), &specs).unwrap();
    assert_eq!(loaded.rows, rows);
    let mut stream =
        StreamingBatches::new(&csv_spec(vec![csv]), &specs, &layout, batch, 0, 1).unwrap();
    let mut bufs: Vec<AlignedBuf> = layout
        .inputs
        .iter()
        .map(|l| AlignedBuf::zeroed(batch * l.per_example * 4).unwrap())
        .collect();
    let mut row = 0;
    let mut weights_checked = 0;
    loop {
        let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, batch).unwrap();
        let n = stream.next_batch(&mut b).unwrap();
        if n == 0 {
            break;
        }
        for (l, buf) in layout.inputs.iter().zip(&bufs) {
            let data = loaded
                .inputs
                .iter()
                .find(|d| d.name == l.name)
                .unwrap_or_else(|| panic!("no loaded input {}", l.name));
            let w = l.per_example;
            let range = row * w..(row + n) * w;
            match &data.values {
                Values::F32(v) => {
                    let got: Vec<u32> = buf.f32s()[..n * w].iter().map(|x| x.to_bits()).collect();
                    let want: Vec<u32> = v[range].iter().map(|x| x.to_bits()).collect();
                    assert_eq!(got, want, "input {} rows {row}..{}", l.name, row + n);
                    weights_checked += usize::from(l.name.ends_with("weights"));
                }
                Values::I32(v) => {
                    assert_eq!(
                        &buf.i32s()[..n * w],
                        &v[range],
                        "input {} rows {row}..{}",
                        l.name,
                        row + n
                    );
                }
            }
        }
        row += n;
    }
    assert_eq!(row, rows);
    assert!(weights_checked >= 4, "the weights inputs were compared");
    std::fs::remove_dir_all(&d).ok();
}

/// A replica's share of a stream (`StreamSpec::shard`, for data-parallel
/// runs): whole files when there are as many as replicas, file `i` to
/// replica `i % n`; else every n-th record of each file, from the replica's
/// index (CSV rows and TFRecord records alike).
#[test]
fn replicas_read_their_own_shard() {
    use specc_runtime::pipeline::Shard;
    let d = dir("shard");
    write_csv(&d.join("p-0.csv"), 0..10, false);
    write_csv(&d.join("p-1.csv"), 10..25, false);
    write_csv(&d.join("p-2.csv"), 25..30, false);
    let read = |spec: &StreamSpec, index: usize, count: usize| {
        let mut spec = spec.clone();
        spec.shard = Shard { index, count };
        let mut src = source(&spec, 4, 0, 1);
        let got = batches(&mut src, 4, 100);
        check_rows(&got);
        a_column(&got)
    };
    // Three files, three replicas: a file each.
    let files = csv_spec(vec![d.join("p-*.csv")]);
    assert_eq!(read(&files, 0, 3), (0..10).collect::<Vec<_>>());
    assert_eq!(read(&files, 1, 3), (10..25).collect::<Vec<_>>());
    assert_eq!(read(&files, 2, 3), (25..30).collect::<Vec<_>>());
    // Two files of three (p-0, p-2) for replica 0 of 2.
    let two: Vec<usize> = (0..10).chain(25..30).collect();
    assert_eq!(read(&files, 0, 2), two);
    // One file, two replicas: alternate records.
    let one = csv_spec(vec![d.join("p-1.csv")]);
    assert_eq!(read(&one, 0, 2), (10..25).step_by(2).collect::<Vec<_>>());
    assert_eq!(read(&one, 1, 2), (11..25).step_by(2).collect::<Vec<_>>());
    let rec = d.join("r.tfrecord");
    write_tfrecord(&rec, 0..11, Compression::None);
    let mut tf = StreamSpec::new(
        Format::TfRecord {
            compression: Compression::None,
            feature_lists: None,
        },
        vec![rec],
    );
    tf.num_epochs = Some(1);
    assert_eq!(read(&tf, 2, 3), vec![2, 5, 8]);
    assert_eq!(read(&tf, 0, 3), vec![0, 3, 6, 9]);
}
