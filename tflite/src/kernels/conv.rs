//! Float kernels of TFLite's convolution and pooling operators over NHWC
//! images: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, MAX_POOL_2D and
//! AVERAGE_POOL_2D.
//!
//! Owns: TFLite's window arithmetic ([`window`], the reference kernels'
//! `ComputePaddingHeightWidth`: `SAME` is `out = ⌈in/s⌉` with
//! `⌊pad_total/2⌋` before, `VALID` is `out = ⌊(in − k_eff)/s⌋ + 1` with no
//! padding, `k_eff = (k − 1)·d + 1`), the taps of a window moved over an
//! image (`Taps`, which the int8 and hybrid kernels share, TRANSPOSE_CONV's
//! scattered from the input over the output), the shape checks of the
//! convolutions' operands and the kernels themselves.
//! Invariants: the semantics are those of TFLite's reference kernels (filters
//! `[out, KH, KW, in]`, depthwise filters `[1, KH, KW, in·multiplier]` with
//! output channel `c·multiplier + m` from input channel `c`, transposed
//! convolution weights `[out, KH, KW, in]` and its padding computed from the
//! output size; a max pool takes the cells inside the image, an average pool
//! divides by their count); sums are accumulated in f64 and rounded once; a
//! shape the operator cannot take is an error, never a panic. The fused
//! activation is the caller's (`crate::interpreter`).

use ndarray::{ArrayD, IxDyn};

use crate::schema::Padding;

type Result<T> = std::result::Result<T, String>;

/// The sliding-window parameters of an operator: `[height, width]` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub padding: Padding,
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
}

/// TFLite's output size and padding before the image along one axis of
/// `input` cells, for a `filter` of taps `dilation` apart moved by `stride`.
pub fn window(
    padding: Padding,
    input: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
) -> Result<(usize, usize)> {
    if stride == 0 || dilation == 0 || filter == 0 {
        return Err(format!(
            "stride {stride}, dilation {dilation} and filter size {filter} must be positive"
        ));
    }
    let eff = (filter - 1) * dilation + 1;
    let out = match padding {
        Padding::Same => input.div_ceil(stride),
        Padding::Valid if input >= eff => (input - eff) / stride + 1,
        Padding::Valid => 0,
        Padding::Other(c) => return Err(format!("padding {c} is neither SAME nor VALID")),
    };
    if out == 0 {
        return Err(format!(
            "a window of {eff} cells over {input} gives an empty output"
        ));
    }
    let total = ((out - 1) * stride + eff).saturating_sub(input);
    Ok((out, total / 2))
}

/// `[N, H, W, C]` of a rank-4 tensor.
pub(crate) fn nhwc<T>(a: &ArrayD<T>, what: &str) -> Result<[usize; 4]> {
    match a.shape() {
        &[n, h, w, c] => Ok([n, h, w, c]),
        s => Err(format!("{what} of shape {s:?} (want rank 4)")),
    }
}

/// `[N, H, W, C]` of a CONV_2D input and `[O, KH, KW]` of its filter
/// `[O, KH, KW, C]`.
pub(crate) fn conv_shapes<T, F>(
    x: &ArrayD<T>,
    filter: &ArrayD<F>,
) -> Result<([usize; 4], [usize; 3])> {
    let [n, h, w, c] = nhwc(x, "input")?;
    let [o, kh, kw, fc] = nhwc(filter, "filter")?;
    if fc != c {
        return Err(format!(
            "filter of shape {:?} for an input of {c} channels",
            filter.shape()
        ));
    }
    Ok(([n, h, w, c], [o, kh, kw]))
}

/// `[N, H, W, C]` of a DEPTHWISE_CONV_2D input and `[KH, KW, C·M]` of its
/// filter `[1, KH, KW, C·M]`.
pub(crate) fn depthwise_shapes<T, F>(
    x: &ArrayD<T>,
    filter: &ArrayD<F>,
    multiplier: usize,
) -> Result<([usize; 4], [usize; 3])> {
    let [n, h, w, c] = nhwc(x, "input")?;
    let [one, kh, kw, oc] = nhwc(filter, "filter")?;
    if one != 1 || multiplier == 0 || oc != c * multiplier {
        return Err(format!(
            "filter of shape {:?} with depth_multiplier {multiplier} for an input of {c} channels",
            filter.shape()
        ));
    }
    Ok(([n, h, w, c], [kh, kw, oc]))
}

/// `[N, H, W, I]` of a TRANSPOSE_CONV input, `[O, KH, KW]` of its weights
/// `[O, KH, KW, I]` and `[OH, OW]` of its `output_shape` `[N, OH, OW, O]`.
pub(crate) fn transpose_conv_shapes<T, W>(
    output_shape: &[i64],
    weights: &ArrayD<W>,
    x: &ArrayD<T>,
) -> Result<([usize; 4], [usize; 3], [usize; 2])> {
    let [n, h, w, i] = nhwc(x, "input")?;
    let [o, kh, kw, wi] = nhwc(weights, "weights")?;
    let out: Vec<usize> = output_shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("output_shape {output_shape:?}")))
        .collect::<Result<_>>()?;
    let &[on, oh, ow, oc] = out.as_slice() else {
        return Err(format!("output_shape {output_shape:?} (want 4 values)"));
    };
    if wi != i || oc != o || on != n {
        return Err(format!(
            "weights of shape {:?} and output_shape {output_shape:?} for an input of shape {:?}",
            weights.shape(),
            x.shape()
        ));
    }
    Ok(([n, h, w, i], [o, kh, kw], [oh, ow]))
}

/// The contiguous values of `a`.
fn values(a: &ArrayD<f32>) -> Vec<f32> {
    a.iter().copied().collect()
}

/// The image coordinate tap `k` of output cell `o` reads, if inside `0..n`.
fn source(
    o: usize,
    stride: usize,
    pad: usize,
    k: usize,
    dilation: usize,
    n: usize,
) -> Option<usize> {
    let at = (o * stride + k * dilation).checked_sub(pad)?;
    (at < n).then_some(at)
}

/// The taps of a `[KH, KW]` window moved over a `[H, W]` grid: for a
/// window position, each tap that lands inside the grid and the cell it
/// reads (the kernels' loops over `KH × KW` with [`source`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Taps {
    filter: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    pads: [usize; 2],
    size: [usize; 2],
}

impl Taps {
    /// The `[OH, OW]` window positions over `size` ([`window`] along each
    /// axis) and their taps.
    pub(crate) fn new(
        padding: Padding,
        size: [usize; 2],
        filter: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
    ) -> Result<([usize; 2], Taps)> {
        let (oh, ph) = window(padding, size[0], filter[0], strides[0], dilations[0])?;
        let (ow, pw) = window(padding, size[1], filter[1], strides[1], dilations[1])?;
        let taps = Taps {
            filter,
            strides,
            dilations,
            pads: [ph, pw],
            size,
        };
        Ok(([oh, ow], taps))
    }

    /// The taps of TRANSPOSE_CONV's `[KH, KW]` weights scattered from an
    /// input cell over the `[OH, OW]` output `size`: the window of CONV_2D
    /// (undilated, its padding computed from the output size) whose
    /// positions are the input cells and whose cells are the output's.
    pub(crate) fn transposed(
        padding: Padding,
        size: [usize; 2],
        filter: [usize; 2],
        strides: [usize; 2],
    ) -> Result<Taps> {
        let (_, ph) = window(padding, size[0], filter[0], strides[0], 1)?;
        let (_, pw) = window(padding, size[1], filter[1], strides[1], 1)?;
        Ok(Taps {
            filter,
            strides,
            dilations: [1, 1],
            pads: [ph, pw],
            size,
        })
    }

    /// `f(ky, kx, y, x)` for each tap `(ky, kx)` of the window at `[oy, ox]`
    /// that reads the cell `(y, x)` inside the grid, row by row.
    #[inline(always)]
    pub(crate) fn for_each(
        &self,
        [oy, ox]: [usize; 2],
        mut f: impl FnMut(usize, usize, usize, usize),
    ) {
        let [kh, kw] = self.filter;
        let [sy, sx] = self.strides;
        let [dy, dx] = self.dilations;
        let [py, px] = self.pads;
        let [h, w] = self.size;
        for ky in 0..kh {
            let Some(y) = source(oy, sy, py, ky, dy, h) else {
                continue;
            };
            for kx in 0..kw {
                let Some(x) = source(ox, sx, px, kx, dx, w) else {
                    continue;
                };
                f(ky, kx, y, x);
            }
        }
    }
}

fn bias_values(bias: Option<&ArrayD<f32>>, channels: usize) -> Result<Vec<f64>> {
    match bias {
        None => Ok(vec![0.0; channels]),
        Some(b) if b.len() == channels => Ok(b.iter().map(|&v| f64::from(v)).collect()),
        Some(b) => Err(format!(
            "bias of shape {:?} for {channels} output channels",
            b.shape()
        )),
    }
}

/// CONV_2D: `x [N, H, W, C]` by `filter [O, KH, KW, C]`, plus `bias [O]`.
pub fn conv2d(
    x: &ArrayD<f32>,
    filter: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, c], [o, kh, kw]) = conv_shapes(x, filter)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, o)?;
    let (xv, fv) = (values(x), values(filter));
    let mut out = Vec::with_capacity(n * oh * ow * o);
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for (oc, &b0) in b.iter().enumerate() {
                    let mut acc = b0;
                    taps.for_each([oy, ox], |ky, kx, iy, ix| {
                        let xa = ((bn * h + iy) * w + ix) * c;
                        let fa = ((oc * kh + ky) * kw + kx) * c;
                        for ic in 0..c {
                            acc += f64::from(xv[xa + ic]) * f64::from(fv[fa + ic]);
                        }
                    });
                    out.push(acc as f32);
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), out).map_err(|e| e.to_string())
}

/// DEPTHWISE_CONV_2D: `x [N, H, W, C]` by `filter [1, KH, KW, C·M]`, plus
/// `bias [C·M]`; output channel `c·M + m` reads input channel `c`.
pub fn depthwise_conv2d(
    x: &ArrayD<f32>,
    filter: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
    multiplier: usize,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, c], [kh, kw, oc]) = depthwise_shapes(x, filter, multiplier)?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], [kh, kw], g.strides, g.dilations)?;
    let b = bias_values(bias, oc)?;
    let (xv, fv) = (values(x), values(filter));
    let mut out = Vec::with_capacity(n * oh * ow * oc);
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut acc = b.clone();
                taps.for_each([oy, ox], |ky, kx, iy, ix| {
                    let xa = ((bn * h + iy) * w + ix) * c;
                    let fa = (ky * kw + kx) * oc;
                    for (k, a) in acc.iter_mut().enumerate() {
                        *a += f64::from(xv[xa + k / multiplier]) * f64::from(fv[fa + k]);
                    }
                });
                out.extend(acc.iter().map(|&v| v as f32));
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, oc]), out).map_err(|e| e.to_string())
}

/// TRANSPOSE_CONV: `x [N, H, W, I]` by `weights [O, KH, KW, I]` to
/// `output_shape [N, OH, OW, O]` (the adjoint of CONV_2D from that shape),
/// plus `bias [O]`; the padding is computed from the output size.
pub fn transpose_conv(
    output_shape: &[i64],
    weights: &ArrayD<f32>,
    x: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
    g: Geometry,
) -> Result<ArrayD<f32>> {
    let ([n, h, w, i], [o, kh, kw], [oh, ow]) = transpose_conv_shapes(output_shape, weights, x)?;
    let taps = Taps::transposed(g.padding, [oh, ow], [kh, kw], g.strides)?;
    let b = bias_values(bias, o)?;
    let (xv, wv) = (values(x), values(weights));
    let mut acc = vec![0f64; n * oh * ow * o];
    for bn in 0..n {
        for iy in 0..h {
            for ix in 0..w {
                let xa = ((bn * h + iy) * w + ix) * i;
                taps.for_each([iy, ix], |ky, kx, oy, ox| {
                    let ya = ((bn * oh + oy) * ow + ox) * o;
                    for c in 0..o {
                        let wa = ((c * kh + ky) * kw + kx) * i;
                        let mut s = 0f64;
                        for k in 0..i {
                            s += f64::from(xv[xa + k]) * f64::from(wv[wa + k]);
                        }
                        acc[ya + c] += s;
                    }
                });
            }
        }
    }
    let out: Vec<f32> = acc
        .iter()
        .enumerate()
        .map(|(k, &v)| (v + b[k % o]) as f32)
        .collect();
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), out).map_err(|e| e.to_string())
}

/// MAX_POOL_2D (`average: false`) or AVERAGE_POOL_2D over `[KH, KW]`
/// windows of `x [N, H, W, C]`, reading only the cells inside the image.
pub fn pool2d(
    x: &ArrayD<f32>,
    filter: [usize; 2],
    g: Geometry,
    average: bool,
) -> Result<ArrayD<f32>> {
    let [n, h, w, c] = nhwc(x, "input")?;
    let ([oh, ow], taps) = Taps::new(g.padding, [h, w], filter, g.strides, [1, 1])?;
    let xv = values(x);
    let mut out = Vec::with_capacity(n * oh * ow * c);
    for bn in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ch in 0..c {
                    let mut sum = 0f64;
                    let mut max = f32::MIN;
                    let mut count = 0usize;
                    taps.for_each([oy, ox], |_, _, iy, ix| {
                        let v = xv[((bn * h + iy) * w + ix) * c + ch];
                        sum += f64::from(v);
                        max = max.max(v);
                        count += 1;
                    });
                    out.push(if !average {
                        max
                    } else if count == 0 {
                        0.0
                    } else {
                        (sum / count as f64) as f32
                    });
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, c]), out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(shape: &[usize], v: &[f32]) -> ArrayD<f32> {
        ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
    }

    const ONE: Geometry = Geometry {
        padding: Padding::Valid,
        strides: [1, 1],
        dilations: [1, 1],
    };

    #[test]
    fn same_padding_puts_the_odd_cell_after() {
        // 4 cells, 3 taps, stride 2: 2 outputs, total padding 1, none before.
        assert_eq!(window(Padding::Same, 4, 3, 2, 1), Ok((2, 0)));
        // 5 cells, 3 taps, stride 2: 3 outputs, padding 1 before and after.
        assert_eq!(window(Padding::Same, 5, 3, 2, 1), Ok((3, 1)));
        assert_eq!(window(Padding::Valid, 5, 3, 2, 1), Ok((2, 0)));
        // Dilation 2 makes 3 taps span 5 cells.
        assert_eq!(window(Padding::Valid, 5, 3, 1, 2), Ok((1, 0)));
        assert!(window(Padding::Valid, 2, 3, 1, 1).is_err());
    }

    #[test]
    fn average_pool_same_divides_by_the_cells_inside() {
        // 1×3×3×1 image 1..9, 2×2 windows, stride 2, SAME: 2×2 outputs,
        // padding after; the last row and column average fewer cells.
        let x = a(&[1, 3, 3, 1], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]);
        let g = Geometry {
            padding: Padding::Same,
            strides: [2, 2],
            dilations: [1, 1],
        };
        let y = pool2d(&x, [2, 2], g, true).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), [3.0, 4.5, 7.5, 9.0]);
        let y = pool2d(&x, [2, 2], g, false).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), [5.0, 6.0, 8.0, 9.0]);
    }

    #[test]
    fn conv_depthwise_and_transpose_conv_by_hand() {
        let x = a(&[1, 2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.]);
        // One output channel summing channel 0 of the top row and channel 1
        // of the bottom row of each 2×2 window.
        let f = a(&[1, 2, 2, 2], &[1., 0., 1., 0., 0., 1., 0., 1.]);
        let y = conv2d(&x, &f, Some(&a(&[1], &[0.5])), ONE).unwrap();
        assert_eq!(y.shape(), [1, 1, 1, 1]);
        assert_eq!(y[[0, 0, 0, 0]], 1. + 3. + 6. + 8. + 0.5);
        // Depthwise, multiplier 2: channel c·2 + m.
        let d = a(&[1, 1, 1, 4], &[1., 10., 100., 1000.]);
        let y = depthwise_conv2d(&x, &d, None, 2, ONE).unwrap();
        assert_eq!(y.shape(), [1, 2, 2, 4]);
        assert_eq!(
            y.iter().take(4).copied().collect::<Vec<_>>(),
            [1., 10., 200., 2000.]
        );
        // The transposed convolution is the adjoint of the convolution:
        // <conv(x), z> = <x, transpose_conv(z)>, its weights [C, KH, KW, O].
        let z = a(&[1, 1, 1, 1], &[2.0]);
        let wt = a(&[2, 2, 2, 1], &[1., 1., 0., 0., 0., 0., 1., 1.]);
        let t = transpose_conv(&[1, 2, 2, 2], &wt, &z, None, ONE).unwrap();
        let lhs: f32 = 2.0 * (1. + 3. + 6. + 8.);
        let rhs: f32 = t.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
        assert_eq!(lhs, rhs);
    }
}
