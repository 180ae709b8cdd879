//! The library API (`specc::Model`) against the session underneath: the
//! same steps give the same bits, evaluation over many batches equals the
//! runtime's, checkpoints round-trip, and every bad call is an error that
//! names what was wrong (nothing panics, nothing changes).

use crate::cli;

use specc::grammar::Code;
use specc::ndarray::{Array1, Array2, ArrayD, IxDyn};
use specc::runtime::checkpoint::CheckpointErrorKind;
use specc::{Error, Model};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::data::{Dataset, InputData, Values};
use specc_runtime::train::evaluate_rows;

/// The CLI tests' base spec (`specc_testkit::spec::BASE`): 4 features, 3 classes.
const SPEC: &str = cli::BASE;

/// `n` rows of features (a fixed pattern) and labels in 0..3.
fn data(n: usize) -> (Array2<f32>, Array1<f32>) {
    let x = Array2::from_shape_fn((n, 4), |(r, c)| ((r * 7 + c * 3) % 11) as f32 / 5.0 - 1.0);
    let y = Array1::from_shape_fn(n, |r| (r % 3) as f32);
    (x, y)
}

fn dataset(x: &Array2<f32>, y: &Array1<f32>) -> Dataset {
    Dataset::from_inputs(
        y.len(),
        vec![
            InputData::new("x".to_string(), 4, Values::F32(x.iter().copied().collect())),
            InputData::new(
                "y".to_string(),
                1,
                Values::I32(y.iter().map(|&v| v as i32).collect()),
            ),
        ],
    )
    .unwrap()
}

#[test]
fn train_steps_equal_the_sessions_bits() {
    let (x, y) = data(12);
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    let program = compile(&SourceFile::new("tiny.spec", SPEC), Functions::TRAIN).unwrap();
    let mut s = program.session().unwrap();
    let ds = dataset(&x, &y);
    s.bind(&ds).unwrap();
    let step = s.function_index("step").unwrap();
    for k in 0..3 {
        let rows = k * 4..(k + 1) * 4;
        let loss = model
            .train_step(&[
                (
                    "x",
                    x.slice(specc::ndarray::s![rows.clone(), ..]).into_dyn(),
                ),
                ("y", y.slice(specc::ndarray::s![rows.clone()]).into_dyn()),
            ])
            .unwrap();
        let r: Vec<u32> = (rows.start as u32..rows.end as u32).collect();
        s.gather(&ds, &r).unwrap();
        s.call(step, 4).unwrap();
        let want = s.output(step, "loss", 4).unwrap()[0];
        assert_eq!(loss.to_bits(), want.to_bits(), "step {k}");
    }
    assert_eq!(model.global_step(), 3);
    for name in model.parameter_names() {
        let a = model.parameter(&name).unwrap();
        let b = s.var(&name).unwrap();
        assert!(
            a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{name}"
        );
    }
}

#[test]
fn arrays_of_any_layout_train_the_same_bits() {
    // The same rows as a C-order array (copied as a slice), a column-major
    // one and a strided view (copied element by element, in logical order).
    let (x, y) = data(8);
    let column_major = x.t().as_standard_layout().into_owned();
    // x's columns at the even positions of a wider array.
    let strided_rows =
        Array2::from_shape_fn(
            (8, 8),
            |(r, c)| {
                if c % 2 == 0 {
                    x[[r, c / 2]]
                } else {
                    f32::NAN
                }
            },
        );
    let layouts = [
        x.view(),
        column_major.t(),
        strided_rows.slice(specc::ndarray::s![.., ..;2]),
    ];
    assert!(layouts[0].as_slice().is_some());
    assert!(layouts[1].as_slice().is_none() && layouts[2].as_slice().is_none());
    let losses: Vec<Vec<u32>> = layouts
        .iter()
        .map(|view| {
            let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
            (0..2)
                .map(|k| {
                    let rows = k * 4..(k + 1) * 4;
                    let xs = view.slice(specc::ndarray::s![rows.clone(), ..]);
                    assert_eq!(xs, x.slice(specc::ndarray::s![rows.clone(), ..]));
                    let ys = y.slice(specc::ndarray::s![rows]);
                    let loss = model
                        .train_step(&[("x", xs.into_dyn()), ("y", ys.into_dyn())])
                        .unwrap();
                    loss.to_bits()
                })
                .collect()
        })
        .collect();
    assert_eq!(losses[0], losses[1]);
    assert_eq!(losses[0], losses[2]);
}

#[test]
fn evaluate_over_many_batches_equals_the_runtimes() {
    let (x, y) = data(11);
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    let e = model
        .evaluate(&[("x", x.view().into_dyn()), ("y", y.view().into_dyn())])
        .unwrap();
    let program = compile(&SourceFile::new("tiny.spec", SPEC), Functions::TRAIN).unwrap();
    let mut s = program.session().unwrap();
    let ds = dataset(&x, &y);
    let rows: Vec<u32> = (0..11).collect();
    let want = evaluate_rows(&mut s, &ds, &rows, &program.model.metrics).unwrap();
    assert_eq!(e, want);
    assert_eq!(e.rows, 11);
}

#[test]
fn a_checkpoint_round_trips_into_a_fresh_model() {
    let (x, y) = data(8);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library_api_ckpt");
    std::fs::remove_dir_all(&dir).ok();
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    for k in 0..2 {
        let r = k * 4..(k + 1) * 4;
        model
            .train_step(&[
                ("x", x.slice(specc::ndarray::s![r.clone(), ..]).into_dyn()),
                ("y", y.slice(specc::ndarray::s![r]).into_dyn()),
            ])
            .unwrap();
    }
    let prefix = model.save_checkpoint(&dir).unwrap();
    assert!(prefix.ends_with("model.ckpt-2"), "{}", prefix.display());
    let mut fresh = Model::from_source("tiny.spec", SPEC).unwrap();
    assert_eq!(fresh.load_checkpoint(&dir).unwrap(), prefix);
    assert_eq!(fresh.global_step(), 2);
    for (name, _) in model.variables() {
        assert_eq!(
            model.parameter(&name).unwrap(),
            fresh.parameter(&name).unwrap(),
            "{name}"
        );
    }
    // A prefix works too; a missing one is an error, and changes nothing.
    fresh.load_checkpoint(&prefix).unwrap();
    let before = fresh.parameter("W1").unwrap();
    let err = fresh
        .load_checkpoint(dir.join("model.ckpt-99"))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Checkpoint(e) if e.kind == CheckpointErrorKind::NotFound),
        "{err}"
    );
    assert_eq!(fresh.parameter("W1").unwrap(), before);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fresh.load_checkpoint(&empty).unwrap_err();
    assert!(err.to_string().contains("has no checkpoint"), "{err}");
    assert!(
        matches!(&err, Error::Checkpoint(e) if e.kind == CheckpointErrorKind::NotFound && e.file == empty),
        "{err}"
    );
    // A damaged checkpoint is told apart from a missing one.
    let index = specc::runtime::checkpoint::index_path(&prefix);
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, &bytes[..bytes.len() / 2]).unwrap();
    let err = fresh.load_checkpoint(&prefix).unwrap_err();
    assert!(
        matches!(&err, Error::Checkpoint(e) if e.kind == CheckpointErrorKind::Corrupt && e.file == index),
        "{err}"
    );
    assert_eq!(fresh.parameter("W1").unwrap(), before);
}

#[test]
fn parameters_read_and_write_by_tf_name() {
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    assert_eq!(model.parameter_names(), ["W1", "b1", "W2", "b2"]);
    let names: Vec<String> = model.variables().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"W1/Adam".to_string()), "{names:?}");
    let w = ArrayD::from_shape_fn(IxDyn(&[4, 8]), |i| (i[0] * 8 + i[1]) as f32);
    model.set_parameter("W1", w.view()).unwrap();
    assert_eq!(model.parameter("W1").unwrap(), w);
    let err = model
        .set_parameter("W1", ArrayD::zeros(IxDyn(&[8, 4])).view())
        .unwrap_err();
    assert!(err.to_string().contains("[4, 8]"), "{err}");
    assert_eq!(model.parameter("W1").unwrap(), w, "unchanged");
    let err = model.parameter("W3").unwrap_err();
    assert!(err.to_string().contains("no variable `W3`"), "{err}");
}

#[test]
fn bad_inputs_are_errors_naming_the_input() {
    let (x, y) = data(4);
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    let w1 = model.parameter("W1").unwrap();
    let xv = x.view().into_dyn();
    let yv = y.view().into_dyn();
    type Batch<'a> = Vec<(&'a str, specc::ndarray::ArrayViewD<'a, f32>)>;
    let cases: Vec<(Batch<'_>, &str)> = vec![
        (vec![("x", xv.clone())], "input `y` is missing"),
        (
            vec![("x", xv.clone()), ("y", yv.clone()), ("z", yv.clone())],
            "no input `z`",
        ),
        (
            vec![
                ("x", xv.slice_axis(specc::ndarray::Axis(1), (0..3).into())),
                ("y", yv.clone()),
            ],
            "3 elements per row",
        ),
        (
            vec![
                ("x", xv.slice_axis(specc::ndarray::Axis(0), (0..3).into())),
                ("y", yv.clone()),
            ],
            "rows",
        ),
    ];
    for (batch, want) in cases {
        let err = model.train_step(&batch).unwrap_err();
        assert!(matches!(err, Error::Input(_)), "{err}");
        assert!(err.to_string().contains(want), "{err} / {want}");
    }
    for bad in [2.5f32, 3.0, -1.0] {
        let mut y2 = y.clone();
        y2[2] = bad;
        let err = model
            .train_step(&[("x", xv.clone()), ("y", y2.view().into_dyn())])
            .unwrap_err();
        assert!(err.to_string().contains("row 2"), "{bad}: {err}");
    }
    let (x9, y9) = data(9);
    let err = model
        .train_step(&[("x", x9.view().into_dyn()), ("y", y9.view().into_dyn())])
        .unwrap_err();
    assert!(err.to_string().contains("1 to 4 rows, got 9"), "{err}");
    assert_eq!(model.global_step(), 0, "no step ran");
    assert_eq!(model.parameter("W1").unwrap(), w1, "nothing changed");
}

#[test]
fn spec_errors_and_missing_outputs_are_errors() {
    let err = match Model::from_source("bad.spec", &SPEC.replace("h @ W2", "h @ W9")) {
        Err(e) => e,
        Ok(_) => panic!("a spec with an unknown name compiles"),
    };
    match &err {
        Error::Spec {
            diagnostics,
            rendered,
        } => {
            assert_eq!(diagnostics.len(), 1, "{rendered}");
            assert_eq!(diagnostics[0].code, Code::UnknownName, "{rendered}");
            assert!(
                rendered.starts_with("error[unknown-name]: unknown name `W9`"),
                "{rendered}"
            );
        }
        other => panic!("not a spec error: {other}"),
    }
    assert!(err.to_string().contains("bad.spec:"), "{err}");
    let err = match Model::from_path("no/such.spec") {
        Err(e) => e,
        Ok(_) => panic!("a missing file compiles"),
    };
    assert!(matches!(err, Error::Io(_)), "{err}");
    let (x, _) = data(4);
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    let err = model.predict(&[("x", x.view().into_dyn())]).unwrap_err();
    assert!(err.to_string().contains("outputs"), "{err}");
}

#[test]
fn read_csv_gives_the_spec_inputs_as_arrays() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library_api_csv");
    std::fs::create_dir_all(&dir).unwrap();
    let with = dir.join("with.csv");
    let without = dir.join("without.csv");
    std::fs::write(&with, "x0,x1,x2,x3,y\n1,2,3,4,0\n0.5,1,1.5,2,2\n").unwrap();
    std::fs::write(&without, "x0,x1,x2,x3\n1,2,3,4\n0.5,1,1.5,2\n").unwrap();
    let model = Model::from_source("tiny.spec", SPEC).unwrap();
    let arrays = model.read_csv(&with, true).unwrap();
    let get = |a: &[(String, ArrayD<f32>)], n: &str| {
        a.iter()
            .find(|(k, _)| k == n)
            .unwrap_or_else(|| panic!("no {n}"))
            .1
            .clone()
    };
    assert_eq!(
        get(&arrays, "x").into_raw_vec_and_offset().0,
        vec![1.0, 2.0, 3.0, 4.0, 0.5, 1.0, 1.5, 2.0]
    );
    assert_eq!(get(&arrays, "y").shape(), &[2]);
    assert_eq!(
        get(&arrays, "y").into_raw_vec_and_offset().0,
        vec![0.0, 2.0]
    );
    let rows = model.read_csv(&without, false).unwrap();
    assert_eq!(rows.len(), 1, "only x");
    let err = model.read_csv(&without, true).unwrap_err();
    assert!(err.to_string().contains("without.csv"), "{err}");
    let err = model.read_csv(dir.join("nope.csv"), false).unwrap_err();
    assert!(err.to_string().contains("nope.csv"), "{err}");
}

#[test]
fn exports_from_a_model_are_the_exports_of_its_checkpoint() {
    use specc::export::{self, ObjectOptions, TfliteOptions, Weights};
    let (x, y) = data(4);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library_api_export");
    std::fs::remove_dir_all(&dir).ok();
    let mut model = Model::from_source("tiny.spec", SPEC).unwrap();
    let fresh = Model::from_source("tiny.spec", SPEC).unwrap();
    model
        .train_step(&[("x", x.view().into_dyn()), ("y", y.view().into_dyn())])
        .unwrap();
    let prefix = model.save_checkpoint(&dir).unwrap();
    let fetch = ["logits".to_string()];
    let tflite = TfliteOptions {
        outputs: &fetch,
        ..TfliteOptions::default()
    };
    let object = ObjectOptions {
        fetch: &fetch,
        ..ObjectOptions::default()
    };
    let src = model.source();
    let file = |name: &str| dir.join(name);
    let read = |name: &str| std::fs::read(file(name)).unwrap();
    let w = export::tflite(src, Weights::Model(&model), &file("m.tflite"), &tflite).unwrap();
    export::tflite(
        src,
        Weights::Checkpoint(&prefix),
        &file("c.tflite"),
        &tflite,
    )
    .unwrap();
    export::tflite(src, Weights::Model(&fresh), &file("f.tflite"), &tflite).unwrap();
    assert_eq!(read("m.tflite"), read("c.tflite"));
    assert_ne!(
        read("m.tflite"),
        read("f.tflite"),
        "the trained values are exported"
    );
    assert_eq!((w.inputs, w.outputs), (vec!["x".into()], fetch.to_vec()));
    assert_eq!(w.bytes, read("m.tflite").len());
    assert_eq!(
        read("m.tflite.features.json"),
        read("c.tflite.features.json")
    );
    let o = export::object(src, Weights::Model(&model), &file("m.o"), &object).unwrap();
    export::object(src, Weights::Checkpoint(&prefix), &file("c.o"), &object).unwrap();
    assert_eq!(read("m.o"), read("c.o"));
    assert_eq!(read("m.h"), read("c.h"));
    assert_eq!((o.in_width, o.out_width), (4, 3));
    // Averages of a spec without `ema` are refused, naming it; nothing is written.
    let averaged = TfliteOptions {
        use_averages: Some(true),
        ..tflite
    };
    let err =
        export::tflite(src, Weights::Model(&model), &file("a.tflite"), &averaged).unwrap_err();
    assert!(
        matches!(&err, specc::run::Error::Settings(m) if m.contains("ema")),
        "{err}"
    );
    assert!(!file("a.tflite").exists());
}
