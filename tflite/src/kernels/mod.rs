//! The kernels of specc's interpreter ([`crate::interpreter`]), one module
//! per family of operators and element type: float ([`conv`]: the
//! convolutions and pools, and TFLite's window arithmetic they all share;
//! `float`: FULLY_CONNECTED, BATCH_MATMUL, the softmaxes, reductions,
//! broadcasting and activations; `shape`: the operators that move
//! elements, for any element type), int8 ([`int8`]: FULLY_CONNECTED,
//! QUANTIZE, DEQUANTIZE, SOFTMAX, LOGISTIC, ARG_MAX, and the hybrid
//! FULLY_CONNECTED; [`conv_int8`]: the convolutions, pools and PAD) and
//! hybrid ([`conv_hybrid`]: the convolutions with int8 filters and float
//! activations), and `recurrent` (the sequence LSTM and RNN, float or
//! with int8 weights).
//!
//! Invariants: each kernel follows TFLite's reference kernel of its
//! operator (the int8 and hybrid ones bit for bit, with the arithmetic of
//! [`crate::quantize`]); a shape or parameter the operator cannot take is
//! an error, never a panic; the fused activation of a float kernel is the
//! caller's.

pub mod conv;
pub mod conv_hybrid;
pub mod conv_int8;
pub(crate) mod float;
pub mod int8;
pub(crate) mod recurrent;
pub(crate) mod shape;
