//! `warm_start(..)`'s settings and TF's rules for what they warm-start
//! (applying the result to a session is the run's, `specc::run::restore`;
//! the remapping of a vocabulary-backed variable is
//! [`crate::checkpoint::vocab_remap`]).
//!
//! Owns: [`WarmStartSettings`] (the arguments of
//! `tf.compat.v1.train.warm_start` after the checkpoint: `vars_to_warm_start`,
//! `var_name_to_vocab_info`, `var_name_to_prev_var_name`), [`VocabInfo`]
//! (`tf.estimator.VocabInfo`), and [`plan`]: TF's `warm_start` loop
//! (`warm_starting_util.py`) — the variables `vars_to_warm_start` selects
//! (a pattern: the trainable variables whose `NAME:0` the pattern matches
//! at its start, Python's `re.match` as `get_collection(scope=..)` applies
//! it; a list of patterns: every variable of the checkpoint's kind — the
//! parameters, the optimizer's slots and accumulators, the moving averages
//! — any of them matches; [`VarsToWarmStart::OnlyVocab`], TF's `None`:
//! only the trainable variables with a vocabulary); each selected variable
//! is read from `var_name_to_prev_var_name`'s name or its own, through its
//! vocabulary when it has one, else whole; a key of either map that names
//! no selected variable is an error listing the viable names, as TF's
//! `ValueError`.
//!
//! Invariants: every whole assignment names a tensor of the checkpoint of
//! the variable's shape; every remap names a tensor of the checkpoint and a
//! 2-D variable; errors name the variable, the tensor and the checkpoint.

use std::path::PathBuf;

use super::warm_start::{Assignment, Named, WarmStartError};
use crate::init::Initializer;

/// Which variables `warm_start` initializes (TF's `vars_to_warm_start`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarsToWarmStart {
    /// A string: a regular expression over the trainable variables (TF's
    /// default `".*"`: every trainable variable).
    Pattern(String),
    /// A list of strings: regular expressions over every variable the
    /// checkpoint holds (TF's `GLOBAL_VARIABLES`: slots and averages too).
    Patterns(Vec<String>),
    /// TF's `None`: only the trainable variables `var_name_to_vocab_info`
    /// names.
    OnlyVocab,
}

impl Default for VarsToWarmStart {
    fn default() -> VarsToWarmStart {
        VarsToWarmStart::Pattern(".*".into())
    }
}

/// `tf.estimator.VocabInfo`: the vocabulary along one axis of a variable,
/// before (in the checkpoint) and now.
#[derive(Clone, Debug, PartialEq)]
pub struct VocabInfo {
    /// The current vocabulary file, one entry a line.
    pub new_vocab: PathBuf,
    /// How many of its first lines the variable has rows (or columns) for.
    pub new_vocab_size: u64,
    /// The out-of-vocabulary buckets after them (always newly initialized).
    pub num_oov_buckets: u64,
    /// The vocabulary the checkpoint's tensor was trained with.
    pub old_vocab: PathBuf,
    /// Only its first `old_vocab_size` lines count; `None` (TF's -1): all.
    pub old_vocab_size: Option<u64>,
    /// Initializes new entries and the OOV buckets; `None`: zeros (TF's
    /// default when `backup_initializer` is not given).
    pub backup_initializer: Option<Initializer>,
    /// The axis the vocabulary indexes: 0 (rows: embeddings, a linear
    /// model's weights) or 1 (columns: a softmax layer over classes).
    pub axis: usize,
}

/// The arguments of `tf.compat.v1.train.warm_start` after the checkpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WarmStartSettings {
    pub vars_to_warm_start: VarsToWarmStart,
    /// (variable name, its vocabulary), in the spec's order.
    pub var_name_to_vocab_info: Vec<(String, VocabInfo)>,
    /// (variable name, its name in the checkpoint), in the spec's order.
    pub var_name_to_prev_var_name: Vec<(String, String)>,
}

/// A variable of the model, as [`plan`] selects among them.
#[derive(Clone, Copy, Debug)]
pub struct Variable<'a> {
    pub name: &'a str,
    pub shape: &'a [u64],
    /// In TF's `TRAINABLE_VARIABLES` (a trainable parameter).
    pub trainable: bool,
}

/// One variable initialized through its vocabulary.
#[derive(Clone, Debug, PartialEq)]
pub struct Remap {
    /// The tensor's name in the checkpoint.
    pub tensor: String,
    /// The variable's name in the model.
    pub param: String,
    pub vocab: VocabInfo,
}

/// What `warm_start` does: whole tensors assigned, and vocabulary remaps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub assignments: Vec<Assignment>,
    pub remaps: Vec<Remap>,
}

impl Plan {
    /// How many variables are warm-started (TF's "Warm-started %d variables").
    pub fn len(&self) -> usize {
        self.assignments.len() + self.remaps.len()
    }

    /// Whether nothing is warm-started.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Compiles `pattern` as TF's `get_collection(scope = pattern)` applies it:
/// Python's `re.match`, anchored at the start of `NAME:0` only.
pub fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(&format!("^(?:{pattern})"))
        .map_err(|e| format!("`{pattern}` is not a regular expression: {e}"))
}

fn matches(re: &regex::Regex, name: &str) -> bool {
    re.is_match(&format!("{name}:0"))
}

fn shape_text(s: &[u64]) -> String {
    let d: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

/// TF's `warm_start` with `settings` over the model's `variables` (in the
/// model's order) and the checkpoint's `tensors`; `checkpoint` names the
/// checkpoint in messages.
pub fn plan(
    settings: &WarmStartSettings,
    variables: &[Variable<'_>],
    tensors: &[Named<'_>],
    checkpoint: &str,
) -> Result<Plan, WarmStartError> {
    let fail = |m: String| WarmStartError(format!("warm_start: {m}"));
    let selected: Vec<&Variable<'_>> = match &settings.vars_to_warm_start {
        VarsToWarmStart::Pattern(p) => {
            let re = compile_pattern(p).map_err(fail)?;
            variables
                .iter()
                .filter(|v| v.trainable && matches(&re, v.name))
                .collect()
        }
        VarsToWarmStart::Patterns(ps) => {
            let res = ps
                .iter()
                .map(|p| compile_pattern(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(fail)?;
            variables
                .iter()
                .filter(|v| res.iter().any(|re| matches(re, v.name)))
                .collect()
        }
        VarsToWarmStart::OnlyVocab => variables.iter().filter(|v| v.trainable).collect(),
    };
    let tensor = |name: &str, var: &str| {
        tensors.iter().find(|t| t.name == name).ok_or_else(|| {
            let mut m = format!("tensor `{name}` (for `{var}`) is not in checkpoint {checkpoint}");
            if let Some(s) = crate::suggest::closest(name, tensors.iter().map(|t| t.name)) {
                m += &format!("; did you mean `{s}`?");
            }
            fail(m)
        })
    };
    let mut out = Plan::default();
    for v in &selected {
        let prev = settings
            .var_name_to_prev_var_name
            .iter()
            .rev()
            .find(|(n, _)| n == v.name)
            .map(|(_, p)| p.as_str());
        let vocab = settings
            .var_name_to_vocab_info
            .iter()
            .rev()
            .find(|(n, _)| n == v.name)
            .map(|(_, i)| i);
        let name = prev.unwrap_or(v.name);
        if let Some(info) = vocab {
            let t = tensor(name, v.name)?;
            if v.shape.len() != 2 || t.shape.len() != 2 {
                return Err(fail(format!(
                    "`{}` ({}) is initialized through a vocabulary, so it and tensor `{}` ({}) in checkpoint {checkpoint} must be matrices",
                    v.name,
                    shape_text(v.shape),
                    t.name,
                    shape_text(t.shape)
                )));
            }
            out.remaps.push(Remap {
                tensor: t.name.to_string(),
                param: v.name.to_string(),
                vocab: info.clone(),
            });
        } else if settings.vars_to_warm_start != VarsToWarmStart::OnlyVocab {
            let t = tensor(name, v.name)?;
            if t.shape != v.shape {
                return Err(fail(format!(
                    "the shape of `{}` ({}) does not match the shape of tensor `{}` ({}) in checkpoint {checkpoint}; a variable whose vocabulary changed needs `var_name_to_vocab_info`",
                    v.name,
                    shape_text(v.shape),
                    t.name,
                    shape_text(t.shape)
                )));
            }
            out.assignments.push(Assignment {
                tensor: t.name.to_string(),
                param: v.name.to_string(),
            });
        }
    }
    let viable: Vec<&str> = selected.iter().map(|v| v.name).collect();
    let unused = |keys: Vec<&str>, what: &str| -> Result<(), WarmStartError> {
        let mut missing: Vec<&str> = keys.into_iter().filter(|k| !viable.contains(k)).collect();
        missing.dedup();
        if missing.is_empty() {
            return Ok(());
        }
        Err(fail(format!(
            "{what} names {} that {} not warm-started: {}; the variables `vars_to_warm_start` selects: {}",
            if missing.len() == 1 { "a variable" } else { "variables" },
            if missing.len() == 1 { "is" } else { "are" },
            missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
            if viable.is_empty() { "none".to_string() } else { viable.join(", ") }
        )))
    };
    unused(
        settings
            .var_name_to_prev_var_name
            .iter()
            .map(|(n, _)| n.as_str())
            .collect(),
        "var_name_to_prev_var_name",
    )?;
    unused(
        settings
            .var_name_to_vocab_info
            .iter()
            .map(|(n, _)| n.as_str())
            .collect(),
        "var_name_to_vocab_info",
    )?;
    Ok(out)
}
