//! Exports: a trained model as a file another program runs without specc.
//!
//! An export is the forward computation of a spec — its IR after sema, the
//! outputs the spec's `outputs` item (or `--fetch`) names — with the
//! trained weights (restored from a checkpoint) in it, and no training:
//! no gradients, optimizer, labels, noise or global step. Two formats:
//! - [`tflite`]: the forward graph lowered to TensorFlow Lite builtin
//!   operators (`specc export --format tflite`), the weights constant
//!   buffers folded with the reference interpreter; post-training
//!   quantization (dynamic range, or full integer with calibration ranges
//!   from the float model run on representative rows) rewrites that model
//!   and lives with the format, in `specc_tflite::quantize`.
//! - [`aot`]: the forward function planned and compiled ahead of time to a
//!   relocatable object file with a C entry point and its header
//!   (`specc export --format object`), the weights read-only data in it.
//!
//! Both start from the same place: the graph and the named outputs, the
//! inputs they read (dense features after preprocessing, never strings or
//! labels; a TF Lite model can then take the raw columns instead,
//! `tflite::raw`), and the weights by variable; each refuses what its target
//! cannot express with an error naming it, never a silently different model.

pub mod aot;
pub mod tflite;
