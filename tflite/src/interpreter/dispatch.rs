//! Each operator of the model to its kernel: by builtin code, and for the
//! operators with quantized kernels by the types of their operands (an INT8
//! input: the int8 kernel; INT8 weights with a float input: the hybrid
//! one); the fused activation applied after a float kernel (an int8
//! kernel clamps itself).
//!
//! Invariants: an operand missing, absent or of a type the kernel does not
//! take, and an operator specc's interpreter does not run, is an error (the
//! caller names the operator), never a panic.

use super::{Interpreter, Value};
use crate::kernels::float::{
    apply_activation, arg_max, batch_matmul, binary, fully_connected, reduce, select, softmax,
};
use crate::kernels::shape::{
    broadcast_to, cast, concatenation, gather, map_value, normalize_axis, pad, reshape,
    reshape_dims, shape, slice, transpose,
};
use crate::kernels::{conv_int8, int8};
use crate::model::{BuiltinOptions, Operator};
use crate::schema::{ActivationFunctionType, BuiltinOperator as B, TensorType};

type Result<T> = std::result::Result<T, String>;

impl Interpreter<'_> {
    pub(super) fn operator(&self, op: &Operator, values: &[Option<Value>]) -> Result<Value> {
        let g = &self.model.subgraphs[0];
        let arg = |i: usize| -> Result<&Value> {
            let t = *op
                .inputs
                .get(i)
                .ok_or_else(|| format!("input {i} is missing"))?;
            if t < 0 {
                return Err(format!("input {i} is absent"));
            }
            values[t as usize].as_ref().ok_or_else(|| {
                format!(
                    "input `{}` is not computed before it is used",
                    g.tensors[t as usize].name
                )
            })
        };
        let opt_arg = |i: usize| -> Result<Option<&Value>> {
            match op.inputs.get(i) {
                None | Some(-1) => Ok(None),
                Some(_) => arg(i).map(Some),
            }
        };
        let builtin = self.model.builtin(op).ok_or("bad opcode index")?;
        let act = |o: &BuiltinOptions| match o {
            BuiltinOptions::Add {
                fused_activation_function: a,
            }
            | BuiltinOptions::Sub {
                fused_activation_function: a,
            }
            | BuiltinOptions::Mul {
                fused_activation_function: a,
            }
            | BuiltinOptions::Div {
                fused_activation_function: a,
            }
            | BuiltinOptions::FullyConnected {
                fused_activation_function: a,
                ..
            }
            | BuiltinOptions::Concatenation {
                fused_activation_function: a,
                ..
            }
            | BuiltinOptions::Conv2D {
                fused_activation_function: a,
                ..
            }
            | BuiltinOptions::DepthwiseConv2D {
                fused_activation_function: a,
                ..
            }
            | BuiltinOptions::Pool2D {
                fused_activation_function: a,
                ..
            }
            | BuiltinOptions::TransposeConv {
                fused_activation_function: a,
                ..
            } => *a,
            _ => ActivationFunctionType::None,
        };
        let activation = act(&op.options);
        let v = match builtin {
            B::UnidirectionalSequenceLstm | B::UnidirectionalSequenceRnn => {
                return self.sequence(op, builtin, values)
            }
            B::FullyConnected if !matches!(arg(1)?, Value::F32(_)) => {
                let tensor = |i: usize| &g.tensors[op.inputs[i] as usize];
                let out = &g.tensors[op.outputs[0] as usize];
                let keep = matches!(
                    op.options,
                    BuiltinOptions::FullyConnected {
                        keep_num_dims: true,
                        ..
                    }
                );
                let Value::I8(w) = arg(1)? else {
                    return Err(format!("weights of type {}", arg(1)?.type_name()));
                };
                let (y, x_shape) = match arg(0)? {
                    Value::F32(x) => {
                        if !matches!(
                            op.options,
                            BuiltinOptions::FullyConnected {
                                asymmetric_quantize_inputs: true,
                                ..
                            }
                        ) {
                            return Err("hybrid FULLY_CONNECTED without asymmetric_quantize_inputs is not supported by specc's interpreter".into());
                        }
                        let bias = match opt_arg(2)? {
                            Some(b) => Some(b.f32()?),
                            None => None,
                        };
                        let y = int8::fully_connected_hybrid(x, w, tensor(1), bias)?;
                        (
                            Value::F32(apply_activation(y, activation)?),
                            x.shape().to_vec(),
                        )
                    }
                    Value::I8(x) => {
                        let bias = match opt_arg(2)? {
                            Some(Value::I32(b)) => Some(b),
                            Some(b) => {
                                return Err(format!(
                                    "an int8 FULLY_CONNECTED with a {} bias",
                                    b.type_name()
                                ))
                            }
                            None => None,
                        };
                        let y = int8::fully_connected_int8(
                            x,
                            tensor(0),
                            w,
                            tensor(1),
                            bias,
                            out,
                            activation,
                        )?;
                        (Value::I8(y), x.shape().to_vec())
                    }
                    v => return Err(format!("input of type {}", v.type_name())),
                };
                let units = w.shape()[0];
                let mut shape = if keep {
                    x_shape[..x_shape.len() - 1].to_vec()
                } else {
                    vec![y.shape()[0]]
                };
                shape.push(units);
                map_value(&y, |a| reshape(a, &shape))?
            }
            B::Quantize => {
                let input = &g.tensors[op.inputs[0] as usize];
                let out = &g.tensors[op.outputs[0] as usize];
                const I8: (i32, i32) = (i8::MIN as i32, i8::MAX as i32);
                const U8: (i32, i32) = (0, u8::MAX as i32);
                match (arg(0)?, out.tensor_type) {
                    (Value::F32(x), TensorType::Int8) => Value::I8(int8::quantize(x, out)?),
                    (Value::F32(x), TensorType::Uint8) => Value::U8(int8::quantize_uint8(x, out)?),
                    (Value::I8(x), TensorType::Int8) => {
                        Value::I8(int8::requantize(x, input, out, I8)?.mapv(|q| q as i8))
                    }
                    (Value::I8(x), TensorType::Uint8) => {
                        Value::U8(int8::requantize(x, input, out, U8)?.mapv(|q| q as u8))
                    }
                    (Value::U8(x), TensorType::Int8) => {
                        Value::I8(int8::requantize(x, input, out, I8)?.mapv(|q| q as i8))
                    }
                    (Value::U8(x), TensorType::Uint8) => {
                        Value::U8(int8::requantize(x, input, out, U8)?.mapv(|q| q as u8))
                    }
                    (x, t) => return Err(format!("from {} to {t}", x.type_name())),
                }
            }
            B::Dequantize => {
                let input = &g.tensors[op.inputs[0] as usize];
                match arg(0)? {
                    Value::I8(x) => Value::F32(int8::dequantize(x, input)?),
                    Value::U8(x) => Value::F32(int8::dequantize_uint8(x, input)?),
                    x => return Err(format!("input of type {}", x.type_name())),
                }
            }
            B::Softmax | B::Logistic if matches!(arg(0)?, Value::I8(_)) => {
                let Value::I8(x) = arg(0)? else {
                    unreachable!("matched above")
                };
                let input = &g.tensors[op.inputs[0] as usize];
                let out = &g.tensors[op.outputs[0] as usize];
                if builtin == B::Logistic {
                    Value::I8(int8::logistic_int8(x, input, out)?)
                } else {
                    let beta = match op.options {
                        BuiltinOptions::Softmax { beta } => beta,
                        _ => 1.0,
                    };
                    Value::I8(int8::softmax_int8(x, input, out, beta)?)
                }
            }
            B::ArgMax if matches!(arg(0)?, Value::I8(_)) => {
                let Value::I8(x) = arg(0)? else {
                    unreachable!("matched above")
                };
                let axis = match arg(1)?.ints()?[..] {
                    [a] => normalize_axis(a, x.ndim())?,
                    _ => return Err("the axis is not one value".into()),
                };
                if x.shape()[axis] == 0 {
                    return Err("argmax over an empty axis".into());
                }
                let idx = int8::argmax_int8(x, axis);
                match op.options {
                    BuiltinOptions::ArgMax {
                        output_type: TensorType::Int32,
                    } => Value::I32(idx.mapv(|v| v as i32)),
                    _ => Value::I64(idx),
                }
            }
            B::Add | B::Sub | B::Mul | B::Div | B::Maximum | B::Minimum | B::Pow => {
                let (a, b) = (arg(0)?, arg(1)?);
                match (a, b) {
                    (Value::F32(a), Value::F32(b)) => {
                        let f: fn(f32, f32) -> f32 = match builtin {
                            B::Add => |x, y| x + y,
                            B::Sub => |x, y| x - y,
                            B::Mul => |x, y| x * y,
                            B::Div => |x, y| x / y,
                            B::Maximum => f32::max,
                            B::Minimum => f32::min,
                            _ => f32::powf,
                        };
                        Value::F32(apply_activation(binary(a, b, f)?, activation)?)
                    }
                    (Value::I32(a), Value::I32(b)) => {
                        let f: fn(i32, i32) -> i32 = match builtin {
                            B::Add => i32::wrapping_add,
                            B::Sub => i32::wrapping_sub,
                            B::Mul => i32::wrapping_mul,
                            B::Maximum => i32::max,
                            B::Minimum => i32::min,
                            _ => return Err("INT32 operands are supported for ADD, SUB, MUL, MAXIMUM and MINIMUM".into()),
                        };
                        Value::I32(binary(a, b, f)?)
                    }
                    (a, b) => {
                        return Err(format!(
                            "operands of types {} and {}",
                            a.type_name(),
                            b.type_name()
                        ))
                    }
                }
            }
            B::Less | B::LessEqual | B::Greater | B::GreaterEqual | B::Equal | B::NotEqual => {
                match (arg(0)?, arg(1)?) {
                    (Value::F32(a), Value::F32(b)) => {
                        let f: fn(f32, f32) -> bool = match builtin {
                            B::Less => |x, y| x < y,
                            B::LessEqual => |x, y| x <= y,
                            B::Greater => |x, y| x > y,
                            B::GreaterEqual => |x, y| x >= y,
                            B::Equal => |x, y| x == y,
                            _ => |x, y| x != y,
                        };
                        Value::Bool(binary(a, b, f)?)
                    }
                    (a @ (Value::I32(_) | Value::I64(_)), b @ (Value::I32(_) | Value::I64(_))) => {
                        let f: fn(i64, i64) -> bool = match builtin {
                            B::Less => |x, y| x < y,
                            B::LessEqual => |x, y| x <= y,
                            B::Greater => |x, y| x > y,
                            B::GreaterEqual => |x, y| x >= y,
                            B::Equal => |x, y| x == y,
                            _ => |x, y| x != y,
                        };
                        let wide = |v: &Value| match v {
                            Value::I32(a) => a.mapv(i64::from),
                            Value::I64(a) => a.clone(),
                            _ => unreachable!("matched above"),
                        };
                        Value::Bool(binary(&wide(a), &wide(b), f)?)
                    }
                    (a, b) => {
                        return Err(format!(
                            "operands of types {} and {}",
                            a.type_name(),
                            b.type_name()
                        ))
                    }
                }
            }
            B::Bucketize => {
                let BuiltinOptions::Bucketize { boundaries } = &op.options else {
                    return Err("BUCKETIZE without BucketizeOptions".into());
                };
                if boundaries
                    .windows(2)
                    .any(|w| w[0].partial_cmp(&w[1]).is_none_or(|o| o.is_gt()))
                {
                    return Err("the boundaries are not sorted".into());
                }
                // TF Lite's kernel: std::upper_bound, the index of the
                // first boundary above x (a NaN is past every boundary).
                let bucket = |x: f64| {
                    boundaries.partition_point(|&b| f64::from(b) <= x || x.is_nan()) as i32
                };
                match arg(0)? {
                    Value::F32(a) => Value::I32(a.mapv(|x| bucket(f64::from(x)))),
                    Value::I32(a) => Value::I32(a.mapv(|x| bucket(f64::from(x)))),
                    Value::I64(a) => Value::I32(a.mapv(|x| bucket(x as f64))),
                    v => return Err(format!("input of type {}", v.type_name())),
                }
            }
            B::SelectV2 => {
                let Value::Bool(c) = arg(0)? else {
                    return Err("the condition is not BOOL".into());
                };
                Value::F32(select(c, arg(1)?.f32()?, arg(2)?.f32()?)?)
            }
            B::Cast => cast(arg(0)?, g.tensors[op.outputs[0] as usize].tensor_type)?,
            B::Relu
            | B::Logistic
            | B::Tanh
            | B::Exp
            | B::Log
            | B::Neg
            | B::Sqrt
            | B::Rsqrt
            | B::Square
            | B::Abs
            | B::Sign
            | B::Floor
            | B::Ceil
            | B::Sin
            | B::Cos => {
                let f: fn(f32) -> f32 = match builtin {
                    B::Relu => |x| x.max(0.0),
                    B::Logistic => |x| 1.0 / (1.0 + (-x).exp()),
                    B::Tanh => f32::tanh,
                    B::Exp => f32::exp,
                    B::Log => f32::ln,
                    B::Neg => |x| -x,
                    B::Sqrt => f32::sqrt,
                    B::Rsqrt => |x| 1.0 / x.sqrt(),
                    B::Square => |x| x * x,
                    B::Abs => f32::abs,
                    B::Sign => |x| {
                        if x > 0.0 {
                            1.0
                        } else if x < 0.0 {
                            -1.0
                        } else {
                            0.0
                        }
                    },
                    B::Floor => f32::floor,
                    B::Ceil => f32::ceil,
                    B::Sin => f32::sin,
                    _ => f32::cos,
                };
                Value::F32(arg(0)?.f32()?.mapv(f))
            }
            B::FullyConnected => {
                let keep = matches!(
                    op.options,
                    BuiltinOptions::FullyConnected {
                        keep_num_dims: true,
                        ..
                    }
                );
                let bias = match opt_arg(2)? {
                    Some(b) => Some(b.f32()?),
                    None => None,
                };
                let y = fully_connected(arg(0)?.f32()?, arg(1)?.f32()?, bias, keep)?;
                Value::F32(apply_activation(y, activation)?)
            }
            B::Conv2d | B::DepthwiseConv2d | B::MaxPool2d | B::AveragePool2d
                if matches!(arg(0)?, Value::I8(_)) =>
            {
                Value::I8(self.windowed_int8(builtin, op, &arg, &opt_arg, activation)?)
            }
            B::TransposeConv if matches!(arg(2)?, Value::I8(_)) => {
                return Err("an int8 TRANSPOSE_CONV is not supported by specc's interpreter".into())
            }
            B::Conv2d | B::DepthwiseConv2d | B::TransposeConv
                if matches!(arg(1)?, Value::I8(_)) =>
            {
                let y = self.windowed_hybrid(builtin, op, &arg, &opt_arg)?;
                Value::F32(apply_activation(y, activation)?)
            }
            B::Conv2d | B::DepthwiseConv2d | B::TransposeConv | B::MaxPool2d | B::AveragePool2d => {
                let y = self.windowed(builtin, op, &arg, &opt_arg)?;
                Value::F32(apply_activation(y, activation)?)
            }
            B::Shape => {
                let int64 = matches!(
                    op.options,
                    BuiltinOptions::Shape {
                        out_type: TensorType::Int64,
                    }
                );
                shape(arg(0)?, int64)?
            }
            B::BatchMatmul => {
                let (adj_x, adj_y) = match op.options {
                    BuiltinOptions::BatchMatMul { adj_x, adj_y } => (adj_x, adj_y),
                    _ => (false, false),
                };
                Value::F32(batch_matmul(arg(0)?.f32()?, arg(1)?.f32()?, adj_x, adj_y)?)
            }
            B::Softmax | B::LogSoftmax => {
                let beta = match op.options {
                    BuiltinOptions::Softmax { beta } => beta,
                    _ => 1.0,
                };
                Value::F32(softmax(arg(0)?.f32()?, beta, builtin == B::LogSoftmax)?)
            }
            B::Reshape => {
                let x = arg(0)?;
                let requested = match opt_arg(1)? {
                    Some(s) => s.ints()?,
                    None => match &op.options {
                        BuiltinOptions::Reshape { new_shape } => {
                            new_shape.iter().map(|&d| d as i64).collect()
                        }
                        _ => return Err("no shape input and no new_shape option".into()),
                    },
                };
                let shape = reshape_dims(x.shape(), &requested)?;
                map_value(x, |a| reshape(a, &shape))?
            }
            B::Concatenation => {
                let axis = match op.options {
                    BuiltinOptions::Concatenation { axis, .. } => axis as i64,
                    _ => 0,
                };
                let parts = (0..op.inputs.len())
                    .map(|i| arg(i).and_then(|v| v.f32()))
                    .collect::<Result<Vec<_>>>()?;
                Value::F32(apply_activation(concatenation(&parts, axis)?, activation)?)
            }
            B::Transpose => transpose(arg(0)?, &arg(1)?.ints()?)?,
            B::Gather => {
                let (axis, batch_dims) = match op.options {
                    BuiltinOptions::Gather { axis, batch_dims } => (axis as i64, batch_dims),
                    _ => (0, 0),
                };
                if batch_dims != 0 {
                    return Err("batch_dims other than 0 is not supported".into());
                }
                gather(arg(0)?, arg(1)?, axis)?
            }
            B::Sum | B::Mean | B::ReduceMax => {
                let keep = matches!(op.options, BuiltinOptions::Reducer { keep_dims: true });
                let x = arg(0)?.f32()?;
                let mut axes = arg(1)?
                    .ints()?
                    .iter()
                    .map(|&a| normalize_axis(a, x.ndim()))
                    .collect::<Result<Vec<_>>>()?;
                axes.sort_unstable();
                axes.dedup();
                Value::F32(reduce(x, &axes, keep, builtin))
            }
            B::ArgMax => {
                let x = arg(0)?.f32()?;
                let axis = match arg(1)?.ints()?[..] {
                    [a] => normalize_axis(a, x.ndim())?,
                    _ => return Err("the axis is not one value".into()),
                };
                if x.shape()[axis] == 0 {
                    return Err("argmax over an empty axis".into());
                }
                let idx = arg_max(x, axis);
                match op.options {
                    BuiltinOptions::ArgMax {
                        output_type: TensorType::Int32,
                    } => Value::I32(idx.mapv(|v| v as i32)),
                    _ => Value::I64(idx),
                }
            }
            B::Slice => slice(arg(0)?, &arg(1)?.ints()?, &arg(2)?.ints()?)?,
            B::Pad if matches!(arg(0)?, Value::I8(_)) => {
                let Value::I8(x) = arg(0)? else {
                    unreachable!("matched above")
                };
                let (_, zero_point) = int8::per_tensor(&g.tensors[op.outputs[0] as usize])?;
                let value = i8::try_from(zero_point)
                    .map_err(|_| format!("zero point {zero_point} is not an int8 value"))?;
                Value::I8(conv_int8::pad_int8(x, &arg(1)?.ints()?, value)?)
            }
            B::Pad => Value::F32(pad(arg(0)?.f32()?, &arg(1)?.ints()?)?),
            B::BroadcastTo => broadcast_to(arg(0)?, &arg(1)?.ints()?)?,
            other => {
                return Err(format!(
                    "{} is not an operator specc's interpreter runs",
                    other.name()
                ))
            }
        };
        Ok(v)
    }
}
