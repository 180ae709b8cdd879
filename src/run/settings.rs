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
    }
    Ok(Resolved {
        original: spec.clone(),
        source,
        model,
        config,
        settings,
    })
}

/// The largest config file read: 1 MiB (a file that never ends, such as
/// `/dev/zero`, is an error, not a process that grows until it is killed).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file into settings (paths made relative to its directory).
pub fn read_config_file(path: &Path) -> Result<Vec<Setting>, ConfigError> {
    use std::io::Read;
    let cannot = |e: String| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| cannot(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(cannot(format!(
            "the file is larger than 1 MiB ({MAX_CONFIG_BYTES} bytes), the limit for a run configuration"
        ))
        .into());
    }
    let text = String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".into()))?;
    let name = path.display().to_string();
    let root = yaml::parse(&text).map_err(|e| format!("{name}:{e}"))?;
    let Some(root) = root else {
        return Ok(Vec::new());
    };
    let origin = |n: &Node| Origin::File {
        path: name.clone(),
        line: n.pos.line,
        col: n.pos.col,
    };
    let Kind::Map(entries) = &root.kind else {
        return Err(format!(
            "{}: a run configuration is a mapping of keys (`steps: 1000`), found {}",
            origin(&root),
            root.describe()
        )
        .into());
    };
    let base = path.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    for (k, v) in entries {
        let key = k.str().unwrap_or_default();
        let full = |s: &mut Setting| {
            if let Value::Path(p) = &mut s.value {
                *p = absolute(&base.join(&*p));
            }
        };
        if let Some(&(_, ty)) = top_keys().iter().find(|(n, _)| *n == key) {
            let mut s = typed("", key, ty, v, origin(v))?;
            full(&mut s);
            out.push(s);
            continue;
        }
        if key == "train" {
            // `train: { steps: 5 }` is the top-level keys, as in the spec's block.
            let Kind::Map(inner) = &v.kind else {
                return Err(format!(
                    "{}: `train` is a mapping of its settings (`train: {{ steps: 1000 }}`), found {}",
                    origin(v),
                    v.describe()
                )
                .into());
            };
            for (ik, iv) in inner {
                let ikey = ik.str().unwrap_or_default();
                out.push(train_setting(ikey, iv, origin(ik), origin(iv))?);
            }
            continue;
        }
        let sections = sections();
        let Some((section, keys)) = sections.iter().find(|(n, _)| *n == key) else {
            return Err(unknown_key(key, None, &origin(k)).into());
        };
        let Kind::Map(inner) = &v.kind else {
            if v.is_null() {
                continue;
            }
            return Err(format!(
                "{}: `{section}` is a mapping of its settings (`{section}: {{ key: value }}`), found {}",
                origin(v),
                v.describe()
            )
            .into());
        };
        for (ik, iv) in inner {
            let ikey = ik.str().unwrap_or_default();
            let mut s = section_setting(section, keys, ikey, iv, origin(ik), origin(iv))?;
            full(&mut s);
            out.push(s);
        }
    }
    Ok(out)
}

/// `train.KEY`: a top-level key of the `train` block (not `data`).
fn train_setting(key: &str, v: &Node, at_key: Origin, at_value: Origin) -> Result<Setting, String> {
    match top_keys().iter().find(|(n, _)| *n == key && *n != "data") {
        Some(&(_, ty)) => typed("", key, ty, v, at_value),
        None => {
            let keys: Vec<&str> = top_keys()
                .iter()
                .map(|(k, _)| *k)
                .filter(|k| *k != "data")
                .collect();
            let mut msg = format!("{at_key}: unknown key `train.{key}`");
            if let Some(s) = closest(key, keys.iter().copied()) {
                msg += &format!("; did you mean `train.{s}`?");
            }
            Err(msg + &format!(" (keys of `train`: {})", keys.join(", ")))
        }
    }
}

/// One `section.key` value; `at_key` is where the key is (for unknown keys).
fn section_setting(
    section: &str,
    keys: &[(&str, Ty)],
    key: &str,
    v: &Node,
    at_key: Origin,
    at_value: Origin,
) -> Result<Setting, String> {
    if section == "optimizer" {
        let value = if let Some(b) = v.bool() {
            Value::Bool(b)
        } else if let Some(x) = v.number() {
            finite(x, &format!("optimizer.{key}"), &at_value)?;
            Value::Number(x)
        } else {
            match v.str() {
                Some(t) if !v.is_null() && is_one_expression(t) => Value::Expr(t.to_string()),
                _ => {
                    return Err(format!(
                        "{at_value}: optimizer.{key} must be a number, `true`/`false` or one spec expression, found {}",
                        v.describe()
                    ))
                }
            }
        };
        return Ok(Setting {
            section: section.into(),
            key: key.into(),
            value,
            origin: at_value,
        });
    }
    let Some(&(_, ty)) = keys.iter().find(|(n, _)| *n == key) else {
        return Err(unknown_key(key, Some(section), &at_key));
    };
    typed(section, key, ty, v, at_value)
}

/// Whether `t` is exactly one spec expression (so an override cannot add
/// items to the spec).
fn is_one_expression(t: &str) -> bool {
    let text = format!("v = {t}");
    match specc_grammar::parse(&text) {
        Ok(f) => {
            matches!(f.items.as_slice(), [Item::Let(b)] if b.value.span.end as usize == text.trim_end().len())
        }
        Err(_) => false,
    }
}

fn finite(x: f64, key: &str, at: &Origin) -> Result<(), String> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(format!("{at}: {key} must be a finite number, got {x}"))
    }
}

fn unknown_key(key: &str, section: Option<&str>, at: &Origin) -> String {
    let candidates: Vec<String> = match section {
        None => top_keys()
            .iter()
            .map(|(k, _)| k.to_string())
            .chain(sections().iter().map(|(k, _)| k.to_string()))
            .collect(),
        Some(s) => sections()
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, keys)| keys.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default(),
    };
    let full = match section {
        Some(s) => format!("{s}.{key}"),
        None => key.to_string(),
    };
    let mut msg = format!("{at}: unknown key `{full}`");
    if let Some(s) = closest(key, candidates.iter().map(String::as_str)) {
        msg += &format!(
            "; did you mean `{}`?",
            match section {
                Some(sec) => format!("{sec}.{s}"),
                None => s.to_string(),
            }
        );
    }
    msg += &format!(
        " (keys{}: {})",
        section.map(|s| format!(" of `{s}`")).unwrap_or_default(),
        candidates.join(", ")
    );
    msg
}

/// A value of type `ty` from a YAML node.
fn typed(section: &str, key: &str, ty: Ty, v: &Node, at: Origin) -> Result<Setting, String> {
    let full = if section.is_empty() {
        key.to_string()
    } else {
        format!("{section}.{key}")
    };
    let wrong = || {
        format!(
            "{at}: {full} must be {}, found {}",
            ty.words(),
            v.describe()
        )
    };
    let value = match ty {
        Ty::Int => Value::Int(v.int().ok_or_else(wrong)?),
        Ty::Number => {
            let x = v.number().ok_or_else(wrong)?;
            finite(x, &full, &at)?;
            Value::Number(x)
        }
        Ty::Bool => Value::Bool(v.bool().ok_or_else(wrong)?),
        Ty::Path => match v.str() {
            Some(s) if !v.is_null() && !s.is_empty() && !s.contains('\n') => Value::Path(s.into()),
            _ => return Err(wrong()),
        },
        Ty::Word => match v.str() {
            Some(s) if !v.is_null() && is_ident(s) => Value::Word(s.into()),
            _ => return Err(wrong()),
        },
        Ty::Names => {
            let items: Vec<&Node> = match &v.kind {
                Kind::Seq(items) => items.iter().collect(),
                Kind::Scalar { .. } if !v.is_null() => vec![v],
                _ => return Err(wrong()),
            };
            let mut names = Vec::new();
            for n in items {
                match n.str() {
                    Some(s) if is_ident(s) => names.push(s.to_string()),
                    _ => {
                        return Err(format!(
                            "{at}: {full} must be a list of names, but it holds {}",
                            n.describe()
                        ))
                    }
                }
            }
            Value::Names(names)
        }
    };
    Ok(Setting {
        section: section.into(),
        key: key.into(),
        value,
        origin: at,
    })
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `--set KEY=VALUE`: the key as in a config file (`optimizer.learning_rate`,
/// `steps`), the value as YAML (`0.01`, `runs/x`, `[loss, h1]`).
pub fn parse_set(raw: &str) -> Result<Setting, String> {
    let origin = Origin::Set(raw.to_string());
    let Some((key, value)) = raw.split_once('=') else {
        return Err(format!(
            "--set {raw}: expected KEY=VALUE, e.g. --set optimizer.learning_rate=0.01"
        ));
    };
    let key = key.trim();
    let node = yaml::parse(value)
        .map_err(|e| format!("--set {raw}: the value is not valid YAML ({e})"))?
        .unwrap_or(Node {
            kind: Kind::Scalar {
                text: String::new(),
                plain: true,
            },
            pos: Default::default(),
        });
    let mut s = match key.split_once('.') {
        None => match top_keys().iter().find(|(n, _)| *n == key) {
            Some(&(_, ty)) => typed("", key, ty, &node, origin.clone())?,
            None => return Err(unknown_key(key, None, &origin)),
        },
        Some(("train", k)) => train_setting(k, &node, origin.clone(), origin.clone())?,
        Some((section, k)) => match sections().iter().find(|(n, _)| *n == section) {
            Some((section, keys)) => {
                section_setting(section, keys, k, &node, origin.clone(), origin.clone())?
            }
            None => return Err(unknown_key(section, None, &origin)),
        },
    };
    if let Value::Path(p) = &mut s.value {
        *p = absolute(p);
    }
    Ok(s)
}

fn flag_settings(f: &Flags) -> Vec<Setting> {
    let mut out = Vec::new();
    let mut push = |section: &str, key: &str, value: Value, flag: &'static str| {
        out.push(Setting {
            section: section.into(),
            key: key.into(),
            value,
            origin: Origin::Flag(flag),
        })
    };
    if let Some(p) = &f.data {
        push("", "data", Value::Path(absolute(p)), "--data");
    }
    if let Some(n) = f.steps {
        push("", "steps", Value::Int(clamp_i64(n)), "--steps");
    }
    if let Some(x) = f.eval_fraction {
        push("", "eval_fraction", Value::Number(x), "--eval-fraction");
    }
    if let Some(p) = &f.checkpoint_dir {
        push(
            "checkpoint",
            "dir",
            Value::Path(absolute(p)),
            "--checkpoint-dir",
        );
    }
    if let Some(n) = f.checkpoint_every_steps {
        push(
            "checkpoint",
            "every_steps",
            Value::Int(clamp_i64(n)),
            "--checkpoint-every-steps",
        );
    }
    if let Some(x) = f.checkpoint_every_secs {
        push(
            "checkpoint",
            "every_secs",
            Value::Number(x),
            "--checkpoint-every-secs",
        );
    }
    if let Some(n) = f.keep {
        push("checkpoint", "keep", Value::Int(clamp_i64(n)), "--keep");
    }
    if let Some(h) = f.keep_every_n_hours {
        push(
            "checkpoint",
            "keep_every_n_hours",
            Value::Number(h),
            "--keep-every-n-hours",
        );
    }
    if let Some(p) = &f.summary_dir {
        push(
            "summaries",
            "dir",
            Value::Path(absolute(p)),
            "--summary-dir",
        );
    }
    out
}

fn clamp_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
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

/// A text edit of the spec: replace `start..end` with `text`; the inserted
/// value is `text[value]`, from `setting`.
struct Edit {
    start: usize,
    end: usize,
    text: String,
    value: std::ops::Range<usize>,
    setting: usize,
}

/// (range of an inserted value in the new text, its origin, its key).
type ValueSpans = Vec<(std::ops::Range<usize>, Origin, String)>;

/// Applies `settings` (except `data`) to the spec text.
fn rewrite(
    src: &str,
    ast: &SpecFile,
    settings: &[Setting],
) -> Result<(String, ValueSpans), String> {
    let mut edits: Vec<Edit> = Vec::new();
    // New blocks, by section, in order of first appearance.
    let mut new_blocks: Vec<(String, Vec<(String, usize)>)> = Vec::new();
    for (i, s) in settings.iter().enumerate() {
        if s.section.is_empty() && s.key == "data" {
            continue;
        }
        let v = s.value.spec_text();
        if s.section == "optimizer" {
            edits.push(optimizer_edit(ast, s, v, i)?);
            continue;
        }
        let section = if s.section.is_empty() {
            "train"
        } else {
            s.section.as_str()
        };
        let block = ast
            .items
            .iter()
            .filter_map(Item::settings_block)
            .find(|(kw, _)| *kw == section)
            .map(|(_, b)| b);
        let Some(block) = block else {
            match new_blocks.iter_mut().find(|(n, _)| n == section) {
                Some((_, entries)) => entries.push((format!("{} = {v}", s.key), i)),
                None => new_blocks.push((section.into(), vec![(format!("{} = {v}", s.key), i)])),
            }
            continue;
        };
        let named = |k: &str| -> Option<&Arg> {
            block
                .entries
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.name == k))
        };
        let other = match (section, s.key.as_str()) {
            ("train", "steps") => named("epochs"),
            ("train", "epochs") => named("steps"),
            _ => None,
        };
        if let Some(a) = named(&s.key) {
            let r = a.value.span.range();
            edits.push(Edit {
                start: r.start,
                end: r.end,
                value: 0..v.len(),
                text: v,
                setting: i,
            });
        } else if let Some(a) = other {
            // `steps` replaces `epochs` (and the reverse): one duration.
            let r = a.span.range();
            let text = format!("{} = {v}", s.key);
            edits.push(Edit {
                start: r.start,
                end: r.end,
                value: text.len() - v.len()..text.len(),
                text,
                setting: i,
            });
        } else {
            let (at, text) = match block.entries.last() {
                Some(last) => (last.span.end as usize, format!(", {} = {v}", s.key)),
                None => (
                    (block.span.end as usize).saturating_sub(1),
                    format!(" {} = {v} ", s.key),
                ),
            };
            let start = text.len() - v.len() - usize::from(block.entries.is_empty());
            edits.push(Edit {
                start: at,
                end: at,
                value: start..start + v.len(),
                text,
                setting: i,
            });
        }
    }
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(src.len() + 64);
    let mut values: ValueSpans = Vec::new();
    let mut cursor = 0;
    for e in &edits {
        if e.start < cursor {
            continue; // overlapping edits cannot arise from distinct keys
        }
        out.push_str(&src[cursor..e.start]);
        let base = out.len();
        out.push_str(&e.text);
        let s = &settings[e.setting];
        values.push((
            base + e.value.start..base + e.value.end,
            s.origin.clone(),
            s.dotted(),
        ));
        cursor = e.end;
    }
    out.push_str(&src[cursor..]);
    for (section, entries) in new_blocks {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&section);
        out.push_str(" { ");
        for (j, (text, i)) in entries.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let s = &settings[*i];
            let value_len = s.value.spec_text().len();
            let end = out.len() + text.len();
            out.push_str(text);
            values.push((end - value_len..end, s.origin.clone(), s.dotted()));
        }
        out.push_str(" }\n");
    }
    Ok((out, values))
}

/// The edit of an `optimizer.KEY` override, checked against the optimizer's
/// table entry.
fn optimizer_edit(ast: &SpecFile, s: &Setting, v: String, i: usize) -> Result<Edit, String> {
    let Some(call) = ast.items.iter().find_map(|it| match it {
        Item::Optimizer(c) => Some(c),
        _ => None,
    }) else {
        return Err(format!(
            "{}: `optimizer.{}` overrides an argument of the optimizer, but the spec has no `optimizer`",
            s.origin, s.key
        ));
    };
    let name = call.func.name.as_str();
    let Some(def) = table::by_name(name) else {
        return Err(format!(
            "{}: `optimizer.{}`: the spec's optimizer `{name}` is not an optimizer specc knows",
            s.origin, s.key
        ));
    };
    let Some(index) = def.args.iter().position(|a| a.name == s.key) else {
        let names: Vec<&str> = def.args.iter().map(|a| a.name).collect();
        let mut msg = format!("{}: `{name}` has no argument `{}`", s.origin, s.key);
        if let Some(c) = closest(&s.key, names.iter().copied()) {
            msg += &format!("; did you mean `optimizer.{c}`?");
        }
        msg += &format!(" (arguments of `{name}`: {})", names.join(", "));
        return Err(msg);
    };
    let v = match (&s.value, &def.args[index].kind) {
        // Schedules and numbers are float32: `5` is written `5.0`.
        (Value::Int(n), ArgKind::Schedule { .. } | ArgKind::Number { .. }) => {
            format!("{:?}", *n as f64)
        }
        _ => v,
    };
    let positional = call.args.iter().take_while(|a| a.name.is_none()).nth(index);
    let given = positional.or_else(|| {
        call.args
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|n| n.name == s.key))
    });
    Ok(match given {
        Some(a) => {
            let r = a.value.span.range();
            Edit {
                start: r.start,
                end: r.end,
                value: 0..v.len(),
                text: v,
                setting: i,
            }
        }
        None => {
            let (at, text) = match call.args.last() {
                Some(last) => (last.span.end as usize, format!(", {} = {v}", s.key)),
                None => (
                    (call.span.end as usize).saturating_sub(1),
                    format!("{} = {v}", s.key),
                ),
            };
            Edit {
                start: at,
                end: at,
                value: text.len() - v.len()..text.len(),
                text,
                setting: i,
            }
        }
    })
}

/// The effective configuration as (dotted key, YAML value) pairs, by the
/// keys of a config file, in the schema's order ([`top_keys`],
/// [`sections`]): the `train` settings (one duration: `steps` or
/// `epochs`), every section of `config`, the optimizer and its overridden
/// arguments, and `init_from_checkpoint`.
pub fn effective(model: &Model, config: &RunConfig, settings: &[Setting]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (key, _) in top_keys() {
        if let Some(v) = effective_value(model, config, "", key) {
            out.push((key.to_string(), v));
        }
    }
    for (section, keys) in sections() {
        if section == "optimizer" {
            out.push((
                "optimizer.name".into(),
                yaml::quote(model.optimizer.def.name),
            ));
            for st in settings.iter().filter(|s| s.section == "optimizer") {
                out.push((format!("optimizer.{}", st.key), st.value.yaml_text()));
            }
            continue;
        }
        for (key, _) in keys {
            if let Some(v) = effective_value(model, config, section, key) {
                out.push((format!("{section}.{key}"), v));
            }
        }
    }
    if let Some(w) = &config.warm_start {
        out.push((
            "init_from_checkpoint.path".into(),
            yaml::quote(&w.path.display().to_string()),
        ));
        let m: Vec<String> = w
            .assignment_map
            .iter()
            .map(|(a, b)| format!("{}: {}", yaml::quote(a), yaml::quote(b)))
            .collect();
        out.push((
            "init_from_checkpoint.assignment_map".into(),
            format!("{{{}}}", m.join(", ")),
        ));
    }
    out
}

/// The effective value of one configurable key as YAML text (`section` empty
/// for a top-level key); `None` for the duration the spec does not use
/// (`epochs` when it trains for `steps`, and the reverse).
fn effective_value(model: &Model, config: &RunConfig, section: &str, key: &str) -> Option<String> {
    use specc_runtime::train::Duration;
    let path = |p: &Option<PathBuf>| {
        p.as_ref().map_or("null".to_string(), |p| {
            yaml::quote(&p.display().to_string())
        })
    };
    let opt = |x: Option<String>| x.unwrap_or_else(|| "null".into());
    let t = &model.train;
    let (c, s, l) = (&config.checkpoint, &config.summaries, &config.logging);
    Some(match (section, key) {
        ("", "data") => path(&config.data),
        ("", "steps") => match t.duration {
            Duration::Steps(s) => s.to_string(),
            Duration::Epochs(_) => return None,
        },
        ("", "epochs") => match t.duration {
            Duration::Epochs(e) => e.to_string(),
            Duration::Steps(_) => return None,
        },
        ("", "batch") => t.batch.to_string(),
        ("", "shuffle") => t.shuffle.to_string(),
        ("", "seed") => t.seed.to_string(),
        ("", "eval_fraction") => format!("{:?}", t.eval_fraction),
        ("", "split_seed") => t.split_seed.to_string(),
        ("checkpoint", "dir") => path(&c.dir),
        ("checkpoint", "every_steps") => opt(c.every_steps.map(|x| x.to_string())),
        ("checkpoint", "every_secs") => opt(c.every_secs.map(|x| format!("{x:?}"))),
        ("checkpoint", "keep") => c.keep.to_string(),
        ("checkpoint", "keep_every_n_hours") => opt(c.keep_every_n_hours.map(|x| format!("{x:?}"))),
        ("summaries", "dir") => path(&s.dir),
        ("summaries", "every_steps") => opt(s.every_steps.map(|x| x.to_string())),
        ("summaries", "histograms") => s.histograms.to_string(),
        ("logging", "every_steps") => opt(l.every_steps.map(|x| x.to_string())),
        ("logging", "every_secs") => opt(l.every_secs.map(|x| format!("{x:?}"))),
        ("logging", "tensors") => format!("[{}]", l.tensors.join(", ")),
        ("evaluate", "every_steps") => opt(config.evaluate.every_steps.map(|x| x.to_string())),
        // A key of the schema without a value here: `every_key_has_an_effective_value`.
        _ => return None,
    })
}

/// The record of a resolved run for `run.yaml`: the spec as written, the
/// effective configuration, the overrides, and the data file (size and
/// sha256; a synthetic source has none). `version` is specc's.
pub fn record(resolved: &Resolved, spec_path: &Path, version: &str) -> Result<RunRecord, String> {
    let mut r = RunRecord::new(spec_path, &resolved.original.text);
    r.specc_version = version.to_string();
    r.config = effective(&resolved.model, &resolved.config, &resolved.settings);
    r.overrides = resolved
        .settings
        .iter()
        .map(|s| (s.dotted(), s.value.yaml_text()))
        .collect();
    let data = match (&resolved.config.data, &resolved.model.data.source) {
        (Some(p), _) => Some(p.clone()),
        (None, Source::Csv { path }) => {
            Some(spec_path.parent().unwrap_or(Path::new("")).join(path))
        }
        (None, Source::Synthetic(_) | Source::Stream(_) | Source::Images(_)) => None,
    };
    if let Some(p) = data {
        r.data.push(DataRecord::of(&p)?);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record names every key a run configuration may set (the one
    /// duration aside): [`effective_value`] covers the schema.
    #[test]
    fn every_key_has_an_effective_value() {
        let src = SourceFile::new(
            "tiny.spec",
            "data synthetic(rows = 8, features = 2)\nlabel label: int\n\
             features { x = numeric(x0..x1) }\nparams { W: [2, 2] = zeros }\n\
             loss = mean(sparse_softmax_cross_entropy(label, x @ W))\n\
             optimizer gradient_descent(0.1)\ntrain { batch = 4, steps = 2 }\n",
        );
        let model = specc_compiler::check(&src).expect("the spec checks");
        let config = RunConfig::default();
        let mut missing = Vec::new();
        for (key, _) in top_keys() {
            if key != "epochs" && effective_value(&model, &config, "", key).is_none() {
                missing.push(key.to_string());
            }
        }
        for (section, keys) in sections() {
            for (key, _) in keys {
                if effective_value(&model, &config, section, key).is_none() {
                    missing.push(format!("{section}.{key}"));
                }
            }
        }
        assert!(missing.is_empty(), "no effective value for {missing:?}");
    }
}
