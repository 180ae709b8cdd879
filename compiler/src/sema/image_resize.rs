//! `tf.image.resize` and `tf.image.resize_with_pad` as graph ops, so a
//! model can resize its tensors (an upsampling decoder, a feature pyramid)
//! and differentiate through the resize.
//!
//! Owns: their lowering as two matrix products — every method of
//! `tf.image.resize` is separable, so the resize is `A_h · x · A_wᵀ` per
//! image and channel, with `A_h` `[OH, H]` and `A_w` `[OW, W]` the
//! library's own map along each axis (`specc_image::resize::resize_matrix`,
//! TF's kernels) as constants — whose gradient is the transposed products,
//! the adjoint TF's resize gradients compute; `resize_with_pad` is that
//! resize to TF's fitted size, then zero padding at TF's offsets.
//! The v1 ops (`resize_bilinear`, `resize_nearest_neighbor`,
//! `resize_bicubic`, `resize_area`, `tf.compat.v1.image.resize_*` with
//! `align_corners` and `half_pixel_centers`) are separable too: their maps
//! are the library's v1 resizes of impulses.
//! Invariant: images are float `[H, W, C]` or `[N, H, W, C]` with fixed
//! `H, W, C`; the output size is static (from `size`, or the image's
//! aspect with `preserve_aspect_ratio`); the result keeps the rank.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::{Code, Diagnostic};
use specc_image::crop_resize::resize_with_pad_layout;
use specc_image::resize::{self as v1, resize_matrix, target_size, Centers, ResizeMethod};
use specc_image::Image;

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use super::image_ops::image_operand;
use crate::ir::{DType, Dim, NodeId, Shape};

fn method(b: &Bound, i: usize) -> R<ResizeMethod> {
    let Some(e) = b.get(i).filter(|e| !args::is_none(e)) else {
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
        .with_help("the methods: bilinear, nearest, bicubic, area, lanczos3, lanczos5, gaussian, mitchellcubic")
    })
}

fn flag(b: &Bound, i: usize) -> R<bool> {
    match b.get(i).filter(|e| !args::is_none(e)) {
        Some(e) => args::eval_bool(e),
        None => Ok(false),
    }
}

/// A positive size (at most 2^20).
fn size(e: &Expr, v: i64, what: &str) -> R<usize> {
    if !(1..=1 << 20).contains(&v) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("{what} must be a positive size, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v as usize)
}

/// `x` (`[.., H, W, C]`, `H` at `h_axis`) resized to `out` with the
/// method and antialias flag.
fn resized(
    lw: &mut Lowerer,
    x: NodeId,
    h_axis: usize,
    [h, w]: [usize; 2],
    out: [usize; 2],
    (m, antialias): (ResizeMethod, bool),
    at: &Expr,
) -> R<NodeId> {
    let matrix = |n: usize, o: usize| resize_matrix(n, o, m, antialias);
    mapped(lw, x, h_axis, [h, w], out, matrix, at)
}

/// `x` resized to `out` by the separable map `matrix(in, out)` (`A`,
/// `[out, in]` row-major) along each axis.
fn mapped(
    lw: &mut Lowerer,
    x: NodeId,
    h_axis: usize,
    [h, w]: [usize; 2],
    out: [usize; 2],
    matrix: impl Fn(usize, usize) -> specc_image::Result<Vec<f32>>,
    at: &Expr,
) -> R<NodeId> {
    let matrix = |n: usize, o: usize| {
        matrix(n, o).map_err(|e| {
            Diagnostic::new(Code::ArgumentOutOfRange, at.span, e.message).with_label("here")
        })
    };
    // Aᵀ as a [in, out] constant.
    let transposed = |lw: &mut Lowerer, a: Vec<f32>, n: usize, o: usize| {
        let mut t = vec![0f32; n * o];
        for i in 0..o {
            for k in 0..n {
                t[k * o + i] = a[i * n + k];
            }
        }
        lw.g.tensor(DType::F32, Shape::fixed(&[n as u32, o as u32]), t)
    };
    let (ah, aw) = (matrix(h, out[0])?, matrix(w, out[1])?);
    let ah = transposed(lw, ah, h, out[0]);
    let aw = transposed(lw, aw, w, out[1]);
    let rank = lw.g.shape(x).rank();
    let (hh, ww, cc) = (h_axis, h_axis + 1, h_axis + 2);
    let lead: Vec<usize> = (0..h_axis).collect();
    // [.., W, C, H] @ [H, OH] = [.., W, C, OH].
    let perm: Vec<usize> = lead.iter().copied().chain([ww, cc, hh]).collect();
    let t = lw.g.transpose(x, &perm);
    let t = lw.matmul(t, ah, false, false, at.span, at.span, at.span)?;
    // [.., OH, C, W] @ [W, OW] = [.., OH, C, OW].
    let perm: Vec<usize> = lead.iter().copied().chain([cc, ww, hh]).collect();
    let t = lw.g.transpose(t, &perm);
    let t = lw.matmul(t, aw, false, false, at.span, at.span, at.span)?;
    // Back to [.., OH, OW, C].
    let perm: Vec<usize> = lead.iter().copied().chain([hh, cc, ww]).collect();
    debug_assert_eq!(perm.len(), rank);
    Ok(lw.g.transpose(t, &perm))
}

/// `tf.image.resize(images, size, method = "bilinear", preserve_aspect_ratio
/// = false, antialias = false)`.
pub fn resize(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "resize")?;
    let e = b.req(1);
    let v = args::eval_int_list(e)?;
    if v.len() != 2 {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("`size` is [new_height, new_width], got {} numbers", v.len()),
        )
        .with_label("expected 2 sizes"));
    }
    let want = [size(e, v[0], "new_height")?, size(e, v[1], "new_width")?];
    let m = method(b, 2)?;
    let out = target_size([h as usize, w as usize], want, flag(b, 3)?);
    if out.contains(&0) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            e.span,
            format!("preserving the aspect of a {h}×{w} image in {want:?} leaves an empty side"),
        )
        .with_label("too small"));
    }
    resized(
        lw,
        x,
        h_axis,
        [h as usize, w as usize],
        out,
        (m, flag(b, 4)?),
        e,
    )
}

/// `tf.image.resize_with_pad(image, target_height, target_width, method =
/// "bilinear", antialias = false)`.
pub fn resize_with_pad(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), "resize_with_pad")?;
    let th = size(b.req(1), args::eval_int(b.req(1))?, "target_height")?;
    let tw = size(b.req(2), args::eval_int(b.req(2))?, "target_width")?;
    let (fit, [top, left]) = resize_with_pad_layout([h as usize, w as usize], [th, tw]);
    if fit.contains(&0) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(1).span,
            format!("a {h}×{w} image fitted in {th}×{tw} has an empty side"),
        )
        .with_label("too small"));
    }
    let m = method(b, 3)?;
    let r = resized(
        lw,
        x,
        h_axis,
        [h as usize, w as usize],
        fit,
        (m, flag(b, 4)?),
        b.req(1),
    )?;
    let mut s = lw.g.shape(r).clone();
    s.0[h_axis] = Dim::Fixed(th as u32);
    s.0[h_axis + 1] = Dim::Fixed(tw as u32);
    let mut before = vec![0u32; s.rank()];
    before[h_axis] = top as u32;
    before[h_axis + 1] = left as u32;
    Ok(lw.g.pad(r, &before, &s))
}

/// The v1 resize of `[in, 1, in]` impulses to `[out, 1]`: its map `A`.
fn v1_matrix(
    kind: V1,
    centers: Centers,
    input: usize,
    output: usize,
) -> specc_image::Result<Vec<f32>> {
    let mut impulses = ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[input, 1, input]));
    for k in 0..input {
        impulses[[k, 0, k]] = 1.0;
    }
    let im = Image::F32(impulses);
    let size = [output, 1];
    let out = match kind {
        V1::Bilinear => v1::resize_bilinear(&im, size, centers),
        V1::Nearest => v1::resize_nearest_neighbor(&im, size, centers),
        V1::Bicubic => v1::resize_bicubic(&im, size, centers),
        V1::Area => v1::resize_area(&im, size, centers.align_corners),
    }?;
    Ok(out.to_f32().as_standard_layout().iter().copied().collect())
}

/// The `tf.compat.v1.image.resize_*` ops.
#[derive(Clone, Copy)]
enum V1 {
    Bilinear,
    Nearest,
    Bicubic,
    Area,
}

fn resize_v1(lw: &mut Lowerer, b: &Bound, kind: V1, what: &str) -> R<NodeId> {
    let (x, h_axis, [h, w, _]) = image_operand(lw, b.req(0), what)?;
    let e = b.req(1);
    let v = args::eval_int_list(e)?;
    if v.len() != 2 {
        return Err(Diagnostic::new(
            Code::MalformedArgument,
            e.span,
            format!("`size` is [new_height, new_width], got {} numbers", v.len()),
        )
        .with_label("expected 2 sizes"));
    }
    let out = [size(e, v[0], "new_height")?, size(e, v[1], "new_width")?];
    let centers = Centers {
        align_corners: flag(b, 2)?,
        half_pixel_centers: match kind {
            V1::Area => false,
            _ => flag(b, 3)?,
        },
    };
    if centers.align_corners && centers.half_pixel_centers {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.get(3).map_or(b.call_span, |e| e.span),
            "If half_pixel_centers is True, align_corners must be False.",
        )
        .with_label("both true"));
    }
    mapped(
        lw,
        x,
        h_axis,
        [h as usize, w as usize],
        out,
        |n, o| v1_matrix(kind, centers, n, o),
        e,
    )
}

/// `tf.compat.v1.image.resize_bilinear(images, size, align_corners =
/// false, half_pixel_centers = false)`.
pub fn resize_bilinear(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    resize_v1(lw, b, V1::Bilinear, "resize_bilinear")
}

/// `tf.compat.v1.image.resize_nearest_neighbor(images, size, align_corners
/// = false, half_pixel_centers = false)`.
pub fn resize_nearest_neighbor(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    resize_v1(lw, b, V1::Nearest, "resize_nearest_neighbor")
}

/// `tf.compat.v1.image.resize_bicubic(images, size, align_corners = false,
/// half_pixel_centers = false)`.
pub fn resize_bicubic(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    resize_v1(lw, b, V1::Bicubic, "resize_bicubic")
}

/// `tf.compat.v1.image.resize_area(images, size, align_corners = false)`.
pub fn resize_area(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    resize_v1(lw, b, V1::Area, "resize_area")
}
