//! The training settings around the optimizer: the `train` block (batch,
//! duration, shuffling, seeds, held-out fraction and split), gradient clipping (`clip`)
//! and moving averages (`ema`).
//!
//! Owns: checking these items into [`TrainSettings`], [`ClipSpec`] and
//! [`EmaSpec`], with TF's argument names and their diagnostics.
//! Invariants: a batch is in [1, 2^24]; training has exactly one of `steps`
//! and `epochs`, at least 1; `eval_fraction` is in [0, 1); clipping norms are positive
//! and finite, scalar `by_value` bounds ordered; an EMA decay is in [0, 1].

use specc_grammar::ast::{Arg, Block, Call, EmaDecl, Expr, Span};
use specc_grammar::{Code, Diagnostic};

use super::args::{self, opt, req};
use super::expr::{constant_values, R};
use crate::model::{
    ClipBound, ClipKind, ClipSpec, Duration, EmaSpec, EvalSplit, SyncReplicas, TrainSettings,
};

pub(crate) fn train(block: &Block<Arg>) -> R<TrainSettings> {
    let mut batch = None;
    let mut steps: Option<(u64, Span)> = None;
    let mut epochs: Option<(u64, Span)> = None;
    let mut shuffle = 0usize;
    let mut seed = 0u64;
    let mut eval_fraction = 0.2f64;
    let mut split_seed = 0u64;
    let mut eval_split = EvalSplit::Random;
    let mut to_aggregate: Option<(u64, Span)> = None;
    let mut total: Option<(u64, Span)> = None;
    super::run::entries(block, "train", super::run::TRAIN_KEYS, |key, v| {
        match key {
            "batch" => {
                let b = args::eval_count(v, "batch")?;
                if b == 0 || b > 1 << 24 {
                    return Err(Diagnostic::new(
                        Code::BadSetting,
                        v.span,
                        format!("batch must be between 1 and 16777216, got {b}"),
                    )
                    .with_label("bad batch size"));
                }
                batch = Some(b as u32);
            }
            "steps" => steps = Some((positive_count(v, "steps")?, v.span)),
            "epochs" => epochs = Some((positive_count(v, "epochs")?, v.span)),
            "shuffle" => shuffle = args::eval_count(v, "shuffle")? as usize,
            "seed" => seed = args::eval_count(v, "seed")?,
            "split_seed" => split_seed = args::eval_count(v, "split_seed")?,
            "eval_split" => {
                eval_split =
                    match args::eval_string(v)? {
                        "random" => EvalSplit::Random,
                        "last" => EvalSplit::Last,
                        other => return Err(Diagnostic::new(
                            Code::BadSetting,
                            v.span,
                            format!("unknown eval_split `{other}`"),
                        )
                        .with_label("expected \"random\" or \"last\"")
                        .with_help(
                            "\"last\" holds out the last rows in file order (time-ordered data)",
                        )),
                    }
            }
            "replicas_to_aggregate" => {
                to_aggregate = Some((positive_count(v, "replicas_to_aggregate")?, v.span))
            }
            "total_num_replicas" => {
                total = Some((positive_count(v, "total_num_replicas")?, v.span))
            }
            "eval_fraction" => {
                let f = args::eval_number(v)?;
                if !(0.0..1.0).contains(&f) {
                    return Err(Diagnostic::new(
                        Code::BadSetting,
                        v.span,
                        format!("eval_fraction must be in [0, 1), got {f}"),
                    )
                    .with_label("out of range"));
                }
                eval_fraction = f;
            }
            // `entries` refused every key not in TRAIN_KEYS.
            _ => {}
        }
        Ok(())
    })?;
    let Some(batch) = batch else {
        return Err(Diagnostic::new(
            Code::BadSetting,
            block.keyword,
            "`train` needs a `batch` size",
        )
        .with_label("no batch")
        .with_help("e.g. train { batch = 32, steps = 1000 }"));
    };
    let duration = match (steps, epochs) {
        (Some((s, _)), None) => Duration::Steps(s),
        (None, Some((e, _))) => Duration::Epochs(e),
        (Some(_), Some((_, sp))) => {
            return Err(Diagnostic::new(
                Code::BadSetting,
                sp,
                "give either `steps` or `epochs`, not both",
            )
            .with_label("second duration"))
        }
        (None, None) => {
            return Err(Diagnostic::new(
                Code::BadSetting,
                block.keyword,
                "`train` needs `steps` or `epochs`",
            )
            .with_label("no duration"))
        }
    };
    let sync_replicas = sync_replicas(to_aggregate, total, batch)?;
    Ok(TrainSettings {
        sync_replicas,
        batch,
        duration,
        shuffle,
        seed,
        eval_fraction,
        split_seed,
        eval_split,
    })
}

/// TF's `SyncReplicasOptimizer` arguments: `total_num_replicas` defaults to
/// `replicas_to_aggregate` (as in TF) and must equal it: aggregating fewer
/// (backup workers) would make each step depend on which replicas answer
/// first, and specc's steps are reproducible.
fn sync_replicas(
    to_aggregate: Option<(u64, Span)>,
    total: Option<(u64, Span)>,
    batch: u32,
) -> R<Option<SyncReplicas>> {
    let (n, span) = match (to_aggregate, total) {
        (None, None) => return Ok(None),
        (Some(a), None) => a,
        (None, Some(t)) => t,
        (Some((a, a_span)), Some((t, t_span))) => {
            if a != t {
                return Err(Diagnostic::new(
                    Code::BadSetting,
                    a_span,
                    format!(
                        "replicas_to_aggregate = {a} with total_num_replicas = {t}: specc \
                         aggregates every replica"
                    ),
                )
                .with_label("not the total")
                .with_secondary(t_span, "the total")
                .with_help(
                    "aggregating only the first replicas to answer (backup workers) makes \
                     a step depend on timing; set both to the number of replicas",
                ));
            }
            (t, t_span)
        }
    };
    if n > u64::from(batch) {
        return Err(Diagnostic::new(
            Code::BadSetting,
            span,
            format!("{n} replicas cannot share a global batch of {batch} rows"),
        )
        .with_label("more replicas than rows")
        .with_help("`batch` is the global batch: each replica computes batch / replicas rows"));
    }
    Ok(Some(SyncReplicas {
        total: n.min(u64::from(u32::MAX)) as u32,
        span,
    }))
}

/// A training duration (`steps`, `epochs`): a count of at least 1, so that a
/// spec that would train nothing is refused by `specc check`, not by `run`.
fn positive_count(v: &Expr, what: &str) -> R<u64> {
    let n = args::eval_count(v, what)?;
    if n == 0 {
        return Err(Diagnostic::new(
            Code::BadSetting,
            v.span,
            format!("{what} must be at least 1, got 0"),
        )
        .with_label("nothing to train"));
    }
    Ok(n)
}

pub(crate) fn clip(call: &Call) -> R<ClipSpec> {
    let name = call.func.name.as_str();
    let positive = args::eval_positive;
    let kind = match name {
        "by_value" => {
            let b = args::bind(name, call, &[req("clip_value_min"), req("clip_value_max")])?;
            let bound = |e: &Expr| -> R<ClipBound> {
                let (dims, values) = constant_values(e)?;
                Ok(ClipBound { dims, values })
            };
            let (min, max) = (bound(b.req(0))?, bound(b.req(1))?);
            if min.dims.is_empty() && max.dims.is_empty() && min.values[0] > max.values[0] {
                return Err(Diagnostic::new(
                    Code::ConflictingArguments,
                    call.span,
                    format!(
                        "clip_value_min ({}) is larger than clip_value_max ({})",
                        min.values[0], max.values[0]
                    ),
                )
                .with_label("empty range"));
            }
            ClipKind::ByValue { min, max }
        }
        "by_norm" => {
            let b = args::bind(name, call, &[req("clip_norm"), opt("axes")])?;
            let clip_norm = positive(b.req(0), "clip_norm")?;
            let axes = match b.get(1) {
                Some(e) if !args::is_none(e) => Some(args::eval_int_list(e)?),
                _ => None,
            };
            ClipKind::ByNorm { clip_norm, axes }
        }
        "by_average_norm" => {
            let b = args::bind(name, call, &[req("clip_norm")])?;
            ClipKind::ByAverageNorm {
                clip_norm: positive(b.req(0), "clip_norm")?,
            }
        }
        "global_norm" | "by_global_norm" => {
            let b = args::bind(name, call, &[req("clip_norm"), opt("use_norm")])?;
            let clip_norm = positive(b.req(0), "clip_norm")?;
            let use_norm = match b.get(1) {
                Some(e) if !args::is_none(e) => Some(positive(e, "use_norm")?),
                _ => None,
            };
            ClipKind::GlobalNorm { clip_norm, use_norm }
        }
        other => {
            return Err(Diagnostic::new(
                Code::UnknownFunction,
                call.func.span,
                format!("unknown clipping `{other}`"),
            )
            .with_label("not a clipping rule")
            .with_help("clip by_value(min, max), by_norm(clip_norm, axes = ..), by_average_norm(clip_norm) or global_norm(clip_norm, use_norm = ..)"))
        }
    };
    Ok(ClipSpec {
        kind,
        var_list: None,
        span: call.span,
    })
}

pub(crate) fn ema(decl: &EmaDecl) -> R<EmaSpec> {
    let decay = args::eval_number(&decl.decay)?;
    if !(0.0..=1.0).contains(&decay) {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            decl.decay.span,
            format!("the moving average's decay must be in [0, 1], got {decay}"),
        )
        .with_label("out of range"));
    }
    // `var_list = ...` (TF's `apply(var_list)`); the rest are flags.
    let (lists, options): (Vec<&Arg>, Vec<&Arg>) = decl
        .options
        .iter()
        .partition(|o| o.name.as_ref().is_some_and(|n| n.name == "var_list"));
    let var_list = match lists.as_slice() {
        [] => None,
        [one] => Some(super::optimizer::var_list(one)?),
        [first, second, ..] => {
            return Err(Diagnostic::new(
                Code::DuplicateArgument,
                second.span,
                "`ema` has two var_lists",
            )
            .with_label("second var_list")
            .with_secondary(first.span, "first var_list")
            .with_help("list every pattern in one: var_list = [\"dnn/*\", \"bias\"]"))
        }
    };
    let options: Vec<Arg> = options.into_iter().cloned().collect();
    // Shadows of variables start at the variable's value: zero_debias has no
    // effect on them (as in TF), but is accepted.
    let flags = args::flag_options(
        &options,
        &["num_updates", "zero_debias", "use_averages"],
        "`ema` has",
        "ema DECAY, var_list = \"PATTERN\"|[..], num_updates = true|false, zero_debias = true|false, use_averages = true|false",
    )?;
    Ok(EmaSpec {
        decay: decay as f32,
        num_updates: flags.get("num_updates", false),
        var_list,
        use_averages: flags.get("use_averages", false),
        span: decl.span,
    })
}
