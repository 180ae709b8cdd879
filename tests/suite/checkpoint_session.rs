//! A session's variables through a checkpoint: `Session::checkpoint_tensors`
//! saves every variable, slot, optimizer variable and moving average under
//! TF's names plus `global_step`; `Session::restore` brings them back so that
//! training resumes exactly, and refuses a missing variable or a shape
//! mismatch by name.

use std::path::PathBuf;

use specc_compiler::driver::{compile, Functions, Program};
use specc_grammar::SourceFile;
use specc_runtime::abi::VarRole;
use specc_runtime::checkpoint::{
    write_bundle, BundleReader, CheckpointErrorKind, CheckpointManager, DType, TensorRef,
};
use specc_runtime::data::{self, Dataset, Source};
use specc_runtime::session::Session;
use specc_runtime::source::ShuffledBatches;
use specc_runtime::train::Trainer;

fn program(spec: &str) -> (Program, Dataset) {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/specs/{spec}")).unwrap();
    let program = compile(&SourceFile::new(spec, text), Functions::TRAIN).unwrap();
    let ds = data::load(
        &Source::csv(format!("{root}/specs/data/digits.csv")),
        &program.model.input_specs(),
    )
    .unwrap();
    (program, ds)
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("checkpoint_session")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `steps` training steps on `s`, batches from a fixed shuffle.
fn train(s: &mut Session, ds: &Dataset, steps: usize, seed: u64) {
    let rows: Vec<u32> = (0..ds.rows as u32).collect();
    let mut batches = ShuffledBatches::new(ds, &s.layout, rows, 32, ds.rows, seed).unwrap();
    let mut trainer = Trainer::new(s).unwrap();
    for _ in 0..steps {
        trainer.step(s, &mut batches).unwrap();
    }
}

/// Every saved variable's values, by name.
fn values(s: &Session) -> Vec<(String, Vec<f32>)> {
    s.layout
        .vars
        .iter()
        .filter(|v| v.kind != VarRole::Constant)
        .map(|v| (v.name.clone(), s.var(&v.name).unwrap().to_vec()))
        .collect()
}

#[test]
fn checkpoint_tensors_are_every_variable_under_tf_names() {
    let (program, ds) = program("digits_mlp_ema.spec");
    let mut s = program.session().unwrap();
    train(&mut s, &ds, 3, 7);
    let tensors = s.checkpoint_tensors();
    let names: Vec<&str> = tensors.iter().map(|(n, _)| *n).collect();
    for v in &s.layout.vars {
        assert_eq!(
            names.contains(&v.name.as_str()),
            v.kind != VarRole::Constant,
            "{}",
            v.name
        );
    }
    for role in ["slot", "optimizer", "average"] {
        assert!(
            s.layout.vars.iter().any(|v| matches!(
                (&v.kind, role),
                (VarRole::Slot { .. }, "slot")
                    | (VarRole::Optimizer, "optimizer")
                    | (VarRole::Average { .. }, "average")
            )),
            "the spec has no {role} variable to save"
        );
    }
    let (_, gs) = tensors.iter().find(|(n, _)| *n == "global_step").unwrap();
    assert_eq!(gs.dtype, DType::Int64);
    assert!(gs.shape.is_empty());
    assert_eq!(gs.bytes(), 3i64.to_le_bytes());
    for (n, t) in &tensors {
        if *n != "global_step" {
            assert_eq!(t.shape, s.layout.var(n).unwrap().shape.as_slice(), "{n}");
        }
    }
}

#[test]
fn restore_resumes_training_exactly() {
    let (program, ds) = program("digits_mlp_ema.spec");
    let mut a = program.session().unwrap();
    train(&mut a, &ds, 5, 7);
    let d = dir("resume");
    let mut m = CheckpointManager::new(&d, Some(2), None).unwrap();
    let prefix = m.save(a.global_step, &a.checkpoint_tensors()).unwrap();

    let mut b = program.session().unwrap();
    assert_ne!(values(&a), values(&b));
    b.restore(&BundleReader::open(&prefix).unwrap()).unwrap();
    assert_eq!(values(&a), values(&b));
    assert_eq!(a.global_step, b.global_step);
    // The same next steps from both: the same state, bit for bit.
    train(&mut a, &ds, 4, 11);
    train(&mut b, &ds, 4, 11);
    assert_eq!(values(&a), values(&b));
    assert_eq!(a.global_step, b.global_step);
}

#[test]
fn restore_ignores_extra_tensors() {
    let (ema, ds) = program("digits_mlp_ema.spec");
    let mut a = ema.session().unwrap();
    train(&mut a, &ds, 2, 7);
    let prefix = dir("extra").join("model.ckpt-2");
    write_bundle(&prefix, &a.checkpoint_tensors()).unwrap();
    let (plain, _) = program("digits_mlp.spec");
    let mut b = plain.session().unwrap();
    b.restore(&BundleReader::open(&prefix).unwrap()).unwrap();
    for v in &b.layout.vars {
        if v.kind != VarRole::Constant {
            assert_eq!(b.var(&v.name), a.var(&v.name), "{}", v.name);
        }
    }
}

#[test]
fn restore_refuses_a_missing_variable_by_name() {
    let (plain, _) = program("digits_mlp.spec");
    let a = plain.session().unwrap();
    let prefix = dir("missing").join("model.ckpt-0");
    write_bundle(&prefix, &a.checkpoint_tensors()).unwrap();
    let (ema, _) = program("digits_mlp_ema.spec");
    let mut b = ema.session().unwrap();
    let before = values(&b);
    let e = b
        .restore(&BundleReader::open(&prefix).unwrap())
        .unwrap_err();
    let missing = b
        .layout
        .vars
        .iter()
        .find(|v| matches!(v.kind, VarRole::Average { .. }) && a.layout.var(&v.name).is_none())
        .or_else(|| {
            b.layout
                .vars
                .iter()
                .find(|v| v.kind != VarRole::Constant && a.layout.var(&v.name).is_none())
        })
        .unwrap();
    assert!(e.tensor.is_some(), "{e}");
    assert!(b.layout.var(e.tensor.as_deref().unwrap()).is_some(), "{e}");
    assert!(
        a.layout.var(e.tensor.as_deref().unwrap()).is_none(),
        "{e} ({})",
        missing.name
    );
    assert!(e.to_string().contains("not in the checkpoint"), "{e}");
    assert_eq!(e.kind, CheckpointErrorKind::Mismatch, "{e}");
    assert_eq!(values(&b), before, "a refused restore changes nothing");
}

#[test]
fn restore_refuses_a_shape_mismatch_naming_both_shapes() {
    let (program, _) = program("digits_mlp.spec");
    let mut s = program.session().unwrap();
    let victim = s
        .layout
        .vars
        .iter()
        .find(|v| v.shape.len() == 2 && v.shape[0] != v.shape[1])
        .unwrap()
        .clone();
    let flipped = [victim.shape[1], victim.shape[0]];
    let mut tensors = s.checkpoint_tensors();
    for (n, t) in tensors.iter_mut() {
        if *n == victim.name {
            *t = TensorRef::f32(&flipped, s.var(n).unwrap()).unwrap();
        }
    }
    let prefix = dir("shape").join("model.ckpt-0");
    write_bundle(&prefix, &tensors).unwrap();
    drop(tensors);
    let before = values(&s);
    let e = s
        .restore(&BundleReader::open(&prefix).unwrap())
        .unwrap_err();
    assert_eq!(e.tensor.as_deref(), Some(victim.name.as_str()));
    assert_eq!(e.kind, CheckpointErrorKind::Mismatch, "{e}");
    let text = e.to_string();
    let shape = |d: &[usize]| {
        format!(
            "[{}]",
            d.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    assert!(text.contains(&shape(&flipped)), "{text}");
    assert!(text.contains(&shape(&victim.shape)), "{text}");
    assert_eq!(values(&s), before);
}
