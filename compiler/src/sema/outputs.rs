//! The `outputs` block: what inference returns, by name
//! (`outputs { probs = softmax(logits), class = argmax(logits, 1) }`).
//!
//! Owns: checking each output and recording it for the `predict` function
//! ([`crate::model::Functions::predict`]).
//! Invariants: output names are unique; every output is per example (first
//! dimension `B`); no output reads a label, directly or through a binding, so
//! `predict` needs only the features (its data may have no label column).

use specc_grammar::ast::{Binding, Block};
use specc_grammar::{Code, Diagnostic};

use super::expr::R;
use super::State;
use crate::ir::{Dim, Output};
use crate::model::InputRole;

/// The `outputs` item: every entry checked, errors collected in `st.errors`.
pub(crate) fn outputs(st: &mut State, block: &Block<Binding>) -> R<()> {
    if let Some(prev) = st.outputs_span {
        return Err(super::duplicate_item("outputs", block.keyword, prev));
    }
    st.outputs_span = Some(block.keyword);
    for b in &block.entries {
        match output(st, b) {
            Ok(o) => st.outputs.push(o),
            Err(d) => st.errors.push(d),
        }
    }
    Ok(())
}

fn output(st: &mut State, b: &Binding) -> R<Output> {
    let name = &b.name.name;
    if let Some(prev) = st.output_spans.iter().find(|(n, _)| n == name) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            b.name.span,
            format!("two outputs are called `{name}`"),
        )
        .with_label("second output")
        .with_secondary(prev.1, "first one here"));
    }
    st.output_spans.push((name.clone(), b.name.span));
    let node = super::blocks::lower(st, &b.value)?;
    let shape = st.graph.shape(node);
    if shape.0.first() != Some(&Dim::Batch) {
        return Err(Diagnostic::new(
            Code::BadOutput,
            b.value.span,
            format!("an output is per example (first dimension B), but this is {shape}"),
        )
        .with_label(format!("this is {shape}"))
        .with_help("outputs are one value or vector per input row, e.g. probs = softmax(logits)"));
    }
    let read = st.graph.inputs_read(&[node]);
    let label = st
        .inputs
        .iter()
        .zip(read)
        .find(|(i, read)| *read && i.role == InputRole::Label);
    if let Some((info, _)) = label {
        return Err(Diagnostic::new(
            Code::OutputReadsLabel,
            b.value.span,
            format!(
                "output `{name}` reads the label `{}`, which prediction does not have",
                info.spec.name
            ),
        )
        .with_label("depends on the label")
        .with_secondary(info.span, "the label is declared here")
        .with_help("an output is computed from the features and parameters only"));
    }
    Ok(Output {
        name: name.clone(),
        node,
    })
}
