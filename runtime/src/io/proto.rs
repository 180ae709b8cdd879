//! The protobuf wire format, by hand: TF's checkpoint and event messages are
//! few and small, so specc writes and reads their fields directly instead of
//! generating code.
//!
//! Owns: [`Encoder`] (fields in the order they are written: callers write
//! them in field-number order, as protobuf's own serializers do, so that the
//! bytes equal TF's) and [`Fields`] (an iterator over a message's fields).
//!
//! Invariants: decoding never panics; a truncated varint, a length past the
//! end, or an unknown wire type is a [`ProtoError`]. Unknown field numbers
//! are returned to the caller, which skips them (protobuf's rule).

use std::fmt;

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// Writes a message's fields into a byte vector.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// The encoded bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// Appends a base-128 varint.
    pub fn raw_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.raw_varint(u64::from(field << 3 | wire));
    }

    /// An `int32`/`int64`/`uint64`/`enum` field (negative values take ten bytes, as in protobuf).
    pub fn varint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.raw_varint(v);
    }

    /// An `int64` field.
    pub fn int64(&mut self, field: u32, v: i64) {
        self.varint(field, v as u64);
    }

    /// A `bool` field.
    pub fn bool(&mut self, field: u32, v: bool) {
        self.varint(field, u64::from(v));
    }

    /// A `fixed32`/`float` field's bits.
    pub fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, FIXED32);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `float` field.
    pub fn float(&mut self, field: u32, v: f32) {
        self.fixed32(field, v.to_bits());
    }

    /// A `fixed64`/`double` field's bits.
    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// A `bytes`/`string` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        self.raw_varint(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A nested message, written by `f` into a fresh encoder.
    pub fn message(&mut self, field: u32, f: impl FnOnce(&mut Encoder)) {
        let mut inner = Encoder::new();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }

    /// A packed `repeated float` field (nothing when empty, as protobuf does).
    pub fn packed_floats(&mut self, field: u32, v: &[f32]) {
        if v.is_empty() {
            return;
        }
        self.key(field, LEN);
        self.raw_varint(4 * v.len() as u64);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// A packed `repeated int64` field (nothing when empty, as protobuf does).
    pub fn packed_int64s(&mut self, field: u32, v: &[i64]) {
        if v.is_empty() {
            return;
        }
        let len: usize = v.iter().map(|&x| varint_len(x as u64)).sum();
        self.key(field, LEN);
        self.raw_varint(len as u64);
        for &x in v {
            self.raw_varint(x as u64);
        }
    }

    /// A packed `repeated double` field (nothing when empty, as protobuf does).
    pub fn packed_doubles(&mut self, field: u32, v: &[f64]) {
        if v.is_empty() {
            return;
        }
        self.key(field, LEN);
        self.raw_varint(8 * v.len() as u64);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// A malformed message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoError {
    /// Byte offset in the message where decoding failed.
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed protobuf at byte {}: {}",
            self.offset, self.what
        )
    }
}

impl std::error::Error for ProtoError {}

/// One field's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The value as an integer (`varint`), if it is one.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::Varint(v) => Some(v),
            _ => None,
        }
    }

    /// The value as bytes (length-delimited), if it is.
    pub fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A `float` field's value.
    pub fn as_f32(self) -> Option<f32> {
        match self {
            Value::Fixed32(b) => Some(f32::from_bits(b)),
            _ => None,
        }
    }

    /// A `double` field's value.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Value::Fixed64(b) => Some(f64::from_bits(b)),
            _ => None,
        }
    }
}

/// The bytes of `v` as a base-128 varint.
pub fn varint_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).max(1).div_ceil(7)
}

/// The elements of a packed `repeated int64` field (or one unpacked element).
pub fn int64s(v: Value<'_>, out: &mut Vec<i64>) -> Result<(), ProtoError> {
    match v {
        Value::Varint(x) => out.push(x as i64),
        Value::Bytes(b) => {
            let mut pos = 0;
            while pos < b.len() {
                out.push(read_varint(b, &mut pos)? as i64);
            }
        }
        _ => {
            return Err(ProtoError {
                offset: 0,
                what: "a repeated int64 field of the wrong type",
            })
        }
    }
    Ok(())
}

/// Reads a base-128 varint at `*pos`, advancing it.
pub fn read_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, ProtoError> {
    let start = *pos;
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = bytes.get(*pos) else {
            return Err(ProtoError {
                offset: start,
                what: "truncated varint",
            });
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(ProtoError {
        offset: start,
        what: "varint longer than ten bytes",
    })
}

/// The fields of one message, in order: `(field number, value)`.
pub struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Iterates over the fields of `message`.
pub fn fields(message: &[u8]) -> Fields<'_> {
    Fields {
        bytes: message,
        pos: 0,
        failed: false,
    }
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], ProtoError> {
        let start = self.pos;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= self.bytes.len())
            .ok_or(ProtoError {
                offset: start,
                what,
            })?;
        self.pos = end;
        Ok(&self.bytes[start..end])
    }

    fn field(&mut self) -> Result<(u32, Value<'a>), ProtoError> {
        let at = self.pos;
        let key = read_varint(self.bytes, &mut self.pos)?;
        let field = u32::try_from(key >> 3).map_err(|_| ProtoError {
            offset: at,
            what: "field number out of range",
        })?;
        if field == 0 {
            return Err(ProtoError {
                offset: at,
                what: "field number 0",
            });
        }
        let value = match (key & 7) as u32 {
            VARINT => Value::Varint(read_varint(self.bytes, &mut self.pos)?),
            FIXED64 => {
                let b = self.take(8, "truncated fixed64")?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            LEN => {
                let n = read_varint(self.bytes, &mut self.pos)?;
                Value::Bytes(self.take(n, "length past the end of the message")?)
            }
            FIXED32 => {
                let b = self.take(4, "truncated fixed32")?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
            }
            _ => {
                return Err(ProtoError {
                    offset: at,
                    what: "unsupported wire type",
                })
            }
        };
        Ok((field, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), ProtoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        let r = self.field();
        self.failed = r.is_err();
        Some(r)
    }
}

/// The elements of a packed `repeated double` field (or one unpacked element).
pub fn doubles(v: Value<'_>, out: &mut Vec<f64>) -> Result<(), ProtoError> {
    match v {
        Value::Fixed64(b) => out.push(f64::from_bits(b)),
        Value::Bytes(b) if b.len() % 8 == 0 => out.extend(
            b.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
        ),
        _ => {
            return Err(ProtoError {
                offset: 0,
                what: "a repeated double field of the wrong type or length",
            })
        }
    }
    Ok(())
}

/// The elements of a packed `repeated float` field (or one unpacked element).
pub fn floats(v: Value<'_>, out: &mut Vec<f32>) -> Result<(), ProtoError> {
    match v {
        Value::Fixed32(b) => out.push(f32::from_bits(b)),
        Value::Bytes(b) if b.len() % 4 == 0 => out.extend(
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4]))),
        ),
        _ => {
            return Err(ProtoError {
                offset: 0,
                what: "a repeated float field of the wrong type or length",
            })
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_protobuf() {
        // BundleHeaderProto{num_shards: 1, version: {producer: 1}} is 08 01 1a 02 08 01 in TF's index.
        let mut e = Encoder::new();
        e.varint(1, 1);
        e.message(3, |v| v.varint(1, 1));
        assert_eq!(e.finish(), [0x08, 0x01, 0x1a, 0x02, 0x08, 0x01]);
        let mut e = Encoder::new();
        e.int64(1, -1);
        assert_eq!(e.buf.len(), 11);
    }

    #[test]
    fn reads_back_every_wire_type() {
        let mut e = Encoder::new();
        e.varint(1, 300);
        e.double(2, 1.5);
        e.bytes(3, b"abc");
        e.float(4, -2.0);
        e.packed_doubles(5, &[1.0, 2.0]);
        let b = e.finish();
        let got: Vec<_> = fields(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(got[0], (1, Value::Varint(300)));
        assert_eq!(got[1].1.as_f64(), Some(1.5));
        assert_eq!(got[2].1.as_bytes(), Some(&b"abc"[..]));
        assert_eq!(got[3].1.as_f32(), Some(-2.0));
        let mut d = Vec::new();
        doubles(got[4].1, &mut d).unwrap();
        assert_eq!(d, [1.0, 2.0]);
        let mut f = Vec::new();
        floats(got[3].1, &mut f).unwrap();
        floats(Value::Bytes(&[0, 0, 0x80, 0x3f]), &mut f).unwrap();
        assert_eq!(f, [-2.0, 1.0]);
        assert!(floats(Value::Bytes(&[0, 0, 0x80]), &mut f).is_err());
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            &[0x08][..],
            &[0x1a, 0x05, 1],
            &[0x0b],
            &[0x80; 12],
            &[0x00, 0x01],
        ] {
            assert!(fields(bad).any(|f| f.is_err()), "{bad:?}");
        }
    }

    #[test]
    fn packed_int64s_and_floats_round_trip() {
        let ints = [0, 1, -1, 127, 128, i64::MIN, i64::MAX, -300];
        let fs = [0.0f32, -3.63, f32::MAX, f32::MIN_POSITIVE];
        let mut e = Encoder::new();
        e.packed_int64s(1, &ints);
        e.packed_floats(2, &fs);
        e.packed_int64s(3, &[]);
        let bytes = e.finish();
        let (mut gi, mut gf) = (Vec::new(), Vec::new());
        for f in fields(&bytes) {
            match f.unwrap() {
                (1, v) => int64s(v, &mut gi).unwrap(),
                (2, v) => floats(v, &mut gf).unwrap(),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(gi, ints);
        assert_eq!(gf, fs);
        for v in [0u64, 1, 127, 128, 16383, 16384, u64::MAX] {
            let mut e = Encoder::new();
            e.raw_varint(v);
            assert_eq!(e.finish().len(), varint_len(v), "{v}");
        }
    }
}
