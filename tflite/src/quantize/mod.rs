//! Int8 quantization as TF's converter and TFLite's reference kernels
//! compute it: the arithmetic the interpreter's int8 and hybrid kernels
//! use, and the post-training quantization of a float model
//! (`tf.lite.Optimize.DEFAULT`, `specc export --quantize`) that chooses its
//! numbers with the same functions.
//!
//! Owns, the arithmetic: choosing parameters (`params`:
//! [`symmetric_per_channel`], [`symmetric_per_axis`], [`asymmetric_params`],
//! [`quantize_bias`], [`round_half_away`]), the integer kernels'
//! fixed point (`fixed_point`: [`quantize_multiplier`],
//! [`multiply_by_quantized_multiplier`], [`multiply_double_rounding`], the
//! int8 softmax's), the hybrid kernels' input quantization (`rows`:
//! [`asymmetric_quantize_row`], [`symmetric_quantize_row`]). The model's
//! quantization: [`Calibration`] (`calibration`: activation ranges from the
//! float interpreter), [`quantize_dynamic`] (`dynamic_range`: int8 weights,
//! float activations, TFLite's hybrid kernels), [`quantize_int8`]
//! (`full_integer`: int8 activations from the calibrated ranges),
//! [`set_inference_types`] (`interface`: a full-integer model's inputs and
//! outputs `INT8` or `UINT8`, TF's `inference_input_type` and
//! `inference_output_type`), and the edits of a model they share
//! (`rewrite`).
//!
//! Invariants: rounding is TFLite's (`TfLiteRound`: half away from zero)
//! and every intermediate has TFLite's type (f32 where TFLite computes in
//! float, f64 where it computes in double), so the same inputs give the
//! same bits; a quantized model keeps the float model's signature (its
//! names; its inputs and outputs float unless [`set_inference_types`]
//! makes them integer), and its operators' versions are those TF's converter writes for the same
//! kernels.

mod calibration;
mod dynamic_range;
mod fixed_point;
mod full_integer;
mod interface;
mod params;
mod rewrite;
mod rows;
mod trained;

pub use calibration::Calibration;
pub use dynamic_range::{quantize_dynamic, MIN_ELEMENTS_FOR_WEIGHTS};
pub use fixed_point::{
    exp_on_negative_values, get_reciprocal, multiply_by_quantized_multiplier,
    multiply_double_rounding, multiply_single_rounding, quantize_multiplier,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot, softmax_params, softmax_row_int8,
    SOFTMAX_SCALED_DIFF_INTEGER_BITS,
};
pub use full_integer::{quantize_int8, COVERED};
pub use interface::{set_inference_types, InferenceType};
pub use params::{
    asymmetric_params, dequantize_int, dequantize_value, fake_quant_params, quantize_bias,
    quantize_value, quantize_value_uint8, round_half_away, symmetric_per_axis,
    symmetric_per_channel, QMAX, QMIN,
};
pub use rows::{asymmetric_quantize_row, round_vector_lane, symmetric_quantize_row};
pub use trained::trained_ranges;

type Result<T> = std::result::Result<T, String>;
