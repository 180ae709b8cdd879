//! Tensors as bytes: `tf.io.decode_raw` and `tf.io.serialize_tensor` /
//! `tf.io.parse_tensor` (a `TensorProto`), for the numeric types.
//!
//! Owns: [`TensorDType`] (TF's numeric `DataType`s: names, enum values,
//! sizes, the bytes of one value, and [`TensorDType::cast`], what a number
//! becomes stored as that type), [`decode_raw`], [`serialize_tensor_into`],
//! [`parse_tensor_values`] and the owned [`parse_tensor`].
//!
//! TF's semantics: `decode_raw(bytes, out_type, little_endian, fixed_length)`
//! reads `len / size` values (a length that is not a multiple of the size is
//! TF's error); with `fixed_length` it reads `fixed_length / size` values
//! from the bytes cut or zero-padded to `fixed_length` (which must be a
//! multiple of the size); a `bool` is true when its byte is not 0.
//! `serialize_tensor` writes `TensorProto { dtype = 1, tensor_shape = 2
//! { dim = 2 { size = 1 } }, tensor_content = 4 }` (the values little-endian;
//! no content for an empty tensor), byte for byte TF's
//! (`Tensor::AsProtoTensorContent`, deterministic). `parse_tensor` reads
//! that, or the typed value fields (`half_val` = 5 for half and bfloat16,
//! `float_val` = 6, `double_val` = 7, `int_val` = 8 for the 8-, 16- and
//! 32-bit integers, `int64_val` = 11, `bool_val` = 12, `uint32_val` = 16,
//! `uint64_val` = 17) with TF's `Tensor::FromProto` rule: no values is all
//! zeros, fewer than the shape's are filled with the last one, more are cut;
//! a dtype other than `out_type` is TF's "Type mismatch" error.
//!
//! Invariants: no bytes make a reader panic; errors are TF's messages
//! (where TF has one) without the op's prefix; values reach callers as f64
//! (exact for every type but 64-bit integers beyond 2^53).

use super::proto::{fields, read_varint, varint_len, Value};

/// A numeric TF `DataType` (`tf.float32`, `tf.uint8`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorDType {
    Float16,
    BFloat16,
    Float32,
    Float64,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Bool,
}

use TensorDType as T;

/// Every type, for lookups by name.
const ALL: [TensorDType; 13] = [
    T::Float16,
    T::BFloat16,
    T::Float32,
    T::Float64,
    T::Int8,
    T::UInt8,
    T::Int16,
    T::UInt16,
    T::Int32,
    T::UInt32,
    T::Int64,
    T::UInt64,
    T::Bool,
];

impl TensorDType {
    /// TF's Python name (`float16`, `bfloat16`, `float32`, `uint8`, ...).
    pub fn tf_name(self) -> &'static str {
        match self {
            T::Float16 => "float16",
            T::BFloat16 => "bfloat16",
            T::Float32 => "float32",
            T::Float64 => "float64",
            T::Int8 => "int8",
            T::UInt8 => "uint8",
            T::Int16 => "int16",
            T::UInt16 => "uint16",
            T::Int32 => "int32",
            T::UInt32 => "uint32",
            T::Int64 => "int64",
            T::UInt64 => "uint64",
            T::Bool => "bool",
        }
    }

    /// TF's C++ name (`DataTypeString`: `half`, `float`, `double`, ...), as
    /// its error messages say.
    pub fn cpp_name(self) -> &'static str {
        match self {
            T::Float16 => "half",
            T::Float32 => "float",
            T::Float64 => "double",
            other => other.tf_name(),
        }
    }

    /// Parses a type name: Python's (`uint8`, `tf.uint8`) or C++'s
    /// (`half`, `float`, `double`).
    pub fn from_tf_name(name: &str) -> Option<TensorDType> {
        let name = name.strip_prefix("tf.").unwrap_or(name);
        ALL.into_iter()
            .find(|t| t.tf_name() == name || t.cpp_name() == name)
    }

    /// The `DataType` enum value of `types.proto`.
    pub fn enum_value(self) -> u64 {
        match self {
            T::Float32 => 1,
            T::Float64 => 2,
            T::Int32 => 3,
            T::UInt8 => 4,
            T::Int16 => 5,
            T::Int8 => 6,
            T::Int64 => 9,
            T::Bool => 10,
            T::BFloat16 => 14,
            T::UInt16 => 17,
            T::Float16 => 19,
            T::UInt32 => 22,
            T::UInt64 => 23,
        }
    }

    fn from_enum(v: u64) -> Option<TensorDType> {
        ALL.into_iter().find(|t| t.enum_value() == v)
    }

    /// Bytes per value.
    pub fn size(self) -> usize {
        match self {
            T::Int8 | T::UInt8 | T::Bool => 1,
            T::Float16 | T::BFloat16 | T::Int16 | T::UInt16 => 2,
            T::Float32 | T::Int32 | T::UInt32 => 4,
            T::Float64 | T::Int64 | T::UInt64 => 8,
        }
    }

    /// Whether `tf.io.decode_raw` takes it as `out_type` (TF 2.21 refuses
    /// the unsigned 32- and 64-bit types).
    pub fn decode_raw_takes(self) -> bool {
        !matches!(self, T::UInt32 | T::UInt64)
    }

    /// The value of `bits` (the type's bytes as an integer, little-endian
    /// order already undone).
    fn value_of_bits(self, bits: u64) -> f64 {
        match self {
            T::Float16 => f64::from(f16_to_f32(bits as u16)),
            T::BFloat16 => f64::from(f32::from_bits((bits as u32) << 16)),
            T::Float32 => f64::from(f32::from_bits(bits as u32)),
            T::Float64 => f64::from_bits(bits),
            T::Int8 => f64::from(bits as u8 as i8),
            T::UInt8 => f64::from(bits as u8),
            T::Int16 => f64::from(bits as u16 as i16),
            T::UInt16 => f64::from(bits as u16),
            T::Int32 => f64::from(bits as u32 as i32),
            T::UInt32 => f64::from(bits as u32),
            T::Int64 => bits as i64 as f64,
            T::UInt64 => bits as f64,
            T::Bool => f64::from(u8::from(bits as u8 != 0)),
        }
    }

    /// The value stored in `b` (`size()` bytes).
    pub fn read(self, b: &[u8], little_endian: bool) -> f64 {
        let mut bits = 0u64;
        for k in 0..self.size() {
            let byte = if little_endian {
                b[self.size() - 1 - k]
            } else {
                b[k]
            };
            bits = bits << 8 | u64::from(byte);
        }
        self.value_of_bits(bits)
    }

    /// `x` as this type stores it (`tf.cast` of a float64 for the float
    /// types: rounded to float32, then to nearest-even in 16 bits); an
    /// integer type or `bool` takes only a whole number in its range
    /// (`bool`: 0 or 1), else an error saying why.
    pub fn cast(self, x: f64) -> Result<f64, String> {
        let (lo, hi) = match self {
            T::Float16 => return Ok(f64::from(f16_to_f32(f32_to_f16(x as f32)))),
            T::BFloat16 => {
                return Ok(f64::from(f32::from_bits(
                    u32::from(f32_to_bf16(x as f32)) << 16,
                )))
            }
            T::Float32 => return Ok(f64::from(x as f32)),
            T::Float64 => return Ok(x),
            T::Int8 => (-128.0, 127.0),
            T::UInt8 => (0.0, 255.0),
            T::Int16 => (-32768.0, 32767.0),
            T::UInt16 => (0.0, 65535.0),
            T::Int32 => (-2147483648.0, 2147483647.0),
            T::UInt32 => (0.0, 4294967295.0),
            // 2^63 and 2^64 are exact; the largest values below them are
            // the largest f64s under them.
            T::Int64 => (-9223372036854775808.0, 9223372036854774784.0),
            T::UInt64 => (0.0, 18446744073709549568.0),
            T::Bool => (0.0, 1.0),
        };
        if x.fract() == 0.0 && x >= lo && x <= hi {
            Ok(x)
        } else if self == T::Bool {
            Err(format!("{x} is not a bool (0 or 1)"))
        } else {
            Err(format!("{x} is not a {} value", self.tf_name()))
        }
    }

    /// The bits of `x` (a value [`cast`](Self::cast) gives) as stored.
    fn bits_of(self, x: f64) -> u64 {
        match self {
            T::Float16 => u64::from(f32_to_f16(x as f32)),
            T::BFloat16 => u64::from(f32_to_bf16(x as f32)),
            T::Float32 => u64::from((x as f32).to_bits()),
            T::Float64 => x.to_bits(),
            T::Int8 | T::Int16 | T::Int32 | T::Int64 => x as i64 as u64,
            T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64 | T::Bool => x as u64,
        }
    }

    /// Appends `x` (a value [`cast`](Self::cast) gives) as this type's bytes.
    pub fn write(self, x: f64, little_endian: bool, out: &mut Vec<u8>) {
        let bits = self.bits_of(x);
        for k in 0..self.size() {
            let shift = if little_endian {
                8 * k
            } else {
                8 * (self.size() - 1 - k)
            };
            out.push((bits >> shift) as u8);
        }
    }
}

/// IEEE half bits to float32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Float32 to IEEE half bits, rounded to nearest-even (Eigen's `half`).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = bits & 0x7fff_ffff;
    if abs >= 0x7f80_0000 {
        // Inf or NaN (a NaN stays a quiet NaN).
        return sign | 0x7c00 | if abs > 0x7f80_0000 { 0x200 } else { 0 };
    }
    if abs >= 0x4780_0000 {
        // 65520 and above round to infinity.
        return sign | 0x7c00;
    }
    if abs < 0x3880_0000 {
        // Below 2^-14: a subnormal half, abs * 2^24 rounded to nearest-even.
        let v = f32::from_bits(abs) * 16_777_216.0;
        return sign | round_half_even(v) as u16;
    }
    let e = (abs >> 23) - 112;
    let m = abs & 0x7f_ffff;
    let mut h = (e << 10) | (m >> 13);
    let rest = m & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

/// Float32 to bfloat16 bits, rounded to nearest-even (a NaN stays NaN).
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

fn round_half_even(v: f32) -> u32 {
    let f = v.floor();
    let d = v - f;
    let f = f as u32;
    if d > 0.5 || (d == 0.5 && f & 1 == 1) {
        f + 1
    } else {
        f
    }
}

/// `tf.io.decode_raw(bytes, out_type, little_endian, fixed_length)`:
/// calls `f(i, value)` for each value in order; returns how many there were
/// (see the module doc).
pub fn decode_raw<E: From<String>>(
    bytes: &[u8],
    out_type: TensorDType,
    little_endian: bool,
    fixed_length: Option<usize>,
    mut f: impl FnMut(usize, f64) -> Result<(), E>,
) -> Result<usize, E> {
    let size = out_type.size();
    let n = match fixed_length {
        Some(l) if !l.is_multiple_of(size) => {
            return Err(format!(
                "fixed_length ({l}) must be a multiple of the size of out_type ({size})"
            )
            .into())
        }
        Some(l) => l / size,
        None if !bytes.len().is_multiple_of(size) => {
            return Err(format!(
                "Input to DecodeRaw has length {} that is not a multiple of {size}, the size of {}",
                bytes.len(),
                out_type.cpp_name()
            )
            .into())
        }
        None => bytes.len() / size,
    };
    let mut padded;
    for i in 0..n {
        let at = i * size;
        let b = match bytes.get(at..at + size) {
            Some(b) => b,
            None => {
                // Past the end of a short input with fixed_length: zeros.
                padded = [0; 8];
                let have = bytes.get(at..).unwrap_or_default();
                padded[..have.len()].copy_from_slice(have);
                &padded[..size]
            }
        };
        f(i, out_type.read(b, little_endian))?;
    }
    Ok(n)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `tf.io.serialize_tensor` of a `dtype` tensor of shape `dims` holding
/// `values` (row-major, each a value [`TensorDType::cast`] gives): TF's
/// bytes, into `out` (cleared first).
pub fn serialize_tensor_into(
    dtype: TensorDType,
    dims: &[usize],
    values: impl IntoIterator<Item = f64>,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.push(1 << 3);
    put_varint(out, dtype.enum_value());
    let dim_len = |d: usize| if d == 0 { 0 } else { 1 + varint_len(d as u64) };
    let shape_len: usize = dims
        .iter()
        .map(|&d| 1 + varint_len(dim_len(d) as u64) + dim_len(d))
        .sum();
    out.push(2 << 3 | 2);
    put_varint(out, shape_len as u64);
    for &d in dims {
        out.push(2 << 3 | 2);
        put_varint(out, dim_len(d) as u64);
        if d != 0 {
            out.push(1 << 3);
            put_varint(out, d as u64);
        }
    }
    let n: usize = dims.iter().product();
    if n > 0 {
        out.push(4 << 3 | 2);
        put_varint(out, (n * dtype.size()) as u64);
        for x in values.into_iter().take(n) {
            dtype.write(x, true, out);
        }
    }
}

/// The typed value field of a type, and how its elements are stored.
fn typed_field(t: TensorDType) -> u32 {
    match t {
        T::Float16 | T::BFloat16 => 5,
        T::Float32 => 6,
        T::Float64 => 7,
        T::Int8 | T::UInt8 | T::Int16 | T::UInt16 | T::Int32 => 8,
        T::Int64 => 11,
        T::Bool => 12,
        T::UInt32 => 16,
        T::UInt64 => 17,
    }
}

/// Calls `f` with the bits of each element of a typed value field (packed
/// or not).
fn each_typed(v: Value<'_>, t: TensorDType, f: &mut impl FnMut(u64) -> bool) -> Result<(), String> {
    let bad = || "Could not parse `serialized` as TensorProto".to_string();
    let width = match t {
        T::Float32 => 4,
        T::Float64 => 8,
        _ => 0,
    };
    match (v, width) {
        (Value::Varint(x), 0) => {
            f(x);
        }
        (Value::Fixed32(x), 4) => {
            f(u64::from(x));
        }
        (Value::Fixed64(x), 8) => {
            f(x);
        }
        (Value::Bytes(b), 0) => {
            let mut pos = 0;
            while pos < b.len() {
                let x = read_varint(b, &mut pos).map_err(|_| bad())?;
                if !f(x) {
                    break;
                }
            }
        }
        (Value::Bytes(b), w) if b.len().is_multiple_of(w) => {
            for c in b.chunks_exact(w) {
                let mut bits = 0u64;
                for (k, &byte) in c.iter().enumerate() {
                    bits |= u64::from(byte) << (8 * k);
                }
                if !f(bits) {
                    break;
                }
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// `tf.io.parse_tensor(bytes, out_type)`: calls `f(i, value)` for each
/// value of the tensor, row-major; returns the element count (see the
/// module doc). `dims`, when given, receives the shape.
pub fn parse_tensor_values<E: From<String>>(
    bytes: &[u8],
    out_type: TensorDType,
    mut dims: Option<&mut Vec<usize>>,
    mut f: impl FnMut(usize, f64) -> Result<(), E>,
) -> Result<usize, E> {
    let bad = || -> E {
        "Could not parse `serialized` as TensorProto"
            .to_string()
            .into()
    };
    let mut dtype = None;
    let mut content: &[u8] = &[];
    // The element count; repeated shape messages merge (their dims add up),
    // as protobuf merges a repeated message field.
    let mut n = Some(1usize);
    if let Some(d) = dims.as_deref_mut() {
        d.clear();
    }
    for field in fields(bytes) {
        let (k, v) = field.map_err(|_| bad())?;
        match (k, v) {
            (1, Value::Varint(d)) => dtype = Some(d),
            (2, Value::Bytes(shape)) => {
                for field in fields(shape) {
                    match field.map_err(|_| bad())? {
                        (2, Value::Bytes(dim)) => {
                            let mut size = 0i64;
                            for field in fields(dim) {
                                if let (1, Value::Varint(s)) = field.map_err(|_| bad())? {
                                    size = s as i64;
                                }
                            }
                            let size = usize::try_from(size).map_err(|_| bad())?;
                            n = n.and_then(|n| n.checked_mul(size));
                            if let Some(d) = dims.as_deref_mut() {
                                d.push(size);
                            }
                        }
                        (3, Value::Varint(u)) if u != 0 => return Err(bad()),
                        _ => {}
                    }
                }
            }
            (4, Value::Bytes(b)) => content = b,
            (1 | 2 | 4, _) => return Err(bad()),
            _ => {}
        }
    }
    let dtype = dtype.unwrap_or(0);
    let t = TensorDType::from_enum(dtype);
    if t != Some(out_type) {
        let name = t.map_or_else(|| format!("DataType {dtype}"), |t| t.cpp_name().to_string());
        return Err(format!(
            "Type mismatch between parsed tensor ({name}) and dtype ({})",
            out_type.cpp_name()
        )
        .into());
    }
    let n = n.ok_or_else(bad)?;
    if !content.is_empty() {
        if n.checked_mul(out_type.size()) != Some(content.len()) {
            return Err(bad());
        }
        for (i, b) in content.chunks_exact(out_type.size()).enumerate() {
            f(i, out_type.read(b, true))?;
        }
        return Ok(n);
    }
    // The typed values: count them and keep the last one, then give the
    // first n, the last repeated (none: zeros).
    let field = typed_field(out_type);
    let (mut count, mut last) = (0usize, 0u64);
    for fv in fields(bytes) {
        let (k, v) = fv.map_err(|_| bad())?;
        if k == field {
            each_typed(v, out_type, &mut |bits| {
                count += 1;
                last = bits;
                true
            })?;
        }
    }
    let mut i = 0usize;
    let mut err = None;
    for fv in fields(bytes) {
        let (k, v) = fv.map_err(|_| bad())?;
        if k == field && i < n {
            each_typed(v, out_type, &mut |bits| {
                if i >= n {
                    return false;
                }
                if let Err(e) = f(i, out_type.value_of_bits(bits)) {
                    err = Some(e);
                    return false;
                }
                i += 1;
                true
            })?;
            if let Some(e) = err.take() {
                return Err(e);
            }
        }
    }
    let fill = if count == 0 {
        0.0
    } else {
        out_type.value_of_bits(last)
    };
    while i < n {
        f(i, fill)?;
        i += 1;
    }
    Ok(n)
}

/// A parsed tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dtype: TensorDType,
    pub dims: Vec<usize>,
    pub values: Vec<f64>,
}

/// `tf.io.parse_tensor(bytes, out_type)` into an owned [`Tensor`].
pub fn parse_tensor(bytes: &[u8], out_type: TensorDType) -> Result<Tensor, String> {
    let mut dims = Vec::new();
    let mut values = Vec::new();
    parse_tensor_values(bytes, out_type, Some(&mut dims), |_, x| {
        values.push(x);
        Ok::<(), String>(())
    })?;
    Ok(Tensor {
        dtype: out_type,
        dims,
        values,
    })
}

#[cfg(test)]
#[path = "tensor_tests.rs"]
mod tests;
