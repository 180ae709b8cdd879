//! `warm_start`'s rules: the variables `vars_to_warm_start` selects and the
//! unused-name errors (`config::warm_start_settings::plan`), and the
//! vocabulary remapping (`checkpoint::vocab_remap`): which rows or columns
//! are copied, which initialized, in TF's order of the initializer's values.

use std::path::PathBuf;

use specc_runtime::checkpoint::vocab_remap::{generate_vocab_remapping, read_vocab, remap_matrix};
use specc_runtime::config::warm_start::{Assignment, Named};
use specc_runtime::config::warm_start_settings::{
    plan, Variable, VarsToWarmStart, VocabInfo, WarmStartSettings,
};
use specc_runtime::init::Initializer;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("specc-vocab-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_vocabulary_file_is_its_lines_without_line_ends() {
    let d = tmp("lines");
    let p = d.join("v.txt");
    std::fs::write(&p, "a\r\nb\n\nc").unwrap();
    assert_eq!(
        read_vocab(&p, None, "old_vocab").unwrap(),
        strings(&["a", "b", "", "c"])
    );
    assert_eq!(
        read_vocab(&p, Some(2), "old_vocab").unwrap(),
        strings(&["a", "b"])
    );
    let e = read_vocab(&p, Some(5), "new_vocab").unwrap_err();
    assert!(
        e.contains("has 4 lines") && e.contains("size is 5") && e.contains("v.txt"),
        "{e}"
    );
    let e = read_vocab(&d.join("none.txt"), None, "new_vocab").unwrap_err();
    assert!(
        e.starts_with("new_vocab ") && e.contains("none.txt") && e.contains("cannot read"),
        "{e}"
    );
}

#[test]
fn remapping_finds_each_new_entry_in_the_old_vocabulary() {
    let (r, present) =
        generate_vocab_remapping(&strings(&["c", "x", "a", "b"]), &strings(&["a", "b", "c"]))
            .unwrap();
    assert_eq!(r, vec![Some(2), None, Some(0), Some(1)]);
    assert_eq!(present, 3);
    let e = generate_vocab_remapping(&strings(&["a"]), &strings(&["a", "b", "a"])).unwrap_err();
    assert!(e.contains("`a` twice (lines 1 and 3)"), "{e}");
}

#[test]
fn rows_are_copied_or_take_the_backup_values_in_order_then_the_oov_rows() {
    // old: 3 rows of 2; new vocabulary: old 2, new, old 0; 2 OOV buckets.
    let old = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let remapping = [Some(2), None, Some(0)];
    let backup = Initializer::Constant(vec![9.0]);
    let out = remap_matrix(&old, [3, 2], [5, 2], 0, &remapping, 2, Some(&backup)).unwrap();
    assert_eq!(out, vec![5.0, 6.0, 9.0, 9.0, 1.0, 2.0, 9.0, 9.0, 9.0, 9.0]);
    // Without a backup initializer: zeros (TF's default).
    let out = remap_matrix(&old, [3, 2], [4, 2], 0, &remapping, 1, None).unwrap();
    assert_eq!(out, vec![5.0, 6.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
    // A random backup: the missing values are one [missing, 1] draw, in
    // row-major order; the OOV rows one [oov, cols] draw.
    let random = Initializer::RandomNormal {
        mean: 0.0,
        stddev: 1.0,
        seed: 7,
    };
    let out = remap_matrix(&old, [3, 2], [5, 2], 0, &remapping, 2, Some(&random)).unwrap();
    let mut draw2 = vec![0f32; 2];
    specc_runtime::init::initialize(&random, &[2, 1], &mut draw2).unwrap();
    let mut oov = vec![0f32; 4];
    specc_runtime::init::initialize(&random, &[2, 2], &mut oov).unwrap();
    assert_eq!(&out[0..2], &[5.0, 6.0]);
    assert_eq!(&out[2..4], &draw2[..]);
    assert_eq!(&out[4..6], &[1.0, 2.0]);
    assert_eq!(&out[6..10], &oov[..]);
}

#[test]
fn columns_are_remapped_along_axis_1_and_rows_kept() {
    // old: 2 rows × 3 columns; new columns: old 1, new; 1 OOV column.
    let old = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let backup = Initializer::Constant(vec![-1.0]);
    let out = remap_matrix(&old, [2, 3], [2, 3], 1, &[Some(1), None], 1, Some(&backup)).unwrap();
    assert_eq!(out, vec![2.0, -1.0, -1.0, 5.0, -1.0, -1.0]);
}

#[test]
fn remapping_refuses_sizes_that_disagree() {
    let old = [1.0; 6];
    let e = remap_matrix(&old, [3, 2], [4, 2], 0, &[Some(0), None], 1, None).unwrap_err();
    assert!(
        e.contains("new_vocab_size 2 + num_oov_buckets 1 = 3") && e.contains("[4, 2]"),
        "{e}"
    );
    let e = remap_matrix(&old, [2, 3], [2, 2], 0, &[Some(0), None], 0, None).unwrap_err();
    assert!(e.contains("3 columns, the variable 2"), "{e}");
    let e = remap_matrix(&old, [3, 2], [2, 2], 0, &[Some(0), Some(5)], 0, None).unwrap_err();
    assert!(
        e.contains("entry 5 (line 6)") && e.contains("which has 3"),
        "{e}"
    );
    let e = remap_matrix(&old, [1, 6], [2, 1], 1, &[Some(0)], 0, None).unwrap_err();
    assert!(e.contains("1 rows, fewer than the variable's 2"), "{e}");
}

fn info() -> VocabInfo {
    VocabInfo {
        new_vocab: "new.txt".into(),
        new_vocab_size: 3,
        num_oov_buckets: 1,
        old_vocab: "old.txt".into(),
        old_vocab_size: None,
        backup_initializer: None,
        axis: 0,
    }
}

const E: &[u64] = &[4, 2];
const W: &[u64] = &[2, 3];

fn variables() -> Vec<Variable<'static>> {
    vec![
        Variable {
            name: "E",
            shape: E,
            trainable: true,
        },
        Variable {
            name: "W",
            shape: W,
            trainable: true,
        },
        Variable {
            name: "W/Adagrad",
            shape: W,
            trainable: false,
        },
        Variable {
            name: "E/Adagrad",
            shape: E,
            trainable: false,
        },
    ]
}

fn tensors() -> Vec<Named<'static>> {
    vec![
        Named {
            name: "old_E",
            shape: &[5, 2],
        },
        Named {
            name: "W",
            shape: W,
        },
        Named {
            name: "W/Adagrad",
            shape: W,
        },
        Named {
            name: "E",
            shape: &[5, 2],
        },
    ]
}

fn assigned(pairs: &[(&str, &str)]) -> Vec<Assignment> {
    pairs
        .iter()
        .map(|(t, p)| Assignment {
            tensor: t.to_string(),
            param: p.to_string(),
        })
        .collect()
}

#[test]
fn a_pattern_selects_trainable_variables_and_leaves_slots_alone() {
    let s = WarmStartSettings {
        var_name_to_vocab_info: vec![("E".into(), info())],
        var_name_to_prev_var_name: vec![("E".into(), "old_E".into())],
        ..WarmStartSettings::default()
    };
    let p = plan(&s, &variables(), &tensors(), "ckpt").unwrap();
    assert_eq!(p.assignments, assigned(&[("W", "W")]));
    assert_eq!(p.remaps.len(), 1);
    assert_eq!(
        (p.remaps[0].tensor.as_str(), p.remaps[0].param.as_str()),
        ("old_E", "E")
    );
    // `re.match` on `NAME:0`: anchored at the start only.
    let only_w = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::Pattern("W".into()),
        ..WarmStartSettings::default()
    };
    let p = plan(&only_w, &variables(), &tensors(), "ckpt").unwrap();
    assert_eq!(p.assignments, assigned(&[("W", "W")]));
    let end = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::Pattern("W$".into()),
        ..WarmStartSettings::default()
    };
    assert!(plan(&end, &variables(), &tensors(), "ckpt")
        .unwrap()
        .is_empty());
}

#[test]
fn a_list_of_patterns_selects_slots_too() {
    let s = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::Patterns(vec!["W".into()]),
        ..WarmStartSettings::default()
    };
    let p = plan(&s, &variables(), &tensors(), "ckpt").unwrap();
    assert_eq!(
        p.assignments,
        assigned(&[("W", "W"), ("W/Adagrad", "W/Adagrad")])
    );
}

#[test]
fn none_warm_starts_only_the_vocabulary_variables() {
    let s = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::OnlyVocab,
        var_name_to_vocab_info: vec![("E".into(), info())],
        ..WarmStartSettings::default()
    };
    let p = plan(&s, &variables(), &tensors(), "ckpt").unwrap();
    assert!(p.assignments.is_empty());
    assert_eq!((p.remaps[0].tensor.as_str(), p.len()), ("E", 1));
}

#[test]
fn unused_names_missing_tensors_and_shape_mismatches_are_errors() {
    // A vocabulary for a variable the pattern does not select.
    let s = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::Pattern("W".into()),
        var_name_to_vocab_info: vec![("E".into(), info())],
        ..WarmStartSettings::default()
    };
    let e = plan(&s, &variables(), &tensors(), "ckpt").unwrap_err().0;
    assert!(
        e.contains("var_name_to_vocab_info names a variable that is not warm-started: `E`"),
        "{e}"
    );
    assert!(e.contains("selects: W"), "{e}");
    let s = WarmStartSettings {
        vars_to_warm_start: VarsToWarmStart::Pattern("W".into()),
        var_name_to_prev_var_name: vec![("Q".into(), "W".into())],
        ..WarmStartSettings::default()
    };
    let e = plan(&s, &variables(), &tensors(), "ckpt").unwrap_err().0;
    assert!(
        e.contains("var_name_to_prev_var_name") && e.contains("`Q`"),
        "{e}"
    );
    // E changed size without a vocabulary: a shape mismatch naming both.
    let e = plan(
        &WarmStartSettings::default(),
        &variables(),
        &tensors(),
        "ckpt",
    )
    .unwrap_err()
    .0;
    assert!(
        e.contains("`E` ([4, 2])") && e.contains("tensor `E` ([5, 2]) in checkpoint ckpt"),
        "{e}"
    );
    let s = WarmStartSettings {
        var_name_to_prev_var_name: vec![("W".into(), "old_W".into())],
        var_name_to_vocab_info: vec![("E".into(), info())],
        ..WarmStartSettings::default()
    };
    let e = plan(&s, &variables(), &tensors(), "ckpt").unwrap_err().0;
    assert!(
        e.contains("tensor `old_W` (for `W`) is not in checkpoint ckpt"),
        "{e}"
    );
}
