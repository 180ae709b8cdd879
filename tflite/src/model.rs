//! A TFLite model in memory: the tables of `schema.fbs` as plain Rust values.
//!
//! Owns: [`Model`], [`OperatorCode`], [`SubGraph`], [`Tensor`],
//! [`Quantization`], [`Buffer`], [`Operator`], [`BuiltinOptions`],
//! [`Metadata`], [`SignatureDef`], [`TensorMap`], and the typed views of
//! constant buffers.
//! Invariants: field names and defaults are the schema's; `buffers[0]` is the
//! empty buffer every tensor without data points at (TFLite's convention);
//! indices are as the file stores them (i32 tensor indices, -1 for an optional
//! input that is absent) and are checked by [`Model::validate`], not assumed.

use crate::schema::{ActivationFunctionType, BuiltinOperator, Padding, TensorType};

/// `table Model`.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub version: u32,
    pub description: String,
    pub operator_codes: Vec<OperatorCode>,
    pub subgraphs: Vec<SubGraph>,
    pub buffers: Vec<Buffer>,
    pub metadata: Vec<Metadata>,
    pub signature_defs: Vec<SignatureDef>,
}

/// `table OperatorCode`: `builtin_code` (the `deprecated_builtin_code` byte
/// is derived from it when writing and reconciled with it when reading).
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorCode {
    pub builtin_code: BuiltinOperator,
    /// Set for custom operators (`BuiltinOperator::Other(32)`, CUSTOM).
    pub custom_code: Option<String>,
    pub version: i32,
}

/// `table SubGraph`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SubGraph {
    pub tensors: Vec<Tensor>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub operators: Vec<Operator>,
    pub name: String,
}

/// `table Tensor`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The shape with unknown dimensions as 1 (TFLite's convention).
    pub shape: Vec<i32>,
    /// The shape with unknown dimensions as -1, when any is unknown.
    pub shape_signature: Option<Vec<i32>>,
    pub tensor_type: TensorType,
    /// Index into `Model::buffers`; 0 for a tensor without constant data.
    pub buffer: u32,
    pub name: String,
    pub quantization: Option<Quantization>,
    /// A variable tensor (`is_variable`): state an operator keeps across
    /// time steps (the recurrent ops' `h` and `c`), zero at the start.
    pub is_variable: bool,
}

/// `table QuantizationParameters`: `real = scale * (q - zero_point)`, per
/// tensor (one scale) or per channel along `quantized_dimension`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Quantization {
    pub min: Vec<f32>,
    pub max: Vec<f32>,
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    pub quantized_dimension: i32,
}

/// `table Buffer`: raw little-endian bytes (empty for non-constant tensors).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Buffer {
    pub data: Vec<u8>,
}

/// `table Operator`.
#[derive(Clone, Debug, PartialEq)]
pub struct Operator {
    pub opcode_index: u32,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub options: BuiltinOptions,
}

/// `union BuiltinOptions`: the options tables of the operators specc writes.
#[derive(Clone, Debug, PartialEq)]
pub enum BuiltinOptions {
    None,
    FullyConnected {
        fused_activation_function: ActivationFunctionType,
        keep_num_dims: bool,
        asymmetric_quantize_inputs: bool,
    },
    Softmax {
        beta: f32,
    },
    Concatenation {
        axis: i32,
        fused_activation_function: ActivationFunctionType,
    },
    Add {
        fused_activation_function: ActivationFunctionType,
    },
    Sub {
        fused_activation_function: ActivationFunctionType,
    },
    Mul {
        fused_activation_function: ActivationFunctionType,
    },
    Div {
        fused_activation_function: ActivationFunctionType,
    },
    Reshape {
        new_shape: Vec<i32>,
    },
    Gather {
        axis: i32,
        batch_dims: i32,
    },
    /// `ReducerOptions` (SUM, MEAN, REDUCE_MAX).
    Reducer {
        keep_dims: bool,
    },
    ArgMax {
        output_type: TensorType,
    },
    Cast {
        in_data_type: TensorType,
        out_data_type: TensorType,
    },
    BatchMatMul {
        adj_x: bool,
        adj_y: bool,
    },
    /// `Conv2DOptions` (CONV_2D).
    Conv2D {
        padding: Padding,
        stride_w: i32,
        stride_h: i32,
        fused_activation_function: ActivationFunctionType,
        dilation_w_factor: i32,
        dilation_h_factor: i32,
    },
    /// `DepthwiseConv2DOptions` (DEPTHWISE_CONV_2D).
    DepthwiseConv2D {
        padding: Padding,
        stride_w: i32,
        stride_h: i32,
        depth_multiplier: i32,
        fused_activation_function: ActivationFunctionType,
        dilation_w_factor: i32,
        dilation_h_factor: i32,
    },
    /// `Pool2DOptions` (MAX_POOL_2D, AVERAGE_POOL_2D).
    Pool2D {
        padding: Padding,
        stride_w: i32,
        stride_h: i32,
        filter_width: i32,
        filter_height: i32,
        fused_activation_function: ActivationFunctionType,
    },
    /// `TransposeConvOptions` (TRANSPOSE_CONV).
    TransposeConv {
        padding: Padding,
        stride_w: i32,
        stride_h: i32,
        fused_activation_function: ActivationFunctionType,
    },
    /// `ShapeOptions` (SHAPE).
    Shape {
        out_type: TensorType,
    },
    /// `UnidirectionalSequenceLSTMOptions` (UNIDIRECTIONAL_SEQUENCE_LSTM):
    /// `fused_activation_function` is the cell's activation (of the
    /// candidate and of the cell state on output); a clip of 0 is none.
    SequenceLstm {
        fused_activation_function: ActivationFunctionType,
        cell_clip: f32,
        proj_clip: f32,
        time_major: bool,
        asymmetric_quantize_inputs: bool,
    },
    /// `SequenceRNNOptions` (UNIDIRECTIONAL_SEQUENCE_RNN).
    SequenceRnn {
        time_major: bool,
        fused_activation_function: ActivationFunctionType,
        asymmetric_quantize_inputs: bool,
    },
    /// `CallOnceOptions` (CALL_ONCE): the subgraph that runs once, before
    /// the first invocation's later operators (TF's converter puts the
    /// initialization of hash tables there).
    CallOnce {
        init_subgraph_index: i32,
    },
    /// `HashtableOptions` (HASHTABLE): the table's id (operators naming the
    /// same id, in any subgraph, share one table) and its key and value
    /// types (STRING to INT64, or INT64 to STRING).
    Hashtable {
        table_id: i32,
        key_dtype: TensorType,
        value_dtype: TensorType,
    },
    /// `BucketizeOptions` (BUCKETIZE): the sorted boundaries.
    Bucketize {
        boundaries: Vec<f32>,
    },
    /// An options table without fields (`TransposeOptions`, `ExpOptions`,
    /// `MaximumMinimumOptions`, `PadOptions`, `SliceOptions`,
    /// `SelectV2Options`), by its union type code.
    Empty(u8),
    /// An options table specc does not read, by its union type code.
    Other(u8),
}

impl BuiltinOptions {
    /// The union's type code.
    pub fn type_code(&self) -> u8 {
        use crate::schema::options_type as t;
        match self {
            BuiltinOptions::None => t::NONE,
            BuiltinOptions::FullyConnected { .. } => t::FULLY_CONNECTED,
            BuiltinOptions::Softmax { .. } => t::SOFTMAX,
            BuiltinOptions::Concatenation { .. } => t::CONCATENATION,
            BuiltinOptions::Add { .. } => t::ADD,
            BuiltinOptions::Sub { .. } => t::SUB,
            BuiltinOptions::Mul { .. } => t::MUL,
            BuiltinOptions::Div { .. } => t::DIV,
            BuiltinOptions::Reshape { .. } => t::RESHAPE,
            BuiltinOptions::Gather { .. } => t::GATHER,
            BuiltinOptions::Reducer { .. } => t::REDUCER,
            BuiltinOptions::ArgMax { .. } => t::ARG_MAX,
            BuiltinOptions::Cast { .. } => t::CAST,
            BuiltinOptions::BatchMatMul { .. } => t::BATCH_MATMUL,
            BuiltinOptions::Conv2D { .. } => t::CONV_2D,
            BuiltinOptions::DepthwiseConv2D { .. } => t::DEPTHWISE_CONV_2D,
            BuiltinOptions::Pool2D { .. } => t::POOL_2D,
            BuiltinOptions::TransposeConv { .. } => t::TRANSPOSE_CONV,
            BuiltinOptions::Shape { .. } => t::SHAPE,
            BuiltinOptions::SequenceLstm { .. } => t::UNIDIRECTIONAL_SEQUENCE_LSTM,
            BuiltinOptions::SequenceRnn { .. } => t::SEQUENCE_RNN,
            BuiltinOptions::CallOnce { .. } => t::CALL_ONCE,
            BuiltinOptions::Hashtable { .. } => t::HASHTABLE,
            BuiltinOptions::Bucketize { .. } => t::BUCKETIZE,
            BuiltinOptions::Empty(c) | BuiltinOptions::Other(c) => *c,
        }
    }

    /// The options as `inspect` prints them (`axis=1`), empty for none.
    pub fn describe(&self) -> String {
        match self {
            BuiltinOptions::None | BuiltinOptions::Empty(_) => String::new(),
            BuiltinOptions::FullyConnected {
                fused_activation_function: a,
                keep_num_dims,
                asymmetric_quantize_inputs,
            } => format!(
                "fused_activation_function={a} keep_num_dims={keep_num_dims} asymmetric_quantize_inputs={asymmetric_quantize_inputs}"
            ),
            BuiltinOptions::Softmax { beta } => format!("beta={beta}"),
            BuiltinOptions::Concatenation {
                axis,
                fused_activation_function: a,
            } => format!("axis={axis} fused_activation_function={a}"),
            BuiltinOptions::Add {
                fused_activation_function: a,
            }
            | BuiltinOptions::Sub {
                fused_activation_function: a,
            }
            | BuiltinOptions::Mul {
                fused_activation_function: a,
            }
            | BuiltinOptions::Div {
                fused_activation_function: a,
            } => format!("fused_activation_function={a}"),
            BuiltinOptions::Reshape { new_shape } => format!("new_shape={new_shape:?}"),
            BuiltinOptions::Gather { axis, batch_dims } => {
                format!("axis={axis} batch_dims={batch_dims}")
            }
            BuiltinOptions::Reducer { keep_dims } => format!("keep_dims={keep_dims}"),
            BuiltinOptions::ArgMax { output_type } => format!("output_type={output_type}"),
            BuiltinOptions::Cast {
                in_data_type,
                out_data_type,
            } => format!("in_data_type={in_data_type} out_data_type={out_data_type}"),
            BuiltinOptions::BatchMatMul { adj_x, adj_y } => {
                format!("adj_x={adj_x} adj_y={adj_y}")
            }
            BuiltinOptions::Conv2D {
                padding,
                stride_w,
                stride_h,
                fused_activation_function: a,
                dilation_w_factor,
                dilation_h_factor,
            } => format!(
                "padding={padding} stride_w={stride_w} stride_h={stride_h} dilation_w_factor={dilation_w_factor} dilation_h_factor={dilation_h_factor} fused_activation_function={a}"
            ),
            BuiltinOptions::DepthwiseConv2D {
                padding,
                stride_w,
                stride_h,
                depth_multiplier,
                fused_activation_function: a,
                dilation_w_factor,
                dilation_h_factor,
            } => format!(
                "padding={padding} stride_w={stride_w} stride_h={stride_h} depth_multiplier={depth_multiplier} dilation_w_factor={dilation_w_factor} dilation_h_factor={dilation_h_factor} fused_activation_function={a}"
            ),
            BuiltinOptions::Pool2D {
                padding,
                stride_w,
                stride_h,
                filter_width,
                filter_height,
                fused_activation_function: a,
            } => format!(
                "padding={padding} stride_w={stride_w} stride_h={stride_h} filter_width={filter_width} filter_height={filter_height} fused_activation_function={a}"
            ),
            BuiltinOptions::TransposeConv {
                padding,
                stride_w,
                stride_h,
                fused_activation_function: a,
            } => format!(
                "padding={padding} stride_w={stride_w} stride_h={stride_h} fused_activation_function={a}"
            ),
            BuiltinOptions::Shape { out_type } => format!("out_type={out_type}"),
            BuiltinOptions::SequenceLstm {
                fused_activation_function: a,
                cell_clip,
                proj_clip,
                time_major,
                asymmetric_quantize_inputs,
            } => format!(
                "fused_activation_function={a} cell_clip={cell_clip} proj_clip={proj_clip} time_major={time_major} asymmetric_quantize_inputs={asymmetric_quantize_inputs}"
            ),
            BuiltinOptions::SequenceRnn {
                time_major,
                fused_activation_function: a,
                asymmetric_quantize_inputs,
            } => format!(
                "fused_activation_function={a} time_major={time_major} asymmetric_quantize_inputs={asymmetric_quantize_inputs}"
            ),
            BuiltinOptions::CallOnce {
                init_subgraph_index,
            } => format!("init_subgraph_index={init_subgraph_index}"),
            BuiltinOptions::Hashtable {
                table_id,
                key_dtype,
                value_dtype,
            } => format!("table_id={table_id} key_dtype={key_dtype} value_dtype={value_dtype}"),
            BuiltinOptions::Bucketize { boundaries } => format!("boundaries={boundaries:?}"),
            BuiltinOptions::Other(c) => format!("(options type {c} not read)"),
        }
    }
}

/// `table Metadata`: a named buffer (`min_runtime_version`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub buffer: u32,
}

/// `table TensorMap`: a signature's name for a tensor of its subgraph.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMap {
    pub name: String,
    pub tensor_index: u32,
}

/// `table SignatureDef`.
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureDef {
    pub inputs: Vec<TensorMap>,
    pub outputs: Vec<TensorMap>,
    pub signature_key: String,
    pub subgraph_index: u32,
}

impl Model {
    /// The builtin operator of `op`, if its opcode index is valid.
    pub fn builtin(&self, op: &Operator) -> Option<BuiltinOperator> {
        self.operator_codes
            .get(op.opcode_index as usize)
            .map(|c| c.builtin_code)
    }

    /// The string stored in metadata `name` (NUL padding removed).
    pub fn metadata_string(&self, name: &str) -> Option<String> {
        let m = self.metadata.iter().find(|m| m.name == name)?;
        let data = &self.buffers.get(m.buffer as usize)?.data;
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        Some(String::from_utf8_lossy(&data[..end]).into_owned())
    }

    /// Checks every index (opcodes, tensors, buffers, signatures) and that
    /// constant buffers have the size their tensor's shape and type need.
    pub fn validate(&self) -> Result<(), String> {
        for (s, g) in self.subgraphs.iter().enumerate() {
            let n = g.tensors.len() as i64;
            let check = |what: &str, i: i32, optional: bool| -> Result<(), String> {
                if (i as i64) < n && (i >= 0 || (optional && i == -1)) {
                    Ok(())
                } else {
                    Err(format!(
                        "subgraph {s}: {what} names tensor {i}, but the subgraph has {n} tensors"
                    ))
                }
            };
            for &i in &g.inputs {
                check("an input", i, false)?;
            }
            for &i in &g.outputs {
                check("an output", i, false)?;
            }
            for (k, op) in g.operators.iter().enumerate() {
                if op.opcode_index as usize >= self.operator_codes.len() {
                    return Err(format!(
                        "subgraph {s}, operator {k}: opcode index {} out of range ({} operator codes)",
                        op.opcode_index,
                        self.operator_codes.len()
                    ));
                }
                for &i in &op.inputs {
                    check(&format!("operator {k}'s input"), i, true)?;
                }
                for &i in &op.outputs {
                    check(&format!("operator {k}'s output"), i, false)?;
                }
            }
            for (t, tensor) in g.tensors.iter().enumerate() {
                let Some(buffer) = self.buffers.get(tensor.buffer as usize) else {
                    return Err(format!(
                        "subgraph {s}, tensor {t} `{}`: buffer {} out of range ({} buffers)",
                        tensor.name,
                        tensor.buffer,
                        self.buffers.len()
                    ));
                };
                if tensor.shape.iter().any(|&d| d < 0) {
                    return Err(format!(
                        "subgraph {s}, tensor {t} `{}`: negative dimension in shape {:?}",
                        tensor.name, tensor.shape
                    ));
                }
                if !buffer.data.is_empty() {
                    if let Some(size) = tensor.tensor_type.size() {
                        let want = tensor
                            .shape
                            .iter()
                            .try_fold(size, |a, &d| a.checked_mul(d as usize));
                        if want != Some(buffer.data.len()) {
                            return Err(format!(
                                "subgraph {s}, tensor {t} `{}`: buffer {} holds {} bytes, but shape {:?} of {} needs {}",
                                tensor.name,
                                tensor.buffer,
                                buffer.data.len(),
                                tensor.shape,
                                tensor.tensor_type,
                                want.map_or("more than fits".to_string(), |w| w.to_string())
                            ));
                        }
                    }
                }
            }
        }
        for m in &self.metadata {
            if m.buffer as usize >= self.buffers.len() {
                return Err(format!(
                    "metadata `{}`: buffer {} out of range ({} buffers)",
                    m.name,
                    m.buffer,
                    self.buffers.len()
                ));
            }
        }
        for sig in &self.signature_defs {
            let Some(g) = self.subgraphs.get(sig.subgraph_index as usize) else {
                return Err(format!(
                    "signature `{}`: subgraph {} out of range",
                    sig.signature_key, sig.subgraph_index
                ));
            };
            for m in sig.inputs.iter().chain(&sig.outputs) {
                if m.tensor_index as usize >= g.tensors.len() {
                    return Err(format!(
                        "signature `{}`: `{}` names tensor {}, but the subgraph has {} tensors",
                        sig.signature_key,
                        m.name,
                        m.tensor_index,
                        g.tensors.len()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Little-endian bytes of f32 values (a constant buffer's data).
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian bytes of i32 values.
pub fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The f32 values of little-endian bytes (`None` when the length is not a multiple of 4).
pub fn f32_values(data: &[u8]) -> Option<Vec<f32>> {
    data.len().is_multiple_of(4).then(|| {
        data.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// The i32 values of little-endian bytes (`None` when the length is not a multiple of 4).
pub fn i32_values(data: &[u8]) -> Option<Vec<i32>> {
    data.len().is_multiple_of(4).then(|| {
        data.chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// The i64 values of little-endian bytes (`None` when the length is not a multiple of 8).
pub fn i64_values(data: &[u8]) -> Option<Vec<i64>> {
    data.len().is_multiple_of(8).then(|| {
        data.chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect()
    })
}

/// A STRING tensor's buffer in TFLite's format (`string_util.h`): the
/// count `n` (i32), `n + 1` offsets (i32, from the buffer's start; the
/// last is its length), then the strings' bytes.
pub fn string_bytes<S: AsRef<[u8]>>(strings: &[S]) -> Vec<u8> {
    let n = strings.len();
    let mut offset = 4 * (n + 2);
    let mut out =
        Vec::with_capacity(offset + strings.iter().map(|s| s.as_ref().len()).sum::<usize>());
    out.extend_from_slice(&(n as i32).to_le_bytes());
    for s in strings {
        out.extend_from_slice(&(offset as i32).to_le_bytes());
        offset += s.as_ref().len();
    }
    out.extend_from_slice(&(offset as i32).to_le_bytes());
    for s in strings {
        out.extend_from_slice(s.as_ref());
    }
    out
}

/// The strings of a STRING tensor's buffer ([`string_bytes`]'s format;
/// `None` when the count or an offset does not fit the buffer).
pub fn string_values(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    let word = |i: usize| -> Option<usize> {
        let b = data.get(4 * i..4 * i + 4)?;
        usize::try_from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    let n = word(0)?;
    if n.checked_add(2)?.checked_mul(4)? > data.len() {
        return None;
    }
    (0..n)
        .map(|i| {
            let (start, end) = (word(1 + i)?, word(2 + i)?);
            (start <= end).then_some(())?;
            data.get(start..end).map(<[u8]>::to_vec)
        })
        .collect()
}
