//! The interpreter's float32 kernels outside the convolutions and pools:
//! FULLY_CONNECTED, BATCH_MATMUL, SOFTMAX and LOG_SOFTMAX, SUM, MEAN and
//! REDUCE_MAX, ARG_MAX, SELECT_V2, the binary operators' NumPy
//! broadcasting, and the fused activations.
//!
//! Invariants: the semantics are TFLite's reference kernels'
//! (FULLY_CONNECTED's weights `[units, depth]`, SOFTMAX's `beta`, ARG_MAX's
//! first maximum); a shape the operator cannot take is an error, never a
//! panic.

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Zip};

use super::shape::reshape;
use crate::schema::{ActivationFunctionType, BuiltinOperator as B};

type Result<T> = std::result::Result<T, String>;

/// NumPy broadcasting of two shapes.
fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => Ok(x),
                (1, y) => Ok(y),
                (x, 1) => Ok(x),
                _ => Err(format!("shapes {a:?} and {b:?} do not broadcast")),
            }
        })
        .collect()
}

pub(crate) fn bcast<'a, T>(a: &'a ArrayD<T>, shape: &[usize]) -> Result<ArrayViewD<'a, T>> {
    a.broadcast(IxDyn(shape))
        .ok_or_else(|| format!("shape {:?} does not broadcast to {shape:?}", a.shape()))
}

pub(crate) fn binary<T: Copy, R>(
    a: &ArrayD<T>,
    b: &ArrayD<T>,
    f: fn(T, T) -> R,
) -> Result<ArrayD<R>> {
    if a.shape() == b.shape() {
        return Ok(Zip::from(a).and(b).map_collect(|&x, &y| f(x, y)));
    }
    let shape = broadcast_shape(a.shape(), b.shape())?;
    Ok(Zip::from(&bcast(a, &shape)?)
        .and(&bcast(b, &shape)?)
        .map_collect(|&x, &y| f(x, y)))
}

/// SELECT_V2: `a` where `c`, else `b`, broadcast together.
pub(crate) fn select(c: &ArrayD<bool>, a: &ArrayD<f32>, b: &ArrayD<f32>) -> Result<ArrayD<f32>> {
    let shape = broadcast_shape(&broadcast_shape(c.shape(), a.shape())?, b.shape())?;
    let (c, a, b) = (bcast(c, &shape)?, bcast(a, &shape)?, bcast(b, &shape)?);
    Ok(Zip::from(&c)
        .and(&a)
        .and(&b)
        .map_collect(|&c, &a, &b| if c { a } else { b }))
}

pub(crate) fn apply_activation(
    mut y: ArrayD<f32>,
    a: ActivationFunctionType,
) -> Result<ArrayD<f32>> {
    match a {
        ActivationFunctionType::None => {}
        ActivationFunctionType::Relu => y.mapv_inplace(|v| v.max(0.0)),
        ActivationFunctionType::Relu6 => y.mapv_inplace(|v| v.clamp(0.0, 6.0)),
        ActivationFunctionType::ReluN1To1 => y.mapv_inplace(|v| v.clamp(-1.0, 1.0)),
        ActivationFunctionType::Tanh => y.mapv_inplace(f32::tanh),
        other => return Err(format!("fused activation {other} is not supported")),
    }
    Ok(y)
}

pub(crate) fn fully_connected(
    x: &ArrayD<f32>,
    w: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
    keep_num_dims: bool,
) -> Result<ArrayD<f32>> {
    let [units, depth] = w.shape()[..] else {
        return Err(format!(
            "weights of shape {:?} (want [units, depth])",
            w.shape()
        ));
    };
    let total = x.len();
    if depth == 0
        || !total.is_multiple_of(depth)
        || (keep_num_dims && x.shape().last() != Some(&depth))
    {
        return Err(format!(
            "input of shape {:?} for weights of shape {:?}",
            x.shape(),
            w.shape()
        ));
    }
    let rows = total / depth;
    let x2 = x
        .to_shape((rows, depth))
        .map_err(|e| format!("input of shape {:?}: {e}", x.shape()))?;
    let w2 = w
        .view()
        .into_dimensionality::<ndarray::Ix2>()
        .map_err(|e| e.to_string())?;
    let mut y = x2.dot(&w2.t());
    if let Some(b) = bias {
        if b.len() != units {
            return Err(format!("bias of shape {:?} for {units} units", b.shape()));
        }
        let b = b
            .view()
            .into_shape_with_order(units)
            .map_err(|e| e.to_string())?;
        y += &b;
    }
    let mut shape = if keep_num_dims {
        x.shape()[..x.ndim() - 1].to_vec()
    } else {
        vec![rows]
    };
    shape.push(units);
    reshape(&y.into_dyn(), &shape)
}

pub(crate) fn batch_matmul(
    a: &ArrayD<f32>,
    b: &ArrayD<f32>,
    adj_x: bool,
    adj_y: bool,
) -> Result<ArrayD<f32>> {
    if a.ndim() < 2 || b.ndim() < 2 || a.shape()[..a.ndim() - 2] != b.shape()[..b.ndim() - 2] {
        return Err(format!(
            "operands of shapes {:?} and {:?} (equal batch dimensions needed)",
            a.shape(),
            b.shape()
        ));
    }
    let batch: Vec<usize> = a.shape()[..a.ndim() - 2].to_vec();
    let n: usize = batch.iter().product();
    let a3 = reshape(a, &[n, a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]])?;
    let b3 = reshape(b, &[n, b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]])?;
    let mut outs = Vec::with_capacity(n);
    for i in 0..n {
        let x = a3
            .index_axis(Axis(0), i)
            .into_dimensionality::<ndarray::Ix2>()
            .map_err(|e| e.to_string())?;
        let y = b3
            .index_axis(Axis(0), i)
            .into_dimensionality::<ndarray::Ix2>()
            .map_err(|e| e.to_string())?;
        let x = if adj_x { x.reversed_axes() } else { x };
        let y = if adj_y { y.reversed_axes() } else { y };
        if x.ncols() != y.nrows() {
            return Err(format!(
                "operands of shapes {:?} and {:?} do not multiply",
                a.shape(),
                b.shape()
            ));
        }
        outs.push(x.dot(&y));
    }
    let (r, c) = outs.first().map_or((0, 0), |o| (o.nrows(), o.ncols()));
    let mut shape = batch;
    shape.extend([r, c]);
    let data: Vec<f32> = outs.iter().flat_map(|o| o.iter().copied()).collect();
    ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|e| e.to_string())
}

pub(crate) fn softmax(x: &ArrayD<f32>, beta: f32, log: bool) -> Result<ArrayD<f32>> {
    let last = x.ndim().checked_sub(1).ok_or("softmax of a scalar")?;
    let mut y = x.as_standard_layout().into_owned();
    for mut lane in y.lanes_mut(Axis(last)) {
        let max = lane.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut sum = 0.0f32;
        for v in lane.iter_mut() {
            *v = (*v - max) * beta;
            sum += v.exp();
        }
        if log {
            let l = sum.ln();
            lane.mapv_inplace(|v| v - l);
        } else {
            lane.mapv_inplace(|v| v.exp() / sum);
        }
    }
    Ok(y)
}

pub(crate) fn reduce(x: &ArrayD<f32>, axes: &[usize], keep: bool, op: B) -> ArrayD<f32> {
    let mut y = x.clone();
    let mut count = 1usize;
    for &a in axes.iter().rev() {
        count *= x.shape()[a];
        y = match op {
            B::ReduceMax => y.fold_axis(Axis(a), f32::NEG_INFINITY, |m, &v| m.max(v)),
            _ => y.sum_axis(Axis(a)),
        };
        if keep {
            y.insert_axis_inplace(Axis(a));
        }
    }
    if op == B::Mean {
        let n = count as f32;
        y.mapv_inplace(|v| v / n);
    }
    y
}

/// ARG_MAX: the index of the first maximum along `axis` (not empty).
pub(crate) fn arg_max(x: &ArrayD<f32>, axis: usize) -> ArrayD<i64> {
    x.map_axis(Axis(axis), |lane| {
        let mut best = 0;
        for (i, &v) in lane.iter().enumerate() {
            if v > lane[best] {
                best = i;
            }
        }
        best as i64
    })
}
