//! Run configuration: the spec's items, a YAML file (`--config`), `--set`
//! and dedicated flags, composed into one checked, typed [`RunConfig`].
//!
//! Owns: [`resolve`], the one call of a run before compiling; the keys of a
//! run configuration ([`top_keys`], [`sections`]: the settings blocks of the
//! one schema, `specc_compiler::sema::run::BLOCKS`, that a run
//! configuration may set, and the data file) and their types;
//! reading a config file and `--set key=value` with errors that name the
//! file, line and column (or the `--set`) and suggest the closest key; the
//! precedence spec < config file < `--set` < flags (a later `steps` replaces
//! an earlier `epochs` and the reverse); and the run's record
//! ([`record`], written to `run.yaml` by the run).
//!
//! How: every override of something the spec can say (the `train` block,
//! `checkpoint`, `summaries`, `logging`, `evaluate`, an argument of the
//! `optimizer` call) is applied to the spec's text — the value replaces the
//! one written, or is added to the block or call, or a new block is added at
//! the end — and the rewritten spec is checked by sema exactly as if the user
//! had written it: same checks, same diagnostics, same compiled step. A
//! diagnostic that points into an overridden value says where the value came
//! from. Optimizer argument names are checked against the optimizer's table
//! entry before that (an unknown one names the `--set` or file line).
//!
//! Invariants: resolving never panics and never reads the data; the returned
//! source is what must be compiled; the spec's own text (not the rewritten
//! one) is what `run.yaml` hashes; paths in a config file are relative to
//! its directory, paths on the command line to the current directory, paths
//! in the spec to the spec's directory, and all paths in the [`RunConfig`]
//! are usable from the current directory.

use std::fmt;
use std::path::{Path, PathBuf};

use specc_grammar::ast::{Arg, Item, SpecFile};
use specc_grammar::{Diagnostic, SourceFile};
use specc_runtime::config::record::{DataRecord, RunRecord};
use specc_runtime::config::yaml::{self, Kind, Node};
use specc_runtime::config::RunConfig;
use specc_runtime::suggest::closest;

use specc_runtime::data::Source;

use specc_compiler::model::Model;
use specc_compiler::optim::table::{self, ArgKind};
use specc_compiler::sema::run::{Key, Ty, BLOCKS, TRAIN_KEYS};

mod effective;
mod read;
mod rewrite;

pub use effective::{config_record, effective, record};
use read::flag_settings;
pub use read::{parse_set, read_config_file, MAX_CONFIG_BYTES};
use rewrite::rewrite;

/// The top-level keys that are values: the data file, and the `train`
/// block's settings a run configuration may set (also written in a
/// `train:` mapping or as `train.KEY`, like the spec's block).
pub fn top_keys() -> Vec<(&'static str, Ty)> {
    std::iter::once(("data", Ty::Path))
        .chain(configurable(TRAIN_KEYS))
        .collect()
}

/// The sections: every settings block of the spec but `train` (its keys
/// are [`top_keys`]), and `optimizer`, which takes the optimizer's own
/// argument names.
pub fn sections() -> Vec<(&'static str, Vec<(&'static str, Ty)>)> {
    BLOCKS
        .iter()
        .filter(|(name, _)| *name != "train")
        .map(|&(name, keys)| (name, configurable(keys).collect()))
        .chain(std::iter::once(("optimizer", Vec::new())))
        .collect()
}

/// The keys of a block a run configuration may set, with their types.
fn configurable(keys: &'static [Key]) -> impl Iterator<Item = (&'static str, Ty)> {
    keys.iter()
        .filter(|k| k.configurable)
        .map(|k| (k.name, k.ty))
}

/// Where an override came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A config file, at a line and column.
    File {
        /// The file, as named.
        path: String,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        col: usize,
    },
    /// `--set KEY=VALUE`, as written.
    Set(String),
    /// A dedicated flag (`--steps`).
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, col } => write!(f, "{path}:{line}:{col}"),
            Origin::Set(s) => write!(f, "--set {s}"),
            Origin::Flag(name) => write!(f, "{name}"),
        }
    }
}

/// A typed override value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A finite number.
    Number(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A path as given (made absolute by [`resolve`] from its origin).
    Path(PathBuf),
    /// A list of names.
    Names(Vec<String>),
    /// A word from a fixed set (written as a string in the spec).
    Word(String),
    /// Spec text for an optimizer argument (`exponential_decay(..)`).
    Expr(String),
}

impl Value {
    /// The value as spec text (numbers round-trip exactly).
    fn spec_text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Number(x) => format!("{x:?}"),
            Value::Bool(b) => b.to_string(),
            Value::Path(p) => {
                let s = p.display().to_string();
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            }
            Value::Names(n) => format!("[{}]", n.join(", ")),
            Value::Word(w) => format!("\"{w}\""),
            Value::Expr(e) => e.clone(),
        }
    }

    /// The value as YAML text (for `run.yaml`).
    fn yaml_text(&self) -> String {
        match self {
            Value::Path(p) => yaml::quote(&p.display().to_string()),
            Value::Expr(e) | Value::Word(e) => yaml::quote(e),
            other => other.spec_text(),
        }
    }
}

/// One override: `section.key = value` (section empty for top-level keys).
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The block (`checkpoint`), empty for a top-level key.
    pub section: String,
    /// The key in its block (`every_steps`).
    pub key: String,
    /// The value, typed by the schema.
    pub value: Value,
    /// Where it was given.
    pub origin: Origin,
}

impl Setting {
    /// `checkpoint.every_steps`, `steps`.
    pub fn dotted(&self) -> String {
        if self.section.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.section, self.key)
        }
    }
}

/// The dedicated flags of `specc run`, which win over everything else.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flags {
    /// `--data`: the data file (`data`).
    pub data: Option<PathBuf>,
    /// `--steps` (`steps`; replaces a duration in epochs).
    pub steps: Option<u64>,
    /// `--eval-fraction` (`eval_fraction`).
    pub eval_fraction: Option<f64>,
    /// `--checkpoint-dir` (`checkpoint.dir`).
    pub checkpoint_dir: Option<PathBuf>,
    /// `--checkpoint-every-steps` (`checkpoint.every_steps`).
    pub checkpoint_every_steps: Option<u64>,
    /// `--checkpoint-every-secs` (`checkpoint.every_secs`).
    pub checkpoint_every_secs: Option<f64>,
    /// `--keep` (`checkpoint.keep`).
    pub keep: Option<u64>,
    /// `--keep-every-n-hours` (`checkpoint.keep_every_n_hours`).
    pub keep_every_n_hours: Option<f64>,
    /// `--summary-dir` (`summaries.dir`).
    pub summary_dir: Option<PathBuf>,
}

/// Why a configuration cannot be resolved.
#[derive(Debug)]
pub enum ConfigError {
    /// The (rewritten) spec has errors: render `diagnostics` against `source`.
    Spec {
        /// The text they point into.
        source: SourceFile,
        /// The errors.
        diagnostics: Vec<Diagnostic>,
    },
    /// A config file, `--set` or flag error, with its file, line and column.
    Other(String),
}

impl From<String> for ConfigError {
    fn from(s: String) -> ConfigError {
        ConfigError::Other(s)
    }
}

/// What [`resolve`] hands the run.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The spec as the user wrote it (hashed into `run.yaml`).
    pub original: SourceFile,
    /// The spec with every override applied: compile this.
    pub source: SourceFile,
    /// The checked model of `source` (forward only: `check`, not `build`).
    pub model: Model,
    /// Everything else, typed and defaulted.
    pub config: RunConfig,
    /// The overrides in the order applied (lowest precedence first).
    pub settings: Vec<Setting>,
}

/// Composes the spec at `spec_path` (text `spec`), the config file
/// `config_file`, the `--set KEY=VALUE` strings `sets` and `flags`, in that
/// order of precedence; checks the result as a spec.
pub fn resolve(
    spec: &SourceFile,
    spec_path: &Path,
    config_file: Option<&Path>,
    sets: &[String],
    flags: &Flags,
) -> Result<Resolved, ConfigError> {
    let mut layers: Vec<Vec<Setting>> = Vec::new();
    if let Some(path) = config_file {
        layers.push(read_config_file(path)?);
    }
    let mut set_layer = Vec::new();
    for s in sets {
        set_layer.push(parse_set(s)?);
    }
    layers.push(set_layer);
    layers.push(flag_settings(flags));
    for layer in &layers {
        check_duration_layer(layer)?;
    }
    let settings = merge(layers.into_iter().flatten().collect());
    // The spec must be valid as written (`specc check` passes on it); the
    // overrides then replace its values.
    let original = specc_compiler::check(spec).map_err(|diagnostics| ConfigError::Spec {
        source: spec.clone(),
        diagnostics,
    })?;
    let (source, model) = if settings
        .iter()
        .all(|s| s.section.is_empty() && s.key == "data")
    {
        (spec.clone(), original)
    } else {
        let ast = specc_compiler::guard(|| specc_compiler::parse(spec)).map_err(|diagnostics| {
            ConfigError::Spec {
                source: spec.clone(),
                diagnostics,
            }
        })?;
        let (text, values) = rewrite(&spec.text, &ast, &settings)?;
        let source = SourceFile::new(spec.path.clone(), text);
        let model = specc_compiler::check(&source).map_err(|mut diagnostics| {
            for d in &mut diagnostics {
                let at = d.span.range();
                let hit = values
                    .iter()
                    .find(|(r, _, _)| r.start < at.end.max(at.start + 1) && at.start < r.end);
                if let Some((_, origin, key)) = hit {
                    *d = d
                        .clone()
                        .with_help(format!("the value of `{key}` comes from {origin}"));
                }
            }
            ConfigError::Spec {
                source: source.clone(),
                diagnostics,
            }
        })?;
        (source, model)
    };
    let spec_dir = spec_path.parent().unwrap_or(Path::new(""));
    let mut config = RunConfig {
        checkpoint: model.checkpoint.clone(),
        summaries: model.summaries.clone(),
        logging: model.logging.clone(),
        evaluate: model.evaluate.clone(),
        warm_start: model.warm_start.clone(),
        ..RunConfig::default()
    };
    for s in &settings {
        if s.section.is_empty() && s.key == "data" {
            if let Value::Path(p) = &s.value {
                config.data = Some(p.clone());
            }
        }
        config.overrides.push((s.dotted(), s.value.yaml_text()));
    }
    let join = |p: &mut Option<PathBuf>| {
        if let Some(d) = p.take() {
            *p = Some(spec_dir.join(d));
        }
    };
    join(&mut config.checkpoint.dir);
    join(&mut config.summaries.dir);
    if config.summaries.dir.is_none() {
        // MonitoredTrainingSession writes summaries into checkpoint_dir.
        config.summaries.dir = config.checkpoint.dir.clone();
    }
    if let Some(w) = &mut config.warm_start {
        w.path = spec_dir.join(&w.path);
        for (_, v) in w
            .settings
            .iter_mut()
            .flat_map(|s| &mut s.var_name_to_vocab_info)
        {
            v.new_vocab = spec_dir.join(&v.new_vocab);
            v.old_vocab = spec_dir.join(&v.old_vocab);
        }
    }
    Ok(Resolved {
        original: spec.clone(),
        source,
        model,
        config,
        settings,
    })
}

/// One layer may not give both `steps` and `epochs`.
fn check_duration_layer(layer: &[Setting]) -> Result<(), String> {
    let find = |k: &str| layer.iter().find(|s| s.section.is_empty() && s.key == k);
    if let (Some(s), Some(e)) = (find("steps"), find("epochs")) {
        return Err(format!(
            "{}: give either `steps` or `epochs`, not both (`epochs` at {})",
            s.origin, e.origin
        ));
    }
    Ok(())
}

/// The settings in precedence order, each key once (the last given wins);
/// a `steps` drops an earlier `epochs` and the reverse.
fn merge(all: Vec<Setting>) -> Vec<Setting> {
    let mut out: Vec<Setting> = Vec::new();
    for s in all {
        let other = match (s.section.as_str(), s.key.as_str()) {
            ("", "steps") => Some("epochs"),
            ("", "epochs") => Some("steps"),
            _ => None,
        };
        out.retain(|o| {
            !(o.section == s.section && (o.key == s.key || Some(o.key.as_str()) == other))
        });
        out.push(s);
    }
    out
}
