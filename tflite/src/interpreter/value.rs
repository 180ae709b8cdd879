//! [`Value`]: a tensor of one of the element types the interpreter's kernels
//! use, and its conversions, among them the ones at a model's boundary
//! ([`Value::from_f32`], [`Value::dequantized`]): float values given for
//! an `INT8` or `UINT8` input are quantized with its scale and zero point
//! (TFLite's QUANTIZE), and an `INT8` or `UINT8` output is dequantized.

use ndarray::ArrayD;

use crate::kernels::int8;
use crate::model::Tensor;
use crate::schema::TensorType;

type Result<T> = std::result::Result<T, String>;

/// A tensor value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    F32(ArrayD<f32>),
    I8(ArrayD<i8>),
    U8(ArrayD<u8>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    Bool(ArrayD<bool>),
    /// A STRING tensor: each element its bytes.
    Str(ArrayD<Vec<u8>>),
}

impl Value {
    pub fn shape(&self) -> &[usize] {
        match self {
            Value::F32(a) => a.shape(),
            Value::I8(a) => a.shape(),
            Value::U8(a) => a.shape(),
            Value::I32(a) => a.shape(),
            Value::I64(a) => a.shape(),
            Value::Bool(a) => a.shape(),
            Value::Str(a) => a.shape(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::F32(_) => "FLOAT32",
            Value::I8(_) => "INT8",
            Value::U8(_) => "UINT8",
            Value::I32(_) => "INT32",
            Value::I64(_) => "INT64",
            Value::Bool(_) => "BOOL",
            Value::Str(_) => "STRING",
        }
    }

    /// The values as f32 (integers and booleans converted; int8 and uint8
    /// values as the integers, not dequantized: [`Value::dequantized`];
    /// strings, which have no number, as NaN: no kernel takes a string
    /// as a number, and `specc predict` refuses a STRING output).
    pub fn to_f32(&self) -> ArrayD<f32> {
        match self {
            Value::F32(a) => a.clone(),
            Value::I8(a) => a.mapv(f32::from),
            Value::U8(a) => a.mapv(f32::from),
            Value::I32(a) => a.mapv(|v| v as f32),
            Value::I64(a) => a.mapv(|v| v as f32),
            Value::Bool(a) => a.mapv(|v| if v { 1.0 } else { 0.0 }),
            Value::Str(a) => a.map(|_| f32::NAN),
        }
    }

    /// Float values `x` given for the model input `t`: as they are for a
    /// `FLOAT32` input; quantized with its scale and zero point for an
    /// `INT8` or `UINT8` one (TFLite's QUANTIZE: `round(x / scale) +
    /// zero_point`, half away from zero, saturated); for an `INT32` one the
    /// integers they must be.
    pub fn from_f32(x: ArrayD<f32>, t: &Tensor) -> Result<Value> {
        match t.tensor_type {
            TensorType::Float32 => Ok(Value::F32(x)),
            TensorType::Int8 => Ok(Value::I8(int8::quantize(&x, t)?)),
            TensorType::Uint8 => Ok(Value::U8(int8::quantize_uint8(&x, t)?)),
            TensorType::Int32 => {
                if let Some(v) = x.iter().find(|v| v.fract() != 0.0 || !v.is_finite()) {
                    return Err(format!(
                        "input `{}` is INT32, but a value given for it is {v}",
                        t.name
                    ));
                }
                Ok(Value::I32(x.mapv(|v| v as i32)))
            }
            other => Err(format!(
                "input `{}` is {other}; give it with `invoke`",
                t.name
            )),
        }
    }

    /// The values of the model output `t` as f32: an `INT8` or `UINT8`
    /// output with a scale dequantized (`scale * (q - zero_point)`, as
    /// TFLite's DEQUANTIZE), any other as [`Value::to_f32`].
    pub fn dequantized(&self, t: &Tensor) -> Result<ArrayD<f32>> {
        let quantized = t.quantization.as_ref().is_some_and(|q| !q.scale.is_empty());
        match self {
            Value::I8(a) if quantized => int8::dequantize(a, t),
            Value::U8(a) if quantized => int8::dequantize_uint8(a, t),
            Value::Str(_) => Err(format!("output `{}` is STRING, not a number", t.name)),
            v => Ok(v.to_f32()),
        }
    }

    pub(crate) fn f32(&self) -> Result<&ArrayD<f32>> {
        match self {
            Value::F32(a) => Ok(a),
            v => Err(format!("expected a FLOAT32 tensor, got {}", v.type_name())),
        }
    }

    /// Integer values (indices, axes, shapes) as i64.
    pub(crate) fn ints(&self) -> Result<Vec<i64>> {
        match self {
            Value::I32(a) => Ok(a.iter().map(|&v| v as i64).collect()),
            Value::I64(a) => Ok(a.iter().copied().collect()),
            v => Err(format!(
                "expected an INT32 or INT64 tensor, got {}",
                v.type_name()
            )),
        }
    }
}
