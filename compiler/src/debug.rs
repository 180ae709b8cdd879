//! Where a non-finite loss came from: the `check` function.
//!
//! Owns: the `check` function ([`add_check_function`], compiled when
//! `Functions::check` asks: forward only, one non-finite flag per float
//! feature, parameter and binding of the spec, computed like
//! `check_numerics`, and one per operation inside the bindings), what its
//! outputs say ([`first_non_finite`]: the first value of the spec, in
//! evaluation order, that is not finite, and the first operation inside it
//! that is not) and [`NanOrigin`], that answer as a diagnostic.
//!
//! The replay that runs it (compile the spec with `check` beside the
//! `step`, replay the run's batches up to the failing step, run its forward
//! pass with checking) is the run's: `specc::run::replay`. Nothing of this
//! runs while training: the happy path pays nothing.
//!
//! Invariants: the watched values are in source order, which is evaluation
//! order (a name is defined before it is used).

use specc_grammar::ast::Span;
use specc_grammar::{Code, Diagnostic};
use specc_runtime::session::Session;

use crate::ir::{DType, Function, NodeId, Output};
use crate::model::{InputRole, Model, VarKind};
use crate::sema::checks::non_finite_flag;

/// The name of the `check` function.
pub const CHECK_FUNCTION: &str = "check";
/// The prefix of the `check` function's outputs: `finite/<k>` is the flag of
/// watched value `k` (0 finite, 1 an infinity, 2 a NaN).
pub const OUTPUT_FINITE_PREFIX: &str = "finite/";

/// The prefix of the `check` function's outputs for the operations inside
/// bindings: `expr/<start>-<end>` is the flag of the expression at those
/// byte offsets, in evaluation order.
pub const OUTPUT_EXPR_PREFIX: &str = "expr/";

/// What kind of spec value a watched value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// A float feature (from the data).
    Feature,
    /// A parameter (its value at the start of the step).
    Parameter,
    /// A binding `name = ...`.
    Binding,
}

impl ValueKind {
    pub fn word(self) -> &'static str {
        match self {
            ValueKind::Feature => "feature",
            ValueKind::Parameter => "parameter",
            ValueKind::Binding => "binding",
        }
    }
}

/// One value the `check` function watches.
#[derive(Clone, Debug, PartialEq)]
pub struct Watched {
    pub kind: ValueKind,
    pub name: String,
    /// Where the spec defines it (a binding: its value's expression).
    pub span: Span,
    /// The input or variable index (features, parameters), or the node (bindings).
    at: At,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    Input(u32),
    Var(u32),
    Node(NodeId),
}

/// The values to watch, in source (= evaluation) order: float features,
/// parameters, bindings.
pub fn watched(model: &Model) -> Vec<Watched> {
    let g = &model.graph;
    let mut out = Vec::new();
    for (i, info) in model.inputs.iter().enumerate() {
        let leaf = &g.inputs[i];
        if info.role == InputRole::Feature && leaf.dtype == DType::F32 {
            out.push(Watched {
                kind: ValueKind::Feature,
                name: leaf.name.clone(),
                span: info.span,
                at: At::Input(i as u32),
            });
        }
    }
    for (i, v) in model.vars.iter().enumerate() {
        if let (VarKind::Param { .. }, Some(span)) = (&v.kind, v.span) {
            out.push(Watched {
                kind: ValueKind::Parameter,
                name: g.vars[i].name.clone(),
                span,
                at: At::Var(i as u32),
            });
        }
    }
    for ((name, node), span) in model.bindings.iter().zip(&model.binding_spans) {
        if g.dtype(*node) == DType::F32 {
            out.push(Watched {
                kind: ValueKind::Binding,
                name: name.clone(),
                span: *span,
                at: At::Node(*node),
            });
        }
    }
    out.sort_by_key(|w| w.span.start);
    out
}

/// The first non-finite value of a failing step.
#[derive(Clone, Debug, PartialEq)]
pub struct NanOrigin {
    pub kind: ValueKind,
    pub name: String,
    pub span: Span,
    /// For a binding: the first operation inside it (in evaluation order)
    /// whose value is not finite, when it is not the whole expression.
    pub operation: Option<Span>,
    /// True for a NaN, false for an infinity (and no NaN).
    pub nan: bool,
    /// The failing step (1-based, in the run).
    pub step: u64,
    /// The global step before the failing step.
    pub global_step: i64,
}

impl NanOrigin {
    /// The origin as a diagnostic (code `non-finite-value`) with a caret
    /// under the value's definition, for rendering against the spec.
    pub fn diagnostic(&self) -> Diagnostic {
        let what = if self.nan { "NaN" } else { "infinite" };
        let step = self.step;
        let (message, label, help) = match self.kind {
            ValueKind::Binding => (
                format!(
                    "`{}` is the first value to become {what} in step {step}",
                    self.name
                ),
                format!("{what} here in step {step}"),
                "every value the spec computes before it is finite in that step".to_string(),
            ),
            ValueKind::Parameter => (
                format!(
                    "parameter `{}` is {what} at the start of step {step}",
                    self.name
                ),
                format!("{what} before step {step}"),
                format!(
                    "the update of step {} made it non-finite; lower the learning rate or clip the gradients",
                    step.saturating_sub(1)
                ),
            ),
            ValueKind::Feature => (
                format!("feature `{}` is {what} in the batch of step {step}", self.name),
                format!("{what} in the data"),
                "check the data file for nan or inf cells".to_string(),
            ),
        };
        let mut d = Diagnostic::new(Code::NonFiniteValue, self.span, message).with_label(label);
        if let Some(op) = self.operation {
            d = d.with_secondary(op, "the first operation that is not finite");
        }
        d.with_help(help)
    }
}

/// Adds the `check` function to the model: output `finite/<k>` is the flag
/// of `watched(model)[k]`.
pub fn add_check_function(model: &mut Model) {
    let watch = watched(model);
    let mut f = Function::new(CHECK_FUNCTION);
    for (k, w) in watch.iter().enumerate() {
        let node = match w.at {
            At::Input(i) => model.graph.input(i),
            At::Var(i) => model.graph.var(i),
            At::Node(n) => n,
        };
        let flag = non_finite_flag(&mut model.graph, node);
        f.outputs.push(Output {
            name: format!("{OUTPUT_FINITE_PREFIX}{k}"),
            node: flag,
        });
    }
    for (span, node) in sub_expressions(model, &watch) {
        let flag = non_finite_flag(&mut model.graph, node);
        f.outputs.push(Output {
            name: format!("{OUTPUT_EXPR_PREFIX}{}-{}", span.start, span.end),
            node: flag,
        });
    }
    model.functions.check = Some(f);
}

/// The operations inside the bindings' expressions, each by its source span
/// (the last node of a span is the value of its text), in evaluation order
/// (node ids), at most [`MAX_SUB_EXPRESSIONS`].
fn sub_expressions(model: &Model, watch: &[Watched]) -> Vec<(Span, NodeId)> {
    let g = &model.graph;
    let bindings: Vec<(Span, NodeId)> = watch
        .iter()
        .filter_map(|w| match w.at {
            At::Node(n) => Some((w.span, n)),
            _ => None,
        })
        .collect();
    let roots: Vec<NodeId> = bindings.iter().map(|b| b.1).collect();
    let live = g.reachable(&roots);
    let inside = |s: Span| {
        bindings.iter().any(|(b, _)| {
            b.start <= s.start && s.end <= b.end && (s.start, s.end) != (b.start, b.end)
        })
    };
    let mut last: std::collections::HashMap<(u32, u32), NodeId> = Default::default();
    for (id, node) in g.nodes() {
        let Some(span) = g.span(id) else { continue };
        if live[id.index()] && !node.op.is_leaf() && node.dtype == DType::F32 && inside(span) {
            last.insert((span.start, span.end), id);
        }
    }
    let mut out: Vec<(Span, NodeId)> = last
        .into_iter()
        .map(|((start, end), id)| (Span { start, end }, id))
        .collect();
    out.sort_by_key(|&(_, id)| id);
    out.truncate(MAX_SUB_EXPRESSIONS);
    out
}

/// The most sub-expressions the `check` function watches (beyond, the
/// origin is named by its binding only).
pub const MAX_SUB_EXPRESSIONS: usize = 4096;

/// `<start>-<end>` as a span.
fn parse_span(s: &str) -> Option<Span> {
    let (a, b) = s.split_once('-')?;
    Some(Span {
        start: a.parse().ok()?,
        end: b.parse().ok()?,
    })
}

/// The first watched value of `model` that the `check` function (session
/// function `check`, just called on `rows` rows) flags as not finite, in
/// evaluation order, and for a binding the first operation inside it that
/// is not; `None` when every value is finite. `step` and `global_step` are
/// the failing step's, for the origin's message.
pub fn first_non_finite(
    model: &Model,
    session: &Session,
    check: usize,
    rows: usize,
    step: u64,
    global_step: i64,
) -> Option<NanOrigin> {
    let watch = watched(model);
    for (k, w) in watch.iter().enumerate() {
        let name = format!("{OUTPUT_FINITE_PREFIX}{k}");
        let flag = session
            .output_index(check, &name)
            .and_then(|i| session.output_at(check, i, rows))
            .and_then(|v| v.first().copied())
            .unwrap_or(0.0);
        if flag != 0.0 {
            let layout = session.function_layout(check);
            // The first operation inside the binding that is not finite.
            let operation = layout.outputs.iter().enumerate().find_map(|(i, o)| {
                let span = parse_span(o.name.strip_prefix(OUTPUT_EXPR_PREFIX)?)?;
                let inside = w.span.start <= span.start && span.end <= w.span.end;
                let v = session.output_at(check, i, rows)?.first().copied()?;
                (w.kind == ValueKind::Binding && inside && v != 0.0).then_some(span)
            });
            return Some(NanOrigin {
                kind: w.kind,
                name: w.name.clone(),
                span: w.span,
                operation,
                nan: flag >= 2.0,
                step,
                global_step,
            });
        }
    }
    None
}
