//! `extract_glimpse` (v2 and v1), Soft-NMS (`non_max_suppression_with_scores`),
//! `combined_non_max_suppression` and `draw_bounding_boxes` (v2 with colours,
//! v1 with TF's colour table) against every case of `golden/images.json` for
//! them: one test per case (looked up by name at test time), plus one test of
//! any case of these ops the list lacks. Indices, classes, counts, glimpses
//! and drawn pixels are exact (they move values); scores and boxes within
//! 1e-6 relative (Soft-NMS multiplies float32 decays in TF's order).

use crate::support;

use specc_image::detection::{combined_non_max_suppression, non_max_suppression_with_scores};
use specc_image::draw::draw_bounding_boxes;
use specc_image::glimpse::{extract_glimpse, GlimpseNoise, GlimpseOptions};
use support::{assert_close, number, tensor};

const OPS: &[&str] = support::ops::DETECTION_DRAW;

fn f32s(v: &serde_json::Value) -> (Vec<usize>, Vec<f32>) {
    let (_, shape, values) = tensor(v);
    (shape, values.iter().map(|&x| x as f32).collect())
}

fn array(v: &serde_json::Value) -> ndarray::ArrayD<f32> {
    let (shape, values) = f32s(v);
    ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), values).expect("shape")
}

fn quads(values: &[f32]) -> Vec<[f32; 4]> {
    values
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

fn flag(args: &serde_json::Value, key: &str, default: bool) -> bool {
    args.get(key).and_then(|v| v.as_bool()).unwrap_or(default)
}

fn check(case: &serde_json::Value) {
    let name = case["name"].as_str().expect("name");
    let args = &case["args"];
    let inputs = &case["inputs"];
    let outputs = &case["outputs"];
    let op = case["op"].as_str().expect("op");
    match op {
        "tf.image.extract_glimpse" | "tf.compat.v1.image.extract_glimpse" => {
            let input = array(&inputs["input"]);
            let (_, off) = f32s(&inputs["offsets"]);
            let offsets: Vec<[f32; 2]> = off.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
            let size: Vec<usize> = args["size"]
                .as_array()
                .expect("size")
                .iter()
                .map(|v| v.as_u64().expect("a size") as usize)
                .collect();
            let v1 = op.starts_with("tf.compat.v1");
            let noise = args
                .get("noise")
                .and_then(|v| v.as_str())
                .map(|n| GlimpseNoise::from_name(n).expect("a noise name"))
                .unwrap_or(GlimpseNoise::Uniform);
            let options = GlimpseOptions {
                centered: flag(args, "centered", true),
                normalized: flag(args, "normalized", true),
                noise,
                version: if v1 { 1 } else { 2 },
            };
            // Random noise cannot give TF's numbers: only cases TF fills
            // with zeros, or whose glimpses lie inside the image, are recorded.
            let mut draws = || -> f32 { panic!("{name}: TF's case draws noise") };
            let got = extract_glimpse(&input, [size[0], size[1]], &offsets, options, &mut draws)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (_, want_shape, want) = tensor(&outputs["output"]);
            assert_eq!(got.shape(), &want_shape[..], "{name}: shape");
            let got: Vec<f64> = got.iter().map(|&x| f64::from(x)).collect();
            assert_close(name, &got, &want, true, 0.0);
        }
        "tf.image.non_max_suppression_with_scores" => {
            let (_, b) = f32s(&inputs["boxes"]);
            let (_, scores) = f32s(&inputs["scores"]);
            let (indices, got_scores) = non_max_suppression_with_scores(
                &quads(&b),
                &scores,
                args["max_output_size"].as_u64().expect("max_output_size") as usize,
                number(&args["iou_threshold"]) as f32,
                number(&args["score_threshold"]) as f32,
                number(&args["soft_nms_sigma"]) as f32,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (_, _, want_i) = tensor(&outputs["selected_indices"]);
            let (_, _, want_s) = tensor(&outputs["selected_scores"]);
            let gi: Vec<f64> = indices.iter().map(|&i| f64::from(i)).collect();
            assert_close(&format!("{name} indices"), &gi, &want_i, true, 0.0);
            let gs: Vec<f64> = got_scores.iter().map(|&s| f64::from(s)).collect();
            assert_close(&format!("{name} scores"), &gs, &want_s, false, 1e-6);
        }
        "tf.image.combined_non_max_suppression" => {
            let (bs, b) = f32s(&inputs["boxes"]);
            let (ss, s) = f32s(&inputs["scores"]);
            let (n, anchors, q, classes) = (bs[0], bs[1], bs[2], ss[2]);
            let mut want = Vec::new();
            for key in [
                "nmsed_boxes",
                "nmsed_scores",
                "nmsed_classes",
                "valid_detections",
            ] {
                want.push(tensor(&outputs[key]).2);
            }
            let mut got: Vec<Vec<f64>> = vec![Vec::new(); 4];
            for image in 0..n {
                let boxes: Vec<Vec<[f32; 4]>> = (0..anchors)
                    .map(|a| {
                        let at = (image * anchors + a) * q * 4;
                        quads(&b[at..at + q * 4])
                    })
                    .collect();
                let scores: Vec<Vec<f32>> = (0..anchors)
                    .map(|a| {
                        let at = (image * anchors + a) * classes;
                        s[at..at + classes].to_vec()
                    })
                    .collect();
                let r = combined_non_max_suppression(
                    &boxes,
                    &scores,
                    args["max_output_size_per_class"]
                        .as_u64()
                        .expect("per class") as usize,
                    args["max_total_size"].as_u64().expect("total") as usize,
                    number(&args["iou_threshold"]) as f32,
                    number(&args["score_threshold"]) as f32,
                    flag(args, "pad_per_class", false),
                    flag(args, "clip_boxes", true),
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                got[0].extend(r.boxes.iter().flatten().map(|&v| f64::from(v)));
                got[1].extend(r.scores.iter().map(|&v| f64::from(v)));
                got[2].extend(r.classes.iter().map(|&v| f64::from(v)));
                got[3].push(f64::from(r.valid_detections));
            }
            for (k, key) in ["boxes", "scores", "classes", "valid_detections"]
                .iter()
                .enumerate()
            {
                let exact = k >= 2;
                assert_close(&format!("{name} {key}"), &got[k], &want[k], exact, 1e-6);
            }
        }
        "tf.image.draw_bounding_boxes" | "tf.compat.v1.image.draw_bounding_boxes" => {
            let images = array(&inputs["images"]);
            let (bs, b) = f32s(&inputs["boxes"]);
            let boxes: Vec<Vec<[f32; 4]>> = b.chunks_exact(bs[1] * 4).map(quads).collect();
            let colors: Option<Vec<Vec<f32>>> = inputs.get("colors").map(|c| {
                let (cs, v) = f32s(c);
                v.chunks_exact(cs[1]).map(|r| r.to_vec()).collect()
            });
            let got = draw_bounding_boxes(&images, &boxes, colors.as_deref())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (_, want_shape, want) = tensor(&outputs["output"]);
            assert_eq!(got.shape(), &want_shape[..], "{name}: shape");
            let got: Vec<f64> = got.iter().map(|&x| f64::from(x)).collect();
            assert_close(name, &got, &want, true, 0.0);
        }
        other => panic!("no op {other}"),
    }
}

case_tests!(
    super::OPS, super::check;
    extract_glimpse_centered_normalized,
    extract_glimpse_centered_pixels,
    extract_glimpse_corner_normalized,
    extract_glimpse_corner_pixels,
    v1_extract_glimpse_inside,
    non_max_suppression_with_scores_soft_0,
    non_max_suppression_with_scores_soft_1,
    combined_non_max_suppression_shared_boxes,
    combined_non_max_suppression_per_class_boxes_pad_no_clip,
    draw_bounding_boxes,
    draw_bounding_boxes_v1_default_colors,
);

#[test]
fn every_other_case_of_these_ops_matches_tensorflow() {
    support::check_other_cases(OPS, NAMED, check);
}
