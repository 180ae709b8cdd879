//! What the workspace's tests share (a dev-dependency of every crate whose
//! tests use it; never published, never a dependency of specc itself):
//!
//! - [`golden`]: TensorFlow's reference data: the golden directory
//!   (`SPECC_GOLDEN_DIR`), its files and sections, its numbers;
//! - [`tol`]: relative tolerances and the comparisons against TF's values;
//! - [`gradient_cases`]: the cases of `gradients.json` as specs, one test per
//!   case (the compiler's interpreter test and the suite's JIT test);
//! - [`spec`]: spec text (literals, shapes) and the small valid spec the CLI
//!   error tests change;
//! - [`cli`]: running the `specc` binary;
//! - [`tmp`]: temporary directories removed on drop;
//! - [`alloc`]: the counting global allocator of the allocation tests.
//!
//! It depends on no specc crate (a dev-dependency cycle would build a second
//! copy of the crate under test in its unit tests): what needs the specc
//! crates stays with the tests (the suite's `common`).

pub mod alloc;
pub mod cli;
pub mod golden;
pub mod gradient_cases;
pub mod spec;
pub mod tmp;
pub mod tol;
