//! The `tf.image` transforms of an image input (`image(decode_image(..),
//! rgb_to_grayscale(), crop_to_bounding_box(1, 2, 3, 4), ...)`) against
//! their cases of `golden/images.json`, through a spec: the spec is
//! checked by the compiler, and the pipeline it builds runs on the case's
//! input (standing for `decode_image`'s output, `ImagePipeline::apply_image`),
//! each case its own test.
//!
//! A case's spec is `image(decode_image(channels = C), random_crop([H, W,
//! C]), TRANSFORM(args))` with `[H, W, C]` the case's image (the crop of
//! the whole image keeps it, and gives the static shape a transform that
//! depends on the image needs); a batch case runs each image through the
//! pipeline; `extract_glimpse` and `crop_and_resize`, whose offsets and
//! boxes are a transform's arguments, run image `i` (box `i`'s image)
//! through a pipeline with its own row of them. The pipeline's image is float32 (decoded pixels 0..255 as
//! Keras casts them): a float case is TF's op on the same float tensor; a
//! uint8 case is checked where TF's op gives the same numbers on the
//! values as float32 (the crops, pads, flips, rotations and
//! `per_image_standardization`).
//!
//! Random transforms: their deterministic part is checked here
//! (`adjust_jpeg_quality` at the quality of the file's JPEG cases, against
//! TF's encode and decode), their draws (`random_jpeg_quality`,
//! `sample_distorted_bounding_box`) by `runtime`'s tests (the same bits
//! for the same `(seed, epoch, index)`).
//!
//! Tolerance: 1e-6 relative with a floor of 1e-6 times the tensor's largest
//! magnitude; resizes (`resize_with_pad`) 2e-6, as the library's tests.

use crate::common;

use common::op_cases::{arg_text, cases_of, named};
use common::{array, assert_all_close, check_all, golden, scale, Tol};
use specc_grammar::SourceFile;
use specc_image::Image;
use specc_runtime::data::Source;

const FILE: &str = "images.json";

/// Each op this file checks (TF's name), its transform, and whether it
/// computes the same on an integer image's values as on float32 ones.
const OPS: &[(&str, &str, bool)] = &[
    ("tf.image.rgb_to_grayscale", "rgb_to_grayscale", false),
    ("tf.image.grayscale_to_rgb", "grayscale_to_rgb", true),
    ("tf.image.rgb_to_hsv", "rgb_to_hsv", false),
    ("tf.image.hsv_to_rgb", "hsv_to_rgb", false),
    ("tf.image.rgb_to_yiq", "rgb_to_yiq", false),
    ("tf.image.yiq_to_rgb", "yiq_to_rgb", false),
    ("tf.image.rgb_to_yuv", "rgb_to_yuv", false),
    ("tf.image.yuv_to_rgb", "yuv_to_rgb", false),
    (
        "tf.image.per_image_standardization",
        "per_image_standardization",
        true,
    ),
    ("tf.image.adjust_brightness", "adjust_brightness", false),
    ("tf.image.adjust_contrast", "adjust_contrast", false),
    ("tf.image.adjust_gamma", "adjust_gamma", false),
    ("tf.image.adjust_hue", "adjust_hue", false),
    ("tf.image.adjust_saturation", "adjust_saturation", false),
    (
        "tf.image.crop_to_bounding_box",
        "crop_to_bounding_box",
        true,
    ),
    ("tf.image.pad_to_bounding_box", "pad_to_bounding_box", true),
    ("tf.image.central_crop", "central_crop", true),
    (
        "tf.image.resize_with_crop_or_pad",
        "resize_with_crop_or_pad",
        true,
    ),
    ("tf.image.resize_with_pad", "resize_with_pad", false),
    ("tf.image.flip_left_right", "flip_left_right", true),
    ("tf.image.flip_up_down", "flip_up_down", true),
    ("tf.image.transpose", "transpose", true),
    ("tf.image.rot90", "rot90", true),
    ("tf.image.extract_glimpse", "extract_glimpse", false),
    ("tf.image.crop_and_resize", "crop_and_resize", false),
    ("tf.image.extract_patches", "extract_patches", true),
    (
        "tf.compat.v1.image.resize_bilinear",
        "resize_bilinear",
        false,
    ),
    (
        "tf.compat.v1.image.resize_nearest_neighbor",
        "resize_nearest_neighbor",
        true,
    ),
    ("tf.compat.v1.image.resize_bicubic", "resize_bicubic", false),
    ("tf.compat.v1.image.resize_area", "resize_area", false),
];

fn op_of(case: &serde_json::Value) -> Option<&'static (&'static str, &'static str, bool)> {
    let op = case["op"].as_str().expect("op");
    // The image (the first input but `crop_and_resize`'s ids).
    let (_, input) = case["inputs"]
        .as_object()?
        .iter()
        .find(|(k, _)| *k != "box_indices")?;
    let float = input["dtype"]
        .as_str()
        .is_some_and(|d| d.starts_with("float"));
    if op == "tf.image.convert_image_dtype" {
        // The pipeline's conversion: of the decoded uint8 image, to any
        // dtype (held as float32 values).
        return (input["dtype"] == "uint8").then_some(&CONVERT);
    }
    OPS.iter()
        .find(|(name, _, any_dtype)| *name == op && (float || *any_dtype))
}

const CONVERT: (&str, &str, bool) = ("tf.image.convert_image_dtype", "convert_image_dtype", true);

fn cases() -> Vec<serde_json::Value> {
    cases_of(FILE, |c| op_of(c).is_some())
}

/// A spec with an image input of `transforms` (after `decode_image`).
fn spec(channels: usize, transforms: &str) -> String {
    format!(
        "model t\ndata image_dataset_from_directory(\"images\")\nlabel label: int\n\
         features {{\n  image = image(decode_image(channels = {channels}), {transforms})\n}}\n\
         params {{ b: [1] = zeros }}\n\
         loss = reduce_mean(image) + reduce_sum(b)\n\
         optimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// The image pipeline of a spec, as the compiler builds it.
fn pipeline_of(text: &str) -> specc_runtime::data::images::ImagePipeline {
    let model = specc_compiler::check(&SourceFile::new("case.spec", text.to_string()))
        .unwrap_or_else(|d| {
            panic!(
                "{:?}\n{text}",
                d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
            )
        });
    match model.data.source {
        Source::Images(spec) => spec.pipeline,
        _ => panic!("not an image source:\n{text}"),
    }
}

fn image(dims: &[usize], values: &[f64]) -> Image {
    let v: Vec<f32> = values.iter().map(|&x| x as f32).collect();
    Image::F32(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(dims), v).expect("shape"))
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let (_, transform, _) = op_of(case).expect("an op of this file");
    let (_, input) = case["inputs"]
        .as_object()
        .and_then(|o| o.iter().find(|(k, _)| *k != "box_indices" && *k != "boxes"))
        .expect("an input");
    let (dims, values) = array(&input["values"]);
    let (batch, hwc) = match dims.len() {
        3 => (1, &dims[..]),
        _ => (dims[0], &dims[1..]),
    };
    let args: Vec<String> = case["args"]
        .as_object()
        .expect("args")
        .iter()
        .map(|(k, v)| format!("{k} = {}", arg_text(v)))
        .collect();
    // `extract_glimpse`'s offsets are a transform's argument: image `i`
    // through a pipeline with its own row of the case's offsets.
    let offsets = case["inputs"].get("offsets").map(|o| array(&o["values"]).1);
    // `crop_and_resize`'s boxes too: box `i` of image `box_indices[i]`.
    let boxes = case["inputs"].get("boxes").map(|o| array(&o["values"]).1);
    let text_of = |i: usize| {
        let mut args = args.clone();
        if let Some(o) = &offsets {
            args.push(format!("offsets = [{}, {}]", o[2 * i], o[2 * i + 1]));
        }
        if let Some(b) = &boxes {
            let b: Vec<String> = b[4 * i..4 * i + 4].iter().map(|v| v.to_string()).collect();
            args.push(format!("boxes = [{}]", b.join(", ")));
        }
        spec(
            hwc[2],
            &format!(
                "random_crop([{}, {}, {}]), {transform}({})",
                hwc[0],
                hwc[1],
                hwc[2],
                args.join(", ")
            ),
        )
    };
    let per: usize = hwc.iter().product();
    let mut got = Vec::new();
    let ids = case["inputs"]
        .get("box_indices")
        .map(|o| array(&o["values"]).1);
    let outputs = match (&ids, &boxes) {
        (Some(ids), _) => ids.len(),
        _ => batch,
    };
    for i in 0..outputs {
        let text = text_of(i);
        let pipeline = pipeline_of(&text);
        let k = ids.as_ref().map_or(i, |ids| ids[i] as usize);
        let im = image(hwc, &values[k * per..(k + 1) * per]);
        let out = pipeline
            .apply_image(&im, true, (1, 0, i as u64))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        got.extend(out.to_f32().iter().copied());
    }
    let (_, want) = array(&case["outputs"]["output"]["values"]);
    let rel = if transform.starts_with("resize") || *transform == "crop_and_resize" {
        2e-6
    } else {
        1e-6
    };
    assert_all_close(
        &format!("{name}: {transform} through the pipeline"),
        &got,
        &want,
        Tol::scaled(rel, rel, scale(&want)),
    );
}

fn check_named(name: &str) {
    check(named(&cases(), FILE, name));
}

crate::op_case_tests!(super::check_named;
    convert_image_dtype_uint8_to_float32,
    convert_image_dtype_uint8_to_int16,
    convert_image_dtype_uint8_to_int32,
    convert_image_dtype_uint8_to_float64,
    convert_image_dtype_uint8_to_uint8,
    rgb_to_grayscale,
    grayscale_to_rgb,
    rgb_to_hsv,
    hsv_to_rgb,
    rgb_to_yiq,
    yiq_to_rgb,
    rgb_to_yuv,
    yuv_to_rgb,
    per_image_standardization_image,
    per_image_standardization_uint8,
    per_image_standardization_batch,
    per_image_standardization_constant_image,
    adjust_brightness_0,
    adjust_brightness_1,
    adjust_contrast_0,
    adjust_contrast_1,
    adjust_contrast_batch,
    adjust_gamma_0,
    adjust_gamma_1,
    adjust_hue_0,
    adjust_hue_1,
    adjust_saturation_0,
    adjust_saturation_1,
    crop_to_bounding_box_image,
    crop_to_bounding_box_batch,
    pad_to_bounding_box_image,
    pad_to_bounding_box_uint8,
    pad_to_bounding_box_batch,
    central_crop_0,
    central_crop_1,
    central_crop_2,
    central_crop_batch,
    resize_with_crop_or_pad_0,
    resize_with_crop_or_pad_1,
    resize_with_pad_bilinear_0,
    resize_with_pad_nearest_0,
    resize_with_pad_bilinear_1,
    resize_with_pad_nearest_1,
    resize_with_pad_bilinear_antialias_batch,
    flip_left_right_image,
    flip_up_down_image,
    transpose_image,
    flip_left_right_batch,
    flip_up_down_batch,
    transpose_batch,
    rot90_k1,
    rot90_k2,
    rot90_k3,
    rot90_k1_batch,
    extract_glimpse_centered_normalized,
    extract_glimpse_centered_pixels,
    extract_glimpse_corner_normalized,
    extract_glimpse_corner_pixels,
    crop_and_resize_bilinear,
    crop_and_resize_nearest,
    crop_and_resize_bilinear_extrapolation,
    crop_and_resize_nearest_extrapolation,
    crop_and_resize_bilinear_crop_size_one,
    crop_and_resize_nearest_crop_size_one,
    extract_patches_valid_strided,
    extract_patches_same_stride1,
    extract_patches_valid_rates,
    extract_patches_same_rates_strided,
    v1_resize_bilinear_up_legacy,
    v1_resize_bilinear_up_align_corners,
    v1_resize_bilinear_up_half_pixel_centers,
    v1_resize_bilinear_down_legacy,
    v1_resize_bilinear_down_align_corners,
    v1_resize_bilinear_down_half_pixel_centers,
    v1_resize_nearest_neighbor_up_legacy,
    v1_resize_nearest_neighbor_up_align_corners,
    v1_resize_nearest_neighbor_up_half_pixel_centers,
    v1_resize_nearest_neighbor_down_legacy,
    v1_resize_nearest_neighbor_down_align_corners,
    v1_resize_nearest_neighbor_down_half_pixel_centers,
    v1_resize_bicubic_up_legacy,
    v1_resize_bicubic_up_align_corners,
    v1_resize_bicubic_up_half_pixel_centers,
    v1_resize_bicubic_down_legacy,
    v1_resize_bicubic_down_align_corners,
    v1_resize_bicubic_down_half_pixel_centers,
    v1_resize_area_up_legacy,
    v1_resize_area_up_align_corners,
    v1_resize_area_down_legacy,
    v1_resize_area_down_align_corners,
);

/// The cases of these transforms without a test of their own (a
/// regenerated file with more cases is still checked).
#[test]
fn every_other_image_transform_case_in_the_file_matches_tensorflow() {
    common::op_cases::check_others(cases(), NAMED, check);
}

/// `adjust_jpeg_quality(q)` through the pipeline on each JPEG case's image
/// at the file's quality: TF's encoder is libjpeg-turbo's and ours another
/// (the same scaled quantization tables, other rounding), so the pixels are
/// compared as the library's round trip is (`image/tests/golden_codecs.rs`):
/// as close to the source on average as TF's own encode and decode, within
/// half again plus a level.
fn check_jpeg(name: &str) {
    let all = golden(FILE);
    let case = all["codecs"]
        .as_array()
        .expect("codecs")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no codec case {name}"));
    let (dims, values) = array(&case["inputs"]["image"]["values"]);
    let quality = case["args"]["quality"].as_i64().expect("quality");
    let text = spec(
        dims[2],
        &format!(
            "random_crop([{}, {}, {}]), adjust_jpeg_quality({quality})",
            dims[0], dims[1], dims[2]
        ),
    );
    let out = pipeline_of(&text)
        .apply_image(&image(&dims, &values), true, (1, 0, 0))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let ours: f64 = out
        .to_f32()
        .iter()
        .zip(&values)
        .map(|(&g, &v)| (f64::from(g) - v).abs())
        .sum::<f64>()
        / values.len() as f64;
    let (_, tf_decode) = array(&case["outputs"]["decode_jpeg"]["values"]);
    let tf: f64 = tf_decode
        .iter()
        .zip(&values)
        .map(|(&g, &v)| (g - v).abs())
        .sum::<f64>()
        / values.len() as f64;
    assert!(
        ours <= 1.5 * tf + 1.0,
        "{name}: adjust_jpeg_quality({quality}) is {ours:.3} levels from the source on average, TF's {tf:.3}"
    );
}

mod jpeg {
    #[test]
    fn jpeg_rgb() {
        super::check_jpeg("jpeg_rgb");
    }
    #[test]
    fn jpeg_rgb_noise() {
        super::check_jpeg("jpeg_rgb_noise");
    }
}

/// Every JPEG case of the file has a test above.
#[test]
fn every_jpeg_case_is_checked() {
    let all = golden(FILE);
    let names: Vec<String> = all["codecs"]
        .as_array()
        .expect("codecs")
        .iter()
        .filter(|c| c["op"].as_str().is_some_and(|o| o.contains("encode_jpeg")))
        .map(|c| c["name"].as_str().expect("name").to_string())
        .collect();
    check_all(names.into_iter().map(|n| (n.clone(), n)), |_, n| {
        check_jpeg(&n)
    });
}
