//! The compiler's integration tests, one binary (`cargo test -p
//! specc-compiler --test compiler`): each file a module
//! (`golden_gradients_interp::case::matmul`), `jit` their shared JIT
//! harness.

mod golden_gradients_interp;
mod jit;
mod math_accuracy;
mod math_emit;
mod runtime_math;
mod tflite_export;
mod tflite_recurrent;
