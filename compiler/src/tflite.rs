//! Lowering the forward IR to a TensorFlow Lite model (`specc export --format tflite`).
//!
//! Owns: [`export_tflite`] and its request [`TfliteExport`]: from the graph,
//! the trained parameters (by TF name), the dense inputs and the named
//! outputs to a `specc_tflite::Model` of TFLite builtin operators with the
//! `serving_default` signature.
//!
//! How nodes lower, in id order (a topological order, no recursion):
//! - Everything that depends on no input and has no batch dimension is folded
//!   with the reference interpreter ([`crate::interp`], float64, rounded to
//!   float32 once) and becomes a constant buffer, as TF's converter folds
//!   constants; parameters are such constants.
//! - Patterns first: `x @ W + b` (`W`, `b` constant) is FULLY_CONNECTED with
//!   the weights transposed to TFLite's `[units, depth]` and a following
//!   `relu` fused; sema's softmax and log-softmax over the last axis are
//!   SOFTMAX and LOG_SOFTMAX; `reduce_sum / count` (sema's mean) is MEAN.
//! - Then one operator per node: elementwise ops (broadcasting operands are
//!   read before their explicit `broadcast_to`, TFLite broadcasts itself),
//!   comparisons as a BOOL operator and a CAST, reductions with an axes
//!   constant, `argmax` (INT32), matmul by a non-constant as BATCH_MATMUL,
//!   reshape/transpose/concat/slice/pad/gather, `stop_gradient` as nothing.
//!
//! Invariants: an op TFLite cannot express (the batch size as a value, the
//! global step, random noise, the optimizer's row updates) is a
//! `tflite-unsupported` diagnostic at its spec span, never a silently
//! different model; every tensor of the model has the node's dtype and shape
//! (the batch dimension -1 in `shape_signature`, or the fixed batch).

use std::collections::HashMap;

use ndarray::ArrayD;
use specc_grammar::Diagnostic;
use specc_tflite::{
    ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, ModelBuilder, TensorType,
};

use crate::interp;
use crate::ir::print::op_text;
use crate::ir::{BinaryOp, DType, Dim, Graph, NodeId, Op, ReduceKind, Shape, UnaryOp};

/// What to export.
pub struct TfliteExport<'a> {
    pub graph: &'a Graph,
    /// Trained values of the graph's variables, by TF name.
    pub params: &'a HashMap<String, ArrayD<f32>>,
    /// The graph inputs the model takes, by name, in signature order.
    pub inputs: &'a [String],
    /// The model's outputs: signature name and node.
    pub outputs: &'a [(String, NodeId)],
    /// A fixed batch size, or `None` for a dynamic batch dimension (-1).
    pub batch: Option<u32>,
}

/// How one needed node becomes operators.
#[derive(Clone, Copy, Debug)]
enum Lowering {
    /// Folded to a constant.
    Constant,
    /// FULLY_CONNECTED of `x` by constant `w` (`tb`: `w` is already
    /// `[units, depth]`), with an optional constant bias and fused RELU.
    FullyConnected {
        x: NodeId,
        w: NodeId,
        tb: bool,
        bias: Option<NodeId>,
        relu: bool,
    },
    Softmax {
        x: NodeId,
        log: bool,
    },
    Mean {
        x: NodeId,
    },
    /// One operator for the node itself.
    Plain,
}

type R<T> = Result<T, Diagnostic>;

/// The TFLite model of `e.outputs` over `e.inputs`.
pub fn export_tflite(e: &TfliteExport<'_>) -> R<specc_tflite::Model> {
    Lower::new(e)?.run()
}

struct Lower<'a> {
    e: &'a TfliteExport<'a>,
    g: &'a Graph,
    /// Whether a node depends on no input, batch size, step or noise and has no batch axis.
    foldable: Vec<bool>,
    lowering: Vec<Option<Lowering>>,
    folded: HashMap<NodeId, interp::Tensor>,
    tensors: HashMap<NodeId, i32>,
    m: ModelBuilder,
}

impl<'a> Lower<'a> {
    fn new(e: &'a TfliteExport<'a>) -> R<Lower<'a>> {
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
            m: ModelBuilder::new(),
        })
    }

    fn unsupported(&self, id: NodeId, what: &str) -> Diagnostic {
        Diagnostic::new(
            "tflite-unsupported",
            self.g.span(id).unwrap_or_default(),
            format!(
                "`{}` cannot be exported to TensorFlow Lite: {what}",
                op_text(self.g, self.g.op(id))
            ),
        )
        .with_help("TensorFlow Lite has no builtin operator for it; `--format object` compiles any spec to native code")
    }

    fn run(mut self) -> R<specc_tflite::Model> {
        self.plan()?;
        self.fold()?;
        let mut inputs = Vec::new();
        for name in self.e.inputs {
            let Some(i) = self.g.inputs.iter().position(|l| &l.name == name) else {
                return Err(Diagnostic::new(
                    "tflite-unsupported",
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
            for r in reads {
                needed[r.index()] = true;
            }
        }
        Ok(())
    }

    /// The operands of an elementwise node as TFLite reads them: `x` for
    /// `broadcast_to(x)`, since TFLite's binary operators broadcast (NumPy
    /// rules) themselves — unless no operand would then carry the batch axis
    /// the result has.
    fn operands(&self, id: NodeId) -> Vec<NodeId> {
        let g = self.g;
        let ins = g.inputs_of(id);
        let stripped: Vec<NodeId> = ins.iter().map(|&x| self.strip_broadcast(x)).collect();
        let batch_kept =
            !g.shape(id).has_batch() || stripped.iter().any(|&x| g.shape(x).has_batch());
        if batch_kept && g.shape(id).rank() <= 5 {
            stripped
        } else {
            ins.to_vec()
        }
    }

    fn strip_broadcast(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::BroadcastTo(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    fn strip_reshape(&self, id: NodeId) -> NodeId {
        match self.g.op(id) {
            Op::Reshape(_) => self.g.inputs_of(id)[0],
            _ => id,
        }
    }

    fn is_reduce(&self, id: NodeId, kind: ReduceKind, axes: &[u8]) -> Option<NodeId> {
        match self.g.op(id) {
            Op::Reduce { kind: k, axes: a } if *k == kind && a == axes => {
                Some(self.g.inputs_of(id)[0])
            }
            _ => None,
        }
    }

    /// The patterns that lower to one richer operator: `(lowering, nodes read)`.
    fn pattern(&self, id: NodeId, uses: &[u32]) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let ins = g.inputs_of(id);
        match g.op(id) {
            Op::Unary(UnaryOp::Relu) => {
                let y = ins[0];
                let is_output = self.e.outputs.iter().any(|o| o.1 == y);
                if uses[y.index()] == 1 && !is_output && !self.foldable[y.index()] {
                    if let Some((Lowering::FullyConnected { x, w, tb, bias, .. }, reads)) =
                        self.fully_connected(y)
                    {
                        let l = Lowering::FullyConnected {
                            x,
                            w,
                            tb,
                            bias,
                            relu: true,
                        };
                        return Some((l, reads));
                    }
                }
                None
            }
            Op::Binary(BinaryOp::Add) | Op::MatMul { .. } => self.fully_connected(id),
            Op::Binary(BinaryOp::Div) => {
                let (num, den) = (ins[0], self.strip_broadcast(ins[1]));
                let rank = g.shape(id).rank();
                if rank > 0 {
                    let last = [(rank - 1) as u8];
                    // softmax: e / reshape(sum(e, last)), e = exp(x - reshape(stop(max(x, last))))
                    let sum = self.strip_reshape(den);
                    if self.is_reduce(sum, ReduceKind::Sum, &last) == Some(num) {
                        if let Some(x) = self.shifted_exp(num, &last) {
                            return Some((Lowering::Softmax { x, log: false }, vec![x]));
                        }
                    }
                }
                // mean: reduce_sum(x, axes) / count
                if let Op::Reduce {
                    kind: ReduceKind::Sum,
                    axes,
                } = g.op(num)
                {
                    let x = g.inputs_of(num)[0];
                    if self.is_count(den, g.shape(x), axes) {
                        return Some((Lowering::Mean { x }, vec![x]));
                    }
                }
                None
            }
            Op::Binary(BinaryOp::Sub) => {
                // log_softmax: z - reshape(log(sum(exp(z), last)))
                let rank = g.shape(id).rank();
                let last = [rank.checked_sub(1)? as u8];
                let z = ins[0];
                let lse = self.strip_reshape(self.strip_broadcast(ins[1]));
                let Op::Unary(UnaryOp::Log) = g.op(lse) else {
                    return None;
                };
                let e = self.is_reduce(g.inputs_of(lse)[0], ReduceKind::Sum, &last)?;
                if g.op(e) != &Op::Unary(UnaryOp::Exp) || g.inputs_of(e)[0] != z {
                    return None;
                }
                let x = self.shifted(z, &last)?;
                Some((Lowering::Softmax { x, log: true }, vec![x]))
            }
            _ => None,
        }
    }

    /// `x` of `x - reshape(stop_gradient(max(x, last)))` (sema's shift).
    fn shifted(&self, z: NodeId, last: &[u8]) -> Option<NodeId> {
        let g = self.g;
        if g.op(z) != &Op::Binary(BinaryOp::Sub) {
            return None;
        }
        let x = g.inputs_of(z)[0];
        let m = self.strip_reshape(self.strip_broadcast(g.inputs_of(z)[1]));
        let m = match g.op(m) {
            Op::StopGradient => g.inputs_of(m)[0],
            _ => m,
        };
        (self.is_reduce(m, ReduceKind::Max, last) == Some(x)).then_some(x)
    }

    fn shifted_exp(&self, e: NodeId, last: &[u8]) -> Option<NodeId> {
        if self.g.op(e) != &Op::Unary(UnaryOp::Exp) {
            return None;
        }
        self.shifted(self.g.inputs_of(e)[0], last)
    }

    /// Whether `n` is sema's element count of `shape` over `axes`.
    fn is_count(&self, n: NodeId, shape: &Shape, axes: &[u8]) -> bool {
        let g = self.g;
        let mut fixed = 1f32;
        let mut batch = false;
        for &a in axes {
            match shape.0[a as usize] {
                Dim::Fixed(k) => fixed *= k as f32,
                Dim::Batch => batch = true,
            }
        }
        match (g.op(n), batch) {
            (Op::Scalar(_), false) => g.op(n).scalar_value() == Some(fixed),
            (Op::BatchSize, true) => fixed == 1.0,
            (Op::Binary(BinaryOp::Mul), true) => {
                let ins = g.inputs_of(n);
                g.op(ins[0]).scalar_value() == Some(fixed) && g.op(ins[1]) == &Op::BatchSize
            }
            _ => false,
        }
    }

    /// `x @ W` or `x @ W + b` with constant `W` (and `b` of one row).
    fn fully_connected(&self, id: NodeId) -> Option<(Lowering, Vec<NodeId>)> {
        let g = self.g;
        let (mm, bias) = match g.op(id) {
            Op::MatMul { .. } => (id, None),
            Op::Binary(BinaryOp::Add) => {
                let ins = g.inputs_of(id);
                let (a, b) = (ins[0], ins[1]);
                let (mm, other) = if matches!(g.op(a), Op::MatMul { .. }) {
                    (a, b)
                } else {
                    (b, a)
                };
                let bias = self.strip_broadcast(other);
                let units = *g.shape(id).0.last()?;
                let ok = matches!(g.op(mm), Op::MatMul { .. })
                    && self.foldable[bias.index()]
                    && g.shape(bias).0 == [units];
                if !ok {
                    return None;
                }
                (mm, Some(bias))
            }
            _ => return None,
        };
        let Op::MatMul { ta: false, tb } = *g.op(mm) else {
            return None;
        };
        let [x, w] = g.inputs_of(mm)[..] else {
            return None;
        };
        if !self.foldable[w.index()] || self.foldable[x.index()] {
            return None;
        }
        let mut reads = vec![x, w];
        reads.extend(bias);
        Some((
            Lowering::FullyConnected {
                x,
                w,
                tb,
                bias,
                relu: false,
            },
            reads,
        ))
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
                    "tflite-missing-parameter",
                    Default::default(),
                    format!("no value for parameter `{}`", leaf.name),
                ));
            };
            let want: Vec<usize> = leaf.shape.concrete(1).iter().map(|&d| d as usize).collect();
            if value.shape() != want.as_slice() {
                return Err(Diagnostic::new(
                    "tflite-missing-parameter",
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

    fn dims(&self, s: &Shape) -> Vec<i32> {
        s.0.iter()
            .map(|d| match d {
                Dim::Batch => self.e.batch.map_or(-1, |b| b as i32),
                Dim::Fixed(n) => *n as i32,
            })
            .collect()
    }

    fn name(&self, id: NodeId) -> String {
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
    fn tensor(&mut self, id: NodeId) -> R<i32> {
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
                "tflite-unsupported",
                self.g.span(id).unwrap_or_default(),
                format!(
                    "the output needs input `{}`, which is not among the exported inputs",
                    self.g.inputs[*i as usize].name
                ),
            )),
            _ => Err(self.unsupported(id, "no operator computes it")),
        }
    }

    fn out(&mut self, id: NodeId) -> i32 {
        let name = self.name(id);
        let dims = self.dims(self.g.shape(id));
        let t = self.m.tensor(&name, tensor_type(self.g.dtype(id)), &dims);
        self.tensors.insert(id, t);
        t
    }

    fn axes_const(&mut self, id: NodeId, axes: &[i32]) -> i32 {
        let name = format!("{}/axes", self.name(id));
        self.m.constant_i32(&name, &[axes.len() as i32], axes)
    }

    fn emit(&mut self, id: NodeId, l: Lowering) -> R<()> {
        let g = self.g;
        match l {
            Lowering::Constant => {}
            Lowering::FullyConnected {
                x,
                w,
                tb,
                bias,
                relu,
            } => {
                let xt = self.tensor(x)?;
                let wv = &self.folded[&w];
                let (k, n) = if tb {
                    (wv.dims[1], wv.dims[0])
                } else {
                    (wv.dims[0], wv.dims[1])
                };
                // TFLite's weights are [units, depth].
                let mut data = vec![0f32; k * n];
                for u in 0..n {
                    for d in 0..k {
                        data[u * k + d] = if tb {
                            wv.data[u * k + d]
                        } else {
                            wv.data[d * n + u]
                        } as f32;
                    }
                }
                let wname = if tb {
                    self.name(w)
                } else {
                    format!("{}/transpose", self.name(w))
                };
                let wt = self.m.constant_f32(&wname, &[n as i32, k as i32], &data);
                let bt = match bias {
                    Some(b) => self.tensor(b)?,
                    None => -1,
                };
                let y = self.out(id);
                self.m.operator(
                    B::FullyConnected,
                    &[xt, wt, bt],
                    &[y],
                    BuiltinOptions::FullyConnected {
                        fused_activation_function: if relu { Act::Relu } else { Act::None },
                        keep_num_dims: false,
                        asymmetric_quantize_inputs: false,
                    },
                );
            }
            Lowering::Softmax { x, log } => {
                let xt = self.tensor(x)?;
                let y = self.out(id);
                if log {
                    self.m
                        .operator(B::LogSoftmax, &[xt], &[y], BuiltinOptions::None);
                } else {
                    self.m.operator(
                        B::Softmax,
                        &[xt],
                        &[y],
                        BuiltinOptions::Softmax { beta: 1.0 },
                    );
                }
            }
            Lowering::Mean { x } => {
                let Op::Reduce { axes, .. } = g.op(g.inputs_of(id)[0]) else {
                    return Err(self.unsupported(id, "not a mean"));
                };
                let axes: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
                let xt = self.tensor(x)?;
                let at = self.axes_const(id, &axes);
                let y = self.out(id);
                self.m.operator(
                    B::Mean,
                    &[xt, at],
                    &[y],
                    BuiltinOptions::Reducer { keep_dims: false },
                );
            }
            Lowering::Plain => self.plain(id)?,
        }
        Ok(())
    }

    fn plain(&mut self, id: NodeId) -> R<()> {
        let g = self.g;
        let ins = g.inputs_of(id).to_vec();
        let none = Act::None;
        match g.op(id).clone() {
            Op::StopGradient => {
                let t = self.tensor(ins[0])?;
                self.tensors.insert(id, t);
            }
            Op::Unary(u) => {
                let x = self.tensor(ins[0])?;
                let op = match u {
                    UnaryOp::Neg => B::Neg,
                    UnaryOp::Exp => B::Exp,
                    UnaryOp::Log => B::Log,
                    UnaryOp::Sqrt => B::Sqrt,
                    UnaryOp::Square => B::Square,
                    UnaryOp::Abs => B::Abs,
                    UnaryOp::Sign => B::Sign,
                    UnaryOp::Relu => B::Relu,
                    UnaryOp::Sigmoid => B::Logistic,
                    UnaryOp::Tanh => B::Tanh,
                    UnaryOp::Floor => B::Floor,
                    UnaryOp::Ceil => B::Ceil,
                    UnaryOp::Sin => B::Sin,
                    UnaryOp::Cos => B::Cos,
                    UnaryOp::Recip => {
                        let one = self.m.constant_f32(&format!("{}/one", self.name(id)), &[], &[1.0]);
                        let y = self.out(id);
                        self.m.operator(
                            B::Div,
                            &[one, x],
                            &[y],
                            BuiltinOptions::Div {
                                fused_activation_function: none,
                            },
                        );
                        return Ok(());
                    }
                    UnaryOp::Log1p | UnaryOp::Softplus => {
                        return Err(self.unsupported(
                            id,
                            "TFLite has no builtin for it (writing it as log(1 + ...) would lose its precision)",
                        ))
                    }
                };
                let y = self.out(id);
                let options = if op == B::Exp {
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::EXP)
                } else {
                    BuiltinOptions::None
                };
                self.m.operator(op, &[x], &[y], options);
            }
            Op::Binary(b) => {
                let ops = self.operands(id);
                let a = self.tensor(ops[0])?;
                let c = self.tensor(ops[1])?;
                let (op, options) = match b {
                    BinaryOp::Add => (
                        B::Add,
                        BuiltinOptions::Add {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Sub => (
                        B::Sub,
                        BuiltinOptions::Sub {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Mul => (
                        B::Mul,
                        BuiltinOptions::Mul {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Div => (
                        B::Div,
                        BuiltinOptions::Div {
                            fused_activation_function: none,
                        },
                    ),
                    BinaryOp::Max => (
                        B::Maximum,
                        BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
                    ),
                    BinaryOp::Min => (
                        B::Minimum,
                        BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
                    ),
                    BinaryOp::Pow => (B::Pow, BuiltinOptions::None),
                    BinaryOp::Gt => (B::Greater, BuiltinOptions::None),
                    BinaryOp::Ge => (B::GreaterEqual, BuiltinOptions::None),
                    BinaryOp::Lt => (B::Less, BuiltinOptions::None),
                    BinaryOp::Le => (B::LessEqual, BuiltinOptions::None),
                    BinaryOp::Eq => (B::Equal, BuiltinOptions::None),
                    BinaryOp::Ne => (B::NotEqual, BuiltinOptions::None),
                };
                if b.is_comparison() {
                    // A BOOL result, then 1.0 / 0.0 as the IR has it.
                    let dims = self.dims(g.shape(id));
                    let name = format!("{}/bool", self.name(id));
                    let cond = self.m.tensor(&name, TensorType::Bool, &dims);
                    self.m.operator(op, &[a, c], &[cond], options);
                    let y = self.out(id);
                    self.cast(cond, TensorType::Bool, y, TensorType::Float32);
                } else {
                    let y = self.out(id);
                    self.m.operator(op, &[a, c], &[y], options);
                }
            }
            Op::Select => {
                let ops = self.operands(id);
                let c = self.tensor(ops[0])?;
                let a = self.tensor(ops[1])?;
                let b = self.tensor(ops[2])?;
                let zero = self
                    .m
                    .constant_f32(&format!("{}/zero", self.name(id)), &[], &[0.0]);
                let shape = self
                    .m
                    .tensor_info(c)
                    .shape_signature
                    .clone()
                    .unwrap_or_else(|| self.m.tensor_info(c).shape.clone());
                let cond =
                    self.m
                        .tensor(&format!("{}/cond", self.name(id)), TensorType::Bool, &shape);
                self.m
                    .operator(B::NotEqual, &[c, zero], &[cond], BuiltinOptions::None);
                let y = self.out(id);
                self.m.operator(
                    B::SelectV2,
                    &[cond, a, b],
                    &[y],
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::SELECT_V2),
                );
            }
            Op::Cast(to) => {
                let x = self.tensor(ins[0])?;
                let from = tensor_type(g.dtype(ins[0]));
                let y = self.out(id);
                self.cast(x, from, y, tensor_type(to));
            }
            Op::BroadcastTo(to) => {
                let x = ins[0];
                let xt = self.tensor(x)?;
                let from = g.shape(x).clone();
                let pad = to.rank() - from.rank();
                let batch_kept =
                    to.0.iter().enumerate().all(|(k, d)| {
                        *d != Dim::Batch || (k >= pad && from.0[k - pad] == Dim::Batch)
                    });
                if self.e.batch.is_some() || !to.has_batch() {
                    let dims = self.dims(&to);
                    let st = self.m.constant_i32(
                        &format!("{}/shape", self.name(id)),
                        &[dims.len() as i32],
                        &dims,
                    );
                    let y = self.out(id);
                    self.m
                        .operator(B::BroadcastTo, &[xt, st], &[y], BuiltinOptions::None);
                } else if batch_kept {
                    // x + zeros of the target shape with the batch axis 1:
                    // ADD broadcasts the dynamic batch itself.
                    let dims: Vec<i32> =
                        to.0.iter()
                            .map(|d| match d {
                                Dim::Batch => 1,
                                Dim::Fixed(n) => *n as i32,
                            })
                            .collect();
                    let n: i32 = dims.iter().product();
                    let zeros = self.m.constant_f32(
                        &format!("{}/zeros", self.name(id)),
                        &dims,
                        &vec![0.0; n as usize],
                    );
                    let y = self.out(id);
                    self.m.operator(
                        B::Add,
                        &[xt, zeros],
                        &[y],
                        BuiltinOptions::Add {
                            fused_activation_function: none,
                        },
                    );
                } else {
                    return Err(self.unsupported(id, "it broadcasts to the batch size, which a TFLite model with a dynamic batch cannot hold as a constant (export with a fixed batch)"));
                }
            }
            Op::Reduce { kind, axes } => {
                let x = self.tensor(ins[0])?;
                let axes: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
                let at = self.axes_const(id, &axes);
                let y = self.out(id);
                let op = match kind {
                    ReduceKind::Sum => B::Sum,
                    ReduceKind::Max => B::ReduceMax,
                };
                self.m.operator(
                    op,
                    &[x, at],
                    &[y],
                    BuiltinOptions::Reducer { keep_dims: false },
                );
            }
            Op::ArgMax { axis } => {
                let x = self.tensor(ins[0])?;
                let at =
                    self.m
                        .constant_i32(&format!("{}/axis", self.name(id)), &[1], &[axis as i32]);
                let y = self.out(id);
                self.m.operator(
                    B::ArgMax,
                    &[x, at],
                    &[y],
                    BuiltinOptions::ArgMax {
                        output_type: TensorType::Int32,
                    },
                );
            }
            Op::MatMul { ta, tb } => {
                let a = self.tensor(ins[0])?;
                let b = self.tensor(ins[1])?;
                let y = self.out(id);
                self.m.operator(
                    B::BatchMatmul,
                    &[a, b],
                    &[y],
                    BuiltinOptions::BatchMatMul {
                        adj_x: ta,
                        adj_y: tb,
                    },
                );
            }
            Op::Reshape(to) => {
                let x = self.tensor(ins[0])?;
                let dims = self.dims(&to);
                let st = self.m.constant_i32(
                    &format!("{}/shape", self.name(id)),
                    &[dims.len() as i32],
                    &dims,
                );
                let y = self.out(id);
                self.m.operator(
                    B::Reshape,
                    &[x, st],
                    &[y],
                    BuiltinOptions::Reshape { new_shape: dims },
                );
            }
            Op::Transpose(perm) => {
                let x = self.tensor(ins[0])?;
                let perm: Vec<i32> = perm.iter().map(|&p| p as i32).collect();
                let pt = self.m.constant_i32(
                    &format!("{}/perm", self.name(id)),
                    &[perm.len() as i32],
                    &perm,
                );
                let y = self.out(id);
                self.m.operator(
                    B::Transpose,
                    &[x, pt],
                    &[y],
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::TRANSPOSE),
                );
            }
            Op::Concat { axis } => {
                let parts = ins.iter().map(|&p| self.tensor(p)).collect::<R<Vec<_>>>()?;
                let y = self.out(id);
                self.m.operator(
                    B::Concatenation,
                    &parts,
                    &[y],
                    BuiltinOptions::Concatenation {
                        axis: axis as i32,
                        fused_activation_function: none,
                    },
                );
            }
            Op::Slice { begin, shape } => {
                let x = self.tensor(ins[0])?;
                let begin: Vec<i32> = begin.iter().map(|&b| b as i32).collect();
                let size: Vec<i32> = shape
                    .0
                    .iter()
                    .map(|d| match d {
                        Dim::Batch => -1,
                        Dim::Fixed(n) => *n as i32,
                    })
                    .collect();
                let name = self.name(id);
                let bt =
                    self.m
                        .constant_i32(&format!("{name}/begin"), &[begin.len() as i32], &begin);
                let st = self
                    .m
                    .constant_i32(&format!("{name}/size"), &[size.len() as i32], &size);
                let y = self.out(id);
                self.m.operator(
                    B::Slice,
                    &[x, bt, st],
                    &[y],
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::SLICE),
                );
            }
            Op::Pad { before, shape } => {
                let x = self.tensor(ins[0])?;
                let from = g.shape(ins[0]).clone();
                let mut pads = Vec::new();
                for (k, &b) in before.iter().enumerate() {
                    let after = match (shape.0[k], from.0[k]) {
                        (Dim::Fixed(o), Dim::Fixed(i)) => o as i32 - i as i32 - b as i32,
                        _ => 0,
                    };
                    pads.extend([b as i32, after]);
                }
                let pt = self.m.constant_i32(
                    &format!("{}/paddings", self.name(id)),
                    &[before.len() as i32, 2],
                    &pads,
                );
                let y = self.out(id);
                self.m.operator(
                    B::Pad,
                    &[x, pt],
                    &[y],
                    BuiltinOptions::Empty(specc_tflite::schema::options_type::PAD),
                );
            }
            Op::Gather => {
                let p = self.tensor(ins[0])?;
                let i = self.tensor(ins[1])?;
                // A feature column's padding id -1 reads row 0 (TFLite's
                // GATHER refuses negative ids); its weight 0 zeroes the row
                // where the spec combines it, as specc's zeros do.
                let i = if self.g.dtype(ins[1]) == DType::I32 {
                    let name = self.name(id);
                    let zero = self.m.constant_i32(&format!("{name}/zero"), &[], &[0]);
                    let dims = self.dims(self.g.shape(ins[1]));
                    let clamped = self
                        .m
                        .tensor(&format!("{name}/ids"), TensorType::Int32, &dims);
                    self.m.operator(
                        B::Maximum,
                        &[i, zero],
                        &[clamped],
                        BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
                    );
                    clamped
                } else {
                    i
                };
                let y = self.out(id);
                self.m.operator(
                    B::Gather,
                    &[p, i],
                    &[y],
                    BuiltinOptions::Gather {
                        axis: 0,
                        batch_dims: 0,
                    },
                );
            }
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
            Op::Iota { axis, .. } => {
                // The index along a non-batch axis is a constant; with the
                // batch axis as 1 it broadcasts in its consumer (NumPy rules).
                let shape = self.g.shape(id).clone();
                let axis = axis as usize;
                if !matches!(shape.0.get(axis), Some(Dim::Fixed(_))) {
                    return Err(self.unsupported(id, "an index over the batch axis"));
                }
                let dims: Vec<usize> = shape
                    .0
                    .iter()
                    .map(|d| match d {
                        Dim::Batch => 1,
                        Dim::Fixed(k) => *k as usize,
                    })
                    .collect();
                let inner: usize = dims[axis + 1..].iter().product();
                let len = dims[axis];
                let n: usize = dims.iter().product();
                let dims32: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
                let name = self.name(id);
                let t = match self.g.dtype(id) {
                    DType::F32 => {
                        let v: Vec<f32> = (0..n).map(|i| ((i / inner) % len) as f32).collect();
                        self.m.constant_f32(&name, &dims32, &v)
                    }
                    DType::I32 => {
                        let v: Vec<i32> = (0..n).map(|i| ((i / inner) % len) as i32).collect();
                        self.m.constant_i32(&name, &dims32, &v)
                    }
                };
                self.tensors.insert(id, t);
            }
            Op::UniformHash { .. } => {
                return Err(self.unsupported(id, "random draws are a training-time op"))
            }
            Op::Training => {
                return Err(self.unsupported(
                    id,
                    "the training flag is resolved before export (an internal error)",
                ))
            }
            Op::Patches { .. } | Op::PatchesGrad(_) => {
                return Err(self.unsupported(
                    id,
                    "convolutions and pooling are not exported to TFLite yet",
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

    fn cast(&mut self, x: i32, from: TensorType, y: i32, to: TensorType) {
        self.m.operator(
            B::Cast,
            &[x],
            &[y],
            BuiltinOptions::Cast {
                in_data_type: from,
                out_data_type: to,
            },
        );
    }
}

fn tensor_type(d: DType) -> TensorType {
    match d {
        DType::F32 => TensorType::Float32,
        DType::I32 => TensorType::Int32,
    }
}
