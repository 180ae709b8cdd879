//! Lowering the forward IR to a TensorFlow Lite model (`specc export --format tflite`).
//!
//! Owns: [`export_tflite`] and its request [`TfliteExport`]: from the graph,
//! the trained parameters (by TF name), the dense inputs and the named
//! outputs to a `specc_tflite::Model` of TFLite builtin operators with the
//! `serving_default` signature.
//!
//! How nodes lower, in id order (a topological order, no recursion):
//! - Everything that depends on no input and has no batch dimension is folded
//!   with the reference interpreter ([`crate::interp`], float64, rounded to
//!   float32 once) and becomes a constant buffer, as TF's converter folds
//!   constants; parameters are such constants.
//! - Patterns first (one matcher per TFLite operator, tabled in
//!   `Lower::pattern`'s doc): `x @ W + b` (`W`, `b` constant) is
//!   FULLY_CONNECTED with the weights transposed to TFLite's `[units,
//!   depth]`; sema's convolutions (image patches times a constant kernel
//!   matrix, or images times it for a 1×1 kernel) are CONV_2D, its depthwise
//!   convolution DEPTHWISE_CONV_2D, its transposed convolution (patches_grad)
//!   TRANSPOSE_CONV, its max and average pools MAX_POOL_2D and
//!   AVERAGE_POOL_2D, each with the kernel laid out as TFLite's filter; a
//!   bias and a following `relu`/`relu6` fuse into FULLY_CONNECTED and the
//!   convolutions; sema's softmax and log-softmax over the last axis are
//!   SOFTMAX and LOG_SOFTMAX; `reduce_sum / count` (sema's mean) is MEAN;
//!   an LSTM or basic recurrent layer is UNIDIRECTIONAL_SEQUENCE_LSTM or
//!   UNIDIRECTIONAL_SEQUENCE_RNN, the slices of its tape slices of the
//!   operator's outputs (`recurrent`); a GRU is unrolled into builtins
//!   (`gru`).
//!   A window whose placement is TF's VALID or SAME arithmetic has that
//!   padding; any other (explicit) padding of a convolution is a PAD operator
//!   before a VALID one.
//! - A fake quantization sema recorded (`ir::FakeQuant`, 8 bits, a
//!   constant range) is a QUANTIZE to UINT8 and a DEQUANTIZE back, as TF's
//!   converter writes `FakeQuantWithMinMaxVars` (`fake_quant`); on a
//!   FULLY_CONNECTED's weights, the pair reads the weights constant.
//! - Then one operator per node: elementwise ops (broadcasting operands are
//!   read before their explicit `broadcast_to`, TFLite broadcasts itself),
//!   comparisons as a BOOL operator and a CAST, reductions with an axes
//!   constant, `argmax` (INT32), matmul by a non-constant as BATCH_MATMUL,
//!   reshape/transpose/concat/slice/pad/gather, `stop_gradient` as nothing.
//!
//! Invariants: an op TFLite cannot express (the batch size as a value, the
//! global step, random noise, the optimizer's row updates, image patches
//! outside the convolution and pool patterns, a dilated transposed
//! convolution) is a
//! `tflite-unsupported` diagnostic at its spec span, never a silently
//! different model; every tensor of the model has the node's dtype and shape
//! (the batch dimension -1 in `shape_signature`, or the fixed batch).
//!
//! Code map: `lower` (the walk: which nodes are needed and how each
//! lowers, constants folded, the inputs, the outputs and the signature,
//! tensor names and dims; one operator per node, and the refusals),
//! `patterns` (the table of patterns that lower to one richer operator, and
//! the bias and activation they fuse), then one module per family of
//! operators, each with its matchers and its emission: `dense`
//! (FULLY_CONNECTED, BATCH_MATMUL), `conv` (CONV_2D, DEPTHWISE_CONV_2D,
//! TRANSPOSE_CONV; TFLite's padding of a window, PAD before an explicit
//! one), `pool` (MAX_POOL_2D, AVERAGE_POOL_2D), `softmax` (SOFTMAX,
//! LOG_SOFTMAX), `reduce` (MEAN, SUM, REDUCE_MAX, ARG_MAX), `elementwise`
//! (unary and binary operators, comparisons, SELECT_V2, CAST, BROADCAST_TO)
//! `shape` (RESHAPE, TRANSPOSE, CONCATENATION, SLICE, PAD, GATHER, and
//! indices as constants), `recurrent` (the sequence operators and the
//! slices of their tapes), `gru` (a GRU's steps as builtins) and
//! `fake_quant` (the QUANTIZE/DEQUANTIZE pairs of fake quantizations). The
//! quantization of the model written here is `specc_tflite::quantize`'s;
//! `raw` rewrites an exported (and quantized) model to take the raw columns
//! (`--raw-inputs`: the feature columns as hash tables, BUCKETIZE and
//! elementwise operators in front).

mod conv;
mod dense;
mod elementwise;
mod fake_quant;
mod gru;
mod lower;
mod patterns;
mod pool;
pub mod raw;
mod recurrent;
mod reduce;
mod shape;
mod softmax;

use std::collections::HashMap;

use ndarray::ArrayD;
use specc_grammar::Diagnostic;

use self::lower::Lower;
use crate::ir::{Graph, NodeId};

/// What to export.
pub struct TfliteExport<'a> {
    pub graph: &'a Graph,
    /// Trained values of the graph's variables, by TF name.
    pub params: &'a HashMap<String, ArrayD<f32>>,
    /// The graph inputs the model takes, by name, in signature order.
    pub inputs: &'a [String],
    /// The model's outputs: signature name and node.
    pub outputs: &'a [(String, NodeId)],
    /// A fixed batch size, or `None` for a dynamic batch dimension (-1).
    pub batch: Option<u32>,
}

type R<T> = Result<T, Diagnostic>;

/// The TFLite model of `e.outputs` over `e.inputs`.
pub fn export_tflite(e: &TfliteExport<'_>) -> R<specc_tflite::Model> {
    Lower::new(e)?.run()
}
