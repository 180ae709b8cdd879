//! A small interpreter of TFLite models: the float32 (and int32/bool)
//! kernels of the builtin operators specc exports, and the int8 and hybrid
//! kernels of its quantized exports ([`crate::kernels`]).
//!
//! Owns: [`Interpreter`] (constants decoded once, then any number of
//! [`Interpreter::invoke`]s), [`Value`] (a tensor of one of the element types
//! the kernels use) and the convenience [`run`]. Code map: this module (the
//! model's constants and inputs, the operators run in order), `value`
//! ([`Value`]), `dispatch` (each operator to its kernel by builtin code and
//! operand types: int8 when the input is INT8, hybrid when the weights are
//! INT8 and the input float, an int8 TRANSPOSE_CONV an error), `window`
//! (the options of the convolutions and pools, to their float, int8 and
//! hybrid kernels), `sequence` (the recurrent operators' inputs by role),
//! `tables` (the hash tables, CALL_ONCE and its initialization subgraph).
//! Invariants: operators run in file order (TFLite's execution order) and
//! follow TFLite's reference kernels' semantics (broadcasting binary ops,
//! FULLY_CONNECTED's `[out, in]` weights, SOFTMAX's `beta`, GATHER failing on
//! an index out of range, ...); a model or input the kernels cannot run is an
//! error naming the operator (index and builtin name), never a panic.

mod dispatch;
mod sequence;
mod tables;
mod value;
mod window;

use ndarray::{ArrayD, ArrayViewD, IxDyn};

use self::tables::Tables;
pub use self::value::Value;
use crate::model::{f32_values, i32_values, i64_values, string_values, Model, Tensor};
use crate::schema::TensorType;

type Result<T> = std::result::Result<T, String>;

/// A model ready to run: its constants decoded.
pub struct Interpreter<'m> {
    model: &'m Model,
    /// Per subgraph, each tensor's constant value (`None`: computed).
    constants: Vec<Vec<Option<Value>>>,
}

/// Runs the first subgraph of `model` on float inputs (in the subgraph's
/// input order; an INT32 input takes the f32 values, which must be integers;
/// an INT8 or UINT8 input quantizes them with its scale and zero point) and
/// returns every output as f32 (an INT8 or UINT8 output dequantized):
/// [`Value::from_f32`], [`Value::dequantized`].
pub fn run(model: &Model, inputs: &[ArrayViewD<f32>]) -> Result<Vec<ArrayD<f32>>> {
    Interpreter::new(model)?.run(inputs)
}

impl<'m> Interpreter<'m> {
    pub fn new(model: &'m Model) -> Result<Interpreter<'m>> {
        model.validate()?;
        if model.subgraphs.is_empty() {
            return Err("the model has no subgraph".into());
        }
        let constants = model
            .subgraphs
            .iter()
            .map(|g| g.tensors.iter().map(|t| constant(model, t)).collect())
            .collect::<Result<Vec<_>>>()?;
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
            .map(|(x, &t)| Value::from_f32(x.to_owned(), &g.tensors[t as usize]))
            .collect::<Result<Vec<_>>>()?;
        self.invoke(values)?
            .iter()
            .zip(&g.outputs)
            .map(|(v, &t)| v.dequantized(&g.tensors[t as usize]))
            .collect()
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
        let mut values = self.constants[0].clone();
        for (v, &t) in inputs.into_iter().zip(&g.inputs) {
            let tensor = &g.tensors[t as usize];
            check_input(tensor, &v)?;
            observe(t as usize, &v);
            values[t as usize] = Some(v);
        }
        // The hash tables of this invocation (`tables`), filled by the
        // initialization subgraph CALL_ONCE runs.
        let mut tables = Tables::default();
        for (k, op) in g.operators.iter().enumerate() {
            let builtin = self.model.builtin(op);
            let name = builtin.map_or("?".into(), |b| b.name().into_owned());
            let at = |e: String| format!("operator {k} ({name}): {e}");
            if let Some(b) = builtin.filter(|&b| tables::is_stateful(b)) {
                if let Some((out, v)) = self.stateful(0, b, op, &values, &mut tables).map_err(at)? {
                    observe(out, &v);
                    values[out] = Some(v);
                }
                continue;
            }
            let result = self.operator(op, &values).map_err(at)?;
            let [out] = op.outputs[..] else {
                return Err(at(format!(
                    "{} outputs; specc's interpreter runs operators with one",
                    op.outputs.len()
                )));
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
}

fn check_input(t: &crate::model::Tensor, v: &Value) -> Result<()> {
    let want = t.shape_signature.as_ref().unwrap_or(&t.shape);
    let ok_type = matches!(
        (t.tensor_type, v),
        (TensorType::Float32, Value::F32(_))
            | (TensorType::Int8, Value::I8(_))
            | (TensorType::Uint8, Value::U8(_))
            | (TensorType::Int32, Value::I32(_))
            | (TensorType::Int64, Value::I64(_))
            | (TensorType::Bool, Value::Bool(_))
            | (TensorType::String, Value::Str(_))
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

/// The constant value of tensor `t` (`None` for a tensor without data,
/// which an input or an operator gives).
fn constant(model: &Model, t: &Tensor) -> Result<Option<Value>> {
    let data = &model.buffers[t.buffer as usize].data;
    if t.tensor_type == TensorType::Resource
        || (data.is_empty() && t.shape.iter().product::<i32>() != 0)
    {
        return Ok(None);
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
        TensorType::Uint8 => {
            Value::U8(ArrayD::from_shape_vec(IxDyn(&shape), data.to_vec()).map_err(bad)?)
        }
        TensorType::String => {
            let strings = string_values(data)
                .ok_or_else(|| format!("tensor `{}`: its string buffer is corrupt", t.name))?;
            Value::Str(ArrayD::from_shape_vec(IxDyn(&shape), strings).map_err(bad)?)
        }
        other => {
            return Err(format!(
                "tensor `{}`: constants of type {other} are not supported by specc's interpreter",
                t.name
            ))
        }
    };
    Ok(Some(v))
}
