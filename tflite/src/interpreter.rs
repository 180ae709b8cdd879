//! A small interpreter of TFLite models: the float32 (and int32/bool)
//! kernels of the builtin operators specc exports (those of the convolutions
//! and pools in `crate::kernels_conv`), and the int8 and hybrid kernels of
//! its quantized exports (`crate::kernels_int8`; the int8 convolutions,
//! pools and PAD in `crate::kernels_conv_int8`, chosen when the operator's
//! input is INT8; an int8 TRANSPOSE_CONV is an error; the hybrid CONV_2D,
//! DEPTHWISE_CONV_2D and TRANSPOSE_CONV in `crate::kernels_conv_hybrid`,
//! chosen when the filter is INT8 and the input float).
//!
//! Owns: [`Interpreter`] (constants decoded once, then any number of
//! [`Interpreter::invoke`]s), [`Value`] (a tensor of one of the element types
//! the kernels use) and the convenience [`run`].
//! Invariants: operators run in file order (TFLite's execution order) and
//! follow TFLite's reference kernels' semantics (broadcasting binary ops,
//! FULLY_CONNECTED's `[out, in]` weights, SOFTMAX's `beta`, GATHER failing on
//! an index out of range, ...); a model or input the kernels cannot run is an
//! error naming the operator (index and builtin name), never a panic.

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Zip};

use crate::kernels_conv as conv;
use crate::kernels_conv_hybrid as conv_hybrid;
use crate::kernels_conv_int8 as conv_int8;
use crate::kernels_int8 as int8;
use crate::model::{f32_values, i32_values, i64_values, BuiltinOptions, Model, Operator};
use crate::schema::{ActivationFunctionType, BuiltinOperator as B, TensorType};

type Result<T> = std::result::Result<T, String>;

/// A tensor value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    F32(ArrayD<f32>),
    I8(ArrayD<i8>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    Bool(ArrayD<bool>),
}

impl Value {
    pub fn shape(&self) -> &[usize] {
        match self {
            Value::F32(a) => a.shape(),
            Value::I8(a) => a.shape(),
            Value::I32(a) => a.shape(),
            Value::I64(a) => a.shape(),
            Value::Bool(a) => a.shape(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::F32(_) => "FLOAT32",
            Value::I8(_) => "INT8",
            Value::I32(_) => "INT32",
            Value::I64(_) => "INT64",
            Value::Bool(_) => "BOOL",
        }
    }

    /// The values as f32 (integers and booleans converted; int8 values as
    /// the integers, not dequantized).
    pub fn to_f32(&self) -> ArrayD<f32> {
        match self {
            Value::F32(a) => a.clone(),
            Value::I8(a) => a.mapv(f32::from),
            Value::I32(a) => a.mapv(|v| v as f32),
            Value::I64(a) => a.mapv(|v| v as f32),
            Value::Bool(a) => a.mapv(|v| if v { 1.0 } else { 0.0 }),
        }
    }

    fn f32(&self) -> Result<&ArrayD<f32>> {
        match self {
            Value::F32(a) => Ok(a),
            v => Err(format!("expected a FLOAT32 tensor, got {}", v.type_name())),
        }
    }

    /// Integer values (indices, axes, shapes) as i64.
    fn ints(&self) -> Result<Vec<i64>> {
        match self {
            Value::I32(a) => Ok(a.iter().map(|&v| v as i64).collect()),
            Value::I64(a) => Ok(a.iter().copied().collect()),
            v => Err(format!(
                "expected an INT32 or INT64 tensor, got {}",
                v.type_name()
            )),
        }
    }
}

/// A model ready to run: its constants decoded.
pub struct Interpreter<'m> {
    model: &'m Model,
    constants: Vec<Option<Value>>,
}

/// Runs the first subgraph of `model` on float inputs (in the subgraph's
/// input order; an INT32 input takes the f32 values, which must be integers)
/// and returns every output as f32.
pub fn run(model: &Model, inputs: &[ArrayViewD<f32>]) -> Result<Vec<ArrayD<f32>>> {
    Interpreter::new(model)?.run(inputs)
}

impl<'m> Interpreter<'m> {
    pub fn new(model: &'m Model) -> Result<Interpreter<'m>> {
        model.validate()?;
        let g = model.subgraphs.first().ok_or("the model has no subgraph")?;
        let mut constants = Vec::with_capacity(g.tensors.len());
        for t in &g.tensors {
            let data = &model.buffers[t.buffer as usize].data;
            if data.is_empty() && t.shape.iter().product::<i32>() != 0 {
                constants.push(None);
                continue;
            }
            let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
            let bad = |_| format!("tensor `{}`: constant data does not fit its shape", t.name);
            let v = match t.tensor_type {
                TensorType::Float32 => Value::F32(
                    ArrayD::from_shape_vec(IxDyn(&shape), f32_values(data).unwrap_or_default())
                        .map_err(bad)?,
                ),
                TensorType::Int32 => Value::I32(
                    ArrayD::from_shape_vec(IxDyn(&shape), i32_values(data).unwrap_or_default())
                        .map_err(bad)?,
                ),
                TensorType::Int64 => Value::I64(
                    ArrayD::from_shape_vec(IxDyn(&shape), i64_values(data).unwrap_or_default())
                        .map_err(bad)?,
                ),
                TensorType::Bool => Value::Bool(
                    ArrayD::from_shape_vec(IxDyn(&shape), data.iter().map(|&b| b != 0).collect())
                        .map_err(bad)?,
                ),
                TensorType::Int8 => Value::I8(
                    ArrayD::from_shape_vec(IxDyn(&shape), data.iter().map(|&b| b as i8).collect())
                        .map_err(bad)?,
                ),
                other => {
                    return Err(format!(
                        "tensor `{}`: constants of type {other} are not supported by specc's interpreter",
                        t.name
                    ))
                }
            };
            constants.push(Some(v));
        }
        Ok(Interpreter { model, constants })
    }

    /// [`run`] with this interpreter's decoded constants.
    pub fn run(&self, inputs: &[ArrayViewD<f32>]) -> Result<Vec<ArrayD<f32>>> {
        let g = &self.model.subgraphs[0];
        if inputs.len() != g.inputs.len() {
            return Err(format!(
                "the model has {} inputs, {} were given",
                g.inputs.len(),
                inputs.len()
            ));
        }
        let values = inputs
            .iter()
            .zip(&g.inputs)
            .map(|(x, &t)| {
                let t = &g.tensors[t as usize];
                match t.tensor_type {
                    TensorType::Float32 => Ok(Value::F32(x.to_owned())),
                    TensorType::Int32 => {
                        if let Some(v) = x.iter().find(|v| v.fract() != 0.0 || !v.is_finite()) {
                            return Err(format!(
                                "input `{}` is INT32, but a value given for it is {v}",
                                t.name
                            ));
                        }
                        Ok(Value::I32(x.mapv(|v| v as i32)))
                    }
                    other => Err(format!(
                        "input `{}` is {other}; give it with `invoke`",
                        t.name
                    )),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.invoke(values)?.iter().map(Value::to_f32).collect())
    }

    /// Runs the first subgraph on `inputs` (in its input order).
    pub fn invoke(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.invoke_observed(inputs, &mut |_, _| {})
    }

    /// [`Interpreter::invoke`], showing `observe` every input and every
    /// operator's output as it is computed, by tensor index (calibration).
    pub fn invoke_observed(
        &self,
        inputs: Vec<Value>,
        observe: &mut dyn FnMut(usize, &Value),
    ) -> Result<Vec<Value>> {
        let g = &self.model.subgraphs[0];
        if inputs.len() != g.inputs.len() {
            return Err(format!(
                "the model has {} inputs, {} were given",
                g.inputs.len(),
                inputs.len()
            ));
        }
        let mut values = self.constants.clone();
        for (v, &t) in inputs.into_iter().zip(&g.inputs) {
            let tensor = &g.tensors[t as usize];
            check_input(tensor, &v)?;
            observe(t as usize, &v);
            values[t as usize] = Some(v);
        }
        for (k, op) in g.operators.iter().enumerate() {
            let name = self
                .model
                .builtin(op)
                .map_or("?".into(), |b| b.name().into_owned());
            let result = self
                .operator(op, &values)
                .map_err(|e| format!("operator {k} ({name}): {e}"))?;
            let [out] = op.outputs[..] else {
                return Err(format!(
                    "operator {k} ({name}): {} outputs; specc's interpreter runs operators with one",
                    op.outputs.len()
                ));
            };
            observe(out as usize, &result);
            values[out as usize] = Some(result);
        }
        g.outputs
            .iter()
            .map(|&t| {
                values[t as usize].take().ok_or_else(|| {
                    format!("output `{}` is never computed", g.tensors[t as usize].name)
                })
            })
            .collect()
    }

    fn operator(&self, op: &Operator, values: &[Option<Value>]) -> Result<Value> {
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
                let out = &g.tensors[op.outputs[0] as usize];
                Value::I8(int8::quantize(arg(0)?.f32()?, out)?)
            }
            B::Dequantize => {
                let Value::I8(x) = arg(0)? else {
                    return Err(format!("input of type {}", arg(0)?.type_name()));
                };
                Value::F32(int8::dequantize(x, &g.tensors[op.inputs[0] as usize])?)
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
                let f: fn(f32, f32) -> bool = match builtin {
                    B::Less => |x, y| x < y,
                    B::LessEqual => |x, y| x <= y,
                    B::Greater => |x, y| x > y,
                    B::GreaterEqual => |x, y| x >= y,
                    B::Equal => |x, y| x == y,
                    _ => |x, y| x != y,
                };
                Value::Bool(binary(arg(0)?.f32()?, arg(1)?.f32()?, f)?)
            }
            B::SelectV2 => {
                let Value::Bool(c) = arg(0)? else {
                    return Err("the condition is not BOOL".into());
                };
                let (a, b) = (arg(1)?.f32()?, arg(2)?.f32()?);
                let shape = broadcast_shape(&broadcast_shape(c.shape(), a.shape())?, b.shape())?;
                let (c, a, b) = (bcast(c, &shape)?, bcast(a, &shape)?, bcast(b, &shape)?);
                Value::F32(Zip::from(&c).and(&a).and(&b).map_collect(
                    |&c, &a, &b| {
                        if c {
                            a
                        } else {
                            b
                        }
                    },
                ))
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
                let dims = arg(0)?
                    .shape()
                    .iter()
                    .map(|&d| i32::try_from(d).map_err(|_| format!("dimension {d}")))
                    .collect::<Result<Vec<i32>>>()?;
                let n = dims.len();
                let dims = ArrayD::from_shape_vec(IxDyn(&[n]), dims).map_err(|e| e.to_string())?;
                match op.options {
                    BuiltinOptions::Shape {
                        out_type: TensorType::Int64,
                    } => Value::I64(dims.mapv(i64::from)),
                    _ => Value::I32(dims),
                }
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
                let rank = parts.first().ok_or("no inputs")?.ndim();
                let axis = normalize_axis(axis, rank)?;
                let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
                let y = ndarray::concatenate(Axis(axis), &views)
                    .map_err(|e| format!("inputs of incompatible shapes: {e}"))?;
                Value::F32(apply_activation(y, activation)?)
            }
            B::Transpose => {
                let x = arg(0)?;
                let perm = arg(1)?.ints()?;
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
                })?
            }
            B::Gather => {
                let (axis, batch_dims) = match op.options {
                    BuiltinOptions::Gather { axis, batch_dims } => (axis as i64, batch_dims),
                    _ => (0, 0),
                };
                if batch_dims != 0 {
                    return Err("batch_dims other than 0 is not supported".into());
                }
                let params = arg(0)?;
                let indices = arg(1)?;
                let axis = normalize_axis(axis, params.shape().len())?;
                let ids = indices.ints()?;
                let rows = params.shape()[axis];
                let ids =
                    ids.iter()
                        .map(|&i| {
                            usize::try_from(i).ok().filter(|&i| i < rows).ok_or_else(|| {
                            format!("index {i} is out of range [0, {rows}) (TFLite fails here too)")
                        })
                        })
                        .collect::<Result<Vec<_>>>()?;
                let mut shape = params.shape()[..axis].to_vec();
                shape.extend_from_slice(indices.shape());
                shape.extend_from_slice(&params.shape()[axis + 1..]);
                map_value(params, |a| reshape(&a.select(Axis(axis), &ids), &shape))?
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
                let idx = x.map_axis(Axis(axis), |lane| {
                    let mut best = 0;
                    for (i, &v) in lane.iter().enumerate() {
                        if v > lane[best] {
                            best = i;
                        }
                    }
                    best as i64
                });
                match op.options {
                    BuiltinOptions::ArgMax {
                        output_type: TensorType::Int32,
                    } => Value::I32(idx.mapv(|v| v as i32)),
                    _ => Value::I64(idx),
                }
            }
            B::Slice => {
                let x = arg(0)?;
                let begin = arg(1)?.ints()?;
                let size = arg(2)?.ints()?;
                let shape = x.shape().to_vec();
                if begin.len() != shape.len() || size.len() != shape.len() {
                    return Err("begin and size must have one value per axis".into());
                }
                let mut ranges = Vec::new();
                for ((&b, &s), &d) in begin.iter().zip(&size).zip(&shape) {
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
                })?
            }
            B::Pad if matches!(arg(0)?, Value::I8(_)) => {
                let Value::I8(x) = arg(0)? else {
                    unreachable!("matched above")
                };
                let (_, zero_point) = int8::per_tensor(&g.tensors[op.outputs[0] as usize])?;
                let value = i8::try_from(zero_point)
                    .map_err(|_| format!("zero point {zero_point} is not an int8 value"))?;
                Value::I8(conv_int8::pad_int8(x, &arg(1)?.ints()?, value)?)
            }
            B::Pad => {
                let x = arg(0)?.f32()?;
                let pads = arg(1)?.ints()?;
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
                Value::F32(y)
            }
            B::BroadcastTo => {
                let x = arg(0)?;
                let shape = arg(1)?
                    .ints()?
                    .iter()
                    .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d}")))
                    .collect::<Result<Vec<_>>>()?;
                map_value(x, |a| Ok(bcast(a, &shape)?.to_owned()))?
            }
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

/// A positive option value as a size.
fn size(v: i32, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{what} {v} is not positive"))
}

/// The options of a convolution or pool, as the model gives them: the
/// `[height, width]` strides, dilations (1 for TRANSPOSE_CONV and the
/// pools) and filter size (0 but for the pools), the depth multiplier (0
/// but for DEPTHWISE_CONV_2D).
#[derive(Clone, Copy)]
struct WindowOptions {
    padding: crate::schema::Padding,
    strides: [i32; 2],
    dilations: [i32; 2],
    filter: [i32; 2],
    depth_multiplier: i32,
}

impl WindowOptions {
    /// The window options of a `builtin` convolution or pool, if `options`
    /// are the ones it takes.
    fn of(builtin: B, options: &BuiltinOptions) -> Result<WindowOptions> {
        let none = WindowOptions {
            padding: crate::schema::Padding::Valid,
            strides: [1, 1],
            dilations: [1, 1],
            filter: [0, 0],
            depth_multiplier: 0,
        };
        Ok(match (builtin, options) {
            (
                B::Conv2d,
                &BuiltinOptions::Conv2D {
                    padding,
                    stride_w,
                    stride_h,
                    dilation_w_factor,
                    dilation_h_factor,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                dilations: [dilation_h_factor, dilation_w_factor],
                ..none
            },
            (
                B::DepthwiseConv2d,
                &BuiltinOptions::DepthwiseConv2D {
                    padding,
                    stride_w,
                    stride_h,
                    depth_multiplier,
                    dilation_w_factor,
                    dilation_h_factor,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                dilations: [dilation_h_factor, dilation_w_factor],
                depth_multiplier,
                ..none
            },
            (
                B::TransposeConv,
                &BuiltinOptions::TransposeConv {
                    padding,
                    stride_w,
                    stride_h,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                ..none
            },
            (
                B::MaxPool2d | B::AveragePool2d,
                &BuiltinOptions::Pool2D {
                    padding,
                    stride_w,
                    stride_h,
                    filter_width,
                    filter_height,
                    ..
                },
            ) => WindowOptions {
                padding,
                strides: [stride_h, stride_w],
                filter: [filter_height, filter_width],
                ..none
            },
            _ => return Err(foreign_options(options)),
        })
    }

    /// The window's geometry (positive strides and dilations).
    fn geometry(&self) -> Result<conv::Geometry> {
        let (s, d) = (self.strides, self.dilations);
        Ok(conv::Geometry {
            padding: self.padding,
            strides: [size(s[0], "stride_h")?, size(s[1], "stride_w")?],
            dilations: [
                size(d[0], "dilation_h_factor")?,
                size(d[1], "dilation_w_factor")?,
            ],
        })
    }

    /// A pool's positive `[height, width]` filter size.
    fn filter(&self) -> Result<[usize; 2]> {
        Ok([
            size(self.filter[0], "filter_height")?,
            size(self.filter[1], "filter_width")?,
        ])
    }

    /// DEPTHWISE_CONV_2D's positive depth multiplier.
    fn depth_multiplier(&self) -> Result<usize> {
        size(self.depth_multiplier, "depth_multiplier")
    }
}

/// The float bias of a windowed operator, its optional input `i`.
fn float_bias<'v>(
    opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    i: usize,
) -> Result<Option<&'v ArrayD<f32>>> {
    match opt_arg(i)? {
        Some(b) => b.f32().map(Some),
        None => Ok(None),
    }
}

/// The options of a windowed operator that are not its own.
fn foreign_options(o: &BuiltinOptions) -> String {
    format!("options {} do not belong to this operator", o.describe())
}

impl Interpreter<'_> {
    /// The int8 convolution and pooling operators
    /// (`crate::kernels_conv_int8`), their fused activation included.
    fn windowed_int8<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
        activation: ActivationFunctionType,
    ) -> Result<ArrayD<i8>> {
        let g = &self.model.subgraphs[0];
        let tensor = |i: usize| &g.tensors[op.inputs[i] as usize];
        let out = &g.tensors[op.outputs[0] as usize];
        let int8_arg = |i: usize| -> Result<&'v ArrayD<i8>> {
            match arg(i)? {
                Value::I8(a) => Ok(a),
                v => Err(format!("input {i} of type {} (want INT8)", v.type_name())),
            }
        };
        let bias = || -> Result<Option<&'v ArrayD<i32>>> {
            match opt_arg(2)? {
                Some(Value::I32(b)) => Ok(Some(b)),
                Some(b) => Err(format!("an int8 convolution with a {} bias", b.type_name())),
                None => Ok(None),
            }
        };
        let x = int8_arg(0)?;
        // The filter and the integer parameters of a convolution whose
        // output channels are along the filter's `axis`.
        let filter = |axis: usize| -> Result<(&'v ArrayD<i8>, conv_int8::ConvQuant)> {
            let f = int8_arg(1)?;
            let channels = f.shape().get(axis).copied().unwrap_or(0);
            let q =
                conv_int8::ConvQuant::new(tensor(0), tensor(1), out, axis, channels, activation)?;
            Ok((f, q))
        };
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => {
                let (f, q) = filter(0)?;
                conv_int8::conv2d_int8(x, f, bias()?, w.geometry()?, &q)
            }
            B::DepthwiseConv2d => {
                let (f, q) = filter(3)?;
                conv_int8::depthwise_conv2d_int8(
                    x,
                    f,
                    bias()?,
                    w.depth_multiplier()?,
                    w.geometry()?,
                    &q,
                )
            }
            B::MaxPool2d | B::AveragePool2d => {
                if int8::per_tensor(tensor(0))? != int8::per_tensor(out)? {
                    return Err(
                        "an int8 pool's input and output have different quantization parameters"
                            .into(),
                    );
                }
                let (scale, zp) = int8::per_tensor(out)?;
                let act = int8::activation_range(activation, scale, zp)?;
                let filter = w.filter()?;
                let g = w.geometry()?;
                if builtin == B::MaxPool2d {
                    conv_int8::max_pool_int8(x, filter, g, act)
                } else {
                    conv_int8::average_pool_int8(x, filter, g, act)
                }
            }
            _ => Err(foreign_options(&op.options)),
        }
    }

    /// The hybrid convolutions (int8 filters, float activations:
    /// `crate::kernels_conv_hybrid`), before their fused activation.
    fn windowed_hybrid<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    ) -> Result<ArrayD<f32>> {
        let g = &self.model.subgraphs[0];
        let tensor = |i: usize| &g.tensors[op.inputs[i] as usize];
        // The int8 filter and its scales, one per output channel along `axis`.
        let filter = |axis: usize, one_for_all: bool| -> Result<(&'v ArrayD<i8>, Vec<f32>)> {
            let f = match arg(1)? {
                Value::I8(f) => f,
                v => return Err(format!("filter of type {} (want INT8)", v.type_name())),
            };
            let channels = f.shape().get(axis).copied().unwrap_or(0);
            let scales = conv_hybrid::filter_scales(tensor(1), axis, channels, one_for_all)?;
            Ok((f, scales))
        };
        let bias = |i: usize| float_bias(opt_arg, i);
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => {
                let (f, scales) = filter(0, true)?;
                conv_hybrid::conv2d_hybrid(arg(0)?.f32()?, f, &scales, bias(2)?, w.geometry()?)
            }
            B::DepthwiseConv2d => {
                let (f, scales) = filter(3, false)?;
                conv_hybrid::depthwise_conv2d_hybrid(
                    arg(0)?.f32()?,
                    f,
                    &scales,
                    bias(2)?,
                    w.depth_multiplier()?,
                    w.geometry()?,
                )
            }
            B::TransposeConv => {
                let (f, scales) = filter(0, true)?;
                conv_hybrid::transpose_conv_hybrid(
                    &arg(0)?.ints()?,
                    f,
                    &scales,
                    arg(2)?.f32()?,
                    bias(3)?,
                    w.geometry()?,
                )
            }
            _ => Err(foreign_options(&op.options)),
        }
    }

    /// The float convolution and pooling operators (`crate::kernels_conv`),
    /// before their fused activation.
    fn windowed<'v>(
        &self,
        builtin: B,
        op: &Operator,
        arg: &dyn Fn(usize) -> Result<&'v Value>,
        opt_arg: &dyn Fn(usize) -> Result<Option<&'v Value>>,
    ) -> Result<ArrayD<f32>> {
        let bias = |i: usize| float_bias(opt_arg, i);
        let w = WindowOptions::of(builtin, &op.options)?;
        match builtin {
            B::Conv2d => conv::conv2d(arg(0)?.f32()?, arg(1)?.f32()?, bias(2)?, w.geometry()?),
            B::DepthwiseConv2d => conv::depthwise_conv2d(
                arg(0)?.f32()?,
                arg(1)?.f32()?,
                bias(2)?,
                w.depth_multiplier()?,
                w.geometry()?,
            ),
            B::TransposeConv => conv::transpose_conv(
                &arg(0)?.ints()?,
                arg(1)?.f32()?,
                arg(2)?.f32()?,
                bias(3)?,
                w.geometry()?,
            ),
            B::MaxPool2d | B::AveragePool2d => conv::pool2d(
                arg(0)?.f32()?,
                w.filter()?,
                w.geometry()?,
                builtin == B::AveragePool2d,
            ),
            _ => Err(foreign_options(&op.options)),
        }
    }
}

fn check_input(t: &crate::model::Tensor, v: &Value) -> Result<()> {
    let want = t.shape_signature.as_ref().unwrap_or(&t.shape);
    let ok_type = matches!(
        (t.tensor_type, v),
        (TensorType::Float32, Value::F32(_))
            | (TensorType::Int8, Value::I8(_))
            | (TensorType::Int32, Value::I32(_))
            | (TensorType::Int64, Value::I64(_))
            | (TensorType::Bool, Value::Bool(_))
    );
    let ok_shape = want.len() == v.shape().len()
        && want
            .iter()
            .zip(v.shape())
            .all(|(&w, &d)| w < 0 || w as usize == d);
    if !ok_type || !ok_shape {
        return Err(format!(
            "input `{}` is {} of shape {want:?}, but {} of shape {:?} was given",
            t.name,
            t.tensor_type,
            v.type_name(),
            v.shape()
        ));
    }
    Ok(())
}

fn map_value(v: &Value, f: impl Fn(&ArrayD<f32>) -> Result<ArrayD<f32>>) -> Result<Value> {
    // Shape operators move elements of any type; the kernels specc needs take
    // float and int tensors.
    match v {
        Value::F32(a) => f(a).map(Value::F32),
        Value::I8(a) => f(&a.mapv(f32::from)).map(|r| Value::I8(r.mapv(|x| x as i8))),
        Value::I32(a) => f(&a.mapv(|x| x as f32)).map(|r| Value::I32(r.mapv(|x| x as i32))),
        other => Err(format!(
            "{} tensors are not supported by this operator",
            other.type_name()
        )),
    }
}

fn normalize_axis(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r.max(1) {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

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

fn bcast<'a, T>(a: &'a ArrayD<T>, shape: &[usize]) -> Result<ArrayViewD<'a, T>> {
    a.broadcast(IxDyn(shape))
        .ok_or_else(|| format!("shape {:?} does not broadcast to {shape:?}", a.shape()))
}

fn binary<T: Copy, R>(a: &ArrayD<T>, b: &ArrayD<T>, f: fn(T, T) -> R) -> Result<ArrayD<R>> {
    if a.shape() == b.shape() {
        return Ok(Zip::from(a).and(b).map_collect(|&x, &y| f(x, y)));
    }
    let shape = broadcast_shape(a.shape(), b.shape())?;
    Ok(Zip::from(&bcast(a, &shape)?)
        .and(&bcast(b, &shape)?)
        .map_collect(|&x, &y| f(x, y)))
}

fn apply_activation(mut y: ArrayD<f32>, a: ActivationFunctionType) -> Result<ArrayD<f32>> {
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

fn reshape<T: Clone>(a: &ArrayD<T>, shape: &[usize]) -> Result<ArrayD<T>> {
    a.to_shape(IxDyn(shape))
        .map(|v| v.into_owned())
        .map_err(|e| format!("cannot reshape {:?} to {shape:?}: {e}", a.shape()))
}

/// TFLite's RESHAPE: one -1 takes what is left.
fn reshape_dims(from: &[usize], requested: &[i64]) -> Result<Vec<usize>> {
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

fn fully_connected(
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

fn batch_matmul(a: &ArrayD<f32>, b: &ArrayD<f32>, adj_x: bool, adj_y: bool) -> Result<ArrayD<f32>> {
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

fn softmax(x: &ArrayD<f32>, beta: f32, log: bool) -> Result<ArrayD<f32>> {
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

fn reduce(x: &ArrayD<f32>, axes: &[usize], keep: bool, op: B) -> ArrayD<f32> {
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

fn cast(v: &Value, to: TensorType) -> Result<Value> {
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
