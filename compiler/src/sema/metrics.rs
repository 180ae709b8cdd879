//! The `metrics` block: TF's `accuracy`, `auc` and `mean`, and the
//! `global_norm` of the gradients.
//!
//! Owns: checking each metric, and adding the eval outputs it reads
//! (`metric/<name>/sum`, or `.../labels` and `.../predictions` for AUC).
//! Invariants: metric names are unique; a metric reads per-example tensors
//! (first dimension `B`), labels and predictions of the same shape; the
//! runtime reduces the outputs over batches (weighted means, bucketed AUC).

use specc_grammar::ast::{Call, Expr, ExprKind, MetricDecl};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::ir::{BinaryOp, DType, Dim, NodeId, Output};
use crate::model::{Metric, MetricKind};
use specc_runtime::metrics::MetricOutput;

pub(crate) fn metric(st: &mut State, m: &MetricDecl) -> R<()> {
    // Block calls in its arguments are expanded first (`accuracy(label,
    // argmax(head(h)))`).
    let (value, mark) = super::blocks::hoisted(st, &m.value)?;
    let m = MetricDecl {
        name: m.name.clone(),
        value,
        span: m.span,
    };
    let r = checked_metric(st, &m);
    super::blocks::release(st, mark);
    r
}

fn checked_metric(st: &mut State, m: &MetricDecl) -> R<()> {
    let call_storage;
    let call = match &m.value.kind {
        // `global_norm` may be written without parentheses.
        ExprKind::Ident(n) if n == "global_norm" => {
            call_storage = Call {
                func: specc_grammar::ast::Ident {
                    name: n.clone(),
                    span: m.value.span,
                },
                args: vec![],
                span: m.value.span,
            };
            &call_storage
        }
        ExprKind::Call(c) => c,
        _ => {
            return Err(Diagnostic::new(
                Code::BadMetric,
                m.value.span,
                format!(
                    "expected a metric like accuracy(labels, predictions), found {}",
                    args::describe(&m.value)
                ),
            )
            .with_label("not a metric"));
        }
    };
    let fname = call.func.name.as_str();
    let name = m
        .name
        .as_ref()
        .map(|n| n.name.clone())
        .unwrap_or_else(|| fname.to_string());
    if fname == "global_norm" {
        // The gradients' global norm, reported by the training step.
        args::bind(fname, call, &[])?;
        st.report_global_norm = true;
        return Ok(());
    }
    let name_span = m.name.as_ref().map(|n| n.span).unwrap_or(call.func.span);
    if st.metrics.iter().any(|x| x.name == name) {
        return Err(Diagnostic::new(
            Code::DuplicateName,
            name_span,
            format!("two metrics are called `{name}`"),
        )
        .with_label("second metric")
        .with_help("name them: metrics { acc_train = accuracy(..) }"));
    }
    let batched = |st: &State, n: NodeId, e: &Expr| -> R<u64> {
        let s = st.graph.shape(n);
        if s.0.first() != Some(&Dim::Batch) {
            return Err(Diagnostic::new(
                Code::BadMetric,
                e.span,
                format!("a metric needs a per-example tensor (first dimension B), but this is {s}"),
            )
            .with_label(format!("this is {s}")));
        }
        Ok(s.fixed_numel())
    };
    let same = |st: &State, a: NodeId, b: NodeId, ea: &Expr, eb: &Expr| -> R<()> {
        let (sa, sb) = (st.graph.shape(a), st.graph.shape(b));
        if sa != sb {
            return Err(Diagnostic::new(
                Code::ShapeMismatch,
                call.span,
                format!(
                    "`{fname}` needs labels and predictions of the same shape, got {sa} and {sb}"
                ),
            )
            .with_secondary(ea.span, format!("this is {sa}"))
            .with_secondary(eb.span, format!("this is {sb}")));
        }
        Ok(())
    };
    let (kind, per_example) =
        match fname {
            "accuracy" => {
                let b = args::bind(fname, call, &[req("labels"), req("predictions")])?;
                let mut lw = st.lowerer();
                let l = lw.lower(b.req(0))?;
                let p = lw.lower(b.req(1))?;
                same(st, l, p, b.req(0), b.req(1))?;
                let per = batched(st, l, b.req(0))?;
                let g = &mut st.graph;
                g.current_span = Some(call.span);
                let lf = g.cast(l, DType::F32);
                let pf = g.cast(p, DType::F32);
                let eq = g.binary(BinaryOp::Eq, lf, pf);
                let sum = g.sum_all(eq);
                g.current_span = None;
                st.metric_outputs.push(Output {
                    name: MetricOutput::Sum.name(&name),
                    node: sum,
                });
                (MetricKind::Accuracy, per)
            }
            "auc" => {
                let b = args::bind(
                    fname,
                    call,
                    &[req("labels"), req("predictions"), opt("num_thresholds")],
                )?;
                let mut lw = st.lowerer();
                let l = lw.lower(b.req(0))?;
                let p = lw.float(b.req(1))?;
                same(st, l, p, b.req(0), b.req(1))?;
                let per = batched(st, l, b.req(0))?;
                let t = match b.get(2) {
                    Some(e) => {
                        let t = args::eval_count(e, "num_thresholds")?;
                        if !(2..=100_000).contains(&t) {
                            return Err(Diagnostic::new(
                                Code::BadMetric,
                                e.span,
                                format!("num_thresholds must be between 2 and 100000, got {t}"),
                            )
                            .with_label("out of range"));
                        }
                        t as u32
                    }
                    None => 200,
                };
                let lf = st.graph.cast(l, DType::F32);
                st.metric_outputs.push(Output {
                    name: MetricOutput::Labels.name(&name),
                    node: lf,
                });
                st.metric_outputs.push(Output {
                    name: MetricOutput::Predictions.name(&name),
                    node: p,
                });
                (MetricKind::Auc { num_thresholds: t }, per)
            }
            "mean" => {
                let b = args::bind(fname, call, &[req("values")])?;
                let v = st.lowerer().float(b.req(0))?;
                let per = batched(st, v, b.req(0))?;
                let sum = st.graph.sum_all(v);
                st.metric_outputs.push(Output {
                    name: MetricOutput::Sum.name(&name),
                    node: sum,
                });
                (MetricKind::Mean, per)
            }
            other => return Err(Diagnostic::new(
                Code::BadMetric,
                call.func.span,
                format!("unknown metric `{other}`"),
            )
            .with_label("not a metric")
            .with_help(
                "metrics: accuracy(labels, predictions), auc(labels, probabilities), mean(values)",
            )),
        };
    st.metrics.push(Metric {
        name,
        kind,
        per_example,
    });
    Ok(())
}
