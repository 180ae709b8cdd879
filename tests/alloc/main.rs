//! The tests that count allocations (`cargo test --test alloc`), in a binary
//! of their own because the counting allocator is its global allocator
//! (`specc_testkit::alloc`). A test counting its own thread's allocations
//! runs beside the others; one counting the whole process (a step's worker
//! thread, a reader thread) runs alone in a child process
//! (`alone_in_process`).

#[global_allocator]
static ALLOCATOR: specc_testkit::alloc::Counting = specc_testkit::alloc::Counting;

mod no_alloc;
mod pipeline_memory;
mod summary_hooks;
