//! `runtime::config`: the YAML tree (types, positions, refusals), the
//! `run.yaml` record (round trip, atomic write, resume checks) and the
//! resolution of `init_from_checkpoint`'s assignment map with TF's rules.

use std::path::PathBuf;

use specc_runtime::config::record::{sha256_hex, DataRecord, RunRecord, RUN_YAML};
use specc_runtime::config::warm_start::{resolve, Assignment, Named};
use specc_runtime::config::yaml::{self, Kind, Node};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("specc-config-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn map(n: &Node) -> &[(Node, Node)] {
    match &n.kind {
        Kind::Map(e) => e,
        other => panic!("not a mapping: {other:?}"),
    }
}

fn get<'a>(n: &'a Node, key: &str) -> &'a Node {
    &map(n).iter().find(|(k, _)| k.str() == Some(key)).unwrap().1
}

#[test]
fn yaml_scalars_follow_the_core_schema() {
    let doc = "a: 12\nb: -3\nc: 0x1f\nd: 1e-3\ne: .5\nf: true\ng: False\nh: ~\ni: \"12\"\nj: runs/x\nk: .inf\nl: 1.\n";
    let root = yaml::parse(doc).unwrap().unwrap();
    assert_eq!(get(&root, "a").int(), Some(12));
    assert_eq!(get(&root, "b").int(), Some(-3));
    assert_eq!(get(&root, "c").int(), Some(31));
    assert_eq!(get(&root, "d").number(), Some(1e-3));
    assert_eq!(get(&root, "d").int(), None);
    assert_eq!(get(&root, "e").number(), Some(0.5));
    assert_eq!(get(&root, "f").bool(), Some(true));
    assert_eq!(get(&root, "g").bool(), Some(false));
    assert!(get(&root, "h").is_null());
    // Quoted scalars are strings, never numbers.
    assert_eq!(get(&root, "i").int(), None);
    assert_eq!(get(&root, "i").str(), Some("12"));
    assert_eq!(get(&root, "j").number(), None);
    assert_eq!(get(&root, "j").str(), Some("runs/x"));
    assert_eq!(get(&root, "k").number(), Some(f64::INFINITY));
    assert_eq!(get(&root, "l").number(), Some(1.0));
}

#[test]
fn yaml_nodes_know_their_line_and_column() {
    let doc = "# comment\nsteps: 5\ncheckpoint:\n  every_steps: 100\n  dir: x\n";
    let root = yaml::parse(doc).unwrap().unwrap();
    let (k, v) = &map(&root)[0];
    assert_eq!((k.pos.line, k.pos.col), (2, 1));
    assert_eq!((v.pos.line, v.pos.col), (2, 8));
    let (k, v) = &map(get(&root, "checkpoint"))[0];
    assert_eq!((k.pos.line, k.pos.col), (4, 3));
    assert_eq!((v.pos.line, v.pos.col), (4, 16));
}

#[test]
fn yaml_refuses_duplicates_aliases_and_second_documents() {
    let e = yaml::parse("steps: 1\nbatch: 2\nsteps: 3\n").unwrap_err();
    assert!(
        e.starts_with("3:1:") && e.contains("`steps` is given twice (first on line 1)"),
        "{e}"
    );
    let e = yaml::parse("a: &x 1\nb: *x\n").unwrap_err();
    assert!(e.contains("anchors"), "{e}");
    let e = yaml::parse("a: 1\n---\nb: 2\n").unwrap_err();
    assert!(e.contains("second YAML document"), "{e}");
    let e = yaml::parse("a: [1, 2\n").unwrap_err();
    assert!(e.contains(':'), "{e}");
    assert_eq!(yaml::parse("# nothing\n").unwrap(), None);
}

/// Every text [`yaml::block`] and [`yaml::quote`] write reads back exactly.
#[test]
fn written_scalars_read_back_exactly() {
    let texts = [
        "model m\n",
        "model m",
        "  leading spaces\nx = 1\n\n\n",
        "a\n\n  b\n\tc\n",
        "with \"quotes\" and \\ backslash: # not a comment\n",
        "\n\nstarts with blank lines\n",
        "carriage\r\nreturn\n",
        "",
        "\n",
        "unicode: größe ✓\n",
        "control \u{1} char\n",
    ];
    for t in texts {
        for v in [yaml::block(t, 2), yaml::quote(t)] {
            let doc = format!("spec:\n  text: {v}\n  next: 1\n");
            let root = yaml::parse(&doc).unwrap_or_else(|e| panic!("{t:?}: {e}\n{doc}"));
            let spec = get(root.as_ref().unwrap(), "spec");
            assert_eq!(get(spec, "text").str(), Some(t), "{doc}");
            assert_eq!(get(spec, "next").int(), Some(1), "{doc}");
        }
    }
}

fn record() -> RunRecord {
    let spec = "model m\n  data csv(\"d.csv\")\n\ntrain { batch = 4, steps = 10 }\n";
    let mut r = RunRecord::new(std::path::Path::new("specs/m.spec"), spec);
    r.specc_version = "0.1.0".into();
    r.config = vec![
        ("data".into(), "null".into()),
        ("steps".into(), "10".into()),
        ("checkpoint.dir".into(), "\"/tmp/runs/m\"".into()),
        ("checkpoint.every_secs".into(), "600.0".into()),
        ("logging.tensors".into(), "[loss, h1]".into()),
        ("optimizer.name".into(), "\"adam\"".into()),
        ("optimizer.learning_rate".into(), "0.01".into()),
    ];
    r.overrides = vec![("optimizer.learning_rate".into(), "0.01".into())];
    r.data = vec![DataRecord {
        path: "specs/d.csv".into(),
        size: 42,
        sha256: sha256_hex(b"x"),
    }];
    r
}

#[test]
fn run_yaml_round_trips() {
    let r = record();
    let dir = tmp("roundtrip");
    let path = r.write(&dir).unwrap();
    assert_eq!(path, dir.join(RUN_YAML));
    let back = RunRecord::read(&dir).unwrap().unwrap();
    assert_eq!(back, r);
    // Rewriting replaces the file and leaves no temporary file behind.
    r.write(&dir).unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [RUN_YAML]);
    assert_eq!(RunRecord::read(&tmp("none")).unwrap(), None);
}

#[test]
fn sha256_is_the_standard_digest() {
    // FIPS 180-2's test vector.
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let dir = tmp("data");
    let p = dir.join("d.csv");
    std::fs::write(&p, b"abc").unwrap();
    let d = DataRecord::of(&p).unwrap();
    assert_eq!((d.size, d.sha256), (3, sha256_hex(b"abc")));
    let e = DataRecord::of(&dir.join("missing.csv")).unwrap_err();
    assert!(e.contains("missing.csv"), "{e}");
}

#[test]
fn a_resume_refuses_a_changed_spec() {
    let old = record();
    let dir = PathBuf::from("runs/m");
    assert!(old.check_resume(&old, &dir).unwrap().warnings.is_empty());
    let mut new = old.clone();
    new.spec_text.push_str("# edited\n");
    new.spec_sha256 = sha256_hex(new.spec_text.as_bytes());
    let e = old.check_resume(&new, &dir).unwrap_err();
    assert!(
        e.contains(&format!(
            "the spec changed since the checkpoint in runs/m was written: sha256 {}, now {}",
            old.spec_sha256, new.spec_sha256
        )),
        "{e}"
    );
}

#[test]
fn a_resume_warns_about_changed_data_and_optimizer_overrides() {
    let old = record();
    let dir = PathBuf::from("runs/m");
    let mut new = old.clone();
    new.data[0].sha256 = sha256_hex(b"y");
    // More steps is a resume, not a change.
    new.config[1].1 = "1000".into();
    let w = old.check_resume(&new, &dir).unwrap().warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("the data changed since the checkpoint in runs/m"),
        "{w:?}"
    );
    let mut new = old.clone();
    new.config[6].1 = "0.5".into();
    let w = old.check_resume(&new, &dir).unwrap().warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(
        w[0],
        "optimizer.learning_rate changed since the checkpoint in runs/m was written: 0.01, now 0.5"
    );
}

#[test]
fn a_broken_run_yaml_is_an_error_naming_the_file() {
    let dir = tmp("broken");
    std::fs::write(dir.join(RUN_YAML), "spec: [\n").unwrap();
    let e = RunRecord::read(&dir).unwrap_err();
    assert!(e.contains(&dir.join(RUN_YAML).display().to_string()), "{e}");
    std::fs::write(dir.join(RUN_YAML), "specc_version: \"1\"\n").unwrap();
    let e = RunRecord::read(&dir).unwrap_err();
    assert!(e.contains("no `spec`"), "{e}");
}

// init_from_checkpoint's assignment map, with TF's rules.

const T: &[(&str, &[u64])] = &[
    ("W1", &[4, 8]),
    ("b1", &[8]),
    ("old/W1", &[4, 8]),
    ("old/b1", &[8]),
    ("old/inner/W", &[2]),
    ("global_step", &[]),
];

fn named(v: &'static [(&'static str, &'static [u64])]) -> Vec<Named<'static>> {
    v.iter()
        .map(|&(name, shape)| Named { name, shape })
        .collect()
}

fn pairs(
    map: &[(&str, &str)],
    params: &'static [(&'static str, &'static [u64])],
) -> Result<Vec<(String, String)>, String> {
    let m: Vec<(String, String)> = map
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    resolve(&m, &named(T), &named(params), "ckpt/model.ckpt-10")
        .map(|v| {
            v.into_iter()
                .map(|Assignment { tensor, param }| (tensor, param))
                .collect()
        })
        .map_err(|e| e.to_string())
}

fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

const P: &[(&str, &[u64])] = &[("W1", &[4, 8]), ("b1", &[8])];

#[test]
fn root_to_root_maps_every_parameter_by_name() {
    assert_eq!(
        pairs(&[("/", "/")], P).unwrap(),
        owned(&[("W1", "W1"), ("b1", "b1")])
    );
}

#[test]
fn a_checkpoint_scope_maps_to_the_root() {
    assert_eq!(
        pairs(&[("old/", "/")], P).unwrap(),
        owned(&[("old/W1", "W1"), ("old/b1", "b1")])
    );
}

#[test]
fn a_scope_maps_to_a_scope() {
    const S: &[(&str, &[u64])] = &[("new/W1", &[4, 8]), ("new/b1", &[8]), ("other", &[1])];
    assert_eq!(
        pairs(&[("old/", "new/")], S).unwrap(),
        owned(&[("old/W1", "new/W1"), ("old/b1", "new/b1")])
    );
}

#[test]
fn one_tensor_maps_to_one_parameter_and_later_entries_win() {
    // Sorted by the checkpoint side: "/" first, then "old/W1" re-assigns W1.
    assert_eq!(
        pairs(&[("old/W1", "W1"), ("/", "/")], P).unwrap(),
        owned(&[("b1", "b1"), ("old/W1", "W1")])
    );
}

#[test]
fn a_missing_tensor_names_it_and_the_checkpoint() {
    let e = pairs(&[("W9", "W1")], P).unwrap_err();
    assert!(
        e.contains("tensor `W9` is not in checkpoint ckpt/model.ckpt-10; did you mean `W1`?"),
        "{e}"
    );
    const Q: &[(&str, &[u64])] = &[("W2", &[4, 8])];
    let e = pairs(&[("old/", "/")], Q).unwrap_err();
    assert!(e.contains("tensor `old/W2` (for `W2` under `old/`)"), "{e}");
}

#[test]
fn a_shape_mismatch_names_both_shapes() {
    const Q: &[(&str, &[u64])] = &[("W1", &[8, 4])];
    let e = pairs(&[("W1", "W1")], Q).unwrap_err();
    assert!(
        e.contains(
            "the shape of parameter `W1` ([8, 4]) does not match the shape of tensor `W1` ([4, 8])"
        ),
        "{e}"
    );
}

#[test]
fn a_name_to_scope_entry_is_refused_as_tf_does() {
    let e = pairs(&[("W1", "new/")], P).unwrap_err();
    assert!(e.contains("a scope maps to a scope"), "{e}");
}
