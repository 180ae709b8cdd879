//! The digits (`specs/data/digits.csv`, 8×8 gray, 0..16 scaled to 0..255)
//! as PNGs written on the fly, for the image-source tests (`image_sources`,
//! `image_stream`, `image_data_flags`, `replicas`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use specc_image::codec;
use specc_image::Image;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The digits: (8×8 pixels in 0..=255, label).
pub fn digits() -> Vec<(Vec<u8>, i64)> {
    let text = std::fs::read_to_string(repo().join("specs/data/digits.csv")).expect("digits.csv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l
                .split(',')
                .map(|c| c.trim().parse().expect("a number"))
                .collect();
            let px = v[..64]
                .iter()
                .map(|&x| (x * 255.0 / 16.0).round() as u8)
                .collect();
            (px, v[64] as i64)
        })
        .collect()
}

/// One digit's pixels as a gray 8×8 PNG.
pub fn png(px: &[u8]) -> Vec<u8> {
    let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[8, 8, 1]), px.to_vec()).expect("8x8");
    codec::encode_png(&Image::U8(a), -1).expect("encode_png")
}

/// An empty directory `<CARGO_TARGET_TMPDIR>/<module>/<name>`, `module`
/// the test file's `module_path!()` (the files of one test binary never
/// share one).
pub fn scratch(module: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(module.replace("::", "/"))
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Writes `digits` as `dir/<label>/<index>.png`; returns them in the
/// directory source's order (classes sorted, then files).
pub fn write_folder(dir: &Path, digits: &[(Vec<u8>, i64)]) -> Vec<(Vec<u8>, i64)> {
    for (i, (px, label)) in digits.iter().enumerate() {
        let d = dir.join(label.to_string());
        std::fs::create_dir_all(&d).expect("class dir");
        std::fs::write(d.join(format!("{i:05}.png")), png(px)).expect("write png");
    }
    let mut order: Vec<(i64, usize)> = digits.iter().enumerate().map(|(i, d)| (d.1, i)).collect();
    order.sort();
    order.into_iter().map(|(_, i)| digits[i].clone()).collect()
}
