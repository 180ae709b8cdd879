//! The size limit of tensors: what specc can address, checked once per spec.
//!
//! Owns: `check`, run at the end of sema over every declared variable and
//! every node of the forward graph, with the batch dimension at the spec's
//! `batch`. A tensor of more than [`MAX_ELEMENTS`] elements is a
//! `tensor-too-large` error with a caret under its declaration or expression,
//! and so is a forward graph whose tensors add up to more than
//! [`MAX_TOTAL_ELEMENTS`].
//!
//! Invariant: after sema, every element count and byte size computed from a
//! shape (layout offsets, scratch offsets, buffer sizes, the memory a session
//! needs, the autodiff graph's tensors, a few times the forward graph's) fits
//! in a `u64`, and every byte offset in an `i64`, with room to spare. Whether
//! the machine has the memory is decided later, when a session is created
//! (`specc check` reports it).

use specc_grammar::{ast::Span, Code, Diagnostic};

use crate::ir::{Graph, Shape};
use crate::model::VarInfo;

/// The largest tensor: 2^40 elements (4 TiB of float32).
pub const MAX_ELEMENTS: u64 = 1 << 40;
/// The largest sum over the forward graph's tensors: 2^44 elements.
pub const MAX_TOTAL_ELEMENTS: u64 = 1 << 44;

/// Errors for tensors beyond [`MAX_ELEMENTS`], and for a graph beyond
/// [`MAX_TOTAL_ELEMENTS`] in all.
pub(crate) fn check(graph: &Graph, vars: &[VarInfo], batch: u32) -> Vec<Diagnostic> {
    let batch = u64::from(batch.max(1));
    let mut errors: Vec<Diagnostic> = graph
        .vars
        .iter()
        .zip(vars)
        .filter_map(|(leaf, info)| {
            too_large(
                &leaf.shape,
                batch,
                info.span.unwrap_or_default(),
                &format!("parameter `{}`", leaf.name),
            )
        })
        .collect();
    // The first tensor too large on the way from the inputs (the ones computed
    // from it would only repeat the error); none when a parameter already is.
    let mut total: u64 = 0;
    for (id, node) in graph.nodes() {
        total = total.saturating_add(node.shape.numel(batch));
        if errors.is_empty() {
            if let Some(span) = graph.span(id) {
                errors.extend(too_large(&node.shape, batch, span, "this tensor"));
            }
        }
    }
    if errors.is_empty() && total > MAX_TOTAL_ELEMENTS {
        errors.push(
            Diagnostic::new(
                Code::TensorTooLarge,
                Span::default(),
                format!(
                    "the model's tensors add up to {} elements at batch {batch}; specc's limit is 2^44",
                    count(total)
                ),
            )
            .with_label("too large to address")
            .with_help("lower the batch or the parameters' sizes"),
        );
    }
    errors
}

/// The error for one tensor beyond [`MAX_ELEMENTS`].
fn too_large(shape: &Shape, batch: u64, span: Span, what: &str) -> Option<Diagnostic> {
    let n = shape.numel(batch);
    (n > MAX_ELEMENTS).then(|| {
        let at = if shape.has_batch() {
            format!(" at batch {batch}")
        } else {
            String::new()
        };
        Diagnostic::new(
            Code::TensorTooLarge,
            span,
            format!(
                "{what} {shape} has {} elements{at}; specc's limit is 2^40 (4 TiB of float32)",
                count(n)
            ),
        )
        .with_label("too large to address")
    })
}

/// `n` in words a user can read at a glance (`1.0e16`, or the digits when short).
fn count(n: u64) -> String {
    if n == u64::MAX {
        "more than 1.8e19".into()
    } else if n >= 1_000_000 {
        format!("{:.1e}", n as f64)
    } else {
        n.to_string()
    }
}
