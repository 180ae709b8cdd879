//! `adjust_brightness`, `adjust_contrast`, `adjust_gamma`,
//! `per_image_standardization`, `total_variation`, `image_gradients`,
//! `sobel_edges` and `psnr` against every case of `golden/images.json` for
//! them: one test per case (looked up by name at test time), plus one test
//! of any case of these ops the list lacks. Outputs and every recorded
//! gradient (`grad.wrt.image` of `sum(output · W)` with the case's `W`); a
//! case with `grad_refused` (adjust_contrast) has no gradient here either.
//!
//! Tolerance: integer outputs exact; floats 1e-6 relative with a floor of
//! 1e-6 times the tensor's largest magnitude (sums are accumulated in f64,
//! TF's Eigen reductions in f32 trees).

use crate::support;

use ndarray::{ArrayD, IxDyn};
use specc_image::{adjust, measures, Image};
use support::{assert_close, case_of, image_of, tensor};

const OPS: &[&str] = support::ops::ADJUST_MEASURES;

const REL: f64 = 1e-6;

fn f64s(a: &ArrayD<f32>) -> Vec<f64> {
    a.iter().map(|&v| f64::from(v)).collect()
}

fn f32_tensor(v: &serde_json::Value) -> ArrayD<f32> {
    let (_, shape, values) = tensor(v);
    ArrayD::from_shape_vec(IxDyn(&shape), values.iter().map(|&x| x as f32).collect())
        .expect("shape")
}

fn arg(case: &serde_json::Value, key: &str) -> f64 {
    case["args"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{}: no argument {key}", case["name"]))
}

fn check_output(name: &str, got: &[f64], want: &serde_json::Value, exact: bool) {
    let (_, shape, values) = tensor(want);
    assert_eq!(
        got.len(),
        shape.iter().product::<usize>(),
        "{name}: output size"
    );
    assert_close(name, got, &values, exact, REL);
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let op = case["op"].as_str().expect("op");
    let inputs = &case["inputs"];
    let outputs = &case["outputs"];
    let grad = &case["grad"];
    let weights = |k: &str| f32_tensor(&grad["weights"][k]);
    let want_grad = |k: &str| tensor(&grad["wrt"][k]).2;
    match op {
        "tf.image.adjust_brightness"
        | "tf.image.adjust_contrast"
        | "tf.image.adjust_gamma"
        | "tf.image.adjust_hue"
        | "tf.image.adjust_saturation"
        | "tf.image.per_image_standardization" => {
            let image = image_of(&inputs["image"]);
            let out = match op {
                "tf.image.adjust_brightness" => {
                    adjust::adjust_brightness(&image, arg(case, "delta") as f32)
                }
                "tf.image.adjust_contrast" => {
                    adjust::adjust_contrast(&image, arg(case, "contrast_factor") as f32)
                }
                "tf.image.adjust_hue" => adjust::adjust_hue(&image, arg(case, "delta") as f32),
                "tf.image.adjust_saturation" => {
                    adjust::adjust_saturation(&image, arg(case, "saturation_factor") as f32)
                }
                "tf.image.adjust_gamma" => adjust::adjust_gamma(
                    &image,
                    arg(case, "gamma") as f32,
                    arg(case, "gain") as f32,
                ),
                _ => adjust::per_image_standardization(&image),
            }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (dtype, _, _) = tensor(&outputs["output"]);
            assert_eq!(out.dtype(), dtype, "{name}: dtype");
            let got: Vec<f64> = out.to_f64().iter().copied().collect();
            check_output(name, &got, &outputs["output"], !dtype.is_float());
            if grad.is_object() {
                let g = adjust::adjust_brightness_grad(&weights("output"));
                assert_close(
                    &format!("{name} gradient"),
                    &f64s(&g),
                    &want_grad("image"),
                    false,
                    REL,
                );
            }
        }
        "tf.image.total_variation" => {
            let image = image_of(&inputs["image"]);
            let out = measures::total_variation(&image).expect("total_variation");
            check_output(name, &f64s(&out), &outputs["output"], false);
            let g = measures::total_variation_grad(&image, &weights("output")).expect("grad");
            assert_close(
                &format!("{name} gradient"),
                &f64s(&g),
                &want_grad("image"),
                false,
                REL,
            );
        }
        "tf.image.image_gradients" => {
            let image = image_of(&inputs["image"]);
            let (dy, dx) = measures::image_gradients(&image).expect("image_gradients");
            check_output(&format!("{name} dy"), &f64s(&dy), &outputs["dy"], false);
            check_output(&format!("{name} dx"), &f64s(&dx), &outputs["dx"], false);
            let g = measures::image_gradients_grad(&image, &weights("dy"), &weights("dx"))
                .expect("grad");
            assert_close(
                &format!("{name} gradient"),
                &f64s(&g),
                &want_grad("image"),
                false,
                REL,
            );
        }
        "tf.image.sobel_edges" => {
            let image = image_of(&inputs["image"]);
            let out = measures::sobel_edges(&image).expect("sobel_edges");
            check_output(name, &f64s(&out), &outputs["output"], false);
            let g = measures::sobel_edges_grad(&image, &weights("output")).expect("grad");
            assert_close(
                &format!("{name} gradient"),
                &f64s(&g),
                &want_grad("image"),
                false,
                REL,
            );
        }
        "tf.image.psnr" => {
            let a = image_of(&inputs["a"]);
            let b = image_of(&inputs["b"]);
            let out = measures::psnr(&a, &b, arg(case, "max_val")).expect("psnr");
            check_output(name, &f64s(&out), &outputs["output"], false);
        }
        other => panic!("no op {other}"),
    }
}

case_tests!(
    super::OPS, super::check;
    adjust_brightness_0,
    adjust_brightness_1,
    adjust_brightness_uint8,
    adjust_contrast_0,
    adjust_contrast_1,
    adjust_contrast_batch,
    adjust_contrast_uint8_0,
    adjust_contrast_uint8_1,
    adjust_gamma_0,
    adjust_gamma_uint8_0,
    adjust_gamma_1,
    adjust_gamma_uint8_1,
    adjust_hue_0,
    adjust_hue_uint8_0,
    adjust_hue_1,
    adjust_hue_uint8_1,
    adjust_saturation_0,
    adjust_saturation_uint8_0,
    adjust_saturation_1,
    adjust_saturation_uint8_1,
    per_image_standardization_image,
    per_image_standardization_uint8,
    per_image_standardization_batch,
    per_image_standardization_constant_image,
    total_variation_image,
    total_variation_batch,
    image_gradients,
    sobel_edges,
    psnr,
    psnr_uint8,
    psnr_identical,
);

/// The cases of these ops without a test of their own, every one before
/// failing.
#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}

/// Bad arguments are errors, never panics.
#[test]
fn bad_arguments_are_errors() {
    let image = Image::F32(ArrayD::zeros(IxDyn(&[5, 7, 3])));
    let tiny = Image::F32(ArrayD::zeros(IxDyn(&[1, 1, 7, 3])));
    assert!(adjust::adjust_gamma(&image, -1.0, 1.0).is_err());
    assert!(adjust::adjust_contrast(&Image::F32(ArrayD::zeros(IxDyn(&[3]))), 2.0).is_err());
    assert!(measures::image_gradients(&image).is_err()); // 3-D: TF wants 4-D
    assert!(measures::sobel_edges(&tiny).is_err()); // REFLECT needs 2 rows
    let u8 = Image::U8(ArrayD::zeros(IxDyn(&[5, 7, 3])));
    assert!(measures::psnr(&image, &u8, 1.0).is_err());
    assert!(measures::total_variation_grad(&image, &ArrayD::zeros(IxDyn(&[2]))).is_err());
}

/// `random_contrast` is `adjust_contrast` by `lower + u·(upper − lower)`,
/// on the golden contrast case's image; its argument checks are TF's.
#[test]
fn random_contrast_is_adjust_contrast_of_its_draw() {
    let case = case_of(OPS, "adjust_contrast_0");
    let image = image_of(&case["inputs"]["image"]);
    let mut draw = || 0.25f32;
    let got = specc_image::random::random_contrast(&image, 0.5, 2.5, &mut draw).expect("contrast");
    let want = adjust::adjust_contrast(&image, 0.5 + 0.25 * 2.0).expect("contrast");
    assert_eq!(got, want);
    assert!(specc_image::random::random_contrast(&image, 2.0, 1.0, &mut draw).is_err());
    assert!(specc_image::random::random_contrast(&image, -1.0, 1.0, &mut draw).is_err());
}

/// `random_hue` and `random_saturation` are the adjustments by their draw,
/// on the golden hue case's image; their argument checks are TF's.
#[test]
fn random_hue_and_saturation_are_the_adjustments_of_their_draw() {
    let case = case_of(OPS, "adjust_hue_0");
    let image = image_of(&case["inputs"]["image"]);
    let mut draw = || 0.75f32;
    let got = specc_image::random::random_hue(&image, 0.4, &mut draw).expect("hue");
    assert_eq!(
        got,
        adjust::adjust_hue(&image, -0.4 + 0.75 * 0.8).expect("hue")
    );
    let got =
        specc_image::random::random_saturation(&image, 0.5, 1.5, &mut draw).expect("saturation");
    assert_eq!(
        got,
        adjust::adjust_saturation(&image, 0.5 + 0.75).expect("saturation")
    );
    assert!(specc_image::random::random_hue(&image, 0.6, &mut draw).is_err());
    assert!(specc_image::random::random_saturation(&image, 1.0, 1.0, &mut draw).is_err());
    assert!(adjust::adjust_hue(&image, 1.5).is_err());
}
