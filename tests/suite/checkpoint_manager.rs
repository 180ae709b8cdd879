//! `CheckpointManager`: TF's `tf.train.CheckpointManager` semantics
//! (`max_to_keep`, `keep_checkpoint_every_n_hours`, the state file with
//! timestamps, resuming from an existing directory) and saving from a
//! background thread through a `Snapshot`.

use std::path::{Path, PathBuf};

use specc_runtime::checkpoint::state::CheckpointState;
use specc_runtime::checkpoint::{
    index_path, latest_checkpoint, BundleReader, CheckpointManager, Snapshot, TensorRef,
};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("checkpoint_manager")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SHAPE: [usize; 2] = [4, 3];

fn values(step: i64) -> Vec<f32> {
    (0..12).map(|i| step as f32 + i as f32 / 16.0).collect()
}

fn save(m: &mut CheckpointManager, step: i64) -> PathBuf {
    let w = values(step);
    let gs = [step];
    let t = [
        ("w", TensorRef::f32(&SHAPE, &w).unwrap()),
        ("global_step", TensorRef::i64(&[], &gs).unwrap()),
    ];
    m.save(step, &t).unwrap()
}

fn save_at(m: &mut CheckpointManager, step: i64, at: f64) -> PathBuf {
    let w = values(step);
    m.save_at(step, &[("w", TensorRef::f32(&SHAPE, &w).unwrap())], at)
        .unwrap()
}

fn state(d: &Path) -> CheckpointState {
    CheckpointState::read(d).unwrap().expect("state file")
}

fn exists(prefix: &Path) -> bool {
    index_path(prefix).is_file()
}

#[test]
fn max_to_keep_deletes_the_oldest_after_listing_the_new() {
    let d = dir("max_to_keep");
    let mut m = CheckpointManager::new(&d, Some(2), None).unwrap();
    let saved: Vec<PathBuf> = (1..=4).map(|s| save(&mut m, s * 10)).collect();
    assert!(!exists(&saved[0]) && !exists(&saved[1]));
    assert!(exists(&saved[2]) && exists(&saved[3]));
    let st = state(&d);
    assert_eq!(st.model_checkpoint_path, "model.ckpt-40");
    assert_eq!(
        st.all_model_checkpoint_paths,
        ["model.ckpt-30", "model.ckpt-40"]
    );
    assert_eq!(st.all_model_checkpoint_timestamps.len(), 2);
    assert!(st.last_preserved_timestamp.is_some());
    assert_eq!(latest_checkpoint(&d).unwrap(), Some(saved[3].clone()));
    assert_eq!(m.checkpoints(), saved[2..].to_vec());
    let r = BundleReader::open(&saved[3]).unwrap();
    let w = r.load("w").unwrap();
    assert_eq!(
        w.to_f64_vec(),
        values(40).iter().map(|&x| f64::from(x)).collect::<Vec<_>>()
    );
}

#[test]
fn keep_all_without_max_to_keep() {
    let d = dir("keep_all");
    let mut m = CheckpointManager::new(&d, None, None).unwrap();
    let saved: Vec<PathBuf> = (1..=3).map(|s| save(&mut m, s)).collect();
    assert!(saved.iter().all(|p| exists(p)));
    assert_eq!(state(&d).all_model_checkpoint_paths.len(), 3);
}

#[test]
fn keep_checkpoint_every_n_hours_preserves_unlisted() {
    let d = dir("every_n_hours");
    let t0 = 1_700_000_000.0;
    // A new manager's last preserved time is its creation (now, after t0):
    // resume from a state that says t0 instead.
    std::fs::write(
        d.join("checkpoint"),
        CheckpointState {
            model_checkpoint_path: "none".into(),
            last_preserved_timestamp: Some(t0),
            ..Default::default()
        }
        .to_text(),
    )
    .unwrap();
    let mut m = CheckpointManager::new(&d, Some(1), Some(1.0)).unwrap();
    // What each save swept (what the other processes of a sharded save
    // delete of theirs): never a preserved checkpoint.
    let a = save_at(&mut m, 1, t0 + 600.0); // 10 min: deleted when pushed out
    assert!(m.swept().is_empty());
    let b = save_at(&mut m, 2, t0 + 3700.0); // over an hour after t0: preserved
    assert_eq!(m.swept(), ["model.ckpt-1"]);
    let c = save_at(&mut m, 3, t0 + 4000.0); // 5 min after b: deleted later
    assert!(m.swept().is_empty(), "b is preserved, not swept");
    let e = save_at(&mut m, 4, t0 + 4100.0);
    assert_eq!(m.swept(), ["model.ckpt-3"]);
    assert!(!exists(&a), "deleted");
    assert!(exists(&b), "preserved");
    assert!(!exists(&c), "deleted");
    assert!(exists(&e), "latest");
    let st = state(&d);
    assert_eq!(st.all_model_checkpoint_paths, ["model.ckpt-4"]);
    assert_eq!(st.last_preserved_timestamp, Some(t0 + 3700.0));
    assert_eq!(st.all_model_checkpoint_timestamps, [t0 + 4100.0]);
}

#[test]
fn resume_picks_up_the_state_file() {
    let d = dir("resume");
    let mut m = CheckpointManager::new(&d, Some(2), None).unwrap();
    let first = save(&mut m, 1);
    let second = save(&mut m, 2);
    drop(m);
    let mut m = CheckpointManager::new(&d, Some(2), None).unwrap();
    assert_eq!(m.latest_checkpoint(), Some(second.clone()));
    assert_eq!(m.checkpoints(), vec![first.clone(), second.clone()]);
    let third = save(&mut m, 3);
    assert!(!exists(&first));
    assert!(exists(&second) && exists(&third));
    assert_eq!(
        state(&d).all_model_checkpoint_paths,
        ["model.ckpt-2", "model.ckpt-3"]
    );
}

#[test]
fn resume_from_a_saver_state_without_timestamps() {
    let d = dir("resume_saver");
    let mut m = CheckpointManager::new(&d, Some(1), None).unwrap();
    let first = save(&mut m, 5);
    std::fs::write(
        d.join("checkpoint"),
        "model_checkpoint_path: \"model.ckpt-5\"\nall_model_checkpoint_paths: \"model.ckpt-5\"\n",
    )
    .unwrap();
    let mut m = CheckpointManager::new(&d, Some(1), None).unwrap();
    assert_eq!(m.latest_checkpoint(), Some(first.clone()));
    save(&mut m, 6);
    assert!(!exists(&first));
}

#[test]
fn absolute_paths_in_the_state_file() {
    let d = dir("absolute");
    let mut m = CheckpointManager::new(&d, None, None).unwrap();
    let first = save(&mut m, 1);
    let abs = std::fs::canonicalize(&first).unwrap_or(first.clone());
    let abs = abs.to_string_lossy().into_owned();
    std::fs::write(
        d.join("checkpoint"),
        format!("model_checkpoint_path: \"{abs}\"\nall_model_checkpoint_paths: \"{abs}\"\n"),
    )
    .unwrap();
    assert_eq!(latest_checkpoint(&d).unwrap(), Some(PathBuf::from(&abs)));
}

#[test]
fn saves_a_snapshot_from_a_background_thread() {
    let d = dir("background");
    let mut m = CheckpointManager::new(&d, Some(3), None).unwrap();
    let mut snap = Snapshot::new();
    let mut w = values(7);
    let gs = [7i64];
    snap.capture(&[
        ("w", TensorRef::f32(&SHAPE, &w).unwrap()),
        ("global_step", TensorRef::i64(&[], &gs).unwrap()),
    ]);
    // The live values move on while the snapshot is saved.
    w.iter_mut().for_each(|x| *x = -1.0);
    let handle = std::thread::spawn(move || {
        let p = m.save(7, &snap.tensors()).unwrap();
        (m, snap, p)
    });
    let (_m, snap, prefix) = handle.join().unwrap();
    assert_eq!(snap.bytes(), 12 * 4 + 8);
    let r = BundleReader::open(&prefix).unwrap();
    let got = r.load("w").unwrap().to_f64_vec();
    assert_eq!(
        got,
        values(7).iter().map(|&x| f64::from(x)).collect::<Vec<_>>()
    );
    assert_eq!(r.load("global_step").unwrap().to_f64_vec(), [7.0]);
}

#[test]
fn stray_temporary_files_of_a_crash_are_ignored_then_removed() {
    let d = dir("stray_temps");
    let mut m = CheckpointManager::new(&d, Some(1), None).unwrap();
    let first = save(&mut m, 1);
    // What a crash mid-save leaves: temporaries of the next checkpoint.
    std::fs::write(d.join("model.ckpt-2.index.tmp99-1"), b"partial").unwrap();
    std::fs::write(d.join("model.ckpt-2.data-00000-of-00001.tmp99-2"), b"par").unwrap();
    assert_eq!(latest_checkpoint(&d).unwrap(), Some(first.clone()));
    std::fs::write(d.join("checkpoint.tmp99-3"), b"model_").unwrap();
    std::fs::write(d.join("notes.tmp.txt"), b"the user's").unwrap();
    // Another writer's temporary in the run directory (`run.yaml` being
    // written by the leader while a replica opens its manager).
    std::fs::write(d.join("run.yaml.tmp99-4"), b"spec: ").unwrap();
    let mut m = CheckpointManager::new(&d, Some(1), None).unwrap();
    // A new manager sweeps its own temporaries away, and nothing else.
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp"))
        .collect();
    left.sort();
    assert_eq!(left, ["notes.tmp.txt", "run.yaml.tmp99-4"]);
    let second = save(&mut m, 2);
    assert_eq!(latest_checkpoint(&d).unwrap(), Some(second));
}
