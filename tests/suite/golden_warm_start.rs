//! `init_from_checkpoint`'s assignment map against the variables of TF's own
//! checkpoint (`ckpt.json`'s `list_variables`: names and shapes as
//! `tf.train.list_variables` gives them). Every name and shape comes from
//! the file.

use crate::common;

use specc_runtime::config::warm_start::{resolve, Named};

/// (name, shape) of every variable of the golden checkpoint.
fn variables() -> Vec<(String, Vec<u64>)> {
    let ck = common::golden("ckpt.json");
    let list = ck["list_variables"].as_array().expect("list_variables");
    assert!(!list.is_empty(), "the golden checkpoint lists no variables");
    list.iter()
        .map(|v| {
            let name = v[0].as_str().expect("a name").to_string();
            let shape = v[1]
                .as_array()
                .expect("a shape")
                .iter()
                .map(|d| d.as_u64().expect("a dimension"))
                .collect();
            (name, shape)
        })
        .collect()
}

fn named(v: &[(String, Vec<u64>)]) -> Vec<Named<'_>> {
    v.iter()
        .map(|(name, shape)| Named { name, shape })
        .collect()
}

fn prefix() -> String {
    common::golden("ckpt.json")["prefix"]
        .as_str()
        .unwrap()
        .to_string()
}

fn map(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// `{ "/": "/" }`: every parameter from the tensor of its own name.
#[test]
fn root_to_root_loads_every_variable_by_name() {
    let vars = variables();
    let got = resolve(&map(&[("/", "/")]), &named(&vars), &named(&vars), &prefix()).unwrap();
    let mut names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let pairs: Vec<(&str, &str)> = got
        .iter()
        .map(|a| (a.tensor.as_str(), a.param.as_str()))
        .collect();
    let want: Vec<(&str, &str)> = names.iter().map(|n| (*n, *n)).collect();
    assert_eq!(pairs, want);
}

/// `{ "/": "new/" }`: the checkpoint's root into a scope of the model.
#[test]
fn root_into_a_scope() {
    let vars = variables();
    let scoped: Vec<(String, Vec<u64>)> = vars
        .iter()
        .map(|(n, s)| (format!("new/{n}"), s.clone()))
        .collect();
    let got = resolve(
        &map(&[("/", "new/")]),
        &named(&vars),
        &named(&scoped),
        &prefix(),
    )
    .unwrap();
    assert_eq!(got.len(), vars.len());
    for a in &got {
        assert_eq!(a.param, format!("new/{}", a.tensor));
    }
}

/// One tensor into one parameter; its shape must match.
#[test]
fn one_tensor_shape_mismatch_names_both_shapes() {
    let vars = variables();
    let (name, shape) = &vars[0];
    let mut wrong = shape.clone();
    wrong.push(2);
    let params = vec![("p".to_string(), wrong.clone())];
    let e = resolve(
        &map(&[(name, "p")]),
        &named(&vars),
        &named(&params),
        &prefix(),
    )
    .unwrap_err();
    let dims = |s: &[u64]| {
        format!(
            "[{}]",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    assert!(
        e.0.contains(&format!(
            "parameter `p` ({}) does not match the shape of tensor `{name}` ({})",
            dims(&wrong),
            dims(shape)
        )),
        "{e}"
    );
    assert!(e.0.contains(&prefix()), "{e}");
    let params = vec![("p".to_string(), shape.clone())];
    let got = resolve(
        &map(&[(name, "p")]),
        &named(&vars),
        &named(&params),
        &prefix(),
    )
    .unwrap();
    assert_eq!((got[0].tensor.as_str(), got.len()), (name.as_str(), 1));
}

/// A tensor the checkpoint lacks is named, with the closest one it has.
#[test]
fn a_missing_tensor_suggests_the_closest() {
    let vars = variables();
    let (name, shape) = &vars[vars.len() - 1];
    let typo = format!("{name}x");
    let params = vec![("p".to_string(), shape.clone())];
    let e = resolve(
        &map(&[(&typo, "p")]),
        &named(&vars),
        &named(&params),
        &prefix(),
    )
    .unwrap_err();
    assert!(
        e.0.contains(&format!(
            "tensor `{typo}` is not in checkpoint {}",
            prefix()
        )),
        "{e}"
    );
    assert!(e.0.contains(&format!("did you mean `{name}`?")), "{e}");
}
