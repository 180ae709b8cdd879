//! Building a one-subgraph TFLite [`Model`] operator by operator.
//!
//! Owns: [`ModelBuilder`]: tensors (activations and constants with their
//! buffers), operators (operator codes deduplicated by builtin and version),
//! the subgraph's inputs and outputs, the `serving_default` signature and the
//! `min_runtime_version` metadata.
//! Invariants: `buffers[0]` is the empty buffer; every constant has its own
//! buffer of exactly `shape × type size` bytes; operator codes appear in order
//! of first use; the model it returns passes [`Model::validate`].

use crate::model::{
    f32_bytes, i32_bytes, Buffer, BuiltinOptions, Metadata, Model, Operator, OperatorCode,
    Quantization, SignatureDef, SubGraph, Tensor, TensorMap,
};
use crate::schema::{BuiltinOperator, TensorType, SCHEMA_VERSION};

/// The signature key TF's converter gives a model's default signature.
pub const SERVING_DEFAULT: &str = "serving_default";

/// Builds the single subgraph of a model.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    model: Model,
    graph: SubGraph,
}

impl Default for ModelBuilder {
    fn default() -> Self {
        ModelBuilder::new()
    }
}

impl ModelBuilder {
    pub fn new() -> ModelBuilder {
        ModelBuilder {
            model: Model {
                version: SCHEMA_VERSION,
                description: "specc".into(),
                operator_codes: Vec::new(),
                subgraphs: Vec::new(),
                buffers: vec![Buffer::default()],
                metadata: Vec::new(),
                signature_defs: Vec::new(),
            },
            graph: SubGraph {
                name: "main".into(),
                ..SubGraph::default()
            },
        }
    }

    /// An activation tensor (no data). `shape` uses -1 for the dynamic batch
    /// dimension; the stored shape has 1 there and `shape_signature` keeps -1.
    pub fn tensor(&mut self, name: &str, tensor_type: TensorType, shape: &[i32]) -> i32 {
        self.push_tensor(name, tensor_type, shape, 0, None)
    }

    /// A variable tensor (an operator's state, zero at the start).
    pub fn variable_tensor(&mut self, name: &str, tensor_type: TensorType, shape: &[i32]) -> i32 {
        let t = self.push_tensor(name, tensor_type, shape, 0, None);
        self.graph.tensors[t as usize].is_variable = true;
        t
    }

    /// A quantized activation tensor.
    pub fn quantized_tensor(
        &mut self,
        name: &str,
        tensor_type: TensorType,
        shape: &[i32],
        quantization: Quantization,
    ) -> i32 {
        self.push_tensor(name, tensor_type, shape, 0, Some(quantization))
    }

    /// A constant tensor with raw little-endian `data`.
    pub fn constant(
        &mut self,
        name: &str,
        tensor_type: TensorType,
        shape: &[i32],
        data: Vec<u8>,
        quantization: Option<Quantization>,
    ) -> i32 {
        self.model.buffers.push(Buffer { data });
        let buffer = (self.model.buffers.len() - 1) as u32;
        self.push_tensor(name, tensor_type, shape, buffer, quantization)
    }

    pub fn constant_f32(&mut self, name: &str, shape: &[i32], values: &[f32]) -> i32 {
        self.constant(name, TensorType::Float32, shape, f32_bytes(values), None)
    }

    pub fn constant_i32(&mut self, name: &str, shape: &[i32], values: &[i32]) -> i32 {
        self.constant(name, TensorType::Int32, shape, i32_bytes(values), None)
    }

    fn push_tensor(
        &mut self,
        name: &str,
        tensor_type: TensorType,
        shape: &[i32],
        buffer: u32,
        quantization: Option<Quantization>,
    ) -> i32 {
        let dynamic = shape.iter().any(|&d| d < 0);
        self.graph.tensors.push(Tensor {
            shape: shape.iter().map(|&d| if d < 0 { 1 } else { d }).collect(),
            shape_signature: dynamic.then(|| shape.to_vec()),
            tensor_type,
            buffer,
            name: name.to_string(),
            quantization,
            is_variable: false,
        });
        (self.graph.tensors.len() - 1) as i32
    }

    /// The tensor at `index` (as built so far).
    pub fn tensor_info(&self, index: i32) -> &Tensor {
        &self.graph.tensors[index as usize]
    }

    /// Appends an operator (version 1 of `op`).
    pub fn operator(
        &mut self,
        op: BuiltinOperator,
        inputs: &[i32],
        outputs: &[i32],
        options: BuiltinOptions,
    ) {
        self.operator_version(op, 1, inputs, outputs, options)
    }

    /// Appends an operator of a given operator version (int8 kernels need
    /// later versions than float ones).
    pub fn operator_version(
        &mut self,
        op: BuiltinOperator,
        version: i32,
        inputs: &[i32],
        outputs: &[i32],
        options: BuiltinOptions,
    ) {
        let codes = &mut self.model.operator_codes;
        let index = match codes
            .iter()
            .position(|c| c.builtin_code == op && c.version == version)
        {
            Some(i) => i,
            None => {
                codes.push(OperatorCode {
                    builtin_code: op,
                    custom_code: None,
                    version,
                });
                codes.len() - 1
            }
        };
        self.graph.operators.push(Operator {
            opcode_index: index as u32,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            options,
        });
    }

    /// The model: subgraph inputs and outputs as `(signature name, tensor)`,
    /// in the `serving_default` signature too.
    pub fn finish(mut self, inputs: &[(String, i32)], outputs: &[(String, i32)]) -> Model {
        self.graph.inputs = inputs.iter().map(|i| i.1).collect();
        self.graph.outputs = outputs.iter().map(|o| o.1).collect();
        let maps = |v: &[(String, i32)]| {
            v.iter()
                .map(|(name, t)| TensorMap {
                    name: name.clone(),
                    tensor_index: *t as u32,
                })
                .collect()
        };
        self.model.signature_defs.push(SignatureDef {
            inputs: maps(inputs),
            outputs: maps(outputs),
            signature_key: SERVING_DEFAULT.into(),
            subgraph_index: 0,
        });
        // TF's converter records the oldest runtime that runs the model as
        // 16 bytes of NUL-padded text.
        let mut version = b"1.14.0".to_vec();
        version.resize(16, 0);
        self.model.buffers.push(Buffer { data: version });
        self.model.metadata.push(Metadata {
            name: "min_runtime_version".into(),
            buffer: (self.model.buffers.len() - 1) as u32,
        });
        self.model.subgraphs.push(self.graph);
        self.model
    }
}
