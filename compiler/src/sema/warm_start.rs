//! `warm_start(PATH, ..)`: TF's `tf.compat.v1.train.warm_start` in a spec,
//! its arguments checked and turned into the run's [`WarmStartSettings`].
//!
//! Owns: the arguments (`vars_to_warm_start`: a pattern string, a list of
//! them, or `None`; `var_name_to_vocab_info`: `{ "VAR": vocab_info(..) }`
//! with `tf.estimator.VocabInfo`'s arguments; `var_name_to_prev_var_name`:
//! `{ "VAR": "NAME IN THE CHECKPOINT" }`) with a caret on each bad one, and
//! [`check_names`], once the parameters are known: each map's variable is a
//! parameter (or, with a list of patterns, one of its slots or averages,
//! `PARAM/...`), and a vocabulary's variable is a matrix whose size along
//! `axis` is `new_vocab_size + num_oov_buckets`.
//!
//! The vocabulary files are read when the run starts (a missing one is an
//! error naming its path), like the checkpoint.

use specc_grammar::ast::{
    Expr, ExprKind, InitFromCheckpoint, Span, StrLit, WarmStartItem, WarmValue,
};
use specc_grammar::{Code, Diagnostic};
use specc_runtime::config::warm_start_settings::{
    compile_pattern, VarsToWarmStart, VocabInfo, WarmStartSettings,
};
use specc_runtime::config::WarmStart;

use super::args::{self, opt, req};
use super::expr::R;

/// The item a spec's warm start came from.
pub(crate) enum WarmItem {
    Init(InitFromCheckpoint),
    Settings(Box<WarmStartItem>),
}

impl WarmItem {
    pub(crate) fn span(&self) -> Span {
        match self {
            WarmItem::Init(i) => i.span,
            WarmItem::Settings(w) => w.span,
        }
    }
}

const ARGS: &[&str] = &[
    "vars_to_warm_start",
    "var_name_to_vocab_info",
    "var_name_to_prev_var_name",
];

/// `vocab_info(..)`'s parameters, TF's `VocabInfo` in its order.
const VOCAB_INFO: &[args::Param<'static>] = &[
    req("new_vocab"),
    req("new_vocab_size"),
    req("num_oov_buckets"),
    req("old_vocab"),
    opt("old_vocab_size"),
    opt("backup_initializer"),
    opt("axis"),
];

/// The warm start `w` asks for (paths as written: the run makes them
/// relative to the spec).
pub(crate) fn warm_start(w: &WarmStartItem) -> R<WarmStart> {
    if w.path.value.is_empty() {
        return Err(Diagnostic::new(
            Code::EmptyArgument,
            w.path.span,
            "the checkpoint path is empty",
        )
        .with_label("empty path"));
    }
    let mut s = WarmStartSettings::default();
    let mut seen: Vec<&str> = Vec::new();
    for a in &w.args {
        let name = a.name.name.as_str();
        if !ARGS.contains(&name) {
            let mut d = Diagnostic::new(
                Code::UnknownArgument,
                a.name.span,
                format!("warm_start has no argument `{name}`"),
            )
            .with_label("unknown argument");
            if let Some(s) = args::suggest(name, ARGS.iter().copied()) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d.with_help(format!("its arguments: {}", ARGS.join(", "))));
        }
        if seen.contains(&name) {
            return Err(Diagnostic::new(
                Code::DuplicateArgument,
                a.name.span,
                format!("`{name}` is given twice"),
            )
            .with_label("again"));
        }
        seen.push(name);
        match (name, &a.value) {
            ("vars_to_warm_start", WarmValue::Expr(e)) => {
                s.vars_to_warm_start = vars_to_warm_start(e)?;
            }
            ("var_name_to_vocab_info", WarmValue::Map { entries, .. }) => {
                for (k, v) in entries {
                    let info = vocab_info(k, v)?;
                    s.var_name_to_vocab_info.push((k.value.clone(), info));
                }
            }
            ("var_name_to_prev_var_name", WarmValue::Map { entries, .. }) => {
                for (k, v) in entries {
                    let prev = args::eval_string(v)?;
                    if prev.is_empty() {
                        return Err(Diagnostic::new(
                            Code::EmptyArgument,
                            v.span,
                            "the checkpoint name is empty",
                        )
                        .with_label("empty name"));
                    }
                    s.var_name_to_prev_var_name
                        .push((k.value.clone(), prev.to_string()));
                }
            }
            (_, value) => {
                let span = match value {
                    WarmValue::Expr(e) => e.span,
                    WarmValue::Map { span, .. } => *span,
                };
                return Err(Diagnostic::new(
                    Code::ArgumentType,
                    span,
                    format!(
                        "`{name}` is {}",
                        if name == "vars_to_warm_start" {
                            "a pattern string, a list of them, or None"
                        } else {
                            "a map `{ \"VARIABLE\": VALUE, .. }`"
                        }
                    ),
                )
                .with_label("wrong kind of value"));
            }
        }
    }
    Ok(WarmStart {
        path: w.path.value.clone().into(),
        assignment_map: Vec::new(),
        settings: Some(s),
    })
}

fn pattern(e: &Expr) -> R<String> {
    let p = args::eval_string(e)?;
    compile_pattern(p).map_err(|m| {
        Diagnostic::new(Code::MalformedArgument, e.span, m).with_label("not a regular expression")
    })?;
    Ok(p.to_string())
}

fn vars_to_warm_start(e: &Expr) -> R<VarsToWarmStart> {
    if args::is_none(e) {
        return Ok(VarsToWarmStart::OnlyVocab);
    }
    match &e.kind {
        ExprKind::List(items) => Ok(VarsToWarmStart::Patterns(
            items.iter().map(pattern).collect::<R<Vec<_>>>()?,
        )),
        ExprKind::Str(_) => Ok(VarsToWarmStart::Pattern(pattern(e)?)),
        _ => Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!(
                "vars_to_warm_start is a pattern string (\".*\": every trainable variable), a list of them (every variable, slots too), or None; found {}",
                args::describe(e)
            ),
        )
        .with_label("wrong kind of value")),
    }
}

fn vocab_info(key: &StrLit, e: &Expr) -> R<VocabInfo> {
    let ExprKind::Call(c) = &e.kind else {
        return Err(Diagnostic::new(
            Code::ArgumentType,
            e.span,
            format!("a vocabulary is `vocab_info(new_vocab = \"..\", new_vocab_size = N, num_oov_buckets = N, old_vocab = \"..\")`, found {}", args::describe(e)),
        )
        .with_label("not vocab_info(..)"));
    };
    if c.func.name != "vocab_info" {
        return Err(Diagnostic::new(
            Code::UnknownFunction,
            c.func.span,
            format!("`{}` is not `vocab_info`", c.func.name),
        )
        .with_label("expected vocab_info"));
    }
    let b = args::bind("vocab_info", c, VOCAB_INFO)?;
    let path = |i: usize| -> R<std::path::PathBuf> {
        let e = b.req(i);
        let p = args::eval_string(e)?;
        if p.is_empty() {
            return Err(Diagnostic::new(
                Code::EmptyArgument,
                e.span,
                "the vocabulary path is empty",
            )
            .with_label("empty path"));
        }
        Ok(p.into())
    };
    let new_vocab_size = args::eval_count(b.req(1), "new_vocab_size")?;
    if new_vocab_size == 0 {
        return Err(Diagnostic::new(
            Code::ArgumentOutOfRange,
            b.req(1).span,
            "new_vocab_size must be positive",
        )
        .with_label("zero"));
    }
    let old_vocab_size = match b.get(4) {
        None => None,
        Some(e) => match args::eval_int(e)? {
            -1 => None,
            n if n > 0 => Some(n as u64),
            n => {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("old_vocab_size is positive, or -1 for the whole file; got {n}"),
                )
                .with_label("out of range"))
            }
        },
    };
    let backup_initializer = b
        .get(5)
        .map(|e| super::params::initializer(e, &format!("{}/backup_initializer", key.value), &[]))
        .transpose()?;
    let axis = match b.get(6) {
        None => 0,
        Some(e) => match args::eval_int(e)? {
            a @ (0 | 1) => a as usize,
            a => {
                return Err(Diagnostic::new(
                    Code::ArgumentOutOfRange,
                    e.span,
                    format!("axis is 0 (rows) or 1 (columns), got {a}"),
                )
                .with_label("out of range"))
            }
        },
    };
    Ok(VocabInfo {
        new_vocab: path(0)?,
        new_vocab_size,
        num_oov_buckets: args::eval_count(b.req(2), "num_oov_buckets")?,
        old_vocab: path(3)?,
        old_vocab_size,
        backup_initializer,
        axis,
    })
}

/// The variables `w`'s maps name, against the spec's parameters (name,
/// shape): unknown names (with a did-you-mean) and vocabularies that do not
/// fit their variable's shape.
pub(crate) fn check_names(
    w: &WarmStartItem,
    s: &WarmStartSettings,
    params: &[(&str, &[u32])],
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let names: Vec<&str> = params.iter().map(|p| p.0).collect();
    let any_variable = matches!(s.vars_to_warm_start, VarsToWarmStart::Patterns(_));
    for a in &w.args {
        let WarmValue::Map { entries, .. } = &a.value else {
            continue;
        };
        for (k, v) in entries {
            let name = k.value.as_str();
            let param = params.iter().find(|p| p.0 == name);
            let slot = any_variable && names.iter().any(|p| name.starts_with(&format!("{p}/")));
            if param.is_none() && !slot {
                let mut d = Diagnostic::new(
                    Code::UnknownName,
                    k.span,
                    format!("`{name}` is not a parameter"),
                )
                .with_label("no such variable");
                if let Some(s) = args::suggest(name, names.iter().copied()) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                } else {
                    d = d.with_help(format!("parameters: {}", names.join(", ")));
                }
                errors.push(d);
                continue;
            }
            let (Some((_, dims)), "var_name_to_vocab_info") = (param, a.name.name.as_str()) else {
                continue;
            };
            let Some((_, info)) = s.var_name_to_vocab_info.iter().find(|(n, _)| n == name) else {
                continue;
            };
            if dims.len() != 2 {
                errors.push(
                    Diagnostic::new(
                        Code::ConflictingArguments,
                        k.span,
                        format!(
                            "`{name}` has {} dimension{}; a vocabulary remaps the rows or columns of a matrix",
                            dims.len(),
                            if dims.len() == 1 { "" } else { "s" }
                        ),
                    )
                    .with_label("not a matrix"),
                );
                continue;
            }
            let want = info.new_vocab_size + info.num_oov_buckets;
            if u64::from(dims[info.axis]) != want {
                errors.push(
                    Diagnostic::new(
                        Code::ConflictingArguments,
                        v.span,
                        format!(
                            "`{name}` is [{}, {}]: {} along axis {}, but new_vocab_size {} + num_oov_buckets {} = {want}",
                            dims[0], dims[1], dims[info.axis], info.axis, info.new_vocab_size, info.num_oov_buckets
                        ),
                    )
                    .with_label("size mismatch")
                    .with_secondary(k.span, "this variable"),
                );
            }
        }
    }
    errors
}
