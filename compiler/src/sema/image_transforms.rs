//! The image transforms of `image(...)` that `specc_image` runs on the
//! decoded image (`specc_runtime::data::images::library_ops`): the colour
//! conversions, `convert_image_dtype`, the crops and pads by box,
//! `resize_with_crop_or_pad`,
//! `resize_with_pad`, the flips and rotations, the `adjust_*` family, the
//! JPEG re-encoding (`adjust_jpeg_quality`, `random_jpeg_quality`) and the
//! Inception-style crop (`sample_distorted_bounding_box`) and
//! `extract_glimpse` (one glimpse per image, at the same offsets) and
//! `crop_and_resize` (one box per image), and `extract_patches` (the
//! patches as the channels of an `[out_h, out_w, kh·kw·C]` input), and
//! the v1 resizes (`resize_bilinear`, ..., `align_corners`).
//!
//! Owns: their names and arguments (TF's) and the argument checks a
//! literal allows, with a caret under the argument; the pipeline's shape
//! rules (`ImagePipeline::shapes`) then check them against the image.
//! Invariant: [`transform`] gives `None` exactly for the names it does not
//! own, so `images::transform` reports an unknown name once.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};
use specc_image::crop_resize::CropMethod;
use specc_image::glimpse::GlimpseNoise;
use specc_image::patches::Padding;
use specc_image::resize::Centers;
use specc_image::DType;
use specc_runtime::data::images::{ColorConversion, DistortedBoxOptions, ImageOp, ResizeMethod};

use super::args::{self, opt, req, Bound};
use super::expr::R;

fn range(e: &Expr, msg: String) -> Diagnostic {
    Diagnostic::new(Code::ArgumentOutOfRange, e.span, msg).with_label("out of range")
}

/// A non-negative integer argument.
fn count(e: &Expr, what: &str) -> R<usize> {
    let v = args::eval_int(e)?;
    if !(0..=1 << 20).contains(&v) {
        return Err(range(e, format!("{what} must be in [0, 2^20], got {v}")));
    }
    Ok(v as usize)
}

/// A float32 argument (finite).
fn float(e: &Expr) -> R<f32> {
    let v = args::eval_number(e)?;
    if !v.is_finite() {
        return Err(range(e, format!("expected a finite number, got {v}")));
    }
    Ok(v as f32)
}

/// Two numbers `[a, b]`.
fn pair(e: &Expr, what: &str) -> R<[f32; 2]> {
    let ExprKind::List(items) = &e.kind else {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("`{what}` is a list of two numbers"),
        )
        .with_label("expected [low, high]"));
    };
    if items.len() != 2 {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("`{what}` is a list of two numbers, got {}", items.len()),
        )
        .with_label("expected [low, high]"));
    }
    Ok([float(&items[0])?, float(&items[1])?])
}

/// `[offset_height, offset_width]` and `[target_height, target_width]`.
fn bounding_box(b: &Bound) -> R<([usize; 2], [usize; 2])> {
    Ok((
        [
            count(b.req(0), "offset_height")?,
            count(b.req(1), "offset_width")?,
        ],
        [
            count(b.req(2), "target_height")?,
            count(b.req(3), "target_width")?,
        ],
    ))
}

fn resize_method(e: Option<&Expr>) -> R<ResizeMethod> {
    let Some(e) = e else {
        return Ok(ResizeMethod::Bilinear);
    };
    let m = args::eval_string(e)?;
    ResizeMethod::from_name(m).ok_or_else(|| {
        Diagnostic::new(
            Code::UnknownChoice,
            e.span,
            format!("unknown resize method \"{m}\""),
        )
        .with_label("not a tf.image.ResizeMethod")
    })
}

const BOX: &[args::Param<'static>] = &[
    req("offset_height"),
    req("offset_width"),
    req("target_height"),
    req("target_width"),
];

/// The transform `call` names, or `None` when it is not one of this
/// module's.
pub(crate) fn transform(call: &Call) -> Option<R<ImageOp>> {
    let name = call.func.name.as_str();
    if let Some(c) = ColorConversion::from_name(name) {
        return Some(args::bind(name, call, &[]).map(|_| ImageOp::Color(c)));
    }
    let parse = || -> R<ImageOp> {
        Ok(match name {
            "crop_to_bounding_box" | "pad_to_bounding_box" => {
                let (offset, size) = bounding_box(&args::bind(name, call, BOX)?)?;
                if name == "crop_to_bounding_box" {
                    ImageOp::CropToBoundingBox { offset, size }
                } else {
                    ImageOp::PadToBoundingBox { offset, size }
                }
            }
            "resize_with_crop_or_pad" => {
                let b = args::bind(name, call, &[req("target_height"), req("target_width")])?;
                ImageOp::ResizeWithCropOrPad {
                    size: [
                        count(b.req(0), "target_height")?,
                        count(b.req(1), "target_width")?,
                    ],
                }
            }
            "resize_with_pad" => {
                let b = args::bind(
                    name,
                    call,
                    &[
                        req("target_height"),
                        req("target_width"),
                        opt("method"),
                        opt("antialias"),
                    ],
                )?;
                ImageOp::ResizeWithPad {
                    size: [
                        count(b.req(0), "target_height")?,
                        count(b.req(1), "target_width")?,
                    ],
                    method: resize_method(b.get(2))?,
                    antialias: b.get(3).map(args::eval_bool).transpose()?.unwrap_or(false),
                }
            }
            "convert_image_dtype" => {
                let b = args::bind(name, call, &[opt("dtype"), opt("saturate")])?;
                let dtype = match b.get(0) {
                    Some(e) => {
                        let d = args::eval_string(e)?;
                        DType::from_name(d).ok_or_else(|| {
                            Diagnostic::new(
                                Code::UnsupportedArgument,
                                e.span,
                                format!("convert_image_dtype's dtype is one of uint8, uint16, int16, int32, float16, float32, float64, got \"{d}\""),
                            )
                            .with_label("not an image dtype")
                        })?
                    }
                    None => DType::F32,
                };
                let saturate = match b.get(1) {
                    Some(e) => args::eval_bool(e)?,
                    None => false,
                };
                ImageOp::ConvertImageDtype { dtype, saturate }
            }
            "flip_left_right" | "flip_up_down" | "transpose" => {
                args::bind(name, call, &[])?;
                match name {
                    "flip_left_right" => ImageOp::FlipLeftRight,
                    "flip_up_down" => ImageOp::FlipUpDown,
                    _ => ImageOp::Transpose,
                }
            }
            "rot90" => {
                let b = args::bind(name, call, &[opt("k")])?;
                ImageOp::Rot90 {
                    k: b.get(0).map(args::eval_int).transpose()?.unwrap_or(1),
                }
            }
            "adjust_brightness" | "adjust_hue" => {
                let b = args::bind(name, call, &[req("delta")])?;
                let delta = float(b.req(0))?;
                if name == "adjust_brightness" {
                    ImageOp::AdjustBrightness { delta }
                } else {
                    ImageOp::AdjustHue { delta }
                }
            }
            "adjust_contrast" => {
                let b = args::bind(name, call, &[req("contrast_factor")])?;
                ImageOp::AdjustContrast {
                    factor: float(b.req(0))?,
                }
            }
            "adjust_saturation" => {
                let b = args::bind(name, call, &[req("saturation_factor")])?;
                ImageOp::AdjustSaturation {
                    factor: float(b.req(0))?,
                }
            }
            "adjust_gamma" => {
                let b = args::bind(name, call, &[opt("gamma"), opt("gain")])?;
                ImageOp::AdjustGamma {
                    gamma: b.get(0).map(float).transpose()?.unwrap_or(1.0),
                    gain: b.get(1).map(float).transpose()?.unwrap_or(1.0),
                }
            }
            "adjust_jpeg_quality" => {
                let b = args::bind(name, call, &[req("jpeg_quality")])?;
                ImageOp::AdjustJpegQuality {
                    quality: args::eval_int(b.req(0))?.clamp(-1, 101) as i32,
                }
            }
            "random_jpeg_quality" => {
                let b = args::bind(
                    name,
                    call,
                    &[req("min_jpeg_quality"), req("max_jpeg_quality")],
                )?;
                ImageOp::RandomJpegQuality {
                    min: args::eval_int(b.req(0))?.clamp(-1, 101) as i32,
                    max: args::eval_int(b.req(1))?.clamp(-1, 101) as i32,
                }
            }
            "sample_distorted_bounding_box" => {
                let b = args::bind(
                    name,
                    call,
                    &[
                        opt("min_object_covered"),
                        opt("aspect_ratio_range"),
                        opt("area_range"),
                        opt("max_attempts"),
                    ],
                )?;
                let d = DistortedBoxOptions::default();
                ImageOp::SampleDistortedBoundingBox(DistortedBoxOptions {
                    min_object_covered: b
                        .get(0)
                        .map(float)
                        .transpose()?
                        .unwrap_or(d.min_object_covered),
                    aspect_ratio_range: match b.get(1) {
                        Some(e) => pair(e, "aspect_ratio_range")?,
                        None => d.aspect_ratio_range,
                    },
                    area_range: match b.get(2) {
                        Some(e) => pair(e, "area_range")?,
                        None => d.area_range,
                    },
                    max_attempts: match b.get(3) {
                        Some(e) => count(e, "max_attempts")?,
                        None => d.max_attempts,
                    },
                    // The whole image is the one box to cover.
                    use_image_if_no_bounding_boxes: true,
                })
            }
            "extract_glimpse" => {
                let b = args::bind(
                    name,
                    call,
                    &[
                        req("size"),
                        req("offsets"),
                        opt("centered"),
                        opt("normalized"),
                        opt("noise"),
                    ],
                )?;
                let es = b.req(0);
                let size = args::eval_int_list(es)?;
                let size = match size[..] {
                    [h, w] if h > 0 && w > 0 && h <= 1 << 20 && w <= 1 << 20 => {
                        [h as usize, w as usize]
                    }
                    _ => {
                        return Err(range(
                            es,
                            format!("`size` is [glimpse_height, glimpse_width], two positive sizes, got {size:?}"),
                        ))
                    }
                };
                let noise = match b.get(4) {
                    Some(e) => {
                        let n = args::eval_string(e)?;
                        GlimpseNoise::from_name(n).ok_or_else(|| {
                            Diagnostic::new(
                                Code::UnknownChoice,
                                e.span,
                                format!("unknown glimpse noise \"{n}\""),
                            )
                            .with_label("not uniform, gaussian or zero")
                        })?
                    }
                    None => GlimpseNoise::Uniform,
                };
                ImageOp::ExtractGlimpse {
                    size,
                    offsets: pair(b.req(1), "offsets")?,
                    centered: b.get(2).map(args::eval_bool).transpose()?.unwrap_or(true),
                    normalized: b.get(3).map(args::eval_bool).transpose()?.unwrap_or(true),
                    noise,
                }
            }
            "crop_and_resize" => {
                let b = args::bind(
                    name,
                    call,
                    &[
                        req("boxes"),
                        req("crop_size"),
                        opt("method"),
                        opt("extrapolation_value"),
                    ],
                )?;
                let eb = b.req(0);
                let boxes = match &eb.kind {
                    ExprKind::List(items) if items.len() == 4 => [
                        float(&items[0])?,
                        float(&items[1])?,
                        float(&items[2])?,
                        float(&items[3])?,
                    ],
                    _ => {
                        return Err(Diagnostic::new(
                            Code::MalformedArgument,
                            eb.span,
                            "`boxes` is one box [y1, x1, y2, x2] (normalized)",
                        )
                        .with_label("expected 4 numbers"))
                    }
                };
                let ec = b.req(1);
                let cs = args::eval_int_list(ec)?;
                let crop_size = match cs[..] {
                    [h, w] if h > 0 && w > 0 && h <= 1 << 20 && w <= 1 << 20 => {
                        [h as usize, w as usize]
                    }
                    _ => {
                        return Err(range(
                            ec,
                            format!("crop_size is [crop_height, crop_width], two positive sizes, got {cs:?}"),
                        ))
                    }
                };
                let method = match b.get(2) {
                    None => CropMethod::Bilinear,
                    Some(e) => match args::eval_string(e)? {
                        "bilinear" => CropMethod::Bilinear,
                        "nearest" => CropMethod::Nearest,
                        m => {
                            return Err(Diagnostic::new(
                                Code::UnknownChoice,
                                e.span,
                                format!("crop_and_resize's method is \"bilinear\" or \"nearest\", got \"{m}\""),
                            )
                            .with_label("not bilinear or nearest"))
                        }
                    },
                };
                ImageOp::CropAndResize {
                    boxes,
                    crop_size,
                    method,
                    extrapolation_value: b.get(3).map(float).transpose()?.unwrap_or(0.0),
                }
            }
            "resize_bilinear" | "resize_nearest_neighbor" | "resize_bicubic" | "resize_area" => {
                let area = name == "resize_area";
                let params: &[args::Param] = if area {
                    &[req("size"), opt("align_corners")]
                } else {
                    &[req("size"), opt("align_corners"), opt("half_pixel_centers")]
                };
                let b = args::bind(name, call, params)?;
                let es = b.req(0);
                let v = args::eval_int_list(es)?;
                let size = match v[..] {
                    [h, w] if h > 0 && w > 0 && h <= 1 << 20 && w <= 1 << 20 => {
                        [h as usize, w as usize]
                    }
                    _ => {
                        return Err(range(
                            es,
                            format!(
                                "`size` is [new_height, new_width], two positive sizes, got {v:?}"
                            ),
                        ))
                    }
                };
                let centers = Centers {
                    align_corners: b.get(1).map(args::eval_bool).transpose()?.unwrap_or(false),
                    half_pixel_centers: b.get(2).map(args::eval_bool).transpose()?.unwrap_or(false),
                };
                if centers.align_corners && centers.half_pixel_centers {
                    return Err(range(
                        b.req(2),
                        "If half_pixel_centers is True, align_corners must be False.".to_string(),
                    ));
                }
                ImageOp::ResizeV1 {
                    size,
                    method: match name {
                        "resize_nearest_neighbor" => ResizeMethod::Nearest,
                        "resize_bicubic" => ResizeMethod::Bicubic,
                        "resize_area" => ResizeMethod::Area,
                        _ => ResizeMethod::Bilinear,
                    },
                    centers,
                }
            }
            "extract_patches" => {
                let b = args::bind(
                    name,
                    call,
                    &[req("sizes"), req("strides"), req("rates"), req("padding")],
                )?;
                let tf = |i: usize, what: &str| -> R<[usize; 2]> {
                    let e = b.req(i);
                    let v = args::eval_int_list(e)?;
                    match v[..] {
                        [1, a, c, 1] if (1..=1 << 20).contains(&a) && (1..=1 << 20).contains(&c) => {
                            Ok([a as usize, c as usize])
                        }
                        _ => Err(range(
                            e,
                            format!("`{what}` must be [1, rows, cols, 1] with rows, cols >= 1, got {v:?}"),
                        )),
                    }
                };
                let ep = b.req(3);
                let p = args::eval_string(ep)?;
                let padding = Padding::from_name(p).ok_or_else(|| {
                    Diagnostic::new(
                        Code::UnknownChoice,
                        ep.span,
                        format!("padding is \"VALID\" or \"SAME\", got \"{p}\""),
                    )
                    .with_label("not VALID or SAME")
                })?;
                ImageOp::ExtractPatches {
                    sizes: tf(0, "sizes")?,
                    strides: tf(1, "strides")?,
                    rates: tf(2, "rates")?,
                    padding,
                }
            }
            other => {
                return Err(Diagnostic::new(
                    Code::UnknownFunction,
                    call.func.span,
                    format!("unknown image transform `{other}`"),
                )
                .with_label("not an image transform"))
            }
        })
    };
    NAMES.contains(&name).then(parse)
}

/// The transforms of this module besides the colour conversions.
const NAMES: &[&str] = &[
    "convert_image_dtype",
    "crop_to_bounding_box",
    "pad_to_bounding_box",
    "resize_with_crop_or_pad",
    "resize_with_pad",
    "flip_left_right",
    "flip_up_down",
    "transpose",
    "rot90",
    "adjust_brightness",
    "adjust_hue",
    "adjust_contrast",
    "adjust_saturation",
    "adjust_gamma",
    "adjust_jpeg_quality",
    "random_jpeg_quality",
    "sample_distorted_bounding_box",
    "extract_glimpse",
    "crop_and_resize",
    "extract_patches",
    "resize_bilinear",
    "resize_nearest_neighbor",
    "resize_bicubic",
    "resize_area",
];
