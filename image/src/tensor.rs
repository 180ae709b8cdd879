//! The image tensor ([`Image`]): an `ndarray` in one of TF's image dtypes,
//! and the crate's error type.

use ndarray::ArrayD;
use std::fmt;

/// TF's image dtypes (`tf.image.convert_image_dtype` covers all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `tf.uint8`.
    U8,
    /// `tf.uint16`.
    U16,
    /// `tf.int16`.
    I16,
    /// `tf.int32`.
    I32,
    /// `tf.float16`, held as f32 values rounded to half precision.
    F16,
    /// `tf.float32`.
    F32,
    /// `tf.float64`.
    F64,
}

impl DType {
    /// TF's name (`"uint8"`, `"float32"`, ...), as in the golden files.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The dtype of TF's name.
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "int16" => DType::I16,
            "int32" => DType::I32,
            "float16" => DType::F16,
            "float32" => DType::F32,
            "float64" => DType::F64,
            _ => return None,
        })
    }

    /// Whether TF treats the dtype as floating point (values in [0, 1]).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

/// An image or a batch of images, `[H, W, C]` or `[N, H, W, C]`, in one of
/// TF's image dtypes. Float16 is held as f32 values exactly representable in
/// half precision.
#[derive(Clone, Debug, PartialEq)]
pub enum Image {
    /// `tf.uint8` pixels.
    U8(ArrayD<u8>),
    /// `tf.uint16` pixels.
    U16(ArrayD<u16>),
    /// `tf.int16` pixels.
    I16(ArrayD<i16>),
    /// `tf.int32` pixels.
    I32(ArrayD<i32>),
    /// `tf.float16` pixels (values rounded to half precision).
    F16(ArrayD<f32>),
    /// `tf.float32` pixels.
    F32(ArrayD<f32>),
    /// `tf.float64` pixels.
    F64(ArrayD<f64>),
}

impl Image {
    /// The dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Image::U8(_) => DType::U8,
            Image::U16(_) => DType::U16,
            Image::I16(_) => DType::I16,
            Image::I32(_) => DType::I32,
            Image::F16(_) => DType::F16,
            Image::F32(_) => DType::F32,
            Image::F64(_) => DType::F64,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Image::U8(a) => a.shape(),
            Image::U16(a) => a.shape(),
            Image::I16(a) => a.shape(),
            Image::I32(a) => a.shape(),
            Image::F16(a) => a.shape(),
            Image::F32(a) => a.shape(),
            Image::F64(a) => a.shape(),
        }
    }

    /// Every value as f64 (exact for every dtype), row-major.
    pub fn to_f64(&self) -> ArrayD<f64> {
        match self {
            Image::U8(a) => a.mapv(f64::from),
            Image::U16(a) => a.mapv(f64::from),
            Image::I16(a) => a.mapv(f64::from),
            Image::I32(a) => a.mapv(f64::from),
            Image::F16(a) | Image::F32(a) => a.mapv(f64::from),
            Image::F64(a) => a.clone(),
        }
    }

    /// Every value as f32 (TF's `tf.cast(image, tf.float32)`: no rescaling).
    pub fn to_f32(&self) -> ArrayD<f32> {
        match self {
            Image::U8(a) => a.mapv(f32::from),
            Image::U16(a) => a.mapv(f32::from),
            Image::I16(a) => a.mapv(f32::from),
            Image::I32(a) => a.mapv(|v| v as f32),
            Image::F16(a) | Image::F32(a) => a.clone(),
            Image::F64(a) => a.mapv(|v| v as f32),
        }
    }
}

/// A refused call: what was wrong, in words that name the argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageError {
    /// The message, e.g. "`size` must be two positive integers, got [0, 3]".
    pub message: String,
}

impl ImageError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> ImageError {
        ImageError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImageError {}

/// A result of this crate.
pub type Result<T> = std::result::Result<T, ImageError>;

/// Applies a dtype-generic array function to every variant of an [`Image`]
/// (`each_dtype!(image, a => f(a))`), keeping the dtype.
macro_rules! each_dtype {
    ($img:expr, $a:ident => $body:expr) => {
        match $img {
            Image::U8($a) => Image::U8($body),
            Image::U16($a) => Image::U16($body),
            Image::I16($a) => Image::I16($body),
            Image::I32($a) => Image::I32($body),
            Image::F16($a) => Image::F16($body),
            Image::F32($a) => Image::F32($body),
            Image::F64($a) => Image::F64($body),
        }
    };
}
pub(crate) use each_dtype;
