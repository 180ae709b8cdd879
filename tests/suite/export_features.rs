//! `specc export` writes, next to the model, the preprocessing it leaves to
//! its caller: `<file>.features.json`, one entry per input the exported
//! model reads, in its order, with the TF feature column that makes it.
//! On titanic (numeric with a normalizer, vocabulary, hashed, bucketized and
//! crossed columns), for both formats; a feature-column model exports to
//! TFLite too (the one-hot index is a constant that broadcasts).

use std::path::{Path, PathBuf};
use std::process::Command;

fn specc(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_specc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn both_formats_describe_the_feature_columns_they_leave_outside() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = root.join("specs/titanic.spec");
    let spec = spec.to_str().unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("export_features");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let (code, _, err) = specc(
        &dir,
        &["run", spec, "--steps", "5", "--checkpoint-dir", "ck"],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(root.join("specs/titanic.spec")).unwrap();
    for (format, file) in [("object", "t.o"), ("tflite", "t.tflite")] {
        let (code, out, err) = specc(
            &dir,
            &[
                "export",
                spec,
                "--checkpoint",
                "ck",
                "--format",
                format,
                "-o",
                file,
            ],
        );
        assert_eq!(code, 0, "{format}: {err}");
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{file}.features.json"))).unwrap(),
        )
        .unwrap();
        let inputs = doc["inputs"].as_array().unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i["name"].as_str().unwrap()).collect();
        // The exported model's inputs, in its order (the command prints them).
        if format == "tflite" {
            assert!(
                out.contains(&format!("inputs {};", names.join(", "))),
                "{out}"
            );
        } else {
            let header = std::fs::read_to_string(dir.join("t.h")).unwrap();
            for n in &names {
                let c = n.replace('/', "_").to_uppercase();
                assert!(
                    header.contains(&format!("SPECC_PREDICT_IN_{c}_OFFSET")),
                    "{n}\n{header}"
                );
            }
        }
        let by = |n: &str| {
            inputs
                .iter()
                .find(|i| i["name"] == n)
                .unwrap_or_else(|| panic!("{format}: no input {n}: {names:?}"))
        };
        assert!(
            text.contains("categorical_column_with_vocabulary_list(sex, [\"female\", \"male\"])")
        );
        let sex = by("sex/ids");
        assert_eq!(sex["kind"], "ids");
        assert_eq!(
            sex["column"]["type"],
            "categorical_column_with_vocabulary_list"
        );
        assert_eq!(
            sex["column"]["vocabulary_list"],
            serde_json::json!(["female", "male"])
        );
        assert!(text.contains("categorical_column_with_hash_bucket(name, 64)"));
        assert_eq!(by("name/ids")["column"]["hash_bucket_size"], 64);
        assert!(text.contains("normalizer_fn = (x - 30) / 15"));
        let age = by("age");
        assert_eq!(age["column"]["default_value"], serde_json::json!([30.0]));
        assert_eq!(age["column"]["normalizer_fn"], "((x - 30) / 15)");
        let cross = by("pclass_X_sex/ids");
        assert_eq!(cross["column"]["type"], "crossed_column");
        assert_eq!(cross["column"]["hash_bucket_size"], 16);
        let buckets = by("age_bucketized/ids");
        assert_eq!(
            buckets["column"]["boundaries"],
            serde_json::json!([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
        );
    }
}
