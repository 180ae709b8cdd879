//! TF Lite's hash tables and the operators that keep state across a
//! model's operators: CALL_ONCE (runs an initialization subgraph),
//! HASHTABLE (a table's handle), HASHTABLE_IMPORT (fills it),
//! HASHTABLE_FIND (looks keys up) and HASHTABLE_SIZE, as TF Lite's kernels
//! (`tensorflow/lite/kernels/hashtable/`) define them.
//!
//! Owns: [`Tables`] (the tables of one invocation by id, and the
//! subgraphs CALL_ONCE has run) and [`Interpreter::stateful`].
//! Invariants: a table maps STRING keys to INT64 values or INT64 keys to
//! STRING values (the pairs TF Lite's HASHTABLE takes); the first
//! HASHTABLE_IMPORT of a table fills it and later ones are no-ops, and of
//! duplicate keys the first entry wins (TF Lite's static table); a lookup
//! in a table no import filled is an error; an initialization subgraph runs
//! table operators only; tables live for one invocation (their contents
//! are constants, so each invocation rebuilds the same ones).

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};

use super::{Interpreter, Value};
use crate::model::{BuiltinOptions, Operator};
use crate::schema::{BuiltinOperator as B, TensorType};

type Result<T> = std::result::Result<T, String>;

/// Whether `b` is one of the operators [`Interpreter::stateful`] runs.
pub(super) fn is_stateful(b: B) -> bool {
    matches!(
        b,
        B::CallOnce | B::Hashtable | B::HashtableImport | B::HashtableFind | B::HashtableSize
    )
}

/// The hash tables of one invocation, by table id.
#[derive(Default)]
pub(super) struct Tables {
    tables: HashMap<i32, Table>,
    /// The subgraphs CALL_ONCE has run (or is running).
    called: Vec<usize>,
}

struct Table {
    key_dtype: TensorType,
    value_dtype: TensorType,
    /// `None` until the first HASHTABLE_IMPORT.
    entries: Option<Entries>,
}

enum Entries {
    StringToInt(HashMap<Vec<u8>, i64>),
    IntToString(HashMap<i64, Vec<u8>>),
}

impl Entries {
    fn len(&self) -> usize {
        match self {
            Entries::StringToInt(m) => m.len(),
            Entries::IntToString(m) => m.len(),
        }
    }
}

impl Interpreter<'_> {
    /// Runs the table operator `op` (of builtin `b`) of subgraph `sg`:
    /// the tensor it writes and its value, if it writes one.
    pub(super) fn stateful(
        &self,
        sg: usize,
        b: B,
        op: &Operator,
        values: &[Option<Value>],
        tables: &mut Tables,
    ) -> Result<Option<(usize, Value)>> {
        let g = &self.model.subgraphs[sg];
        let arg = |i: usize| -> Result<&Value> {
            let t = *op
                .inputs
                .get(i)
                .filter(|&&t| t >= 0)
                .ok_or_else(|| format!("input {i} is missing"))?;
            values[t as usize].as_ref().ok_or_else(|| {
                format!(
                    "input `{}` is not computed before it is used",
                    g.tensors[t as usize].name
                )
            })
        };
        let output = || -> Result<usize> {
            match op.outputs[..] {
                [t] => Ok(t as usize),
                _ => Err(format!("{} outputs, not one", op.outputs.len())),
            }
        };
        let handle = |tables: &Tables| -> Result<i32> {
            let id = match arg(0)? {
                Value::I32(a) if a.len() == 1 => a.iter().copied().next().unwrap_or_default(),
                v => {
                    return Err(format!(
                        "the table handle is {} of shape {:?}",
                        v.type_name(),
                        v.shape()
                    ))
                }
            };
            if tables.tables.contains_key(&id) {
                Ok(id)
            } else {
                Err(format!("no table {id} (no HASHTABLE made it)"))
            }
        };
        match b {
            B::CallOnce => {
                let BuiltinOptions::CallOnce {
                    init_subgraph_index: i,
                } = op.options
                else {
                    return Err("CALL_ONCE without CallOnceOptions".into());
                };
                let i = usize::try_from(i)
                    .ok()
                    .filter(|&i| i < self.model.subgraphs.len() && i != 0)
                    .ok_or_else(|| {
                        format!("init_subgraph_index {i} is not a subgraph after the first")
                    })?;
                if !tables.called.contains(&i) {
                    tables.called.push(i);
                    self.initialize(i, tables)?;
                }
                Ok(None)
            }
            B::Hashtable => {
                let BuiltinOptions::Hashtable {
                    table_id,
                    key_dtype,
                    value_dtype,
                } = op.options
                else {
                    return Err("HASHTABLE without HashtableOptions".into());
                };
                if !matches!(
                    (key_dtype, value_dtype),
                    (TensorType::String, TensorType::Int64)
                        | (TensorType::Int64, TensorType::String)
                ) {
                    return Err(format!(
                        "a table of {key_dtype} keys and {value_dtype} values (TF Lite's tables map STRING to INT64 or INT64 to STRING)"
                    ));
                }
                let table = tables.tables.entry(table_id).or_insert(Table {
                    key_dtype,
                    value_dtype,
                    entries: None,
                });
                if (table.key_dtype, table.value_dtype) != (key_dtype, value_dtype) {
                    return Err(format!(
                        "table {table_id} maps {} to {}, not {key_dtype} to {value_dtype}",
                        table.key_dtype, table.value_dtype
                    ));
                }
                let handle = ArrayD::from_shape_vec(IxDyn(&[1]), vec![table_id])
                    .map_err(|e| e.to_string())?;
                Ok(Some((output()?, Value::I32(handle))))
            }
            B::HashtableImport => {
                let id = handle(tables)?;
                let (keys, vals) = (arg(1)?, arg(2)?);
                if keys.shape() != vals.shape() {
                    return Err(format!(
                        "keys of shape {:?} and values of shape {:?}",
                        keys.shape(),
                        vals.shape()
                    ));
                }
                let table = tables.tables.get_mut(&id).ok_or("no table")?;
                if table.entries.is_some() {
                    return Ok(None);
                }
                let entries = match (keys, vals, table.key_dtype) {
                    (Value::Str(k), Value::I64(v), TensorType::String) => {
                        let mut m = HashMap::with_capacity(k.len());
                        for (k, &v) in k.iter().zip(v) {
                            m.entry(k.clone()).or_insert(v);
                        }
                        Entries::StringToInt(m)
                    }
                    (Value::I64(k), Value::Str(v), TensorType::Int64) => {
                        let mut m = HashMap::with_capacity(k.len());
                        for (&k, v) in k.iter().zip(v) {
                            m.entry(k).or_insert_with(|| v.clone());
                        }
                        Entries::IntToString(m)
                    }
                    (k, v, _) => {
                        return Err(format!(
                            "{} keys and {} values into table {id} of {} keys and {} values",
                            k.type_name(),
                            v.type_name(),
                            table.key_dtype,
                            table.value_dtype
                        ))
                    }
                };
                table.entries = Some(entries);
                Ok(None)
            }
            B::HashtableFind => {
                let id = handle(tables)?;
                let entries = tables.tables[&id]
                    .entries
                    .as_ref()
                    .ok_or_else(|| format!("table {id} is looked up before it is imported"))?;
                let v = match (entries, arg(1)?, arg(2)?) {
                    (Entries::StringToInt(m), Value::Str(keys), Value::I64(d)) => {
                        let d = *d.iter().next().ok_or("an empty default value")?;
                        Value::I64(keys.map(|k| m.get(k).copied().unwrap_or(d)))
                    }
                    (Entries::IntToString(m), Value::I64(keys), Value::Str(d)) => {
                        let d = d.iter().next().ok_or("an empty default value")?;
                        Value::Str(keys.map(|k| m.get(k).unwrap_or(d).clone()))
                    }
                    (_, k, d) => {
                        return Err(format!(
                            "{} keys with a {} default in table {id}",
                            k.type_name(),
                            d.type_name()
                        ))
                    }
                };
                Ok(Some((output()?, v)))
            }
            B::HashtableSize => {
                let id = handle(tables)?;
                let n = tables.tables[&id].entries.as_ref().map_or(0, Entries::len);
                let v = ArrayD::from_shape_vec(IxDyn(&[1]), vec![n as i64])
                    .map_err(|e| e.to_string())?;
                Ok(Some((output()?, Value::I64(v))))
            }
            other => Err(format!("{} is not a table operator", other.name())),
        }
    }

    /// Runs initialization subgraph `sg` (CALL_ONCE's): its table
    /// operators, in order.
    fn initialize(&self, sg: usize, tables: &mut Tables) -> Result<()> {
        let g = &self.model.subgraphs[sg];
        let mut values = self.constants[sg].clone();
        for (k, op) in g.operators.iter().enumerate() {
            let b = self.model.builtin(op).ok_or("bad opcode index")?;
            let at = |e: String| format!("subgraph {sg}, operator {k} ({}): {e}", b.name());
            if !is_stateful(b) {
                return Err(at(
                    "specc's interpreter runs only table operators in an initialization subgraph"
                        .into(),
                ));
            }
            if let Some((out, v)) = self.stateful(sg, b, op, &values, tables).map_err(at)? {
                values[out] = Some(v);
            }
        }
        Ok(())
    }
}
