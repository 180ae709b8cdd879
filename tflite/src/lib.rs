//! specc-tflite: TensorFlow Lite models, the format and a small interpreter.
//!
//! Owns: the TFLite flatbuffer format of `schema.fbs` version 3 as far as
//! specc writes it — [`schema`] (the schema's numbers), [`model`] (the tables
//! as Rust values), [`write`](mod@write) and [`read`] (the flatbuffer, by hand with the
//! `flatbuffers` crate's builder and a bounds-checked reader: no generated
//! code), [`build`] (a model operator by operator, with the
//! `serving_default` signature) — [`interpreter`] (a model run operator by
//! operator, so an exported file runs in Rust, string tensors and the hash
//! tables of CALL_ONCE's initialization subgraph included) and its
//! [`kernels`] (float, int8 and hybrid, one module per family of
//! operators) — and [`quantize`]
//! (the arithmetic of int8 quantization — parameters, multipliers,
//! rounding — which the kernels use, and the post-training quantization of
//! a float model with it: dynamic range, or full integer with calibrated
//! ranges).
//!
//! The crate knows nothing of specc's IR: the compiler lowers its forward
//! graph to a [`Model`] (`specc_compiler::export::tflite`), and a program that only
//! runs `.tflite` files needs this crate alone.
//!
//! Invariants: files are read without trusting a single offset (a corrupt
//! file is an error, never a panic); what [`write::to_bytes`] writes,
//! [`read::from_bytes`] reads back equal, and TFLite's own runtime (LiteRT)
//! loads (`interop/test_tflite.py`).

pub mod build;
pub mod interpreter;
pub mod kernels;
pub mod model;
pub mod quantize;
pub mod read;
pub mod schema;
pub mod write;

pub use build::{ModelBuilder, SERVING_DEFAULT};
pub use interpreter::{run, Interpreter, Value};
pub use model::{
    Buffer, BuiltinOptions, Metadata, Model, Operator, OperatorCode, Quantization, SignatureDef,
    SubGraph, Tensor, TensorMap,
};
pub use read::{from_bytes, looks_like_tflite, read_file};
pub use schema::{ActivationFunctionType, BuiltinOperator, Padding, TensorType};
pub use write::to_bytes;
