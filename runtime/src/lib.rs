//! specc-runtime: everything that runs around the compiled training step.
//!
//! Code map:
//! - [`abi`]: the step context and layout the compiled code and runtime share.
//! - [`gemm`]: `specc_sgemm`, the matrix product JIT code calls.
//! - [`sgemm`]: the deterministic, allocation-free SGEMM behind it (AVX-512,
//!   AVX2+FMA and scalar kernels with bit-identical results; dispatch, the
//!   fused epilogue, the kernel contract, the blocked driver, packing).
//! - [`rnn`]: the time loops of recurrent layers (`dynamic_rnn`'s LSTM, GRU
//!   and basic cells), forward and back-propagation through time, over the
//!   tapes the compiled step keeps, and their C entry points.
//! - [`threads`]: the thread count and the worker running thread 1 of SPMD steps.
//! - [`prng`]: splitmix64, the one random stream behind every seed in specc.
//! - [`hash`]: TF's feature hashing (FarmHash `Fingerprint64`, `FingerprintCat64`
//!   crosses, SipHash `to_hash_bucket_strong`), bit-identical and allocation-free.
//! - [`init`]: parameter initializers (TF's names and semantics).
//! - [`io`]: TF's on-disk building blocks: CRC32C, protobuf fields, TFRecord framing.
//! - [`checkpoint`]: TF V2 checkpoints (tensor bundles), the `checkpoint` state
//!   file, the checkpoint manager, saving and restoring a session.
//! - [`data`]: CSV and synthetic sources into in-memory [`data::Dataset`]s,
//!   through column transforms ([`data::columns`]) that see raw cells; image
//!   sources ([`data::images`]: listing, the transform chain, decoding,
//!   loading).
//! - [`feature_column`]: `tf.feature_column`'s column descriptions (the
//!   runtime/compiler boundary) and their transforms, a module per kind of
//!   column in `feature_column::transform`.
//! - [`batches`]: batch order (shuffled epochs), held-out split, gathering rows.
//! - [`source`]: the batch-source boundary: what fills the step's inputs
//!   ([`source::BatchSource`]), with the in-memory sources.
//! - [`session`]: the memory a compiled model runs in.
//! - [`train`]: the training loop with hooks (TF's `MonitoredSession` and
//!   `SessionRunHook`), and evaluation.
//! - [`predict`]: inference: the `predict` function over a batch source,
//!   its outputs written as CSV or JSON lines.
//! - [`metrics`]: the metrics a model declares, accuracy and TF's bucketed AUC.
//! - [`profile`]: per-kernel timing of profiled steps.
//! - [`memory`]: the session's zeroed, aligned blocks (large ones on huge pages).
//! - [`suggest`]: the edit distance behind every "did you mean".
//! - [`summary`]: TensorBoard event files (written off the training thread,
//!   read with every CRC checked), TF's histograms, and the summary hooks.
//!
//! The runtime does not depend on the compiler: the compiler depends on the
//! runtime for the ABI of the step it generates.

pub mod abi;
pub mod adam;
pub mod batches;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod feature_column;
pub mod gemm;
pub mod hash;
pub mod init;
pub mod io;
mod lanes;
pub mod memory;
pub mod metrics;
pub mod pipeline;
pub mod predict;
pub mod prng;
pub mod profile;
pub mod rnn;
pub mod session;
pub mod settings;
pub mod sgemm;
pub mod source;
pub mod suggest;
pub mod summary;
pub mod threads;
pub mod train;
pub mod twin;
pub mod winograd;
