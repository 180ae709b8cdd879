//! Reading `golden/images.json` for the image tests: the file (from
//! `SPECC_GOLDEN_DIR` or the repository's `tests/golden`), its numbers and
//! `{dtype, shape, values}` tensors as [`Image`]s.
#![allow(dead_code)]

use specc_image::{DType, Image};
use std::path::PathBuf;

pub fn golden_file() -> serde_json::Value {
    let dir = match std::env::var_os("SPECC_GOLDEN_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/golden"),
    };
    let p = dir.join("images.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("images.json")
}

pub fn number(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Number(n) => n.as_f64().expect("a number"),
        serde_json::Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            o => panic!("number string {o}"),
        },
        o => panic!("expected a number, got {o}"),
    }
}

pub fn flatten(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        other => out.push(number(other)),
    }
}

/// A `{dtype, shape, values}` tensor: its dtype, shape and values.
pub fn tensor(v: &serde_json::Value) -> (DType, Vec<usize>, Vec<f64>) {
    let dtype = DType::from_name(v["dtype"].as_str().expect("dtype")).expect("an image dtype");
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("a dim") as usize)
        .collect();
    let mut values = Vec::new();
    flatten(&v["values"], &mut values);
    (dtype, shape, values)
}

pub fn image_of(v: &serde_json::Value) -> Image {
    let (dtype, shape, values) = tensor(v);
    let dims = ndarray::IxDyn(&shape);
    let arr = |f: fn(f64) -> _| {
        ndarray::ArrayD::from_shape_vec(dims.clone(), values.iter().map(|&x| f(x)).collect())
    };
    match dtype {
        DType::U8 => Image::U8(
            ndarray::ArrayD::from_shape_vec(
                dims.clone(),
                values.iter().map(|&x| x as u8).collect(),
            )
            .expect("shape"),
        ),
        DType::U16 => Image::U16(
            ndarray::ArrayD::from_shape_vec(
                dims.clone(),
                values.iter().map(|&x| x as u16).collect(),
            )
            .expect("shape"),
        ),
        DType::I16 => Image::I16(
            ndarray::ArrayD::from_shape_vec(
                dims.clone(),
                values.iter().map(|&x| x as i16).collect(),
            )
            .expect("shape"),
        ),
        DType::I32 => Image::I32(
            ndarray::ArrayD::from_shape_vec(
                dims.clone(),
                values.iter().map(|&x| x as i32).collect(),
            )
            .expect("shape"),
        ),
        DType::F16 => Image::F16(arr(|x| x as f32).expect("shape")),
        DType::F32 => Image::F32(arr(|x| x as f32).expect("shape")),
        DType::F64 => Image::F64(
            ndarray::ArrayD::from_shape_vec(dims.clone(), values.clone()).expect("shape"),
        ),
    }
}

/// The case of that name among the cases of `ops`.
pub fn case_of(ops: &[&str], name: &str) -> serde_json::Value {
    cases_of(ops)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("images.json has no case {name} of {ops:?}"))
}

/// The cases whose op is one of `ops`.
pub fn cases_of(ops: &[&str]) -> Vec<serde_json::Value> {
    golden_file()["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| ops.contains(&c["op"].as_str().expect("op")))
        .cloned()
        .collect()
}

/// Compares values: exact for integer dtypes, else `rel` relative with a
/// floor of `rel` times the largest magnitude of `want`; NaN equals NaN and
/// infinities must match.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], exact: bool, rel: f64) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, TF has {}",
        got.len(),
        want.len()
    );
    let scale = want
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f64, |m, v| m.max(v.abs()));
    let mut bad = Vec::new();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if exact || !w.is_finite() {
            g == w || (g.is_nan() && w.is_nan())
        } else {
            (g - w).abs() <= rel * w.abs() + rel * scale
        };
        if !ok {
            bad.push(format!("[{i}] got {g}, TF {w}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} values differ: {}",
        bad.len(),
        want.len(),
        bad.join("; ")
    );
}

/// One `#[test]` per named case (`mod case`, each looking its case up in the
/// file by name and running `$check` on it) and the list `NAMED`.
#[macro_export]
macro_rules! case_tests {
    ($ops:expr, $check:path; $($name:ident),* $(,)?) => {
        const NAMED: &[&str] = &[$(stringify!($name)),*];
        mod case {
            $( #[test] fn $name() { $check(&$crate::support::case_of($ops, stringify!($name))); } )*
        }
    };
}

/// Runs `check` on every case of `ops` not in `named`, all of them before
/// failing (a regenerated file with more cases is still checked).
pub fn check_other_cases(ops: &[&str], named: &[&str], check: fn(&serde_json::Value)) {
    let mut failed = Vec::new();
    for c in cases_of(ops) {
        let name = c["name"].as_str().expect("name").to_string();
        if named.contains(&name.as_str()) {
            continue;
        }
        if std::panic::catch_unwind(|| check(&c)).is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "cases that differ from TF: {failed:?}");
}
