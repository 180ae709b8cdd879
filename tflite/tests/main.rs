//! The TFLite crate's integration tests, one binary (`cargo test -p
//! specc-tflite --test tflite`): each file a module (`conv_int8::...`).

mod common;
mod conv_hybrid;
mod conv_int8;
mod format;
mod interface;
mod quantize;
mod tables;
