//! The textual form of the AST (`specc compile --emit ast`).
//!
//! Owns: a compact, deterministic s-expression rendering of a parsed spec,
//! one item per line, with the byte span of each item. Invariant: it is a
//! pure function of the AST (snapshot-tested).

use std::fmt::Write;

use crate::ast::{
    Arg, Block, Call, Expr, ExprKind, IndexItem, Item, Operation, OptEntry, OptSection,
    OptimizerDef, ParamDecl, SpecFile, Stmt, TupleBinding, WarmValue,
};

pub fn print_spec(file: &SpecFile) -> String {
    let mut out = String::new();
    for item in &file.items {
        let (text, span) = match item {
            Item::Model(id) => (format!("(model {})", id.name), id.span),
            Item::Data(c) => (format!("(data {})", call(c)), c.span),
            Item::EvalData(c) => (format!("(eval_data {})", call(c)), c.span),
            Item::Label(l) => {
                let cols = l
                    .columns
                    .as_ref()
                    .map(|c| {
                        format!(
                            " (from {})",
                            c.iter().map(expr).collect::<Vec<_>>().join(" ")
                        )
                    })
                    .unwrap_or_default();
                let vocab = l
                    .vocabulary
                    .as_ref()
                    .map(|v| format!(" {}", expr(v)))
                    .unwrap_or_default();
                (
                    format!("(label {} {}{vocab}{cols})", l.name.name, l.dtype.name),
                    l.span,
                )
            }
            Item::Features(b) => {
                let e: Vec<String> = b
                    .entries
                    .iter()
                    .map(|x| format!("\n  ({} {})", x.name.name, expr(&x.value)))
                    .collect();
                (format!("(features{})", e.concat()), b.span)
            }
            Item::Params(b) => (params(b, "\n  "), b.span),
            Item::Let(b) => (format!("(let {} {})", b.name.name, expr(&b.value)), b.span),
            Item::Statement(c) => (format!("(statement {})", call(c)), c.span),
            Item::Optimizer(c) => (format!("(optimizer {})", call(c)), c.span),
            Item::Clip(c) => (format!("(clip {})", call(c)), c.span),
            Item::Ema(e) => {
                let opts: String = e.options.iter().map(|o| format!(" {}", arg(o))).collect();
                (format!("(ema {}{opts})", expr(&e.decay)), e.span)
            }
            Item::Train(b)
            | Item::Checkpoint(b)
            | Item::Summaries(b)
            | Item::Logging(b)
            | Item::Evaluate(b) => {
                let kw = item.settings_block().map_or("settings", |(k, _)| k);
                let e: Vec<String> = b.entries.iter().map(arg).collect();
                (format!("({kw} {})", e.join(" ")), b.span)
            }
            Item::InitFromCheckpoint(i) => {
                let e: Vec<String> = i
                    .assignment_map
                    .iter()
                    .map(|(a, b)| format!(" ({:?} {:?})", a.value, b.value))
                    .collect();
                (
                    format!("(init_from_checkpoint {:?}{})", i.path.value, e.concat()),
                    i.span,
                )
            }
            Item::WarmStart(w) => {
                let e: Vec<String> = w
                    .args
                    .iter()
                    .map(|a| match &a.value {
                        WarmValue::Expr(v) => format!(" ({} {})", a.name.name, expr(v)),
                        WarmValue::Map { entries, .. } => {
                            let m: Vec<String> = entries
                                .iter()
                                .map(|(k, v)| format!(" ({:?} {})", k.value, expr(v)))
                                .collect();
                            format!(" ({} {{{}}})", a.name.name, m.concat())
                        }
                    })
                    .collect();
                (
                    format!("(warm_start {:?}{})", w.path.value, e.concat()),
                    w.span,
                )
            }
            Item::Metrics(b) => {
                let e: Vec<String> = b
                    .entries
                    .iter()
                    .map(|m| match &m.name {
                        Some(n) => format!("\n  ({} {})", n.name, expr(&m.value)),
                        None => format!("\n  {}", expr(&m.value)),
                    })
                    .collect();
                (format!("(metrics{})", e.concat()), b.span)
            }
            Item::BlockDef(d) => {
                let ps: Vec<String> = d
                    .params
                    .iter()
                    .map(|p| match &p.default {
                        Some(v) => format!("{}={}", p.name.name, expr(v)),
                        None => p.name.name.clone(),
                    })
                    .collect();
                let scope = d
                    .scope
                    .as_ref()
                    .map(|s| format!(" (scope {:?})", s.value))
                    .unwrap_or_default();
                (
                    format!(
                        "(block {} ({}){scope}{})",
                        d.name.name,
                        ps.join(" "),
                        stmts(&d.body, "\n  ")
                    ),
                    d.span,
                )
            }
            Item::OptimizerDef(d) => (optimizer_def(d), d.span),
            Item::For(f) => (stmt(&Stmt::For(f.clone()), "\n"), f.span),
            Item::TupleLet(t) => (tuple(t), t.span),
            Item::Outputs(b) => {
                let e: Vec<String> = b
                    .entries
                    .iter()
                    .map(|x| format!("\n  ({} {})", x.name.name, expr(&x.value)))
                    .collect();
                (format!("(outputs{})", e.concat()), b.span)
            }
        };
        writeln!(out, "{text} @{}..{}", span.start, span.end).ok();
    }
    out
}

/// An `optimizer_def`, one entry per line.
fn optimizer_def(d: &OptimizerDef) -> String {
    let ps: Vec<String> = d
        .params
        .iter()
        .map(|p| match &p.default {
            Some(v) => format!("{}={}", p.name.name, expr(v)),
            None => p.name.name.clone(),
        })
        .collect();
    let section = |s: &OptSection| -> String {
        s.body
            .iter()
            .map(|b| format!("\n    ({} {})", b.name.name, expr(&b.value)))
            .collect()
    };
    let entries: Vec<String> = d
        .entries
        .iter()
        .map(|e| match e {
            OptEntry::Slot(b) => format!("\n  (slot {} {})", b.name.name, expr(&b.value)),
            OptEntry::Global(b) => format!("\n  (global {} {})", b.name.name, expr(&b.value)),
            OptEntry::Update(s) => format!("\n  (update{})", section(s)),
            OptEntry::Finish(s) => format!("\n  (finish{})", section(s)),
            OptEntry::Sparse { mode, rule, .. } => format!(
                "\n  (sparse {}{})",
                mode.name,
                rule.as_ref().map(section).unwrap_or_default()
            ),
        })
        .collect();
    format!(
        "(optimizer_def {} ({}){})",
        d.name.name,
        ps.join(" "),
        entries.concat()
    )
}

/// A `params` block, each entry on a line starting with `indent`.
fn params(b: &Block<ParamDecl>, indent: &str) -> String {
    let e: Vec<String> = b
        .entries
        .iter()
        .map(|p| {
            let dims: Vec<String> = p.shape.iter().map(expr).collect();
            let opts: String = p.options.iter().map(|o| format!(" {}", arg(o))).collect();
            format!(
                "{indent}({} [{}] {}{opts})",
                p.name.name,
                dims.join(" "),
                expr(&p.init)
            )
        })
        .collect();
    format!("(params{})", e.concat())
}

fn tuple(t: &TupleBinding) -> String {
    let names: Vec<&str> = t.names.iter().map(|n| n.name.as_str()).collect();
    format!("(let ({}) {})", names.join(" "), expr(&t.value))
}

/// Statements, each on a line starting with `indent`.
fn stmts(body: &[Stmt], indent: &str) -> String {
    body.iter()
        .map(|s| format!("{indent}{}", stmt(s, indent)))
        .collect()
}

/// One statement; nested bodies are indented two more spaces than `indent`.
fn stmt(s: &Stmt, indent: &str) -> String {
    let inner = format!("{indent}  ");
    match s {
        Stmt::Params(b) => params(b, &inner),
        Stmt::Let(b) => format!("(let {} {})", b.name.name, expr(&b.value)),
        Stmt::TupleLet(t) => tuple(t),
        Stmt::Call(c) => format!("(statement {})", call(c)),
        Stmt::For(f) => format!(
            "(for {} {}{})",
            f.var.name,
            call(&f.range),
            stmts(&f.body, &inner)
        ),
        Stmt::If(i) => {
            let otherwise = if i.otherwise.is_empty() {
                String::new()
            } else {
                format!(
                    "{inner}(else{})",
                    stmts(&i.otherwise, &format!("{inner}  "))
                )
            };
            format!(
                "(if {}{}{otherwise})",
                expr(&i.cond),
                stmts(&i.then, &inner)
            )
        }
        Stmt::Return(r) => {
            let v: Vec<String> = r.values.iter().map(expr).collect();
            format!("(return {})", v.join(" "))
        }
    }
}

fn arg(a: &Arg) -> String {
    match &a.name {
        Some(n) => format!("{}={}", n.name, expr(&a.value)),
        None => expr(&a.value),
    }
}

fn call(c: &Call) -> String {
    let args: Vec<String> = c.args.iter().map(arg).collect();
    if args.is_empty() {
        format!("({})", c.func.name)
    } else {
        format!("({} {})", c.func.name, args.join(" "))
    }
}

/// A chain as the nested form `(+ (+ a b) c)` it stands for, built in one
/// pass over the operations (a chain may have any length).
fn chain(first: &Expr, rest: &[Operation]) -> String {
    let mut out = String::new();
    for o in rest.iter().rev() {
        write!(out, "({} ", o.op.symbol()).ok();
    }
    out.push_str(&expr(first));
    for o in rest {
        write!(out, " {})", expr(&o.rhs)).ok();
    }
    out
}

pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Number { value, is_int } => {
            if *is_int {
                format!("{}", *value as i64)
            } else {
                format!("{value:?}")
            }
        }
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Range(a, b) => format!("{}..{}", a.name, b.name),
        ExprKind::Call(c) => call(c),
        ExprKind::List(items) => {
            let x: Vec<String> = items.iter().map(expr).collect();
            format!("[{}]", x.join(" "))
        }
        ExprKind::Unary(x) => format!("(neg {})", expr(x)),
        ExprKind::Binary(first, rest) => chain(first, rest),
        ExprKind::Index(x, items) => {
            let it: Vec<String> = items
                .iter()
                .map(|i| match i {
                    IndexItem::Index(e) => expr(e),
                    IndexItem::Slice { start, end, .. } => format!(
                        "{}:{}",
                        start.as_ref().map(expr).unwrap_or_default(),
                        end.as_ref().map(expr).unwrap_or_default()
                    ),
                })
                .collect();
            format!("(index {} {})", expr(x), it.join(" "))
        }
    }
}
