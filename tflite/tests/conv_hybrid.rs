//! The hybrid convolution kernels (`specc_tflite::kernels::conv_hybrid`:
//! int8 filters, float activations) on cases computed here by hand: one
//! asymmetric quantization per image, the taps outside the image adding
//! nothing, each LiteRT kernel's order of the float products (scales chosen
//! so that the other order gives other bits), the per-tensor CONV_2D's
//! symmetric quantization when every channel has one scale, depthwise
//! channel order, the transposed convolution's scatter, the scales a filter
//! must have, and the interpreter choosing these kernels (fused activation
//! included) for an INT8 filter under a float input.

use crate::common;

use common::{a, int8_tensor, VALID};
use specc_tflite::interpreter::{Interpreter, Value};
use specc_tflite::kernels::conv::Geometry;
use specc_tflite::kernels::conv_hybrid::*;
use specc_tflite::model::Quantization;
use specc_tflite::{
    ActivationFunctionType, BuiltinOperator, BuiltinOptions, ModelBuilder, Padding, TensorType,
};

/// The image `[-1, 0, 3, 0.5]` quantized asymmetrically: range [-1, 3],
/// scale 4/255, zero point -64 (see `tests/quantize.rs`); each value
/// `round(x · 63.75) - 64` less the zero point.
const IMAGE: [f32; 4] = [-1.0, 0.0, 3.0, 0.5];
const CENTRED: [i32; 4] = [-64, 0, 191, 32];

fn image_scale() -> f32 {
    (4.0f64 / 255.0) as f32
}

/// Two channels of a 2×2 filter: `[1, 2, 3, 4]` and `[-1, 0, 0, 1]`: sums
/// 637 and 96 over the image.
fn sums() -> [i32; 2] {
    let f = [[1, 2, 3, 4], [-1, 0, 0, 1]];
    f.map(|w| w.iter().zip(CENTRED).map(|(w, x)| w * x).sum())
}

/// Per-channel scales for which `(acc · s) · sf` and `acc · (s · sf)`
/// round apart, for both sums (checked below).
const SCALES: [f32; 2] = [0.009, 0.001];

#[test]
fn conv_scales_each_sum_by_its_channel_then_by_the_image() {
    assert_eq!(sums(), [637, 96]);
    let x = a(&[1, 2, 2, 1], &IMAGE);
    let f = a(&[2, 2, 2, 1], &[1i8, 2, 3, 4, -1, 0, 0, 1]);
    let b = a(&[2], &[0.001f32, -0.0005]);
    let y = conv2d_hybrid(&x, &f, &SCALES, Some(&b), VALID).unwrap();
    assert_eq!(y.shape(), [1, 1, 1, 2]);
    let sf = image_scale();
    for c in 0..2 {
        let acc = sums()[c] as f32;
        let want = acc * SCALES[c] * sf + b[c];
        // The other association gives other bits: the order is tested.
        assert_ne!(acc * (SCALES[c] * sf) + b[c], want);
        assert_eq!(y[[0, 0, 0, c]], want, "channel {c}");
    }
}

#[test]
fn conv_with_one_scale_quantizes_the_image_symmetrically() {
    // LiteRT's per-tensor kernel: scale 3/127 and values round(x · 127/3):
    // [-42, 0, 127, 21]; the image scale times the filter's, then the sum.
    let x = a(&[1, 2, 2, 1], &IMAGE);
    let f = a(&[2, 2, 2, 1], &[1i8, 2, 3, 4, -1, 0, 0, 1]);
    let b = a(&[2], &[0.25f32, -0.5]);
    let s = 0.009f32;
    let y = conv2d_hybrid(&x, &f, &[s, s], Some(&b), VALID).unwrap();
    let sf = (3.0f32 / 127.0) * s;
    assert_eq!(y[[0, 0, 0, 0]], (-42 + 3 * 127 + 4 * 21) as f32 * sf + 0.25);
    assert_eq!(y[[0, 0, 0, 1]], (42 + 21) as f32 * sf - 0.5);
}

#[test]
fn conv_same_padding_adds_nothing_for_taps_outside_the_image() {
    // A 1×3 window over [-1, 3] (centred [-64, 191], zero point -64): the
    // tap beside the image adds no `w · (0 − zero_point)`.
    let x = a(&[1, 1, 2, 1], &[-1.0f32, 3.0]);
    let f = a(&[2, 1, 3, 1], &[5i8, 7, 11, 1, 1, 1]);
    let g = Geometry {
        padding: Padding::Same,
        ..VALID
    };
    let err = conv2d_hybrid(&x, &f, &[0.5], None, g).unwrap_err();
    assert!(
        err.contains("1 filter scales for 2 output channels"),
        "{err}"
    );
    let s = [0.5f32, 0.25];
    let y = conv2d_hybrid(&x, &f, &s, None, g).unwrap();
    let sf = image_scale();
    let t = |acc: i32, c: usize| acc as f32 * s[c] * sf;
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        [
            t(7 * -64 + 11 * 191, 0),
            t(127, 1),
            t(5 * -64 + 7 * 191, 0),
            t(127, 1)
        ]
    );
}

#[test]
fn depthwise_scales_each_sum_by_the_product_of_the_scales() {
    // One input channel, multiplier 2: output channel m reads channel 0
    // with the filter [1, KH, KW, 2] (taps row-major, channels inner).
    let x = a(&[1, 2, 2, 1], &IMAGE);
    let f = a(&[1, 2, 2, 2], &[1i8, -1, 2, 0, 3, 0, 4, 1]);
    let b = a(&[2], &[0.001f32, -0.0005]);
    let y = depthwise_conv2d_hybrid(&x, &f, &SCALES, Some(&b), 2, VALID).unwrap();
    assert_eq!(y.shape(), [1, 1, 1, 2]);
    let sf = image_scale();
    for c in 0..2 {
        let acc = sums()[c] as f32;
        let want = acc * (SCALES[c] * sf) + b[c];
        assert_ne!(acc * SCALES[c] * sf + b[c], want);
        assert_eq!(y[[0, 0, 0, c]], want, "channel {c}");
    }
}

#[test]
fn depthwise_with_two_input_channels_keeps_each_channel_apart() {
    // Channels 0 and 1 of a 1×1 image, multiplier 1, 1×1 filter [2, 3]:
    // the image [-1, 3] quantizes to [-64, 191] less the zero point.
    let x = a(&[1, 1, 1, 2], &[-1.0f32, 3.0]);
    let f = a(&[1, 1, 1, 2], &[2i8, 3]);
    let y = depthwise_conv2d_hybrid(&x, &f, &[0.5, 0.5], None, 1, VALID).unwrap();
    let sf = image_scale();
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        [-128.0 * (0.5 * sf), 573.0 * (0.5 * sf)]
    );
}

#[test]
fn transpose_conv_scatters_each_input_in_order_then_adds_the_bias() {
    // Inputs [-1, 3] (centred [-64, 191]) through weights [5, -7] (one
    // channel, 1×2) to 3 outputs: the middle one sums two products, the
    // first input's first.
    let x = a(&[1, 1, 2, 1], &[-1.0f32, 3.0]);
    let w = a(&[1, 1, 2, 1], &[5i8, -7]);
    let b = a(&[1], &[0.125f32]);
    let s = 0.009f32;
    let y = transpose_conv_hybrid(&[1, 1, 3, 1], &w, &[s], &x, Some(&b), VALID).unwrap();
    let sf = image_scale();
    let t = |acc: i32| acc as f32 * s * sf;
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        [
            t(-64 * 5) + 0.125,
            (t(-64 * -7) + t(191 * 5)) + 0.125,
            t(191 * -7) + 0.125
        ]
    );
}

#[test]
fn filter_scales_are_one_per_channel_along_their_dimension() {
    let t = int8_tensor("f", vec![0.5, 0.25], vec![0, 0], 3);
    assert_eq!(filter_scales(&t, 3, 2, false).unwrap(), [0.5, 0.25]);
    // Along another dimension, or another count: refused.
    assert!(filter_scales(&t, 0, 2, true).is_err());
    assert!(filter_scales(&t, 3, 4, true).is_err());
    // One scale for all: CONV_2D and TRANSPOSE_CONV take it,
    // DEPTHWISE_CONV_2D does not (LiteRT's Prepare fails).
    let one = int8_tensor("f", vec![0.5], vec![0], 0);
    assert_eq!(filter_scales(&one, 0, 3, true).unwrap(), [0.5; 3]);
    assert!(filter_scales(&one, 3, 3, false).is_err());
    // Hybrid filters are symmetric.
    let err = filter_scales(&int8_tensor("f", vec![0.5], vec![1], 0), 0, 1, true).unwrap_err();
    assert!(err.contains("zero point"), "{err}");
}

#[test]
fn interpreter_runs_a_hybrid_conv_with_its_fused_activation() {
    let mut b = ModelBuilder::new();
    let x = b.tensor("x", TensorType::Float32, &[-1, 2, 2, 1]);
    let w = b.constant(
        "w",
        TensorType::Int8,
        &[2, 2, 2, 1],
        [1i8, 2, 3, 4, -1, 0, 0, 1]
            .iter()
            .map(|&v| v as u8)
            .collect(),
        Some(Quantization {
            scale: SCALES.to_vec(),
            zero_point: vec![0, 0],
            quantized_dimension: 0,
            ..Quantization::default()
        }),
    );
    let bias = b.constant_f32("b", &[2], &[0.25, -10.0]);
    let y = b.tensor("y", TensorType::Float32, &[-1, 1, 1, 2]);
    b.operator_version(
        BuiltinOperator::Conv2d,
        5,
        &[x, w, bias],
        &[y],
        BuiltinOptions::Conv2D {
            padding: Padding::Valid,
            stride_w: 1,
            stride_h: 1,
            fused_activation_function: ActivationFunctionType::Relu,
            dilation_w_factor: 1,
            dilation_h_factor: 1,
        },
    );
    let model = b.finish(&[("x".into(), x)], &[("y".into(), y)]);
    // Two images: the second, doubled, quantizes to the same integers with
    // twice the scale.
    let mut two = IMAGE.to_vec();
    two.extend(IMAGE.iter().map(|v| v * 2.0));
    let out = Interpreter::new(&model)
        .unwrap()
        .invoke(vec![Value::F32(a(&[2, 2, 2, 1], &two))])
        .unwrap();
    let Value::F32(y) = &out[0] else {
        panic!("{out:?}")
    };
    let sf = image_scale();
    let first = sums()[0] as f32 * SCALES[0] * sf + 0.25;
    let doubled = sums()[0] as f32 * SCALES[0] * (2.0 * sf) + 0.25;
    // Channel 1's bias -10 makes it negative: RELU clamps it to 0.
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        [first, 0.0, doubled, 0.0]
    );
}
