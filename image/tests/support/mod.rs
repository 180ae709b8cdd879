//! Reading `golden/images.json` for the image tests: the file (from
//! `specc_testkit::golden`: `SPECC_GOLDEN_DIR` or the repository's
//! `tests/golden`), its numbers and
//! `{dtype, shape, values}` tensors as [`Image`]s.
#![allow(dead_code)]

use specc_image::{DType, Image};

/// `images.json` of the golden directory (`specc_testkit::golden`, which
/// checks its sections: a section no test knows fails).
pub fn golden_file() -> serde_json::Value {
    specc_testkit::golden::golden("images.json")
}

pub use specc_testkit::golden::num as number;

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

/// The ops of `images.json` by the test that checks them: every case's op
/// must be in one of these lists ([`cases_of`] fails otherwise), so a case
/// of an op no test knows fails every image test instead of going
/// unchecked. (`tests/suite/golden_image_graph.rs` checks the differentiable
/// measures a second time, as graph ops.)
pub mod ops {
    /// `golden_adjust_measures.rs`.
    pub const ADJUST_MEASURES: &[&str] = &[
        "tf.image.adjust_brightness",
        "tf.image.adjust_contrast",
        "tf.image.adjust_gamma",
        "tf.image.adjust_hue",
        "tf.image.adjust_saturation",
        "tf.image.per_image_standardization",
        "tf.image.total_variation",
        "tf.image.image_gradients",
        "tf.image.sobel_edges",
        "tf.image.psnr",
    ];
    /// `golden_crop_resize.rs`.
    pub const CROP_RESIZE: &[&str] = &["tf.image.crop_and_resize", "tf.image.resize_with_pad"];
    /// `golden_detection_draw.rs`.
    pub const DETECTION_DRAW: &[&str] = &[
        "tf.image.extract_glimpse",
        "tf.compat.v1.image.extract_glimpse",
        "tf.image.non_max_suppression_with_scores",
        "tf.image.combined_non_max_suppression",
        "tf.image.draw_bounding_boxes",
        "tf.compat.v1.image.draw_bounding_boxes",
    ];
    /// `golden_image_ops.rs`.
    pub const IMAGE_OPS: &[&str] = &[
        "tf.image.flip_left_right",
        "tf.image.flip_up_down",
        "tf.image.transpose",
        "tf.image.rot90",
        "tf.image.crop_to_bounding_box",
        "tf.image.pad_to_bounding_box",
        "tf.image.central_crop",
        "tf.image.resize_with_crop_or_pad",
        "tf.image.rgb_to_grayscale",
        "tf.image.grayscale_to_rgb",
        "tf.image.rgb_to_hsv",
        "tf.image.hsv_to_rgb",
        "tf.image.rgb_to_yiq",
        "tf.image.yiq_to_rgb",
        "tf.image.rgb_to_yuv",
        "tf.image.yuv_to_rgb",
        "tf.image.convert_image_dtype",
    ];
    /// `golden_patches_nms.rs`.
    pub const PATCHES_NMS: &[&str] = &["tf.image.extract_patches", "tf.image.non_max_suppression"];
    /// `golden_resize.rs`.
    pub const RESIZE: &[&str] = &[
        "tf.image.resize",
        "tf.compat.v1.image.resize_bilinear",
        "tf.compat.v1.image.resize_nearest_neighbor",
        "tf.compat.v1.image.resize_bicubic",
        "tf.compat.v1.image.resize_area",
    ];
    /// `golden_ssim.rs`.
    pub const SSIM: &[&str] = &["tf.image.ssim", "tf.image.ssim_multiscale"];
}

/// Every list of [`ops`].
const ALL_OPS: &[&[&str]] = &[
    ops::ADJUST_MEASURES,
    ops::CROP_RESIZE,
    ops::DETECTION_DRAW,
    ops::IMAGE_OPS,
    ops::PATCHES_NMS,
    ops::RESIZE,
    ops::SSIM,
];

/// The case of that name among the cases of `ops`.
pub fn case_of(ops: &[&str], name: &str) -> serde_json::Value {
    cases_of(ops)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("images.json has no case {name} of {ops:?}"))
}

/// The cases whose op is one of `ops`; a case of an op in none of [`ops`]
/// fails.
pub fn cases_of(ops: &[&str]) -> Vec<serde_json::Value> {
    let file = golden_file();
    let all = file["cases"].as_array().expect("cases");
    let unknown: Vec<String> = all
        .iter()
        .filter(|c| {
            let op = c["op"].as_str().expect("op");
            !ALL_OPS.iter().any(|list| list.contains(&op))
        })
        .map(|c| format!("{} ({})", c["name"], c["op"]))
        .collect();
    assert!(
        unknown.is_empty(),
        "images.json: cases of ops no test checks: {unknown:?}"
    );
    all.iter()
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
