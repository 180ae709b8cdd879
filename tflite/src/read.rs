//! Reading a TFLite flatbuffer into a [`Model`].
//!
//! Owns: [`from_bytes`], [`read_file`] and a small bounds-checked flatbuffer
//! reader (tables, vtables, vectors, strings) written for it.
//! Invariants: every offset is checked against the buffer before it is
//! followed, so a truncated or corrupt file is an error naming what was being
//! read, never a panic or an out-of-bounds read; vectors are bounded by the
//! file's size before anything is allocated; the result passes
//! [`Model::validate`].

use std::path::Path;

use crate::model::{
    Buffer, BuiltinOptions, Metadata, Model, Operator, OperatorCode, Quantization, SignatureDef,
    SubGraph, Tensor, TensorMap,
};
use crate::schema::{
    field as f, options_type as ot, ActivationFunctionType, BuiltinOperator, Padding, TensorType,
    FILE_IDENTIFIER, PLACEHOLDER_FOR_GREATER_OP_CODES,
};

type Result<T> = std::result::Result<T, String>;

/// Reads `path` as a TFLite model; errors name the file.
pub fn read_file(path: &Path) -> Result<Model> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether `bytes` start like a TFLite flatbuffer (identifier `TFL3` at 4..8).
pub fn looks_like_tflite(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && &bytes[4..8] == FILE_IDENTIFIER.as_bytes()
}

/// Parses a TFLite flatbuffer.
pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
    if !looks_like_tflite(bytes) {
        return Err(format!(
            "not a TensorFlow Lite model (no `{FILE_IDENTIFIER}` file identifier at byte 4)"
        ));
    }
    let buf = Buf(bytes);
    let root = buf.table(buf.uoffset(0, "the root table offset")?, "Model")?;
    let model = read_model(&root)?;
    model.validate()?;
    Ok(model)
}

#[derive(Clone, Copy)]
struct Buf<'a>(&'a [u8]);

impl<'a> Buf<'a> {
    fn bytes(&self, pos: usize, n: usize, what: &str) -> Result<&'a [u8]> {
        pos.checked_add(n)
            .and_then(|end| self.0.get(pos..end))
            .ok_or_else(|| format!("truncated or corrupt file: {what} at byte {pos} lies outside the file ({} bytes)", self.0.len()))
    }
    fn u16(&self, pos: usize, what: &str) -> Result<u16> {
        let b = self.bytes(pos, 2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&self, pos: usize, what: &str) -> Result<u32> {
        let b = self.bytes(pos, 4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// The position a `uoffset_t` stored at `pos` points to.
    fn uoffset(&self, pos: usize, what: &str) -> Result<usize> {
        let off = self.u32(pos, what)? as usize;
        pos.checked_add(off)
            .filter(|&p| p < self.0.len())
            .ok_or_else(|| format!("corrupt file: {what} at byte {pos} points outside the file"))
    }
    fn table(&self, pos: usize, what: &'static str) -> Result<Table<'a>> {
        let soff = self.u32(pos, what)? as i32 as i64;
        let vt = pos as i64 - soff;
        if vt < 0 || vt as usize >= self.0.len() {
            return Err(format!(
                "corrupt file: the vtable of {what} at byte {pos} lies outside the file"
            ));
        }
        let vt = vt as usize;
        let vt_len = self.u16(vt, what)?;
        self.bytes(vt, vt_len as usize, what)?;
        Ok(Table {
            buf: *self,
            pos,
            vt,
            vt_len,
            what,
        })
    }
}

struct Table<'a> {
    buf: Buf<'a>,
    pos: usize,
    vt: usize,
    vt_len: u16,
    what: &'static str,
}

impl<'a> Table<'a> {
    fn field(&self, vo: u16) -> Result<Option<usize>> {
        if vo + 2 > self.vt_len {
            return Ok(None);
        }
        let off = self.buf.u16(self.vt + vo as usize, self.what)?;
        Ok((off != 0).then_some(self.pos + off as usize))
    }
    fn scalar<const N: usize>(&self, vo: u16) -> Result<Option<[u8; N]>> {
        match self.field(vo)? {
            None => Ok(None),
            Some(p) => {
                let b = self.buf.bytes(p, N, self.what)?;
                let mut a = [0u8; N];
                a.copy_from_slice(b);
                Ok(Some(a))
            }
        }
    }
    fn u8(&self, vo: u16) -> Result<u8> {
        Ok(self.scalar::<1>(vo)?.map_or(0, |b| b[0]))
    }
    fn i8(&self, vo: u16) -> Result<i8> {
        Ok(self.u8(vo)? as i8)
    }
    fn bool(&self, vo: u16) -> Result<bool> {
        Ok(self.u8(vo)? != 0)
    }
    fn i32(&self, vo: u16, default: i32) -> Result<i32> {
        Ok(self.scalar::<4>(vo)?.map_or(default, i32::from_le_bytes))
    }
    fn u32(&self, vo: u16) -> Result<u32> {
        Ok(self.scalar::<4>(vo)?.map_or(0, u32::from_le_bytes))
    }
    fn f32(&self, vo: u16, default: f32) -> Result<f32> {
        Ok(self.scalar::<4>(vo)?.map_or(default, f32::from_le_bytes))
    }
    /// The start and length of a vector field with `elem`-byte elements.
    fn vector(&self, vo: u16, elem: usize) -> Result<Option<(usize, usize)>> {
        let Some(p) = self.field(vo)? else {
            return Ok(None);
        };
        let start = self.buf.uoffset(p, self.what)?;
        let len = self.buf.u32(start, self.what)? as usize;
        let bytes = len
            .checked_mul(elem)
            .ok_or("corrupt file: vector too long")?;
        self.buf.bytes(start + 4, bytes, self.what)?;
        Ok(Some((start + 4, len)))
    }
    fn bytes(&self, vo: u16) -> Result<&'a [u8]> {
        match self.vector(vo, 1)? {
            None => Ok(&[]),
            Some((start, len)) => self.buf.bytes(start, len, self.what),
        }
    }
    fn string(&self, vo: u16) -> Result<String> {
        Ok(String::from_utf8_lossy(self.bytes(vo)?).into_owned())
    }
    fn opt_string(&self, vo: u16) -> Result<Option<String>> {
        Ok(match self.field(vo)? {
            None => None,
            Some(_) => Some(self.string(vo)?),
        })
    }
    fn i32s(&self, vo: u16) -> Result<Vec<i32>> {
        self.fixed::<4, i32>(vo, i32::from_le_bytes)
    }
    fn fixed<const N: usize, T>(&self, vo: u16, conv: fn([u8; N]) -> T) -> Result<Vec<T>> {
        let Some((start, len)) = self.vector(vo, N)? else {
            return Ok(Vec::new());
        };
        let bytes = self.buf.bytes(start, len * N, self.what)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                conv(a)
            })
            .collect())
    }
    fn opt_i32s(&self, vo: u16) -> Result<Option<Vec<i32>>> {
        Ok(match self.field(vo)? {
            None => None,
            Some(_) => Some(self.i32s(vo)?),
        })
    }
    fn table(&self, vo: u16, what: &'static str) -> Result<Option<Table<'a>>> {
        match self.field(vo)? {
            None => Ok(None),
            Some(p) => Ok(Some(self.buf.table(self.buf.uoffset(p, what)?, what)?)),
        }
    }
    fn tables(&self, vo: u16, what: &'static str) -> Result<Vec<Table<'a>>> {
        let Some((start, len)) = self.vector(vo, 4)? else {
            return Ok(Vec::new());
        };
        (0..len)
            .map(|i| {
                let p = start + 4 * i;
                self.buf.table(self.buf.uoffset(p, what)?, what)
            })
            .collect()
    }
}

fn read_model(t: &Table<'_>) -> Result<Model> {
    use f::model as m;
    Ok(Model {
        version: t.u32(m::VERSION)?,
        description: t.string(m::DESCRIPTION)?,
        operator_codes: t
            .tables(m::OPERATOR_CODES, "OperatorCode")?
            .iter()
            .map(read_operator_code)
            .collect::<Result<_>>()?,
        subgraphs: t
            .tables(m::SUBGRAPHS, "SubGraph")?
            .iter()
            .map(read_subgraph)
            .collect::<Result<_>>()?,
        buffers: t
            .tables(m::BUFFERS, "Buffer")?
            .iter()
            .map(|b| {
                Ok(Buffer {
                    data: b.bytes(f::buffer::DATA)?.to_vec(),
                })
            })
            .collect::<Result<_>>()?,
        metadata: t
            .tables(m::METADATA, "Metadata")?
            .iter()
            .map(|x| {
                Ok(Metadata {
                    name: x.string(f::metadata::NAME)?,
                    buffer: x.u32(f::metadata::BUFFER)?,
                })
            })
            .collect::<Result<_>>()?,
        signature_defs: t
            .tables(m::SIGNATURE_DEFS, "SignatureDef")?
            .iter()
            .map(read_signature)
            .collect::<Result<_>>()?,
    })
}

fn read_operator_code(t: &Table<'_>) -> Result<OperatorCode> {
    use f::operator_code as c;
    let deprecated = t.i8(c::DEPRECATED_BUILTIN_CODE)?;
    let builtin = t.i32(c::BUILTIN_CODE, 0)?;
    // Files from before `builtin_code` existed have only the byte (TFLite's
    // GetBuiltinCode: the larger of the two).
    let code = if deprecated != PLACEHOLDER_FOR_GREATER_OP_CODES {
        builtin.max(deprecated as i32)
    } else {
        builtin
    };
    Ok(OperatorCode {
        builtin_code: BuiltinOperator::from_code(code),
        custom_code: t.opt_string(c::CUSTOM_CODE)?,
        version: t.i32(c::VERSION, 1)?,
    })
}

fn read_subgraph(t: &Table<'_>) -> Result<SubGraph> {
    use f::subgraph as s;
    Ok(SubGraph {
        tensors: t
            .tables(s::TENSORS, "Tensor")?
            .iter()
            .map(read_tensor)
            .collect::<Result<_>>()?,
        inputs: t.i32s(s::INPUTS)?,
        outputs: t.i32s(s::OUTPUTS)?,
        operators: t
            .tables(s::OPERATORS, "Operator")?
            .iter()
            .map(read_operator)
            .collect::<Result<_>>()?,
        name: t.string(s::NAME)?,
    })
}

fn read_tensor(t: &Table<'_>) -> Result<Tensor> {
    use f::tensor as x;
    let quantization = match t.table(x::QUANTIZATION, "QuantizationParameters")? {
        None => None,
        Some(q) => {
            use f::quantization as qf;
            Some(Quantization {
                min: q.fixed::<4, f32>(qf::MIN, f32::from_le_bytes)?,
                max: q.fixed::<4, f32>(qf::MAX, f32::from_le_bytes)?,
                scale: q.fixed::<4, f32>(qf::SCALE, f32::from_le_bytes)?,
                zero_point: q.fixed::<8, i64>(qf::ZERO_POINT, i64::from_le_bytes)?,
                quantized_dimension: q.i32(qf::QUANTIZED_DIMENSION, 0)?,
            })
        }
    };
    Ok(Tensor {
        shape: t.i32s(x::SHAPE)?,
        shape_signature: t.opt_i32s(x::SHAPE_SIGNATURE)?,
        tensor_type: TensorType::from_code(t.i8(x::TYPE)?),
        buffer: t.u32(x::BUFFER)?,
        name: t.string(x::NAME)?,
        quantization,
        is_variable: t.bool(x::IS_VARIABLE)?,
    })
}

fn read_operator(t: &Table<'_>) -> Result<Operator> {
    use f::operator as o;
    let kind = t.u8(o::BUILTIN_OPTIONS_TYPE)?;
    let options = match t.table(o::BUILTIN_OPTIONS, "BuiltinOptions")? {
        None => BuiltinOptions::None,
        Some(x) => read_options(kind, &x)?,
    };
    Ok(Operator {
        opcode_index: t.u32(o::OPCODE_INDEX)?,
        inputs: t.i32s(o::INPUTS)?,
        outputs: t.i32s(o::OUTPUTS)?,
        options,
    })
}

fn read_options(kind: u8, t: &Table<'_>) -> Result<BuiltinOptions> {
    let act = |vo| t.i8(vo).map(ActivationFunctionType::from_code);
    Ok(match kind {
        ot::NONE => BuiltinOptions::None,
        ot::FULLY_CONNECTED => BuiltinOptions::FullyConnected {
            fused_activation_function: act(f::FIRST)?,
            keep_num_dims: t.bool(f::THIRD)?,
            asymmetric_quantize_inputs: t.bool(10)?,
        },
        ot::SOFTMAX => BuiltinOptions::Softmax {
            beta: t.f32(f::FIRST, 0.0)?,
        },
        ot::CONCATENATION => BuiltinOptions::Concatenation {
            axis: t.i32(f::FIRST, 0)?,
            fused_activation_function: act(f::SECOND)?,
        },
        ot::ADD => BuiltinOptions::Add {
            fused_activation_function: act(f::FIRST)?,
        },
        ot::SUB => BuiltinOptions::Sub {
            fused_activation_function: act(f::FIRST)?,
        },
        ot::MUL => BuiltinOptions::Mul {
            fused_activation_function: act(f::FIRST)?,
        },
        ot::DIV => BuiltinOptions::Div {
            fused_activation_function: act(f::FIRST)?,
        },
        ot::RESHAPE => BuiltinOptions::Reshape {
            new_shape: t.i32s(f::FIRST)?,
        },
        ot::GATHER => BuiltinOptions::Gather {
            axis: t.i32(f::FIRST, 0)?,
            batch_dims: t.i32(f::SECOND, 0)?,
        },
        ot::REDUCER => BuiltinOptions::Reducer {
            keep_dims: t.bool(f::FIRST)?,
        },
        ot::ARG_MAX => BuiltinOptions::ArgMax {
            output_type: TensorType::from_code(t.i8(f::FIRST)?),
        },
        ot::CAST => BuiltinOptions::Cast {
            in_data_type: TensorType::from_code(t.i8(f::FIRST)?),
            out_data_type: TensorType::from_code(t.i8(f::SECOND)?),
        },
        ot::BATCH_MATMUL => BuiltinOptions::BatchMatMul {
            adj_x: t.bool(f::FIRST)?,
            adj_y: t.bool(f::SECOND)?,
        },
        ot::CONV_2D => BuiltinOptions::Conv2D {
            padding: Padding::from_code(t.i8(f::FIRST)?),
            stride_w: t.i32(f::SECOND, 0)?,
            stride_h: t.i32(f::THIRD, 0)?,
            fused_activation_function: act(f::FOURTH)?,
            dilation_w_factor: t.i32(f::FIFTH, 1)?,
            dilation_h_factor: t.i32(f::SIXTH, 1)?,
        },
        ot::DEPTHWISE_CONV_2D => BuiltinOptions::DepthwiseConv2D {
            padding: Padding::from_code(t.i8(f::FIRST)?),
            stride_w: t.i32(f::SECOND, 0)?,
            stride_h: t.i32(f::THIRD, 0)?,
            depth_multiplier: t.i32(f::FOURTH, 0)?,
            fused_activation_function: act(f::FIFTH)?,
            dilation_w_factor: t.i32(f::SIXTH, 1)?,
            dilation_h_factor: t.i32(f::SEVENTH, 1)?,
        },
        ot::POOL_2D => BuiltinOptions::Pool2D {
            padding: Padding::from_code(t.i8(f::FIRST)?),
            stride_w: t.i32(f::SECOND, 0)?,
            stride_h: t.i32(f::THIRD, 0)?,
            filter_width: t.i32(f::FOURTH, 0)?,
            filter_height: t.i32(f::FIFTH, 0)?,
            fused_activation_function: act(f::SIXTH)?,
        },
        ot::TRANSPOSE_CONV => BuiltinOptions::TransposeConv {
            padding: Padding::from_code(t.i8(f::FIRST)?),
            stride_w: t.i32(f::SECOND, 0)?,
            stride_h: t.i32(f::THIRD, 0)?,
            fused_activation_function: act(f::FOURTH)?,
        },
        ot::SHAPE => BuiltinOptions::Shape {
            out_type: TensorType::from_code(t.i8(f::FIRST)?),
        },
        ot::UNIDIRECTIONAL_SEQUENCE_LSTM => BuiltinOptions::SequenceLstm {
            fused_activation_function: act(f::FIRST)?,
            cell_clip: t.f32(f::SECOND, 0.0)?,
            proj_clip: t.f32(f::THIRD, 0.0)?,
            time_major: t.bool(f::FOURTH)?,
            asymmetric_quantize_inputs: t.bool(f::FIFTH)?,
        },
        ot::SEQUENCE_RNN => BuiltinOptions::SequenceRnn {
            time_major: t.bool(f::FIRST)?,
            fused_activation_function: act(f::SECOND)?,
            asymmetric_quantize_inputs: t.bool(f::THIRD)?,
        },
        ot::CALL_ONCE => BuiltinOptions::CallOnce {
            init_subgraph_index: t.i32(f::FIRST, 0)?,
        },
        ot::HASHTABLE => BuiltinOptions::Hashtable {
            table_id: t.i32(f::FIRST, 0)?,
            key_dtype: TensorType::from_code(t.i8(f::SECOND)?),
            value_dtype: TensorType::from_code(t.i8(f::THIRD)?),
        },
        ot::BUCKETIZE => BuiltinOptions::Bucketize {
            boundaries: t.fixed::<4, f32>(f::FIRST, f32::from_le_bytes)?,
        },
        ot::TRANSPOSE | ot::EXP | ot::MAXIMUM_MINIMUM | ot::PAD | ot::SLICE | ot::SELECT_V2 => {
            BuiltinOptions::Empty(kind)
        }
        other => BuiltinOptions::Other(other),
    })
}

fn read_signature(t: &Table<'_>) -> Result<SignatureDef> {
    use f::signature_def as s;
    let maps = |vo| -> Result<Vec<TensorMap>> {
        t.tables(vo, "TensorMap")?
            .iter()
            .map(|m| {
                Ok(TensorMap {
                    name: m.string(f::tensor_map::NAME)?,
                    tensor_index: m.u32(f::tensor_map::TENSOR_INDEX)?,
                })
            })
            .collect()
    };
    Ok(SignatureDef {
        inputs: maps(s::INPUTS)?,
        outputs: maps(s::OUTPUTS)?,
        signature_key: t.string(s::SIGNATURE_KEY)?,
        subgraph_index: t.u32(s::SUBGRAPH_INDEX)?,
    })
}
