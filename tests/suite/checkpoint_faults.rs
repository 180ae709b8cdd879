//! Damaged checkpoints and failing saves: every fault is a clear error that
//! names the file (and the tensor when there is one), never a panic, and the
//! previous checkpoint stays complete and listed.

use std::path::{Path, PathBuf};

use specc_runtime::checkpoint::{
    data_path, index_path, latest_checkpoint, write_bundle, BundleReader, CheckpointError,
    CheckpointErrorKind, CheckpointManager, DType, Tensor, TensorRef,
};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("checkpoint_faults")
        .join(name);
    if d.exists() {
        make_writable(&d);
        std::fs::remove_dir_all(&d).unwrap();
    }
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn make_writable(d: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
    }
}

/// A small checkpoint of several dtypes; `k` varies the values.
fn tensors(k: f32) -> Vec<(String, Tensor)> {
    let f = |d: DType, s: &[usize], b: Vec<u8>| Tensor::from_bytes(d, s, &b).unwrap();
    let w: Vec<u8> = (0..6)
        .flat_map(|i| (k + i as f32 * 0.25).to_le_bytes())
        .collect();
    let m: Vec<u8> = [k as f64 * 1e-3, -2.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let ids: Vec<u8> = [7i32, -1, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
    vec![
        ("w".to_string(), f(DType::Float, &[2, 3], w)),
        ("w/Adam".to_string(), f(DType::Double, &[2], m)),
        ("ids".to_string(), f(DType::Int32, &[3], ids)),
        ("mask".to_string(), f(DType::Bool, &[4], vec![1, 0, 0, 1])),
        (
            "global_step".to_string(),
            f(DType::Int64, &[], (k as i64).to_le_bytes().to_vec()),
        ),
    ]
}

fn refs(t: &mut [(String, Tensor)]) -> Vec<(&str, TensorRef<'_>)> {
    t.iter_mut()
        .map(|(n, t)| (n.as_str(), t.as_ref()))
        .collect()
}

fn write_small(d: &Path) -> PathBuf {
    let prefix = d.join("model.ckpt-1");
    write_bundle(&prefix, &refs(&mut tensors(1.0))).unwrap();
    prefix
}

/// Every tensor of the checkpoint at `prefix` equals `tensors(k)`.
fn assert_holds(prefix: &Path, k: f32) {
    let r = BundleReader::open(prefix).unwrap_or_else(|e| panic!("{e}"));
    for (n, want) in tensors(k) {
        assert_eq!(r.load(&n).unwrap_or_else(|e| panic!("{e}")), want, "{n}");
    }
}

fn assert_names(e: &CheckpointError, file: &Path) {
    assert_eq!(e.file, file, "{e}");
    assert!(
        e.to_string().starts_with(&file.display().to_string()),
        "{e}"
    );
}

#[test]
fn truncated_index_at_every_length() {
    let d = dir("truncated_index");
    let prefix = write_small(&d);
    let index = index_path(&prefix);
    let full = std::fs::read(&index).unwrap();
    for len in 0..full.len() {
        std::fs::write(&index, &full[..len]).unwrap();
        match BundleReader::open(&prefix) {
            Ok(_) => panic!("a {len}-byte prefix of the index opened"),
            Err(e) => {
                assert_names(&e, &index);
                assert_eq!(e.kind, CheckpointErrorKind::Corrupt, "{e}");
            }
        }
    }
}

#[test]
fn truncated_data_at_every_length() {
    let d = dir("truncated_data");
    let prefix = write_small(&d);
    let data = data_path(&prefix, 0, 1);
    let full = std::fs::read(&data).unwrap();
    for len in 0..full.len() {
        std::fs::write(&data, &full[..len]).unwrap();
        let e = BundleReader::open(&prefix)
            .err()
            .unwrap_or_else(|| panic!("a {len}-byte data file opened"));
        assert_names(&e, &data);
        assert!(e.tensor.is_some(), "{e}");
        assert!(e.message.contains("truncated"), "{e}");
        assert_eq!(e.kind, CheckpointErrorKind::Corrupt, "{e}");
    }
}

#[test]
fn flipped_bit_in_index_at_every_position() {
    let d = dir("flipped_index");
    let prefix = write_small(&d);
    let index = index_path(&prefix);
    let full = std::fs::read(&index).unwrap();
    for pos in 0..full.len() {
        for bit in 0..8 {
            let mut bad = full.clone();
            bad[pos] ^= 1 << bit;
            std::fs::write(&index, &bad).unwrap();
            match BundleReader::open(&prefix) {
                // A varint of a footer handle can take a redundant byte of the
                // zero padding (0x0f -> 0x8f 0x00): the same handle, the same
                // checkpoint. Anything else must fail.
                Ok(_) => {
                    assert!(
                        pos + 48 >= full.len() && bit == 7,
                        "the index with bit {bit} of byte {pos} flipped opened"
                    );
                    assert_holds(&prefix, 1.0);
                }
                Err(e) => {
                    assert_names(&e, &index);
                    assert_eq!(e.kind, CheckpointErrorKind::Corrupt, "{e}");
                }
            }
        }
    }
    std::fs::write(&index, &full).unwrap();
    assert_holds(&prefix, 1.0);
}

#[test]
fn flipped_bit_in_data_at_every_position() {
    let d = dir("flipped_data");
    let prefix = write_small(&d);
    let data = data_path(&prefix, 0, 1);
    let full = std::fs::read(&data).unwrap();
    let r = BundleReader::open(&prefix).unwrap();
    let entries = r.entries().to_vec();
    drop(r);
    for pos in 0..full.len() {
        let (owner, _) = entries
            .iter()
            .find(|(_, e)| (e.offset..e.offset + e.size).contains(&(pos as u64)))
            .expect("every data byte belongs to a tensor");
        for bit in 0..8 {
            let mut bad = full.clone();
            bad[pos] ^= 1 << bit;
            std::fs::write(&data, &bad).unwrap();
            let r = BundleReader::open(&prefix).unwrap();
            for (name, _) in &entries {
                match r.load(name) {
                    Ok(_) => assert_ne!(name, owner, "byte {pos} bit {bit} went unnoticed"),
                    Err(e) => {
                        assert_eq!(name, owner, "{e}");
                        assert_names(&e, &data);
                        assert_eq!(e.tensor.as_deref(), Some(name.as_str()));
                        assert!(e.message.contains("CRC32C"), "{e}");
                        assert_eq!(e.kind, CheckpointErrorKind::Corrupt, "{e}");
                    }
                }
            }
        }
    }
}

#[test]
fn missing_data_shard_is_named() {
    let d = dir("missing_shard");
    let prefix = write_small(&d);
    let data = data_path(&prefix, 0, 1);
    std::fs::remove_file(&data).unwrap();
    let e = BundleReader::open(&prefix)
        .err()
        .expect("opened without data");
    assert_names(&e, &data);
    assert!(e.message.contains("missing data shard"), "{e}");
    assert_eq!(e.kind, CheckpointErrorKind::NotFound, "{e}");
}

#[test]
fn missing_index_is_named() {
    let d = dir("missing_index");
    let e = BundleReader::open(d.join("model.ckpt-7"))
        .err()
        .expect("opened");
    assert_names(&e, &d.join("model.ckpt-7.index"));
    assert_eq!(e.kind, CheckpointErrorKind::NotFound, "{e}");
}

#[test]
fn unparsable_state_file_names_file_and_line() {
    let d = dir("bad_state");
    let mut m = CheckpointManager::new(&d, Some(3), None).unwrap();
    let first = m.save(1, &refs(&mut tensors(1.0))).unwrap();
    let state = d.join("checkpoint");
    let good = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, format!("{good}this is not a field\n")).unwrap();
    let line = good.lines().count() + 1;
    for e in [
        latest_checkpoint(&d).unwrap_err(),
        CheckpointManager::new(&d, Some(3), None).unwrap_err(),
    ] {
        assert_names(&e, &state);
        assert!(e.message.starts_with(&format!("line {line}:")), "{e}");
        assert_eq!(e.kind, CheckpointErrorKind::Corrupt, "{e}");
    }
    // The checkpoint itself is untouched.
    assert_holds(&first, 1.0);
}

/// Whether permissions bind this process (not when running as root).
fn permissions_bind(d: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let probe = d.join("probe");
        std::fs::create_dir_all(&probe).unwrap();
        std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
        let binds = std::fs::write(probe.join("x"), b"x").is_err();
        make_writable(&probe);
        std::fs::remove_dir_all(&probe).unwrap();
        binds
    }
    #[cfg(not(unix))]
    {
        let _ = d;
        false
    }
}

/// A directory without write permission; as root (where permissions do not
/// bind) the same save into a directory whose parent is a regular file.
#[test]
fn save_without_write_permission_fails_cleanly() {
    let d = dir("read_only");
    if permissions_bind(&d) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mut m = CheckpointManager::new(&d, Some(3), None).unwrap();
            let first = m.save(1, &refs(&mut tensors(1.0))).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
            let e = m.save(2, &refs(&mut tensors(2.0))).unwrap_err();
            make_writable(&d);
            assert!(e.file.starts_with(&d), "{e}");
            assert_eq!(e.kind, CheckpointErrorKind::Io, "{e}");
            assert_eq!(latest_checkpoint(&d).unwrap(), Some(first.clone()));
            assert_eq!(m.latest_checkpoint(), Some(first.clone()));
            assert_holds(&first, 1.0);
        }
    } else {
        let file = d.join("not_a_directory");
        std::fs::write(&file, b"x").unwrap();
        let e = CheckpointManager::new(file.join("ckpt"), Some(3), None).unwrap_err();
        assert_names(&e, &file.join("ckpt"));
        let e = write_bundle(file.join("model.ckpt-1"), &refs(&mut tensors(1.0))).unwrap_err();
        assert!(e.file.starts_with(&file), "{e}");
    }
}

/// A path under a regular file, whoever runs the test.
#[test]
fn save_under_a_regular_file_fails_cleanly() {
    let d = dir("under_file");
    let file = d.join("f");
    std::fs::write(&file, b"x").unwrap();
    let e = CheckpointManager::new(file.join("ckpt"), None, None).unwrap_err();
    assert_names(&e, &file.join("ckpt"));
    let e = write_bundle(file.join("model.ckpt-1"), &refs(&mut tensors(1.0))).unwrap_err();
    assert!(e.file.starts_with(&file), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

fn no_temporary_files(d: &Path) {
    for e in std::fs::read_dir(d).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!n.contains(".tmp"), "left behind: {n}");
    }
}

/// A full disk at every stage of a save: in the data, in the index, in the
/// state file. The previous checkpoint stays the latest, whole.
#[test]
fn full_disk_at_every_stage_keeps_the_previous_checkpoint() {
    let d = dir("full_disk");
    let mut m = CheckpointManager::new(&d, Some(2), None).unwrap();
    let first = m.save(1, &refs(&mut tensors(1.0))).unwrap();
    let data_len = std::fs::metadata(data_path(&first, 0, 1)).unwrap().len();
    let index_len = std::fs::metadata(index_path(&first)).unwrap().len();
    let state_before = std::fs::read(d.join("checkpoint")).unwrap();
    let limits = [
        0,
        1,
        data_len / 2,
        data_len,
        data_len + index_len / 2,
        data_len + index_len,
        data_len + index_len + 10,
    ];
    for limit in limits {
        m.set_write_limit(Some(limit));
        let e = m.save(2, &refs(&mut tensors(2.0))).unwrap_err();
        assert!(
            e.message.contains("No space left on device"),
            "limit {limit}: {e}"
        );
        assert_eq!(e.kind, CheckpointErrorKind::Io, "{e}");
        assert!(e.file.starts_with(&d), "{e}");
        if limit < data_len {
            assert_names(&e, &data_path(&d.join("model.ckpt-2"), 0, 1));
        }
        assert_eq!(
            std::fs::read(d.join("checkpoint")).unwrap(),
            state_before,
            "limit {limit}"
        );
        assert_eq!(
            latest_checkpoint(&d).unwrap(),
            Some(first.clone()),
            "limit {limit}"
        );
        assert_eq!(m.latest_checkpoint(), Some(first.clone()));
        assert_holds(&first, 1.0);
        no_temporary_files(&d);
    }
    m.set_write_limit(None);
    let second = m.save(2, &refs(&mut tensors(2.0))).unwrap();
    assert_eq!(latest_checkpoint(&d).unwrap(), Some(second.clone()));
    assert_holds(&second, 2.0);
    assert_holds(&first, 1.0);
}

#[test]
fn restore_refuses_wrong_and_missing_tensors_by_name() {
    let d = dir("load_errors");
    let prefix = write_small(&d);
    let r = BundleReader::open(&prefix).unwrap();
    let e = r.load("nope").unwrap_err();
    assert_eq!(e.tensor.as_deref(), Some("nope"));
    assert_eq!(e.kind, CheckpointErrorKind::Mismatch, "{e}");
    let mut small = [0f32; 2];
    let e = r.load_f32_into("w", &mut small).unwrap_err();
    assert_eq!(e.tensor.as_deref(), Some("w"));
    assert_eq!(e.kind, CheckpointErrorKind::Mismatch, "{e}");
    let e = r.load_f32_into("ids", &mut small).unwrap_err();
    assert!(e.message.contains("int32"), "{e}");
    assert_eq!(e.kind, CheckpointErrorKind::Mismatch, "{e}");
}
