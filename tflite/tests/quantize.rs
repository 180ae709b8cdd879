//! The arithmetic of `specc_tflite::quantize` against numbers computed
//! here by hand, and the int8 and hybrid kernels on small models built in
//! the test: per-channel weight scales, nudged zero points, bias scales,
//! quantized multipliers, the rounding of `MultiplyByQuantizedMultiplier`
//! (single and double rounding), the hybrid kernels' input quantization
//! (as LiteRT's x86 build computes it),
//! the fixed-point int8 softmax.

use ndarray::{ArrayD, IxDyn};
use specc_tflite::model::Quantization;
use specc_tflite::quantize::*;
use specc_tflite::{
    ActivationFunctionType, BuiltinOperator, BuiltinOptions, Interpreter, ModelBuilder, TensorType,
    Value,
};

#[test]
fn per_channel_weights_scale_each_row_by_its_largest_magnitude() {
    // Two channels: max |w| = 2.54 and 0.127.
    let w = [1.27, -2.54, 0.5, 0.127, -0.0635, 0.0];
    let (scales, q) = symmetric_per_channel(&w, 2);
    assert_eq!(scales, vec![2.54 / 127.0, 0.127 / 127.0]);
    // 1.27 / 0.02 = 63.5 rounds away from zero to 64; 0.5 / 0.02 = 25.
    assert_eq!(q, vec![64, -127, 25, 127, -64, 0]);
    // A channel of zeros: scale 1, zeros.
    let (s, q) = symmetric_per_channel(&[0.0, 0.0], 1);
    assert_eq!((s, q), (vec![1.0], vec![0, 0]));
}

#[test]
fn asymmetric_params_widen_to_zero_and_nudge_the_zero_point() {
    // [0, 1]: scale 1/255, zero point -128 (0 is qmin).
    let (s, zp) = asymmetric_params(0.0, 1.0);
    assert_eq!((s, zp), ((1.0f64 / 255.0) as f32, -128));
    // [-1, 3]: scale 4/255, zp = -128 + 1/(4/255) = -64.25 -> -64.
    let (s, zp) = asymmetric_params(-1.0, 3.0);
    assert_eq!((s, zp), ((4.0f64 / 255.0) as f32, -64));
    // [2, 5] widens to [0, 5]; [-3, -1] to [-3, 0] (zp at qmax).
    assert_eq!(asymmetric_params(2.0, 5.0), ((5.0f64 / 255.0) as f32, -128));
    assert_eq!(
        asymmetric_params(-3.0, -1.0),
        ((3.0f64 / 255.0) as f32, 127)
    );
    // All zeros.
    assert_eq!(asymmetric_params(0.0, 0.0), (1.0, 0));
}

#[test]
fn quantize_and_dequantize_values() {
    assert_eq!(quantize_value(0.5, 0.25, 3), 5);
    // -0.375 / 0.25 = -1.5 rounds away from zero: -2 + 3 = 1.
    assert_eq!(quantize_value(-0.375, 0.25, 3), 1);
    assert_eq!(quantize_value(100.0, 0.25, 3), 127);
    assert_eq!(quantize_value(-100.0, 0.25, 3), -128);
    assert_eq!(dequantize_value(5, 0.25, 3), 0.5);
}

#[test]
fn bias_scale_is_input_scale_times_weight_scale() {
    let (scales, q) = quantize_bias(&[0.5, -0.3], 0.5, &[0.01, 0.002]);
    assert_eq!(scales, vec![0.5f32 * 0.01, 0.5f32 * 0.002]);
    // 0.5 / 0.005 = 100; -0.3 / 0.001 = -300.
    assert_eq!(q, vec![100, -300]);
}

#[test]
fn quantized_multiplier_is_q31_and_shift() {
    assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
    assert_eq!(quantize_multiplier(0.25), (1 << 30, -1));
    assert_eq!(quantize_multiplier(3.0), (3 << 29, 2));
    assert_eq!(quantize_multiplier(0.0), (0, 0));
    // 0.75 * 2^-10: q = 0.75 -> 0.75 * 2^31.
    assert_eq!(quantize_multiplier(0.75 / 1024.0), (3 << 29, -10));
    // A multiplier just below 1 rounds up to 2^31 and is renormalized.
    assert_eq!(quantize_multiplier(1.0 - 1e-12), (1 << 30, 1));
}

#[test]
fn multiply_by_quantized_multiplier_rounds_once_or_twice() {
    let (m, s) = quantize_multiplier(0.25);
    assert_eq!(multiply_by_quantized_multiplier(100, m, s), 25);
    // 6 * 0.25 = 1.5: halves up (single rounding), away from zero (double).
    assert_eq!(multiply_by_quantized_multiplier(6, m, s), 2);
    assert_eq!(multiply_by_quantized_multiplier(-6, m, s), -1);
    assert_eq!(multiply_double_rounding(6, m, s), 2);
    assert_eq!(multiply_double_rounding(-6, m, s), -2);
    // 2^30 * 0.5^... a multiplier above 1 shifts left.
    let (m, s) = quantize_multiplier(3.0);
    assert_eq!(multiply_by_quantized_multiplier(7, m, s), 21);
    assert_eq!(multiply_double_rounding(7, m, s), 21);
    assert_eq!(
        saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN),
        i32::MAX
    );
    assert_eq!(rounding_divide_by_pot(5, 1), 3);
    assert_eq!(rounding_divide_by_pot(-5, 1), -3);
}

#[test]
fn hybrid_rows_quantize_asymmetrically() {
    let mut q = [0i8; 3];
    // [-1, 0, 3]: scale 4/255; zp from min -64.25 (error 128 + 63.75) vs
    // from max 127 - 191.25 = -64.25 (error 127 + 191.25): from min, -64.
    let (s, zp) = asymmetric_quantize_row(&[-1.0, 0.0, 3.0], &mut q);
    assert_eq!((s, zp), ((4.0f64 / 255.0) as f32, -64));
    // -1 * 63.75 - 64 = -127.75 -> -128; 3 * 63.75 - 64 = 127.25 -> 127.
    assert_eq!(q, [-128, -64, 127]);
    let (s, zp) = asymmetric_quantize_row(&[0.0, 0.0, 0.0], &mut q);
    assert_eq!((s, zp, q), (1.0, 0, [0, 0, 0]));
}

/// LiteRT's x86 build compiles the NEON versions of the hybrid kernels'
/// input quantization (through `NEON_2_SSE`): the range's width subtracted
/// in f32, and the values of the row's first multiple of 8 rounded as
/// `x ± 0.5` in f32, truncated.
#[test]
fn hybrid_quantization_is_litert_x86_builds() {
    // [-0.518, 2.851]: the width in f32, divided in f64, is one ulp below
    // the width subtracted in f64.
    let mut q = [0i8; 2];
    let (s, _) = asymmetric_quantize_row(&[-0.518, 2.851], &mut q);
    assert_eq!(s, (f64::from(2.851f32 - -0.518f32) / 255.0) as f32);
    assert_ne!(
        s,
        ((f64::from(2.851f32) - f64::from(-0.518f32)) / 255.0) as f32
    );
    // 0.5 - 2^-25: + 0.5 ties to 1.0 in f32, so a vector lane rounds it to
    // 1; past the first 8 values it rounds half away from zero, to 0.
    let x = 0.5f32 - f32::EPSILON / 4.0;
    assert_eq!(round_vector_lane(x), 1);
    assert_eq!(round_vector_lane(-x), -1);
    assert_eq!((round_vector_lane(2.5), round_vector_lane(-2.5)), (3, -3));
    assert_eq!(round_half_away(f64::from(x)), 0.0);
    // [255, x, 0, .., x]: scale 1, zero point -128 (from the minimum 0).
    let mut row = [0.0f32; 9];
    (row[0], row[1], row[8]) = (255.0, x, x);
    let mut q = [0i8; 9];
    assert_eq!(asymmetric_quantize_row(&row, &mut q), (1.0, -128));
    assert_eq!((q[0], q[1], q[2], q[8]), (127, -127, -128, -128));
    // Symmetric: [127, x, -x, 0, .., x]: scale 127 / 127 = 1.
    (row[0], row[2]) = (127.0, -x);
    assert_eq!(symmetric_quantize_row(&row, &mut q), 1.0);
    assert_eq!((q[0], q[1], q[2], q[3], q[8]), (127, 1, -1, 0, 0));
    // Symmetric: range 3, scale 3/127, values round(x · 127/3) in [-127, 127].
    let mut q = [0i8; 4];
    let s = symmetric_quantize_row(&[-1.0, 0.0, 3.0, 0.5], &mut q);
    assert_eq!((s, q), (3.0 / 127.0, [-42, 0, 127, 21]));
    let s = symmetric_quantize_row(&[0.0; 4], &mut q);
    assert_eq!((s, q), (1.0, [0; 4]));
}

fn quant(scale: Vec<f32>, zp: Vec<i64>) -> Quantization {
    Quantization {
        scale,
        zero_point: zp,
        ..Quantization::default()
    }
}

#[test]
fn int8_fully_connected_follows_the_integer_kernel() {
    // x (float) -> QUANTIZE (scale 0.5, zp -1) -> FC (w per channel, bias
    // int32) -> int8 (scale 0.25, zp 2) -> DEQUANTIZE.
    let mut b = ModelBuilder::new();
    let x = b.tensor("x", TensorType::Float32, &[-1, 2]);
    let xq = b.quantized_tensor("xq", TensorType::Int8, &[-1, 2], quant(vec![0.5], vec![-1]));
    let w = b.constant(
        "w",
        TensorType::Int8,
        &[2, 2],
        [10i8, -20, 3, 4].iter().map(|&v| v as u8).collect(),
        Some(quant(vec![0.1, 0.01], vec![0, 0])),
    );
    let bias = b.constant(
        "b",
        TensorType::Int32,
        &[2],
        specc_tflite::model::i32_bytes(&[2, -100]),
        Some(quant(vec![0.05, 0.005], vec![0, 0])),
    );
    let yq = b.quantized_tensor("yq", TensorType::Int8, &[-1, 2], quant(vec![0.25], vec![2]));
    let y = b.tensor("y", TensorType::Float32, &[-1, 2]);
    b.operator(BuiltinOperator::Quantize, &[x], &[xq], BuiltinOptions::None);
    b.operator_version(
        BuiltinOperator::FullyConnected,
        4,
        &[xq, w, bias],
        &[yq],
        BuiltinOptions::FullyConnected {
            fused_activation_function: ActivationFunctionType::None,
            keep_num_dims: false,
            asymmetric_quantize_inputs: false,
        },
    );
    b.operator_version(
        BuiltinOperator::Dequantize,
        2,
        &[yq],
        &[y],
        BuiltinOptions::None,
    );
    let model = b.finish(&[("x".into(), x)], &[("y".into(), y)]);
    let input = ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![1.0f32, -2.0]).unwrap();
    let out = Interpreter::new(&model)
        .unwrap()
        .invoke(vec![Value::F32(input)])
        .unwrap();
    // xq = [1/0.5 - 1, -2/0.5 - 1] = [1, -5]; x - zp = [2, -4].
    // channel 0: 10*2 + -20*-4 = 100, + 2 = 102; multiplier 0.5*0.1/0.25 =
    //   0.2: 20.4 -> 20, + zp 2 = 22 -> 0.25 * 20 = 5.
    // channel 1: 3*2 + 4*-4 = -10, - 100 = -110; multiplier 0.02: -2.2 -> -2,
    //   + 2 = 0 -> 0.25 * -2 = -0.5.
    let Value::F32(y) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(y.as_slice().unwrap(), &[5.0, -0.5]);
}

#[test]
fn hybrid_fully_connected_scales_by_row_and_channel() {
    let mut b = ModelBuilder::new();
    let x = b.tensor("x", TensorType::Float32, &[-1, 2]);
    let w = b.constant(
        "w",
        TensorType::Int8,
        &[1, 2],
        [127i8, -64].iter().map(|&v| v as u8).collect(),
        Some(quant(vec![0.01], vec![0])),
    );
    let bias = b.constant_f32("b", &[1], &[0.5]);
    let y = b.tensor("y", TensorType::Float32, &[-1, 1]);
    b.operator_version(
        BuiltinOperator::FullyConnected,
        12,
        &[x, w, bias],
        &[y],
        BuiltinOptions::FullyConnected {
            fused_activation_function: ActivationFunctionType::None,
            keep_num_dims: false,
            asymmetric_quantize_inputs: true,
        },
    );
    let model = b.finish(&[("x".into(), x)], &[("y".into(), y)]);
    // Row [-1, 3]: q = [-128, 127], zp -64, scale 4/255 (see above).
    let input = ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![-1.0f32, 3.0]).unwrap();
    let out = Interpreter::new(&model)
        .unwrap()
        .invoke(vec![Value::F32(input)])
        .unwrap();
    let dot = 127 * -128 + -64 * 127 - (127 - 64) * -64;
    let scale = (4.0f64 / 255.0) as f32 * 0.01f32;
    let Value::F32(y) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(y.as_slice().unwrap(), &[0.5 + dot as f32 * scale]);
}

#[test]
fn int8_softmax_is_tflite_fixed_point() {
    // scale 0.1, beta 1: multiplier 0.1 * 2^26 as Q31 with a left shift.
    let params = softmax_params(1.0, 0.1);
    let (m, shift) = quantize_multiplier(0.1 * (1u64 << 26) as f64);
    assert_eq!((params.0, params.1), (m, shift));
    assert_eq!(shift, 23);
    // diff_min = -floor(31 * 2^26 / 2^23) = -248.
    assert_eq!(params.2, -248);
    let mut out = [0i8; 4];
    // Equal inputs: 1/4 each, 64 steps of 1/256 above -128.
    softmax_row_int8(&[5, 5, 5, 5], &mut out, params);
    assert_eq!(out, [-64; 4]);
    let mut out = [0i8; 2];
    softmax_row_int8(&[9, 9], &mut out, params);
    assert_eq!(out, [0, 0]);
    // A difference of 255 steps (25.5) is below diff_min: exactly 0.
    softmax_row_int8(&[127, -128], &mut out, params);
    assert_eq!(out, [127, -128]);
    // exp(-1) / (1 + exp(-1)) = 0.26894 -> 68.85 steps -> -59; the other
    // 0.73106 -> 187.15 -> 59.
    softmax_row_int8(&[0, 10], &mut out, params);
    assert_eq!(out, [-59, 59]);
    assert_eq!(exp_on_negative_values(0, 5), i32::MAX);
    // exp(-1) in Q0.31 (1 is 2^26 with 5 integer bits).
    let e = exp_on_negative_values(-(1 << 26), 5);
    assert!(
        (f64::from(e) / 2f64.powi(31) - (-1f64).exp()).abs() < 1e-6,
        "{e}"
    );
}
