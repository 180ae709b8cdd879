//! `tf.image` and the `tf.io` image codecs, on `ndarray`, with TensorFlow's
//! exact semantics (verified against `golden/images.json`).
//!
//! The crate owns every pixel operation of specc: the input pipeline's
//! per-example transforms and augmentations call it on worker threads, and
//! the compiler's differentiable image ops (`total_variation`, `ssim`, ...)
//! take their definitions from it. It depends on nothing of specc.
//!
//! Invariants:
//! - An image is an [`Image`]: `[H, W, C]` or a batch `[N, H, W, C]` (NHWC),
//!   in one of TF's image dtypes. Functions take the layouts TF takes and
//!   return TF's dtype for the op (for example `resize` returns float32 for
//!   every method but nearest).
//! - No function panics on user input: bad shapes and arguments are an
//!   [`ImageError`] whose message names the argument, in TF's words where TF
//!   has some.
//! - Randomness never lives here: random augmentations take their draws as
//!   arguments (the pipeline derives them from specc's one generator).
#![deny(missing_docs)]

pub mod adjust;
pub mod codec;
pub mod color;
pub mod convert;
pub mod crop_resize;
pub mod detection;
pub mod draw;
pub mod geometry;
pub mod glimpse;
pub mod measures;
pub mod patches;
pub mod random;
pub mod resize;
pub mod ssim;
mod tensor;

pub use tensor::{DType, Image, ImageError, Result};
