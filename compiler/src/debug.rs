//! Where a non-finite loss came from.
//!
//! Owns: the `check` function (forward only: one non-finite flag per
//! float feature, parameter and binding of the spec, computed like
//! `check_numerics`) and [`find_nan_origin`], which finds the first value of
//! the spec, in evaluation order, that is not finite in the step whose loss
//! was NaN or infinite, and the first operation inside it that is not.
//!
//! How: specc's training is reproducible to the bit, so the search compiles
//! the spec again with the `check` function beside the `step` (compiling
//! takes milliseconds; the step's code is the same), starts a fresh session
//! from the same initial variables (the initializers, or what `restore`
//! writes, e.g. a checkpoint), replays the run's batches up to the step
//! before the failing one with the normal step, and runs the failing step's
//! forward pass with checking on. Nothing of this runs while training: the
//! happy path pays nothing.
//!
//! Invariants: the watched values are in source order, which is evaluation
//! order (a name is defined before it is used); a replay that does not
//! reproduce the failure (a finite loss at the failing step, or a non-finite
//! one earlier) is an error, never a wrong answer.

use specc_grammar::ast::Span;
use specc_grammar::{Code, Diagnostic, SourceFile};
use specc_runtime::session::Session;
use specc_runtime::source::BatchSource;
use specc_runtime::train::Trainer;

use crate::driver::{compile_with, Functions, Options};
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

/// Why the search could not name an origin.
#[derive(Debug)]
pub enum SearchError {
    /// The spec does not compile (it compiled for training, so this is an
    /// internal error).
    Compile(Vec<Diagnostic>),
    /// The session, the source or the replay failed (in words).
    Replay(String),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Compile(d) => {
                let first = d.first().map(|d| d.message.as_str()).unwrap_or("");
                write!(f, "cannot compile the check function: {first}")
            }
            SearchError::Replay(m) => write!(f, "{m}"),
        }
    }
}

/// Sets a fresh session's variables (and global step) to where a run
/// started, e.g. from a checkpoint.
pub type Restore<'a> = &'a mut dyn FnMut(&mut Session) -> Result<(), String>;

/// Finds the first value of the spec (in evaluation order) that is not finite
/// in step `failed_step` (1-based, in the run) of a run whose loss became
/// NaN or infinite there (`TrainError::NanLoss`'s `step`).
///
/// - `restore` sets the variables (and the global step) to a state the run
///   went through, e.g. its last checkpoint; `None`: the initializers, the
///   start of a fresh run. `failed_step` counts from that state (the failing
///   global step minus the restored one).
/// - `source` must give the run's batches again from that state on (a new
///   source built as the run built its own: same rows, batch, order,
///   advanced to the restored step).
/// - `options` should be the run's (the thread count does not change results).
///
/// Costs one compile and `failed_step - 1` steps; nothing while training.
pub fn find_nan_origin(
    src: &SourceFile,
    options: &Options,
    failed_step: u64,
    source: &mut dyn BatchSource,
    restore: Option<Restore<'_>>,
) -> Result<NanOrigin, SearchError> {
    if failed_step == 0 {
        return Err(SearchError::Replay(
            "steps are counted from 1: there is no step 0".into(),
        ));
    }
    let which = Functions {
        step: true,
        eval: false,
        grad: false,
        check: true,
        predict: false,
    };
    let program = compile_with(src, which, options).map_err(SearchError::Compile)?;
    let mut session = program.session().map_err(SearchError::Replay)?;
    if let Some(r) = restore {
        r(&mut session).map_err(SearchError::Replay)?;
    }
    let replay = |m: String| SearchError::Replay(format!("replaying the run: {m}"));
    let mut trainer = Trainer::new(&session).map_err(replay)?;
    for k in 1..failed_step {
        let values = match trainer.step(&mut session, source) {
            Ok(Some(v)) => v,
            Ok(None) => {
                return Err(replay(format!(
                    "the batches ran out after {} steps, before step {failed_step}",
                    k - 1
                )))
            }
            Err(e) => return Err(replay(e.to_string())),
        };
        if !values.loss.is_finite() {
            return Err(replay(format!(
                "the loss is already {} at step {k}, not at step {failed_step}: the replay does not reproduce the run",
                values.loss
            )));
        }
    }
    let global_step = session.global_step;
    let check = session
        .function_index(CHECK_FUNCTION)
        .ok_or_else(|| replay("no check function".into()))?;
    let rows = session.fill(source).map_err(|e| replay(e.to_string()))?;
    if rows == 0 {
        return Err(replay(format!(
            "the batches ran out before step {failed_step}"
        )));
    }
    session.call(check, rows).map_err(replay)?;
    let watch = watched(&program.model);
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
            return Ok(NanOrigin {
                kind: w.kind,
                name: w.name.clone(),
                span: w.span,
                operation,
                nan: flag >= 2.0,
                step: failed_step,
                global_step,
            });
        }
    }
    Err(replay(format!(
        "every value of the spec is finite in the replay of step {failed_step}: the replay does not reproduce the run"
    )))
}
