//! TensorFlow's on-disk building blocks, shared by checkpoints, event files
//! and TFRecord input.
//!
//! Owns: [`atomic`] (a file replaced whole or not at all), [`crc`] (CRC32C and TF's masked form), [`csv`] (`tf.io.decode_csv`), [`example`]
//! (`tf.train.Example`/`SequenceExample` and `tf.io.parse_example`), [`proto`] (the protobuf wire
//! format: an encoder and a field reader, enough for TF's few messages
//! without a code generator), [`tensor`] (`tf.io.decode_raw`,
//! `serialize_tensor` / `parse_tensor`: numeric tensors as bytes), [`tfrecord`] (TFRecord framing: length,
//! masked CRCs, payload; GZIP/ZLIB compression).
//!
//! Invariants: readers never panic on any bytes; every CRC a format has is
//! checked on read, and a mismatch is an error that says where.

pub mod atomic;
pub mod crc;
pub mod csv;
pub mod example;
pub mod proto;
pub mod tensor;
pub mod tfrecord;
