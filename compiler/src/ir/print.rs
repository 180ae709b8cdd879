//! The textual form of the IR (`specc compile --emit ir|grad|step`).
//!
//! Owns: a deterministic, line-per-node rendering of a graph restricted to the
//! nodes some functions need. Invariant: the same graph and functions always
//! print the same text (it is snapshot-tested).

use std::fmt::Write;

use super::{BinaryOp, Function, Graph, NodeId, Op, ReduceKind, UnaryOp, Window};

pub fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Exp => "exp",
        UnaryOp::Log => "log",
        UnaryOp::Log1p => "log1p",
        UnaryOp::Sqrt => "sqrt",
        UnaryOp::Square => "square",
        UnaryOp::Abs => "abs",
        UnaryOp::Sign => "sign",
        UnaryOp::Relu => "relu",
        UnaryOp::Sigmoid => "sigmoid",
        UnaryOp::Tanh => "tanh",
        UnaryOp::Softplus => "softplus",
        UnaryOp::Recip => "recip",
        UnaryOp::Floor => "floor",
        UnaryOp::Ceil => "ceil",
        UnaryOp::Sin => "sin",
        UnaryOp::Cos => "cos",
    }
}

pub fn binary_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Div => "div",
        BinaryOp::Max => "maximum",
        BinaryOp::Min => "minimum",
        BinaryOp::Pow => "pow",
        BinaryOp::Gt => "greater",
        BinaryOp::Ge => "greater_equal",
        BinaryOp::Lt => "less",
        BinaryOp::Le => "less_equal",
        BinaryOp::Eq => "equal",
        BinaryOp::Ne => "not_equal",
    }
}

fn list<T: std::fmt::Display>(xs: &[T]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The op's name and attributes, e.g. `reduce_sum axes=[1]`.
pub fn op_text(g: &Graph, op: &Op) -> String {
    match op {
        Op::Input(i) => format!("input {}", g.inputs[*i as usize].name),
        Op::Var(i) => format!("var {}", g.vars[*i as usize].name),
        Op::Scalar(bits) => format!("const {:?}", f32::from_bits(*bits)),
        Op::Tensor(i) => {
            let c = &g.consts[*i as usize];
            let shown: Vec<String> = c.values.iter().take(6).map(|v| format!("{v:?}")).collect();
            let more = if c.values.len() > 6 { ", ..." } else { "" };
            format!("tensor #{i} [{}{more}]", shown.join(", "))
        }
        Op::Iota { axis, .. } => format!("iota axis={axis}"),
        Op::BatchSize => "batch_size".to_string(),
        Op::GlobalStep => "global_step".to_string(),
        Op::FirstRow => "first_row".to_string(),
        Op::Training => "training".to_string(),
        Op::UniformHash { seed } => format!("uniform_hash seed={seed}"),
        Op::Unary(u) => unary_name(*u).to_string(),
        Op::Binary(b) => binary_name(*b).to_string(),
        Op::Select => "select".to_string(),
        Op::Cast(t) => format!("cast.{t}"),
        Op::BroadcastTo(_) => "broadcast_to".to_string(),
        Op::Reduce { kind, axes } => {
            let k = match kind {
                ReduceKind::Sum => "reduce_sum",
                ReduceKind::Max => "reduce_max",
            };
            format!("{k} axes={}", list(axes))
        }
        Op::ArgMax { axis } => format!("argmax axis={axis}"),
        Op::MatMul { ta, tb } => {
            let mut s = "matmul".to_string();
            if *ta {
                s.push_str(" transpose_a");
            }
            if *tb {
                s.push_str(" transpose_b");
            }
            s
        }
        Op::Reshape(_) => "reshape".to_string(),
        Op::Transpose(p) => format!("transpose perm={}", list(p)),
        Op::Concat { axis } => format!("concat axis={axis}"),
        Op::Slice { begin, .. } => format!("slice begin={}", list(begin)),
        Op::Pad { before, .. } => format!("pad before={}", list(before)),
        Op::StopGradient => "stop_gradient".to_string(),
        Op::NormalNoise { seed } => format!("normal_noise seed={seed}"),
        Op::Gather => "gather".to_string(),
        Op::ScatterAdd => "scatter_add".to_string(),
        Op::FirstOccurrence { rows } => format!("first_occurrence rows={rows}"),
        Op::SumDuplicates => "sum_duplicates".to_string(),
        Op::ScatterRows => "scatter_rows".to_string(),
        Op::Patches { window, pad } => {
            let mut s = format!("patches {}", window_text(window));
            let pad = f32::from_bits(*pad);
            if pad != 0.0 {
                write!(s, " pad={pad:?}").ok();
            }
            s
        }
        Op::PatchesGrad(window) => format!("patches_grad {}", window_text(window)),
        Op::WinogradInput(window, tile) => {
            format!("winograd_input {} {}", tile.name(), window_text(window))
        }
        Op::WinogradInputGrad(window, tile) => {
            format!(
                "winograd_input_grad {} {}",
                tile.name(),
                window_text(window)
            )
        }
        Op::WinogradOutput(window, tile) => {
            format!("winograd_output {} {}", tile.name(), window_text(window))
        }
        Op::WinogradOutputGrad(window, tile) => {
            format!(
                "winograd_output_grad {} {}",
                tile.name(),
                window_text(window)
            )
        }
        Op::Recurrence { cell, operands } => {
            format!(
                "recurrence {}",
                super::recurrence::cell_text(cell, operands)
            )
        }
        Op::RecurrenceGrad { cell, operands } => {
            format!(
                "recurrence_grad {}",
                super::recurrence::cell_text(cell, operands)
            )
        }
        Op::BatchMatMul { ta, tb, groups } => {
            let mut s = "batch_matmul".to_string();
            if *groups != 1 {
                s.push_str(&format!(" groups={groups}"));
            }
            if *ta {
                s.push_str(" transpose_a");
            }
            if *tb {
                s.push_str(" transpose_b");
            }
            s
        }
    }
}

/// A window's attributes, e.g. `kernel=[3, 3] strides=[1, 1] pad=[1, 1] in=[8, 8] out=[8, 8]`
/// (dilations only when not 1).
fn window_text(w: &Window) -> String {
    let mut s = format!(
        "kernel={} strides={} pad={}",
        list(&w.kernel),
        list(&w.strides),
        list(&w.pad_before)
    );
    if w.dilations != [1, 1] {
        write!(s, " dilations={}", list(&w.dilations)).ok();
    }
    write!(s, " in={} out={}", list(&w.input), list(&w.output)).ok();
    s
}

/// One node as `%3 = add %1, %2 : f32[B, 128]`.
pub fn node_line(g: &Graph, id: NodeId) -> String {
    let n = g.node(id);
    let mut s = format!("{id} = {}", op_text(g, &n.op));
    for (i, inp) in n.inputs.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        write!(s, "{inp}").ok();
    }
    write!(s, " : {}{}", n.dtype, n.shape).ok();
    s
}

/// The graph restricted to what `functions` need, then each function's roots.
pub fn print_functions(g: &Graph, functions: &[&Function]) -> String {
    let mut out = String::new();
    let roots: Vec<NodeId> = functions.iter().flat_map(|f| f.roots()).collect();
    let live = g.reachable(&roots);
    if !g.inputs.is_empty() {
        out.push_str("inputs:\n");
        for leaf in &g.inputs {
            writeln!(out, "  {}: {}{}", leaf.name, leaf.dtype, leaf.shape).ok();
        }
    }
    if !g.vars.is_empty() {
        out.push_str("vars:\n");
        for leaf in &g.vars {
            writeln!(out, "  {}: {}{}", leaf.name, leaf.dtype, leaf.shape).ok();
        }
    }
    out.push_str("nodes:\n");
    for (id, _) in g.nodes() {
        if live[id.index()] {
            writeln!(out, "  {}", node_line(g, id)).ok();
        }
    }
    for f in functions {
        writeln!(out, "fn {}:", f.name).ok();
        for o in &f.outputs {
            writeln!(out, "  out {} = {}", o.name, o.node).ok();
        }
        for (v, n) in &f.updates {
            writeln!(out, "  {} <- {}", g.vars[*v as usize].name, n).ok();
        }
        if f.increments_global_step {
            out.push_str("  global_step <- global_step + 1\n");
        }
    }
    out
}
