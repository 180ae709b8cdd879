//! The walk that lowers the forward graph: the state of one export
//! ([`Lower`]), the plan from the outputs back (each needed node's
//! [`Lowering`]), the constants folded with the reference interpreter, the
//! model's inputs, outputs and `serving_default` signature, the tensors of
//! nodes (names, dims, constants created on first use), and one operator
//! per node of the `Plain` lowering, with the refusals of the ops TFLite
//! cannot express.
//!
//! Invariants: nodes are lowered in id order (a topological order, no
//! recursion); a node's tensor has its dtype and shape (the batch dimension
//! -1, or the fixed batch); an op without a lowering is a
//! `tflite-unsupported` diagnostic at its span.

use std::collections::HashMap;

use specc_grammar::{Code, Diagnostic};
use specc_tflite::{ModelBuilder, TensorType};

use super::conv::{window_padding, WindowPadding};
use super::patterns::Lowering;
use super::{TfliteExport, R};
use crate::interp;
use crate::ir::print::op_text;
use crate::ir::{DType, Dim, Graph, NodeId, Op, Shape};

pub(super) struct Lower<'a> {
    pub(super) e: &'a TfliteExport<'a>,
    pub(super) g: &'a Graph,
    /// Whether a node depends on no input, batch size, step or noise and has no batch axis.
    pub(super) foldable: Vec<bool>,
    pub(super) lowering: Vec<Option<Lowering>>,
    pub(super) folded: HashMap<NodeId, interp::Tensor>,
    pub(super) tensors: HashMap<NodeId, i32>,
    /// The state tensor of every slot of an unrolled recurrence (`gru`).
    pub(super) states: HashMap<NodeId, Vec<i32>>,
    pub(super) m: ModelBuilder,
}

impl<'a> Lower<'a> {
    pub(super) fn new(e: &'a TfliteExport<'a>) -> R<Lower<'a>> {
        let g = e.graph;
        let mut foldable = vec![false; g.len()];
        for (id, n) in g.nodes() {
            let leaf_ok = !matches!(
                n.op,
                Op::Input(_)
                    | Op::BatchSize
                    | Op::GlobalStep
                    | Op::FirstRow
                    | Op::NormalNoise { .. }
            );
            foldable[id.index()] =
                leaf_ok && !n.shape.has_batch() && n.inputs.iter().all(|i| foldable[i.index()]);
        }
        Ok(Lower {
            e,
            g,
            foldable,
            lowering: vec![None; g.len()],
            folded: HashMap::new(),
            tensors: HashMap::new(),
            states: HashMap::new(),
            m: ModelBuilder::new(),
        })
    }

    pub(super) fn unsupported(&self, id: NodeId, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::TfliteUnsupported,
            self.g.span(id).unwrap_or_default(),
            format!(
                "`{}` cannot be exported to TensorFlow Lite: {what}",
                op_text(self.g, self.g.op(id))
            ),
        )
        .with_help("TensorFlow Lite has no builtin operator for it; `--format object` compiles any spec to native code")
    }

    pub(super) fn run(mut self) -> R<specc_tflite::Model> {
        self.plan()?;
        self.fold()?;
        let mut inputs = Vec::new();
        for name in self.e.inputs {
            let Some(i) = self.g.inputs.iter().position(|l| &l.name == name) else {
                return Err(Diagnostic::new(
                    Code::TfliteUnsupported,
                    Default::default(),
                    format!("`{name}` is not an input of the model"),
                ));
            };
            let leaf = &self.g.inputs[i];
            let t = self
                .m
                .tensor(name, tensor_type(leaf.dtype), &self.dims(&leaf.shape));
            inputs.push((name.clone(), t));
            for (id, n) in self.g.nodes() {
                if n.op == Op::Input(i as u32) {
                    self.tensors.insert(id, t);
                }
            }
        }
        for i in 0..self.g.len() {
            let id = NodeId(i as u32);
            if let Some(l) = self.lowering[i] {
                if !matches!(l, Lowering::Constant) {
                    self.emit(id, l)?;
                }
            }
        }
        let mut outputs = Vec::new();
        for (name, node) in self.e.outputs {
            let t = self.tensor(*node)?;
            outputs.push((name.clone(), t));
        }
        // Name the output tensors as the signature does.
        let mut model = self.m.finish(&inputs, &outputs);
        for (name, t) in &outputs {
            let tensor = &mut model.subgraphs[0].tensors[*t as usize];
            if !inputs.iter().any(|(_, i)| i == t) {
                tensor.name = name.clone();
            }
        }
        Ok(model)
    }

    /// Which nodes are needed and how each lowers, from the outputs back.
    fn plan(&mut self) -> R<()> {
        let g = self.g;
        let roots: Vec<NodeId> = self.e.outputs.iter().map(|o| o.1).collect();
        let uses = g.use_counts(&roots);
        let mut needed = vec![false; g.len()];
        for r in &roots {
            needed[r.index()] = true;
        }
        for i in (0..g.len()).rev() {
            if !needed[i] {
                continue;
            }
            let id = NodeId(i as u32);
            let (l, reads) = if self.foldable[i] {
                (Lowering::Constant, Vec::new())
            } else if let Some((l, reads)) = self.fake_quant(id) {
                (l, reads)
            } else if let Some((l, reads)) = self.pattern(id, &uses) {
                (l, reads)
            } else {
                let reads = match g.op(id) {
                    Op::Binary(_) | Op::Select => self.operands(id),
                    _ => g.inputs_of(id).to_vec(),
                };
                (Lowering::Plain, reads)
            };
            self.lowering[i] = Some(l);
            // Fake-quantized weights: their pair needs the range.
            let range = self.fake_quant_record(id).map(|f| [f.min, f.max]);
            for r in reads.into_iter().chain(range.into_iter().flatten()) {
                needed[r.index()] = true;
            }
        }
        Ok(())
    }

    /// Evaluates every needed constant node at once.
    fn fold(&mut self) -> R<()> {
        let g = self.g;
        let roots: Vec<NodeId> = (0..g.len())
            .filter(|&i| matches!(self.lowering[i], Some(Lowering::Constant)))
            .map(|i| NodeId(i as u32))
            .collect();
        let live = g.reachable(&roots);
        let mut vars = Vec::with_capacity(g.vars.len());
        for (i, leaf) in g.vars.iter().enumerate() {
            let used = g
                .nodes()
                .any(|(id, n)| live[id.index()] && n.op == Op::Var(i as u32));
            if !used {
                vars.push(interp::Tensor::scalar(0.0));
                continue;
            }
            let Some(value) = self.e.params.get(&leaf.name) else {
                return Err(Diagnostic::new(
                    Code::TfliteMissingParameter,
                    Default::default(),
                    format!("no value for parameter `{}`", leaf.name),
                ));
            };
            let want: Vec<usize> = leaf.shape.concrete(1).iter().map(|&d| d as usize).collect();
            if value.shape() != want.as_slice() {
                return Err(Diagnostic::new(
                    Code::TfliteMissingParameter,
                    Default::default(),
                    format!(
                        "parameter `{}` has shape {:?}, the model declares {}",
                        leaf.name,
                        value.shape(),
                        leaf.shape
                    ),
                ));
            }
            vars.push(interp::Tensor::new(
                want,
                value.iter().map(|&v| v as f64).collect(),
            ));
        }
        let env = interp::Env {
            inputs: &[],
            vars: &vars,
            batch: 1,
            global_step: 0.0,
        };
        let values = interp::eval(g, &env, &roots);
        self.folded = roots.into_iter().zip(values).collect();
        Ok(())
    }

    pub(super) fn dims(&self, s: &Shape) -> Vec<i32> {
        s.0.iter()
            .map(|d| match d {
                Dim::Batch => self.e.batch.map_or(-1, |b| b as i32),
                Dim::Fixed(n) => *n as i32,
            })
            .collect()
    }

    pub(super) fn name(&self, id: NodeId) -> String {
        if let Some(f) = self.g.fake_quants.iter().find(|f| f.output == id) {
            return format!("{}/fake_quant", self.name(f.input));
        }
        match self.g.op(id) {
            Op::Var(i) => return self.g.vars[*i as usize].name.clone(),
            Op::Input(i) => return self.g.inputs[*i as usize].name.clone(),
            _ => {}
        }
        let text = op_text(self.g, self.g.op(id));
        let op = text.split_whitespace().next().unwrap_or("node");
        format!("{op}_{}", id.0)
    }

    /// The tensor holding node `id` (a constant is created on first use).
    pub(super) fn tensor(&mut self, id: NodeId) -> R<i32> {
        if let Some(&t) = self.tensors.get(&id) {
            return Ok(t);
        }
        if let Some(v) = self.folded.get(&id) {
            let dims: Vec<i32> = v.dims.iter().map(|&d| d as i32).collect();
            let name = self.name(id);
            let t = match self.g.dtype(id) {
                DType::F32 => {
                    let vals: Vec<f32> = v.data.iter().map(|&x| x as f32).collect();
                    self.m.constant_f32(&name, &dims, &vals)
                }
                DType::I32 => {
                    let vals: Vec<i32> = v.data.iter().map(|&x| x as i32).collect();
                    self.m.constant_i32(&name, &dims, &vals)
                }
            };
            self.tensors.insert(id, t);
            return Ok(t);
        }
        match self.g.op(id) {
            Op::Input(i) => Err(Diagnostic::new(
                Code::TfliteUnsupported,
                self.g.span(id).unwrap_or_default(),
                format!(
                    "the output needs input `{}`, which is not among the exported inputs",
                    self.g.inputs[*i as usize].name
                ),
            )),
            _ => Err(self.unsupported(id, "no operator computes it")),
        }
    }

    pub(super) fn out(&mut self, id: NodeId) -> i32 {
        let name = self.name(id);
        let dims = self.dims(self.g.shape(id));
        let t = self.m.tensor(&name, tensor_type(self.g.dtype(id)), &dims);
        self.tensors.insert(id, t);
        t
    }

    /// The operators of node `id` as `l` says (one module per family).
    fn emit(&mut self, id: NodeId, l: Lowering) -> R<()> {
        match l {
            Lowering::Constant => Ok(()),
            Lowering::FullyConnected { .. } => self.emit_fully_connected(id, l),
            Lowering::Conv2D { .. }
            | Lowering::DepthwiseConv2D { .. }
            | Lowering::TransposeConv { .. } => self.emit_conv(id, l),
            Lowering::Pool { x, window, max } => self.emit_pool(id, x, window, max),
            Lowering::Softmax { x, log } => self.emit_softmax(id, x, log),
            Lowering::Mean { x } => self.emit_mean(id, x),
            Lowering::Sequence { .. } => self.emit_sequence(id, l),
            Lowering::UnrolledGru => self.emit_unrolled_gru(id),
            Lowering::FakeQuant { .. } => self.emit_fake_quant(id, l),
            Lowering::Plain => self.plain(id),
        }
    }

    /// One operator for node `id` (see the family modules), or the refusal
    /// of an op TFLite cannot express.
    fn plain(&mut self, id: NodeId) -> R<()> {
        let g = self.g;
        let ins = g.inputs_of(id).to_vec();
        match g.op(id).clone() {
            Op::StopGradient => {
                let t = self.tensor(ins[0])?;
                self.tensors.insert(id, t);
            }
            Op::Unary(u) => self.unary(id, u)?,
            Op::Binary(b) => self.binary(id, b)?,
            Op::Select => self.select(id)?,
            Op::Cast(to) => {
                let x = self.tensor(ins[0])?;
                let from = tensor_type(g.dtype(ins[0]));
                let y = self.out(id);
                self.cast(x, from, y, tensor_type(to));
            }
            Op::BroadcastTo(to) => self.broadcast_to(id, to)?,
            Op::Reduce { kind, axes } => self.reduce(id, kind, axes)?,
            Op::ArgMax { axis } => self.arg_max(id, axis)?,
            Op::MatMul { ta, tb } => self.batch_matmul(id, ta, tb)?,
            Op::Reshape(to) => self.reshape(id, to)?,
            Op::Transpose(perm) => self.transpose(id, perm)?,
            Op::Concat { axis } => self.concatenation(id, axis)?,
            Op::Slice { begin, .. } if matches!(g.op(ins[0]), Op::Recurrence { .. }) => {
                self.tape_slice(id, ins[0], &begin)?
            }
            Op::Slice { begin, shape } => self.slice(id, begin, shape)?,
            Op::Pad { before, shape } => self.pad(id, before, shape)?,
            Op::Gather => self.gather(id)?,
            Op::BatchSize => {
                return Err(self.unsupported(
                    id,
                    "the batch size as a value (a mean over the batch) has no TFLite equivalent",
                ))
            }
            Op::GlobalStep => {
                return Err(self.unsupported(id, "an inference model has no global step"))
            }
            Op::FirstRow => {
                return Err(self.unsupported(
                    id,
                    "a row's place in the global batch is a training-time value",
                ))
            }
            Op::NormalNoise { .. } => {
                return Err(self.unsupported(id, "random noise is a training-time op"))
            }
            Op::Iota { axis, .. } => self.iota(id, axis)?,
            Op::UniformHash { .. } => {
                return Err(self.unsupported(id, "random draws are a training-time op"))
            }
            Op::Training => {
                return Err(self.unsupported(
                    id,
                    "the training flag is resolved before export (an internal error)",
                ))
            }
            Op::Recurrence { .. } | Op::RecurrenceGrad { .. } => {
                return Err(self.refuse_recurrence(id))
            }
            Op::Patches { .. } => {
                return Err(self.unsupported(
                    id,
                    "these image patches are not a convolution by a constant kernel (CONV_2D, DEPTHWISE_CONV_2D) or a max or average pool with SAME or VALID padding (MAX_POOL_2D, AVERAGE_POOL_2D)",
                ))
            }
            Op::PatchesGrad(window) => {
                let why = if window.dilations != [1, 1] {
                    "TFLite's TRANSPOSE_CONV has no dilation"
                } else if matches!(window_padding(&window), WindowPadding::Explicit(_)) {
                    "TFLite's TRANSPOSE_CONV takes SAME or VALID padding, not explicit padding"
                } else {
                    "it is not a transposed convolution by a constant kernel (TRANSPOSE_CONV)"
                };
                return Err(self.unsupported(id, why));
            }
            // A batch of products (attention's `q @ k^T`): TF Lite's
            // BATCH_MATMUL, whose adj_x / adj_y transpose each matrix.
            Op::BatchMatMul { ta, tb, groups } => {
                let matrices = ins.iter().all(|&i| g.shape(i).rank() == usize::from(groups) + 2);
                if !matrices {
                    return Err(self.unsupported(
                        id,
                        "TF Lite's BATCH_MATMUL multiplies matrices, not operands of higher rank per group",
                    ));
                }
                self.batch_matmul(id, ta, tb)?
            }
            Op::WinogradInput(..)
            | Op::WinogradInputGrad(..)
            | Op::WinogradOutput(..)
            | Op::WinogradOutputGrad(..) => {
                return Err(self.unsupported(
                    id,
                    "the Winograd convolution ops are introduced only for compiled steps (an internal error)",
                ))
            }
            Op::ScatterAdd | Op::FirstOccurrence { .. } | Op::SumDuplicates | Op::ScatterRows => {
                return Err(self.unsupported(id, "a training-time row update"))
            }
            Op::Input(_) | Op::Var(_) | Op::Scalar(_) | Op::Tensor(_) => {
                self.tensor(id)?;
            }
        }
        Ok(())
    }
}

fn tensor_type(d: DType) -> TensorType {
    match d {
        DType::F32 => TensorType::Float32,
        DType::I32 => TensorType::Int32,
    }
}
