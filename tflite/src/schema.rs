//! The numbers of TFLite's `schema.fbs` (version 3) that specc reads and writes.
//!
//! Owns: [`TensorType`], [`BuiltinOperator`], [`ActivationFunctionType`], the
//! `BuiltinOptions` union's type codes and the vtable offset of every field
//! specc uses (a field's offset is `4 + 2 * its index` in the table).
//! Invariant: every number here is the schema's (checked against
//! `tensorflow/lite/python/schema_py_generated.py` of TF 2.21); codes specc
//! does not know are kept as numbers (`Other`), never mapped to a wrong name.

use std::fmt;

/// The file identifier of a TFLite flatbuffer (bytes 4..8).
pub const FILE_IDENTIFIER: &str = "TFL3";
/// `Model.version` of schema version 3.
pub const SCHEMA_VERSION: u32 = 3;

/// `enum TensorType : byte`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorType {
    Float32,
    Int32,
    Uint8,
    Int64,
    Bool,
    Int16,
    Int8,
    /// Strings: a buffer of TFLite's string format (the count, the offsets,
    /// the bytes; `model::string_bytes`).
    String,
    /// A resource handle (a hash table's, from HASHTABLE): no data in the
    /// file.
    Resource,
    /// A type specc does not handle, by its schema number.
    Other(i8),
}

impl TensorType {
    pub fn code(self) -> i8 {
        match self {
            TensorType::Float32 => 0,
            TensorType::Int32 => 2,
            TensorType::Uint8 => 3,
            TensorType::Int64 => 4,
            TensorType::Bool => 6,
            TensorType::Int16 => 7,
            TensorType::Int8 => 9,
            TensorType::String => 5,
            TensorType::Resource => 13,
            TensorType::Other(c) => c,
        }
    }

    pub fn from_code(c: i8) -> TensorType {
        match c {
            0 => TensorType::Float32,
            2 => TensorType::Int32,
            3 => TensorType::Uint8,
            4 => TensorType::Int64,
            6 => TensorType::Bool,
            7 => TensorType::Int16,
            9 => TensorType::Int8,
            5 => TensorType::String,
            13 => TensorType::Resource,
            c => TensorType::Other(c),
        }
    }

    /// Bytes of one element (`None` for strings, resources and the types
    /// specc does not handle).
    pub fn size(self) -> Option<usize> {
        match self {
            TensorType::Float32 | TensorType::Int32 => Some(4),
            TensorType::Int64 => Some(8),
            TensorType::Int16 => Some(2),
            TensorType::Uint8 | TensorType::Bool | TensorType::Int8 => Some(1),
            TensorType::String | TensorType::Resource | TensorType::Other(_) => None,
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorType::Float32 => f.write_str("FLOAT32"),
            TensorType::Int32 => f.write_str("INT32"),
            TensorType::Uint8 => f.write_str("UINT8"),
            TensorType::Int64 => f.write_str("INT64"),
            TensorType::Bool => f.write_str("BOOL"),
            TensorType::Int16 => f.write_str("INT16"),
            TensorType::Int8 => f.write_str("INT8"),
            TensorType::String => f.write_str("STRING"),
            TensorType::Resource => f.write_str("RESOURCE"),
            TensorType::Other(c) => write!(f, "TensorType({c})"),
        }
    }
}

macro_rules! builtin_operators {
    ($($name:ident = $code:literal => $text:literal,)*) => {
        /// `enum BuiltinOperator : int32`: the operators specc exports and runs.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BuiltinOperator {
            $($name,)*
            /// An operator specc does not know, by its schema number.
            Other(i32),
        }

        impl BuiltinOperator {
            pub fn code(self) -> i32 {
                match self {
                    $(BuiltinOperator::$name => $code,)*
                    BuiltinOperator::Other(c) => c,
                }
            }

            pub fn from_code(c: i32) -> BuiltinOperator {
                match c {
                    $($code => BuiltinOperator::$name,)*
                    c => BuiltinOperator::Other(c),
                }
            }

            /// The schema's name (`FULLY_CONNECTED`).
            pub fn name(self) -> std::borrow::Cow<'static, str> {
                match self {
                    $(BuiltinOperator::$name => $text.into(),)*
                    BuiltinOperator::Other(c) => format!("BuiltinOperator({c})").into(),
                }
            }
        }
    };
}

builtin_operators! {
    Add = 0 => "ADD",
    AveragePool2d = 1 => "AVERAGE_POOL_2D",
    Concatenation = 2 => "CONCATENATION",
    Conv2d = 3 => "CONV_2D",
    DepthwiseConv2d = 4 => "DEPTHWISE_CONV_2D",
    Dequantize = 6 => "DEQUANTIZE",
    Floor = 8 => "FLOOR",
    FullyConnected = 9 => "FULLY_CONNECTED",
    Logistic = 14 => "LOGISTIC",
    MaxPool2d = 17 => "MAX_POOL_2D",
    Mul = 18 => "MUL",
    Relu = 19 => "RELU",
    Reshape = 22 => "RESHAPE",
    Softmax = 25 => "SOFTMAX",
    Tanh = 28 => "TANH",
    Pad = 34 => "PAD",
    UnidirectionalSequenceRnn = 35 => "UNIDIRECTIONAL_SEQUENCE_RNN",
    Gather = 36 => "GATHER",
    Transpose = 39 => "TRANSPOSE",
    Mean = 40 => "MEAN",
    Sub = 41 => "SUB",
    Div = 42 => "DIV",
    UnidirectionalSequenceLstm = 44 => "UNIDIRECTIONAL_SEQUENCE_LSTM",
    Exp = 47 => "EXP",
    LogSoftmax = 50 => "LOG_SOFTMAX",
    BidirectionalSequenceLstm = 52 => "BIDIRECTIONAL_SEQUENCE_LSTM",
    Cast = 53 => "CAST",
    Maximum = 55 => "MAXIMUM",
    ArgMax = 56 => "ARG_MAX",
    Minimum = 57 => "MINIMUM",
    Less = 58 => "LESS",
    Neg = 59 => "NEG",
    Greater = 61 => "GREATER",
    GreaterEqual = 62 => "GREATER_EQUAL",
    LessEqual = 63 => "LESS_EQUAL",
    Slice = 65 => "SLICE",
    Sin = 66 => "SIN",
    TransposeConv = 67 => "TRANSPOSE_CONV",
    Equal = 71 => "EQUAL",
    NotEqual = 72 => "NOT_EQUAL",
    Log = 73 => "LOG",
    Sum = 74 => "SUM",
    Sqrt = 75 => "SQRT",
    Rsqrt = 76 => "RSQRT",
    Shape = 77 => "SHAPE",
    Pow = 78 => "POW",
    ReduceMax = 82 => "REDUCE_MAX",
    Square = 92 => "SQUARE",
    Abs = 101 => "ABS",
    Ceil = 104 => "CEIL",
    Cos = 108 => "COS",
    Quantize = 114 => "QUANTIZE",
    SelectV2 = 123 => "SELECT_V2",
    BatchMatmul = 126 => "BATCH_MATMUL",
    CallOnce = 129 => "CALL_ONCE",
    BroadcastTo = 130 => "BROADCAST_TO",
    Hashtable = 136 => "HASHTABLE",
    HashtableFind = 137 => "HASHTABLE_FIND",
    HashtableImport = 138 => "HASHTABLE_IMPORT",
    HashtableSize = 139 => "HASHTABLE_SIZE",
    Bucketize = 147 => "BUCKETIZE",
    Sign = 158 => "SIGN",
}

/// `OperatorCode.deprecated_builtin_code` holds codes up to 127; larger ones
/// are this placeholder there and live in `builtin_code`.
pub const PLACEHOLDER_FOR_GREATER_OP_CODES: i8 = 127;

/// `enum ActivationFunctionType : byte` (the fused activation of an operator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ActivationFunctionType {
    #[default]
    None,
    Relu,
    ReluN1To1,
    Relu6,
    Tanh,
    SignBit,
    Other(i8),
}

impl ActivationFunctionType {
    pub fn code(self) -> i8 {
        match self {
            ActivationFunctionType::None => 0,
            ActivationFunctionType::Relu => 1,
            ActivationFunctionType::ReluN1To1 => 2,
            ActivationFunctionType::Relu6 => 3,
            ActivationFunctionType::Tanh => 4,
            ActivationFunctionType::SignBit => 5,
            ActivationFunctionType::Other(c) => c,
        }
    }

    pub fn from_code(c: i8) -> ActivationFunctionType {
        match c {
            0 => ActivationFunctionType::None,
            1 => ActivationFunctionType::Relu,
            2 => ActivationFunctionType::ReluN1To1,
            3 => ActivationFunctionType::Relu6,
            4 => ActivationFunctionType::Tanh,
            5 => ActivationFunctionType::SignBit,
            c => ActivationFunctionType::Other(c),
        }
    }
}

impl fmt::Display for ActivationFunctionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActivationFunctionType::None => f.write_str("NONE"),
            ActivationFunctionType::Relu => f.write_str("RELU"),
            ActivationFunctionType::ReluN1To1 => f.write_str("RELU_N1_TO_1"),
            ActivationFunctionType::Relu6 => f.write_str("RELU6"),
            ActivationFunctionType::Tanh => f.write_str("TANH"),
            ActivationFunctionType::SignBit => f.write_str("SIGN_BIT"),
            ActivationFunctionType::Other(c) => write!(f, "ActivationFunctionType({c})"),
        }
    }
}

/// `enum Padding : byte` of the convolution and pooling options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Padding {
    #[default]
    Same,
    Valid,
    Other(i8),
}

impl Padding {
    pub fn code(self) -> i8 {
        match self {
            Padding::Same => 0,
            Padding::Valid => 1,
            Padding::Other(c) => c,
        }
    }

    pub fn from_code(c: i8) -> Padding {
        match c {
            0 => Padding::Same,
            1 => Padding::Valid,
            c => Padding::Other(c),
        }
    }
}

impl fmt::Display for Padding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Padding::Same => f.write_str("SAME"),
            Padding::Valid => f.write_str("VALID"),
            Padding::Other(c) => write!(f, "Padding({c})"),
        }
    }
}

/// Type codes of `union BuiltinOptions`.
pub mod options_type {
    pub const NONE: u8 = 0;
    pub const CONV_2D: u8 = 1;
    pub const DEPTHWISE_CONV_2D: u8 = 2;
    pub const POOL_2D: u8 = 5;
    pub const FULLY_CONNECTED: u8 = 8;
    pub const SOFTMAX: u8 = 9;
    pub const CONCATENATION: u8 = 10;
    pub const ADD: u8 = 11;
    pub const RESHAPE: u8 = 17;
    pub const MUL: u8 = 21;
    pub const PAD: u8 = 22;
    pub const GATHER: u8 = 23;
    pub const TRANSPOSE: u8 = 26;
    pub const REDUCER: u8 = 27;
    pub const SUB: u8 = 28;
    pub const SEQUENCE_RNN: u8 = 31;
    pub const DIV: u8 = 29;
    pub const EXP: u8 = 33;
    pub const CAST: u8 = 37;
    pub const MAXIMUM_MINIMUM: u8 = 39;
    pub const ARG_MAX: u8 = 40;
    pub const SLICE: u8 = 48;
    pub const TRANSPOSE_CONV: u8 = 49;
    pub const SHAPE: u8 = 55;
    pub const BIDIRECTIONAL_SEQUENCE_LSTM: u8 = 69;
    pub const UNIDIRECTIONAL_SEQUENCE_LSTM: u8 = 71;
    pub const SELECT_V2: u8 = 98;
    pub const BATCH_MATMUL: u8 = 101;
    pub const CALL_ONCE: u8 = 103;
    pub const HASHTABLE: u8 = 107;
    pub const HASHTABLE_FIND: u8 = 108;
    pub const HASHTABLE_IMPORT: u8 = 109;
    pub const HASHTABLE_SIZE: u8 = 110;
    pub const BUCKETIZE: u8 = 115;
}

/// Vtable offsets of the fields specc reads and writes, per table.
pub mod field {
    pub mod model {
        pub const VERSION: u16 = 4;
        pub const OPERATOR_CODES: u16 = 6;
        pub const SUBGRAPHS: u16 = 8;
        pub const DESCRIPTION: u16 = 10;
        pub const BUFFERS: u16 = 12;
        pub const METADATA: u16 = 16;
        pub const SIGNATURE_DEFS: u16 = 18;
    }
    pub mod subgraph {
        pub const TENSORS: u16 = 4;
        pub const INPUTS: u16 = 6;
        pub const OUTPUTS: u16 = 8;
        pub const OPERATORS: u16 = 10;
        pub const NAME: u16 = 12;
    }
    pub mod tensor {
        pub const SHAPE: u16 = 4;
        pub const TYPE: u16 = 6;
        pub const BUFFER: u16 = 8;
        pub const NAME: u16 = 10;
        pub const QUANTIZATION: u16 = 12;
        pub const IS_VARIABLE: u16 = 14;
        pub const SHAPE_SIGNATURE: u16 = 18;
    }
    pub mod quantization {
        pub const MIN: u16 = 4;
        pub const MAX: u16 = 6;
        pub const SCALE: u16 = 8;
        pub const ZERO_POINT: u16 = 10;
        pub const QUANTIZED_DIMENSION: u16 = 16;
    }
    pub mod buffer {
        pub const DATA: u16 = 4;
    }
    pub mod operator_code {
        pub const DEPRECATED_BUILTIN_CODE: u16 = 4;
        pub const CUSTOM_CODE: u16 = 6;
        pub const VERSION: u16 = 8;
        pub const BUILTIN_CODE: u16 = 10;
    }
    pub mod operator {
        pub const OPCODE_INDEX: u16 = 4;
        pub const INPUTS: u16 = 6;
        pub const OUTPUTS: u16 = 8;
        pub const BUILTIN_OPTIONS_TYPE: u16 = 10;
        pub const BUILTIN_OPTIONS: u16 = 12;
    }
    pub mod metadata {
        pub const NAME: u16 = 4;
        pub const BUFFER: u16 = 6;
    }
    pub mod tensor_map {
        pub const NAME: u16 = 4;
        pub const TENSOR_INDEX: u16 = 6;
    }
    pub mod signature_def {
        pub const INPUTS: u16 = 4;
        pub const OUTPUTS: u16 = 6;
        pub const SIGNATURE_KEY: u16 = 8;
        pub const SUBGRAPH_INDEX: u16 = 12;
    }
    /// Options tables: field `i` is at `4 + 2 * i` (most options have one
    /// or two fields; the convolution and pooling options up to seven).
    pub const FIRST: u16 = 4;
    pub const SECOND: u16 = 6;
    pub const THIRD: u16 = 8;
    pub const FOURTH: u16 = 10;
    pub const FIFTH: u16 = 12;
    pub const SIXTH: u16 = 14;
    pub const SEVENTH: u16 = 16;
}
