//! [`Value`]: a tensor of one of the element types the interpreter's kernels
//! use, and its conversions.

use ndarray::ArrayD;

type Result<T> = std::result::Result<T, String>;

/// A tensor value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    F32(ArrayD<f32>),
    I8(ArrayD<i8>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    Bool(ArrayD<bool>),
}

impl Value {
    pub fn shape(&self) -> &[usize] {
        match self {
            Value::F32(a) => a.shape(),
            Value::I8(a) => a.shape(),
            Value::I32(a) => a.shape(),
            Value::I64(a) => a.shape(),
            Value::Bool(a) => a.shape(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::F32(_) => "FLOAT32",
            Value::I8(_) => "INT8",
            Value::I32(_) => "INT32",
            Value::I64(_) => "INT64",
            Value::Bool(_) => "BOOL",
        }
    }

    /// The values as f32 (integers and booleans converted; int8 values as
    /// the integers, not dequantized).
    pub fn to_f32(&self) -> ArrayD<f32> {
        match self {
            Value::F32(a) => a.clone(),
            Value::I8(a) => a.mapv(f32::from),
            Value::I32(a) => a.mapv(|v| v as f32),
            Value::I64(a) => a.mapv(|v| v as f32),
            Value::Bool(a) => a.mapv(|v| if v { 1.0 } else { 0.0 }),
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
