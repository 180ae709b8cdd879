//! One module per subcommand.
pub mod bench;
pub mod bench_adam;
pub mod calibrate;
pub mod check;
pub mod compile;
pub mod convert;
pub mod explain;
pub mod export;
pub mod export_object;
pub mod gradcheck;
pub mod inspect;
pub mod inspect_tflite;
pub mod inspect_tfrecord;
pub mod predict;
pub mod predict_tflite;
pub mod run;
pub mod run_hooks;
