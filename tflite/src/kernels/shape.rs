//! The interpreter's kernels of the operators that move elements, for the
//! element types they take: RESHAPE (its dims: one -1 takes what is left),
//! CONCATENATION, TRANSPOSE, GATHER, SLICE, PAD, BROADCAST_TO, SHAPE and
//! CAST.
//!
//! Invariants: an axis, permutation, index, slice or padding outside the
//! tensor is an error (GATHER's as TFLite fails too), never a panic.

use ndarray::{ArrayD, Axis, IxDyn};

use super::float::bcast;
use crate::interpreter::Value;
use crate::schema::TensorType;

type Result<T> = std::result::Result<T, String>;

pub(crate) fn map_value(
    v: &Value,
    f: impl Fn(&ArrayD<f32>) -> Result<ArrayD<f32>>,
) -> Result<Value> {
    // Shape operators move elements of any type; the kernels specc needs take
    // float and int tensors.
    match v {
        Value::F32(a) => f(a).map(Value::F32),
        Value::I8(a) => f(&a.mapv(f32::from)).map(|r| Value::I8(r.mapv(|x| x as i8))),
        Value::U8(a) => f(&a.mapv(f32::from)).map(|r| Value::U8(r.mapv(|x| x as u8))),
        Value::I32(a) => f(&a.mapv(|x| x as f32)).map(|r| Value::I32(r.mapv(|x| x as i32))),
        other => Err(format!(
            "{} tensors are not supported by this operator",
            other.type_name()
        )),
    }
}

pub(crate) fn normalize_axis(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r.max(1) {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

pub(crate) fn reshape<T: Clone>(a: &ArrayD<T>, shape: &[usize]) -> Result<ArrayD<T>> {
    a.to_shape(IxDyn(shape))
        .map(|v| v.into_owned())
        .map_err(|e| format!("cannot reshape {:?} to {shape:?}: {e}", a.shape()))
}

/// TFLite's RESHAPE: one -1 takes what is left.
pub(crate) fn reshape_dims(from: &[usize], requested: &[i64]) -> Result<Vec<usize>> {
    let total: usize = from.iter().product();
    let known: i64 = requested.iter().filter(|&&d| d != -1).product();
    let unknown = requested.iter().filter(|&&d| d == -1).count();
    if requested.iter().any(|&d| d < -1) || unknown > 1 {
        return Err(format!("bad shape {requested:?}"));
    }
    let dims: Vec<usize> = requested
        .iter()
        .map(|&d| {
            if d == -1 {
                if known == 0 {
                    0
                } else {
                    total / known as usize
                }
            } else {
                d as usize
            }
        })
        .collect();
    if dims.iter().product::<usize>() != total {
        return Err(format!("cannot reshape {from:?} to {requested:?}"));
    }
    Ok(dims)
}

/// SHAPE: the dims of `x`, INT64 when `int64`, else INT32.
pub(crate) fn shape(x: &Value, int64: bool) -> Result<Value> {
    let dims = x
        .shape()
        .iter()
        .map(|&d| i32::try_from(d).map_err(|_| format!("dimension {d}")))
        .collect::<Result<Vec<i32>>>()?;
    let n = dims.len();
    let dims = ArrayD::from_shape_vec(IxDyn(&[n]), dims).map_err(|e| e.to_string())?;
    Ok(if int64 {
        Value::I64(dims.mapv(i64::from))
    } else {
        Value::I32(dims)
    })
}

/// CONCATENATION of `parts` along `axis`.
pub(crate) fn concatenation(parts: &[&ArrayD<f32>], axis: i64) -> Result<ArrayD<f32>> {
    let rank = parts.first().ok_or("no inputs")?.ndim();
    let axis = normalize_axis(axis, rank)?;
    let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
    ndarray::concatenate(Axis(axis), &views)
        .map_err(|e| format!("inputs of incompatible shapes: {e}"))
}

/// TRANSPOSE of `x` by the permutation `perm`.
pub(crate) fn transpose(x: &Value, perm: &[i64]) -> Result<Value> {
    if perm.len() != x.shape().len() {
        return Err(format!(
            "permutation {perm:?} for a tensor of rank {}",
            x.shape().len()
        ));
    }
    let mut seen = vec![false; perm.len()];
    let perm = perm
        .iter()
        .map(|&p| {
            let p = normalize_axis(p, seen.len())?;
            if std::mem::replace(&mut seen[p], true) {
                return Err(format!("axis {p} repeats in the permutation"));
            }
            Ok(p)
        })
        .collect::<Result<Vec<_>>>()?;
    map_value(x, |a| {
        Ok(a.view()
            .permuted_axes(IxDyn(&perm))
            .as_standard_layout()
            .into_owned())
    })
}

/// GATHER of `params` along `axis` by `indices`.
pub(crate) fn gather(params: &Value, indices: &Value, axis: i64) -> Result<Value> {
    let axis = normalize_axis(axis, params.shape().len())?;
    let ids = indices.ints()?;
    let rows = params.shape()[axis];
    let ids = ids
        .iter()
        .map(|&i| {
            usize::try_from(i)
                .ok()
                .filter(|&i| i < rows)
                .ok_or_else(|| {
                    format!("index {i} is out of range [0, {rows}) (TFLite fails here too)")
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut shape = params.shape()[..axis].to_vec();
    shape.extend_from_slice(indices.shape());
    shape.extend_from_slice(&params.shape()[axis + 1..]);
    map_value(params, |a| reshape(&a.select(Axis(axis), &ids), &shape))
}

/// SLICE of `x` from `begin`, `size` values per axis (-1: to the end).
pub(crate) fn slice(x: &Value, begin: &[i64], size: &[i64]) -> Result<Value> {
    let shape = x.shape().to_vec();
    if begin.len() != shape.len() || size.len() != shape.len() {
        return Err("begin and size must have one value per axis".into());
    }
    let mut ranges = Vec::new();
    for ((&b, &s), &d) in begin.iter().zip(size).zip(&shape) {
        let end = if s == -1 { d as i64 } else { b + s };
        if b < 0 || end < b || end > d as i64 {
            return Err(format!("slice [{b}, {end}) of an axis of {d}"));
        }
        ranges.push((b as usize, end as usize));
    }
    map_value(x, |a| {
        let mut v = a.view();
        for (ax, &(b, e)) in ranges.iter().enumerate() {
            v.slice_axis_inplace(Axis(ax), ndarray::Slice::from(b..e));
        }
        Ok(v.to_owned())
    })
}

/// PAD of `x` with zeros, `pads` the values before and after each axis.
pub(crate) fn pad(x: &ArrayD<f32>, pads: &[i64]) -> Result<ArrayD<f32>> {
    if pads.len() != 2 * x.ndim() || pads.iter().any(|&p| p < 0) {
        return Err(format!(
            "paddings {pads:?} for a tensor of rank {}",
            x.ndim()
        ));
    }
    let shape: Vec<usize> = (0..x.ndim())
        .map(|i| x.shape()[i] + (pads[2 * i] + pads[2 * i + 1]) as usize)
        .collect();
    let mut y = ArrayD::zeros(IxDyn(&shape));
    let mut v = y.view_mut();
    for i in 0..x.ndim() {
        let b = pads[2 * i] as usize;
        v.slice_axis_inplace(Axis(i), ndarray::Slice::from(b..b + x.shape()[i]));
    }
    v.assign(x);
    Ok(y)
}

/// BROADCAST_TO the shape `dims`.
pub(crate) fn broadcast_to(x: &Value, dims: &[i64]) -> Result<Value> {
    let shape = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d}")))
        .collect::<Result<Vec<_>>>()?;
    map_value(x, |a| Ok(bcast(a, &shape)?.to_owned()))
}

pub(crate) fn cast(v: &Value, to: TensorType) -> Result<Value> {
    match (v, to) {
        (Value::Str(_), _) => return Err("casts from STRING are not supported".into()),
        (Value::I64(a), TensorType::Int32) => return Ok(Value::I32(a.mapv(|x| x as i32))),
        (Value::I32(a), TensorType::Int64) => return Ok(Value::I64(a.mapv(i64::from))),
        _ => {}
    }
    let f = v.to_f32();
    Ok(match to {
        TensorType::Float32 => Value::F32(f),
        TensorType::Int32 => match v {
            Value::I32(a) => Value::I32(a.clone()),
            _ => Value::I32(f.mapv(|x| x as i32)),
        },
        TensorType::Int64 => Value::I64(f.mapv(|x| x as i64)),
        TensorType::Bool => Value::Bool(f.mapv(|x| x != 0.0)),
        other => return Err(format!("casts to {other} are not supported")),
    })
}
