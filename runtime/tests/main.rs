//! The runtime's integration tests, one binary (`cargo test -p specc-runtime
//! --test runtime`): each file a module (`sgemm_correctness::...`). Its
//! global allocator is the counting one (`specc_testkit::alloc`): the
//! no-allocation tests count their own thread's allocations while the
//! others run.

#[global_allocator]
static ALLOCATOR: specc_testkit::alloc::Counting = specc_testkit::alloc::Counting;

mod adam_update;
mod batches;
mod common;
mod config;
mod data;
mod feature_columns_csv;
mod feature_columns_no_alloc;
mod image_stream_no_alloc;
mod init;
mod metrics;
mod prng;
mod rnn_no_alloc;
mod sgemm_batched;
mod sgemm_common;
mod sgemm_correctness;
mod sgemm_epilogue;
mod sgemm_no_alloc;
mod sgemm_partition;
mod warm_start_vocab;
mod winograd_transforms;
