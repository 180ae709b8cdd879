//! Convolution and pooling of `tf.nn` over NHWC images, lowered onto two IR
//! ops: `Patches` (im2col) and `PatchesGrad` (its adjoint, col2im).
//!
//! Owns: the window arithmetic TF uses (`VALID`: `out = ⌈(in − k_eff + 1)/s⌉`;
//! `SAME`: `out = ⌈in/s⌉`, `pad_total = max((out − 1)·s + k_eff − in, 0)`,
//! the odd cell at the bottom/right; explicit `[[0, 0], [t, b], [l, r],
//! [0, 0]]`; `k_eff = (k − 1)·d + 1`), the argument forms (`strides` and
//! `dilations` as an int, a list of 2 or NHWC's list of 4), every shape check
//! with a caret, and the lowerings:
//! - `conv2d`/`convolution`/`conv1d`: the patches times the kernel as a
//!   `[KH·KW·C, O]` matrix (a 1×1 kernel with stride 1 multiplies the image
//!   itself); `conv1d` is `conv2d` over a height of 1.
//! - `conv2d_transpose`/`atrous_conv2d_transpose`: the input times the
//!   transposed kernel, folded back by col2im (the gradient of `conv2d`).
//! - `depthwise_conv2d`: the patches with a tap axis, times the kernel per
//!   channel, summed over the taps; `separable_conv2d` adds a 1×1 `conv2d`.
//! - `max_pool2d`: the first maximum of each window (`argmax` over the taps,
//!   padding `-inf`), selected, so its whole gradient goes to that one input
//!   as TF's MaxPoolGrad does; `max_pool_with_argmax` also gives TF's flat
//!   index of it; `avg_pool2d` divides each window's sum by its real cells.
//!
//! Invariant: an argument is checked before any node is built; a pooling
//! window always has a tap inside the image (SAME, VALID, or `max_pool2d`'s
//! explicit padding, each side smaller than the window as TF requires), so
//! the `-inf` padding never wins a max pool.

use specc_grammar::ast::{Call, Expr, ExprKind};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, Bound};
use super::expr::{Lowerer, R};
use crate::ir::{BinaryOp, DType, Dim, NodeId, Shape, Window};

/// How the window is placed: `SAME`, `VALID`, or explicit `(before, after)`
/// per spatial axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Padding {
    Same,
    Valid,
    Explicit([(u32, u32); 2]),
}

fn bad(code: Code, e: &Expr, msg: String, label: &str) -> Diagnostic {
    Diagnostic::new(code, e.span, msg).with_label(label.to_string())
}

fn shape_error(e: &Expr, msg: String, label: String) -> Diagnostic {
    Diagnostic::new(Code::BadShape, e.span, msg).with_label(label)
}

/// `padding`: `'SAME'`, `'VALID'` or NHWC's `[[0, 0], [t, b], [l, r], [0, 0]]`
/// (for a 1-D op `[[0, 0], [l, r], [0, 0]]`).
fn padding(e: &Expr, spatial: usize) -> R<Padding> {
    if let ExprKind::List(items) = &e.kind {
        let pairs: Vec<Vec<i64>> = items.iter().map(args::eval_int_list).collect::<R<_>>()?;
        let ok = pairs.len() == spatial + 2
            && pairs
                .iter()
                .all(|p| p.len() == 2 && p.iter().all(|&v| v >= 0))
            && pairs[0] == [0, 0]
            && pairs[spatial + 1] == [0, 0];
        if !ok {
            return Err(bad(Code::MalformedArgument,
                e,
                format!(
                    "explicit padding is a list of {} [before, after] pairs of non-negative integers, zero for the batch and the channels",
                    spatial + 2
                ),
                "bad padding",
            ));
        }
        let mut out = [(0, 0); 2];
        let first = 2 - spatial;
        for (i, p) in pairs[1..=spatial].iter().enumerate() {
            out[first + i] = (p[0] as u32, p[1] as u32);
        }
        return Ok(Padding::Explicit(out));
    }
    match args::eval_ident(e)? {
        "SAME" | "same" => Ok(Padding::Same),
        "VALID" | "valid" => Ok(Padding::Valid),
        other => Err(bad(
            Code::UnknownChoice,
            e,
            format!("padding must be 'SAME', 'VALID' or a list of pairs, not '{other}'"),
            "unknown padding",
        )
        .with_help("TF's padding names are 'SAME' and 'VALID'")),
    }
}

/// `strides`, `dilations` or `ksize` of a 2-D op: an int, `[h, w]` or NHWC's
/// `[1, h, w, 1]`; positive. `default` when absent.
fn pair(b: &Bound, i: usize, what: &str, default: u32) -> R<[u32; 2]> {
    let Some(e) = b.get(i).filter(|e| !args::is_none(e)) else {
        return Ok([default; 2]);
    };
    let v = args::eval_int_list(e)?;
    let hw = match v.as_slice() {
        [s] => [*s, *s],
        [h, w] => [*h, *w],
        [1, h, w, 1] => [*h, *w],
        [_, _, _, _] => {
            return Err(bad(
                Code::MalformedArgument,
                e,
                format!("{what} over the batch and the channels must be 1 (NHWC: [1, h, w, 1])"),
                "not 1 at both ends",
            ))
        }
        _ => {
            return Err(bad(
                Code::MalformedArgument,
                e,
                format!("{what} is an integer, [h, w] or [1, h, w, 1]"),
                "bad length",
            ))
        }
    };
    if hw.iter().any(|&s| s < 1 || s > i64::from(u16::MAX)) {
        return Err(bad(
            Code::ArgumentOutOfRange,
            e,
            format!("{what} must be positive"),
            "not positive",
        ));
    }
    Ok([hw[0] as u32, hw[1] as u32])
}

/// `stride`, `dilations` of a 1-D op: an int, `[w]` or `[1, w, 1]`.
fn single(b: &Bound, i: usize, what: &str) -> R<u32> {
    let Some(e) = b.get(i).filter(|e| !args::is_none(e)) else {
        return Ok(1);
    };
    let v = args::eval_int_list(e)?;
    let s = match v.as_slice() {
        [s] | [1, s, 1] => *s,
        _ => {
            return Err(bad(
                Code::MalformedArgument,
                e,
                format!("{what} is an integer or [1, w, 1]"),
                "bad length",
            ))
        }
    };
    if s < 1 || s > i64::from(u16::MAX) {
        return Err(bad(
            Code::ArgumentOutOfRange,
            e,
            format!("{what} must be positive"),
            "not positive",
        ));
    }
    Ok(s as u32)
}

/// A fixed dimension of an operand, or a caret at it.
fn fixed(d: Dim, e: &Expr, what: &str) -> R<u32> {
    d.fixed().ok_or_else(|| {
        shape_error(
            e,
            format!("the {what} must be a fixed size, not the batch B"),
            "has B here".into(),
        )
    })
}

/// The window of a convolution or pooling over `input [H, W]` with `kernel`
/// taps; the caret goes under `at` when the kernel does not fit.
pub(super) fn window(
    input: [u32; 2],
    channels: u32,
    kernel: [u32; 2],
    strides: [u32; 2],
    dilations: [u32; 2],
    padding: Padding,
    at: &Expr,
) -> R<Window> {
    let mut output = [0; 2];
    let mut pad_before = [0; 2];
    for a in 0..2 {
        let k_eff = (kernel[a] - 1) * dilations[a] + 1;
        let (n, s) = (input[a], strides[a]);
        let (out, before) = match padding {
            Padding::Same => {
                let out = n.div_ceil(s);
                let total = ((out.max(1) - 1) * s + k_eff).saturating_sub(n);
                (out, total / 2)
            }
            Padding::Valid | Padding::Explicit(_) => {
                let (b, e) = match padding {
                    Padding::Explicit(p) => p[a],
                    _ => (0, 0),
                };
                let padded = n + b + e;
                if padded < k_eff {
                    let axis = ["height", "width"][a];
                    return Err(shape_error(
                        at,
                        format!(
                            "the kernel's {axis} {k_eff} (with dilation) is larger than the padded input's {padded}"
                        ),
                        format!("{axis} {k_eff} > {padded}"),
                    )
                    .with_help("use padding 'SAME', a smaller kernel or a larger input"));
                }
                ((padded - k_eff) / s + 1, b)
            }
        };
        if out == 0 {
            return Err(shape_error(
                at,
                "the convolution has an empty output".into(),
                "empty output".into(),
            ));
        }
        output[a] = out;
        pad_before[a] = before;
    }
    Ok(Window {
        input,
        output,
        kernel,
        strides,
        dilations,
        pad_before,
        channels,
    })
}

/// The operand `e` of `rank` (`layout` names its axes): its node, shape,
/// and the fixed sizes of its axes after the first.
fn operand(
    lw: &mut Lowerer,
    e: &Expr,
    rank: usize,
    what: &str,
    layout: &str,
) -> R<(NodeId, Shape, Vec<u32>)> {
    let x = lw.float(e)?;
    let s = lw.g.shape(x).clone();
    if s.rank() != rank {
        return Err(shape_error(
            e,
            format!("{what} needs {layout} of rank {rank}, but this is {s}"),
            format!("rank {}", s.rank()),
        ));
    }
    let names = ["height", "width", "channel count"];
    let sizes = s.0[1..]
        .iter()
        .zip(&names[3 - (rank - 1)..])
        .map(|(&d, name)| fixed(d, e, name))
        .collect::<R<Vec<u32>>>()?;
    Ok((x, s, sizes))
}

/// The NHWC operand at argument `i`: its node and `[N, H, W, C]`.
fn images(lw: &mut Lowerer, b: &Bound, i: usize, what: &str) -> R<(NodeId, Dim, [u32; 2], u32)> {
    let (x, s, d) = operand(lw, b.req(i), 4, what, "NHWC images")?;
    Ok((x, s.0[0], [d[0], d[1]], d[2]))
}

/// A kernel operand of `rank` with fixed dims.
fn kernel(lw: &mut Lowerer, e: &Expr, rank: usize, layout: &str) -> R<(NodeId, Vec<u32>)> {
    let k = lw.float(e)?;
    let s = lw.g.shape(k).clone();
    if s.rank() != rank {
        return Err(shape_error(
            e,
            format!("the kernel must have rank {rank} ({layout}), but this is {s}"),
            format!("rank {}", s.rank()),
        ));
    }
    let dims =
        s.0.iter()
            .map(|&d| fixed(d, e, "kernel shape"))
            .collect::<R<Vec<u32>>>()?;
    Ok((k, dims))
}

fn channels_mismatch(e: &Expr, kernel_c: u32, input_c: u32, which: &str) -> Diagnostic {
    shape_error(
        e,
        format!("the kernel's {which} ({kernel_c}) does not match the input's {input_c} channels"),
        format!("{kernel_c} channels here"),
    )
}

/// `x [N, H, W, C] ⊛ k [KH, KW, C, O]` over `w`: the patches times the
/// kernel matrix.
fn conv_nhwc(lw: &mut Lowerer, x: NodeId, k: NodeId, w: Window, out_c: u32) -> NodeId {
    let matrix = Shape::fixed(&[w.patch_len(), out_c]);
    let km = lw.g.reshape(k, &matrix);
    let pointwise = w.kernel == [1, 1] && w.strides == [1, 1] && w.pad_before == [0, 0];
    let p = if pointwise {
        x
    } else {
        lw.g.patches(x, w, 0.0)
    };
    lw.g.matmul(p, km, false, false)
}

/// `tf.nn.conv2d(input, filters, strides, padding, dilations=None)`.
pub fn conv2d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, hw, c) = images(lw, b, 0, "conv2d")?;
    let (k, kd) = kernel(lw, b.req(1), 4, "[KH, KW, in, out]")?;
    if kd[2] != c {
        return Err(channels_mismatch(b.req(1), kd[2], c, "input channels"));
    }
    let strides = pair(b, 2, "strides", 1)?;
    let pad = padding(b.req(3), 2)?;
    let dilations = pair(b, 4, "dilations", 1)?;
    let w = window(hw, c, [kd[0], kd[1]], strides, dilations, pad, b.req(1))?;
    Ok(conv_nhwc(lw, x, k, w, kd[3]))
}

/// `tf.nn.conv1d(input, filters, stride, padding, dilations=None)`:
/// `[N, W, C] ⊛ [K, C, O]`, as `conv2d` over a height of 1.
pub fn conv1d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, s, d) = operand(lw, b.req(0), 3, "conv1d", "an input [N, W, C]")?;
    let (width, c) = (d[0], d[1]);
    let (k, kd) = kernel(lw, b.req(1), 3, "[K, in, out]")?;
    if kd[1] != c {
        return Err(channels_mismatch(b.req(1), kd[1], c, "input channels"));
    }
    let stride = single(b, 2, "stride")?;
    let pad = padding(b.req(3), 1)?;
    let dilation = single(b, 4, "dilations")?;
    let w = window(
        [1, width],
        c,
        [1, kd[0]],
        [1, stride],
        [1, dilation],
        pad,
        b.req(1),
    )?;
    let x4 =
        lw.g.reshape(x, &Shape(vec![s.0[0], Dim::Fixed(1), s.0[1], s.0[2]]));
    let y = conv_nhwc(lw, x4, k, w, kd[2]);
    Ok(lw.g.reshape(
        y,
        &Shape(vec![s.0[0], Dim::Fixed(w.output[1]), Dim::Fixed(kd[2])]),
    ))
}

/// `tf.nn.convolution(input, filters, strides=None, padding='VALID',
/// dilations=None)`: `conv1d` for rank 3, `conv2d` for rank 4.
pub fn convolution(lw: &mut Lowerer, b: &Bound, c: &Call) -> R<NodeId> {
    let x = lw.float(b.req(0))?;
    match lw.g.shape(x).rank() {
        3 => conv1d(lw, b, c),
        4 => conv2d(lw, b, c),
        r => Err(shape_error(
            b.req(0),
            format!(
                "convolution supports 1-D ([N, W, C]) and 2-D ([N, H, W, C]) inputs, not rank {r}"
            ),
            format!("rank {r}"),
        )),
    }
}

/// The output shape argument of a transposed convolution: `[N, H, W, C]`
/// (the batch entry is not checked against a batch `B`).
fn output_shape(e: &Expr, batch: Dim) -> R<[u32; 3]> {
    let v = args::eval_int_list(e)?;
    let ok = v.len() == 4
        && v[1..]
            .iter()
            .all(|&d| d >= 1 && d <= i64::from(u32::MAX >> 8));
    if !ok {
        return Err(bad(
            Code::MalformedArgument,
            e,
            "output_shape is [batch, height, width, channels] with positive sizes".into(),
            "bad output_shape",
        ));
    }
    if let Dim::Fixed(n) = batch {
        if v[0] != i64::from(n) {
            return Err(bad(
                Code::ConflictingArguments,
                e,
                format!("output_shape's batch {} is not the input's {n}", v[0]),
                "batch differs",
            ));
        }
    }
    Ok([v[1] as u32, v[2] as u32, v[3] as u32])
}

/// The transposed convolution of `x [N, H, W, I]` by `k [KH, KW, O, I]` to
/// `[N, OH, OW, O]`: the gradient of `conv2d` from `[N, OH, OW, O]`.
#[allow(clippy::too_many_arguments)]
fn conv_transpose(
    lw: &mut Lowerer,
    b: &Bound,
    x: NodeId,
    k: NodeId,
    kd: &[u32],
    out: [u32; 3],
    strides: [u32; 2],
    dilations: [u32; 2],
    pad: Padding,
    in_hw: [u32; 2],
) -> R<NodeId> {
    let w = window(
        [out[0], out[1]],
        out[2],
        [kd[0], kd[1]],
        strides,
        dilations,
        pad,
        b.req(1),
    )?;
    if w.output != in_hw {
        return Err(shape_error(
            b.req(2),
            format!(
                "a convolution of output_shape [{}, {}] with these strides and padding gives [{}, {}], not the input's [{}, {}]",
                out[0], out[1], w.output[0], w.output[1], in_hw[0], in_hw[1]
            ),
            "does not match the input".into(),
        ));
    }
    let km = lw.g.reshape(k, &Shape::fixed(&[w.patch_len(), kd[3]]));
    let cols = lw.g.matmul(x, km, false, true);
    Ok(lw.g.patches_grad(cols, w))
}

/// A transposed convolution's images (argument 0), kernel `[KH, KW, out,
/// in]` (1) and `output_shape` (2), checked against each other: the
/// images, their `[H, W]`, the kernel, its dims and `[OH, OW, out]`.
#[allow(clippy::type_complexity)]
fn transpose_operands(
    lw: &mut Lowerer,
    b: &Bound,
    what: &str,
) -> R<(NodeId, [u32; 2], NodeId, Vec<u32>, [u32; 3])> {
    let (x, n, hw, c) = images(lw, b, 0, what)?;
    let (k, kd) = kernel(lw, b.req(1), 4, "[KH, KW, out, in]")?;
    if kd[3] != c {
        return Err(channels_mismatch(b.req(1), kd[3], c, "last dimension (in)"));
    }
    let out = output_shape(b.req(2), n)?;
    if out[2] != kd[2] {
        return Err(shape_error(
            b.req(2),
            format!(
                "output_shape has {} channels but the kernel makes {}",
                out[2], kd[2]
            ),
            "channels differ".into(),
        ));
    }
    Ok((x, hw, k, kd, out))
}

/// `tf.nn.conv2d_transpose(input, filters, output_shape, strides,
/// padding='SAME', dilations=None)`.
pub fn conv2d_transpose(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, hw, k, kd, out) = transpose_operands(lw, b, "conv2d_transpose")?;
    let strides = pair(b, 3, "strides", 1)?;
    let pad = match b.get(4) {
        Some(e) => padding(e, 2)?,
        None => Padding::Same,
    };
    let dilations = pair(b, 5, "dilations", 1)?;
    conv_transpose(lw, b, x, k, &kd, out, strides, dilations, pad, hw)
}

/// `tf.nn.atrous_conv2d_transpose(value, filters, output_shape, rate,
/// padding)`: `conv2d_transpose` with stride 1 and dilation `rate`.
pub fn atrous_conv2d_transpose(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, hw, k, kd, out) = transpose_operands(lw, b, "atrous_conv2d_transpose")?;
    let rate = single(b, 3, "rate")?;
    let pad = padding(b.req(4), 2)?;
    if matches!(pad, Padding::Explicit(_)) {
        return Err(bad(
            Code::UnsupportedArgument,
            b.req(4),
            "atrous_conv2d_transpose takes 'SAME' or 'VALID'".into(),
            "explicit",
        ));
    }
    conv_transpose(lw, b, x, k, &kd, out, [1, 1], [rate, rate], pad, hw)
}

/// The depthwise convolution of `x` by `k [KH, KW, C, M]` over `w`:
/// `[N, OH, OW, C·M]`, channel `c·M + m` from input channel `c`.
pub(super) fn depthwise(lw: &mut Lowerer, x: NodeId, k: NodeId, kd: &[u32], w: Window) -> NodeId {
    let n = lw.g.shape(x).0[0];
    let (taps, c, m) = (kd[0] * kd[1], kd[2], kd[3]);
    let p = lw.g.patches(x, w, 0.0);
    let [oh, ow] = w.output.map(Dim::Fixed);
    let p6 = lw.g.reshape(
        p,
        &Shape(vec![
            n,
            oh,
            ow,
            Dim::Fixed(taps),
            Dim::Fixed(c),
            Dim::Fixed(1),
        ]),
    );
    let k3 = lw.g.reshape(k, &Shape::fixed(&[taps, c, m]));
    let prod = lw.g.mul(p6, k3);
    let s = lw.g.reduce_sum(prod, &[3]);
    lw.g.reshape(s, &Shape(vec![n, oh, ow, Dim::Fixed(c * m)]))
}

/// `tf.nn.depthwise_conv2d(input, filter, strides, padding, dilations=None)`.
pub fn depthwise_conv2d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, hw, c) = images(lw, b, 0, "depthwise_conv2d")?;
    let (k, kd) = kernel(lw, b.req(1), 4, "[KH, KW, in, multiplier]")?;
    if kd[2] != c {
        return Err(channels_mismatch(b.req(1), kd[2], c, "input channels"));
    }
    let strides = pair(b, 2, "strides", 1)?;
    let pad = padding(b.req(3), 2)?;
    let dilations = pair(b, 4, "dilations", 1)?;
    let w = window(hw, c, [kd[0], kd[1]], strides, dilations, pad, b.req(1))?;
    Ok(depthwise(lw, x, k, &kd, w))
}

/// `tf.nn.separable_conv2d(input, depthwise_filter, pointwise_filter,
/// strides, padding, dilations=None)`: depthwise, then a 1×1 `conv2d`.
pub fn separable_conv2d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, _, hw, c) = images(lw, b, 0, "separable_conv2d")?;
    let (k, kd) = kernel(lw, b.req(1), 4, "[KH, KW, in, multiplier]")?;
    if kd[2] != c {
        return Err(channels_mismatch(b.req(1), kd[2], c, "input channels"));
    }
    let (pk, pd) = kernel(lw, b.req(2), 4, "[1, 1, in·multiplier, out]")?;
    if pd[0] != 1 || pd[1] != 1 || pd[2] != kd[2] * kd[3] {
        return Err(shape_error(
            b.req(2),
            format!(
                "the pointwise filter must be [1, 1, {}, out] (in·multiplier channels)",
                kd[2] * kd[3]
            ),
            "not [1, 1, in·multiplier, out]".into(),
        ));
    }
    let strides = pair(b, 3, "strides", 1)?;
    let pad = padding(b.req(4), 2)?;
    let dilations = pair(b, 5, "dilations", 1)?;
    let w = window(hw, c, [kd[0], kd[1]], strides, dilations, pad, b.req(1))?;
    let d = depthwise(lw, x, k, &kd, w);
    let km = lw.g.reshape(pk, &Shape::fixed(&[pd[2], pd[3]]));
    Ok(lw.g.matmul(d, km, false, false))
}

/// The pooling window of `input` (argument 0) with `ksize`, `strides`,
/// `padding` at arguments 1-3. `explicit`: the op takes TF's explicit
/// `[[0, 0], [t, b], [l, r], [0, 0]]` (`tf.nn.max_pool2d`, TF's MaxPool with
/// `EXPLICIT` padding), each side smaller than the window as TF requires, so
/// every window keeps a tap inside the image; else `SAME` or `VALID` only
/// (TF's AvgPool and MaxPoolWithArgmax take a padding name, no list).
fn pool_window(lw: &mut Lowerer, b: &Bound, what: &str, explicit: bool) -> R<(NodeId, Window)> {
    let (x, _, hw, c) = images(lw, b, 0, what)?;
    let ksize = pair(b, 1, "ksize", 1)?;
    let strides = pair(b, 2, "strides", 1)?;
    let pad = padding(b.req(3), 2)?;
    if let Padding::Explicit(p) = pad {
        if !explicit {
            return Err(bad(Code::UnsupportedArgument,
                b.req(3),
                format!("{what} takes padding 'SAME' or 'VALID', not a list (TF's op expects a string for padding)"),
                "explicit padding",
            )
            .with_help("only max_pool2d takes explicit padding; pad with pad(..) first, or use 'SAME'"));
        }
        for (a, &(before, after)) in p.iter().enumerate() {
            let sides = [["top", "bottom"], ["left", "right"]][a];
            for (side, v) in sides.iter().zip([before, after]) {
                if v >= ksize[a] {
                    let axis = ["height", "width"][a];
                    return Err(bad(Code::ArgumentOutOfRange,
                        b.req(3),
                        format!(
                            "{side} padding {v} needs to be smaller than the window's {axis} {}",
                            ksize[a]
                        ),
                        &format!("{side} padding {v} >= {}", ksize[a]),
                    )
                    .with_help("a window of padding alone would have no maximum (TF's MaxPool refuses it too)"));
                }
            }
        }
    }
    let w = window(hw, c, ksize, strides, [1, 1], pad, b.req(1))?;
    Ok((x, w))
}

/// The patches of `x` with the taps on their own axis: `[N, OH, OW, KH·KW, C]`.
/// Windows that tile the image exactly (stride = kernel, no padding, as a
/// 2×2 pool of an even image) are a reshape and a transpose of it: a view,
/// with no im2col and, in the gradient, no col2im.
fn tap_patches(lw: &mut Lowerer, x: NodeId, w: Window, pad: f32) -> NodeId {
    let n = lw.g.shape(x).0[0];
    let tiles = w.strides == w.kernel
        && w.dilations == [1, 1]
        && w.pad_before == [0, 0]
        && (0..2).all(|a| w.output[a] * w.kernel[a] == w.input[a]);
    if tiles {
        let [oh, ow] = w.output.map(Dim::Fixed);
        let [kh, kw] = w.kernel.map(Dim::Fixed);
        let c = Dim::Fixed(w.channels);
        let split = lw.g.reshape(x, &Shape(vec![n, oh, kh, ow, kw, c]));
        let taps = lw.g.transpose(split, &[0, 1, 3, 2, 4, 5]);
        return lw.g.reshape(
            taps,
            &Shape(vec![n, oh, ow, Dim::Fixed(w.kernel[0] * w.kernel[1]), c]),
        );
    }
    let p = lw.g.patches(x, w, pad);
    let [oh, ow] = w.output.map(Dim::Fixed);
    lw.g.reshape(
        p,
        &Shape(vec![
            n,
            oh,
            ow,
            Dim::Fixed(w.kernel[0] * w.kernel[1]),
            Dim::Fixed(w.channels),
        ]),
    )
}

/// The max pooling of `x` over `w` and each window's first maximum (its tap, f32).
fn max_pool(lw: &mut Lowerer, x: NodeId, w: Window) -> (NodeId, NodeId) {
    let p = tap_patches(lw, x, w, f32::NEG_INFINITY);
    let first = lw.g.argmax(p, 3);
    let first = lw.g.cast(first, DType::F32);
    let s = lw.g.shape(p).clone();
    let mut kept = lw.g.shape(first).clone();
    kept.0.insert(3, Dim::Fixed(1));
    let first_k = lw.g.reshape(first, &kept);
    let tap = lw.g.iota(3, &s);
    let chosen = lw.g.binary(BinaryOp::Eq, tap, first_k);
    let zero = lw.g.scalar(0.0);
    let picked = lw.g.select(chosen, p, zero);
    (lw.g.reduce_sum(picked, &[3]), first)
}

/// `tf.nn.max_pool2d(input, ksize, strides, padding)`.
pub fn max_pool2d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, w) = pool_window(lw, b, "max_pool2d", true)?;
    Ok(max_pool(lw, x, w).0)
}

/// `tf.nn.max_pool_with_argmax(input, ksize, strides, padding,
/// include_batch_in_index=False)`: the pooled values (`which = 0`) or the
/// flat index `((n·H + y)·W + x)·C + c` of each maximum (`which = 1`, int32;
/// the `n·H` term only with `include_batch_in_index`).
fn max_pool_with_argmax(lw: &mut Lowerer, b: &Bound, which: usize) -> R<NodeId> {
    let (x, w) = pool_window(lw, b, "max_pool_with_argmax", false)?;
    let with_batch = match b.get(4) {
        Some(e) if !args::is_none(e) => args::eval_bool(e)?,
        _ => false,
    };
    let (y, first) = max_pool(lw, x, w);
    if which == 0 {
        return Ok(y);
    }
    let s = lw.g.shape(first).clone();
    if with_batch && s.0[0] == Dim::Batch {
        return Err(bad(
            Code::UnsupportedArgument,
            b.req(4),
            "include_batch_in_index needs a fixed batch size".into(),
            "the batch is B",
        ));
    }
    let kw = lw.g.scalar(w.kernel[1] as f32);
    let q = lw.g.div(first, kw);
    let ky = lw.g.unary(crate::ir::UnaryOp::Floor, q);
    let kyw = lw.g.mul(ky, kw);
    let kx = lw.g.sub(first, kyw);
    let coord = |lw: &mut Lowerer, axis: usize, k: NodeId| {
        let o = lw.g.iota(axis, &s);
        let a = axis - 1;
        let so = lw.g.scale(o, w.strides[a] as f32);
        let kd = lw.g.scale(k, w.dilations[a] as f32);
        let at = lw.g.add(so, kd);
        let pad = lw.g.scalar(w.pad_before[a] as f32);
        lw.g.sub(at, pad)
    };
    let iy = coord(lw, 1, ky);
    let ix = coord(lw, 2, kx);
    let mut row = iy;
    if with_batch {
        let n = lw.g.iota(0, &s);
        let nh = lw.g.scale(n, w.input[0] as f32);
        row = lw.g.add(nh, iy);
    }
    let rw = lw.g.scale(row, w.input[1] as f32);
    let px = lw.g.add(rw, ix);
    let pc = lw.g.scale(px, w.channels as f32);
    let c = lw.g.iota(3, &s);
    let flat = lw.g.add(pc, c);
    Ok(lw.g.cast(flat, DType::I32))
}

pub fn max_pool_with_argmax_output(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    max_pool_with_argmax(lw, b, 0)
}

pub fn max_pool_with_argmax_argmax(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    max_pool_with_argmax(lw, b, 1)
}

/// `tf.nn.avg_pool2d(input, ksize, strides, padding)`: each window's sum
/// divided by its cells inside the image.
pub fn avg_pool2d(lw: &mut Lowerer, b: &Bound, _: &Call) -> R<NodeId> {
    let (x, w) = pool_window(lw, b, "avg_pool2d", false)?;
    let p = tap_patches(lw, x, w, 0.0);
    let sum = lw.g.reduce_sum(p, &[3]);
    let inside = |a: usize, o: u32| {
        (0..w.kernel[a])
            .filter(|&k| w.source(a, o, k).is_some())
            .count()
    };
    let mut counts = Vec::with_capacity((w.output[0] * w.output[1]) as usize);
    for oy in 0..w.output[0] {
        for ox in 0..w.output[1] {
            counts.push((inside(0, oy) * inside(1, ox)) as f32);
        }
    }
    let full = (w.kernel[0] * w.kernel[1]) as f32;
    let count = if counts.iter().all(|&c| c == full) {
        lw.g.scalar(full)
    } else {
        lw.g.tensor(
            DType::F32,
            Shape::fixed(&[w.output[0], w.output[1], 1]),
            counts,
        )
    };
    Ok(lw.g.div(sum, count))
}
