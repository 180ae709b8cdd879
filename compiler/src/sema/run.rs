//! The run's items: `checkpoint`, `summaries`, `logging`, `evaluate` and
//! `init_from_checkpoint`.
//!
//! Owns: the one schema of the run settings, [`BLOCKS`]: every settings
//! block (`train`, `checkpoint`, `summaries`, `logging`, `evaluate`), its
//! keys, their types, and which ones a run configuration may set (a
//! `--config` file, `--set`: `specc::run::settings` reads them by this
//! table; sema checks the blocks by it); checking these items into the
//! runtime's configuration types
//! ([`specc_runtime::config`]) with TF's names and defaults
//! (`MonitoredTrainingSession`: a checkpoint directory alone saves every 600
//! seconds, `keep` 5; summaries every 100 steps; logging every 100 steps),
//! and their diagnostics: unknown keys with a did-you-mean, wrong types,
//! negative periods, unknown logged tensors and unknown parameters of an
//! assignment map, each with a caret.
//! Invariants: a period of 0 means "never" and is stored as `None`; seconds
//! and hours are finite; directories are as written (relative to the spec's
//! directory: `specc::run::settings::resolve` joins them); names in `logging.tensors` and
//! the spec side of an assignment map are checked after every item, so the
//! items may come before the names they mention.

use specc_grammar::ast::{Arg, Block, Expr, ExprKind, InitFromCheckpoint, Span};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::config::{
    CheckpointConfig, EvaluateConfig, LoggingConfig, SummaryConfig, WarmStart,
    DEFAULT_CHECKPOINT_SECS,
};

use super::args;
use super::expr::R;

/// The type of a setting's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An integer (sema checks its range).
    Int,
    /// A finite number.
    Number,
    Bool,
    /// A file or directory.
    Path,
    /// A list of names (`[loss, h1]`).
    Names,
    /// A word from a fixed set (`eval_split = "last"`).
    Word,
}

impl Ty {
    /// The type in words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            Ty::Int => "an integer",
            Ty::Number => "a number",
            Ty::Bool => "`true` or `false`",
            Ty::Path => "a path",
            Ty::Names => "a list of names",
            Ty::Word => "a word",
        }
    }
}

/// One key of a settings block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub ty: Ty,
    /// A run configuration (a `--config` file, `--set`) may set it; the
    /// others are written in the spec only.
    pub configurable: bool,
}

const fn key(name: &'static str, ty: Ty) -> Key {
    Key {
        name,
        ty,
        configurable: true,
    }
}

const fn spec_only(name: &'static str, ty: Ty) -> Key {
    Key {
        name,
        ty,
        configurable: false,
    }
}

/// The keys of each block, in the order docs/runs-and-checkpoints.md lists them.
pub const TRAIN_KEYS: &[Key] = &[
    key("steps", Ty::Int),
    key("epochs", Ty::Int),
    key("batch", Ty::Int),
    key("shuffle", Ty::Int),
    key("seed", Ty::Int),
    key("eval_fraction", Ty::Number),
    key("split_seed", Ty::Int),
    spec_only("eval_split", Ty::Word),
    spec_only("replicas_to_aggregate", Ty::Int),
    spec_only("total_num_replicas", Ty::Int),
];
pub const CHECKPOINT_KEYS: &[Key] = &[
    key("dir", Ty::Path),
    key("every_steps", Ty::Int),
    key("every_secs", Ty::Number),
    key("keep", Ty::Int),
    key("keep_every_n_hours", Ty::Number),
];
pub const SUMMARIES_KEYS: &[Key] = &[
    key("dir", Ty::Path),
    key("every_steps", Ty::Int),
    key("histograms", Ty::Bool),
    key("gradient_histograms", Ty::Bool),
    key("histogram_tensors", Ty::Names),
    key("image_tensors", Ty::Names),
    key("max_images", Ty::Int),
];
pub const LOGGING_KEYS: &[Key] = &[
    key("every_steps", Ty::Int),
    key("every_secs", Ty::Number),
    key("tensors", Ty::Names),
];
pub const EVALUATE_KEYS: &[Key] = &[key("every_steps", Ty::Int)];

/// Every settings block by its keyword, `train` first.
pub const BLOCKS: &[(&str, &[Key])] = &[
    ("train", TRAIN_KEYS),
    ("checkpoint", CHECKPOINT_KEYS),
    ("summaries", SUMMARIES_KEYS),
    ("logging", LOGGING_KEYS),
    ("evaluate", EVALUATE_KEYS),
];

/// Walks a `key = value` block: every entry named, no key twice, no key
/// outside `keys` (with a did-you-mean); `f` checks each value.
pub(crate) fn entries<'a>(
    block: &'a Block<Arg>,
    what: &str,
    keys: &[Key],
    mut f: impl FnMut(&str, &'a Expr) -> R<()>,
) -> R<()> {
    let keys: Vec<&str> = keys.iter().map(|k| k.name).collect();
    let mut seen: Vec<(&str, Span)> = Vec::new();
    for a in &block.entries {
        let Some(n) = &a.name else {
            return Err(
                Diagnostic::new(Code::BadSetting, a.span, "expected `key = value`")
                    .with_label("unnamed setting"),
            );
        };
        if let Some((_, prev)) = seen.iter().find(|(k, _)| *k == n.name) {
            return Err(Diagnostic::new(
                Code::DuplicateArgument,
                a.span,
                format!("`{}` is set twice", n.name),
            )
            .with_label("second value")
            .with_secondary(*prev, "first value"));
        }
        seen.push((&n.name, a.span));
        if !keys.contains(&n.name.as_str()) {
            let mut d = Diagnostic::new(
                Code::UnknownArgument,
                n.span,
                format!("`{what}` has no setting `{}`", n.name),
            )
            .with_label("unknown setting");
            if let Some(s) = args::suggest(&n.name, keys.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d.with_help(format!("settings: {}", keys.join(", "))));
        }
        f(&n.name, &a.value)?;
    }
    Ok(())
}

/// A period in steps: 0 is "never".
fn steps(v: &Expr, what: &str) -> R<Option<u64>> {
    Ok(Some(args::eval_count(v, what)?).filter(|&n| n > 0))
}

/// A period in seconds (or hours): finite, not negative; 0 is "never".
fn seconds(v: &Expr, what: &str) -> R<Option<f64>> {
    let s = args::eval_number(v)?;
    if !s.is_finite() || s < 0.0 {
        return Err(Diagnostic::new(
            Code::BadSetting,
            v.span,
            format!("{what} must be a finite number, not negative, got {s}"),
        )
        .with_label("out of range"));
    }
    Ok(Some(s).filter(|&s| s > 0.0))
}

fn dir(v: &Expr) -> R<std::path::PathBuf> {
    let d = args::eval_string(v)?;
    if d.is_empty() {
        return Err(
            Diagnostic::new(Code::BadSetting, v.span, "the directory is empty")
                .with_label("empty path"),
        );
    }
    Ok(d.into())
}

pub(crate) fn checkpoint(block: &Block<Arg>) -> R<CheckpointConfig> {
    let mut c = CheckpointConfig::default();
    let mut period_given = false;
    entries(block, "checkpoint", CHECKPOINT_KEYS, |key, v| {
        match key {
            "dir" => c.dir = Some(dir(v)?),
            "every_steps" => {
                c.every_steps = steps(v, "every_steps")?;
                period_given = true;
            }
            "every_secs" => {
                c.every_secs = seconds(v, "every_secs")?;
                period_given = true;
            }
            "keep" => {
                let k = args::eval_count(v, "keep")?;
                c.keep = u32::try_from(k).map_err(|_| {
                    Diagnostic::new(
                        Code::BadSetting,
                        v.span,
                        format!("keep must be at most {}, got {k}", u32::MAX),
                    )
                    .with_label("too large")
                })?;
            }
            "keep_every_n_hours" => c.keep_every_n_hours = seconds(v, "keep_every_n_hours")?,
            _ => {}
        }
        Ok(())
    })?;
    if !period_given {
        c.every_secs = Some(DEFAULT_CHECKPOINT_SECS);
    }
    Ok(c)
}

/// `summaries { .. }` and the spans of its `histogram_tensors` and
/// `image_tensors` names, in that order (checked at the end, as logged
/// tensors are).
pub(crate) fn summaries(block: &Block<Arg>) -> R<(SummaryConfig, Vec<Span>)> {
    let mut s = SummaryConfig::default();
    let mut spans = Vec::new();
    let mut image_spans = Vec::new();
    entries(block, "summaries", SUMMARIES_KEYS, |key, v| {
        match key {
            "dir" => s.dir = Some(dir(v)?),
            "every_steps" => s.every_steps = steps(v, "every_steps")?,
            "histograms" => s.histograms = args::eval_bool(v)?,
            "gradient_histograms" => s.gradient_histograms = args::eval_bool(v)?,
            "histogram_tensors" => {
                for (name, span) in names(v, "e.g. histogram_tensors = [h1, logits]")? {
                    s.histogram_tensors.push(name);
                    spans.push(span);
                }
            }
            "image_tensors" => {
                for (name, span) in names(v, "e.g. image_tensors = [images]")? {
                    s.image_tensors.push(name);
                    image_spans.push(span);
                }
            }
            "max_images" => {
                let n = args::eval_int(v)?;
                if !(1..=i64::from(u32::MAX)).contains(&n) {
                    return Err(Diagnostic::new(
                        Code::BadSetting,
                        v.span,
                        format!("max_images must be at least 1, got {n}"),
                    )
                    .with_label("not a count"));
                }
                s.max_images = n as u32;
            }
            _ => {}
        }
        Ok(())
    })?;
    spans.extend(image_spans);
    Ok((s, spans))
}

/// A name or a list of names (`tensors = [loss, h1]`), with their spans.
fn names(v: &Expr, example: &str) -> R<Vec<(String, Span)>> {
    let items: Vec<&Expr> = match &v.kind {
        ExprKind::List(items) => items.iter().collect(),
        _ => vec![v],
    };
    items
        .into_iter()
        .map(|e| match &e.kind {
            ExprKind::Ident(name) => Ok((name.clone(), e.span)),
            _ => Err(Diagnostic::new(
                Code::BadSetting,
                e.span,
                format!("expected the name of a tensor, found {}", args::describe(e)),
            )
            .with_label("not a name")
            .with_help(example.to_string())),
        })
        .collect()
}

/// `logging { .. }` and the spans of its tensor names (checked at the end).
pub(crate) fn logging(block: &Block<Arg>) -> R<(LoggingConfig, Vec<Span>)> {
    let mut l = LoggingConfig::default();
    let mut spans = Vec::new();
    let mut period_given = false;
    entries(block, "logging", LOGGING_KEYS, |key, v| {
        match key {
            "every_steps" => {
                l.every_steps = steps(v, "every_steps")?;
                period_given = true;
            }
            "every_secs" => {
                l.every_secs = seconds(v, "every_secs")?;
                period_given = true;
            }
            "tensors" => {
                for (name, span) in names(v, "e.g. tensors = [loss, h1, accuracy]")? {
                    l.tensors.push(name);
                    spans.push(span);
                }
            }
            _ => {}
        }
        Ok(())
    })?;
    if !period_given {
        l.every_steps = LoggingConfig::default().every_steps;
    } else if l.every_steps.is_some() && l.every_secs.is_some() {
        // TF's LoggingTensorHook takes exactly one of every_n_iter and every_n_secs.
        let at = block
            .entries
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|n| n.name == "every_secs"))
            .map_or(block.keyword, |a| a.span);
        return Err(Diagnostic::new(
            Code::BadSetting,
            at,
            "give either `every_steps` or `every_secs`, not both",
        )
        .with_label("second period"));
    }
    Ok((l, spans))
}

pub(crate) fn evaluate(block: &Block<Arg>) -> R<EvaluateConfig> {
    let mut e = EvaluateConfig::default();
    entries(block, "evaluate", EVALUATE_KEYS, |key, v| {
        if key == "every_steps" {
            e.every_steps = steps(v, "every_steps")?;
        }
        Ok(())
    })?;
    Ok(e)
}

/// `init_from_checkpoint(PATH, MAP)`; the spec side of the map is checked
/// by [`check_assignment_map`] once the parameters are known.
pub(crate) fn init_from_checkpoint(i: &InitFromCheckpoint) -> R<WarmStart> {
    if i.path.value.is_empty() {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            i.path.span,
            "the checkpoint path is empty",
        )
        .with_label("empty path"));
    }
    if i.assignment_map.is_empty() {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            i.map_span,
            "the assignment map is empty: nothing would be initialized",
        )
        .with_label("empty map")
        .with_help(
            "map checkpoint names to parameters, e.g. { \"/\": \"/\" } for every parameter",
        ));
    }
    Ok(WarmStart {
        path: i.path.value.clone().into(),
        assignment_map: i
            .assignment_map
            .iter()
            .map(|(a, b)| (a.value.clone(), b.value.clone()))
            .collect(),
        settings: None,
    })
}

/// The spec side of an assignment map, with TF's rules: a parameter's name,
/// or a scope (`"/"` or `"scope/"`) holding parameters, which the checkpoint
/// side must map from a scope (`"old/"`).
pub(crate) fn check_assignment_map(i: &InitFromCheckpoint, params: &[&str]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for (from, to) in &i.assignment_map {
        let name = to.value.as_str();
        if params.contains(&name) {
            continue;
        }
        if !name.ends_with('/') {
            let mut d = Diagnostic::new(
                Code::UnknownName,
                to.span,
                format!("`{name}` is not a parameter"),
            )
            .with_label("no such parameter");
            if let Some(s) = args::suggest(name, params.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else {
                d = d.with_help(format!(
                    "the spec side of the map is a parameter ({}) or a scope ending in `/` (`\"/\"` is every parameter)",
                    params.join(", ")
                ));
            }
            errors.push(d);
            continue;
        }
        if !from.value.ends_with('/') {
            errors.push(
                Diagnostic::new(
                    Code::ConflictingArguments,
                    from.span,
                    format!(
                        "`{}` maps to the scope `{name}`, so it must be a scope too",
                        from.value
                    ),
                )
                .with_label("not a scope")
                .with_secondary(to.span, "a scope")
                .with_help(format!(
                    "write `\"{}/\"`, or name one parameter on the right",
                    from.value
                )),
            );
            continue;
        }
        let scope = &name[..name.len() - 1];
        let any = params
            .iter()
            .any(|p| scope.is_empty() || p.starts_with(&format!("{scope}/")));
        if !any {
            errors.push(
                Diagnostic::new(
                    Code::UnknownName,
                    to.span,
                    format!("no parameter is under the scope `{name}`"),
                )
                .with_label("empty scope")
                .with_help(format!("parameters: {}", params.join(", "))),
            );
        }
    }
    errors
}
