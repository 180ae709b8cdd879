//! The int8 convolution and pooling kernels (`specc_tflite::kernels::conv_int8`)
//! on cases computed here by hand: TFLite's per-channel multipliers from the
//! tensors' scales, the requantization's double rounding (a case where
//! rounding once would give another value), depthwise channel order,
//! average-pool rounding of positive and negative sums, the clamp of a
//! fused activation, padding with the zero point, and per-axis weight
//! quantization of a depthwise filter.

use crate::common;

use common::{a, int8_tensor, VALID};
use specc_tflite::kernels::conv::Geometry;
use specc_tflite::kernels::conv_int8::*;
use specc_tflite::quantize::{quantize_multiplier, symmetric_per_axis, symmetric_per_channel};
use specc_tflite::{ActivationFunctionType, Padding};

fn plain(multipliers: Vec<(i32, i32)>, input_zero_point: i32) -> ConvQuant {
    ConvQuant {
        input_zero_point,
        output_zero_point: 0,
        multipliers,
        activation: (-128, 127),
    }
}

#[test]
fn conv_multipliers_come_from_the_scales_per_output_channel() {
    let x = int8_tensor("x", vec![0.5], vec![1], 0);
    let w = int8_tensor("w", vec![0.25, 0.125], vec![0, 0], 0);
    let y = int8_tensor("y", vec![0.25], vec![-3], 0);
    let q = ConvQuant::new(&x, &w, &y, 0, 2, ActivationFunctionType::Relu).unwrap();
    // 0.5 * 0.25 / 0.25 = 0.5 and 0.25: Q31 2^30 with shifts 0 and -1.
    assert_eq!(q.multipliers, vec![(1 << 30, 0), (1 << 30, -1)]);
    assert_eq!(quantize_multiplier(0.25), (1 << 30, -1));
    assert_eq!((q.input_zero_point, q.output_zero_point), (1, -3));
    // RELU clamps at the output's zero point (the real 0).
    assert_eq!(q.activation, (-3, 127));
    // Scales along another dimension than the operator's, a zero point in
    // the filter: errors.
    assert!(ConvQuant::new(&x, &w, &y, 3, 2, ActivationFunctionType::None).is_err());
    let asym = int8_tensor("w", vec![0.25, 0.125], vec![0, 1], 0);
    assert!(ConvQuant::new(&x, &asym, &y, 0, 2, ActivationFunctionType::None).is_err());
    // One scale serves every channel.
    let one = int8_tensor("w", vec![0.25], vec![0], 0);
    let q = ConvQuant::new(&x, &one, &y, 0, 3, ActivationFunctionType::None).unwrap();
    assert_eq!(q.multipliers, vec![(1 << 30, 0); 3]);
}

#[test]
fn conv_accumulates_input_minus_zero_point_then_rounds_twice() {
    // 2x2 image, input zero point 1: x - 1 = [2, 4, 6, 8]; one 2x2 filter
    // [1, 2, 3, 4] and bias 5: 2 + 8 + 18 + 32 + 5 = 65; times 0.5 = 32.5,
    // rounded half away: 33.
    let x = a(&[1, 2, 2, 1], &[3i8, 5, 7, 9]);
    let f = a(&[1, 2, 2, 1], &[1i8, 2, 3, 4]);
    let b = a(&[1], &[5i32]);
    let y = conv2d_int8(&x, &f, Some(&b), VALID, &plain(vec![(1 << 30, 0)], 1)).unwrap();
    assert_eq!(y, a(&[1, 1, 1, 1], &[33i8]));
    // 1x1 filter of 1 on x = 5 with multiplier 0.25 (2^30, shift -1): the
    // true value 1.25. gemmlowp's doubling high multiply gives 2.5 -> 3,
    // then the rounding shift 1.5 -> 2: TFLite's common
    // MultiplyByQuantizedMultiplier (LiteRT's convolutions) gives 2, where
    // rounding once would give 1. The second channel (0.5) gives 3.
    let x = a(&[1, 1, 1, 1], &[5i8]);
    let f = a(&[2, 1, 1, 1], &[1i8, 1]);
    let q = plain(vec![(1 << 30, -1), (1 << 30, 0)], 0);
    let y = conv2d_int8(&x, &f, None, VALID, &q).unwrap();
    assert_eq!(y, a(&[1, 1, 1, 2], &[2i8, 3]));
    // The output zero point is added, then the activation clamps.
    let q = ConvQuant {
        output_zero_point: 120,
        activation: (-128, 122),
        ..q
    };
    let y = conv2d_int8(&x, &f, None, VALID, &q).unwrap();
    assert_eq!(y, a(&[1, 1, 1, 2], &[122i8, 122]));
}

#[test]
fn conv_same_padding_omits_the_taps_outside_the_image() {
    // 1x2 image [3, 5], zero point 3: x - zp = [0, 2]. A 1x3 filter
    // [1, 1, 1] SAME: out[0] = pad + 0 + 2 = 2, out[1] = 0 + 2 + pad = 2 —
    // the padding is the real 0, contributing nothing (not -zp).
    let x = a(&[1, 1, 2, 1], &[3i8, 5]);
    let f = a(&[1, 1, 3, 1], &[1i8, 1, 1]);
    let g = Geometry {
        padding: Padding::Same,
        ..VALID
    };
    // Multiplier 1 (2^30 with shift 1).
    let y = conv2d_int8(&x, &f, None, g, &plain(vec![(1 << 30, 1)], 3)).unwrap();
    assert_eq!(y, a(&[1, 1, 2, 1], &[2i8, 2]));
}

#[test]
fn depthwise_output_channel_c_times_multiplier_plus_m_reads_channel_c() {
    // 1x2 image of 2 channels, zero point 1: pixel 0 (2, 4), pixel 1 (6, 8).
    // Filter [1, 1, 2, 4], multiplier 2: tap 0 [1, 2, 3, 4], tap 1
    // [5, 6, 7, 8]. Output channel 0 (input 0): 1*2 + 5*6 = 32; 1 (input
    // 0): 2*2 + 6*6 = 40; 2 (input 1): 3*4 + 7*8 = 68; 3: 4*4 + 8*8 = 80.
    // Bias [0, 1, 2, 3], times 0.5: 16, 20.5 -> 21, 35, 41.5 -> 42.
    let x = a(&[1, 1, 2, 2], &[3i8, 5, 7, 9]);
    let f = a(&[1, 1, 2, 4], &[1i8, 2, 3, 4, 5, 6, 7, 8]);
    let b = a(&[4], &[0i32, 1, 2, 3]);
    let q = plain(vec![(1 << 30, 0); 4], 1);
    let y = depthwise_conv2d_int8(&x, &f, Some(&b), 2, VALID, &q).unwrap();
    assert_eq!(y, a(&[1, 1, 1, 4], &[16i8, 21, 35, 42]));
    // A filter that is not [1, KH, KW, C * multiplier]: an error.
    assert!(depthwise_conv2d_int8(&x, &f, Some(&b), 3, VALID, &q).is_err());
}

#[test]
fn average_pool_rounds_half_away_from_zero_as_tflite_divides() {
    // 1x2 windows, stride 1, over [1, 2, -1, -2, 0, 0] (raw values, input
    // and output sharing their parameters): sums 3, 1, -3, -2, 0 ->
    // (3 + 1) / 2 = 2, (1 + 1) / 2 = 1, (-3 - 1) / 2 = -2, (-2 - 1) / 2 =
    // -1 (C truncates), (0 - 1) / 2 = 0.
    let x = a(&[1, 1, 6, 1], &[1i8, 2, -1, -2, 0, 0]);
    let y = average_pool_int8(&x, [1, 2], VALID, (-128, 127)).unwrap();
    assert_eq!(y, a(&[1, 1, 5, 1], &[2i8, 1, -2, -1, 0]));
    // 3 cells: 7 / 3 -> (7 + 1) / 3 = 2; -8 / 3 -> (-8 - 1) / 3 = -3.
    let x = a(&[1, 1, 6, 1], &[2i8, 2, 3, -2, -3, -3]);
    let g = Geometry {
        strides: [1, 3],
        ..VALID
    };
    let y = average_pool_int8(&x, [1, 3], g, (-128, 127)).unwrap();
    assert_eq!(y, a(&[1, 1, 2, 1], &[2i8, -3]));
}

#[test]
fn max_pool_takes_the_largest_then_clamps_to_the_activation() {
    let x = a(&[1, 1, 4, 1], &[-5i8, -7, 9, 100]);
    let y = max_pool_int8(&x, [1, 2], VALID, (-128, 127)).unwrap();
    assert_eq!(y, a(&[1, 1, 3, 1], &[-5i8, 9, 100]));
    // A fused RELU6 with zero point -3 and 6.0 at 90: [-3, 90].
    let y = max_pool_int8(&x, [1, 2], VALID, (-3, 90)).unwrap();
    assert_eq!(y, a(&[1, 1, 3, 1], &[-3i8, 9, 90]));
}

#[test]
fn pad_fills_with_the_zero_point() {
    let x = a(&[1, 1, 1, 1], &[7i8]);
    let y = pad_int8(&x, &[0, 0, 1, 0, 0, 1, 0, 0], -3).unwrap();
    assert_eq!(y, a(&[1, 2, 2, 1], &[-3i8, -3, 7, -3]));
    assert!(pad_int8(&x, &[0, 0, -1, 0, 0, 0, 0, 0], 0).is_err());
    assert!(pad_int8(&x, &[0, 0], 0).is_err());
}

#[test]
fn depthwise_filters_quantize_per_channel_along_their_last_dimension() {
    // [1, 1, 2, 2]: channel 0 is [1.27, -2.54], channel 1 [0.127, -0.0635]
    // (interleaved along the last dimension): the numbers of the same
    // channels quantized as rows.
    let w = [1.27, 0.127, -2.54, -0.0635];
    let (scales, q) = symmetric_per_axis(&w, &[1, 1, 2, 2], 3).unwrap();
    let (row_scales, rows) = symmetric_per_channel(&[1.27, -2.54, 0.127, -0.0635], 2);
    assert_eq!(scales, row_scales);
    assert_eq!(q, vec![rows[0], rows[2], rows[1], rows[3]]);
    assert_eq!(q, vec![64, 127, -127, -64]);
    // Along dimension 0 it is `symmetric_per_channel` itself.
    let (s0, q0) = symmetric_per_axis(&w, &[2, 1, 1, 2], 0).unwrap();
    assert_eq!((s0, q0), symmetric_per_channel(&w, 2));
    // No such dimension, or values that do not fit the shape.
    assert!(symmetric_per_axis(&w, &[2, 2], 2).is_none());
    assert!(symmetric_per_axis(&w, &[3], 0).is_none());
}
