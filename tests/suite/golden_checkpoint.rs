//! TF V2 checkpoints against the one TensorFlow wrote (`tests/golden/ckpt/`,
//! described by `tests/golden/ckpt.json`): writing its variables gives the
//! same bytes, reading it gives its values, and the state file reads and
//! writes as TF's; and TF's checkpoint restores into a specc session of the
//! same model (TF's names for slots and optimizer variables), whose save
//! gives TF's bytes again.

use crate::common;

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use specc_compiler::driver::{compile, Functions};
use specc_grammar::SourceFile;
use specc_runtime::checkpoint::state::CheckpointState;
use specc_runtime::checkpoint::{
    data_path, index_path, latest_checkpoint, write_bundle, BundleReader, DType, Tensor,
};

fn ckpt() -> Value {
    common::golden("ckpt.json")
}

/// The golden checkpoint's prefix: `ckpt/` + the file name of `prefix`.
fn golden_prefix(g: &Value) -> PathBuf {
    let prefix = g["prefix"].as_str().expect("prefix");
    let name = PathBuf::from(prefix)
        .file_name()
        .expect("prefix has a file name")
        .to_owned();
    common::golden_dir().join("ckpt").join(name)
}

fn leaves<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| leaves(i, out)),
        other => out.push(other),
    }
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect()
}

/// A golden variable as a tensor of its dtype.
fn tensor(v: &Value) -> Tensor {
    let dtype = DType::from_name(v["dtype"].as_str().expect("dtype")).expect("known dtype");
    let shape = shape(&v["shape"]);
    let mut vals = Vec::new();
    leaves(&v["values"], &mut vals);
    let mut bytes = Vec::new();
    for x in vals {
        match dtype {
            DType::Float => bytes.extend((common::num(x) as f32).to_le_bytes()),
            DType::Double => bytes.extend(common::num(x).to_le_bytes()),
            DType::Int32 => bytes.extend((common::int(x) as i32).to_le_bytes()),
            DType::Int64 => bytes.extend(common::int(x).to_le_bytes()),
            DType::Bool => bytes.push(u8::from(x.as_bool().expect("bool"))),
            other => panic!("no golden conversion for {other}"),
        }
    }
    Tensor::from_bytes(dtype, &shape, &bytes).expect("values fit the shape")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn out_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("checkpoint_golden")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes the golden variables with specc; returns the prefix.
fn write_golden_variables(dir: &str) -> PathBuf {
    let g = ckpt();
    let vars = g["variables"].as_object().expect("variables");
    let mut tensors: Vec<(String, Tensor)> =
        vars.iter().map(|(n, v)| (n.clone(), tensor(v))).collect();
    // Any order in: the writer sorts by name.
    tensors.reverse();
    let refs: Vec<_> = tensors
        .iter_mut()
        .map(|(n, t)| (n.as_str(), t.as_ref()))
        .collect();
    let prefix = out_dir(dir).join(golden_prefix(&g).file_name().unwrap());
    write_bundle(&prefix, &refs).expect("write");
    prefix
}

#[test]
fn written_index_is_byte_identical_to_tf() {
    let g = ckpt();
    let ours = std::fs::read(index_path(&write_golden_variables("index"))).unwrap();
    let theirs = std::fs::read(index_path(&golden_prefix(&g))).unwrap();
    let name = index_path(&golden_prefix(&g))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let listed = &g["files"][&name];
    assert_eq!(ours.len() as u64, listed["size"].as_u64().unwrap());
    assert_eq!(sha256_hex(&ours), listed["sha256"].as_str().unwrap());
    assert_eq!(ours, theirs);
    let hex: String = ours.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, g["index_decoded"]["index_file_hex"].as_str().unwrap());
}

#[test]
fn written_data_is_byte_identical_to_tf() {
    let g = ckpt();
    let ours = std::fs::read(data_path(&write_golden_variables("data"), 0, 1)).unwrap();
    let golden = data_path(&golden_prefix(&g), 0, 1);
    let theirs = std::fs::read(&golden).unwrap();
    let listed = &g["files"][golden.file_name().unwrap().to_string_lossy().as_ref()];
    assert_eq!(ours.len() as u64, listed["size"].as_u64().unwrap());
    assert_eq!(
        ours.len() as u64,
        g["index_decoded"]["data_file_size"].as_u64().unwrap()
    );
    assert_eq!(sha256_hex(&ours), listed["sha256"].as_str().unwrap());
    assert_eq!(ours, theirs);
}

#[test]
fn reads_tf_checkpoint_values_exactly() {
    let g = ckpt();
    let r = BundleReader::open(golden_prefix(&g)).expect("open TF's checkpoint");
    let vars = g["variables"].as_object().unwrap();
    assert_eq!(r.entries().len(), vars.len());
    for (name, v) in vars {
        let want = tensor(v);
        let got = r.load(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.dtype(), want.dtype(), "{name}");
        assert_eq!(got.shape(), want.shape(), "{name}");
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn reads_tf_checkpoint_keys_in_order_with_list_variables() {
    let g = ckpt();
    let r = BundleReader::open(golden_prefix(&g)).unwrap();
    let keys: Vec<&str> = g["index_decoded"]["keys_in_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .filter(|k| !k.is_empty())
        .collect();
    let listed = r.list_variables();
    let names: Vec<&str> = listed.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, keys);
    let tf_list = g["list_variables"].as_array().unwrap();
    assert_eq!(listed.len(), tf_list.len());
    for ((name, dtype, shape_), tf) in listed.iter().zip(tf_list) {
        assert_eq!(name, tf[0].as_str().unwrap());
        assert_eq!(*shape_, shape(&tf[1]), "{name}");
        assert_eq!(
            dtype.name(),
            g["variables"][name]["dtype"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn reads_tf_checkpoint_entries_as_decoded() {
    let g = ckpt();
    let r = BundleReader::open(golden_prefix(&g)).unwrap();
    let entries = g["index_decoded"]["entries"].as_object().unwrap();
    assert_eq!(entries.len(), r.entries().len());
    for (name, want) in entries {
        let e = r.entry(name).unwrap_or_else(|| panic!("no entry {name}"));
        assert_eq!(e.dtype.enum_value(), want["dtype_enum"].as_u64().unwrap());
        assert_eq!(e.shape, shape(&want["shape"]), "{name}");
        assert_eq!(u64::from(e.shard_id), want["shard_id"].as_u64().unwrap());
        assert_eq!(e.offset, want["offset"].as_u64().unwrap(), "{name}");
        assert_eq!(e.size, want["size"].as_u64().unwrap(), "{name}");
        assert_eq!(
            u64::from(e.crc32c),
            want["crc32c"].as_u64().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn state_file_parses_and_rewrites_byte_identical() {
    let g = ckpt();
    let path = common::golden_dir().join("ckpt").join("checkpoint");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, g["checkpoint_state_file"].as_str().unwrap());
    let listed = &g["files"]["checkpoint"];
    assert_eq!(text.len() as u64, listed["size"].as_u64().unwrap());
    assert_eq!(
        sha256_hex(text.as_bytes()),
        listed["sha256"].as_str().unwrap()
    );
    let st = CheckpointState::parse(&text, &path).unwrap();
    let name = golden_prefix(&g)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(st.model_checkpoint_path, name);
    assert_eq!(st.all_model_checkpoint_paths.last(), Some(&name));
    assert_eq!(st.to_text(), text);
}

#[test]
fn latest_checkpoint_of_tf_directory() {
    let g = ckpt();
    let latest = latest_checkpoint(common::golden_dir().join("ckpt")).unwrap();
    assert_eq!(latest, Some(golden_prefix(&g)));
}

/// A spec whose variables are those of TF's golden checkpoint: its
/// parameters (the variables that have slots) with their shapes, Adam with
/// the golden hyperparameters, and a loss that touches every parameter.
fn golden_spec(g: &serde_json::Value) -> String {
    let vars = g["variables"].as_object().unwrap();
    let params: Vec<(&String, Vec<u64>)> = vars
        .iter()
        .filter(|(n, _)| vars.keys().any(|m| m.starts_with(&format!("{n}/"))))
        .map(|(n, v)| {
            let shape = v["shape"].as_array().unwrap();
            (n, shape.iter().map(|d| d.as_u64().unwrap()).collect())
        })
        .collect();
    assert!(!params.is_empty());
    let decls: Vec<String> = params
        .iter()
        .map(|(n, s)| {
            let dims: Vec<String> = s.iter().map(u64::to_string).collect();
            format!("  {n}: [{}] = zeros", dims.join(", "))
        })
        .collect();
    let loss: Vec<String> = params
        .iter()
        .map(|(n, _)| format!("reduce_sum({n} * {n})"))
        .collect();
    let kwargs: Vec<String> = g["_meta"]["optimizer_kwargs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!(
        "model golden_ckpt\ndata synthetic(rows = 8, features = 2, classes = 2, seed = 1)\n\
         label label: int\nfeatures {{\n  x = numeric(x0..x1)\n}}\nparams {{\n{}\n}}\n\
         loss = mean(x) * 0.0 + {}\noptimizer adam({})\ntrain {{ batch = 4, steps = 1 }}\n",
        decls.join("\n"),
        loss.join(" + "),
        kwargs.join(", ")
    )
}

/// TF's own Adam checkpoint restores into a specc session of the same model
/// (the same variable names and shapes, every value exact), and saving that
/// session writes TF's bytes again.
#[test]
fn restores_tfs_checkpoint_and_saves_its_bytes_again() {
    let g = common::golden("ckpt.json");
    let text = golden_spec(&g);
    let program = compile(
        &SourceFile::new("golden_ckpt.spec", text.clone()),
        Functions::TRAIN,
    )
    .unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let mut s = program.session().unwrap();
    let name = PathBuf::from(g["prefix"].as_str().unwrap());
    let prefix = common::golden_dir()
        .join("ckpt")
        .join(name.file_name().unwrap());
    let reader = BundleReader::open(&prefix).unwrap();
    s.restore(&reader).unwrap();

    let ours: Vec<&str> = s.checkpoint_tensors().iter().map(|(n, _)| *n).collect();
    let mut ours = ours.into_iter().map(String::from).collect::<Vec<_>>();
    ours.sort();
    let mut theirs: Vec<String> = g["variables"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    theirs.sort();
    assert_eq!(ours, theirs, "specc names the model's variables as TF does");
    for (n, v) in g["variables"].as_object().unwrap() {
        if n == "global_step" {
            assert_eq!(s.global_step, v["values"].as_i64().unwrap());
            continue;
        }
        let (_, want) = common::array(&v["values"]);
        let got = s.var(n).unwrap();
        let want: Vec<u32> = want.iter().map(|&x| (x as f32).to_bits()).collect();
        let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want, "{n}");
    }

    let again = out_dir("golden_again").join(name.file_name().unwrap());
    write_bundle(&again, &s.checkpoint_tensors()).unwrap();
    for f in [
        specc_runtime::checkpoint::index_path(&prefix),
        specc_runtime::checkpoint::data_path(&prefix, 0, 1),
    ] {
        let mine = again.with_file_name(f.file_name().unwrap());
        assert_eq!(
            std::fs::read(&mine).unwrap(),
            std::fs::read(&f).unwrap(),
            "{}",
            f.display()
        );
    }
}

/// Every file `files` lists is in the golden directory with its size and
/// SHA-256 (the `.meta` graph included, which specc does not read).
#[test]
fn every_listed_file_has_its_size_and_sha256() {
    let g = ckpt();
    let files = g["files"].as_object().expect("files");
    assert!(!files.is_empty());
    for (name, listed) in files {
        let bytes = std::fs::read(common::golden_dir().join("ckpt").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            bytes.len() as u64,
            listed["size"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            sha256_hex(&bytes),
            listed["sha256"].as_str().unwrap(),
            "{name}"
        );
    }
}

/// `in_memory_final_state`, what TF's session held when it saved: the
/// checkpoint holds every variable, every slot (TF's `get_slot` name, `m`,
/// stored under the name specc gives that slot of the model's optimizer:
/// `w/Adam`), every other optimizer variable and the global step, with the
/// same bits.
#[test]
fn the_checkpoint_holds_tfs_in_memory_state() {
    let g = ckpt();
    assert_eq!(g["checkpoint_values_equal_in_memory_state"], true);
    let text = golden_spec(&g);
    let model = specc_compiler::check(&SourceFile::new("golden_ckpt.spec", text.clone()))
        .unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let slots = specc_compiler::optim::table::slots(model.optimizer());
    let bits = |v: &Value| -> Vec<u32> {
        common::array(v)
            .1
            .iter()
            .map(|&x| (x as f32).to_bits())
            .collect()
    };
    let saved = |name: &str| -> &Value {
        let v = &g["variables"][name]["values"];
        assert!(!v.is_null(), "the checkpoint has no {name}");
        v
    };
    let state = &g["in_memory_final_state"];
    let mut compared = 0;
    for (var, v) in state["variables"].as_object().expect("variables") {
        assert_eq!(bits(saved(var)), bits(v), "{var}");
        compared += 1;
    }
    for (var, by_slot) in state["slots"].as_object().expect("slots") {
        for (slot, v) in by_slot.as_object().expect("a variable's slots") {
            let s = slots
                .iter()
                .find(|s| s.name == *slot)
                .unwrap_or_else(|| panic!("specc's optimizer has no slot {slot}"));
            let name = format!("{var}/{}", s.suffix);
            assert_eq!(bits(saved(&name)), bits(v), "{name} ({slot} of {var})");
            compared += 1;
        }
    }
    for (name, v) in state["other_optimizer_variables"]
        .as_object()
        .expect("other_optimizer_variables")
    {
        assert_eq!(bits(saved(name)), bits(v), "{name}");
        compared += 1;
    }
    assert_eq!(
        saved("global_step").as_i64(),
        state["global_step"].as_i64(),
        "global_step"
    );
    // Every variable of the checkpoint is one of the state's.
    assert_eq!(
        compared + 1,
        g["variables"].as_object().unwrap().len(),
        "the checkpoint holds the state and nothing else"
    );
}
