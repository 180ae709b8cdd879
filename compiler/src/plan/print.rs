//! The textual form of a plan (`specc compile --emit plan`).
//!
//! Owns: a deterministic rendering of buffers and kernels. Invariant: the
//! same plan always prints the same text (it is snapshot-tested).

use std::fmt::Write;

use super::{Kernel, Loc, Plan, RowOp, Source, View};
use crate::ir::print::op_text;
use crate::ir::{Graph, ReduceKind};

fn source_text(s: &Source) -> String {
    match s {
        Source::Load(v, _) => format!("load {v}"),
        Source::Scalar(n) => format!("scalar {n}"),
        Source::Iota { axis } => format!("iota axis={axis}"),
        Source::Const(c) => format!("const {c:?}"),
    }
}

pub fn print_plan(g: &Graph, p: &Plan) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "plan {}: {} thread{}{}",
        p.name,
        p.threads,
        if p.threads == 1 { "" } else { "s" },
        match &p.twin {
            Some(t) => format!(
                " (when they stall: {}, {} bytes of scratch)",
                t.name, t.scratch_bytes
            ),
            None => String::new(),
        }
    )
    .ok();
    writeln!(
        out,
        "  scratch: {} bytes at batch {}",
        p.scratch_bytes, p.max_batch
    )
    .ok();
    out.push_str("  buffers:\n");
    for (i, b) in p.buffers.iter().enumerate() {
        let loc = match &b.loc {
            Loc::Input(k) => format!("input {}", g.inputs[*k as usize].name),
            Loc::Arena { arena, offset } => format!("arena {arena} + {offset}"),
            Loc::Output(k) => format!("output {}", p.outputs[*k as usize].name),
            Loc::Scratch { offset } => format!("scratch + {offset}"),
        };
        writeln!(
            out,
            "    b{i} = {} : {}{} @ {loc}",
            b.node, b.dtype, b.shape
        )
        .ok();
    }
    out.push_str("  kernels:\n");
    for (i, k) in p.kernels.iter().enumerate() {
        if p.syncs.before.get(i).copied().unwrap_or(false) {
            out.push_str("    barrier\n");
        }
        if p.threads > 1 {
            writeln!(
                out,
                "    k{i} {}",
                if p.modes[i] == super::Mode::Split {
                    "split:"
                } else {
                    "thread 0:"
                }
            )
            .ok();
        }
        match k {
            Kernel::Gemm {
                node,
                a,
                b,
                c,
                ta,
                tb,
                m,
                k,
                n,
                groups,
                epilogue,
            } => {
                let batch = groups.map_or(String::new(), |g| {
                    format!(" groups={} strides=[{}, {}, {}]", g.count, g.a, g.b, g.c)
                });
                writeln!(
                    out,
                    "    k{i}: gemm {node} m={m} k={k} n={n}{}{}{batch}: {c} = {a} @ {b}{}",
                    if *ta { " ta" } else { "" },
                    if *tb { " tb" } else { "" },
                    epilogue.as_ref().map_or(String::new(), epilogue_text)
                )
                .ok();
            }
            Kernel::ArgMax {
                node,
                src,
                axis,
                dst,
                ..
            } => {
                writeln!(
                    out,
                    "    k{i}: argmax {node} axis={axis}: {dst} = argmax {src}"
                )
                .ok();
            }
            Kernel::Window(w) => {
                let name = w.op.name();
                let tile = w.tile.map(|t| format!(" {}", t.name())).unwrap_or_default();
                writeln!(
                    out,
                    "    k{i}: {name}{tile} {} images={}: {} <- {}",
                    w.node, w.images, w.dst, w.src
                )
                .ok();
            }
            Kernel::Winograd(w) => {
                let opt = |name: &str, v: &Option<View>| {
                    v.as_ref()
                        .map(|v| format!(" {name}={v}"))
                        .unwrap_or_default()
                };
                writeln!(
                    out,
                    "    k{i}: winograd {} {} images={} block={} C={} O={}: x={}{}{}{}{}{}{}",
                    w.node,
                    w.tile.name(),
                    w.images,
                    w.block,
                    w.window.channels,
                    w.out_channels,
                    w.x,
                    opt("u", &w.u),
                    opt("y", &w.y),
                    opt("v", &w.v),
                    opt("dy", &w.dy),
                    opt("dx", &w.dx),
                    opt("du", &w.du),
                )
                .ok();
            }
            Kernel::Recurrence(r) => {
                let name = if r.grad {
                    "recurrence_grad"
                } else {
                    "recurrence"
                };
                let ins: Vec<String> = r.inputs.iter().map(|v| v.to_string()).collect();
                writeln!(
                    out,
                    "    k{i}: {name} {} rows={} steps={}: {} <- {}",
                    r.node,
                    r.rows,
                    r.steps,
                    r.dst,
                    ins.join(", ")
                )
                .ok();
            }
            Kernel::Rows(r) => {
                let name = match r.op {
                    RowOp::Gather => "gather".to_string(),
                    RowOp::ScatterAdd => "scatter_add".to_string(),
                    RowOp::FirstOccurrence => "first_occurrence".to_string(),
                    RowOp::FirstOccurrenceHashed { capacity } => {
                        format!("first_occurrence hashed={capacity}")
                    }
                    RowOp::SumDuplicates => "sum_duplicates".to_string(),
                    RowOp::ScatterRows => "scatter_rows".to_string(),
                };
                let opt =
                    |v: &Option<View>| v.as_ref().map(|v| format!(" {v}")).unwrap_or_default();
                writeln!(
                    out,
                    "    k{i}: {name} {} n={} rows={} row_len={}: {} <- ids {}{}{}",
                    r.node,
                    r.n,
                    r.rows,
                    r.row_len,
                    r.dst,
                    r.ids,
                    opt(&r.src),
                    r.first
                        .as_ref()
                        .map(|v| format!(" first {v}"))
                        .unwrap_or_default(),
                )
                .ok();
            }
            Kernel::Loop(l) => {
                let what = if l.reductions.is_empty() {
                    "loop".to_string()
                } else {
                    format!("reduce axes={:?}", l.reduce_axes)
                };
                writeln!(out, "    k{i}: {what} over {}", l.domain).ok();
                for (n, s) in &l.sources {
                    writeln!(out, "      in  {n} = {}", source_text(s)).ok();
                }
                for n in &l.body {
                    writeln!(out, "      {n} = {}", body_text(g, *n)).ok();
                }
                for r in &l.reductions {
                    let k = match r.kind {
                        ReduceKind::Sum => "sum",
                        ReduceKind::Max => "max",
                    };
                    let dest = r
                        .dest
                        .as_ref()
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "ssa".into());
                    writeln!(out, "      {} = {k} {} -> {dest}", r.node, r.input).ok();
                }
                for (n, v) in &l.stores {
                    writeln!(out, "      store {n} -> {v}").ok();
                }
            }
        }
    }
    if p.syncs.before_scalars {
        out.push_str("  barrier\n");
    }
    for (k, n) in &p.scalar_outputs {
        writeln!(out, "  out {} = {n}", p.outputs[*k as usize].name).ok();
    }
    for (a, o, n) in &p.scalar_updates {
        writeln!(out, "  arena {a} + {o} <- {n}").ok();
    }
    if p.increments_global_step {
        out.push_str("  global_step += 1\n");
    }
    out
}

fn body_text(g: &Graph, n: crate::ir::NodeId) -> String {
    let node = g.node(n);
    let args: Vec<String> = node.inputs.iter().map(|i| i.to_string()).collect();
    format!("{} {}", op_text(g, &node.op), args.join(", "))
}

/// A GEMM epilogue in dumps: ` epilogue -> %9: bias b3[0,1] relu`.
fn epilogue_text(e: &super::kernel::GemmEpilogue) -> String {
    let mut s = format!(" epilogue -> {}:", e.node);
    if let Some(b) = &e.bias {
        s += &format!(" bias {b}");
    }
    if e.relu {
        s += " relu";
    }
    s
}
