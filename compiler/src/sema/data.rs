//! The `data` item: where the training rows come from.
//!
//! Owns: checking `csv("file.csv")` and `synthetic(rows = .., features = ..)`
//! into the model's [`DataSource`], and their diagnostics.
//! Invariant: a spec has at most one data source; a CSV path is not empty
//! (it is resolved against the spec's directory when loaded); synthetic
//! sizes are positive and fit in 32 bits.

use specc_grammar::ast::{Call, Expr};
use specc_grammar::Diagnostic;
use specc_runtime::data::{Distribution, SyntheticSpec};

use super::args::{self, opt, req};
use super::expr::R;
use super::State;
use crate::model::DataSource;

pub(crate) fn data(st: &mut State, call: &Call) -> R<()> {
    if let Some((_, prev)) = &st.data {
        return Err(
            Diagnostic::new("duplicate-item", call.span, "a spec has one `data` source")
                .with_label("second data source")
                .with_secondary(*prev, "first one here"),
        );
    }
    let source = match call.func.name.as_str() {
        "csv" => {
            let b = args::bind("csv", call, &[req("path")])?;
            let path = args::eval_string(b.req(0))?;
            if path.is_empty() {
                return Err(Diagnostic::new("bad-argument", b.req(0).span, "empty path")
                    .with_label("expected a file name"));
            }
            DataSource::Csv {
                path: path.to_string(),
                span: b.req(0).span,
            }
        }
        "synthetic" => {
            let b = args::bind(
                "synthetic",
                call,
                &[
                    req("rows"),
                    req("features"),
                    opt("classes"),
                    opt("seed"),
                    opt("label_seed"),
                    opt("distribution"),
                ],
            )?;
            let rows = positive(b.req(0), "rows")?;
            let features = positive(b.req(1), "features")?;
            let classes = match b.get(2) {
                Some(e) => Some(positive(e, "classes")? as u32),
                None => None,
            };
            let seed = match b.get(3) {
                Some(e) => args::eval_count(e, "seed")?,
                None => 0,
            };
            let label_seed = match b.get(4) {
                Some(e) => args::eval_count(e, "label_seed")?,
                None => seed.wrapping_add(1),
            };
            let distribution = match b.get(5) {
                None => Distribution::Normal,
                Some(e) => match args::eval_ident(e)? {
                    "normal" => Distribution::Normal,
                    "uniform" => Distribution::Uniform,
                    other => {
                        return Err(Diagnostic::new(
                            "bad-argument",
                            e.span,
                            format!("unknown distribution `{other}`"),
                        )
                        .with_label("expected normal or uniform"))
                    }
                },
            };
            DataSource::Synthetic(SyntheticSpec {
                rows: rows as usize,
                features: features as usize,
                classes,
                seed,
                label_seed,
                distribution,
            })
        }
        other => {
            return Err(Diagnostic::new(
                "unknown-function",
                call.func.span,
                format!("unknown data source `{other}`"),
            )
            .with_label("not a data source")
            .with_help("expected csv(\"file.csv\") or synthetic(rows = .., features = ..)"))
        }
    };
    st.data = Some((source, call.span));
    Ok(())
}

fn positive(e: &Expr, what: &str) -> R<u64> {
    let v = args::eval_count(e, what)?;
    if v == 0 || v > u32::MAX as u64 {
        return Err(Diagnostic::new(
            "bad-argument",
            e.span,
            format!("{what} must be a positive integer, got {v}"),
        )
        .with_label("out of range"));
    }
    Ok(v)
}
