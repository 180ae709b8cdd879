//! The image crate's tests against TF's `images.json`, one binary (`cargo
//! test -p specc-image --test image`): each file a module
//! (`golden_resize::case::...`), `support` the file's readers.

#[macro_use]
mod support;
mod golden_adjust_measures;
mod golden_codecs;
mod golden_crop_resize;
mod golden_detection_draw;
mod golden_image_ops;
mod golden_patches_nms;
mod golden_resize;
mod golden_ssim;
