//! Shared by the kernel tests of `specc-tflite` (`tests/conv_int8.rs`,
//! `tests/conv_hybrid.rs`): arrays from literals, the unit window geometry
//! and int8 tensors with quantization parameters.

use ndarray::{ArrayD, IxDyn};
use specc_tflite::kernels::conv::Geometry;
use specc_tflite::model::{Quantization, Tensor};
use specc_tflite::{Padding, TensorType};

/// An array of `shape` holding `v` in row-major order.
pub fn a<T: Clone>(shape: &[usize], v: &[T]) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
}

/// VALID padding, strides and dilations 1.
pub const VALID: Geometry = Geometry {
    padding: Padding::Valid,
    strides: [1, 1],
    dilations: [1, 1],
};

/// An int8 tensor `name` (no shape, no data) quantized with `scale` and
/// `zero_point` along dimension `axis`.
pub fn int8_tensor(name: &str, scale: Vec<f32>, zero_point: Vec<i64>, axis: i32) -> Tensor {
    Tensor {
        name: name.into(),
        tensor_type: TensorType::Int8,
        shape: vec![],
        shape_signature: None,
        buffer: 0,
        quantization: Some(Quantization {
            scale,
            zero_point,
            quantized_dimension: axis,
            ..Quantization::default()
        }),
        is_variable: false,
    }
}
