//! The library example (`examples/train_digits.rs`) run as a test: the
//! library API trains digits from arrays to a held-out accuracy above 90 %,
//! `predict`'s classes agree with the `accuracy` metric, and a model loaded
//! from the saved checkpoint predicts the same bits.

#[path = "../../examples/train_digits.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn the_library_example_trains_predicts_and_reloads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("example_train_digits");
    std::fs::remove_dir_all(&dir).ok();
    let r = example::run(root, 1500, &dir).expect("the example runs");
    assert_eq!(r.steps, 1500);
    assert!(r.last_loss.is_finite());
    assert!(r.accuracy > 0.9, "held-out accuracy {}", r.accuracy);
    assert_eq!(
        r.accuracy, r.predicted_accuracy,
        "the metric and predict's classes agree"
    );
    assert!(r.reloaded_same, "the reloaded model predicts the same");
    assert!(
        dir.join("checkpoint").exists(),
        "a TF checkpoint state file"
    );
}
