//! The `specc` package's integration tests, one binary (`cargo test --test
//! suite`): each file of this directory is a module, so a test's name is
//! `FILE::TEST` (`golden_conv::case::conv2d_same`), and a file runs alone
//! with `cargo test --test suite golden_conv::`. Shared helpers: `common`
//! (on the specc crates) and `cli` (running `specc`), besides the workspace's
//! `specc-testkit`. Where a new test goes: docs/tests.md.
//!
//! The tests of one binary run in parallel threads of one process: a test
//! passes settings to the `specc` it runs (its environment, its working
//! directory), never to this process (`std::env::set_var`,
//! `set_current_dir`), and writes under a directory of its own
//! (`CARGO_TARGET_TMPDIR/<file>/<case>`, `specc_testkit::tmp`).

mod cli;
mod common;

mod adam_runtime;
mod all_in_one_step;
mod aot_export;
mod aot_raw;
mod barriers;
mod blocks;
mod bytes_features;
mod checkpoint_faults;
mod checkpoint_manager;
mod checkpoint_partitioned;
mod checkpoint_session;
mod cli_convert;
mod cli_errors;
mod cli_errors_constants;
mod cli_errors_features;
mod cli_inspect;
mod cli_memory;
mod cli_predict;
mod cli_run_unattended;
mod continuous_eval;
mod convolution_errors;
mod csv_options;
mod docs;
mod einsum_errors;
mod ema_serving;
mod emit_snapshots;
mod eval_data;
mod example_run_spec;
mod example_train_digits;
mod explain;
mod export_features;
mod export_on_save;
mod fake_quant;
mod feature_column_gradients;
mod feature_column_padding;
mod feature_column_specs;
mod filetests;
mod finite_differences;
mod gemm_epilogue;
mod golden_activations;
mod golden_checkpoint;
mod golden_clipping;
mod golden_conv;
mod golden_ema;
mod golden_events;
mod golden_examples;
mod golden_feature_columns;
mod golden_gradients;
mod golden_hashing;
mod golden_image_graph;
mod golden_image_ops_graph;
mod golden_input_layer;
mod golden_normalization;
mod golden_optimizers;
mod golden_schedules;
mod golden_warm_start;
mod gradcheck;
mod image_data_flags;
mod image_sources;
mod image_stream;
mod image_transforms_golden;
mod kill_checkpoints;
mod layer_library;
mod layers;
mod library_api;
mod long_sums;
mod math_predicates;
mod normalization_errors;
mod optimizer_groups;
mod pipeline;
mod qat_export;
mod quoted_columns;
mod recurrent;
mod replicas;
mod resume;
mod run_config;
mod run_hooks;
mod run_settings;
mod runtime_checks;
mod sequence_examples;
mod sequence_feature_columns;
mod sharded;
mod sharded_hooks;
mod sharded_lookups;
mod sparse;
mod sparse_first_occurrence;
mod spec_optimizers;
mod test_layout;
mod text_rnn;
mod tflite_cnn;
mod tflite_integer_io;
mod tflite_lstm;
mod tflite_predict;
mod tflite_raw_inputs;
mod threads;
mod training;
mod warm_start_vocab;
