//! Image data: the sources (a directory of one sub-directory per class,
//! Keras's `image_dataset_from_directory`; a CSV of paths and labels;
//! TFRecord Examples with encoded image bytes), the per-example pipeline of
//! `tf.image` transforms ([`ImagePipeline`]), and loading into a
//! [`Dataset`] of a float32 `[N, H·W·C]` image input and int32 labels.
//! A streamed image source (`stream = true`) is the input pipeline's
//! ([`crate::pipeline::images`]), which lists directories with
//! [`list_examples`] and transforms with [`ImagePipeline::apply`], so a
//! record gets the same pixels streamed or loaded.
//!
//! Invariants:
//! - The examples are in a fixed order: class directories sorted by name
//!   (their position is the label id, Keras's `labels="inferred"`), files
//!   sorted within each (only `.png .jpg .jpeg .gif .bmp`, any case); CSV rows
//!   in file order; TFRecord records in file order.
//! - Transforms run on `threads` worker threads, each example independent;
//!   results are delivered in example order, so a load is the same bits
//!   whatever the thread count. A random transform's draws come from specc's
//!   one generator ([`crate::prng`]) keyed by `(seed, epoch, example index)`
//!   ([`ImagePipeline::apply`]): the same example in the same epoch gets the
//!   same augmentation whichever thread runs it.
//! - Evaluation and prediction (`training = false`) skip the random
//!   transforms, as Keras's preprocessing layers do at inference, except
//!   `random_crop`, which becomes a central crop of the same size so the
//!   shape stays static.
//! - A bad image (an unreadable file, bytes that do not decode, a size the
//!   pipeline cannot take, a label out of range) is a [`DataError`] naming
//!   the file, and the CSV line or TFRecord record; with
//!   [`OnBadRecord::Skip`] it is skipped and its location kept.
//! - Nothing panics on user data; decoders refuse oversized headers before
//!   allocating (`specc_image::codec::MAX_PIXELS`).
//!
//! Code map:
//! - `listing`: the sources ([`ImageSource`]) and their examples in order
//!   ([`list_examples`], [`list_unlabeled`], [`ImageExample`]).
//! - `transforms`: the transform chain ([`ImageOp`], [`ImagePipeline`])
//!   and its static shapes.
//! - `apply`: one example through the chain ([`ImagePipeline::apply`]):
//!   decoding, the transforms, the draws.
//! - `view`: the lazy image the geometric transforms compose on.
//! - `in_memory`: images into a [`Dataset`] ([`load()`]) on worker threads
//!   in example order, and the training form ([`Augmenter`]).
//! - `batches`: `specc predict`'s batches ([`ImageBatches`]).
//!
//! [`Dataset`]: crate::data::Dataset
//! [`DataError`]: crate::data::DataError
//! [`OnBadRecord::Skip`]: crate::pipeline::OnBadRecord::Skip

mod apply;
mod batches;
mod in_memory;
mod library_ops;
mod listing;
mod transforms;
mod view;

pub use specc_image::resize::ResizeMethod;

pub use batches::ImageBatches;
pub use in_memory::{
    fill_in_order, load, load_listed, map_in_order, Augmenter, LoadOptions, LoadReport,
};
pub(crate) use listing::take_image_and_label;
pub use listing::{list_examples, list_unlabeled, ImageExample, ImageSource};
pub use specc_image::random::DistortedBoxOptions;
pub use transforms::{ColorConversion, ImageOp, ImagePipeline, StaticShape, TRANSFORM_NAMES};

/// The column name of the image input in a [`Source::Images`](crate::data::Source) data set.
pub const IMAGE_COLUMN: &str = "image";
/// The column name of the label in a [`Source::Images`](crate::data::Source) data set.
pub const LABEL_COLUMN: &str = "label";
