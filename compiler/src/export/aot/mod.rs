//! Ahead-of-time export: a trained model as a relocatable object file and a
//! C header (`specc export --format object`).
//!
//! Owns: [`predict_function`], the exported function (until the spec names
//! its inference outputs, the named bindings the caller asks for), and
//! [`export_object`]: planning it for one thread, the row layouts of the
//! caller's `in` and `out` ([`RowField`]), the weights copied from a session
//! (after a checkpoint is restored into it), the raw-features entry
//! point's plan when the inputs allow one ([`raw`]), the object
//! ([`object`]) and the header ([`header`]).
//!
//! Invariants: every exported output has one value per row (its first
//! dimension is the batch) and reads no label; `in` holds the model inputs
//! the outputs read (after feature-column preprocessing: ids and dense
//! values, never strings), concatenated per row in the model's input order;
//! the raw entry point's rows are the cells of [`Exported::raw_keys`];
//! `out` the outputs, concatenated per row in the order asked; the object's
//! weights are the session's values bit for bit.

pub mod header;
pub mod object;
pub mod raw;

use std::collections::BTreeSet;

use specc_runtime::abi::ElemType;
use specc_runtime::session::Session;

use self::object::{ObjectInput, ObjectOutput, ObjectSpec};
use self::raw::RawPlan;
use crate::ir::{Function, Op, Output};
use crate::layout::VarPlacement;
use crate::model::{InputRole, Model};
use crate::plan::{self, Loc};

/// The name of the exported function in [`predict_function`]'s plan.
pub const PREDICT: &str = "predict";

/// What to export.
#[derive(Clone, Debug)]
pub struct ExportOptions<'a> {
    /// Named bindings of the spec (`logits`, `probs`), in `out`'s order.
    pub outputs: &'a [String],
    /// The exported C function (`specc_predict`); the header's constants are
    /// its name in capitals (`SPECC_PREDICT_INPUT_WIDTH`).
    pub symbol: &'a str,
    /// The spec's file name, for the header's comment.
    pub spec_name: &'a str,
}

/// One input or output in a row of the caller's `in` or `out` array.
#[derive(Clone, Debug, PartialEq)]
pub struct RowField {
    /// The model input's name (`pixels`, `words/ids`) or the output's binding.
    pub name: String,
    /// The first column of the field in a row, and its number of columns.
    pub offset: usize,
    pub width: usize,
    /// What the model computes with: f32, or i32 ids passed as floats.
    pub elem: ElemType,
    /// For id inputs, the ids allowed: `lo..hi`.
    pub ids: Option<(i64, i64)>,
}

/// An exported model: the object file's bytes and the header's text.
#[derive(Clone, Debug)]
pub struct Exported {
    pub object: Vec<u8>,
    pub header: String,
    pub inputs: Vec<RowField>,
    pub outputs: Vec<RowField>,
    /// Floats per row of `in` and of `out`.
    pub in_width: usize,
    pub out_width: usize,
    /// Rows per call of the compiled function (larger calls are chunked).
    pub max_batch: usize,
    /// The raw keys `SYMBOL_raw` takes, one cell each per row, in order;
    /// or why the object has no raw entry point.
    pub raw_keys: Result<Vec<String>, String>,
}

/// The inference function: the named bindings `outputs`, in order.
pub fn predict_function(model: &Model, outputs: &[String]) -> Result<Function, String> {
    if outputs.is_empty() {
        // The spec's `outputs` item, when it has one.
        if let Some(p) = &model.functions.predict {
            let mut f = p.clone();
            f.name = PREDICT.to_string();
            return Ok(f);
        }
        return Err(format!(
            "the spec has no `outputs` item: add one, or name the values to export with \
             --fetch NAME (a binding of the spec: {})",
            binding_list(model)
        ));
    }
    let mut f = Function::new(PREDICT);
    for name in outputs {
        if f.outputs.iter().any(|o| &o.name == name) {
            return Err(format!("output `{name}` is named twice"));
        }
        let Some(&(_, node)) = model.bindings.iter().rev().find(|(n, _)| n == name) else {
            return Err(format!(
                "the spec has no binding `{name}` (its bindings: {})",
                binding_list(model)
            ));
        };
        f.outputs.push(Output {
            name: name.clone(),
            node,
        });
    }
    Ok(f)
}

fn binding_list(model: &Model) -> String {
    let names: Vec<String> = model
        .bindings
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Exports `outputs` of `model` as an object file, with the weights `session`
/// holds (the model's own session, a checkpoint restored into it).
pub fn export_object(
    model: &Model,
    placement: &VarPlacement,
    session: &Session,
    options: &ExportOptions,
) -> Result<Exported, String> {
    let symbol = options.symbol;
    let valid = symbol
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{symbol}` is not a C identifier (letters, digits and _, not starting with a digit)"
        ));
    }
    let f = predict_function(model, options.outputs)?;
    let g = &model.graph;
    let p = plan::plan(g, &f, placement, 1);
    if crate::codegen::has_recurrence(&[&p]) {
        return Err(
            "the exported outputs run a recurrent layer (`dynamic_rnn`), which object files do not hold yet: export it as TF Lite (`--format tflite --batch N`) or use `specc predict`"
                .to_string(),
        );
    }
    let layout = &placement.layout;

    // Inputs: those the plan reads, in model order; labels are refused.
    let read: BTreeSet<u32> = p
        .buffers
        .iter()
        .filter_map(|b| match b.loc {
            Loc::Input(i) => Some(i),
            _ => None,
        })
        .collect();
    let mut inputs = Vec::new();
    let mut in_width = 0;
    for &i in &read {
        let info = &model.inputs[i as usize];
        let il = &layout.inputs[i as usize];
        if info.role == InputRole::Label {
            return Err(format!(
                "the exported outputs read the label `{}`: export values computed from the features only",
                il.name
            ));
        }
        let ids = match il.elem {
            ElemType::F32 => None,
            ElemType::I32 => Some((
                if il.padding { -1 } else { 0 },
                il.num_classes.map_or(1 << 31, i64::from),
            )),
        };
        inputs.push(RowField {
            name: il.name.clone(),
            offset: in_width,
            width: il.per_example,
            elem: il.elem,
            ids,
        });
        in_width += il.per_example;
    }

    // Outputs: one value per row each.
    let mut outputs = Vec::new();
    let mut out_width = 0;
    for (k, o) in p.outputs.iter().enumerate() {
        if !o.batched {
            return Err(format!(
                "output `{}` has shape {}: only values with one row per input row (first dimension B) can be exported",
                o.name,
                g.shape(f.outputs[k].node)
            ));
        }
        outputs.push(RowField {
            name: o.name.clone(),
            offset: out_width,
            width: o.per_example,
            elem: o.elem,
            ids: None,
        });
        out_width += o.per_example;
    }

    // Weights: every arena the plan reads, from the session's variables.
    let live = g.reachable(&f.roots());
    let mut used: BTreeSet<usize> = p
        .buffers
        .iter()
        .filter_map(|b| match b.loc {
            Loc::Arena { arena, .. } => Some(arena as usize),
            _ => None,
        })
        .collect();
    for (id, node) in g.nodes() {
        if let (true, Op::Var(v)) = (live[id.index()], &node.op) {
            used.insert(p.var_locs[*v as usize].0);
        }
    }
    let mut arenas: Vec<Option<Vec<f32>>> = layout
        .arenas
        .iter()
        .enumerate()
        .map(|(i, a)| used.contains(&i).then(|| vec![0.0; a.len]))
        .collect();
    for v in &layout.vars {
        let Some(arena) = arenas[v.arena].as_mut() else {
            continue;
        };
        let values = session
            .var(&v.name)
            .ok_or_else(|| format!("the session has no variable `{}`", v.name))?;
        arena[v.offset..v.offset + values.len()].copy_from_slice(values);
    }

    let raw = if cfg!(target_endian = "little") {
        let specs: Vec<_> = read
            .iter()
            .map(|&i| &model.inputs[i as usize].spec)
            .collect();
        RawPlan::build(&specs).map(|mut plan| {
            let options = model.data.source.csv_options();
            plan.na_value = options
                .and_then(|o| o.na_value.clone())
                .map(String::into_bytes);
            plan
        })
    } else {
        Err("the raw entry point needs a little-endian target".to_string())
    };
    let raw_keys = raw.as_ref().map(|p| p.keys.clone()).map_err(Clone::clone);
    let spec = ObjectSpec {
        raw: raw.ok(),
        graph: g,
        plan: &p,
        arenas,
        model_inputs: layout.inputs.len(),
        inputs: read
            .iter()
            .zip(&inputs)
            .map(|(&index, r)| ObjectInput {
                index,
                elem: r.elem,
                per_example: r.width,
                offset: r.offset,
                range: r.ids,
            })
            .collect(),
        in_width,
        outputs: outputs
            .iter()
            .enumerate()
            .map(|(k, r)| ObjectOutput {
                index: k as u32,
                elem: r.elem,
                per_example: r.width,
                offset: r.offset,
            })
            .collect(),
        out_width,
        symbol: symbol.to_string(),
    };
    // A panic here is a bug in specc: an error, not a crash.
    let object = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| object::emit(&spec)))
        .unwrap_or_else(|e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!(
                "internal compiler error in the object's code: {msg}"
            ))
        })?;
    let mut exported = Exported {
        object,
        header: String::new(),
        inputs,
        outputs,
        in_width,
        out_width,
        max_batch: p.max_batch as usize,
        raw_keys,
    };
    exported.header = header::header(&exported, symbol, options.spec_name);
    Ok(exported)
}
