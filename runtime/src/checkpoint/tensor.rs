//! Tensor values as a checkpoint holds them: TF's dtype, a shape and the
//! row-major little-endian bytes.
//!
//! Owns: [`DType`] (TF's `DataType` enum numbers and names), [`Tensor`] (an
//! owned value: one `ndarray::ArrayD` per element type; half and bfloat16 as
//! their raw `u16` bits) and [`TensorRef`] (a borrowed view of bytes that the
//! bundle writer reads, so a caller saves its own buffers without copying).
//!
//! Invariants: a [`TensorRef`]'s bytes are exactly `num_elements(shape) *
//! dtype.size()` long (its constructors check it); a [`Tensor`]'s arrays are
//! in standard (C) layout, so their bytes are the checkpoint's bytes. The
//! byte view of numbers is little-endian: this module only builds on
//! little-endian targets (as TF's bundles are written `LITTLE`).

use ndarray::{ArrayD, IxDyn};

#[cfg(not(target_endian = "little"))]
compile_error!("checkpoints are read and written as little-endian memory");

/// TF's `DataType` values a checkpoint can hold here (no strings, no complex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Float,
    Double,
    Int32,
    UInt8,
    Int16,
    Int8,
    Int64,
    Bool,
    BFloat16,
    UInt16,
    Half,
    UInt32,
    UInt64,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Float,
        DType::Double,
        DType::Int32,
        DType::UInt8,
        DType::Int16,
        DType::Int8,
        DType::Int64,
        DType::Bool,
        DType::BFloat16,
        DType::UInt16,
        DType::Half,
        DType::UInt32,
        DType::UInt64,
    ];

    /// The `DataType` enum number of `types.proto`.
    pub fn enum_value(self) -> u64 {
        match self {
            DType::Float => 1,
            DType::Double => 2,
            DType::Int32 => 3,
            DType::UInt8 => 4,
            DType::Int16 => 5,
            DType::Int8 => 6,
            DType::Int64 => 9,
            DType::Bool => 10,
            DType::BFloat16 => 14,
            DType::UInt16 => 17,
            DType::Half => 19,
            DType::UInt32 => 22,
            DType::UInt64 => 23,
        }
    }

    pub fn from_enum(v: u64) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.enum_value() == v)
    }

    /// TF's name (`tf.float32.name`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Float => "float32",
            DType::Double => "float64",
            DType::Int32 => "int32",
            DType::UInt8 => "uint8",
            DType::Int16 => "int16",
            DType::Int8 => "int8",
            DType::Int64 => "int64",
            DType::Bool => "bool",
            DType::BFloat16 => "bfloat16",
            DType::UInt16 => "uint16",
            DType::Half => "float16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
        }
    }

    /// The dtype of a TF name (`float32`, `float`, `half`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        match name {
            "float" => Some(DType::Float),
            "double" => Some(DType::Double),
            "half" => Some(DType::Half),
            _ => DType::ALL.into_iter().find(|d| d.name() == name),
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::UInt8 | DType::Int8 | DType::Bool => 1,
            DType::Int16 | DType::UInt16 | DType::Half | DType::BFloat16 => 2,
            DType::Float | DType::Int32 | DType::UInt32 => 4,
            DType::Double | DType::Int64 | DType::UInt64 => 8,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The number of elements of `shape`, `None` on overflow.
pub fn num_elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// `[3, 2]`, `[]`: a shape as TF prints it in `list_variables`.
pub fn shape_string(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// A borrowed tensor: what the bundle writer saves.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    bytes: &'a [u8],
}

impl<'a> TensorRef<'a> {
    /// A view of raw little-endian bytes; errors when their length is not
    /// `num_elements(shape) * dtype.size()`.
    pub fn from_bytes(
        dtype: DType,
        shape: &'a [usize],
        bytes: &'a [u8],
    ) -> Result<TensorRef<'a>, String> {
        let want = num_elements(shape).and_then(|n| n.checked_mul(dtype.size()));
        if want != Some(bytes.len()) {
            return Err(format!(
                "a {dtype} tensor of shape {} cannot hold {} bytes",
                shape_string(shape),
                bytes.len()
            ));
        }
        Ok(TensorRef {
            dtype,
            shape,
            bytes,
        })
    }

    /// A float32 view (the session's variables).
    pub fn f32(shape: &'a [usize], values: &'a [f32]) -> Result<TensorRef<'a>, String> {
        TensorRef::from_bytes(DType::Float, shape, bytemuck::cast_slice(values))
    }

    /// An int64 view (`global_step`).
    pub fn i64(shape: &'a [usize], values: &'a [i64]) -> Result<TensorRef<'a>, String> {
        TensorRef::from_bytes(DType::Int64, shape, bytemuck::cast_slice(values))
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// An owned tensor value.
#[derive(Clone, Debug, PartialEq)]
pub enum Tensor {
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    I32(ArrayD<i32>),
    U8(ArrayD<u8>),
    I16(ArrayD<i16>),
    I8(ArrayD<i8>),
    I64(ArrayD<i64>),
    Bool(ArrayD<bool>),
    /// bfloat16 as its raw bits.
    BF16(ArrayD<u16>),
    U16(ArrayD<u16>),
    /// float16 (TF's `half`) as its raw bits.
    F16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
}

/// Runs `$body` with `$a` bound to the array of whichever variant.
macro_rules! each {
    ($t:expr, $a:ident => $body:expr) => {
        match $t {
            Tensor::F32($a) => $body,
            Tensor::F64($a) => $body,
            Tensor::I32($a) => $body,
            Tensor::U8($a) => $body,
            Tensor::I16($a) => $body,
            Tensor::I8($a) => $body,
            Tensor::I64($a) => $body,
            Tensor::Bool($a) => $body,
            Tensor::BF16($a) => $body,
            Tensor::U16($a) => $body,
            Tensor::F16($a) => $body,
            Tensor::U32($a) => $body,
            Tensor::U64($a) => $body,
        }
    };
}

fn standard<T: Clone>(a: &mut ArrayD<T>) {
    if !a.is_standard_layout() {
        *a = a.as_standard_layout().into_owned();
    }
}

fn zeros<T: Clone + Default>(shape: &[usize]) -> ArrayD<T> {
    ArrayD::from_elem(IxDyn(shape), T::default())
}

impl Tensor {
    /// A zero tensor (false for bool) of `dtype` and `shape`.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
        match dtype {
            DType::Float => Tensor::F32(zeros(shape)),
            DType::Double => Tensor::F64(zeros(shape)),
            DType::Int32 => Tensor::I32(zeros(shape)),
            DType::UInt8 => Tensor::U8(zeros(shape)),
            DType::Int16 => Tensor::I16(zeros(shape)),
            DType::Int8 => Tensor::I8(zeros(shape)),
            DType::Int64 => Tensor::I64(zeros(shape)),
            DType::Bool => Tensor::Bool(zeros(shape)),
            DType::BFloat16 => Tensor::BF16(zeros(shape)),
            DType::UInt16 => Tensor::U16(zeros(shape)),
            DType::Half => Tensor::F16(zeros(shape)),
            DType::UInt32 => Tensor::U32(zeros(shape)),
            DType::UInt64 => Tensor::U64(zeros(shape)),
        }
    }

    /// The tensor whose bytes are `bytes` (bools: any nonzero byte is true).
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Tensor, String> {
        let r = TensorRef::from_bytes(dtype, shape, bytes)?;
        let mut t = Tensor::zeros(dtype, shape);
        t.copy_from_bytes(r.bytes);
        Ok(t)
    }

    pub fn dtype(&self) -> DType {
        match self {
            Tensor::F32(_) => DType::Float,
            Tensor::F64(_) => DType::Double,
            Tensor::I32(_) => DType::Int32,
            Tensor::U8(_) => DType::UInt8,
            Tensor::I16(_) => DType::Int16,
            Tensor::I8(_) => DType::Int8,
            Tensor::I64(_) => DType::Int64,
            Tensor::Bool(_) => DType::Bool,
            Tensor::BF16(_) => DType::BFloat16,
            Tensor::U16(_) => DType::UInt16,
            Tensor::F16(_) => DType::Half,
            Tensor::U32(_) => DType::UInt32,
            Tensor::U64(_) => DType::UInt64,
        }
    }

    pub fn shape(&self) -> &[usize] {
        each!(self, a => a.shape())
    }

    pub fn len(&self) -> usize {
        each!(self, a => a.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The little-endian bytes, row-major.
    pub fn bytes(&mut self) -> &[u8] {
        self.make_standard();
        self.bytes_standard()
    }

    fn make_standard(&mut self) {
        each!(self, a => standard(a))
    }

    fn bytes_standard(&self) -> &[u8] {
        match self {
            Tensor::F32(a) => slice_bytes(a),
            Tensor::F64(a) => slice_bytes(a),
            Tensor::I32(a) => slice_bytes(a),
            Tensor::U8(a) => slice_bytes(a),
            Tensor::I16(a) => slice_bytes(a),
            Tensor::I8(a) => slice_bytes(a),
            Tensor::I64(a) => slice_bytes(a),
            // bool is one byte, 0 or 1: bytemuck allows bool -> u8.
            Tensor::Bool(a) => a
                .as_slice()
                .map(bytemuck::cast_slice::<bool, u8>)
                .unwrap_or(&[]),
            Tensor::BF16(a) | Tensor::U16(a) | Tensor::F16(a) => slice_bytes(a),
            Tensor::U32(a) => slice_bytes(a),
            Tensor::U64(a) => slice_bytes(a),
        }
    }

    /// A borrowed view for the writer (the array is made standard-layout first).
    pub fn as_ref(&mut self) -> TensorRef<'_> {
        self.make_standard();
        let dtype = self.dtype();
        let bytes = self.bytes_standard();
        TensorRef {
            dtype,
            shape: self.shape(),
            bytes,
        }
    }

    /// A view of a tensor already in standard layout (every tensor this
    /// module builds is); `None` for a non-standard array.
    pub fn view(&self) -> Option<TensorRef<'_>> {
        let standard = each!(self, a => a.is_standard_layout());
        standard.then(|| TensorRef {
            dtype: self.dtype(),
            shape: self.shape(),
            bytes: self.bytes_standard(),
        })
    }

    /// The tensor's storage as bytes to fill (bool excluded: see [`Tensor::copy_from_bytes`]).
    pub(crate) fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        self.make_standard();
        match self {
            Tensor::F32(a) => slice_bytes_mut(a),
            Tensor::F64(a) => slice_bytes_mut(a),
            Tensor::I32(a) => slice_bytes_mut(a),
            Tensor::U8(a) => slice_bytes_mut(a),
            Tensor::I16(a) => slice_bytes_mut(a),
            Tensor::I8(a) => slice_bytes_mut(a),
            Tensor::I64(a) => slice_bytes_mut(a),
            Tensor::Bool(_) => None,
            Tensor::BF16(a) | Tensor::U16(a) | Tensor::F16(a) => slice_bytes_mut(a),
            Tensor::U32(a) => slice_bytes_mut(a),
            Tensor::U64(a) => slice_bytes_mut(a),
        }
    }

    /// Overwrites the values with `bytes` (exactly this tensor's byte length).
    pub(crate) fn copy_from_bytes(&mut self, bytes: &[u8]) {
        if let Tensor::Bool(a) = self {
            for (x, b) in a.iter_mut().zip(bytes) {
                *x = *b != 0;
            }
        } else if let Some(dst) = self.bytes_mut() {
            let n = dst.len().min(bytes.len());
            dst[..n].copy_from_slice(&bytes[..n]);
        }
    }

    /// Every element as f64 (integers above 2^53 lose precision; half and
    /// bfloat16 are converted from their bits), row-major.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            Tensor::F32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::F64(a) => a.iter().copied().collect(),
            Tensor::I32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::U8(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::I16(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::I8(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::I64(a) => a.iter().map(|&x| x as f64).collect(),
            Tensor::Bool(a) => a.iter().map(|&x| f64::from(u8::from(x))).collect(),
            Tensor::BF16(a) => a
                .iter()
                .map(|&x| f64::from(f32::from_bits(u32::from(x) << 16)))
                .collect(),
            Tensor::U16(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::F16(a) => a.iter().map(|&x| half_to_f64(x)).collect(),
            Tensor::U32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            Tensor::U64(a) => a.iter().map(|&x| x as f64).collect(),
        }
    }
}

fn slice_bytes<T: bytemuck::Pod>(a: &ArrayD<T>) -> &[u8] {
    a.as_slice().map(bytemuck::cast_slice).unwrap_or(&[])
}

fn slice_bytes_mut<T: bytemuck::Pod>(a: &mut ArrayD<T>) -> Option<&mut [u8]> {
    a.as_slice_mut().map(bytemuck::cast_slice_mut)
}

/// IEEE binary16 bits to f64 (exact).
pub fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_enum_round_trips() {
        for d in DType::ALL {
            assert_eq!(DType::from_enum(d.enum_value()), Some(d));
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_enum(7), None); // DT_STRING
    }

    #[test]
    fn tensor_bytes_round_trip() {
        let mut t = Tensor::F32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0, -2.5]).unwrap());
        let bytes = t.bytes().to_vec();
        assert_eq!(
            Tensor::from_bytes(DType::Float, &[2], &bytes).unwrap(),
            t.clone()
        );
        assert!(Tensor::from_bytes(DType::Float, &[3], &bytes).is_err());
        let b = Tensor::from_bytes(DType::Bool, &[3], &[0, 1, 7]).unwrap();
        assert_eq!(b.to_f64_vec(), vec![0.0, 1.0, 1.0]);
    }

    #[test]
    fn half_bits() {
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0xc000), -2.0);
        assert_eq!(half_to_f64(0x0001), 2f64.powi(-24));
        assert!(half_to_f64(0x7e00).is_nan());
    }
}
