//! `warm_start(..)` end to end: a run initializes an embedding through its
//! vocabulary (rows copied by entry, new entries and the OOV bucket from the
//! backup initializer), leaves the optimizer's slots alone unless a list of
//! patterns selects them (TF's `GLOBAL_VARIABLES`), and refuses what does
//! not fit with a caret (an unknown variable, a size mismatch) or the path
//! (a missing vocabulary file).

use std::path::Path;

use crate::cli::{self, specc};
use specc_runtime::checkpoint::{latest_checkpoint, BundleReader, Tensor};

const DATA: &str = "i,y\n0,0\n1,1\n2,0\n3,1\n";

/// A model over a `rows`-row embedding `E` trained with Adagrad; the loss
/// times `scale` (0: a step changes nothing, and the checkpoint holds the
/// warm-started values).
fn spec(rows: usize, scale: &str, extra: &str) -> String {
    format!(
        "model emb
data csv(\"data.csv\")
label y: int
features {{ ids = integer(i, num_buckets = {rows}) }}
params {{
  E: [{rows}, 2] = random_normal(stddev = 1, seed = 3)
  W: [2, 2] = glorot_uniform(seed = 4)
}}
logits = embedding_lookup(E, ids) @ W
loss = {scale} * mean(sparse_softmax_cross_entropy(y, logits))
optimizer adagrad(learning_rate = 0.5)
train {{ batch = 4, steps = 3, shuffle = 0, eval_fraction = 0 }}
{extra}
"
    )
}

fn setup(name: &str) -> std::path::PathBuf {
    let d = cli::workdir("warm_start_vocab", name);
    let _ = std::fs::remove_dir_all(d.join("old"));
    let _ = std::fs::remove_dir_all(d.join("new"));
    std::fs::write(d.join("data.csv"), DATA).unwrap();
    std::fs::write(d.join("old.txt"), "a\nb\nc\nd\n").unwrap();
    std::fs::write(d.join("new.txt"), "c\nx\na\n").unwrap();
    std::fs::write(d.join("spec.spec"), spec(4, "1", "")).unwrap();
    let (code, _, err) = specc(&d, &["run", "spec.spec", "--checkpoint-dir", "old"]);
    assert_eq!(code, 0, "{err}");
    d
}

fn values(dir: &Path, name: &str) -> Vec<f32> {
    let r = BundleReader::open(latest_checkpoint(dir).unwrap().unwrap()).unwrap();
    match r.load(name).unwrap() {
        Tensor::F32(a) => a.iter().copied().collect(),
        other => panic!("{name}: {other:?}"),
    }
}

const VOCAB: &str = "vocab_info(new_vocab = \"new.txt\", new_vocab_size = 3, num_oov_buckets = 1, old_vocab = \"old.txt\", backup_initializer = constant(7))";

#[test]
fn warm_start_remaps_rows_and_leaves_slots_alone() {
    let d = setup("remap");
    let warm = format!("warm_start(\"old\", var_name_to_vocab_info = {{ \"E\": {VOCAB} }})");
    std::fs::write(d.join("spec.spec"), spec(4, "0", &warm)).unwrap();
    let (code, _, err) = specc(&d, &["run", "spec.spec", "--checkpoint-dir", "new"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 parameters initialized from"), "{err}");
    let (old, new) = (values(&d.join("old"), "E"), values(&d.join("new"), "E"));
    // new.txt: c (old row 2), x (new), a (old row 0), then the OOV bucket.
    assert_eq!(&new[0..2], &old[4..6]);
    assert_eq!(&new[2..4], &[7.0, 7.0]);
    assert_eq!(&new[4..6], &old[0..2]);
    assert_eq!(&new[6..8], &[7.0, 7.0]);
    assert_eq!(values(&d.join("new"), "W"), values(&d.join("old"), "W"));
    // The default ".*" is TF's TRAINABLE_VARIABLES: the accumulators keep
    // their initial value (Adagrad's 0.1), with a zero gradient.
    assert!(values(&d.join("new"), "W/Adagrad")
        .iter()
        .all(|&v| v == 0.1));
    assert!(values(&d.join("old"), "W/Adagrad")
        .iter()
        .any(|&v| v != 0.1));
}

#[test]
fn a_list_of_patterns_warm_starts_the_slots_too() {
    let d = setup("slots");
    let warm = "warm_start(\"old\", vars_to_warm_start = [\"W\"])";
    std::fs::write(d.join("spec.spec"), spec(4, "0", warm)).unwrap();
    let (code, _, err) = specc(&d, &["run", "spec.spec", "--checkpoint-dir", "new"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 parameters initialized from"), "{err}");
    for name in ["W", "W/Adagrad"] {
        assert_eq!(
            values(&d.join("new"), name),
            values(&d.join("old"), name),
            "{name}"
        );
    }
    // E is not selected: its initializer's values, not the trained ones.
    assert_ne!(values(&d.join("new"), "E"), values(&d.join("old"), "E"));
}

#[test]
fn a_missing_vocabulary_file_is_named() {
    let d = setup("missing_file");
    let warm = format!(
        "warm_start(\"old\", var_name_to_vocab_info = {{ \"E\": {} }})",
        VOCAB.replace("new.txt", "gone.txt")
    );
    std::fs::write(d.join("spec.spec"), spec(4, "0", &warm)).unwrap();
    let (code, _, err) = specc(&d, &["run", "spec.spec", "--checkpoint-dir", "new"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("warm_start: `E`: new_vocab") && err.contains("gone.txt"),
        "{err}"
    );
    // Nothing was trained or saved.
    assert!(!d.join("new").join("checkpoint").exists());
}

#[test]
fn an_unknown_variable_has_a_caret_and_a_suggestion() {
    let warm = format!("warm_start(\"old\", var_name_to_vocab_info = {{ \"EE\": {VOCAB} }})");
    let err = cli::fails(
        "warm_start_vocab",
        "unknown",
        &spec(4, "1", &warm),
        "unknown-name",
    );
    assert!(err.contains("`EE` is not a parameter"), "{err}");
    assert!(err.contains("did you mean `E`?"), "{err}");
    assert!(err.contains("^^^^"), "{err}");
}

#[test]
fn a_vocabulary_of_the_wrong_size_has_a_caret() {
    let warm = format!("warm_start(\"old\", var_name_to_vocab_info = {{ \"E\": {VOCAB} }})");
    let err = cli::fails(
        "warm_start_vocab",
        "size",
        &spec(5, "1", &warm),
        "conflicting-arguments",
    );
    assert!(
        err.contains("`E` is [5, 2]: 5 along axis 0, but new_vocab_size 3 + num_oov_buckets 1 = 4"),
        "{err}"
    );
}

#[test]
fn an_unknown_argument_and_a_bad_pattern_have_carets() {
    let err = cli::fails(
        "warm_start_vocab",
        "argument",
        &spec(4, "1", "warm_start(\"old\", vars_to_warmstart = \".*\")"),
        "unknown-argument",
    );
    assert!(err.contains("did you mean `vars_to_warm_start`?"), "{err}");
    let err = cli::fails(
        "warm_start_vocab",
        "pattern",
        &spec(4, "1", "warm_start(\"old\", vars_to_warm_start = \"(W\")"),
        "malformed-argument",
    );
    assert!(err.contains("not a regular expression"), "{err}");
}
