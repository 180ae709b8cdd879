//! A numeric column whose key holds its values as bytes:
//! `numeric_column(decode_raw(key, out_type), ..)` and
//! `numeric_column(parse_tensor(key, out_type), ..)` — what a TF input
//! function does with `tf.io.decode_raw` / `tf.io.parse_tensor` on a
//! `FixedLenFeature([], tf.string)` before the column reads it.
//!
//! Owns: [`BytesDecoder`] and how each kind of cell reads through it:
//! - an Example `bytes_list` is decoded (`decode_raw`: every string the
//!   same length, TF's error otherwise, their values one after the other;
//!   `parse_tensor`: one serialized `TensorProto`, any shape, of
//!   `out_type`);
//! - a CSV cell holds the decoded values as text, whitespace-separated (as
//!   a numeric column of shape k reads them), each stored as `out_type`
//!   stores it ([`TensorDType::cast`]: an integer type takes whole numbers in
//!   its range, a float type rounds); so `specc convert` writes a cell as
//!   the bytes ([`BytesDecoder::encode`]) and the TFRecord file reads as
//!   the CSV file does;
//! - a missing feature (or an empty cell) has no values: the column's
//!   `default_value` applies.
//!
//! Invariants: nothing here allocates per cell; a bad cell is an error
//! saying why (TF's message where TF has one), never a panic.

use crate::data::columns::{parse_text, Cell};
use crate::io::example::Feature;
use crate::io::tensor::{self, TensorDType};

use super::raw::{text_words, NOT_A_LIST};

/// How a numeric column's key holds its values as bytes.
///
/// A CSV cell written back from the bytes (`specc convert` to CSV) is
/// [`value_text`] of each value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BytesDecoder {
    /// `tf.io.decode_raw(bytes, out_type, little_endian, fixed_length)`.
    DecodeRaw {
        out_type: TensorDType,
        little_endian: bool,
        fixed_length: Option<usize>,
    },
    /// `tf.io.parse_tensor(bytes, out_type)`; `dims` is the column's shape,
    /// the shape `specc convert` writes (a tensor of any shape with as many
    /// values reads).
    ParseTensor {
        out_type: TensorDType,
        dims: Vec<usize>,
    },
}

impl BytesDecoder {
    pub fn out_type(&self) -> TensorDType {
        match self {
            BytesDecoder::DecodeRaw { out_type, .. }
            | BytesDecoder::ParseTensor { out_type, .. } => *out_type,
        }
    }

    /// TF's name of the function (`decode_raw`, `parse_tensor`).
    pub fn function(&self) -> &'static str {
        match self {
            BytesDecoder::DecodeRaw { .. } => "decode_raw",
            BytesDecoder::ParseTensor { .. } => "parse_tensor",
        }
    }

    /// Calls `f(i, x)` for each value of `cell`, in order; returns how many
    /// there were (see the module doc). The values are not checked to be
    /// finite (a decoded float may be NaN): the column does that.
    pub fn numbers(
        &self,
        cell: Cell<'_>,
        mut f: impl FnMut(usize, f64) -> Result<(), String>,
    ) -> Result<usize, String> {
        let t = self.out_type();
        match cell {
            Cell::Feature(None) | Cell::Feature(Some(Feature::Unset)) => Ok(0),
            Cell::Feature(Some(Feature::BytesList(v))) => self.decode(v, f),
            Cell::Feature(Some(other)) => Err(format!(
                "expected a bytes_list ({} reads bytes), found a {}",
                self.function(),
                other.kind()
            )),
            Cell::FeatureList(_) => Err(NOT_A_LIST.to_string()),
            Cell::Number(x) => {
                f(0, t.cast(x)?)?;
                Ok(1)
            }
            Cell::Text(b) => {
                let mut n = 0;
                for word in text_words(b) {
                    f(n, t.cast(parse_text(word)?)?)?;
                    n += 1;
                }
                Ok(n)
            }
        }
    }

    /// The values of an Example's `bytes_list`.
    fn decode(
        &self,
        strings: &[Vec<u8>],
        mut f: impl FnMut(usize, f64) -> Result<(), String>,
    ) -> Result<usize, String> {
        match self {
            BytesDecoder::DecodeRaw {
                out_type,
                little_endian,
                fixed_length,
            } => {
                let Some(first) = strings.first() else {
                    return Ok(0);
                };
                if fixed_length.is_none() {
                    if let Some((i, s)) = strings
                        .iter()
                        .enumerate()
                        .find(|(_, s)| s.len() != first.len())
                    {
                        return Err(format!(
                            "DecodeRaw requires input strings to all be the same size, but \
                             element {i} has size {} != {}",
                            s.len(),
                            first.len()
                        ));
                    }
                }
                let mut n = 0;
                for s in strings {
                    let base = n;
                    n +=
                        tensor::decode_raw(s, *out_type, *little_endian, *fixed_length, |i, x| {
                            f(base + i, x)
                        })?;
                }
                Ok(n)
            }
            BytesDecoder::ParseTensor { out_type, .. } => match strings {
                [] => Ok(0),
                [s] => tensor::parse_tensor_values(s, *out_type, None, f),
                more => Err(format!(
                    "expected one serialized tensor (parse_tensor reads a scalar string), \
                     found {}",
                    more.len()
                )),
            },
        }
    }

    /// The bytes of `values` (each already [`TensorDType::cast`]) as the
    /// feature `specc convert` writes: `decode_raw`'s raw values (cut or
    /// zero-padded to `fixed_length`), or `serialize_tensor` of the
    /// column's shape. Into `out`, cleared first.
    pub fn encode(&self, values: &[f64], out: &mut Vec<u8>) {
        out.clear();
        match self {
            BytesDecoder::DecodeRaw {
                out_type,
                little_endian,
                fixed_length,
            } => {
                for &x in values {
                    out_type.write(x, *little_endian, out);
                }
                if let Some(l) = fixed_length {
                    out.resize(*l, 0);
                }
            }
            BytesDecoder::ParseTensor { out_type, dims } => {
                tensor::serialize_tensor_into(*out_type, dims, values.iter().copied(), out)
            }
        }
    }
}

/// `x` (a value of `t`) as the text a CSV cell holds: the shortest text
/// that reads back to the same value of `t`.
pub fn value_text(t: TensorDType, x: f64, out: &mut String) {
    use std::fmt::Write as _;
    let _ = match t {
        TensorDType::Float64 => write!(out, "{x:?}"),
        TensorDType::Float32 | TensorDType::Float16 | TensorDType::BFloat16 => {
            write!(out, "{:?}", x as f32)
        }
        TensorDType::UInt64 => write!(out, "{}", x as u64),
        _ => write!(out, "{}", x as i64),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(d: &BytesDecoder, cell: Cell<'_>) -> Result<Vec<f64>, String> {
        let mut out = Vec::new();
        d.numbers(cell, |_, x| {
            out.push(x);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn bytes_text_and_missing_cells() {
        let raw = BytesDecoder::DecodeRaw {
            out_type: TensorDType::UInt8,
            little_endian: true,
            fixed_length: None,
        };
        let f = Feature::BytesList(vec![vec![1, 2], vec![3, 250]]);
        assert_eq!(
            values(&raw, Cell::Feature(Some(&f))).unwrap(),
            [1.0, 2.0, 3.0, 250.0]
        );
        assert_eq!(
            values(&raw, Cell::Text(b" 1 2\t250 ")).unwrap(),
            [1.0, 2.0, 250.0]
        );
        assert_eq!(
            values(&raw, Cell::Text(b"256")).unwrap_err(),
            "256 is not a uint8 value"
        );
        assert!(values(&raw, Cell::Feature(None)).unwrap().is_empty());
        let uneven = Feature::BytesList(vec![vec![1, 2], vec![3]]);
        assert_eq!(
            values(&raw, Cell::Feature(Some(&uneven))).unwrap_err(),
            "DecodeRaw requires input strings to all be the same size, but element 1 has size 1 != 2"
        );
        let floats = Feature::FloatList(vec![1.0]);
        assert!(values(&raw, Cell::Feature(Some(&floats)))
            .unwrap_err()
            .contains("expected a bytes_list (decode_raw reads bytes)"));
        let tensor = BytesDecoder::ParseTensor {
            out_type: TensorDType::Float64,
            dims: vec![3],
        };
        let mut bytes = Vec::new();
        tensor.encode(&[0.5, -1.0, 1e300], &mut bytes);
        let f = Feature::BytesList(vec![bytes]);
        assert_eq!(
            values(&tensor, Cell::Feature(Some(&f))).unwrap(),
            [0.5, -1.0, 1e300]
        );
        let mut bytes = Vec::new();
        raw.encode(&[7.0, 255.0], &mut bytes);
        assert_eq!(bytes, [7, 255]);
    }
}
