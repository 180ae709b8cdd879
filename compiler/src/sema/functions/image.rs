//! The `tf.image` builtins' rows of the function table (the table is
//! [`super::BUILTINS`] and these, looked up together): TF's names and
//! argument names, lowered by the image families beside the table
//! ([`image_ops`], [`image_color`], [`image_draw`], [`image_geometry`],
//! [`image_resize`], [`image_glimpse`], [`image_crop_resize`]).

use super::super::image_ops;
use super::super::{
    image_color, image_crop_resize, image_draw, image_geometry, image_glimpse, image_resize,
};
use super::args::{opt, req};
use super::Builtin;

/// The `tf.image` ops a model's computation can call.
pub(super) const IMAGE_BUILTINS: &[Builtin] = &[
    Builtin {
        name: "total_variation",
        params: &[req("images")],
        lower: image_ops::total_variation,
    },
    Builtin {
        name: "image_gradients_dy",
        params: &[req("image")],
        lower: image_ops::image_gradients_dy,
    },
    Builtin {
        name: "image_gradients_dx",
        params: &[req("image")],
        lower: image_ops::image_gradients_dx,
    },
    Builtin {
        name: "sobel_edges",
        params: &[req("image")],
        lower: image_ops::sobel_edges,
    },
    Builtin {
        name: "psnr",
        params: &[req("a"), req("b"), req("max_val")],
        lower: image_ops::psnr,
    },
    Builtin {
        name: "ssim",
        params: &[
            req("img1"),
            req("img2"),
            req("max_val"),
            opt("filter_size"),
            opt("filter_sigma"),
            opt("k1"),
            opt("k2"),
            opt("return_index_map"),
        ],
        lower: image_ops::ssim,
    },
    Builtin {
        name: "ssim_multiscale",
        params: &[
            req("img1"),
            req("img2"),
            req("max_val"),
            opt("power_factors"),
            opt("filter_size"),
            opt("filter_sigma"),
            opt("k1"),
            opt("k2"),
        ],
        lower: image_ops::ssim_multiscale,
    },
    Builtin {
        name: "rgb_to_grayscale",
        params: &[req("images")],
        lower: image_color::rgb_to_grayscale,
    },
    Builtin {
        name: "grayscale_to_rgb",
        params: &[req("images")],
        lower: image_color::grayscale_to_rgb,
    },
    Builtin {
        name: "rgb_to_yiq",
        params: &[req("images")],
        lower: image_color::rgb_to_yiq,
    },
    Builtin {
        name: "yiq_to_rgb",
        params: &[req("images")],
        lower: image_color::yiq_to_rgb,
    },
    Builtin {
        name: "rgb_to_yuv",
        params: &[req("images")],
        lower: image_color::rgb_to_yuv,
    },
    Builtin {
        name: "yuv_to_rgb",
        params: &[req("images")],
        lower: image_color::yuv_to_rgb,
    },
    Builtin {
        name: "rgb_to_hsv",
        params: &[req("images")],
        lower: image_color::rgb_to_hsv,
    },
    Builtin {
        name: "hsv_to_rgb",
        params: &[req("images")],
        lower: image_color::hsv_to_rgb,
    },
    Builtin {
        name: "per_image_standardization",
        params: &[req("image")],
        lower: image_color::per_image_standardization,
    },
    Builtin {
        name: "adjust_brightness",
        params: &[req("image"), req("delta")],
        lower: image_color::adjust_brightness,
    },
    Builtin {
        name: "adjust_gamma",
        params: &[req("image"), opt("gamma"), opt("gain")],
        lower: image_color::adjust_gamma,
    },
    Builtin {
        name: "resize",
        params: &[
            req("images"),
            req("size"),
            opt("method"),
            opt("preserve_aspect_ratio"),
            opt("antialias"),
        ],
        lower: image_resize::resize,
    },
    Builtin {
        name: "resize_with_pad",
        params: &[
            req("image"),
            req("target_height"),
            req("target_width"),
            opt("method"),
            opt("antialias"),
        ],
        lower: image_resize::resize_with_pad,
    },
    Builtin {
        name: "extract_patches",
        params: &[
            req("images"),
            req("sizes"),
            req("strides"),
            req("rates"),
            req("padding"),
        ],
        lower: image_geometry::extract_patches,
    },
    Builtin {
        name: "draw_bounding_boxes",
        params: &[req("images"), req("boxes"), opt("colors")],
        lower: image_draw::draw_bounding_boxes,
    },
    Builtin {
        name: "crop_to_bounding_box",
        params: &[
            req("image"),
            req("offset_height"),
            req("offset_width"),
            req("target_height"),
            req("target_width"),
        ],
        lower: image_geometry::crop_to_bounding_box,
    },
    Builtin {
        name: "pad_to_bounding_box",
        params: &[
            req("image"),
            req("offset_height"),
            req("offset_width"),
            req("target_height"),
            req("target_width"),
        ],
        lower: image_geometry::pad_to_bounding_box,
    },
    Builtin {
        name: "central_crop",
        params: &[req("image"), req("central_fraction")],
        lower: image_geometry::central_crop,
    },
    Builtin {
        name: "resize_with_crop_or_pad",
        params: &[req("image"), req("target_height"), req("target_width")],
        lower: image_geometry::resize_with_crop_or_pad,
    },
    Builtin {
        name: "flip_left_right",
        params: &[req("image")],
        lower: image_geometry::flip_left_right,
    },
    Builtin {
        name: "flip_up_down",
        params: &[req("image")],
        lower: image_geometry::flip_up_down,
    },
    Builtin {
        name: "transpose_image",
        params: &[req("image")],
        lower: image_geometry::transpose_image,
    },
    Builtin {
        name: "rot90",
        params: &[req("image"), opt("k")],
        lower: image_geometry::rot90,
    },
    Builtin {
        name: "extract_glimpse",
        params: &[
            req("input"),
            req("size"),
            req("offsets"),
            opt("centered"),
            opt("normalized"),
            opt("noise"),
        ],
        lower: image_glimpse::extract_glimpse,
    },
    Builtin {
        name: "extract_glimpse_v1",
        params: &[
            req("input"),
            req("size"),
            req("offsets"),
            opt("centered"),
            opt("normalized"),
            opt("uniform_noise"),
        ],
        lower: image_glimpse::extract_glimpse_v1,
    },
    Builtin {
        name: "crop_and_resize",
        params: &[
            req("image"),
            req("boxes"),
            req("box_indices"),
            req("crop_size"),
            opt("method"),
            opt("extrapolation_value"),
        ],
        lower: image_crop_resize::crop_and_resize,
    },
    Builtin {
        name: "resize_bilinear",
        params: &[
            req("images"),
            req("size"),
            opt("align_corners"),
            opt("half_pixel_centers"),
        ],
        lower: image_resize::resize_bilinear,
    },
    Builtin {
        name: "resize_nearest_neighbor",
        params: &[
            req("images"),
            req("size"),
            opt("align_corners"),
            opt("half_pixel_centers"),
        ],
        lower: image_resize::resize_nearest_neighbor,
    },
    Builtin {
        name: "resize_bicubic",
        params: &[
            req("images"),
            req("size"),
            opt("align_corners"),
            opt("half_pixel_centers"),
        ],
        lower: image_resize::resize_bicubic,
    },
    Builtin {
        name: "resize_area",
        params: &[req("images"), req("size"), opt("align_corners")],
        lower: image_resize::resize_area,
    },
];
